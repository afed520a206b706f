//! A small JSON reader and writer: the messages the browser's language server reads, and the
//! options object of the WebAssembly exports.
//!
//! serde_json's deserializer, with `Value`'s visitor, the derived readers of the protocol's
//! types and serde's error formatting (which pulls in float printing), costs the WebAssembly
//! module far more than its budget leaves; what the server reads needs none of it. This reader
//! accepts standard JSON (RFC 8259), keeps numbers as their text, bounds nesting
//! ([`MAX_DEPTH`]) and never panics. [`JsonRead`] lets the code that reads client JSON (settings,
//! capabilities) take this or serde_json's `Value` (the native server's).

/// A parsed JSON value. Objects keep their keys in order, duplicates included.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonValue {
    Null,
    Bool(bool),
    /// The number's text, validated against the JSON grammar.
    Number(String),
    String(String),
    Array(Vec<JsonValue>),
    Object(Vec<(String, JsonValue)>),
}

/// Read access to a JSON value, for code shared by hosts with different JSON types.
pub trait JsonRead: Sized {
    fn get(&self, key: &str) -> Option<&Self>;
    fn as_str(&self) -> Option<&str>;
    fn as_bool(&self) -> Option<bool>;
    fn as_i64(&self) -> Option<i64>;
    fn as_array(&self) -> Option<&[Self]>;
    /// An object's members, in order.
    fn members(&self) -> Option<Vec<(&str, &Self)>>;
    fn is_null(&self) -> bool;
    fn is_object(&self) -> bool {
        self.members().is_some()
    }
    /// The value as compact JSON text (for messages naming it).
    fn render(&self) -> String;

    /// The value at a path of object keys.
    fn at(&self, path: &[&str]) -> Option<&Self> {
        path.iter().try_fold(self, |value, key| value.get(key))
    }
}

impl JsonRead for JsonValue {
    fn get(&self, key: &str) -> Option<&JsonValue> {
        match self {
            JsonValue::Object(members) => members
                .iter()
                .rev()
                .find(|(name, _)| name == key)
                .map(|(_, value)| value),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            JsonValue::String(text) => Some(text),
            _ => None,
        }
    }

    fn as_bool(&self) -> Option<bool> {
        match self {
            JsonValue::Bool(flag) => Some(*flag),
            _ => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match self {
            JsonValue::Number(text) => text.parse().ok(),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&[JsonValue]> {
        match self {
            JsonValue::Array(items) => Some(items),
            _ => None,
        }
    }

    fn members(&self) -> Option<Vec<(&str, &JsonValue)>> {
        match self {
            JsonValue::Object(members) => Some(
                members
                    .iter()
                    .map(|(name, value)| (name.as_str(), value))
                    .collect(),
            ),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, JsonValue::Null)
    }

    fn render(&self) -> String {
        let mut out = String::new();
        write(self, &mut out);
        out
    }
}

impl JsonRead for serde_json::Value {
    fn get(&self, key: &str) -> Option<&serde_json::Value> {
        serde_json::Value::get(self, key)
    }

    fn as_str(&self) -> Option<&str> {
        serde_json::Value::as_str(self)
    }

    fn as_bool(&self) -> Option<bool> {
        serde_json::Value::as_bool(self)
    }

    fn as_i64(&self) -> Option<i64> {
        serde_json::Value::as_i64(self)
    }

    fn as_array(&self) -> Option<&[serde_json::Value]> {
        serde_json::Value::as_array(self).map(Vec::as_slice)
    }

    fn members(&self) -> Option<Vec<(&str, &serde_json::Value)>> {
        self.as_object().map(|map| {
            map.iter()
                .map(|(key, value)| (key.as_str(), value))
                .collect()
        })
    }

    fn is_null(&self) -> bool {
        serde_json::Value::is_null(self)
    }

    fn render(&self) -> String {
        self.to_string()
    }
}

/// Writes `value` as compact JSON.
pub fn write(value: &JsonValue, out: &mut String) {
    match value {
        JsonValue::Null => out.push_str("null"),
        JsonValue::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        JsonValue::Number(text) => out.push_str(text),
        JsonValue::String(text) => write_string(text, out),
        JsonValue::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        JsonValue::Object(members) => {
            out.push('{');
            for (index, (name, item)) in members.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(name, out);
                out.push(':');
                write(item, out);
            }
            out.push('}');
        }
    }
}

/// Writes `text` as a JSON string.
pub fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 15] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Nesting deeper than this is rejected (LSP messages are a few levels deep).
pub const MAX_DEPTH: usize = 64;

/// Parses one JSON text; the error names the byte offset.
pub fn parse(text: &str) -> Result<JsonValue, String> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        position: 0,
    };
    let value = reader.value(0)?;
    reader.whitespace();
    if reader.position != reader.bytes.len() {
        return Err(reader.error("trailing characters"));
    }
    Ok(value)
}

struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Reader<'_> {
    fn error(&self, what: &str) -> String {
        format!("{what} at byte {}", self.position)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.position).copied()
    }

    fn whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.position += 1;
        }
    }

    fn literal(&mut self, word: &str, value: JsonValue) -> Result<JsonValue, String> {
        if self.bytes[self.position..].starts_with(word.as_bytes()) {
            self.position += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<JsonValue, String> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.whitespace();
        match self.peek() {
            Some(b'n') => self.literal("null", JsonValue::Null),
            Some(b't') => self.literal("true", JsonValue::Bool(true)),
            Some(b'f') => self.literal("false", JsonValue::Bool(false)),
            Some(b'"') => self.string().map(JsonValue::String),
            Some(b'[') => {
                self.position += 1;
                let mut items = Vec::new();
                self.whitespace();
                if self.peek() == Some(b']') {
                    self.position += 1;
                    return Ok(JsonValue::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.whitespace();
                    match self.peek() {
                        Some(b',') => self.position += 1,
                        Some(b']') => {
                            self.position += 1;
                            return Ok(JsonValue::Array(items));
                        }
                        _ => return Err(self.error("expected `,` or `]`")),
                    }
                }
            }
            Some(b'{') => {
                self.position += 1;
                let mut fields = Vec::new();
                self.whitespace();
                if self.peek() == Some(b'}') {
                    self.position += 1;
                    return Ok(JsonValue::Object(fields));
                }
                loop {
                    self.whitespace();
                    if self.peek() != Some(b'"') {
                        return Err(self.error("expected a key"));
                    }
                    let key = self.string()?;
                    self.whitespace();
                    if self.peek() != Some(b':') {
                        return Err(self.error("expected `:`"));
                    }
                    self.position += 1;
                    fields.push((key, self.value(depth + 1)?));
                    self.whitespace();
                    match self.peek() {
                        Some(b',') => self.position += 1,
                        Some(b'}') => {
                            self.position += 1;
                            return Ok(JsonValue::Object(fields));
                        }
                        _ => return Err(self.error("expected `,` or `}`")),
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("expected a JSON value")),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.position;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.position += 1;
        }
        self.position - start
    }

    fn number(&mut self) -> Result<JsonValue, String> {
        let start = self.position;
        if self.peek() == Some(b'-') {
            self.position += 1;
        }
        let integer_start = self.position;
        let integer = self.digits();
        if integer == 0 || (integer > 1 && self.bytes[integer_start] == b'0') {
            return Err(self.error("invalid number"));
        }
        if self.peek() == Some(b'.') {
            self.position += 1;
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.position += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.position += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        // Only ASCII digits, signs, `.` and exponents were read: the bytes are valid UTF-8 (and
        // `from_utf8_lossy`, with its replacement machinery, is not linked for this).
        let text = String::from_utf8(self.bytes[start..self.position].to_vec())
            .map_err(|_| self.error("invalid number"))?;
        Ok(JsonValue::Number(text))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .bytes
            .get(self.position..self.position + 4)
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .and_then(|digits| u32::from_str_radix(digits, 16).ok())
            .ok_or_else(|| self.error("invalid \\u escape"))?;
        self.position += 4;
        Ok(digits)
    }

    /// A string starting at the opening quote.
    fn string(&mut self) -> Result<String, String> {
        self.position += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(byte) = self.peek() else {
                return Err(self.error("unterminated string"));
            };
            self.position += 1;
            match byte {
                b'"' => break,
                b'\\' => {
                    let Some(escape) = self.peek() else {
                        return Err(self.error("unterminated string"));
                    };
                    self.position += 1;
                    let decoded = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let first = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&first)
                                && self.bytes[self.position..].starts_with(b"\\u")
                            {
                                self.position += 2;
                                let second = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&second) {
                                    return Err(self.error("invalid surrogate pair"));
                                }
                                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                            } else {
                                first
                            };
                            // A lone surrogate becomes U+FFFD, as JavaScript's decoders do.
                            char::from_u32(code).unwrap_or('\u{FFFD}')
                        }
                        _ => return Err(self.error("invalid escape")),
                    };
                    let mut buffer = [0u8; 4];
                    out.extend_from_slice(decoded.encode_utf8(&mut buffer).as_bytes());
                }
                0x00..=0x1F => return Err(self.error("control character in string")),
                _ => out.push(byte),
            }
        }
        // The input was a `&str` and escapes were encoded as UTF-8: the bytes are valid.
        String::from_utf8(out).map_err(|_| self.error("invalid UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_json_stringify_writes() {
        let value =
            parse(r#" {"select":["TPU1","ALL"],"n":-1.5e3,"b":true,"z":null,"e":{}} "#).unwrap();
        assert_eq!(
            value,
            JsonValue::Object(vec![
                (
                    "select".into(),
                    JsonValue::Array(vec![
                        JsonValue::String("TPU1".into()),
                        JsonValue::String("ALL".into())
                    ])
                ),
                ("n".into(), JsonValue::Number("-1.5e3".into())),
                ("b".into(), JsonValue::Bool(true)),
                ("z".into(), JsonValue::Null),
                ("e".into(), JsonValue::Object(Vec::new())),
            ])
        );
    }

    #[test]
    fn decodes_escapes() {
        assert_eq!(
            parse(r#""a\"b\\c\/\n\u00e9\ud83d\ude00""#).unwrap(),
            JsonValue::String("a\"b\\c/\né😀".into())
        );
        assert_eq!(parse(r#""é""#).unwrap(), JsonValue::String("é".into()));
    }

    #[test]
    fn rejects_malformed_text_without_panicking() {
        for text in [
            "",
            "{",
            "[",
            "[1,]",
            "{\"a\"}",
            "{\"a\":}",
            "01",
            "1.",
            "-",
            "1e",
            "\"",
            "\"\\x\"",
            "\"\\u12\"",
            "tru",
            "nul",
            "{} x",
            "[\"\\ud800\\u0041\"]",
            "\"\u{1}\"",
        ] {
            assert!(parse(text).is_err(), "{text:?} parsed");
        }
        let deep = "[".repeat(10_000);
        assert!(parse(&deep).unwrap_err().contains("too deep"));
    }
}
