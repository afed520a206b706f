//! tpulint's runtime trace: what the TPU actually did, on the lines that did it.
//!
//! [`parse`] reads PyTorch/XLA's debug output, metrics, Dynamo's logs and the start-up hook's
//! dump into [`parse::Events`]; [`project::ProjectIndex`] holds the project's files with their
//! static findings and maps printed paths onto them; [`aggregate::build_trace`] turns events into
//! [`schema::TraceFile`] findings (codes in `tpulint_analyzer::runtime_codes`); [`agreement`] compares a trace with the
//! static findings; [`hook`] is the `sitecustomize` that `tpulint trace run` injects.
//!
//! No async runtime and no LSP here: the CLI and the language server share this crate.

pub mod aggregate;
pub mod agreement;
pub mod hook;
pub mod parse;
pub mod project;
pub mod schema;

pub use aggregate::{
    TraceContext, build_trace, current_line, diagnostics_for_text, still_applies, to_diagnostic,
};
pub use parse::{Events, parse, parse_into};
pub use project::{ProjectFile, ProjectIndex};
pub use schema::{RuntimeFinding, SCHEMA_VERSION, TRACE_PATH, TraceFile};
pub use tpulint_analyzer::runtime_codes::{RUNTIME_CODES, RuntimeCode, runtime_code};
