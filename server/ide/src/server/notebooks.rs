//! Open notebook documents (`notebookDocument/*`): Jupyter notebooks whose Python code cells are
//! checked together as one module, with results mapped back to each cell's own URI.
//!
//! Model (the design ruff's server uses too): the server keeps each open notebook as an ordered
//! list of cells plus one text document per cell, indexed by cell URI. Analysis concatenates the
//! Python code cells in notebook order (`tpulint_ide::notebook`, shared with the CLI), so an
//! `import torch_xla` in the first cell sets the backend for the last one, and facts such as
//! "`x` lives on CUDA" flow across cells. IPython syntax (`%magic`, `!shell`, `obj?`, `%%cell`
//! magics) is neutralised with same-length whitespace, so byte offsets inside a cell are the
//! same in the concatenation and in the cell.
//!
//! Cross-cell results: a diagnostic is reported in the cell where it starts, its range clipped to
//! that cell; related locations in other cells point at those cells' URIs; a fix is kept only
//! when every edit lies inside the diagnostic's own cell and outside neutralised IPython lines
//! (anything else could corrupt a cell boundary or a magic). "Fix all" follows the same rule,
//! per cell.
//!
//! Analyses are stored only if the notebook's revision (a counter of applied changes: VS Code does
//! not bump the notebook version for cell text edits) and the settings generation are still the
//! ones they were computed for. Sans-IO: the native server's document index holds each
//! [`NotebookDocument`] beside its text documents, under one lock; the browser's server owns a
//! [`NotebookDocuments`].

use std::sync::Arc;

use ls_types::{
    CodeActionKind, DidChangeNotebookDocumentParams, DidCloseNotebookDocumentParams,
    DidOpenNotebookDocumentParams, Notebook, NotebookCellKind, NotebookCellSelector,
    NotebookDocumentSyncOptions, NotebookSelector, TextDocumentItem, Uri,
};
use tpulint_analyzer::LineIndex;

use super::notebook_analysis::{CellSnapshot, NotebookAnalysis, NotebookSnapshot};
use super::uri_map::UriMap;
use crate::document::TextDocument;
use crate::encoding::PositionEncoding;

/// The notebook-wide "Fix all" (VS Code's `notebook.codeActionsOnSave` asks for `notebook.*`
/// kinds); `source.fixAll.tpulint` on a cell fixes that cell only.
pub fn notebook_fix_all_kind() -> CodeActionKind {
    CodeActionKind::new("notebook.source.fixAll.tpulint")
}

/// What the server advertises: Python cells of Jupyter notebooks, and Python cells of any other
/// notebook type (VS Code's interactive window, other kernels' notebook types).
pub fn sync_options() -> NotebookDocumentSyncOptions {
    let python_cells = || {
        Some(vec![NotebookCellSelector {
            language: "python".to_string(),
        }])
    };
    NotebookDocumentSyncOptions {
        notebook_selector: vec![
            NotebookSelector::ByNotebook {
                notebook: Notebook::String("jupyter-notebook".to_string()),
                cells: python_cells(),
            },
            NotebookSelector::ByNotebook {
                notebook: Notebook::String("*".to_string()),
                cells: python_cells(),
            },
        ],
        save: Some(true),
    }
}

struct CellDocument {
    document: TextDocument,
    language_id: String,
}

/// One open notebook: its cells in order, each cell's text, and what was last learnt about it.
/// The container (the browser's [`NotebookDocuments`], the native server's document index) maps
/// cell URIs to their notebook.
pub struct NotebookDocument {
    /// The client's notebook version (reported in debug output).
    version: i32,
    /// Bumped by every change the server applies. Analyses are keyed by it, not by `version`:
    /// VS Code leaves the notebook version alone when only a cell's text changes.
    revision: i32,
    /// Cell URIs and kinds, in notebook order.
    cells: Vec<(Uri, NotebookCellKind)>,
    /// The text of each cell, by cell URI.
    texts: UriMap<CellDocument>,
    analysis: Option<Arc<NotebookAnalysis>>,
    /// The worker's previous result: what a pull client was last told about (it re-pulls the
    /// cells it changed). Results computed for requests do not move it, or a pull of the edited
    /// cell would hide that another cell's findings changed.
    worker_baseline: Option<Arc<NotebookAnalysis>>,
    /// Pull mode: the result id each cell's last `textDocument/diagnostic` answer carried. A
    /// client may pull an edited cell before the notebook change that edited it arrives (VS Code
    /// does); the worker compares these ids with its result to see who holds stale findings.
    served: UriMap<String>,
}

