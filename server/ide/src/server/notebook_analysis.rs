//! Checking a notebook snapshot as one module, and what is built from the result: per-cell
//! views for diagnostics, code actions and hover, and "Fix all" that keeps to cell boundaries.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use ls_types::{self as lsp, CodeActionKind, CodeActionOrCommand, TextEdit, Uri, WorkspaceEdit};
use tpulint_analyzer::{
    Applicability, Diagnostic, LineIndex, Settings, TextRange, check_tree, syntax,
};

use super::analyze::{AnalysisError, CheckSettings, panic_message};
use super::notebooks::notebook_fix_all_kind;
use crate::actions;
use crate::analysis::Analysis;
use crate::edits::minimal_edit;
use crate::encoding::PositionEncoding;
use crate::notebook::{concatenate, neutralise_ipython};
use crate::to_proto;

/// One cell as the analysis sees it.
#[derive(Clone)]
pub struct CellSnapshot {
    pub uri: Uri,
    /// A Python code cell (markdown and other languages are not checked).
    pub is_python_code: bool,
    pub text: Arc<str>,
    pub line_index: Arc<LineIndex>,
    pub version: i32,
}

/// What an analysis of a notebook needs, detached from the lock.
#[derive(Clone)]
pub struct NotebookSnapshot {
    pub uri: Uri,
    /// The server's revision of the notebook (see `NotebookDocument::revision`).
    pub version: i32,
    pub cells: Vec<CellSnapshot>,
}

impl NotebookSnapshot {
    fn python_sources(&self) -> impl Iterator<Item = Option<&str>> {
        self.cells
            .iter()
            .map(|cell| cell.is_python_code.then_some(&*cell.text))
    }
}

/// The result for one cell.
pub struct CellResult {
    pub uri: Uri,
    pub cell_version: i32,
    /// The cell's diagnostics in its own coordinates, as an [`Analysis`] so that code actions
    /// and hover work on it unchanged; `None` for cells that are not checked.
    pub view: Option<Arc<Analysis>>,
    /// For each of the view's diagnostics (same order), its related locations in other cells.
    pub related_elsewhere: Vec<RelatedElsewhere>,
}

/// The related locations of one diagnostic that lie in other cells: (cell index, cell-local
/// range, message).
pub type RelatedElsewhere = Vec<(usize, TextRange, String)>;

/// The result of checking one version of a notebook.
pub struct NotebookAnalysis {
    /// The notebook revision the analysis saw.
    pub version: i32,
    pub generation: u64,
    pub cells: Vec<CellResult>,
    pub settings: Option<Settings>,
    pub unsafe_fixes: bool,
    pub config_file: Option<std::path::PathBuf>,
    /// The cell texts the analysis saw (Python code cells only), for "Fix all".
    pub sources: Vec<Option<Arc<str>>>,
}

impl NotebookAnalysis {
    pub fn cell(&self, uri: &Uri) -> Option<&CellResult> {
        self.cells.iter().find(|cell| &cell.uri == uri)
    }

    /// Changes when anything about the notebook's diagnostics may have changed.
    pub fn result_id(&self) -> String {
        format!("notebook:{}:{}", self.version, self.generation)
    }

    /// The LSP diagnostics of cell `uri`, with related locations in other cells pointing at
    /// those cells' URIs.
    pub fn cell_diagnostics(&self, uri: &Uri, encoding: PositionEncoding) -> Vec<lsp::Diagnostic> {
        let Some(cell) = self.cell(uri) else {
            return Vec::new();
        };
        let Some(view) = &cell.view else {
            return Vec::new();
        };
        let mut diagnostics = view.lsp_diagnostics(uri, encoding);
        for (diagnostic, elsewhere) in diagnostics.iter_mut().zip(&cell.related_elsewhere) {
            for (other, range, message) in elsewhere {
                let target = &self.cells[*other];
                let Some(target_view) = &target.view else {
                    continue;
                };
                let range = to_proto::range(
                    &target_view.text,
                    &target_view.line_index,
                    range.clone(),
                    encoding,
                );
                diagnostic
                    .related_information
                    .get_or_insert_with(Vec::new)
                    .push(lsp::DiagnosticRelatedInformation {
                        location: lsp::Location::new(target.uri.clone(), range),
                        message: message.clone(),
                    });
            }
        }
        diagnostics
    }

