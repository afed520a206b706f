//! The importer and aggregation on real torch_xla 2.9 logs recorded on the XLA CPU device by
//! `tests/real/record.sh` (one directory per scenario: `train.py`, its `logs/` with paths
//! sanitised to `/project` and `/venv`, and what `tpulint trace run` printed). No torch needed.

use std::path::Path;

use tpulint_analyzer::Settings;
use tpulint_trace::{
    Events, ProjectIndex, RuntimeFinding, TraceContext, TraceFile, build_trace, parse_into,
};

fn trace_of(scenario: &str) -> TraceFile {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/real")
        .join(scenario);
    let script = std::fs::read_to_string(directory.join("train.py")).unwrap();
    let mut events = Events::default();
    let mut logs: Vec<_> = std::fs::read_dir(directory.join("logs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    logs.sort();
    for log in &logs {
        parse_into(&std::fs::read_to_string(log).unwrap(), &mut events);
    }
    assert!(
        events.hook_seen,
        "{scenario}: the hook's dump is part of every recording"
    );
    let project = ProjectIndex::from_sources(
        Path::new("/project"),
        vec![("train.py".into(), script)],
        &Settings::default(),
    );
    build_trace(
        &events,
        &project,
        TraceContext {
            main_script: Some("/project/train.py".into()),
            ..TraceContext::default()
        },
    )
}

fn summary(findings: &[RuntimeFinding]) -> Vec<(String, u32, u64, String)> {
    findings
        .iter()
        .map(|f| (f.code.clone(), f.line, f.count, f.confirms.join(",")))
        .collect()
}

fn row(code: &str, line: u32, count: u64, confirms: &str) -> (String, u32, u64, String) {
    (code.into(), line, count, confirms.into())
}

#[test]
fn item_every_step_is_six_executions_on_the_print_line() {
    let trace = trace_of("item_per_step");
    assert_eq!(
        summary(&trace.findings),
        vec![row("TPR101", 17, 6, "TPU101")]
    );
    assert_eq!(trace.findings[0].severity, "warning");
    assert!(trace.findings[0].line_text.contains("loss.item()"));
    assert_eq!(trace.totals.syncs, Some(6));
    // The print line ran; the coverage says so.
    assert!(trace.coverage["train.py"].contains(&17));
}

#[test]
fn growing_batch_is_a_new_graph_at_every_sync() {
    let trace = trace_of("shapes_per_step");
    assert_eq!(summary(&trace.findings), vec![row("TPR301", 18, 6, "")]);
    assert_eq!(trace.totals.distinct_graphs, 6);
}

#[test]
fn nonzero_runs_on_the_cpu_and_its_dynamic_shape_recompiles() {
    let trace = trace_of("cpu_fallback");
    assert_eq!(
        summary(&trace.findings),
        vec![
            row("TPR101", 13, 6, "TPU301"),
            row("TPR201", 13, 6, "TPU301"),
            row("TPR301", 18, 4, ""),
        ]
    );
    let fallback = &trace.findings[1];
    assert!(
        fallback
            .message
            .starts_with("`aten::nonzero` ran on the CPU 6 times here"),
        "{}",
        fallback.message
    );
    assert_eq!(fallback.located_by, "frame");
    assert_eq!(trace.totals.fallback_ops.get("aten::nonzero"), Some(&6));
}

#[test]
fn loop_without_sync_is_reported_on_the_static_finding() {
    let trace = trace_of("never_syncs");
    assert_eq!(
        summary(&trace.findings),
        vec![row("TPR605", 10, 1, "TPU605"), row("TPR101", 18, 1, "")]
    );
    assert_eq!(trace.totals.syncs, Some(0));
    // A single read after the loop is a one-off: reported, at info.
    assert_eq!(trace.findings[1].severity, "info");
}

#[test]
fn clean_loop_has_no_runtime_finding() {
    let trace = trace_of("clean_loop");
    assert!(trace.findings.is_empty(), "{:#?}", trace.findings);
    assert!(trace.unlocated.is_empty(), "{:#?}", trace.unlocated);
    assert_eq!(trace.totals.syncs, Some(6));
    assert_eq!(trace.totals.value_reads, 0);
}

#[test]
fn torch_compile_graph_break_and_recompiles_from_torch_logs() {
    let trace = trace_of("compiled_dynamo");
    assert_eq!(
        summary(&trace.findings),
        vec![
            row("TPR303", 10, 2, ""),
            row("TPR101", 12, 3, "TPU107"),
            row("TPR302", 12, 3, "TPU107"),
            row("TPR303", 12, 1, ""),
        ]
    );
    let graph_break = &trace.findings[2];
    assert!(
        graph_break.message.contains("Data-dependent branching"),
        "{}",
        graph_break.message
    );
    assert!(
        trace.findings[0]
            .message
            .contains("size mismatch at index 0. expected 4, actual 5")
    );
}

#[test]
fn the_trace_file_round_trips() {
    let trace = trace_of("cpu_fallback");
    let text = trace.to_json();
    assert_eq!(TraceFile::parse(&text).unwrap(), trace);
    let newer = text.replacen("\"version\": 1", "\"version\": 99", 1);
    assert!(
        TraceFile::parse(&newer)
            .unwrap_err()
            .contains("version 99 is not supported")
    );
}
