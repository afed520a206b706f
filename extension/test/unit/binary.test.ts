// Binary resolution: the documented order, trust handling and the error listing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  describeAttempts,
  environmentBinaryCandidates,
  ignoredSettingWarning,
  resolveServerBinary,
  type BinaryLookup,
  type FileProbe,
} from '../../src/binary';

const BUNDLED = '/ext/extension/bin/tpulint';

function lookup(overrides: Partial<BinaryLookup>, executables: string[] = [], nonExecutables: string[] = []): BinaryLookup {
  const probe: FileProbe = (candidate) =>
    executables.includes(candidate) ? 'executable' : nonExecutables.includes(candidate) ? 'not executable' : 'missing';
  return {
    settingPath: '',
    importStrategy: 'useBundled',
    interpreter: undefined,
    workspaceTrusted: true,
    bundledPath: BUNDLED,
    pathEnv: '/usr/local/bin:/usr/bin',
    platform: 'linux',
    homeDir: '/home/me',
    workspaceFolder: '/work/project',
    probe,
    ...overrides,
  };
}

describe('resolveServerBinary', () => {
  it('prefers the setting in a trusted workspace', () => {
    const result = resolveServerBinary(lookup({ settingPath: '/opt/tpulint' }, ['/opt/tpulint', BUNDLED]));
    assert.deepEqual(result.ok && [result.path, result.source], ['/opt/tpulint', 'setting']);
  });

  it('uses the bundled binary when the setting is empty, before PATH', () => {
    const result = resolveServerBinary(lookup({}, [BUNDLED, '/usr/bin/tpulint']));
    assert.deepEqual(result.ok && [result.path, result.source], [BUNDLED, 'bundled']);
  });

  it('falls back to the first PATH entry holding tpulint', () => {
    const result = resolveServerBinary(lookup({}, ['/usr/bin/tpulint']));
    assert.deepEqual(result.ok && [result.path, result.source], ['/usr/bin/tpulint', 'path']);
  });

  it('ignores the setting and PATH in an untrusted workspace', () => {
    const trustedOnly = ['/opt/tpulint', '/usr/bin/tpulint'];
    const untrusted = resolveServerBinary(lookup({ settingPath: '/opt/tpulint', workspaceTrusted: false }, trustedOnly));
    assert.equal(untrusted.ok, false);
    assert.deepEqual(
      untrusted.attempts.map((attempt) => [attempt.source, attempt.outcome]),
      [
        ['setting', 'skipped in untrusted workspace'],
        ['bundled', 'missing'],
        ['path', 'skipped in untrusted workspace'],
      ],
    );
    const bundled = resolveServerBinary(lookup({ settingPath: '/opt/tpulint', workspaceTrusted: false }, [...trustedOnly, BUNDLED]));
    assert.deepEqual(bundled.ok && bundled.source, 'bundled');
  });

  it('records an unusable setting and moves on', () => {
    const result = resolveServerBinary(lookup({ settingPath: '/opt/tpulint' }, [BUNDLED], ['/opt/tpulint']));
    assert.deepEqual(result.ok && result.source, 'bundled');
    assert.equal(ignoredSettingWarning(result), 'tpulint.server.path (/opt/tpulint) is not executable. Using /ext/extension/bin/tpulint instead.');
  });

  it('expands ~ and resolves a relative setting against the workspace folder', () => {
    const home = resolveServerBinary(lookup({ settingPath: '~/bin/tpulint' }, ['/home/me/bin/tpulint']));
    assert.deepEqual(home.ok && home.path, '/home/me/bin/tpulint');
    const relative = resolveServerBinary(lookup({ settingPath: 'tools/tpulint' }, ['/work/project/tools/tpulint']));
    assert.deepEqual(relative.ok && relative.path, '/work/project/tools/tpulint');
  });

  it('uses tpulint.exe and ; separators on Windows', () => {
    const result = resolveServerBinary(
      lookup({ platform: 'win32', bundledPath: 'C:\\ext\\tpulint.exe', pathEnv: 'C:\\tools;C:\\bin', workspaceFolder: undefined }, ['C:\\bin\\tpulint.exe']),
    );
    assert.deepEqual(result.ok && result.path, 'C:\\bin\\tpulint.exe');
  });

  it('lists every place looked at when nothing works', () => {
    const result = resolveServerBinary(lookup({ pathEnv: undefined }));
    assert.equal(result.ok, false);
    assert.deepEqual(describeAttempts(result.attempts), [
      '`tpulint.server.path` setting: not set',
      `binary bundled with the extension (${BUNDLED}): missing`,
      '`PATH`: not set',
    ]);
    assert.equal(ignoredSettingWarning(result), undefined);
  });

  it('warns that the setting is ignored while the workspace is untrusted', () => {
    const result = resolveServerBinary(lookup({ settingPath: '/opt/tpulint', workspaceTrusted: false }, [BUNDLED]));
    assert.match(ignoredSettingWarning(result) ?? '', /not trusted/);
  });
});

