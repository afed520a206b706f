//! The editor's check per keystroke, in process (no server, no JSON): the typing script of
//! `lsp_latency` replayed over a 5,000-line module, each revision re-parsed incrementally as the
//! editor does, then checked three ways: in full (`check_tree`), incrementally
//! (`check_tree_incremental`, reusing the last check and the last one without a syntax error, as
//! the editor does), and the incremental check's result compared with the full one.
//!
//! `cargo bench -p tpulint_bench --bench keystroke`; `TPULINT_BENCH_FILE=<file.py>` types into
//! the first 5,000 lines of a real file instead of the generated module (`TPULINT_BENCH_SAVE=<path>`
//! writes the module typed into). Prints percentiles of
//! both, their ratio, how many keystrokes fell back to a full check and why, the editor's parse
//! (incremental, then afresh when that tree has a syntax error, as `tpulint_ide::document` does)
//! and parse + incremental check per keystroke, and the slowest keystrokes split into the two
//! (`TPULINT_BENCH_PARSE_DETAIL=1` prints each fresh parse's two parts).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tpulint_analyzer::incremental::{IncrementalState, check_tree_incremental};
use tpulint_analyzer::{Settings, check_tree, syntax};
use tpulint_bench::documents::{self, Keystroke};
use tpulint_bench::stats::{millis, summarize};
use tree_sitter::{InputEdit, Point, Tree};

const LARGE_LINES: usize = 5_000;

fn point_at(text: &str, offset: usize) -> Point {
    let before = &text.as_bytes()[..offset];
    let row = before.iter().filter(|&&b| b == b'\n').count();
    let column = before.iter().rev().take_while(|&&b| b != b'\n').count();
    Point::new(row, column)
}

/// Applies a keystroke to the text and the tree, and re-parses as the editor does
/// (`tpulint_ide::document::DocumentSnapshot::parse`): incrementally, and afresh when that tree
/// has a syntax error. Returns the time that took and whether the fresh parse ran.
fn type_one(text: &str, tree: &Tree, keystroke: &Keystroke) -> (String, Tree, Duration, bool) {
    let mut new_text = text.to_string();
    documents::apply(&mut new_text, keystroke);
    let line_start: usize = text
        .split_inclusive('\n')
        .take(keystroke.line as usize)
        .map(str::len)
        .sum();
    let start = line_start + keystroke.character as usize;
    let old_end = start + keystroke.length as usize;
    let new_end = start + keystroke.text.len();
    let mut edited = tree.clone();
    edited.edit(&InputEdit {
        start_byte: start,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position: point_at(text, start),
        old_end_position: point_at(text, old_end),
        new_end_position: point_at(&new_text, new_end),
    });
    let started = Instant::now();
    let mut tree = syntax::parse(&new_text, Some(&edited)).expect("parses");
    let fresh = tree.root_node().has_error();
    if fresh {
        let incremental = started.elapsed();
        tree = syntax::parse(&new_text, None).expect("parses");
        if std::env::var_os("TPULINT_BENCH_PARSE_DETAIL").is_some() {
            println!(
                "  fresh parse after an incremental one with errors: {} + {} ms (old tree had an error: {})",
                millis(incremental),
                millis(started.elapsed() - incremental),
                edited.root_node().has_error()
            );
        }
    }
    (new_text, tree, started.elapsed(), fresh)
}

