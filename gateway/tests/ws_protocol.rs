//! The WebSocket protocol against the real gateway on 127.0.0.1 with a real sled directory.

mod support;

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::raw;
use support::*;
use tokio::io::AsyncWriteExt;
use vestibule_actors::protocol::PROTOCOL_VERSION;

/// A negative check fenced by a positive probe: sends a command that changes nothing (dismissing a
/// toast that does not exist) and asserts that the very next frame is its result. A session's frames
/// reach a connection in order, so anything owed before the probe (a diff, a second result) would
/// come first and fail this; nothing depends on how long the gateway takes.
async fn assert_nothing_pending(client: &mut Client, what: &str) {
    let id = client.send_command(json!({ "type": "DismissToast", "id": "t-probe" })).await;
    let next = recv_json_within(&mut client.ws, Duration::from_secs(30)).await.expect("the probe's result");
    assert_eq!(
        (next["type"].as_str(), next["commandId"].as_str(), next["error"]["code"].as_str()),
        (Some("result"), Some(id.as_str()), Some("unknown_toast")),
        "{what}: the next frame is the probe's result, not {next}"
    );
}

#[tokio::test]
async fn a_command_gets_its_result_then_its_diff_and_the_mirror_matches() {
    let gateway = Gateway::start(CONFIG);
    let mut client = Client::create(&gateway, json!({})).await;
    assert_eq!(client.state["started"], true);
    let id = client.send_command(json!({ "type": "OpenModal" })).await;
    let result = recv_json(&mut client.ws).await;
    assert_eq!(
        (result["type"].as_str(), result["commandId"].as_str(), result["status"].as_str()),
        (Some("result"), Some(id.as_str()), Some("accepted"))
    );
    let diff = recv_json(&mut client.ws).await;
    assert_eq!(diff["type"], "diff");
    assert_eq!(diff["seq"], result["seq"]);
    client.apply_diff(&diff);
    assert_eq!(client.state["modal"]["status"], "open");
    assert_eq!(diff["events"][0]["type"], "ModalOpened");
    assert_eq!(diff["events"][0]["correlationId"], id.as_str());
}

#[tokio::test]
async fn a_refused_command_gets_a_typed_error_and_no_diff() {
    let gateway = Gateway::start(CONFIG);
    let mut client = Client::create(&gateway, json!({})).await;
    let seq = client.seq;
    let result = client.command(json!({ "type": "DismissToast", "id": "t404" })).await;
    assert_eq!(result["status"], "refused");
    assert_eq!(result["error"]["code"], "unknown_toast");
    assert_eq!(client.seq, seq);
    assert_nothing_pending(&mut client, "no diff follows a refusal").await;
}

#[tokio::test]
async fn two_connections_to_one_session_see_the_same_diffs_in_the_same_order() {
    let gateway = Gateway::start(CONFIG);
    let mut a = Client::create(&gateway, json!({})).await;
    let (mut b, _) = Client::resume(&gateway, &a.session_id, &a.resume_token.clone(), Some(a.seq), a.state.clone()).await;
    // Persistent: no auto-dismiss adds diffs while the two connections are compared.
    for i in 0..5 {
        a.command(show_persistent_toast(&format!("toast {i}"))).await;
    }
    b.catch_up(a.seq).await;
    assert_eq!(a.diffs, b.diffs);
    assert_eq!(a.state, b.state);
}

#[tokio::test]
async fn a_client_that_missed_n_diffs_gets_exactly_those_n_on_resume() {
    let gateway = Gateway::start(CONFIG);
    let mut a = Client::create(&gateway, json!({})).await;
    let (b, _) = Client::resume(&gateway, &a.session_id, &a.resume_token.clone(), Some(a.seq), a.state.clone()).await;
    let (b_seq, b_state) = (b.seq, b.state.clone());
    b.close().await;
    let before = a.diffs.len();
    // Persistent: no auto-dismiss adds diffs to those counted as missed.
    for i in 0..7 {
        a.command(show_persistent_toast(&format!("missed {i}"))).await;
    }
    let missed = &a.diffs[before..];
    let (mut b, welcome) = Client::resume(&gateway, &a.session_id, &a.resume_token.clone(), Some(b_seq), b_state).await;
    assert_eq!(welcome["resumed"], true);
    assert!(welcome.get("state").is_none());
    b.catch_up(a.seq).await;
    assert_eq!(b.diffs, missed, "exactly the missed diffs, in order");
    assert_nothing_pending(&mut b, "and nothing more").await;
    assert_eq!(b.state, a.state);
}

