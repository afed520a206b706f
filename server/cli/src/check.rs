//! `tpulint check`: discover files, check (and optionally fix) them in parallel, print the
//! diagnostics in the chosen format, and decide the exit status.
//!
//! Files are checked on rayon's pool (one tree-sitter parser per thread); results come back in
//! path order so output is deterministic. Fixes go through `tpulint_analyzer::fix_source`
//! (iterated to a fixed point; results with new syntax errors are never written) and are written
//! by `tpulint_workspace::write_source`, which keeps BOM, line endings, permissions, ownership
//! and hard links and never rewrites a read-only file.
//!
//! Nothing passes silently: syntax errors are diagnostics (`invalid-syntax`, from the analyzer),
//! and a file or path that cannot be read or written is an `io-error` diagnostic that fails the
//! run with exit 2 while the other files are still checked. `--show-settings`, `--show-files`,
//! `--add-noqa` and `--watch` live in their own modules.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, ValueEnum};
use rayon::prelude::*;
use tpulint_analyzer::syntax::PYTHON;
use tpulint_analyzer::{
    Applicability, BackendSetting, Diagnostic, Prefilter, RuleSelector, Settings, Severity,
    check_tree_with, fix_source, rule_by_code_or_name,
};
use tpulint_report::SourceFile;
use tpulint_report::summary::{Counts, render_statistics, render_summary, statistics};
use tpulint_report::text::{TextOptions, render_concise_with, render_text, unified_diff};
use tpulint_workspace::discovery::describe_io;
use tpulint_workspace::{
    Discovery, Overrides, ProjectResolver, SourceText, absolute, discover_files, read_source,
    write_source,
};

use crate::cache::{self, CacheLocation};
use crate::notebook;
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

/// The lowest severity that makes `tpulint check` exit 1 (`--fail-on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Only errors (code that will raise on a TPU, and syntax errors).
    Error,
    /// Errors and warnings (performance problems on a hot path).
    Warning,
    /// Any diagnostic (the default).
    Info,
}

impl FailOn {
    fn severity(self) -> Severity {
        match self {
            FailOn::Error => Severity::Error,
            FailOn::Warning => Severity::Warning,
            FailOn::Info => Severity::Info,
        }
    }
}