describe('importStrategy', () => {
  const VENV_PYTHON = '/work/project/.venv/bin/python';
  const VENV_TPULINT = '/work/project/.venv/bin/tpulint';
  const fromEnvironment = (overrides: Partial<BinaryLookup> = {}) =>
    lookup({ importStrategy: 'fromEnvironment', interpreter: VENV_PYTHON, ...overrides }, [VENV_TPULINT, BUNDLED, '/usr/bin/tpulint']);

  it('useBundled (the default) runs the bundled binary even when the environment has tpulint', () => {
    const result = resolveServerBinary(lookup({ interpreter: VENV_PYTHON }, [VENV_TPULINT, BUNDLED]));
    assert.deepEqual(result.ok && [result.path, result.source], [BUNDLED, 'bundled']);
  });

  it("fromEnvironment runs the tpulint next to the selected interpreter", () => {
    const result = resolveServerBinary(fromEnvironment());
    assert.deepEqual(result.ok && [result.path, result.source], [VENV_TPULINT, 'environment']);
    assert.equal(ignoredSettingWarning(result), undefined);
  });

  it('the server.path setting still comes first', () => {
    const result = resolveServerBinary(
      lookup({ importStrategy: 'fromEnvironment', interpreter: VENV_PYTHON, settingPath: '/opt/tpulint' }, ['/opt/tpulint', VENV_TPULINT]),
    );
    assert.deepEqual(result.ok && result.source, 'setting');
  });

  it('without tpulint in the environment: PATH, then the bundled binary, with a warning', () => {
    const onPath = resolveServerBinary(
      lookup({ importStrategy: 'fromEnvironment', interpreter: VENV_PYTHON }, [BUNDLED, '/usr/bin/tpulint']),
    );
    assert.deepEqual(onPath.ok && [onPath.path, onPath.source], ['/usr/bin/tpulint', 'path']);
    assert.match(ignoredSettingWarning(onPath) ?? '', /selected environment has no tpulint \(\/work\/project\/\.venv\/bin\/tpulint\).*pip install tpulint.*Using \/usr\/bin\/tpulint/);
    const bundled = resolveServerBinary(lookup({ importStrategy: 'fromEnvironment', interpreter: VENV_PYTHON }, [BUNDLED]));
    assert.deepEqual(bundled.ok && bundled.source, 'bundled');
    assert.deepEqual(
      bundled.attempts.map((attempt) => [attempt.source, attempt.outcome]),
      [
        ['setting', 'not set'],
        ['environment', 'missing'],
        ['path', 'missing'],
        ['bundled', 'found'],
      ],
    );
  });

  it('without a selected interpreter it says so and goes on', () => {
    const result = resolveServerBinary(lookup({ importStrategy: 'fromEnvironment' }, [BUNDLED]));
    assert.deepEqual(result.ok && result.source, 'bundled');
    assert.match(ignoredSettingWarning(result) ?? '', /no Python interpreter is selected/);
  });

  it('is ignored in an untrusted workspace: only the bundled binary runs', () => {
    const result = resolveServerBinary(fromEnvironment({ workspaceTrusted: false }));
    assert.deepEqual(result.ok && [result.path, result.source], [BUNDLED, 'bundled']);
    assert.deepEqual(
      result.attempts.map((attempt) => [attempt.source, attempt.outcome]),
      [
        ['setting', 'not set'],
        ['environment', 'skipped in untrusted workspace'],
        ['bundled', 'found'],
      ],
    );
    assert.match(ignoredSettingWarning(result) ?? '', /ignored because this workspace is not trusted/);
    const nothing = resolveServerBinary(lookup({ importStrategy: 'fromEnvironment', interpreter: VENV_PYTHON, workspaceTrusted: false }, [VENV_TPULINT]));
    assert.equal(nothing.ok, false);
  });

  it('finds the scripts directory of each kind of environment without resolving symbolic links', () => {
    assert.deepEqual(environmentBinaryCandidates('/p/.venv/bin/python3', 'linux'), ['/p/.venv/bin/tpulint']);
    assert.deepEqual(environmentBinaryCandidates('/opt/conda/envs/tpu/bin/python', 'darwin'), ['/opt/conda/envs/tpu/bin/tpulint']);
    assert.deepEqual(environmentBinaryCandidates('C:\\p\\.venv\\Scripts\\python.exe', 'win32'), ['C:\\p\\.venv\\Scripts\\tpulint.exe']);
    assert.deepEqual(environmentBinaryCandidates('C:\\Miniconda3\\envs\\tpu\\python.exe', 'win32'), [
      'C:\\Miniconda3\\envs\\tpu\\tpulint.exe',
      'C:\\Miniconda3\\envs\\tpu\\Scripts\\tpulint.exe',
    ]);
    assert.deepEqual(environmentBinaryCandidates('  ', 'linux'), []);
    assert.deepEqual(environmentBinaryCandidates(undefined, 'linux'), []);
  });
});
