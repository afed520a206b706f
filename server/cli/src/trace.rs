//! `tpulint trace`: what the TPU actually did, on the lines that did it.
//!
//! `trace run -- CMD…` runs the command with PyTorch/XLA's debug analyses, Dynamo's logs and a
//! start-up hook (`tpulint_trace::hook`) that dumps torch_xla's counters at exit; `trace import
//! LOG…` reads logs made elsewhere; both write `.tpulint/trace.json` and print the runtime
//! findings in any `tpulint check` output format. `trace report` prints how the trace and the
//! static findings agree.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};
use tpulint_report::SourceFile;
use tpulint_report::text::{TextOptions, render_concise, render_text};
use tpulint_trace::agreement::{agreement, render_agreement};
use tpulint_trace::hook::RunFiles;
use tpulint_trace::{
    Events, ProjectIndex, RUNTIME_CODES, TRACE_PATH, TraceContext, TraceFile, build_trace,
    parse_into, to_diagnostic,
};

use crate::check::OutputFormat;
use crate::output::{self, ExitStatus};

#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Run a command (typically `python train.py …`) with PyTorch/XLA's and Dynamo's debug
    /// logs on, and report what happened on which line.
    Run(RunArgs),
    /// Read existing logs (PT_XLA_DEBUG output, metrics reports, TORCH_LOGS output).
    Import(ImportArgs),
    /// Compare the last trace with the static findings.
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Where to write the trace (default: `.tpulint/trace.json` under the project root).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Output format of the findings.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// The project root (default: the nearest directory up from here with `.git`,
    /// `pyproject.toml`, `tpulint.toml`, `.tpulint.toml` or `.tpulint`).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print only the findings: no summary.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Do not record which project lines ran (coverage lets `trace report` tell code that never
    /// ran; it slows Python-heavy code on Python < 3.12).
    #[arg(long)]
    pub no_coverage: bool,
    /// Also copy the run's raw logs into this directory.
    #[arg(long, value_name = "DIR")]
    pub keep_logs: Option<PathBuf>,
    /// The command and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Log files; `-` reads stdin.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The trace to read (default: `.tpulint/trace.json` under the project root).
    #[arg(long, value_name = "PATH")]
    pub trace: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub output_format: ReportFormat,
    /// The project root (default: the trace's).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

pub fn run(args: TraceArgs) -> ExitCode {
    let outcome = match args.command {
        TraceCommand::Run(args) => run_command(args),
        TraceCommand::Import(args) => import(args).map(ExitCode::from),
        TraceCommand::Report(args) => report(args).map(ExitCode::from),
    };
    outcome.unwrap_or_else(|message| {
        output::error(&message);
        ExitStatus::Error.into()
    })
}

fn working_directory() -> Result<PathBuf, String> {
    std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))
}

/// The nearest ancestor of `start` that looks like a project root, else `start`.
fn find_root(start: &Path) -> PathBuf {
    const MARKERS: [&str; 5] = [
        ".git",
        "pyproject.toml",
        "tpulint.toml",
        ".tpulint.toml",
        ".tpulint",
    ];
    start
        .ancestors()
        .find(|directory| MARKERS.iter().any(|marker| directory.join(marker).exists()))
        .unwrap_or(start)
        .to_path_buf()
}

