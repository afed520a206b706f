// The WebAssembly build against the native CLI, on every fixture under tests/fixtures/:
// `check` must equal `tpulint check --output-format json` (plus the documented `severity` key),
// `applyFixes(…, unsafe)` must equal what `tpulint check --fix --unsafe-fixes` writes, and
// `rules()` merged with `rule-docs.json` (the documentation the module leaves out, written beside
// it by build.sh) must equal `tpulint rule --all --output-format json`.
//
// Needs server/wasm/build.sh (pkg/node) and the CLI binary: TPULINT_BIN, else target/debug/tpulint
// under CARGO_TARGET_DIR or the repository. Run: node --test server/wasm/tests/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const require = createRequire(import.meta.url);
const wasm = require(join(root, 'server/wasm/pkg/node/tpulint_wasm.js'));

function cliBinary() {
  const candidates = [
    process.env.TPULINT_BIN,
    process.env.CARGO_TARGET_DIR && join(process.env.CARGO_TARGET_DIR, 'debug/tpulint'),
    join(root, 'target/debug/tpulint'),
  ].filter(Boolean);
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) throw new Error(`no tpulint binary (tried ${candidates.join(', ')}); run cargo build -p tpulint`);
  return found;
}
const tpulint = cliBinary();

/** Every fixture, sorted (as tests/src/lib.rs::fixture_paths). */
function fixturePaths(directory = join(root, 'tests/fixtures')) {
  const found = [];
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) found.push(...fixturePaths(path));
    else if (entry.name.endsWith('.py')) found.push(path);
  }
  return found.sort();
}

/** Mirrors tests/src/lib.rs::fixture_settings: the fixture's rule, plus `# fixture:` options
 * (`backend=…`, `also=CODE,…`) from its first five lines. */
export function fixtureSettings(path, source) {
  const code = basename(path, '.py').split('_')[0];
  const select = [code];
  let backend;
  for (const line of source.split(/\r\n|\r|\n/).slice(0, 5)) {
    if (!line.startsWith('# fixture:')) continue;
    for (const option of line.slice('# fixture:'.length).trim().split(/\s+/)) {
      if (option.startsWith('also=')) select.push(...option.slice(5).split(','));
      if (option.startsWith('backend=')) backend = option.slice(8);
    }
  }
  return backend ? { select, backend } : { select };
}

function cliArguments(settings) {
  const args = ['--select', settings.select.join(',')];
  if (settings.backend) args.push('--backend', settings.backend);
  return args;
}

