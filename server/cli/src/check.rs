//! `tpulint check`: discover files, check (and optionally fix) them in parallel, print the
//! diagnostics in the chosen format, and decide the exit status.
//!
//! Files are checked on rayon's pool (one tree-sitter parser per thread); results come back in
//! path order so output is deterministic. Fixes go through `tpulint_analyzer::fix_source`
//! (iterated to a fixed point; results with new syntax errors are never written) and are written
//! atomically by `tpulint_workspace::write_source`, which keeps BOM and line endings.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use rayon::prelude::*;
use tpulint_analyzer::syntax::PYTHON;
use tpulint_analyzer::{
    Applicability, BackendSetting, Diagnostic, RuleSelector, Settings, check_tree, fix_source,
};
use tpulint_report::SourceFile;
use tpulint_report::summary::{Counts, render_statistics, render_summary, statistics};
use tpulint_report::text::{TextOptions, render_concise, render_text, unified_diff};
use tpulint_workspace::discovery::describe_io;
use tpulint_workspace::{
    Overrides, ProjectResolver, SourceText, absolute, discover_files, read_source, write_source,
};

use crate::output::{self, ExitStatus};

/// How diagnostics are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Source excerpts with carets (ruff's full format).
    Text,
    /// One line per diagnostic: `path:row:col: CODE message`.
    Concise,
    /// ruff's JSON schema.
    Json,
    /// GitHub Actions workflow annotations.
    Github,
    /// SARIF 2.1.0 for code scanning.
    Sarif,
    /// ruff's JSON objects, one per line.
    JsonLines,
    /// A GitLab Code Quality report (paths relative to $CI_PROJECT_DIR when it is set).
    Gitlab,
    /// A JUnit XML report: one test suite per file, one failed test case per finding.
    Junit,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files or directories to check; `-` reads from stdin.
    #[arg(default_value = ".")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Print a count per rule instead of each diagnostic.
    #[arg(long)]
    pub statistics: bool,
    /// Exit 0 even when diagnostics remain.
    #[arg(long)]
    pub exit_zero: bool,
    /// Rules to enable (codes, prefixes such as TPU1, names, or ALL), replacing the configuration's selection.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub select: Option<Vec<String>>,
    /// Rules to enable on top of the selection.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub extend_select: Vec<String>,
    /// Rules to disable.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub ignore: Vec<String>,
    /// Path patterns to exclude, on top of the configuration's `exclude`.
    #[arg(long, value_delimiter = ',', value_name = "PATTERNS")]
    pub extend_exclude: Vec<String>,
    /// Apply `exclude` to files named explicitly too (for pre-commit hooks and editors, which
    /// name every file).
    #[arg(long, overrides_with = "no_force_exclude")]
    pub force_exclude: bool,
    #[arg(long, overrides_with = "force_exclude", hide = true)]
    pub no_force_exclude: bool,
    /// Use this configuration file instead of discovering one.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Which TPU backend fixes target: auto (detect per file), torch_xla or torchtpu.
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<String>,
    /// Apply safe fixes.
    #[arg(long)]
    pub fix: bool,
    /// Also apply (with --fix or --diff) or count as fixable the unsafe fixes.
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Print the changes --fix would make as a unified diff; change nothing.
    #[arg(long, conflicts_with = "fix")]
    pub diff: bool,
    /// Show each fix as a diff under its diagnostic, and list the fixes applied.
    #[arg(long)]
    pub show_fixes: bool,
    /// The file name to report (and to resolve configuration for) when reading stdin.
    #[arg(long, value_name = "PATH")]
    pub stdin_filename: Option<PathBuf>,
    /// Print only diagnostics: no summary line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Benchmarking aid: read and parse the files, run no rule.
    #[arg(long, hide = true)]
    pub parse_only: bool,
}

/// Options every per-file task needs.
struct RunOptions {
    mode: Mode,
    threshold: Applicability,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Check,
    Fix,
    Diff,
}

/// What checking one file produced.
struct FileResult {
    file: SourceFile,
    /// Fixes applied (or, with --diff, that would be), per code.
    fixed: BTreeMap<&'static str, usize>,
    /// A unified diff (with --diff).
    diff: Option<String>,
    warnings: Vec<String>,
    errors: Vec<String>,
}

pub fn run(args: CheckArgs) -> ExitStatus {
    match run_inner(args) {
        Ok(status) => status,
        Err(message) => {
            output::error(&message);
            ExitStatus::Error
        }
    }
}

fn parse_selectors(flag: &str, values: &[String]) -> Result<Vec<RuleSelector>, String> {
    values
        .iter()
        .filter(|value| !value.trim().is_empty())
        .map(|value| RuleSelector::parse(value).map_err(|unknown| format!("{flag}: {unknown}")))
        .collect()
}

