//! The `EventLog` contract as a test suite that any backend runs against itself (feature `contract`).
//!
//! A backend's test file implements [`Harness`] (a fresh, empty log's data: a temporary directory,
//! a NATS server of its own) and calls [`contract_tests!`](crate::contract_tests) with it, which
//! expands to one `#[tokio::test]` per case below. What a backend does beyond the trait (group
//! commit counters, buffered mode, locks) stays in that backend's own tests.
//!
//! Nothing here depends on wall-clock speed: waits are for events, bounded only to fail instead of
//! hanging.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use serde_json::{Value, json};

use crate::{
    AnswerRefusal, CommandAnswer, Envelope, EventLog, EventStream, NewEvent, NewSession, RetentionPolicy, SessionFilter, SessionId,
    SessionStatus, Snapshot, StoreError, Upcaster,
};

/// One test's backend: its data lives as long as the harness.
#[allow(async_fn_in_trait)]
pub trait Harness: Sized {
    /// An empty log's data.
    async fn fresh() -> Self;
    /// Open a log on this harness's data. Tests drop every handle before opening again.
    async fn open(&self, upcaster: Arc<dyn Upcaster>) -> Arc<dyn EventLog>;
}

/// Expands to one `#[tokio::test]` per contract case, each with a fresh `$harness`.
#[macro_export]
macro_rules! contract_tests {
    ($harness:ty) => {
        $crate::contract_tests!(@cases $harness;
            appends_get_contiguous_seqs_and_read_returns_them,
            conflicts_and_refusals_write_nothing,
            of_concurrent_appenders_with_the_same_expected_seq_exactly_one_wins,
            status_and_metadata_follow_the_session,
            data_survives_reopen,
            list_sessions_pages_in_id_order_with_filters,
            snapshots_are_versioned_and_deleting_them_never_changes_state,
            stream_reads_up_to_the_end_as_it_was,
            follow_gives_existing_then_new_events_and_ends_on_expiry,
            expiry_deletes_due_sessions_in_batches_and_nothing_else,
            answers_are_remembered_with_their_events_or_alone,
            a_refused_append_remembers_no_answer,
            answers_go_with_their_session_and_a_new_session_inherits_none,
            events_are_upcast_on_read_and_a_refused_upcast_is_corrupt_with_its_place
        );
    };
    (@cases $harness:ty; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                $crate::contract::$case::<$harness>().await
            }
        )*
    };
}

pub fn event(n: u64) -> NewEvent {
    NewEvent {
        time_ms: 1_000 + n,
        event_type: "test.counted".into(),
        schema_version: 1,
        correlation_id: Some(format!("cmd-{n}")),
        checksum: None,
        payload: json!({ "n": n }).into(),
    }
}

pub fn events(range: std::ops::RangeInclusive<u64>) -> Vec<NewEvent> {
    range.map(event).collect()
}

pub fn new_session(project: &str) -> NewSession {
    NewSession { project: project.into(), created_ms: 1_000, resume_token_hash: Some("h".repeat(64)) }
}

fn no_upcasting() -> Arc<dyn Upcaster> {
    Arc::new(crate::NoUpcasting)
}

async fn open<H: Harness>(h: &H) -> Arc<dyn EventLog> {
    h.open(no_upcasting()).await
}

/// The next event of a stream; fails (rather than hangs) if none comes within 20 s.
pub async fn next_event(stream: &mut EventStream) -> Envelope {
    tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the stream produced nothing within 20 s")
        .expect("the stream ended")
        .expect("the stream failed")
}

