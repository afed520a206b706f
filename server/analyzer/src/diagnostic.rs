//! What a rule reports: diagnostics, their severity, related locations, and fixes with an applicability.

use crate::source::TextRange;

/// How loudly a finding is shown.
///
/// `Error`: the code will raise on a TPU. `Warning`: a performance problem on a hot path.
/// `Info`: the same problem on a cold path, or advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// How far a fix may be trusted, as in ruff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Applicability {
    /// Shown for manual application only; never applied by `--fix`.
    DisplayOnly,
    /// May change behaviour; applied only with `--unsafe-fixes`.
    Unsafe,
    /// Keeps the exact meaning of the code.
    Safe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::DisplayOnly => "display-only",
            Applicability::Unsafe => "unsafe",
            Applicability::Safe => "safe",
        }
    }
}

/// Replace `range` with `content` (an insertion when the range is empty, a deletion when the content is).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Edit {
    pub range: TextRange,
    pub content: String,
}

impl Edit {
    pub fn replace(range: TextRange, content: impl Into<String>) -> Self {
        Edit {
            range,
            content: content.into(),
        }
    }
    pub fn insert(at: usize, content: impl Into<String>) -> Self {
        Edit {
            range: at..at,
            content: content.into(),
        }
    }
    pub fn delete(range: TextRange) -> Self {
        Edit {
            range,
            content: String::new(),
        }
    }
}

/// A set of non-overlapping edits that together resolve one diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    pub applicability: Applicability,
    /// Imperative phrase shown as the quick-fix title, e.g. "Replace `.cuda()` with `.to(device)`".
    pub title: String,
    /// Sorted by start offset, non-overlapping.
    pub edits: Vec<Edit>,
}

impl Fix {
    pub fn new(
        applicability: Applicability,
        title: impl Into<String>,
        mut edits: Vec<Edit>,
    ) -> Self {
        crate::sort::sort_stably_by_key(&mut edits, |edit| {
            (edit.range.start, edit.range.end, 0, "")
        });
        Fix {
            applicability,
            title: title.into(),
            edits,
        }
    }
    pub fn safe(title: impl Into<String>, edits: Vec<Edit>) -> Self {
        Fix::new(Applicability::Safe, title, edits)
    }
    pub fn unsafe_edit(title: impl Into<String>, edits: Vec<Edit>) -> Self {
        Fix::new(Applicability::Unsafe, title, edits)
    }
    pub fn display_only(title: impl Into<String>, edits: Vec<Edit>) -> Self {
        Fix::new(Applicability::DisplayOnly, title, edits)
    }

    /// The smallest range covering every edit.
    pub fn range(&self) -> TextRange {
        let start = self.edits.iter().map(|e| e.range.start).min().unwrap_or(0);
        let end = self.edits.iter().map(|e| e.range.end).max().unwrap_or(0);
        start..end
    }
}

/// A second location that explains a diagnostic, e.g. where a CPU tensor was created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    pub range: TextRange,
    pub message: String,
}

/// One finding in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Rule code, e.g. `TPU101`.
    pub code: &'static str,
    /// Rule name, e.g. `tensor-item-in-hot-path`.
    pub name: &'static str,
    /// One concise line.
    pub message: String,
    pub range: TextRange,
    pub severity: Severity,
    pub fix: Option<Fix>,
    pub related: Vec<Related>,
    /// Set when the finding concerns deprecated or unnecessary code (LSP tags).
    pub tag: Option<DiagnosticTag>,
}

/// Editor hints for how to render a diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticTag {
    Deprecated,
    Unnecessary,
}
