//! Source text helpers: byte ranges, line/column lookup, and line-ending facts.
//!
//! The engine works in byte offsets only. `LineIndex` turns offsets into
//! 0-based (line, byte column) pairs; converting byte columns into UTF-16 or
//! character columns is the business of each front end.

use std::ops::Range;

/// A half-open byte range into a file's text.
pub type TextRange = Range<usize>;

/// Start offsets of every line, for offset → (line, column) lookups.
#[derive(Debug, Clone)]
pub struct LineIndex {
    line_starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    /// Builds the index. `\n`, `\r\n` and a lone `\r` all end a line, as in Python.
    pub fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => line_starts.push(i + 1),
                b'\r' => {
                    if bytes.get(i + 1) == Some(&b'\n') {
                        i += 1;
                    }
                    line_starts.push(i + 1);
                }
                _ => {}
            }
            i += 1;
        }
        LineIndex {
            line_starts,
            len: text.len(),
        }
    }

    /// Number of lines (a trailing newline opens one more, empty line).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// 0-based line containing `offset` (offsets past the end map to the last line).
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.len);
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    /// 0-based (line, byte column) of `offset`.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = self.line_of(offset);
        (line, offset.min(self.len) - self.line_starts[line])
    }

    /// Byte offset where 0-based `line` starts, clamped to the end of the text.
    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts.get(line).copied().unwrap_or(self.len)
    }

    /// Byte range of 0-based `line` without its line terminator.
    pub fn line_range(&self, line: usize, text: &str) -> TextRange {
        let start = self.line_start(line);
        let mut end = self.line_start(line + 1);
        let bytes = text.as_bytes();
        while end > start && matches!(bytes.get(end - 1), Some(b'\n' | b'\r')) {
            end -= 1;
        }
        start..end
    }
}

/// The line terminator a file mostly uses; fixes insert new lines with it.
pub fn detect_line_ending(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
        None if text.contains('\r') => "\r",
        None => "\n",
    }
}

/// Clamps `offset` down to the nearest char boundary of `text`.
pub fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_handles_all_line_endings() {
        let text = "a\nbc\r\nd\re";
        let index = LineIndex::new(text);
        assert_eq!(index.line_count(), 4);
        assert_eq!(index.line_col(0), (0, 0));
        assert_eq!(index.line_col(3), (1, 1));
        assert_eq!(index.line_col(6), (2, 0));
        assert_eq!(index.line_col(8), (3, 0));
        assert_eq!(index.line_range(1, text), 2..4);
    }

    #[test]
    fn offsets_past_end_clamp() {
        let index = LineIndex::new("ab\n");
        assert_eq!(index.line_col(99), (1, 0));
    }
}
