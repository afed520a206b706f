//! A complete language server for single-threaded hosts without files (the WebAssembly build in
//! VS Code for the web): JSON-RPC messages in, JSON-RPC messages out, no I/O.
//!
//! It keeps the state the native server keeps (text documents, notebooks, settings, negotiated
//! capabilities) and answers every request with the same [`handlers`] after analysing inline, so
//! the two servers answer alike (a parity test replays one session against both). What it leaves
//! out needs files or a process: project configuration files (documents are checked with the
//! editor's settings over the defaults), runtime traces, the environment check, and the action
//! that writes the project's backend to a configuration file.
//!
//! Scheduling: [`Session::handle`] applies a message and answers a request at once; documents
//! changed in push mode are checked and published by [`Session::idle`], which the host calls
//! when no message is waiting, so a burst of edits costs one check, as the native server's
//! push worker coalesces them.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use ls_types::{
    CodeActionKind, DidChangeNotebookDocumentParams, DidChangeTextDocumentParams,
    DidCloseNotebookDocumentParams, DidOpenNotebookDocumentParams, DidOpenTextDocumentParams,
    Position, Range, Uri, WorkspaceEdit,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::analyze::{AnalysisError, CheckSettings, analyze};
use super::capabilities::{self, APPLY_AUTOFIX, Negotiated, PRINT_DEBUG_INFORMATION};
use super::handlers::{self, RequestError};
use super::notebook_analysis::{self, NotebookAnalysis};
use super::notebooks::NotebookDocuments;
use super::settings::{ClientSettings, LogLevel};
use crate::analysis::Analysis;
use crate::document::{PreviousCheck, TextDocument};

/// LSP's `MessageType`.
const ERROR: u8 = 1;
const WARNING: u8 = 2;
const INFO: u8 = 3;
const LOG: u8 = 4;

struct TextEntry {
    document: TextDocument,
    language_id: String,
    analysis: Option<Arc<Analysis>>,
}

/// A request the server sent the client, awaiting its response.
enum Pending {
    /// `workspace/applyEdit` of `tpulint.applyAutofix`: the command is answered once the client
    /// answered.
    ApplyEdit { command_id: Value },
    /// `workspace/configuration`: the `tpulint` section, applied when it arrives.
    Configuration,
    /// A request whose answer changes nothing (a refresh).
    Ignored,
}

pub struct Session {
    server_name: String,
    version: String,
    /// Each rule's documentation (Markdown) by code, for hovers: the WebAssembly module carries
    /// none of its own.
    docs: HashMap<String, String>,
    negotiated: Negotiated,
    initialized: bool,
    shutting_down: bool,
    client: ClientSettings,
    /// Bumped on every settings change (as the native server's), so results computed under
    /// older settings are not reused and pull result ids change.
    generation: u64,
    documents: HashMap<Uri, TextEntry>,
    notebooks: NotebookDocuments,
    /// Text documents and notebooks changed since their last publish (push mode).
    dirty: BTreeSet<Uri>,
    /// Setting errors found before the client could be told (during `initialize`).
    pending_errors: Vec<String>,
    shown: HashSet<String>,
    next_request_id: i64,
    pending: HashMap<i64, Pending>,
    outgoing: Vec<Value>,
}

/// `textDocument/codeAction` as far as it is read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CodeActionRequest {
    text_document: DocumentId,
    range: Range,
    #[serde(default)]
    context: CodeActionRequestContext,
}

#[derive(Deserialize, Default)]
struct CodeActionRequestContext {
    #[serde(default)]
    only: Option<Vec<CodeActionKind>>,
}

#[derive(Deserialize)]
struct DocumentId {
    uri: Uri,
}

/// `textDocument/hover` (and any request at a position).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PositionRequest {
    text_document: DocumentId,
    position: Position,
}

/// `textDocument/diagnostic`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiagnosticRequest {
    text_document: DocumentId,
    #[serde(default)]
    previous_result_id: Option<String>,
}