fn overrides(args: &CheckArgs) -> Result<Overrides, String> {
    let backend = match &args.backend {
        Some(name) => Some(BackendSetting::parse(name).ok_or_else(|| {
            format!("--backend: unknown backend `{name}` (expected auto, torch_xla or torchtpu)")
        })?),
        None => None,
    };
    Ok(Overrides {
        select: args
            .select
            .as_deref()
            .map(|values| parse_selectors("--select", values))
            .transpose()?,
        extend_select: parse_selectors("--extend-select", &args.extend_select)?,
        ignore: parse_selectors("--ignore", &args.ignore)?,
        backend,
        extend_exclude: args.extend_exclude.clone(),
        force_exclude: args.force_exclude,
    })
}

fn run_inner(args: CheckArgs) -> Result<ExitStatus, String> {
    let working_directory = std::env::current_dir()
        .map_err(|e| format!("cannot read the working directory: {}", describe_io(&e)))?;
    let overrides = overrides(&args)?;
    let resolver = ProjectResolver::new(args.config.as_deref(), &working_directory, overrides)
        .map_err(|e| e.to_string())?;
    let options = RunOptions {
        mode: if args.diff {
            Mode::Diff
        } else if args.fix {
            Mode::Fix
        } else {
            Mode::Check
        },
        threshold: if args.unsafe_fixes {
            Applicability::Unsafe
        } else {
            Applicability::Safe
        },
    };

    if args.paths.iter().any(|path| path.as_os_str() == "-") {
        if args.paths.len() > 1 {
            return Err("`-` (stdin) cannot be combined with other paths".into());
        }
        return check_stdin(&args, &options, &resolver, &working_directory);
    }

    let threads = rayon::current_num_threads();
    let discovery = discover_files(&args.paths, &working_directory, &resolver, threads);
    if let Some(first) = discovery.config_errors.first() {
        return Err(first.to_string());
    }
    if !discovery.path_errors.is_empty() {
        let (last, rest) = discovery.path_errors.split_last().expect("not empty");
        for message in rest {
            output::error(message);
        }
        return Err(last.clone());
    }
    if discovery.files.is_empty() {
        output::warning("no Python files found");
    }

    if args.parse_only {
        return Ok(parse_only(&discovery.files));
    }

    let results: Vec<FileResult> = discovery
        .files
        .par_iter()
        .map(|file| {
            let settings = file.project.settings_for(&file.path);
            check_file(&file.path, &working_directory, &settings, &options)
        })
        .collect();
    Ok(report(&args, &options, results))
}

thread_local! {
    /// One parser per worker thread, reused across files.
    static PARSER: RefCell<Option<tree_sitter::Parser>> = const { RefCell::new(None) };
}

fn parse(text: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&PYTHON).ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(text, None)
    })
}

/// Diagnostics of `text` (an empty list in the impossible case that the grammar fails to load).
fn check_text(text: &str, settings: &Settings) -> Vec<Diagnostic> {
    match parse(text) {
        Some(tree) => check_tree(text, &tree, settings),
        None => Vec::new(),
    }
}

