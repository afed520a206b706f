//! Framing between the client and tower-lsp-server that survives malformed input.
//!
//! tower-lsp-server answers a body that is not JSON (or not a JSON-RPC message) with an error,
//! but its reader then stops, which ends the session. This layer reads the client's frames
//! itself: well-formed messages are passed on, anything else is answered here with the proper
//! JSON-RPC error (-32700 parse error, -32600 invalid request) and the session goes on. The
//! server's own output is forwarded frame by frame, so the two sources never interleave bytes.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Largest header line accepted; longer ones are garbage.
const MAX_HEADER_LINE: usize = 8 * 1024;

/// Largest message body accepted (a 10 MB document is far below it). A larger `Content-Length`
/// is answered as an error and its bytes are skipped without being held in memory: allocating
/// the claimed length up front aborted the server on `Content-Length: 99999999999999999999`-like
/// headers (found by the `lsp_frames` fuzz target).
const MAX_BODY: usize = 256 * 1024 * 1024;

/// One frame read from a stream.
#[derive(Debug, PartialEq, Eq)]
enum Frame {
    Body(Vec<u8>),
    /// Headers without a usable `Content-Length`: the bytes are skipped.
    BadHeader,
    /// A `Content-Length` above [`MAX_BODY`]: the body was skipped.
    TooLarge,
    Eof,
}

async fn read_frame<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> std::io::Result<Frame> {
    let mut length: Option<usize> = None;
    let mut bad_header = false;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        let read = (&mut *reader)
            .take(MAX_HEADER_LINE as u64)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return Ok(Frame::Eof);
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            if saw_header {
                break;
            }
            // Blank lines between frames are tolerated.
            continue;
        }
        saw_header = true;
        match text.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(parsed) => length = Some(parsed),
                    Err(_) => bad_header = true,
                }
            }
            Some(_) => {}
            None => bad_header = true,
        }
    }
    match length {
        Some(length) if !bad_header && length > MAX_BODY => {
            let mut rest = (&mut *reader).take(length as u64);
            tokio::io::copy(&mut rest, &mut tokio::io::sink()).await?;
            Ok(Frame::TooLarge)
        }
        Some(length) if !bad_header => {
            // Read what arrives rather than allocating the claimed length first.
            let mut body = Vec::new();
            let read = (&mut *reader)
                .take(length as u64)
                .read_to_end(&mut body)
                .await?;
            if read < length {
                return Ok(Frame::Eof);
            }
            Ok(Frame::Body(body))
        }
        _ => Ok(Frame::BadHeader),
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

fn error_response(id: Value, code: i64, message: &str) -> Vec<u8> {
    let response = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    frame(response.to_string().as_bytes())
}

/// `None` when `body` is a message tower-lsp-server can decode; otherwise the error to send.
fn reject(body: &[u8]) -> Option<Vec<u8>> {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Some(error_response(
            Value::Null,
            -32700,
            "Parse error: the body is not JSON",
        ));
    };
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let id_ok = matches!(id, Value::Null | Value::Number(_) | Value::String(_));
    let well_formed = value.is_object()
        && value.get("jsonrpc") == Some(&json!("2.0"))
        && id_ok
        && match value.get("method") {
            Some(method) => method.is_string(),
            None => {
                value.get("id").is_some()
                    && (value.get("result").is_some() || value.get("error").is_some())
            }
        };
    if well_formed {
        None
    } else {
        let id = if id_ok { id } else { Value::Null };
        Some(error_response(
            id,
            -32600,
            "Invalid request: not a JSON-RPC 2.0 message",
        ))
    }
}

