//! Notebook document sync over the in-memory transport: a Jupyter notebook's Python cells are
//! checked as one module and every cell gets its own diagnostics, code actions and hover.

mod common;

use std::time::Duration;

use common::{TestClient, apply_edits, codes, push_client, titles};
use serde_json::{Value, json};
use tpulint_lsp::encoding::PositionEncoding;

const NOTEBOOK: &str = "file:///project/train.ipynb";
const IMPORTS: &str = "vscode-notebook-cell:/project/train.ipynb#C1";
const TITLE: &str = "vscode-notebook-cell:/project/train.ipynb#C2";
const MODEL: &str = "vscode-notebook-cell:/project/train.ipynb#C3";
const SHELL: &str = "vscode-notebook-cell:/project/train.ipynb#C4";
const WRITEFILE: &str = "vscode-notebook-cell:/project/train.ipynb#C5";

const IMPORTS_TEXT: &str = "import torch\nimport torch_xla\n";
/// TPU603 (`torch.compile` without the backend) exists only because the first cell imports
/// torch_xla; TPU401's fix says `"xla"` for the same reason.
const MODEL_TEXT: &str = "model = torch.compile(model)\ndevice = torch.device(\"cuda\")\n";
/// IPython lines before Python code: they must neither break parsing nor shift positions.
const SHELL_TEXT: &str = "!pip install torch_xla\n%matplotlib inline\nx = torch.ones(3).cuda()\n";
/// Not Python for the kernel: `%%writefile` writes the cell to a file.
const WRITEFILE_TEXT: &str =
    "%%writefile train.py\nimport torch\ndevice = torch.device(\"cuda\")\n";

const CODE: i64 = 2;
const MARKUP: i64 = 1;

fn cell(kind: i64, uri: &str) -> Value {
    json!({"kind": kind, "document": uri})
}

fn cell_document(uri: &str, language: &str, version: i64, text: &str) -> Value {
    json!({"uri": uri, "languageId": language, "version": version, "text": text})
}

fn start(diagnostic: &Value) -> (u64, u64) {
    let start = &diagnostic["range"]["start"];
    (
        start["line"].as_u64().expect("line"),
        start["character"].as_u64().expect("character"),
    )
}

async fn open_notebook(client: &mut TestClient) {
    client
        .notify(
            "notebookDocument/didOpen",
            json!({
                "notebookDocument": {
                    "uri": NOTEBOOK,
                    "notebookType": "jupyter-notebook",
                    "version": 1,
                    "cells": [cell(CODE, IMPORTS), cell(MARKUP, TITLE), cell(CODE, MODEL)]
                },
                "cellTextDocuments": [
                    cell_document(IMPORTS, "python", 1, IMPORTS_TEXT),
                    cell_document(TITLE, "markdown", 1, "# Training\n"),
                    cell_document(MODEL, "python", 1, MODEL_TEXT),
                ]
            }),
        )
        .await;
}

/// Replaces line `line` of cell `uri` (now at `version`) with `text`, in notebook `version`.
async fn edit_line(client: &mut TestClient, uri: &str, version: i64, line: u32, text: &str) {
    client
        .notify(
            "notebookDocument/didChange",
            json!({
                "notebookDocument": {"uri": NOTEBOOK, "version": version},
                "change": {"cells": {"textContent": [{
                    "document": {"uri": uri, "version": version},
                    "changes": [{
                        "range": {"start": {"line": line, "character": 0},
                                  "end": {"line": line + 1, "character": 0}},
                        "text": text
                    }]
                }]}}
            }),
        )
        .await;
}

/// Changes the cell structure of the notebook (now at `version`): `structure` is the
/// `change.cells.structure` object (`array` splice, `didOpen`, `didClose`).
async fn change_structure(client: &mut TestClient, version: i64, structure: Value) {
    client
        .notify(
            "notebookDocument/didChange",
            json!({
                "notebookDocument": {"uri": NOTEBOOK, "version": version},
                "change": {"cells": {"structure": structure}}
            }),
        )
        .await;
}

