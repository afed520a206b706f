//! Protocol tests over an in-memory transport: a whole editing session, pull diagnostics,
//! code-action resolve, JSON-RPC errors, robustness and settings.

mod common;

use common::{TestClient, apply_edits, codes, push_client, titles};
use serde_json::{Value, json};
use tpulint_lsp::encoding::PositionEncoding;

const URI: &str = "file:///project/train.py";

const SOURCE: &str = "import torch
import torch_xla

device = torch.device(\"cuda\")


def train_step(model, batch):
    loss = model(batch).mean()
    return loss.item()
";

fn line_of(text: &str, needle: &str) -> u64 {
    text[..text.find(needle).expect("needle")]
        .matches('\n')
        .count() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_session() {
    let (mut client, init) =
        TestClient::initialized(push_client(), json!({"settings": {"unsafeFixes": true}})).await;
    let capabilities = &init["capabilities"];
    assert_eq!(capabilities["positionEncoding"], "utf-16");
    assert_eq!(capabilities["textDocumentSync"]["change"], 2);
    assert!(
        capabilities["codeActionProvider"]["codeActionKinds"]
            .as_array()
            .unwrap()
            .contains(&json!("source.fixAll.tpulint"))
    );
    let commands = capabilities["executeCommandProvider"]["commands"]
        .as_array()
        .unwrap();
    assert!(commands.contains(&json!("tpulint.applyAutofix")));
    assert!(
        capabilities.get("diagnosticProvider").is_none(),
        "push client gets no pull provider"
    );

    // didOpen → diagnostics for version 1, with every field an editor uses.
    client.open(URI, SOURCE).await;
    let published = client.diagnostics(URI).await;
    assert_eq!(published["version"], 1);
    assert_eq!(codes(&published), ["TPU401", "TPU101"]);
    let cuda = &published["diagnostics"][0];
    assert_eq!(cuda["source"], "tpulint");
    assert_eq!(cuda["severity"], 1);
    assert_eq!(cuda["range"]["start"]["line"], line_of(SOURCE, "device ="));
    assert!(
        cuda["codeDescription"]["href"]
            .as_str()
            .unwrap()
            .ends_with("/TPU401.md")
    );
    let item = &published["diagnostics"][1];
    assert_eq!(
        item["range"]["start"]["line"],
        line_of(SOURCE, "loss.item()")
    );

    // Code actions on the `"cuda"` string: the rule's fix (unsafe, so not preferred) and noqa.
    let actions = client.code_actions_for(URI, cuda).await;
    let titles = titles(&actions);
    assert!(
        titles.contains(&"tpulint (TPU401): Replace with `\"xla\"`"),
        "{titles:?}"
    );
    assert!(
        titles.contains(&"tpulint (TPU401): Disable for this line"),
        "{titles:?}"
    );
    assert!(titles.contains(&"Fix all tpulint issues"), "{titles:?}");
    let quick_fix = actions
        .iter()
        .find(|a| a["title"] == "tpulint (TPU401): Replace with `\"xla\"`")
        .unwrap();
    assert_eq!(quick_fix["kind"], "quickfix");
    assert_eq!(quick_fix["isPreferred"], false);
    // Each quick fix names the diagnostic it resolves, so the editor can link them.
    assert_eq!(quick_fix["diagnostics"], json!([cuda]), "{quick_fix}");
    let edit = &quick_fix["edit"]["changes"][URI][0];
    assert_eq!(edit["newText"], "\"xla\"");
    let noqa = actions
        .iter()
        .find(|a| a["title"] == "tpulint (TPU401): Disable for this line")
        .unwrap();
    assert_eq!(
        noqa["edit"]["changes"][URI][0]["newText"],
        "  # noqa: TPU401"
    );
    assert_eq!(noqa["diagnostics"], json!([cuda]), "{noqa}");
    // Without resolve support, fix-all carries its edit.
    let fix_all = actions
        .iter()
        .find(|a| a["title"] == "Fix all tpulint issues")
        .unwrap();
    assert_eq!(fix_all["kind"], "source.fixAll.tpulint");
    let fixed = SOURCE.replace("\"cuda\"", "\"xla\"");
    assert_eq!(
        apply_edits(
            SOURCE,
            &fix_all["edit"]["changes"][URI],
            PositionEncoding::Utf16
        ),
        fixed
    );

    // `only` restricts to fix-all.
    let response = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": URI},
                "range": cuda["range"],
                "context": {"diagnostics": [], "only": ["source.fixAll"]}
            }),
        )
        .await;
    let actions = response["result"].as_array().expect("actions");
    assert_eq!(actions.len(), 1, "{actions:?}");

    // executeCommand applyAutofix → workspace/applyEdit with the fixed text.
    let response = client
        .request(
            "workspace/executeCommand",
            json!({"command": "tpulint.applyAutofix", "arguments": [{"uri": URI, "version": 1}]}),
        )
        .await;
    assert!(response.get("error").is_none(), "{response}");
    let applied = client.applied_edits.lock().unwrap().clone();
    assert_eq!(applied.len(), 1);
    assert_eq!(
        apply_edits(
            SOURCE,
            &applied[0]["edit"]["changes"][URI],
            PositionEncoding::Utf16
        ),
        fixed
    );

    // Hover over `.item()` shows TPU101's documentation.
    let response = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": item["range"]["start"]}),
        )
        .await;
    let hover = &response["result"];
    assert_eq!(hover["contents"]["kind"], "markdown");
    let markdown = hover["contents"]["value"].as_str().unwrap();
    assert!(markdown.contains("TPU101"), "{markdown}");
    assert!(markdown.contains("## What it does"), "{markdown}");
    // No hover away from diagnostics.
    let response = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": 0, "character": 0}}),
        )
        .await;
    assert_eq!(response["result"], Value::Null);

    // An incremental edit fixes the device string: version 2 has only TPU101.
    let start = cuda["range"]["start"].clone();
    let end = cuda["range"]["end"].clone();
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": URI, "version": 2},
                "contentChanges": [{"range": {"start": start, "end": end}, "text": "\"xla\""}]
            }),
        )
        .await;
    let published = client.diagnostics_at(URI, 2).await;
    assert_eq!(codes(&published), ["TPU101"]);

    // Configuration change: ignoring TPU101 clears it (a new publish for the same version).
    client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"tpulint": {"ignore": ["TPU101"]}}}),
        )
        .await;
    let published = client.diagnostics_at(URI, 2).await;
    assert_eq!(codes(&published), Vec::<String>::new());

    // An invalid setting is shown once, never fatal.
    for _ in 0..2 {
        client
            .notify(
                "workspace/didChangeConfiguration",
                json!({"settings": {"tpulint": {"select": ["NOT-A-RULE"], "backend": "gpu"}}}),
            )
            .await;
    }
    let report = client.debug_report().await;
    assert!(report.contains("open documents: 1"), "{report}");
    // One message per invalid value; the repeated change shows nothing new (checked below).
    for _ in 0..2 {
        let shown = client
            .wait_for(|m| m["method"] == "window/showMessage")
            .await;
        assert_eq!(shown["params"]["type"], 2, "{shown}");
    }

    // didClose clears the document's diagnostics.
    client
        .notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    let published = client.diagnostics(URI).await;
    assert_eq!(published["diagnostics"], json!([]));
    let shown_again = client
        .drain()
        .into_iter()
        .filter(|m| m["method"] == "window/showMessage")
        .count();
    assert_eq!(shown_again, 0, "setting errors are shown once");

    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_diagnostics_and_lazy_fix_all() {
    let capabilities = json!({
        "general": {"positionEncodings": ["utf-32", "utf-16"]},
        "textDocument": {
            "diagnostic": {"dynamicRegistration": false},
            "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}},
                "resolveSupport": {"properties": ["edit"]},
                "dataSupport": true
            }
        },
        "workspace": {"diagnostics": {"refreshSupport": true}}
    });
    let (mut client, init) =
        TestClient::initialized(capabilities, json!({"unsafeFixes": true})).await;
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-32");
    assert_eq!(
        init["capabilities"]["diagnosticProvider"]["workspaceDiagnostics"],
        true
    );
    assert_eq!(
        init["capabilities"]["codeActionProvider"]["resolveProvider"],
        true
    );

    client.open(URI, SOURCE).await;
    let response = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    let report = &response["result"];
    assert_eq!(report["kind"], "full");
    let items = report["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    let result_id = report["resultId"].clone();

    // Same version, same settings: unchanged.
    let response = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": URI}, "previousResultId": result_id}),
        )
        .await;
    assert_eq!(response["result"]["kind"], "unchanged");

    let response = client
        .request("workspace/diagnostic", json!({"previousResultIds": []}))
        .await;
    let items = response["result"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["uri"], URI);
    assert_eq!(items[0]["version"], 1);

    // Fix-all is offered without an edit and resolved on demand.
    let response = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": URI},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": [], "only": ["source.fixAll.tpulint"]}
            }),
        )
        .await;
    let action = response["result"][0].clone();
    assert!(action.get("edit").is_none(), "{action}");
    let resolved = client.request("codeAction/resolve", action).await;
    assert_eq!(
        apply_edits(
            SOURCE,
            &resolved["result"]["edit"]["changes"][URI],
            PositionEncoding::Utf32
        ),
        SOURCE.replace("\"cuda\"", "\"xla\"")
    );

    // No diagnostics are pushed to a pull client.
    assert!(
        client
            .drain()
            .iter()
            .all(|m| m["method"] != "textDocument/publishDiagnostics")
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_unknown_messages_get_json_rpc_errors() {
    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    // Unknown method → MethodNotFound.
    let response = client.request("tpulint/nope", json!({})).await;
    assert_eq!(response["error"]["code"], -32601, "{response}");
    // Wrong params → InvalidParams.
    let response = client
        .request("textDocument/hover", json!({"textDocument": 3}))
        .await;
    assert_eq!(response["error"]["code"], -32602, "{response}");
    // Unknown command → InvalidParams.
    let response = client
        .request(
            "workspace/executeCommand",
            json!({"command": "tpulint.nope"}),
        )
        .await;
    assert_eq!(response["error"]["code"], -32602, "{response}");
    // Not JSON at all → ParseError, and the server keeps serving.
    client.send_raw(b"{this is not json").await;
    let error = client
        .wait_for(|m| m.get("error").is_some() && m["id"].is_null())
        .await;
    assert_eq!(error["error"]["code"], -32700, "{error}");
    client.open(URI, SOURCE).await;
    let published = client.diagnostics(URI).await;
    assert_eq!(published["diagnostics"].as_array().unwrap().len(), 2);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_document_does_not_stall_a_small_one() {
    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    // About 10 MB of code, and a deeply nested expression.
    let line = "x = torch.zeros(4, 128) + y * 2 - z / 3  # padding padding padding padding\n";
    let mut huge = String::from("import torch\n");
    let target: usize = std::env::var("HUGE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let started = std::time::Instant::now();
    while huge.len() < target {
        huge.push_str(line);
    }
    let deep = format!("y = {}1{}\n", "(".repeat(5000), ")".repeat(5000));
    huge.push_str(&deep);
    huge.push_str("d = torch.device(\"cuda\")\n");
    client.open("file:///project/huge.py", &huge).await;
    client.open(URI, SOURCE).await;
    // The small document's diagnostics arrive first: the big one is checked off the loop.
    let first = client
        .wait_for(|m| m["method"] == "textDocument/publishDiagnostics")
        .await;
    eprintln!("first publish after {:?}", started.elapsed());
    assert_eq!(first["params"]["uri"], URI);
    let hover = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": 8, "character": 12}}),
        )
        .await;
    assert!(hover["result"].is_object(), "{hover}");
    let big = client.diagnostics("file:///project/huge.py").await;
    eprintln!("huge document checked after {:?}", started.elapsed());
    assert_eq!(big["diagnostics"].as_array().unwrap().len(), 1, "{big}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noqa_action_merges_into_an_existing_directive() {
    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    let text = "import torch\nimport torch_xla\n\ndevice = torch.device(\"cuda\")  # noqa: E501\n";
    client.open(URI, text).await;
    let published = client.diagnostics(URI).await;
    let diagnostic = published["diagnostics"][0].clone();
    let response = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": URI}, "range": diagnostic["range"], "context": {"diagnostics": [diagnostic], "only": ["quickfix"]}}),
        )
        .await;
    let noqa = response["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "tpulint (TPU401): Disable for this line")
        .cloned()
        .expect("noqa action");
    let edit = &noqa["edit"]["changes"][URI][0];
    assert_eq!(edit["newText"], ", TPU401");
    assert_eq!(edit["range"]["start"]["line"], 3);
    assert_eq!(edit["range"]["start"]["character"], 43);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_environment_returns_the_doctor_report() {
    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    let response = client
        .request(
            "workspace/executeCommand",
            json!({"command": "tpulint.checkEnvironment", "arguments": [{"interpreter": "/nonexistent/bin/python3"}]}),
        )
        .await;
    let report = &response["result"];
    assert_eq!(report["verdict"], "not_ready", "{response}");
    assert!(
        report["markdown"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/bin/python3"),
        "{report}"
    );
    assert!(report["summary"].as_str().is_some());
    assert!(
        report["report"]["findings"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    );
    // Findings link to their pages, in the Markdown and in the suggested fixes.
    let page = "https://github.com/tpulint/tpulint/blob/main/docs/doctor.md#interpreter-not-found";
    assert!(
        report["markdown"].as_str().unwrap().contains(page),
        "{report}"
    );
    assert_eq!(
        report["fixes"][0]["finding"], "interpreter-not-found",
        "{report}"
    );
    assert_eq!(report["fixes"][0]["url"], page);
    client.shutdown().await;
}
