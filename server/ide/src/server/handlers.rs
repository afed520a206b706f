//! Each request's answer, built from the analysis of the document's current version. Both hosts
//! call these after they obtained the analysis their way (the native server off the message
//! loop, shared between requests; the browser's inline), so their answers cannot drift apart.

use ls_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, Diagnostic, DocumentDiagnosticReport,
    DocumentDiagnosticReportResult, FullDocumentDiagnosticReport, Hover, Position, Range,
    RelatedFullDocumentDiagnosticReport, RelatedUnchangedDocumentDiagnosticReport,
    UnchangedDocumentDiagnosticReport, Uri, WorkspaceDocumentDiagnosticReport, WorkspaceEdit,
    WorkspaceFullDocumentDiagnosticReport, WorkspaceUnchangedDocumentDiagnosticReport,
};
use std::str::FromStr;

use super::json::JsonRead;
use super::notebook_analysis::{self, NotebookAnalysis};
use crate::actions::{self, ResolveData};
use crate::analysis::Analysis;
use crate::encoding::PositionEncoding;
use crate::from_proto;

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    pub code: i64,
    pub message: String,
}

impl RequestError {
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// LSP's `ContentModified`: the document changed since the request's data was computed.
    pub const CONTENT_MODIFIED: i64 = -32801;

    pub fn invalid_params(message: impl Into<String>) -> RequestError {
        RequestError {
            code: Self::INVALID_PARAMS,
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> RequestError {
        RequestError {
            code: Self::INTERNAL_ERROR,
            message: message.into(),
        }
    }
}

/// The pull result id of a text document's analysis; `runtime_generation` changes when the
/// native server (re)loads a runtime trace (0 where there are none, as in the browser).
pub fn text_result_id(analysis: &Analysis, runtime_generation: u64) -> String {
    format!("{}:{runtime_generation}", analysis.result_id())
}

/// `textDocument/diagnostic`: unchanged when the client holds `result_id` already.
pub fn document_report(
    previous_result_id: Option<&str>,
    result_id: String,
    items: impl FnOnce() -> Vec<Diagnostic>,
) -> DocumentDiagnosticReportResult {
    let report = if previous_result_id == Some(result_id.as_str()) {
        DocumentDiagnosticReport::Unchanged(RelatedUnchangedDocumentDiagnosticReport {
            related_documents: None,
            unchanged_document_diagnostic_report: UnchangedDocumentDiagnosticReport { result_id },
        })
    } else {
        DocumentDiagnosticReport::Full(RelatedFullDocumentDiagnosticReport {
            related_documents: None,
            full_document_diagnostic_report: FullDocumentDiagnosticReport {
                result_id: Some(result_id),
                items: items(),
            },
        })
    };
    DocumentDiagnosticReportResult::Report(report)
}

/// `textDocument/diagnostic` for a document that is not open: nothing.
pub fn empty_report() -> DocumentDiagnosticReportResult {
    DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(
        RelatedFullDocumentDiagnosticReport {
            related_documents: None,
            full_document_diagnostic_report: FullDocumentDiagnosticReport::default(),
        },
    ))
}

/// One document's entry of `workspace/diagnostic`.
pub fn workspace_item(
    uri: &Uri,
    version: i32,
    previous_result_id: Option<&str>,
    result_id: String,
    items: impl FnOnce() -> Vec<Diagnostic>,
) -> WorkspaceDocumentDiagnosticReport {
    let version = Some(i64::from(version));
    if previous_result_id == Some(result_id.as_str()) {
        WorkspaceDocumentDiagnosticReport::Unchanged(WorkspaceUnchangedDocumentDiagnosticReport {
            uri: uri.clone(),
            version,
            unchanged_document_diagnostic_report: UnchangedDocumentDiagnosticReport { result_id },
        })
    } else {
        WorkspaceDocumentDiagnosticReport::Full(WorkspaceFullDocumentDiagnosticReport {
            uri: uri.clone(),
            version,
            full_document_diagnostic_report: FullDocumentDiagnosticReport {
                result_id: Some(result_id),
                items: items(),
            },
        })
    }
}

/// `workspace/diagnostic`'s entries for one notebook: one per cell, each with the cell's own URI
/// and version, the diagnostics computed only for cells whose client holds an older result. The
/// result id is the notebook's (an edit in one cell can change another cell's findings); each
/// cell answered is told to `served` with it (see `NotebookDocument::note_served`).
pub fn notebook_workspace_items<'p>(
    analysis: &NotebookAnalysis,
    previous_result_id: impl Fn(&Uri) -> Option<&'p str>,
    encoding: PositionEncoding,
    mut served: impl FnMut(&Uri, &str),
) -> Vec<WorkspaceDocumentDiagnosticReport> {
    let result_id = analysis.result_id();
    analysis
        .cells
        .iter()
        .map(|cell| {
            served(&cell.uri, &result_id);
            workspace_item(
                &cell.uri,
                cell.cell_version,
                previous_result_id(&cell.uri),
                result_id.clone(),
                || analysis.cell_diagnostics(&cell.uri, encoding),
            )
        })
        .collect()
}

