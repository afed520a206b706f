//! `cargo bench -p tpulint_bench --bench lsp_latency`: replays typing into a 5,000-line module
//! through a real `tpulint server` process and reports `didChange` → `publishDiagnostics`
//! latency, then opens 500 documents and reports the server's memory. The same keystrokes are
//! replayed first against a server that checks every revision in full
//! (`TPULINT_NO_INCREMENTAL=1`), the baseline of the latency ratio. Prints a table with the
//! targets (p50 ≤ 0.1 × a full check, p99 ≤ 10 ms, ≥ 95% of keystrokes typed every 50 ms get
//! diagnostics, RSS ≤ 300 MB); never fails on a missed target.
//!
//! Environment:
//! - `TPULINT_BIN`: the `tpulint` binary to run (default: `cargo build --release -p tpulint`).
//! - `TPULINT_BENCH_FILE`: a real Python file to type into (its first 5,000 lines) instead of
//!   the module generated from the repository's fixtures and examples.
//! - `TPULINT_BENCH_CORPUS`: a directory whose `.py` files of 150–1,000 lines are the 500 open
//!   documents (generated ones fill up to 500).
//! - `TPULINT_BENCH_SITES` (default 6): places in the module where a statement is typed.
//! - `TPULINT_BENCH_PACE_MS` (default 50): keystroke interval of the paced run.
//! - `TPULINT_BENCH_SAVE`: also write the large document to this path (to profile the engine
//!   on it with `tpulint check`).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tpulint_bench::client::ServerProcess;
use tpulint_bench::documents::{self, Keystroke};
use tpulint_bench::stats::{Summary, millis, summarize};

const LARGE_LINES: usize = 5_000;
const OPEN_DOCUMENTS: usize = 500;
const SMALL_LINES: usize = 300;
const LARGE_URI: &str = "file:///bench/large_module.py";
const TIMEOUT: Duration = Duration::from_secs(300);

/// p50 of a keystroke at most this share of the same keystroke checked in full.
const TARGET_P50_RATIO: f64 = 0.1;
const TARGET_P99: Duration = Duration::from_millis(10);
/// Share of keystrokes of the paced run that get their diagnostics.
const TARGET_PACED_SHARE: f64 = 0.95;
const TARGET_RSS_MIB: f64 = 300.0;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// `TPULINT_BIN`, or the release binary built now (a no-op when it is up to date).
fn server_binary() -> PathBuf {
    if let Some(binary) = std::env::var_os("TPULINT_BIN") {
        return PathBuf::from(binary);
    }
    let root = documents::repository_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--locked", "-q", "-p", "tpulint"])
        .current_dir(&root)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the release tpulint failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    target.join("release/tpulint")
}

fn open(server: &mut ServerProcess, uri: &str, text: &str) {
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
}

fn send_keystroke(server: &mut ServerProcess, version: i64, keystroke: &Keystroke) {
    server.notify(
        "textDocument/didChange",
        json!({
            "textDocument": {"uri": LARGE_URI, "version": version},
            "contentChanges": [{
                "range": {
                    "start": {"line": keystroke.line, "character": keystroke.character},
                    "end": {"line": keystroke.line, "character": keystroke.character + keystroke.length},
                },
                "rangeLength": keystroke.length,
                "text": keystroke.text,
            }],
        }),
    );
}

fn is_publish_for(message: &Value, uri: &str) -> bool {
    message["method"] == "textDocument/publishDiagnostics" && message["params"]["uri"] == uri
}

/// Waits for the diagnostics of `uri` at `version` or later; returns when they arrived and how
/// many diagnostics they hold.
fn wait_for_version(server: &mut ServerProcess, uri: &str, version: i64) -> (Instant, usize) {
    let received = server
        .wait_for(TIMEOUT, |message| {
            is_publish_for(message, uri) && message["params"]["version"].as_i64() >= Some(version)
        })
        .unwrap_or_else(|| panic!("no diagnostics for {uri} version {version}"));
    let count = received.message["params"]["diagnostics"]
        .as_array()
        .map_or(0, Vec::len);
    (received.at, count)
}

