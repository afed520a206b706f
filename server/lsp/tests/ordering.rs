//! Ordering stress test: hundreds of rapid incremental edits, sent without waiting, must be
//! applied in order; the last published diagnostics must equal a fresh check of the final text,
//! and published versions must never go backwards.

mod common;

use common::{TestClient, push_client};
use serde_json::{Value, json};
use tpulint_analyzer::{LineIndex, Settings, check_source};
use tpulint_lsp::encoding::PositionEncoding;
use tpulint_lsp::to_proto;

const URI: &str = "file:///project/stress.py";

const START: &str = "import torch
import torch_xla


def train_step(model, batch):
    loss = model(batch).mean()
    return loss.item()
";

/// A small deterministic generator (xorshift), so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

const SNIPPETS: &[&str] = &[
    "d = torch.device(\"cuda\")\n",
    "v = loss.item()\n",
    "z = t.to(\"cuda:1\")  # 名前🔥\n",
    "s = \"é🚀\"; w = torch.device('cuda')\n",
    "# just a comment\n",
    "x = 1\n",
];

/// One random edit of `text`: (byte range, replacement).
fn random_edit(rng: &mut Rng, text: &str) -> (std::ops::Range<usize>, String) {
    let index = LineIndex::new(text);
    let line = rng.below(index.line_count());
    let line_range = index.line_range(line, text);
    match rng.below(4) {
        0 => {
            let snippet = SNIPPETS[rng.below(SNIPPETS.len())];
            (line_range.start..line_range.start, snippet.to_string())
        }
        1 if index.line_count() > 3 => {
            let next = index.line_start(line + 1);
            (line_range.start..next, String::new())
        }
        _ => {
            // Type or delete one character at a char boundary of the line.
            let boundaries: Vec<usize> = (line_range.start..=line_range.end)
                .filter(|offset| text.is_char_boundary(*offset))
                .collect();
            let at = boundaries[rng.below(boundaries.len())];
            // Deleting letters and typing balanced text keeps most lines valid Python, so the
            // final text still has findings to compare.
            if rng.below(3) == 0
                && text
                    .as_bytes()
                    .get(at)
                    .is_some_and(u8::is_ascii_alphanumeric)
            {
                (at..at + 1, String::new())
            } else {
                let typed = ["a", "()", " ", "é", "🔥", ".item()", "_"][rng.below(7)];
                (at..at, typed.to_string())
            }
        }
    }
}

fn expected_diagnostics(text: &str) -> Vec<Value> {
    let index = LineIndex::new(text);
    check_source(text, &Settings::default())
        .iter()
        .map(|d| {
            let range = to_proto::range(text, &index, d.range.clone(), PositionEncoding::Utf16);
            json!({"code": d.code, "range": range, "message": d.message})
        })
        .collect()
}

fn published_summary(params: &Value) -> Vec<Value> {
    params["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| json!({"code": d["code"], "range": d["range"], "message": d["message"]}))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_incremental_edits_are_applied_in_order() {
    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    client.open(URI, START).await;
    let mut text = START.to_string();
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    const EDITS: i64 = 400;
    for version in 2..=EDITS + 1 {
        let (range, replacement) = random_edit(&mut rng, &text);
        let index = LineIndex::new(&text);
        let lsp_range = to_proto::range(&text, &index, range.clone(), PositionEncoding::Utf16);
        text.replace_range(range, &replacement);
        client
            .notify(
                "textDocument/didChange",
                json!({
                    "textDocument": {"uri": URI, "version": version},
                    "contentChanges": [{"range": lsp_range, "text": replacement}]
                }),
            )
            .await;
    }
    let last_version = EDITS + 1;
    let mut seen_versions = Vec::new();
    let final_params = loop {
        let params = client.diagnostics(URI).await;
        let version = params["version"]
            .as_i64()
            .expect("every publish has a version");
        seen_versions.push(version);
        if version == last_version {
            break params;
        }
    };
    assert!(
        seen_versions.windows(2).all(|pair| pair[0] < pair[1]),
        "published versions went backwards: {seen_versions:?}"
    );
    let expected = expected_diagnostics(&text);
    assert!(
        !expected.is_empty(),
        "the edits should leave findings to compare"
    );
    assert_eq!(
        published_summary(&final_params),
        expected,
        "final text:\n{text}"
    );

    // A full-text change resets everything and is also applied in order.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": last_version + 1}, "contentChanges": [{"text": START}]}),
        )
        .await;
    let params = client.diagnostics_at(URI, last_version + 1).await;
    assert_eq!(published_summary(&params), expected_diagnostics(START));
    client.shutdown().await;
}
