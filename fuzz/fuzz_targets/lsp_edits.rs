//! Random `didChange` sequences against a full re-check: after each batch of edits (ranges in
//! UTF-16 or UTF-8 positions, possibly out of bounds or inside a character), the document's text
//! is valid, the incrementally re-parsed tree gives exactly the diagnostics of a fresh parse, and
//! the editor's incremental check (reusing the document's earlier checks) equals a full check.
//! The server's quick analysis (the incremental tree as it is, even with a syntax error) is
//! checked too: its incremental check equals a full check of that tree, and its state is kept
//! for the next check as the server keeps it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ls_types::{Position, Range, TextDocumentContentChangeEvent};
use tpulint_analyzer::{Settings, check_tree, syntax};
use tpulint_ide::analysis;
use tpulint_ide::document::{PreviousCheck, TextDocument};
use tpulint_ide::encoding::PositionEncoding;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next();
    let Some(mode) = next() else { return };
    let encoding = if mode & 1 == 0 {
        PositionEncoding::Utf16
    } else {
        PositionEncoding::Utf8
    };
    let initial = "import torch\nx = torch.zeros(3).cuda()\nfor b in loader:\n    loss = model(b)\n    print(loss.item())\n";
    let mut document = TextDocument::new(initial.to_string(), 0);
    let settings = Settings::default();
    // Parse once so that later edits go through the incremental path.
    let snapshot = document.snapshot();
    if let Some(tree) = snapshot.parse() {
        document.store_tree(0, tree, true);
    }
    let mut version = 0;
    while let (Some(a), Some(b), Some(c), Some(d), Some(len)) =
        (next(), next(), next(), next(), next())
    {
        let mut text = String::new();
        for _ in 0..(len % 12) {
            let Some(byte) = next() else { break };
            text.push(match byte % 8 {
                0 => '\n',
                1 => ' ',
                2 => 'é',
                3 => '😀',
                4 => ':',
                5 => '(',
                _ => (b'a' + byte % 26) as char,
            });
        }
        let range = Range {
            start: Position::new(u32::from(a % 8), u32::from(b % 40)),
            end: Position::new(u32::from(c % 8), u32::from(d % 40)),
        };
        version += 1;
        let change = TextDocumentContentChangeEvent {
            range: Some(range),
            range_length: None,
            text,
        };
        document.apply_changes(vec![change], version, encoding);
        let snapshot = document.snapshot();
        if let Some((quick, exact)) = snapshot.parse_quick() {
            let (reused, state, _) =
                analysis::check(&snapshot.text, &quick, &settings, &snapshot.previous);
            assert_eq!(
                reused,
                check_tree(&snapshot.text, &quick, &settings),
                "the incremental check of the quick tree differs from a full one for {:?}",
                snapshot.text
            );
            document.store_check(PreviousCheck {
                text: snapshot.text.clone(),
                state,
            });
            document.store_tree(version, quick, exact);
        }
        let snapshot = document.snapshot();
        let incremental = snapshot.parse().expect("incremental parse");
        let fresh = syntax::parse(&snapshot.text, None).expect("fresh parse");
        let full = check_tree(&snapshot.text, &fresh, &settings);
        assert_eq!(
            check_tree(&snapshot.text, &incremental, &settings),
            full,
            "incremental and fresh trees disagree for {:?}",
            snapshot.text
        );
        // What the editor shows: the incremental check, reusing the document's earlier checks.
        let (reused, state, _) =
            analysis::check(&snapshot.text, &incremental, &settings, &snapshot.previous);
        assert_eq!(
            reused, full,
            "the incremental check differs from a full check for {:?}",
            snapshot.text
        );
        document.store_check(PreviousCheck {
            text: snapshot.text.clone(),
            state,
        });
        document.store_tree(version, incremental, true);
    }
});
