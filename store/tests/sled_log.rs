//! Behaviour of the sled event log beyond the trait-level contract (tests/contract_sled.rs runs the
//! contract suite, src/contract.rs, against sled): counters, buffered mode, locks, threads.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{config, event, new_session, open, temp_log};
use futures_util::{StreamExt, TryStreamExt};
use serde_json::json;
use vestibule_store::{
    Durability, Envelope, EventLog, NewEvent, RetentionPolicy, SessionFilter, SessionId, SessionStatus, SledEventLog, Snapshot,
    StoreConfig, StoreError, spawn_retention,
};

fn events(range: std::ops::RangeInclusive<u64>) -> Vec<NewEvent> {
    range.map(event).collect()
}

#[tokio::test]
async fn conflicts_and_refusals_write_nothing() {
    let (_dir, log) = temp_log();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.append(s, 0, events(1..=2)).await.unwrap();

    match log.append(s, 1, events(3..=3)).await {
        Err(StoreError::Conflict { session, expected: 1, actual: 2 }) => assert_eq!(session, s),
        other => panic!("{other:?}"),
    }
    match log.append(s, 5, events(3..=3)).await {
        Err(StoreError::Conflict { expected: 5, actual: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(log.append(s, 2, vec![]).await, Err(StoreError::InvalidAppend(_))));
    // One bad event refuses the whole append.
    let mut bad = events(3..=4);
    bad[1].event_type = String::new();
    assert!(matches!(log.append(s, 2, bad).await, Err(StoreError::InvalidAppend(_))));
    assert_eq!(log.latest_seq(s).await.unwrap(), 2);
    assert_eq!(log.read(s, 1, None).await.unwrap().len(), 2);

    let unknown = SessionId::random();
    assert!(matches!(log.append(unknown, 0, events(1..=1)).await, Err(StoreError::UnknownSession(u)) if u == unknown));
    assert!(matches!(log.read(unknown, 1, None).await, Err(StoreError::UnknownSession(_))));
    assert!(matches!(log.latest_seq(unknown).await, Err(StoreError::UnknownSession(_))));
    assert!(log.session_meta(unknown).await.unwrap().is_none());
    assert!(matches!(log.set_status(unknown, SessionStatus::Ended).await, Err(StoreError::UnknownSession(_))));
    assert!(matches!(log.create_session(s, new_session("p")).await, Err(StoreError::SessionExists(x)) if x == s));
    assert_eq!(log.stats().appends, 1);
}

#[tokio::test]
async fn oversized_events_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledEventLog::open(StoreConfig { max_event_bytes: 100, ..config(dir.path(), Durability::Durable) }).unwrap();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    let mut big = event(1);
    big.payload = json!({ "blob": "x".repeat(200) }).into();
    assert!(matches!(log.append(s, 0, vec![big]).await, Err(StoreError::InvalidAppend(_))));
    assert_eq!(log.latest_seq(s).await.unwrap(), 0);
}

#[tokio::test]
async fn a_selective_listing_pages_through_a_bounded_scan() {
    let (_dir, log) = temp_log();
    // More sessions than one call looks at (10,000), one of them at the very end of the id order.
    for chunk in 0..11u8 {
        let creates = (0..1_000u16).map(|i| {
            let mut id = [0u8; 16];
            id[0] = chunk;
            id[14..].copy_from_slice(&i.to_be_bytes());
            log.create_session(SessionId::from_bytes(id), new_session("bulk"))
        });
        for r in futures_util::future::join_all(creates).await {
            r.unwrap();
        }
    }
    let needle = SessionId::from_bytes([0xff; 16]);
    log.create_session(needle, new_session("needle")).await.unwrap();

    let filter = SessionFilter { project: Some("needle".into()), ..SessionFilter::default() };
    let first = log.list_sessions(&filter, None, 10).await.unwrap();
    assert!(first.sessions.is_empty() && first.next.is_some(), "a short page still says where to go on");
    let second = log.list_sessions(&filter, first.next, 10).await.unwrap();
    assert_eq!(second.sessions.iter().map(|m| m.session).collect::<Vec<_>>(), vec![needle]);
    assert_eq!(second.next, None);
    assert_eq!(log.list_sessions(&SessionFilter::default(), None, 0).await.unwrap().sessions.len(), 0);
}

#[tokio::test]
async fn stream_reads_lazily_up_to_the_end_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledEventLog::open(config(dir.path(), Durability::Buffered { interval_ms: 50 })).unwrap();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    let mut seq = 0;
    while seq < 5_000 {
        let batch: Vec<_> = ((seq + 1)..=(seq + 500)).map(event).collect();
        seq = log.append(s, seq, batch).await.unwrap().last_seq;
    }
    let mut stream = log.stream(s, 10);
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.seq, 10);
    // Appended after the stream started: not part of it.
    log.append(s, 5_000, events(5_001..=5_001)).await.unwrap();
    let rest: Vec<Envelope> = stream.try_collect().await.unwrap();
    assert_eq!(rest.len(), 5_000 - 10);
    for (i, e) in rest.iter().enumerate() {
        assert_eq!(e.seq, 11 + i as u64);
        assert_eq!(e.payload, json!({ "n": e.seq }));
    }
    let unknown: Vec<_> = log.stream(SessionId::random(), 1).collect().await;
    assert!(matches!(unknown.as_slice(), [Err(StoreError::UnknownSession(_))]));
}