/// What a `notebookDocument/didChange` did to the notebook's cells.
pub struct CellChanges {
    /// Cells that left the notebook: their diagnostics are cleared.
    pub left: Vec<Uri>,
    /// Cell documents the client closed that are no longer in the notebook: they no longer
    /// belong to it. (A cell deleted but not closed still does: a move may arrive as a deletion
    /// and a later insertion.)
    pub disowned: Vec<Uri>,
}

impl NotebookDocument {
    /// `notebookDocument/didOpen`: the notebook's URI and its document.
    pub fn open(params: DidOpenNotebookDocumentParams) -> (Uri, NotebookDocument) {
        let notebook = params.notebook_document;
        let texts = params
            .cell_text_documents
            .into_iter()
            .map(|item| (item.uri.clone(), cell_document(item)))
            .collect();
        let cells: Vec<(Uri, NotebookCellKind)> = notebook
            .cells
            .into_iter()
            .map(|cell| (cell.document, cell.kind))
            .collect();
        let document = NotebookDocument {
            version: notebook.version,
            revision: 0,
            cells,
            texts,
            analysis: None,
            worker_baseline: None,
            served: UriMap::new(),
        };
        (notebook.uri, document)
    }

    /// The cell URIs, in notebook order.
    pub fn cell_uris(&self) -> impl Iterator<Item = &Uri> {
        self.cells.iter().map(|(cell, _)| cell)
    }

    /// The server's revision: what analyses of this notebook are keyed by.
    pub fn revision(&self) -> i32 {
        self.revision
    }

    /// `notebookDocument/didChange`: metadata, cell structure (a splice of the cell array with
    /// the opened and closed cell documents), cell data, and incremental text changes, applied
    /// in that order.
    pub fn change(
        &mut self,
        params: DidChangeNotebookDocumentParams,
        encoding: PositionEncoding,
    ) -> CellChanges {
        self.version = params.notebook_document.version;
        self.revision = self.revision.wrapping_add(1);
        // Notebook metadata (kernel, language info) does not change what is checked: the cells'
        // kinds and languages decide. Only the version moves.
        let change = params.change;
        let mut changes = CellChanges {
            left: Vec::new(),
            disowned: Vec::new(),
        };
        let Some(cells) = change.cells else {
            return changes;
        };
        if let Some(structure) = cells.structure {
            let array = structure.array;
            let start = (array.start as usize).min(self.cells.len());
            let end = (start + array.delete_count as usize).min(self.cells.len());
            let inserted: Vec<(Uri, NotebookCellKind)> = array
                .cells
                .unwrap_or_default()
                .into_iter()
                .map(|cell| (cell.document, cell.kind))
                .collect();
            let deleted: Vec<(Uri, NotebookCellKind)> =
                self.cells.splice(start..end, inserted).collect();
            for item in structure.did_open.unwrap_or_default() {
                self.texts.insert(item.uri.clone(), cell_document(item));
            }
            // A cell's document lives until the client closes it, not until the cell leaves
            // the array: a move may arrive as a deletion and a later insertion.
            let present: Vec<&Uri> = self.cells.iter().map(|(cell, _)| cell).collect();
            for closed in structure.did_close.unwrap_or_default() {
                self.texts.remove(&closed.uri);
                self.served.remove(&closed.uri);
                if !present.contains(&&closed.uri) {
                    changes.disowned.push(closed.uri);
                }
            }
            for (cell, _) in deleted {
                if !present.contains(&&cell) {
                    changes.left.push(cell);
                }
            }
        }
        for data in cells.data.unwrap_or_default() {
            if let Some(cell) = self
                .cells
                .iter_mut()
                .find(|(cell, _)| *cell == data.document)
            {
                cell.1 = data.kind;
            }
        }
        for content in cells.text_content.unwrap_or_default() {
            if let Some(cell) = self.texts.get_mut(&content.document.uri) {
                cell.document
                    .apply_changes(content.changes, content.document.version, encoding);
            }
        }
        changes
    }