/// When to colour the text output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set (`FORCE_COLOR` forces it).
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour output that goes to a terminal when `to_terminal`.
    fn enabled(self, to_terminal: bool) -> bool {
        let set = |name: &str| std::env::var_os(name).is_some_and(|value| !value.is_empty());
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto if set("NO_COLOR") => false,
            ColorChoice::Auto if set("FORCE_COLOR") || set("CLICOLOR_FORCE") => true,
            ColorChoice::Auto => {
                to_terminal && std::env::var("TERM").map_or(true, |term| term != "dumb")
            }
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Files or directories to check (default: the working directory); `-` reads from stdin.
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Write the diagnostics and summary to this file instead of stdout.
    #[arg(short, long, value_name = "PATH")]
    pub output_file: Option<PathBuf>,
    /// Print a count per rule instead of each diagnostic.
    #[arg(long)]
    pub statistics: bool,
    /// Exit 0 even when diagnostics remain (I/O errors still exit 2).
    #[arg(long)]
    pub exit_zero: bool,
    /// Exit 1 only for diagnostics of at least this severity (default: info, any diagnostic).
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// Exit 1 when fixes were applied, even if no diagnostic remains.
    #[arg(long)]
    pub exit_non_zero_on_fix: bool,
    /// Rules to enable (codes, prefixes such as TPU1, names, or ALL), replacing the configuration's selection.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub select: Option<Vec<String>>,
    /// Rules to enable on top of the selection.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub extend_select: Vec<String>,
    /// Rules to disable.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub ignore: Vec<String>,
    /// Rules whose fixes may be applied, replacing the configuration's `fixable` (default: ALL).
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub fixable: Option<Vec<String>>,
    /// Rules whose fixes are never applied, on top of the configuration's `unfixable`.
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub unfixable: Vec<String>,
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
    /// Apply fixes and report only what was fixed: remaining diagnostics neither print nor fail
    /// (syntax and I/O errors still do). Implies --fix.
    #[arg(long, conflicts_with = "diff")]
    pub fix_only: bool,
    /// Also apply (with --fix or --diff) or count as fixable the unsafe fixes.
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Print the changes --fix would make as a unified diff; change nothing.
    #[arg(long, conflicts_with = "fix")]
    pub diff: bool,
    /// Show each fix as a diff under its diagnostic, and list the fixes applied.
    #[arg(long)]
    pub show_fixes: bool,
    /// Read the source from stdin and report (and resolve configuration) under this file name.
    #[arg(long, value_name = "PATH")]
    pub stdin_filename: Option<PathBuf>,
    /// Print only diagnostics: no summary line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the settings used for the first file to check (configuration file, backend, rules), and exit.
    #[arg(long, conflicts_with_all = ["show_files", "add_noqa", "watch"])]
    pub show_settings: bool,
    /// Print the files that would be checked, and exit.
    #[arg(long, conflicts_with_all = ["add_noqa", "watch"])]
    pub show_files: bool,
    /// Add `# noqa: CODE` to every line with a diagnostic, so that legacy code passes as it is.
    #[arg(long, conflicts_with_all = ["fix", "fix_only", "diff", "watch"])]
    pub add_noqa: bool,
    /// Colour the text output: auto (on a terminal), always or never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Re-check whenever a checked file or a configuration file changes (Ctrl-C stops).
    #[arg(short, long)]
    pub watch: bool,
    /// Check every file again instead of reading unchanged files' results from the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Where to keep the cache (default: `.tpulint_cache` at each project root; also
    /// `TPULINT_CACHE_DIR`).
    #[arg(long, value_name = "DIR", env = "TPULINT_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Benchmarking aid: read and parse the files, run no rule.
    #[arg(long, hide = true)]
    pub parse_only: bool,
    /// Benchmarking aid: turn the token prefilter off (every enabled rule runs on every file;
    /// the results are identical).
    #[arg(long, hide = true)]
    pub no_prefilter: bool,
}

impl CheckArgs {
    /// The paths to check: the working directory when none is given.
    pub fn paths(&self) -> Vec<PathBuf> {
        if self.paths.is_empty() {
            vec![PathBuf::from(".")]
        } else {
            self.paths.clone()
        }
    }

    /// Whether the source comes from stdin: `-`, or `--stdin-filename` (as in ruff, which editor
    /// plugins rely on).
    pub(crate) fn reads_stdin(&self) -> bool {
        self.stdin_filename.is_some() || self.paths.iter().any(|path| path.as_os_str() == "-")
    }

    fn fixing(&self) -> bool {
        self.fix || self.fix_only
    }
}

/// Options every per-file task needs.
pub(crate) struct RunOptions {
    pub(crate) mode: Mode,
    pub(crate) threshold: Applicability,
    /// The content cache, unless `--no-cache` (used when only checking).
    pub(crate) cache: Option<CacheLocation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Check,
    Fix,
    Diff,
}

/// The code and name of the diagnostic for a file or path that could not be read or written
/// (ruff's `io-error`, E902). No rule has it, so no selection or `# noqa` removes it.
pub const IO_ERROR: &str = "io-error";

/// What checking one file produced.
pub(crate) struct FileResult {
    pub(crate) file: SourceFile,
    /// Fixes applied (or, with --diff, that would be), per code.
    pub(crate) fixed: BTreeMap<&'static str, usize>,
    /// A unified diff (with --diff).
    pub(crate) diff: Option<String>,
    pub(crate) warnings: Vec<String>,
    /// Reading or writing the file failed; `file` holds an `io-error` diagnostic.
    pub(crate) io_failed: bool,
    /// Device-placement diagnostics whose fix is only a suggestion because no backend is known.
    pub(crate) backendless_device_fixes: usize,
}

