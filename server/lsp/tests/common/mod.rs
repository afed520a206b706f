//! An in-memory LSP client for protocol tests: the server runs in-process on a tokio duplex
//! stream with real Content-Length framing; a reader task collects the server's messages and
//! answers its requests (`workspace/configuration`, `client/registerCapability`,
//! `workspace/applyEdit`) the way an editor would.

#![allow(dead_code)] // Each test binary uses a different part of the helper.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::mpsc;

pub const TIMEOUT: Duration = Duration::from_secs(180);

type Writer = Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>;

pub struct TestClient {
    writer: Writer,
    incoming: mpsc::UnboundedReceiver<Value>,
    /// Messages read while waiting for something else.
    backlog: Vec<Value>,
    next_id: i64,
    /// What the client answers to `workspace/configuration`.
    pub configuration: Arc<Mutex<Value>>,
    /// Every `workspace/applyEdit` the server sent.
    pub applied_edits: Arc<Mutex<Vec<Value>>>,
    /// Every server → client request method seen.
    pub server_requests: Arc<Mutex<Vec<String>>>,
    /// How many `textDocument/publishDiagnostics` notifications have arrived (read or not).
    publishes: Arc<AtomicUsize>,
    /// While set, `workspace/configuration` requests are not answered but handed to the test
    /// (through `wait_for`), which answers them with `respond`, in any order it likes.
    pub hold_configuration: Arc<AtomicBool>,
}

pub async fn write_frame(writer: &Writer, body: &[u8]) {
    let mut writer = writer.lock().await;
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer
        .write_all(header.as_bytes())
        .await
        .expect("write header");
    writer.write_all(body).await.expect("write body");
    writer.flush().await.expect("flush");
}

async fn read_frame<R: tokio::io::AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length:") {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).await.ok()?;
    serde_json::from_slice(&body).ok()
}

impl TestClient {
    /// Starts a server in this runtime and connects to it (no `initialize` yet).
    pub fn start() -> TestClient {
        let (client_io, server_io) = tokio::io::duplex(1 << 22);
        let (server_read, server_write) = tokio::io::split(server_io);
        tokio::spawn(tpulint_lsp::serve(server_read, server_write));
        let (client_read, client_write) = tokio::io::split(client_io);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(client_write));
        let (sender, incoming) = mpsc::unbounded_channel();
        let configuration = Arc::new(Mutex::new(json!({})));
        let applied_edits = Arc::new(Mutex::new(Vec::new()));
        let server_requests = Arc::new(Mutex::new(Vec::new()));
        let publishes = Arc::new(AtomicUsize::new(0));
        let hold_configuration = Arc::new(AtomicBool::new(false));
        {
            let hold_configuration = hold_configuration.clone();
            let writer = writer.clone();
            let configuration = configuration.clone();
            let applied_edits = applied_edits.clone();
            let server_requests = server_requests.clone();
            let publishes = publishes.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(client_read);
                while let Some(message) = read_frame(&mut reader).await {
                    let is_request = message.get("id").is_some() && message.get("method").is_some();
                    if message["method"] == "textDocument/publishDiagnostics" {
                        publishes.fetch_add(1, Ordering::SeqCst);
                    }
                    if !is_request {
                        if sender.send(message).is_err() {
                            return;
                        }
                        continue;
                    }
                    let method = message["method"].as_str().unwrap_or_default().to_string();
                    server_requests.lock().unwrap().push(method.clone());
                    if method == "workspace/configuration"
                        && hold_configuration.load(Ordering::SeqCst)
                    {
                        if sender.send(message).is_err() {
                            return;
                        }
                        continue;
                    }
                    let result = match method.as_str() {
                        "workspace/configuration" => {
                            let items = message["params"]["items"].as_array().map_or(1, Vec::len);
                            let value = configuration.lock().unwrap().clone();
                            Value::Array(vec![value; items])
                        }
                        "workspace/applyEdit" => {
                            applied_edits
                                .lock()
                                .unwrap()
                                .push(message["params"].clone());
                            json!({"applied": true})
                        }
                        _ => Value::Null,
                    };
                    let response = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
                    write_frame(&writer, response.to_string().as_bytes()).await;
                }
            });
        }
        TestClient {
            writer,
            incoming,
            backlog: Vec::new(),
            next_id: 0,
            configuration,
            applied_edits,
            server_requests,
            publishes,
            hold_configuration,
        }
    }

    /// How many `textDocument/publishDiagnostics` notifications have arrived.
    pub fn publishes(&self) -> usize {
        self.publishes.load(Ordering::SeqCst)
    }

    /// How many `workspace/diagnostic/refresh` requests the server has sent.
    pub fn refreshes(&self) -> usize {
        self.server_requests
            .lock()
            .unwrap()
            .iter()
            .filter(|method| *method == "workspace/diagnostic/refresh")
            .count()
    }

    /// Answers a server → client request the test held back.
    pub async fn respond(&mut self, id: Value, result: Value) {
        let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.send_raw(response.to_string().as_bytes()).await;
    }

    /// Starts a server and runs `initialize` / `initialized` with `capabilities` and
    /// `initialization_options`. Returns the client and the initialize result.
    pub async fn initialized(capabilities: Value, options: Value) -> (TestClient, Value) {
        let mut client = TestClient::start();
        let result = client
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": null,
                    "capabilities": capabilities,
                    "initializationOptions": options,
                }),
            )
            .await;
        let result = result["result"].clone();
        assert!(result.is_object(), "initialize failed: {result}");
        client.notify("initialized", json!({})).await;
        (client, result)
    }

    pub async fn send_raw(&mut self, body: &[u8]) {
        write_frame(&self.writer, body).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(message.to_string().as_bytes()).await;
    }

    /// Sends a request without waiting; returns its id.
    pub async fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(message.to_string().as_bytes()).await;
        id
    }

    /// Sends a request and returns the whole response message (`result` or `error`).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.response(json!(id)).await
    }

    /// The server's debug report (`tpulint.printDebugInformation`), the text tests read counts
    /// and states from.
    pub async fn debug_report(&mut self) -> String {
        let response = self
            .request(
                "workspace/executeCommand",
                json!({"command": "tpulint.printDebugInformation"}),
            )
            .await;
        response["result"]
            .as_str()
            .expect("a debug report")
            .to_string()
    }

    pub async fn response(&mut self, id: Value) -> Value {
        self.wait_for(|message| message.get("method").is_none() && message["id"] == id)
            .await
    }

    /// The next message satisfying `predicate` (earlier unmatched ones are kept for later).
    pub async fn wait_for(&mut self, predicate: impl Fn(&Value) -> bool) -> Value {
        if let Some(position) = self.backlog.iter().position(&predicate) {
            return self.backlog.remove(position);
        }
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let message = tokio::time::timeout_at(deadline, self.incoming.recv())
                .await
                .expect("timed out waiting for a server message")
                .expect("server closed the connection");
            if predicate(&message) {
                return message;
            }
            self.backlog.push(message);
        }
    }

    /// The next `publishDiagnostics` for `uri`.
    pub async fn diagnostics(&mut self, uri: &str) -> Value {
        let uri = uri.to_string();
        self.wait_for(move |message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri.as_str()
        })
        .await["params"]
            .clone()
    }

    /// Waits for the `publishDiagnostics` of `uri` at `version`, skipping earlier ones.
    pub async fn diagnostics_at(&mut self, uri: &str, version: i64) -> Value {
        loop {
            let params = self.diagnostics(uri).await;
            if params["version"] == version {
                return params;
            }
        }
    }

    /// The code actions the server offers for `diagnostic` of document `uri` (its range, with
    /// it as the context's diagnostic).
    pub async fn code_actions_for(&mut self, uri: &str, diagnostic: &Value) -> Vec<Value> {
        let response = self
            .request(
                "textDocument/codeAction",
                json!({
                    "textDocument": {"uri": uri},
                    "range": diagnostic["range"],
                    "context": {"diagnostics": [diagnostic]}
                }),
            )
            .await;
        response["result"].as_array().expect("actions").clone()
    }

    pub async fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        )
        .await;
    }

    /// Drains messages that already arrived (for assertions about what was *not* sent).
    pub fn drain(&mut self) -> Vec<Value> {
        let mut messages = std::mem::take(&mut self.backlog);
        while let Ok(message) = self.incoming.try_recv() {
            messages.push(message);
        }
        messages
    }

    pub async fn shutdown(mut self) {
        let response = self.request("shutdown", Value::Null).await;
        assert!(response.get("error").is_none(), "{response}");
        self.notify("exit", Value::Null).await;
    }
}

