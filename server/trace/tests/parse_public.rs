//! The importer on the public PT_XLA_DEBUG excerpts (`tests/public/`, from the pytorch/xla and
//! Lightning issue threads): both spellings, named graphs, unexpected executions, cut blocks,
//! `pt-xla-profiler:` lines after progress bars, metrics counters, and the mapping of redacted
//! or foreign absolute paths onto a project by path suffix.

use std::path::Path;

use tpulint_analyzer::Settings;
use tpulint_trace::parse::{AnalysisKind, Cause, ProfilerLine};
use tpulint_trace::{ProjectIndex, TraceContext, build_trace, parse};

fn sample(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/public")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn sample1_mark_step_era_block_with_cut_frame_list() {
    let events = parse(&sample("sample1_issue6614.txt"));
    assert_eq!(events.blocks.len(), 1);
    let block = &events.blocks[0];
    assert_eq!(block.kind, AnalysisKind::Compilation);
    assert_eq!(block.cause, Cause::TensorValueAccess);
    assert_eq!(
        block.graph_hash.as_deref(),
        Some("507d309b2d23e1c0ff316e65fbb8d47a")
    );
    assert_eq!((block.inputs, block.outputs), (Some(229), Some(1)));
    // Seven whole frames; the eighth is cut mid-path and skipped.
    assert_eq!(block.frames.len(), 7);
    assert_eq!(block.frames[0].function, "_apply_rotary_emb_inplace");
    assert_eq!(block.frames[0].line, 196);
}

#[test]
fn sample1_maps_a_redacted_path_onto_the_project_by_suffix() {
    let project = ProjectIndex::from_sources(
        Path::new("/home/me/k-diffusion"),
        vec![(
            "k_diffusion/models/image_transformer_v2.py".into(),
            (1..=400).map(|n| format!("x{n} = {n}\n")).collect(),
        )],
        &Settings::default(),
    );
    let trace = build_trace(
        &parse(&sample("sample1_issue6614.txt")),
        &project,
        TraceContext::default(),
    );
    assert_eq!(trace.findings.len(), 1, "{:#?}", trace.findings);
    let finding = &trace.findings[0];
    assert_eq!((finding.code.as_str(), finding.line), ("TPR101", 196));
    assert_eq!(finding.path, "k_diffusion/models/image_transformer_v2.py");
    // One value read is a one-off cost, not a per-step stall.
    assert_eq!(finding.severity, "info");
}

#[test]
fn sample2_library_frames_only_and_interleaved_progress_bar() {
    let events = parse(&sample("sample2_lightning20665.txt"));
    // The leading frames belong to an execution block whose header was cut: kept, cause
    // unknown, cut at `..........`. The compilation block after the tqdm line is whole up to
    // its first frame.
    assert_eq!(events.blocks.len(), 2);
    assert_eq!(events.blocks[0].kind, AnalysisKind::Execution);
    assert_eq!(events.blocks[0].cause, Cause::Other);
    assert!(events.blocks[0].truncated);
    assert_eq!(events.blocks[0].frames.len(), 4);
    let block = &events.blocks[1];
    assert_eq!(block.cause, Cause::UserSync);
    assert_eq!(
        block.graph_hash.as_deref(),
        Some("fbba2ba25aff1cda058689b761890f05")
    );
    assert_eq!(block.frames.len(), 1);
    assert!(block.frames[0].file.contains("dist-packages"));
    let project = ProjectIndex::from_sources(
        Path::new("/p"),
        vec![("train.py".into(), "pass\n".into())],
        &Settings::default(),
    );
    let trace = build_trace(&events, &project, TraceContext::default());
    assert!(trace.findings.is_empty());
    // Only library frames before the cut: the user's frame is hidden, and the trace says how
    // to show it.
    assert_eq!(trace.notes.len(), 1, "{:?}", trace.notes);
    assert!(trace.notes[0].contains("rerun with PT_XLA_DEBUG_MAX_FRAME=32"));
}

#[test]
fn sample3_unexpected_execution_with_named_graph() {
    let events = parse(&sample("sample3_issue9307.txt"));
    assert_eq!(events.blocks.len(), 1);
    let block = &events.blocks[0];
    assert_eq!(block.kind, AnalysisKind::UnexpectedExecution);
    assert_eq!(block.cause, Cause::TensorValueAccess);
    assert_eq!(block.graph_name.as_deref(), Some("resnet_step_fn"));
    assert_eq!((block.inputs, block.outputs), (Some(3), Some(1)));
    assert_eq!(block.frames[0].function, "_pre_forward");
    let project = ProjectIndex::from_sources(
        Path::new("/p"),
        vec![("train.py".into(), "pass\n".into())],
        &Settings::default(),
    );
    let trace = build_trace(&events, &project, TraceContext::default());
    // The only frame is DDP's: the event is kept, without a line.
    assert!(trace.findings.is_empty());
    assert!(
        trace.unlocated.iter().any(|event| event.code == "TPR102"),
        "{:#?}",
        trace.unlocated
    );
}