/// `textDocument/codeAction` on a text document (without the native server's "Set the
/// project's backend", which edits files).
pub fn text_code_actions(
    uri: &Uri,
    analysis: &Analysis,
    range: Range,
    only: Option<&[CodeActionKind]>,
    encoding: PositionEncoding,
    resolve_lazily: bool,
) -> Vec<CodeActionOrCommand> {
    let range = from_proto::text_range(&analysis.text, &analysis.line_index, range, encoding);
    actions::code_actions(uri, analysis, range, only, encoding, resolve_lazily)
}

/// `textDocument/codeAction` on a notebook cell.
pub fn cell_code_actions(
    analysis: &NotebookAnalysis,
    cell: &Uri,
    range: Range,
    only: Option<&[CodeActionKind]>,
    encoding: PositionEncoding,
) -> Vec<CodeActionOrCommand> {
    let Some(view) = analysis.cell(cell).and_then(|cell| cell.view.as_ref()) else {
        return Vec::new();
    };
    let range = from_proto::text_range(&view.text, &view.line_index, range, encoding);
    notebook_analysis::code_actions(analysis, cell, range, only, encoding)
}

/// What `codeAction/resolve` needs to know of an action: `None` for actions that carry no
/// resolve data (answered unchanged).
pub fn resolve_data(action: &CodeAction) -> Option<ResolveData> {
    action.data.as_ref().and_then(ResolveData::from_json)
}

/// `codeAction/resolve` of "Fix all": its edit, if the document is still at the version the
/// action was offered for.
pub fn resolve_fix_all(
    data: &ResolveData,
    analysis: &Analysis,
    encoding: PositionEncoding,
) -> Result<WorkspaceEdit, RequestError> {
    if analysis.version != data.version {
        return Err(RequestError {
            code: RequestError::CONTENT_MODIFIED,
            message: "the document changed since the action was offered".to_string(),
        });
    }
    Ok(actions::fix_all_edit(&data.uri, analysis, encoding).unwrap_or_default())
}

/// `resolve_data` of an action given as JSON.
pub fn resolve_data_of(action: &impl JsonRead) -> Option<ResolveData> {
    action.get("data").and_then(ResolveData::from_json)
}

/// `textDocument/hover` on a text document (rule documentation by `docs`).
pub fn text_hover(
    analysis: &Analysis,
    position: Position,
    encoding: PositionEncoding,
    docs: &dyn Fn(&str) -> String,
) -> (usize, Option<Hover>) {
    let offset = from_proto::offset(&analysis.text, &analysis.line_index, position, encoding);
    (offset, actions::hover(analysis, offset, encoding, docs))
}

/// `textDocument/hover` on a notebook cell.
pub fn cell_hover(
    analysis: &NotebookAnalysis,
    cell: &Uri,
    position: Position,
    encoding: PositionEncoding,
    docs: &dyn Fn(&str) -> String,
) -> Option<Hover> {
    let view = analysis.cell(cell)?.view.as_ref()?;
    text_hover(view, position, encoding, docs).1
}

/// The document `tpulint.applyAutofix` fixes: its one argument is a URI or `{"uri": …}`.
pub fn autofix_target(arguments: &[impl JsonRead]) -> Result<Uri, RequestError> {
    arguments
        .first()
        .and_then(|argument| argument.get("uri").or(Some(argument)))
        .and_then(JsonRead::as_str)
        .and_then(|text| Uri::from_str(text).ok())
        .ok_or_else(|| {
            RequestError::invalid_params("expected one argument: a document URI or {\"uri\": …}")
        })
}

/// `tpulint.applyAutofix` on a document that is not open.
pub fn not_open(uri: &Uri) -> RequestError {
    RequestError::invalid_params(format!("{} is not open", uri.as_str()))
}

/// `tpulint.applyAutofix`'s edit of a text document, or of the whole notebook of a cell.
pub fn text_fix_all(
    uri: &Uri,
    analysis: &Analysis,
    encoding: PositionEncoding,
) -> Option<WorkspaceEdit> {
    actions::fix_all_edit(uri, analysis, encoding)
}

/// `workspace/executeCommand` with a command not in `supported`.
pub fn unknown_command(command: &str, supported: &[&str]) -> RequestError {
    RequestError::invalid_params(format!(
        "unknown command `{command}`; supported: {}",
        supported.join(", ")
    ))
}

/// The message logged when the client did not apply the fixes.
pub fn edit_not_applied(reason: Option<&str>) -> String {
    format!(
        "the editor did not apply the fixes: {}",
        reason.unwrap_or_default()
    )
}
