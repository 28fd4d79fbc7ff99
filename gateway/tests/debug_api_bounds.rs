//! The debug API's bounds (the 2026 store review, findings 4, 5 and 10), on the real gateway: a cap
//! on follow streams, their heartbeat, the end of a follower that takes nothing; state rebuilds off
//! the HTTP workers and capped; `since` before 1970 refused.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

const TOKEN: &str = "debug-token-0123456789";

fn auth() -> String {
    format!("Authorization: Bearer {TOKEN}\r\n")
}

/// Sends a GET (kept open: no `Connection: close`) and returns the socket, unread.
async fn send_get(gateway: &Gateway, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(&gateway.addr).await.unwrap();
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: {}\r\n{}\r\n", gateway.addr, auth()).as_bytes()).await.unwrap();
    stream
}

/// Reads from `stream` until `seen` holds `wanted`, or `deadline`; whether it did.
async fn read_until(stream: &mut TcpStream, seen: &mut String, wanted: &str, deadline: Instant) -> bool {
    while !seen.contains(wanted) {
        let mut buf = [0u8; 8192];
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            _ => return false,
        }
    }
    true
}

/// A follow request's status, read from its response head.
async fn follow_status(gateway: &Gateway, session: &str) -> (u16, TcpStream, String) {
    let mut stream = send_get(gateway, &format!("/debug/sessions/{session}/follow?from=1")).await;
    let mut seen = String::new();
    assert!(read_until(&mut stream, &mut seen, "\r\n\r\n", Instant::now() + Duration::from_secs(30)).await, "a response head: {seen}");
    let status = seen.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, stream, seen)
}

#[tokio::test]
async fn follow_streams_are_capped_send_heartbeats_and_free_their_place_when_the_follower_goes() {
    let gateway =
        Gateway::start(&format!("admin_token = \"{TOKEN}\"\n[limits]\ndebug_follows = 2\ndebug_follow_heartbeat = \"200ms\"\n{CONFIG}"));
    let mut client = Client::create(&gateway, json!({})).await;
    client.command(show_persistent_toast("followed")).await;
    let session = client.session_id.clone();

    let (status, mut first, mut seen) = follow_status(&gateway, &session).await;
    assert_eq!(status, 200, "{seen}");
    let (status, second, seen2) = follow_status(&gateway, &session).await;
    assert_eq!(status, 200, "{seen2}");
    // One more than `debug_follows`: refused with a JSON error, and the gateway still answers.
    let (status, mut third, mut seen3) = follow_status(&gateway, &session).await;
    assert_eq!(status, 429, "{seen3}");
    assert!(read_until(&mut third, &mut seen3, "}", Instant::now() + Duration::from_secs(30)).await, "{seen3}");
    let body = seen3.split_once("\r\n\r\n").unwrap().1;
    let refused: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    assert_eq!(refused["code"].as_str(), Some("busy"), "{body}");
    assert!(refused["message"].as_str().unwrap().contains("limits.debug_follows"), "{body}");
    assert_eq!(gateway.http_get("/healthz", None).await.0, 200);

    // The events, then a heartbeat comment once nothing more happens.
    let deadline = Instant::now() + Duration::from_secs(30);
    assert!(read_until(&mut first, &mut seen, "\"followed\"", deadline).await, "{seen}");
    assert!(read_until(&mut first, &mut seen, ": heartbeat\n\n", deadline).await, "a heartbeat on an idle stream: {seen}");

    // A follower that went away: the next heartbeat's write fails, and its place is free again.
    drop(second);
    let deadline = Instant::now() + Duration::from_secs(30);
    let (status, _third, seen) = loop {
        let (status, stream, seen) = follow_status(&gateway, &session).await;
        if status != 429 || Instant::now() > deadline {
            break (status, stream, seen);
        }
    };
    assert_eq!(status, 200, "the place of the closed follower is given to a new one: {seen}");

    // `since` before 1970 is refused, not wrapped around to a time in the far future.
    let (status, body) = gateway.http_get_with("/debug/sessions?since=1900-01-01T00:00:00Z", &auth()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("before 1970"), "{body}");
    let (status, body) = gateway.http_get_with("/debug/sessions?since=1970-01-01T00:00:00Z", &auth()).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&session), "{body}");
}

/// Events in the imported session: enough that folding them takes a while (about a second in a
/// debug build) and that their stream overfills a follower's socket buffers.
const BIG_SESSION_EVENTS: u64 = 60_000;

