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
//! (`TPULINT_BENCH_PARSE_DETAIL=1` prints each fresh parse's two parts, `TPULINT_BENCH_DETAIL=1`
//! each keystroke's statements checked and why, `TPULINT_BENCH_KEYSTROKES=N` types only the
//! first N keystrokes, for an instruction profile under callgrind).
//!
//! Since session 13 the language server publishes first from the incremental tree even when it
//! has a syntax error, and settles afterwards (fresh parse, exact check, published only where it
//! differs): the "quick" rows are that first publish's parse + check (the latency path), the
//! "settle" row the work done after it for the keystrokes whose tree had an error. The quick check
//! is asserted equal to a full check of the same (incremental) tree, the settled one to a full
//! check of the fresh tree; the states are kept as the server keeps them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tpulint_analyzer::incremental::{
    CheckedBecause, IncrementalState, Reuse, check_tree_incremental,
};
use tpulint_analyzer::{Settings, check_tree, syntax};
use tpulint_bench::documents::{self, Keystroke};
use tpulint_bench::stats::{millis, summarize};
use tree_sitter::{InputEdit, Point, Tree};

const LARGE_LINES: usize = 5_000;

/// Statements checked per keystroke (load-independent): their distribution and why they were
/// checked, summed over the keystrokes (a full check counts every statement as "full").
#[derive(Default)]
struct CheckedCounts {
    per_keystroke: Vec<usize>,
    why: CheckedBecause,
    full: usize,
}

impl CheckedCounts {
    fn add(&mut self, reuse: &Reuse) {
        self.per_keystroke.push(reuse.checked);
        if reuse.full.is_some() {
            self.full += reuse.checked;
            return;
        }
        let why = &mut self.why;
        why.edited += reuse.why.edited;
        why.guard += reuse.why.guard;
        why.summary += reuse.why.summary;
        why.tainted += reuse.why.tainted;
        why.triggered += reuse.why.triggered;
        why.diagnostics_moved += reuse.why.diagnostics_moved;
    }

    fn print(&self, label: &str) {
        let mut sorted = self.per_keystroke.clone();
        sorted.sort_unstable();
        let at = |quantile: f64| -> usize {
            let index = ((sorted.len() as f64 * quantile).ceil() as usize).saturating_sub(1);
            sorted
                .get(index.min(sorted.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0)
        };
        let total: usize = sorted.iter().sum();
        let why = &self.why;
        println!(
            "statements checked per keystroke, {label} ({} keystrokes): p50 {}, p90 {}, p99 {}, \
             max {}, mean {:.1}; why (statements, all keystrokes): edited {}, hardware scope {}, \
             summary {}, taint {}, rule trigger {}, diagnostic in the changed span {}, full check {}",
            sorted.len(),
            at(0.5),
            at(0.9),
            at(0.99),
            sorted.last().copied().unwrap_or(0),
            total as f64 / sorted.len().max(1) as f64,
            why.edited,
            why.guard,
            why.summary,
            why.tainted,
            why.triggered,
            why.diagnostics_moved,
            self.full,
        );
    }
}

fn point_at(text: &str, offset: usize) -> Point {
    let before = &text.as_bytes()[..offset];
    let row = before.iter().filter(|&&b| b == b'\n').count();
    let column = before.iter().rev().take_while(|&&b| b != b'\n').count();
    Point::new(row, column)
}

/// Applies a keystroke to the text and the tree, and re-parses incrementally. Returns the new
/// text, the tree and the time the re-parse took.
fn type_one(text: &str, tree: &Tree, keystroke: &Keystroke) -> (String, Tree, Duration) {
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
    let tree = syntax::parse(&new_text, Some(&edited)).expect("parses");
    (new_text, tree, started.elapsed())
}

/// The editor's kept checks (`tpulint_ide::document::TextDocument::store_check`): the last one,
/// and the last one without a syntax error while the last has one.
#[derive(Default)]
struct Kept {
    last: Option<(String, IncrementalState)>,
    clean: Option<(String, IncrementalState)>,
}

impl Kept {
    fn previous(&self) -> Vec<(&str, &IncrementalState)> {
        self.last
            .iter()
            .chain(&self.clean)
            .map(|(text, state)| (text.as_str(), state))
            .collect()
    }

