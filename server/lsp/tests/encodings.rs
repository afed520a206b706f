//! Position encodings end to end: the server picks UTF-8 or UTF-32 when offered, UTF-16
//! otherwise, and every column it sends or reads is in that unit (emoji, CJK, combining marks).

mod common;

use common::TestClient;
use serde_json::{Value, json};

const URI: &str = "file:///project/enc.py";

/// The `"cuda"` string starts after an emoji (4 bytes, 2 UTF-16 units, 1 scalar), two CJK
/// characters (3 bytes, 1 unit, 1 scalar each) and an `e` with a combining acute (3 bytes,
/// 2 units, 2 scalars).
const SOURCE: &str =
    "import torch\nimport torch_xla\ns = \"🔥名前e\u{301}\"; d = torch.device(\"cuda\")\n";

async fn start_character(encodings: Value) -> (String, u64) {
    let capabilities = json!({"general": {"positionEncodings": encodings}});
    let (mut client, init) = TestClient::initialized(capabilities, Value::Null).await;
    let negotiated = init["capabilities"]["positionEncoding"]
        .as_str()
        .unwrap()
        .to_string();
    client.open(URI, SOURCE).await;
    let published = client.diagnostics(URI).await;
    let diagnostic = published["diagnostics"][0].clone();
    assert_eq!(diagnostic["code"], "TPU401");
    assert_eq!(diagnostic["range"]["start"]["line"], 2);
    let character = diagnostic["range"]["start"]["character"].as_u64().unwrap();
    // The same unit is used when reading positions: hovering at the reported start finds it.
    let hover = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": diagnostic["range"]["start"]}),
        )
        .await;
    assert!(
        hover["result"]["contents"]["value"]
            .as_str()
            .unwrap()
            .contains("TPU401")
    );
    // And an incremental edit addressed in that unit lands where intended: replace `"cuda"`.
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": URI, "version": 2},
                "contentChanges": [{"range": diagnostic["range"], "text": "\"xla\""}]
            }),
        )
        .await;
    let published = client.diagnostics_at(URI, 2).await;
    assert_eq!(
        published["diagnostics"],
        json!([]),
        "edit landed elsewhere: {published}"
    );
    client.shutdown().await;
    (negotiated, character)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_follow_the_negotiated_encoding() {
    let prefix = "s = \"🔥名前e\u{301}\"; d = torch.device(";
    let utf8 = prefix.len() as u64;
    let utf16 = prefix.encode_utf16().count() as u64;
    let utf32 = prefix.chars().count() as u64;
    assert_eq!((utf8, utf16, utf32), (38, 31, 30));
    assert_eq!(
        start_character(json!(["utf-8", "utf-16"])).await,
        ("utf-8".into(), utf8)
    );
    assert_eq!(
        start_character(json!(["utf-32", "utf-16"])).await,
        ("utf-32".into(), utf32)
    );
    assert_eq!(
        start_character(json!(["utf-16"])).await,
        ("utf-16".into(), utf16)
    );
    assert_eq!(start_character(Value::Null).await, ("utf-16".into(), utf16));
}
