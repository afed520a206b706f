// Merges a WebAssembly module's data segments that lie close together (build.sh runs it after
// wasm-opt), filling the gap between two of them with the zeros it held.
//
// Usage: node server/wasm/merge-data.mjs MODULE.wasm MAX_GAP
//
// wasm-opt's memory packing splits the data wherever more than a few zero bytes lie in a row
// (tree-sitter-python's parse tables are mostly zeros), since a segment's header is smaller than
// the zeros it skips: the module is raw-smallest that way. Gzipped it is not: each of the 2,600
// segments' headers holds a distinct offset and length that gzip cannot compress, while a run of
// zeros compresses to almost nothing. A gap of at most MAX_GAP bytes between two segments becomes
// zeros inside one segment again. Memory starts zeroed and the zeros are what the gap held, so
// the memory the module starts with is the same byte for byte. Only a section of active segments
// (a constant offset into memory 0) in address order without overlaps is merged (wasm-opt writes
// them so); any other is left unchanged, since passive segments are addressed by index
// (`memory.init`, `data.drop`) and merging would renumber them, and a gap's zeros must not cover
// an earlier segment's bytes. The data count section, when present, is rewritten to the new count.
import { readFileSync, writeFileSync } from 'node:fs';
import { encodeSigned, encodeUnsigned, readSigned, readUnsigned } from './leb128.mjs';

const [modulePath, maxGapText] = process.argv.slice(2);
const maxGap = Number(maxGapText);
if (!modulePath || !Number.isInteger(maxGap) || maxGap < 0) {
  console.error('usage: node merge-data.mjs MODULE.wasm MAX_GAP');
  process.exit(2);
}

const bytes = readFileSync(modulePath);
function section(id, content) {
  return Buffer.concat([Buffer.from([id]), encodeUnsigned(content.length), content]);
}

/**
 * The active segments of a data section, or null when it holds any other kind, or segments out
 * of address order or overlapping (a gap's zeros would then overwrite an earlier segment's bytes).
 */
function readSegments(start, end) {
  let [count, offset] = readUnsigned(bytes, start);
  const segments = [];
  let previousEnd = 0;
  for (; count > 0; count--) {
    // Flag 0: active in memory 0 with an offset expression; accepted only as `i32.const N; end`.
    if (bytes[offset] !== 0 || bytes[offset + 1] !== 0x41) return null;
    const [address, afterAddress] = readSigned(bytes, offset + 2);
    if (bytes[afterAddress] !== 0x0b || address < previousEnd) return null;
    const [length, data] = readUnsigned(bytes, afterAddress + 1);
    segments.push({ address, data: bytes.subarray(data, data + length) });
    previousEnd = address + length;
    offset = data + length;
  }
  return offset === end ? segments : null;
}

function merge(segments) {
  const merged = [];
  for (const segment of segments) {
    const last = merged[merged.length - 1];
    const gap = last ? segment.address - (last.address + last.length) : maxGap + 1;
    if (gap <= maxGap) {
      last.parts.push(Buffer.alloc(gap), segment.data);
      last.length += gap + segment.data.length;
    } else {
      merged.push({ address: segment.address, length: segment.data.length, parts: [segment.data] });
    }
  }
  return merged;
}

const parts = [bytes.subarray(0, 8)];
let offset = 8;
let before = 0;
let after = 0;
let dataCountIndex = -1;
while (offset < bytes.length) {
  const id = bytes[offset];
  const [size, start] = readUnsigned(bytes, offset + 1);
  const end = start + size;
  if (id === 12) dataCountIndex = parts.length;
  if (id === 11) {
    const segments = readSegments(start, end);
    if (!segments) {
      console.log('[wasm] data segments left as they are: not all active, at constant offsets, in address order');
      process.exit(0);
    }
    const merged = merge(segments);
    before = segments.length;
    after = merged.length;
    const content = [encodeUnsigned(merged.length)];
    for (const segment of merged) {
      content.push(Buffer.from([0, 0x41]), encodeSigned(segment.address), Buffer.from([0x0b]));
      content.push(encodeUnsigned(segment.length), ...segment.parts);
    }
    parts.push(section(11, Buffer.concat(content)));
  } else {
    parts.push(bytes.subarray(offset, end));
  }
  offset = end;
}
if (dataCountIndex >= 0) parts[dataCountIndex] = section(12, encodeUnsigned(after));
writeFileSync(modulePath, Buffer.concat(parts));
console.log(`[wasm] data segments merged across gaps of at most ${maxGap} B: ${before} -> ${after}`);