fn main() {
    if !std::env::args().any(|argument| argument == "--bench") {
        println!("keystroke: run with `cargo bench -p tpulint_bench --bench keystroke`");
        return;
    }
    let (name, text) = match std::env::var_os("TPULINT_BENCH_FILE") {
        Some(path) => {
            let text = std::fs::read_to_string(&path).expect("TPULINT_BENCH_FILE is readable");
            (
                std::path::PathBuf::from(path).display().to_string(),
                documents::first_lines(&text, LARGE_LINES),
            )
        }
        None => (
            "generated from tests/fixtures + examples".to_string(),
            documents::concatenate(&documents::repository_sources(), 0, LARGE_LINES, "big"),
        ),
    };
    // For profiling the engine on the same text (`tpulint check FILE`).
    if let Some(path) = std::env::var_os("TPULINT_BENCH_SAVE") {
        std::fs::write(&path, &text).expect("TPULINT_BENCH_SAVE is writable");
    }
    let settings = Settings::default();
    let script = documents::typing_script(&text, 6);
    let mut tree = syntax::parse(&text, None).expect("parses");
    let first = check_tree_incremental(&text, &tree, &settings, &[]);
    println!(
        "document: {name}, {} lines, {} diagnostics; {} keystrokes",
        text.lines().count(),
        first.diagnostics.len(),
        script.len()
    );
    let mut text = text;
    let mut last: (String, IncrementalState) = (text.clone(), first.state);
    let mut clean: Option<(String, IncrementalState)> = None;
    let (mut full_times, mut incremental_times) = (Vec::new(), Vec::new());
    // The editor's whole keystroke: its parse plus the incremental check.
    let (mut parse_times, mut editor_times) = (Vec::new(), Vec::new());
    let mut fresh_parses = 0usize;
    // The slowest keystrokes of the editor's path: (time, parse, check, fresh parse, fallback).
    let mut slowest: Vec<(Duration, Duration, Duration, bool, Option<&'static str>)> = Vec::new();
    let mut fallbacks: BTreeMap<&'static str, usize> = BTreeMap::new();
    let (mut checked, mut walked, mut statements) = (0usize, 0usize, 0usize);
    for keystroke in &script {
        let (parse_time, fresh);
        (text, tree, parse_time, fresh) = type_one(&text, &tree, keystroke);
        parse_times.push(parse_time);
        fresh_parses += usize::from(fresh);
        let started = Instant::now();
        let full = check_tree(&text, &tree, &settings);
        full_times.push(started.elapsed());
        let mut previous: Vec<(&str, &IncrementalState)> = vec![(&last.0, &last.1)];
        if let Some((clean_text, clean_state)) = &clean {
            previous.push((clean_text, clean_state));
        }
        let started = Instant::now();
        let outcome = check_tree_incremental(&text, &tree, &settings, &previous);
        let check_time = started.elapsed();
        incremental_times.push(check_time);
        editor_times.push(parse_time + check_time);
        slowest.push((
            parse_time + check_time,
            parse_time,
            check_time,
            fresh,
            outcome.reuse.full,
        ));
        assert_eq!(
            outcome.diagnostics, full,
            "incremental differs from full after {keystroke:?}"
        );
        if let Some(reason) = outcome.reuse.full {
            *fallbacks.entry(reason).or_default() += 1;
        }
        checked += outcome.reuse.checked;
        walked += outcome.reuse.walked;
        statements += outcome.reuse.statements;
        if !last.1.has_syntax_error() {
            clean = Some(std::mem::replace(&mut last, (text.clone(), outcome.state)));
        } else {
            last = (text.clone(), outcome.state);
        }
    }
    let (full, incremental) = (
        summarize(&full_times).expect("keystrokes"),
        summarize(&incremental_times).expect("keystrokes"),
    );
    let (parse, editor) = (
        summarize(&parse_times).expect("keystrokes"),
        summarize(&editor_times).expect("keystrokes"),
    );
    let mean = |times: &[Duration]| times.iter().sum::<Duration>() / times.len() as u32;
    println!("| check | p50 (ms) | p90 | p99 | max | mean |");
    println!("|---|---|---|---|---|---|");
    for (label, summary, times) in [
        ("full", full, &full_times),
        ("incremental", incremental, &incremental_times),
        ("editor's parse", parse, &parse_times),
        ("editor's parse + incremental", editor, &editor_times),
    ] {
        println!(
            "| {label} | {} | {} | {} | {} | {} |",
            millis(summary.p50),
            millis(summary.p90),
            millis(summary.p99),
            millis(summary.max),
            millis(mean(times))
        );
    }
    println!(
        "incremental / full: p50 {:.3}, mean {:.3}; statements checked {:.1} and walked {:.1} of {:.0} on average",
        incremental.p50.as_secs_f64() / full.p50.as_secs_f64(),
        mean(&incremental_times).as_secs_f64() / mean(&full_times).as_secs_f64(),
        checked as f64 / script.len() as f64,
        walked as f64 / script.len() as f64,
        statements as f64 / script.len() as f64,
    );
    for (reason, count) in &fallbacks {
        println!("full check ({count} keystrokes): {reason}");
    }
    println!(
        "fresh parses (the incremental tree had a syntax error): {fresh_parses} of {} keystrokes",
        script.len()
    );
    slowest.sort_by_key(|keystroke| std::cmp::Reverse(keystroke.0));
    println!("slowest keystrokes (editor's path): total = parse + check, fresh parse, fallback");
    for (total, parse, check, fresh, full) in slowest.iter().take(8) {
        println!(
            "  {} = {} + {}, fresh {fresh}, {}",
            millis(*total),
            millis(*parse),
            millis(*check),
            full.unwrap_or("incremental")
        );
    }
}
