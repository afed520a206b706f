//! Renders diagnostics: the human `text` format (source excerpt with carets, like ruff), `concise`,
//! `json` (ruff's schema), `github` (workflow annotations), `sarif` (code scanning), summaries
//! and statistics, and fix diffs. Shared by the CLI, the snapshot tests and the WebAssembly build.

pub mod github;
pub mod json;
pub mod location;
pub mod sarif;
pub mod summary;
pub mod text;

pub use location::{Location, SourceFile};
