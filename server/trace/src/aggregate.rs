//! From events to findings on the user's lines: the innermost project frame of each analysis,
//! aggregated per line ("6 executions here were caused by reading a tensor's value", "6 distinct
//! graphs compiled at this line", "`aten::nonzero` ran on the CPU 6 times"), fallbacks known
//! only by name placed through the static index, and each finding checked against the static
//! findings on its line ("confirms TPU101").

use std::collections::{BTreeMap, BTreeSet};

use tpulint_analyzer::{Diagnostic, LineIndex, Severity};

use crate::parse::{AnalysisKind, Cause, Events, Frame, GraphBlock, ProfilerLine};
use crate::project::{ProjectFile, ProjectIndex, Site};
use crate::schema::{RuntimeFinding, SCHEMA_VERSION, Totals, TraceFile, UnlocatedEvent};
use tpulint_analyzer::runtime_codes::{
    RUNTIME_CPU_FALLBACK, RUNTIME_DYNAMO_RECOMPILE, RUNTIME_GRAPH_BREAK, RUNTIME_HOST_SYNC,
    RUNTIME_NEVER_SYNCED, RUNTIME_RECOMPILATION, RUNTIME_UNEXPECTED_EXECUTION, RuntimeCode,
    runtime_code,
};

/// Distinct graphs at one line from which a recompilation is reported: the first step and the
/// steady state legitimately compile one graph each.
pub const RECOMPILATION_THRESHOLD: usize = 3;

/// What the trace is about, beyond its events.
#[derive(Debug, Clone, Default)]
pub struct TraceContext {
    pub command: Option<Vec<String>>,
    pub exit_code: Option<i32>,
    pub logs: Vec<String>,
    /// The script the command ran (`python train.py` → `train.py`), for whole-run findings.
    pub main_script: Option<String>,
    pub created: u64,
}

#[derive(Default)]
struct Entry {
    count: u64,
    /// Graph hashes, operations or reasons, by kind.
    details: BTreeSet<String>,
    static_index: bool,
    /// Where a whole-run finding has no better place (never synced).
    note: Option<String>,
}

struct Builder<'p> {
    project: &'p ProjectIndex,
    entries: BTreeMap<(Site, &'static str), Entry>,
    unlocated: BTreeMap<(&'static str, String), u64>,
}

impl Builder<'_> {
    fn entry(&mut self, site: Site, code: &'static RuntimeCode) -> &mut Entry {
        self.entries.entry((site, code.code)).or_default()
    }

    fn unlocated(&mut self, code: &'static RuntimeCode, message: String, count: u64) {
        *self.unlocated.entry((code.code, message)).or_default() += count;
    }

    /// The reason a block has no site, for an unlocated note.
    fn missing_frame_note(frames: &[Frame], truncated: bool) -> String {
        if truncated {
            "user frame not shown; rerun with PT_XLA_DEBUG_MAX_FRAME=32".to_string()
        } else if let Some(frame) = frames.first() {
            format!(
                "outside the project (innermost frame: {} ({}:{}))",
                frame.function, frame.file, frame.line
            )
        } else {
            "no Python frame printed".to_string()
        }
    }
}