#[tokio::test]
async fn resuming_after_a_restart_rebuilds_the_missed_diffs_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut gateway = Gateway::start_at(&data, CONFIG, "127.0.0.1:0");
    let mut a = Client::create(&gateway, json!({})).await;
    a.command(json!({ "type": "OpenModal" })).await;
    let (seen_seq, seen_state) = (a.seq, a.state.clone());
    let before = a.diffs.len();
    for i in 0..4 {
        a.command(show_toast(&format!("after {i}"))).await;
    }
    let missed: Vec<Value> = a.diffs[before..].to_vec();
    let (session, token) = (a.session_id.clone(), a.resume_token.clone());
    drop(a);
    gateway.terminate();
    let gateway = Gateway::start_at(&data, CONFIG, "127.0.0.1:0");
    let (mut b, welcome) = Client::resume(&gateway, &session, &token, Some(seen_seq), seen_state).await;
    assert_eq!(welcome["resumed"], true);
    b.catch_up(missed.last().unwrap()["seq"].as_u64().unwrap()).await;
    // The rebuilt diffs carry the same events and end in the same state.
    let events = |diffs: &[Value]| diffs.iter().map(|d| d["events"].clone()).collect::<Vec<_>>();
    assert_eq!(events(&b.diffs), events(&missed));
    assert_eq!(b.diffs.last().unwrap()["stateHash"], missed.last().unwrap()["stateHash"]);
}

/// A `lastSeq` inside one decision's events (after its first event, before its last) is a state no
/// client was sent: it gets the whole state, from the ring of recent diffs and from the log alike,
/// not a diff that starts before it (repeating events) or one from a state nobody had.
#[tokio::test]
async fn a_last_seq_inside_a_decision_gets_the_whole_state_from_the_ring_and_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut gateway = Gateway::start_at(&data, CONFIG, "127.0.0.1:0");
    let mut a = Client::create(&gateway, json!({})).await;
    // Opened on another view than the router's: the modal opens and the router moves, two events.
    a.command(json!({ "type": "OpenModal", "view": "AllWallets" })).await;
    let opened = a.diffs.last().unwrap().clone();
    let events = opened["events"].as_array().unwrap().len() as u64;
    assert!(events >= 2, "opening the modal is one decision of several events: {opened}");
    let (boundary, inside) = (opened["prevSeq"].as_u64().unwrap(), opened["prevSeq"].as_u64().unwrap() + 1);
    // One more decision, so that both seqs are behind the session's.
    a.command(show_persistent_toast("after")).await;
    let (session, token) = (a.session_id.clone(), a.resume_token.clone());
    let resumes = |gateway: &Gateway, expected_state: Value| {
        let (session, token) = (session.clone(), token.clone());
        let url = gateway.ws_url("test");
        async move {
            // The positive probe: from where the decision began, the diffs follow.
            let (mut from_boundary, welcome) = Client::resume_at(&url, &session, &token, Some(boundary), Value::Null).await;
            assert_eq!(welcome["resumed"], true, "from a diff's end: {welcome}");
            let first = recv_json_within(&mut from_boundary.ws, Duration::from_secs(30)).await.expect("the first missed diff");
            assert_eq!((first["type"].as_str(), first["prevSeq"].as_u64()), (Some("diff"), Some(boundary)), "{first}");
            let (inside_client, welcome) = Client::resume_at(&url, &session, &token, Some(inside), Value::Null).await;
            assert_eq!(welcome["resumed"], false, "from inside a decision: {welcome}");
            assert_eq!(inside_client.state, expected_state);
        }
    };
    resumes(&gateway, a.state.clone()).await;
    let state = a.state.clone();
    drop(a);
    // After a restart the ring is empty: the diffs would be rebuilt from the log.
    gateway.terminate();
    let gateway = Gateway::start_at(&data, CONFIG, "127.0.0.1:0");
    resumes(&gateway, state).await;
}