    pub fn diagnostic_count(&self) -> usize {
        self.cells
            .iter()
            .filter_map(|cell| cell.view.as_ref())
            .map(|view| view.diagnostics.len())
            .sum()
    }
}

/// Checks a notebook snapshot as one module. Never panics: a panic in a rule is caught and
/// returned as an error.
pub fn analyze(
    snapshot: NotebookSnapshot,
    check_settings: CheckSettings,
    cancelled: &dyn Fn() -> bool,
) -> Result<NotebookAnalysis, AnalysisError> {
    if cancelled() {
        return Err(AnalysisError::Cancelled);
    }
    let CheckSettings {
        settings,
        config_file,
        generation,
        unsafe_fixes,
    } = check_settings;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let concatenation = concatenate(snapshot.python_sources());
        let diagnostics = match &settings {
            Some(settings) => {
                let tree = syntax::parse(&concatenation.text, None)?;
                if cancelled() {
                    return None;
                }
                check_tree(&concatenation.text, &tree, settings)
            }
            None => Vec::new(),
        };
        let mut per_span: Vec<Vec<Diagnostic>> = vec![Vec::new(); concatenation.spans.len()];
        let mut elsewhere: Vec<Vec<RelatedElsewhere>> = vec![Vec::new(); snapshot.cells.len()];
        for diagnostic in &diagnostics {
            if let Some((span, mapped)) = concatenation.map_diagnostic(diagnostic) {
                per_span[span].push(mapped);
                elsewhere[concatenation.spans[span].cell]
                    .push(concatenation.related_elsewhere(diagnostic, span));
            }
        }
        let mut views: Vec<Option<Arc<Analysis>>> = vec![None; snapshot.cells.len()];
        for (span, cell_diagnostics) in concatenation.spans.iter().zip(per_span) {
            let cell = &snapshot.cells[span.cell];
            // The cell's own tree (of its neutralised text) lets the noqa action find comments.
            let (neutral, _) = neutralise_ipython(&cell.text);
            let tree = syntax::parse(&neutral, None)?;
            views[span.cell] = Some(Arc::new(Analysis {
                version: snapshot.version,
                generation,
                text: cell.text.clone(),
                line_index: cell.line_index.clone(),
                tree,
                exact: true,
                diagnostics: cell_diagnostics,
                // "Fix all" of a cell needs the whole notebook; it is built here, not by
                // `actions::fix_all_edit` on the cell alone.
                settings: None,
                unsafe_fixes,
                config_file: config_file.clone(),
                incremental: None,
            }));
        }
        Some((views, elsewhere))
    }));
    let (views, elsewhere) = match outcome {
        Ok(Some(result)) => result,
        Ok(None) => return Err(AnalysisError::Cancelled),
        Err(payload) => return Err(AnalysisError::Panicked(panic_message(&*payload))),
    };
    let cells = snapshot
        .cells
        .iter()
        .zip(views.into_iter().zip(elsewhere))
        .map(|(cell, (view, related_elsewhere))| CellResult {
            uri: cell.uri.clone(),
            cell_version: cell.version,
            view,
            related_elsewhere,
        })
        .collect();
    Ok(NotebookAnalysis {
        version: snapshot.version,
        generation,
        cells,
        settings,
        unsafe_fixes,
        config_file,
        sources: snapshot
            .cells
            .iter()
            .map(|cell| cell.is_python_code.then(|| cell.text.clone()))
            .collect(),
    })
}

/// "Fix all" over a notebook: the fix loop of `tpulint_ide` on the cells (with `only_cell`, only
/// that cell's fixes). Returns the new text of each changed cell.
pub fn fix_all_cells(
    sources: &[Option<Arc<str>>],
    settings: &Settings,
    unsafe_fixes: bool,
    only_cell: Option<usize>,
) -> Vec<(usize, String)> {
    let threshold = if unsafe_fixes {
        Applicability::Unsafe
    } else {
        Applicability::Safe
    };
    let cells = sources
        .iter()
        .map(|source| source.as_deref().map(str::to_string))
        .collect();
    crate::fix_cells(cells, settings, threshold, only_cell)
        .into_iter()
        .zip(sources)
        .enumerate()
        .filter_map(|(cell, (new, old))| {
            let (new, old) = (new?, old.as_deref()?);
            (new != old).then_some((cell, new))
        })
        .collect()
}

