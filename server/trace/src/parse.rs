//! The log grammar: PT_XLA_DEBUG analyses (both the ≤ 2.7 "mark_step" and ≥ 2.8
//! "torch_xla.sync" spellings, named graphs, "Unexpected Execution Analysis"), post-compilation
//! analyses, `pt-xla-profiler:` lines, the "Unlowered Op usage summary" with its fallback
//! frames, metrics reports (`Counter:` / `Value:`), Dynamo's `TORCH_LOGS=recompiles,graph_breaks`
//! output and the start-up hook's JSON, all from one text that may interleave program output
//! and carriage-return progress bars.
//!
//! Parsing never fails: lines that fit no production are skipped, cut blocks are kept with
//! what they have, and the result says how many lines were recognised.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One Python frame of a `Python Frame Triggered Execution:` list or a fallback site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    pub function: String,
    /// As printed: absolute, redacted, or not a file at all (`<string>`, `<eval_with_key>.7`).
    pub file: String,
    pub line: u32,
}

/// Which analysis printed a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnalysisKind {
    /// `Compilation Analysis:` — a graph was compiled.
    Compilation,
    /// `Execution Analysis:` — a graph was executed (`PT_XLA_DEBUG_LEVEL=2`).
    Execution,
    /// `Unexpected Execution Analysis:` — execution while execution was disallowed
    /// (inside `torch_xla.compile(full_graph=True)`).
    UnexpectedExecution,
}

/// Why torch_xla compiled or executed a graph, normalised across versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// "most likely user code trying to access tensor value before torch_xla.sync / mark_step".
    TensorValueAccess,
    /// "user torch_xla.sync" / "user mark_step".
    UserSync,
    /// The parallel loader's sync at step end.
    ParallelLoader,
    /// A profiler `StepTrace` region ended.
    ProfilerStep,
    /// `torch_xla.compile` (including clearing the pending graph before the target function).
    Compile,
    /// Dynamo executing or compiling a graph.
    Dynamo,
    /// A cause this version of tpulint does not know; the text is kept in the block.
    Other,
}

impl Cause {
    /// Classifies the text under `Compilation Cause` / `Execution Cause`.
    pub fn classify(text: &str) -> Cause {
        let text = text.trim();
        if text.starts_with("most likely user code trying to access tensor value") {
            Cause::TensorValueAccess
        } else if text == "user torch_xla.sync" || text == "user mark_step" {
            Cause::UserSync
        } else if text.contains("parallel loader") {
            Cause::ParallelLoader
        } else if text.contains("StepTrace") {
            Cause::ProfilerStep
        } else if text.starts_with("torch_xla.compile") {
            Cause::Compile
        } else if text.contains("dynamo") {
            Cause::Dynamo
        } else {
            Cause::Other
        }
    }
}

/// One compilation or execution analysis block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphBlock {
    pub kind: AnalysisKind,
    pub cause: Cause,
    pub cause_text: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub graph_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub graph_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub inputs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub outputs: Option<u64>,
    /// Innermost first.
    pub frames: Vec<Frame>,
    /// The list ended with `..........`: more frames exist than `PT_XLA_DEBUG_MAX_FRAME`.
    pub truncated: bool,
}

/// One `FRAME (count=N):` entry of the "Unlowered Op usage summary": a Python stack at which
/// operations without an XLA lowering ran on the CPU `count` times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FallbackSite {
    pub count: u64,
    pub frames: Vec<Frame>,
}

/// A `pt-xla-profiler:` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProfilerLine {
    TooFrequent {
        metric: String,
        count: u64,
        steps: u64,
    },
    TooSlow {
        metric: String,
        longest: String,
    },
    NotLowered {
        ops: Vec<String>,
    },
}

/// A Dynamo `[__recompiles]` entry: a function recompiled, with the guard that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamoRecompile {
    pub function: String,
    pub file: String,
    pub line: u32,
    pub reasons: Vec<String>,
}

/// A Dynamo `[__graph_breaks]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamoGraphBreak {
    pub reason: String,
    /// Innermost first (Dynamo prints outermost first; the parser reverses).
    pub frames: Vec<Frame>,
}