pub async fn appends_get_contiguous_seqs_and_read_returns_them<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let s = SessionId::random();
    let meta = log.create_session(s, new_session("demo")).await.unwrap();
    assert_eq!((meta.latest_seq, meta.status), (0, SessionStatus::Active));
    assert_eq!(log.latest_seq(s).await.unwrap(), 0);
    assert!(log.read(s, 1, None).await.unwrap().is_empty());

    let a = log.append(s, 0, events(1..=3)).await.unwrap();
    assert_eq!(a.seqs().collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(a.last_seq, 3);
    let b = log.append(s, 3, events(4..=4)).await.unwrap();
    assert_eq!((b.first_seq, b.last_seq), (4, 4));

    let all = log.read(s, 1, None).await.unwrap();
    let expected: Vec<Envelope> = (1..=4).map(|seq| Envelope::from_new(s, seq, event(seq))).collect();
    assert_eq!(all, expected);
    assert_eq!(log.read(s, 2, Some(3)).await.unwrap(), expected[1..3].to_vec());
    assert_eq!(log.read(s, 0, Some(1)).await.unwrap(), expected[..1].to_vec());
    assert!(log.read(s, 5, None).await.unwrap().is_empty());
    // The ends of the range of seqs (a debug API query may name them): nothing, and no overflow.
    assert!(log.read(s, u64::MAX, None).await.unwrap().is_empty());
    assert!(log.read(s, u64::MAX, Some(u64::MAX)).await.unwrap().is_empty());
    assert!(log.read(s, u64::MAX - 1, Some(u64::MAX)).await.unwrap().is_empty());
    assert_eq!(log.read(s, 4, Some(u64::MAX)).await.unwrap(), expected[3..].to_vec());
    assert_eq!(log.latest_seq(s).await.unwrap(), 4);

    let meta = log.session_meta(s).await.unwrap().unwrap();
    assert_eq!(meta.latest_seq, 4);
    assert_eq!(meta.last_activity_ms, event(4).time_ms);
    assert_eq!(meta.project, "demo");
    assert_eq!(meta.created_ms, 1_000);
    assert_eq!(meta.resume_token_hash, Some("h".repeat(64)));
}

