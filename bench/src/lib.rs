//! Support for the language-server benchmark (`benches/lsp_latency.rs`): realistic Python
//! documents built from the repository's own fixtures and examples, a small JSON-RPC client that
//! drives `tpulint server` over its stdio, and percentile statistics.
//!
//! Nothing third-party is committed: the generated documents come from `tests/fixtures` and
//! `examples`; a real file or corpus is read at bench time only when an environment variable
//! names it.

pub mod client;
pub mod documents;
pub mod stats;
