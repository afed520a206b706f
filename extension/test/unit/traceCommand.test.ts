// The "Trace a Run" command line: quoting and the `--` separator.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultTracedCommand, shellQuote, traceRunLine } from '../../src/traceCommand';

describe('traceRunLine', () => {
  it('runs the command after `--`', () => {
    assert.equal(traceRunLine('/opt/tpulint', 'python train.py --steps 5 '), '/opt/tpulint trace run -- python train.py --steps 5');
  });

  it('quotes a server path with spaces', () => {
    assert.equal(traceRunLine('/My Tools/tpulint', 'python a.py'), "'/My Tools/tpulint' trace run -- python a.py");
  });
});

describe('defaultTracedCommand', () => {
  it('quotes the interpreter and the script', () => {
    assert.equal(defaultTracedCommand('/venv/bin/python', 'src/my train.py'), "/venv/bin/python 'src/my train.py'");
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
  });
});