pub async fn conflicts_and_refusals_write_nothing<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.append(s, 0, events(1..=2)).await.unwrap();

    match log.append(s, 1, events(3..=4)).await {
        Err(StoreError::Conflict { session, expected: 1, actual: 2 }) => assert_eq!(session, s),
        other => panic!("{other:?}"),
    }
    match log.append(s, 5, events(3..=3)).await {
        Err(StoreError::Conflict { expected: 5, actual: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
    match log.append(s, 0, events(1..=3)).await {
        Err(StoreError::Conflict { expected: 0, actual: 2, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(log.append(s, 2, vec![]).await, Err(StoreError::InvalidAppend(_))));
    // One bad event refuses the whole append.
    let mut bad = events(3..=4);
    bad[1].event_type = String::new();
    assert!(matches!(log.append(s, 2, bad).await, Err(StoreError::InvalidAppend(_))));
    assert_eq!(log.latest_seq(s).await.unwrap(), 2);
    assert_eq!(log.read(s, 1, None).await.unwrap(), log.read(s, 1, Some(2)).await.unwrap());
    assert_eq!(log.read(s, 1, None).await.unwrap().len(), 2);
    // The log is still writable after all that.
    log.append(s, 2, events(3..=5)).await.unwrap();
    assert_eq!(log.read(s, 1, None).await.unwrap().iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);

    let unknown = SessionId::random();
    assert!(matches!(log.append(unknown, 0, events(1..=1)).await, Err(StoreError::UnknownSession(u)) if u == unknown));
    assert!(matches!(log.read(unknown, 1, None).await, Err(StoreError::UnknownSession(_))));
    assert!(matches!(log.latest_seq(unknown).await, Err(StoreError::UnknownSession(_))));
    assert!(log.session_meta(unknown).await.unwrap().is_none());
    assert!(matches!(log.set_status(unknown, SessionStatus::Ended).await, Err(StoreError::UnknownSession(_))));
    assert!(matches!(log.create_session(s, new_session("p")).await, Err(StoreError::SessionExists(x)) if x == s));
}

/// Three events whose payloads name the appender `w` and the `round`.
fn writers_batch(w: u64, round: u64) -> Vec<NewEvent> {
    let mut batch = events(1..=3);
    for e in &mut batch {
        e.payload = json!({ "writer": w, "round": round }).into();
    }
    batch
}

pub async fn of_concurrent_appenders_with_the_same_expected_seq_exactly_one_wins<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    for round in 0..5u64 {
        let expected = log.latest_seq(s).await.unwrap();
        let tries = (0..8u64).map(|w| {
            let log = log.clone();
            tokio::spawn(async move {
                let batch = writers_batch(w, round);
                log.append(s, expected, batch).await.map(|outcome| (w, outcome))
            })
        });
        let results = futures_util::future::join_all(tries).await;
        let mut winners = Vec::new();
        for r in results {
            match r.unwrap() {
                Ok(outcome) => winners.push(outcome),
                Err(StoreError::Conflict { expected: e, actual, .. }) => assert_eq!((e, actual), (expected, expected + 3)),
                Err(other) => panic!("{other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}");
        // All three events of the winner, none of anyone else's.
        let (w, outcome) = winners[0];
        assert_eq!(outcome.seqs(), expected + 1..=expected + 3);
        let stored = log.read(s, expected + 1, None).await.unwrap();
        let want: Vec<Envelope> = outcome.seqs().zip(writers_batch(w, round)).map(|(seq, e)| Envelope::from_new(s, seq, e)).collect();
        assert_eq!(stored, want);
    }
}

pub async fn status_and_metadata_follow_the_session<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.set_status(s, SessionStatus::Ended).await.unwrap();
    let m = log.session_meta(s).await.unwrap().unwrap();
    assert_eq!((m.status, m.last_activity_ms, m.latest_seq), (SessionStatus::Ended, 1_000, 0));
    let mut late = event(1);
    late.time_ms = 9_999;
    log.append(s, 0, vec![late]).await.unwrap();
    let m = log.session_meta(s).await.unwrap().unwrap();
    assert_eq!((m.status, m.last_activity_ms, m.latest_seq), (SessionStatus::Ended, 9_999, 1));
    log.set_status(s, SessionStatus::Active).await.unwrap();
    assert_eq!(log.session_meta(s).await.unwrap().unwrap().status, SessionStatus::Active);
}

pub async fn data_survives_reopen<H: Harness>() {
    let h = H::fresh().await;
    let s = SessionId::random();
    {
        let log = open(&h).await;
        log.create_session(s, new_session("p")).await.unwrap();
        log.append(s, 0, events(1..=5)).await.unwrap();
        log.append_answered(s, 5, events(6..=6), CommandAnswer { command_id: "c6".into(), seq: 6, refusal: None }).await.unwrap();
        log.set_status(s, SessionStatus::Ended).await.unwrap();
        log.flush().await.unwrap();
    }
    let log = open(&h).await;
    assert_eq!(log.read(s, 1, None).await.unwrap().len(), 6);
    assert_eq!(log.session_meta(s).await.unwrap().unwrap().status, SessionStatus::Ended);
    assert_eq!(log.answer(s, "c6").await.unwrap().map(|a| a.seq), Some(6));
    log.append(s, 6, events(7..=7)).await.unwrap();
}

pub async fn list_sessions_pages_in_id_order_with_filters<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let mut ids = Vec::new();
    for i in 0..25u64 {
        let s = SessionId::random();
        let project = if i % 2 == 0 { "even" } else { "odd" };
        log.create_session(s, new_session(project)).await.unwrap();
        let mut e = event(i);
        e.time_ms = 10_000 + i * 100;
        log.append(s, 0, vec![e]).await.unwrap();
        if i % 5 == 0 {
            log.set_status(s, SessionStatus::Ended).await.unwrap();
        }
        ids.push((s, i));
    }
    ids.sort();

    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = log.list_sessions(&SessionFilter::default(), after, 10).await.unwrap();
        assert!(page.sessions.len() <= 10);
        seen.extend(page.sessions.iter().map(|m| m.session));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    assert_eq!(seen, ids.iter().map(|(s, _)| *s).collect::<Vec<_>>());

    let filter =
        SessionFilter { project: Some("even".into()), status: Some(SessionStatus::Active), active_since_ms: Some(10_000 + 10 * 100) };
    let page = log.list_sessions(&filter, None, 100).await.unwrap();
    let want: Vec<SessionId> = ids.iter().filter(|(_, i)| i % 2 == 0 && i % 5 != 0 && *i >= 10).map(|(s, _)| *s).collect();
    assert_eq!(page.sessions.iter().map(|m| m.session).collect::<Vec<_>>(), want);
    assert_eq!(page.next, None);
    assert!(page.sessions.iter().all(|m| m.latest_seq == 1 && m.project == "even"));
    assert_eq!(log.list_sessions(&SessionFilter::default(), None, 0).await.unwrap().sessions.len(), 0);
}

/// A toy fold: the state is the sum of the events' `n`, and the number of events.
fn fold(mut state: Value, events: &[Envelope]) -> Value {
    for e in events {
        let sum = state["sum"].as_u64().unwrap_or(0) + e.payload["n"].as_u64().unwrap();
        let count = state["count"].as_u64().unwrap_or(0) + 1;
        state = json!({ "sum": sum, "count": count });
    }
    state
}

/// How a session's state is loaded: the snapshot (if any, of the current version), then the events after it.
async fn load_state(log: &dyn EventLog, s: SessionId) -> Value {
    let (from, state) = match log.get_snapshot(s, 2).await.unwrap() {
        Some(snap) => (snap.seq + 1, snap.state.to_value()),
        None => (1, json!({})),
    };
    fold(state, &log.read(s, from, None).await.unwrap())
}

pub async fn snapshots_are_versioned_and_deleting_them_never_changes_state<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let mut sessions = Vec::new();
    for k in 0..4u64 {
        let s = SessionId::random();
        log.create_session(s, new_session("p")).await.unwrap();
        log.append(s, 0, events(1..=(5 + k))).await.unwrap();
        sessions.push(s);
    }
    // Snapshots at various points, of the current (2) and of an old (1) state version.
    for (i, s) in sessions.iter().enumerate() {
        let upto = log.read(*s, 1, Some(3)).await.unwrap();
        // The current version with the count of log bytes (record format 2), the old one without.
        let snap =
            Snapshot { seq: 3, schema_version: 2, time_ms: 5, state: fold(json!({}), &upto).into(), log_bytes: Some(1000 + i as u64) };
        log.put_snapshot(*s, snap.clone()).await.unwrap();
        assert_eq!(log.get_snapshot(*s, 2).await.unwrap(), Some(snap));
        // An old-version snapshot with a wrong state is never used for version 2.
        let old = Snapshot { seq: 2, schema_version: 1, time_ms: 5, state: json!({"sum": 999_999, "count": i}).into(), log_bytes: None };
        log.put_snapshot(*s, old.clone()).await.unwrap();
        assert_eq!(log.get_snapshot(*s, 1).await.unwrap(), Some(old));
        assert_eq!(log.get_snapshot(*s, 2).await.unwrap().unwrap().seq, 3);
        assert_eq!(log.get_snapshot(*s, 3).await.unwrap(), None);
    }
    let too_far = Snapshot { seq: 99, schema_version: 2, time_ms: 0, state: json!({}).into(), log_bytes: None };
    assert!(matches!(log.put_snapshot(sessions[0], too_far).await, Err(StoreError::InvalidAppend(_))));
    assert!(matches!(
        log.put_snapshot(SessionId::random(), Snapshot { seq: 0, schema_version: 2, time_ms: 0, state: json!({}).into(), log_bytes: None })
            .await,
        Err(StoreError::UnknownSession(_))
    ));

    let mut before = Vec::new();
    for s in &sessions {
        let state = load_state(log.as_ref(), *s).await;
        assert_eq!(state, fold(json!({}), &log.read(*s, 1, None).await.unwrap()), "snapshot + tail == full fold");
        before.push(state);
    }
    log.delete_snapshots(Some(sessions[0])).await.unwrap();
    assert_eq!(log.get_snapshot(sessions[0], 2).await.unwrap(), None);
    assert!(log.get_snapshot(sessions[1], 2).await.unwrap().is_some());
    log.delete_snapshots(None).await.unwrap();
    for (s, state) in sessions.iter().zip(&before) {
        assert_eq!(log.get_snapshot(*s, 2).await.unwrap(), None);
        assert_eq!(log.get_snapshot(*s, 1).await.unwrap(), None);
        assert_eq!(&load_state(log.as_ref(), *s).await, state);
    }
}

pub async fn stream_reads_up_to_the_end_as_it_was<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    let mut seq = 0;
    while seq < 2_000 {
        let batch: Vec<_> = ((seq + 1)..=(seq + 250)).map(event).collect();
        seq = log.append(s, seq, batch).await.unwrap().last_seq;
    }
    let mut stream = log.stream(s, 10);
    let first = next_event(&mut stream).await;
    assert_eq!(first.seq, 10);
    // Appended after the stream started: not part of it.
    log.append(s, 2_000, events(2_001..=2_001)).await.unwrap();
    let rest: Vec<Envelope> = stream.try_collect().await.unwrap();
    assert_eq!(rest.len(), 2_000 - 10);
    for (i, e) in rest.iter().enumerate() {
        assert_eq!(e.seq, 11 + i as u64);
        assert_eq!(e.payload, json!({ "n": e.seq }));
    }
    let unknown: Vec<_> = log.stream(SessionId::random(), 1).collect().await;
    assert!(matches!(unknown.as_slice(), [Err(StoreError::UnknownSession(_))]));
}

pub async fn follow_gives_existing_then_new_events_and_ends_on_expiry<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let s = SessionId::random();
    let other = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.create_session(other, new_session("p")).await.unwrap();
    log.append(s, 0, events(1..=3)).await.unwrap();

    let mut follow = log.follow(s, 2);
    assert_eq!(next_event(&mut follow).await.seq, 2);
    assert_eq!(next_event(&mut follow).await.seq, 3);
    log.append(other, 0, events(1..=1)).await.unwrap();
    // A refused append is never seen by a follower.
    assert!(matches!(log.append(s, 1, events(90..=91)).await, Err(StoreError::Conflict { .. })));
    log.append(s, 3, events(4..=5)).await.unwrap();
    assert_eq!(next_event(&mut follow).await.seq, 4);
    assert_eq!(next_event(&mut follow).await.seq, 5);
    log.append(s, 5, events(6..=6)).await.unwrap();
    let e6 = next_event(&mut follow).await;
    assert_eq!(e6, Envelope::from_new(s, 6, event(6)));

    // A follower from a seq not written yet gets it when it is.
    let mut ahead = log.follow(s, 7);
    log.append(s, 6, events(7..=7)).await.unwrap();
    assert_eq!(next_event(&mut ahead).await.seq, 7);
    assert_eq!(next_event(&mut follow).await.seq, 7);

    log.set_status(s, SessionStatus::Ended).await.unwrap();
    let policy = RetentionPolicy { ended_after: Duration::from_millis(0), idle_after: Duration::from_secs(1_000_000), batch_size: 10 };
    let report = log.expire(&policy, 10_000).await.unwrap();
    assert_eq!(report.sessions_expired, 1);
    // Named, so that the gateway can close the expired session's connections (4006).
    assert_eq!(report.expired, vec![s]);
    let end = tokio::time::timeout(Duration::from_secs(20), follow.next()).await.expect("follow did not end");
    assert!(end.is_none(), "{end:?}");

    let unknown: Vec<_> = log.follow(SessionId::random(), 1).collect().await;
    assert!(matches!(unknown.as_slice(), [Err(StoreError::UnknownSession(_))]));
}