async fn next_event(stream: &mut vestibule_store::EventStream) -> Envelope {
    tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("follow produced nothing within 20 s")
        .expect("follow ended")
        .expect("follow failed")
}

#[tokio::test]
async fn follow_gives_existing_then_new_events_and_ends_on_expiry() {
    let (_dir, log) = temp_log();
    let s = SessionId::random();
    let other = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.create_session(other, new_session("p")).await.unwrap();
    log.append(s, 0, events(1..=3)).await.unwrap();

    let mut follow = log.follow(s, 2);
    assert_eq!(next_event(&mut follow).await.seq, 2);
    assert_eq!(next_event(&mut follow).await.seq, 3);
    log.append(other, 0, events(1..=1)).await.unwrap();
    log.append(s, 3, events(4..=5)).await.unwrap();
    assert_eq!(next_event(&mut follow).await.seq, 4);
    assert_eq!(next_event(&mut follow).await.seq, 5);
    log.append(s, 5, events(6..=6)).await.unwrap();
    let e6 = next_event(&mut follow).await;
    assert_eq!(e6, Envelope::from_new(s, 6, event(6)));

    log.set_status(s, SessionStatus::Ended).await.unwrap();
    let policy = RetentionPolicy { ended_after: Duration::from_millis(0), idle_after: Duration::from_secs(1_000_000), batch_size: 10 };
    let report = log.expire(&policy, 10_000).await.unwrap();
    assert_eq!(report.sessions_expired, 1);
    let end = tokio::time::timeout(Duration::from_secs(20), follow.next()).await.expect("follow did not end");
    assert!(end.is_none(), "{end:?}");

    let unknown: Vec<_> = log.follow(SessionId::random(), 1).collect().await;
    assert!(matches!(unknown.as_slice(), [Err(StoreError::UnknownSession(_))]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_follower_rereads_from_the_log_and_misses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A one-message notification buffer: any follower that is not instantly scheduled lags.
    let log = Arc::new(SledEventLog::open(StoreConfig { follow_buffer: 1, ..config(dir.path(), Durability::Durable) }).unwrap());
    let sessions: Vec<SessionId> = (0..8).map(|_| SessionId::random()).collect();
    for s in &sessions {
        log.create_session(*s, new_session("p")).await.unwrap();
    }
    let target = sessions[0];
    let mut follow = log.follow(target, 1);
    let writers: Vec<_> = sessions
        .iter()
        .map(|s| {
            let (log, s) = (log.clone(), *s);
            tokio::spawn(async move {
                for seq in 0..100u64 {
                    log.append(s, seq, vec![event(seq + 1)]).await.unwrap();
                }
            })
        })
        .collect();
    for seq in 1..=100u64 {
        let e = next_event(&mut follow).await;
        assert_eq!((e.seq, e.payload.clone()), (seq, json!({ "n": seq })));
    }
    for w in writers {
        w.await.unwrap();
    }
}

#[tokio::test]
async fn a_follower_whose_notifications_overflowed_catches_up_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledEventLog::open(StoreConfig { follow_buffer: 2, ..config(dir.path(), Durability::Durable) }).unwrap();
    let (target, other) = (SessionId::random(), SessionId::random());
    log.create_session(target, new_session("p")).await.unwrap();
    log.create_session(other, new_session("p")).await.unwrap();
    log.append(target, 0, events(1..=1)).await.unwrap();
    let mut follow = log.follow(target, 1);
    assert_eq!(next_event(&mut follow).await.seq, 1); // caught up, now live
    // While the follower is not polled: its session's notifications, then enough others to push
    // every one of them out of the two-message buffer.
    for seq in 1..10 {
        log.append(target, seq, vec![event(seq + 1)]).await.unwrap();
    }
    for seq in 0..5 {
        log.append(other, seq, vec![event(seq + 1)]).await.unwrap();
    }
    for seq in 2..=10 {
        assert_eq!(next_event(&mut follow).await.seq, seq);
    }
}

#[tokio::test]
async fn expiry_deletes_due_sessions_in_batches_and_nothing_else() {
    let (_dir, log) = temp_log();
    let policy = RetentionPolicy { ended_after: Duration::from_secs(60), idle_after: Duration::from_secs(3_600), batch_size: 2 };
    let now = 10_000_000u64;
    let mk = |t: u64| {
        let mut e = event(1);
        e.time_ms = t;
        vec![e]
    };
    // ended long enough ago (x3), ended recently, active but idle, active and recent.
    let mut ended_old = Vec::new();
    for _ in 0..3 {
        let s = SessionId::random();
        log.create_session(s, new_session("p")).await.unwrap();
        log.append(s, 0, mk(now - 61_000)).await.unwrap();
        log.put_snapshot(s, Snapshot { seq: 1, schema_version: 1, time_ms: 0, state: json!({}).into(), log_bytes: None }).await.unwrap();
        log.set_status(s, SessionStatus::Ended).await.unwrap();
        ended_old.push(s);
    }
    let ended_recent = SessionId::random();
    log.create_session(ended_recent, new_session("p")).await.unwrap();
    log.append(ended_recent, 0, mk(now - 30_000)).await.unwrap();
    log.set_status(ended_recent, SessionStatus::Ended).await.unwrap();
    let idle = SessionId::random();
    log.create_session(idle, new_session("p")).await.unwrap();
    log.append(idle, 0, mk(now - 3_600_000)).await.unwrap();
    let live = SessionId::random();
    log.create_session(live, new_session("p")).await.unwrap();
    log.append(live, 0, mk(now - 59_000)).await.unwrap();

    let r1 = log.expire(&policy, now).await.unwrap();
    assert_eq!((r1.sessions_expired, r1.events_deleted, r1.more_due), (2, 2, true));
    let r2 = log.expire(&policy, now).await.unwrap();
    assert_eq!((r2.sessions_expired, r2.events_deleted, r2.more_due), (2, 2, false));
    let r3 = log.expire(&policy, now).await.unwrap();
    assert_eq!(r3, Default::default());

    for s in ended_old.iter().chain([&idle]) {
        assert!(log.session_meta(*s).await.unwrap().is_none());
        assert!(matches!(log.read(*s, 1, None).await, Err(StoreError::UnknownSession(_))));
        assert_eq!(log.get_snapshot(*s, 1).await.unwrap(), None);
        assert_eq!(log.raw_event(*s, 1).unwrap(), None);
    }
    for s in [ended_recent, live] {
        assert_eq!(log.read(s, 1, None).await.unwrap().len(), 1);
    }
    // An expired id can be used again once its events are gone.
    log.create_session(idle, new_session("p")).await.unwrap();
    assert_eq!(log.latest_seq(idle).await.unwrap(), 0);
    assert!(log.disk_usage().await.unwrap() > 0);
}

#[tokio::test]
async fn the_retention_task_expires_in_the_background() {
    let (_dir, log) = temp_log();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap(); // created_ms 1000: long idle
    let keep = SessionId::random();
    log.create_session(keep, vestibule_store::NewSession { created_ms: u64::MAX / 2, ..new_session("p") }).await.unwrap();
    let policy = RetentionPolicy { ended_after: Duration::from_secs(60), idle_after: Duration::from_secs(60), batch_size: 100 };
    let handle = spawn_retention(log.clone(), policy, Duration::from_millis(20));
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.session_meta(s).await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the retention task did not expire the idle session");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let totals = handle.stop();
    assert!(totals.sessions_expired >= 1 && totals.runs >= 1, "{totals:?}");
    assert!(log.session_meta(keep).await.unwrap().is_some());
}

#[tokio::test]
async fn concurrent_appends_share_flushes() {
    let (_dir, log) = temp_log();
    let sessions: Vec<SessionId> = (0..64).map(|_| SessionId::random()).collect();
    for s in &sessions {
        log.create_session(*s, new_session("p")).await.unwrap();
    }
    let before = log.stats();
    let appends = sessions.iter().map(|s| log.append(*s, 0, events(1..=2)));
    for r in futures_util::future::join_all(appends).await {
        assert_eq!(r.unwrap().last_seq, 2);
    }
    let after = log.stats();
    assert_eq!(after.appends - before.appends, 64);
    assert_eq!(after.events - before.events, 128);
    let flushes = after.flushes - before.flushes;
    assert!((1..16).contains(&flushes), "64 concurrent appends took {flushes} flushes");
}

#[test]
fn works_from_plain_threads_each_with_its_own_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let log = log.clone();
            std::thread::spawn(move || {
                // Like an actix worker: a current-thread runtime per thread.
                let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
                rt.block_on(async {
                    let s = SessionId::random();
                    log.create_session(s, new_session("p")).await.unwrap();
                    for seq in 0..20 {
                        log.append(s, seq, vec![event(seq + 1)]).await.unwrap();
                    }
                    assert_eq!(log.read(s, 1, None).await.unwrap().len(), 20);
                })
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// A minimal executor with no Tokio runtime behind it: parks the thread until woken.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        match fut.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => return v,
            std::task::Poll::Pending => std::thread::park(),
        }
    }
}

