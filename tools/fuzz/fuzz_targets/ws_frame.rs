//! Any bytes a client can send once its WebSocket is open: decoded by tungstenite with the gateway's
//! own configuration (`gateway/src/ws/codec.rs`, included as is) and classified as the connection
//! task does; the first text message read as a `hello` by the gateway's own reader
//! (`gateway/src/ws/hello.rs`), its options validated as a new session's are; later text messages
//! parsed as `ClientMessage`s. Nothing may panic, and:
//! - no text message is longer than the limit, whether it came in one frame or in fragments;
//! - the reader that reads `options` apart accepts every hello the protocol type accepts, with the
//!   same fields (it may only refuse more precisely, never differently).

#![no_main]

use std::io::{Cursor, Read, Write};

use libfuzzer_sys::fuzz_target;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocket};
use vestibule_actors::protocol::ClientMessage;

#[allow(dead_code)]
#[path = "../../../gateway/src/ws/codec.rs"]
mod codec;
#[allow(dead_code)]
#[path = "../../../gateway/src/ws/hello.rs"]
mod hello;

/// Small, so that short inputs reach the limit, alone and in fragments.
const MAX_FRAME_BYTES: usize = 1024;

/// The client's bytes to read; what the server writes (pongs, close replies) is dropped.
struct Wire<'a>(Cursor<&'a [u8]>);

impl Read for Wire<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Wire<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn check_hello(text: &str) {
    let read = hello::parse_hello(text);
    if let Ok(hello) = &read
        && let Some(options) = &hello.options
    {
        let _ = options.validate();
    }
    if let Err(hello::HelloError::Options(e)) = &read {
        assert!(!e.field.is_empty(), "an options refusal names a field");
    }
    if let Ok(ClientMessage::Hello { protocol, project_id, session_id, resume_token, last_seq, options }) =
        serde_json::from_str::<ClientMessage>(text)
    {
        let hello = read.expect("a hello the protocol type accepts is accepted");
        assert_eq!(
            (hello.protocol, &hello.project_id, &hello.session_id, &hello.resume_token),
            (protocol, &project_id, &session_id, &resume_token)
        );
        assert_eq!(hello.last_seq, last_seq.filter(|&seq| seq > 0), "lastSeq 0 means no state");
        assert_eq!(hello.options.is_some(), options.is_some());
    }
}

fuzz_target!(|data: &[u8]| {
    let mut ws = WebSocket::from_raw_socket(Wire(Cursor::new(data)), Role::Server, Some(codec::websocket_config(MAX_FRAME_BYTES)));
    let mut first = true;
    // Every item but the last (an error or the end of the input) is a message; at most one per byte.
    for _ in 0..=data.len() {
        match codec::classify(Some(ws.read())) {
            codec::Incoming::Text(text) => {
                assert!(text.len() <= MAX_FRAME_BYTES, "a {}-byte message passed a {MAX_FRAME_BYTES}-byte limit", text.len());
                if std::mem::take(&mut first) {
                    check_hello(&text);
                } else {
                    let _ = serde_json::from_str::<ClientMessage>(&text);
                }
            }
            // A binary first frame closes the connection (bad_hello); later, it is refused and skipped.
            codec::Incoming::Binary if first => return,
            codec::Incoming::Binary | codec::Incoming::Control => {}
            codec::Incoming::Gone | codec::Incoming::TooLarge | codec::Incoming::InvalidUtf8 | codec::Incoming::Violation(_) => return,
        }
    }
});