pub async fn expiry_deletes_due_sessions_in_batches_and_nothing_else<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
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
    let mut named: Vec<SessionId> = r1.expired.iter().chain(&r2.expired).copied().collect();
    named.sort();
    let mut due = ended_old.clone();
    due.push(idle);
    due.sort();
    assert_eq!(named, due, "every expired session is named once");
    let r3 = log.expire(&policy, now).await.unwrap();
    assert_eq!(r3, Default::default());

    for s in ended_old.iter().chain([&idle]) {
        assert!(log.session_meta(*s).await.unwrap().is_none());
        assert!(matches!(log.read(*s, 1, None).await, Err(StoreError::UnknownSession(_))));
        assert!(matches!(log.append(*s, 1, events(2..=2)).await, Err(StoreError::UnknownSession(_))));
        assert_eq!(log.get_snapshot(*s, 1).await.unwrap(), None);
    }
    for s in [ended_recent, live] {
        assert_eq!(log.read(s, 1, None).await.unwrap().len(), 1);
    }
    let listed = log.list_sessions(&SessionFilter::default(), None, 100).await.unwrap();
    let mut want = vec![ended_recent, live];
    want.sort();
    assert_eq!(listed.sessions.iter().map(|m| m.session).collect::<Vec<_>>(), want);
    // An expired id can be used again once its events are gone, and starts empty.
    log.create_session(idle, new_session("p")).await.unwrap();
    assert_eq!(log.latest_seq(idle).await.unwrap(), 0);
    assert!(log.read(idle, 1, None).await.unwrap().is_empty());
    assert!(log.disk_usage().await.unwrap() > 0);
}

