//! Holds the CPU-fallback rules to the measured record (`server/analyzer/data/torch_xla-*-fallbacks.json`,
//! written by `scripts/measure-fallbacks.py` on real torch_xla).
//!
//! Each record case is the code the script ran: a setup and an op line. This test analyses the
//! same lines, placed in a module's `forward` under PyTorch/XLA, and checks:
//! - no TPU2xx rule reports an op line that the record says a TPU lowers;
//! - no value-dependent-shape rule (TPU301–TPU305) reports an op line that neither falls back nor
//!   has a value-dependent shape nor reads a value to the host;
//! - every op line that falls back on a TPU is reported by some TPU2xx/TPU3xx rule, except the
//!   gaps listed in [`KNOWN_GAPS`] with their reason (a listed gap that is now covered fails too);
//! - every qualified name a TPU2xx rule file names is covered by a record case.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use tpulint_analyzer::{BackendSetting, RuleId, RuleSet, Settings, check_source, rules};
use tpulint_tests::repo_root;

const RECORD: &str = "server/analyzer/data/torch_xla-2.9-fallbacks.json";

/// Cases that fall back on a TPU and that no rule reports, each with the reason it is left so.
const KNOWN_GAPS: &[(&str, &str)] = &[
    (
        "interpolate.1d.nearest",
        "`scale_factor=2` does not show the input's rank; 1-D nearest is reported when `size`/`scale_factor` is a one-element sequence",
    ),
    (
        "interpolate.3d.nearest",
        "`scale_factor=2` does not show the input's rank; 3-D nearest is reported when `size`/`scale_factor` has three elements",
    ),
    (
        "interpolate.1d.area",
        "`area` falls back only when the output size does not divide the input size, which is not known statically",
    ),
    (
        "interpolate.2d.area",
        "`area` falls back only when the output size does not divide the input size, which is not known statically",
    ),
    (
        "interpolate.3d.area",
        "`area` falls back only when the output size does not divide the input size, which is not known statically",
    ),
    (
        "adaptive_avg_pool2d.indivisible",
        "falls back only when the output size does not divide the input size, which is not known statically",
    ),
    (
        "repeat_interleave.output_size",
        "tensor `repeats` fall back even with `output_size=` (static shape, no host sync): TPU305 reports only the missing `output_size`; see its docs",
    ),
];

/// Names in the fallback rule files that are not ops (context managers a rule looks for).
const NOT_OPS: &[&str] = &["torch.no_grad", "torch.inference_mode"];

/// The value-dependent-shape rules whose claim is "no static output shape".
const SHAPE_RULES: &[&str] = &["TPU301", "TPU302", "TPU303", "TPU304", "TPU305"];

struct Case {
    id: String,
    op: String,
    falls_back: bool,
    /// The op raised or killed the process on torch_xla: worse than a fallback.
    broken: bool,
    value_dependent_shape: bool,
    host_read: bool,
    /// Codes reported on the op line(s).
    reported: BTreeSet<String>,
}

fn record() -> Value {
    let path = repo_root().join(RECORD);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{RECORD}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{RECORD}: {e}"))
}

fn string(case: &Value, key: &str) -> String {
    case[key]
        .as_str()
        .unwrap_or_else(|| panic!("{RECORD}: a case lacks `{key}`"))
        .to_string()
}

/// The module the meta-test analyses for one case: the script's lines in a `forward`.
fn probe_module(setup: &str, line: &str) -> (String, std::ops::Range<usize>) {
    let mut source = String::from(
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport torch_xla\nimport torchvision\n\ndevice = torch_xla.device()\n\n\nclass Probe(nn.Module):\n    def forward(self, batch):\n",
    );
    for text in setup.lines() {
        source.push_str("        ");
        source.push_str(text);
        source.push('\n');
    }
    let start = source.len();
    for text in line.lines() {
        source.push_str("        ");
        source.push_str(text);
        source.push('\n');
    }
    let end = source.len();
    source.push_str("        return batch\n");
    (source, start..end)
}

fn all_rules() -> Settings {
    let mut set = RuleSet::empty();
    for index in 0..rules().len() {
        set.set(RuleId(index as u16), true);
    }
    Settings {
        rules: set,
        backend: BackendSetting::TorchXla,
        ..Settings::default()
    }
}