impl FileResult {
    /// A file or path that could not be read: one `io-error` diagnostic.
    pub(crate) fn io_error(name: &str, absolute_path: &Path, message: String) -> FileResult {
        let file = SourceFile::new(name, String::new(), vec![io_error_diagnostic(message)])
            .with_absolute_path(absolute_path.to_string_lossy().into_owned());
        FileResult {
            file,
            fixed: BTreeMap::new(),
            diff: None,
            warnings: Vec::new(),
            io_failed: true,
            backendless_device_fixes: 0,
        }
    }
}

/// An `io-error` diagnostic at the start of the file.
pub fn io_error_diagnostic(message: String) -> Diagnostic {
    Diagnostic {
        code: IO_ERROR,
        name: IO_ERROR,
        message,
        range: 0..0,
        severity: Severity::Error,
        fix: None,
        related: Vec::new(),
        tag: None,
    }
}

pub fn run(args: CheckArgs) -> ExitStatus {
    let result = if args.watch {
        crate::watch::run(&args)
    } else {
        run_once(&args)
    };
    match result {
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
        fixable: args
            .fixable
            .as_deref()
            .map(|values| parse_selectors("--fixable", values))
            .transpose()?,
        unfixable: parse_selectors("--unfixable", &args.unfixable)?,
    })
}

/// The working directory and a configuration resolver with the command line's overrides.
pub(crate) fn setup(args: &CheckArgs) -> Result<(PathBuf, ProjectResolver), String> {
    let working_directory = std::env::current_dir()
        .map_err(|e| format!("cannot read the working directory: {}", describe_io(&e)))?;
    let overrides = overrides(args)?;
    let resolver = ProjectResolver::new(args.config.as_deref(), &working_directory, overrides)
        .map_err(|e| e.to_string())?;
    Ok((working_directory, resolver))
}

/// The files to check; a configuration error ends the run.
pub(crate) fn discover(
    args: &CheckArgs,
    resolver: &ProjectResolver,
    working_directory: &Path,
) -> Result<Discovery, String> {
    let threads = rayon::current_num_threads();
    let discovery = discover_files(&args.paths(), working_directory, resolver, threads);
    if let Some(first) = discovery.config_errors.first() {
        return Err(first.to_string());
    }
    Ok(discovery)
}

/// One complete check: discover, check (and fix), print, and decide the exit status.
pub(crate) fn run_once(args: &CheckArgs) -> Result<ExitStatus, String> {
    NO_PREFILTER.store(args.no_prefilter, Ordering::Relaxed);
    let (working_directory, resolver) = setup(args)?;
    let options = RunOptions {
        mode: if args.diff {
            Mode::Diff
        } else if args.fixing() {
            Mode::Fix
        } else {
            Mode::Check
        },
        threshold: if args.unsafe_fixes {
            Applicability::Unsafe
        } else {
            Applicability::Safe
        },
        cache: (!args.no_cache).then(|| CacheLocation {
            dir: args
                .cache_dir
                .as_ref()
                .map(|dir| absolute(dir, &working_directory)),
        }),
    };

    if args.reads_stdin() {
        let named: Vec<&PathBuf> = args
            .paths
            .iter()
            .filter(|path| path.as_os_str() != "-")
            .collect();
        if let Some(first) = named.first() {
            if args.stdin_filename.is_none() {
                return Err("`-` (stdin) cannot be combined with other paths".into());
            }
            output::warning(&format!(
                "ignoring `{}`: with --stdin-filename the source is read from stdin",
                first.display()
            ));
        }
        if args.add_noqa {
            return Err("--add-noqa edits files in place; it cannot read stdin".into());
        }
        return check_stdin(args, &options, &resolver, &working_directory);
    }

    let discovery = discover(args, &resolver, &working_directory)?;
    if args.show_files {
        return Ok(crate::show::show_files(
            args,
            &discovery,
            &working_directory,
        ));
    }
    if args.show_settings {
        return crate::show::show_settings_for_discovery(
            args,
            &discovery,
            &resolver,
            &working_directory,
        );
    }
    if args.add_noqa {
        return Ok(crate::add_noqa::run(&discovery, &working_directory));
    }
    if discovery.files.is_empty() && discovery.path_errors.is_empty() {
        output::warning("no Python files found");
    }
    if args.parse_only {
        return Ok(parse_only(&discovery.files));
    }

    let mut results: Vec<FileResult> = discovery
        .files
        .par_iter()
        .map(|file| {
            let settings = file.project.settings_for(&file.path);
            let cache = options
                .cache
                .as_ref()
                .map(|location| location.entries(&file.project));
            check_file(
                &file.path,
                &working_directory,
                &settings,
                &options,
                cache.as_deref(),
            )
        })
        .collect();
    let mut fatal = false;
    for error in &discovery.path_errors {
        match &error.path {
            Some(path) => results.push(FileResult::io_error(
                &display_name(path, &working_directory),
                path,
                error.message.clone(),
            )),
            None => {
                output::error(&error.to_string());
                fatal = true;
            }
        }
    }
    results.sort_by(|a, b| a.file.full_path().cmp(b.file.full_path()));
    let status = report(args, &options, results);
    Ok(if fatal { ExitStatus::Error } else { status })
}