fn accepted(command_id: &str, seq: u64) -> CommandAnswer {
    CommandAnswer { command_id: command_id.into(), seq, refusal: None }
}

fn refused(command_id: &str, seq: u64, code: &str) -> CommandAnswer {
    CommandAnswer {
        command_id: command_id.into(),
        seq,
        refusal: Some(AnswerRefusal { code: code.into(), message: format!("{code}: refused ✗") }),
    }
}

pub async fn answers_are_remembered_with_their_events_or_alone<H: Harness>() {
    let h = H::fresh().await;
    let s = SessionId::random();
    {
        let log = open(&h).await;
        log.create_session(s, new_session("p")).await.unwrap();
        assert_eq!(log.answer(s, "c1").await.unwrap(), None);
        log.append_answered(s, 0, events(1..=2), accepted("c1", 2)).await.unwrap();
        log.remember_answer(s, refused("c2", 2, "not_connected")).await.unwrap();
        log.append_answered(s, 2, events(3..=3), accepted("c3", 3)).await.unwrap();
        assert_eq!(log.answer(s, "c1").await.unwrap(), Some(accepted("c1", 2)));
        assert!(matches!(log.remember_answer(SessionId::random(), accepted("x", 0)).await, Err(StoreError::UnknownSession(_))));
        assert!(matches!(log.remember_answer(s, accepted("", 0)).await, Err(StoreError::InvalidAppend(_))));
        assert_eq!(log.answer(s, "").await.unwrap(), None);
    }
    let log = open(&h).await;
    assert_eq!(log.answer(s, "c1").await.unwrap(), Some(accepted("c1", 2)));
    assert_eq!(log.answer(s, "c2").await.unwrap(), Some(refused("c2", 2, "not_connected")));
    assert_eq!(log.answer(s, "c3").await.unwrap(), Some(accepted("c3", 3)));
    assert_eq!(log.answer(s, "c4").await.unwrap(), None);
    assert_eq!(log.read(s, 1, None).await.unwrap().len(), 3);
    // A long id of any UTF-8 is its own key.
    let long = "é".repeat(500);
    log.remember_answer(s, accepted(&long, 3)).await.unwrap();
    assert_eq!(log.answer(s, &long).await.unwrap(), Some(accepted(&long, 3)));
    assert_eq!(log.answer(s, &"é".repeat(499)).await.unwrap(), None);
}

