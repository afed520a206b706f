// Settings mapping: editor keys → the flat object the server reads, and what a change implies.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configurationImpact, initializationOptions, readSettings, toServerSettings, type SettingReader } from '../../src/settings';

const reader =
  (values: Record<string, unknown>): SettingReader =>
  (key) =>
    values[key];

describe('readSettings', () => {
  it('gives the documented defaults for an empty configuration', () => {
    assert.deepEqual(readSettings(reader({})), {
      serverPath: '',
      importStrategy: 'useBundled',
      logLevel: 'info',
      select: [],
      ignore: [],
      backend: undefined,
      unsafeFixes: undefined,
      pythonInterpreter: '',
    });
  });

  it('normalises rule codes and drops values of the wrong type', () => {
    const settings = readSettings(
      reader({
        'lint.select': ['tpu1', ' TPU401 ', 7, '', null],
        'lint.ignore': 'TPU101',
        backend: 'cuda',
        'fix.unsafe': 'yes',
        'server.logLevel': 'debug',
        'server.path': '  /opt/tpulint ',
        importStrategy: 'fromPath',
      }),
    );
    assert.deepEqual(settings.select, ['TPU1', 'TPU401']);
    assert.deepEqual(settings.ignore, []);
    assert.equal(settings.backend, undefined);
    assert.equal(settings.unsafeFixes, undefined);
    assert.equal(settings.logLevel, 'debug');
    assert.equal(settings.serverPath, '/opt/tpulint');
    assert.equal(settings.importStrategy, 'useBundled');
  });

  it('reads the import strategy', () => {
    assert.equal(readSettings(reader({ importStrategy: 'fromEnvironment' })).importStrategy, 'fromEnvironment');
  });
});

describe('toServerSettings', () => {
  it('maps grouped editor keys onto the server keys', () => {
    const settings = readSettings(
      reader({ 'lint.select': ['TPU1'], 'lint.ignore': ['TPU102'], backend: 'torchtpu', 'fix.unsafe': true, 'server.logLevel': 'warn' }),
    );
    assert.deepEqual(initializationOptions(settings), {
      settings: { select: ['TPU1'], ignore: ['TPU102'], backend: 'torchtpu', unsafeFixes: true, logLevel: 'warn' },
    });
  });

  it('leaves select out when the user selected nothing, so the project selection applies', () => {
    const server = toServerSettings(readSettings(reader({ 'lint.select': [] })));
    assert.equal('select' in server, false);
  });

  it('never sends extension-only settings to the server', () => {
    const server = toServerSettings(
      readSettings(reader({ 'server.path': '/x', 'python.interpreter': '/y', importStrategy: 'fromEnvironment' })),
    );
    assert.deepEqual(Object.keys(server), ['logLevel']);
  });

  it("sends nothing the user did not set, so the project's [tool.tpulint] backend stands", () => {
    // A project with `backend = "torch_xla"` and no tpulint settings in VS Code: the server must
    // not be told `backend: "auto"` (it would override the project's, as `--backend auto` does).
    assert.deepEqual(initializationOptions(readSettings(reader({}))), { settings: { logLevel: 'info' } });
    // A backend, unsafe-fixes choice or ignore list the user did set is sent, `false` included.
    assert.deepEqual(toServerSettings(readSettings(reader({ backend: 'auto', 'fix.unsafe': false, 'lint.ignore': ['TPU101'] }))), {
      logLevel: 'info',
      ignore: ['TPU101'],
      backend: 'auto',
      unsafeFixes: false,
    });
  });
});

describe('configurationImpact', () => {
  const affecting = (...sections: string[]) => (section: string) => sections.includes(section);
  it('restarts for a new server path or import strategy', () => {
    assert.equal(configurationImpact(affecting('tpulint.server.path')), 'restart');
    assert.equal(configurationImpact(affecting('tpulint.importStrategy')), 'restart');
  });
  it('notifies the running server for lint settings', () => {
    for (const key of ['tpulint.lint.select', 'tpulint.lint.ignore', 'tpulint.backend', 'tpulint.fix.unsafe', 'tpulint.server.logLevel']) {
      assert.equal(configurationImpact(affecting(key)), 'notify', key);
    }
  });
  it('ignores settings the server does not read', () => {
    assert.equal(configurationImpact(affecting('tpulint.python.interpreter', 'tpulint.trace.server', 'editor.fontSize')), 'none');
  });
});