#[test]
fn works_without_any_tokio_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let s = SessionId::random();
    let other = log.clone();
    std::thread::spawn(move || {
        block_on(async {
            other.create_session(s, new_session("p")).await.unwrap();
            let mut follow = other.follow(s, 1);
            other.append(s, 0, events(1..=3)).await.unwrap();
            for seq in 1..=3 {
                assert_eq!(follow.next().await.unwrap().unwrap().seq, seq);
            }
            let streamed: Vec<Envelope> = other.stream(s, 2).try_collect().await.unwrap();
            assert_eq!(streamed.len(), 2);
            other.flush().await.unwrap();
        })
    })
    .join()
    .unwrap();
    assert_eq!(block_on(log.read(s, 1, None)).unwrap().len(), 3);
}

#[tokio::test]
async fn buffered_mode_resolves_before_flushing_and_flush_makes_it_durable() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledEventLog::open(config(dir.path(), Durability::Buffered { interval_ms: 3_600_000 })).unwrap();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap(); // durable on resolve: flushes
    let flushes = log.stats().flushes;
    let mut follow = log.follow(s, 1);
    for seq in 0..10 {
        log.append(s, seq, vec![event(seq + 1)]).await.unwrap();
    }
    assert_eq!(log.stats().flushes, flushes, "buffered appends must not wait for a flush");
    assert_eq!(log.read(s, 1, None).await.unwrap().len(), 10, "written events are readable");
    log.flush().await.unwrap();
    assert_eq!(log.stats().flushes, flushes + 1);
    for seq in 1..=10 {
        assert_eq!(next_event(&mut follow).await.seq, seq);
    }
}