fn cases() -> Vec<Case> {
    let record = record();
    assert_eq!(record["schema"], 1, "{RECORD}: unknown schema");
    let settings = all_rules();
    record["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| {
            let (source, op_lines) = probe_module(&string(case, "setup"), &string(case, "line"));
            let reported = check_source(&source, &settings)
                .into_iter()
                .filter(|d| op_lines.contains(&d.range.start))
                .map(|d| d.code.to_string())
                .collect();
            Case {
                id: string(case, "id"),
                op: string(case, "op"),
                falls_back: case["falls_back"].as_bool().expect("falls_back"),
                broken: !case["error"].is_null(),
                value_dependent_shape: case["value_dependent_shape"].as_bool().unwrap_or(false),
                host_read: case["host_read"].as_bool().unwrap_or(false),
                reported,
            }
        })
        .collect()
}

fn is_fallback_rule(code: &str) -> bool {
    code.starts_with("TPU2")
}

#[test]
fn no_rule_claims_a_fallback_the_record_says_lowers() {
    let mut wrong = Vec::new();
    for case in cases() {
        let fallback_claims: Vec<&String> = case
            .reported
            .iter()
            .filter(|c| is_fallback_rule(c))
            .collect();
        if !case.falls_back && !case.broken && !fallback_claims.is_empty() {
            wrong.push(format!(
                "{} ({}): {fallback_claims:?} report a CPU fallback, but the record says it is lowered",
                case.id, case.op
            ));
        }
        let shape_claims: Vec<&String> = case
            .reported
            .iter()
            .filter(|c| SHAPE_RULES.contains(&c.as_str()))
            .collect();
        if !case.falls_back
            && !case.broken
            && !case.value_dependent_shape
            && !case.host_read
            && !shape_claims.is_empty()
        {
            wrong.push(format!(
                "{} ({}): {shape_claims:?} report a value-dependent op, but the record measured a static shape, no fallback and no host read",
                case.id, case.op
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_measured_fallback_is_reported() {
    let gaps: BTreeMap<&str, &str> = KNOWN_GAPS.iter().copied().collect();
    let mut missed = Vec::new();
    let mut stale = Vec::new();
    for case in cases() {
        let covered = case
            .reported
            .iter()
            .any(|c| is_fallback_rule(c) || SHAPE_RULES.contains(&c.as_str()));
        match (
            case.falls_back && !covered,
            gaps.contains_key(case.id.as_str()),
        ) {
            (true, false) => missed.push(format!(
                "{} ({}): falls back on torch_xla 2.9, and no rule reports it",
                case.id, case.op
            )),
            (false, true) => stale.push(format!(
                "{}: listed in KNOWN_GAPS but reported now (or no longer a fallback)",
                case.id
            )),
            _ => {}
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}

#[test]
fn every_op_a_fallback_rule_names_is_measured() {
    let record = record();
    let measured: BTreeSet<String> = record["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|case| string(case, "op"))
        .collect();
    let directory = repo_root().join("server/analyzer/src/rules/cpu_fallback");
    let mut unmeasured = Vec::new();
    for entry in std::fs::read_dir(&directory).expect("cpu_fallback rules") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("rule file");
        // Qualified names in string literals outside doc comments: the rule's trigger list.
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for literal in line.split('"').skip(1).step_by(2) {
                let is_name = (literal.starts_with("torch.")
                    || literal.starts_with("torchvision."))
                    && literal
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_');
                // `torch.m` also names the method `x.m()`; a prefix (`torch.fft.`) is covered by
                // the ops measured under it.
                let method = literal.replacen("torch.", "torch.Tensor.", 1);
                let covered = measured.contains(literal)
                    || measured.contains(&method)
                    || measured
                        .iter()
                        .any(|op| op.starts_with(literal) && op != literal)
                    || NOT_OPS.contains(&literal);
                if is_name && !covered {
                    unmeasured.push(format!(
                        "{}: `{literal}` is not measured in {RECORD}",
                        path.file_name().unwrap().to_string_lossy()
                    ));
                }
            }
        }
    }
    unmeasured.sort();
    unmeasured.dedup();
    assert!(unmeasured.is_empty(), "{}", unmeasured.join("\n"));
}
