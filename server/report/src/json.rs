//! The `json` and `json-lines` formats: exactly ruff's `--output-format json` schema, so tools that read ruff's
//! JSON (editors, CI annotators, dashboards) read tpulint's.
//!
//! A list of objects with the keys `cell`, `code`, `end_location`, `filename`, `fix`,
//! `location`, `message`, `name`, `noqa_row`, `severity`, `url`, in that (alphabetical) order, as
//! ruff 0.17 prints them (`name` and `severity` are ruff's newer additions); rows and columns are
//! 1-based, columns count characters.

use serde::Serialize;
use tpulint_analyzer::{Diagnostic, RuleMeta, RuntimeCode, rule_by_code_or_name, runtime_code};

use crate::location::SourceFile;

#[derive(Debug, Serialize)]
pub struct JsonLocation {
    pub column: usize,
    pub row: usize,
}

#[derive(Debug, Serialize)]
pub struct JsonEdit {
    pub content: String,
    pub end_location: JsonLocation,
    pub location: JsonLocation,
}

#[derive(Debug, Serialize)]
pub struct JsonFix {
    /// `safe`, `unsafe` or `display-only`.
    pub applicability: &'static str,
    pub edits: Vec<JsonEdit>,
    pub message: Option<String>,
}

/// One diagnostic as ruff serialises it.
#[derive(Debug, Serialize)]
pub struct JsonDiagnostic {
    /// The notebook cell (1-based over all cells) the diagnostic starts in; rows and columns
    /// then count inside that cell. Null outside notebooks.
    pub cell: Option<usize>,
    /// The rule code; null for a syntax or I/O error, which no rule reports (as in ruff).
    pub code: Option<&'static str>,
    pub end_location: JsonLocation,
    pub filename: String,
    pub fix: Option<JsonFix>,
    pub location: JsonLocation,
    pub message: String,
    /// The rule's kebab-case name.
    pub name: &'static str,
    /// The row a `# noqa` comment must be on to suppress this diagnostic; null when none can.
    pub noqa_row: Option<usize>,
    /// `error`, `warning` or `info`.
    pub severity: &'static str,
    pub url: Option<String>,
}

fn location(file: &SourceFile, offset: usize) -> JsonLocation {
    let location = file.location(offset);
    JsonLocation {
        column: location.column,
        row: location.row,
    }
}

/// Converts one diagnostic of `file`.
pub fn json_diagnostic(file: &SourceFile, diagnostic: &Diagnostic) -> JsonDiagnostic {
    let fix = diagnostic.fix.as_ref().map(|fix| JsonFix {
        applicability: fix.applicability.as_str(),
        edits: fix
            .edits
            .iter()
            .map(|edit| JsonEdit {
                content: edit.content.clone(),
                end_location: location(file, edit.range.end),
                location: location(file, edit.range.start),
            })
            .collect(),
        message: Some(fix.title.clone()),
    });
    let start_cell = file.location(diagnostic.range.start).cell;
    let start = location(file, diagnostic.range.start);
    let rule = rule_by_code_or_name(diagnostic.code);
    // A runtime finding of `tpulint trace` has a code and a page, but no `# noqa` silences it.
    let runtime = runtime_code(diagnostic.code);
    JsonDiagnostic {
        cell: start_cell,
        code: rule
            .map(|_| diagnostic.code)
            .or(runtime.map(|code| code.code)),
        end_location: location(file, diagnostic.range.end),
        filename: file.full_path().to_string(),
        fix,
        noqa_row: rule.map(|_| start.row),
        location: start,
        message: diagnostic.message.clone(),
        name: diagnostic.name,
        severity: diagnostic.severity.as_str(),
        url: rule
            .map(|id| id.meta().url())
            .or_else(|| runtime.map(|code| code.url())),
    }
}

/// Every diagnostic of every file as one pretty-printed JSON array (ending with a newline).
pub fn render_json(files: &[SourceFile]) -> String {
    let items: Vec<JsonDiagnostic> = files
        .iter()
        .flat_map(|file| {
            file.diagnostics
                .iter()
                .map(move |diagnostic| json_diagnostic(file, diagnostic))
        })
        .collect();
    let mut out = serde_json::to_string_pretty(&items).unwrap_or_else(|_| "[]".to_string());
    out.push('\n');
    out
}

/// The `json-lines` format (ruff's): the same objects as `json`, one compact object per line,
/// so that a consumer can stream the findings of a large run.
pub fn render_json_lines(files: &[SourceFile]) -> String {
    let mut out = String::new();
    for file in files {
        for diagnostic in &file.diagnostics {
            if let Ok(line) = serde_json::to_string(&json_diagnostic(file, diagnostic)) {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out
}

/// One rule's metadata, as `tpulint rule --output-format json` prints it and the wasm `rules()`
/// returns it.
pub fn rule_json(rule: &RuleMeta) -> serde_json::Value {
    serde_json::json!({
        "code": rule.code,
        "name": rule.name,
        "family": rule.family().name(),
        "severity": rule.severity.as_str(),
        "fix": rule.fix.as_str(),
        "enabled_by_default": rule.enabled_by_default,
        "summary": rule.summary(),
        "url": rule.url(),
        "explanation": rule.docs_markdown(),
    })
}

/// A runtime code's metadata (`tpulint trace`), with the keys of [`rule_json`]: family
/// `runtime`, no fix, never enabled in `check` (a trace reports it), plus the static code
/// prefixes it confirms.
pub fn runtime_code_json(code: &RuntimeCode) -> serde_json::Value {
    serde_json::json!({
        "code": code.code,
        "name": code.name,
        "family": "runtime",
        "severity": code.severity.as_str(),
        "fix": "none",
        "enabled_by_default": false,
        "summary": code.summary(),
        "url": code.url(),
        "explanation": code.docs,
        "confirms": code.confirms,
    })
}