/// Builds the trace file: findings on project lines, unlocated events, totals, coverage.
pub fn build_trace(events: &Events, project: &ProjectIndex, context: TraceContext) -> TraceFile {
    let mut builder = Builder {
        project,
        entries: BTreeMap::new(),
        unlocated: BTreeMap::new(),
    };
    let has_executions = events
        .blocks
        .iter()
        .any(|block| block.kind == AnalysisKind::Execution);
    // Host syncs are counted on executions when the log has them (level 2), else on
    // compilations (level 1 prints compilations only).
    let counted_kind = if has_executions {
        AnalysisKind::Execution
    } else {
        AnalysisKind::Compilation
    };
    let mut graphs_at: BTreeMap<Site, BTreeSet<String>> = BTreeMap::new();
    let mut graphs_unlocated: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut totals = Totals::default();
    let mut all_graphs = BTreeSet::new();
    for block in &events.blocks {
        match block.kind {
            AnalysisKind::Compilation => totals.compilations += 1,
            AnalysisKind::Execution => totals.executions += 1,
            AnalysisKind::UnexpectedExecution => {}
        }
        let site = project.innermost_site(&block.frames);
        // Dynamo's own compilations are reported from its logs (TPR303), per guard failure.
        if block.kind == AnalysisKind::Compilation
            && let Some(hash) = &block.graph_hash
        {
            all_graphs.insert(hash.clone());
        }
        if block.kind == AnalysisKind::Compilation
            && block.cause != Cause::Dynamo
            && let Some(hash) = &block.graph_hash
        {
            match site {
                Some(site) => graphs_at.entry(site).or_default().insert(hash.clone()),
                None => graphs_unlocated
                    .entry(Builder::missing_frame_note(&block.frames, block.truncated))
                    .or_default()
                    .insert(hash.clone()),
            };
        }
        if block.kind == AnalysisKind::UnexpectedExecution {
            match site {
                Some(site) => {
                    builder.entry(site, &RUNTIME_UNEXPECTED_EXECUTION).count += 1;
                }
                None => builder.unlocated(
                    &RUNTIME_UNEXPECTED_EXECUTION,
                    format!(
                        "execution inside a compiled function; {}",
                        Builder::missing_frame_note(&block.frames, block.truncated)
                    ),
                    1,
                ),
            }
        }
        if block.kind == counted_kind && block.cause == Cause::TensorValueAccess {
            totals.value_reads += 1;
            host_sync(&mut builder, block, site);
        }
    }
    totals.distinct_graphs = all_graphs.len() as u64;
    for (site, hashes) in graphs_at {
        if hashes.len() >= RECOMPILATION_THRESHOLD {
            let entry = builder.entry(site, &RUNTIME_RECOMPILATION);
            entry.count = hashes.len() as u64;
            entry.details = hashes;
        }
    }
    for (note, hashes) in graphs_unlocated {
        if hashes.len() >= RECOMPILATION_THRESHOLD {
            builder.unlocated(
                &RUNTIME_RECOMPILATION,
                format!("{} distinct graphs compiled {note}", hashes.len()),
                hashes.len() as u64,
            );
        }
    }

    fallbacks(&mut builder, events, &mut totals);
    dynamo(&mut builder, events, &mut totals);
    never_synced(&mut builder, events, &context, &mut totals);

    for line in &events.profiler {
        let text = match line {
            ProfilerLine::TooFrequent {
                metric,
                count,
                steps,
            } => {
                // Cumulative: keep the latest figure per metric.
                totals
                    .profiler_warnings
                    .retain(|known| !known.starts_with(&format!("{metric} too frequent")));
                format!("{metric} too frequent: {count} counts during {steps} steps")
            }
            ProfilerLine::TooSlow { metric, longest } => {
                format!("{metric} too slow: longest instance took {longest}")
            }
            ProfilerLine::NotLowered { ops } => format!("op(s) not lowered: {}", ops.join(", ")),
        };
        if !totals.profiler_warnings.contains(&text) {
            totals.profiler_warnings.push(text);
        }
    }

    let findings = builder
        .entries
        .iter()
        .filter_map(|(((file, line), code), entry)| {
            let code = runtime_code(code)?;
            Some(finding(&project.files[*file], *line, code, entry))
        })
        .collect();
    let hidden = events
        .blocks
        .iter()
        .filter(|block| {
            // torch_xla ends a cut list with `..........`.
            block.truncated && project.innermost_site(&block.frames).is_none()
        })
        .count();
    let mut notes = Vec::new();
    if hidden > 0 {
        notes.push(format!(
            "{hidden} analysis block(s) print no project frame before their frame list was cut; rerun with PT_XLA_DEBUG_MAX_FRAME=32 (`tpulint trace run` sets it)"
        ));
    }
    let unlocated = builder
        .unlocated
        .into_iter()
        .map(|((code, message), count)| UnlocatedEvent {
            code: code.to_string(),
            message,
            count,
        })
        .collect();
    let mut coverage: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for (printed, lines) in &events.coverage {
        if let Some(file) = project.resolve(printed) {
            let entry = coverage
                .entry(project.files[file].relative.clone())
                .or_default();
            entry.extend(lines.iter().filter(|line| **line > 0));
            entry.sort_unstable();
            entry.dedup();
        }
    }
    TraceFile {
        version: SCHEMA_VERSION,
        tool: format!("tpulint {}", env!("CARGO_PKG_VERSION")),
        root: project.root.to_string_lossy().into_owned(),
        created: context.created,
        command: context.command,
        exit_code: context.exit_code,
        logs: context.logs,
        findings,
        unlocated,
        notes,
        totals,
        coverage,
    }
}

fn host_sync(builder: &mut Builder<'_>, block: &GraphBlock, site: Option<Site>) {
    match site {
        Some(site) => builder.entry(site, &RUNTIME_HOST_SYNC).count += 1,
        None => builder.unlocated(
            &RUNTIME_HOST_SYNC,
            format!(
                "{} caused by reading a tensor's value: {}",
                kind_noun(block.kind),
                Builder::missing_frame_note(&block.frames, block.truncated)
            ),
            1,
        ),
    }
}