#[tokio::test]
async fn a_client_without_a_usable_last_seq_gets_the_whole_state() {
    let gateway = Gateway::start(CONFIG);
    let mut a = Client::create(&gateway, json!({})).await;
    a.command(json!({ "type": "OpenModal" })).await;
    let (b, welcome) = Client::resume(&gateway, &a.session_id, &a.resume_token.clone(), None, Value::Null).await;
    assert_eq!(welcome["resumed"], false);
    assert_eq!(b.state, a.state);
    let (c, welcome) = Client::resume(&gateway, &a.session_id, &a.resume_token.clone(), Some(a.seq + 50), Value::Null).await;
    assert_eq!(welcome["resumed"], false, "a seq from the future is not trusted");
    assert_eq!(c.state, a.state);
}

#[tokio::test]
async fn a_retried_command_id_gets_its_first_result_and_no_second_diff() {
    let gateway = Gateway::start(CONFIG);
    let mut client = Client::create(&gateway, json!({})).await;
    // Persistent: no auto-dismiss diff comes while the test checks that no second diff does.
    send(&mut client.ws, json!({ "type": "command", "id": "same-1", "command": show_persistent_toast("once") })).await;
    let first = recv_json(&mut client.ws).await;
    let diff = recv_json(&mut client.ws).await;
    client.apply_diff(&diff);
    send(&mut client.ws, json!({ "type": "command", "id": "same-1", "command": show_persistent_toast("once") })).await;
    let second = recv_json(&mut client.ws).await;
    assert_eq!(first, second);
    assert_nothing_pending(&mut client, "no second diff").await;
    assert_eq!(client.state["toasts"]["order"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_wrong_resume_token_is_refused_without_saying_whether_the_session_exists() {
    let gateway = Gateway::start(CONFIG);
    let client = Client::create(&gateway, json!({})).await;
    let mut frames_for = Vec::new();
    for (session, token) in [
        (client.session_id.clone(), "0".repeat(64)),
        ("0123456789abcdef0123456789abcdef".to_string(), client.resume_token.clone()),
        ("not-a-session".to_string(), "x".into()),
    ] {
        let mut ws = connect(&gateway.ws_url("test"), ORIGIN).await.unwrap();
        send(
            &mut ws,
            json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "sessionId": session, "resumeToken": token, "lastSeq": 0 }),
        )
        .await;
        let (code, frames) = read_until_close(&mut ws).await;
        assert_eq!(code, Some(4001));
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0]["code"], "unauthorized");
        frames_for.push(frames[0].clone());
    }
    assert!(frames_for.windows(2).all(|w| w[0] == w[1]), "the same answer for every case");
}

#[tokio::test]
async fn upgrades_are_refused_for_bad_origins_and_projects_and_the_check_endpoint_says_why() {
    let gateway = Gateway::start(CONFIG);
    let refused = |r: Result<_, tokio_tungstenite::tungstenite::Error>| match r {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            let body = String::from_utf8(response.body().clone().unwrap_or_default()).unwrap();
            // The refusal ends the connection, and says so (not `connection: upgrade`).
            let connection = response.headers().get("connection").map(|v| v.to_str().unwrap().to_ascii_lowercase());
            assert_eq!(connection.as_deref(), Some("close"), "{:?}", response.headers());
            (response.status().as_u16(), body)
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("the upgrade was accepted"),
    };
    let (status, body) = refused(connect(&gateway.ws_url("test"), "https://evil.example").await);
    assert_eq!(status, 403);
    assert!(body.contains("Invalid App Configuration"), "{body}");
    let (status, body) = refused(connect(&format!("ws://{}/ws", gateway.addr), ORIGIN).await);
    assert_eq!(status, 400);
    assert!(body.contains("Project ID Not Configured"), "{body}");
    let (status, body) = refused(connect(&gateway.ws_url("nope"), ORIGIN).await);
    assert_eq!(status, 403);
    assert!(body.contains("Invalid Project ID"), "{body}");
    // A project's own allowlist applies: `other` allows only https://other.example.
    let (status, _) = refused(connect(&gateway.ws_url("other"), ORIGIN).await);
    assert_eq!(status, 403);
    assert!(connect(&gateway.ws_url("other"), "https://other.example").await.is_ok());

    let (status, body) = gateway.http_get("/ws/check?projectId=test", Some("https://evil.example")).await;
    assert_eq!(status, 403);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["message"], "Invalid App Configuration");
    let (status, body) = gateway.http_get("/ws/check?projectId=test", Some(ORIGIN)).await;
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()["ok"].clone()), (200, json!(true)));
    assert!(gateway.metric("vestibule_refusals_total{kind=\"invalid_app_configuration\"}").await >= 2.0);
}

