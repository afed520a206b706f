//! The notebook model: arbitrary bytes as nbformat JSON (parsed, checked and fixed as a
//! notebook), or as cells split at NUL bytes with IPython syntax (neutralised, joined, checked,
//! every diagnostic and fix mapped back into one cell's own text) — nothing panics, nothing
//! leaves its cell.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tpulint_analyzer::{Applicability, RuleSelector, RuleSet, Settings, check_source};
use tpulint_ide::notebook::{Notebook, concatenate, neutralise_ipython};
use tpulint_ide::{SourceKind, fix};

fuzz_target!(|data: &[u8]| {
    let settings = Settings {
        rules: RuleSet::from_selectors(Some(&[RuleSelector::All]), &[], &[]),
        ..Settings::default()
    };
    let text = String::from_utf8_lossy(data);
    if text.trim_start().starts_with('{') {
        if let Ok(notebook) = Notebook::from_json(&text) {
            let source = SourceKind::Notebook(notebook);
            let module = source.module();
            for diagnostic in module.check(&settings) {
                assert!(diagnostic.range.end <= module.checked_text().len());
            }
            let fixed = fix(&source, &settings, Applicability::Unsafe);
            // What was fixed must still be a notebook.
            if let SourceKind::Notebook(notebook) = &fixed.output {
                assert!(
                    Notebook::from_json(notebook.json()).is_ok(),
                    "fixing broke the notebook JSON"
                );
            }
        }
        return;
    }
    let cells: Vec<&str> = text.split('\0').collect();
    for cell in &cells {
        let (neutral, ranges) = neutralise_ipython(cell);
        assert_eq!(
            neutral.len(),
            cell.len(),
            "neutralising changed a cell's length"
        );
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
    for diagnostic in check_source(&concatenation.text, &settings) {
        if let Some((span, local)) = concatenation.map_diagnostic(&diagnostic) {
            let cell = concatenation.spans[span].cell;
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