fn kind_noun(kind: AnalysisKind) -> &'static str {
    match kind {
        AnalysisKind::Compilation => "compilations",
        AnalysisKind::Execution | AnalysisKind::UnexpectedExecution => "executions",
    }
}

/// Operations without a lowering: sites from the "Unlowered Op usage summary", names from
/// `executed_fallback_ops()`, `Op(s) not lowered` and the `aten::` counters.
fn fallbacks(builder: &mut Builder<'_>, events: &Events, totals: &mut Totals) {
    let mut ops: BTreeSet<String> = events.executed_fallback_ops.iter().cloned().collect();
    for line in &events.profiler {
        if let ProfilerLine::NotLowered { ops: named } = line {
            ops.extend(named.iter().cloned());
        }
    }
    ops.extend(
        events
            .counters
            .keys()
            .filter(|name| name.starts_with("aten::"))
            .cloned(),
    );
    // `_local_scalar_dense` is `.item()` and friends: a host sync, reported as one (TPR101).
    ops.retain(|op| !is_scalar_read(op));
    for op in &ops {
        totals
            .fallback_ops
            .insert(op.clone(), events.counters.get(op).copied().unwrap_or(0));
    }

    let mut placed = BTreeSet::new();
    let project = builder.project;
    for site_event in &events.fallback_sites {
        let Some(site) = project.innermost_site(&site_event.frames) else {
            builder.unlocated(
                &RUNTIME_CPU_FALLBACK,
                format!(
                    "operations without an XLA lowering ran on the CPU: {}",
                    Builder::missing_frame_note(&site_event.frames, false)
                ),
                site_event.count,
            );
            continue;
        };
        let named: Vec<&String> = ops
            .iter()
            .filter(|op| project.op_sites(op).contains(&site))
            .collect();
        // The summary lists `.item()`'s `_local_scalar_dense` like any fallback (and Dynamo
        // clears the counters that would name it): a site that no named operation explains
        // and that reads a value (a TPR101 already, a scalar-read call, a static host-sync
        // finding) is that read — a host sync, not a CPU fallback.
        let file = &project.files[site.0];
        let reads_value = builder
            .entries
            .contains_key(&(site, RUNTIME_HOST_SYNC.code))
            || project
                .op_sites("aten::_local_scalar_dense")
                .contains(&site)
            || file
                .diagnostics_on(site.1)
                .any(|d| d.code.starts_with("TPU1"));
        if named.is_empty() && reads_value {
            // A read that did not execute a graph (the value was already computed) costs one
            // transfer; only a repeated one is worth a finding.
            if site_event.count < 2
                && !builder
                    .entries
                    .contains_key(&(site, RUNTIME_HOST_SYNC.code))
            {
                continue;
            }
            let entry = builder.entry(site, &RUNTIME_HOST_SYNC);
            if entry.count == 0 {
                entry.count = site_event.count;
                entry.note = Some("reads".into());
            }
            continue;
        }
        placed.extend(named.iter().map(|op| (*op).clone()));
        let entry = builder.entry(site, &RUNTIME_CPU_FALLBACK);
        entry.count += site_event.count;
        entry.details.extend(named.into_iter().cloned());
    }
    for op in ops.iter().filter(|op| !placed.contains(*op)) {
        let count = events.counters.get(op).copied().unwrap_or(0);
        let sites = project.op_sites(op);
        if sites.is_empty() {
            builder.unlocated(
                &RUNTIME_CPU_FALLBACK,
                format!(
                    "`{op}` ran on the CPU; no call in the project can be matched to it by name"
                ),
                count,
            );
            continue;
        }
        for site in sites {
            let entry = builder.entry(site, &RUNTIME_CPU_FALLBACK);
            entry.count += count;
            entry.details.insert(op.clone());
            entry.static_index = true;
        }
    }
}

