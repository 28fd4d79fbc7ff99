//! WebSocket frames an attacker sends, against the real gateway process: frames announcing more
//! than the limit are refused at their header (before the payload is read, so the gateway's memory
//! does not move), and frames that break RFC 6455 close with its codes, each after an `error` frame.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use support::raw::{self, CLOSE, CONTINUATION, MASK, PING, TEXT};
use support::*;
use tokio::io::AsyncWriteExt;
use vestibule_actors::protocol::PROTOCOL_VERSION;

const MIB: u64 = 1024 * 1024;

fn hello() -> String {
    json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test" }).to_string()
}

/// The error frame and close code the gateway ends with.
fn ending(code: Option<u16>, frames: &[Value]) -> (Option<u16>, Option<&str>) {
    (code, frames.last().and_then(|f| f["code"].as_str()))
}

#[tokio::test]
async fn a_header_announcing_a_gibibyte_is_refused_before_its_payload() {
    let gateway = Gateway::start(CONFIG);
    // A session that must keep working throughout.
    let mut bystander = Client::create(&gateway, json!({})).await;
    let rss_before = gateway.rss_bytes();
    let mut stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    // The header and the payload's first bytes, then nothing: the rest of the gibibyte never comes,
    // so an answer at all (read_until_close fails after 15 s without one, far less than the 45 s
    // heartbeat) proves the refusal was made at the header, whatever the machine's speed.
    stream.write_all(&raw::frame_header(true, 0, TEXT, 1 << 30, Some(MASK))).await.unwrap();
    stream.write_all(&raw::masked(&[b'x'; 64])).await.unwrap();
    let (code, frames) = raw::read_until_close(&mut stream).await;
    assert_eq!(ending(code, &frames), (Some(1009), Some("frame_too_large")), "{frames:?}");
    let rss_after = gateway.rss_bytes();
    assert!(rss_after < rss_before + 16 * MIB, "RSS grew from {rss_before} to {rss_after}");
    assert_eq!(bystander.command(show_toast("still here")).await["status"], "accepted");
}

#[tokio::test]
async fn a_header_announcing_2_pow_63_minus_1_bytes_then_silence_is_refused_at_once() {
    let gateway = Gateway::start(CONFIG);
    let mut stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    stream.write_all(&raw::frame_header(true, 0, TEXT, (1 << 63) - 1, Some(MASK))).await.unwrap();
    // Nothing more is sent: the answer cannot wait for the payload (or for the heartbeat).
    let (code, frames) = raw::read_until_close(&mut stream).await;
    assert_eq!(ending(code, &frames), (Some(1009), Some("frame_too_large")), "{frames:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_200_mb_frames_before_any_hello_do_not_move_the_gateway_memory() {
    let gateway = Gateway::start(CONFIG);
    let rss_before = gateway.rss_bytes();
    let mut attackers = Vec::new();
    for _ in 0..8 {
        let stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
        attackers.push(tokio::spawn(async move {
            let (mut reader, mut writer) = stream.into_split();
            let closed = Arc::new(AtomicBool::new(false));
            let flood = {
                let closed = closed.clone();
                tokio::spawn(async move {
                    let _ = writer.write_all(&raw::frame_header(true, 0, TEXT, 200_000_000, Some(MASK))).await;
                    let chunk = vec![b'x'; 64 * 1024];
                    let mut sent = 0u64;
                    // As fast as the socket takes it, up to 64 MiB, until the gateway has answered.
                    while !closed.load(Ordering::Acquire) && sent < 64 * MIB {
                        if writer.write_all(&chunk).await.is_err() {
                            break;
                        }
                        sent += chunk.len() as u64;
                    }
                    sent
                })
            };
            let (code, frames) = raw::read_until_close(&mut reader).await;
            closed.store(true, Ordering::Release);
            // The flood stops once the gateway resets the socket.
            let sent = tokio::time::timeout(Duration::from_secs(30), flood).await.expect("the flood stops").unwrap();
            (code, frames, sent)
        }));
    }
    for attacker in attackers {
        let (code, frames, sent) = attacker.await.unwrap();
        assert_eq!(ending(code, &frames), (Some(1009), Some("frame_too_large")), "{frames:?}");
        // Socket buffers hold a few MiB; the gateway reading the payload would let all 64 MiB in.
        assert!(sent < 32 * MIB, "{sent} bytes went in before the gateway stopped reading");
    }
    let rss_after = gateway.rss_bytes();
    assert!(rss_after < rss_before + 32 * MIB, "RSS grew from {rss_before} to {rss_after}");
    let mut probe = Client::create(&gateway, json!({})).await;
    assert_eq!(probe.command(show_toast("fine")).await["status"], "accepted");
}

#[tokio::test]
async fn a_binary_or_oversized_first_frame_gets_an_error_frame_before_the_close() {
    let gateway = Gateway::start(CONFIG);
    let mut stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    stream.write_all(&raw::client_frame(true, raw::BINARY, hello().as_bytes())).await.unwrap();
    let (code, frames) = raw::read_until_close(&mut stream).await;
    assert_eq!(ending(code, &frames), (Some(4000), Some("bad_hello")), "{frames:?}");

    let mut stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    stream.write_all(&raw::text_frame(&"x".repeat(70 * 1024))).await.unwrap();
    let (code, frames) = raw::read_until_close(&mut stream).await;
    assert_eq!(ending(code, &frames), (Some(1009), Some("frame_too_large")), "{frames:?}");

    // The positive path on the same gateway: a text hello is welcomed.
    let mut stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    stream.write_all(&raw::text_frame(&hello())).await.unwrap();
    let (_, welcome) = raw::read_frame(&mut stream).await.unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&welcome).unwrap()["type"], "welcome");
}

