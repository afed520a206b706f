//! `tpulint doctor`: checks that a Python environment can run PyTorch on a TPU, and says exactly how
//! to fix what it finds.
//!
//! Unlike the analyzer this crate does I/O: it runs an embedded Python probe (`src/probe.py`) in the
//! chosen interpreter (no network, no writes, no installs; every import and the optional TPU
//! allocation in a child process with a timeout), reads `/dev`, `/proc` and `/sys` for TPU devices
//! and the processes holding them, and compares versions with an embedded compatibility table
//! (`data/compatibility.toml`, every entry sourced).
//!
//! # API
//! One synchronous call, safe to run from a blocking thread of an async server:
//!
//! ```no_run
//! use tpulint_doctor::{DoctorOptions, OutputFormat, render, run};
//!
//! let options = DoctorOptions::from_process_env(std::env::current_dir().unwrap());
//! let report = run(&options);
//! print!("{}", render(&report, OutputFormat::Text { color: false }));
//! std::process::exit(report.exit_code()); // 0 ready, 1 degraded or not ready
//! ```
//!
//! For an editor: [`Report::summary_line`] (status bar), [`render()`] with [`OutputFormat::Markdown`]
//! (report view), [`Report::suggested_commands`] (fixes to offer after confirmation) and
//! [`Report::verdict`] (`ready` / `degraded` / `not_ready` in JSON). Set
//! [`DoctorOptions::total_timeout`] to bound the call.
//!
//! [`run`] never panics on a broken environment: a missing interpreter, a probe that hangs or a
//! module that crashes on import all become findings. The JSON rendering ([`OutputFormat::Json`]) is
//! a stable schema ([`report::SCHEMA_VERSION`]) documented in `docs/doctor.md`; the Markdown
//! rendering is what the language server's `tpulint.checkEnvironment` command returns.

pub mod catalog;
pub mod compat;
pub mod devices;
pub mod discover;
pub mod findings;
pub mod probe;
pub mod render;
pub mod report;
pub mod version;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use catalog::{FindingId, explain, explain_json};
pub use devices::SystemPaths;
pub use discover::{InterpreterSource, is_executable_file};
pub use render::{OutputFormat, render};
pub use report::{Finding, Fix, Report, Severity, Verdict};

use crate::catalog::Draft;
use crate::compat::compatibility;
use crate::discover::{DiscoveryInputs, DiscoveryProblem, discover};
use crate::findings::{Backend, analyze, device_only_findings, shell_quote, torch_tpu_origin};
use crate::probe::{ProbeOutcome, ProbeReport, ProbeRequest, run_probe};
use crate::report::{
    AllocationFact, Counts, DistributionFact, ImportFact, InterpreterFacts, SCHEMA_VERSION,
};

/// Default limit for each import and for the allocation.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// What to check and how.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// `--python`: an interpreter, or a virtual environment directory.
    pub python: Option<PathBuf>,
    /// Where `.venv` / `venv` discovery starts (walking up).
    pub project_dir: PathBuf,
    /// `$VIRTUAL_ENV` (read from the process by [`DoctorOptions::from_process_env`]).
    pub virtual_env: Option<PathBuf>,
    /// `$PATH`, for finding `python3`.
    pub path_var: Option<OsString>,
    /// Also allocate a 2×2 tensor on the TPU and multiply it (claims the TPU briefly).
    pub allocate: bool,
    /// Limit for each import and for the allocation; the whole probe gets a multiple of it.
    pub step_timeout: Duration,
    /// Hard limit for the whole probe; by default a multiple of `step_timeout` (every import may
    /// use its own limit). The probe and everything it started are killed when it is reached.
    pub total_timeout: Option<Duration>,
    /// Environment changes for the probe (`Some` sets, `None` removes).
    pub env_overrides: Vec<(String, Option<String>)>,
    /// Roots of `/dev`, `/proc`, `/sys` and `/tmp` (tests point them at fakes).
    pub system: SystemPaths,
}