pub async fn a_refused_append_remembers_no_answer<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.append(s, 0, events(1..=1)).await.unwrap();
    assert!(matches!(log.append_answered(s, 0, events(2..=2), accepted("late", 1)).await, Err(StoreError::Conflict { .. })));
    let mut bad = events(2..=3);
    bad[1].event_type = String::new();
    assert!(matches!(log.append_answered(s, 1, bad, accepted("bad", 3)).await, Err(StoreError::InvalidAppend(_))));
    assert_eq!(log.answer(s, "late").await.unwrap(), None);
    assert_eq!(log.answer(s, "bad").await.unwrap(), None);
    assert_eq!(log.latest_seq(s).await.unwrap(), 1);
}

pub async fn answers_go_with_their_session_and_a_new_session_inherits_none<H: Harness>() {
    let h = H::fresh().await;
    let log = open(&h).await;
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.append_answered(s, 0, events(1..=1), accepted("c1", 1)).await.unwrap();
    log.remember_answer(s, refused("c2", 1, "busy_elsewhere")).await.unwrap();
    log.set_status(s, SessionStatus::Ended).await.unwrap();
    let policy = RetentionPolicy { ended_after: Duration::ZERO, idle_after: Duration::from_secs(1_000_000), batch_size: 10 };
    assert_eq!(log.expire(&policy, 10_000).await.unwrap().sessions_expired, 1);
    assert_eq!(log.answer(s, "c1").await.unwrap(), None);
    assert_eq!(log.answer(s, "c2").await.unwrap(), None);
    log.create_session(s, new_session("p")).await.unwrap();
    assert_eq!(log.answer(s, "c1").await.unwrap(), None);
    assert_eq!(log.answer(s, "c2").await.unwrap(), None);
    assert_eq!(log.session_meta(s).await.unwrap().unwrap().status, SessionStatus::Active);
}

