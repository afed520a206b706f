//! What the WebAssembly exports compute, as plain Rust returning JSON text (tested natively).
//!
//! Diagnostics are rendered by `tpulint_report::json`, the CLI's `--output-format json` (ruff's
//! schema), so the browser and the terminal cannot drift apart. Each object gains one key the
//! CLI's lacks: `severity` (`error`, `warning`, `info`), which editors need to colour a finding
//! and ruff's schema has no place for. Rules carry the keys of `tpulint rule --output-format json`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use tpulint_analyzer::{Applicability, check_source, fix_source, rules};
use tpulint_report::SourceFile;
use tpulint_report::json::{JsonDiagnostic, json_diagnostic, rule_json, runtime_code_json};

use crate::options::CheckOptions;

/// The one key added to each object of the CLI's JSON.
pub const EXTRA_DIAGNOSTIC_KEYS: &[&str] = &["severity"];

/// `check`: the diagnostics of `source` in the CLI's JSON format, plus `severity`.
pub fn check_json(source: &str, options: &CheckOptions) -> Result<String, String> {
    let settings = options.settings()?;
    let diagnostics = check_source(source, &settings);
    let file = SourceFile::new(options.filename(), source.to_string(), diagnostics);
    serde_json::to_string(&json_diagnostics(&file)).map_err(|error| error.to_string())
}

/// The diagnostics of `file` as the CLI's JSON objects (which carry `severity` already).
/// Serialised straight to text, never through `serde_json::Value`: a second serializer would
/// cost the WebAssembly module room it does not have.
fn json_diagnostics(file: &SourceFile) -> Vec<JsonDiagnostic> {
    file.diagnostics
        .iter()
        .map(|diagnostic| json_diagnostic(file, diagnostic))
        .collect()
}

/// What `applyFixes` returns.
#[derive(Serialize)]
struct FixResult<'a> {
    converged: bool,
    fixed: &'a BTreeMap<&'static str, usize>,
    output: &'a str,
    remaining: Vec<JsonDiagnostic>,
}

/// `applyFixes`: the text after fixing to a fixed point (what `tpulint check --fix` writes),
/// the number of fixes per code, the diagnostics left in the fixed text, and whether fixing
/// converged. Unsafe fixes are applied only when `include_unsafe` (`--unsafe-fixes`).
pub fn apply_fixes_json(
    source: &str,
    options: &CheckOptions,
    include_unsafe: bool,
) -> Result<String, String> {
    let settings = options.settings()?;
    let threshold = if include_unsafe {
        Applicability::Unsafe
    } else {
        Applicability::Safe
    };
    let outcome = fix_source(source, &settings, threshold);
    let file = SourceFile::new(
        options.filename(),
        outcome.output.clone(),
        outcome.remaining,
    );
    let result = FixResult {
        converged: outcome.converged,
        fixed: &outcome.fixed,
        output: &outcome.output,
        remaining: json_diagnostics(&file),
    };
    serde_json::to_string(&result).map_err(|error| error.to_string())
}

/// `rules`: every rule's metadata, sorted by code, then the runtime codes of `tpulint trace`
/// (as `tpulint rule --all --output-format json` lists them).
pub fn rules_json() -> String {
    let list: Vec<Value> = rules()
        .iter()
        .map(|rule| rule_json(rule))
        .chain(
            tpulint_analyzer::RUNTIME_CODES
                .iter()
                .map(|code| runtime_code_json(code)),
        )
        .collect();
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(json: &str) -> CheckOptions {
        CheckOptions::from_json(json).unwrap()
    }

    const CUDA_SOURCE: &str = "import torch\nx = torch.ones(2).to(\"cuda\")\n";

    #[test]
    fn check_renders_the_cli_json() {
        let json = check_json(
            CUDA_SOURCE,
            &options(r#"{"filename":"t.py","select":["TPU401"]}"#),
        )
        .unwrap();
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value[0]["code"], "TPU401");
        assert_eq!(value[0]["filename"], "t.py");
        assert_eq!(value[0]["location"]["row"], 2);
        assert_eq!(value[0]["severity"], "error");
    }

    #[test]
    fn selection_is_honoured() {
        let json = check_json(CUDA_SOURCE, &options(r#"{"ignore":["TPU4"]}"#)).unwrap();
        assert_eq!(json.trim(), "[]");
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(check_json(CUDA_SOURCE, &options(r#"{"select":["nope"]}"#)).is_err());
    }

    #[test]
    fn unsafe_fixes_only_when_asked() {
        let only_cuda = options(r#"{"select":["TPU401"],"backend":"torch_xla"}"#);
        let safe_only = apply_fixes_json(CUDA_SOURCE, &only_cuda, false).unwrap();
        let with_unsafe = apply_fixes_json(CUDA_SOURCE, &only_cuda, true).unwrap();
        let safe_only: Value = serde_json::from_str(&safe_only).unwrap();
        let with_unsafe: Value = serde_json::from_str(&with_unsafe).unwrap();
        assert_eq!(with_unsafe["converged"], true);
        assert_ne!(with_unsafe["output"], CUDA_SOURCE);
        assert!(with_unsafe["fixed"]["TPU401"].as_u64().unwrap() >= 1);
        assert!(with_unsafe["remaining"].as_array().unwrap().is_empty());
        // TPU401's device rewrite changes behaviour, so `--fix` alone leaves it.
        assert_eq!(safe_only["output"], CUDA_SOURCE);
        assert_eq!(safe_only["remaining"][0]["code"], "TPU401");
    }

    #[test]
    fn rules_are_listed() {
        let value: Value = serde_json::from_str(&rules_json()).unwrap();
        assert!(
            value
                .as_array()
                .unwrap()
                .iter()
                .any(|rule| rule["code"] == "TPU101")
        );
    }
}
