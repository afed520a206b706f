//! Ordering stress test: hundreds of rapid incremental edits, sent without waiting, must be
//! applied in order; the last published diagnostics must equal a fresh check of the final text,
//! and published versions must never go backwards.
//!
//! The server publishes the diagnostics of an incremental re-parse with a syntax error at once and
//! those of a fresh parse next, if they differ (`documents::push_worker`): so "the last published
//! diagnostics" are the ones published once the server has settled the document (its stored
//! analysis exact and its worker idle, read from the debug report).

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
    let first_of_last = loop {
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
    let final_params = settled(&mut client, URI, last_version, first_of_last).await;
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
    let params = settled(&mut client, URI, last_version + 1, params).await;
    assert_eq!(published_summary(&params), expected_diagnostics(START));
    client.shutdown().await;
}

/// The server's state of text document `uri` from its debug report: (version, its stored
/// analysis is exact, its push worker is running).
async fn document_state(client: &mut TestClient, uri: &str) -> Option<(i64, bool, bool)> {
    let report = client.debug_report().await;
    let line = report
        .lines()
        .find(|line| line.trim_start().starts_with(uri))?;
    let field = |name: &str| {
        line.split([',', '(', ')'])
            .map(str::trim)
            .find_map(|part| part.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name:?} in {line}"))
            .to_string()
    };
    let version = field("version ").parse().expect("a version");
    Some((
        version,
        field("analysis: ") == "exact",
        field("worker: ") == "running",
    ))
}

/// A count the server's debug report shows on a line `label: N` ("diagnostic refreshes sent",
/// "publishes queued").
async fn debug_count(client: &mut TestClient, label: &str) -> usize {
    let report = client.debug_report().await;
    report
        .lines()
        .find_map(|line| line.strip_prefix(label)?.strip_prefix(": "))
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in {report}"))
}

/// The last diagnostics the server publishes for `uri` at `version` (`first`: its first publish
/// of that version), once it has settled the document: its stored analysis of `version` is exact
/// and its worker idle, so nothing more is queued; a publish queued just before is collected.
async fn settled(client: &mut TestClient, uri: &str, version: i64, first: Value) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if document_state(client, uri).await == Some((version, true, false)) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never settled");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // The publish queue and the responses are separate channels: a publish queued before the
    // worker went idle is counted by then, so wait until every publish counted has arrived.
    let queued = debug_count(client, "publishes queued").await;
    while client.publishes() < queued {
        assert!(
            std::time::Instant::now() < deadline,
            "a publish never arrived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let mut last = first;
    for message in client.drain() {
        if message["method"] == "textDocument/publishDiagnostics" && message["params"]["uri"] == uri
        {
            assert_eq!(message["params"]["version"], version, "{message}");
            last = message["params"].clone();
        }
    }
    last
}

/// An edit's range as (start line, start character, end line, end character), UTF-16.
type LineRange = (u32, u32, u32, u32);

/// The `lsp_edits` fuzz regression: a text and three edits after which tree-sitter's incremental
/// re-parse recovers from the error otherwise than a fresh parse.
const FUZZ_INITIAL: &str = "import torch\nx = torch.zeros(3).cuda()\nfor b in loader:\n    loss = model(b)\n    print(loss.item())\n";
const FUZZ_REGRESSION: [(LineRange, &str); 3] = [
    ((5, 24, 5, 35), "i"),
    ((1, 30, 1, 12), ":(\n😀😀\n\n\n\n"),
    ((0, 24, 0, 24), "\n😀\n"),
];

/// What the random bursts type: text that opens and closes brackets, blocks and strings.
const TYPED: &[&str] = &[
    "(",
    ")",
    ":",
    "\n",
    "\n    ",
    "x",
    " ",
    ".",
    "[",
    "]",
    "😀",
    "def f(",
    "\"",
    "if a:\n",
    ".cuda()",
    "torch.ones(2)",
];

/// A random edit of `document` that tends to leave syntax errors (unlike [`random_edit`], which
/// keeps most lines valid): a UTF-16 LSP range and its new text, on a random line at a character
/// boundary; one in four deletes the next character, the rest type from [`TYPED`].
fn random_breaking_edit(
    rng: &mut Rng,
    document: &tpulint_lsp::document::TextDocument,
) -> (LineRange, &'static str) {
    let text = document.text();
    let index = LineIndex::new(text);
    let line = rng.below(index.line_count());
    let line_range = index.line_range(line, text);
    let boundaries: Vec<usize> = (line_range.start..=line_range.end)
        .filter(|offset| text.is_char_boundary(*offset))
        .collect();
    let at = boundaries[rng.below(boundaries.len())];
    let (range, typed) = if rng.below(4) == 0 && at < line_range.end {
        let end = (at + 1..=line_range.end)
            .find(|offset| text.is_char_boundary(*offset))
            .unwrap_or(at);
        (at..end, "")
    } else {
        (at..at, TYPED[rng.below(TYPED.len())])
    };
    let lsp_range = to_proto::range(text, &index, range, PositionEncoding::Utf16);
    (
        (
            lsp_range.start.line,
            lsp_range.start.character,
            lsp_range.end.line,
            lsp_range.end.character,
        ),
        typed,
    )
}

/// Sends one incremental change to the server and applies it to `document` (the test's copy,
/// through the server's own document type, so out-of-range and inverted ranges are clamped as
/// the server clamps them).
async fn change(
    client: &mut TestClient,
    document: &mut tpulint_lsp::document::TextDocument,
    version: i32,
    range: LineRange,
    text: &str,
) {
    let lsp_range = json!({
        "start": {"line": range.0, "character": range.1},
        "end": {"line": range.2, "character": range.3}
    });
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": URI, "version": version},
                "contentChanges": [{"range": lsp_range, "text": text}]
            }),
        )
        .await;
    let change: tower_lsp_server::ls_types::TextDocumentContentChangeEvent =
        serde_json::from_value(json!({"range": lsp_range, "text": text})).expect("change");
    document.apply_changes(vec![change], version, PositionEncoding::Utf16);
}

