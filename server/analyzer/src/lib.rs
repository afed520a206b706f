//! tpulint's analysis engine: Python source in, TPU diagnostics and fixes out.
//!
//! Pipeline: [`syntax::parse`] (tree-sitter, never fails) → [`semantic::SemanticModel`] (imports,
//! backend, tensor/device facts, hot paths) → [`checker::check_tree`] (one traversal dispatching to
//! the enabled rules whose tokens occur in the file, [`prefilter`]) → [`suppression`] (noqa) → [`syntax_errors`] (never suppressed) →
//! [`Diagnostic`]s with byte ranges and [`Fix`]es.
//!
//! Architecture invariant: this crate does no I/O, spawns nothing, and knows nothing of LSP,
//! async runtimes or JSON. It builds for `wasm32-unknown-unknown`.

pub mod checker;
pub(crate) mod decimal;
pub mod diagnostic;
pub mod fix;
pub(crate) mod hash;
pub mod incremental;
pub mod kind;
pub mod prefilter;
pub mod registry;
pub mod rules;
pub mod runtime_codes;
pub mod semantic;
pub mod settings;
pub(crate) mod sort;
pub mod source;
pub mod suppression;
pub mod syntax;
pub mod syntax_errors;
pub(crate) mod torch_api;
pub(crate) mod word_list;

pub use checker::{Context, Inspection, check_source, check_tree, check_tree_with, inspect};
pub use diagnostic::{Applicability, Diagnostic, DiagnosticTag, Edit, Fix, Related, Severity};
pub use fix::{FixOutcome, apply_fixes, fix_source};
pub use prefilter::Prefilter;
pub use registry::{Family, FixAvailability, RuleId, RuleMeta, rule_by_code_or_name, rules};
pub use runtime_codes::{RUNTIME_CODES, RuntimeCode, runtime_code};
pub use semantic::Backend;
pub use settings::{
    BackendSetting, Configuration, LibraryCodePolicy, RuleSelector, RuleSet, Settings,
    TestCodePolicy, TorchXlaVersion,
};
pub use source::{LineIndex, TextRange};
pub use syntax_errors::INVALID_SYNTAX;

/// Sources for the analyzer's own whole-corpus unit tests: `extra`, then every rule fixture and
/// realistic file of the tests crate, read at test time.
#[cfg(test)]
pub(crate) fn test_sources(extra: &[&str]) -> Vec<String> {
    let mut sources: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    sources.extend(
        python_files_under(&["tests/fixtures", "tests/realistic"])
            .into_iter()
            .map(|(_, text)| text),
    );
    assert!(sources.len() > 100, "only {} sources", sources.len());
    sources
}

/// Every Python file under the repository's `directories` (relative to its root), with its
/// path, read at test time; unreadable entries are skipped.
#[cfg(test)]
pub(crate) fn python_files_under(directories: &[&str]) -> Vec<(std::path::PathBuf, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut pending: Vec<_> = directories.iter().map(|d| root.join(d)).collect();
    let mut files = Vec::new();
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "py")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                files.push((path, text));
            }
        }
    }
    files
}

/// A small deterministic generator for the unit tests' random cases (no randomness crate in the
/// engine): xorshift64 from `seed`, returning values below the bound it is given.
#[cfg(test)]
pub(crate) fn test_random(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    }
}
