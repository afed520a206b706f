//! The protocol's parameters read from [`JsonValue`]s by hand, for the browser's server: the
//! derived readers of `ls_types` (with serde_json's deserializer behind them) would cost the
//! WebAssembly module more than its whole budget leaves. Anything missing or ill-typed reads as
//! `None` (the message is ignored, or answered with "invalid params"), never a panic.

use std::str::FromStr;

use ls_types::{
    DidChangeNotebookDocumentParams, DidCloseNotebookDocumentParams, DidOpenNotebookDocumentParams,
    NotebookCell, NotebookCellArrayChange, NotebookCellKind, NotebookDocument,
    NotebookDocumentCellChange, NotebookDocumentCellChangeStructure, NotebookDocumentChangeEvent,
    NotebookDocumentChangeTextContent, NotebookDocumentIdentifier, Position, Range,
    TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem, Uri,
    VersionedNotebookDocumentIdentifier, VersionedTextDocumentIdentifier,
};

use super::json::{JsonRead, JsonValue};

pub fn uri(value: &JsonValue) -> Option<Uri> {
    Uri::from_str(value.as_str()?).ok()
}

fn number<T: TryFrom<i64>>(value: Option<&JsonValue>) -> Option<T> {
    T::try_from(value?.as_i64()?).ok()
}

fn items(value: Option<&JsonValue>) -> &[JsonValue] {
    value.and_then(JsonRead::as_array).unwrap_or_default()
}

/// `params.textDocument.uri`.
pub fn document_uri(params: &JsonValue) -> Option<Uri> {
    uri(params.at(&["textDocument", "uri"])?)
}

pub fn position(value: &JsonValue) -> Option<Position> {
    Some(Position {
        line: number(value.get("line"))?,
        character: number(value.get("character"))?,
    })
}

pub fn range(value: &JsonValue) -> Option<Range> {
    Some(Range {
        start: position(value.get("start")?)?,
        end: position(value.get("end")?)?,
    })
}

pub fn text_document_item(value: &JsonValue) -> Option<TextDocumentItem> {
    Some(TextDocumentItem {
        uri: uri(value.get("uri")?)?,
        language_id: value.get("languageId")?.as_str()?.to_string(),
        version: number(value.get("version"))?,
        text: value.get("text")?.as_str()?.to_string(),
    })
}

/// A `VersionedTextDocumentIdentifier`'s URI and version.
pub fn versioned_document(value: &JsonValue) -> Option<(Uri, i32)> {
    Some((uri(value.get("uri")?)?, number(value.get("version"))?))
}

/// `contentChanges`: whole-text and ranged changes; malformed ones are skipped.
pub fn content_changes(value: Option<&JsonValue>) -> Vec<TextDocumentContentChangeEvent> {
    items(value)
        .iter()
        .filter_map(|change| {
            Some(TextDocumentContentChangeEvent {
                range: match change.get("range") {
                    Some(value) => Some(range(value)?),
                    None => None,
                },
                range_length: number(change.get("rangeLength")),
                text: change.get("text")?.as_str()?.to_string(),
            })
        })
        .collect()
}

fn cell(value: &JsonValue) -> Option<NotebookCell> {
    let kind = match value.get("kind")?.as_i64()? {
        2 => NotebookCellKind::CODE,
        // Markup, and kinds this version does not know: not checked.
        _ => NotebookCellKind::MARKUP,
    };
    Some(NotebookCell {
        kind,
        document: uri(value.get("document")?)?,
        // Metadata does not change what is checked.
        metadata: None,
        execution_summary: None,
    })
}

fn cells(value: Option<&JsonValue>) -> Vec<NotebookCell> {
    items(value).iter().filter_map(cell).collect()
}

fn document_items(value: Option<&JsonValue>) -> Vec<TextDocumentItem> {
    items(value).iter().filter_map(text_document_item).collect()
}

fn document_identifiers(value: Option<&JsonValue>) -> Vec<TextDocumentIdentifier> {
    items(value)
        .iter()
        .filter_map(|item| {
            Some(TextDocumentIdentifier {
                uri: uri(item.get("uri")?)?,
            })
        })
        .collect()
}

pub fn did_open_notebook(params: &JsonValue) -> Option<DidOpenNotebookDocumentParams> {
    let notebook = params.get("notebookDocument")?;
    Some(DidOpenNotebookDocumentParams {
        notebook_document: NotebookDocument {
            uri: uri(notebook.get("uri")?)?,
            notebook_type: notebook.get("notebookType")?.as_str()?.to_string(),
            version: number(notebook.get("version"))?,
            metadata: None,
            cells: cells(notebook.get("cells")),
        },
        cell_text_documents: document_items(params.get("cellTextDocuments")),
    })
}

pub fn did_change_notebook(params: &JsonValue) -> Option<DidChangeNotebookDocumentParams> {
    let notebook = params.get("notebookDocument")?;
    let change = params.get("change")?;
    let cell_change = match change.get("cells") {
        None => None,
        Some(cells_change) => Some(NotebookDocumentCellChange {
            structure: match cells_change.get("structure") {
                None => None,
                Some(structure) => {
                    let array = structure.get("array")?;
                    Some(NotebookDocumentCellChangeStructure {
                        array: NotebookCellArrayChange {
                            start: number(array.get("start"))?,
                            delete_count: number(array.get("deleteCount"))?,
                            cells: array.get("cells").map(|value| cells(Some(value))),
                        },
                        did_open: structure
                            .get("didOpen")
                            .map(|value| document_items(Some(value))),
                        did_close: structure
                            .get("didClose")
                            .map(|value| document_identifiers(Some(value))),
                    })
                }
            },
            data: cells_change.get("data").map(|value| cells(Some(value))),
            text_content: cells_change.get("textContent").map(|contents| {
                items(Some(contents))
                    .iter()
                    .filter_map(|content| {
                        let (uri, version) = versioned_document(content.get("document")?)?;
                        Some(NotebookDocumentChangeTextContent {
                            document: VersionedTextDocumentIdentifier { uri, version },
                            changes: content_changes(content.get("changes")),
                        })
                    })
                    .collect()
            }),
        }),
    };
    Some(DidChangeNotebookDocumentParams {
        notebook_document: VersionedNotebookDocumentIdentifier {
            version: number(notebook.get("version"))?,
            uri: uri(notebook.get("uri")?)?,
        },
        change: NotebookDocumentChangeEvent {
            metadata: None,
            cells: cell_change,
        },
    })
}

pub fn did_close_notebook(params: &JsonValue) -> Option<DidCloseNotebookDocumentParams> {
    Some(DidCloseNotebookDocumentParams {
        notebook_document: NotebookDocumentIdentifier {
            uri: uri(params.at(&["notebookDocument", "uri"])?)?,
        },
        cell_text_documents: document_identifiers(params.get("cellTextDocuments")),
    })
}
