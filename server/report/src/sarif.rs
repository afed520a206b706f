//! The `sarif` format: a SARIF 2.1.0 log for code-scanning services, with every rule's metadata
//! in `tool.driver.rules` (id, name, short and full descriptions, help URI and Markdown, default
//! level) and one result per diagnostic. Columns count Unicode code points, as declared in
//! `columnKind`.

use serde_json::{Value, json};
use tpulint_analyzer::{Applicability, Diagnostic, RuleMeta, Severity, rules};

use crate::location::SourceFile;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const INFORMATION_URI: &str = "https://github.com/tpulint/tpulint";

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The paragraphs under `## Why is this bad?`, joined, for `fullDescription`.
fn why_is_this_bad(rule: &RuleMeta) -> String {
    let docs = rule.docs_markdown();
    let body = docs
        .split("## Why is this bad?")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or("");
    let text = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        rule.summary()
    } else {
        text
    }
}

fn rule_descriptor(rule: &RuleMeta) -> Value {
    json!({
        "id": rule.code,
        "name": rule.name,
        "shortDescription": { "text": rule.summary() },
        "fullDescription": { "text": why_is_this_bad(rule) },
        "help": { "text": rule.summary(), "markdown": rule.docs_markdown() },
        "helpUri": rule.url(),
        "defaultConfiguration": { "level": level(rule.severity) },
        "properties": {
            "family": rule.family().name(),
            "fix": rule.fix.as_str(),
            "tags": [rule.family().name()],
        },
    })
}

/// A `file:` URI for an absolute path, or the relative path itself (resolved by consumers
/// against the checkout root, `%SRCROOT%`).
fn artifact_location(file: &SourceFile) -> Value {
    match &file.absolute_path {
        Some(path) if path.starts_with('/') => {
            json!({ "uri": format!("file://{}", encode_uri_path(path)) })
        }
        _ => {
            json!({ "uri": encode_uri_path(&file.name.replace('\\', "/")), "uriBaseId": "%SRCROOT%" })
        }
    }
}

/// Percent-encodes the characters a URI path may not hold.
fn encode_uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

fn result(file: &SourceFile, diagnostic: &Diagnostic, rule_index: Option<usize>) -> Value {
    let start = file.location(diagnostic.range.start);
    let end = file.location(diagnostic.range.end);
    let mut result = json!({
        "ruleId": diagnostic.code,
        "level": level(diagnostic.severity),
        "message": { "text": diagnostic.message },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": artifact_location(file),
                "region": {
                    "startLine": start.file_row,
                    "startColumn": start.file_column,
                    "endLine": end.file_row,
                    "endColumn": end.file_column,
                },
            },
        }],
    });
    // A notebook's region is in its JSON; where the finding is in the notebook goes in the
    // result's property bag (SARIF has no notion of cells).
    if let Some(cell) = start.cell {
        result["properties"] = json!({ "cell": cell, "row": start.row, "column": start.column });
    }
    if let Some(index) = rule_index {
        result["ruleIndex"] = json!(index);
    }
    // A fix of a notebook edits a cell's text, not the JSON a SARIF consumer would patch:
    // notebooks are fixed with `tpulint check --fix`, never through SARIF replacements.
    if let Some(fix) = diagnostic
        .fix
        .as_ref()
        .filter(|fix| fix.applicability != Applicability::DisplayOnly)
        .filter(|_| start.cell.is_none())
    {
        let replacements: Vec<Value> = fix
            .edits
            .iter()
            .map(|edit| {
                let from = file.location(edit.range.start);
                let to = file.location(edit.range.end);
                json!({
                    "deletedRegion": {
                        "startLine": from.row,
                        "startColumn": from.column,
                        "endLine": to.row,
                        "endColumn": to.column,
                    },
                    "insertedContent": { "text": edit.content },
                })
            })
            .collect();
        result["fixes"] = json!([{
            "description": { "text": fix.title },
            "artifactChanges": [{
                "artifactLocation": artifact_location(file),
                "replacements": replacements,
            }],
        }]);
    }
    result
}

/// A complete SARIF log (pretty-printed, ending with a newline).
pub fn render_sarif(files: &[SourceFile]) -> String {
    let all_rules = rules();
    let results: Vec<Value> = files
        .iter()
        .flat_map(|file| {
            file.diagnostics.iter().map(move |diagnostic| {
                let index = all_rules
                    .iter()
                    .position(|rule| rule.code == diagnostic.code);
                result(file, diagnostic, index)
            })
        })
        .collect();
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "tpulint",
                    "informationUri": INFORMATION_URI,
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": all_rules.iter().map(|rule| rule_descriptor(rule)).collect::<Vec<_>>(),
                },
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    let mut out = serde_json::to_string_pretty(&log).unwrap_or_else(|_| "{}".to_string());
    out.push('\n');
    out
}
