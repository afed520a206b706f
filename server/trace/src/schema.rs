//! `.tpulint/trace.json`: the result of a trace, versioned (`"version": 1`), read by the
//! language server and `tpulint trace report`. Documented in `docs/trace.md`; additions keep the
//! version, removals and meaning changes bump it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// Where a trace lives, relative to the project root.
pub const TRACE_PATH: &str = ".tpulint/trace.json";

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceFile {
    pub version: u32,
    /// `tpulint <version>`.
    pub tool: String,
    /// Absolute project root; finding paths are relative to it.
    pub root: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    /// The traced command (`trace run`), or null (`trace import`).
    pub command: Option<Vec<String>>,
    /// The command's exit status; null for imports and for commands killed by a signal.
    pub exit_code: Option<i32>,
    /// The logs read (paths as given, or descriptions of a run's captured logs).
    pub logs: Vec<String>,
    pub findings: Vec<RuntimeFinding>,
    /// Events that could not be placed on a project line.
    pub unlocated: Vec<UnlocatedEvent>,
    /// Advice about the logs themselves (e.g. frames cut before the user's code).
    #[serde(default)]
    pub notes: Vec<String>,
    pub totals: Totals,
    /// Lines that ran, per project file (relative path → sorted 1-based lines); empty when the
    /// run had no coverage (`trace import`, `--no-coverage`).
    #[serde(default)]
    pub coverage: BTreeMap<String, Vec<u32>>,
}

/// One runtime finding on a project line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeFinding {
    /// `TPR…`.
    pub code: String,
    pub name: String,
    /// `error`, `warning` or `info`.
    pub severity: String,
    /// One line, ending with "(confirms TPU101)" when it confirms static findings.
    pub message: String,
    /// Relative to `root`, `/`-separated.
    pub path: String,
    /// 1-based.
    pub line: u32,
    /// How many events the finding aggregates (executions, graphs, fallback runs …).
    pub count: u64,
    /// The line's text when the trace was made; a line whose text differs now has been edited
    /// since, and its runtime finding no longer applies.
    pub line_text: String,
    /// Static codes on the same line that this finding confirms.
    pub confirms: Vec<String>,
    /// How the line was found: `frame` (the log printed it) or `static-index` (an operation
    /// known only by name, placed on the calls that can run it).
    pub located_by: String,
}

/// An event without a project line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnlocatedEvent {
    pub code: String,
    pub message: String,
    pub count: u64,
}

/// Whole-run figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Compilation analyses.
    pub compilations: u64,
    /// Execution analyses (0 below `PT_XLA_DEBUG_LEVEL=2`).
    pub executions: u64,
    /// Compilations or executions caused by reading a tensor's value.
    pub value_reads: u64,
    /// Distinct graph hashes compiled.
    pub distinct_graphs: u64,
    /// The `MarkStep` counter, when metrics were read.
    pub syncs: Option<u64>,
    /// CPU fallbacks per operation (`aten::nonzero` → runs).
    pub fallback_ops: BTreeMap<String, u64>,
    pub dynamo_recompiles: u64,
    pub dynamo_graph_breaks: u64,
    /// `pt-xla-profiler:` warnings, one line each, deduplicated.
    pub profiler_warnings: Vec<String>,
}

impl TraceFile {
    /// Reads and validates a trace file; errors are one line.
    pub fn read(path: &Path) -> Result<TraceFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        TraceFile::parse(&text).map_err(|message| format!("{}: {message}", path.display()))
    }

    /// Parses a trace file's text.
    pub fn parse(text: &str) -> Result<TraceFile, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match value.get("version").and_then(serde_json::Value::as_u64) {
            Some(version) if version == u64::from(SCHEMA_VERSION) => {}
            Some(version) => {
                return Err(format!(
                    "trace schema version {version} is not supported (this tpulint reads version {SCHEMA_VERSION}); rerun `tpulint trace`"
                ));
            }
            None => return Err("not a tpulint trace (no `version`)".into()),
        }
        serde_json::from_value(value).map_err(|e| format!("invalid trace: {e}"))
    }

    /// Pretty JSON ending with a newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Writes the file atomically (temporary file and rename), creating `.tpulint/`.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let parent = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        std::fs::create_dir_all(&parent)
            .map_err(|e| format!("{}: cannot create: {e}", parent.display()))?;
        let temporary = parent.join(format!(
            ".{}.tmp{}",
            path.file_name()
                .map_or_else(|| "trace.json".into(), |n| n.to_string_lossy()),
            std::process::id()
        ));
        std::fs::write(&temporary, self.to_json())
            .map_err(|e| format!("{}: cannot write: {e}", temporary.display()))?;
        std::fs::rename(&temporary, path).map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            format!("{}: cannot write: {e}", path.display())
        })
    }
}