/// `workspace/diagnostic`'s previous result ids.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkspaceDiagnosticRequest {
    #[serde(default)]
    previous_result_ids: Vec<PreviousResultId>,
}

#[derive(Deserialize)]
struct PreviousResultId {
    uri: Uri,
    value: String,
}

fn parse_params<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, RequestError> {
    serde_json::from_value(value)
        .map_err(|error| RequestError::invalid_params(format!("invalid params: {error}")))
}

fn to_json(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn is_python(uri: &Uri, language_id: &str) -> bool {
    let path = uri.path().as_str();
    language_id == "python" || path.ends_with(".py") || path.ends_with(".pyi")
}

impl Session {
    /// A server that names itself `server_name` in `initialize` and shows `docs` (Markdown by
    /// rule code) in hovers.
    pub fn new(server_name: &str, version: &str, docs: HashMap<String, String>) -> Session {
        Session {
            server_name: server_name.to_string(),
            version: version.to_string(),
            docs,
            negotiated: Negotiated::default(),
            initialized: false,
            shutting_down: false,
            client: ClientSettings::default(),
            generation: 0,
            documents: HashMap::new(),
            notebooks: NotebookDocuments::default(),
            dirty: BTreeSet::new(),
            pending_errors: Vec::new(),
            shown: HashSet::new(),
            next_request_id: 0,
            pending: HashMap::new(),
            outgoing: Vec::new(),
        }
    }

    /// Whether `exit` was received; the host stops calling.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// The messages to send, in order.
    pub fn take_outgoing(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.outgoing)
    }

    /// Whether [`Session::idle`] has work to do.
    pub fn has_pending_work(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Applies one message from the client (a request, a notification or a response).
    pub fn handle(&mut self, message: Value) {
        let Value::Object(mut message) = message else {
            self.respond_error(
                Value::Null,
                RequestError {
                    code: -32600,
                    message: "Invalid request".to_string(),
                },
            );
            return;
        };
        let id = message.remove("id");
        let params = message.remove("params").unwrap_or(Value::Null);
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        match (method, id) {
            (Some(method), Some(id)) => self.request(&method, id, params),
            (Some(method), None) => self.notification(&method, params),
            (None, Some(id)) => {
                let result = message.remove("result");
                self.response(id, result);
            }
            (None, None) => {}
        }
    }

    /// Checks and publishes what changed since the last call (push mode), and tells a pull
    /// client whose notebook cells went stale to pull again.
    pub fn idle(&mut self) {
        let dirty = std::mem::take(&mut self.dirty);
        for uri in dirty {
            if self.notebooks.notebooks.contains_key(&uri) {
                self.publish_notebook(&uri);
            } else if let Some(analysis) = self.text_analysis(&uri) {
                let diagnostics = analysis.lsp_diagnostics(&uri, self.negotiated.encoding);
                self.publish(&uri, to_json(diagnostics), Some(analysis.version));
            }
        }
    }

    // ---- outgoing --------------------------------------------------------------------------

    fn respond(&mut self, id: Value, result: Value) {
        self.outgoing
            .push(json!({ "jsonrpc": "2.0", "result": result, "id": id }));
    }

    fn respond_error(&mut self, id: Value, error: RequestError) {
        self.outgoing.push(json!({
            "jsonrpc": "2.0",
            "error": { "code": error.code, "message": error.message },
            "id": id,
        }));
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.outgoing
            .push(json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    fn send_request(&mut self, method: &str, params: Value, pending: Pending) {
        let id = self.next_request_id;
        self.next_request_id += 1;
        self.pending.insert(id, pending);
        self.outgoing.push(
            json!({ "jsonrpc": "2.0", "method": method, "params": params, "id": id }),
        );
    }

    fn log(&mut self, level: LogLevel, message: String) {
        if level > self.client.log_level {
            return;
        }
        let kind = match level {
            LogLevel::Error => ERROR,
            LogLevel::Warn => WARNING,
            LogLevel::Info => INFO,
            LogLevel::Debug => LOG,
        };
        self.notify(
            "window/logMessage",
            json!({ "type": kind, "message": message }),
        );
    }

    fn publish(&mut self, uri: &Uri, diagnostics: Value, version: Option<i32>) {
        let mut params = json!({ "uri": uri.as_str(), "diagnostics": diagnostics });
        if let Some(version) = version {
            params["version"] = json!(version);
        }
        self.notify("textDocument/publishDiagnostics", params);
    }

    fn report_setting_errors(&mut self, errors: Vec<String>) {
        for error in errors {
            if self.shown.insert(error.clone()) {
                self.notify(
                    "window/showMessage",
                    json!({ "type": WARNING, "message": format!("tpulint: {error}") }),
                );
            }
        }
    }

    // ---- requests --------------------------------------------------------------------------

    fn request(&mut self, method: &str, id: Value, params: Value) {
        if !self.initialized && method != "initialize" {
            self.respond_error(
                id,
                RequestError {
                    code: -32002,
                    message: "Server not initialized".to_string(),
                },
            );
            return;
        }
        let answer = match method {
            "initialize" => Ok(self.initialize(params)),
            "shutdown" => Ok(Value::Null),
            "textDocument/diagnostic" => parse_params(params).map(|request| self.diagnostic(request)),
            "workspace/diagnostic" => {
                parse_params(params).map(|request| self.workspace_diagnostic(request))
            }
            "textDocument/codeAction" => parse_params(params).map(|request| self.code_action(request)),
            "codeAction/resolve" => self.code_action_resolve(params),
            "textDocument/hover" => parse_params(params).map(|request| self.hover(request)),
            "workspace/executeCommand" => match self.execute_command(id.clone(), params) {
                // Answered when the client answers `workspace/applyEdit`.
                Ok(None) => return,
                Ok(Some(result)) => Ok(result),
                Err(error) => Err(error),
            },
            _ => Err(RequestError {
                code: RequestError::METHOD_NOT_FOUND,
                message: "Method not found".to_string(),
            }),
        };
        match answer {
            Ok(result) => self.respond(id, result),
            Err(error) => self.respond_error(id, error),
        }
    }

    fn initialize(&mut self, params: Value) -> Value {
        self.initialized = true;
        self.negotiated =
            capabilities::negotiate(params.get("capabilities").unwrap_or(&Value::Null));
        let (client, errors) = params
            .get("initializationOptions")
            .map(ClientSettings::from_json)
            .unwrap_or_default();
        self.set_client_settings(client);
        self.pending_errors = errors;
        capabilities::initialize_result(
            &self.negotiated,
            &capabilities::commands(false),
            &self.server_name,
            &self.version,
        )
    }

    fn set_client_settings(&mut self, client: ClientSettings) {
        self.client = client;
        self.generation += 1;
    }

    fn diagnostic(&mut self, request: DiagnosticRequest) -> Value {
        let uri = request.text_document.uri;
        let previous = request.previous_result_id.as_deref();
        let encoding = self.negotiated.encoding;
        if let Some(owner) = self.notebooks.owner(&uri) {
            if let Some(analysis) = self.notebook_analysis(&owner) {
                let result_id = analysis.result_id();
                self.notebooks.note_served(&uri, &result_id);
                return to_json(handlers::document_report(previous, result_id, || {
                    analysis.cell_diagnostics(&uri, encoding)
                }));
            }
        }
        to_json(match self.text_analysis(&uri) {
            None => handlers::empty_report(),
            Some(analysis) => handlers::document_report(
                previous,
                handlers::text_result_id(&analysis, 0),
                || analysis.lsp_diagnostics(&uri, encoding),
            ),
        })
    }

    fn workspace_diagnostic(&mut self, request: WorkspaceDiagnosticRequest) -> Value {
        let previous: HashMap<Uri, String> = request
            .previous_result_ids
            .into_iter()
            .map(|previous| (previous.uri, previous.value))
            .collect();
        let encoding = self.negotiated.encoding;
        let mut items = Vec::new();
        let mut uris: Vec<Uri> = self.documents.keys().cloned().collect();
        uris.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        for uri in uris {
            let Some(analysis) = self.text_analysis(&uri) else {
                continue;
            };
            items.push(handlers::workspace_item(
                &uri,
                analysis.version,
                previous.get(&uri).map(String::as_str),
                handlers::text_result_id(&analysis, 0),
                || analysis.lsp_diagnostics(&uri, encoding),
            ));
        }
        for notebook in self.notebooks.uris() {
            let Some(analysis) = self.notebook_analysis(&notebook) else {
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
        json!({ "items": to_json(items) })
    }

    fn code_action(&mut self, request: CodeActionRequest) -> Value {
        let uri = request.text_document.uri;
        let only = request.context.only.as_deref();
        let encoding = self.negotiated.encoding;
        if let Some(owner) = self.notebooks.owner(&uri) {
            if let Some(analysis) = self.notebook_analysis(&owner) {
                return to_json(handlers::cell_code_actions(
                    &analysis,
                    &uri,
                    request.range,
                    only,
                    encoding,
                ));
            }
        }
        match self.text_analysis(&uri) {
            Some(analysis) => to_json(handlers::text_code_actions(
                &uri,
                &analysis,
                request.range,
                only,
                encoding,
                self.negotiated.code_action_resolve,
            )),
            None => Value::Null,
        }
    }

    fn code_action_resolve(&mut self, mut action: Value) -> Result<Value, RequestError> {
        let Some(data) = handlers::resolve_data_of(&action) else {
            return Ok(action);
        };
        let Some(analysis) = self.text_analysis(&data.uri) else {
            return Err(RequestError::invalid_params(
                "the document is no longer open",
            ));
        };
        let edit = handlers::resolve_fix_all(&data, &analysis, self.negotiated.encoding)?;
        action["edit"] = to_json(edit);
        Ok(action)
    }

    fn hover(&mut self, request: PositionRequest) -> Value {
        let uri = request.text_document.uri;
        let encoding = self.negotiated.encoding;
        let docs = std::mem::take(&mut self.docs);
        let lookup = |code: &str| docs.get(code).cloned().unwrap_or_default();
        let hover = if let Some(owner) = self.notebooks.owner(&uri) {
            self.notebook_analysis(&owner).and_then(|analysis| {
                handlers::cell_hover(&analysis, &uri, request.position, encoding, &lookup)
            })
        } else {
            self.text_analysis(&uri).and_then(|analysis| {
                handlers::text_hover(&analysis, request.position, encoding, &lookup).1
            })
        };
        self.docs = docs;
        to_json(hover)
    }

    /// `Ok(None)`: answered later (after the client applied the edit).
    fn execute_command(&mut self, id: Value, params: Value) -> Result<Option<Value>, RequestError> {
        let command = params.get("command").and_then(Value::as_str).unwrap_or("");
        match command {
            APPLY_AUTOFIX => {
                let arguments = match params.get("arguments") {
                    Some(Value::Array(arguments)) => arguments.clone(),
                    _ => Vec::new(),
                };
                let uri = handlers::autofix_target(&arguments)?;
                let encoding = self.negotiated.encoding;
                let edit: Option<WorkspaceEdit> = if let Some(owner) = self.notebooks.owner(&uri)
                {
                    let analysis = self.notebook_analysis(&owner);
                    analysis.and_then(|analysis| {
                        notebook_analysis::fix_all_edit(&analysis, None, encoding)
                    })
                } else {
                    let analysis = self
                        .text_analysis(&uri)
                        .ok_or_else(|| handlers::not_open(&uri))?;
                    handlers::text_fix_all(&uri, &analysis, encoding)
                };
                match edit {
                    Some(edit) => {
                        self.send_request(
                            "workspace/applyEdit",
                            json!({ "edit": to_json(edit) }),
                            Pending::ApplyEdit { command_id: id },
                        );
                        Ok(None)
                    }
                    None => Ok(Some(Value::Null)),
                }
            }
            PRINT_DEBUG_INFORMATION => Ok(Some(Value::String(self.debug_information()))),
            other => Err(handlers::unknown_command(
                other,
                &capabilities::commands(false),
            )),
        }
    }

    fn response(&mut self, id: Value, result: Option<Value>) {
        let Some(pending) = id.as_i64().and_then(|id| self.pending.remove(&id)) else {
            return;
        };
        match pending {
            Pending::ApplyEdit { command_id } => {
                let result = result.unwrap_or(Value::Null);
                if result.get("applied").and_then(Value::as_bool) == Some(false) {
                    let reason = result.get("failureReason").and_then(Value::as_str);
                    let message = handlers::edit_not_applied(reason);
                    self.log(LogLevel::Warn, message);
                }
                self.respond(command_id, Value::Null);
            }
            Pending::Configuration => {
                // A client with nothing to say answers `null`: keep the settings we have.
                let section = result
                    .and_then(|result| result.as_array().and_then(|items| items.first().cloned()))
                    .filter(|section| !section.is_null());
                if let Some(section) = section {
                    self.apply_client_settings(&section);
                }
            }
            Pending::Ignored => {}
        }
    }

    // ---- notifications ---------------------------------------------------------------------

    fn notification(&mut self, method: &str, params: Value) {
        match method {
            "initialized" => self.initialized_notification(),
            "exit" => self.shutting_down = true,
            "textDocument/didOpen" => {
                if let Ok(params) = parse_params::<DidOpenTextDocumentParams>(params) {
                    let item = params.text_document;
                    self.documents.insert(
                        item.uri.clone(),
                        TextEntry {
                            document: TextDocument::new(item.text, item.version),
                            language_id: item.language_id,
                            analysis: None,
                        },
                    );
                    self.schedule(&item.uri);
                }
            }
            "textDocument/didChange" => {
                if let Ok(params) = parse_params::<DidChangeTextDocumentParams>(params) {
                    let uri = params.text_document.uri;
                    match self.documents.get_mut(&uri) {
                        Some(entry) => {
                            entry.document.apply_changes(
                                params.content_changes,
                                params.text_document.version,
                                self.negotiated.encoding,
                            );
                            self.schedule(&uri);
                        }
                        None => self.warn_not_open("document", &uri),
                    }
                }
            }
            "textDocument/didClose" => {
                if let Ok(DidClose { text_document }) = parse_params::<DidClose>(params) {
                    let uri = text_document.uri;
                    self.dirty.remove(&uri);
                    if self.documents.remove(&uri).is_some() && !self.negotiated.pull_diagnostics
                    {
                        self.publish(&uri, json!([]), None);
                    }
                }
            }
            "notebookDocument/didOpen" => {
                if let Ok(params) = parse_params::<DidOpenNotebookDocumentParams>(params) {
                    let uri = self.notebooks.open(params);
                    self.schedule_notebook(&uri);
                }
            }
            "notebookDocument/didChange" => {
                if let Ok(params) = parse_params::<DidChangeNotebookDocumentParams>(params) {
                    let uri = params.notebook_document.uri.clone();
                    match self.notebooks.change(params, self.negotiated.encoding) {
                        Some(removed) => {
                            self.clear_cells(removed);
                            self.schedule_notebook(&uri);
                        }
                        None => self.warn_not_open("notebook", &uri),
                    }
                }
            }
            "notebookDocument/didClose" => {
                if let Ok(params) = parse_params::<DidCloseNotebookDocumentParams>(params) {
                    let uri = params.notebook_document.uri.clone();
                    self.dirty.remove(&uri);
                    let cells = self.notebooks.close(params);
                    self.clear_cells(cells);
                }
            }
            "workspace/didChangeConfiguration" => {
                if self.negotiated.configuration_requests {
                    self.pull_client_settings();
                } else {
                    let settings = params.get("settings").cloned().unwrap_or(Value::Null);
                    self.apply_client_settings(&settings);
                }
            }
            // Workspace folders decide which configuration files apply; here there are none,
            // but results computed before the change are stale as in the native server.
            "workspace/didChangeWorkspaceFolders" => {
                self.generation += 1;
                self.refresh_all();
            }
            // Saves, watched files, cancellation and tracing change nothing here: documents are
            // checked as they are edited, there are no configuration files, and every request
            // is answered before the next message is read.
            _ => {}
        }
    }

    fn initialized_notification(&mut self) {
        let errors = std::mem::take(&mut self.pending_errors);
        self.report_setting_errors(errors);
        self.pull_client_settings();
        self.log(LogLevel::Info, "tpulint server ready".to_string());
    }

    fn pull_client_settings(&mut self) {
        if self.negotiated.configuration_requests {
            self.send_request(
                "workspace/configuration",
                json!({ "items": [{ "section": "tpulint" }] }),
                Pending::Configuration,
            );
        }
    }

    fn apply_client_settings(&mut self, value: &Value) {
        let (client, errors) = ClientSettings::from_json(value);
        self.set_client_settings(client);
        self.report_setting_errors(errors);
        self.refresh_all();
    }

    /// After a settings change: re-check everything (push) or ask the client to pull again.
    fn refresh_all(&mut self) {
        if self.negotiated.pull_diagnostics {
            if self.negotiated.workspace_diagnostic_refresh {
                self.send_request("workspace/diagnostic/refresh", Value::Null, Pending::Ignored);
            }
        } else {
            let uris: Vec<Uri> = self.documents.keys().cloned().collect();
            self.dirty.extend(uris);
            self.dirty.extend(self.notebooks.uris());
        }
    }

    fn warn_not_open(&mut self, what: &str, uri: &Uri) {
        self.log(
            LogLevel::Warn,
            format!("didChange for a {what} that is not open: {}", uri.as_str()),
        );
    }

    fn schedule(&mut self, uri: &Uri) {
        if !self.negotiated.pull_diagnostics {
            self.dirty.insert(uri.clone());
        }
    }

    fn schedule_notebook(&mut self, uri: &Uri) {
        let negotiated = &self.negotiated;
        // Pull mode without refresh: nothing to publish and nothing to tell.
        if !negotiated.pull_diagnostics || negotiated.workspace_diagnostic_refresh {
            self.dirty.insert(uri.clone());
        }
    }

    /// Clears the diagnostics of cells that left a notebook (push mode only).
    fn clear_cells(&mut self, cells: Vec<Uri>) {
        if self.negotiated.pull_diagnostics {
            return;
        }
        for uri in cells {
            self.publish(&uri, json!([]), None);
        }
    }

    // ---- analyses --------------------------------------------------------------------------

    fn check_settings(&self, python: bool) -> CheckSettings {
        CheckSettings {
            settings: python.then(|| self.client.without_project()),
            config_file: None,
            generation: self.generation,
            unsafe_fixes: self.client.unsafe_fixes,
        }
    }

    fn log_crash(&mut self, uri: &Uri, error: AnalysisError) {
        if let AnalysisError::Panicked(message) = error {
            self.log(
                LogLevel::Error,
                format!("tpulint crashed while checking {}: {message}", uri.as_str()),
            );
        }
    }

    /// The analysis of the current version of text document `uri`, checking it when the stored
    /// one is stale; `None` when it is not open.
    fn text_analysis(&mut self, uri: &Uri) -> Option<Arc<Analysis>> {
        let generation = self.generation;
        let entry = self.documents.get(uri)?;
        if let Some(analysis) = &entry.analysis
            && analysis.version == entry.document.version()
            && analysis.generation == generation
        {
            return Some(analysis.clone());
        }
        let check_settings = self.check_settings(is_python(uri, &entry.language_id));
        let snapshot = entry.document.snapshot();
        match analyze(snapshot, check_settings, true, &|| false) {
            Ok(analysis) => {
                let analysis = Arc::new(analysis);
                let entry = self.documents.get_mut(uri)?;
                if let Some(state) = &analysis.incremental {
                    entry.document.store_check(PreviousCheck {
                        text: analysis.text.clone(),
                        state: state.clone(),
                    });
                }
                entry
                    .document
                    .store_tree(analysis.version, analysis.tree.clone());
                entry.analysis = Some(analysis.clone());
                Some(analysis)
            }
            Err(error) => {
                self.log_crash(uri, error);
                None
            }
        }
    }

    /// The analysis of the current revision of `notebook`, checking it when the stored one is
    /// stale; `None` when it is not open.
    fn notebook_analysis(&mut self, notebook: &Uri) -> Option<Arc<NotebookAnalysis>> {
        if let Some(analysis) = self.notebooks.current_analysis(notebook, self.generation) {
            return Some(analysis);
        }
        let snapshot = self.notebooks.snapshot(notebook)?;
        // The notebook's own path decides whether it is Python, as natively.
        match notebook_analysis::analyze(snapshot, self.check_settings(true), &|| false) {
            Ok(analysis) => {
                let analysis = Arc::new(analysis);
                self.notebooks
                    .store(notebook, &analysis, self.generation, false);
                Some(analysis)
            }
            Err(error) => {
                self.log_crash(notebook, error);
                None
            }
        }
    }

    /// Push: publishes every cell. Pull with refresh: asks the client to pull again when a cell
    /// it was answered for holds stale findings (as the native server's notebook worker).
    fn publish_notebook(&mut self, notebook: &Uri) {
        let fresh = self.notebooks.current_analysis(notebook, self.generation);
        let Some(analysis) = fresh.or_else(|| self.notebook_analysis(notebook)) else {
            return;
        };
        let Some(previous) = self
            .notebooks
            .store(notebook, &analysis, self.generation, true)
        else {
            return;
        };
        let encoding = self.negotiated.encoding;
        if !self.negotiated.pull_diagnostics {
            for cell in &analysis.cells {
                let diagnostics = to_json(analysis.cell_diagnostics(&cell.uri, encoding));
                self.publish(&cell.uri, diagnostics, Some(cell.cell_version));
            }
        } else if self.negotiated.workspace_diagnostic_refresh
            && self.notebooks.client_holds_stale(
                notebook,
                previous.as_deref(),
                &analysis,
                encoding,
            )
        {
            self.send_request("workspace/diagnostic/refresh", Value::Null, Pending::Ignored);
        }
    }

    fn debug_information(&self) -> String {
        let negotiated = &self.negotiated;
        let mut out = format!("{} {}\n", self.server_name, self.version);
        out.push_str(&format!("position encoding: {:?}\n", negotiated.encoding));
        out.push_str(&format!(
            "diagnostics: {}\n",
            if negotiated.pull_diagnostics {
                "pull"
            } else {
                "push"
            }
        ));
        out.push_str(&format!("settings generation: {}\n", self.generation));
        out.push_str(&format!("editor settings: {:?}\n", self.client));
        out.push_str(&self.notebooks.describe());
        out.push_str(&format!("open documents: {}\n", self.documents.len()));
        let mut uris: Vec<_> = self.documents.iter().collect();
        uris.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        for (uri, entry) in uris {
            out.push_str(&format!(
                "  {} (version {}, {} diagnostics)\n",
                uri.as_str(),
                entry.document.version(),
                entry
                    .analysis
                    .as_ref()
                    .map_or(0, |analysis| analysis.diagnostics.len()),
            ));
        }
        out
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DidClose {
    text_document: DocumentId,
}
