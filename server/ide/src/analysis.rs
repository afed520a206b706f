//! The result of checking one version of an open document: what diagnostics, code actions and
//! hover are built from.

use std::path::PathBuf;
use std::sync::Arc;

use ls_types::{self as lsp, Uri};
use tpulint_analyzer::incremental::{IncrementalState, Reuse, check_tree_incremental};
use tpulint_analyzer::{Diagnostic, LineIndex, Settings};
use tree_sitter::Tree;

use crate::document::PreviousCheck;
use crate::encoding::PositionEncoding;
use crate::to_proto;

/// The result of checking one version of a document.
pub struct Analysis {
    pub version: i32,
    pub generation: u64,
    pub text: Arc<str>,
    pub line_index: Arc<LineIndex>,
    pub tree: Tree,
    /// `tree` is what a fresh parse of `text` gives, so `diagnostics` are what `tpulint check`
    /// reports. `false`: an incremental re-parse with a syntax error, whose recovery may differ
    /// from a fresh parse's ([`crate::document::DocumentSnapshot::parse_quick`]); such an
    /// analysis is only published at once, and replaced by an exact one of the same version.
    pub exact: bool,
    pub diagnostics: Vec<Diagnostic>,
    /// `None` when the document is not checked (so it has no fixes either).
    pub settings: Option<Settings>,
    pub unsafe_fixes: bool,
    /// The configuration file the settings came from.
    pub config_file: Option<PathBuf>,
    /// What the next check of this document reuses (`None` when it was not checked).
    pub incremental: Option<Arc<IncrementalState>>,
}

/// The diagnostics of a text document at `text`, reusing one of `previous` (earlier checks of
/// the same document) where that is sound: always equal to `tpulint_analyzer::check_tree`.
pub fn check(
    text: &str,
    tree: &Tree,
    settings: &Settings,
    previous: &[PreviousCheck],
) -> (Vec<Diagnostic>, Arc<IncrementalState>, Reuse) {
    let previous: Vec<(&str, &IncrementalState)> = previous
        .iter()
        .map(|previous| (&*previous.text, &*previous.state))
        .collect();
    let outcome = check_tree_incremental(text, tree, settings, &previous);
    (outcome.diagnostics, Arc::new(outcome.state), outcome.reuse)
}

impl Analysis {
    pub fn lsp_diagnostics(&self, uri: &Uri, encoding: PositionEncoding) -> Vec<lsp::Diagnostic> {
        self.diagnostics
            .iter()
            .map(|diagnostic| {
                to_proto::diagnostic(uri, &self.text, &self.line_index, diagnostic, encoding)
            })
            .collect()
    }

    /// Identifies the result for pull diagnostics: same id, same diagnostics. A quick analysis
    /// (not [`Analysis::exact`]) has an id of its own, so that a client answered from it and
    /// pulling again once the exact analysis of the same version is in gets that one in full
    /// rather than "unchanged".
    pub fn result_id(&self) -> String {
        if self.exact {
            format!("{}:{}", self.version, self.generation)
        } else {
            format!("{}:{}:quick", self.version, self.generation)
        }
    }
}
