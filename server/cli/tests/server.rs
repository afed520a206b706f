//! `tpulint server` as editors start it: with the `--stdio` flag language clients append.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

fn send(stdin: &mut impl Write, body: &str) {
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
    stdin.flush().expect("flush");
}

/// Reads one Content-Length framed message.
fn receive(stdout: &mut BufReader<impl Read>) -> String {
    let mut length = 0;
    loop {
        let mut header = String::new();
        assert!(
            stdout.read_line(&mut header).expect("read") > 0,
            "server closed stdout"
        );
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some(value) = header.strip_prefix("Content-Length: ") {
            length = value.parse().expect("length");
        }
    }
    let mut body = vec![0; length];
    stdout.read_exact(&mut body).expect("body");
    String::from_utf8(body).expect("utf-8")
}

#[test]
fn server_accepts_the_stdio_flag_and_answers_initialize() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tpulint"))
        .args(["server", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("tpulint server starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#,
    );
    let response = receive(&mut stdout);
    assert!(
        response.contains("\"capabilities\""),
        "no initialize result: {response}"
    );
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
    );
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#,
    );
    loop {
        if receive(&mut stdout).contains("\"id\":2") {
            break;
        }
    }
    send(&mut stdin, r#"{"jsonrpc":"2.0","method":"exit"}"#);
    let status = child.wait().expect("server exits after `exit`");
    assert!(status.success(), "server exited with {status}");
}
