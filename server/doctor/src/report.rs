//! The report: facts gathered, findings (each with why it matters and exact fixes), and a verdict.
//! Its JSON form is a stable schema (`schema_version`), documented in `docs/doctor.md`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::devices::DeviceFacts;
use crate::discover::InterpreterSource;

/// Version of the JSON schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The environment cannot run PyTorch on the TPU until this is fixed.
    Error,
    /// It runs, but slower, on the wrong device, or fragile.
    Warning,
    /// Worth knowing; nothing is broken.
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
        }
    }
}

/// Overall state of the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No errors or warnings.
    Ready,
    /// Warnings only.
    Degraded,
    /// At least one error.
    NotReady,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Degraded => "degraded",
            Self::NotReady => "not ready",
        }
    }
}

/// One way to fix a finding: what it does, and the exact commands (shell) for this environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fix {
    pub description: String,
    pub commands: Vec<String>,
}

impl Fix {
    pub fn new(description: impl Into<String>, commands: Vec<String>) -> Self {
        Self {
            description: description.into(),
            commands,
        }
    }
}

/// A problem (or notable fact) found in the environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable kebab-case identifier (`torch-xla-version-mismatch`).
    pub id: String,
    pub severity: Severity,
    /// What is wrong, in one line.
    pub title: String,
    /// Specifics: versions, paths, error text.
    pub detail: String,
    /// Why it matters on a TPU.
    pub why: String,
    /// Alternatives, best first.
    pub fixes: Vec<Fix>,
    /// Where the underlying fact is documented.
    pub sources: Vec<String>,
    /// The finding's page in `docs/doctor.md` (what `tpulint doctor --explain ID` prints).
    pub url: String,
}

/// The interpreter that was checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InterpreterFacts {
    pub path: String,
    pub source: InterpreterSource,
    /// From the probe; empty when the probe did not run.
    pub version: String,
    pub prefix: String,
    pub base_prefix: String,
    pub virtualenv: bool,
}

/// Which project a `torch_tpu` distribution belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Google's TorchTPU.
    Google,
    /// Sophgo's unrelated backend that reuses the name.
    Sophgo,
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DistributionFact {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// torch_tpu only: nightly, release-branch build, stub.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<crate::compat::TorchTpuBuild>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportFact {
    pub module: String,
    /// `ok`, `failed`, `timed_out`, `crashed`, `skipped`, `not_installed`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocationFact {
    pub backend: String,
    /// `ok` (on a TPU), `not_on_tpu`, `failed` or `timed_out`.
    pub status: String,
    /// Where the product landed (`xla:0`, `tpu:0`, `cpu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// torch_xla: the PJRT device type behind it (`TPU`, `CPU`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hardware: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub error: usize,
    pub warning: usize,
    pub info: usize,
}

/// Everything `tpulint doctor` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub verdict: Verdict,
    pub counts: Counts,
    /// `None` when no usable interpreter was found.
    pub interpreter: Option<InterpreterFacts>,
    pub distributions: Vec<DistributionFact>,
    pub imports: Vec<ImportFact>,
    /// TPU-related environment variables as the interpreter sees them.
    pub environment: BTreeMap<String, String>,
    pub ld_library_path_set: bool,
    pub devices: DeviceFacts,
    /// Empty unless `--allocate` was given and a backend imported.
    pub allocation: Vec<AllocationFact>,
    /// Errors first, then warnings, then info.
    pub findings: Vec<Finding>,
    /// Revision of the compatibility table used.
    pub compatibility_revision: String,
}

impl Report {
    /// Sorts findings by severity and derives the counts and verdict.
    pub fn finish(mut self) -> Self {
        self.findings.sort_by_key(|finding| finding.severity);
        let mut counts = Counts::default();
        for finding in &self.findings {
            match finding.severity {
                Severity::Error => counts.error += 1,
                Severity::Warning => counts.warning += 1,
                Severity::Info => counts.info += 1,
            }
        }
        self.counts = counts;
        self.verdict = if counts.error > 0 {
            Verdict::NotReady
        } else if counts.warning > 0 {
            Verdict::Degraded
        } else {
            Verdict::Ready
        };
        self
    }

    /// `tpulint doctor`'s exit code: 0 when ready, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            Verdict::Ready => 0,
            Verdict::Degraded | Verdict::NotReady => 1,
        }
    }

    /// One line for a status bar or notification: `not ready: 2 errors (no-tpu-backend, ...)`.
    pub fn summary_line(&self) -> String {
        let Counts {
            error,
            warning,
            info,
        } = self.counts;
        let mut parts = Vec::new();
        if error > 0 {
            parts.push(format!(
                "{error} error{}",
                if error == 1 { "" } else { "s" }
            ));
        }
        if warning > 0 {
            parts.push(format!(
                "{warning} warning{}",
                if warning == 1 { "" } else { "s" }
            ));
        }
        if parts.is_empty() {
            return match info {
                0 => format!("TPU environment {}", self.verdict.as_str()),
                _ => format!("TPU environment {} ({info} info)", self.verdict.as_str()),
            };
        }
        let first: Vec<&str> = self
            .findings
            .iter()
            .filter(|finding| finding.severity != Severity::Info)
            .take(3)
            .map(|finding| finding.id.as_str())
            .collect();
        format!(
            "TPU environment {}: {} ({})",
            self.verdict.as_str(),
            parts.join(", "),
            first.join(", ")
        )
    }

    /// Every fix command of the errors and warnings, with its finding's title, in report order
    /// (what an editor offers to run after the user confirms).
    pub fn suggested_commands(&self) -> Vec<(String, String)> {
        self.findings
            .iter()
            .filter(|finding| finding.severity != Severity::Info)
            .flat_map(|finding| {
                finding.fixes.iter().flat_map(move |fix| {
                    fix.commands.iter().map(move |command| {
                        (
                            format!("{}: {}", finding.title, fix.description),
                            command.clone(),
                        )
                    })
                })
            })
            .collect()
    }

    /// The first finding with this id.
    pub fn finding(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|finding| finding.id == id)
    }
}
