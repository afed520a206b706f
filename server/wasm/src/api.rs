//! What the WebAssembly exports compute, as plain Rust returning JSON text (tested natively).
//!
//! Diagnostics are rendered by `tpulint_report::json`, the CLI's `--output-format json` (ruff's
//! schema), so the browser and the terminal cannot drift apart. Each object gains one key the
//! CLI's lacks: `severity` (`error`, `warning`, `info`), which editors need to colour a finding
//! and ruff's schema has no place for. Rules carry the keys of `tpulint rule --output-format json`.

use std::collections::BTreeMap;

use serde::Serialize;
use tpulint_analyzer::registry::HAS_DOCS;
use tpulint_analyzer::{Applicability, check_source, fix_source, rules};
use tpulint_report::SourceFile;
use tpulint_report::json::{JsonDiagnostic, json_diagnostic};

use crate::options::CheckOptions;

/// The one key added to each object of the CLI's JSON.
pub const EXTRA_DIAGNOSTIC_KEYS: &[&str] = &["severity"];

/// `check`: the diagnostics of `source` in the CLI's JSON format, plus `severity`.
pub fn check_json(source: &str, options: &CheckOptions) -> Result<String, String> {
    let settings = options.settings()?;
    let diagnostics = check_source(source, &settings);
    let file = SourceFile::new(options.filename(), source.to_string(), diagnostics);
    to_json(&json_diagnostics(&file))
}

/// JSON text of `value`. Serialising these types cannot fail; the error is not formatted, since
/// serde_json's error messages (and `std::io::Error`'s, which they include) would be linked in.
fn to_json(value: &impl Serialize) -> Result<String, String> {
    serde_json::to_string(value).map_err(|_| "tpulint could not serialise its result".to_string())
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
    to_json(&result)
}

/// The keys of `tpulint rule --output-format json` that come from the documentation: a build
/// without it (the WebAssembly module, see `HAS_DOCS`) leaves them out of `rules()`, and hosts
/// read them from the `rule-docs.json` that `build.sh` writes beside the module.
pub const DOCUMENTATION_KEYS: &[&str] = &["summary", "explanation"];

/// One entry of `rules()`: the keys of `tpulint_report::json::rule_json` (and
/// `runtime_code_json`), serialised directly rather than through `serde_json::Value`, whose
/// map and serializer would cost the module room it does not have. `fixtures.test.mjs` checks
/// that the list equals the CLI's.
#[derive(Serialize)]
struct RuleEntry<'a> {
    code: &'a str,
    name: &'a str,
    family: &'a str,
    severity: &'a str,
    fix: &'a str,
    enabled_by_default: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    explanation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confirms: Option<&'a [&'a str]>,
}

/// `rules`: every rule's metadata, sorted by code, then the runtime codes of `tpulint trace`
/// (as `tpulint rule --all --output-format json` lists them, without [`DOCUMENTATION_KEYS`] when
/// this build carries no documentation).
pub fn rules_json() -> String {
    // Lazily: without the documentation, the summary's text processing is not linked at all.
    fn documented(text: impl FnOnce() -> String) -> Option<String> {
        HAS_DOCS.then(text)
    }
    let list: Vec<RuleEntry<'_>> = rules()
        .iter()
        .map(|rule| RuleEntry {
            code: rule.code,
            name: rule.name,
            family: rule.family().name(),
            severity: rule.severity.as_str(),
            fix: rule.fix.as_str(),
            enabled_by_default: rule.enabled_by_default,
            summary: documented(|| rule.summary()),
            url: rule.url(),
            explanation: documented(|| rule.docs_markdown()),
            confirms: None,
        })
        .chain(
            tpulint_analyzer::RUNTIME_CODES
                .iter()
                .map(|code| RuleEntry {
                    code: code.code,
                    name: code.name,
                    family: "runtime",
                    severity: code.severity.as_str(),
                    fix: "none",
                    enabled_by_default: false,
                    summary: documented(|| code.summary()),
                    url: code.url(),
                    explanation: documented(|| code.docs.to_string()),
                    confirms: Some(code.confirms),
                }),
        )
        .collect();
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

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
        for rule in value.as_array().unwrap() {
            for key in DOCUMENTATION_KEYS {
                assert_eq!(
                    rule.get(*key).is_some(),
                    HAS_DOCS,
                    "{key} of {}",
                    rule["code"]
                );
            }
        }
    }
}
