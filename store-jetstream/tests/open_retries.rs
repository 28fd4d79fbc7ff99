//! Opening the log retries while NATS cannot answer: right after the stream leader's node is
//! SIGKILLed (the cluster elects new leaders), and while a cluster has lost its quorum (it opens
//! once a node is back; with no node back it fails naming the servers). Attempts are counted; no
//! assertion depends on how long anything took.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use vestibule_store::contract::{events, new_session};
use vestibule_store::{EventLog, NoUpcasting, SessionId};
use vestibule_store_jetstream::test_server::NatsCluster;
use vestibule_store_jetstream::{JetStreamConfig, JetStreamEventLog, probe_publish};

fn config(nats: &NatsCluster) -> JetStreamConfig {
    JetStreamConfig {
        replicas: 3,
        request_timeout: Duration::from_secs(2),
        // Generous: a bound for a loaded machine, not an expectation.
        open_timeout: Duration::from_secs(120),
        ..JetStreamConfig::at(nats.urls.clone())
    }
}

/// `config`, with a request timeout no loaded machine reaches: for the opens on a healthy cluster,
/// where an attempt that timed out would be the machine's slowness, not the cluster's state.
fn patient(nats: &NatsCluster) -> JetStreamConfig {
    JetStreamConfig { request_timeout: Duration::from_secs(30), ..config(nats) }
}

/// A session with 3 events on a fresh R3 stream; returns it.
async fn seed(nats: &NatsCluster) -> SessionId {
    // Creating the stream and buckets may take a retry: each server binds a new stream's subjects
    // a moment after it exists, and opening probes them (fresh_streams.rs).
    let log = JetStreamEventLog::open(patient(nats)).await.expect("the healthy cluster opens");
    assert!(log.open_attempts() >= 1);
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.append(s, 0, events(1..=3)).await.unwrap();
    // Every node takes publishes on every stream of the log (positive probes, through each node)...
    for url in &nats.urls {
        let js = async_nats::jetstream::new(async_nats::connect(url.as_str()).await.unwrap());
        for subject in ["VESTIBULE.open-probe", "$KV.VESTIBULE_status.open-probe", "$KV.VESTIBULE_snapshots.open-probe"] {
            let mut tries = 0;
            while let Err(e) = probe_publish(&js, subject.into()).await {
                tries += 1;
                assert!(tries < 100, "{url} never took publishes on {subject}: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    // ...so a healthy cluster with the log in place opens at the first attempt, through any node.
    let again = JetStreamEventLog::open(patient(nats)).await.expect("the healthy cluster opens again");
    assert_eq!(again.open_attempts(), 1, "a healthy cluster opens at the first attempt");
    s
}

async fn leader(nats: &NatsCluster) -> usize {
    for _ in 0..100 {
        if let Some(i) = nats.stream_leader("VESTIBULE").await {
            return i;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the stream has no leader");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_right_after_the_stream_leaders_node_is_killed_retries_until_it_opens() {
    let mut nats = tokio::task::spawn_blocking(NatsCluster::start).await.unwrap();
    let s = seed(&nats).await;
    let dead = leader(&nats).await;
    nats.kill(dead);
    // At once: the stream (and maybe the meta layer) has no leader yet.
    let log = JetStreamEventLog::open(config(&nats)).await.expect("opens once the cluster has elected");
    eprintln!("opened after the leader's node (n{dead}) was killed in {} attempt(s)", log.open_attempts());
    assert!(log.open_attempts() >= 1);
    // And it is the log: the session's events are all there, and it takes appends.
    let mut read = None;
    for _ in 0..60 {
        match log.read(s, 1, None).await {
            Ok(events) => {
                read = Some(events);
                break;
            }
            Err(e) => eprintln!("read right after opening: {e}"),
        }
    }
    assert_eq!(read.expect("the log answers reads").len(), 3);
    log.append(s, 3, events(4..=4)).await.expect("an append after the failover");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_quorum_opening_fails_naming_the_servers_and_opens_once_a_node_is_back() {
    let mut nats = tokio::task::spawn_blocking(NatsCluster::start).await.unwrap();
    let s = seed(&nats).await;
    nats.kill(1);
    nats.kill(2);

    // Bounded: a short open_timeout gives up with an error that names every server.
    let short = JetStreamConfig { open_timeout: Duration::from_secs(3), request_timeout: Duration::from_secs(1), ..config(&nats) };
    let attempts = Arc::new(AtomicU32::new(0));
    let e = JetStreamEventLog::open_counting(short, Arc::new(NoUpcasting), attempts.clone()).await.expect_err("no quorum");
    let message = e.to_string();
    for url in &nats.urls {
        assert!(message.contains(url.as_str()), "the error names {url}: {message}");
    }
    let n = attempts.load(Ordering::SeqCst);
    assert!(n >= 1 && message.contains(&format!("{n} attempt")), "{message}");
    eprintln!("{message}");

    // Opening while the quorum is lost keeps retrying; a node back restores the quorum and it opens.
    let attempts = Arc::new(AtomicU32::new(0));
    let opening = tokio::spawn(JetStreamEventLog::open_counting(config(&nats), Arc::new(NoUpcasting), attempts.clone()));
    while attempts.load(Ordering::SeqCst) < 2 {
        assert!(!opening.is_finished(), "opened without a quorum?");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    nats.restart(1);
    let log = opening.await.unwrap().expect("opens once a quorum is back");
    assert!(log.open_attempts() >= 2, "{}", log.open_attempts());
    eprintln!("opened after the quorum came back, in {} attempts", log.open_attempts());
    let mut read = None;
    for _ in 0..60 {
        if let Ok(events) = log.read(s, 1, None).await {
            read = Some(events);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(read.expect("the log answers reads").len(), 3);
}
