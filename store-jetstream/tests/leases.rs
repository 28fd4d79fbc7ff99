//! Session leases on a real nats-server: of two gateways racing for the same sessions exactly one
//! owns each; a dead gateway's sessions are taken over once its lease lapses (and not before); a
//! clean leave frees them at once; a gateway whose lease is lost is told and registers again under
//! a new epoch; the shared secret waits for a cluster that is still settling.

use std::time::{Duration, Instant};

use vestibule_store::SessionId;
use vestibule_store_jetstream::JetStreamConfig;
use vestibule_store_jetstream::lease::{Leases, Owner};
use vestibule_store_jetstream::test_server::NatsServer;

/// Long enough that a busy machine cannot cost a live gateway its lease: a gateway declares it lost
/// when it could not renew for TTL/2 (4 s of the lease runtime not being scheduled, here). Only the
/// takeover test waits for a lapse, so the TTL costs that one test its length, not the others.
const TTL: Duration = Duration::from_secs(8);

async fn join(server: &NatsServer, id: &str) -> Leases {
    Leases::join(&JetStreamConfig::at([server.url.clone()]), id, TTL).await.unwrap()
}

/// Polls `acquire` until it is `Me`, within a generous bound (never a timing assertion).
async fn acquire_eventually(leases: &Leases, s: SessionId) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut polls = 0;
    loop {
        polls += 1;
        if leases.acquire(s).await.unwrap() == Owner::Me {
            return polls;
        }
        assert!(Instant::now() < deadline, "the session was never taken over");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_racing_for_the_same_sessions_get_exactly_one_owner_each() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let (a, b) = (join(&server, "a").await, join(&server, "b").await);
    let sessions: Vec<SessionId> = (0..40).map(|_| SessionId::random()).collect();
    let mut tasks = tokio::task::JoinSet::new();
    // Everyone starts together, so that the asks really interleave.
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(sessions.len() * 4));
    for &s in &sessions {
        for leases in [a.clone(), b.clone()] {
            // Each gateway asks twice, concurrently: the second ask of the winner is `Me` again.
            for _ in 0..2 {
                let (leases, start) = (leases.clone(), start.clone());
                tasks.spawn(async move {
                    start.wait().await;
                    (s, leases.gateway_id().to_string(), leases.acquire(s).await.unwrap())
                });
            }
        }
    }
    let mut winners = std::collections::HashMap::<SessionId, String>::new();
    let mut answers = Vec::new();
    while let Some(r) = tasks.join_next().await {
        answers.push(r.unwrap());
    }
    for (s, me, owner) in &answers {
        if *owner == Owner::Me {
            let previous = winners.insert(*s, me.clone());
            assert!(previous.is_none_or(|p| p == *me), "two owners of {s}");
        }
    }
    assert_eq!(winners.len(), sessions.len(), "every session has an owner");
    for (s, me, owner) in &answers {
        if let Owner::Other { gateway, .. } = owner {
            assert_eq!(gateway, &winners[s], "the loser names the winner");
            assert_ne!(gateway, me);
        }
    }
    assert_eq!(a.acquisitions() + b.acquisitions(), sessions.len() as u64, "one acquisition per session, in all");
    assert_eq!(a.takeovers() + b.takeovers(), 0);
    println!("acquisitions: a {} b {}", a.acquisitions(), b.acquisitions());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_gateways_sessions_are_taken_over_once_its_lease_lapses() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let a = join(&server, "a").await;
    let b = join(&server, "b").await;
    let s = SessionId::random();
    assert_eq!(a.acquire(s).await.unwrap(), Owner::Me);
    let a_epoch = a.epoch().unwrap();
    let held_since = Instant::now();
    // While `a` lives (and renews, well past one TTL: its first write alone would have lapsed), `b`
    // is refused, at every ask. At least 1.5 TTL pass (a lower bound only: a slower machine asks
    // later, which proves as much).
    let mut asks = 0;
    while asks < 4 || held_since.elapsed() < TTL + TTL / 2 {
        assert_eq!(b.acquire(s).await.unwrap(), Owner::Other { gateway: "a".into(), epoch: a_epoch }, "ask {asks}");
        asks += 1;
        tokio::time::sleep(TTL / 4).await;
    }
    assert_eq!(a.epoch(), Some(a_epoch), "`a` kept its registration throughout");
    // `a` dies without a word: its runtime and connection go, renewals stop.
    drop(a);
    // Positive probe first: right after the death the lease still holds.
    assert!(matches!(b.acquire(s).await.unwrap(), Owner::Other { .. }), "the lease outlives its holder until the TTL");
    acquire_eventually(&b, s).await;
    assert_eq!(b.takeovers(), 1);
    assert_eq!(b.acquire(s).await.unwrap(), Owner::Me, "and keeps it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_leave_frees_the_sessions_at_once() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let a = join(&server, "a").await;
    let b = join(&server, "b").await;
    let s = SessionId::random();
    assert_eq!(a.acquire(s).await.unwrap(), Owner::Me);
    assert!(matches!(b.acquire(s).await.unwrap(), Owner::Other { .. }));
    a.leave().await;
    assert_eq!(b.acquire(s).await.unwrap(), Owner::Me, "no wait for the TTL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_that_loses_its_lease_is_told_and_registers_under_a_new_epoch() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let a = join(&server, "a").await;
    let b = join(&server, "b").await;
    let s = SessionId::random();
    assert_eq!(a.acquire(s).await.unwrap(), Owner::Me);
    let first_epoch = a.epoch().unwrap();
    let mut lost = a.lost();
    // Someone removes `a`'s registration (as a lapse would): its next renewal is refused.
    let client = async_nats::connect(&server.url).await.unwrap();
    let kv = async_nats::jetstream::new(client).get_key_value("VESTIBULE_gateways").await.unwrap();
    kv.purge("a").await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), lost.changed()).await.expect("told in time").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let second_epoch = loop {
        if let Some(e) = a.epoch() {
            break e;
        }
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_ne!(first_epoch, second_epoch);
    // The session of the old epoch is free: whoever asks first takes it (here `b`), and `a` sees it.
    assert_eq!(b.acquire(s).await.unwrap(), Owner::Me);
    assert_eq!(a.acquire(s).await.unwrap(), Owner::Other { gateway: "b".into(), epoch: b.epoch().unwrap() });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_live_gateway_leads_the_chores_and_another_takes_them_when_it_leaves() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let (a, b, c) = (join(&server, "gw-a").await, join(&server, "gw-b").await, join(&server, "gw-c").await);
    let leaders = |l: [bool; 3]| l.iter().filter(|x| **x).count();
    let now = [a.leads_chores().await.unwrap(), b.leads_chores().await.unwrap(), c.leads_chores().await.unwrap()];
    assert_eq!(now, [true, false, false], "the smallest id leads");
    assert_eq!(leaders(now), 1);
    a.leave().await;
    let now = [a.leads_chores().await.unwrap(), b.leads_chores().await.unwrap(), c.leads_chores().await.unwrap()];
    assert_eq!(now, [false, true, false], "the next one takes over at once after a clean leave");
}