/// The publishes of one analysis: one per cell, in notebook order.
async fn batch(client: &mut TestClient, cells: &[&str]) -> Vec<Value> {
    let mut published = Vec::new();
    for uri in cells {
        published.push(client.diagnostics(uri).await);
    }
    published
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebook_is_checked_as_one_module_and_published_per_cell() {
    let (mut client, init) =
        TestClient::initialized(push_client(), json!({"settings": {"unsafeFixes": true}})).await;
    let sync = &init["capabilities"]["notebookDocumentSync"];
    assert_eq!(
        sync["notebookSelector"][0],
        json!({"notebook": "jupyter-notebook", "cells": [{"language": "python"}]})
    );

    // Open: every cell gets a publish; the findings of cell 3 depend on cell 1's import.
    open_notebook(&mut client).await;
    let published = batch(&mut client, &[IMPORTS, TITLE, MODEL]).await;
    assert!(codes(&published[0]).is_empty());
    assert!(codes(&published[1]).is_empty(), "markdown is not checked");
    let model = &published[2];
    assert_eq!(model["version"], 1);
    assert_eq!(codes(model), ["TPU603", "TPU401"]);
    let compile = model["diagnostics"][0].clone();
    let cuda = model["diagnostics"][1].clone();
    assert_eq!(start(&compile), (0, 8), "cell-local position");
    assert_eq!(start(&cuda), (1, 22));

    // Code actions on the cell: the backend-aware quick fix, noqa, and fix-all of the cell.
    let actions = client.code_actions_for(MODEL, &cuda).await;
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
    assert_eq!(
        apply_edits(
            MODEL_TEXT,
            &quick_fix["edit"]["changes"][MODEL],
            PositionEncoding::Utf16
        ),
        MODEL_TEXT.replace("\"cuda\"", "\"xla\"")
    );
    let noqa = actions
        .iter()
        .find(|a| a["title"] == "tpulint (TPU401): Disable for this line")
        .unwrap();
    assert_eq!(
        apply_edits(
            MODEL_TEXT,
            &noqa["edit"]["changes"][MODEL],
            PositionEncoding::Utf16
        ),
        MODEL_TEXT.replace("(\"cuda\")", "(\"cuda\")  # noqa: TPU401")
    );

    // The notebook-wide fix-all edits only the cells that change, each in its own text.
    let response = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": IMPORTS},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": [], "only": ["notebook.source.fixAll.tpulint"]}
            }),
        )
        .await;
    let actions = response["result"].as_array().expect("actions");
    assert_eq!(actions.len(), 1, "{actions:?}");
    let changes = &actions[0]["edit"]["changes"];
    assert!(changes.get(IMPORTS).is_none(), "{changes}");
    let fixed = apply_edits(MODEL_TEXT, &changes[MODEL], PositionEncoding::Utf16);
    assert!(fixed.contains("torch.device(\"xla\")"), "{fixed}");
    assert!(fixed.contains("backend=\"openxla\""), "{fixed}");

    // Hover on a cell.
    let response = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": MODEL}, "position": compile["range"]["start"]}),
        )
        .await;
    let markdown = response["result"]["contents"]["value"]
        .as_str()
        .expect("hover");
    assert!(markdown.contains("TPU603"), "{markdown}");

    // Edit cell 1 (drop the torch_xla import): cell 3's text is unchanged, its findings change.
    edit_line(&mut client, IMPORTS, 2, 1, "").await;
    let published = batch(&mut client, &[IMPORTS, TITLE, MODEL]).await;
    assert_eq!(published[0]["version"], 2);
    assert_eq!(codes(&published[2]), ["TPU401"]);
    edit_line(&mut client, IMPORTS, 3, 1, "import torch_xla\n").await;
    let published = batch(&mut client, &[IMPORTS, TITLE, MODEL]).await;
    assert_eq!(codes(&published[2]), ["TPU603", "TPU401"]);

    // Insert a cell with IPython lines after cell 1: positions stay cell-local.
    change_structure(
        &mut client,
        4,
        json!({
            "array": {"start": 1, "deleteCount": 0, "cells": [cell(CODE, SHELL)]},
            "didOpen": [cell_document(SHELL, "python", 1, SHELL_TEXT)]
        }),
    )
    .await;
    let published = batch(&mut client, &[IMPORTS, SHELL, TITLE, MODEL]).await;
    assert_eq!(codes(&published[1]), ["TPU403"]);
    assert_eq!(start(&published[1]["diagnostics"][0]), (2, 18));
    assert_eq!(codes(&published[3]), ["TPU603", "TPU401"]);

    // Delete it again: its diagnostics are cleared.
    change_structure(
        &mut client,
        5,
        json!({
            "array": {"start": 1, "deleteCount": 1},
            "didClose": [{"uri": SHELL}]
        }),
    )
    .await;
    let cleared = client.diagnostics(SHELL).await;
    assert!(codes(&cleared).is_empty());
    let published = batch(&mut client, &[IMPORTS, TITLE, MODEL]).await;
    assert_eq!(codes(&published[2]), ["TPU603", "TPU401"]);

    // A `%%writefile` cell is not Python: no findings in it.
    change_structure(
        &mut client,
        6,
        json!({
            "array": {"start": 3, "deleteCount": 0, "cells": [cell(CODE, WRITEFILE)]},
            "didOpen": [cell_document(WRITEFILE, "python", 1, WRITEFILE_TEXT)]
        }),
    )
    .await;
    let published = batch(&mut client, &[IMPORTS, TITLE, MODEL, WRITEFILE]).await;
    assert!(codes(&published[3]).is_empty(), "{}", published[3]);
    assert_eq!(codes(&published[2]), ["TPU603", "TPU401"]);

    // Moving a cell (deleted and inserted in one splice, its document staying open).
    change_structure(
        &mut client,
        7,
        json!({
            "array": {"start": 0, "deleteCount": 4,
                      "cells": [cell(CODE, MODEL), cell(CODE, IMPORTS),
                                cell(MARKUP, TITLE), cell(CODE, WRITEFILE)]}
        }),
    )
    .await;
    let published = batch(&mut client, &[MODEL, IMPORTS, TITLE, WRITEFILE]).await;
    // `torch.compile` now runs before `import torch_xla`: the backend is still the notebook's.
    assert_eq!(codes(&published[0]), ["TPU603", "TPU401"]);
    assert_eq!(start(&published[0]["diagnostics"][1]), (1, 22));

    // Close: every cell is cleared.
    client
        .notify(
            "notebookDocument/didClose",
            json!({
                "notebookDocument": {"uri": NOTEBOOK},
                "cellTextDocuments": [{"uri": IMPORTS}, {"uri": TITLE}, {"uri": MODEL}, {"uri": WRITEFILE}]
            }),
        )
        .await;
    for uri in [MODEL, IMPORTS, TITLE, WRITEFILE] {
        let cleared = client.diagnostics(uri).await;
        assert!(codes(&cleared).is_empty(), "{cleared}");
    }
    let report = client.debug_report().await;
    assert!(report.contains("open notebooks: 0"), "{report}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_clients_pull_per_cell_and_are_asked_to_refresh_across_cells() {
    let capabilities = json!({
        "textDocument": {
            "diagnostic": {"dynamicRegistration": false},
            "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}}
        },
        "workspace": {"diagnostics": {"refreshSupport": true}}
    });
    let (mut client, _) = TestClient::initialized(capabilities, json!({})).await;
    open_notebook(&mut client).await;

    let pull = |uri: &str, previous: Option<&Value>| {
        let mut params = json!({"textDocument": {"uri": uri}});
        if let Some(previous) = previous {
            params["previousResultId"] = previous.clone();
        }
        params
    };
    let response = client
        .request("textDocument/diagnostic", pull(MODEL, None))
        .await;
    let report = &response["result"];
    assert_eq!(report["kind"], "full");
    let items: Vec<&str> = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(items, ["TPU603", "TPU401"]);
    let result_id = report["resultId"].clone();
    let response = client
        .request("textDocument/diagnostic", pull(MODEL, Some(&result_id)))
        .await;
    assert_eq!(response["result"]["kind"], "unchanged");
    let response = client
        .request("textDocument/diagnostic", pull(TITLE, None))
        .await;
    assert_eq!(response["result"]["items"], json!([]));

    // Dropping the import in cell 1 changes cell 3's findings: the server asks for a re-pull,
    // even though the client pulls the edited cell at once (as VS Code does), which analyses the
    // new version before the server's own worker gets to it.
    edit_line(&mut client, IMPORTS, 2, 1, "").await;
    let response = client
        .request("textDocument/diagnostic", pull(IMPORTS, None))
        .await;
    assert_eq!(response["result"]["items"], json!([]));
    let deadline = tokio::time::Instant::now() + common::TIMEOUT;
    while client.refreshes() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no diagnostic refresh"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let response = client
        .request("textDocument/diagnostic", pull(MODEL, Some(&result_id)))
        .await;
    assert_eq!(response["result"]["kind"], "full");
    assert_eq!(response["result"]["items"].as_array().unwrap().len(), 1);

    assert!(
        client
            .drain()
            .iter()
            .all(|m| m["method"] != "textDocument/publishDiagnostics"),
        "nothing is pushed to a pull client"
    );
    client.shutdown().await;
}