#[tokio::test]
async fn garbage_unknown_types_and_oversized_frames_get_their_error_or_close_while_other_sessions_work() {
    let gateway = Gateway::start(CONFIG);
    let mut bystander = Client::create(&gateway, json!({})).await;
    let mut client = Client::create(&gateway, json!({})).await;

    client.ws.send(tokio_tungstenite::tungstenite::Message::text("{not json")).await.unwrap();
    let error = recv_json(&mut client.ws).await;
    assert_eq!((error["type"].as_str(), error["code"].as_str()), (Some("error"), Some("malformed_message")));
    send(&mut client.ws, json!({ "type": "teleport" })).await;
    assert_eq!(recv_json(&mut client.ws).await["code"], "unknown_message_type");
    send(&mut client.ws, json!({ "type": "command", "id": "bad id!", "command": { "type": "OpenModal" } })).await;
    assert_eq!(recv_json(&mut client.ws).await["code"], "malformed_message");
    // A command that does not read as one, under a good id: refused under that id, not remembered.
    send(&mut client.ws, json!({ "type": "command", "id": "c-typo", "command": { "type": "OpenModall" } })).await;
    let refused = recv_json(&mut client.ws).await;
    assert_eq!(
        (refused["type"].as_str(), refused["commandId"].as_str(), refused["status"].as_str(), refused["error"]["code"].as_str()),
        (Some("result"), Some("c-typo"), Some("refused"), Some("invalid_input")),
        "{refused}"
    );
    // Nested deeper than JSON parsing allows (a host request's params 130 arrays deep, an outside
    // review): refused under its id all the same, or the widget never settled it and sent it again
    // after every reconnect.
    let deep = format!(
        r#"{{"type":"command","id":"c-deep","command":{{"type":"HostRequest","requestId":"r","method":"eth_call","params":{}1{}}}}}"#,
        "[".repeat(130),
        "]".repeat(130)
    );
    client.ws.send(tokio_tungstenite::tungstenite::Message::text(deep)).await.unwrap();
    let refused_deep = recv_json(&mut client.ws).await;
    assert_eq!(
        (refused_deep["type"].as_str(), refused_deep["commandId"].as_str(), refused_deep["error"]["code"].as_str()),
        (Some("result"), Some("c-deep"), Some("invalid_input")),
        "{refused_deep}"
    );
    // Its message names the problem (serde lists every command type after it) within 200 characters.
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("OpenModall") && message.chars().count() <= 201 && message.ends_with('…'), "{message}");
    send(&mut client.ws, json!({ "type": "command", "id": "c-typo", "command": show_persistent_toast("corrected") })).await;
    let corrected = client.recv_non_diff().await;
    assert_eq!(corrected["status"], "accepted", "the corrected command runs under the same id: {corrected}");
    // Still usable after all that.
    assert_eq!(client.command(json!({ "type": "OpenModal" })).await["status"], "accepted");

    let big = "x".repeat(70 * 1024);
    let _ = client.ws.send(tokio_tungstenite::tungstenite::Message::text(big)).await;
    let (code, frames) = read_until_close(&mut client.ws).await;
    assert_eq!(code, Some(1009));
    assert_eq!(frames.last().unwrap()["code"], "frame_too_large");

    assert_eq!(bystander.command(show_toast("still here")).await["status"], "accepted");
}

