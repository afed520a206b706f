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
//! push worker coalesces them. Each check is a full one (`analyze_in_full`): the incremental
//! checker, whose results are equal, does not fit the module's budget.
//!
//! Messages are read with the small JSON reader of [`super::json`] and [`super::read`], and
//! written straight to text; serde's derived readers and `serde_json::Value` stay out of the
//! WebAssembly module.

use std::sync::Arc;

use ls_types::{CodeActionKind, Position, Uri, WorkspaceEdit};

use super::analyze::{AnalysisError, CheckSettings, analyze_in_full};
use super::capabilities::{self, APPLY_AUTOFIX, Negotiated, PRINT_DEBUG_INFORMATION};
use super::handlers::{self, RequestError};
use super::json::{self, JsonRead, JsonValue, write_string};
use super::notebook_analysis::{self, NotebookAnalysis};
use super::notebooks::NotebookDocuments;
use super::read;
use super::settings::{ClientSettings, LogLevel};
use super::uri_map::UriMap;
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
    ApplyEdit { command_id: JsonValue },
    /// `workspace/configuration`: the `tpulint` section, applied when it arrives; when the client
    /// has nothing to say, the settings of the `didChangeConfiguration` that asked (if any).
    Configuration { fallback: Option<JsonValue> },
    /// A request whose answer changes nothing (a refresh).
    Ignored,
}

pub struct Session {
    server_name: String,
    version: String,
    /// Each rule's documentation (Markdown) by code, for hovers: the WebAssembly module carries
    /// none of its own. A list searched from the end (a later entry for a code wins), not a hash
    /// map: a hover looks up one of ~100 codes, and the map's code cost the module room.
    docs: Vec<(String, String)>,
    negotiated: Negotiated,
    initialized: bool,
    shutting_down: bool,
    client: ClientSettings,
    /// Bumped on every settings change (as the native server's), so results computed under
    /// older settings are not reused and pull result ids change.
    generation: u64,
    documents: UriMap<TextEntry>,
    notebooks: NotebookDocuments,
    /// Text documents and notebooks changed since their last publish (push mode), in URI order.
    dirty: UriMap<()>,
    /// Setting errors found before the client could be told (during `initialize`).
    pending_errors: Vec<String>,
    shown: Vec<String>,
    next_request_id: i64,
    pending: Vec<(i64, Pending)>,
    outgoing: Vec<String>,
}

/// JSON text of a protocol value (the derived serializers, straight to text).
fn to_json(value: impl serde::Serialize) -> String {
    serde_json::to_string(&value).unwrap_or_else(|_| "null".to_string())
}

fn invalid_params() -> RequestError {
    RequestError::invalid_params("invalid params")
}

fn is_python(uri: &Uri, language_id: &str) -> bool {
    let path = uri.path().as_str();
    language_id == "python" || path.ends_with(".py") || path.ends_with(".pyi")
}

impl Session {
    /// A server that names itself `server_name` in `initialize` and shows `docs` (Markdown by
    /// rule code, a later entry for a code winning) in hovers.
    pub fn new(server_name: &str, version: &str, docs: Vec<(String, String)>) -> Session {
        Session {
            server_name: server_name.to_string(),
            version: version.to_string(),
            docs,
            negotiated: Negotiated::default(),
            initialized: false,
            shutting_down: false,
            client: ClientSettings::default(),
            generation: 0,
            documents: UriMap::new(),
            notebooks: NotebookDocuments::default(),
            dirty: UriMap::new(),
            pending_errors: Vec::new(),
            shown: Vec::new(),
            next_request_id: 0,
            pending: Vec::new(),
            outgoing: Vec::new(),
        }
    }

    /// Whether `exit` was received; the host stops calling.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// The messages to send (JSON text), in order.
    pub fn take_outgoing(&mut self) -> Vec<String> {
        std::mem::take(&mut self.outgoing)
    }