thread_local! {
    /// One parser per worker thread, reused across files.
    static PARSER: RefCell<Option<tree_sitter::Parser>> = const { RefCell::new(None) };
}

pub(crate) fn parse(text: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&PYTHON).ok()?;
            *slot = Some(parser);
        }
        tpulint_analyzer::syntax::parse_with(slot.as_mut()?, text, None)
    })
}

/// Whether `--no-prefilter` was given (a benchmarking aid, set once before any check).
pub(crate) static NO_PREFILTER: AtomicBool = AtomicBool::new(false);

/// Diagnostics of `text` (an empty list in the impossible case that the grammar fails to load).
pub(crate) fn check_text(text: &str, settings: &Settings) -> Vec<Diagnostic> {
    let prefilter = if NO_PREFILTER.load(Ordering::Relaxed) {
        Prefilter::Off
    } else {
        Prefilter::On
    };
    match parse(text) {
        Some(tree) => check_tree_with(text, &tree, settings, prefilter),
        None => Vec::new(),
    }
}

/// The name shown for `path`: relative to the working directory when inside it.
pub(crate) fn display_name(path: &Path, working_directory: &Path) -> String {
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
    cache: Option<&Path>,
) -> FileResult {
    let name = display_name(path, working_directory);
    let source = match read_source(path) {
        Ok(source) => source,
        Err(io_error) => {
            return FileResult::io_error(
                &name,
                path,
                format!("Cannot read: {}", describe_io(&io_error)),
            );
        }
    };
    let write = |new_text: &str| write_source(path, &source, new_text);
    let mut result = if notebook::is_notebook(path) {
        notebook::check_notebook_text(&name, &source, settings, options, write)
    } else {
        check_source_text(&name, &source, settings, options, cache, write)
    };
    result.file = result
        .file
        .with_absolute_path(path.to_string_lossy().into_owned());
    result
}

/// Device-placement diagnostics (TPU401–TPU404) whose fix is only a suggestion because the file
/// names no backend and none is configured: with a known backend these fixes are real (unsafe),
/// so `--backend` would make them applicable.
pub(crate) fn backendless_device_fixes(diagnostics: &[Diagnostic], settings: &Settings) -> usize {
    if settings.backend != BackendSetting::Auto {
        return 0;
    }
    diagnostics
        .iter()
        .filter(|diagnostic| {
            matches!(diagnostic.code, "TPU401" | "TPU402" | "TPU403" | "TPU404")
                && diagnostic
                    .fix
                    .as_ref()
                    .is_some_and(|fix| fix.applicability == Applicability::DisplayOnly)
        })
        .count()
}