/// Version 1 of `test.counted` had `{"count": n}`; version 2 has `{"n": n}`. Payloads of 13 cannot be upcast.
struct TestUpcaster;

impl Upcaster for TestUpcaster {
    fn upcast(&self, event_type: &str, schema_version: u32, payload: Value) -> Result<(u32, Value), String> {
        match (event_type, schema_version) {
            ("test.counted", 1) if payload["count"] == json!(13) => Err("thirteen has no version 2".into()),
            ("test.counted", 1) => Ok((2, json!({ "n": payload["count"] }))),
            (_, v) => Ok((v, payload)),
        }
    }
}

pub async fn events_are_upcast_on_read_and_a_refused_upcast_is_corrupt_with_its_place<H: Harness>() {
    let h = H::fresh().await;
    let s = SessionId::random();
    let old = |n: u64| NewEvent { payload: json!({ "count": n }).into(), ..event(n) };
    {
        let log = open(&h).await;
        log.create_session(s, new_session("p")).await.unwrap();
        log.append(s, 0, vec![old(1), NewEvent { schema_version: 2, ..event(2) }, old(13), old(4)]).await.unwrap();
    }
    let log = h.open(Arc::new(TestUpcaster)).await;
    let first = log.read(s, 1, Some(2)).await.unwrap();
    assert_eq!((first[0].schema_version, &first[0].payload), (2, &json!({ "n": 1 })));
    assert_eq!((first[1].schema_version, &first[1].payload), (2, &json!({ "n": 2 })));
    match log.read(s, 1, None).await {
        Err(StoreError::Corrupt { session, seq: 3, reason }) => {
            assert_eq!(session, s);
            assert!(reason.contains("thirteen"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let streamed: Vec<_> = log.stream(s, 1).collect().await;
    // Some of the events before it (a backend may read ahead in chunks), then the error, then the end.
    let (last, before) = streamed.split_last().unwrap();
    assert!(matches!(last, Err(StoreError::Corrupt { seq: 3, .. })), "{last:?}");
    assert!(before.len() <= 2 && before.iter().enumerate().all(|(i, e)| e.as_ref().unwrap().seq == i as u64 + 1));
    assert_eq!(log.read(s, 4, None).await.unwrap()[0].payload, json!({ "n": 4 }));
    // Stored bytes are never rewritten: without the upcaster, version 1 again.
    drop(log);
    let log = open(&h).await;
    assert_eq!(log.read(s, 1, Some(1)).await.unwrap()[0].payload, json!({ "count": 1 }));
}
