//! SIGKILL the gateway mid-stream, restart it on the same directory, resume: every command that got
//! an accepted result is in the log, every client's mirror equals the fold of the log, and no client
//! saw a gap or a repeat (the mirror checks seq continuity and the hash on every diff).
//!
//! Run on every event log: sled and the segment log in the data directory, and NATS JetStream on a
//! nats-server of the test's own (which outlives the gateways it serves).

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use vestibule_store::EventLog as _;

/// A client's record: its session, what it saw, and the commands the server accepted.
struct Visitor {
    client: Option<Client>,
    session: String,
    token: String,
    seq: u64,
    state: Value,
    accepted: BTreeMap<String, u64>,
}

/// The next JSON frame, `None` once the connection is closed (the gateway died). An open connection
/// on which nothing comes for 30 s (a generous bound for a loaded machine) fails the test: only a
/// closed socket counts as broken, never a slow answer.
async fn next_frame(client: &mut Client) -> Option<Value> {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    loop {
        match tokio::time::timeout(Duration::from_secs(30), client.ws.next()).await {
            Err(_) => panic!("session {}: nothing within 30 s on an open connection", client.session_id),
            Ok(None) | Ok(Some(Err(_))) | Ok(Some(Ok(Message::Close(_)))) => return None,
            Ok(Some(Ok(Message::Text(text)))) => return Some(serde_json::from_str(&text).expect("server frames are JSON")),
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// Sends commands until the connection breaks; results and diffs are checked as they come. Every
/// accepted command is counted in `accepted_so_far`.
async fn drive(visitor: &mut Visitor, n: usize, round: usize, accepted_so_far: &AtomicUsize) {
    let Some(client) = visitor.client.as_mut() else { return };
    for i in 0..n {
        let command = match i % 4 {
            0 => show_toast(&format!("round {round} toast {i}")),
            1 => json!({ "type": "OpenModal" }),
            2 => json!({ "type": "CloseModal" }),
            _ => json!({ "type": "SetToastHover", "hovered": i % 8 == 3 }),
        };
        // The gateway may die at any moment: a failed send ends the round like a failed read.
        let Some(id) = client.try_send_command(command).await else {
            visitor.seq = client.seq;
            visitor.state = client.state.clone();
            visitor.client = None;
            return;
        };
        // Read the result (diffs before it are applied and checked); a dead connection ends the round.
        let result = loop {
            match next_frame(client).await {
                None => {
                    visitor.seq = client.seq;
                    visitor.state = client.state.clone();
                    visitor.client = None;
                    return;
                }
                Some(frame) if frame["type"] == "diff" => client.apply_diff(&frame),
                Some(frame) => break frame,
            }
        };
        if result["type"] == "result" && result["status"] == "accepted" {
            assert_eq!(result["commandId"], id.as_str());
            visitor.accepted.insert(id, result["seq"].as_u64().unwrap());
            accepted_so_far.fetch_add(1, Ordering::SeqCst);
        }
        if !client.try_ack().await {
            visitor.seq = client.seq;
            visitor.state = client.state.clone();
            visitor.client = None;
            return;
        }
    }
    visitor.seq = client.seq;
    visitor.state = client.state.clone();
}

/// Where the gateways of one test keep their log.
enum Backend {
    Sled,
    Segments,
    JetStream(vestibule_store_jetstream::test_server::NatsServer),
}

impl Backend {
    fn config(&self) -> String {
        match self {
            Backend::Sled => String::new(),
            Backend::Segments => "[store]\nbackend = \"segments\"\n".into(),
            Backend::JetStream(server) => {
                format!("[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"{}\"]\n", server.url)
            }
        }
    }

    /// Every event of a session, read through the backend the gateways used.
    async fn read(&self, data: &std::path::Path, session: &str) -> Vec<vestibule_store::Envelope> {
        let id: vestibule_store::SessionId = session.parse().unwrap();
        match self {
            Backend::Sled | Backend::Segments => {
                let log = vestibule_gateway::store::open_at(vestibule_store::StoreConfig::at(data).with_lock_wait_ms(5000)).unwrap();
                log.read(id, 1, None).await.unwrap()
            }
            Backend::JetStream(server) => {
                let config = vestibule_store_jetstream::JetStreamConfig::at([server.url.clone()]);
                let log = vestibule_store_jetstream::JetStreamEventLog::open(config).await.unwrap();
                log.read(id, 1, None).await.unwrap()
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_then_resume_loses_no_accepted_command() {
    sigkill_mid_stream_then_resume(Backend::Sled).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_then_resume_loses_no_accepted_command_on_the_segment_log() {
    sigkill_mid_stream_then_resume(Backend::Segments).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_then_resume_loses_no_accepted_command_on_jetstream() {
    let server = tokio::task::spawn_blocking(vestibule_store_jetstream::test_server::NatsServer::start).await.unwrap();
    sigkill_mid_stream_then_resume(Backend::JetStream(server)).await;
}

async fn sigkill_mid_stream_then_resume(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = format!("{CONFIG}\n{}\n[limits]\ncommands_per_second = 10000\ncommand_burst = 10000\n", backend.config());
    let mut gateway = Gateway::start_at(&data, &config, "127.0.0.1:0");
    let mut visitors = Vec::new();
    for _ in 0..6 {
        let client = Client::create(&gateway, json!({})).await;
        visitors.push(Visitor {
            session: client.session_id.clone(),
            token: client.resume_token.clone(),
            seq: client.seq,
            state: client.state.clone(),
            client: Some(client),
            accepted: BTreeMap::new(),
        });
    }
    let mut kills = 0;
    for round in 0..4 {
        // Everyone drives concurrently; the gateway dies in the middle of it, after a random number
        // of accepted commands (counted, not timed: a slow machine gets the same test).
        let accepted_this_round = Arc::new(AtomicUsize::new(0));
        let still_driving = Arc::new(AtomicUsize::new(visitors.len()));
        let kill_at = 30 + (rand::random::<u32>() % 50) as usize;
        let mut tasks = tokio::task::JoinSet::new();
        for mut v in visitors.drain(..) {
            let (accepted, driving) = (accepted_this_round.clone(), still_driving.clone());
            tasks.spawn(async move {
                drive(&mut v, 100_000, round, &accepted).await;
                driving.fetch_sub(1, Ordering::SeqCst);
                v
            });
        }
        // Waits for the count, or for every visitor to have stopped (its connection broke).
        while accepted_this_round.load(Ordering::SeqCst) < kill_at && still_driving.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        gateway.kill();
        while let Some(v) = tasks.join_next().await {
            visitors.push(v.unwrap());
        }
        kills += 1;
        gateway = Gateway::start_at(&data, &config, "127.0.0.1:0");
        // Resume where each mirror stands: exactly the missed diffs follow, checked one by one.
        for v in &mut visitors {
            let (mut client, welcome) = Client::resume(&gateway, &v.session, &v.token, Some(v.seq), v.state.clone()).await;
            // Command ids are unique per session: a reused id would get its first answer again.
            client.next_command = (round as u64 + 1) * 100_000;
            let server_seq = welcome["seq"].as_u64().unwrap();
            client.catch_up(server_seq).await;
            v.seq = client.seq;
            v.state = client.state.clone();
            v.client = Some(client);
        }
    }
    let after = AtomicUsize::new(0);
    for v in &mut visitors {
        drive(v, 5, 99, &after).await;
        // The last command's diff follows its result: read it before leaving.
        let mut client = v.client.take().expect("the connection stays open after the last restart");
        if let Some(&last_accepted) = v.accepted.values().max() {
            client.catch_up(last_accepted).await;
        }
        v.seq = client.seq;
        v.state = client.state.clone();
        client.close().await;
    }
    gateway.terminate();

    let mut accepted = 0;
    let mut lost = 0;
    for v in &visitors {
        let events = backend.read(&data, &v.session).await;
        for (command, seq) in &v.accepted {
            accepted += 1;
            // An accepted command that changed the state has events with its id ending at its seq;
            // one that changed nothing is accepted at a seq the log reaches.
            let mine: Vec<_> = events.iter().filter(|e| e.correlation_id.as_deref() == Some(command)).collect();
            let ok = match mine.last() {
                Some(last) => last.seq == *seq,
                None => *seq <= events.len() as u64,
            };
            if !ok {
                lost += 1;
                eprintln!("LOST: {command} accepted at seq {seq}; the log ends at {}", events.len());
            }
        }
        // After the client left, deadlines (a toast's re-show or auto-dismiss) may still have
        // appended events; everything else in the log, the mirror saw.
        let last = events.last().map_or(0, |e| e.seq);
        assert!(v.seq <= last);
        assert!(
            events.iter().filter(|e| e.seq > v.seq).all(|e| e.correlation_id.as_deref().is_some_and(|c| c.starts_with("timer:"))),
            "only timer events follow what the mirror saw"
        );
        let mut state = vestibule_actors::session::SessionState::default();
        for e in events.iter().filter(|e| e.seq <= v.seq) {
            state = vestibule_actors::session::evolve(
                state,
                &vestibule_actors::session::Event::from_parts(&e.event_type, e.payload.clone()).unwrap(),
            );
        }
        assert_eq!(v.state, vestibule_actors::session::wire::to_value(&state), "the mirror equals the fold of the log at its seq");
    }
    let name = match backend {
        Backend::Sled => "sled",
        Backend::Segments => "segments",
        Backend::JetStream(_) => "jetstream",
    };
    println!("gateway crash test ({name}): kills={kills} accepted={accepted} lost={lost} gaps=0");
    assert!(accepted > 100, "the test drove too few commands ({accepted})");
    assert_eq!(lost, 0);
}