/// Everything read from one or more logs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Events {
    pub blocks: Vec<GraphBlock>,
    pub fallback_sites: Vec<FallbackSite>,
    pub profiler: Vec<ProfilerLine>,
    /// Metric counters (a metrics report's `Counter:` entries or the hook's dump); the last
    /// value read wins, since reports are cumulative.
    pub counters: BTreeMap<String, u64>,
    /// `met.executed_fallback_ops()` from the hook; empty when not known.
    pub executed_fallback_ops: Vec<String>,
    pub recompiles: Vec<DynamoRecompile>,
    pub graph_breaks: Vec<DynamoGraphBreak>,
    /// Lines that ran, per file as the interpreter named it (the hook's coverage), 1-based.
    pub coverage: BTreeMap<String, Vec<u32>>,
    /// True when the hook's dump was read (so counters are complete, and a missing `MarkStep`
    /// counter means no sync happened).
    pub hook_seen: bool,
    /// The torch_xla version the hook reported.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub torch_xla_version: Option<String>,
    /// Lines that belonged to a recognised production.
    pub recognised_lines: usize,
}

const PREFIXES: [(&str, Prefix); 5] = [
    (
        "Unexpected Execution Analysis: ",
        Prefix::Graph(AnalysisKind::UnexpectedExecution),
    ),
    ("Post Compilation Analysis: ", Prefix::PostCompilation),
    (
        "Compilation Analysis: ",
        Prefix::Graph(AnalysisKind::Compilation),
    ),
    (
        "Execution Analysis: ",
        Prefix::Graph(AnalysisKind::Execution),
    ),
    ("pt-xla-profiler: ", Prefix::Profiler),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefix {
    Graph(AnalysisKind),
    PostCompilation,
    Profiler,
}

/// Finds the earliest known prefix in `segment` (a prefix may start mid-line after program
/// output); the longer prefix wins when two start at the same place.
fn find_prefix(segment: &str) -> Option<(Prefix, &str)> {
    let mut best: Option<(usize, usize, Prefix)> = None;
    for (text, prefix) in PREFIXES {
        // Prefixes print without the trailing space when the rest of the line is empty.
        let bare = text.trim_end();
        if let Some(position) = segment.find(bare) {
            let better = match best {
                None => true,
                Some((start, length, _)) => {
                    position < start || (position == start && bare.len() > length)
                }
            };
            if better {
                best = Some((position, bare.len(), prefix));
            }
        }
    }
    let (start, length, prefix) = best?;
    let rest = &segment[start + length..];
    Some((prefix, rest.strip_prefix(' ').unwrap_or(rest)))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockState {
    Header,
    Cause,
    GraphInfo,
    Frames,
    Done,
}

struct OpenBlock {
    block: GraphBlock,
    state: BlockState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SummaryState {
    Outside,
    Inside,
}

/// Parses `text` into events, adding to `events` (several logs of one run accumulate).
pub fn parse_into(text: &str, events: &mut Events) {
    if let Some(dump) = hook_dump(text) {
        apply_hook_dump(&dump, events);
        events.recognised_lines += text.lines().count();
        return;
    }
    let mut parser = Parser {
        events,
        open: BTreeMap::new(),
        summary: SummaryState::Outside,
        site: None,
        pending_counter: None,
        dynamo_recompile: None,
        dynamo_break: None,
    };
    for line in text.split('\n') {
        for segment in line.split('\r') {
            parser.segment(segment.trim_end_matches([' ', '\t']));
        }
    }
    parser.finish();
}

/// Parses one text.
pub fn parse(text: &str) -> Events {
    let mut events = Events::default();
    parse_into(text, &mut events);
    events
}

struct Parser<'e> {
    events: &'e mut Events,
    /// One open block per analysis kind (prefixes never nest, but may interleave).
    open: BTreeMap<u8, OpenBlock>,
    summary: SummaryState,
    site: Option<FallbackSite>,
    pending_counter: Option<String>,
    dynamo_recompile: Option<DynamoRecompile>,
    dynamo_break: Option<(DynamoGraphBreak, bool)>,
}

fn kind_key(kind: AnalysisKind) -> u8 {
    match kind {
        AnalysisKind::Compilation => 0,
        AnalysisKind::Execution => 1,
        AnalysisKind::UnexpectedExecution => 2,
    }
}

impl Parser<'_> {
    fn segment(&mut self, segment: &str) {
        if self.dynamo(segment) {
            self.events.recognised_lines += 1;
            return;
        }
        if let Some((prefix, rest)) = find_prefix(segment) {
            self.events.recognised_lines += 1;
            match prefix {
                Prefix::Graph(kind) => self.graph_line(kind, rest),
                Prefix::PostCompilation => {}
                Prefix::Profiler => self.profiler_line(rest),
            }
            return;
        }
        if self.summary_line(segment) || self.metrics_line(segment) {
            self.events.recognised_lines += 1;
        }
    }

    fn graph_line(&mut self, kind: AnalysisKind, rest: &str) {
        let key = kind_key(kind);
        let trimmed = rest.trim();
        if trimmed.starts_with("=====") {
            // Opening rule, or the closing rule of a finished block.
            if let Some(open) = self.open.remove(&key)
                && open.state != BlockState::Header
            {
                self.events.blocks.push(open.block);
            }
            self.open.insert(key, new_block(kind));
            return;
        }
        if trimmed == "Compilation Cause" || trimmed == "Execution Cause" {
            let state = self.open.get(&key).map(|open| open.state);
            if state != Some(BlockState::Header) {
                // A header without its opening rule (a cut log): start a block here.
                self.close(key);
                self.open.insert(key, new_block(kind));
            }
            if let Some(open) = self.open.get_mut(&key) {
                open.state = BlockState::Cause;
            }
            return;
        }
        if !self.open.contains_key(&key)
            && (trimmed.starts_with("....") || parse_frame(trimmed).is_some())
        {
            // Frames of a block whose beginning was cut off (a pasted excerpt): keep them, with
            // an unknown cause, so that a hidden user frame can still be pointed out.
            let mut block = new_block(kind);
            block.state = BlockState::Frames;
            self.open.insert(key, block);
        }
        let Some(open) = self.open.get_mut(&key) else {
            return;
        };
        if trimmed.starts_with("-----") {
            open.state = BlockState::Done;
            return;
        }
        match open.state {
            BlockState::Header | BlockState::Done => {}
            BlockState::Cause => {
                if trimmed == "Graph Info:" {
                    open.state = BlockState::GraphInfo;
                } else if trimmed == "Python Frame Triggered Execution:" {
                    open.state = BlockState::Frames;
                } else if open.block.cause_text.is_empty() && !trimmed.is_empty() {
                    open.block.cause_text = trimmed.to_string();
                    open.block.cause = Cause::classify(trimmed);
                }
            }
            BlockState::GraphInfo => {
                if trimmed == "Python Frame Triggered Execution:" {
                    open.state = BlockState::Frames;
                } else if let Some(name) = trimmed.strip_prefix("Graph Name:") {
                    open.block.graph_name = Some(name.trim().to_string());
                } else if let Some(hash) = trimmed.strip_prefix("Graph Hash:") {
                    open.block.graph_hash = Some(hash.trim().to_string());
                } else if let Some(count) = strip_count(trimmed, "Number of Graph Input") {
                    open.block.inputs = Some(count);
                } else if let Some(count) = strip_count(trimmed, "Number of Graph Output") {
                    open.block.outputs = Some(count);
                }
            }
            BlockState::Frames => {
                if trimmed.starts_with("....") {
                    open.block.truncated = true;
                } else if let Some(frame) = parse_frame(trimmed) {
                    open.block.frames.push(frame);
                }
            }
        }
    }

    fn close(&mut self, key: u8) {
        if let Some(open) = self.open.remove(&key)
            && open.state != BlockState::Header
        {
            self.events.blocks.push(open.block);
        }
    }

    fn profiler_line(&mut self, rest: &str) {
        let rest = rest.trim();
        if let Some(ops) = rest.strip_prefix("Op(s) not lowered:") {
            let ops = ops.split("Please open").next().unwrap_or("");
            let ops: Vec<String> = ops
                .split(',')
                .map(str::trim)
                .filter(|op| !op.is_empty())
                .map(str::to_string)
                .collect();
            if !ops.is_empty() {
                self.events.profiler.push(ProfilerLine::NotLowered { ops });
            }
        } else if let Some((metric, tail)) = rest.split_once(" too frequent: ") {
            let mut numbers = tail
                .split(|c: char| !c.is_ascii_digit())
                .filter(|part| !part.is_empty())
                .filter_map(|part| part.parse::<u64>().ok());
            if let (Some(count), Some(steps)) = (numbers.next(), numbers.next()) {
                self.events.profiler.push(ProfilerLine::TooFrequent {
                    metric: metric.trim().to_string(),
                    count,
                    steps,
                });
            }
        } else if let Some((metric, tail)) = rest.split_once(" too slow: longest instance took ") {
            let longest = tail.split(". Please").next().unwrap_or(tail).trim();
            self.events.profiler.push(ProfilerLine::TooSlow {
                metric: metric.trim().to_string(),
                longest: longest.to_string(),
            });
        }
    }

    /// The "Unlowered Op usage summary" printed at exit with `PT_XLA_DEBUG=1`.
    fn summary_line(&mut self, segment: &str) -> bool {
        let trimmed = segment.trim();
        if trimmed.starts_with("Unlowered Op usage summary") {
            self.summary = SummaryState::Inside;
            return true;
        }
        if self.summary == SummaryState::Outside {
            return false;
        }
        if let Some(count) = trimmed
            .strip_prefix("FRAME (count=")
            .and_then(|rest| rest.strip_suffix("):"))
            .and_then(|count| count.trim().parse::<u64>().ok())
        {
            self.flush_site();
            self.site = Some(FallbackSite {
                count,
                frames: Vec::new(),
            });
            return true;
        }
        if trimmed.starts_with("=====") {
            self.flush_site();
            self.summary = SummaryState::Outside;
            return true;
        }
        if let Some(site) = self.site.as_mut()
            && let Some(frame) = parse_frame(trimmed)
        {
            site.frames.push(frame);
            return true;
        }
        trimmed.starts_with("Unlowered Op:")
            || trimmed.starts_with("Note:")
            || trimmed.starts_with("-----")
    }

    fn flush_site(&mut self) {
        if let Some(site) = self.site.take()
            && !site.frames.is_empty()
        {
            self.events.fallback_sites.push(site);
        }
    }

    /// `Counter: NAME` followed by `  Value: N` (metrics reports).
    fn metrics_line(&mut self, segment: &str) -> bool {
        let trimmed = segment.trim();
        if let Some(name) = trimmed.strip_prefix("Counter: ") {
            self.pending_counter = Some(name.trim().to_string());
            return true;
        }
        if let Some(name) = self.pending_counter.take()
            && let Some(value) = trimmed
                .strip_prefix("Value: ")
                .and_then(|value| value.trim().parse::<u64>().ok())
        {
            self.events.counters.insert(name, value);
            return true;
        }
        false
    }

    /// Dynamo's `TORCH_LOGS` artifacts: `[__recompiles]` and `[__graph_breaks]` lines.
    fn dynamo(&mut self, segment: &str) -> bool {
        if let Some(rest) = after_marker(segment, "[__recompiles]") {
            let rest = rest.trim_start();
            let trimmed = rest.trim();
            if let Some(tail) = trimmed.strip_prefix("Recompiling function ") {
                self.flush_recompile();
                // `Recompiling function forward in /path/model.py:10`
                if let Some((function, location)) = tail.split_once(" in ")
                    && let Some((file, line)) = location.trim().rsplit_once(':')
                    && let Ok(line) = line.trim().parse::<u32>()
                {
                    self.dynamo_recompile = Some(DynamoRecompile {
                        function: function.trim().to_string(),
                        file: file.to_string(),
                        line,
                        reasons: Vec::new(),
                    });
                }
            } else if let Some(reason) = trimmed.strip_prefix("- ")
                && let Some(recompile) = self.dynamo_recompile.as_mut()
            {
                recompile.reasons.push(reason.trim().to_string());
            }
            return true;
        }
        if let Some(rest) = after_marker(segment, "[__graph_breaks]") {
            let trimmed = rest.trim();
            if trimmed.starts_with("Graph break") {
                self.flush_break();
                // `Graph break in user code at /path/x.py:5` (also "(user stack suppressed …)").
                let frames = trimmed
                    .rsplit_once(" in user code at ")
                    .and_then(|(_, location)| location.rsplit_once(':'))
                    .and_then(|(file, line)| {
                        Some(Frame {
                            function: String::new(),
                            file: file.to_string(),
                            line: line.trim().parse().ok()?,
                        })
                    })
                    .into_iter()
                    .collect();
                self.dynamo_break = Some((
                    DynamoGraphBreak {
                        reason: String::new(),
                        frames,
                    },
                    false,
                ));
            } else if let Some((graph_break, in_traceback)) = self.dynamo_break.as_mut() {
                if let Some(reason) = trimmed
                    .strip_prefix("Graph Break Reason:")
                    .or_else(|| trimmed.strip_prefix("Reason:"))
                {
                    graph_break.reason = reason.trim().to_string();
                } else if trimmed.starts_with("User code traceback:") {
                    *in_traceback = true;
                } else if *in_traceback && let Some(frame) = parse_traceback_frame(trimmed) {
                    // Tracebacks print outermost first; frames are kept innermost first, after
                    // the location the header named.
                    let at = usize::from(!graph_break.frames.is_empty());
                    if graph_break.frames.first() != Some(&frame)
                        && !graph_break
                            .frames
                            .iter()
                            .any(|known| known.file == frame.file && known.line == frame.line)
                    {
                        graph_break
                            .frames
                            .insert(at.min(graph_break.frames.len()), frame);
                    }
                }
            }
            return true;
        }
        false
    }

    fn flush_recompile(&mut self) {
        if let Some(recompile) = self.dynamo_recompile.take() {
            self.events.recompiles.push(recompile);
        }
    }

    fn flush_break(&mut self) {
        if let Some((graph_break, _)) = self.dynamo_break.take() {
            self.events.graph_breaks.push(graph_break);
        }
    }

    fn finish(&mut self) {
        for key in [0, 1, 2] {
            self.close(key);
        }
        self.flush_site();
        self.flush_recompile();
        self.flush_break();
    }
}

fn new_block(kind: AnalysisKind) -> OpenBlock {
    OpenBlock {
        block: GraphBlock {
            kind,
            cause: Cause::Other,
            cause_text: String::new(),
            graph_name: None,
            graph_hash: None,
            inputs: None,
            outputs: None,
            frames: Vec::new(),
            truncated: false,
        },
        state: BlockState::Header,
    }
}

/// `Number of Graph Inputs: 229` (or the early singular `Input:`).
fn strip_count(text: &str, label: &str) -> Option<u64> {
    let rest = text.strip_prefix(label)?;
    let rest = rest.strip_prefix('s').unwrap_or(rest);
    rest.strip_prefix(':')?.trim().parse().ok()
}

/// `func (file:line)`; the file may itself contain parentheses or colons.
pub fn parse_frame(text: &str) -> Option<Frame> {
    let text = text.trim();
    let inner = text.strip_suffix(')')?;
    // Python names have no spaces: the first " (" ends the function name.
    let open = inner.find(" (")?;
    let function = inner[..open].trim();
    let location = &inner[open + 2..];
    let (file, line) = location.rsplit_once(':')?;
    let line = line.trim().parse::<u32>().ok()?;
    if function.is_empty() || file.is_empty() {
        return None;
    }
    Some(Frame {
        function: function.to_string(),
        file: file.to_string(),
        line,
    })
}

/// `File "/path/x.py", line 12, in f` (Python tracebacks, as Dynamo prints them).
fn parse_traceback_frame(text: &str) -> Option<Frame> {
    let rest = text.strip_prefix("File \"")?;
    let (file, rest) = rest.split_once("\", line ")?;
    let (line, function) = rest.split_once(", in ")?;
    Some(Frame {
        function: function.trim().to_string(),
        file: file.to_string(),
        line: line.trim().parse().ok()?,
    })
}

fn after_marker<'s>(segment: &'s str, marker: &str) -> Option<&'s str> {
    let position = segment.find(marker)?;
    Some(&segment[position + marker.len()..])
}

