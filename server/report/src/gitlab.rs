//! The `gitlab` format: a GitLab Code Quality report (a subset of Code Climate's issue format),
//! which merge requests show as a widget and in the diff. Fields as ruff writes them:
//! `check_name` (the code), `description` (code and message, since GitLab shows only the
//! description), `fingerprint`, `severity`, and `location.path` with `location.lines.begin`.
//!
//! Paths are relative to `$CI_PROJECT_DIR` when the caller passes it (GitLab resolves them
//! against the checkout), else as displayed. In a notebook, whose cells GitLab cannot point
//! into, the location is the file's first line and the description names the cell. Fingerprints are stable across runs and machines
//! (an FNV-1a hash of the code, the path and the flagged line's text, not of its number, so a
//! finding keeps its identity when lines are added above it) and unique within a report.

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;
use tpulint_analyzer::{Diagnostic, Severity};

use crate::location::SourceFile;

#[derive(Debug, Serialize)]
struct Issue {
    check_name: &'static str,
    description: String,
    fingerprint: String,
    severity: &'static str,
    location: IssueLocation,
}

#[derive(Debug, Serialize)]
struct IssueLocation {
    path: String,
    lines: Lines,
}

#[derive(Debug, Serialize)]
struct Lines {
    begin: usize,
    end: usize,
}

/// GitLab's severities are `info`, `minor`, `major`, `critical` and `blocker`; ruff, which has
/// no severities, writes `major` for everything.
fn severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "critical",
        Severity::Warning => "major",
        Severity::Info => "info",
    }
}

/// The path GitLab expects: relative to the project directory when the file lies inside it.
fn report_path(file: &SourceFile, project_dir: Option<&Path>) -> String {
    let relative = project_dir.and_then(|root| {
        let absolute = Path::new(file.absolute_path.as_deref()?);
        let relative = absolute.strip_prefix(root).ok()?;
        Some(relative.to_string_lossy().replace('\\', "/"))
    });
    relative.unwrap_or_else(|| file.name.replace('\\', "/"))
}

/// 64-bit FNV-1a: small, dependency-free, and the same on every platform and Rust version
/// (std's `DefaultHasher` is not guaranteed to be), which a fingerprint compared across
/// pipelines needs.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.iter().chain(std::iter::once(&0xff)) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// A GitLab Code Quality report of every diagnostic (pretty-printed JSON ending with a newline).
/// `project_dir` is `$CI_PROJECT_DIR` when set.
pub fn render_gitlab(files: &[SourceFile], project_dir: Option<&Path>) -> String {
    let mut seen = HashSet::new();
    let mut issues = Vec::new();
    for file in files {
        let path = report_path(file, project_dir);
        for diagnostic in &file.diagnostics {
            issues.push(issue(file, diagnostic, &path, &mut seen));
        }
    }
    let mut out = serde_json::to_string_pretty(&issues).unwrap_or_else(|_| "[]".to_string());
    out.push('\n');
    out
}

fn issue(file: &SourceFile, diagnostic: &Diagnostic, path: &str, seen: &mut HashSet<u64>) -> Issue {
    let begin = file.location(diagnostic.range.start);
    let end = file.location(diagnostic.range.end);
    let line_text = file.line_text(begin.module_row - 1).trim();
    let mut fingerprint = fnv1a(&[
        diagnostic.code.as_bytes(),
        path.as_bytes(),
        line_text.as_bytes(),
    ]);
    // Two identical findings on identical lines of one file: salt with the previous value
    // until the fingerprint is unused, which keeps both stable as long as their order is.
    while !seen.insert(fingerprint) {
        fingerprint = fnv1a(&[&fingerprint.to_le_bytes(), diagnostic.code.as_bytes()]);
    }
    // GitLab shows a notebook as its JSON, whose lines are not the cell's: point at the JSON
    // line that holds the finding (the file's first line when the layout is unknown), and say
    // in the description where in the notebook it is.
    let description = match begin.cell {
        Some(cell) => format!(
            "{}: {} (cell {cell}, line {})",
            diagnostic.code, diagnostic.message, begin.row
        ),
        None => format!("{}: {}", diagnostic.code, diagnostic.message),
    };
    let lines = Lines {
        begin: begin.file_row,
        end: end.file_row.max(begin.file_row),
    };
    Issue {
        check_name: diagnostic.code,
        description,
        fingerprint: format!("{fingerprint:016x}"),
        severity: severity(diagnostic.severity),
        location: IssueLocation {
            path: path.to_string(),
            lines,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_is_the_published_function() {
        // FNV-1a of the empty input is the offset basis; of "a" a published test vector
        // (before the part separator this module appends).
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        hash ^= u64::from(b'a');
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        assert_eq!(hash, 0xaf63_dc4c_8601_ec8c);
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }
}
