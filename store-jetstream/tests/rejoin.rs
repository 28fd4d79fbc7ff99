//! A NATS node that was SIGKILLed rejoins its cluster and catches up: events appended while it was
//! down are on it once it is back. Proof from the outside: once it reports itself current, one of
//! the other nodes is killed (a quorum must remain), the rejoined node is made the stream's leader
//! (leader step-downs until it is elected), and the log read through it has every event. Attempts
//! are bounded and counted; no assertion depends on how long anything took.

use std::time::Duration;

use vestibule_store::contract::{events, new_session};
use vestibule_store::{EventLog, SessionId};
use vestibule_store_jetstream::test_server::NatsCluster;
use vestibule_store_jetstream::{JetStreamConfig, JetStreamEventLog};

const STREAM: &str = "VESTIBULE";

fn config(nats: &NatsCluster) -> JetStreamConfig {
    JetStreamConfig {
        replicas: 3,
        request_timeout: Duration::from_secs(2),
        // Generous: a bound for a loaded machine, not an expectation.
        open_timeout: Duration::from_secs(120),
        ..JetStreamConfig::at(nats.urls.clone())
    }
}

/// Appends `from..=to` after `expected`, retrying while the cluster elects a leader (bounded).
async fn append_through_failover(log: &JetStreamEventLog, s: SessionId, expected: u64, from: u64, to: u64) {
    for attempt in 1..=60 {
        match log.append(s, expected, events(from..=to)).await {
            Ok(_) => return,
            Err(e) => eprintln!("append attempt {attempt}: {e}"),
        }
        // A stored append answered with an error (a lost acknowledgement) shows as the seq moved.
        if let Ok(read) = log.read(s, 1, None).await
            && read.len() as u64 >= to
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("no append of {from}..={to} was accepted in 60 attempts");
}

/// The stream's replica `name` as the stream's info reports it: (current, lag).
async fn replica_state(urls: &[String], name: &str) -> Option<(bool, u64)> {
    let client = async_nats::connect(urls.to_vec()).await.ok()?;
    let js = async_nats::jetstream::new(client);
    let mut stream = js.get_stream(STREAM).await.ok()?;
    let info = stream.info().await.ok()?;
    let cluster = info.cluster.as_ref()?;
    if cluster.leader.as_deref() == Some(name) {
        return Some((true, 0));
    }
    cluster.replicas.iter().find(|r| r.name == name).map(|r| (r.current && !r.offline, r.lag.unwrap_or(0)))
}

/// Asks the stream's leader to step down (a new leader is elected among the current replicas).
async fn step_down(urls: &[String]) {
    if let Ok(client) = async_nats::connect(urls.to_vec()).await {
        let _ = client.request(format!("$JS.API.STREAM.LEADER.STEPDOWN.{STREAM}"), "".into()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_rejoins_catches_up_and_serves_every_event_as_leader() {
    let mut nats = tokio::task::spawn_blocking(NatsCluster::start).await.unwrap();
    let log = JetStreamEventLog::open(config(&nats)).await.expect("the healthy cluster opens");
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.append(s, 0, events(1..=3)).await.unwrap();

    // Given node 0 down while events 4..=6 are appended on the other two
    nats.kill(0);
    append_through_failover(&log, s, 3, 4, 6).await;

    // When it restarts, it rejoins and reports itself current (bounded polls)
    nats.restart(0);
    let mut caught_up = false;
    for _ in 0..300 {
        if let Some((true, 0)) = replica_state(&nats.urls, "n0").await {
            caught_up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(caught_up, "n0 never reported itself current with no lag after rejoining");

    // Then with node 1 down, n0 made the leader, the log read through it has all six events.
    nats.kill(1);
    let mut led_by_n0 = false;
    for _ in 0..40 {
        if nats.stream_leader(STREAM).await == Some(0) {
            led_by_n0 = true;
            break;
        }
        step_down(&nats.urls).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(led_by_n0, "n0 never became the stream's leader");
    let mut read = None;
    for _ in 0..60 {
        match log.read(s, 1, None).await {
            Ok(events) => {
                read = Some(events);
                break;
            }
            Err(e) => eprintln!("read through n0: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let read = read.expect("the log answers reads through n0");
    assert_eq!(read.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=6).collect::<Vec<u64>>());
    // And it takes appends.
    append_through_failover(&log, s, 6, 7, 7).await;
}
