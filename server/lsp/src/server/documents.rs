//! Document and notebook sync (`didOpen`, `didChange`, `didSave`, `didClose` of both), and the
//! push worker that checks a changed document (a text document or a notebook) and publishes its
//! diagnostics. Both kinds go through the same index, scheduler, worker and close path.

use super::*;

impl Server {
    pub(super) async fn on_did_open(&self, params: DidOpenTextDocumentParams) {
        let document = params.text_document;
        let uri = document.uri.clone();
        let start = {
            let mut index = self.session.index();
            index.open_text(
                document.uri,
                document.text,
                document.version,
                document.language_id,
            );
            self.session.scheduler.supersede(&uri);
            self.mark_stale(&mut index, &uri)
        };
        if start {
            self.start_worker(&uri);
        }
    }

    pub(super) async fn on_did_change(&self, params: DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let encoding = self.session.encoding();
        let known = {
            let mut index = self.session.index();
            let known = index.change_text(
                &uri,
                params.content_changes,
                params.text_document.version,
                encoding,
            );
            // Under the lock: a worker that snapshots the new version after it is released
            // starts the new run, which must not be the one superseded.
            known.then(|| {
                self.session.scheduler.supersede(&uri);
                self.mark_stale(&mut index, &uri)
            })
        };
        match known {
            Some(true) => self.start_worker(&uri),
            Some(false) => {}
            None => self.warn_not_open("document", &uri).await,
        }
    }

    pub(super) async fn on_did_save(&self, params: DidSaveTextDocumentParams) {
        // Clients without file watchers still tell us when an open configuration file is saved.
        if is_config_file(&params.text_document.uri) {
            self.reload_projects();
            self.refresh_all().await;
        }
    }

    pub(super) async fn on_did_close(&self, params: DidCloseTextDocumentParams) {
        self.session.close(&params.text_document.uri, Vec::new());
    }

    pub(super) async fn on_notebook_did_open(&self, params: DidOpenNotebookDocumentParams) {
        let (uri, start) = {
            let mut index = self.session.index();
            let uri = index.open_notebook(params);
            self.session.scheduler.supersede(&uri);
            let start = self.mark_stale(&mut index, &uri);
            (uri, start)
        };
        if start {
            self.start_worker(&uri);
        }
    }

    pub(super) async fn on_notebook_did_change(&self, params: DidChangeNotebookDocumentParams) {
        let uri = params.notebook_document.uri.clone();
        let encoding = self.session.encoding();
        let known = {
            let mut index = self.session.index();
            index.change_notebook(params, encoding).map(|left| {
                // Under the lock, as for a text document.
                self.session.scheduler.supersede(&uri);
                // Queued under the lock, after any publish of the notebook's last revision.
                self.session.clear(left);
                self.mark_stale(&mut index, &uri)
            })
        };
        match known {
            Some(true) => self.start_worker(&uri),
            Some(false) => {}
            None => self.warn_not_open("notebook", &uri).await,
        }
    }

    pub(super) async fn on_notebook_did_save(&self, _params: DidSaveNotebookDocumentParams) {
        // Nothing to do: notebooks are checked as they are edited, and saving one changes no
        // configuration.
    }

    pub(super) async fn on_notebook_did_close(&self, params: DidCloseNotebookDocumentParams) {
        let closed_cells = params
            .cell_text_documents
            .into_iter()
            .map(|document| document.uri)
            .collect();
        self.session
            .close(&params.notebook_document.uri, closed_cells);
    }
}

/// Analyses document `uri` (a text document or a notebook) until it stops changing. In push mode
/// each result still current is published (one publish per cell for a notebook); in pull mode
/// (a notebook, for a client that takes refreshes) the result is stored and the client asked to
/// pull again when a cell it was answered for holds stale findings.
///
/// A text document is checked quickly first: when its incremental re-parse has a syntax error,
/// that tree is checked as it is and published at once, without the fresh parse `tpulint check`
/// would do (as long as a full check on a large module). If the document is still unchanged
/// then, the worker settles it: the exact analysis (fresh parse) is checked and stored, and
/// published only if its diagnostics differ from the quick ones. An edit meanwhile cancels the
/// exact run and the loop starts over, so every revision that stays current ends with the
/// diagnostics of a fresh check.
pub(super) async fn push_worker(session: Arc<Session>, client: Client, uri: Uri) {
    loop {
        // The mark is cleared under the lock the snapshot is taken under: an edit after it marks
        // the document again and costs one more run, and no revision is checked twice.
        let Some((snapshot, check_settings)) = session.prepare_for_worker(&uri) else {
            return;
        };
        let revision = snapshot.revision();
        // Shared with any request for the same revision; cancelled if a change supersedes it.
        let outcome = session
            .shared_analysis(&uri, snapshot, check_settings, false)
            .await;
        if let Some(analysis) = analysis_or_log(&client, &uri, revision, Ok(outcome)).await {
            let negotiated = session.negotiated();
            if !negotiated.pull_diagnostics {
                let publishes = session.publishes(&uri, &analysis);
                let published: Vec<_> = publishes
                    .iter()
                    .map(|publish| publish.diagnostics.clone())
                    .collect();
                let current = session.store(&uri, &analysis, publishes, true).is_some();
                if current && !analysis.is_exact() {
                    settle(&session, &client, &uri, revision, published).await;
                }
            } else {
                let stored = session.store(&uri, &analysis, Vec::new(), true);
                let holds_stale = match (&analysis, stored) {
                    (DocumentAnalysis::Notebook(next), Some(previous)) => {
                        negotiated.workspace_diagnostic_refresh
                            && session.index().client_holds_stale(
                                &uri,
                                previous.as_deref(),
                                next,
                                negotiated.encoding,
                            )
                    }
                    _ => false,
                };
                if holds_stale {
                    session.request_refresh().await;
                }
            }
        }
        let mut index = session.index();
        match index.get_mut(&uri) {
            Some(entry) if entry.dirty => continue,
            Some(entry) => {
                entry.worker_running = false;
                return;
            }
            None => return,
        }
    }
}

/// The exact analysis of document `uri` at `revision`, after a quick one that was not exact was
/// published (`published`: its diagnostics): stored, and published only where it differs. Does
/// nothing when the document has changed (its worker goes round again); an edit during the run
/// cancels it (`Scheduler::supersede`).
async fn settle(
    session: &Arc<Session>,
    client: &Client,
    uri: &Uri,
    revision: i32,
    published: Vec<Vec<Diagnostic>>,
) {
    // Not `prepare_for_worker`: the document's mark stays as it is, so an edit that arrived
    // since the quick run makes the worker go round again.
    let Some((snapshot, check_settings)) = session.prepare(uri) else {
        return;
    };
    if snapshot.revision() != revision {
        return;
    }
    let outcome = session
        .shared_analysis(uri, snapshot, check_settings, true)
        .await;
    if let Some(analysis) = analysis_or_log(client, uri, revision, Ok(outcome)).await {
        let publishes = session.publishes(uri, &analysis);
        let differs = publishes.len() != published.len()
            || publishes
                .iter()
                .zip(&published)
                .any(|(publish, published)| publish.diagnostics != *published);
        let publishes = if differs { publishes } else { Vec::new() };
        session.store(uri, &analysis, publishes, true);
    }
}