/// The name shown for `path`: relative to the working directory when inside it.
fn display_name(path: &Path, working_directory: &Path) -> String {
    path.strip_prefix(working_directory)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

fn check_file(
    path: &Path,
    working_directory: &Path,
    settings: &Settings,
    options: &RunOptions,
) -> FileResult {
    let name = display_name(path, working_directory);
    let absolute_path = path.to_string_lossy().into_owned();
    let source = match read_source(path) {
        Ok(source) => source,
        Err(io_error) => {
            return FileResult {
                file: SourceFile::new(name.clone(), String::new(), Vec::new()),
                fixed: BTreeMap::new(),
                diff: None,
                warnings: Vec::new(),
                errors: vec![format!("{name}: cannot read: {}", describe_io(&io_error))],
            };
        }
    };
    let mut result = check_source_text(&name, &source, settings, options, |new_text| {
        write_source(path, &source, new_text)
    });
    result.file = result.file.with_absolute_path(absolute_path);
    result
}

/// Checks (and fixes, per `options`) one decoded source; `write` persists a fixed text.
fn check_source_text(
    name: &str,
    source: &SourceText,
    settings: &Settings,
    options: &RunOptions,
    write: impl FnOnce(&str) -> std::io::Result<()>,
) -> FileResult {
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    if source.lossy {
        warnings.push(format!(
            "{name}: not valid UTF-8; checked with replacement characters and never fixed"
        ));
    }
    let text = &source.text;
    if options.mode == Mode::Check || source.lossy {
        let diagnostics = check_text(text, settings);
        return FileResult {
            file: SourceFile::new(name, text.clone(), diagnostics),
            fixed: BTreeMap::new(),
            diff: None,
            warnings,
            errors,
        };
    }
    let outcome = fix_source(text, settings, options.threshold);
    if outcome.rejected_syntax_error {
        warnings.push(format!(
            "{name}: a fix would have introduced a syntax error; that fix was not applied"
        ));
    }
    if !outcome.converged {
        warnings.push(format!(
            "{name}: fixes did not converge after {} iterations; the last consistent result was kept",
            outcome.iterations
        ));
    }
    let changed = outcome.output != *text;
    let mut diff = None;
    let mut fixed = outcome.fixed;
    if changed {
        match options.mode {
            Mode::Diff => {
                diff = Some(unified_diff(
                    text,
                    &outcome.output,
                    &format!("a/{name}"),
                    &format!("b/{name}"),
                ));
            }
            Mode::Fix => {
                if let Err(io_error) = write(&outcome.output) {
                    errors.push(format!(
                        "{name}: cannot write fixes: {}",
                        describe_io(&io_error)
                    ));
                    fixed.clear();
                    let diagnostics = check_text(text, settings);
                    return FileResult {
                        file: SourceFile::new(name, text.clone(), diagnostics),
                        fixed,
                        diff,
                        warnings,
                        errors,
                    };
                }
            }
            Mode::Check => {}
        }
    }
    let (shown_text, diagnostics) = match options.mode {
        // `--diff` reports what would change; the file itself is untouched.
        Mode::Diff => (text.clone(), Vec::new()),
        _ => (outcome.output, outcome.remaining),
    };
    FileResult {
        file: SourceFile::new(name, shown_text, diagnostics),
        fixed,
        diff,
        warnings,
        errors,
    }
}

fn check_stdin(
    args: &CheckArgs,
    options: &RunOptions,
    resolver: &ProjectResolver,
    working_directory: &Path,
) -> Result<ExitStatus, String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read stdin: {}", describe_io(&e)))?;
    let (name, settings) = match &args.stdin_filename {
        Some(filename) => {
            let path = absolute(filename, working_directory);
            let project = resolver.resolve_file(&path).map_err(|e| e.to_string())?;
            if resolver.force_exclude() && project.is_path_excluded(&path) {
                // As ruff does for an editor's excluded buffer: nothing to report, and with
                // --fix the input comes back byte for byte.
                if options.mode == Mode::Fix {
                    output::stdout_bytes(&bytes);
                }
                return Ok(ExitStatus::Success);
            }
            (
                display_name(&path, working_directory),
                project.settings_for(&path),
            )
        }
        None => {
            let project = resolver
                .resolve_directory(working_directory)
                .map_err(|e| e.to_string())?;
            ("-".to_string(), project.settings_for(Path::new("-")))
        }
    };
    let source = SourceText::decode(bytes);
    if args.parse_only {
        let _ = parse(&source.text);
        return Ok(ExitStatus::Success);
    }
    // With --fix, the fixed source goes to stdout (as ruff does) and diagnostics to stderr.
    let mut fixed_output = None;
    let result = check_source_text(&name, &source, &settings, options, |new_text| {
        fixed_output = Some(source.encode(new_text));
        Ok(())
    });
    if options.mode == Mode::Fix {
        match &fixed_output {
            Some(bytes) => output::stdout_bytes(bytes),
            None => output::stdout_bytes(&source.encode(&source.text)),
        }
    }
    Ok(report(args, options, vec![result]))
}

