//! The replay tools on sessions made through the real gateway over real WebSockets: list, replay
//! with transitions, --verify against the hashes clients were sent, export / import, and the
//! errors a user meets (a running gateway holding the directory, an unknown session, a tampered or
//! corrupt file).

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::*;

fn vestibule(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vestibule")).args(args).env("VESTIBULE_LOG", "error").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test]
async fn sessions_made_through_the_gateway_replay_verify_and_move_between_directories() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut gateway = Gateway::start_at(&data, CONFIG, "127.0.0.1:0");
    let mut client = Client::create(&gateway, json!({})).await;
    connect_wallet(&mut client, "0x52908400098527886E0F7030069857D2E4169EE7", "0x1").await;
    // Persistent: the session's events and state stay put while they are compared (no auto-dismiss).
    client.command(show_persistent_toast("hello from ada@example.com")).await;
    let session = client.session_id.clone();
    let live_state = client.state.clone();
    let live_seq = client.seq;

    // While the gateway runs, the directory is held: the error says so and points to the debug API.
    let (code, _, err) = vestibule(&["sessions", "list", "--data", path(&data)]);
    assert_ne!(code, 0);
    assert!(err.contains("running gateway") && err.contains("debug API"), "{err}");
    gateway.terminate();

    let (code, out, _) = vestibule(&["sessions", "list", "--data", path(&data), "--format", "json"]);
    assert_eq!(code, 0);
    let listed: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!((listed["session"].as_str(), listed["events"].as_u64()), (Some(session.as_str()), Some(live_seq)));
    assert!(!out.contains("resume") && !out.contains("Hash"), "no resume-token hash in listings: {out}");

    let (code, out, err) = vestibule(&["replay", "--data", path(&data), &session, "--verify"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count() as u64, live_seq, "one line per event");
    assert!(out.contains("connection/eip155: connecting -> connected"), "{out}");
    assert!(out.contains("modal: closed -> open"), "{out}");
    let (_, upto, _) = vestibule(&["replay", "--data", path(&data), &session, "--to", "3", "--format", "json", "--patch"]);
    assert_eq!(upto.lines().count(), 3);
    assert!(serde_json::from_str::<Value>(upto.lines().next().unwrap()).unwrap()["patch"].is_array());

    // Export (masking emails), import elsewhere, and the replay there equals the live state.
    let (code, export, _) = vestibule(&["export", "--data", path(&data), &session, "--mask-emails"]);
    assert_eq!(code, 0);
    assert!(!export.contains("ada@example.com") && export.contains("***@example.com"));
    assert!(!export.contains("resumeToken") && !export.contains("resume_token"));
    let file = dir.path().join("session.jsonl");
    std::fs::write(&file, &export).unwrap();
    let other = dir.path().join("other");
    let (code, out, err) = vestibule(&["import", "--data", path(&other), path(&file)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&session), "{out}");
    // Masked events carry no checksum: --verify checks those before them, and fails naming where
    // what it could not check begins (a forger who removes hashes looks the same).
    let (code, _, err) = vestibule(&["replay", "--data", path(&other), &session, "--verify"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&format!("session {session}: unverified from seq ")), "{err}");
    assert!(!err.contains("the state hash is"), "the events before the masked one verify: {err}");
    // A developer who knows why (a masked export) can ask for the rest to be reported only.
    let (code, _, err) = vestibule(&["replay", "--data", path(&other), &session, "--verify", "--allow-unverified"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("unverified from seq ") && err.contains("verify ok for the decisions that carry a state hash"), "{err}");
    let (folded, seq) = fold_from_disk(&other, &session).await;
    assert_eq!(seq, live_seq);
    // The toast message was masked; everything else is the live state.
    let mut expected = live_state.clone();
    for toast in expected["toasts"]["items"].as_object_mut().unwrap().values_mut() {
        toast["message"] = json!(toast["message"].as_str().unwrap().replace("ada@example.com", "***@example.com"));
    }
    assert_eq!(folded, expected);

    // Importing the same session again is refused; --new-id makes a copy.
    let (code, _, err) = vestibule(&["import", "--data", path(&other), path(&file)]);
    assert_ne!(code, 0);
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(vestibule(&["import", "--data", path(&other), path(&file), "--new-id"]).0, 0);

    // A tampered event (its stored hash no longer matches) makes --verify fail naming its seq.
    let (_, unmasked, _) = vestibule(&["export", "--data", path(&data), &session]);
    let tampered: Vec<String> = unmasked
        .lines()
        .map(|l| if l.contains("\"ModalOpened\"") { l.replace("\"ModalOpened\"", "\"ModalClosed\"") } else { l.to_string() })
        .collect();
    let bad_seq = tampered
        .iter()
        .skip(1)
        .find(|l| l.contains("\"ModalClosed\""))
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["seq"].as_u64().unwrap())
        .unwrap();
    let tampered_file = dir.path().join("tampered.jsonl");
    std::fs::write(&tampered_file, tampered.join("\n")).unwrap();
    let third = dir.path().join("third");
    assert_eq!(vestibule(&["import", "--data", path(&third), path(&tampered_file)]).0, 0);
    let (code, _, err) = vestibule(&["replay", "--data", path(&third), &session, "--verify"]);
    assert_eq!(code, 1, "{err}");
    let named: u64 = err.split("at seq ").nth(1).and_then(|s| s.split(':').next()).and_then(|s| s.parse().ok()).unwrap();
    assert!(named >= bad_seq, "the first divergence is at or after the tampered event {bad_seq}: {err}");

    // Clear errors: an unknown session, a corrupt file.
    let (code, _, err) = vestibule(&["replay", "--data", path(&data), "00000000000000000000000000000000"]);
    assert_ne!(code, 0);
    assert!(err.contains("no session"), "{err}");
    let corrupt = dir.path().join("corrupt.jsonl");
    std::fs::write(&corrupt, format!("{}\n{{not json\n", export.lines().next().unwrap())).unwrap();
    let (code, _, err) = vestibule(&["import", "--data", path(&dir.path().join("fourth")), path(&corrupt)]);
    assert_ne!(code, 0);
    assert!(err.contains("line 2"), "{err}");
}

#[tokio::test]
async fn the_debug_api_reads_and_follows_a_live_session_only_with_the_admin_token() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const TOKEN: &str = "debug-token-0123456789";
    let off = Gateway::start(CONFIG);
    assert_eq!(
        off.http_get_with("/debug/sessions", &format!("Authorization: Bearer {TOKEN}\r\n")).await.0,
        404,
        "off without a token configured"
    );

    let gateway = Gateway::start(&format!("admin_token = \"{TOKEN}\"\n{CONFIG}"));
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    assert_eq!(gateway.http_get("/debug/sessions", None).await.0, 401);
    assert_eq!(gateway.http_get_with("/debug/sessions", "Authorization: Bearer wrong-token-0123456789\r\n").await.0, 401);
    // The token is checked before the query is parsed: an outsider learns nothing from a bad one.
    assert_eq!(gateway.http_get("/debug/sessions?limit=many", None).await.0, 401);
    assert_eq!(off.http_get_with("/debug/sessions?limit=many", &format!("Authorization: Bearer {TOKEN}\r\n")).await.0, 404);
    let (status, body) = gateway.http_get_with("/debug/sessions?limit=many", &format!("Authorization: Bearer {TOKEN}\r\n")).await;
    let refused: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    assert_eq!((status, refused["code"].as_str()), (400, Some("bad_request")), "{body}");
    assert!(refused["message"].as_str().unwrap().contains("invalid digit"), "{body}");
    let mut client = Client::create(&gateway, json!({})).await;
    // Persistent: the event count and the state hash compared below stay put (no auto-dismiss).
    client.command(show_persistent_toast("first")).await;
    let (status, body) = gateway.http_get_with("/debug/sessions", &auth).await;
    assert_eq!(status, 200, "{body}");
    let listed: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(listed["sessions"][0]["session"], client.session_id.as_str());
    let (_, body) = gateway.http_get_with(&format!("/debug/sessions/{}/events?from=1", client.session_id), &auth).await;
    let events: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(events.as_array().unwrap().len() as u64, client.seq);
    assert_eq!(events[0]["type"], "SessionStarted");

    // The state after a chosen seq, as the visitor had it.
    let (status, body) = gateway.http_get_with(&format!("/debug/sessions/{}/state?seq=1", client.session_id), &auth).await;
    assert_eq!(status, 200, "{body}");
    let at: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((at["seq"].as_u64(), at["state"]["started"].as_bool()), (Some(1), Some(true)));
    assert!(at["state"]["toasts"]["order"].as_array().unwrap().is_empty(), "no toast yet at seq 1");
    let (_, body) = gateway.http_get_with(&format!("/debug/sessions/{}/state", client.session_id), &auth).await;
    let latest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(latest["stateHash"], vestibule_actors::session::wire::state_hash(&client.state).as_str());

    // Follow: events committed after the request arrive as they are made durable.
    let mut stream = tokio::net::TcpStream::connect(&gateway.addr).await.unwrap();
    let from = client.seq + 1;
    let request = format!("GET /debug/sessions/{}/follow?from={from} HTTP/1.1\r\nHost: {}\r\n{auth}\r\n", client.session_id, gateway.addr);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    // The response head first: the follower is attached (it would catch up from `from` anyway).
    while !seen.contains("\r\n\r\n") && tokio::time::Instant::now() < deadline {
        let mut buf = [0u8; 4096];
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            _ => break,
        }
    }
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    client.command(show_persistent_toast("followed")).await;
    while !seen.contains("followed") && tokio::time::Instant::now() < deadline {
        let mut buf = [0u8; 4096];
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            _ => break,
        }
    }
    assert!(seen.contains("text/event-stream"), "{seen}");
    assert!(seen.contains("data: {") && seen.contains("\"followed\""), "{seen}");
    assert!(seen.contains(&format!("\"seq\":{from}")), "following starts at `from`: {seen}");
}