/// VS Code pulls an edited cell as soon as the cell's text changes, which can be before the
/// `notebookDocument/didChange` carrying that edit reaches the server: the pull is answered from
/// the old text, and the server must ask for another pull once the edit is in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_that_overtakes_its_edit_is_followed_by_a_refresh() {
    let capabilities = json!({
        "textDocument": {"diagnostic": {"dynamicRegistration": false}},
        "workspace": {"diagnostics": {"refreshSupport": true}}
    });
    let (mut client, _) = TestClient::initialized(capabilities, json!({})).await;
    open_notebook(&mut client).await;
    // The pull the client sent for its edit, answered before the edit arrives.
    let response = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": MODEL}}),
        )
        .await;
    let before: Vec<&str> = response["result"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(before, ["TPU603", "TPU401"]);
    let refreshes_before = client.refreshes();
    // The edit fixes TPU401 in the model cell itself; the client pulls nothing more.
    edit_line(&mut client, MODEL, 2, 1, "device = torch.device(\"xla\")\n").await;
    let deadline = tokio::time::Instant::now() + common::TIMEOUT;
    while client.refreshes() == refreshes_before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no diagnostic refresh after an edit whose pull came first"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let response = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": MODEL}}),
        )
        .await;
    assert_eq!(response["result"]["items"].as_array().unwrap().len(), 1);
    client.shutdown().await;
}

