//! The open documents: one index for text documents and notebooks.
//!
//! A document is a text document or a notebook ([`Document`]); each is kept under its own URI
//! (for a notebook, the notebook's), with the same push-worker state, and its analyses are keyed
//! by one revision (a text document's version, a notebook's change counter) and the settings
//! generation. A notebook's cells are not documents of their own: the index maps each cell URI to
//! its notebook, so that a request on a cell is answered from the notebook's analysis
//! ([`DocumentKey::NotebookCell`]).
//!
//! Sans-IO and synchronous: the session keeps the index under one lock (see [`crate::session`]
//! for the ordering rule); the scheduler, the push worker, the publish queue and the close path
//! handle every document alike through it.

use std::collections::HashMap;
use std::sync::Arc;

use tower_lsp_server::ls_types::{
    DidChangeNotebookDocumentParams, DidOpenNotebookDocumentParams, TextDocumentContentChangeEvent,
    Uri,
};
use tpulint_ide::document::{DocumentSnapshot, PreviousCheck, TextDocument};
use tpulint_ide::encoding::PositionEncoding;
use tpulint_ide::server::notebook_analysis::{NotebookAnalysis, NotebookSnapshot};
use tpulint_ide::server::notebooks::NotebookDocument;

use crate::session::Analysis;

/// What a URI names in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentKey {
    /// An open text document.
    Text(Uri),
    /// An open notebook.
    Notebook(Uri),
    /// A cell of an open notebook: requests on it are answered from the notebook's analysis.
    NotebookCell { cell: Uri, notebook: Uri },
}

impl DocumentKey {
    /// The URI the document is kept (and scheduled, and analysed) under: the text document's, or
    /// the notebook's for the notebook and its cells.
    pub fn document_uri(&self) -> &Uri {
        match self {
            DocumentKey::Text(uri) | DocumentKey::Notebook(uri) => uri,
            DocumentKey::NotebookCell { notebook, .. } => notebook,
        }
    }
}

/// An open text document.
pub struct TextEntry {
    pub document: TextDocument,
    pub language_id: String,
    /// The latest analysis stored (possibly of an older version).
    pub analysis: Option<Arc<Analysis>>,
}

/// An open document: a text document or a notebook.
pub enum Document {
    Text(TextEntry),
    Notebook(NotebookDocument),
}

impl Document {
    /// The revision analyses are keyed by: the text document's version, the notebook's change
    /// counter (VS Code does not bump a notebook's version for cell text edits).
    pub fn revision(&self) -> i32 {
        match self {
            Document::Text(text) => text.document.version(),
            Document::Notebook(notebook) => notebook.revision(),
        }
    }
}

/// One open document and its push worker's state.
pub struct DocumentEntry {
    pub document: Document,
    /// A push worker is running for this document.
    pub worker_running: bool,
    /// Something changed since the running worker took its snapshot.
    pub dirty: bool,
}

/// What an analysis of one revision needs, detached from the index.
pub enum Snapshot {
    Text {
        snapshot: DocumentSnapshot,
        language_id: String,
    },
    Notebook(NotebookSnapshot),
}

impl Snapshot {
    pub fn revision(&self) -> i32 {
        match self {
            Snapshot::Text { snapshot, .. } => snapshot.version,
            Snapshot::Notebook(snapshot) => snapshot.version,
        }
    }

    /// The language that decides whether (and how) the document is checked: a notebook's code
    /// cells are Python (its other cells are left out of the snapshot's checked text).
    pub fn language_id(&self) -> &str {
        match self {
            Snapshot::Text { language_id, .. } => language_id,
            Snapshot::Notebook(_) => "python",
        }
    }
}

/// The analysis of one revision of a document.
#[derive(Clone)]
pub enum DocumentAnalysis {
    Text(Arc<Analysis>),
    Notebook(Arc<NotebookAnalysis>),
}