/** Runs the CLI; exit 0 (clean) and 1 (findings) are both answers, 2 is a failure. */
function runCli(args) {
  const result = spawnSync(tpulint, args, { cwd: root, encoding: 'utf8' });
  if (result.status !== 0 && result.status !== 1) {
    throw new Error(`tpulint ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  }
  return result.stdout;
}

const fixtures = fixturePaths();

test('there are fixtures to compare', () => {
  assert.ok(fixtures.length >= 4, `found ${fixtures.length} fixtures`);
});

for (const path of fixtures) {
  const name = path.slice(root.length + 1);
  const source = readFileSync(path, 'utf8');
  const settings = fixtureSettings(path, source);

  test(`check equals the CLI's JSON: ${name}`, () => {
    const native = JSON.parse(runCli(['check', '--output-format', 'json', ...cliArguments(settings), path]));
    // The CLI reports the absolute path; give the same name to the wasm build.
    const fromWasm = wasm.check(source, { ...settings, filename: native[0]?.filename ?? path });
    assert.equal(fromWasm.length, native.length, 'same number of diagnostics');
    for (const diagnostic of fromWasm) {
      assert.ok(['error', 'warning', 'info'].includes(diagnostic.severity), `severity of ${diagnostic.code}`);
    }
    // The wasm build always carries `severity`; compare it too when the CLI prints it.
    const comparable = native.length && 'severity' in native[0] ? fromWasm : fromWasm.map(({ severity: _severity, ...rest }) => rest);
    assert.deepEqual(comparable, native);
  });

  test(`applyFixes equals check --fix --unsafe-fixes: ${name}`, () => {
    const directory = mkdtempSync(join(tmpdir(), 'tpulint-wasm-'));
    try {
      const copy = join(directory, basename(path));
      copyFileSync(path, copy);
      runCli(['check', '--fix', '--unsafe-fixes', '--quiet', ...cliArguments(settings), copy]);
      const nativeOutput = readFileSync(copy, 'utf8');
      const outcome = wasm.applyFixes(source, settings, true);
      assert.equal(outcome.output, nativeOutput);
      assert.equal(outcome.converged, true);
      // What the CLI still reports on its fixed file is what applyFixes says remains.
      const remaining = JSON.parse(runCli(['check', '--output-format', 'json', ...cliArguments(settings), copy]));
      assert.deepEqual(
        outcome.remaining.map((d) => [d.code, d.location.row, d.location.column]),
        remaining.map((d) => [d.code, d.location.row, d.location.column]),
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
}

test('rules() with rule-docs.json equals tpulint rule --all --output-format json', () => {
  const native = JSON.parse(execFileSync(tpulint, ['rule', '--all', '--output-format', 'json'], { encoding: 'utf8' }));
  const docs = JSON.parse(readFileSync(join(root, 'server/wasm/pkg/node/rule-docs.json'), 'utf8'));
  const listed = wasm.rules();
  // The module itself carries no documentation: that is what keeps it within its size budget.
  for (const rule of listed) {
    assert.equal(rule.summary, undefined, rule.code);
    assert.equal(rule.explanation, undefined, rule.code);
  }
  assert.deepEqual(listed.map((rule) => ({ ...rule, ...docs[rule.code] })), native);
  assert.deepEqual(Object.keys(docs).sort(), native.map((rule) => rule.code).sort());
  for (const copy of ['server/wasm/pkg/web/rule-docs.json', 'docs/playground/pkg/rule-docs.json']) {
    assert.deepEqual(JSON.parse(readFileSync(join(root, copy), 'utf8')), docs, copy);
  }
});

test('safe-only fixing leaves unsafe fixes alone, like check --fix on stdin', () => {
  const source = 'import torch\nx = torch.ones(2).to("cuda")\n';
  for (const unsafe of [false, true]) {
    const outcome = wasm.applyFixes(source, { select: ['TPU401'], backend: 'torch_xla' }, unsafe);
    const args = ['check', '--fix', ...(unsafe ? ['--unsafe-fixes'] : []), '--select', 'TPU401', '--backend', 'torch_xla', '--stdin-filename', 'x.py', '-'];
    const native = spawnSync(tpulint, args, { cwd: root, input: source, encoding: 'utf8' });
    assert.ok(native.status === 0 || native.status === 1, native.stderr);
    assert.equal(outcome.output, native.stdout);
    assert.equal(outcome.output === source, !unsafe, 'TPU401 rewrites only with unsafe fixes');
  }
});

test('bad options throw, as the CLI exits 2', () => {
  assert.throws(() => wasm.check('x = 1\n', { select: ['NOPE1'] }), /NOPE1/);
  assert.throws(() => wasm.check('x = 1\n', { backend: 'cuda' }), /backend/);
  assert.throws(() => wasm.check('x = 1\n', { selct: ['TPU101'] }), /selct/);
  const cli = spawnSync(tpulint, ['check', '--select', 'NOPE1', '-'], { input: 'x = 1\n', encoding: 'utf8' });
  assert.equal(cli.status, 2);
});

test('no input panics the module', () => {
  const inputs = ['', '\0', 'def f(:\n  x.item(\n', '\ud800', 'é'.repeat(1000), '('.repeat(5000), 'x = "cuda"\r\n\r'];
  for (const input of inputs) {
    assert.ok(Array.isArray(wasm.check(input, { select: ['ALL'] })));
    assert.equal(typeof wasm.applyFixes(input, { select: ['ALL'] }, true).output, 'string');
  }
});
