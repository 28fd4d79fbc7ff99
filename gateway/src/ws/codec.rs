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

/// Bytes of control frames (pongs, our pings, the close frame: at most 127 bytes each) tungstenite
/// may hold unwritten. It answers every ping with a pong queued behind the ones not written yet, so
/// a client that sends pings and does not read made the gateway keep one pong per ping without
/// bound (a gigabyte in 8 s on loopback). Past this, it keeps only the pong to the latest ping
/// (RFC 6455 5.5.3 allows that) and the heartbeat's ping fails, which ends the connection.
pub const CONTROL_BACKLOG: usize = 1024;

/// The configuration of every WebSocket: messages are limited at the frame header (tungstenite
/// refuses a frame whose header announces more than `max_frame_size` before it reads the payload;
/// fragments adding up to more than `max_message_size` it refuses only once it has read the one
/// that crosses the limit, which [`MessageBudget`] refuses at its header first), the read buffer is
/// small (it is allocated per connection), frames are written as they are sent, and what a client
/// that does not read leaves unwritten is bounded ([`CONTROL_BACKLOG`]).
pub fn websocket_config(max_frame_bytes: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_CHUNK)
        .write_buffer_size(0)
        .max_write_buffer_size(CONTROL_BACKLOG)
        .max_frame_size(Some(max_frame_bytes))
        .max_message_size(Some(max_frame_bytes))
}

/// The read error a [`MessageBudget`] refusal surfaces as, through tungstenite.
#[derive(Debug)]
pub struct OverBudget;

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a message over the limit, refused at its frame header")
    }
}

impl std::error::Error for OverBudget {}

/// Follows the frames a client sends, header by header, and says when the one just announced would
/// take its message over the limit: tungstenite checks a single frame at its header, but fragments
/// only once the one that crosses the limit has been read whole. The payloads are skipped, not
/// kept; everything else (masks, opcodes, the rules of RFC 6455) is tungstenite's to check, and a
/// stream that breaks them is refused by tungstenite whatever this makes of it.
#[derive(Debug, Clone, Default)]
pub struct MessageBudget {
    /// Header bytes read so far of the frame being announced (at most 14: 2, 8 of length, 4 of mask).
    header: [u8; 14],
    header_len: u8,
    /// Payload bytes of the current frame still to skip.
    payload_left: u64,
    /// Bytes of the data message being sent in fragments so far.
    message: u64,
}

impl MessageBudget {
    /// Reads `bytes`, the next ones on the wire. `Err(offset)`: the frame whose header starts at
    /// `offset` in `bytes` takes its message over `max` (a frame from an earlier call: 0).
    pub fn observe(&mut self, bytes: &[u8], max: u64) -> Result<(), usize> {
        let mut at = 0;
        while at < bytes.len() {
            if self.payload_left > 0 {
                let skip = self.payload_left.min((bytes.len() - at) as u64);
                self.payload_left -= skip;
                at += skip as usize;
                continue;
            }
            let header_start = at.saturating_sub(self.header_len as usize);
            self.header[self.header_len as usize] = bytes[at];
            self.header_len += 1;
            at += 1;
            let Some((opcode, fin, len)) = self.complete_header() else { continue };
            self.header_len = 0;
            self.payload_left = len;
            match opcode {
                // Control frames may come between fragments; they are not part of the message.
                0x8..=0xF => {}
                0x0 => self.message = self.message.saturating_add(len),
                _ => self.message = len,
            }
            if opcode < 0x8 {
                if self.message > max {
                    return Err(header_start);
                }
                if fin {
                    self.message = 0;
                }
            }
        }
        Ok(())
    }

    /// The opcode, FIN bit and payload length, once the header read so far is whole.
    fn complete_header(&self) -> Option<(u8, bool, u64)> {
        let h = &self.header[..self.header_len as usize];
        if h.len() < 2 {
            return None;
        }
        let (fin, opcode, masked, len7) = (h[0] & 0x80 != 0, h[0] & 0x0F, h[1] & 0x80 != 0, h[1] & 0x7F);
        let length_bytes = match len7 {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        let total = 2 + length_bytes + if masked { 4 } else { 0 };
        if h.len() < total {
            return None;
        }
        let len = match length_bytes {
            0 => len7 as u64,
            2 => u16::from_be_bytes([h[2], h[3]]) as u64,
            _ => u64::from_be_bytes(h[2..10].try_into().expect("eight bytes")),
        };
        Some((opcode, fin, len))
    }
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
        Some(Err(WsError::Io(e))) if e.get_ref().is_some_and(|inner| inner.is::<OverBudget>()) => Incoming::TooLarge,
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
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Control, Data, OpCode};

    /// A masked client frame: its header, mask and payload.
    fn client_frame(fin: bool, opcode: OpCode, payload: &[u8]) -> Vec<u8> {
        let mut frame = match opcode {
            OpCode::Control(Control::Ping) => Frame::ping(payload.to_vec()),
            _ => Frame::message(payload.to_vec(), opcode, fin),
        };
        frame.header_mut().mask = Some([1, 2, 3, 4]);
        let mut bytes = Vec::new();
        frame.format(&mut bytes).unwrap();
        bytes
    }

    fn fed_whole_and_byte_by_byte(bytes: &[u8], max: u64) -> (Result<(), usize>, bool) {
        let whole = MessageBudget::default().observe(bytes, max);
        let mut budget = MessageBudget::default();
        let refused_byte_by_byte = bytes.iter().any(|b| budget.observe(&[*b], max).is_err());
        (whole, refused_byte_by_byte)
    }

    #[test]
    fn given_fragments_within_the_limit_with_pings_between_then_nothing_is_refused() {
        let text = OpCode::Data(Data::Text);
        let mut wire = client_frame(false, text, &[b'a'; 500]);
        wire.extend(client_frame(true, OpCode::Control(Control::Ping), b"p"));
        wire.extend(client_frame(false, OpCode::Data(Data::Continue), &[b'b'; 300]));
        wire.extend(client_frame(true, OpCode::Data(Data::Continue), &[b'c'; 200]));
        // A new message starts from nothing.
        wire.extend(client_frame(true, text, &[b'd'; 1000]));
        assert_eq!(fed_whole_and_byte_by_byte(&wire, 1000), (Ok(()), false));
    }

    #[test]
    fn given_a_message_in_fragments_when_a_header_takes_it_over_the_limit_then_it_is_refused_at_that_header() {
        let text = OpCode::Data(Data::Text);
        let first = client_frame(false, text, &[b'a'; 70_000]);
        let mut wire = client_frame(false, text, &[b'a'; 600]);
        let crossing_at = wire.len();
        // Only the header of the crossing fragment (a 16-bit length, then the mask): no payload.
        wire.extend(&client_frame(true, OpCode::Data(Data::Continue), &[b'b'; 500])[..8]);
        assert_eq!(fed_whole_and_byte_by_byte(&wire, 1000), (Err(crossing_at), true));
        // A single frame over the limit, with a 64-bit length, is refused at its own header too.
        assert_eq!(fed_whole_and_byte_by_byte(&first[..14], 65_536), (Err(0), true));
    }

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
