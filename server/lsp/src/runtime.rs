//! Runtime findings in the editor: the nearest `.tpulint/trace.json` above a document (written
//! by `tpulint trace run` / `import`) adds its findings on that document's lines, with source
//! `tpulint (runtime)`, and marks the static findings it confirms. A finding follows its line
//! when lines are inserted or deleted above it, and is dropped when that line's text changed. The file is re-read when its modification time or size
//! changes (checked on every publish) or when the client reports it changed.
//!
//! The hook into the server is narrow: the server publishes a document's analysis through
//! [`lsp_diagnostics`] and identifies it with [`result_id`] (which includes [`generation`], so a
//! reloaded trace changes pull results). Notebook cells show static findings only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::SystemTime;

use tower_lsp_server::ls_types::{self as lsp, CodeDescription, Uri};
use tpulint_analyzer::{Diagnostic, LineIndex};
use tpulint_ide::analysis::Analysis;
use tpulint_ide::encoding::PositionEncoding;
use tpulint_ide::to_proto;
use tpulint_trace::{TRACE_PATH, TraceFile, current_line, runtime_code};

/// The `source` of runtime diagnostics.
pub const RUNTIME_SOURCE: &str = "tpulint (runtime)";

/// Bumped whenever a trace is (re)loaded or dropped, so pull results change with it.
static GENERATION: AtomicU64 = AtomicU64::new(0);

struct Cached {
    stamp: Option<(SystemTime, u64)>,
    trace: Option<Arc<TraceFile>>,
}

static CACHE: LazyLock<Mutex<HashMap<PathBuf, Cached>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Part of every pull result id.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// The client reported a trace file change: forget what was read.
pub fn invalidate() {
    CACHE.lock().unwrap_or_else(|p| p.into_inner()).clear();
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Whether `path` is a trace file the server reads.
pub fn is_trace_file(path: &Path) -> bool {
    path.ends_with(TRACE_PATH)
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.modified().ok()?, metadata.len()))
}

/// The trace governing `document` and the directory its paths are relative to.
fn trace_for(document: &Path) -> Option<(PathBuf, Arc<TraceFile>)> {
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    for directory in document.ancestors().skip(1) {
        let candidate = directory.join(TRACE_PATH);
        let current = stamp(&candidate);
        let cached = cache.get(&candidate);
        let trace = match cached {
            Some(cached) if cached.stamp == current => cached.trace.clone(),
            _ => {
                // An unreadable or newer-schema file shows nothing rather than stale findings.
                let trace = current
                    .and_then(|_| TraceFile::read(&candidate).ok())
                    .map(Arc::new);
                if cached.is_some() || trace.is_some() {
                    GENERATION.fetch_add(1, Ordering::Relaxed);
                }
                cache.insert(
                    candidate.clone(),
                    Cached {
                        stamp: current,
                        trace: trace.clone(),
                    },
                );
                trace
            }
        };
        if let Some(trace) = trace {
            return Some((directory.to_path_buf(), trace));
        }
        if current.is_some() {
            // A trace file that cannot be read still ends the search: it is this project's.
            return None;
        }
    }
    None
}

/// A document's runtime diagnostics, and for each static diagnostic (by index) the runtime
/// codes that confirm it.
#[derive(Debug, Default)]
pub struct Runtime {
    pub diagnostics: Vec<Diagnostic>,
    pub confirmed: HashMap<usize, Vec<&'static str>>,
}

/// Runtime findings for the document at `path` with its current `text`.
pub fn decorate(
    path: &Path,
    text: &str,
    index: &LineIndex,
    static_diagnostics: &[Diagnostic],
) -> Runtime {
    let mut runtime = Runtime::default();
    let Some((root, trace)) = trace_for(path) else {
        return runtime;
    };
    let Ok(relative) = path.strip_prefix(&root) else {
        return runtime;
    };
    let relative = relative.to_string_lossy().replace('\\', "/");
    for finding in trace
        .findings
        .iter()
        .filter(|finding| finding.path == relative)
    {
        let Some(code) = runtime_code(&finding.code) else {
            continue;
        };
        let Some(line) = current_line(finding, text, index) else {
            continue;
        };
        for (position, diagnostic) in static_diagnostics.iter().enumerate() {
            if index.line_of(diagnostic.range.start) + 1 == line as usize
                && finding
                    .confirms
                    .iter()
                    .any(|confirmed| confirmed == diagnostic.code)
            {
                runtime
                    .confirmed
                    .entry(position)
                    .or_default()
                    .push(code.code);
            }
        }
    }
    runtime.diagnostics = tpulint_trace::diagnostics_for_text(&trace, &relative, text, index);
    runtime
}

/// Marks a static LSP diagnostic as confirmed at run time.
pub fn mark_confirmed(diagnostic: &mut lsp::Diagnostic, codes: &[&str]) {
    diagnostic
        .message
        .push_str(&format!(" (confirmed at run time: {})", codes.join(", ")));
}

/// Gives a converted runtime diagnostic its source and documentation link.
pub fn as_runtime(mut diagnostic: lsp::Diagnostic, code: &str) -> lsp::Diagnostic {
    diagnostic.source = Some(RUNTIME_SOURCE.to_string());
    diagnostic.code_description = runtime_code(code)
        .and_then(|code| Uri::from_str(&code.url()).ok())
        .map(|href| CodeDescription { href });
    diagnostic
}

/// A document's LSP diagnostics: its static findings (marked when a trace confirms them) and
/// the trace's runtime findings on its current lines.
pub fn lsp_diagnostics(
    analysis: &Analysis,
    uri: &Uri,
    encoding: PositionEncoding,
) -> Vec<lsp::Diagnostic> {
    let runtime = crate::session::file_path(uri)
        .map(|path| {
            decorate(
                &path,
                &analysis.text,
                &analysis.line_index,
                &analysis.diagnostics,
            )
        })
        .unwrap_or_default();
    let convert = |diagnostic: &Diagnostic| {
        to_proto::diagnostic(
            uri,
            &analysis.text,
            &analysis.line_index,
            diagnostic,
            encoding,
        )
    };
    let mut diagnostics: Vec<lsp::Diagnostic> = analysis
        .diagnostics
        .iter()
        .enumerate()
        .map(|(position, diagnostic)| {
            let mut converted = convert(diagnostic);
            if let Some(codes) = runtime.confirmed.get(&position) {
                mark_confirmed(&mut converted, codes);
            }
            converted
        })
        .collect();
    diagnostics.extend(
        runtime
            .diagnostics
            .iter()
            .map(|diagnostic| as_runtime(convert(diagnostic), diagnostic.code)),
    );
    diagnostics
}

/// Identifies a document's pull result: the analysis and the trace generation.
pub fn result_id(analysis: &Analysis) -> String {
    format!("{}:{}", analysis.result_id(), generation())
}
