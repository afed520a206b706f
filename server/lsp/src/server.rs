//! The `LanguageServer` implementation: capabilities, document sync, diagnostics (push and pull),
//! code actions, hover, commands and settings.

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
use crate::document::TextDocument;
use crate::from_proto;
use crate::notebook::{self, Notebooks};
use crate::project::Projects;
use crate::session::{
    AnalysisError, CancellationToken, DocumentEntry, Publish, Session, analysis_or_log, file_path,
};
use crate::settings::{ClientSettings, LogLevel};
use tpulint_ide::server::{capabilities, handlers};

/// Names of files whose change reloads the project configuration.
const CONFIG_FILE_NAMES: [&str; 3] = ["pyproject.toml", "tpulint.toml", ".tpulint.toml"];

pub struct Server {
    client: Client,
    session: Arc<Session>,
    /// Open notebooks, whose cells are checked as one module (see [`notebook`]).
    notebooks: Arc<Notebooks>,
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
            notebooks: Arc::new(Notebooks::default()),
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

    /// Queues an analysis of `uri` in push mode: one worker per document, which re-runs while
    /// edits keep arriving, so a burst of edits costs one analysis per completed run rather than
    /// one per edit.
    fn schedule(&self, uri: &Uri) {
        if self.session.negotiated().pull_diagnostics {
            return;
        }
        {
            let mut documents = self.session.documents();
            let Some(entry) = documents.get_mut(uri) else {
                return;
            };
            entry.dirty = true;
            if entry.worker_running {
                return;
            }
            entry.worker_running = true;
        }
        let session = self.session.clone();
        let client = self.client.clone();
        let uri = uri.clone();
        tokio::spawn(async move { push_worker(session, client, uri).await });
    }

    fn schedule_notebook(&self, uri: &Uri) {
        notebook::schedule(&self.session, &self.notebooks, &self.client, uri);
    }

    /// A change for something the client never opened (or already closed): logged, not fatal.
    async fn warn_not_open(&self, what: &str, uri: &Uri) {
        self.log(
            LogLevel::Warn,
            format!("didChange for a {what} that is not open: {}", uri.as_str()),
        )
        .await;
    }

    /// The current analysis of the notebook that owns `cell`, or `None` if `cell` is not a
    /// notebook cell.
    async fn notebook_analysis(
        &self,
        cell: &Uri,
        token: &CancellationToken,
    ) -> Result<Option<Arc<notebook::NotebookAnalysis>>> {
        let Some(owner) = self.notebooks.owner(cell) else {
            return Ok(None);
        };
        self.notebook_analysis_of(&owner, token).await
    }

    /// The current analysis of notebook `owner`, or `None` if it is not open.
    async fn notebook_analysis_of(
        &self,
        owner: &Uri,
        token: &CancellationToken,
    ) -> Result<Option<Arc<notebook::NotebookAnalysis>>> {
        match notebook::analysis_for(&self.session, &self.notebooks, owner, token).await {
            Ok(analysis) => Ok(Some(analysis)),
            Err(AnalysisError::Closed) => Ok(None),
            Err(AnalysisError::Cancelled) => Err(Error::request_cancelled()),
            Err(AnalysisError::Panicked(message)) => {
                self.log(
                    LogLevel::Error,
                    format!(
                        "tpulint crashed while checking {}: {message}",
                        owner.as_str()
                    ),
                )
                .await;
                Err(Error {
                    code: ErrorCode::InternalError,
                    message: format!("tpulint crashed while checking this notebook: {message}")
                        .into(),
                    data: None,
                })
            }
        }
    }

    async fn notebook_code_actions(
        &self,
        analysis: Arc<notebook::NotebookAnalysis>,
        cell: Uri,
        range: Range,
        only: Option<Vec<CodeActionKind>>,
    ) -> Result<Option<CodeActionResponse>> {
        let encoding = self.session.encoding();
        let Some(view) = analysis.cell(&cell).and_then(|cell| cell.view.clone()) else {
            return Ok(Some(Vec::new()));
        };
        let set_backend = backend_action::for_range(
            &self.session,
            &cell,
            &view,
            analysis.settings.as_ref(),
            from_proto::text_range(&view.text, &view.line_index, range, encoding),
            only.as_deref(),
        );
        // "Fix all" runs the fix loop over the whole notebook: keep it off the message loop.
        let mut actions = tokio::task::spawn_blocking(move || {
            handlers::cell_code_actions(&analysis, &cell, range, only.as_deref(), encoding)
        })
        .await
        .map_err(|error| Error {
            code: ErrorCode::InternalError,
            message: format!("code actions crashed: {error}").into(),
            data: None,
        })?;
        actions.extend(set_backend);
        Ok(Some(actions))
    }