/// A data directory holding one session of [`BIG_SESSION_EVENTS`] events, imported with the CLI.
fn big_session(dir: &Path) -> (std::path::PathBuf, String) {
    let session = "0123456789abcdef0123456789abcdef";
    // Now: retention would expire a session whose last event is older than `idle_after`.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    let header = json!({ "format": "vestibule-session-log", "version": 1, "session": session, "project": "test",
        "createdMs": now, "events": BIG_SESSION_EVENTS, "emailsMasked": false });
    let mut text = format!("{header}\n");
    for seq in 1..=BIG_SESSION_EVENTS {
        let kind = if seq % 2 == 1 { "ModalOpened" } else { "ModalClosed" };
        text.push_str(&format!(
            "{{\"seq\":{seq},\"timeMs\":{now},\"type\":\"{kind}\",\"schemaVersion\":1,\"correlationId\":\"c{seq}\",\"payload\":{{}}}}\n"
        ));
    }
    let file = dir.join("big.jsonl");
    std::fs::write(&file, text).unwrap();
    let data = dir.join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_vestibule")).args(["import", "--data"]).arg(&data).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (data, session.to_string())
}

#[tokio::test]
async fn a_state_rebuild_runs_off_the_http_worker_and_rebuilds_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let (data, session) = big_session(dir.path());
    // One HTTP worker: a fold on it would hold every other request up.
    let config = format!(
        "admin_token = \"{TOKEN}\"\nworkers = 1\n[limits]\ndebug_state_folds = 1\ndebug_follows = 1\nwrite_timeout = \"1s\"\n{CONFIG}"
    );
    let gateway = Gateway::start_at(&data, &config, "127.0.0.1:0");

    // A rebuild of the whole session, left to run.
    let mut slow = send_get(&gateway, &format!("/debug/sessions/{session}/state")).await;
    let answered = |slow: &TcpStream| {
        let mut buf = [0u8; 1];
        !matches!(slow.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    };
    // While it runs, a second rebuild (even a short one) is refused: the probe that it runs.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(!answered(&slow), "the rebuild was answered before a second one was refused");
        let (status, body) = gateway.http_get_with(&format!("/debug/sessions/{session}/state?seq=1"), &auth()).await;
        if status == 429 {
            assert!(body.contains("\"busy\"") && body.contains("limits.debug_state_folds"), "{body}");
            break;
        }
        assert_eq!(status, 200, "{body}");
        assert!(Instant::now() < deadline, "no second rebuild was refused while the first ran");
    }
    // ... and the only HTTP worker still answers meanwhile.
    assert_eq!(gateway.http_get("/healthz", None).await.0, 200);
    let (status, body) = gateway.http_get_with(&format!("/debug/sessions/{session}/events?from=1&to=2"), &auth()).await;
    assert_eq!(status, 200, "{body}");
    assert!(!answered(&slow), "the rebuild was still running while /healthz and /events were answered");

    let mut response = String::new();
    tokio::time::timeout(Duration::from_secs(120), slow.read_to_string(&mut response)).await.ok();
    let mut seen = response;
    if !seen.contains("\"stateHash\"") {
        assert!(read_until(&mut slow, &mut seen, "\"stateHash\"", Instant::now() + Duration::from_secs(120)).await, "{seen}");
    }
    assert!(seen.starts_with("HTTP/1.1 200"), "{}", &seen[..seen.len().min(600)]);
    assert!(seen.contains(&format!("\"seq\":{BIG_SESSION_EVENTS}")), "folded to the end");
    // Its place is free again.
    let (status, body) = gateway.http_get_with(&format!("/debug/sessions/{session}/state?seq=1"), &auth()).await;
    assert_eq!(status, 200, "{body}");

    // A follower that reads nothing, with a small receive window: once its socket is full, the
    // gateway closes it after `write_timeout`, and its place goes to the next follower.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stuck = socket.connect(gateway.addr.parse().unwrap()).await.unwrap();
    let request = format!("GET /debug/sessions/{session}/follow?from=1 HTTP/1.1\r\nHost: {}\r\n{}\r\n", gateway.addr, auth());
    stuck.write_all(request.as_bytes()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut refused = false;
    let status = loop {
        let (status, _, seen) = follow_status(&gateway, &session).await;
        assert!(status == 200 || status == 429, "{seen}");
        refused |= status == 429;
        if status == 200 || Instant::now() > deadline {
            break status;
        }
    };
    assert!(refused, "the stuck follower held the only place for a while");
    assert_eq!(status, 200, "the follower that took nothing was closed, and its place given to another");
    drop(stuck);
}