/// VS Code edits a cell's text without bumping the notebook's version (only the cell's): the
/// next pull must see the new text, not an "unchanged" answer from the old one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cell_edit_that_keeps_the_notebook_version_is_seen() {
    let capabilities = json!({"textDocument": {"diagnostic": {"dynamicRegistration": false}}});
    let (mut client, _) = TestClient::initialized(capabilities, json!({})).await;
    open_notebook(&mut client).await;
    let response = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": MODEL}}),
        )
        .await;
    assert_eq!(response["result"]["items"].as_array().unwrap().len(), 2);
    let result_id = response["result"]["resultId"].clone();
    client
        .notify(
            "notebookDocument/didChange",
            json!({
                "notebookDocument": {"uri": NOTEBOOK, "version": 1},
                "change": {"cells": {"textContent": [{
                    "document": {"uri": MODEL, "version": 2},
                    "changes": [{
                        "range": {"start": {"line": 1, "character": 0},
                                  "end": {"line": 2, "character": 0}},
                        "text": "device = torch.device(\"xla\")\n"
                    }]
                }]}}
            }),
        )
        .await;
    let response = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": MODEL}, "previousResultId": result_id}),
        )
        .await;
    assert_eq!(response["result"]["kind"], "full", "{response}");
    let codes: Vec<&str> = response["result"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["TPU603"]);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_cell_edits_apply_in_arrival_order() {
    let (mut client, _) = TestClient::initialized(push_client(), json!({})).await;
    open_notebook(&mut client).await;
    batch(&mut client, &[IMPORTS, TITLE, MODEL]).await;
    // Typed one character per notification at the start of cell 3, without waiting.
    let typed = "gpu = torch.device(\"cuda\")\n";
    let mut version = 1;
    let (mut line, mut character) = (0u32, 0u32);
    for typed_character in typed.chars() {
        version += 1;
        client
            .notify(
                "notebookDocument/didChange",
                json!({
                    "notebookDocument": {"uri": NOTEBOOK, "version": version},
                    "change": {"cells": {"textContent": [{
                        "document": {"uri": MODEL, "version": version},
                        "changes": [{
                            "range": {"start": {"line": line, "character": character},
                                      "end": {"line": line, "character": character}},
                            "text": typed_character.to_string()
                        }]
                    }]}}
                }),
            )
            .await;
        if typed_character == '\n' {
            (line, character) = (line + 1, 0);
        } else {
            character += 1;
        }
    }
    let published = client.diagnostics_at(MODEL, version).await;
    let found: Vec<(u64, u64, String)> = published["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let (line, character) = start(d);
            (line, character, d["code"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(
        found,
        [
            (0, 19, "TPU401".to_string()),
            (1, 8, "TPU603".to_string()),
            (2, 22, "TPU401".to_string())
        ]
    );
    client.shutdown().await;
}

/// Arbitrary structure and text changes, including out-of-range splices and positions, cells
/// of every kind and IPython lines: the server keeps serving and never reports a crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitrary_notebook_changes_never_crash_the_server() {
    let (mut client, _) = TestClient::initialized(push_client(), json!({})).await;
    open_notebook(&mut client).await;
    let texts = [
        "%%bash\necho hi\n",
        "!pip install x \\\n  y\nx = torch.ones(3).cuda()\n",
        "for i in range(3):\n    %time f(i)\n",
        "def f(\n",
        "\"\"\"unterminated\n%magic\n",
        "名前 = torch.device(\"cuda\")  # 🔥\r\n",
        "",
        "x?\n??y\nfiles = !ls\n",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    let mut cells: Vec<String> = vec![IMPORTS.into(), TITLE.into(), MODEL.into()];
    let mut created = 0;
    for version in 2..200 {
        let change = match next(3) {
            0 => {
                created += 1;
                let uri = format!("vscode-notebook-cell:/project/train.ipynb#N{created}");
                let at = next(cells.len() as u64 + 2);
                let text = texts[next(texts.len() as u64) as usize];
                let kind = if next(4) == 0 { MARKUP } else { CODE };
                cells.insert((at as usize).min(cells.len()), uri.clone());
                json!({"cells": {"structure": {
                    "array": {"start": at, "deleteCount": 0, "cells": [cell(kind, &uri)]},
                    "didOpen": [cell_document(&uri, "python", 1, text)]
                }}})
            }
            1 if !cells.is_empty() => {
                let at = next(cells.len() as u64) as usize;
                let count = 1 + next(2) as usize;
                let removed: Vec<Value> = cells
                    .drain(at..(at + count).min(cells.len()))
                    .map(|uri| json!({"uri": uri}))
                    .collect();
                json!({"cells": {"structure": {
                    "array": {"start": at, "deleteCount": count + next(2) as usize},
                    "didClose": removed
                }}})
            }
            _ if !cells.is_empty() => {
                let uri = &cells[next(cells.len() as u64) as usize];
                let (line, character) = (next(4) as u32, next(40) as u32);
                json!({"cells": {"textContent": [{
                    "document": {"uri": uri, "version": version},
                    "changes": [{
                        "range": {"start": {"line": line, "character": character},
                                  "end": {"line": line + next(2) as u32, "character": next(40)}},
                        "text": texts[next(texts.len() as u64) as usize]
                    }]
                }]}})
            }
            _ => json!({"metadata": {"custom": version}}),
        };
        client
            .notify(
                "notebookDocument/didChange",
                json!({"notebookDocument": {"uri": NOTEBOOK, "version": version}, "change": change}),
            )
            .await;
        if version % 40 == 0 {
            // Requests on a cell between changes exercise the on-demand analysis too.
            if let Some(uri) = cells.first() {
                let response = client
                    .request(
                        "textDocument/codeAction",
                        json!({
                            "textDocument": {"uri": uri},
                            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}},
                            "context": {"diagnostics": []}
                        }),
                    )
                    .await;
                assert!(response.get("error").is_none(), "{response}");
            }
        }
    }
    let report = client.debug_report().await;
    assert!(report.contains("open notebooks: 1"), "{report}");
    let crashes: Vec<Value> = client
        .drain()
        .into_iter()
        .filter(|m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|message| message.contains("crash"))
        })
        .collect();
    assert!(crashes.is_empty(), "{crashes:?}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_diagnostic_reports_every_cell() {
    let capabilities = json!({
        "textDocument": {"diagnostic": {"dynamicRegistration": false}},
        "workspace": {"diagnostics": {"refreshSupport": false}}
    });
    let (mut client, _) = TestClient::initialized(capabilities, json!({})).await;
    open_notebook(&mut client).await;
    let response = client
        .request("workspace/diagnostic", json!({"previousResultIds": []}))
        .await;
    let items = response["result"]["items"]
        .as_array()
        .expect("items")
        .clone();
    let by_uri = |uri: &str| {
        items
            .iter()
            .find(|item| item["uri"] == uri)
            .unwrap_or_else(|| panic!("no report for {uri}: {items:?}"))
            .clone()
    };
    let model = by_uri(MODEL);
    assert_eq!(model["kind"], "full");
    assert_eq!(model["version"], 1);
    let model_codes: Vec<_> = model["items"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|diagnostic| diagnostic["code"].as_str().expect("code").to_string())
        .collect();
    assert_eq!(model_codes, ["TPU603", "TPU401"]);
    assert_eq!(by_uri(TITLE)["items"], json!([]), "markdown is not checked");

    // Unchanged since the previous results: every cell is reported unchanged.
    let previous: Vec<Value> = items
        .iter()
        .map(|item| json!({"uri": item["uri"], "value": item["resultId"]}))
        .collect();
    let response = client
        .request(
            "workspace/diagnostic",
            json!({"previousResultIds": previous}),
        )
        .await;
    let again = response["result"]["items"].as_array().expect("items");
    assert_eq!(again.len(), items.len());
    assert!(
        again.iter().all(|item| item["kind"] == "unchanged"),
        "{again:?}"
    );
    client.shutdown().await;
}

