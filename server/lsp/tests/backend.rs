//! "Set the project's backend": a CUDA project (no TPU backend in code or configuration) gets
//! display-only device fixes; the code action on them edits the configuration in force, or
//! creates `tpulint.toml` when there is none and the client can create files.

mod common;

use common::{TestClient, apply_edits, push_client, titles};
use serde_json::{Value, json};
use tpulint_lsp::encoding::PositionEncoding;

/// TPU401 with no backend known: its fix is a suggestion.
const SOURCE: &str = "import torch\n\ndevice = torch.device(\"cuda\")\n";

fn file_uri(path: &std::path::Path) -> String {
    tower_lsp_server::ls_types::Uri::from_file_path(path)
        .expect("file URI")
        .as_str()
        .to_string()
}

async fn actions_on_first_diagnostic(client: &mut TestClient, uri: &str) -> Vec<Value> {
    client.open(uri, SOURCE).await;
    let published = client.diagnostics(uri).await;
    let diagnostic = published["diagnostics"][0].clone();
    assert_eq!(diagnostic["code"], "TPU401", "{published}");
    client.code_actions_for(uri, &diagnostic).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backend_is_set_in_the_configuration_in_force() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let pyproject = "[project]\nname = \"demo\"\n\n[tool.tpulint]\nselect = [\"TPU4\"]\n";
    std::fs::write(directory.path().join("pyproject.toml"), pyproject).expect("write");
    let uri = file_uri(&directory.path().join("train.py"));
    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    let actions = actions_on_first_diagnostic(&mut client, &uri).await;
    let titles = titles(&actions);
    assert!(
        titles.iter().any(
            |title| title.starts_with("tpulint (TPU401): ") && title.ends_with(" (suggestion)")
        ),
        "the device fix is display-only: {titles:?}"
    );
    let set = actions
        .iter()
        .find(|action| {
            action["title"] == "tpulint: Set the project's backend to torch_xla in pyproject.toml"
        })
        .unwrap_or_else(|| panic!("{titles:?}"));
    assert!(titles.contains(&"tpulint: Set the project's backend to torchtpu in pyproject.toml"));
    let config_uri = file_uri(&directory.path().join("pyproject.toml"));
    assert_eq!(
        apply_edits(
            pyproject,
            &set["edit"]["changes"][&config_uri],
            PositionEncoding::Utf16
        ),
        "[project]\nname = \"demo\"\n\n[tool.tpulint]\nbackend = \"torch_xla\"\nselect = [\"TPU4\"]\n"
    );
    assert_eq!(set["diagnostics"][0]["code"], "TPU401");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_configuration_a_tpulint_toml_is_created_if_the_client_can() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let uri = file_uri(&directory.path().join("train.py"));

    // A client that cannot create files is offered nothing it could not apply.
    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    let actions = actions_on_first_diagnostic(&mut client, &uri).await;
    assert!(
        titles(&actions)
            .iter()
            .all(|title| !title.contains("Set the project's backend")),
        "{:?}",
        titles(&actions)
    );
    client.shutdown().await;

    let mut capabilities = push_client();
    capabilities["workspace"]["workspaceEdit"] =
        json!({"documentChanges": true, "resourceOperations": ["create"]});
    let (mut client, _) = TestClient::initialized(capabilities, Value::Null).await;
    let actions = actions_on_first_diagnostic(&mut client, &uri).await;
    let set = actions
        .iter()
        .find(|action| {
            action["title"] == "tpulint: Set the project's backend to torchtpu in tpulint.toml"
        })
        .unwrap_or_else(|| panic!("{:?}", titles(&actions)));
    let config_uri = file_uri(&directory.path().join("tpulint.toml"));
    assert_eq!(
        set["edit"]["documentChanges"],
        json!([
            {"kind": "create", "uri": config_uri, "options": {"overwrite": false, "ignoreIfExists": true}},
            {"textDocument": {"uri": config_uri, "version": null}, "edits": [{
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "newText": "backend = \"torchtpu\"\n"
            }]}
        ])
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_backend_gets_no_backend_action() {
    let directory = tempfile::tempdir().expect("temporary directory");
    std::fs::write(
        directory.path().join("tpulint.toml"),
        "backend = \"torch_xla\"\n",
    )
    .expect("write");
    let uri = file_uri(&directory.path().join("train.py"));
    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    let actions = actions_on_first_diagnostic(&mut client, &uri).await;
    let titles = titles(&actions);
    assert!(
        titles
            .iter()
            .all(|title| !title.contains("Set the project's backend")),
        "{titles:?}"
    );
    assert!(
        titles.contains(&"tpulint (TPU401): Replace with `\"xla\"`"),
        "{titles:?}"
    );
    client.shutdown().await;
}
