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
import { encodeUnsigned, readUnsigned } from './leb128.mjs';

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

const parts = [bytes.subarray(0, 8)];
const removed = [];
let offset = 8;
while (offset < bytes.length) {
  const id = bytes[offset];
  const [size, start] = readUnsigned(bytes, offset + 1);
  const end = start + size;
  if (id !== 7) {
    parts.push(bytes.subarray(offset, end));
    offset = end;
    continue;
  }
  const [count, first] = readUnsigned(bytes, start);
  const kept = [];
  let at = first;
  for (let i = 0; i < count; i++) {
    const [nameLength, nameStart] = readUnsigned(bytes, at);
    const name = bytes.subarray(nameStart, nameStart + nameLength).toString('utf8');
    const [, next] = readUnsigned(bytes, nameStart + nameLength + 1); // kind byte, then the index
    if (read.has(name) || name.startsWith('__')) {
      kept.push(bytes.subarray(at, next));
    } else {
      removed.push(name);
    }
    at = next;
  }
  const body = Buffer.concat([encodeUnsigned(kept.length), ...kept]);
  parts.push(Buffer.from([7]), encodeUnsigned(body.length), body);
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
