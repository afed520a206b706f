//! The `LanguageServer` implementation, an adapter over `tpulint_ide::server`: the trait's methods
//! delegate to one module per concern (each answer is built by the shared handlers; what stays
//! here is I/O: obtaining analyses off the message loop, scheduling, files).

mod code_actions;
mod configuration;
mod diagnostics;
mod documents;
mod execute;
mod hover;
mod lifecycle;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use crate::actions;
use crate::backend_action;
use crate::commands::SupportedCommand;
use crate::from_proto;
use crate::index::{Document, DocumentAnalysis, DocumentKey};
use crate::project::Projects;
use crate::session::{
    Analysis, AnalysisError, CancellationToken, Publish, Session, analysis_or_log, file_path,
};
use crate::settings::{ClientSettings, LogLevel};
use tpulint_ide::server::notebook_analysis::{self, NotebookAnalysis};
use tpulint_ide::server::{capabilities, handlers};

/// Names of files whose change reloads the project configuration.
const CONFIG_FILE_NAMES: [&str; 3] = ["pyproject.toml", "tpulint.toml", ".tpulint.toml"];

pub struct Server {
    client: Client,
    session: Arc<Session>,
    /// Taken by `initialize`, which starts the task that sends queued publishes in order.
    publish_queue: std::sync::Mutex<Option<mpsc::UnboundedReceiver<Publish>>>,
    /// Setting errors found before the client could be told (during `initialize`).
    pending_errors: std::sync::Mutex<Vec<String>>,
    /// Tickets of settings updates, taken in arrival order before a handler's first `.await`.
    settings_tickets: AtomicU64,
    /// The ticket of the settings in force: an update answered late (an older
    /// `workspace/configuration` response) must not overwrite a newer one.
    settings_applied: std::sync::Mutex<u64>,
}

impl Server {
    pub fn new(client: Client) -> Server {
        let (sender, receiver) = mpsc::unbounded_channel();
        Server {
            session: Arc::new(Session::new(client.clone(), sender)),
            client,
            publish_queue: std::sync::Mutex::new(Some(receiver)),
            pending_errors: std::sync::Mutex::new(Vec::new()),
            settings_tickets: AtomicU64::new(0),
            settings_applied: std::sync::Mutex::new(0),
        }
    }

    async fn log(&self, level: LogLevel, message: impl std::fmt::Display) {
        if level > self.session.config().client.log_level {
            return;
        }
        let kind = match level {
            LogLevel::Error => MessageType::ERROR,
            LogLevel::Warn => MessageType::WARNING,
            LogLevel::Info => MessageType::INFO,
            LogLevel::Debug => MessageType::LOG,
        };
        self.client.log_message(kind, message).await;
    }

    /// Shows each setting error once (`window/showMessage`); they are never fatal.
    async fn report_setting_errors(&self, errors: Vec<String>) {
        for error in errors {
            if self.session.first_time_shown(&error) {
                self.client
                    .show_message(MessageType::WARNING, format!("tpulint: {error}"))
                    .await;
            }
        }
    }

    /// Queues a check of document `uri` (a text document or a notebook) whose state did not
    /// change under this call (a settings change): see [`Server::mark_stale`].
    fn schedule(&self, uri: &Uri) {
        let start = self.mark_stale(&mut self.session.index(), uri);
        if start {
            self.start_worker(uri);
        }
    }

    /// Marks document `uri` for its worker: one worker per document, which re-runs while changes
    /// keep arriving, so a burst of edits costs one analysis per completed run rather than one
    /// per edit. In push mode the worker publishes; in pull mode a text document is analysed
    /// when pulled, and a notebook's worker runs only for a client that takes refreshes, to ask
    /// it to pull again when a cell it was answered for went stale (an import added in one cell
    /// changes the findings of another; a pull may also overtake the edit it follows).
    ///
    /// A change calls this under the same index lock that applied it. Marking it after the lock
    /// was released let a running worker snapshot the new revision and publish it, then find the
    /// late mark and publish the same revision a second time. Returns whether a worker must be
    /// started ([`Server::start_worker`], once the lock is released).
    fn mark_stale(&self, index: &mut crate::index::Index, uri: &Uri) -> bool {
        let negotiated = self.session.negotiated();
        let Some(entry) = index.get_mut(uri) else {
            return false;
        };
        let worker_needed = !negotiated.pull_diagnostics
            || (negotiated.workspace_diagnostic_refresh
                && matches!(entry.document, Document::Notebook(_)));
        if !worker_needed {
            return false;
        }
        entry.dirty = true;
        if entry.worker_running {
            return false;
        }
        entry.worker_running = true;
        true
    }

    /// Starts the worker of document `uri` that [`Server::mark_stale`] asked for.
    fn start_worker(&self, uri: &Uri) {
        let session = self.session.clone();
        let client = self.client.clone();
        let uri = uri.clone();
        tokio::spawn(async move { documents::push_worker(session, client, uri).await });
    }

    /// A change for something the client never opened (or already closed): logged, not fatal.
    async fn warn_not_open(&self, what: &str, uri: &Uri) {
        self.log(
            LogLevel::Warn,
            format!("didChange for a {what} that is not open: {}", uri.as_str()),
        )
        .await;
    }

