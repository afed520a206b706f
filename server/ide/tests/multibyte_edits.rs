//! Editor documents whose edits replace a character by another that shares bytes with it (`é` →
//! `ü` share their first byte, `é` → `©` their last): the incremental check must cut the changed
//! region between characters, never inside one, and equal a full check. Found by the parity test
//! (extension/test/web/parity.test.ts), where `tpulint server` crashed on such an edit.

use ls_types::{Position, Range, TextDocumentContentChangeEvent};
use tpulint_analyzer::{Settings, check_tree, syntax};
use tpulint_ide::document::{PreviousCheck, TextDocument};
use tpulint_ide::encoding::PositionEncoding;
use tpulint_ide::server::analyze::{CheckSettings, analyze};

const TEXT: &str = "import torch\nimport torch_xla\nname = \"é😀\"; device = torch.device(\"cuda\")\nx = torch.ones(2).to(device)\nfor step in range(10):\n    loss = x.sum()\n    print(loss.item())\n";

fn change(line: u32, start: u32, end: u32, text: &str) -> TextDocumentContentChangeEvent {
    TextDocumentContentChangeEvent {
        range: Some(Range {
            start: Position {
                line,
                character: start,
            },
            end: Position {
                line,
                character: end,
            },
        }),
        range_length: None,
        text: text.to_string(),
    }
}

/// Checks the document incrementally (keeping the check for the next one) and compares the
/// diagnostics with a full check of a fresh parse.
fn check_equals_full(document: &mut TextDocument) {
    let check_settings = CheckSettings {
        settings: Some(Settings::default()),
        config_file: None,
        generation: 1,
        unsafe_fixes: true,
    };
    let analysis = analyze(document.snapshot(), check_settings, true, true, &|| false)
        .unwrap_or_else(|error| panic!("{error:?}"));
    let tree = syntax::parse(&analysis.text, None).expect("parse");
    let full = check_tree(&analysis.text, &tree, &Settings::default());
    assert_eq!(analysis.diagnostics, full, "incremental differs from full");
    if let Some(state) = &analysis.incremental {
        document.store_check(PreviousCheck {
            text: analysis.text.clone(),
            state: state.clone(),
        });
    }
    document.store_tree(analysis.version, analysis.tree.clone(), analysis.exact);
}

#[test]
fn replacing_a_character_by_one_sharing_bytes_with_it() {
    for replacement in ["ü", "©", "ě", "€"] {
        let mut document = TextDocument::new(TEXT.to_string(), 1);
        check_equals_full(&mut document);
        document.apply_changes(
            vec![change(7, 0, 0, "y = torch.zeros(3).cuda()\n")],
            2,
            PositionEncoding::Utf16,
        );
        check_equals_full(&mut document);
        // `é` is character 8 of line 2.
        document.apply_changes(
            vec![change(2, 8, 9, replacement)],
            3,
            PositionEncoding::Utf16,
        );
        check_equals_full(&mut document);
        // And back, then a character inserted before another with the same lead byte.
        document.apply_changes(vec![change(2, 8, 9, "é")], 4, PositionEncoding::Utf16);
        check_equals_full(&mut document);
        document.apply_changes(vec![change(2, 8, 8, "è")], 5, PositionEncoding::Utf16);
        check_equals_full(&mut document);
    }
}