fn dynamo(builder: &mut Builder<'_>, events: &Events, totals: &mut Totals) {
    let project = builder.project;
    for recompile in &events.recompiles {
        totals.dynamo_recompiles += 1;
        let frame = Frame {
            function: recompile.function.clone(),
            file: recompile.file.clone(),
            line: recompile.line,
        };
        let reason = recompile.reasons.first().cloned().unwrap_or_default();
        match project.innermost_site([&frame]) {
            Some(site) => {
                let entry = builder.entry(site, &RUNTIME_DYNAMO_RECOMPILE);
                entry.count += 1;
                if entry.details.is_empty() && !reason.is_empty() {
                    entry.details.insert(strip_guard_id(&reason));
                }
            }
            None => builder.unlocated(
                &RUNTIME_DYNAMO_RECOMPILE,
                format!(
                    "`{}` recompiled outside the project ({})",
                    recompile.function, recompile.file
                ),
                1,
            ),
        }
    }
    for graph_break in &events.graph_breaks {
        totals.dynamo_graph_breaks += 1;
        match project.innermost_site(&graph_break.frames) {
            Some(site) => {
                let entry = builder.entry(site, &RUNTIME_GRAPH_BREAK);
                entry.count += 1;
                if !graph_break.reason.is_empty() {
                    entry.details.insert(graph_break.reason.clone());
                }
            }
            None => builder.unlocated(
                &RUNTIME_GRAPH_BREAK,
                format!(
                    "graph break outside the project: {}",
                    if graph_break.reason.is_empty() {
                        "no reason printed"
                    } else {
                        &graph_break.reason
                    }
                ),
                1,
            ),
        }
    }
}

fn is_scalar_read(op: &str) -> bool {
    op.ends_with("::_local_scalar_dense")
}

/// `0/1: tensor 'x' size mismatch …` → `tensor 'x' size mismatch …`.
fn strip_guard_id(reason: &str) -> String {
    match reason.split_once(": ") {
        Some((id, rest))
            if id.contains('/') && id.chars().all(|c| c.is_ascii_digit() || c == '/') =>
        {
            rest.to_string()
        }
        _ => reason.to_string(),
    }
}

/// A torch_xla run that made XLA tensors and never synced.
fn never_synced(
    builder: &mut Builder<'_>,
    events: &Events,
    context: &TraceContext,
    totals: &mut Totals,
) {
    if events.torch_xla_version.is_some() || events.counters.contains_key("MarkStep") {
        totals.syncs = Some(events.counters.get("MarkStep").copied().unwrap_or(0));
    }
    let made_tensors = events.counters.get("CreateXlaTensor").copied().unwrap_or(0) > 0;
    if !events.hook_seen || !made_tensors || totals.syncs != Some(0) {
        // Without the hook's dump a missing `MarkStep` proves nothing.
        return;
    }
    let project = builder.project;
    let executions = events
        .counters
        .get("ExecuteComputation")
        .copied()
        .unwrap_or(0);
    let note = format!(
        "this run created XLA tensors but never called torch_xla.sync(); {executions} graph execution(s) in total"
    );
    let mut sites: Vec<Site> = Vec::new();
    for (position, file) in project.files.iter().enumerate() {
        for diagnostic in file.diagnostics.iter().filter(|d| d.code == "TPU605") {
            sites.push((
                position,
                file.index.line_of(diagnostic.range.start) as u32 + 1,
            ));
        }
    }
    if sites.is_empty()
        && let Some(script) = &context.main_script
        && let Some(file) = project.resolve(script)
    {
        sites.push((file, first_code_line(&project.files[file])));
    }
    if sites.is_empty() {
        builder.unlocated(&RUNTIME_NEVER_SYNCED, note, 1);
        return;
    }
    for site in sites {
        let entry = builder.entry(site, &RUNTIME_NEVER_SYNCED);
        entry.count = 1;
        entry.note = Some(note.clone());
    }
}

fn first_code_line(file: &ProjectFile) -> u32 {
    (1..=file.index.line_count() as u32)
        .find(|line| {
            let text = file.line_text(*line).trim();
            !text.is_empty() && !text.starts_with('#')
        })
        .unwrap_or(1)
}

fn times(count: u64) -> String {
    if count == 1 {
        "once".to_string()
    } else {
        format!("{count} times")
    }
}