fn root_of(given: Option<&Path>, cwd: &Path) -> Result<PathBuf, String> {
    match given {
        Some(root) => {
            let root = tpulint_workspace::absolute(root, cwd);
            if !root.is_dir() {
                return Err(format!("--root: {}: not a directory", root.display()));
            }
            Ok(root)
        }
        None => Ok(find_root(cwd)),
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn is_machine_readable(format: OutputFormat) -> bool {
    !matches!(format, OutputFormat::Text | OutputFormat::Concise)
}

fn run_command(args: RunArgs) -> Result<ExitCode, String> {
    let cwd = working_directory()?;
    let root = root_of(args.common.root.as_deref(), &cwd)?;
    let (program, rest) = args
        .command
        .split_first()
        .ok_or("no command given after `--`")?;
    let scratch = tempfile::Builder::new()
        .prefix("tpulint-trace-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let files = RunFiles {
        directory: scratch.path().to_path_buf(),
    };
    files
        .install()
        .map_err(|e| format!("cannot write the start-up hook: {e}"))?;
    let environment = files.environment(
        &root,
        std::env::var_os("PYTHONPATH").as_deref(),
        std::env::var("TORCH_LOGS").ok().as_deref(),
        !args.no_coverage,
    );
    let mut command = Command::new(program);
    command.args(rest).envs(environment).stdin(Stdio::inherit());
    if is_machine_readable(args.common.output_format) {
        // stdout carries only the findings: the program's output goes to stderr.
        command.stdout(stderr_as_stdio());
    }
    if !args.common.quiet {
        output::stderr(&format!(
            "tpulint trace: running {} (PT_XLA_DEBUG logs, TORCH_LOGS=recompiles,graph_breaks)\n",
            describe_command(&args.command)
        ));
    }
    // Ctrl-C reaches the whole foreground process group: the program stops (its `atexit`
    // handlers and torch_xla's exit summary still run) and tpulint, which ignores it, writes the
    // trace of what ran.
    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = interrupted.clone();
    let _ = ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    let status = command.status().map_err(|e| {
        format!(
            "cannot run `{}`: {}",
            program.to_string_lossy(),
            tpulint_workspace::discovery::describe_io(&e)
        )
    })?;
    let exit_code = status.code();
    if interrupted.load(std::sync::atomic::Ordering::SeqCst) && !args.common.quiet {
        output::stderr("tpulint trace: interrupted; writing the trace of what ran\n");
    }

    let logs = files.logs();
    let mut events = Events::default();
    for log in &logs {
        let bytes =
            std::fs::read(log).map_err(|e| format!("{}: cannot read: {e}", log.display()))?;
        parse_into(&String::from_utf8_lossy(&bytes), &mut events);
    }
    if let Some(directory) = &args.keep_logs {
        keep_logs(&logs, directory)?;
    }
    let project = ProjectIndex::load(&root)?;
    let main_script = args
        .command
        .iter()
        .map(|part| part.to_string_lossy())
        .find(|part| part.ends_with(".py"))
        .map(|script| {
            tpulint_workspace::absolute(Path::new(script.as_ref()), &cwd)
                .to_string_lossy()
                .into_owned()
        });
    let trace = build_trace(
        &events,
        &project,
        TraceContext {
            command: Some(
                args.command
                    .iter()
                    .map(|part| part.to_string_lossy().into_owned())
                    .collect(),
            ),
            exit_code,
            logs: logs.iter().map(|log| log_name(log, &files)).collect(),
            main_script,
            created: now(),
        },
    );
    let out = args
        .common
        .out
        .clone()
        .unwrap_or_else(|| root.join(TRACE_PATH));
    let out = tpulint_workspace::absolute(&out, &cwd);
    trace.write(&out)?;
    let ran_torch_xla = events.torch_xla_version.is_some();
    print_findings(&trace, &project, &args.common, &out, &cwd, ran_torch_xla);
    Ok(pass_through(status))
}

/// The command's own exit status, unchanged (a signal becomes 128 + its number, as shells report it).
fn pass_through(status: std::process::ExitStatus) -> ExitCode {
    if let Some(code) = status.code() {
        return ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return ExitCode::from(u8::try_from((128 + signal) & 0xff).unwrap_or(1));
        }
    }
    ExitCode::from(1)
}

#[cfg(unix)]
fn stderr_as_stdio() -> Stdio {
    use std::os::fd::AsFd;
    match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => Stdio::from(fd),
        Err(_) => Stdio::null(),
    }
}

#[cfg(not(unix))]
fn stderr_as_stdio() -> Stdio {
    Stdio::inherit()
}