/// "Fix all" as a workspace edit over the cells' URIs; `None` when nothing changes.
pub fn fix_all_edit(
    analysis: &NotebookAnalysis,
    only_cell: Option<usize>,
    encoding: PositionEncoding,
) -> Option<WorkspaceEdit> {
    let settings = analysis.settings.as_ref()?;
    let fixed = fix_all_cells(
        &analysis.sources,
        settings,
        analysis.unsafe_fixes,
        only_cell,
    );
    let mut changes: HashMap<Uri, Vec<TextEdit>> = HashMap::new();
    for (cell, new_text) in fixed {
        let Some(old) = analysis.sources[cell].as_deref() else {
            continue;
        };
        let Some(edit) = minimal_edit(old, &new_text) else {
            continue;
        };
        let index = LineIndex::new(old);
        changes.insert(
            analysis.cells[cell].uri.clone(),
            vec![to_proto::text_edit(old, &index, &edit, encoding)],
        );
    }
    (!changes.is_empty()).then(|| WorkspaceEdit {
        changes: Some(changes),
        ..WorkspaceEdit::default()
    })
}

/// Whether some diagnostic (of `cell`, or of any cell) has a fix "Fix all" would apply.
fn has_fix_all_candidates(analysis: &NotebookAnalysis, cell: Option<usize>) -> bool {
    analysis
        .cells
        .iter()
        .enumerate()
        .filter(|(index, _)| cell.is_none_or(|cell| cell == *index))
        .filter_map(|(_, cell)| cell.view.as_ref())
        .flat_map(|view| &view.diagnostics)
        .filter_map(|diagnostic| diagnostic.fix.as_ref())
        .any(|fix| match fix.applicability {
            Applicability::Safe => true,
            Applicability::Unsafe => analysis.unsafe_fixes,
            Applicability::DisplayOnly => false,
        })
}

/// Code actions on a cell: the quick fixes and noqa actions of its diagnostics, "Fix all" for
/// the cell (`source.fixAll.tpulint`) and, when asked for by kind, for the whole notebook.
/// Edits are computed eagerly (not resolved lazily): the cell's fix-all needs the notebook.
pub fn code_actions(
    analysis: &NotebookAnalysis,
    cell_uri: &Uri,
    range: TextRange,
    only: Option<&[CodeActionKind]>,
    encoding: PositionEncoding,
) -> Vec<CodeActionOrCommand> {
    let Some(cell_index) = analysis.cells.iter().position(|cell| &cell.uri == cell_uri) else {
        return Vec::new();
    };
    let mut result = Vec::new();
    if let Some(view) = &analysis.cells[cell_index].view
        && actions::requested(only, &CodeActionKind::QUICKFIX)
    {
        result.extend(actions::code_actions(
            cell_uri,
            view,
            range,
            Some(&[CodeActionKind::QUICKFIX]),
            encoding,
            false,
        ));
    }
    let cell_fix_all = actions::source_fix_all_tpulint();
    if actions::requested(only, &cell_fix_all) && has_fix_all_candidates(analysis, Some(cell_index))
    {
        result.push(CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: actions::FIX_ALL_TITLE.to_string(),
            kind: Some(cell_fix_all),
            edit: Some(fix_all_edit(analysis, Some(cell_index), encoding).unwrap_or_default()),
            ..lsp::CodeAction::default()
        }));
    }
    // Only on request: it is what `notebook.codeActionsOnSave` asks for, and offering it in
    // every cell's light bulb would repeat the cell's own "Fix all".
    let notebook_fix_all = notebook_fix_all_kind();
    if only.is_some()
        && actions::requested(only, &notebook_fix_all)
        && has_fix_all_candidates(analysis, None)
    {
        result.push(CodeActionOrCommand::CodeAction(lsp::CodeAction {
            title: "Fix all tpulint issues in the notebook".to_string(),
            kind: Some(notebook_fix_all),
            edit: Some(fix_all_edit(analysis, None, encoding).unwrap_or_default()),
            ..lsp::CodeAction::default()
        }));
    }
    result
}