/// Serves `server` (which reads `server_input` and writes `server_output`) for a client on
/// `input`/`output`, until the server stops (after `exit`) or the client closes `input`.
pub async fn serve_framed<I, O, F>(input: I, output: O, server: F)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin,
    F: FnOnce(tokio::io::DuplexStream, tokio::io::DuplexStream) -> tokio::task::JoinHandle<()>,
{
    const PIPE: usize = 1 << 20;
    let (server_input, mut to_server) = tokio::io::duplex(PIPE);
    let (from_server, server_output) = tokio::io::duplex(PIPE);
    let (out_sender, mut out_receiver) = mpsc::unbounded_channel::<Vec<u8>>();

    let reader_sender = out_sender.clone();
    let reader = tokio::spawn(async move {
        let mut input = BufReader::new(input);
        loop {
            match read_frame(&mut input).await {
                Ok(Frame::Body(body)) => match reject(&body) {
                    None => {
                        if to_server.write_all(&frame(&body)).await.is_err() {
                            return;
                        }
                    }
                    Some(error) => {
                        let _ = reader_sender.send(error);
                    }
                },
                Ok(Frame::BadHeader) => {
                    let _ = reader_sender.send(error_response(
                        Value::Null,
                        -32700,
                        "Parse error: missing or invalid Content-Length header",
                    ));
                }
                Ok(Frame::TooLarge) => {
                    let _ = reader_sender.send(error_response(
                        Value::Null,
                        -32600,
                        "Invalid request: the message is larger than 256 MiB",
                    ));
                }
                // End of input (or a broken pipe): closing `to_server` tells the server.
                Ok(Frame::Eof) | Err(_) => return,
            }
        }
    });

    let forwarder = tokio::spawn(async move {
        let mut from_server = BufReader::new(from_server);
        while let Ok(Frame::Body(body)) = read_frame(&mut from_server).await {
            if out_sender.send(frame(&body)).is_err() {
                return;
            }
        }
    });

    let server = server(server_input, server_output);
    let writer = async move {
        let mut output = output;
        while let Some(bytes) = out_receiver.recv().await {
            if output.write_all(&bytes).await.is_err() || output.flush().await.is_err() {
                return;
            }
        }
    };
    let stopper = async move {
        let _ = server.await;
        // The server is done: stop reading the client; the forwarder ends with the server's output.
        reader.abort();
        let _ = forwarder.await;
    };
    tokio::join!(stopper, writer);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &[u8]) -> Vec<Frame> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let mut reader = BufReader::new(input);
            let mut frames = Vec::new();
            loop {
                let frame = read_frame(&mut reader).await.expect("in-memory read");
                let end = frame == Frame::Eof;
                frames.push(frame);
                if end {
                    return frames;
                }
            }
        })
    }

    /// Regression (fuzz target `lsp_frames`): a huge `Content-Length` used to be allocated
    /// up front — a capacity-overflow panic or an out-of-memory abort of the server.
    #[test]
    fn huge_or_truncated_content_lengths_do_not_allocate_or_panic() {
        let huge = b"Content-Length: 18446744073709551615\r\n\r\n{}";
        assert_eq!(read_all(huge), [Frame::TooLarge, Frame::Eof]);
        let too_large = format!("Content-Length: {}\r\n\r\nshort", MAX_BODY + 1);
        assert_eq!(
            read_all(too_large.as_bytes()),
            [Frame::TooLarge, Frame::Eof]
        );
        let truncated = b"Content-Length: 100\r\n\r\n{\"jsonrpc\"";
        assert_eq!(read_all(truncated), [Frame::Eof]);
        let fine = b"Content-Length: 2\r\n\r\n{}Content-Length: 2\r\n\r\n[]";
        assert_eq!(
            read_all(fine),
            [
                Frame::Body(b"{}".to_vec()),
                Frame::Body(b"[]".to_vec()),
                Frame::Eof
            ]
        );
    }

    #[test]
    fn rejects_what_tower_lsp_server_cannot_decode() {
        assert!(reject(br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#).is_none());
        assert!(reject(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).is_none());
        let parse_error = String::from_utf8(reject(b"{nope").unwrap()).unwrap();
        assert!(parse_error.contains("-32700"));
        let invalid =
            String::from_utf8(reject(br#"{"jsonrpc":"2.0","id":7,"method":5}"#).unwrap()).unwrap();
        assert!(invalid.contains("-32600") && invalid.contains("\"id\":7"));
        assert!(reject(b"[1,2]").is_some());
    }
}