fn describe_command(command: &[OsString]) -> String {
    command
        .iter()
        .map(|part| {
            let text = part.to_string_lossy();
            if text.contains(' ') {
                format!("'{text}'")
            } else {
                text.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A run's log as recorded in the trace: its role, not a temporary path.
fn log_name(log: &Path, files: &RunFiles) -> String {
    if log == files.debug_file() {
        "PT_XLA_DEBUG_FILE".into()
    } else if log == files.torch_logs_file() {
        "TORCH_LOGS_OUT".into()
    } else {
        format!(
            "hook:{}",
            log.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        )
    }
}

fn keep_logs(logs: &[PathBuf], directory: &Path) -> Result<(), String> {
    std::fs::create_dir_all(directory)
        .map_err(|e| format!("--keep-logs: {}: cannot create: {e}", directory.display()))?;
    for log in logs {
        let Some(name) = log.file_name() else {
            continue;
        };
        std::fs::copy(log, directory.join(name))
            .map_err(|e| format!("--keep-logs: {}: cannot copy: {e}", log.display()))?;
    }
    Ok(())
}

fn import(args: ImportArgs) -> Result<ExitStatus, String> {
    let cwd = working_directory()?;
    let root = root_of(args.common.root.as_deref(), &cwd)?;
    let mut events = Events::default();
    let mut names = Vec::new();
    for log in &args.logs {
        let bytes = if log.as_os_str() == "-" {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
                .map_err(|e| format!("cannot read stdin: {e}"))?;
            bytes
        } else {
            std::fs::read(log).map_err(|e| {
                format!(
                    "{}: cannot read: {}",
                    log.display(),
                    tpulint_workspace::discovery::describe_io(&e)
                )
            })?
        };
        let before = events.recognised_lines;
        parse_into(&String::from_utf8_lossy(&bytes), &mut events);
        if events.recognised_lines == before && !String::from_utf8_lossy(&bytes).trim().is_empty() {
            output::warning(&format!(
                "{}: no PT_XLA_DEBUG, metrics or TORCH_LOGS output recognised",
                log.display()
            ));
        }
        names.push(log.to_string_lossy().into_owned());
    }
    let project = ProjectIndex::load(&root)?;
    let trace = build_trace(
        &events,
        &project,
        TraceContext {
            logs: names,
            created: now(),
            ..TraceContext::default()
        },
    );
    let out = args
        .common
        .out
        .clone()
        .unwrap_or_else(|| root.join(TRACE_PATH));
    let out = tpulint_workspace::absolute(&out, &cwd);
    trace.write(&out)?;
    let any = print_findings(&trace, &project, &args.common, &out, &cwd, true);
    Ok(if any {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Prints the runtime findings in the chosen format; returns whether there were any.
fn print_findings(
    trace: &TraceFile,
    project: &ProjectIndex,
    common: &CommonArgs,
    out: &Path,
    cwd: &Path,
    ran_torch_xla: bool,
) -> bool {
    let mut files: Vec<SourceFile> = Vec::new();
    for file in &project.files {
        let diagnostics: Vec<_> = trace
            .findings
            .iter()
            .filter(|finding| finding.path == file.relative)
            .filter_map(|finding| to_diagnostic(finding, file))
            .collect();
        if diagnostics.is_empty() {
            continue;
        }
        let name = file
            .absolute
            .strip_prefix(cwd)
            .unwrap_or(&file.absolute)
            .to_string_lossy()
            .into_owned();
        files.push(
            SourceFile::new(name, file.text.clone(), diagnostics)
                .with_absolute_path(file.absolute.to_string_lossy().into_owned()),
        );
    }
    let total: usize = files.iter().map(|file| file.diagnostics.len()).sum();
    let text = render(&files, common.output_format);
    output::stdout(&text);
    if !common.quiet {
        // Summaries never go to stdout in the machine-readable formats.
        let summary = summary(trace, total, out, cwd, ran_torch_xla);
        if is_machine_readable(common.output_format) {
            output::stderr(&summary);
        } else {
            output::stdout(&summary);
        }
    }
    total > 0
}

/// The findings in `format`.
pub fn render(files: &[SourceFile], format: OutputFormat) -> String {
    let mut out = String::new();
    match format {
        OutputFormat::Text | OutputFormat::Concise => {
            for file in files {
                for diagnostic in &file.diagnostics {
                    if format == OutputFormat::Text {
                        out.push_str(&render_text(file, diagnostic, TextOptions::default()));
                    } else {
                        out.push_str(&render_concise(file, diagnostic));
                    }
                    out.push('\n');
                }
            }
        }
        OutputFormat::Json => out = tpulint_report::json::render_json(files),
        OutputFormat::JsonLines => out = tpulint_report::json::render_json_lines(files),
        OutputFormat::Gitlab => {
            let project_dir = std::env::var_os("CI_PROJECT_DIR").map(PathBuf::from);
            out = tpulint_report::gitlab::render_gitlab(files, project_dir.as_deref());
        }
        OutputFormat::Junit => out = tpulint_report::junit::render_junit(files),
        OutputFormat::Github => {
            for file in files {
                for diagnostic in &file.diagnostics {
                    out.push_str(&tpulint_report::github::render_github(file, diagnostic));
                    out.push('\n');
                }
            }
        }
        OutputFormat::Sarif => out = sarif_with_runtime_codes(files),
    }
    out
}

/// tpulint's SARIF log with the runtime codes' descriptors added to the driver's rules, so each
/// runtime result has a `ruleIndex` and help text like the static ones.
fn sarif_with_runtime_codes(files: &[SourceFile]) -> String {
    let text = tpulint_report::sarif::render_sarif(files);
    let Ok(mut log) = serde_json::from_str::<Value>(&text) else {
        return text;
    };
    let Some(run) = log.pointer_mut("/runs/0") else {
        return text;
    };
    let static_count = run
        .pointer("/tool/driver/rules")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if let Some(rules) = run
        .pointer_mut("/tool/driver/rules")
        .and_then(Value::as_array_mut)
    {
        for code in RUNTIME_CODES {
            rules.push(json!({
                "id": code.code,
                "name": code.name,
                "shortDescription": { "text": code.summary() },
                "help": { "text": code.summary(), "markdown": code.docs },
                "helpUri": code.url(),
                "defaultConfiguration": { "level": sarif_level(code.severity) },
                "properties": { "family": "runtime", "tags": ["runtime"] },
            }));
        }
    }
    if let Some(results) = run.pointer_mut("/results").and_then(Value::as_array_mut) {
        for result in results {
            let id = result.get("ruleId").and_then(Value::as_str).unwrap_or("");
            if let Some(index) = RUNTIME_CODES.iter().position(|code| code.code == id) {
                result["ruleIndex"] = json!(static_count + index);
            }
        }
    }
    let mut out = serde_json::to_string_pretty(&log).unwrap_or(text);
    out.push('\n');
    out
}

fn sarif_level(severity: tpulint_analyzer::Severity) -> &'static str {
    match severity {
        tpulint_analyzer::Severity::Error => "error",
        tpulint_analyzer::Severity::Warning => "warning",
        tpulint_analyzer::Severity::Info => "note",
    }
}

/// The closing lines: totals, events without a line, where the trace went.
fn summary(trace: &TraceFile, shown: usize, out: &Path, cwd: &Path, ran_torch_xla: bool) -> String {
    let totals = &trace.totals;
    let mut text = String::new();
    let stale = trace.findings.len().saturating_sub(shown);
    text.push_str(&format!(
        "Runtime: {} compilation(s) of {} distinct graph(s), {} execution(s), {} caused by reading tensor values",
        totals.compilations, totals.distinct_graphs, totals.executions, totals.value_reads
    ));
    if let Some(syncs) = totals.syncs {
        text.push_str(&format!(", {syncs} sync(s)"));
    }
    text.push_str(".\n");
    if !totals.fallback_ops.is_empty() {
        let ops: Vec<String> = totals
            .fallback_ops
            .iter()
            .map(|(op, count)| {
                if *count > 0 {
                    format!("{op} ×{count}")
                } else {
                    op.clone()
                }
            })
            .collect();
        text.push_str(&format!("CPU fallbacks: {}.\n", ops.join(", ")));
    }
    if totals.dynamo_recompiles + totals.dynamo_graph_breaks > 0 {
        text.push_str(&format!(
            "Dynamo: {} recompilation(s), {} graph break(s).\n",
            totals.dynamo_recompiles, totals.dynamo_graph_breaks
        ));
    }
    for warning in &totals.profiler_warnings {
        text.push_str(&format!("pt-xla-profiler: {warning}\n"));
    }
    if !trace.unlocated.is_empty() {
        text.push_str("Not on a project line:\n");
        for event in &trace.unlocated {
            text.push_str(&format!(
                "  {} ×{}: {}\n",
                event.code, event.count, event.message
            ));
        }
    }
    for note in &trace.notes {
        text.push_str(&format!("note: {note}\n"));
    }
    if trace.command.is_some()
        && !ran_torch_xla
        && totals.compilations == 0
        && totals.dynamo_recompiles + totals.dynamo_graph_breaks == 0
    {
        text.push_str(
            "note: the command did not import torch_xla (or its Python did not load the hook): nothing to trace\n",
        );
    }
    if stale > 0 {
        text.push_str(&format!(
            "{stale} finding(s) not shown: their lines changed since the run.\n"
        ));
    }
    text.push_str(&format!(
        "Found {} runtime finding(s). Trace written to {}.\n",
        shown,
        out.strip_prefix(cwd).unwrap_or(out).display()
    ));
    text
}

fn report(args: ReportArgs) -> Result<ExitStatus, String> {
    let cwd = working_directory()?;
    let trace_path = match &args.trace {
        Some(path) => tpulint_workspace::absolute(path, &cwd),
        None => root_of(args.root.as_deref(), &cwd)?.join(TRACE_PATH),
    };
    if !trace_path.is_file() {
        return Err(format!(
            "{}: no trace; run `tpulint trace run -- python your_script.py` first",
            trace_path.display()
        ));
    }
    let trace = TraceFile::read(&trace_path)?;
    let root = match &args.root {
        Some(root) => root_of(Some(root), &cwd)?,
        None => PathBuf::from(&trace.root),
    };
    if !root.is_dir() {
        return Err(format!(
            "{}: the trace's project root does not exist here; pass --root",
            root.display()
        ));
    }
    let project = ProjectIndex::load(&root)?;
    let result = agreement(&trace, &project);
    let text = match args.output_format {
        ReportFormat::Text => render_agreement(&result),
        ReportFormat::Json => {
            let mut text = serde_json::to_string_pretty(&result).unwrap_or_default();
            text.push('\n');
            text
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    Ok(ExitStatus::Success)
}