fn quoted_list(items: &BTreeSet<String>) -> String {
    items
        .iter()
        .map(|item| format!("`{item}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn finding(
    file: &ProjectFile,
    line: u32,
    code: &'static RuntimeCode,
    entry: &Entry,
) -> RuntimeFinding {
    let count = entry.count;
    let mut message = match code.code {
        "TPR101" if entry.note.is_some() => format!(
            "a tensor's value was read on the host {} here (each read waits for the device)",
            times(count)
        ),
        "TPR101" => format!(
            "{} here {} caused by reading a tensor's value",
            plural(count, "execution"),
            if count == 1 { "was" } else { "were" }
        ),
        "TPR102" => format!(
            "{} inside a compiled function (torch_xla.compile(full_graph=True) stops here)",
            plural(count, "unexpected execution")
        ),
        "TPR201" if entry.details.is_empty() => format!(
            "an operation without an XLA lowering ran on the CPU {} here",
            times(count)
        ),
        "TPR201" if entry.static_index => format!(
            "{} ran on the CPU {} in this run (placed by name: a call here can run it)",
            quoted_list(&entry.details),
            times(count)
        ),
        "TPR201" => format!(
            "{} ran on the CPU {} here",
            quoted_list(&entry.details),
            times(count)
        ),
        "TPR301" => format!(
            "{count} distinct graphs compiled at this line: shapes or Python values change between steps"
        ),
        "TPR302" => format!(
            "Dynamo broke the graph here {}: {}",
            times(count),
            entry
                .details
                .iter()
                .next()
                .map_or("no reason printed", String::as_str)
        ),
        "TPR303" => format!(
            "Dynamo recompiled this function {}: {}",
            times(count),
            entry
                .details
                .iter()
                .next()
                .map_or("no guard printed", String::as_str)
        ),
        _ => entry.note.clone().unwrap_or_default(),
    };
    let confirms: Vec<String> = file
        .diagnostics_on(line)
        .filter(|diagnostic| code.confirms_code(diagnostic.code))
        .map(|diagnostic| diagnostic.code.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !confirms.is_empty() {
        message.push_str(&format!(" (confirms {})", confirms.join(", ")));
    }
    // One value read is a cost paid once (a final print, a check at start-up); a read that
    // repeats is a per-step stall.
    let severity = if code.code == RUNTIME_HOST_SYNC.code && count == 1 {
        Severity::Info
    } else {
        code.severity
    };
    RuntimeFinding {
        code: code.code.to_string(),
        name: code.name.to_string(),
        severity: severity.as_str().to_string(),
        message,
        path: file.relative.clone(),
        line,
        count,
        line_text: file.line_text(line).to_string(),
        confirms,
        located_by: if entry.static_index {
            "static-index"
        } else {
            "frame"
        }
        .to_string(),
    }
}

fn plural(count: u64, word: &str) -> String {
    if count == 1 {
        format!("1 {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// Whether `finding` still describes `file` as it is now: the line's text is unchanged.
pub fn still_applies(finding: &RuntimeFinding, current_line: &str) -> bool {
    finding.line_text.trim_end() == current_line.trim_end()
}

/// How far a finding follows its line when lines are inserted or deleted above it.
const RELOCATION_WINDOW: u32 = 200;

/// The line `finding` is on in `text` now: its own line when unchanged, else the nearest line
/// with the same text (lines inserted or deleted above it), else `None` (the line was edited).
pub fn current_line(finding: &RuntimeFinding, text: &str, index: &LineIndex) -> Option<u32> {
    let same = |line: u32| still_applies(finding, crate::project::line_text(text, index, line));
    if same(finding.line) {
        return Some(finding.line);
    }
    if finding.line_text.trim().is_empty() {
        return None;
    }
    let last = index.line_count() as u32;
    (1..=RELOCATION_WINDOW).find_map(|distance| {
        let below = finding
            .line
            .checked_add(distance)
            .filter(|line| *line <= last && same(*line));
        let above = finding
            .line
            .checked_sub(distance)
            .filter(|line| *line >= 1 && same(*line));
        below.or(above)
    })
}

/// A runtime finding as a diagnostic on its line of `file`, or `None` when the line was edited
/// since the trace (or the code is unknown to this build).
pub fn to_diagnostic(finding: &RuntimeFinding, file: &ProjectFile) -> Option<Diagnostic> {
    diagnostic_in(finding, &file.text, &file.index)
}

/// The runtime findings of `trace` for the file at `relative` (to the trace's root) whose
/// current text is `text`: findings on lines edited since the trace are left out.
pub fn diagnostics_for_text(
    trace: &TraceFile,
    relative: &str,
    text: &str,
    index: &LineIndex,
) -> Vec<Diagnostic> {
    trace
        .findings
        .iter()
        .filter(|finding| finding.path == relative)
        .filter_map(|finding| diagnostic_in(finding, text, index))
        .collect()
}

fn diagnostic_in(finding: &RuntimeFinding, text: &str, index: &LineIndex) -> Option<Diagnostic> {
    let code = runtime_code(&finding.code)?;
    let line = current_line(finding, text, index)?;
    Some(Diagnostic {
        code: code.code,
        name: code.name,
        message: finding.message.clone(),
        range: crate::project::line_span(text, index, line),
        severity: match finding.severity.as_str() {
            "error" => Severity::Error,
            "info" => Severity::Info,
            _ => Severity::Warning,
        },
        fix: None,
        related: Vec::new(),
        tag: None,
    })
}
