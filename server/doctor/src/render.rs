//! Renders a [`Report`] as terminal text (colour only when asked, i.e. on a TTY), JSON (the stable
//! schema) or Markdown (the language server's `tpulint.checkEnvironment` and the VS Code report view).

use std::fmt::Write as _;

use crate::report::{Finding, Report, Severity, Verdict};

/// How to render a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// For a terminal; `color` adds ANSI colours (pass `stdout().is_terminal()`).
    Text {
        color: bool,
    },
    /// Pretty-printed JSON, schema documented in `docs/doctor.md`.
    Json,
    Markdown,
}

/// Renders `report`; the output ends with a newline.
pub fn render(report: &Report, format: OutputFormat) -> String {
    match format {
        OutputFormat::Text { color } => render_text(report, color),
        OutputFormat::Json => {
            let mut json = serde_json::to_string_pretty(report)
                .unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"));
            json.push('\n');
            json
        }
        OutputFormat::Markdown => render_markdown(report),
    }
}

struct Style {
    color: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }
    fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }
    fn severity(&self, severity: Severity) -> String {
        let code = match severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Info => "1;36",
        };
        self.paint(code, severity.as_str())
    }
    fn verdict(&self, verdict: Verdict) -> String {
        let code = match verdict {
            Verdict::Ready => "1;32",
            Verdict::Degraded => "1;33",
            Verdict::NotReady => "1;31",
        };
        self.paint(code, verdict.as_str())
    }
}

