//! Conversion of LSP positions and ranges (in the negotiated encoding) into byte offsets.
//!
//! With `to_proto`, the only place that knows positions are not bytes.

use ls_types::{Position, Range};
use tpulint_analyzer::{LineIndex, TextRange};

use crate::encoding::PositionEncoding;

/// Byte offset of `position` in `text`. A line past the end maps to the end of the text and a
/// character past the end of its line to the end of that line (as the protocol asks); a position
/// inside a character (half of a surrogate pair, a byte inside a UTF-8 sequence) snaps to its start.
pub fn offset(
    text: &str,
    index: &LineIndex,
    position: Position,
    encoding: PositionEncoding,
) -> usize {
    let line = position.line as usize;
    if line >= index.line_count() {
        return text.len();
    }
    let line_range = index.line_range(line, text);
    let line_text = &text[line_range.clone()];
    let wanted = position.character as usize;
    let mut units = 0;
    for (byte, character) in line_text.char_indices() {
        let width = encoding.units(character);
        if units + width > wanted {
            return line_range.start + byte;
        }
        units += width;
    }
    line_range.end
}

/// Byte range of `range`; a reversed range is put in order.
pub fn text_range(
    text: &str,
    index: &LineIndex,
    range: Range,
    encoding: PositionEncoding,
) -> TextRange {
    let start = offset(text, index, range.start, encoding);
    let end = offset(text, index, range.end, encoding);
    start.min(end)..start.max(end)
}