    /// After a settings change: re-check everything (push) or ask the client to pull again.
    async fn refresh_all(&self) {
        let negotiated = self.session.negotiated();
        if negotiated.pull_diagnostics {
            if negotiated.workspace_diagnostic_refresh {
                // A client that refuses the refresh still pulls on its next edit.
                let _ = self.client.workspace_diagnostic_refresh().await;
            }
        } else {
            for uri in self.session.open_uris() {
                self.schedule(&uri);
            }
            for uri in self.notebooks.uris() {
                self.schedule_notebook(&uri);
            }
        }
    }

    /// Pulls the `tpulint` section with `workspace/configuration` when the client supports it.
    async fn pull_client_settings(&self) -> Option<Value> {
        if !self.session.negotiated().configuration_requests {
            return None;
        }
        let items = vec![ConfigurationItem {
            scope_uri: None,
            section: Some("tpulint".to_string()),
        }];
        match self.client.configuration(items).await {
            // A client with nothing to say answers `null`: keep the settings we have.
            Ok(mut values) if !values.is_empty() && !values[0].is_null() => {
                Some(values.swap_remove(0))
            }
            Ok(_) => None,
            Err(error) => {
                self.log(
                    LogLevel::Warn,
                    format!("workspace/configuration failed: {error}"),
                )
                .await;
                None
            }
        }
    }

    /// A ticket for a settings update; take it before the handler's first `.await`, so that
    /// tickets follow the order in which the client sent its notifications.
    fn settings_ticket(&self) -> u64 {
        self.settings_tickets.fetch_add(1, AtomicOrdering::Relaxed) + 1
    }

    /// Applies editor settings unless settings of a later ticket are already in force (their
    /// `workspace/configuration` response came first). Returns whether they were applied.
    async fn apply_client_settings(&self, value: &Value, ticket: u64) -> bool {
        let (client_settings, errors) = ClientSettings::from_json(value);
        {
            let mut applied = self
                .settings_applied
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if ticket < *applied {
                return false;
            }
            *applied = ticket;
            self.session.update_config(|config| {
                config.projects = Arc::new(Projects::new(&config.roots, &client_settings));
                config.client = client_settings;
            });
        }
        self.report_setting_errors(errors).await;
        true
    }

    /// Forgets every configuration file found so far; they are read again on the next check.
    fn reload_projects(&self) {
        self.session.update_config(|config| {
            config.projects = Arc::new(Projects::new(&config.roots, &config.client));
        });
    }

    async fn register_config_watchers(&self) {
        if !self.session.negotiated().watched_files_registration {
            return;
        }
        let watchers = CONFIG_FILE_NAMES
            .iter()
            .map(|name| format!("**/{name}"))
            // Runtime findings of `tpulint trace` (see `runtime`).
            .chain(std::iter::once(format!("**/{}", tpulint_trace::TRACE_PATH)))
            .map(|glob| FileSystemWatcher {
                glob_pattern: GlobPattern::String(glob),
                kind: None,
            })
            .collect();
        let registration = Registration {
            id: "tpulint-config-watcher".to_string(),
            method: "workspace/didChangeWatchedFiles".to_string(),
            register_options: serde_json::to_value(DidChangeWatchedFilesRegistrationOptions {
                watchers,
            })
            .ok(),
        };
        if let Err(error) = self.client.register_capability(vec![registration]).await {
            self.log(
                LogLevel::Warn,
                format!("could not watch configuration files: {error}"),
            )
            .await;
        }
    }