/// Three gateways starting at once on a fresh 3-node cluster (`replicas = 3`), as a deployment
/// does: all join. The bucket creations race (one creates, and may already have turned direct
/// reads off, so the others' create sees "a different configuration"; a busy machine times a
/// replicated create out): each one that loses finds the bucket made by the winner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_gateways_joining_a_fresh_three_node_cluster_at_once_all_join() {
    let nats = tokio::task::spawn_blocking(vestibule_store_jetstream::test_server::NatsCluster::start).await.unwrap();
    let config = JetStreamConfig { replicas: 3, ..JetStreamConfig::at(nats.urls.clone()) };
    let joins: Vec<_> = (0..3)
        .map(|i| {
            let config = config.clone();
            tokio::spawn(async move { Leases::join(&config, &format!("g{i}"), Duration::from_secs(10)).await })
        })
        .collect();
    let mut joined = Vec::new();
    for join in joins {
        joined.push(join.await.unwrap().unwrap_or_else(|e| panic!("a gateway could not join: {e}")));
    }
    // One owner for a session asked of all three.
    let s = SessionId::random();
    let mut owners = 0;
    for leases in &joined {
        if leases.acquire(s).await.unwrap() == Owner::Me {
            owners += 1;
        }
    }
    assert_eq!(owners, 1);
}

