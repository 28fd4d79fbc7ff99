//! Concurrent appends of many sessions on a 3-node cluster (R3). The stream's leader refuses an
//! expected-sequence check it cannot make while other proposals are in flight (error 10164, nothing
//! stored); the log tries again while the session's last event is still the expected one, so
//! concurrent sessions never see it (found by `vestibule bench store --backend jetstream` at 16
//! sessions on R3). A real conflict is still a `Conflict`.

use std::sync::Arc;
use std::time::Duration;

use vestibule_store::contract::{events, new_session};
use vestibule_store::{EventLog, SessionId, StoreError};
use vestibule_store_jetstream::test_server::NatsCluster;
use vestibule_store_jetstream::{JetStreamConfig, JetStreamEventLog};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_append_on_r3_without_spurious_refusals() {
    let nats = tokio::task::spawn_blocking(NatsCluster::start).await.unwrap();
    let config = JetStreamConfig { replicas: 3, open_timeout: Duration::from_secs(120), ..JetStreamConfig::at(nats.urls.clone()) };
    let log = Arc::new(JetStreamEventLog::open(config).await.unwrap());
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let log = log.clone();
            tokio::spawn(async move {
                let s = SessionId::random();
                log.create_session(s, new_session("p")).await?;
                // Back to back, as the actors and the bench do (each append expects what the last returned).
                let mut seq = 0;
                for i in 0..100u64 {
                    // Every tenth append is a multi-event batch.
                    let batch = if i % 10 == 9 { events(seq + 1..=seq + 2) } else { events(seq + 1..=seq + 1) };
                    seq = log.append(s, seq, batch).await?.last_seq;
                }
                Ok::<_, StoreError>(s)
            })
        })
        .collect();
    let mut sessions = Vec::new();
    for t in tasks {
        sessions.push(t.await.unwrap().expect("no append refused"));
    }
    for s in &sessions {
        assert_eq!(log.read(*s, 1, None).await.unwrap().len(), 110);
    }
    // A stale expected seq is still a conflict that writes nothing.
    match log.append(sessions[0], 3, events(4..=4)).await {
        Err(StoreError::Conflict { expected: 3, actual: 110, .. }) => {}
        other => panic!("{other:?}"),
    }
}
