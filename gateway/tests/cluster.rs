//! Several real `vestibule serve` processes on one real nats-server, `[cluster] enabled`: one owner
//! per session. A resume through another gateway is proxied to the owner (commands applied once, in
//! order, diffs relayed to every connection); a SIGKILLed owner's session is taken over through
//! another gateway once its lease lapses, with no gap, no hash mismatch and every acknowledged
//! command in the log; two gateways racing to take the same session over give it one owner.

mod support;

use std::collections::BTreeMap;

use serde_json::{json, Value};
use support::*;
use vestibule_store::EventLog as _;
use vestibule_store_jetstream::test_server::NatsServer;

fn cluster_config(server: &NatsServer) -> String {
    format!(
        "{CONFIG}\n[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"{}\"]\n\n[cluster]\nenabled = true\nlease_ttl = \"2s\"\n\n\
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
    let log = vestibule_store_jetstream::JetStreamEventLog::open_with_upcaster(
        vestibule_store_jetstream::JetStreamConfig::at([server.url.clone()]),
        std::sync::Arc::new(vestibule_actors::session::upcast::SessionUpcaster),
    )
    .await
    .unwrap();
    let id: vestibule_store::SessionId = session.parse().unwrap();
    let events = log.read(id, 1, None).await.unwrap();
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
        state = vestibule_actors::session::evolve(state, &vestibule_actors::session::Event::from_parts(&e.event_type, e.payload.clone()).unwrap());
    }
    assert_eq!(*mirror, vestibule_actors::session::wire::to_value(&state), "the mirror equals the fold of the log");
    let options = vestibule_gateway::replay::ReplayOptions { to: None, json: true, verify: true, patch: false };
    let mut out = Vec::new();
    let divergence = vestibule_gateway::replay::replay(&log, id, &options, &mut out).await.unwrap();
    assert!(divergence.is_none(), "replay --verify: {:?}", divergence.map(|d| (d.seq, d.reason)));
    assert!(String::from_utf8_lossy(&out).lines().count() >= events.len(), "the replay went through every event");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_through_another_gateway_is_proxied_to_the_owner() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(&server);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_owners_session_is_taken_over_through_another_gateway() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(&server);
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
    let config = cluster_config(&server);
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