impl DocumentAnalysis {
    pub fn revision(&self) -> i32 {
        match self {
            DocumentAnalysis::Text(analysis) => analysis.version,
            DocumentAnalysis::Notebook(analysis) => analysis.version,
        }
    }

    pub fn generation(&self) -> u64 {
        match self {
            DocumentAnalysis::Text(analysis) => analysis.generation,
            DocumentAnalysis::Notebook(analysis) => analysis.generation,
        }
    }

    /// Whether the analysis is of a tree equal to a fresh parse (a notebook's always is): see
    /// [`Analysis::exact`].
    pub fn is_exact(&self) -> bool {
        match self {
            DocumentAnalysis::Text(analysis) => analysis.exact,
            DocumentAnalysis::Notebook(_) => true,
        }
    }
}

/// The open documents, and the notebook that owns each cell.
#[derive(Default)]
pub struct Index {
    documents: HashMap<Uri, DocumentEntry>,
    /// Cell URI → notebook URI.
    cell_owner: HashMap<Uri, Uri>,
}

impl Index {
    /// What `uri` names: a cell first (a cell URI is never a document of its own), then an open
    /// document; `None` when neither is open.
    pub fn key(&self, uri: &Uri) -> Option<DocumentKey> {
        if let Some(notebook) = self.cell_owner.get(uri) {
            return Some(DocumentKey::NotebookCell {
                cell: uri.clone(),
                notebook: notebook.clone(),
            });
        }
        Some(match self.documents.get(uri)?.document {
            Document::Text(_) => DocumentKey::Text(uri.clone()),
            Document::Notebook(_) => DocumentKey::Notebook(uri.clone()),
        })
    }

    pub fn get(&self, uri: &Uri) -> Option<&DocumentEntry> {
        self.documents.get(uri)
    }

    pub fn get_mut(&mut self, uri: &Uri) -> Option<&mut DocumentEntry> {
        self.documents.get_mut(uri)
    }

    pub fn len(&self) -> usize {
        self.documents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }

    /// The open documents (text documents and notebooks), by URI.
    pub fn uris(&self) -> Vec<Uri> {
        let mut uris: Vec<Uri> = self.documents.keys().cloned().collect();
        uris.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        uris
    }

    /// The open documents with their entries, by URI.
    pub fn entries(&self) -> Vec<(&Uri, &DocumentEntry)> {
        let mut entries: Vec<_> = self.documents.iter().collect();
        entries.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        entries
    }

    fn insert(&mut self, uri: Uri, document: Document) {
        // A document opened again replaces the old one (and a notebook's old cells with it).
        self.remove(&uri);
        self.documents.insert(
            uri,
            DocumentEntry {
                document,
                worker_running: false,
                dirty: false,
            },
        );
    }

    /// `textDocument/didOpen`.
    pub fn open_text(&mut self, uri: Uri, text: String, version: i32, language_id: String) {
        self.insert(
            uri,
            Document::Text(TextEntry {
                document: TextDocument::new(text, version),
                language_id,
                analysis: None,
            }),
        );
    }

    /// `notebookDocument/didOpen`; returns the notebook's URI.
    pub fn open_notebook(&mut self, params: DidOpenNotebookDocumentParams) -> Uri {
        let (uri, notebook) = NotebookDocument::open(params);
        let cells: Vec<Uri> = notebook.cell_uris().cloned().collect();
        self.insert(uri.clone(), Document::Notebook(notebook));
        for cell in cells {
            self.cell_owner.insert(cell, uri.clone());
        }
        uri
    }

    /// `textDocument/didChange`; `false` if `uri` is not an open text document.
    pub fn change_text(
        &mut self,
        uri: &Uri,
        changes: Vec<TextDocumentContentChangeEvent>,
        version: i32,
        encoding: PositionEncoding,
    ) -> bool {
        match self.documents.get_mut(uri).map(|entry| &mut entry.document) {
            Some(Document::Text(text)) => {
                text.document.apply_changes(changes, version, encoding);
                true
            }
            _ => false,
        }
    }

