//! The language server's protocol logic, sans-IO, shared by every host: the native server
//! (`tpulint server`, tower-lsp-server on tokio) and the browser's (the WebAssembly build in VS
//! Code for the web). What a host adds is I/O: transport, scheduling, cancellation, and files
//! (project configuration, runtime traces).
//!
//! - [`settings`]: the editor's settings, read leniently.
//! - [`capabilities`]: what the client can do and what the server advertises.
//! - [`analyze`], [`notebook_analysis`]: checking a snapshot of a text document or notebook.
//! - [`notebooks`]: the open notebooks and their cells.
//! - [`handlers`]: each request's answer, built from an analysis.
//! - [`session`]: a complete single-threaded server over these (the browser's), speaking
//!   JSON-RPC messages in and out.

pub mod analyze;
pub mod capabilities;
pub mod handlers;
pub mod json;
pub mod notebook_analysis;
pub mod notebooks;
pub mod read;
pub mod session;
pub mod settings;
pub mod uri_map;