impl DoctorOptions {
    /// Options for `project_dir` with `$VIRTUAL_ENV` and `$PATH` from this process. The system roots
    /// can be redirected with `TPULINT_DOCTOR_DEV`, `TPULINT_DOCTOR_PROC`, `TPULINT_DOCTOR_SYS`,
    /// `TPULINT_DOCTOR_TMP` and `TPULINT_DOCTOR_ETC` (used by end-to-end tests of the CLI and the
    /// language server).
    pub fn from_process_env(project_dir: PathBuf) -> Self {
        let defaults = SystemPaths::default();
        let root = |name: &str, default: PathBuf| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .unwrap_or(default)
        };
        Self {
            python: None,
            project_dir,
            virtual_env: std::env::var_os("VIRTUAL_ENV").map(PathBuf::from),
            path_var: std::env::var_os("PATH"),
            allocate: false,
            step_timeout: DEFAULT_STEP_TIMEOUT,
            total_timeout: None,
            env_overrides: Vec::new(),
            system: SystemPaths {
                dev: root("TPULINT_DOCTOR_DEV", defaults.dev),
                proc: root("TPULINT_DOCTOR_PROC", defaults.proc),
                sys: root("TPULINT_DOCTOR_SYS", defaults.sys),
                tmp: root("TPULINT_DOCTOR_TMP", defaults.tmp),
                etc: root("TPULINT_DOCTOR_ETC", defaults.etc),
            },
        }
    }
}

/// Runs every check and returns the report (synchronous; takes seconds when torch is installed).
pub fn run(options: &DoctorOptions) -> Report {
    let table = compatibility();
    let discovery = discover(&DiscoveryInputs {
        explicit: options.python.as_deref(),
        virtual_env: options.virtual_env.as_deref(),
        project_dir: Some(&options.project_dir),
        path_var: options.path_var.as_deref(),
    });
    let devices = devices::inspect(&options.system, table);
    let euid = devices::current_uid();
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        verdict: Verdict::Ready,
        counts: Counts::default(),
        interpreter: None,
        distributions: Vec::new(),
        imports: Vec::new(),
        environment: BTreeMap::new(),
        ld_library_path_set: false,
        devices: devices.clone(),
        allocation: Vec::new(),
        findings: Vec::new(),
        compatibility_revision: table.revision.clone(),
    };
    if let Some(stale) = &discovery.stale_virtual_env {
        report.findings.push(
            Draft::new(FindingId::VirtualEnvStale)
                .var("path", shell_quote(&stale.display().to_string()))
                .detail(format!(
                    "VIRTUAL_ENV={} has no bin/python.",
                    stale.display()
                ))
                .fix("deactivate")
                .build(),
        );
    }
    let interpreter = match discovery.result {
        Ok(interpreter) => interpreter,
        Err(problem) => {
            report.findings.push(discovery_finding(&problem));
            device_only_findings(&devices, euid, Backend::None, &mut report.findings);
            return report.finish();
        }
    };
    // The probe runs from `/`, so a relative `--python v/bin/python` is made absolute first
    // (without resolving symlinks: a virtual environment's `python` is one).
    let mut interpreter = interpreter;
    if interpreter.path.is_relative()
        && let Ok(absolute) = std::path::absolute(&interpreter.path)
    {
        interpreter.path = absolute;
    }
    let path_text = interpreter.path.display().to_string();
    report.interpreter = Some(InterpreterFacts {
        path: path_text.clone(),
        source: interpreter.source,
        version: String::new(),
        prefix: String::new(),
        base_prefix: String::new(),
        virtualenv: false,
    });
    let outcome = run_probe(&ProbeRequest {
        python: &interpreter.path,
        step_timeout: options.step_timeout,
        allocate: options.allocate,
        env_overrides: &options.env_overrides,
        total_timeout: options.total_timeout,
    });
    let probe = match outcome {
        ProbeOutcome::Report(probe) => probe,
        other => {
            report
                .findings
                .push(probe_failure_finding(&path_text, other));
            device_only_findings(&devices, euid, Backend::None, &mut report.findings);
            return report.finish();
        }
    };
    fill_facts(&mut report, &probe);
    // Fixes name the interpreter Python itself reports (a pyenv shim resolves to the real one;
    // a virtual environment keeps its own path).
    let fix_python = if probe.python.executable.is_empty() {
        interpreter.path.clone()
    } else {
        PathBuf::from(&probe.python.executable)
    };
    report
        .findings
        .extend(analyze(table, &fix_python, &probe, &devices, euid));
    report.finish()
}

