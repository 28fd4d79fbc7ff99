//! Snapshots larger than one NATS message (nats-server's `max_payload`, 1 MiB by default): a session
//! holding its most pending requests, each near the frame limit, has a state of about 2 MB. They
//! are put in parts; a reader gets the newest snapshot whole, and a replaced snapshot's parts do not
//! stay behind.

use serde_json::json;
use vestibule_store::{EventLog, NewSession, SessionId, Snapshot};
use vestibule_store_jetstream::test_server::NatsServer;
use vestibule_store_jetstream::{JetStreamConfig, JetStreamEventLog, async_nats};

fn snapshot(seq: u64, fill: &str, bytes: usize) -> Snapshot {
    Snapshot { seq, schema_version: 2, time_ms: seq, state: json!({ "fill": fill.repeat(bytes) }).into(), log_bytes: Some(seq) }
}

/// Messages in the snapshot bucket's stream (history 1: one per key, parts included).
async fn stored_messages(server: &NatsServer) -> u64 {
    let client = async_nats::connect(&server.url).await.unwrap();
    let mut stream = async_nats::jetstream::new(client).get_stream("KV_VESTIBULE_snapshots").await.unwrap();
    stream.info().await.unwrap().state.messages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_of_megabytes_reads_back_whole_and_leaves_no_parts_behind_when_replaced() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let log = JetStreamEventLog::open(JetStreamConfig::at([server.url.clone()])).await.unwrap();
    let s = SessionId::random();
    log.create_session(s, NewSession { project: "p".into(), created_ms: 0, resume_token_hash: None }).await.unwrap();
    log.append(s, 0, vestibule_store::contract::events(1..=3)).await.unwrap();

    // The positive probe: a small snapshot is one message.
    log.put_snapshot(s, snapshot(1, "s", 10)).await.unwrap();
    assert_eq!(stored_messages(&server).await, 1);

    let first = snapshot(2, "a", 3 << 20);
    log.put_snapshot(s, first.clone()).await.unwrap();
    assert_eq!(log.get_snapshot(s, 2).await.unwrap(), Some(first));
    assert_eq!(stored_messages(&server).await, 1 + 4, "a manifest and four parts of under 1 MiB");

    // Replaced by another large one, then by a small one: the newest, whole, and only its messages.
    let second = snapshot(3, "b", (5 << 20) / 2);
    log.put_snapshot(s, second.clone()).await.unwrap();
    assert_eq!(log.get_snapshot(s, 2).await.unwrap(), Some(second));
    assert_eq!(stored_messages(&server).await, 1 + 3);
    let small = snapshot(3, "c", 10);
    log.put_snapshot(s, small.clone()).await.unwrap();
    assert_eq!(log.get_snapshot(s, 2).await.unwrap(), Some(small));
    assert_eq!(stored_messages(&server).await, 1);

    // Deleting the session's snapshots deletes their parts too.
    log.put_snapshot(s, snapshot(3, "d", 3 << 20)).await.unwrap();
    log.delete_snapshots(Some(s)).await.unwrap();
    assert_eq!(log.get_snapshot(s, 2).await.unwrap(), None);
    assert_eq!(stored_messages(&server).await, 0);
}