    fn store(&mut self, text: &str, state: IncrementalState) {
        if state.has_syntax_error() {
            if let Some(last) = self.last.take()
                && !last.1.has_syntax_error()
            {
                self.clean = Some(last);
            }
        } else {
            self.clean = None;
        }
        self.last = Some((text.to_string(), state));
    }
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
    let mut script = documents::typing_script(&text, 6);
    // For profiling under an instruction counter: only the first N keystrokes (the script types
    // into the last site first, so these are ordinary keystrokes into one function).
    if let Some(limit) = std::env::var("TPULINT_BENCH_KEYSTROKES")
        .ok()
        .and_then(|limit| limit.parse::<usize>().ok())
    {
        script.truncate(limit);
    }
    let mut tree = syntax::parse(&text, None).expect("parses");
    let first = check_tree_incremental(&text, &tree, &settings, &[]);
    println!(
        "document: {name}, {} lines, {} diagnostics; {} keystrokes",
        text.lines().count(),
        first.diagnostics.len(),
        script.len()
    );
    let mut text = text;
    let mut kept = Kept::default();
    kept.store(&text, first.state);
    let (mut full_times, mut incremental_times) = (Vec::new(), Vec::new());
    // The editor's whole keystroke before session 13: incremental parse, a fresh parse when that
    // tree has an error, the incremental check of the fresh tree.
    let (mut parse_times, mut editor_times) = (Vec::new(), Vec::new());
    // Its first publish since: incremental parse + incremental check of that tree.
    let (mut quick_parse_times, mut quick_times) = (Vec::new(), Vec::new());
    // What follows it when the tree had an error: fresh parse + incremental check.
    let mut settle_times = Vec::new();
    let mut fresh_parses = 0usize;
    // The slowest keystrokes of the editor's path: (time, parse, check, fresh parse, fallback).
    let mut slowest: Vec<(Duration, Duration, Duration, bool, Option<&'static str>)> = Vec::new();
    let mut slowest_quick: Vec<(Duration, Duration, Duration, bool, Option<&'static str>)> =
        Vec::new();
    let mut fallbacks: BTreeMap<&'static str, usize> = BTreeMap::new();
    // The first publish's own fallbacks (its tree had a syntax error).
    let mut quick_fallbacks: BTreeMap<&'static str, usize> = BTreeMap::new();
    let (mut checked, mut walked, mut statements) = (0usize, 0usize, 0usize);
    // Keystrokes whose pre-pass changed outside the edited statements (a summary they hold or a
    // function they call by name), and the statements checked again for it.
    let (mut summary_keystrokes, mut summary_statements) = (0usize, 0usize);
    // The first publish's check (the latency path) and the editor's check of the fresh tree.
    let (mut quick_counts, mut editor_counts) =
        (CheckedCounts::default(), CheckedCounts::default());
    // `TPULINT_BENCH_DETAIL=1`: each keystroke's statement counts and reasons.
    let detail = std::env::var_os("TPULINT_BENCH_DETAIL").is_some();
    for keystroke in &script {
        let incremental_parse;
        (text, tree, incremental_parse) = type_one(&text, &tree, keystroke);
        let fresh = tree.root_node().has_error();
        quick_parse_times.push(incremental_parse);
        // The first publish: the incremental tree as it is.
        let quick_check = if fresh {
            let started = Instant::now();
            let outcome = check_tree_incremental(&text, &tree, &settings, &kept.previous());
            let time = started.elapsed();
            assert_eq!(
                outcome.diagnostics,
                check_tree(&text, &tree, &settings),
                "the quick check differs from a full check of its tree after {keystroke:?}"
            );
            if let Some(reason) = outcome.reuse.full {
                *quick_fallbacks.entry(reason).or_default() += 1;
            }
            quick_counts.add(&outcome.reuse);
            if detail {
                println!("  quick   {keystroke:?}: {:?}", outcome.reuse);
            }
            kept.store(&text, outcome.state);
            slowest_quick.push((
                incremental_parse + time,
                incremental_parse,
                time,
                true,
                outcome.reuse.full,
            ));
            Some(time)
        } else {
            None
        };
        let mut parse_time = incremental_parse;
        if fresh {
            fresh_parses += 1;
            let started = Instant::now();
            tree = syntax::parse(&text, None).expect("parses");
            let fresh_time = started.elapsed();
            if std::env::var_os("TPULINT_BENCH_PARSE_DETAIL").is_some() {
                println!(
                    "  fresh parse after an incremental one with errors: {} + {} ms",
                    millis(incremental_parse),
                    millis(fresh_time),
                );
            }
            parse_time += fresh_time;
        }
        parse_times.push(parse_time);
        let started = Instant::now();
        let full = check_tree(&text, &tree, &settings);
        full_times.push(started.elapsed());
        let started = Instant::now();
        let outcome = check_tree_incremental(&text, &tree, &settings, &kept.previous());
        let check_time = started.elapsed();
        incremental_times.push(check_time);
        editor_times.push(parse_time + check_time);
        match quick_check {
            Some(quick) => {
                quick_times.push(incremental_parse + quick);
                settle_times.push(parse_time - incremental_parse + check_time);
            }
            None => {
                quick_times.push(parse_time + check_time);
                slowest_quick.push((
                    parse_time + check_time,
                    parse_time,
                    check_time,
                    false,
                    outcome.reuse.full,
                ));
            }
        }
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
        editor_counts.add(&outcome.reuse);
        if detail {
            println!("  editor  {keystroke:?} fresh {fresh}: {:?}", outcome.reuse);
        }
        if !fresh {
            quick_counts.add(&outcome.reuse);
            if detail {
                println!("  quick   {keystroke:?}: {:?}", outcome.reuse);
            }
        }
        if outcome.reuse.summaries > 0 {
            summary_keystrokes += 1;
            summary_statements += outcome.reuse.summaries;
        }
        walked += outcome.reuse.walked;
        statements += outcome.reuse.statements;
        kept.store(&text, outcome.state);
    }
    let (full, incremental) = (
        summarize(&full_times).expect("keystrokes"),
        summarize(&incremental_times).expect("keystrokes"),
    );
    let (parse, editor) = (
        summarize(&parse_times).expect("keystrokes"),
        summarize(&editor_times).expect("keystrokes"),
    );
    let (quick_parse, quick) = (
        summarize(&quick_parse_times).expect("keystrokes"),
        summarize(&quick_times).expect("keystrokes"),
    );
    let mean = |times: &[Duration]| {
        times.iter().sum::<Duration>() / u32::try_from(times.len().max(1)).expect("few")
    };
    println!("| check | p50 (ms) | p90 | p99 | max | mean |");
    println!("|---|---|---|---|---|---|");
    for (label, summary, times) in [
        ("full", full, &full_times),
        ("incremental", incremental, &incremental_times),
        ("editor's parse", parse, &parse_times),
        ("editor's parse + incremental", editor, &editor_times),
        ("quick: incremental parse", quick_parse, &quick_parse_times),
        (
            "quick: incremental parse + check (first publish)",
            quick,
            &quick_times,
        ),
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
    println!(
        "changed summaries read outside the edited statements: {summary_keystrokes} keystrokes, \
         {summary_statements} statements checked again for them"
    );
    quick_counts.print("first publish");
    editor_counts.print("editor's check of the fresh tree");
    for (reason, count) in &fallbacks {
        println!("full check ({count} keystrokes): {reason}");
    }
    for (reason, count) in &quick_fallbacks {
        println!(
            "first publish of a tree with an error, full check ({count} keystrokes): {reason}"
        );
    }
    println!(
        "fresh parses (the incremental tree had a syntax error): {fresh_parses} of {} keystrokes",
        script.len()
    );
    if let Some(settle) = summarize(&settle_times) {
        println!(
            "settle after the first publish ({} keystrokes): p50 {} ms, p99 {} ms, max {} ms",
            settle.count,
            millis(settle.p50),
            millis(settle.p99),
            millis(settle.max)
        );
    }
    println!(
        "quick / full: p50 {:.3}, mean {:.3}",
        quick.p50.as_secs_f64() / full.p50.as_secs_f64(),
        mean(&quick_times).as_secs_f64() / mean(&full_times).as_secs_f64(),
    );
    slowest_quick.sort_by_key(|keystroke| std::cmp::Reverse(keystroke.0));
    println!(
        "slowest keystrokes (first publish): total = parse + check, tree had an error, fallback"
    );
    for (total, parse, check, error, full) in slowest_quick.iter().take(8) {
        println!(
            "  {} = {} + {}, error {error}, {}",
            millis(*total),
            millis(*parse),
            millis(*check),
            full.unwrap_or("incremental")
        );
    }
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
