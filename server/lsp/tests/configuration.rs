//! Settings updates that race: `workspace/didChangeConfiguration` makes the server ask the client
//! for its settings (`workspace/configuration`); when two such requests are answered out of
//! order, the settings of the later notification must win.

mod common;

use std::time::Duration;

use common::{TestClient, push_client};
use serde_json::{Value, json};

const URI: &str = "file:///project/train.py";

/// TPU401 (a `"cuda"` device string) and TPU101 (`.item()` in a step function).
const SOURCE: &str = "import torch
import torch_xla

device = torch.device(\"cuda\")


def train_step(model, batch):
    loss = model(batch).mean()
    return loss.item()
";

/// The published codes, sorted.
fn sorted_codes(published: &Value) -> Vec<String> {
    let mut codes = common::codes(published);
    codes.sort();
    codes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_configuration_response_does_not_overwrite_a_newer_one() {
    let mut capabilities = push_client();
    capabilities["workspace"]["configuration"] = json!(true);
    let (mut client, _) = TestClient::initialized(capabilities, Value::Null).await;
    // `initialized` pulls the settings once (answered at once with `{}`); it is done when the
    // server says it is ready.
    client
        .wait_for(|message| {
            message["method"] == "window/logMessage"
                && message["params"]["message"]
                    .as_str()
                    .is_some_and(|text| text.contains("ready"))
        })
        .await;
    client.open(URI, SOURCE).await;
    assert_eq!(
        sorted_codes(&client.diagnostics(URI).await),
        ["TPU101", "TPU401"]
    );

    client
        .hold_configuration
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let is_configuration_request = |message: &Value| message["method"] == "workspace/configuration";
    client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": null}),
        )
        .await;
    let older = client.wait_for(is_configuration_request).await;
    client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": null}),
        )
        .await;
    let newer = client.wait_for(is_configuration_request).await;

    // The newer request is answered first: only TPU401 is selected.
    client
        .respond(newer["id"].clone(), json!([{"select": ["TPU401"]}]))
        .await;
    assert_eq!(sorted_codes(&client.diagnostics(URI).await), ["TPU401"]);

    // Then the older one, which selected TPU101 only: it is stale and must change nothing. A
    // server that applied it would re-check and publish within milliseconds.
    client
        .respond(older["id"].clone(), json!([{"select": ["TPU101"]}]))
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for message in client.drain() {
        if message["method"] == "textDocument/publishDiagnostics" {
            assert_eq!(sorted_codes(&message["params"]), ["TPU401"], "{message}");
        }
    }
    // A new edit is checked with the settings in force.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": SOURCE}]}),
        )
        .await;
    assert_eq!(
        sorted_codes(&client.diagnostics_at(URI, 2).await),
        ["TPU401"]
    );

    client
        .hold_configuration
        .store(false, std::sync::atomic::Ordering::SeqCst);
    client.shutdown().await;
}
