//! The `tpulint` binary: argument parsing and dispatch to one module per subcommand
//! (`check`, `rule`, `doctor`, `trace`, `version`; `server` runs the `tpulint_lsp` language server);
//! `check`'s companions (`show`, `add_noqa`, `watch`) have modules of their own; shared exit
//! codes and output helpers live in `output`.
//!
//! Exit codes: 0 clean, 1 findings at or above `--fail-on` (or, with `--diff`, changes to make;
//! with `--exit-non-zero-on-fix`, changes made), 2 usage, configuration, I/O or internal error.
//! A panic anywhere prints one `error:` line and exits 2.

mod add_noqa;
mod cache;
mod check;
mod doctor;
mod notebook;
mod output;
mod rule;
mod show;
mod trace;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::output::ExitStatus;

/// Finds the lines of PyTorch code that will be slow or broken on Google TPUs, and fixes them.
#[derive(Debug, Parser)]
#[command(name = "tpulint", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check Python files (and optionally fix them).
    Check(Box<check::CheckArgs>),
    /// Explain a rule, or list every rule.
    Rule(rule::RuleArgs),
    /// Check that a Python environment can run PyTorch on a TPU, and how to fix it.
    Doctor(doctor::DoctorArgs),
    /// Print tpulint's version.
    Version {
        /// Output format.
        #[arg(long, value_enum, default_value_t = rule::RuleFormat::Text)]
        output_format: rule::RuleFormat,
    },
    /// Run a program with PyTorch/XLA's and Dynamo's logs on (or read such logs) and report
    /// what the TPU did on which line: host syncs, CPU fallbacks, recompilations.
    Trace(trace::TraceArgs),
    /// Run the language server (LSP over stdin/stdout) for editors.
    Server {
        /// Accepted and ignored: language clients (vscode-languageclient with a stdio
        /// transport, among others) append `--stdio`; stdio is the only transport.
        #[arg(long, hide = true)]
        stdio: bool,
    },
}

fn main() -> ExitCode {
    install_panic_hook();
    let cli = Cli::parse();
    let status = match cli.command {
        Command::Check(args) => check::run(*args),
        Command::Rule(args) => rule::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Version { output_format } => {
            let version = env!("CARGO_PKG_VERSION");
            output::stdout(&match output_format {
                rule::RuleFormat::Text => format!("tpulint {version}\n"),
                rule::RuleFormat::Json => format!("{{\n  \"version\": \"{version}\"\n}}\n"),
            });
            ExitStatus::Success
        }
        // `trace run` exits with the traced command's own status.
        Command::Trace(args) => return trace::run(args),
        Command::Server { stdio: _ } => match tpulint_lsp::run_stdio() {
            Ok(()) => ExitStatus::Success,
            Err(error) => {
                eprintln!("error: cannot start the language server: {error}");
                ExitStatus::Error
            }
        },
    };
    status.into()
}

/// A bug must not print a backtrace at the user: one line, exit code 2.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
        eprintln!(
            "error: internal error: {message}{location} (this is a tpulint bug; please report it)"
        );
        std::process::exit(ExitStatus::Error.code());
    }));
}