/// The start-up hook's dump (see `hook.rs`), if `text` is one.
fn hook_dump(text: &str) -> Option<serde_json::Value> {
    let trimmed = text.trim_start();
    if !trimmed.starts_with('{') {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(trimmed).ok()?;
    value.get("tpulint_hook")?;
    Some(value)
}

fn apply_hook_dump(dump: &serde_json::Value, events: &mut Events) {
    events.hook_seen = true;
    if let Some(version) = dump.get("torch_xla").and_then(|v| v.as_str()) {
        events.torch_xla_version = Some(version.to_string());
    }
    if let Some(ops) = dump.get("executed_fallback_ops").and_then(|v| v.as_array()) {
        for op in ops.iter().filter_map(|op| op.as_str()) {
            if !events.executed_fallback_ops.iter().any(|known| known == op) {
                events.executed_fallback_ops.push(op.to_string());
            }
        }
    }
    if let Some(counters) = dump.get("counters").and_then(|v| v.as_object()) {
        for (name, value) in counters {
            if let Some(value) = value.as_u64() {
                events.counters.insert(name.clone(), value);
            }
        }
    }
    if let Some(coverage) = dump.get("coverage").and_then(|v| v.as_object()) {
        for (file, lines) in coverage {
            let entry = events.coverage.entry(file.clone()).or_default();
            entry.extend(
                lines
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|line| line.as_u64())
                    .filter_map(|line| u32::try_from(line).ok()),
            );
            entry.sort_unstable();
            entry.dedup();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_with_parentheses_and_colons_in_the_path() {
        let frame = parse_frame("forward (/a (copy)/b:c/model.py:380)").unwrap();
        assert_eq!(frame.file, "/a (copy)/b:c/model.py");
        assert_eq!(frame.line, 380);
        assert_eq!(
            parse_frame("_call_impl (REDACTED/.local/lib/python3.10"),
            None
        );
        let frame = parse_frame("forward (<eval_with_key>.7:5)").unwrap();
        assert_eq!(frame.file, "<eval_with_key>.7");
    }

    #[test]
    fn prefix_found_mid_line_and_longest_wins() {
        let (prefix, rest) =
            find_prefix("Epoch 0:   0% 0/73 Unexpected Execution Analysis: Graph Info:").unwrap();
        assert_eq!(prefix, Prefix::Graph(AnalysisKind::UnexpectedExecution));
        assert_eq!(rest, "Graph Info:");
        let (prefix, _) =
            find_prefix("Post Compilation Analysis: Graph input size: 0.1 GB").unwrap();
        assert_eq!(prefix, Prefix::PostCompilation);
    }

    #[test]
    fn causes_classify_across_versions() {
        assert_eq!(
            Cause::classify("most likely user code trying to access tensor value before mark_step"),
            Cause::TensorValueAccess
        );
        assert_eq!(Cause::classify("user mark_step"), Cause::UserSync);
        assert_eq!(Cause::classify("user torch_xla.sync"), Cause::UserSync);
        assert_eq!(
            Cause::classify("mark_step in parallel loader at step end"),
            Cause::ParallelLoader
        );
        assert_eq!(
            Cause::classify(
                "torch_xla.compile clear the pending graph prior calling the target function"
            ),
            Cause::Compile
        );
        assert_eq!(
            Cause::classify("dynamo is compiling a FX graph to HLO"),
            Cause::Dynamo
        );
        assert_eq!(Cause::classify("something new"), Cause::Other);
    }
}