/// Latency of each keystroke: from sending version v to the first diagnostics of a version ≥ v
/// (what the user sees; the server may skip versions that were already superseded).
struct Run {
    latencies: Vec<Duration>,
    /// How many `publishDiagnostics` the run received (fewer than keystrokes when coalesced).
    publishes: usize,
    wall: Duration,
    /// Diagnostics in the last publish.
    last_diagnostics: usize,
}

/// Sends each keystroke only after the diagnostics of the previous one arrived.
fn run_sequential(server: &mut ServerProcess, version: &mut i64, script: &[Keystroke]) -> Run {
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(script.len());
    let mut last_diagnostics = 0;
    for keystroke in script {
        *version += 1;
        let sent = Instant::now();
        send_keystroke(server, *version, keystroke);
        let (arrived, diagnostics) = wait_for_version(server, LARGE_URI, *version);
        latencies.push(arrived - sent);
        last_diagnostics = diagnostics;
    }
    Run {
        publishes: latencies.len(),
        latencies,
        wall: started.elapsed(),
        last_diagnostics,
    }
}

/// Sends keystrokes every `pace` (zero: back to back) regardless of diagnostics, and matches
/// each diagnostics message to every keystroke it answers.
fn run_paced(
    server: &mut ServerProcess,
    version: &mut i64,
    script: &[Keystroke],
    pace: Duration,
) -> Run {
    let started = Instant::now();
    let first_version = *version + 1;
    let mut sent_at: Vec<Instant> = Vec::with_capacity(script.len());
    let mut latencies: Vec<Option<Duration>> = vec![None; script.len()];
    let mut answered = 0;
    let mut publishes = 0;
    let mut last_diagnostics = 0;
    let mut next_send = Instant::now();
    while answered < script.len() {
        if sent_at.len() < script.len() && Instant::now() >= next_send {
            *version += 1;
            sent_at.push(Instant::now());
            send_keystroke(server, *version, &script[sent_at.len() - 1]);
            next_send += pace;
            continue;
        }
        let wait = if sent_at.len() < script.len() {
            next_send.saturating_duration_since(Instant::now())
        } else {
            TIMEOUT
        };
        let Some(received) = server.next(wait) else {
            assert!(
                sent_at.len() < script.len(),
                "no diagnostics for the last keystrokes within {TIMEOUT:?}"
            );
            continue;
        };
        if !is_publish_for(&received.message, LARGE_URI) {
            continue;
        }
        let Some(published) = received.message["params"]["version"].as_i64() else {
            continue;
        };
        publishes += 1;
        last_diagnostics = received.message["params"]["diagnostics"]
            .as_array()
            .map_or(0, Vec::len);
        for (index, sent) in sent_at.iter().enumerate() {
            let keystroke_version = first_version + index as i64;
            if keystroke_version <= published && latencies[index].is_none() {
                latencies[index] = Some(received.at - *sent);
                answered += 1;
            }
        }
    }
    Run {
        latencies: latencies.into_iter().flatten().collect(),
        publishes,
        wall: started.elapsed(),
        last_diagnostics,
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "MISS" }
}