    /// The current analysis of document `uri` (a text document or a notebook), shared with
    /// every other request for the same revision; `None` if it is not open.
    async fn document_analysis(
        &self,
        uri: &Uri,
        token: &CancellationToken,
    ) -> Result<Option<DocumentAnalysis>> {
        let outcome = self.session.analysis_for(uri, token).await;
        self.answer(uri, outcome).await
    }

    /// An analysis for a request on document `uri` as the request's answer: `None` for a closed
    /// document, an error for a cancelled or crashed one (the crash is logged).
    async fn answer(
        &self,
        uri: &Uri,
        outcome: std::result::Result<DocumentAnalysis, AnalysisError>,
    ) -> Result<Option<DocumentAnalysis>> {
        match outcome {
            Ok(analysis) => Ok(Some(analysis)),
            Err(AnalysisError::Closed) => Ok(None),
            Err(AnalysisError::Cancelled) => Err(Error::request_cancelled()),
            Err(AnalysisError::Panicked(message)) => {
                self.log(
                    LogLevel::Error,
                    format!("tpulint crashed while checking {}: {message}", uri.as_str()),
                )
                .await;
                let what = match self.session.index().key(uri) {
                    Some(DocumentKey::Notebook(_)) => "notebook",
                    _ => "file",
                };
                Err(internal_error(format!(
                    "tpulint crashed while checking this {what}: {message}"
                )))
            }
        }
    }

    /// What a request on `uri` is answered from: a text document's analysis, or for a notebook
    /// cell its notebook's; `None` when `uri` is neither (a notebook's own URI has no text).
    async fn request_target(&self, uri: &Uri, token: &CancellationToken) -> Result<Option<Target>> {
        self.target(uri, token, false).await
    }

    /// As [`Server::request_target`], for a pull (`pull`: answered from
    /// [`Session::pull_analysis_for`], which may be a quick analysis) or another request.
    async fn target(
        &self,
        uri: &Uri,
        token: &CancellationToken,
        pull: bool,
    ) -> Result<Option<Target>> {
        let Some(key) = self.session.index().key(uri) else {
            return Ok(None);
        };
        let document = key.document_uri();
        let analysis = if pull {
            let outcome = self.session.pull_analysis_for(document, token).await;
            self.answer(document, outcome).await?
        } else {
            self.document_analysis(document, token).await?
        };
        Ok(match (key, analysis) {
            (DocumentKey::Text(_), Some(DocumentAnalysis::Text(analysis))) => {
                Some(Target::Text(analysis))
            }
            (DocumentKey::NotebookCell { .. }, Some(DocumentAnalysis::Notebook(analysis))) => {
                Some(Target::Cell(analysis))
            }
            _ => None,
        })
    }
}

/// The analysis a request on one URI is answered from.
enum Target {
    /// The URI is a text document's.
    Text(Arc<Analysis>),
    /// The URI is a notebook cell's: the analysis is its notebook's.
    Cell(Arc<NotebookAnalysis>),
}

/// An internal error with `message` (a crash caught in a handler or a blocking task).
fn internal_error(message: String) -> Error {
    Error {
        code: ErrorCode::InternalError,
        message: message.into(),
        data: None,
    }
}

/// A shared handler's error as the transport's.
fn rpc_error(error: handlers::RequestError) -> Error {
    Error {
        code: ErrorCode::from(error.code),
        message: error.message.into(),
        data: None,
    }
}

fn is_config_file(uri: &Uri) -> bool {
    file_path(uri)
        .and_then(|path| {
            path.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .is_some_and(|name| CONFIG_FILE_NAMES.contains(&name.as_str()))
}

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        self.on_initialize(params).await
    }

    async fn initialized(&self, params: InitializedParams) {
        self.on_initialized(params).await
    }

    async fn shutdown(&self) -> Result<()> {
        self.on_shutdown().await
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        self.on_did_open(params).await
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        self.on_did_change(params).await
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        self.on_did_save(params).await
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.on_did_close(params).await
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.on_did_change_configuration(params).await
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        self.on_did_change_workspace_folders(params).await
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        self.on_did_change_watched_files(params).await
    }

    async fn diagnostic(
        &self,
        params: DocumentDiagnosticParams,
    ) -> Result<DocumentDiagnosticReportResult> {
        self.on_diagnostic(params).await
    }

    async fn workspace_diagnostic(
        &self,
        params: WorkspaceDiagnosticParams,
    ) -> Result<WorkspaceDiagnosticReportResult> {
        self.on_workspace_diagnostic(params).await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        self.on_code_action(params).await
    }

    async fn code_action_resolve(&self, action: CodeAction) -> Result<CodeAction> {
        self.on_code_action_resolve(action).await
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.on_hover(params).await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        self.on_execute_command(params).await
    }

    async fn notebook_did_open(&self, params: DidOpenNotebookDocumentParams) {
        self.on_notebook_did_open(params).await
    }

    async fn notebook_did_change(&self, params: DidChangeNotebookDocumentParams) {
        self.on_notebook_did_change(params).await
    }

    async fn notebook_did_save(&self, params: DidSaveNotebookDocumentParams) {
        self.on_notebook_did_save(params).await
    }

    async fn notebook_did_close(&self, params: DidCloseNotebookDocumentParams) {
        self.on_notebook_did_close(params).await
    }
}
