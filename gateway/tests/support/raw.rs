//! A WebSocket client that writes frames byte by byte, to send what a well-behaved client never
//! would (oversized headers, unmasked frames, bad opcodes, invalid UTF-8), and plain TCP helpers.
#![allow(dead_code)]

use std::net::IpAddr;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CONTINUATION: u8 = 0x0;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xA;

/// A TCP connection to `addr` from the loopback address `source` (127.0.0.x), so that one test can
/// act as several clients.
pub async fn connect_from(source: IpAddr, addr: &str) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind((source, 0).into())?;
    let stream = socket.connect(addr.parse().expect("an address")).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Reads up to the end of an HTTP response head, byte by byte (nothing after it is consumed). An
/// error if none comes within 15 s (a server out of descriptors leaves sockets unaccepted).
pub async fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let read = async {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte).await? == 0 {
                break;
            }
            head.push(byte[0]);
        }
        Ok(String::from_utf8_lossy(&head).into_owned())
    };
    tokio::time::timeout(std::time::Duration::from_secs(15), read)
        .await
        .unwrap_or_else(|_| Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no response head")))
}

pub fn status_of(head: &str) -> u16 {
    head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// Opens a WebSocket to `/ws?projectId=project` from `source`; panics unless the server switches.
pub async fn upgrade_from(source: IpAddr, addr: &str, project: &str, origin: &str) -> TcpStream {
    let (mut stream, head) = try_upgrade_from(source, addr, project, origin, "").await.expect("connected");
    assert_eq!(status_of(&head), 101, "{head}");
    stream.flush().await.unwrap();
    stream
}

pub async fn upgrade(addr: &str, project: &str, origin: &str) -> TcpStream {
    upgrade_from([127, 0, 0, 1].into(), addr, project, origin).await
}

/// Sends an upgrade request (with `extra_headers`, each ending in CRLF) and reads the answer's head.
pub async fn try_upgrade_from(
    source: IpAddr,
    addr: &str,
    project: &str,
    origin: &str,
    extra_headers: &str,
) -> std::io::Result<(TcpStream, String)> {
    let mut stream = connect_from(source, addr).await?;
    stream.write_all(upgrade_request(addr, project, origin, extra_headers).as_bytes()).await?;
    let head = read_head(&mut stream).await?;
    Ok((stream, head))
}

/// A WebSocket upgrade request for `/ws?projectId=project`.
pub fn upgrade_request(addr: &str, project: &str, origin: &str, extra_headers: &str) -> String {
    format!(
        "GET /ws?projectId={project} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n{extra_headers}\r\n"
    )
}

/// A frame header: FIN, the reserved bits (`rsv` in the low 3 bits), the opcode, the length and,
/// for client frames, the mask.
pub fn frame_header(fin: bool, rsv: u8, opcode: u8, len: u64, mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = vec![(u8::from(fin) << 7) | ((rsv & 0b111) << 4) | (opcode & 0x0f)];
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    if len < 126 {
        out.push(mask_bit | len as u8);
    } else if len <= u16::MAX as u64 {
        out.push(mask_bit | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&len.to_be_bytes());
    }
    if let Some(mask) = mask {
        out.extend_from_slice(&mask);
    }
    out
}

pub const MASK: [u8; 4] = [0x11, 0x22, 0x33, 0x44];

pub fn masked(payload: &[u8]) -> Vec<u8> {
    payload.iter().enumerate().map(|(i, b)| b ^ MASK[i % 4]).collect()
}

/// A complete client frame (masked, as RFC 6455 requires of clients).
pub fn client_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = frame_header(fin, 0, opcode, payload.len() as u64, Some(MASK));
    frame.extend_from_slice(&masked(payload));
    frame
}

pub fn text_frame(text: &str) -> Vec<u8> {
    client_frame(true, TEXT, text.as_bytes())
}

/// One frame from the server: (opcode, payload).
pub async fn read_frame(stream: &mut (impl AsyncRead + Unpin)) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    stream.read_exact(&mut head).await?;
    let opcode = head[0] & 0x0f;
    let len = match head[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            stream.read_exact(&mut b).await?;
            u16::from_be_bytes(b) as usize
        }
        127 => {
            let mut b = [0u8; 8];
            stream.read_exact(&mut b).await?;
            u64::from_be_bytes(b) as usize
        }
        n => n as usize,
    };
    assert_eq!(head[1] & 0x80, 0, "server frames are not masked");
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).await?;
    Ok((opcode, payload))
}

/// Reads frames until a close frame (its code) or the end of the stream (`None`); returns the JSON
/// text frames seen before. Panics if nothing closes within 15 s.
pub async fn read_until_close(stream: &mut (impl AsyncRead + Unpin)) -> (Option<u16>, Vec<Value>) {
    let mut frames = Vec::new();
    let read = async {
        loop {
            match read_frame(stream).await {
                Err(_) => return None,
                Ok((CLOSE, payload)) => return (payload.len() >= 2).then(|| u16::from_be_bytes([payload[0], payload[1]])),
                Ok((TEXT, payload)) => frames.push(serde_json::from_slice(&payload).expect("server text is JSON")),
                Ok(_) => {}
            }
        }
    };
    let code = tokio::time::timeout(std::time::Duration::from_secs(15), read).await.expect("the server closes in time");
    (code, frames)
}