#[tokio::test]
async fn buffered_mode_flushes_on_its_interval_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledEventLog::open(config(dir.path(), Durability::Buffered { interval_ms: 20 })).unwrap();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    let mut follow = log.follow(s, 1);
    let flushes = log.stats().flushes;
    log.append(s, 0, events(1..=1)).await.unwrap();
    // Nobody calls flush(): the follower gets the event once the interval's flush made it durable.
    assert_eq!(next_event(&mut follow).await.seq, 1);
    assert!(log.stats().flushes > flushes);
}

#[tokio::test]
async fn a_held_directory_is_locked_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let _log = SledEventLog::open(StoreConfig::at(dir.path())).unwrap();
    match SledEventLog::open(StoreConfig::at(dir.path())) {
        Err(StoreError::Locked { dir: d }) => {
            assert_eq!(d, dir.path());
            let msg = StoreError::Locked { dir: d }.to_string();
            assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
        }
        other => panic!("expected Locked, got {other:?}"),
    }
}

#[test]
fn io_errors_name_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    match SledEventLog::open(StoreConfig::at(file.join("log"))) {
        Err(e @ StoreError::Io { .. }) => assert!(e.to_string().contains("not-a-dir"), "{e}"),
        other => panic!("expected Io, got {other:?}"),
    }
}

/// Every file under `dir` with its bytes.
fn files_of(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path)
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

#[tokio::test]
async fn a_directory_is_not_opened_without_room_on_its_disk_and_is_left_untouched() {
    // An outside review: sled's recovery on a full disk rewrote its `db` in place, was cut short,
    // and left the directory unreadable for good once space was freed. A disk with less free than
    // the margin is what a huge margin stands for here.
    let dir = tempfile::tempdir().unwrap();
    let s = SessionId::random();
    {
        let log = open(dir.path());
        log.create_session(s, new_session("p")).await.unwrap();
        log.append(s, 0, events(1..=3)).await.unwrap();
    }
    // sled is done with its files once it lets go of its lock on `db` (a moment after the drop).
    let db = std::fs::File::open(dir.path().join("db")).unwrap();
    let mut tries = 0;
    while rustix::fs::flock(&db, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        tries += 1;
        assert!(tries < 30_000, "sled never let go of its lock");
        std::thread::sleep(Duration::from_millis(1));
    }
    rustix::fs::flock(&db, rustix::fs::FlockOperation::Unlock).unwrap();
    let before = files_of(dir.path());
    let no_room = StoreConfig { min_free_bytes_to_open: u64::MAX / 2, ..config(dir.path(), Durability::Durable) };
    match SledEventLog::open(no_room) {
        Err(StoreError::Io { source, .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::StorageFull, "{source}");
            assert!(source.to_string().contains("nothing was changed"), "{source}");
        }
        other => panic!("expected a refusal for want of room, got {other:?}"),
    }
    assert!(before == files_of(dir.path()), "not one file written, created or removed");
    // With room (the default margin on this disk), the same directory opens with its events.
    let log = open(dir.path());
    assert_eq!(log.read(s, 1, None).await.unwrap().len(), 3);
}