/// Prints everything and computes the exit status.
fn report(args: &CheckArgs, options: &RunOptions, results: Vec<FileResult>) -> ExitStatus {
    let mut had_errors = false;
    for result in &results {
        for message in &result.warnings {
            output::warning(message);
        }
        for message in &result.errors {
            output::error(message);
            had_errors = true;
        }
    }
    let total_fixed: usize = results.iter().flat_map(|r| r.fixed.values()).sum();
    // With --fix on stdin, stdout carries the fixed source: everything else goes to stderr.
    let stdin_fix = options.mode == Mode::Fix && args.paths.iter().any(|p| p.as_os_str() == "-");
    let print = |text: &str| {
        if stdin_fix {
            output::stderr(text)
        } else {
            output::stdout(text)
        }
    };

    if options.mode == Mode::Diff {
        let mut changed_files = 0;
        for result in &results {
            if let Some(diff) = &result.diff {
                changed_files += 1;
                print(diff);
            }
        }
        if !args.quiet {
            let message = if total_fixed == 0 {
                "No fixes available.\n".to_string()
            } else {
                format!(
                    "Would fix {} in {}.\n",
                    plural(total_fixed, "diagnostic"),
                    plural(changed_files, "file")
                )
            };
            output::stderr(&message);
        }
        return if had_errors {
            ExitStatus::Error
        } else if changed_files > 0 {
            ExitStatus::Failure
        } else {
            ExitStatus::Success
        };
    }

    let (files, fixed_by_file): (Vec<SourceFile>, Vec<BTreeMap<&'static str, usize>>) = results
        .into_iter()
        .map(|result| (result.file, result.fixed))
        .unzip();
    let counts = Counts::of(&files);
    let unsafe_fixes = args.unsafe_fixes;

    if args.statistics {
        let rows = statistics(&files, unsafe_fixes);
        match args.output_format {
            OutputFormat::Json => {
                let items: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|row| {
                        serde_json::json!({
                            "code": row.code,
                            "name": row.name,
                            "count": row.count,
                            "fixable": row.fixable,
                        })
                    })
                    .collect();
                let mut text = serde_json::to_string_pretty(&items).unwrap_or_default();
                text.push('\n');
                print(&text);
            }
            _ => {
                print(&render_statistics(&rows));
                if !args.quiet {
                    print(&render_summary(&counts, total_fixed, unsafe_fixes));
                }
            }
        }
    } else {
        match args.output_format {
            OutputFormat::Text | OutputFormat::Concise => {
                let text_options = TextOptions {
                    show_fix_diff: args.show_fixes,
                };
                let mut out = String::new();
                for file in &files {
                    for diagnostic in &file.diagnostics {
                        if args.output_format == OutputFormat::Text {
                            out.push_str(&render_text(file, diagnostic, text_options));
                            out.push('\n');
                        } else {
                            out.push_str(&render_concise(file, diagnostic));
                            out.push('\n');
                        }
                    }
                }
                if args.show_fixes && total_fixed > 0 {
                    out.push_str(&render_fixed(&files, &fixed_by_file, total_fixed));
                }
                if !args.quiet {
                    out.push_str(&render_summary(&counts, total_fixed, unsafe_fixes));
                }
                print(&out);
            }
            OutputFormat::Json => print(&tpulint_report::json::render_json(&files)),
            OutputFormat::Sarif => print(&tpulint_report::sarif::render_sarif(&files)),
            OutputFormat::JsonLines => print(&tpulint_report::json::render_json_lines(&files)),
            OutputFormat::Gitlab => {
                let project_dir = std::env::var_os("CI_PROJECT_DIR").map(PathBuf::from);
                print(&tpulint_report::gitlab::render_gitlab(
                    &files,
                    project_dir.as_deref(),
                ))
            }
            OutputFormat::Junit => print(&tpulint_report::junit::render_junit(&files)),
            OutputFormat::Github => {
                let mut out = String::new();
                for file in &files {
                    for diagnostic in &file.diagnostics {
                        out.push_str(&tpulint_report::github::render_github(file, diagnostic));
                        out.push('\n');
                    }
                }
                print(&out);
            }
        }
    }

    if had_errors {
        ExitStatus::Error
    } else if counts.total > 0 && !args.exit_zero {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}

/// ruff's `--show-fixes` list: per file, how many of each rule were fixed.
fn render_fixed(
    files: &[SourceFile],
    fixed_by_file: &[BTreeMap<&'static str, usize>],
    total: usize,
) -> String {
    let mut out = format!("Fixed {}:\n", plural(total, "diagnostic"));
    for (file, fixed) in files.iter().zip(fixed_by_file) {
        if fixed.is_empty() {
            continue;
        }
        out.push_str(&format!("- {}:\n", file.name));
        for (code, count) in fixed {
            let name = tpulint_analyzer::rule_by_code_or_name(code)
                .map(|id| id.meta().name)
                .unwrap_or("");
            out.push_str(&format!("    {count} × {code} ({name})\n"));
        }
    }
    out.push('\n');
    out
}

fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        format!("{count} {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// `--parse-only`: read and parse every file on the pool, for the benchmark's floor.
fn parse_only(files: &[tpulint_workspace::DiscoveredFile]) -> ExitStatus {
    let lines: usize = files
        .par_iter()
        .map(|file| match read_source(&file.path) {
            Ok(source) => {
                let _ = parse(&source.text);
                source.text.lines().count()
            }
            Err(_) => 0,
        })
        .sum();
    output::stderr(&format!(
        "Parsed {} ({} lines).\n",
        plural(files.len(), "file"),
        lines
    ));
    ExitStatus::Success
}
