//! Renders diagnostics: the human `text` format (source excerpt with carets, like ruff), `concise`,
//! and fix diffs. Shared by the CLI, the snapshot tests and the WebAssembly build.

pub mod location;
pub mod text;

pub use location::{Location, SourceFile};
