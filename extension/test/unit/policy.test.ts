// Crash-restart policy, interpreter order and the environment-report contract.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CrashPolicy } from '../../src/crashPolicy';
import { chooseInterpreter } from '../../src/interpreterOrder';
import { parseEnvironmentReport } from '../../src/lspExt';

describe('CrashPolicy', () => {
  it('restarts up to the limit within the window, then gives up', () => {
    const policy = new CrashPolicy(2, 1000);
    assert.equal(policy.shouldRestart(0), true);
    assert.equal(policy.shouldRestart(100), true);
    assert.equal(policy.shouldRestart(200), false);
  });
  it('forgets crashes older than the window and after a manual restart', () => {
    const policy = new CrashPolicy(1, 1000);
    assert.equal(policy.shouldRestart(0), true);
    assert.equal(policy.shouldRestart(1500), true);
    assert.equal(policy.shouldRestart(1600), false);
    policy.reset();
    assert.equal(policy.shouldRestart(1700), true);
  });
});

describe('chooseInterpreter', () => {
  it('follows setting, then picked, then the Python extension', () => {
    assert.deepEqual(chooseInterpreter({ setting: ' /s/python ', picked: '/p/python', pythonExtension: '/e/python' }), {
      path: '/s/python',
      source: 'setting',
    });
    assert.deepEqual(chooseInterpreter({ setting: '', picked: '/p/python', pythonExtension: '/e/python' })?.source, 'picked');
    assert.deepEqual(chooseInterpreter({ setting: '', picked: undefined, pythonExtension: '/e/python' })?.source, 'python extension');
    assert.equal(chooseInterpreter({ setting: '', picked: undefined, pythonExtension: undefined }), undefined);
  });
});

describe('parseEnvironmentReport', () => {
  it('reads verdict, summary, markdown and the fixes that carry a command', () => {
    const report = parseEnvironmentReport({
      verdict: 'not_ready',
      summary: 'not ready: 1 error (no-tpu-backend)',
      markdown: '# Report',
      fixes: [{ title: 'Install torch_xla', command: 'python -m pip install torch_xla' }, { title: 'no command' }],
    });
    assert.equal(report.verdict, 'not_ready');
    assert.equal(report.summary, 'not ready: 1 error (no-tpu-backend)');
    assert.deepEqual(report.fixes, [{ title: 'Install torch_xla', command: 'python -m pip install torch_xla' }]);
  });
  it('keeps the finding a fix belongs to and its documentation page', () => {
    const url = 'https://github.com/tpulint/tpulint/blob/main/docs/doctor.md#no-tpu-backend';
    const report = parseEnvironmentReport({
      markdown: '# Report',
      fixes: [{ title: 'Install', command: 'pip install x', finding: 'no-tpu-backend', url }, { title: 'Bad', command: 'y', url: 'javascript:x' }],
    });
    assert.deepEqual(report.fixes, [
      { title: 'Install', command: 'pip install x', finding: 'no-tpu-backend', url },
      { title: 'Bad', command: 'y' },
    ]);
  });
  it('maps an unknown verdict to unknown and accepts a bare Markdown answer', () => {
    assert.equal(parseEnvironmentReport({ verdict: 'great', markdown: '# R' }).verdict, 'unknown');
    assert.deepEqual(parseEnvironmentReport('# Only markdown'), { verdict: 'unknown', summary: '', markdown: '# Only markdown', fixes: [] });
  });
  it('rejects an answer without a report', () => {
    assert.throws(() => parseEnvironmentReport(null), /unexpected environment report/);
    assert.throws(() => parseEnvironmentReport({ verdict: 'ready' }), /unexpected environment report/);
  });
});
