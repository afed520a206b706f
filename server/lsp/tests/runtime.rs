//! Runtime findings in the editor: a `.tpulint/trace.json` next to the project adds its findings
//! with source `tpulint (runtime)`, marks the static findings they confirm, drops findings on
//! lines edited since the trace, and is re-read when the client reports it changed.

mod common;

use common::{TestClient, push_client};
use serde_json::{Value, json};
use tpulint_trace::schema::{Totals, TraceFile};
use tpulint_trace::{RuntimeFinding, SCHEMA_VERSION};

const SOURCE: &str = "import torch
import torch_xla

device = torch_xla.device()
model = torch.nn.Linear(8, 1).to(device)


def train(loader):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        print(loss.item())
        torch_xla.sync()
";

const ITEM_LINE: &str = "        print(loss.item())";

fn trace(root: &std::path::Path, findings: Vec<RuntimeFinding>) -> TraceFile {
    TraceFile {
        version: SCHEMA_VERSION,
        tool: "tpulint test".into(),
        root: root.to_string_lossy().into_owned(),
        created: 0,
        command: None,
        exit_code: None,
        logs: Vec::new(),
        findings,
        unlocated: Vec::new(),
        notes: Vec::new(),
        totals: Totals::default(),
        coverage: Default::default(),
    }
}

fn host_sync_on_line_12() -> RuntimeFinding {
    RuntimeFinding {
        code: "TPR101".into(),
        name: "runtime-host-sync".into(),
        severity: "warning".into(),
        message: "6 executions here were caused by reading a tensor's value (confirms TPU101)"
            .into(),
        path: "train.py".into(),
        line: 12,
        count: 6,
        line_text: ITEM_LINE.into(),
        confirms: vec!["TPU101".into()],
        located_by: "frame".into(),
    }
}

fn by_code<'v>(published: &'v Value, code: &str) -> Option<&'v Value> {
    published["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|diagnostic| diagnostic["code"] == code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_findings_are_shown_confirm_static_ones_and_follow_edits_and_reloads() {
    let project = tempfile::tempdir().unwrap();
    let root = project.path().canonicalize().unwrap();
    let script = root.join("train.py");
    std::fs::write(&script, SOURCE).unwrap();
    let trace_path = root.join(".tpulint/trace.json");
    trace(&root, vec![host_sync_on_line_12()])
        .write(&trace_path)
        .unwrap();
    let uri = format!("file://{}", script.display());

    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    client.open(&uri, SOURCE).await;
    let published = client.diagnostics_at(&uri, 1).await;
    let runtime = by_code(&published, "TPR101").expect("the runtime finding");
    assert_eq!(runtime["source"], "tpulint (runtime)");
    assert_eq!(runtime["range"]["start"]["line"], 11);
    assert!(
        runtime["codeDescription"]["href"]
            .as_str()
            .unwrap()
            .ends_with("docs/trace.md#tpr101")
    );
    let confirmed = by_code(&published, "TPU101").expect("the static finding");
    assert_eq!(confirmed["source"], "tpulint");
    assert!(
        confirmed["message"]
            .as_str()
            .unwrap()
            .ends_with("(confirmed at run time: TPR101)"),
        "{confirmed}"
    );

    // A line inserted above moves the finding with its line; editing the line drops it (and
    // the confirmation).
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": format!("# tuned\n{SOURCE}")}]}),
        )
        .await;
    let published = client.diagnostics_at(&uri, 2).await;
    let moved = by_code(&published, "TPR101").expect("the finding follows its line");
    assert_eq!(moved["range"]["start"]["line"], 12);
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": SOURCE.replace("x, y in loader", "x, y in iter(loader)")}]}),
        )
        .await;
    let published = client.diagnostics_at(&uri, 3).await;
    assert!(by_code(&published, "TPR101").is_some(), "{published}");
    let edited = SOURCE.replace(ITEM_LINE, "        print(float(loss.item()))");
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": edited}]}),
        )
        .await;
    let published = client.diagnostics_at(&uri, 4).await;
    assert!(by_code(&published, "TPR101").is_none(), "{published}");
    let static_finding = by_code(&published, "TPU101").expect("still a static finding");
    assert!(
        !static_finding["message"]
            .as_str()
            .unwrap()
            .contains("confirmed at run time")
    );

    // A new trace (here: a clean run) replaces the old one when the client reports the change.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 5}, "contentChanges": [{"text": SOURCE}]}),
        )
        .await;
    assert!(by_code(&client.diagnostics_at(&uri, 5).await, "TPR101").is_some());
    trace(&root, Vec::new()).write(&trace_path).unwrap();
    let trace_uri = format!("file://{}", trace_path.display());
    client
        .notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": [{"uri": trace_uri, "type": 2}]}),
        )
        .await;
    let published = client.diagnostics_at(&uri, 5).await;
    assert!(by_code(&published, "TPR101").is_none(), "{published}");
    assert!(by_code(&published, "TPU101").is_some());
    client.shutdown().await;
}
