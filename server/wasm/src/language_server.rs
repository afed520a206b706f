//! The browser's language server behind the `LanguageServer` export: JSON text in and out around
//! `tpulint_ide::server::session`, which holds all of the protocol logic (shared with the native
//! server). Plain Rust, so the native tests drive it as the web worker does.

use tpulint_ide::server::json::{self, JsonRead};
use tpulint_ide::server::session::Session;

/// How the server names itself in `initialize`.
pub const SERVER_NAME: &str = "tpulint (WebAssembly)";

pub struct Server {
    session: Session,
}

impl Server {
    /// `rule_docs`: `{"CODE": {"summary": …, "explanation": …}}`; the explanations are the
    /// rules' documentation the hovers show. Unreadable docs leave hovers empty, never fail.
    pub fn new(rule_docs: &str) -> Server {
        let parsed = json::parse(rule_docs).ok();
        let mut docs: Vec<(String, String)> = Vec::new();
        for (code, entry) in parsed
            .as_ref()
            .and_then(JsonRead::members)
            .unwrap_or_default()
        {
            if let Some(explanation) = entry.get("explanation").and_then(JsonRead::as_str) {
                docs.push((code.to_string(), explanation.to_string()));
            }
        }
        Server {
            session: Session::new(SERVER_NAME, env!("CARGO_PKG_VERSION"), docs),
        }
    }

    /// One message from the client (JSON text); the answer and anything else to send, as a
    /// JSON array.
    pub fn handle(&mut self, message: &str) -> String {
        self.session.handle(message);
        self.outgoing()
    }

    pub fn idle(&mut self) -> String {
        self.session.idle();
        self.outgoing()
    }

    pub fn has_pending_work(&self) -> bool {
        self.session.has_pending_work()
    }

    pub fn is_shutting_down(&self) -> bool {
        self.session.is_shutting_down()
    }

    fn outgoing(&mut self) -> String {
        format!("[{}]", self.session.take_outgoing().join(","))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn send(server: &mut Server, message: Value) -> Vec<Value> {
        serde_json::from_str(&server.handle(&message.to_string())).unwrap()
    }

    #[test]
    fn a_session_publishes_answers_and_fixes() {
        let docs = json!({"TPU401": {"summary": "s", "explanation": "## What it does\nMoves."}});
        let mut server = Server::new(&docs.to_string());
        let answer = send(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "capabilities": {},
                "initializationOptions": {"settings": {"select": ["TPU401"], "backend": "torch_xla", "unsafeFixes": true}},
            }}),
        );
        assert_eq!(answer[0]["id"], 1);
        assert_eq!(answer[0]["result"]["serverInfo"]["name"], SERVER_NAME);
        let ready = send(
            &mut server,
            json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        );
        assert_eq!(ready[0]["method"], "window/logMessage");
        let text = "import torch\nx = torch.ones(2).to(\"cuda\")\n";
        let opened = send(
            &mut server,
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": "file:///t.py", "languageId": "python", "version": 1, "text": text},
            }}),
        );
        assert!(opened.is_empty(), "published on idle, not before");
        assert!(server.has_pending_work());
        let published: Vec<Value> = serde_json::from_str(&server.idle()).unwrap();
        assert_eq!(published[0]["method"], "textDocument/publishDiagnostics");
        assert_eq!(published[0]["params"]["diagnostics"][0]["code"], "TPU401");
        assert_eq!(published[0]["params"]["version"], 1);

        let hover = send(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
                "textDocument": {"uri": "file:///t.py"}, "position": {"line": 1, "character": 21},
            }}),
        );
        let markdown = hover[0]["result"]["contents"]["value"].as_str().unwrap();
        assert!(markdown.contains("Moves."), "{markdown}");

        // The fix-all command sends `workspace/applyEdit` and answers once the client did.
        let command = send(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand", "params": {
                "command": "tpulint.applyAutofix", "arguments": [{"uri": "file:///t.py"}],
            }}),
        );
        assert_eq!(command.len(), 1);
        assert_eq!(command[0]["method"], "workspace/applyEdit");
        let request_id = command[0]["id"].clone();
        let answered = send(
            &mut server,
            json!({"jsonrpc": "2.0", "id": request_id, "result": {"applied": true}}),
        );
        assert_eq!(answered[0]["id"], 3);
        assert_eq!(answered[0]["result"], Value::Null);

        let unknown = send(
            &mut server,
            json!({"jsonrpc": "2.0", "id": 4, "method": "textDocument/rename", "params": {}}),
        );
        assert_eq!(unknown[0]["error"]["code"], -32601);
        assert!(server.handle("{not json").contains("-32700"));
    }
}
