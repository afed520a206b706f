//! `tpulint doctor`: checks that a Python environment can run PyTorch on a TPU (interpreter,
//! torch / torch_xla / TorchTPU / libtpu versions, imports, TPU devices and their holders) and
//! prints the exact fix for each problem. The work is done by `tpulint_doctor`.
//!
//! Exit codes: 0 ready, 1 degraded or not ready, 2 usage error (from clap, or an unknown
//! `--explain` id).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use tpulint_doctor::{DoctorOptions, FindingId, OutputFormat, render};

use crate::output::{self, ExitStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DoctorFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The Python interpreter (or virtual environment directory) to check; by default
    /// $VIRTUAL_ENV, then .venv/venv in this directory or a parent, then python3 on PATH.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Also allocate a 2x2 tensor on the TPU and multiply it (claims the TPU for a moment).
    #[arg(long)]
    pub allocate: bool,
    /// Seconds each import, and the allocation, may take before it is killed.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DoctorFormat::Text)]
    pub output_format: DoctorFormat,
    /// Explain a finding (its severity, when it is reported, why it matters, its fixes and
    /// sources) instead of checking anything; with `--output-format json`, as JSON.
    #[arg(long, value_name = "ID", conflicts_with_all = ["python", "allocate"])]
    pub explain: Option<String>,
}

pub fn run(args: DoctorArgs) -> ExitStatus {
    if let Some(id) = &args.explain {
        return explain(id, args.output_format);
    }
    let project_dir = match std::env::current_dir() {
        Ok(directory) => directory,
        Err(error) => {
            output::error(&format!("cannot read the current directory: {error}"));
            return ExitStatus::Error;
        }
    };
    let mut options = DoctorOptions::from_process_env(project_dir);
    options.python = args.python;
    options.allocate = args.allocate;
    options.step_timeout = Duration::from_secs(args.timeout);
    let report = tpulint_doctor::run(&options);
    let format = match args.output_format {
        DoctorFormat::Text => OutputFormat::Text {
            color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        },
        DoctorFormat::Json => OutputFormat::Json,
        DoctorFormat::Markdown => OutputFormat::Markdown,
    };
    output::stdout(&render(&report, format));
    if report.exit_code() == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    }
}

fn explain(id: &str, format: DoctorFormat) -> ExitStatus {
    match FindingId::from_id(id.trim()) {
        Some(finding) => {
            let text = match format {
                DoctorFormat::Json => {
                    let json = tpulint_doctor::explain_json(finding);
                    format!(
                        "{}\n",
                        serde_json::to_string_pretty(&json).unwrap_or_default()
                    )
                }
                DoctorFormat::Text | DoctorFormat::Markdown => tpulint_doctor::explain(finding),
            };
            output::stdout(&text);
            ExitStatus::Success
        }
        None => {
            // Suggest the ids sharing the most words with the one given.
            let words: Vec<&str> = id
                .split(['-', '_', ' '])
                .filter(|w| !w.is_empty())
                .collect();
            let mut scored: Vec<(usize, &str)> = FindingId::ALL
                .iter()
                .map(|known| {
                    let shared = known
                        .as_str()
                        .split('-')
                        .filter(|part| words.contains(part))
                        .count();
                    (shared, known.as_str())
                })
                .filter(|(shared, _)| *shared > 0)
                .collect();
            scored.sort_by_key(|entry| std::cmp::Reverse(entry.0));
            let similar: Vec<&str> = scored.iter().take(3).map(|(_, id)| *id).collect();
            let hint = if similar.is_empty() {
                "the ids are listed in docs/doctor.md".to_string()
            } else {
                format!("similar: {}", similar.join(", "))
            };
            output::error(&format!("unknown finding id `{id}` ({hint})"));
            ExitStatus::Error
        }
    }
}
