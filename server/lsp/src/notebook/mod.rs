//! Notebook documents in the native server: the sans-IO model and analysis of
//! `tpulint_ide::server` (shared with the browser's server) under a lock, plus the worker that
//! checks a notebook off the message loop.
//!
//! Ordering rule (as for text documents): notebook changes are applied synchronously under the
//! notebooks lock before any `.await`; analyses run on snapshots and are stored, and published,
//! only if still current. Publishes are queued on the session's publish queue while the lock is
//! held.

pub use tpulint_ide::server::notebook_analysis::{
    CellResult, CellSnapshot, NotebookAnalysis, NotebookSnapshot, analyze, code_actions,
    fix_all_cells, fix_all_edit,
};
pub use tpulint_ide::server::notebooks::{NotebookDocuments, notebook_fix_all_kind, sync_options};

use std::sync::{Arc, Mutex, MutexGuard};

use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{MessageType, Uri};
use tpulint_ide::server::analyze::CheckSettings;

use crate::session::{AnalysisError, CancellationToken, Publish, Session, analysis_or_log};

/// The open notebooks, under a lock.
#[derive(Default)]
pub struct Notebooks {
    state: Mutex<NotebookDocuments>,
}

impl Notebooks {
    /// A poisoned lock is recovered: every mutation under it leaves the maps consistent.
    pub fn lock(&self) -> MutexGuard<'_, NotebookDocuments> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn owner(&self, cell: &Uri) -> Option<Uri> {
        self.lock().owner(cell)
    }

    pub fn uris(&self) -> Vec<Uri> {
        self.lock().uris()
    }

    pub fn describe(&self) -> String {
        self.lock().describe()
    }

    pub fn note_served(&self, cell: &Uri, result_id: &str) {
        self.lock().note_served(cell, result_id);
    }

    /// Stores `analysis` if still current; if so and `publish` is set, queues a publish for
    /// every cell under the lock (see `NotebookDocuments::store`).
    fn store(
        &self,
        session: &Session,
        notebook: &Uri,
        analysis: &Arc<NotebookAnalysis>,
        publish: bool,
        from_worker: bool,
    ) -> Option<Option<Arc<NotebookAnalysis>>> {
        let generation = session.config().generation;
        let encoding = session.encoding();
        let mut state = self.lock();
        let previous = state.store(notebook, analysis, generation, from_worker)?;
        if publish {
            for cell in &analysis.cells {
                session.queue_publish(Publish {
                    uri: cell.uri.clone(),
                    diagnostics: analysis.cell_diagnostics(&cell.uri, encoding),
                    version: Some(cell.cell_version),
                });
            }
        }
        Some(previous)
    }
}

fn prepare(
    session: &Session,
    notebooks: &Notebooks,
    notebook: &Uri,
) -> Option<(NotebookSnapshot, CheckSettings)> {
    let config = session.config();
    let snapshot = notebooks.lock().snapshot(notebook)?;
    // The notebook's own path decides its project configuration; resolving may read files,
    // so it happens outside the lock.
    let resolved = config.projects.resolve(notebook, "python");
    if let Some(error) = &resolved.error {
        session.show_once(
            MessageType::ERROR,
            format!("tpulint: invalid configuration: {error}"),
        );
    }
    Some((
        snapshot,
        CheckSettings {
            settings: resolved.settings,
            config_file: resolved.config_file,
            generation: config.generation,
            unsafe_fixes: config.client.unsafe_fixes,
        },
    ))
}

/// The current analysis of `notebook`, computed off the message loop when the stored one is
/// stale.
pub async fn analysis_for(
    session: &Arc<Session>,
    notebooks: &Arc<Notebooks>,
    notebook: &Uri,
    token: &CancellationToken,
) -> Result<Arc<NotebookAnalysis>, AnalysisError> {
    let current = notebooks
        .lock()
        .current_analysis(notebook, session.config().generation);
    if let Some(analysis) = current {
        return Ok(analysis);
    }
    let (snapshot, check_settings) =
        prepare(session, notebooks, notebook).ok_or(AnalysisError::Closed)?;
    let token = token.clone();
    let analysis = tokio::task::spawn_blocking(move || {
        analyze(snapshot, check_settings, &|| token.is_cancelled())
    })
    .await
    .map_err(|error| AnalysisError::Panicked(error.to_string()))??;
    let analysis = Arc::new(analysis);
    notebooks.store(session, notebook, &analysis, false, false);
    Ok(analysis)
}

/// Queues an analysis of `notebook`: one worker per notebook, re-running while changes keep
/// arriving. In push mode the worker publishes every cell; in pull mode it stores the result and
/// asks the client to pull again when a cell whose findings changed was last answered with an
/// older result (an import added in one cell changes the findings of another; a pull may also
/// overtake the edit it follows).
pub fn schedule(session: &Arc<Session>, notebooks: &Arc<Notebooks>, client: &Client, uri: &Uri) {
    let negotiated = session.negotiated();
    if negotiated.pull_diagnostics && !negotiated.workspace_diagnostic_refresh {
        // Nothing to publish and no refresh to send: pulls analyse on demand.
        return;
    }
    {
        let mut state = notebooks.lock();
        let Some(entry) = state.notebooks.get_mut(uri) else {
            return;
        };
        entry.dirty = true;
        if entry.worker_running {
            return;
        }
        entry.worker_running = true;
    }
    let session = session.clone();
    let notebooks = notebooks.clone();
    let client = client.clone();
    let uri = uri.clone();
    tokio::spawn(async move { worker(session, notebooks, client, uri).await });
}

/// Clears the diagnostics of cells that left a notebook (push mode only: a pull client drops
/// what it pulled for a closed document itself).
pub fn clear_cells(session: &Session, cells: Vec<Uri>) {
    if session.negotiated().pull_diagnostics {
        return;
    }
    for uri in cells {
        session.queue_publish(Publish {
            uri,
            diagnostics: Vec::new(),
            version: None,
        });
    }
}

async fn worker(session: Arc<Session>, notebooks: Arc<Notebooks>, client: Client, uri: Uri) {
    loop {
        match notebooks.lock().notebooks.get_mut(&uri) {
            Some(entry) => entry.dirty = false,
            None => return,
        }
        let Some((snapshot, check_settings)) = prepare(&session, &notebooks, &uri) else {
            return;
        };
        let version = snapshot.version;
        let outcome =
            tokio::task::spawn_blocking(move || analyze(snapshot, check_settings, &|| false)).await;
        let negotiated = session.negotiated();
        if let Some(analysis) = analysis_or_log(&client, &uri, version, outcome).await {
            let analysis = Arc::new(analysis);
            let stored = notebooks.store(
                &session,
                &uri,
                &analysis,
                !negotiated.pull_diagnostics,
                true,
            );
            let holds_stale = negotiated.pull_diagnostics
                && negotiated.workspace_diagnostic_refresh
                && stored.is_some_and(|previous| {
                    notebooks.lock().client_holds_stale(
                        &uri,
                        previous.as_deref(),
                        &analysis,
                        negotiated.encoding,
                    )
                });
            if holds_stale {
                // A client that refuses still pulls on its next edit.
                let _ = client.workspace_diagnostic_refresh().await;
            }
        }
        let mut state = notebooks.lock();
        match state.notebooks.get_mut(&uri) {
            Some(entry) if entry.dirty => continue,
            Some(entry) => {
                entry.worker_running = false;
                return;
            }
            None => return,
        }
    }
}
