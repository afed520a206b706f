// Positions and fix edits of tpulint's JSON output, in JavaScript's UTF-16 strings.
// Rows and columns are 1-based; columns count characters (code points), as in ruff's JSON.
// Shared by the playground page and its tests.

/** UTF-16 offset of each line start; `\n`, `\r\n` and a lone `\r` end a line, as in Python. */
export function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) starts.push(i + 1);
    else if (c === 13) {
      if (text.charCodeAt(i + 1) === 10) i++;
      starts.push(i + 1);
    }
  }
  return starts;
}

/** UTF-16 offset of a 1-based { row, column } (column in code points), clamped to the text. */
export function offsetAt(text, location, starts = lineStarts(text)) {
  const row = Math.min(Math.max(location.row, 1), starts.length);
  let offset = starts[row - 1];
  for (let skipped = 1; skipped < location.column && offset < text.length; skipped++) {
    const c = text.charCodeAt(offset);
    if (c === 10 || c === 13) break;
    offset += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
  }
  return offset;
}

/** The text after applying a fix's edits (non-overlapping, as tpulint emits them). */
export function applyEdits(text, edits) {
  const starts = lineStarts(text);
  const ranges = edits
    .map((edit) => ({
      start: offsetAt(text, edit.location, starts),
      end: offsetAt(text, edit.end_location, starts),
      content: edit.content,
    }))
    .sort((a, b) => a.start - b.start || a.end - b.end);
  let out = '';
  let last = 0;
  for (const range of ranges) {
    if (range.start < last) throw new Error('overlapping edits');
    out += text.slice(last, range.start) + range.content;
    last = range.end;
  }
  return out + text.slice(last);
}

/** Whole lines touched by a fix, before and after: { before: string[], after: string[], row }. */
export function fixPreview(text, fix) {
  const after = applyEdits(text, fix.edits);
  const starts = lineStarts(text);
  const firstRow = Math.min(...fix.edits.map((edit) => edit.location.row));
  const lastRow = Math.max(...fix.edits.map((edit) => edit.end_location.row));
  const prefixEnd = starts[firstRow - 1] ?? text.length;
  const suffixStart = lastRow < starts.length ? starts[lastRow] : text.length;
  const suffixLength = text.length - suffixStart;
  const split = (s) => (s === '' ? [] : s.replace(/\r\n?/g, '\n').replace(/\n$/, '').split('\n'));
  return {
    row: firstRow,
    before: split(text.slice(prefixEnd, suffixStart)),
    after: split(after.slice(prefixEnd, after.length - suffixLength)),
  };
}
