//! Several real `vestibule serve` processes on one real nats-server, `[cluster] enabled`: one owner
//! per session. A resume through another gateway is proxied to the owner (commands applied once, in
//! order, diffs relayed to every connection); a SIGKILLed owner's session is taken over through
//! another gateway once its lease lapses, with no gap, no hash mismatch and every acknowledged
//! command in the log; two gateways racing to take the same session over give it one owner. A
//! proxied connection's host reads count towards its own client address's share at the owner.

mod support;

#[path = "../../chain/tests/support/stub.rs"]
#[allow(dead_code)]
mod stub;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use vestibule_actors::protocol::PROTOCOL_VERSION;
use vestibule_store::EventLog as _;
use vestibule_store_jetstream::async_nats;
use vestibule_store_jetstream::test_server::NatsServer;

/// `lease_ttl` of the tests that wait for a dead (killed, or cut-off) owner's lease to lapse: short
/// enough for a quick takeover, long enough that a busy machine does not cost a live gateway its
/// lease (it declares it lost after TTL/2 without a renewal). The waits for a takeover (a resume's
/// welcome, 30 s in `Client::resume`; a proxied connection's close, 30 s in `read_until_close`) stay
/// above twice this: a resume waits up to 2 × TTL for the lapse.
const TAKEOVER_TTL: &str = "8s";
/// `lease_ttl` where no lease is meant to lapse: no stall of a loaded machine comes near it.
const LONG_TTL: &str = "60s";

fn cluster_config(server: &NatsServer, lease_ttl: &str) -> String {
    format!(
        "{CONFIG}\n[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"{}\"]\n\n[cluster]\nenabled = true\nlease_ttl = \"{lease_ttl}\"\n\n\
         [limits]\ncommands_per_second = 10000\ncommand_burst = 10000\n",
        server.url
    )
}

async fn start_server() -> NatsServer {
    tokio::task::spawn_blocking(NatsServer::start).await.unwrap()
}

/// Commands that arm no deadline: the state after them stays put while nobody sends anything.
fn command(i: usize) -> Value {
    match i % 3 {
        0 => json!({ "type": "OpenModal" }),
        1 => json!({ "type": "Navigate", "view": "AllWallets" }),
        _ => json!({ "type": "CloseModal" }),
    }
}

/// Sends a command and returns its result; records it when accepted.
async fn run(client: &mut Client, i: usize, accepted: &mut BTreeMap<String, u64>) -> Value {
    let result = client.command(command(i)).await;
    if result["status"] == "accepted" {
        accepted.insert(result["commandId"].as_str().unwrap().to_string(), result["seq"].as_u64().unwrap());
    }
    result
}

/// Every accepted command is in the log (its events end at its seq), and the log replays with
/// every stored checksum matching (what `vestibule replay --verify` checks).
async fn check_log(server: &NatsServer, session: &str, accepted: &BTreeMap<String, u64>, mirror: &Value, mirror_seq: u64) {
    check_log_on(&[server.url.clone()], session, accepted, mirror, mirror_seq).await
}