    /// `notebookDocument/didChange`: the cells that left the notebook (to be cleared), or `None`
    /// if `uri` is not an open notebook.
    pub fn change_notebook(
        &mut self,
        params: DidChangeNotebookDocumentParams,
        encoding: PositionEncoding,
    ) -> Option<Vec<Uri>> {
        let uri = params.notebook_document.uri.clone();
        let Some(Document::Notebook(notebook)) = self
            .documents
            .get_mut(&uri)
            .map(|entry| &mut entry.document)
        else {
            return None;
        };
        let changes = notebook.change(params, encoding);
        for cell in &changes.disowned {
            self.cell_owner.remove(cell);
        }
        for cell in notebook.cell_uris() {
            self.cell_owner.insert(cell.clone(), uri.clone());
        }
        Some(changes.left)
    }

    fn remove(&mut self, uri: &Uri) -> Option<Vec<Uri>> {
        self.remove_closing(uri, Vec::new())
    }

    /// `didClose` of a text document or a notebook (with the cell documents the client closes
    /// with it): forgets the document and returns the URIs whose diagnostics go with it (the
    /// text document's, or every cell's); `None` when it was not open.
    pub fn remove_closing(&mut self, uri: &Uri, closed_cells: Vec<Uri>) -> Option<Vec<Uri>> {
        let entry = self.documents.remove(uri)?;
        Some(match entry.document {
            Document::Text(_) => vec![uri.clone()],
            Document::Notebook(notebook) => {
                let cells = notebook.close(closed_cells);
                for cell in &cells {
                    if self.cell_owner.get(cell) == Some(uri) {
                        self.cell_owner.remove(cell);
                    }
                }
                cells
            }
        })
    }

    /// The snapshot an analysis of `uri`'s current revision needs.
    pub fn snapshot(&self, uri: &Uri) -> Option<Snapshot> {
        Some(match &self.documents.get(uri)?.document {
            Document::Text(text) => Snapshot::Text {
                snapshot: text.document.snapshot(),
                language_id: text.language_id.clone(),
            },
            Document::Notebook(notebook) => Snapshot::Notebook(notebook.snapshot(uri)),
        })
    }

    /// The stored analysis of `uri` if it is of the current revision and settings `generation`.
    pub fn current_analysis(&self, uri: &Uri, generation: u64) -> Option<DocumentAnalysis> {
        match &self.documents.get(uri)?.document {
            Document::Text(text) => text
                .analysis
                .clone()
                .filter(|analysis| {
                    analysis.version == text.document.version() && analysis.generation == generation
                })
                .map(DocumentAnalysis::Text),
            Document::Notebook(notebook) => notebook
                .current_analysis(generation)
                .map(DocumentAnalysis::Notebook),
        }
    }

    /// Stores `analysis` if `uri` is still at its revision and the settings at `generation` (the
    /// current one). `None` when it is stale (or closed); otherwise, for a notebook analysed by
    /// its worker (`from_worker`), the worker's previous result (see
    /// `NotebookDocument::store`). A text document keeps even a stale result's check for the
    /// next incremental one.
    pub fn store(
        &mut self,
        uri: &Uri,
        analysis: &DocumentAnalysis,
        generation: u64,
        from_worker: bool,
    ) -> Option<Option<Arc<NotebookAnalysis>>> {
        match (&mut self.documents.get_mut(uri)?.document, analysis) {
            (Document::Text(text), DocumentAnalysis::Text(analysis)) => {
                // Even a result that went stale is worth reusing: the next check compares its
                // text with the current one.
                if generation == analysis.generation
                    && let Some(state) = &analysis.incremental
                {
                    text.document.store_check(PreviousCheck {
                        text: analysis.text.clone(),
                        state: state.clone(),
                    });
                }
                if text.document.version() != analysis.version || generation != analysis.generation
                {
                    return None;
                }
                // A quick analysis (not exact) never replaces an exact one of its version: the
                // exact one is what requests are answered from.
                let replaces_exact = !analysis.exact
                    && text.analysis.as_ref().is_some_and(|stored| {
                        stored.exact
                            && stored.version == analysis.version
                            && stored.generation == analysis.generation
                    });
                if !replaces_exact {
                    text.document.store_tree(
                        analysis.version,
                        analysis.tree.clone(),
                        analysis.exact,
                    );
                    text.analysis = Some(analysis.clone());
                }
                Some(None)
            }
            (Document::Notebook(notebook), DocumentAnalysis::Notebook(analysis)) => {
                notebook.store(analysis, generation, from_worker)
            }
            // The URI was closed and reopened as the other kind while the analysis ran.
            _ => None,
        }
    }