fn print_latency_row(name: &str, keystrokes: usize, run: &Run) -> Summary {
    let summary = summarize(&run.latencies).expect("keystrokes were measured");
    println!(
        "| {name} | {keystrokes} | {} | {} | {} | {} | {} | {} | {:.1} |",
        run.publishes,
        millis(summary.p50),
        millis(summary.p90),
        millis(summary.p99),
        millis(summary.max),
        millis(
            run.latencies.iter().sum::<Duration>() / u32::try_from(run.latencies.len()).unwrap()
        ),
        run.wall.as_secs_f64(),
    );
    summary
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` would pass no such flag but runs
    // this too: a smoke run there would take minutes, so only benchmark when asked to.
    if !std::env::args().any(|argument| argument == "--bench") {
        println!("lsp_latency: run with `cargo bench -p tpulint_bench --bench lsp_latency`");
        return;
    }
    let sites = env_number("TPULINT_BENCH_SITES", 6) as usize;
    let pace = Duration::from_millis(env_number("TPULINT_BENCH_PACE_MS", 50));

    let sources = documents::repository_sources();
    let (large_name, large_text) = match std::env::var_os("TPULINT_BENCH_FILE") {
        Some(path) => {
            let text = std::fs::read_to_string(&path).expect("TPULINT_BENCH_FILE is readable");
            (
                PathBuf::from(path).display().to_string(),
                documents::first_lines(&text, LARGE_LINES),
            )
        }
        None => (
            "generated from tests/fixtures + examples".to_string(),
            documents::concatenate(&sources, 0, LARGE_LINES, "big"),
        ),
    };
    let mut small: Vec<(String, String)> = Vec::new();
    let mut small_origin = "generated from tests/fixtures + examples".to_string();
    if let Some(directory) = std::env::var_os("TPULINT_BENCH_CORPUS") {
        let found = documents::corpus_documents(
            PathBuf::from(&directory).as_path(),
            OPEN_DOCUMENTS,
            150,
            1_000,
        );
        small_origin = format!(
            "{} files from {} (+{} generated)",
            found.len(),
            PathBuf::from(&directory).display(),
            OPEN_DOCUMENTS - found.len()
        );
        small.extend(
            found
                .into_iter()
                .enumerate()
                .map(|(index, (_, text))| (format!("file:///bench/corpus/doc{index}.py"), text)),
        );
    }
    while small.len() < OPEN_DOCUMENTS {
        let index = small.len();
        small.push((
            format!("file:///bench/open/doc{index}.py"),
            documents::concatenate(&sources, index * 7, SMALL_LINES, &format!("d{index}_")),
        ));
    }

    // For profiling the engine on the same text (`tpulint check FILE`).
    if let Some(path) = std::env::var_os("TPULINT_BENCH_SAVE") {
        std::fs::write(&path, &large_text).expect("TPULINT_BENCH_SAVE is writable");
    }
    let binary = server_binary();
    println!("server: {}", binary.display());
    println!(
        "large document: {} lines, {} bytes ({large_name})",
        large_text.lines().count(),
        large_text.len()
    );
    let small_lines: usize = small.iter().map(|(_, text)| text.lines().count()).sum();
    let small_bytes: usize = small.iter().map(|(_, text)| text.len()).sum();
    println!(
        "open documents: {OPEN_DOCUMENTS}, {small_lines} lines, {small_bytes} bytes in all ({small_origin})"
    );

    // Baseline: the same first typing script against a server that checks in full.
    let baseline = {
        let mut server = ServerProcess::spawn_with_env(&binary, &[("TPULINT_NO_INCREMENTAL", "1")])
            .expect("the server starts");
        server.initialize();
        open(&mut server, LARGE_URI, &large_text);
        wait_for_version(&mut server, LARGE_URI, 1);
        let mut text = large_text.clone();
        let script = documents::typing_script(&text, sites);
        for keystroke in &script {
            documents::apply(&mut text, keystroke);
        }
        let mut version = 1;
        let cpu_before = server.cpu_time().expect("/proc/<pid>/stat");
        let run = run_sequential(&mut server, &mut version, &script);
        let cpu = server.cpu_time().expect("/proc/<pid>/stat") - cpu_before;
        server.shutdown();
        (run, cpu)
    };
    let (baseline, baseline_cpu) = baseline;

    let mut server = ServerProcess::spawn(&binary).expect("the server starts");
    server.initialize();
    let (idle_rss, _) = server.memory_kib().expect("/proc/<pid>/status");

    let opened = Instant::now();
    open(&mut server, LARGE_URI, &large_text);
    let (arrived, diagnostics) = wait_for_version(&mut server, LARGE_URI, 1);
    let first_check = arrived - opened;
    println!(
        "first check of the large document (didOpen → diagnostics): {} ms, {diagnostics} diagnostics",
        millis(first_check)
    );

    let mut text = large_text.clone();
    let mut version = 1;
    let next_script = |text: &mut String| {
        let script = documents::typing_script(text, sites);
        for keystroke in &script {
            documents::apply(text, keystroke);
        }
        script
    };

    let sequential_script = next_script(&mut text);
    let cpu_before = server.cpu_time().expect("/proc/<pid>/stat");
    let sequential = run_sequential(&mut server, &mut version, &sequential_script);
    let sequential_cpu = server.cpu_time().expect("/proc/<pid>/stat") - cpu_before;
    let paced_script = next_script(&mut text);
    let paced = run_paced(&mut server, &mut version, &paced_script, pace);
    let burst_script = next_script(&mut text);
    let burst = run_paced(&mut server, &mut version, &burst_script, Duration::ZERO);
    let final_diagnostics = burst.last_diagnostics;

    let opening = Instant::now();
    for (uri, document) in &small {
        open(&mut server, uri, document);
    }
    let mut small_diagnostics = 0;
    for (uri, _) in &small {
        small_diagnostics += wait_for_version(&mut server, uri, 1).1;
    }
    let open_all = opening.elapsed();
    let (rss, peak) = server.memory_kib().expect("/proc/<pid>/status");
    server.shutdown();

    println!();
    println!(
        "Latency: didChange (version v) → first publishDiagnostics with version ≥ v, in ms; {sites} sites, Enter + {} characters + 8 backspaces + 8 characters each.",
        documents::TYPED_STATEMENT.len()
    );
    println!();
    println!("| run | keystrokes | publishes | p50 | p90 | p99 | max | mean | wall (s) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let full_summary = print_latency_row(
        "baseline: one at a time, every revision checked in full",
        sequential_script.len(),
        &baseline,
    );
    let sequential_summary = print_latency_row(
        "one at a time (each waits for its diagnostics)",
        sequential_script.len(),
        &sequential,
    );
    print_latency_row(
        &format!("paced, one keystroke every {} ms", pace.as_millis()),
        paced_script.len(),
        &paced,
    );
    let paced_share = paced.publishes as f64 / paced_script.len().max(1) as f64;
    print_latency_row("burst, back to back", burst_script.len(), &burst);
    println!();
    let keystrokes = u32::try_from(sequential_script.len().max(1)).unwrap();
    println!(
        "server CPU time per keystroke, one at a time: {} ms incremental, {} ms checked in full: {:.3} (user + system; wall-clock latency above also counts waiting for a core)",
        millis(sequential_cpu / keystrokes),
        millis(baseline_cpu / keystrokes),
        sequential_cpu.as_secs_f64() / baseline_cpu.as_secs_f64().max(1e-9)
    );
    println!("diagnostics on the large document after typing: {final_diagnostics}");
    println!(
        "{OPEN_DOCUMENTS} documents opened and checked in {:.2} s ({small_diagnostics} diagnostics)",
        open_all.as_secs_f64()
    );
    println!(
        "memory: idle {:.1} MiB; with {} open documents VmRSS {:.1} MiB, VmHWM (peak) {:.1} MiB",
        mib(idle_rss),
        OPEN_DOCUMENTS + 1,
        mib(rss),
        mib(peak)
    );
    println!();
    println!("| target | measured | verdict |");
    println!("|---|---|---|");
    let ratio = sequential_summary.p50.as_secs_f64() / full_summary.p50.as_secs_f64().max(1e-9);
    println!(
        "| p50 ≤ {TARGET_P50_RATIO} × full check (one at a time) | {} ms / {} ms = {ratio:.3} | {} |",
        millis(sequential_summary.p50),
        millis(full_summary.p50),
        verdict(ratio <= TARGET_P50_RATIO)
    );
    println!(
        "| p99 ≤ {} ms (one at a time) | {} ms (full check: {} ms) | {} |",
        TARGET_P99.as_millis(),
        millis(sequential_summary.p99),
        millis(full_summary.p99),
        verdict(sequential_summary.p99 <= TARGET_P99)
    );
    println!(
        "| ≥ {:.0}% of keystrokes every {} ms get diagnostics | {:.1}% | {} |",
        TARGET_PACED_SHARE * 100.0,
        pace.as_millis(),
        paced_share * 100.0,
        verdict(paced_share >= TARGET_PACED_SHARE)
    );
    println!(
        "| RSS ≤ {TARGET_RSS_MIB} MB with {OPEN_DOCUMENTS} documents | {:.1} MiB (peak {:.1}) | {} |",
        mib(rss),
        mib(peak),
        verdict(mib(rss) <= TARGET_RSS_MIB)
    );
}