/// Checks (and fixes, per `options`) one decoded source; `write` persists a fixed text.
fn check_source_text(
    name: &str,
    source: &SourceText,
    settings: &Settings,
    options: &RunOptions,
    cache: Option<&Path>,
    write: impl FnOnce(&str) -> std::io::Result<()>,
) -> FileResult {
    let mut warnings = Vec::new();
    let text = &source.text;
    let unfixed = |mut diagnostics: Vec<Diagnostic>, warnings: Vec<String>, io_failed| {
        let backendless_device_fixes = backendless_device_fixes(&diagnostics, settings);
        if source.lossy {
            // Never applied: the file is never written, so nothing may count as fixable.
            for fix in diagnostics.iter_mut().filter_map(|d| d.fix.as_mut()) {
                fix.applicability = Applicability::DisplayOnly;
            }
        }
        FileResult {
            file: SourceFile::new(name, text.clone(), diagnostics),
            fixed: BTreeMap::new(),
            diff: None,
            warnings,
            io_failed,
            backendless_device_fixes,
        }
    };
    if source.lossy {
        warnings.push(format!(
            "{name}: not valid UTF-8; checked with replacement characters and never fixed"
        ));
    }
    if options.mode == Mode::Check || source.lossy {
        let diagnostics = match cache {
            Some(entries) => cache::get(entries, text, settings).unwrap_or_else(|| {
                let diagnostics = check_text(text, settings);
                cache::put(entries, text, settings, &diagnostics);
                diagnostics
            }),
            None => check_text(text, settings),
        };
        return unfixed(diagnostics, warnings, false);
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
                    let mut diagnostics = check_text(text, settings);
                    diagnostics.insert(
                        0,
                        io_error_diagnostic(format!(
                            "Cannot write fixes: {}; the file was left unchanged",
                            describe_io(&io_error)
                        )),
                    );
                    return unfixed(diagnostics, warnings, true);
                }
            }
            Mode::Check => {}
        }
    }
    let backendless_device_fixes = backendless_device_fixes(&outcome.remaining, settings);
    let (shown_text, diagnostics) = match options.mode {
        // `--diff` reports what would change; the file itself is untouched.
        Mode::Diff => (text.clone(), Vec::new()),
        _ => (outcome.output, outcome.remaining),
    };
    FileResult {
        file: SourceFile::new(name, shown_text, diagnostics),
        fixed: outcome.fixed,
        diff,
        warnings,
        io_failed: false,
        backendless_device_fixes,
    }
}

fn check_stdin(
    args: &CheckArgs,
    options: &RunOptions,
    resolver: &ProjectResolver,
    working_directory: &Path,
) -> Result<ExitStatus, String> {
    let (name, project, settings, excluded) = match &args.stdin_filename {
        Some(filename) => {
            let path = absolute(filename, working_directory);
            let project = resolver.resolve_file(&path).map_err(|e| e.to_string())?;
            let settings = project.settings_for(&path);
            let excluded = resolver.force_exclude() && project.is_path_excluded(&path);
            (
                display_name(&path, working_directory),
                project,
                settings,
                excluded,
            )
        }
        None => {
            let project = resolver
                .resolve_directory(working_directory)
                .map_err(|e| e.to_string())?;
            let settings = project.settings_for(Path::new("-"));
            ("-".to_string(), project, settings, false)
        }
    };
    if args.show_files {
        if !excluded {
            output::stdout(&format!("{name}\n"));
        }
        return Ok(ExitStatus::Success);
    }
    if args.show_settings {
        return crate::show::show_settings(args, &name, &project, &settings);
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read stdin: {}", describe_io(&e)))?;
    if excluded {
        // As ruff does for an editor's excluded buffer under --force-exclude: nothing to
        // report, and with --fix the input comes back byte for byte.
        if options.mode == Mode::Fix {
            output::stdout_bytes(&bytes);
        }
        return Ok(ExitStatus::Success);
    }
    let source = SourceText::decode(bytes);
    if args.parse_only {
        let _ = parse(&source.text);
        return Ok(ExitStatus::Success);
    }
    if options.mode == Mode::Fix && source.lossy {
        // The fixed text would carry U+FFFD for every invalid byte: refuse, as for files.
        return Err(
            "stdin is not valid UTF-8; refusing to fix it, since the fixed text would replace \
             every invalid byte (check it without --fix)"
                .into(),
        );
    }
    // With --fix, the fixed source goes to stdout (as ruff does) and diagnostics to stderr.
    let mut fixed_output = None;
    let write = |new_text: &str| {
        fixed_output = Some(source.encode(new_text));
        Ok(())
    };
    let result = match &args.stdin_filename {
        Some(filename) if notebook::is_notebook(filename) => {
            notebook::check_notebook_text(&name, &source, &settings, options, write)
        }
        _ => check_source_text(&name, &source, &settings, options, None, write),
    };
    if options.mode == Mode::Fix {
        match &fixed_output {
            Some(bytes) => output::stdout_bytes(bytes),
            None => output::stdout_bytes(&source.encode(&source.text)),
        }
    }
    Ok(report(args, options, vec![result]))
}

/// Where the report goes: stdout, stderr (stdout carries a fixed stdin), or `--output-file`.
struct Sink<'a> {
    args: &'a CheckArgs,
    to_stderr: bool,
    text: String,
}