fn fill_facts(report: &mut Report, probe: &ProbeReport) {
    let table = compatibility();
    if let Some(interpreter) = &mut report.interpreter {
        interpreter.version = probe.python.version.clone();
        interpreter.prefix = probe.python.prefix.clone();
        interpreter.base_prefix = probe.python.base_prefix.clone();
        interpreter.virtualenv = probe.python.in_virtualenv;
    }
    report.distributions = probe
        .distributions
        .iter()
        .map(|(name, dist)| DistributionFact {
            name: name.clone(),
            version: dist.version.clone(),
            origin: (name == "torch_tpu")
                .then(|| torch_tpu_origin(table, dist, probe.imports.get("torch_tpu"))),
            build: (name == "torch_tpu").then(|| table.torch_tpu.build(&dist.version)),
            location: dist.location.clone(),
        })
        .collect();
    report.imports = probe
        .imports
        .iter()
        .map(|(module, result)| ImportFact {
            module: module.clone(),
            status: result.status.clone(),
            version: result.version.clone(),
            error: result.error.clone(),
            seconds: result.seconds,
        })
        .collect();
    report.environment = probe.env.clone();
    report.ld_library_path_set = probe.ld_library_path_set;
    report.allocation = probe
        .allocation
        .iter()
        .map(|result| {
            let backend = result.backend.clone().unwrap_or_default();
            // "ok" only when the product landed on a TPU.
            let status =
                if result.status == "ok" && findings::landed_off_tpu(&backend, result).is_some() {
                    "not_on_tpu".to_string()
                } else {
                    result.status.clone()
                };
            AllocationFact {
                backend,
                status,
                device: result.device.clone(),
                hardware: result.hardware.clone(),
                error: result.error.clone(),
                seconds: result.seconds,
            }
        })
        .collect();
}

fn discovery_finding(problem: &DiscoveryProblem) -> Finding {
    match problem {
        DiscoveryProblem::Missing { path, source } => Draft::new(FindingId::InterpreterNotFound)
            .var("path", path.display().to_string())
            .detail(format!("Chosen through {}.", source.describe()))
            .fix("point")
            .fix("create")
            .build(),
        DiscoveryProblem::NotExecutable { path, source } => {
            Draft::new(FindingId::InterpreterNotExecutable)
                .var("path", shell_quote(&path.display().to_string()))
                .detail(format!("Chosen through {}; it is not an executable file.", source.describe()))
                .fix("chmod")
                .fix("create")
                .build()
        }
        DiscoveryProblem::NoneFound => {
            Draft::new(FindingId::InterpreterNotFound)
                .var("path", "none given and none discovered")
                .detail("No --python, no $VIRTUAL_ENV, no .venv or venv in the project or its parents, and no python3 on PATH.")
                .fix("create")
                .build()
        }
    }
}

fn probe_failure_finding(python: &str, outcome: ProbeOutcome) -> Finding {
    let path = shell_quote(python);
    match outcome {
        ProbeOutcome::TimedOut { after, stderr } => Draft::new(FindingId::ProbeTimedOut)
            .var("path", path)
            .var("seconds", after.as_secs().to_string())
            .detail(if stderr.is_empty() {
                "It was stopped together with every process it started.".to_string()
            } else {
                format!(
                    "It was stopped together with every process it started. Last output:\n{stderr}"
                )
            })
            .fix("reproduce")
            .build(),
        ProbeOutcome::Failed {
            exit,
            signal,
            stderr,
        } => Draft::new(FindingId::ProbeFailed)
            .var("path", path)
            .detail(format!(
                "{}{}",
                match (exit, signal) {
                    (_, Some(signal)) => format!("Killed by signal {signal}."),
                    (Some(code), None) => format!("Exited with code {code}."),
                    (None, None) => "Exited abnormally.".to_string(),
                },
                if stderr.is_empty() {
                    String::new()
                } else {
                    format!("\n{stderr}")
                }
            ))
            .fix("reproduce")
            .build(),
        ProbeOutcome::SpawnFailed(error) => Draft::new(FindingId::InterpreterNotExecutable)
            .var("path", path)
            .detail(error)
            .fix("reproduce")
            .build(),
        ProbeOutcome::Report(_) => unreachable!("a report is not a failure"),
    }
}
