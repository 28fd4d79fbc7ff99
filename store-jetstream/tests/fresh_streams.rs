//! A log opened on streams just created takes writes at once. Each server binds a new stream's
//! subjects a moment after the stream exists, and a publish before then has no responders ("no
//! stream found for given subject", found as a clean-clone failure of `cluster_appends`), so
//! opening waits until every stream of the log takes publishes, probing without storing anything.

use std::time::Duration;

use vestibule_store::contract::{events, new_session};
use vestibule_store::{EventLog, SessionId, SessionStatus, StoreError};
use vestibule_store_jetstream::test_server::{NatsCluster, NatsServer};
use vestibule_store_jetstream::{JetStreamConfig, JetStreamEventLog, probe_publish};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_on_streams_just_created_take_writes_at_once_through_any_node() {
    let nats = tokio::task::spawn_blocking(NatsCluster::start).await.unwrap();
    for i in 0..6 {
        let config =
            JetStreamConfig { replicas: 3, open_timeout: Duration::from_secs(120), ..JetStreamConfig::at([nats.urls[i % 3].clone()]) }
                .with_stream(format!("FRESH{i}"));
        let log = JetStreamEventLog::open(config).await.unwrap();
        let s = SessionId::random();
        log.create_session(s, new_session("p")).await.unwrap_or_else(|e| panic!("log {i}: create: {e}"));
        log.append(s, 0, events(1..=2)).await.unwrap_or_else(|e| panic!("log {i}: append: {e}"));
        log.set_status(s, SessionStatus::Ended).await.unwrap_or_else(|e| panic!("log {i}: status: {e}"));
        assert_eq!(log.read(s, 1, None).await.unwrap().len(), 2);
    }
}

#[tokio::test]
async fn the_probe_tells_a_stream_that_hears_from_none_and_stores_nothing() {
    let nats = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let log = JetStreamEventLog::open(JetStreamConfig::at([nats.url.clone()]).with_stream("PROBED")).await.unwrap();
    let js = async_nats::jetstream::new(async_nats::connect(&nats.url).await.unwrap());
    let messages =
        |js: async_nats::jetstream::Context| async move { js.get_stream("PROBED").await.unwrap().info().await.unwrap().state.messages };
    let before = messages(js.clone()).await;

    probe_publish(&js, "PROBED.anything".into()).await.expect("the event stream hears its subjects");
    probe_publish(&js, "$KV.PROBED_status.open-probe".into()).await.expect("the status bucket hears its keys");
    match probe_publish(&js, "NO_STREAM_HERE.x".into()).await {
        Err(StoreError::Engine(message)) => assert!(message.contains("does not take publishes on NO_STREAM_HERE.x yet"), "{message}"),
        other => panic!("{other:?}"),
    }

    assert_eq!(messages(js).await, before, "a probe stores nothing");
    drop(log);
}
