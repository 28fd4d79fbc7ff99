//! The WebSocket codec's configuration and what each item read from it means to the connection.
//!
//! Nothing here depends on the rest of the gateway, so that the frame-decoding fuzz target
//! (`tools/fuzz/fuzz_targets/ws_frame.rs`) runs exactly this code over arbitrary bytes.

use tokio_tungstenite::tungstenite::error::ProtocolError;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::Utf8Bytes;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// Bytes tungstenite reads from the socket at a time, and its read buffer's resident size for an
/// idle connection. Client frames are small (commands, acks); a larger frame is read into room
/// reserved for that frame alone.
pub const READ_CHUNK: usize = 512;

/// The configuration of every WebSocket: messages are limited at the frame header (tungstenite
/// refuses a frame whose header announces more than `max_frame_size` before it reads the payload,
/// and fragments adding up to more than `max_message_size`), the read buffer is small (it is
/// allocated per connection), and frames are written as they are sent.
pub fn websocket_config(max_frame_bytes: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_CHUNK)
        .write_buffer_size(0)
        .max_frame_size(Some(max_frame_bytes))
        .max_message_size(Some(max_frame_bytes))
}

/// The header of an unmasked, final text frame carrying `len` bytes (RFC 6455 5.2), as a server
/// sends it: the first `n` bytes of the array.
///
/// The connection writes text frames itself, header and payload in one vectored write straight
/// from the shared frame text: through tungstenite, every frame would first be copied into its
/// write buffer, which keeps the capacity of the largest frame ever sent (the welcome with the
/// whole state) for the connection's life. Control frames (pings, pongs, close) still go through
/// tungstenite; they are at most 127 bytes.
pub fn text_frame_header(len: usize) -> ([u8; 10], usize) {
    let mut header = [0u8; 10];
    header[0] = 0x81; // FIN, opcode 1 (text)
    let n = if len < 126 {
        header[1] = len as u8;
        2
    } else if len <= u16::MAX as usize {
        header[1] = 126;
        header[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        4
    } else {
        header[1] = 127;
        header[2..10].copy_from_slice(&(len as u64).to_be_bytes());
        10
    };
    (header, n)
}

/// What the socket produced.
#[derive(Debug)]
pub enum Incoming {
    Text(Utf8Bytes),
    Binary,
    /// A ping (tungstenite answers it) or a pong: liveness only.
    Control,
    Gone,
    /// A frame whose header announces more than the limit (its payload is not read), or fragments
    /// adding up to more (close with 1009).
    TooLarge,
    /// A text message that is not UTF-8 (RFC 6455 8.1: close with 1007).
    InvalidUtf8,
    /// Another RFC 6455 violation: unmasked frame, unknown opcode, reserved bits, bad control frame
    /// or fragmentation (close with 1002).
    Violation(String),
}

/// The meaning of the socket's next item (`None`: the stream ended).
pub fn classify(item: Option<Result<Message, WsError>>) -> Incoming {
    match item {
        None => Incoming::Gone,
        Some(Ok(Message::Text(text))) => Incoming::Text(text),
        Some(Ok(Message::Binary(_))) => Incoming::Binary,
        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => Incoming::Control,
        Some(Ok(Message::Close(_))) => Incoming::Gone,
        Some(Err(WsError::Capacity(_))) => Incoming::TooLarge,
        Some(Err(WsError::Utf8(_))) => Incoming::InvalidUtf8,
        Some(Err(WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake))) => Incoming::Gone,
        Some(Err(WsError::Protocol(violation))) => Incoming::Violation(violation.to_string()),
        Some(Err(_)) => Incoming::Gone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

    #[test]
    fn a_text_frame_header_is_the_one_tungstenite_writes() {
        for len in [0, 1, 125, 126, 127, 1000, 65535, 65536, 70000] {
            let payload = vec![b'a'; len];
            let mut expected = Vec::new();
            Frame::message(payload.clone(), OpCode::Data(Data::Text), true).format(&mut expected).unwrap();
            let (header, n) = text_frame_header(len);
            let mut ours = header[..n].to_vec();
            ours.extend_from_slice(&payload);
            assert_eq!(ours, expected, "{len} bytes");
        }
    }
}