fn render_text(report: &Report, color: bool) -> String {
    let style = Style { color };
    let mut out = String::new();
    let _ = writeln!(out, "{}", style.bold("tpulint doctor"));
    for (label, value) in summary_lines(report) {
        let _ = writeln!(out, "  {:<13} {value}", style.dim(&format!("{label}:")));
    }
    out.push('\n');
    for finding in &report.findings {
        let _ = writeln!(
            out,
            "{}[{}]: {}",
            style.severity(finding.severity),
            finding.id,
            style.bold(&finding.title)
        );
        for line in finding.detail.lines() {
            let _ = writeln!(out, "  {line}");
        }
        let _ = writeln!(out, "  {} {}", style.dim("why:"), finding.why);
        for fix in &finding.fixes {
            let _ = writeln!(out, "  {} {}", style.paint("32", "fix:"), fix.description);
            for command in &fix.commands {
                let _ = writeln!(out, "      $ {command}");
            }
        }
        if !finding.sources.is_empty() {
            let _ = writeln!(
                out,
                "  {}",
                style.dim(&format!("source: {}", finding.sources.join("; ")))
            );
        }
        let _ = writeln!(
            out,
            "  {}",
            style.dim(&format!("more: tpulint doctor --explain {}", finding.id))
        );
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "{} {} ({} error{}, {} warning{}, {} info)",
        style.bold("verdict:"),
        style.verdict(report.verdict),
        report.counts.error,
        plural(report.counts.error),
        report.counts.warning,
        plural(report.counts.warning),
        report.counts.info,
    );
    out
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Label/value lines shared by the text and Markdown renderings.
fn summary_lines(report: &Report) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    match &report.interpreter {
        Some(interpreter) => {
            let mut value = format!("{} ({})", interpreter.path, interpreter.source.describe());
            if !interpreter.version.is_empty() {
                let _ = write!(
                    value,
                    ", Python {}{}",
                    interpreter.version,
                    if interpreter.virtualenv {
                        ", virtualenv"
                    } else {
                        ""
                    }
                );
            }
            lines.push(("interpreter", value));
        }
        None => lines.push(("interpreter", "none found".to_string())),
    }
    let packages: Vec<String> = report
        .distributions
        .iter()
        .map(|dist| {
            let mut notes: Vec<String> = Vec::new();
            if let Some(origin) = dist.origin {
                notes.push(origin_name(origin).to_string());
            }
            if let Some(build) = &dist.build
                && *build != crate::compat::TorchTpuBuild::Other
            {
                notes.push(build.describe());
            }
            if notes.is_empty() {
                format!("{} {}", dist.name, dist.version)
            } else {
                format!("{} {} ({})", dist.name, dist.version, notes.join(", "))
            }
        })
        .collect();
    if report.interpreter.is_some() {
        lines.push((
            "packages",
            if packages.is_empty() {
                "none of torch, torch_xla, torch_tpu, libtpu, jax".to_string()
            } else {
                packages.join(", ")
            },
        ));
    }
    let imports: Vec<String> = report
        .imports
        .iter()
        .filter(|fact| fact.status != "not_installed")
        .map(|fact| match fact.seconds {
            Some(seconds) if fact.status == "ok" => format!("{} ok ({seconds:.1} s)", fact.module),
            _ => format!("{} {}", fact.module, fact.status.replace('_', " ")),
        })
        .collect();
    if !imports.is_empty() {
        lines.push(("imports", imports.join(", ")));
    }
    if !report.environment.is_empty() {
        let env: Vec<String> = report
            .environment
            .iter()
            .filter(|(name, _)| name.as_str() != "VIRTUAL_ENV")
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        if !env.is_empty() {
            lines.push(("environment", env.join(" ")));
        }
    }
    let devices = &report.devices;
    let mut device_text = if devices.nodes.is_empty() {
        "no /dev/accel* or /dev/vfio/<N>".to_string()
    } else {
        devices
            .nodes
            .iter()
            .map(|node| node.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !devices.pci_chips.is_empty() {
        let _ = write!(
            device_text,
            "; {} TPU {} chip(s) on PCI",
            devices.pci_chips.len(),
            devices.pci_chips[0].generation
        );
    }
    lines.push(("tpu devices", device_text));
    for allocation in &report.allocation {
        let device = match (&allocation.device, &allocation.hardware) {
            (Some(device), Some(hardware)) => format!("{device} ({hardware})"),
            (Some(device), None) => device.clone(),
            (None, _) => "?".to_string(),
        };
        lines.push((
            "allocation",
            format!(
                "{} on {device}: {}",
                allocation.backend,
                allocation.status.replace('_', " ")
            ),
        ));
    }
    lines
}

fn origin_name(origin: crate::report::Origin) -> &'static str {
    match origin {
        crate::report::Origin::Google => "Google TorchTPU",
        crate::report::Origin::Sophgo => "Sophgo",
        crate::report::Origin::Unknown => "origin unknown",
    }
}

fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    let icon = match report.verdict {
        Verdict::Ready => "✅",
        Verdict::Degraded => "⚠️",
        Verdict::NotReady => "❌",
    };
    let _ = writeln!(
        out,
        "# TPU environment: {icon} {}\n\n{} error{}, {} warning{}, {} info.\n",
        report.verdict.as_str(),
        report.counts.error,
        plural(report.counts.error),
        report.counts.warning,
        plural(report.counts.warning),
        report.counts.info
    );
    out.push_str("| | |\n|---|---|\n");
    for (label, value) in summary_lines(report) {
        let _ = writeln!(out, "| {label} | {} |", escape_cell(&value));
    }
    out.push('\n');
    for finding in &report.findings {
        markdown_finding(&mut out, finding);
    }
    let _ = writeln!(
        out,
        "<sub>tpulint doctor · compatibility table {}</sub>",
        report.compatibility_revision
    );
    out
}

fn markdown_finding(out: &mut String, finding: &Finding) {
    // The id links to the finding's page in docs/doctor.md.
    let _ = writeln!(
        out,
        "## {} [`{}`]({}): {}\n",
        match finding.severity {
            Severity::Error => "❌ Error",
            Severity::Warning => "⚠️ Warning",
            Severity::Info => "ℹ️ Info",
        },
        finding.id,
        finding.url,
        finding.title
    );
    let detail = finding.detail.trim();
    if detail.contains('\n') {
        let (first, rest) = detail.split_once('\n').unwrap_or((detail, ""));
        let _ = writeln!(out, "{first}\n\n```text\n{rest}\n```\n");
    } else {
        let _ = writeln!(out, "{detail}\n");
    }
    let _ = writeln!(out, "**Why it matters:** {}\n", finding.why);
    for fix in &finding.fixes {
        let _ = writeln!(out, "**Fix:** {}\n", fix.description);
        if !fix.commands.is_empty() {
            let _ = writeln!(out, "```sh\n{}\n```\n", fix.commands.join("\n"));
        }
    }
    if !finding.sources.is_empty() {
        let _ = writeln!(out, "<sub>Source: {}</sub>\n", finding.sources.join("; "));
    }
}

fn escape_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
