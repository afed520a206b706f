// Removes from a WebAssembly module the exports its JavaScript glue never reads (build.sh runs it
// before wasm-opt).
//
// Usage: node server/wasm/strip-exports.mjs MODULE.wasm GLUE.js...
//
// The module exports the C library that tree-sitter links for wasm32 (`malloc`, `memcpy`,
// `strncat`, `iswalnum`, ...): exported, none of it could be removed, used or not. The glue
// (wasm-bindgen's `--target web` or `nodejs` file) reads the module's exports as `wasm.NAME`; an
// export named nowhere in the glue files, and not one of wasm-bindgen's own (`__` names), is
// dropped, so that wasm-opt can remove what nothing else calls. JavaScript never sees the
// difference: the glue is what it calls.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const [modulePath, ...gluePaths] = process.argv.slice(2);
if (!modulePath || gluePaths.length === 0) {
  console.error('usage: node strip-exports.mjs MODULE.wasm GLUE.js...');
  process.exit(2);
}
const read = new Set();
for (const gluePath of gluePaths) {
  for (const match of readFileSync(gluePath, 'utf8').matchAll(/\bwasm\.([A-Za-z_$][\w$]*)/g)) {
    read.add(match[1]);
  }
}

const bytes = readFileSync(modulePath);
/** [value, next offset] of the unsigned LEB128 number at `offset`. */
function leb(offset) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[offset++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return [value, offset];
  }
}
function encodeLeb(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return Buffer.from(out);
}

const parts = [bytes.subarray(0, 8)];
const removed = [];
let offset = 8;
while (offset < bytes.length) {
  const id = bytes[offset];
  const [size, start] = leb(offset + 1);
  const end = start + size;
  if (id !== 7) {
    parts.push(bytes.subarray(offset, end));
    offset = end;
    continue;
  }
  const [count, first] = leb(start);
  const kept = [];
  let at = first;
  for (let i = 0; i < count; i++) {
    const [nameLength, nameStart] = leb(at);
    const name = bytes.subarray(nameStart, nameStart + nameLength).toString('utf8');
    const [, next] = leb(nameStart + nameLength + 1); // kind byte, then the index
    if (read.has(name) || name.startsWith('__')) {
      kept.push(bytes.subarray(at, next));
    } else {
      removed.push(name);
    }
    at = next;
  }
  const body = Buffer.concat([encodeLeb(kept.length), ...kept]);
  parts.push(Buffer.from([7]), encodeLeb(body.length), body);
  offset = end;
}
writeFileSync(modulePath, Buffer.concat(parts));
// wasm-bindgen's declaration of the module's exports, beside it, loses the same lines.
const declarations = modulePath.replace(/\.wasm$/, '.wasm.d.ts');
if (existsSync(declarations)) {
  const gone = new Set(removed);
  const lines = readFileSync(declarations, 'utf8').split('\n');
  const keptLines = lines.filter((line) => !gone.has(/^export const ([\w$]+):/.exec(line)?.[1]));
  writeFileSync(declarations, keptLines.join('\n'));
}
console.log(`[wasm] exports the glue does not read, removed: ${removed.join(', ') || 'none'}`);