#[tokio::test]
async fn a_hello_must_come_first_and_name_a_supported_protocol() {
    let gateway = Gateway::start(CONFIG);
    let mut ws = connect(&gateway.ws_url("test"), ORIGIN).await.unwrap();
    send(&mut ws, json!({ "type": "command", "id": "c1", "command": { "type": "OpenModal" } })).await;
    let (code, frames) = read_until_close(&mut ws).await;
    assert_eq!((code, frames[0]["code"].as_str()), (Some(4000), Some("bad_hello")));

    // 99: from the future; 1: a client that hashes states as protocol 1 did (decision 0311),
    // which would take every diff for a mismatch.
    for protocol in [99, 1] {
        let mut ws = connect(&gateway.ws_url("test"), ORIGIN).await.unwrap();
        send(&mut ws, json!({ "type": "hello", "protocol": protocol, "projectId": "test" })).await;
        let (code, frames) = read_until_close(&mut ws).await;
        assert_eq!((code, frames[0]["code"].as_str()), (Some(4002), Some("unsupported_protocol")), "protocol {protocol}");
    }

    let mut ws = connect(&gateway.ws_url("test"), ORIGIN).await.unwrap();
    send(&mut ws, json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "options": { "netwroks": [] } })).await;
    let (code, frames) = read_until_close(&mut ws).await;
    assert_eq!((code, frames[0]["code"].as_str()), (Some(4000), Some("invalid_options")));
    assert!(frames[0]["message"].as_str().unwrap().contains("netwroks"), "{}", frames[0]);

    let mut ws = connect(&gateway.ws_url("test"), ORIGIN).await.unwrap();
    send(
        &mut ws,
        json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "options": { "networks": ["eip155:424242"] } }),
    )
    .await;
    let (code, frames) = read_until_close(&mut ws).await;
    assert_eq!((code, frames[0]["code"].as_str()), (Some(4000), Some("invalid_options")));
    assert!(frames[0]["message"].as_str().unwrap().contains("networks[0]"), "{}", frames[0]);
}

#[tokio::test]
async fn commands_beyond_the_rate_limit_are_refused_with_a_typed_error() {
    // A burst of 40 and a refill of 1 per second: what passes is bounded by the burst plus what the
    // elapsed time refilled, however slowly the machine handles the 60 commands.
    let config = format!("{CONFIG}\n[limits]\ncommands_per_second = 1\ncommand_burst = 40\n");
    let gateway = Gateway::start(&config);
    let mut client = Client::create(&gateway, json!({})).await;
    let started = std::time::Instant::now();
    for _ in 0..60 {
        client.send_command(json!({ "type": "SetToastHover", "hovered": true })).await;
    }
    let (mut accepted, mut refused) = (0u64, 0u64);
    for _ in 0..60 {
        let frame = client.recv_non_diff().await;
        if frame["status"] == "refused" {
            assert_eq!(frame["error"]["code"], "rate_limited", "{frame}");
            refused += 1;
        } else {
            assert_eq!(frame["status"], "accepted", "{frame}");
            accepted += 1;
        }
    }
    let refilled = started.elapsed().as_secs() + 1;
    assert_eq!(accepted + refused, 60);
    assert!(accepted >= 40, "the burst passes ({accepted})");
    assert!(accepted <= 40 + refilled, "{accepted} accepted in {refilled} s with a burst of 40 at 1/s");
}

