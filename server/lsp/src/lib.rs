//! The tpulint language server: `tpulint server` speaks LSP over stdio.
//!
//! Architecture invariant: this is the only crate that knows JSON-RPC, the transport and the async
//! runtime. The protocol's data (documents, code actions, hover, position conversions) comes from
//! the sans-IO `tpulint_ide`, re-exported here; positions are converted between the client's
//! encoding and byte offsets only in [`to_proto`] and [`from_proto`].
//!
//! Ordering rule: document changes are applied synchronously, before a handler's first `.await`;
//! analysis runs on snapshots off the message loop and stale results are dropped (see
//! [`session`]).

pub mod backend_action;
// The protocol data the server shares with every editor front end.
pub use tpulint_ide::server::settings;
pub use tpulint_ide::{actions, document, encoding, from_proto, to_proto};
pub mod commands;
pub mod index;
pub mod project;
pub mod runtime;
pub mod scheduler;
pub mod server;
pub mod session;
pub mod transport;

use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::{LspService, Server as Transport};

pub use server::Server;

/// Serves one client over `input`/`output` until it sends `exit` or closes the stream.
/// Malformed messages are answered with JSON-RPC errors without ending the session.
pub async fn serve<I, O>(input: I, output: O)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin,
{
    transport::serve_framed(input, output, |server_input, server_output| {
        tokio::spawn(async move {
            let (service, socket) = LspService::new(Server::new);
            Transport::new(server_input, server_output, socket)
                .serve(service)
                .await;
        })
    })
    .await;
}

/// Runs the server on stdin/stdout in a multi-threaded runtime (analyses use its blocking pool).
///
/// Replaces the process's panic hook: a panic in a rule is caught around the analysis and the
/// server keeps serving, so the hook only notes it on stderr (stdout carries the protocol).
pub fn run_stdio() -> std::io::Result<()> {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("tpulint server: caught a panic (the server keeps running): {info}");
    }));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(serve(tokio::io::stdin(), tokio::io::stdout()));
    // Tokio reads stdin on a blocking thread that only returns when the client closes the pipe;
    // waiting for it would keep the process alive after `exit`. Analyses still running are
    // abandoned with the process.
    runtime.shutdown_background();
    Ok(())
}