    /// Records that a pull answered notebook cell `cell` with `result_id`.
    pub fn note_served(&mut self, cell: &Uri, result_id: &str) {
        let Some(notebook) = self.cell_owner.get(cell) else {
            return;
        };
        if let Some(Document::Notebook(notebook)) = self
            .documents
            .get_mut(notebook)
            .map(|entry| &mut entry.document)
        {
            notebook.note_served(cell, result_id);
        }
    }

    /// Whether a pull client holds stale findings of notebook `uri`'s cells (see
    /// `NotebookDocument::client_holds_stale`); `false` for text documents.
    pub fn client_holds_stale(
        &self,
        uri: &Uri,
        previous: Option<&NotebookAnalysis>,
        next: &NotebookAnalysis,
        encoding: PositionEncoding,
    ) -> bool {
        match self.documents.get(uri).map(|entry| &entry.document) {
            Some(Document::Notebook(notebook)) => {
                notebook.client_holds_stale(previous, next, encoding)
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn uri(text: &str) -> Uri {
        text.parse().expect("URI")
    }

    fn open_params() -> DidOpenNotebookDocumentParams {
        serde_json::from_value(json!({
            "notebookDocument": {
                "uri": "file:///n.ipynb", "notebookType": "jupyter-notebook", "version": 1,
                "cells": [{"kind": 2, "document": "cell:1"}, {"kind": 2, "document": "cell:2"}]
            },
            "cellTextDocuments": [
                {"uri": "cell:1", "languageId": "python", "version": 1, "text": "import torch\n"},
                {"uri": "cell:2", "languageId": "python", "version": 1, "text": "x = 1\n"}
            ]
        }))
        .expect("params")
    }

    #[test]
    fn cells_are_keyed_to_their_notebook_and_leave_with_it() {
        let mut index = Index::default();
        index.open_text(uri("file:///t.py"), "x = 1\n".into(), 3, "python".into());
        let notebook = index.open_notebook(open_params());
        assert_eq!(
            index.key(&uri("file:///t.py")),
            Some(DocumentKey::Text(uri("file:///t.py")))
        );
        assert_eq!(
            index.key(&notebook),
            Some(DocumentKey::Notebook(notebook.clone()))
        );
        let cell = index.key(&uri("cell:2")).expect("a cell");
        assert_eq!(cell.document_uri(), &notebook);
        assert_eq!(index.uris(), [uri("file:///n.ipynb"), uri("file:///t.py")]);
        assert_eq!(index.snapshot(&notebook).map(|s| s.revision()), Some(0));
        assert_eq!(
            index.snapshot(&uri("file:///t.py")).map(|s| s.revision()),
            Some(3)
        );

        let cleared = index.remove_closing(&notebook, vec![uri("cell:1"), uri("cell:2")]);
        assert_eq!(cleared, Some(vec![uri("cell:1"), uri("cell:2")]));
        assert_eq!(index.key(&uri("cell:1")), None);
        assert_eq!(index.len(), 1);
        assert_eq!(
            index.remove_closing(&uri("file:///t.py"), Vec::new()),
            Some(vec![uri("file:///t.py")])
        );
        assert!(index.is_empty());
    }
}