/// Opens a session over a raw socket and returns the socket, past the welcome.
async fn attached(gateway: &Gateway) -> tokio::net::TcpStream {
    let mut stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    stream.write_all(&raw::text_frame(&hello())).await.unwrap();
    let (opcode, welcome) = raw::read_frame(&mut stream).await.unwrap();
    assert_eq!((opcode, serde_json::from_slice::<Value>(&welcome).unwrap()["type"].clone()), (TEXT, json!("welcome")));
    stream
}

#[tokio::test]
async fn rfc_6455_violations_close_with_1007_or_1002() {
    let gateway = Gateway::start(CONFIG);
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("invalid UTF-8 in a text frame", raw::client_frame(true, TEXT, &[0x7b, 0xff, 0xfe, 0x7d]), 1007),
        (
            "an unmasked frame",
            {
                let mut f = raw::frame_header(true, 0, TEXT, 2, None);
                f.extend_from_slice(b"{}");
                f
            },
            1002,
        ),
        ("a reserved opcode", raw::client_frame(true, 0x3, b"{}"), 1002),
        (
            "a reserved bit",
            {
                let mut f = raw::frame_header(true, 0b100, TEXT, 2, Some(MASK));
                f.extend_from_slice(&raw::masked(b"{}"));
                f
            },
            1002,
        ),
        ("a ping over 125 bytes", raw::client_frame(true, PING, &[0u8; 126]), 1002),
        ("a fragmented ping", raw::client_frame(false, PING, b"p"), 1002),
        ("a continuation without a start", raw::client_frame(true, CONTINUATION, b"{}"), 1002),
    ];
    for (case, frame, expected) in cases {
        let mut stream = attached(&gateway).await;
        stream.write_all(&frame).await.unwrap();
        let (code, frames) = raw::read_until_close(&mut stream).await;
        assert_eq!(ending(code, &frames), (Some(expected), Some("malformed_message")), "{case}: {frames:?}");
    }
    // Before a hello, too.
    let mut stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    stream.write_all(&raw::client_frame(true, TEXT, &[0xc3, 0x28])).await.unwrap();
    let (code, _) = raw::read_until_close(&mut stream).await;
    assert_eq!(code, Some(1007));
}

#[tokio::test]
async fn a_message_in_fragments_is_one_message_and_its_size_is_the_sum_of_its_fragments() {
    let gateway = Gateway::start(CONFIG);
    let hello = hello();
    let (first, second) = hello.split_at(10);
    let mut stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    stream.write_all(&raw::client_frame(false, TEXT, first.as_bytes())).await.unwrap();
    // A ping may come between the fragments of a message (RFC 6455 5.4).
    stream.write_all(&raw::client_frame(true, PING, b"between")).await.unwrap();
    stream.write_all(&raw::client_frame(true, CONTINUATION, second.as_bytes())).await.unwrap();
    let (opcode, pong) = raw::read_frame(&mut stream).await.unwrap();
    assert_eq!((opcode, pong.as_slice()), (raw::PONG, b"between".as_slice()));
    let (_, welcome) = raw::read_frame(&mut stream).await.unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&welcome).unwrap()["type"], "welcome");

    let mut stream = attached(&gateway).await;
    let part = "x".repeat(40 * 1024);
    stream.write_all(&raw::client_frame(false, TEXT, part.as_bytes())).await.unwrap();
    stream.write_all(&raw::client_frame(true, CONTINUATION, part.as_bytes())).await.unwrap();
    let (code, frames) = raw::read_until_close(&mut stream).await;
    assert_eq!(ending(code, &frames), (Some(1009), Some("frame_too_large")), "{frames:?}");
}

#[tokio::test]
async fn fragments_over_the_limit_are_refused_at_the_header_of_the_fragment_that_crosses_it() {
    let gateway = Gateway::start(CONFIG);
    // Under the limit in fragments, near it: read as one message (answered, not closed).
    let mut stream = attached(&gateway).await;
    let ping = json!({ "type": "ping", "nonce": "n".repeat(60 * 1024) }).to_string();
    let (first, second) = ping.as_bytes().split_at(30 * 1024);
    stream.write_all(&raw::client_frame(false, TEXT, first)).await.unwrap();
    stream.write_all(&raw::client_frame(true, CONTINUATION, second)).await.unwrap();
    let (opcode, _) = raw::read_frame(&mut stream).await.unwrap();
    assert_eq!(opcode, TEXT, "a message under the limit in fragments is answered");

    // Over it: the continuation's header announces what takes the message past 64 KiB, and its
    // payload never comes. The answer cannot wait for it (or for the heartbeat, 45 s).
    let part = "x".repeat(40 * 1024);
    for before_the_hello in [false, true] {
        let mut stream = if before_the_hello { raw::upgrade(&gateway.addr, "test", ORIGIN).await } else { attached(&gateway).await };
        stream.write_all(&raw::client_frame(false, TEXT, part.as_bytes())).await.unwrap();
        stream.write_all(&raw::frame_header(true, 0, CONTINUATION, part.len() as u64, Some(MASK))).await.unwrap();
        let (code, frames) = raw::read_until_close(&mut stream).await;
        assert_eq!(ending(code, &frames), (Some(1009), Some("frame_too_large")), "before the hello: {before_the_hello}: {frames:?}");
    }
}

#[tokio::test]
async fn a_client_close_is_answered_with_the_same_code() {
    let gateway = Gateway::start(CONFIG);
    let mut stream = attached(&gateway).await;
    stream.write_all(&raw::client_frame(true, CLOSE, &1000u16.to_be_bytes())).await.unwrap();
    let (code, frames) = raw::read_until_close(&mut stream).await;
    assert_eq!((code, frames.len()), (Some(1000), 0));
}
