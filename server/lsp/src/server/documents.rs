//! Document and notebook sync (`didOpen`, `didChange`, `didSave`, `didClose` of both), and the
//! push worker that checks a changed document and publishes its diagnostics.

use super::*;

impl Server {
    pub(super) async fn on_did_open(&self, params: DidOpenTextDocumentParams) {
        let document = params.text_document;
        {
            let mut documents = self.session.documents();
            documents.insert(
                document.uri.clone(),
                DocumentEntry {
                    document: TextDocument::new(document.text, document.version),
                    language_id: document.language_id,
                    analysis: None,
                    worker_running: false,
                    dirty: false,
                },
            );
        }
        self.schedule(&document.uri);
    }

    pub(super) async fn on_did_change(&self, params: DidChangeTextDocumentParams) {
        let uri = params.text_document.uri;
        let encoding = self.session.encoding();
        let known = {
            let mut documents = self.session.documents();
            match documents.get_mut(&uri) {
                Some(entry) => {
                    entry.document.apply_changes(
                        params.content_changes,
                        params.text_document.version,
                        encoding,
                    );
                    self.session.scheduler.supersede(&uri);
                    true
                }
                None => false,
            }
        };
        if known {
            self.schedule(&uri);
        } else {
            self.warn_not_open("document", &uri).await;
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
        let uri = params.text_document.uri;
        self.session.scheduler.supersede(&uri);
        let mut documents = self.session.documents();
        if documents.remove(&uri).is_some() && !self.session.negotiated().pull_diagnostics {
            // Queued under the lock, after any publish of the document's last version.
            self.session.queue_publish(Publish {
                uri,
                diagnostics: Vec::new(),
                version: None,
            });
        }
    }

    pub(super) async fn on_notebook_did_open(&self, params: DidOpenNotebookDocumentParams) {
        let uri = self.notebooks.lock().open(params);
        self.schedule_notebook(&uri);
    }

    pub(super) async fn on_notebook_did_change(&self, params: DidChangeNotebookDocumentParams) {
        let uri = params.notebook_document.uri.clone();
        let changed = self
            .notebooks
            .lock()
            .change(params, self.session.encoding());
        match changed {
            Some(removed) => {
                notebook::clear_cells(&self.session, removed);
                self.schedule_notebook(&uri);
            }
            None => {
                self.warn_not_open("notebook", &uri).await;
            }
        }
    }

    pub(super) async fn on_notebook_did_save(&self, _params: DidSaveNotebookDocumentParams) {
        // Nothing to do: notebooks are checked as they are edited, and saving one changes no
        // configuration.
    }

    pub(super) async fn on_notebook_did_close(&self, params: DidCloseNotebookDocumentParams) {
        let cells = self.notebooks.lock().close(params);
        notebook::clear_cells(&self.session, cells);
    }
}

/// Analyses `uri` until it stops changing, publishing each result that is still current.
pub(super) async fn push_worker(session: Arc<Session>, client: Client, uri: Uri) {
    loop {
        // Cleared before the snapshot is taken: an edit in between sets it again and costs one
        // more run, but is never missed.
        match session.documents().get_mut(&uri) {
            Some(entry) => entry.dirty = false,
            None => return,
        }
        let Some((snapshot, resolved, config)) = session.prepare(&uri) else {
            return;
        };
        let encoding = session.negotiated().encoding;
        let version = snapshot.version;
        // Shared with any request for the same revision; cancelled if an edit supersedes it.
        let outcome = session
            .shared_analysis(&uri, snapshot, resolved, &config)
            .await;
        if let Some(analysis) = analysis_or_log(&client, &uri, version, Ok(outcome)).await {
            let diagnostics = crate::runtime::lsp_diagnostics(&analysis, &uri, encoding);
            session.store(&uri, &analysis, Some(diagnostics));
        }
        let mut documents = session.documents();
        match documents.get_mut(&uri) {
            Some(entry) if entry.dirty => continue,
            Some(entry) => {
                entry.worker_running = false;
                return;
            }
            None => return,
        }
    }
}
