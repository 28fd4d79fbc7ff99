//! Any bytes a client can send once its WebSocket is open: counted by the gateway's `MessageBudget`
//! and decoded by tungstenite with the gateway's own configuration (`gateway/src/ws/codec.rs`,
//! included as is), as `gateway/src/ws/budgeted.rs` puts them together, and classified as the
//! connection task does; the first text message read as a `hello` by the gateway's own reader
//! (`gateway/src/ws/hello.rs`), its options validated as a new session's are; later text messages
//! parsed as `ClientMessage`s. Nothing may panic, and:
//! - no text message is longer than the limit, whether it came in one frame or in fragments;
//! - the budget gives the same verdict fed the bytes at once or one by one;
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

/// The client's bytes to read, through the budget; what the server writes (pongs, close replies)
/// is dropped.
struct Wire<'a> {
    bytes: Cursor<&'a [u8]>,
    budget: codec::MessageBudget,
    refusing: bool,
    refused: bool,
}

fn over_budget() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, codec::OverBudget)
}

impl Read for Wire<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if std::mem::take(&mut self.refusing) {
            self.refused = true;
            return Err(over_budget());
        }
        let n = self.bytes.read(buf)?;
        if self.refused {
            return Ok(n);
        }
        match self.budget.observe(&buf[..n], MAX_FRAME_BYTES as u64) {
            Ok(()) => Ok(n),
            Err(0) => {
                self.refused = true;
                Err(over_budget())
            }
            Err(offset) => {
                self.refusing = true;
                Ok(offset)
            }
        }
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
    let whole = codec::MessageBudget::default().observe(data, MAX_FRAME_BYTES as u64).is_err();
    let mut budget = codec::MessageBudget::default();
    let byte_by_byte = data.iter().any(|b| budget.observe(&[*b], MAX_FRAME_BYTES as u64).is_err());
    assert_eq!(whole, byte_by_byte, "the budget's verdict depends on how the bytes were split");

    let wire = Wire { bytes: Cursor::new(data), budget: codec::MessageBudget::default(), refusing: false, refused: false };
    let mut ws = WebSocket::from_raw_socket(wire, Role::Server, Some(codec::websocket_config(MAX_FRAME_BYTES)));
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
