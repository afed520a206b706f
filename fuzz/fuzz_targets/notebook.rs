//! The notebook model: cells (split at NUL bytes) with IPython syntax are neutralised and
//! joined, the module is checked, and every diagnostic and fix maps back into one cell's own
//! text without panicking or leaving it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tpulint_analyzer::{RuleSelector, RuleSet, Settings, check_source};
use tpulint_lsp::notebook::{concatenate, neutralise_ipython};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let cells: Vec<&str> = text.split('\0').collect();
    for cell in &cells {
        let (neutral, ranges) = neutralise_ipython(cell);
        assert_eq!(neutral.len(), cell.len(), "neutralising changed a cell's length");
        for range in ranges {
            assert!(range.start <= range.end && range.end <= cell.len());
        }
    }
    // Every third cell is markdown (not checked).
    let concatenation = concatenate(
        cells
            .iter()
            .enumerate()
            .map(|(index, cell)| (index % 3 != 2).then_some(*cell)),
    );
    let settings = Settings {
        rules: RuleSet::from_selectors(Some(&[RuleSelector::All]), &[], &[]),
        ..Settings::default()
    };
    for diagnostic in check_source(&concatenation.text, &settings) {
        if let Some((cell, local)) = concatenation.map_diagnostic(&diagnostic) {
            let own = cells[cell];
            assert!(
                local.range.end <= own.len() && own.is_char_boundary(local.range.start),
                "diagnostic mapped outside cell {cell}"
            );
            if let Some(fix) = &local.fix {
                for edit in &fix.edits {
                    assert!(edit.range.start <= edit.range.end && edit.range.end <= own.len());
                }
            }
        }
    }
});