impl Sink<'_> {
    fn to_terminal(&self) -> bool {
        self.args.output_file.is_none() && !self.to_stderr && std::io::stdout().is_terminal()
    }

    fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Writes the report; false when the output file could not be written.
    fn finish(self) -> bool {
        match &self.args.output_file {
            Some(path) => {
                let written = path
                    .parent()
                    .filter(|parent| !parent.as_os_str().is_empty())
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| std::fs::write(path, self.text.as_bytes()));
                if let Err(io_error) = written {
                    output::error(&format!(
                        "cannot write --output-file {}: {}",
                        path.display(),
                        describe_io(&io_error)
                    ));
                    return false;
                }
                true
            }
            None if self.to_stderr => {
                output::stderr(&self.text);
                true
            }
            None => {
                output::stdout(&self.text);
                true
            }
        }
    }
}

/// Prints everything and computes the exit status.
fn report(args: &CheckArgs, options: &RunOptions, results: Vec<FileResult>) -> ExitStatus {
    let mut io_failed = false;
    for result in &results {
        for message in &result.warnings {
            output::warning(message);
        }
        io_failed |= result.io_failed;
    }
    let total_fixed: usize = results.iter().flat_map(|r| r.fixed.values()).sum();
    let backendless: usize = results.iter().map(|r| r.backendless_device_fixes).sum();
    // With --fix on stdin, stdout carries the fixed source: the report goes to stderr.
    let stdin_fix = options.mode == Mode::Fix && args.reads_stdin();
    let mut sink = Sink {
        args,
        to_stderr: stdin_fix,
        text: String::new(),
    };
    let text_options = TextOptions {
        show_fix_diff: args.show_fixes,
        color: args.color.enabled(sink.to_terminal()),
    };

    if options.mode == Mode::Diff {
        let mut changed_files = 0;
        for result in &results {
            if let Some(diff) = &result.diff {
                changed_files += 1;
                sink.push(diff);
            }
        }
        // Files that could not be read are still reported.
        for result in results.iter().filter(|result| result.io_failed) {
            for diagnostic in &result.file.diagnostics {
                sink.push(&render_concise_with(&result.file, diagnostic, text_options));
                sink.push("\n");
            }
        }
        if !args.quiet {
            let mut message = if total_fixed == 0 {
                "No fixes available.\n".to_string()
            } else {
                format!(
                    "Would fix {} in {}.\n",
                    plural(total_fixed, "diagnostic"),
                    plural(changed_files, "file")
                )
            };
            message.push_str(&backend_hint(backendless));
            output::stderr(&message);
        }
        let written = sink.finish();
        return if io_failed || !written {
            ExitStatus::Error
        } else if changed_files > 0 && !args.exit_zero {
            ExitStatus::Failure
        } else {
            ExitStatus::Success
        };
    }

    let (mut files, fixed_by_file): (Vec<SourceFile>, Vec<BTreeMap<&'static str, usize>>) = results
        .into_iter()
        .map(|result| (result.file, result.fixed))
        .unzip();
    if args.fix_only {
        // Only what no rule reports (syntax and I/O errors) is still shown.
        for file in &mut files {
            file.diagnostics
                .retain(|diagnostic| rule_by_code_or_name(diagnostic.code).is_none());
        }
    }
    let counts = Counts::of(&files);
    let unsafe_fixes = args.unsafe_fixes;
    let fail_on = args.fail_on.unwrap_or(FailOn::Info);
    let failing = files
        .iter()
        .flat_map(|file| &file.diagnostics)
        .filter(|diagnostic| diagnostic.severity >= fail_on.severity())
        .count();
    let summary = |counts: &Counts| {
        let mut text = if args.fix_only && counts.total == 0 {
            match total_fixed {
                0 => "No fixes applied.\n".to_string(),
                fixed => format!("Fixed {}.\n", plural(fixed, "diagnostic")),
            }
        } else {
            render_summary(counts, total_fixed, unsafe_fixes)
        };
        if !args.fix_only {
            text.push_str(&backend_hint(backendless));
        }
        let fails_on_fix = args.exit_non_zero_on_fix && total_fixed > 0;
        if counts.total > 0 && failing == 0 && !args.exit_zero && !fails_on_fix {
            let level = fail_on
                .to_possible_value()
                .map(|value| value.get_name().to_string())
                .unwrap_or_default();
            text.push_str(&format!(
                "None is at or above `--fail-on {level}`: the check passes.\n"
            ));
        }
        text
    };

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
                sink.push(&text);
            }
            _ => {
                sink.push(&render_statistics(&rows));
                if !args.quiet {
                    sink.push(&summary(&counts));
                }
            }
        }
    } else {
        match args.output_format {
            OutputFormat::Text | OutputFormat::Concise => {
                let mut out = String::new();
                for file in &files {
                    for diagnostic in &file.diagnostics {
                        if args.output_format == OutputFormat::Text {
                            out.push_str(&render_text(file, diagnostic, text_options));
                        } else {
                            out.push_str(&render_concise_with(file, diagnostic, text_options));
                        }
                        out.push('\n');
                    }
                }
                if args.show_fixes && total_fixed > 0 {
                    out.push_str(&render_fixed(&files, &fixed_by_file, total_fixed));
                }
                if !args.quiet {
                    out.push_str(&summary(&counts));
                }
                sink.push(&out);
            }
            OutputFormat::Json => sink.push(&tpulint_report::json::render_json(&files)),
            OutputFormat::Sarif => sink.push(&tpulint_report::sarif::render_sarif(&files)),
            OutputFormat::JsonLines => sink.push(&tpulint_report::json::render_json_lines(&files)),
            OutputFormat::Gitlab => {
                let project_dir = std::env::var_os("CI_PROJECT_DIR").map(PathBuf::from);
                sink.push(&tpulint_report::gitlab::render_gitlab(
                    &files,
                    project_dir.as_deref(),
                ))
            }
            OutputFormat::Junit => sink.push(&tpulint_report::junit::render_junit(&files)),
            OutputFormat::Github => {
                let mut out = String::new();
                for file in &files {
                    for diagnostic in &file.diagnostics {
                        out.push_str(&tpulint_report::github::render_github(file, diagnostic));
                        out.push('\n');
                    }
                }
                sink.push(&out);
            }
        }
    }
    let written = sink.finish();

    if io_failed || !written {
        ExitStatus::Error
    } else if args.exit_zero {
        ExitStatus::Success
    } else if failing > 0 || (args.exit_non_zero_on_fix && total_fixed > 0) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}

/// The summary's note when device fixes are suggestions only because no backend is known.
fn backend_hint(backendless: usize) -> String {
    if backendless == 0 {
        return String::new();
    }
    let (fixes, are) = if backendless == 1 {
        ("fix is", "it")
    } else {
        ("fixes are", "them")
    };
    format!(
        "{backendless} device {fixes} only a suggestion: the code imports no TPU backend and none \
         is configured. To apply {are} with `--fix --unsafe-fixes`, pass `--backend torch_xla` (or \
         `torchtpu`), or set `backend = \"torch_xla\"` in `[tool.tpulint]`.\n"
    )
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
            let name = rule_by_code_or_name(code)
                .map(|id| id.meta().name)
                .unwrap_or("");
            out.push_str(&format!("    {count} × {code} ({name})\n"));
        }
    }
    out.push('\n');
    out
}

pub(crate) fn plural(count: usize, word: &str) -> String {
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
