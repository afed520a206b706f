//! Check and fix arbitrary bytes (and, from the seed corpus, mutated real sources) with every
//! rule enabled under each backend: nothing panics, every range is a valid slice of the input,
//! and fixing never adds syntax errors.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tpulint_analyzer::fix::count_errors;
use tpulint_analyzer::{
    Applicability, BackendSetting, RuleSelector, RuleSet, Settings, check_source, fix_source,
    syntax,
};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let source = String::from_utf8_lossy(rest);
    let backend = match selector % 3 {
        0 => BackendSetting::Auto,
        1 => BackendSetting::TorchXla,
        _ => BackendSetting::TorchTpu,
    };
    let settings = Settings {
        rules: RuleSet::from_selectors(Some(&[RuleSelector::All]), &[], &[]),
        backend,
        ..Settings::default()
    };
    let diagnostics = check_source(&source, &settings);
    for diagnostic in &diagnostics {
        assert_slice(&source, &diagnostic.range);
        for related in &diagnostic.related {
            assert_slice(&source, &related.range);
        }
        if let Some(fix) = &diagnostic.fix {
            for edit in &fix.edits {
                assert_slice(&source, &edit.range);
            }
        }
    }
    // Fixing re-checks at least once; without a fix to apply it can only return the input.
    if diagnostics
        .iter()
        .all(|diagnostic| diagnostic.fix.is_none())
    {
        return;
    }
    let threshold = if selector & 0x80 == 0 {
        Applicability::Safe
    } else {
        Applicability::Unsafe
    };
    let outcome = fix_source(&source, &settings, threshold);
    if outcome.output != source.as_ref() {
        let before = syntax::parse(&source, None).map(|tree| count_errors(&tree));
        let after = syntax::parse(&outcome.output, None).map(|tree| count_errors(&tree));
        if let (Some(before), Some(after)) = (before, after) {
            assert!(
                after <= before,
                "fixing added syntax errors: {before} -> {after}"
            );
        }
    }
});

fn assert_slice(source: &str, range: &std::ops::Range<usize>) {
    assert!(
        range.start <= range.end && range.end <= source.len(),
        "range {range:?} outside a source of {} bytes",
        source.len()
    );
    assert!(
        source.is_char_boundary(range.start) && source.is_char_boundary(range.end),
        "range {range:?} splits a character"
    );
}
