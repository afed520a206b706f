//! Renders diagnostics: the human `text` format (source excerpt with carets, like ruff), `concise`,
//! `json` and `json-lines` (ruff's schema), `github` (workflow annotations), `gitlab` (Code
//! Quality), `junit` (test reports), `sarif` (code scanning), summaries and statistics, and fix
//! diffs. Shared by the CLI, the snapshot tests and the WebAssembly build.

pub mod github;
pub mod gitlab;
pub mod json;
pub mod junit;
pub mod location;
pub mod sarif;
pub mod summary;
pub mod text;

pub use location::{Location, SourceFile};
