// LEB128 numbers as the WebAssembly binary format writes them, for the build's module rewriters
// (strip-exports.mjs, merge-data.mjs).

/** [value, next offset] of the unsigned LEB128 number at `offset` of `bytes`. */
export function readUnsigned(bytes, offset) {
  return read(bytes, offset, false);
}

/** [value, next offset] of the signed LEB128 number (an `i32.const` operand) at `offset`. */
export function readSigned(bytes, offset) {
  return read(bytes, offset, true);
}

function read(bytes, offset, signed) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[offset++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) {
      if (signed && byte & 0x40) value -= 2 ** shift;
      return [value, offset];
    }
  }
}

/** The unsigned LEB128 encoding of `value`. */
export function encodeUnsigned(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return Buffer.from(out);
}

/** The signed LEB128 encoding of `value` (an `i32.const` operand). */
export function encodeSigned(value) {
  const out = [];
  for (;;) {
    const byte = value & 0x7f;
    value >>= 7;
    if ((value === 0 && !(byte & 0x40)) || (value === -1 && byte & 0x40)) {
      out.push(byte);
      return Buffer.from(out);
    }
    out.push(byte | 0x80);
  }
}