/// A renewal whose acknowledgement was lost (a NATS leader election) may have been stored: the next
/// renewal then meets a newer revision of the gateway's own key. That is not a lost lease when the
/// key still holds the gateway's epoch. Simulated by writing the same value behind its back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_stored_after_its_ack_was_lost_does_not_cost_the_lease() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let a = join(&server, "a").await;
    let epoch = a.epoch().unwrap();
    let lost = a.lost();
    let js = async_nats::jetstream::new(async_nats::connect(&server.url).await.unwrap());
    let bucket = js.get_key_value("VESTIBULE_gateways").await.unwrap();
    let behind_its_back = bucket.put("a", serde_json::to_vec(&serde_json::json!({ "epoch": epoch })).unwrap().into()).await.unwrap();
    // Wait until the gateway has renewed after that write (its renewal is then past the stale
    // revision), then check it kept its lease.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let entry = bucket.entry("a").await.unwrap().expect("the gateway's key");
        if entry.revision > behind_its_back {
            break;
        }
        assert!(Instant::now() < deadline, "the gateway never renewed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(a.epoch(), Some(epoch), "the same registration");
    assert!(!lost.has_changed().unwrap(), "the lease was not declared lost");
}

/// A cluster still settling (a bucket's stream just made, or its leader being elected, while three
/// gateways start together) refuses requests for a moment; a gateway's start asks for the shared
/// sign-in key then, and must wait for the cluster rather than fail. Here the secrets bucket's
/// stream is gone until the test makes it again, a moment after the ask began (if the machine is
/// so slow that the ask had not begun by then, the test still passes, without a retry to show).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_secret_waits_for_a_cluster_that_is_still_settling() {
    use async_nats::jetstream::kv;
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let config = JetStreamConfig::at([server.url.clone()]);
    let a = join(&server, "a").await;
    let js = async_nats::jetstream::new(async_nats::connect(server.url.as_str()).await.unwrap());
    let bucket = format!("{}_secrets", config.stream);
    js.delete_key_value(&bucket).await.unwrap();

    let ask = tokio::spawn({
        let a = a.clone();
        async move { a.shared_secret("siwx-ed25519", [7; 32]).await }
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    js.create_key_value(kv::Config { bucket: bucket.clone(), history: 1, ..Default::default() }).await.unwrap();

    let secret = ask.await.unwrap().expect("the ask waits for the bucket instead of failing");
    assert_eq!(secret, [7; 32], "the first ask stores its seed");
    let b = join(&server, "b").await;
    assert_eq!(b.shared_secret("siwx-ed25519", [9; 32]).await.unwrap(), [7; 32], "a later gateway gets the stored one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_many_links_polling_one_peers_liveness_then_nats_is_asked_once_per_fifth_of_the_ttl_and_a_peer_that_leaves_is_seen_gone() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let (a, b) = (join(&server, "a").await, join(&server, "b").await);
    let epoch = b.epoch().expect("b is registered");
    // 200 links ask at once (as the proxied sockets of one peer do): one read of the bucket.
    let before = a.messages_sent();
    let answers = futures_util::future::join_all((0..200).map(|_| a.is_live("b", epoch))).await;
    assert!(answers.iter().all(|r| matches!(r, Ok(true))), "{answers:?}");
    let asked = a.messages_sent() - before;
    // The positive side of the count: one read is at least one message (its request).
    assert!((1..=3).contains(&asked), "200 polls sent {asked} messages to NATS");
    assert_eq!(a.is_live("b", epoch + 1).await.unwrap(), false, "another epoch is not live");
    // A peer that leaves is seen gone by the next read (within a fifth of the TTL, polled).
    b.leave().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while a.is_live("b", epoch).await.unwrap() {
        assert!(Instant::now() < deadline, "b never seen gone");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
