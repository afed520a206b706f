//! Where each cell's `source` value lies in a notebook's JSON text, and how to write a new one
//! in the same layout. A small scanner over text serde_json has already accepted: it finds byte
//! ranges, it does not validate.

use std::ops::Range;

/// A cell's `source` value in the JSON text.
#[derive(Debug, Clone)]
pub struct SourceValue {
    /// The value's byte range (from `[` or `"` to the matching `]` or `"`).
    pub range: Range<usize>,
    form: Form,
}

#[derive(Debug, Clone)]
enum Form {
    /// One JSON string.
    String,
    /// A list of lines; `before_element` goes before each element (a line break and indent, or
    /// nothing for an inline list) and `before_close` before the `]`.
    Lines {
        before_element: String,
        separator: &'static str,
        before_close: String,
    },
}

impl SourceValue {
    /// `source` as this value is written: one string, or nbformat's list of lines (each line
    /// keeps its `\n`).
    pub fn render(&self, source: &str) -> String {
        match &self.form {
            Form::String => json_string(source),
            Form::Lines {
                before_element,
                separator,
                before_close,
            } => {
                if source.is_empty() {
                    return "[]".to_string();
                }
                let mut out = String::from("[");
                for (index, line) in source.split_inclusive('\n').enumerate() {
                    if index > 0 {
                        out.push_str(separator);
                    }
                    out.push_str(before_element);
                    out.push_str(&json_string(line));
                }
                out.push_str(before_close);
                out.push(']');
                out
            }
        }
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string())
}

/// The `source` value of every element of the top-level `cells` list, in order; `None` when the
/// text is not shaped like a notebook.
pub fn cell_sources(text: &str) -> Option<Vec<SourceValue>> {
    let mut scanner = Scanner {
        text,
        bytes: text.as_bytes(),
        position: 0,
    };
    let layout = Layout::of(text);
    let mut found = None;
    scanner.object(|scanner, key| {
        if key == "cells" && scanner.peek() == Some(b'[') {
            let mut cells = Vec::new();
            scanner.array(|scanner| {
                let mut source = None;
                if scanner.peek() == Some(b'{') {
                    scanner.object(|scanner, key| {
                        if key == "source" {
                            let key_line_indent = layout.indent_of_line_at(scanner.position);
                            let start = scanner.position;
                            let form = scanner.source_form(&layout, &key_line_indent)?;
                            source = Some(SourceValue {
                                range: start..scanner.position,
                                form,
                            });
                            Some(())
                        } else {
                            scanner.skip_value()
                        }
                    })?;
                } else {
                    scanner.skip_value()?;
                }
                cells.push(source?);
                Some(())
            })?;
            found = Some(cells);
            Some(())
        } else {
            scanner.skip_value()
        }
    })?;
    found
}

/// Where the text a `source` value decodes to is written in the JSON: `(decoded, raw)` pairs,
/// sorted, meaning byte `decoded` of the cell's source is written at byte `raw` of `text` and
/// the bytes after it up to the next pair are written one for one (JSON copies unescaped text
/// as it is). A pair starts each string and follows each escape, so a report can point at the
/// line of the notebook file that holds a finding, as a reader of the `.ipynb` sees it.
pub fn decoded_offsets(text: &str, value: &Range<usize>) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut pairs = Vec::new();
    let mut decoded = 0;
    let mut position = value.start;
    let end = value.end.min(bytes.len());
    let mut in_string = false;
    while position < end {
        let byte = bytes[position];
        if !in_string {
            if byte == b'"' {
                in_string = true;
                pairs.push((decoded, position + 1));
            }
            position += 1;
            continue;
        }
        match byte {
            b'"' => {
                in_string = false;
                position += 1;
            }
            b'\\' => {
                let (raw_length, decoded_length) = escape_lengths(&bytes[position..end]);
                position += raw_length;
                decoded += decoded_length;
                pairs.push((decoded, position));
            }
            _ => {
                position += 1;
                decoded += 1;
            }
        }
    }
    pairs
}

/// The raw and decoded byte lengths of the escape at the start of `raw` (which begins with a
/// backslash): `\uXXXX` escapes decode to UTF-8, a surrogate pair to one four-byte character.
fn escape_lengths(raw: &[u8]) -> (usize, usize) {
    if raw.get(1) != Some(&b'u') {
        return (2.min(raw.len()), 1);
    }
    let unit = |at: usize| {
        raw.get(at..at + 4)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
    };
    let Some(first) = unit(2) else {
        return (raw.len().min(6), 1);
    };
    if (0xD800..0xDC00).contains(&first)
        && raw.get(6..8) == Some(b"\\u")
        && unit(8).is_some_and(|second| (0xDC00..0xE000).contains(&second))
    {
        return (12, 4);
    }
    let length = char::from_u32(first).map_or(3, char::len_utf8);
    (6, length)
}

