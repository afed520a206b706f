//! The language server's transport and session: arbitrary bytes as the client's side of the
//! stream (seeded with well-formed JSON-RPC frames). The server must answer or skip each frame
//! and end when the stream closes, without panicking or hanging.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tokio::io::AsyncReadExt;

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let input = data.to_vec();
    runtime.block_on(async move {
        let (client_write, server_read) = tokio::io::duplex(1 << 16);
        let (server_write, mut client_read) = tokio::io::duplex(1 << 16);
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let mut client_write = client_write;
            let _ = client_write.write_all(&input).await;
            let _ = client_write.shutdown().await;
        });
        let reader = tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = client_read.read_to_end(&mut sink).await;
        });
        let served = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            tpulint_lsp::serve(server_read, server_write),
        )
        .await;
        assert!(
            served.is_ok(),
            "the server did not end after its input closed"
        );
        let _ = writer.await;
        reader.abort();
    });
});