/// A code action request over the whole of `document` sent right after its last edit (before the
/// worker has settled it) is answered from the analysis of the fresh parse: its TPU101 (which the
/// incremental tree's analysis lacks), and no code a fresh check does not report.
async fn code_actions_are_of_the_fresh_parse(
    client: &mut TestClient,
    document: &tpulint_lsp::document::TextDocument,
) {
    let expected = expected_diagnostics(document.text());
    let expected_codes: std::collections::BTreeSet<&str> =
        expected.iter().filter_map(|d| d["code"].as_str()).collect();
    assert!(expected_codes.contains("TPU101"), "{expected:?}");
    let line_count = document.text().lines().count() as u32 + 1;
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": URI},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": line_count, "character": 0}},
                "context": {"diagnostics": []}
            }),
        )
        .await;
    let actions = actions["result"].as_array().expect("actions").clone();
    let codes: Vec<&str> = actions
        .iter()
        .flat_map(|action| action["diagnostics"].as_array().into_iter().flatten())
        .filter_map(|diagnostic| diagnostic["code"].as_str())
        .collect();
    assert!(codes.contains(&"TPU101"), "{actions:?}");
    assert!(
        codes.iter().all(|code| expected_codes.contains(code)),
        "{codes:?} against {expected_codes:?}"
    );
}

/// Edits that leave syntax errors (unclosed brackets, stray colons, dedents), sent in bursts;
/// after each burst the server settles, and what it published last equals a fresh check of the
/// text (the server's first publish of a revision may come from an incremental re-parse whose
/// error recovery differs). It starts with the `lsp_edits` fuzz regression, whose incremental
/// re-parse recovers otherwise than a fresh parse: right after it, before any settling, a code
/// action request is answered from the fresh parse's analysis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_with_syntax_errors_settle_on_what_a_fresh_check_reports() {
    let initial = FUZZ_INITIAL;
    let (mut client, _) = TestClient::initialized(push_client(), Value::Null).await;
    client.open(URI, initial).await;
    let mut document = tpulint_lsp::document::TextDocument::new(initial.to_string(), 1);
    let first = client.diagnostics_at(URI, 1).await;
    settled(&mut client, URI, 1, first).await;
    let regression = FUZZ_REGRESSION;
    let mut version = 1;
    for (range, text) in regression {
        version += 1;
        change(&mut client, &mut document, version, range, text).await;
        if version == 4 {
            code_actions_are_of_the_fresh_parse(&mut client, &document).await;
        }
        // Each edit is parsed incrementally from the last one's tree.
        let first = client.diagnostics_at(URI, i64::from(version)).await;
        let params = settled(&mut client, URI, i64::from(version), first).await;
        assert_eq!(
            published_summary(&params),
            expected_diagnostics(document.text()),
            "after edit {version}: {:?}",
            document.text()
        );
    }

    // Random bursts of edits that open and close brackets and blocks.
    let mut rng = Rng(0x0dd_ba11_5eed_cafe);
    for _round in 0..40 {
        for _ in 0..1 + rng.below(4) {
            let (range, typed) = random_breaking_edit(&mut rng, &document);
            version += 1;
            change(&mut client, &mut document, version, range, typed).await;
        }
        let first = client.diagnostics_at(URI, i64::from(version)).await;
        let params = settled(&mut client, URI, i64::from(version), first).await;
        assert_eq!(
            published_summary(&params),
            expected_diagnostics(document.text()),
            "after version {version}: {:?}",
            document.text()
        );
    }
    client.shutdown().await;
}

/// A pull-diagnostics client, with or without `workspace/diagnostic/refresh` support.
fn pull_client(refresh: bool) -> Value {
    json!({
        "textDocument": {"diagnostic": {"dynamicRegistration": false}},
        "workspace": {"diagnostics": {"refreshSupport": refresh}}
    })
}

/// What a pull client holds for [`URI`]: the result id and the diagnostics of its last full report.
struct Pulled {
    result_id: String,
    diagnostics: Vec<Value>,
}