#[tokio::test]
async fn a_client_that_never_reads_is_cut_off_and_the_server_memory_stays_bounded() {
    let config = format!(
        "{CONFIG}\n[limits]\nunacked_diffs = 8\noutbound_queue = 16\nwrite_timeout = \"2s\"\ncommands_per_second = 1000\ncommand_burst = 1000\n"
    );
    let gateway = Gateway::start(&config);
    let mut writer = Client::create(&gateway, json!({})).await;
    // The reader attaches and then never reads nor acknowledges anything.
    let (reader, _) =
        Client::resume(&gateway, &writer.session_id, &writer.resume_token.clone(), Some(writer.seq), writer.state.clone()).await;
    let rss_before = gateway.rss_bytes();
    let long = "m".repeat(250);
    for i in 0..400 {
        writer.command(show_toast(&format!("{long} {i}"))).await;
    }
    let rss_after = gateway.rss_bytes();
    let mut reader = reader;
    assert!(
        gateway.metric("vestibule_connections_dropped_by_session_total{reason=\"too_slow\"}").await >= 1.0,
        "the session dropped the reader"
    );
    // The reader's connection ends within the write timeout even though it never reads.
    // Polled every 100 ms for up to a minute: a failure bound, not a speed requirement.
    let mut closed = false;
    for _ in 0..600 {
        if gateway.metric("vestibule_connections").await == 1.0 {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(closed, "only the writer is still connected");
    // When the reader finally reads, it finds what it missed up to the cut, then the reason.
    let (code, frames) = read_until_close(&mut reader.ws).await;
    assert_eq!(code, Some(4004));
    assert_eq!(frames.last().unwrap()["code"], "too_slow");
    assert!(rss_after < rss_before + 32 * 1024 * 1024, "memory grew from {rss_before} to {rss_after}");
}

/// A client that has said hello and then neither reads nor sends, on a raw socket: no client
/// library answers the server's pings behind the test's back, and nothing of ours writes to the
/// socket once the server has closed it, so what it finds when it reads is exactly what the server
/// sent.
async fn silent_client(gateway: &Gateway) -> tokio::net::TcpStream {
    let mut stream = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    let hello = json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "options": {} }).to_string();
    stream.write_all(&raw::text_frame(&hello)).await.unwrap();
    let (opcode, welcome) = raw::read_frame(&mut stream).await.unwrap();
    let welcome: Value = serde_json::from_slice(&welcome).unwrap();
    assert_eq!((opcode, welcome["type"].as_str()), (raw::TEXT, Some("welcome")), "{welcome}");
    stream
}

/// The heartbeat's close, exactly: an `error` frame naming it and announcing 4005, then the close
/// frame with 4005, and nothing else after the welcome but the server's pings.
fn assert_heartbeat_close(code: Option<u16>, frames: &[Value]) {
    assert_eq!(code, Some(4005), "{frames:?}");
    let [error] = frames else { panic!("one frame before the close: {frames:?}") };
    assert_eq!(
        (error["type"].as_str(), error["code"].as_str(), error["close"].as_u64()),
        (Some("error"), Some("heartbeat_timeout"), Some(4005)),
        "{error}"
    );
}

#[tokio::test]
async fn a_silent_client_is_cut_off_by_the_heartbeat_with_4005() {
    // A tiny heartbeat: the close comes in well under a second; the only wait below is the failure
    // bound of raw::read_until_close (15 s).
    let config = format!("{CONFIG}\n[limits]\nheartbeat_interval = \"100ms\"\nheartbeat_timeout = \"300ms\"\n");
    let gateway = Gateway::start(&config);
    let mut silent = silent_client(&gateway).await;
    let (code, frames) = raw::read_until_close(&mut silent).await;
    assert_heartbeat_close(code, &frames);
    assert_eq!(gateway.metric("vestibule_refusals_total{kind=\"heartbeat_timeout\"}").await, 1.0);
}