    async fn analysis_or_error(
        &self,
        uri: &Uri,
        token: &CancellationToken,
    ) -> Result<Option<Arc<crate::session::Analysis>>> {
        match self.session.analysis_for(uri, token).await {
            Ok(analysis) => Ok(Some(analysis)),
            Err(AnalysisError::Closed) => Ok(None),
            Err(AnalysisError::Cancelled) => Err(Error::request_cancelled()),
            Err(AnalysisError::Panicked(message)) => {
                self.log(
                    LogLevel::Error,
                    format!("tpulint crashed while checking {}: {message}", uri.as_str()),
                )
                .await;
                Err(Error {
                    code: ErrorCode::InternalError,
                    message: format!("tpulint crashed while checking this file: {message}").into(),
                    data: None,
                })
            }
        }
    }

    async fn apply_autofix(&self, arguments: Vec<Value>) -> Result<Option<Value>> {
        let uri = handlers::autofix_target(&arguments).map_err(rpc_error)?;
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        let encoding = self.session.encoding();
        // On a notebook cell the command fixes the whole notebook.
        let fix: Box<dyn FnOnce() -> Option<WorkspaceEdit> + Send> =
            if let Some(analysis) = self.notebook_analysis(&uri, &token).await? {
                Box::new(move || notebook::fix_all_edit(&analysis, None, encoding))
            } else {
                let Some(analysis) = self.analysis_or_error(&uri, &token).await? else {
                    return Err(rpc_error(handlers::not_open(&uri)));
                };
                let uri_for_fix = uri.clone();
                Box::new(move || handlers::text_fix_all(&uri_for_fix, &analysis, encoding))
            };
        let edit = tokio::task::spawn_blocking(fix)
            .await
            .map_err(|error| Error {
                code: ErrorCode::InternalError,
                message: format!("fixing crashed: {error}").into(),
                data: None,
            })?;
        guard.disarm();
        if let Some(edit) = edit {
            let applied = self.client.apply_edit(edit).await.map_err(|error| Error {
                code: ErrorCode::InternalError,
                message: format!("workspace/applyEdit failed: {error}").into(),
                data: None,
            })?;
            if !applied.applied {
                self.log(
                    LogLevel::Warn,
                    handlers::edit_not_applied(applied.failure_reason.as_deref()),
                )
                .await;
            }
        }
        Ok(None)
    }

    /// Runs the environment check (seconds: it imports torch in the chosen interpreter) off the
    /// message loop. Arguments: `[{"interpreter": "/path/to/python"}]`, or none for discovery
    /// from the first workspace folder.
    async fn check_environment(&self, arguments: Vec<Value>) -> Result<Option<Value>> {
        let interpreter = arguments
            .first()
            .and_then(|argument| argument.get("interpreter"))
            .and_then(Value::as_str)
            .filter(|path| !path.is_empty())
            .map(PathBuf::from);
        let project_dir = self
            .session
            .config()
            .roots
            .first()
            .cloned()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let report = tokio::task::spawn_blocking(move || {
            let mut options = tpulint_doctor::DoctorOptions::from_process_env(project_dir);
            options.python = interpreter;
            environment_report(&tpulint_doctor::run(&options))
        })
        .await
        .map_err(|error| Error {
            code: ErrorCode::InternalError,
            message: format!("the environment check crashed: {error}").into(),
            data: None,
        })?;
        Ok(Some(report))
    }

    fn debug_information(&self) -> String {
        let config = self.session.config();
        let negotiated = self.session.negotiated();
        let documents = self.session.documents();
        let mut out = String::new();
        out.push_str(&format!("tpulint server {}\n", env!("CARGO_PKG_VERSION")));
        out.push_str(&format!("position encoding: {:?}\n", negotiated.encoding));
        out.push_str(&format!(
            "diagnostics: {}\n",
            if negotiated.pull_diagnostics {
                "pull"
            } else {
                "push"
            }
        ));
        out.push_str(&format!("settings generation: {}\n", config.generation));
        out.push_str(&format!("editor settings: {:?}\n", config.client));
        for root in &config.roots {
            out.push_str(&format!("workspace folder: {}\n", root.display()));
        }
        out.push_str(&self.notebooks.describe());
        out.push_str(&format!("open documents: {}\n", documents.len()));
        let mut uris: Vec<_> = documents.iter().collect();
        uris.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        for (uri, entry) in uris {
            let analysis = entry.analysis.as_ref();
            out.push_str(&format!(
                "  {} (version {}, {} diagnostics, configuration: {})\n",
                uri.as_str(),
                entry.document.version(),
                analysis.map_or(0, |analysis| analysis.diagnostics.len()),
                analysis
                    .and_then(|analysis| analysis.config_file.as_ref())
                    .map_or("defaults".to_string(), |path| path.display().to_string())
            ));
        }
        out
    }
}

