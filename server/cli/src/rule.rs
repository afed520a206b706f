//! `tpulint rule`: a rule's documentation as Markdown (`tpulint rule TPU101`, or by name), or
//! the table of every rule with whether it is on by default (`tpulint rule --all`, as text or
//! JSON). The runtime codes of `tpulint trace` (`TPR…`) are documented and listed the same way.

use clap::{Args, ValueEnum};
use tpulint_analyzer::{RuleMeta, rule_by_code_or_name, rules};

use tpulint_analyzer::{RUNTIME_CODES, RuntimeCode, runtime_code};
use tpulint_report::json::{rule_json, runtime_code_json};

use crate::output::{self, ExitStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RuleFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["rule", "all"]))]
pub struct RuleArgs {
    /// A rule code (TPU101) or name (tensor-item-in-hot-path).
    pub rule: Option<String>,
    /// List every rule, with whether it is on by default (`--select` turns on the others).
    #[arg(long)]
    pub all: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RuleFormat::Text)]
    pub output_format: RuleFormat,
}

pub fn run(args: RuleArgs) -> ExitStatus {
    if args.all {
        let text = match args.output_format {
            RuleFormat::Text => table(),
            RuleFormat::Json => {
                let items: Vec<serde_json::Value> = rules()
                    .iter()
                    .map(|rule| rule_json(rule))
                    .chain(RUNTIME_CODES.iter().map(|code| runtime_code_json(code)))
                    .collect();
                pretty(&serde_json::Value::Array(items))
            }
        };
        output::stdout(&text);
        return ExitStatus::Success;
    }
    let key = args.rule.unwrap_or_default();
    if let Some(code) = runtime_code(key.trim()) {
        let text = match args.output_format {
            RuleFormat::Text => runtime_explanation(code),
            RuleFormat::Json => pretty(&runtime_code_json(code)),
        };
        output::stdout(&text);
        return ExitStatus::Success;
    }
    let Some(id) = rule_by_code_or_name(key.trim()) else {
        output::error(&format!(
            "unknown rule `{key}` (see `tpulint rule --all` for the list)"
        ));
        return ExitStatus::Error;
    };
    let rule = id.meta();
    let text = match args.output_format {
        RuleFormat::Text => explanation(rule),
        RuleFormat::Json => pretty(&rule_json(rule)),
    };
    output::stdout(&text);
    ExitStatus::Success
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

fn fix_sentence(rule: &RuleMeta) -> &'static str {
    match rule.fix {
        tpulint_analyzer::FixAvailability::Always => "Fix is always available.",
        tpulint_analyzer::FixAvailability::Sometimes => "Fix is sometimes available.",
        tpulint_analyzer::FixAvailability::None => "No fix is available.",
    }
}

/// The Markdown page of one rule, with a header like ruff's `ruff rule`.
fn explanation(rule: &RuleMeta) -> String {
    let mut out = format!("# {} ({})\n\n", rule.name, rule.code);
    out.push_str(&format!(
        "Family: **{}**. Severity on a hot path: {}. {}",
        rule.family().name(),
        rule.severity.as_str(),
        fix_sentence(rule)
    ));
    if !rule.enabled_by_default {
        out.push_str(" Not enabled by default: select it explicitly.");
    }
    out.push_str("\n\n");
    out.push_str(&rule.docs_markdown());
    out
}

/// The Markdown page of one runtime code.
fn runtime_explanation(code: &RuntimeCode) -> String {
    format!(
        "# {} ({})\n\nFamily: **runtime** (reported by `tpulint trace`, not by `tpulint check`). Severity: {}. Confirms static findings of {} on its line.\n\n{}",
        code.name,
        code.code,
        code.severity.as_str(),
        code.confirms.join(", "),
        code.docs
    )
}

/// An aligned table: code, name, family, severity, fix, whether on by default, summary.
fn table() -> String {
    let header = [
        "CODE", "NAME", "FAMILY", "SEVERITY", "FIX", "DEFAULT", "SUMMARY",
    ];
    let rows: Vec<[String; 7]> = rules()
        .iter()
        .map(|rule| {
            [
                rule.code.to_string(),
                rule.name.to_string(),
                rule.family().name().to_string(),
                rule.severity.as_str().to_string(),
                rule.fix.as_str().to_string(),
                if rule.enabled_by_default { "on" } else { "off" }.to_string(),
                rule.summary(),
            ]
        })
        .chain(RUNTIME_CODES.iter().map(|code| {
            [
                code.code.to_string(),
                code.name.to_string(),
                "runtime".to_string(),
                code.severity.as_str().to_string(),
                "none".to_string(),
                // Reported by `tpulint trace`, never by `tpulint check`.
                "trace".to_string(),
                code.summary(),
            ]
        }))
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut push_row = |cells: [&str; 7]| {
        let mut line = String::new();
        for (index, cell) in cells.iter().enumerate() {
            if index == cells.len() - 1 {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[index]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    push_row(header);
    for row in &rows {
        push_row([
            &row[0], &row[1], &row[2], &row[3], &row[4], &row[5], &row[6],
        ]);
    }
    out
}
