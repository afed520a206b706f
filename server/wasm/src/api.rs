//! What the WebAssembly exports compute, as plain Rust returning JSON text (tested natively).
//!
//! Diagnostics are rendered by `tpulint_report::json`, the CLI's `--output-format json` (ruff's
//! schema), so the browser and the terminal cannot drift apart. Each object gains one key the
//! CLI's lacks: `severity` (`error`, `warning`, `info`), which editors need to colour a finding
//! and ruff's schema has no place for. Rules carry the keys of `tpulint rule --output-format json`.

use tpulint_analyzer::registry::HAS_DOCS;
use tpulint_analyzer::{Applicability, check_source, fix_source, rules};
use tpulint_ide::server::json::write_string;
use tpulint_report::SourceFile;
use tpulint_report::json::{JsonDiagnostic, JsonLocation, json_diagnostic};

use crate::options::CheckOptions;

/// The one key added to each object of the CLI's JSON.
pub const EXTRA_DIAGNOSTIC_KEYS: &[&str] = &["severity"];

/// `check`: the diagnostics of `source` in the CLI's JSON format, plus `severity`.
pub fn check_json(source: &str, options: &CheckOptions) -> Result<String, String> {
    let settings = options.settings()?;
    let diagnostics = check_source(source, &settings);
    let file = SourceFile::new(options.filename(), source.to_string(), diagnostics);
    let mut out = Json::default();
    out.diagnostics(&file);
    Ok(out.0)
}

/// Compact JSON text, written by hand: the exports' three shapes (diagnostics, the fix result,
/// the rule list), strings escaped by `tpulint_ide`'s JSON module (whose parser reads the
/// options), without serde_json's serializer and the `Serialize` code of each type: about
/// 4.8 KB raw and 1.9 KB gzipped of the WebAssembly module (docs/benchmarks.md, session 25).
/// The keys are in the order serde's derived `Serialize` writes the CLI's structs (their
/// fields' order); hosts parse the text (`JSON.parse`), and `fixtures.test.mjs` and the unit
/// test below compare it with the CLI's.
#[derive(Default)]
struct Json(String);

impl Json {
    /// `"key":` after a `,` unless it opens its object or array.
    fn key(&mut self, key: &str) {
        if !self.0.ends_with(['{', '[']) {
            self.0.push(',');
        }
        write_string(key, &mut self.0);
        self.0.push(':');
    }

    fn string(&mut self, key: &str, text: &str) {
        self.key(key);
        write_string(text, &mut self.0);
    }

    fn number(&mut self, key: &str, number: usize) {
        self.key(key);
        self.0.push_str(&number.to_string());
    }

    /// `value` or `null`.
    fn optional_string(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(text) => self.string(key, text),
            None => self.raw(key, "null"),
        }
    }

    /// `"key":` then `text` as it is (a literal: `true`, `null`, `{`, `[`).
    fn raw(&mut self, key: &str, text: &str) {
        self.key(key);
        self.0.push_str(text);
    }

    /// A value in an array: a `,` before every one but the first.
    fn element(&mut self) {
        if !self.0.ends_with('[') {
            self.0.push(',');
        }
    }

    fn location(&mut self, key: &str, location: &JsonLocation) {
        self.raw(key, "{");
        self.number("column", location.column);
        self.number("row", location.row);
        self.0.push('}');
    }

    /// The diagnostics of `file` as the CLI's JSON objects (which carry `severity` already).
    fn diagnostics(&mut self, file: &SourceFile) {
        self.0.push('[');
        for diagnostic in &file.diagnostics {
            self.element();
            self.diagnostic(&json_diagnostic(file, diagnostic));
        }
        self.0.push(']');
    }

    fn diagnostic(&mut self, diagnostic: &JsonDiagnostic) {
        self.0.push('{');
        match diagnostic.cell {
            Some(cell) => self.number("cell", cell),
            None => self.raw("cell", "null"),
        }
        self.optional_string("code", diagnostic.code);
        self.location("end_location", &diagnostic.end_location);
        self.string("filename", &diagnostic.filename);
        match &diagnostic.fix {
            Some(fix) => {
                self.raw("fix", "{");
                self.string("applicability", fix.applicability);
                self.raw("edits", "[");
                for edit in &fix.edits {
                    self.element();
                    self.0.push('{');
                    self.string("content", &edit.content);
                    self.location("end_location", &edit.end_location);
                    self.location("location", &edit.location);
                    self.0.push('}');
                }
                self.0.push(']');
                self.optional_string("message", fix.message.as_deref());
                self.0.push('}');
            }
            None => self.raw("fix", "null"),
        }
        self.location("location", &diagnostic.location);
        self.string("message", &diagnostic.message);
        self.string("name", diagnostic.name);
        match diagnostic.noqa_row {
            Some(row) => self.number("noqa_row", row),
            None => self.raw("noqa_row", "null"),
        }
        self.string("severity", diagnostic.severity);
        self.optional_string("url", diagnostic.url.as_deref());
        self.0.push('}');
    }
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
    // `{"converged":…,"fixed":{code:count,…},"output":…,"remaining":[…]}`.
    let mut out = Json::default();
    out.0.push('{');
    out.raw(
        "converged",
        if outcome.converged { "true" } else { "false" },
    );
    out.raw("fixed", "{");
    for (code, count) in &outcome.fixed {
        out.number(code, *count);
    }
    out.0.push('}');
    out.string("output", &outcome.output);
    out.key("remaining");
    out.diagnostics(&file);
    out.0.push('}');
    Ok(out.0)
}

