//! Conversion of tpulint's byte offsets and engine types into LSP types.
//!
//! With `from_proto`, the only place that knows positions are not bytes.

use std::str::FromStr;

use ls_types::{
    self as lsp, CodeDescription, DiagnosticRelatedInformation, Location, NumberOrString, Position,
    Range, TextEdit, Uri,
};
use tpulint_analyzer::source::floor_char_boundary;
use tpulint_analyzer::{
    Diagnostic, DiagnosticTag, Edit, LineIndex, Severity, rule_by_code_or_name,
};

use crate::encoding::PositionEncoding;

/// LSP position of byte `offset` in `text`.
pub fn position(
    text: &str,
    index: &LineIndex,
    offset: usize,
    encoding: PositionEncoding,
) -> Position {
    let offset = floor_char_boundary(text, offset);
    let (line, byte_column) = index.line_col(offset);
    let line_start = offset - byte_column;
    let character = match encoding {
        PositionEncoding::Utf8 => byte_column,
        PositionEncoding::Utf16 => text[line_start..offset].encode_utf16().count(),
        PositionEncoding::Utf32 => text[line_start..offset].chars().count(),
    };
    Position::new(saturate(line), saturate(character))
}

/// LSP range of a byte range.
pub fn range(
    text: &str,
    index: &LineIndex,
    range: std::ops::Range<usize>,
    encoding: PositionEncoding,
) -> Range {
    Range::new(
        position(text, index, range.start, encoding),
        position(text, index, range.end, encoding),
    )
}

fn saturate(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// The `source` of every diagnostic the server publishes.
pub const DIAGNOSTIC_SOURCE: &str = "tpulint";

/// An engine diagnostic as an LSP diagnostic of the document `uri`.
pub fn diagnostic(
    uri: &Uri,
    text: &str,
    index: &LineIndex,
    diagnostic: &Diagnostic,
    encoding: PositionEncoding,
) -> lsp::Diagnostic {
    let code_description = rule_by_code_or_name(diagnostic.code)
        .and_then(|id| Uri::from_str(&id.meta().url()).ok())
        .map(|href| CodeDescription { href });
    let related_information = (!diagnostic.related.is_empty()).then(|| {
        diagnostic
            .related
            .iter()
            .map(|related| DiagnosticRelatedInformation {
                location: Location::new(
                    uri.clone(),
                    range(text, index, related.range.clone(), encoding),
                ),
                message: related.message.clone(),
            })
            .collect()
    });
    lsp::Diagnostic {
        range: range(text, index, diagnostic.range.clone(), encoding),
        severity: Some(severity(diagnostic.severity)),
        code: Some(NumberOrString::String(diagnostic.code.to_string())),
        code_description,
        source: Some(DIAGNOSTIC_SOURCE.to_string()),
        message: diagnostic.message.clone(),
        related_information,
        tags: diagnostic.tag.map(|tag| vec![diagnostic_tag(tag)]),
        data: None,
    }
}

pub fn severity(severity: Severity) -> lsp::DiagnosticSeverity {
    match severity {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Info => lsp::DiagnosticSeverity::INFORMATION,
    }
}

fn diagnostic_tag(tag: DiagnosticTag) -> lsp::DiagnosticTag {
    match tag {
        DiagnosticTag::Deprecated => lsp::DiagnosticTag::DEPRECATED,
        DiagnosticTag::Unnecessary => lsp::DiagnosticTag::UNNECESSARY,
    }
}

/// An engine edit (byte range) as an LSP text edit.
pub fn text_edit(
    text: &str,
    index: &LineIndex,
    edit: &Edit,
    encoding: PositionEncoding,
) -> TextEdit {
    TextEdit::new(
        range(text, index, edit.range.clone(), encoding),
        edit.content.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::from_proto;

    /// Every char boundary of `text` survives offset → position → offset in every encoding
    /// (except the middle of a `\r\n`, which no position can name).
    fn round_trips(text: &str) {
        let index = LineIndex::new(text);
        let inside_crlf =
            |offset: usize| text[..offset].ends_with('\r') && text[offset..].starts_with('\n');
        for encoding in [
            PositionEncoding::Utf8,
            PositionEncoding::Utf16,
            PositionEncoding::Utf32,
        ] {
            for offset in (0..=text.len()).filter(|o| text.is_char_boundary(*o) && !inside_crlf(*o))
            {
                let position = position(text, &index, offset, encoding);
                let back = from_proto::offset(text, &index, position, encoding);
                assert_eq!(back, offset, "{encoding:?} {position:?} in {text:?}");
            }
        }
    }

    #[test]
    fn emoji_cjk_and_combining_characters_round_trip() {
        round_trips("x = \"🔥🚀\"; y = t.item()\n");
        round_trips("名前 = torch.ones(3)  # 漢字\r\nz = 1\n");
        round_trips("e\u{301}te\u{301} = 1\rq = 2");
    }

    #[test]
    fn columns_count_the_negotiated_unit() {
        // "🔥" is 4 UTF-8 bytes, 2 UTF-16 units, 1 scalar; "名" is 3, 1, 1; "e\u{301}" is 3, 2, 2.
        let text = "a🔥名e\u{301}b";
        let index = LineIndex::new(text);
        let b = text.find('b').expect("b");
        let at = |encoding| position(text, &index, b, encoding).character;
        assert_eq!(at(PositionEncoding::Utf8), 11);
        assert_eq!(at(PositionEncoding::Utf16), 6);
        assert_eq!(at(PositionEncoding::Utf32), 5);
    }

    #[test]
    fn positions_inside_a_character_or_past_the_line_clamp() {
        let text = "🔥x\nab\n";
        let index = LineIndex::new(text);
        // Half of the surrogate pair snaps to the start of the emoji.
        assert_eq!(
            from_proto::offset(text, &index, Position::new(0, 1), PositionEncoding::Utf16),
            0
        );
        // Past the end of line 0 clamps to its end (before the newline).
        assert_eq!(
            from_proto::offset(text, &index, Position::new(0, 99), PositionEncoding::Utf16),
            5
        );
        // A line past the end maps to the end of the text.
        assert_eq!(
            from_proto::offset(text, &index, Position::new(9, 0), PositionEncoding::Utf16),
            text.len()
        );
    }
}