/// The file's line break and indentation unit, for lists written where there was none.
struct Layout<'a> {
    text: &'a str,
    newline: &'static str,
    unit: String,
}

impl<'a> Layout<'a> {
    fn of(text: &'a str) -> Layout<'a> {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        // The indent of the first indented line is one level (Jupyter writes 1 space).
        let unit = text
            .lines()
            .skip(1)
            .map(|line| &line[..line.len() - line.trim_start().len()])
            .find(|indent| !indent.is_empty())
            .unwrap_or(" ")
            .to_string();
        Layout {
            text,
            newline,
            unit,
        }
    }

    fn indent_of_line_at(&self, offset: usize) -> String {
        let line_start = self.text[..offset].rfind('\n').map_or(0, |at| at + 1);
        let line = &self.text[line_start..offset];
        line[..line.len() - line.trim_start().len()].to_string()
    }
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    position: usize,
}

impl Scanner<'_> {
    fn whitespace(&mut self) {
        while self
            .bytes
            .get(self.position)
            .is_some_and(|byte| byte.is_ascii_whitespace())
        {
            self.position += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.whitespace();
        self.bytes.get(self.position).copied()
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.position += 1)
    }

    /// A string's range including its quotes.
    fn string(&mut self) -> Option<Range<usize>> {
        self.expect(b'"')?;
        let start = self.position - 1;
        loop {
            match *self.bytes.get(self.position)? {
                b'\\' => self.position += 2,
                b'"' => {
                    self.position += 1;
                    return Some(start..self.position);
                }
                _ => self.position += 1,
            }
        }
    }

    fn key(&mut self) -> Option<String> {
        let range = self.string()?;
        let raw = &self.text[range.clone()];
        if raw.contains('\\') {
            serde_json::from_str(raw).ok()
        } else {
            Some(raw[1..raw.len() - 1].to_string())
        }
    }

    /// Calls `member` at each member's value, which it must consume.
    fn object(&mut self, mut member: impl FnMut(&mut Self, String) -> Option<()>) -> Option<()> {
        self.expect(b'{')?;
        if self.peek()? == b'}' {
            self.position += 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.expect(b':')?;
            self.whitespace();
            member(self, key)?;
            match self.peek()? {
                b',' => self.position += 1,
                b'}' => {
                    self.position += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Calls `element` at each element, which it must consume.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.expect(b'[')?;
        if self.peek()? == b']' {
            self.position += 1;
            return Some(());
        }
        loop {
            self.whitespace();
            element(self)?;
            match self.peek()? {
                b',' => self.position += 1,
                b']' => {
                    self.position += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|scanner, _| scanner.skip_value()),
            b'[' => self.array(Self::skip_value),
            _ => {
                // A number, true, false or null: up to the next delimiter.
                while self.bytes.get(self.position).is_some_and(|byte| {
                    !matches!(byte, b',' | b'}' | b']') && !byte.is_ascii_whitespace()
                }) {
                    self.position += 1;
                }
                Some(())
            }
        }
    }

    /// Consumes a `source` value and records how it is laid out.
    fn source_form(&mut self, layout: &Layout<'_>, key_indent: &str) -> Option<Form> {
        if self.peek()? == b'"' {
            self.string()?;
            return Some(Form::String);
        }
        self.expect(b'[')?;
        let after_open = self.position;
        self.whitespace();
        if self.bytes.get(self.position) == Some(&b']') {
            self.position += 1;
            // `[]`: lay the lines out one level deeper than the key, as Jupyter does.
            return Some(Form::Lines {
                before_element: format!("{}{key_indent}{}", layout.newline, layout.unit),
                separator: ",",
                before_close: format!("{}{key_indent}", layout.newline),
            });
        }
        let before_element = self.text[after_open..self.position].to_string();
        let before_close;
        loop {
            self.string()?;
            let after_element = self.position;
            match self.peek()? {
                b',' => self.position += 1,
                b']' => {
                    before_close = self.text[after_element..self.position].to_string();
                    self.position += 1;
                    break;
                }
                _ => return None,
            }
            self.whitespace();
        }
        let multiline = before_element.contains('\n');
        Some(Form::Lines {
            separator: if multiline { "," } else { ", " },
            before_element: if multiline {
                before_element
            } else {
                String::new()
            },
            before_close,
        })
    }
}