/// The keys of `tpulint rule --output-format json` that come from the documentation: a build
/// without it (the WebAssembly module, see `HAS_DOCS`) leaves them out of `rules()`, and hosts
/// read them from the `rule-docs.json` that `build.sh` writes beside the module.
pub const DOCUMENTATION_KEYS: &[&str] = &["summary", "explanation"];

/// One entry of `rules()`: the keys of `tpulint_report::json::rule_json` (and
/// `runtime_code_json`), written directly rather than through `serde_json::Value`, whose
/// map and serializer would cost the module room it does not have. `fixtures.test.mjs` checks
/// that the list equals the CLI's.
struct RuleEntry<'a> {
    code: &'a str,
    name: &'a str,
    family: &'a str,
    severity: &'a str,
    fix: &'a str,
    enabled_by_default: bool,
    /// Left out when `None`, as are `explanation` and `confirms`.
    summary: Option<String>,
    url: String,
    explanation: Option<String>,
    confirms: Option<&'a [&'a str]>,
}

impl RuleEntry<'_> {
    fn write(&self, out: &mut Json) {
        out.0.push('{');
        out.string("code", self.code);
        out.string("name", self.name);
        out.string("family", self.family);
        out.string("severity", self.severity);
        out.string("fix", self.fix);
        out.raw(
            "enabled_by_default",
            if self.enabled_by_default {
                "true"
            } else {
                "false"
            },
        );
        if let Some(summary) = &self.summary {
            out.string("summary", summary);
        }
        out.string("url", &self.url);
        if let Some(explanation) = &self.explanation {
            out.string("explanation", explanation);
        }
        if let Some(confirms) = self.confirms {
            out.raw("confirms", "[");
            for code in confirms {
                out.element();
                write_string(code, &mut out.0);
            }
            out.0.push(']');
        }
        out.0.push('}');
    }
}

/// `rules`: every rule's metadata, sorted by code, then the runtime codes of `tpulint trace`
/// (as `tpulint rule --all --output-format json` lists them, without [`DOCUMENTATION_KEYS`] when
/// this build carries no documentation).
pub fn rules_json() -> String {
    // Lazily: without the documentation, the summary's text processing is not linked at all.
    fn documented(text: impl FnOnce() -> String) -> Option<String> {
        HAS_DOCS.then(text)
    }
    let mut out = Json::default();
    out.0.push('[');
    for rule in rules().iter() {
        out.element();
        RuleEntry {
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
        }
        .write(&mut out);
    }
    for code in tpulint_analyzer::RUNTIME_CODES {
        out.element();
        RuleEntry {
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
        }
        .write(&mut out);
    }
    out.0.push(']');
    out.0
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

    /// The hand-written JSON parses to what serde writes for the CLI's structs: diagnostics
    /// with and without fixes, a notebook-less `cell`, escapes in messages and fix contents.
    #[test]
    fn hand_written_json_equals_the_clis() {
        let sources = [
            CUDA_SOURCE,
            "import torch\nfor x in loader:\n    print(f\"loss \\t {x.item()}\")\n",
            "import torch\nx = torch.zeros(3, device=\"cuda:0\")\ny = x.nonzero()\n",
            "",
        ];
        for source in sources {
            for settings in [r#"{"filename":"a \"b\".py"}"#, r#"{"select":["ALL"]}"#] {
                let options = options(settings);
                let json = check_json(source, &options).unwrap();
                let file = SourceFile::new(
                    options.filename(),
                    source.to_string(),
                    check_source(source, &options.settings().unwrap()),
                );
                let expected: Vec<JsonDiagnostic> = file
                    .diagnostics
                    .iter()
                    .map(|diagnostic| json_diagnostic(&file, diagnostic))
                    .collect();
                let value: Value = serde_json::from_str(&json).unwrap();
                assert_eq!(value, serde_json::to_value(&expected).unwrap(), "{source}");
            }
        }
        let listed: Value = serde_json::from_str(&rules_json()).unwrap();
        let mut expected: Vec<Value> = rules()
            .iter()
            .map(|rule| tpulint_report::json::rule_json(rule))
            .chain(
                tpulint_analyzer::RUNTIME_CODES
                    .iter()
                    .map(|code| tpulint_report::json::runtime_code_json(code)),
            )
            .collect();
        if !HAS_DOCS {
            for entry in &mut expected {
                for key in DOCUMENTATION_KEYS {
                    entry.as_object_mut().unwrap().remove(*key);
                }
            }
        }
        assert_eq!(listed, Value::Array(expected));
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
