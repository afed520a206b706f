//! `tpulint trace report`: how a trace and the static findings agree — static findings confirmed
//! at run time, static findings on code that ran without the event they predict, static
//! findings on code that never ran, and runtime events no static rule predicted.

use serde::Serialize;

use crate::aggregate::current_line;
use crate::project::ProjectIndex;
use crate::schema::{RuntimeFinding, TraceFile};

/// One static finding, as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StaticFinding {
    pub path: String,
    pub line: u32,
    pub code: String,
    pub name: String,
    pub message: String,
    /// The runtime codes that confirm it (empty unless confirmed).
    pub confirmed_by: Vec<String>,
}

/// The agreement between a trace and the project's static findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Agreement {
    pub confirmed: Vec<StaticFinding>,
    /// On lines that ran, but the run showed no event there.
    pub ran_without_event: Vec<StaticFinding>,
    /// On lines that never ran (only known with coverage).
    pub never_ran: Vec<StaticFinding>,
    /// Not confirmed, and the trace has no coverage to tell whether the line ran.
    pub unconfirmed: Vec<StaticFinding>,
    /// Runtime findings on lines without a static finding they confirm.
    pub runtime_only: Vec<RuntimeFinding>,
    /// Runtime findings dropped because their line was edited since the trace.
    pub stale: Vec<RuntimeFinding>,
    /// Whether the trace recorded which lines ran.
    pub has_coverage: bool,
}

/// Compares `trace` with the static findings of `project` (analysed now).
pub fn agreement(trace: &TraceFile, project: &ProjectIndex) -> Agreement {
    let mut result = Agreement {
        has_coverage: !trace.coverage.is_empty(),
        ..Agreement::default()
    };
    // Findings at their current lines (lines inserted above move them).
    let mut live: Vec<RuntimeFinding> = Vec::new();
    for finding in &trace.findings {
        let current = project
            .files
            .iter()
            .find(|file| file.relative == finding.path)
            .and_then(|file| current_line(finding, &file.text, &file.index));
        match current {
            Some(line) => live.push(RuntimeFinding {
                line,
                ..finding.clone()
            }),
            None => result.stale.push(finding.clone()),
        }
    }
    for file in &project.files {
        let ran = trace.coverage.get(&file.relative);
        for diagnostic in &file.diagnostics {
            if diagnostic.code.starts_with("TPU9") {
                continue;
            }
            let line = file.index.line_of(diagnostic.range.start) as u32 + 1;
            let confirmed_by: Vec<String> = live
                .iter()
                .filter(|finding| {
                    finding.path == file.relative
                        && finding.line == line
                        && finding.confirms.iter().any(|code| code == diagnostic.code)
                })
                .map(|finding| finding.code.clone())
                .collect();
            let entry = StaticFinding {
                path: file.relative.clone(),
                line,
                code: diagnostic.code.to_string(),
                name: diagnostic.name.to_string(),
                message: diagnostic.message.clone(),
                confirmed_by: confirmed_by.clone(),
            };
            if !confirmed_by.is_empty() {
                result.confirmed.push(entry);
            } else if !result.has_coverage {
                result.unconfirmed.push(entry);
            } else if ran.is_some_and(|lines| lines.binary_search(&line).is_ok()) {
                result.ran_without_event.push(entry);
            } else {
                result.never_ran.push(entry);
            }
        }
    }
    result.runtime_only = live
        .into_iter()
        .filter(|finding| finding.confirms.is_empty())
        .collect();
    result
}

/// The report as text.
pub fn render_agreement(agreement: &Agreement) -> String {
    let mut out = String::new();
    let section = |out: &mut String, title: &str, items: &[StaticFinding]| {
        out.push_str(&format!("{title} ({}):\n", items.len()));
        for item in items {
            let by = if item.confirmed_by.is_empty() {
                String::new()
            } else {
                format!(" [{}]", item.confirmed_by.join(", "))
            };
            out.push_str(&format!(
                "  {}:{}: {} {}{by}\n",
                item.path, item.line, item.code, item.message
            ));
        }
        out.push('\n');
    };
    section(
        &mut out,
        "Static findings confirmed at run time",
        &agreement.confirmed,
    );
    if agreement.has_coverage {
        section(
            &mut out,
            "Static findings on lines that ran without the predicted event",
            &agreement.ran_without_event,
        );
        section(
            &mut out,
            "Static findings on code that never ran",
            &agreement.never_ran,
        );
    } else {
        section(
            &mut out,
            "Static findings not confirmed (the trace has no coverage: ran or not is unknown)",
            &agreement.unconfirmed,
        );
    }
    out.push_str(&format!(
        "Runtime events with no static finding ({}):\n",
        agreement.runtime_only.len()
    ));
    for finding in &agreement.runtime_only {
        out.push_str(&format!(
            "  {}:{}: {} {}\n",
            finding.path, finding.line, finding.code, finding.message
        ));
    }
    if !agreement.stale.is_empty() {
        out.push_str(&format!(
            "\n{} runtime finding(s) dropped: their lines changed since the trace; rerun `tpulint trace run`.\n",
            agreement.stale.len()
        ));
    }
    out
}
