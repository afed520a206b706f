//! Exit statuses and writing to stdout/stderr without panicking on a closed pipe
//! (`tpulint check | head` must not turn into an internal error).

use std::io::Write;
use std::process::ExitCode;

/// The process outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitStatus {
    /// Nothing to report.
    Success,
    /// Diagnostics remain (or `--diff` would change files).
    Failure,
    /// Usage, configuration, I/O or internal error.
    Error,
}

impl ExitStatus {
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(status.code() as u8)
    }
}

/// Writes to stdout; a closed pipe is not an error worth reporting.
pub fn stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Writes bytes to stdout (fixed sources keep their exact encoding).
pub fn stdout_bytes(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    let _ = out.flush();
}

/// Writes to stderr.
pub fn stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// Prints `error: <message>` on one line.
pub fn error(message: &str) {
    stderr(&format!("error: {}\n", one_line(message)));
}

/// Prints `warning: <message>` on one line.
pub fn warning(message: &str) {
    stderr(&format!("warning: {}\n", one_line(message)));
}

fn one_line(text: &str) -> String {
    if text.contains(['\n', '\r']) {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        text.to_string()
    }
}