    /// Whether [`Session::idle`] has work to do.
    pub fn has_pending_work(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Applies one message from the client (a request, a notification or a response), given as
    /// JSON text; text that is not JSON is answered with JSON-RPC's parse error.
    pub fn handle(&mut self, text: &str) {
        let Ok(message) = json::parse(text) else {
            self.respond_error(
                &JsonValue::Null,
                RequestError {
                    code: -32700,
                    message: "Parse error".to_string(),
                },
            );
            return;
        };
        let params = message.get("params").unwrap_or(&JsonValue::Null);
        match (
            message.get("method").and_then(JsonRead::as_str),
            message.get("id"),
        ) {
            (Some(method), Some(id)) => self.request(method, id, params),
            (Some(method), None) => self.notification(method, params),
            (None, Some(id)) => self.response(id, message.get("result")),
            (None, None) => self.respond_error(
                &JsonValue::Null,
                RequestError {
                    code: -32600,
                    message: "Invalid request".to_string(),
                },
            ),
        }
    }

    /// Checks and publishes what changed since the last call (push mode), and tells a pull
    /// client whose notebook cells went stale to pull again.
    pub fn idle(&mut self) {
        let dirty = std::mem::take(&mut self.dirty);
        for uri in dirty.into_keys() {
            if self.notebooks.notebooks.contains_key(&uri) {
                self.publish_notebook(&uri);
            } else if let Some(analysis) = self.text_analysis(&uri) {
                let diagnostics = analysis.lsp_diagnostics(&uri, self.negotiated.encoding);
                self.publish(&uri, &to_json(diagnostics), Some(analysis.version));
            }
        }
    }

    // ---- outgoing --------------------------------------------------------------------------

    fn respond(&mut self, id: &JsonValue, result: &str) {
        self.outgoing.push(format!(
            r#"{{"jsonrpc":"2.0","result":{result},"id":{}}}"#,
            id.render()
        ));
    }

    fn respond_error(&mut self, id: &JsonValue, error: RequestError) {
        let mut message = String::new();
        write_string(&error.message, &mut message);
        self.outgoing.push(format!(
            r#"{{"jsonrpc":"2.0","error":{{"code":{},"message":{message}}},"id":{}}}"#,
            error.code,
            id.render()
        ));
    }

    fn notify(&mut self, method: &str, params: &str) {
        self.outgoing.push(format!(
            r#"{{"jsonrpc":"2.0","method":"{method}","params":{params}}}"#
        ));
    }

    fn send_request(&mut self, method: &str, params: Option<&str>, pending: Pending) {
        let id = self.next_request_id;
        self.next_request_id += 1;
        self.pending.push((id, pending));
        let params = params.map_or_else(String::new, |params| format!(r#","params":{params}"#));
        self.outgoing.push(format!(
            r#"{{"jsonrpc":"2.0","method":"{method}"{params},"id":{id}}}"#
        ));
    }

    /// `window/logMessage` or `window/showMessage`.
    fn message(&mut self, method: &str, kind: u8, text: &str) {
        let mut params = format!(r#"{{"type":{kind},"message":"#);
        write_string(text, &mut params);
        params.push('}');
        self.notify(method, &params);
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
        self.message("window/logMessage", kind, &message);
    }

    fn publish(&mut self, uri: &Uri, diagnostics: &str, version: Option<i32>) {
        let mut params = String::from(r#"{"uri":"#);
        write_string(uri.as_str(), &mut params);
        params.push_str(r#","diagnostics":"#);
        params.push_str(diagnostics);
        if let Some(version) = version {
            params.push_str(&format!(r#","version":{version}"#));
        }
        params.push('}');
        self.notify("textDocument/publishDiagnostics", &params);
    }

    fn report_setting_errors(&mut self, errors: Vec<String>) {
        for error in errors {
            if !self.shown.contains(&error) {
                self.shown.push(error.clone());
                self.message("window/showMessage", WARNING, &format!("tpulint: {error}"));
            }
        }
    }

    // ---- requests --------------------------------------------------------------------------

    fn request(&mut self, method: &str, id: &JsonValue, params: &JsonValue) {
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
            "shutdown" => Ok("null".to_string()),
            "textDocument/diagnostic" => self.diagnostic(params),
            "workspace/diagnostic" => Ok(self.workspace_diagnostic(params)),
            "textDocument/codeAction" => self.code_action(params),
            "codeAction/resolve" => self.code_action_resolve(params),
            "textDocument/hover" => self.hover(params),
            "workspace/executeCommand" => match self.execute_command(id, params) {
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
            Ok(result) => self.respond(id, &result),
            Err(error) => self.respond_error(id, error),
        }
    }

    fn initialize(&mut self, params: &JsonValue) -> String {
        self.initialized = true;
        self.negotiated =
            capabilities::negotiate(params.get("capabilities").unwrap_or(&JsonValue::Null));
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

    fn diagnostic(&mut self, params: &JsonValue) -> Result<String, RequestError> {
        let uri = read::document_uri(params).ok_or_else(invalid_params)?;
        let previous = params.get("previousResultId").and_then(JsonRead::as_str);
        let encoding = self.negotiated.encoding;
        if let Some(owner) = self.notebooks.owner(&uri)
            && let Some(analysis) = self.notebook_analysis(&owner)
        {
            let result_id = analysis.result_id();
            self.notebooks.note_served(&uri, &result_id);
            return Ok(to_json(handlers::document_report(
                previous,
                result_id,
                || analysis.cell_diagnostics(&uri, encoding),
            )));
        }
        Ok(to_json(match self.text_analysis(&uri) {
            None => handlers::empty_report(),
            Some(analysis) => {
                handlers::document_report(previous, handlers::text_result_id(&analysis, 0), || {
                    analysis.lsp_diagnostics(&uri, encoding)
                })
            }
        }))
    }

    fn workspace_diagnostic(&mut self, params: &JsonValue) -> String {
        let previous: UriMap<String> = params
            .get("previousResultIds")
            .and_then(JsonRead::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(|previous| {
                let uri = read::uri(previous.get("uri")?)?;
                Some((uri, previous.get("value")?.as_str()?.to_string()))
            })
            .collect();
        let encoding = self.negotiated.encoding;
        let mut items = Vec::new();
        let uris: Vec<Uri> = self.documents.keys().cloned().collect();
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
            let notebooks = &mut self.notebooks;
            items.extend(handlers::notebook_workspace_items(
                &analysis,
                |cell| previous.get(cell).map(String::as_str),
                encoding,
                |cell, result_id| notebooks.note_served(cell, result_id),
            ));
        }
        format!(r#"{{"items":{}}}"#, to_json(items))
    }

    fn code_action(&mut self, params: &JsonValue) -> Result<String, RequestError> {
        let uri = read::document_uri(params).ok_or_else(invalid_params)?;
        let range = params
            .get("range")
            .and_then(read::range)
            .ok_or_else(invalid_params)?;
        let only: Option<Vec<CodeActionKind>> = params
            .at(&["context", "only"])
            .and_then(JsonRead::as_array)
            .map(|kinds| {
                kinds
                    .iter()
                    .filter_map(|kind| Some(CodeActionKind::from(kind.as_str()?.to_string())))
                    .collect()
            });
        let only = only.as_deref();
        let encoding = self.negotiated.encoding;
        if let Some(owner) = self.notebooks.owner(&uri)
            && let Some(analysis) = self.notebook_analysis(&owner)
        {
            return Ok(to_json(handlers::cell_code_actions(
                &analysis, &uri, range, only, encoding,
            )));
        }
        Ok(match self.text_analysis(&uri) {
            Some(analysis) => to_json(handlers::text_code_actions(
                &uri,
                &analysis,
                range,
                only,
                encoding,
                self.negotiated.code_action_resolve,
            )),
            None => "null".to_string(),
        })
    }

    fn code_action_resolve(&mut self, action: &JsonValue) -> Result<String, RequestError> {
        let Some(data) = handlers::resolve_data_of(action) else {
            return Ok(action.render());
        };
        let Some(analysis) = self.text_analysis(&data.uri) else {
            return Err(RequestError::invalid_params(
                "the document is no longer open",
            ));
        };
        let edit = handlers::resolve_fix_all(&data, &analysis, self.negotiated.encoding)?;
        // The action as it came, with its edit.
        let JsonValue::Object(members) = action else {
            return Err(invalid_params());
        };
        let mut out = String::from("{");
        for (name, value) in members.iter().filter(|(name, _)| name != "edit") {
            write_string(name, &mut out);
            out.push(':');
            json::write(value, &mut out);
            out.push(',');
        }
        out.push_str(r#""edit":"#);
        out.push_str(&to_json(edit));
        out.push('}');
        Ok(out)
    }

    fn hover(&mut self, params: &JsonValue) -> Result<String, RequestError> {
        let uri = read::document_uri(params).ok_or_else(invalid_params)?;
        let position: Position = params
            .get("position")
            .and_then(read::position)
            .ok_or_else(invalid_params)?;
        let encoding = self.negotiated.encoding;
        let docs = std::mem::take(&mut self.docs);
        let lookup = |code: &str| {
            docs.iter()
                .rev()
                .find(|(known, _)| known == code)
                .map(|(_, markdown)| markdown.clone())
                .unwrap_or_default()
        };
        let hover = if let Some(owner) = self.notebooks.owner(&uri) {
            self.notebook_analysis(&owner).and_then(|analysis| {
                handlers::cell_hover(&analysis, &uri, position, encoding, &lookup)
            })
        } else {
            self.text_analysis(&uri)
                .and_then(|analysis| handlers::text_hover(&analysis, position, encoding, &lookup).1)
        };
        self.docs = docs;
        Ok(to_json(hover))
    }

    /// `Ok(None)`: answered later (after the client applied the edit).
    fn execute_command(
        &mut self,
        id: &JsonValue,
        params: &JsonValue,
    ) -> Result<Option<String>, RequestError> {
        let command = params
            .get("command")
            .and_then(JsonRead::as_str)
            .unwrap_or("");
        match command {
            APPLY_AUTOFIX => {
                let arguments = params
                    .get("arguments")
                    .and_then(JsonRead::as_array)
                    .unwrap_or_default();
                let uri = handlers::autofix_target(arguments)?;
                let encoding = self.negotiated.encoding;
                let edit: Option<WorkspaceEdit> = if let Some(owner) = self.notebooks.owner(&uri) {
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
                            Some(&format!(r#"{{"edit":{}}}"#, to_json(edit))),
                            Pending::ApplyEdit {
                                command_id: id.clone(),
                            },
                        );
                        Ok(None)
                    }
                    None => Ok(Some("null".to_string())),
                }
            }
            PRINT_DEBUG_INFORMATION => {
                let mut text = String::new();
                write_string(&self.debug_information(), &mut text);
                Ok(Some(text))
            }
            other => Err(handlers::unknown_command(
                other,
                &capabilities::commands(false),
            )),
        }
    }

    fn response(&mut self, id: &JsonValue, result: Option<&JsonValue>) {
        let Some(index) = id
            .as_i64()
            .and_then(|id| self.pending.iter().position(|(pending, _)| *pending == id))
        else {
            return;
        };
        let (_, pending) = self.pending.remove(index);
        match pending {
            Pending::ApplyEdit { command_id } => {
                if let Some(result) = result
                    && result.get("applied").and_then(JsonRead::as_bool) == Some(false)
                {
                    let reason = result.get("failureReason").and_then(JsonRead::as_str);
                    let message = handlers::edit_not_applied(reason);
                    self.log(LogLevel::Warn, message);
                }
                self.respond(&command_id, "null");
            }
            Pending::Configuration { fallback } => {
                // A client with nothing to say answers `null`: keep the settings we have, or take
                // those of the notification (as the native server does).
                let section = result
                    .and_then(JsonRead::as_array)
                    .and_then(<[JsonValue]>::first)
                    .filter(|section| !section.is_null())
                    .cloned()
                    .or(fallback);
                if let Some(section) = section {
                    self.apply_client_settings(&section);
                }
            }
            Pending::Ignored => {}
        }
    }

    // ---- notifications ---------------------------------------------------------------------

    fn notification(&mut self, method: &str, params: &JsonValue) {
        match method {
            "initialized" => self.initialized_notification(),
            "exit" => self.shutting_down = true,
            "textDocument/didOpen" => {
                if let Some(item) = params
                    .get("textDocument")
                    .and_then(read::text_document_item)
                {
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
                let Some((uri, version)) = params
                    .get("textDocument")
                    .and_then(read::versioned_document)
                else {
                    return;
                };
                let changes = read::content_changes(params.get("contentChanges"));
                match self.documents.get_mut(&uri) {
                    Some(entry) => {
                        entry
                            .document
                            .apply_changes(changes, version, self.negotiated.encoding);
                        self.schedule(&uri);
                    }
                    None => self.warn_not_open("document", &uri),
                }
            }
            "textDocument/didClose" => {
                if let Some(uri) = read::document_uri(params) {
                    self.dirty.remove(&uri);
                    if self.documents.remove(&uri).is_some() && !self.negotiated.pull_diagnostics {
                        self.publish(&uri, "[]", None);
                    }
                }
            }
            "notebookDocument/didOpen" => {
                if let Some(params) = read::did_open_notebook(params) {
                    let uri = self.notebooks.open(params);
                    self.schedule_notebook(&uri);
                }
            }
            "notebookDocument/didChange" => {
                if let Some(params) = read::did_change_notebook(params) {
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
                if let Some(params) = read::did_close_notebook(params) {
                    let uri = params.notebook_document.uri.clone();
                    self.dirty.remove(&uri);
                    let cells = self.notebooks.close(params);
                    self.clear_cells(cells);
                }
            }
            "workspace/didChangeConfiguration" => {
                let settings = params.get("settings").cloned().unwrap_or(JsonValue::Null);
                if self.negotiated.configuration_requests {
                    self.pull_client_settings(Some(settings));
                } else {
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
        self.pull_client_settings(None);
        self.log(LogLevel::Info, "tpulint server ready".to_string());
    }

    /// Asks for the `tpulint` section (`fallback`: what to apply if the client answers `null`).
    fn pull_client_settings(&mut self, fallback: Option<JsonValue>) {
        if self.negotiated.configuration_requests {
            self.send_request(
                "workspace/configuration",
                Some(r#"{"items":[{"section":"tpulint"}]}"#),
                Pending::Configuration { fallback },
            );
        }
    }

    fn apply_client_settings(&mut self, value: &JsonValue) {
        let (client, errors) = ClientSettings::from_json(value);
        self.set_client_settings(client);
        self.report_setting_errors(errors);
        self.refresh_all();
    }

    /// After a settings change: re-check everything (push) or ask the client to pull again.
    fn refresh_all(&mut self) {
        if self.negotiated.pull_diagnostics {
            if self.negotiated.workspace_diagnostic_refresh {
                self.send_request("workspace/diagnostic/refresh", None, Pending::Ignored);
            }
        } else {
            let uris: Vec<Uri> = self.documents.keys().cloned().collect();
            for uri in uris.into_iter().chain(self.notebooks.uris()) {
                self.dirty.insert(uri, ());
            }
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
            self.dirty.insert(uri.clone(), ());
        }
    }

    fn schedule_notebook(&mut self, uri: &Uri) {
        let negotiated = &self.negotiated;
        // Pull mode without refresh: nothing to publish and nothing to tell.
        if !negotiated.pull_diagnostics || negotiated.workspace_diagnostic_refresh {
            self.dirty.insert(uri.clone(), ());
        }
    }

    /// Clears the diagnostics of cells that left a notebook (push mode only).
    fn clear_cells(&mut self, cells: Vec<Uri>) {
        if self.negotiated.pull_diagnostics {
            return;
        }
        for uri in cells {
            self.publish(&uri, "[]", None);
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
        match analyze_in_full(snapshot, check_settings) {
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
                    .store_tree(analysis.version, analysis.tree.clone(), analysis.exact);
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
                self.publish(&cell.uri, &diagnostics, Some(cell.cell_version));
            }
        } else if self.negotiated.workspace_diagnostic_refresh
            && self
                .notebooks
                .client_holds_stale(notebook, previous.as_deref(), &analysis, encoding)
        {
            self.send_request("workspace/diagnostic/refresh", None, Pending::Ignored);
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
        out.push_str(&self.notebooks.describe());
        out.push_str(&format!("open documents: {}\n", self.documents.len()));
        for (uri, entry) in self.documents.iter() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(session: &mut Session) -> Vec<serde_json::Value> {
        session
            .take_outgoing()
            .iter()
            .map(|text| serde_json::from_str(text).expect(text))
            .collect()
    }

    fn codes(published: &serde_json::Value) -> Vec<String> {
        published["params"]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|diagnostic| diagnostic["code"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn settings_come_from_workspace_configuration_with_the_notification_as_fallback() {
        let mut session = Session::new("test", "0", Vec::new());
        session.handle(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"workspace":{"configuration":true}}}}"#,
        );
        session.handle(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#);
        let sent = messages(&mut session);
        let request = sent
            .iter()
            .find(|message| message["method"] == "workspace/configuration")
            .expect("a configuration request");
        assert_eq!(request["params"]["items"][0]["section"], "tpulint");
        session.handle(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":[{{"select":["TPU401"],"backend":"torch_xla"}}]}}"#,
            request["id"]
        ));
        session.handle(
            r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///t.py","languageId":"python","version":1,"text":"import torch\nx = torch.ones(2).to(\"cuda\")\n"}}}"#,
        );
        session.idle();
        let published = messages(&mut session);
        let publish = published
            .iter()
            .rev()
            .find(|message| message["method"] == "textDocument/publishDiagnostics")
            .expect("a publish");
        assert_eq!(codes(publish), ["TPU401"]);

        // The client answers `null`: the notification's settings apply.
        session.handle(
            r#"{"jsonrpc":"2.0","method":"workspace/didChangeConfiguration","params":{"settings":{"select":["TPU401"],"ignore":["TPU401"]}}}"#,
        );
        let sent = messages(&mut session);
        let request = &sent[0];
        assert_eq!(request["method"], "workspace/configuration");
        session.handle(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":[null]}}"#,
            request["id"]
        ));
        session.idle();
        let published = messages(&mut session);
        assert!(codes(published.last().expect("a publish")).is_empty());
    }

    #[test]
    fn pull_mode_answers_with_result_ids_and_closed_cells_are_cleared_in_push_mode() {
        let mut session = Session::new("test", "0", Vec::new());
        session.handle(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"textDocument":{"diagnostic":{}}}}}"#,
        );
        session.handle(
            r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///t.py","languageId":"python","version":4,"text":"x = 1\n"}}}"#,
        );
        assert!(
            !session.has_pending_work(),
            "a pull client is not pushed to"
        );
        session.take_outgoing();
        session.handle(
            r#"{"jsonrpc":"2.0","id":2,"method":"textDocument/diagnostic","params":{"textDocument":{"uri":"file:///t.py"}}}"#,
        );
        let answer = &messages(&mut session)[0];
        let result_id = answer["result"]["resultId"].as_str().unwrap().to_string();
        assert_eq!(answer["result"]["kind"], "full");
        session.handle(&format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"textDocument/diagnostic","params":{{"textDocument":{{"uri":"file:///t.py"}},"previousResultId":"{result_id}"}}}}"#
        ));
        assert_eq!(messages(&mut session)[0]["result"]["kind"], "unchanged");

        let mut push = Session::new("test", "0", Vec::new());
        push.handle(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#,
        );
        push.handle(
            r#"{"jsonrpc":"2.0","method":"notebookDocument/didOpen","params":{"notebookDocument":{"uri":"file:///n.ipynb","notebookType":"jupyter-notebook","version":1,"cells":[{"kind":2,"document":"cell:1"}]},"cellTextDocuments":[{"uri":"cell:1","languageId":"python","version":1,"text":"x = 1\n"}]}}"#,
        );
        push.idle();
        push.take_outgoing();
        push.handle(
            r#"{"jsonrpc":"2.0","method":"notebookDocument/didClose","params":{"notebookDocument":{"uri":"file:///n.ipynb"},"cellTextDocuments":[{"uri":"cell:1"}]}}"#,
        );
        let cleared = messages(&mut push);
        assert_eq!(cleared[0]["params"]["uri"], "cell:1");
        assert_eq!(cleared[0]["params"]["diagnostics"], serde_json::json!([]));
    }
}