/// The answer to `tpulint.checkEnvironment`: a verdict, a one-line summary, the Markdown report,
/// the suggested shell commands, and the full JSON report.
fn environment_report(report: &tpulint_doctor::Report) -> Value {
    use tpulint_doctor::{OutputFormat, render};
    // The doctor's JSON spelling (`ready` / `degraded` / `not_ready`), which the extension reads.
    let verdict = serde_json::to_value(report.verdict).unwrap_or(Value::Null);
    // Each fix names its finding and the finding's page in docs/doctor.md.
    let fixes: Vec<Value> = report
        .findings
        .iter()
        .flat_map(|finding| finding.fixes.iter().map(move |fix| (finding, fix)))
        .filter(|(_, fix)| !fix.commands.is_empty())
        .map(|(finding, fix)| {
            json!({
                "title": fix.description,
                "command": fix.commands.join(" && "),
                "finding": finding.id,
                "url": finding.url,
            })
        })
        .collect();
    json!({
        "verdict": verdict,
        "summary": report.summary_line(),
        "markdown": render(report, OutputFormat::Markdown),
        "fixes": fixes,
        "report": serde_json::to_value(report).unwrap_or(Value::Null),
    })
}

/// Analyses `uri` until it stops changing, publishing each result that is still current.
async fn push_worker(session: Arc<Session>, client: Client, uri: Uri) {
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

/// Sends queued publishes one at a time, in the order they were queued.
async fn run_publisher(client: Client, mut queue: mpsc::UnboundedReceiver<Publish>) {
    while let Some(publish) = queue.recv().await {
        client
            .publish_diagnostics(publish.uri, publish.diagnostics, publish.version)
            .await;
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
        let negotiated = capabilities::negotiate(
            &serde_json::to_value(&params.capabilities).unwrap_or_default(),
        );
        self.session.set_negotiated(negotiated.clone());
        if let Some(queue) = self
            .publish_queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
        {
            tokio::spawn(run_publisher(self.client.clone(), queue));
        }

        #[allow(deprecated)] // `root_uri` is the fallback for clients without workspace folders.
        let mut roots: Vec<PathBuf> = params
            .workspace_folders
            .iter()
            .flatten()
            .filter_map(|folder| file_path(&folder.uri))
            .collect();
        #[allow(deprecated)]
        if roots.is_empty()
            && let Some(root) = params.root_uri.as_ref().and_then(file_path)
        {
            roots.push(root);
        }
        let (client_settings, errors) = params
            .initialization_options
            .as_ref()
            .map(ClientSettings::from_json)
            .unwrap_or_default();
        self.session.update_config(|config| {
            config.projects = Arc::new(Projects::new(&roots, &client_settings));
            config.roots = roots;
            config.client = client_settings;
        });
        self.pending_errors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend(errors);

        let result = capabilities::initialize_result(
            &negotiated,
            &capabilities::commands(true),
            "tpulint",
            env!("CARGO_PKG_VERSION"),
        );
        serde_json::from_str(&result).map_err(|error| Error {
            code: ErrorCode::InternalError,
            message: format!("the server's capabilities do not parse: {error}").into(),
            data: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let ticket = self.settings_ticket();
        let errors = std::mem::take(
            &mut *self
                .pending_errors
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        self.report_setting_errors(errors).await;
        self.register_config_watchers().await;
        if let Some(value) = self.pull_client_settings().await
            && self.apply_client_settings(&value, ticket).await
        {
            self.refresh_all().await;
        }
        self.log(LogLevel::Info, "tpulint server ready").await;
    }

    async fn shutdown(&self) -> Result<()> {
        self.session.set_shutting_down();
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
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

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
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

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        // Clients without file watchers still tell us when an open configuration file is saved.
        if is_config_file(&params.text_document.uri) {
            self.reload_projects();
            self.refresh_all().await;
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
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

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let ticket = self.settings_ticket();
        let value = match self.pull_client_settings().await {
            Some(value) => value,
            None => params.settings,
        };
        if self.apply_client_settings(&value, ticket).await {
            self.refresh_all().await;
        }
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        let removed: Vec<PathBuf> = params
            .event
            .removed
            .iter()
            .filter_map(|folder| file_path(&folder.uri))
            .collect();
        let added: Vec<PathBuf> = params
            .event
            .added
            .iter()
            .filter_map(|folder| file_path(&folder.uri))
            .collect();
        self.session.update_config(|config| {
            config.roots.retain(|root| !removed.contains(root));
            config.roots.extend(added);
            config.projects = Arc::new(Projects::new(&config.roots, &config.client));
        });
        self.refresh_all().await;
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        if params.changes.iter().any(|change| {
            file_path(&change.uri).is_some_and(|path| crate::runtime::is_trace_file(&path))
        }) {
            crate::runtime::invalidate();
            self.refresh_all().await;
        }
        if params
            .changes
            .iter()
            .any(|change| is_config_file(&change.uri))
        {
            self.reload_projects();
            self.refresh_all().await;
        }
    }

    async fn diagnostic(
        &self,
        params: DocumentDiagnosticParams,
    ) -> Result<DocumentDiagnosticReportResult> {
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        let uri = params.text_document.uri;
        let previous = params.previous_result_id.as_deref();
        let encoding = self.session.encoding();
        if let Some(analysis) = self.notebook_analysis(&uri, &token).await? {
            guard.disarm();
            let result_id = analysis.result_id();
            self.notebooks.note_served(&uri, &result_id);
            return Ok(handlers::document_report(previous, result_id, || {
                analysis.cell_diagnostics(&uri, encoding)
            }));
        }
        let analysis = self.analysis_or_error(&uri, &token).await?;
        guard.disarm();
        Ok(match analysis {
            None => handlers::empty_report(),
            Some(analysis) => {
                handlers::document_report(previous, crate::runtime::result_id(&analysis), || {
                    crate::runtime::lsp_diagnostics(&analysis, &uri, encoding)
                })
            }
        })
    }

    async fn workspace_diagnostic(
        &self,
        params: WorkspaceDiagnosticParams,
    ) -> Result<WorkspaceDiagnosticReportResult> {
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        let previous: std::collections::HashMap<Uri, String> = params
            .previous_result_ids
            .into_iter()
            .map(|previous| (previous.uri, previous.value))
            .collect();
        let encoding = self.session.encoding();
        let mut items = Vec::new();
        for uri in self.session.open_uris() {
            if token.is_cancelled() {
                return Err(Error::request_cancelled());
            }
            let Some(analysis) = self.analysis_or_error(&uri, &token).await? else {
                continue;
            };
            items.push(handlers::workspace_item(
                &uri,
                analysis.version,
                previous.get(&uri).map(String::as_str),
                crate::runtime::result_id(&analysis),
                || crate::runtime::lsp_diagnostics(&analysis, &uri, encoding),
            ));
        }
        // Notebooks: one report per cell, each with its own URI and version; the result id is
        // the notebook's (an edit in one cell can change another cell's findings).
        for notebook_uri in self.notebooks.uris() {
            if token.is_cancelled() {
                return Err(Error::request_cancelled());
            }
            let Some(analysis) = self.notebook_analysis_of(&notebook_uri, &token).await? else {
                continue;
            };
            let result_id = analysis.result_id();
            for cell in &analysis.cells {
                self.notebooks.note_served(&cell.uri, &result_id);
                items.push(handlers::workspace_item(
                    &cell.uri,
                    cell.cell_version,
                    previous.get(&cell.uri).map(String::as_str),
                    result_id.clone(),
                    || analysis.cell_diagnostics(&cell.uri, encoding),
                ));
            }
        }
        guard.disarm();
        Ok(WorkspaceDiagnosticReportResult::Report(
            WorkspaceDiagnosticReport { items },
        ))
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        let uri = params.text_document.uri;
        if let Some(analysis) = self.notebook_analysis(&uri, &token).await? {
            guard.disarm();
            return self
                .notebook_code_actions(analysis, uri, params.range, params.context.only)
                .await;
        }
        let Some(analysis) = self.analysis_or_error(&uri, &token).await? else {
            return Ok(None);
        };
        guard.disarm();
        let negotiated = self.session.negotiated();
        let only = params.context.only.as_deref();
        let resolve = negotiated.code_action_resolve;
        let encoding = negotiated.encoding;
        let set_backend = backend_action::for_range(
            &self.session,
            &uri,
            &analysis,
            analysis.settings.as_ref(),
            from_proto::text_range(&analysis.text, &analysis.line_index, params.range, encoding),
            only,
        );
        // Building a non-lazy "Fix all" runs the fix loop: keep it off the message loop.
        let mut actions = tokio::task::spawn_blocking({
            let only = only.map(<[CodeActionKind]>::to_vec);
            let range = params.range;
            move || {
                handlers::text_code_actions(
                    &uri,
                    &analysis,
                    range,
                    only.as_deref(),
                    encoding,
                    resolve,
                )
            }
        })
        .await
        .map_err(|error| Error {
            code: ErrorCode::InternalError,
            message: format!("code actions crashed: {error}").into(),
            data: None,
        })?;
        actions.extend(set_backend);
        Ok(Some(actions))
    }

    async fn code_action_resolve(&self, mut action: CodeAction) -> Result<CodeAction> {
        let Some(data) = handlers::resolve_data(&action) else {
            return Ok(action);
        };
        let token = CancellationToken::default();
        let guard = token.drop_guard();
        let Some(analysis) = self.analysis_or_error(&data.uri, &token).await? else {
            return Err(Error::invalid_params("the document is no longer open"));
        };
        let encoding = self.session.encoding();
        // Building the edit runs the fix loop: keep it off the message loop.
        let edit = tokio::task::spawn_blocking(move || {
            handlers::resolve_fix_all(&data, &analysis, encoding)
        })
        .await
        .map_err(|error| Error {
            code: ErrorCode::InternalError,
            message: format!("fixing crashed: {error}").into(),
            data: None,
        })?;
        guard.disarm();
        action.edit = Some(edit.map_err(rpc_error)?);
        Ok(action)
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let token = CancellationToken::default();
        let _guard = token.drop_guard();
        let position = params.text_document_position_params;
        let uri = &position.text_document.uri;
        let encoding = self.session.encoding();
        if let Some(analysis) = self.notebook_analysis(uri, &token).await? {
            return Ok(handlers::cell_hover(
                &analysis,
                uri,
                position.position,
                encoding,
                &actions::builtin_docs,
            ));
        }
        let Some(analysis) = self.analysis_or_error(uri, &token).await? else {
            return Ok(None);
        };
        let (offset, hover) = handlers::text_hover(
            &analysis,
            position.position,
            encoding,
            &actions::builtin_docs,
        );
        Ok(crate::runtime::with_runtime_hover(
            hover, &analysis, uri, offset, encoding,
        ))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let Some(command) = SupportedCommand::from_identifier(&params.command) else {
            return Err(rpc_error(handlers::unknown_command(
                &params.command,
                &capabilities::commands(true),
            )));
        };
        match command {
            SupportedCommand::ApplyAutofix => self.apply_autofix(params.arguments).await,
            SupportedCommand::CheckEnvironment => self.check_environment(params.arguments).await,
            SupportedCommand::PrintDebugInformation => {
                Ok(Some(Value::String(self.debug_information())))
            }
        }
    }

    async fn notebook_did_open(&self, params: DidOpenNotebookDocumentParams) {
        let uri = self.notebooks.lock().open(params);
        self.schedule_notebook(&uri);
    }

    async fn notebook_did_change(&self, params: DidChangeNotebookDocumentParams) {
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

    async fn notebook_did_save(&self, _: DidSaveNotebookDocumentParams) {
        // Nothing to do: notebooks are checked as they are edited, and saving one changes no
        // configuration.
    }

    async fn notebook_did_close(&self, params: DidCloseNotebookDocumentParams) {
        let cells = self.notebooks.lock().close(params);
        notebook::clear_cells(&self.session, cells);
    }
}
