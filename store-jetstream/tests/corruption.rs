//! What only JetStream can show: records that cannot be decoded and holes in a stream, written
//! past the log's checks, are `Corrupt` with their place.

use vestibule_store::contract::{events, new_session};
use vestibule_store::{EventLog, SessionId, StoreError};
use vestibule_store_jetstream::test_server::NatsServer;
use vestibule_store_jetstream::{JetStreamConfig, JetStreamEventLog};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_records_and_holes_are_corrupt_with_their_place() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let log = JetStreamEventLog::open(JetStreamConfig::at([server.url.clone()])).await.unwrap();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.append(s, 0, events(1..=2)).await.unwrap();
    assert!(log.raw_event(s, 2).await.unwrap().is_some());

    log.inject_raw_event(s, 3, vec![9, 9, 9]).await.unwrap();
    match log.read(s, 1, None).await {
        Err(StoreError::Corrupt { session, seq: 3, reason }) => {
            assert_eq!(session, s);
            assert!(reason.contains("format"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A hole: seq 5 stored after 3, no 4.
    let good = log.raw_event(s, 2).await.unwrap().unwrap();
    log.inject_raw_event(s, 5, good).await.unwrap();
    match log.read(s, 4, None).await {
        Err(StoreError::Corrupt { seq: 4, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_could_drop_events_is_refused() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let client = async_nats::connect(&server.url).await.unwrap();
    let js = async_nats::jetstream::new(client);
    js.create_stream(async_nats::jetstream::stream::Config {
        name: "LIMITED".into(),
        subjects: vec!["LIMITED.>".into()],
        max_messages_per_subject: 10,
        allow_atomic_publish: true,
        ..Default::default()
    })
    .await
    .unwrap();
    let err = JetStreamEventLog::open(JetStreamConfig::at([server.url.clone()]).with_stream("LIMITED")).await.unwrap_err();
    assert!(err.to_string().contains("drop events"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_events_are_refused() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let config = JetStreamConfig { max_event_bytes: 100, ..JetStreamConfig::at([server.url.clone()]) };
    let log = JetStreamEventLog::open(config).await.unwrap();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    let mut big = events(1..=1);
    big[0].payload = serde_json::json!({ "blob": "x".repeat(200) }).into();
    assert!(matches!(log.append(s, 0, big).await, Err(StoreError::InvalidAppend(_))));
    assert_eq!(log.latest_seq(s).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_appends_survive_a_server_kill() {
    let mut server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let s = SessionId::random();
    {
        let log = JetStreamEventLog::open(JetStreamConfig::at([server.url.clone()])).await.unwrap();
        log.create_session(s, new_session("p")).await.unwrap();
        let mut seq = 0;
        for _ in 0..20 {
            seq = log.append(s, seq, events(seq + 1..=seq + 3)).await.unwrap().last_seq;
        }
    }
    tokio::task::spawn_blocking(move || {
        server.restart();
        server
    })
    .await
    .map(|server| async move {
        let log = JetStreamEventLog::open(JetStreamConfig::at([server.url.clone()])).await.unwrap();
        let all = log.read(s, 1, None).await.unwrap();
        assert_eq!(all.len(), 60);
        assert!(all.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
        log.append(s, 60, events(61..=61)).await.unwrap();
    })
    .unwrap()
    .await;
}

/// `/healthz` reads `failure()`: it must say so while NATS is away, and clear when it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_is_unavailable_while_nats_is_down_and_healthy_again_after() {
    let mut server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let log = JetStreamEventLog::open(JetStreamConfig::at([server.url.clone()])).await.unwrap();
    assert_eq!(log.failure(), None, "connected at first");

    server = tokio::task::spawn_blocking(move || {
        server.kill();
        server
    })
    .await
    .unwrap();
    let failure = wait_for(|| log.failure()).await.expect("a failure once the server is gone");
    assert!(failure.contains("NATS"), "{failure}");

    let server = tokio::task::spawn_blocking(move || {
        server.restart();
        server
    })
    .await
    .unwrap();
    wait_for(|| log.failure().is_none().then_some(())).await.expect("healthy again after the reconnect");
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    drop(server);
}

/// Polls `probe` until it gives a value; the bound only ends a hung test (reconnects back off).
async fn wait_for<T>(mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    for _ in 0..1200 {
        if let Some(value) = probe() {
            return Some(value);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    None
}
