//! A minimal LSP client for benchmarks: spawns `tpulint server`, frames JSON-RPC over its
//! stdio, answers the server's own requests the way a plain editor would, and timestamps every
//! message the moment it is read (so latencies do not include the benchmark's own bookkeeping).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A message from the server and when it was read.
pub struct Received {
    pub at: Instant,
    pub message: Value,
}

pub struct ServerProcess {
    child: Child,
    writer: Arc<Mutex<ChildStdin>>,
    incoming: Receiver<Received>,
    /// Messages read while waiting for something else.
    backlog: VecDeque<Received>,
    next_id: i64,
}

fn write_message(writer: &Mutex<ChildStdin>, message: &Value) -> std::io::Result<()> {
    let body = message.to_string();
    let mut writer = writer
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    write!(writer, "Content-Length: {}\r\n\r\n", body.len())?;
    writer.write_all(body.as_bytes())?;
    writer.flush()
}

fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// What a plain editor answers to a server → client request.
fn answer(request: &Value) -> Value {
    match request["method"].as_str() {
        Some("workspace/configuration") => {
            let items = request["params"]["items"].as_array().map_or(1, Vec::len);
            Value::Array(vec![Value::Null; items])
        }
        Some("workspace/applyEdit") => json!({"applied": false}),
        _ => Value::Null,
    }
}

impl ServerProcess {
    /// Starts `binary server`; its stderr goes to ours.
    pub fn spawn(binary: &Path) -> std::io::Result<ServerProcess> {
        Self::spawn_with_env(binary, &[])
    }

    /// [`Self::spawn`] with extra environment variables for the server.
    pub fn spawn_with_env(
        binary: &Path,
        environment: &[(&str, &str)],
    ) -> std::io::Result<ServerProcess> {
        let mut child = Command::new(binary)
            .arg("server")
            .envs(environment.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let writer = Arc::new(Mutex::new(stdin));
        let (sender, incoming) = channel();
        let reader_writer = writer.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 20, stdout);
            while let Some(message) = read_message(&mut reader) {
                let at = Instant::now();
                if message.get("id").is_some() && message.get("method").is_some() {
                    let response =
                        json!({"jsonrpc": "2.0", "id": message["id"], "result": answer(&message)});
                    if write_message(&reader_writer, &response).is_err() {
                        return;
                    }
                    continue;
                }
                if sender.send(Received { at, message }).is_err() {
                    return;
                }
            }
        });
        Ok(ServerProcess {
            child,
            writer,
            incoming,
            backlog: VecDeque::new(),
            next_id: 0,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        write_message(&self.writer, &message).expect("the server's stdin is open");
    }

    /// Sends a request and waits for its response (other messages are kept for later).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        write_message(&self.writer, &message).expect("the server's stdin is open");
        let response = self
            .wait_for(Duration::from_secs(120), |message| {
                message.get("method").is_none() && message["id"] == id
            })
            .unwrap_or_else(|| panic!("no response to {method}"));
        response.message
    }

    /// The next message from the server, from the backlog first.
    pub fn next(&mut self, timeout: Duration) -> Option<Received> {
        if let Some(received) = self.backlog.pop_front() {
            return Some(received);
        }
        match self.incoming.recv_timeout(timeout) {
            Ok(received) => Some(received),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
        }
    }

    /// The next message satisfying `predicate`; earlier ones stay in the backlog.
    pub fn wait_for(
        &mut self,
        timeout: Duration,
        predicate: impl Fn(&Value) -> bool,
    ) -> Option<Received> {
        if let Some(position) = self
            .backlog
            .iter()
            .position(|received| predicate(&received.message))
        {
            return self.backlog.remove(position);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.incoming.recv_timeout(left) {
                Ok(received) if predicate(&received.message) => return Some(received),
                Ok(received) => self.backlog.push_back(received),
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
            }
        }
    }

    /// `initialize` + `initialized` as a push-diagnostics, UTF-16-only client (VS Code's shape).
    pub fn initialize(&mut self) -> Value {
        let response = self.request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "rootUri": null,
                "capabilities": {
                    "general": {"positionEncodings": ["utf-16"]},
                    "textDocument": {
                        "synchronization": {"didSave": true},
                        "publishDiagnostics": {"versionSupport": true, "relatedInformation": true},
                        "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}}
                    },
                    "workspace": {"configuration": false, "applyEdit": false}
                },
            }),
        );
        assert!(
            response["result"]["capabilities"].is_object(),
            "initialize failed: {response}"
        );
        self.notify("initialized", json!({}));
        response
    }

    /// `VmRSS` and `VmHWM` (peak) of the server process, in KiB, from `/proc/<pid>/status`.
    pub fn memory_kib(&self) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let field = |name: &str| {
            status.lines().find_map(|line| {
                line.strip_prefix(name)?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// CPU time (user + system) the server process has used so far, from `/proc/<pid>/stat`
    /// (clock ticks of 10 ms on Linux, so only meaningful summed over many keystrokes).
    pub fn cpu_time(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).ok()?;
        // Fields after the command name, which is parenthesised and may contain spaces.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let user: u64 = fields.get(11)?.parse().ok()?;
        let system: u64 = fields.get(12)?.parse().ok()?;
        Some(Duration::from_millis((user + system) * 10))
    }

    /// `shutdown` + `exit`, then waits for the process.
    pub fn shutdown(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
