//! Checking one snapshot of an open text document, for any host: the native server runs it on a
//! blocking thread, the browser's server inline.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;

use tpulint_analyzer::incremental::IncrementalState;
use tpulint_analyzer::{Diagnostic, Settings};
use tree_sitter::Tree;

use crate::analysis::{Analysis, check};
use crate::document::{DocumentSnapshot, PreviousCheck};

/// Why an analysis produced nothing.
#[derive(Debug, Clone)]
pub enum AnalysisError {
    /// The request that wanted it was cancelled.
    Cancelled,
    /// A rule panicked; the message is logged and the server keeps serving.
    Panicked(String),
    /// The document was closed.
    Closed,
}

/// How a document is checked: its settings (`None`: not checked) and where they came from.
#[derive(Debug, Clone, Default)]
pub struct CheckSettings {
    pub settings: Option<Settings>,
    /// The configuration file in force, when there is one.
    pub config_file: Option<PathBuf>,
    /// The settings generation (bumped by every settings change), so stale results are dropped.
    pub generation: u64,
    /// "Fix all" applies unsafe fixes too.
    pub unsafe_fixes: bool,
}

/// Parses (incrementally when possible) and checks a snapshot; with `reuse_previous`, only the
/// statements the edits touched are checked again (the result equals a full check of the same
/// tree, `tpulint_analyzer::incremental`). With `exact`, the tree is what a fresh parse gives
/// ([`DocumentSnapshot::parse`]); without, an incremental re-parse with a syntax error is
/// checked as it is, and the result says so ([`Analysis::exact`]). Never panics where panics
/// unwind: a panic in a rule is caught and returned as an error. `cancelled` is polled between
/// the steps.
pub fn analyze(
    snapshot: DocumentSnapshot,
    check_settings: CheckSettings,
    reuse_previous: bool,
    exact: bool,
    cancelled: &dyn Fn() -> bool,
) -> Result<Analysis, AnalysisError> {
    analyze_with(
        snapshot,
        check_settings,
        exact,
        cancelled,
        |text, tree, settings, previous| {
            let previous: &[PreviousCheck] = if reuse_previous { previous } else { &[] };
            let (diagnostics, state, _reuse) = check(text, tree, settings, previous);
            (diagnostics, Some(state))
        },
    )
}

/// [`analyze`] with a full check every time, keeping nothing for the next one: the browser's
/// server, whose module has no room for the incremental checker (the results are equal).
pub fn analyze_in_full(
    snapshot: DocumentSnapshot,
    check_settings: CheckSettings,
) -> Result<Analysis, AnalysisError> {
    analyze_with(
        snapshot,
        check_settings,
        true,
        &|| false,
        |text, tree, settings, _| (tpulint_analyzer::check_tree(text, tree, settings), None),
    )
}

type CheckOutcome = (Vec<Diagnostic>, Option<Arc<IncrementalState>>);

fn analyze_with(
    snapshot: DocumentSnapshot,
    check_settings: CheckSettings,
    exact: bool,
    cancelled: &dyn Fn() -> bool,
    run_check: impl Fn(&str, &Tree, &Settings, &[PreviousCheck]) -> CheckOutcome,
) -> Result<Analysis, AnalysisError> {
    let CheckSettings {
        settings,
        config_file,
        generation,
        unsafe_fixes,
    } = check_settings;
    if cancelled() {
        return Err(AnalysisError::Cancelled);
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let (tree, tree_is_exact) = if exact {
            (snapshot.parse_cancellable(cancelled)?, true)
        } else {
            snapshot.parse_quick()?
        };
        if cancelled() {
            return None;
        }
        let (diagnostics, incremental) = match &settings {
            Some(settings) => run_check(&snapshot.text, &tree, settings, &snapshot.previous),
            None => (Vec::new(), None),
        };
        Some((tree, tree_is_exact, diagnostics, incremental))
    }));
    match outcome {
        Ok(Some((tree, exact, diagnostics, incremental))) => Ok(Analysis {
            version: snapshot.version,
            generation,
            text: snapshot.text,
            line_index: snapshot.line_index,
            tree,
            exact,
            diagnostics,
            settings,
            unsafe_fixes,
            config_file,
            incremental,
        }),
        Ok(None) => Err(AnalysisError::Cancelled),
        Err(payload) => Err(AnalysisError::Panicked(panic_message(&*payload))),
    }
}

/// The text of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic payload".to_string()
    }
}
