//! What every tpulint front end needs beyond the engine, without I/O: the source kinds
//! (Python modules and Jupyter notebooks), the notebook model, one fix loop over both, and the
//! edits an editor offers (noqa, fix-all as a minimal edit, setting the project's backend).
//!
//! Architecture invariant: no I/O, no async runtime, no LSP transport; it builds for
//! `wasm32-unknown-unknown`. The CLI, the language server and the WebAssembly build share it.

pub mod config_edit;
pub mod edits;
pub mod fix;
pub mod notebook;
pub mod source_kind;

pub use fix::{FixedSource, fix, fix_cells, fix_cells_of};
pub use notebook::{Notebook, NotebookError};
pub use source_kind::{Module, SourceKind};
