//! Runs the embedded Python probe (`probe.py`) in the chosen interpreter, with a hard timeout that
//! kills the probe's whole process group, and parses its JSON answer.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The probe's source, embedded in the binary.
pub const PROBE_SOURCE: &str = include_str!("probe.py");
const RESULT_MARKER: &str = "@@TPULINT_RESULT@@";

/// The probe's JSON answer (`probe_version` 1). Unknown fields are ignored and missing ones default,
/// so an older or newer probe still parses.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ProbeReport {
    pub probe_version: u32,
    pub python: PythonFacts,
    pub metadata_available: bool,
    pub distributions: BTreeMap<String, Distribution>,
    pub imports: BTreeMap<String, ChildResult>,
    pub env: BTreeMap<String, String>,
    pub ld_library_path_set: bool,
    pub allocation: Vec<ChildResult>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct PythonFacts {
    pub version: String,
    pub implementation: String,
    pub executable: String,
    pub prefix: String,
    pub base_prefix: String,
    pub in_virtualenv: bool,
    pub user_site: Option<String>,
    pub user_site_enabled: bool,
    pub platform: String,
    pub machine: Option<String>,
}

/// One installed distribution, from `importlib.metadata`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Distribution {
    pub name: String,
    pub version: String,
    pub summary: Option<String>,
    pub home_page: Option<String>,
    pub author: Option<String>,
    pub author_email: Option<String>,
    pub project_urls: Vec<String>,
    pub requires: Vec<String>,
    pub location: Option<String>,
    /// Identifying files (TorchTPU internals, Sophgo's backend, bundled `libtpu.so`).
    pub files_sample: Vec<String>,
    /// Reading the metadata failed.
    pub error: Option<String>,
}

/// What a child process (one import, or the allocation) reported.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ChildResult {
    pub ok: bool,
    /// `ok`, `failed`, `timed_out`, `crashed`, `skipped` or `not_installed`.
    pub status: String,
    pub error_type: Option<String>,
    pub error: Option<String>,
    pub undefined_symbol: Option<String>,
    pub stderr_tail: Option<String>,
    pub version: Option<String>,
    pub file: Option<String>,
    pub seconds: Option<f64>,
    /// torch_tpu only: `torch_tpu._internal` exists (Google's TorchTPU).
    pub has_internal: Option<bool>,
    /// allocation only: the backend, the device the product landed on (`xla:0`), its type
    /// (`xla`, `tpu`, `cpu`) and, for torch_xla, the PJRT hardware behind it (`TPU`, `CPU`).
    pub backend: Option<String>,
    pub device: Option<String>,
    pub device_kind: Option<String>,
    pub hardware: Option<String>,
}

/// How running the probe ended.
#[derive(Debug, Clone)]
pub enum ProbeOutcome {
    Report(Box<ProbeReport>),
    /// Killed (with its process group) after the hard timeout.
    TimedOut {
        after: Duration,
        stderr: String,
    },
    /// Exited without a parsable answer (Python 2, a broken interpreter, a crash).
    Failed {
        exit: Option<i32>,
        signal: Option<i32>,
        stderr: String,
    },
    /// Could not be started at all.
    SpawnFailed(String),
}

/// Settings of one probe run.
#[derive(Debug, Clone)]
pub struct ProbeRequest<'a> {
    pub python: &'a Path,
    /// Per step (each import, the allocation).
    pub step_timeout: Duration,
    pub allocate: bool,
    /// Environment changes for the probe: `Some` sets, `None` removes.
    pub env_overrides: &'a [(String, Option<String>)],
    /// Overrides [`ProbeRequest::hard_timeout`]'s default.
    pub total_timeout: Option<Duration>,
}

impl ProbeRequest<'_> {
    /// The whole-probe limit: every import and allocation step may use its own timeout, plus slack
    /// for starting the interpreter and reading metadata.
    pub fn hard_timeout(&self) -> Duration {
        if let Some(total) = self.total_timeout {
            return total;
        }
        let steps = 8 + if self.allocate { 2 } else { 0 };
        self.step_timeout * steps + Duration::from_secs(10)
    }
}

/// Runs the probe; never panics, never leaves the probe running.
pub fn run_probe(request: &ProbeRequest<'_>) -> ProbeOutcome {
    use std::os::unix::process::CommandExt;

    let config = serde_json::json!({
        "import_timeout": request.step_timeout.as_secs_f64(),
        "allocate": request.allocate,
        "allocate_timeout": request.step_timeout.as_secs_f64(),
    });
    let mut command = Command::new(request.python);
    command
        .arg("-B")
        .arg("-c")
        .arg(PROBE_SOURCE)
        .arg(config.to_string())
        // A neutral working directory: nothing in it can shadow an installed package.
        .current_dir("/")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills the probe and everything it started.
        .process_group(0);
    for (name, value) in request.env_overrides {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return ProbeOutcome::SpawnFailed(error.to_string()),
    };
    let stdout = child.stdout.take().map(reader_thread);
    let stderr = child.stderr.take().map(reader_thread);
    let started = Instant::now();
    let limit = request.hard_timeout();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= limit => break None,
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let Some(status) = status else {
        let group = rustix::process::Pid::from_child(&child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = child.kill();
        let _ = child.wait();
        let stderr = stderr.map(join_reader).unwrap_or_default();
        let _ = stdout.map(join_reader);
        return ProbeOutcome::TimedOut {
            after: started.elapsed(),
            stderr: tail(&stderr),
        };
    };
    let stdout = stdout.map(join_reader).unwrap_or_default();
    let stderr = stderr.map(join_reader).unwrap_or_default();
    let answer = stdout
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix(RESULT_MARKER));
    if let Some(answer) = answer
        && let Ok(report) = serde_json::from_str::<ProbeReport>(answer)
    {
        return ProbeOutcome::Report(Box::new(report));
    }
    use std::os::unix::process::ExitStatusExt;
    ProbeOutcome::Failed {
        exit: status.code(),
        signal: status.signal(),
        stderr: tail(if stderr.trim().is_empty() {
            &stdout
        } else {
            &stderr
        }),
    }
}

fn reader_thread<R: Read + Send + 'static>(mut source: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = source.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn join_reader(handle: thread::JoinHandle<String>) -> String {
    handle.join().unwrap_or_default()
}

/// The last lines of a process's output, enough to show an error's gist.
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let start = lines.len().saturating_sub(8);
    lines[start..].join("\n")
}