async fn check_log_on(servers: &[String], session: &str, accepted: &BTreeMap<String, u64>, mirror: &Value, mirror_seq: u64) {
    // Right after a NATS node died the cluster may still be electing leaders (requests time out):
    // open and read again until they answer, for up to 120 s.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let config = vestibule_store_jetstream::JetStreamConfig {
        // With several servers, the 3-node cluster's replicas (the buckets are created or updated
        // with the configured count: 1 would shrink them).
        replicas: if servers.len() > 1 { 3 } else { 1 },
        ..vestibule_store_jetstream::JetStreamConfig::at(servers.to_vec())
    };
    let id: vestibule_store::SessionId = session.parse().unwrap();
    let (log, events) = loop {
        let upcaster = std::sync::Arc::new(vestibule_actors::session::upcast::SessionUpcaster);
        let attempt = match vestibule_store_jetstream::JetStreamEventLog::open_with_upcaster(config.clone(), upcaster).await {
            Ok(log) => log.read(id, 1, None).await.map(|events| (log, events)),
            Err(e) => Err(e),
        };
        match attempt {
            Ok(done) => break done,
            Err(e) => assert!(tokio::time::Instant::now() < deadline, "the log did not answer within 120 s: {e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(!accepted.is_empty());
    for (command, seq) in accepted {
        let mine: Vec<_> = events.iter().filter(|e| e.correlation_id.as_deref() == Some(command)).collect();
        match mine.last() {
            Some(last) => assert_eq!(last.seq, *seq, "{command}"),
            None => assert!(*seq <= events.len() as u64, "{command} accepted at {seq}, the log ends at {}", events.len()),
        }
    }
    // Each command id appears in one decision only: applied once.
    let mut decisions = std::collections::HashMap::<&str, Vec<u64>>::new();
    for e in &events {
        if let Some(c) = e.correlation_id.as_deref() {
            decisions.entry(c).or_default().push(e.seq);
        }
    }
    for (c, seqs) in &decisions {
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{c} decided more than once: {seqs:?}");
    }
    let mut state = vestibule_actors::session::SessionState::default();
    for e in events.iter().filter(|e| e.seq <= mirror_seq) {
        state = vestibule_actors::session::evolve(
            state,
            &vestibule_actors::session::Event::from_parts(&e.event_type, e.payload.clone()).unwrap(),
        );
    }
    assert_eq!(*mirror, vestibule_actors::session::wire::to_value(&state), "the mirror equals the fold of the log");
    let options = vestibule_gateway::replay::ReplayOptions { to: None, json: true, verify: true, patch: false };
    let (divergence, out) = loop {
        let mut out = Vec::new();
        match vestibule_gateway::replay::replay(&log, id, &options, &mut out).await {
            Ok(divergence) => break (divergence, out),
            Err(e) => assert!(tokio::time::Instant::now() < deadline, "the replay did not finish within 120 s: {e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(divergence.is_none(), "replay --verify: {:?}", divergence.map(|d| (d.seq, d.reason)));
    assert!(String::from_utf8_lossy(&out).lines().count() >= events.len(), "the replay went through every event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_through_another_gateway_is_proxied_to_the_owner() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(&server, LONG_TTL);
    let a = Gateway::start_at(&dir.path().join("a"), &config, "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config, "127.0.0.1:0");
    assert_eq!(a.metric("vestibule_cluster_lease_held").await, 1.0);
    assert_eq!(b.metric("vestibule_cluster_lease_held").await, 1.0);

    let mut accepted = BTreeMap::new();
    let mut on_a = Client::create(&a, json!({})).await;
    for i in 0..3 {
        assert_eq!(run(&mut on_a, i, &mut accepted).await["status"], "accepted");
    }
    let (mut on_b, welcome) = Client::resume(&b, &on_a.session_id, &on_a.resume_token, Some(on_a.seq), on_a.state.clone()).await;
    assert_eq!(welcome["resumed"], true, "{welcome}");
    assert_eq!(welcome["seq"].as_u64().unwrap(), on_a.seq);
    // Commands through B, applied by A's actor: B's client gets result and diff, A's client the diff.
    for i in 3..9 {
        let result = run(&mut on_b, i, &mut accepted).await;
        assert_eq!(result["status"], "accepted", "{result}");
        on_a.catch_up(on_b.seq).await;
    }
    // And the other way round: a command on A reaches B's connection as a diff.
    run(&mut on_a, 9, &mut accepted).await;
    on_b.catch_up(on_a.seq).await;
    assert_eq!(on_a.state, on_b.state);
    assert_eq!(on_a.seq, on_b.seq);
    // One owner: A took the session, B proxied to it.
    assert_eq!(a.metric("vestibule_cluster_acquisitions_total").await, 1.0);
    assert_eq!(b.metric("vestibule_cluster_acquisitions_total").await, 0.0);
    assert_eq!(b.metric("vestibule_cluster_proxied_total").await, 1.0);
    assert_eq!(a.metric("vestibule_cluster_served_links").await, 1.0);
    let (seq, state) = (on_b.seq, on_b.state.clone());
    on_a.close().await;
    on_b.close().await;
    check_log(&server, welcome["sessionId"].as_str().unwrap(), &accepted, &state, seq).await;
}

/// The proxying gateway tells the owner its client's address: host reads sent through it count
/// towards that address's share of the owner's chain calls, not the session's first client's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxied_client_s_host_reads_count_towards_its_own_address_s_share_at_the_owner() {
    // Given two gateways whose node holds every `eth_call` and answers the rest, each allowing 2
    // host reads at the node per client address, and a session on A of a client from 127.0.0.1
    let node = stub::StubNode::start(|_, body| match body["method"].as_str() {
        Some("eth_call") => stub::Reply::Hang,
        Some("eth_chainId") => stub::Reply::Json(stub::answer(body, |_| Ok(json!("0x1")))),
        _ => stub::Reply::Json(stub::answer(body, |_| Ok(json!("0x10")))),
    })
    .await;
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{}host_chain_calls = 8\nhost_chain_calls_per_client = 2\n\n[rpc]\nattempt_timeout = \"10m\"\ncall_timeout = \"20m\"\n\n\
         [networks.\"eip155:1\"]\nrpc_urls = [\"{}\"]\n",
        cluster_config(&server, LONG_TTL),
        node.url()
    );
    let a = Gateway::start_at(&dir.path().join("a"), &config, "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config, "127.0.0.1:0");
    let (first, proxied): (std::net::IpAddr, std::net::IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
    let mut on_a = Client::create_from(&a, first, json!({ "networks": ["eip155:1"] })).await;

    // When a client from 127.0.0.2 resumes it through B and sends three slow reads
    let (mut on_b, welcome) =
        Client::resume_from(&b, proxied, &on_a.session_id, &on_a.resume_token, Some(on_a.seq), on_a.state.clone()).await;
    assert_eq!(welcome["resumed"], true, "{welcome}");
    for n in 0..3 {
        let call = json!([{ "to": "0x0000000000000000000000000000000000000001", "data": format!("0x{n:02x}") }, "latest"]);
        let result =
            on_b.command(json!({ "type": "HostRequest", "requestId": format!("slow-{n}"), "method": "eth_call", "params": call })).await;
        assert_eq!(result["status"], "accepted", "{result}");
    }

    // Then the third is refused for 127.0.0.2's share
    let settled = |s: &Value| (0..3).filter(|n| !s["hostRequests"]["items"][format!("slow-{n}")]["outcome"].is_null()).count();
    wait_for(&mut on_b, "one slow read refused", Duration::from_secs(60), |s| settled(s) == 1).await;
    let limit_exceeded = json!({ "status": "error", "code": -32005, "message": "limit exceeded" });
    let refused: Vec<Value> = (0..3).map(|n| on_b.state["hostRequests"]["items"][format!("slow-{n}")]["outcome"].clone()).collect();
    assert!(refused.contains(&limit_exceeded), "{refused:?}");

    // And a read from the session's first client, on A, is answered from 127.0.0.1's own share
    on_a.catch_up(on_b.seq).await;
    let result = on_a.command(json!({ "type": "HostRequest", "requestId": "fast", "method": "eth_blockNumber", "params": [] })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    wait_for(&mut on_a, "the fast read answered", Duration::from_secs(60), |s| !s["hostRequests"]["items"]["fast"]["outcome"].is_null())
        .await;
    assert_eq!(on_a.state["hostRequests"]["items"]["fast"]["outcome"], json!({ "status": "ok", "result": "0x10" }));
    assert_eq!(b.metric("vestibule_cluster_proxied_total").await, 1.0, "B proxied to A");
}

/// The owner counts the connections proxied to it with its own: a resume through another gateway
/// beyond `limits.connections_per_session` is refused like one on the owner (1013, `rate_limited`),
/// not as a failed route (1011), and is welcomed once the owner's connection has closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxied_resume_beyond_the_sessions_connections_is_rate_limited() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    // `[limits]` is the last table of the cluster configuration.
    let config = format!("{}connections_per_session = 1\n", cluster_config(&server, LONG_TTL));
    let a = Gateway::start_at(&dir.path().join("a"), &config, "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config, "127.0.0.1:0");
    let on_a = Client::create(&a, json!({})).await;
    let (session, token) = (on_a.session_id.clone(), on_a.resume_token.clone());
    let hello = json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "sessionId": session, "resumeToken": token });

    let mut ws = connect(&b.ws_url("test"), ORIGIN).await.unwrap();
    send(&mut ws, hello.clone()).await;
    let (code, frames) = read_until_close(&mut ws).await;
    assert_eq!((code, frames[0]["code"].as_str()), (Some(1013), Some("rate_limited")), "{frames:?}");
    assert_eq!(a.metric("vestibule_connections_refused_by_session_total").await, 1.0);

    on_a.close().await;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut ws = connect(&b.ws_url("test"), ORIGIN).await.unwrap();
        send(&mut ws, hello.clone()).await;
        let first = recv_json_within(&mut ws, Duration::from_secs(30)).await.expect("an answer");
        if first["type"] == "welcome" {
            assert_eq!(first["resumed"], false, "no lastSeq: the whole state");
            break;
        }
        assert_eq!(first["code"], "rate_limited", "{first}");
        assert!(attempts < 200, "the closed connection never made room");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(b.metric("vestibule_cluster_proxied_total").await, 1.0);
}

/// A frame larger than a NATS message may be (nats-server's `max_payload`, here 400 KiB) still
/// reaches a proxied connection: here the welcome of a session whose state holds answered host
/// requests with answers of ~62 KB each (the two the answers' budget keeps) and two pending ones
/// with ~62 KB of params. It once never came (the owner's publish was refused and dropped; the
/// next frame was a gap, 4004, and every resume through a proxy ended the same way), while a direct
/// connection got it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_larger_than_a_nats_message_reaches_a_proxied_connection() {
    // A session's state is bounded well under the default 1 MiB, so the server's messages are made
    // smaller than it can be: 400 KiB, about the least that still carries a 64 KiB command.
    let server = tokio::task::spawn_blocking(|| NatsServer::start_with_config("max_payload: 409600")).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(&server, LONG_TTL);
    let a = Gateway::start_at(&dir.path().join("a"), &config, "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config, "127.0.0.1:0");
    // Custom wallets with long image URLs, which the state holds in its options and connectors.
    let wallets: Vec<Value> = (0..6)
        .map(|i| json!({ "id": format!("w{i}"), "name": format!("W{i}"), "imageUrl": format!("https://img.example/{i}/{}", "x".repeat(7_900)) }))
        .collect();
    let mut on_a = Client::create(&a, json!({ "customWallets": wallets })).await;
    let address = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
    connect_wallet(&mut on_a, address, "0x1").await;
    // Answered signatures keep their answers (the newest, up to 128 KiB together), and signing
    // requests wait on the transaction stack with their params (up to 128 KiB together).
    let large = format!("0x{}", "ab".repeat(31_000));
    for i in 0..16 {
        let request =
            json!({ "type": "HostRequest", "requestId": format!("r{i}"), "method": "personal_sign", "params": ["0x00", address] });
        assert_eq!(on_a.command(request).await["status"], "accepted");
        let asked =
            on_a.state["hostRequests"]["items"][format!("r{i}")]["walletRequest"].as_str().expect("asked of the wallet").to_string();
        let answer = json!({ "type": "ResolveWalletRequest", "requestId": asked, "outcome": { "status": "ok", "result": large } });
        assert_eq!(on_a.command(answer).await["status"], "accepted");
    }
    for i in 16..18 {
        let request = json!({ "type": "HostRequest", "requestId": format!("r{i}"), "method": "personal_sign", "params": [large, address] });
        assert_eq!(on_a.command(request).await["status"], "accepted");
    }
    let state_bytes = on_a.state.to_string().len();
    assert!(state_bytes > 409_600, "the state ({state_bytes} bytes) is over this nats-server's max_payload");

    // The whole state through B, proxied to A.
    let (mut on_b, welcome) = Client::resume(&b, &on_a.session_id, &on_a.resume_token, None, Value::Null).await;
    assert_eq!(welcome["resumed"], false, "{}", welcome["type"]);
    assert_eq!(on_b.state, on_a.state);
    assert_eq!(b.metric("vestibule_cluster_proxied_total").await, 1.0);
    assert_eq!(b.metric("vestibule_cluster_acquisitions_total").await, 0.0);
    // The link goes on after it: a command through B is answered and its diff follows, no gap.
    let result = on_b.command(show_persistent_toast("after the large frame")).await;
    assert_eq!(result["status"], "accepted", "{result}");
    on_a.catch_up(on_b.seq).await;
    assert_eq!(on_a.state, on_b.state);
    on_a.close().await;
    on_b.close().await;
}

/// An attach the proxy gave up on (no answer within NATS's request timeout) is detached by the
/// subject it named for frames, whether the owner attached it before that detach came or attaches
/// it after: nothing else would ever detach it while the proxy lives (it never learnt the link's id).
/// The test plays the proxy `b` (a registered gateway, so the owner keeps serving its links) over
/// NATS itself, to order the attach and the detach as a slow owner would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attach_the_proxy_gave_up_on_is_detached_by_its_subject_for_frames() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = |id: &str| cluster_config(&server, LONG_TTL).replace("[cluster]\n", &format!("[cluster]\ngateway_id = \"{id}\"\n"));
    let owner = Gateway::start_at(&dir.path().join("owner"), &config("owner"), "127.0.0.1:0");
    let _b = Gateway::start_at(&dir.path().join("b"), &config("b"), "127.0.0.1:0");
    let client = Client::create(&owner, json!({})).await;
    let nats = async_nats::connect(&server.url).await.unwrap();
    let gateways = async_nats::jetstream::new(nats.clone()).get_key_value("VESTIBULE_gateways").await.unwrap();
    let epoch =
        |entry: Option<bytes::Bytes>| serde_json::from_slice::<Value>(&entry.expect("registered")).unwrap()["epoch"].as_u64().unwrap();
    let (owner_epoch, b_epoch) = (epoch(gateways.get("owner").await.unwrap()), epoch(gateways.get("b").await.unwrap()));
    let attach = |frames: &str| {
        let request = json!({ "session": client.session_id, "resume_token": client.resume_token, "owner_epoch": owner_epoch,
                               "from": "b", "from_epoch": b_epoch, "frames": frames, "last_seq": null });
        let nats = nats.clone();
        async move {
            let reply = nats.request("VESTIBULE_route.owner.attach", request.to_string().into()).await.unwrap();
            serde_json::from_slice::<Value>(&reply.payload).unwrap()
        }
    };
    let detach = |payload: Value| {
        let nats = nats.clone();
        async move {
            nats.publish("VESTIBULE_route.owner.detach", payload.to_string().into()).await.unwrap();
            nats.flush().await.unwrap();
        }
    };
    let served = || owner.metric("vestibule_cluster_served_links");
    // Detaches are handled in the order they are published: once the second took effect, so did the first.
    let until_served_below = |n: f64| async move {
        for _ in 0..3000 {
            if served().await < n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the owner never handled the probe's detach");
    };

    // Attached, then given up on: the detach by subject removes the link.
    // (Subjects for frames under `b`'s own: the owner publishes a link's frames nowhere else.)
    let given_up = attach("VESTIBULE_route.b.c.1.0.n1").await;
    let probe = attach("VESTIBULE_route.b.c.2.0.n2").await;
    assert_eq!((given_up["status"].as_str(), probe["status"].as_str()), (Some("attached"), Some("attached")), "{given_up} {probe}");
    assert_eq!(served().await, 2.0);
    detach(json!({ "frames": "VESTIBULE_route.b.c.1.0.n1" })).await;
    detach(json!({ "link": probe["link"], "secret": probe["secret"] })).await;
    until_served_below(2.0).await;
    assert_eq!(served().await, 0.0, "the link given up on is detached too");

    // Given up on before the owner attached it: the attach, when it comes, is refused and detached.
    detach(json!({ "frames": "VESTIBULE_route.b.c.3.0.n3" })).await;
    let late = attach("VESTIBULE_route.b.c.3.0.n3").await;
    assert_eq!(late["status"], "failed", "{late}");
    // The positive probe: an attach nobody gave up on is served.
    let probe = attach("VESTIBULE_route.b.c.4.0.n4").await;
    assert_eq!(probe["status"], "attached", "{probe}");
    assert_eq!(served().await, 1.0, "only the probe's link is served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_owners_session_is_taken_over_through_another_gateway() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(&server, TAKEOVER_TTL);
    let mut a = Gateway::start_at(&dir.path().join("a"), &config, "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config, "127.0.0.1:0");
    let mut accepted = BTreeMap::new();
    let mut on_a = Client::create(&a, json!({})).await;
    for i in 0..4 {
        run(&mut on_a, i, &mut accepted).await;
    }
    let (mut on_b, _) = Client::resume(&b, &on_a.session_id, &on_a.resume_token, Some(on_a.seq), on_a.state.clone()).await;
    for i in 4..8 {
        assert_eq!(run(&mut on_b, i, &mut accepted).await["status"], "accepted");
    }
    let (before_seq, before_state) = (on_b.seq, on_b.state.clone());
    let (session, token) = (on_b.session_id.clone(), on_b.resume_token.clone());

    a.kill();
    // B's proxied connection is closed for a resume (1011) once B sees the owner gone.
    let (code, frames) = read_until_close(&mut on_b.ws).await;
    assert_eq!(code, Some(1011), "{frames:?}");
    // The resume through B waits for A's lease to lapse, takes the session over, rehydrates it.
    let (mut resumed, welcome) = Client::resume(&b, &session, &token, Some(before_seq), before_state.clone()).await;
    assert_eq!(welcome["resumed"], true, "{welcome}");
    assert_eq!(welcome["seq"].as_u64().unwrap(), before_seq, "nothing was lost or added");
    assert_eq!(welcome["stateHash"].as_str().unwrap(), vestibule_actors::session::wire::state_hash(&before_state));
    assert_eq!(b.metric("vestibule_cluster_takeovers_total").await, 1.0);
    for i in 8..12 {
        assert_eq!(run(&mut resumed, i, &mut accepted).await["status"], "accepted");
    }
    let (seq, state) = (resumed.seq, resumed.state.clone());
    resumed.close().await;
    check_log(&server, &session, &accepted, &state, seq).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_racing_to_take_over_give_the_session_one_owner() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(&server, TAKEOVER_TTL);
    let mut a = Gateway::start_at(&dir.path().join("a"), &config, "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config, "127.0.0.1:0");
    let c = Gateway::start_at(&dir.path().join("c"), &config, "127.0.0.1:0");
    let mut accepted = BTreeMap::new();
    let mut on_a = Client::create(&a, json!({})).await;
    for i in 0..3 {
        run(&mut on_a, i, &mut accepted).await;
    }
    let (session, token, seq, state) = (on_a.session_id.clone(), on_a.resume_token.clone(), on_a.seq, on_a.state.clone());
    a.kill();
    // B and C are asked for the session at the same time.
    let (on_b, on_c) = tokio::join!(
        Client::resume(&b, &session, &token, Some(seq), state.clone()),
        Client::resume(&c, &session, &token, Some(seq), state.clone()),
    );
    let ((mut on_b, _), (mut on_c, _)) = (on_b, on_c);
    let takeovers = b.metric("vestibule_cluster_takeovers_total").await + c.metric("vestibule_cluster_takeovers_total").await;
    let acquisitions = b.metric("vestibule_cluster_acquisitions_total").await + c.metric("vestibule_cluster_acquisitions_total").await;
    let proxied = b.metric("vestibule_cluster_proxied_total").await + c.metric("vestibule_cluster_proxied_total").await;
    assert_eq!((takeovers, acquisitions, proxied), (1.0, 1.0, 1.0), "one took the session over, the other proxies to it");
    // Both connections see every command, whichever gateway it came through.
    for i in 3..9 {
        let (from, to) = if i % 2 == 0 { (&mut on_b, &mut on_c) } else { (&mut on_c, &mut on_b) };
        assert_eq!(run(from, i, &mut accepted).await["status"], "accepted");
        to.catch_up(from.seq).await;
    }
    assert_eq!(on_b.state, on_c.state);
    let (seq, state) = (on_b.seq, on_b.state.clone());
    on_b.close().await;
    on_c.close().await;
    check_log(&server, &session, &accepted, &state, seq).await;
}

/// A connection that may be cut (its gateway killed, or closed by it): `None` when it is gone.
async fn try_command(client: &mut Client, command: Value) -> Option<Value> {
    let id = client.try_send_command(command).await?;
    loop {
        let frame = recv_json_within(&mut client.ws, Duration::from_secs(20)).await?;
        if frame["type"] == "diff" {
            client.apply_diff(&frame);
        } else if frame["type"] == "result" && frame["commandId"] == id.as_str() {
            if frame["status"] == "accepted" {
                let seq = frame["seq"].as_u64().unwrap();
                while client.seq < seq {
                    match recv_json_within(&mut client.ws, Duration::from_secs(20)).await {
                        Some(diff) => client.apply_diff(&diff),
                        None => break, // accepted all the same; the resume brings the diff
                    }
                }
                client.try_ack().await;
            }
            return Some(frame);
        }
    }
}

/// Resumes `client`'s session with its `lastSeq` through the first of `gateways` (from `start`, in
/// turn) that welcomes it, retrying for up to 120 s (a dead owner's lease must lapse first).
async fn resume_through(gateways: &[&Gateway], start: usize, client: &Client) -> (Client, Value, usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let mut attempt = start;
    loop {
        let gateway = gateways[attempt % gateways.len()];
        if let Ok(mut ws) = connect(&gateway.ws_url("test"), ORIGIN).await {
            let hello = json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "sessionId": client.session_id,
                                "resumeToken": client.resume_token, "lastSeq": client.seq });
            send(&mut ws, hello).await;
            if let Some(welcome) = recv_json_within(&mut ws, Duration::from_secs(30)).await
                && welcome["type"] == "welcome"
            {
                assert_eq!(welcome["resumed"], true, "{welcome}");
                let resumed = Client {
                    ws,
                    session_id: client.session_id.clone(),
                    resume_token: client.resume_token.clone(),
                    seq: client.seq,
                    state: client.state.clone(),
                    diffs: vec![],
                    next_command: client.next_command + 1000,
                };
                return (resumed, welcome, attempt % gateways.len());
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "session {} not resumed within 120 s", client.session_id);
        attempt += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `n` accepted commands on `client`, resuming through `gateways` whenever its connection is cut
/// and retrying transiently refused commands (the log unavailable, a conflict, a busy session)
/// as a client does (bounded: 200 attempts).
async fn accepted_commands(gateways: &[&Gateway], client: &mut Client, from: usize, n: usize, accepted: &mut BTreeMap<String, u64>) {
    let (mut done, mut attempts) = (0, 0);
    while done < n {
        attempts += 1;
        assert!(attempts <= 200, "session {}: {done} of {n} commands accepted after 200 attempts", client.session_id);
        match try_command(client, command(from + done)).await {
            Some(result) if result["status"] == "accepted" => {
                accepted.insert(result["commandId"].as_str().unwrap().to_string(), result["seq"].as_u64().unwrap());
                done += 1;
            }
            Some(result) => {
                // Only the transient refusals (docs/protocol.md), which a client retries.
                let code = result["error"]["code"].as_str().unwrap_or_default();
                assert!(["storage_unavailable", "conflict", "busy"].contains(&code), "{result}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            None => {
                let (resumed, _, _) = resume_through(gateways, attempts, client).await;
                *client = resumed;
            }
        }
    }
}

/// Three gateways on a 3-node NATS cluster (`replicas = 3`). The gateway owning the most sessions
/// (by its `/metrics` acquisitions) is SIGKILLed: every visitor resumes through another gateway with
/// its pre-kill seq and state hash (no gap, no mismatch: each diff is checked), and the dead
/// gateway's sessions are taken over. Then one NATS node is SIGKILLed: commands keep being accepted
/// (refusals while the cluster elects new leaders are retried, cut connections resumed), and every
/// acknowledged command is in the log, once, and the log replays with no divergence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_of_a_gateway_then_of_a_nats_node_on_a_three_node_cluster() {
    let mut nats = tokio::task::spawn_blocking(vestibule_store_jetstream::test_server::NatsCluster::start).await.unwrap();
    let servers = nats.urls.iter().map(|u| format!("{u:?}")).collect::<Vec<_>>().join(", ");
    let config = format!(
        "{CONFIG}\n[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [{servers}]\nreplicas = 3\n\n\
         [cluster]\nenabled = true\nlease_ttl = \"{TAKEOVER_TTL}\"\n\n[limits]\ncommands_per_second = 10000\ncommand_burst = 10000\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut gateways: Vec<Option<Gateway>> =
        (0..3).map(|i| Some(Gateway::start_at(&dir.path().join(format!("g{i}")), &config, "127.0.0.1:0"))).collect();
    // Accepted commands per visitor (command ids are per connection's client).
    let mut accepted: Vec<BTreeMap<String, u64>> = vec![BTreeMap::new(); 10];
    // 10 sessions round-robin (4 on the first gateway), 3 commands each; odd visitors then move to
    // the next gateway (a proxied connection).
    let mut clients = Vec::new();
    for i in 0..10 {
        let mut client = Client::create(gateways[i % 3].as_ref().unwrap(), json!({})).await;
        for c in 0..3 {
            assert_eq!(run(&mut client, c, &mut accepted[i]).await["status"], "accepted");
        }
        if i % 2 == 1 {
            let next = gateways[(i + 1) % 3].as_ref().unwrap();
            let (moved, welcome) =
                Client::resume(next, &client.session_id, &client.resume_token, Some(client.seq), client.state.clone()).await;
            assert_eq!(welcome["resumed"], true);
            client.close().await;
            client = moved;
        }
        clients.push(client);
    }
    let mut owned = Vec::new();
    for g in &gateways {
        owned.push(g.as_ref().unwrap().metric("vestibule_cluster_acquisitions_total").await);
    }
    assert_eq!(owned.iter().sum::<f64>(), 10.0, "one owner per session: {owned:?}");
    let victim = (0..3).max_by(|&a, &b| owned[a].total_cmp(&owned[b]).then(b.cmp(&a))).unwrap();
    gateways[victim].as_mut().unwrap().kill();
    gateways[victim] = None;
    let alive: Vec<&Gateway> = gateways.iter().flatten().collect();

    // Every visitor resumes through another gateway (a live one), with the seq and the state it had.
    for (i, client) in clients.iter_mut().enumerate() {
        let (before_seq, before_state) = (client.seq, client.state.clone());
        let (mut resumed, welcome, _) = resume_through(&alive, i, client).await;
        assert_eq!(welcome["seq"].as_u64().unwrap(), before_seq, "nothing lost or added: {welcome}");
        assert_eq!(welcome["stateHash"].as_str().unwrap(), vestibule_actors::session::wire::state_hash(&before_state));
        std::mem::swap(client, &mut resumed);
        resumed.close().await;
    }
    let mut takeovers = 0.0;
    for g in &alive {
        takeovers += g.metric("vestibule_cluster_takeovers_total").await;
    }
    assert_eq!(takeovers, owned[victim], "the dead gateway's sessions were taken over, once each");
    for (client, accepted) in clients.iter_mut().zip(accepted.iter_mut()) {
        accepted_commands(&alive, client, 3, 3, accepted).await;
    }

    // One NATS node of three dies, the one leading the event stream: R3 keeps a quorum, and the
    // stream elects a new leader.
    let leader = nats.stream_leader("VESTIBULE").await.expect("the stream has a leader");
    nats.kill(leader);
    for (client, accepted) in clients.iter_mut().zip(accepted.iter_mut()) {
        accepted_commands(&alive, client, 6, 3, accepted).await;
    }
    let survivors: Vec<String> = (0..3).filter(|&n| n != leader).map(|n| nats.urls[n].clone()).collect();
    for (client, accepted) in clients.into_iter().zip(accepted.iter()) {
        let (session, seq, state) = (client.session_id.clone(), client.seq, client.state.clone());
        assert_eq!(accepted.len(), 9, "{session}");
        client.close().await;
        check_log_on(&survivors, &session, accepted, &state, seq).await;
    }
}

/// A gateway stopped cleanly (SIGTERM) gives up its registration as it exits: its sessions are
/// taken over at once by the next resume, not after `lease_ttl` (60 s here, so that waiting for a
/// lapse could not pass for the release).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanly_stopped_owners_sessions_are_taken_over_without_waiting_for_the_lease() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = |id: &str| cluster_config(&server, LONG_TTL).replace("[cluster]\n", &format!("[cluster]\ngateway_id = \"{id}\"\n"));
    let mut a = Gateway::start_at(&dir.path().join("a"), &config("gw-a"), "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config("gw-b"), "127.0.0.1:0");
    let mut accepted = BTreeMap::new();
    let mut on_a = Client::create(&a, json!({})).await;
    for i in 0..3 {
        assert_eq!(run(&mut on_a, i, &mut accepted).await["status"], "accepted");
    }
    let (mut on_b, _) = Client::resume(&b, &on_a.session_id, &on_a.resume_token, Some(on_a.seq), on_a.state.clone()).await;
    for i in 3..6 {
        assert_eq!(run(&mut on_b, i, &mut accepted).await["status"], "accepted");
    }
    on_a.catch_up(on_b.seq).await;
    let (before_seq, before_state) = (on_b.seq, on_b.state.clone());
    let (session, token) = (on_b.session_id.clone(), on_b.resume_token.clone());

    assert!(a.terminate().success(), "a clean stop exits 0");
    // Its own visitor was told the server is going away.
    assert_eq!(read_until_close(&mut on_a.ws).await.0, Some(1001));
    // Its registration is gone as it exits, not when it would have lapsed.
    let js =
        vestibule_store_jetstream::async_nats::jetstream::new(vestibule_store_jetstream::async_nats::connect(&server.url).await.unwrap());
    let registrations = js.get_key_value("VESTIBULE_gateways").await.unwrap();
    let entry = registrations.entry("gw-a").await.unwrap();
    assert!(
        entry.as_ref().is_none_or(|e| e.operation != vestibule_store_jetstream::async_nats::jetstream::kv::Operation::Put),
        "{entry:?}"
    );
    assert!(registrations.entry("gw-b").await.unwrap().is_some(), "B is still registered (the read works)");
    // The proxied visitor is closed for a resume, and the resume through B takes the session over.
    let (code, frames) = read_until_close(&mut on_b.ws).await;
    assert_eq!(code, Some(1001), "{frames:?}");
    let resume = Client::resume(&b, &session, &token, Some(before_seq), before_state.clone());
    let (mut resumed, welcome) = tokio::time::timeout(Duration::from_secs(30), resume).await.expect("taken over well within lease_ttl");
    assert_eq!(welcome["resumed"], true, "{welcome}");
    assert_eq!(welcome["seq"].as_u64().unwrap(), before_seq, "nothing was lost or added");
    assert_eq!(welcome["stateHash"].as_str().unwrap(), vestibule_actors::session::wire::state_hash(&before_state));
    assert_eq!(b.metric("vestibule_cluster_takeovers_total").await, 1.0);
    for i in 6..9 {
        assert_eq!(run(&mut resumed, i, &mut accepted).await["status"], "accepted");
    }
    let (seq, state) = (resumed.seq, resumed.state.clone());
    resumed.close().await;
    check_log(&server, &session, &accepted, &state, seq).await;
}

/// A TCP relay to the NATS server that the test can cut (every relayed connection dropped, new ones
/// closed at once) and heal: a network partition between one gateway and NATS.
struct Partition {
    url: String,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    relays: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Partition {
    async fn to(server: &NatsServer) -> Partition {
        let upstream = server.url.trim_start_matches("nats://").to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("nats://{}", listener.local_addr().unwrap());
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let relays = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (cut2, relays2) = (cut.clone(), relays.clone());
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if cut2.load(std::sync::atomic::Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let upstream = upstream.clone();
                let relay = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                relays2.lock().unwrap().push(relay.abort_handle());
            }
        });
        Partition { url, cut, relays }
    }

    fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        for relay in self.relays.lock().unwrap().drain(..) {
            relay.abort();
        }
    }

    fn heal(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Polls `/healthz` until it answers `status` (a bound of 60 s, not a speed).
async fn wait_for_health(gateway: &Gateway, status: u16) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (code, body) = gateway.http_get("/healthz", None).await;
        if code == status {
            return body;
        }
        assert!(tokio::time::Instant::now() < deadline, "/healthz stayed {code} {body}, waiting for {status}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A partition between one gateway and NATS (the others fine): the cut-off gateway reports itself
/// unhealthy and stops its sessions (1001); its visitor resumes through another gateway, which takes
/// the session over once the cut-off gateway's registration lapsed, with no gap; once the partition
/// heals the gateway registers again, is healthy, and proxies a resume to the session's new owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_cut_off_from_nats_gives_its_sessions_up_and_rejoins_when_the_partition_heals() {
    let server = start_server().await;
    let partition = Partition::to(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(&server, TAKEOVER_TTL);
    let a = Gateway::start_at(&dir.path().join("a"), &config.replace(&server.url, &partition.url), "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config, "127.0.0.1:0");
    wait_for_health(&a, 200).await;
    let mut accepted = BTreeMap::new();
    let mut on_a = Client::create(&a, json!({})).await;
    for i in 0..3 {
        assert_eq!(run(&mut on_a, i, &mut accepted).await["status"], "accepted");
    }
    let (before_seq, before_state) = (on_a.seq, on_a.state.clone());
    let (session, token) = (on_a.session_id.clone(), on_a.resume_token.clone());

    partition.cut();
    let body = wait_for_health(&a, 503).await;
    assert!(body.contains("store_failed") || body.contains("no_cluster_lease"), "{body}");
    // After TTL/2 without a renewal A stops its sessions: its visitor is told to resume elsewhere.
    let (code, frames) = read_until_close(&mut on_a.ws).await;
    assert_eq!(code, Some(1001), "{frames:?}");
    let (mut on_b, welcome) = Client::resume(&b, &session, &token, Some(before_seq), before_state.clone()).await;
    assert_eq!(welcome["resumed"], true, "{welcome}");
    assert_eq!(welcome["seq"].as_u64().unwrap(), before_seq, "nothing was lost or added");
    assert_eq!(welcome["stateHash"].as_str().unwrap(), vestibule_actors::session::wire::state_hash(&before_state));
    assert_eq!(b.metric("vestibule_cluster_takeovers_total").await, 1.0);
    for i in 3..6 {
        assert_eq!(run(&mut on_b, i, &mut accepted).await["status"], "accepted");
    }

    partition.heal();
    wait_for_health(&a, 200).await;
    assert_eq!(a.metric("vestibule_cluster_lease_held").await, 1.0, "registered again");
    // A resume through A now reaches the new owner, B.
    let (mut again_on_a, welcome) = Client::resume(&a, &session, &token, Some(on_b.seq), on_b.state.clone()).await;
    assert_eq!(welcome["resumed"], true, "{welcome}");
    assert_eq!(a.metric("vestibule_cluster_proxied_total").await, 1.0);
    for i in 6..9 {
        assert_eq!(run(&mut again_on_a, i, &mut accepted).await["status"], "accepted");
        on_b.catch_up(again_on_a.seq).await;
    }
    assert_eq!(again_on_a.state, on_b.state);
    let (seq, state) = (on_b.seq, on_b.state.clone());
    again_on_a.close().await;
    on_b.close().await;
    check_log(&server, &session, &accepted, &state, seq).await;
}