/// The scheduler's counts from the debug report: (analyses started, runs cancelled in flight).
async fn analysis_counts(client: &mut TestClient) -> (u64, u64) {
    let report = client.debug_report().await;
    let line = report
        .lines()
        .find_map(|line| line.strip_prefix("analyses: "))
        .unwrap_or_else(|| panic!("no analyses line in {report}"));
    let numbers: Vec<u64> = line
        .split(' ')
        .filter_map(|word| word.parse().ok())
        .collect();
    assert_eq!(numbers.len(), 2, "{line}");
    (numbers[0], numbers[1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_a_hover_and_a_code_action_on_a_cell_share_one_analysis() {
    // A pull client without refresh: no worker runs, only the requests analyse.
    let capabilities = json!({
        "textDocument": {
            "diagnostic": {"dynamicRegistration": false},
            "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source"]}}},
            "hover": {"contentFormat": ["markdown"]}
        },
        "workspace": {"diagnostics": {"refreshSupport": false}}
    });
    let (mut client, _) = TestClient::initialized(capabilities, json!({})).await;
    open_notebook(&mut client).await;
    for round in 1..=2u64 {
        // Sent together, answered from one run of the notebook's revision.
        let pull = client
            .send_request(
                "textDocument/diagnostic",
                json!({"textDocument": {"uri": MODEL}}),
            )
            .await;
        let hover = client
            .send_request(
                "textDocument/hover",
                json!({"textDocument": {"uri": MODEL}, "position": {"line": 1, "character": 26}}),
            )
            .await;
        let actions = client
            .send_request(
                "textDocument/codeAction",
                json!({
                    "textDocument": {"uri": MODEL},
                    "range": {"start": {"line": 1, "character": 22}, "end": {"line": 1, "character": 28}},
                    "context": {"diagnostics": []}
                }),
            )
            .await;
        let pull = client.response(json!(pull)).await;
        let diagnostics = pull["result"]["items"].as_array().expect("a full report");
        let hover = client.response(json!(hover)).await;
        let actions = client.response(json!(actions)).await;
        assert!(!diagnostics.is_empty(), "{pull}");
        assert!(
            hover["result"]["contents"]["value"]
                .as_str()
                .is_some_and(|text| text.contains("TPU401")),
            "{hover}"
        );
        assert!(
            actions["result"].as_array().is_some_and(|a| !a.is_empty()),
            "{actions}"
        );
        assert_eq!(
            analysis_counts(&mut client).await,
            (round, 0),
            "one analysis per revision"
        );
        // The next round is of the next revision.
        edit_line(&mut client, IMPORTS, 2, 0, "import torch\n").await;
    }
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebook_edit_cancels_the_run_it_supersedes() {
    let (mut client, _) = TestClient::initialized(push_client(), json!({})).await;
    // A cell big enough that its check is still running when the edit arrives.
    let mut big = String::from("import torch\n");
    while big.len() < 1_500_000 {
        big.push_str("x = torch.zeros(4, 128) + y * 2 - z / 3  # padding padding padding\n");
    }
    client
        .notify(
            "notebookDocument/didOpen",
            json!({
                "notebookDocument": {
                    "uri": NOTEBOOK, "notebookType": "jupyter-notebook", "version": 1,
                    "cells": [cell(CODE, IMPORTS), cell(CODE, MODEL)]
                },
                "cellTextDocuments": [
                    cell_document(IMPORTS, "python", 1, &big),
                    cell_document(MODEL, "python", 1, MODEL_TEXT),
                ]
            }),
        )
        .await;
    // Wait until the worker's run of the opened notebook has started.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while analysis_counts(&mut client).await.0 == 0 {
        assert!(std::time::Instant::now() < deadline, "no analysis started");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    edit_line(&mut client, MODEL, 2, 1, "device = torch.device(\"cpu\")\n").await;
    // The first publishes are of the edit: the superseded run published nothing.
    let published = batch(&mut client, &[IMPORTS, MODEL]).await;
    assert_eq!(published[1]["version"], 2, "{published:?}");
    assert_eq!(codes(&published[1]), Vec::<String>::new());
    let (started, cancelled) = analysis_counts(&mut client).await;
    assert_eq!(
        (started, cancelled),
        (2, 1),
        "the superseded run was cancelled"
    );

    // Closing the notebook clears its cells through the same path as a text document.
    client
        .notify(
            "notebookDocument/didClose",
            json!({"notebookDocument": {"uri": NOTEBOOK},
                   "cellTextDocuments": [{"uri": IMPORTS}, {"uri": MODEL}]}),
        )
        .await;
    for uri in [IMPORTS, MODEL] {
        let cleared = client.diagnostics(uri).await;
        assert_eq!(cleared["diagnostics"], json!([]), "{cleared}");
        assert!(
            cleared.get("version").is_none_or(Value::is_null),
            "{cleared}"
        );
    }
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_change_rechecks_open_notebooks() {
    let (mut client, _) = TestClient::initialized(push_client(), json!({})).await;
    open_notebook(&mut client).await;
    let published = client.diagnostics_at(MODEL, 1).await;
    assert_eq!(codes(&published), ["TPU603", "TPU401"]);
    client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"tpulint": {"ignore": ["TPU603"]}}}),
        )
        .await;
    // The same cell version, published again under the new settings.
    let published = client.diagnostics_at(MODEL, 1).await;
    assert_eq!(codes(&published), ["TPU401"]);
    client.shutdown().await;
}