    /// `notebookDocument/didClose`: every cell the notebook had (its array, the cell documents
    /// the client closes with it, and documents of cells that had left the array), to be
    /// cleared and disowned.
    pub fn close(self, closed_cells: impl IntoIterator<Item = Uri>) -> Vec<Uri> {
        let mut cells: Vec<Uri> = self.cells.into_iter().map(|(cell, _)| cell).collect();
        let detached = self.texts.into_keys();
        for closed in closed_cells.into_iter().chain(detached) {
            if !cells.contains(&closed) {
                cells.push(closed);
            }
        }
        cells
    }

    /// What an analysis of the notebook (at URI `uri`) needs, detached from the document.
    pub fn snapshot(&self, uri: &Uri) -> NotebookSnapshot {
        let cells = self
            .cells
            .iter()
            .map(|(cell_uri, kind)| {
                let text = self.texts.get(cell_uri);
                CellSnapshot {
                    uri: cell_uri.clone(),
                    is_python_code: *kind == NotebookCellKind::CODE
                        && text.is_some_and(|text| text.language_id == "python"),
                    text: text.map_or_else(|| Arc::from(""), |text| text.document.text().clone()),
                    line_index: text.map_or_else(
                        || Arc::new(LineIndex::new("")),
                        |text| text.document.line_index().clone(),
                    ),
                    version: text.map_or(0, |text| text.document.version()),
                }
            })
            .collect();
        NotebookSnapshot {
            uri: uri.clone(),
            version: self.revision,
            cells,
        }
    }

    /// The stored analysis if it is of the current revision and settings `generation`.
    pub fn current_analysis(&self, generation: u64) -> Option<Arc<NotebookAnalysis>> {
        self.analysis.clone().filter(|analysis| {
            analysis.version == self.revision && analysis.generation == generation
        })
    }

    /// The latest analysis stored, possibly of an older revision.
    pub fn latest_analysis(&self) -> Option<&Arc<NotebookAnalysis>> {
        self.analysis.as_ref()
    }

    /// Records that a pull answered `cell` with `result_id`.
    pub fn note_served(&mut self, cell: &Uri, result_id: &str) {
        self.served.insert(cell.clone(), result_id.to_string());
    }

    /// Whether a cell whose findings changed between the worker's previous result and `next`
    /// was last answered with an older result: that client shows stale findings until it pulls
    /// again. Covers both an import edited in another cell and a pull that overtook its edit.
    /// Without a previous result (the worker's first, or its earlier runs went stale) every cell
    /// answered with an older result counts.
    pub fn client_holds_stale(
        &self,
        previous: Option<&NotebookAnalysis>,
        next: &NotebookAnalysis,
        encoding: PositionEncoding,
    ) -> bool {
        let current = next.result_id();
        next.cells.iter().any(|cell| {
            self.served
                .get(&cell.uri)
                .is_some_and(|served| *served != current)
                && previous.is_none_or(|previous| {
                    previous.cell_diagnostics(&cell.uri, encoding)
                        != next.cell_diagnostics(&cell.uri, encoding)
                })
        })
    }

    /// Stores `analysis` if the notebook is still at its revision and the settings at
    /// `generation` (the current one). With `from_worker`, it becomes the worker's baseline and
    /// the previous baseline is returned; `None` when the analysis was stale (the caller
    /// publishes the cells of a stored analysis, in push mode).
    pub fn store(
        &mut self,
        analysis: &Arc<NotebookAnalysis>,
        generation: u64,
        from_worker: bool,
    ) -> Option<Option<Arc<NotebookAnalysis>>> {
        if self.revision != analysis.version || generation != analysis.generation {
            return None;
        }
        self.analysis = Some(analysis.clone());
        Some(if from_worker {
            self.worker_baseline.replace(analysis.clone())
        } else {
            None
        })
    }

    /// The notebook's line in the debug report.
    pub fn describe(&self, uri: &Uri) -> String {
        format!(
            "  {} (version {}, {} cells, {} diagnostics)\n",
            uri.as_str(),
            self.version,
            self.cells.len(),
            self.analysis
                .as_ref()
                .map_or(0, |analysis| analysis.diagnostic_count())
        )
    }
}