/// Capabilities of a plain push-diagnostics client that speaks UTF-16.
/// The rule codes of a `publishDiagnostics` notification's params, in the server's order.
pub fn codes(published: &Value) -> Vec<String> {
    published["diagnostics"]
        .as_array()
        .expect("diagnostics array")
        .iter()
        .map(|d| d["code"].as_str().expect("code").to_string())
        .collect()
}

/// The titles of code actions.
pub fn titles(actions: &[Value]) -> Vec<&str> {
    actions
        .iter()
        .map(|a| a["title"].as_str().expect("title"))
        .collect()
}

pub fn push_client() -> Value {
    json!({
        "textDocument": {
            "publishDiagnostics": {"versionSupport": true, "relatedInformation": true},
            "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}},
            "hover": {"contentFormat": ["markdown", "plaintext"]}
        },
        "workspace": {"applyEdit": true, "configuration": false}
    })
}

/// `text` with LSP `edits` (a JSON array of TextEdit) applied, positions in `encoding`.
pub fn apply_edits(
    text: &str,
    edits: &Value,
    encoding: tpulint_lsp::encoding::PositionEncoding,
) -> String {
    let index = tpulint_analyzer::LineIndex::new(text);
    let mut edits: Vec<(std::ops::Range<usize>, String)> = edits
        .as_array()
        .expect("edits")
        .iter()
        .map(|edit| {
            let range: tower_lsp_server::ls_types::Range =
                serde_json::from_value(edit["range"].clone()).expect("range");
            (
                tpulint_lsp::from_proto::text_range(text, &index, range, encoding),
                edit["newText"].as_str().expect("newText").to_string(),
            )
        })
        .collect();
    edits.sort_by_key(|(range, _)| std::cmp::Reverse(range.start));
    let mut out = text.to_string();
    for (range, new_text) in edits {
        out.replace_range(range, &new_text);
    }
    out
}
