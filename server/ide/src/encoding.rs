//! Which unit `Position.character` counts, negotiated once in `initialize`.
//!
//! tpulint works in byte offsets; the conversions themselves live in `to_proto` and `from_proto`.

use ls_types::{ClientCapabilities, PositionEncodingKind};

/// The position encoding agreed with the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PositionEncoding {
    /// Bytes of UTF-8: no conversion at all, so preferred when offered.
    Utf8,
    /// UTF-16 code units: the protocol's default and the only one VS Code speaks.
    #[default]
    Utf16,
    /// Unicode scalar values.
    Utf32,
}

impl PositionEncoding {
    /// Picks UTF-8, then UTF-32, from the client's `general.positionEncodings`; UTF-16 otherwise
    /// (the protocol requires every server to support it).
    pub fn negotiate(capabilities: &ClientCapabilities) -> PositionEncoding {
        let offered = capabilities
            .general
            .as_ref()
            .and_then(|general| general.position_encodings.as_deref())
            .unwrap_or(&[]);
        if offered.contains(&PositionEncodingKind::UTF8) {
            PositionEncoding::Utf8
        } else if offered.contains(&PositionEncodingKind::UTF32) {
            PositionEncoding::Utf32
        } else {
            PositionEncoding::Utf16
        }
    }

    pub fn kind(self) -> PositionEncodingKind {
        match self {
            PositionEncoding::Utf8 => PositionEncodingKind::UTF8,
            PositionEncoding::Utf16 => PositionEncodingKind::UTF16,
            PositionEncoding::Utf32 => PositionEncodingKind::UTF32,
        }
    }

    /// How many units of this encoding `character` takes.
    pub(crate) fn units(self, character: char) -> usize {
        match self {
            PositionEncoding::Utf8 => character.len_utf8(),
            PositionEncoding::Utf16 => character.len_utf16(),
            PositionEncoding::Utf32 => 1,
        }
    }
}
