// Throughput of the WebAssembly build (Node, one thread) against the native CLI on a directory of
// Python files, with every rule selected. Needs server/wasm/build.sh and a release CLI:
//   cargo build --release -p tpulint
//   node bench/wasm-speed.mjs /work/corpus/huggingface+diffusers [path/to/tpulint]
// Prints lines/s and MB/s for each and their ratio; the native side runs `tpulint check` with
// one thread (RAYON_NUM_THREADS=1) and its time includes process start and file reads.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const wasm = require(join(root, 'server/wasm/pkg/node/tpulint_wasm.js'));

const directory = process.argv[2];
const cli = process.argv[3] ?? join(process.env.CARGO_TARGET_DIR ?? join(root, 'target'), 'release/tpulint');
if (!directory) {
  console.error('usage: node bench/wasm-speed.mjs DIRECTORY [TPULINT_BINARY]');
  process.exit(2);
}

function pythonFiles(path) {
  const found = [];
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) found.push(...pythonFiles(child));
    else if (entry.name.endsWith('.py')) found.push(child);
  }
  return found;
}

const sources = pythonFiles(directory).map((path) => readFileSync(path, 'utf8'));
const bytes = sources.reduce((sum, source) => sum + Buffer.byteLength(source), 0);
const lines = sources.reduce((sum, source) => sum + source.split('\n').length, 0);
const options = { select: ['ALL'] };

// Warm up (instantiation, first-call costs), then take the best of three passes.
for (const source of sources.slice(0, 20)) wasm.check(source, options);
let best = Infinity;
let findings = 0;
for (let pass = 0; pass < 3; pass++) {
  const started = process.hrtime.bigint();
  findings = 0;
  for (const source of sources) findings += wasm.check(source, options).length;
  best = Math.min(best, Number(process.hrtime.bigint() - started) / 1e9);
}

let nativeBest = Infinity;
let nativeFindings = 0;
for (let pass = 0; pass < 3; pass++) {
  const started = process.hrtime.bigint();
  const output = execFileSync(cli, ['check', '--select', 'ALL', '--output-format', 'json', '--exit-zero', directory], {
    env: { ...process.env, RAYON_NUM_THREADS: '1' },
    maxBuffer: 1 << 30,
    encoding: 'utf8',
  });
  nativeBest = Math.min(nativeBest, Number(process.hrtime.bigint() - started) / 1e9);
  nativeFindings = JSON.parse(output).length;
}

const rate = (seconds) => `${Math.round(lines / seconds).toLocaleString('en')} lines/s, ${(bytes / 1e6 / seconds).toFixed(1)} MB/s`;
console.log(`${sources.length} files, ${lines.toLocaleString('en')} lines, ${(bytes / 1e6).toFixed(1)} MB`);
console.log(`wasm (node ${process.version}): ${best.toFixed(2)} s, ${rate(best)}, ${findings} findings`);
console.log(`native CLI (1 thread):       ${nativeBest.toFixed(2)} s, ${rate(nativeBest)}, ${nativeFindings} findings`);
console.log(`wasm / native time: ${(best / nativeBest).toFixed(2)}x`);