#[test]
fn sample4_execution_cause_with_a_cut_frame() {
    let events = parse(&sample("sample4_issue6002.txt"));
    assert_eq!(events.blocks.len(), 1);
    let block = &events.blocks[0];
    assert_eq!(block.kind, AnalysisKind::Execution);
    assert_eq!(block.cause, Cause::TensorValueAccess);
    assert!(block.frames.is_empty());
    assert_eq!(
        block.graph_hash.as_deref(),
        Some("408e5e4020bd44086a4a21d9f7786a5c")
    );
}

#[test]
fn sample5_profiler_lines_and_counters() {
    let events = parse(&sample("sample5a_issue6015.txt"));
    assert_eq!(events.counters.get("aten::nonzero"), Some(&4));
    assert_eq!(events.counters.get("aten::_local_scalar_dense"), Some(&2));
    let not_lowered: Vec<_> = events
        .profiler
        .iter()
        .filter_map(|line| match line {
            ProfilerLine::NotLowered { ops } => Some(ops.clone()),
            _ => None,
        })
        .collect();
    // Twice, the second time after a tqdm bar on the same line.
    assert_eq!(not_lowered, vec![vec!["aten::nonzero".to_string()]; 2]);
    assert!(events.profiler.contains(&ProfilerLine::TooFrequent {
        metric: "TransferFromServerTime".into(),
        count: 634,
        steps: 4
    }));

    // No frame: `aten::nonzero` is placed on the project's `nonzero` call by the static index.
    let project = ProjectIndex::from_sources(
        Path::new("/p"),
        vec![(
            "train.py".into(),
            "import torch\n\ndef step(x):\n    return torch.nonzero(x > 0)\n".into(),
        )],
        &Settings::default(),
    );
    let trace = build_trace(&events, &project, TraceContext::default());
    let fallback: Vec<_> = trace
        .findings
        .iter()
        .filter(|f| f.code == "TPR201")
        .collect();
    assert_eq!(fallback.len(), 1, "{:#?}", trace.findings);
    assert_eq!(fallback[0].line, 4);
    assert_eq!(fallback[0].located_by, "static-index");
    assert!(
        fallback[0]
            .message
            .contains("`aten::nonzero` ran on the CPU 4 times"),
        "{}",
        fallback[0].message
    );
    assert!(
        fallback[0].confirms.iter().any(|code| code == "TPU301"),
        "{:?}",
        fallback[0].confirms
    );
    // `_local_scalar_dense` is a value read, never a fallback finding.
    assert!(
        !trace
            .totals
            .fallback_ops
            .contains_key("aten::_local_scalar_dense")
    );
}

#[test]
fn sample5b_prelu_backward_maps_to_the_module() {
    let events = parse(&sample("sample5b_issue5695.txt"));
    assert_eq!(
        events.counters.get("aten::_prelu_kernel_backward"),
        Some(&305)
    );
    let project = ProjectIndex::from_sources(
        Path::new("/p"),
        vec![(
            "model.py".into(),
            "import torch\nact = torch.nn.PReLU()\n".into(),
        )],
        &Settings::default(),
    );
    let trace = build_trace(&events, &project, TraceContext::default());
    assert_eq!(trace.findings.len(), 1, "{:#?}", trace.findings);
    assert_eq!(
        (trace.findings[0].code.as_str(), trace.findings[0].line),
        ("TPR201", 2)
    );
}

#[test]
fn carriage_returns_and_missing_trailing_spaces_are_tolerated() {
    let text = sample("sample3_issue9307.txt")
        .replace("Graph Info: \n", "Graph Info:\n")
        .replace(
            "\nUnexpected Execution Analysis: Compilation Cause",
            "\r 12%|#  | 3/25\rUnexpected Execution Analysis: Compilation Cause",
        );
    let events = parse(&text);
    assert_eq!(events.blocks.len(), 1);
    assert_eq!(
        events.blocks[0].graph_name.as_deref(),
        Some("resnet_step_fn")
    );
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let alphabet = [
        "Compilation Analysis: ",
        "=====",
        "  Graph Hash: ",
        "FRAME (count=",
        "\n",
        "\r",
        "(",
        ":",
        ")",
        "x",
        "Unlowered Op usage summary",
        "Counter: a",
        "  Value: ",
        "[__recompiles]",
        "[__graph_breaks]",
        "- ",
        "Python Frame Triggered Execution:",
    ];
    for _ in 0..300 {
        let mut text = String::new();
        for _ in 0..60 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            text.push_str(alphabet[(seed % alphabet.len() as u64) as usize]);
        }
        let _ = parse(&text);
    }
}