#[tokio::test]
async fn a_client_that_answers_pings_outlives_a_silent_one() {
    // Both connect at the same time; the silent one is cut after heartbeat_timeout without a frame.
    // The live one answers every ping (each read of a tungstenite client does), so when the silent
    // one's close arrives (the fence: the heartbeat has run out for a connection as old as the live
    // one), the live one is still open. The timeout is a few seconds, not a few hundred
    // milliseconds, so that a test process descheduled for a while still answers a ping in time.
    let config = format!("{CONFIG}\n[limits]\nheartbeat_interval = \"100ms\"\nheartbeat_timeout = \"4s\"\n");
    let gateway = Gateway::start(&config);
    let mut live = Client::create(&gateway, json!({})).await;
    let mut silent = silent_client(&gateway).await;
    let silent_closed = raw::read_until_close(&mut silent);
    tokio::pin!(silent_closed);
    let mut pings_answered = 0;
    let (code, frames) = loop {
        tokio::select! {
            closed = &mut silent_closed => break closed,
            message = live.ws.next() => match message {
                Some(Ok(tokio_tungstenite::tungstenite::Message::Ping(_))) => pings_answered += 1,
                other => panic!("the live client got {other:?} while the silent one was being cut off"),
            },
        }
    };
    assert_heartbeat_close(code, &frames);
    assert!(pings_answered > 0, "the server pinged the live client");
    assert_eq!(gateway.metric("vestibule_refusals_total{kind=\"heartbeat_timeout\"}").await, 1.0);
    assert_eq!(gateway.metric("vestibule_connections").await, 1.0);
    assert_eq!(live.command(json!({ "type": "OpenModal" })).await["status"], "accepted");
}

#[tokio::test]
async fn sigterm_closes_every_connection_with_1001_and_the_server_exits_cleanly() {
    let mut gateway = Gateway::start(CONFIG);
    let mut client = Client::create(&gateway, json!({})).await;
    client.command(show_toast("before shutdown")).await;
    unsafe { libc::kill(gateway.child.id() as i32, libc::SIGTERM) };
    let (code, frames) = read_until_close(&mut client.ws).await;
    assert_eq!(code, Some(1001));
    assert_eq!(frames.last().unwrap()["code"], "shutting_down");
    let status = gateway.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn health_and_metrics_are_served() {
    let gateway = Gateway::start(CONFIG);
    assert!(connect(&gateway.ws_url("nope"), ORIGIN).await.is_err());
    let mut client = Client::create(&gateway, json!({})).await;
    client.command(show_toast("counted")).await;
    let (status, body) = gateway.http_get("/healthz", None).await;
    assert_eq!(status, 200);
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((health["status"].as_str(), health["liveSessions"].as_u64()), (Some("ok"), Some(1)));
    let (status, metrics) = gateway.http_get("/metrics", None).await;
    assert_eq!(status, 200);
    for family in [
        "vestibule_live_sessions",
        "vestibule_connections",
        "vestibule_commands_total",
        "vestibule_append_seconds_bucket",
        "vestibule_command_seconds_bucket",
        "vestibule_refusals",
        "vestibule_store_flush_seconds_bucket",
        "vestibule_store_batch_appends_bucket",
    ] {
        assert!(metrics.contains(family), "{family} missing from:\n{metrics}");
    }
    assert!(gateway.metric("vestibule_commands_total{outcome=\"accepted\"}").await >= 1.0);
    // The accepted command's time in the gateway, with a bucket bound at the 2 ms of the latency target.
    assert!(gateway.metric("vestibule_command_seconds_count").await >= 1.0);
    assert!(metrics.contains("vestibule_command_seconds_bucket{le=\"0.002\"}"), "{metrics}");
    // Durable by default: the accepted command's events were flushed, in a batch of at least one.
    assert!(gateway.metric("vestibule_store_flush_seconds_count").await >= 1.0);
    assert!(gateway.metric("vestibule_store_batch_appends_bucket{le=\"+Inf\"}").await >= 1.0);
    // Buckets are cumulative once: the last holds every observation, no more (one scrape, so
    // nothing is recorded between the two readings).
    let (_, metrics) = gateway.http_get("/metrics", None).await;
    let value = |line_start: &str| -> f64 {
        let line = metrics.lines().find(|l| l.starts_with(line_start)).unwrap_or_else(|| panic!("{line_start} missing"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    for histogram in
        ["vestibule_store_flush_seconds", "vestibule_store_batch_appends", "vestibule_append_seconds", "vestibule_command_seconds"]
    {
        let count = value(&format!("{histogram}_count "));
        assert!(count >= 1.0, "{histogram}");
        assert_eq!(value(&format!("{histogram}_bucket{{le=\"+Inf\"}} ")), count, "{histogram}");
    }
}
