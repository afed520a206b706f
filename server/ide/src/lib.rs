//! What every tpulint front end needs beyond the engine, without I/O: the source kinds
//! (Python modules and Jupyter notebooks), the notebook model, one fix loop over both, the edits
//! an editor offers (noqa, fix-all as a minimal edit, setting the project's backend), and the
//! editor protocol's data: open documents with incremental edits ([`document`]), code actions
//! and hover ([`actions`]), position encodings and conversions ([`encoding`], [`to_proto`],
//! [`from_proto`]) over the pure `ls-types` crate.
//!
//! Architecture invariant: no I/O, no async runtime, no LSP transport; it builds for
//! `wasm32-unknown-unknown`. The CLI, the language server and the WebAssembly build share it.
//! Position encodings are converted only in `to_proto` and `from_proto`.

pub mod actions;
pub mod analysis;
pub mod config_edit;
pub mod document;
pub mod edits;
pub mod encoding;
pub mod fix;
pub mod from_proto;
pub mod notebook;
pub mod server;
pub mod source_kind;
pub mod to_proto;

pub use fix::{FixedSource, fix, fix_cells, fix_cells_of};
pub use notebook::{Notebook, NotebookError};
pub use source_kind::{Module, SourceKind};