/// Pulls the diagnostics of [`URI`] as a client holding `held` does (its result id sent as the
/// previous one); an "unchanged" answer keeps what it holds.
async fn pull(client: &mut TestClient, held: Option<Pulled>) -> Pulled {
    let previous = held.as_ref().map(|held| held.result_id.clone());
    let response = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": URI}, "previousResultId": previous}),
        )
        .await;
    let result = &response["result"];
    let result_id = result["resultId"]
        .as_str()
        .unwrap_or_else(|| panic!("no result id: {response}"))
        .to_string();
    match result["kind"].as_str() {
        Some("full") => Pulled {
            result_id,
            diagnostics: published_summary(&json!({"diagnostics": result["items"]})),
        },
        Some("unchanged") => {
            let held = held.expect("unchanged without a previous result");
            assert_eq!(held.result_id, result_id);
            held
        }
        _ => panic!("not a report: {response}"),
    }
}

/// What a pull client that takes refreshes holds for [`URI`] at `version` once the server has
/// settled it (its stored analysis exact), given `pulled`, its pull right after the edit, and
/// `refreshes_before`, the refreshes sent before that pull: if the server asked for a refresh
/// since, the client pulls again (as VS Code does).
async fn settled_pull(
    client: &mut TestClient,
    version: i64,
    pulled: Pulled,
    refreshes_before: usize,
) -> Pulled {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        match document_state(client, URI).await {
            Some((at, true, _)) if at == version => break,
            _ => {}
        }
        assert!(std::time::Instant::now() < deadline, "never settled");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // A refresh the exact analysis calls for is counted before it is stored, so the count read
    // now includes it: wait until every refresh counted has reached the client.
    let sent = debug_count(client, "diagnostic refreshes sent").await;
    while client.refreshes() < sent {
        assert!(
            std::time::Instant::now() < deadline,
            "a refresh never arrived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    if client.refreshes() > refreshes_before {
        pull(client, Some(pulled)).await
    } else {
        pulled
    }
}

/// The edits of [`edits_with_syntax_errors_settle_on_what_a_fresh_check_reports`] for a pull
/// client (`rounds` random bursts): after each edit or burst the client pulls at once, then waits
/// for the server to settle (and re-pulls on a refresh). Calls `check` with the version, the
/// text, what the client holds after its first pull and after settling.
async fn edit_and_pull(
    client: &mut TestClient,
    rounds: usize,
    mut check: impl FnMut(i32, &str, &[Value], &[Value]),
) {
    let initial = FUZZ_INITIAL;
    client.open(URI, initial).await;
    let mut document = tpulint_lsp::document::TextDocument::new(initial.to_string(), 1);
    let mut held: Option<Pulled> = None;
    let mut version = 1;
    let regression = FUZZ_REGRESSION;
    let mut rng = Rng(0x0dd_ba11_5eed_cafe);
    for round in 0..1 + regression.len() + rounds {
        if (1..=regression.len()).contains(&round) {
            let (range, text) = regression[round - 1];
            version += 1;
            change(client, &mut document, version, range, text).await;
        } else if round > regression.len() {
            for _ in 0..1 + rng.below(4) {
                let (range, typed) = random_breaking_edit(&mut rng, &document);
                version += 1;
                change(client, &mut document, version, range, typed).await;
            }
        }
        let refreshes_before = client.refreshes();
        let first = pull(client, held.take()).await;
        let first_diagnostics = first.diagnostics.clone();
        let last = settled_pull(client, i64::from(version), first, refreshes_before).await;
        check(
            version,
            document.text(),
            &first_diagnostics,
            &last.diagnostics,
        );
        held = Some(last);
    }
}

/// A pull client that takes refreshes (VS Code's) is answered at once from the incremental
/// tree's analysis when it has a syntax error, and once the server has settled (the exact
/// analysis stored, a refresh sent if it differs and the client re-pulled), what it holds equals
/// a fresh check. Some first answers differ from the fresh check (the `lsp_edits` regression's
/// second edit lacks the fresh parse's TPU101): so the quick answers are given, and corrected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_clients_with_refresh_get_the_quick_answer_then_the_exact_one() {
    let (mut client, _) = TestClient::initialized(pull_client(true), Value::Null).await;
    let mut quick_differed = 0;
    edit_and_pull(&mut client, 40, |version, text, first, last| {
        let expected = expected_diagnostics(text);
        if first != expected.as_slice() {
            quick_differed += 1;
        }
        assert_eq!(
            last,
            expected.as_slice(),
            "after version {version}: {text:?}"
        );
    })
    .await;
    assert!(
        quick_differed > 0,
        "no pull was answered from a quick analysis"
    );
    assert!(client.refreshes() > 0);
    client.shutdown().await;
}

/// A pull client without refresh support could not be told to pull again: every pull is
/// answered from the exact analysis, and no refresh is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_clients_without_refresh_get_exact_answers_only() {
    let (mut client, _) = TestClient::initialized(pull_client(false), Value::Null).await;
    edit_and_pull(&mut client, 20, |version, text, first, last| {
        let expected = expected_diagnostics(text);
        assert_eq!(
            first,
            expected.as_slice(),
            "after version {version}: {text:?}"
        );
        assert_eq!(last, first);
    })
    .await;
    assert_eq!(client.refreshes(), 0);
    client.shutdown().await;
}