/// The open notebooks of a server without a document index of its own (the browser's). Cells are
/// not text documents of their own for the protocol (they arrive inside notebook notifications),
/// so they live here, indexed by cell URI as well.
#[derive(Default)]
pub struct NotebookDocuments {
    pub notebooks: UriMap<NotebookDocument>,
    /// Cell URI → notebook URI.
    owners: UriMap<Uri>,
}

impl NotebookDocuments {
    /// The notebook a cell belongs to.
    pub fn owner(&self, cell: &Uri) -> Option<Uri> {
        self.owners.get(cell).cloned()
    }

    /// The open notebooks, in a stable order (by URI).
    pub fn uris(&self) -> Vec<Uri> {
        self.notebooks.keys().cloned().collect()
    }

    /// Lines for the debug report.
    pub fn describe(&self) -> String {
        let mut out = format!("open notebooks: {}\n", self.notebooks.len());
        for (uri, entry) in self.notebooks.iter() {
            out.push_str(&entry.describe(uri));
        }
        out
    }

    /// `notebookDocument/didOpen`.
    pub fn open(&mut self, params: DidOpenNotebookDocumentParams) -> Uri {
        let (uri, document) = NotebookDocument::open(params);
        for cell in document.cell_uris() {
            self.owners.insert(cell.clone(), uri.clone());
        }
        self.notebooks.insert(uri.clone(), document);
        uri
    }

    /// `notebookDocument/didChange`. Returns the cell URIs that left the notebook (to be
    /// cleared), or `None` if the notebook is not open.
    pub fn change(
        &mut self,
        params: DidChangeNotebookDocumentParams,
        encoding: PositionEncoding,
    ) -> Option<Vec<Uri>> {
        let uri = params.notebook_document.uri.clone();
        let document = self.notebooks.get_mut(&uri)?;
        let changes = document.change(params, encoding);
        for cell in &changes.disowned {
            self.owners.remove(cell);
        }
        for cell in document.cell_uris() {
            self.owners.insert(cell.clone(), uri.clone());
        }
        Some(changes.left)
    }

    /// `notebookDocument/didClose`: forgets the notebook; returns its cells (to be cleared).
    pub fn close(&mut self, params: DidCloseNotebookDocumentParams) -> Vec<Uri> {
        let Some(document) = self.notebooks.remove(&params.notebook_document.uri) else {
            return Vec::new();
        };
        let cells = document.close(
            params
                .cell_text_documents
                .into_iter()
                .map(|document| document.uri),
        );
        for cell in &cells {
            self.owners.remove(cell);
        }
        cells
    }

    pub fn snapshot(&self, notebook: &Uri) -> Option<NotebookSnapshot> {
        self.notebooks
            .get(notebook)
            .map(|entry| entry.snapshot(notebook))
    }

    pub fn current_analysis(
        &self,
        notebook: &Uri,
        generation: u64,
    ) -> Option<Arc<NotebookAnalysis>> {
        self.notebooks.get(notebook)?.current_analysis(generation)
    }

    /// Records that a pull answered `cell` with `result_id`.
    pub fn note_served(&mut self, cell: &Uri, result_id: &str) {
        let Some(notebook) = self.owners.get(cell).cloned() else {
            return;
        };
        if let Some(entry) = self.notebooks.get_mut(&notebook) {
            entry.note_served(cell, result_id);
        }
    }

    /// See [`NotebookDocument::client_holds_stale`].
    pub fn client_holds_stale(
        &self,
        notebook: &Uri,
        previous: Option<&NotebookAnalysis>,
        next: &NotebookAnalysis,
        encoding: PositionEncoding,
    ) -> bool {
        self.notebooks
            .get(notebook)
            .is_some_and(|entry| entry.client_holds_stale(previous, next, encoding))
    }

    /// See [`NotebookDocument::store`].
    pub fn store(
        &mut self,
        notebook: &Uri,
        analysis: &Arc<NotebookAnalysis>,
        generation: u64,
        from_worker: bool,
    ) -> Option<Option<Arc<NotebookAnalysis>>> {
        self.notebooks
            .get_mut(notebook)?
            .store(analysis, generation, from_worker)
    }
}

fn cell_document(item: TextDocumentItem) -> CellDocument {
    CellDocument {
        document: TextDocument::new(item.text, item.version),
        language_id: item.language_id,
    }
}
