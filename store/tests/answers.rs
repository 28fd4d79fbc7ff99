//! Remembered answers: the reply a session gave to a command id, written with the command's events
//! (one atomic sled batch) or alone for a command that wrote nothing, found again after a reopen,
//! and removed with the session by expiry.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{config, event, new_session, open, temp_log};
use rand::{Rng, SeedableRng};
use vestibule_store::{
    AnswerRefusal, CommandAnswer, Durability, EventLog, RetentionPolicy, SegmentEventLog, SessionId, SledEventLog, StoreConfig, StoreError,
    layout,
};

fn accepted(command_id: &str, seq: u64) -> CommandAnswer {
    CommandAnswer { command_id: command_id.into(), seq, refusal: None }
}

fn refused(command_id: &str, seq: u64, code: &str) -> CommandAnswer {
    CommandAnswer {
        command_id: command_id.into(),
        seq,
        refusal: Some(AnswerRefusal { code: code.into(), message: format!("refused: {code}") }),
    }
}

/// Every answer key stored for `session`, read with sled itself after the log is closed.
fn raw_answer_ids(dir: &std::path::Path, session: SessionId) -> Vec<String> {
    let db = open_raw(dir);
    let tree = db.open_tree(layout::TREE_NAME).unwrap();
    tree.scan_prefix(layout::answer_prefix(&session))
        .keys()
        .map(|k| layout::parse_answer_key(&k.unwrap()).expect("an answer key").1)
        .collect()
}

fn open_raw(dir: &std::path::Path) -> sled::Db {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match sled::Config::new().path(dir).open() {
            Ok(db) => return db,
            Err(e) if std::time::Instant::now() < deadline && e.to_string().contains("could not acquire lock") => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("opening {}: {e}", dir.display()),
        }
    }
}

#[tokio::test]
async fn answers_are_found_again_after_a_reopen_whether_written_with_events_or_alone() {
    let dir = tempfile::tempdir().unwrap();
    let s = SessionId::random();
    {
        let log = open(dir.path());
        log.create_session(s, new_session("p")).await.unwrap();
        let outcome = log.append_answered(s, 0, vec![event(1), event(2)], accepted("c1", 2)).await.unwrap();
        assert_eq!(outcome.last_seq, 2);
        log.remember_answer(s, refused("c2", 2, "not_connected")).await.unwrap();
        log.remember_answer(s, accepted("c3", 2)).await.unwrap();
        assert_eq!(log.stats().answers, 3);
        assert_eq!(log.answer(s, "c1").await.unwrap(), Some(accepted("c1", 2)));
        // A positive probe first, so the misses below are real misses.
        assert_eq!(log.answer(s, "c2").await.unwrap(), Some(refused("c2", 2, "not_connected")));
        assert_eq!(log.answer(s, "never").await.unwrap(), None);
        assert_eq!(log.answer(s, "").await.unwrap(), None);
        assert_eq!(log.answer(SessionId::random(), "c1").await.unwrap(), None);
    }
    let log = open(dir.path());
    for expected in [accepted("c1", 2), refused("c2", 2, "not_connected"), accepted("c3", 2)] {
        assert_eq!(log.answer(s, &expected.command_id).await.unwrap(), Some(expected.clone()));
    }
    assert_eq!(log.read(s, 1, None).await.unwrap().len(), 2, "answers are not events");
}

#[tokio::test]
async fn a_refused_append_remembers_no_answer() {
    let (_dir, log) = temp_log();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    log.append_answered(s, 0, vec![event(1)], accepted("first", 1)).await.unwrap();
    // A stale expected seq: a conflict writes neither the events nor the answer.
    let conflict = log.append_answered(s, 0, vec![event(2)], accepted("stale", 1)).await;
    assert!(matches!(conflict, Err(StoreError::Conflict { actual: 1, .. })), "{conflict:?}");
    // An invalid event refuses the whole append, answer included.
    let mut huge = event(2);
    huge.payload = serde_json::json!({ "blob": "x".repeat(300 * 1024) }).into();
    assert!(matches!(log.append_answered(s, 1, vec![huge], accepted("huge", 2)).await, Err(StoreError::InvalidAppend(_))));
    // An answer to an unknown session is refused, not stored.
    let ghost = SessionId::random();
    assert!(matches!(log.remember_answer(ghost, accepted("c", 0)).await, Err(StoreError::UnknownSession(_))));
    assert_eq!(log.answer(s, "first").await.unwrap(), Some(accepted("first", 1)), "the probe: answers are found");
    for id in ["stale", "huge"] {
        assert_eq!(log.answer(s, id).await.unwrap(), None, "{id}");
    }
    assert_eq!(log.latest_seq(s).await.unwrap(), 1);
}

#[tokio::test]
async fn answers_go_with_their_session_when_it_expires() {
    let dir = tempfile::tempdir().unwrap();
    let (s, keep) = (SessionId::random(), SessionId::random());
    {
        let log = open(dir.path());
        for id in [s, keep] {
            log.create_session(id, new_session("p")).await.unwrap();
            log.append_answered(id, 0, vec![event(1)], accepted("c1", 1)).await.unwrap();
            log.remember_answer(id, refused("c2", 1, "too_many")).await.unwrap();
        }
        let mut recent = event(2);
        recent.time_ms = 9_000_000;
        log.append(keep, 1, vec![recent]).await.unwrap();
        let policy = RetentionPolicy { ended_after: Duration::from_secs(60), idle_after: Duration::from_secs(3600), batch_size: 10 };
        let report = log.expire(&policy, 10_000_000).await.unwrap();
        assert_eq!((report.sessions_expired, report.events_deleted), (1, 1));
        assert_eq!(log.answer(s, "c1").await.unwrap(), None);
        assert_eq!(log.answer(keep, "c1").await.unwrap(), Some(accepted("c1", 1)));
    }
    assert_eq!(raw_answer_ids(dir.path(), s), Vec::<String>::new(), "the expired session's answers are deleted");
    assert_eq!(raw_answer_ids(dir.path(), keep), vec!["c1".to_string(), "c2".to_string()]);
    // The id can be used again, and starts with no answers.
    let log = open(dir.path());
    log.create_session(s, new_session("p")).await.unwrap();
    assert_eq!(log.answer(s, "c1").await.unwrap(), None);
}

#[tokio::test]
async fn a_new_session_does_not_inherit_answers_left_under_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let s = SessionId::random();
    {
        // As a build that purged events without their answers would have left them.
        let db = open_raw(dir.path());
        let tree = db.open_tree(layout::TREE_NAME).unwrap();
        tree.insert(layout::LAYOUT_KEY, &layout::LAYOUT_VERSION.to_be_bytes()).unwrap();
        tree.insert(layout::answer_key(&s, "old"), layout::encode_answer(&accepted("old", 4)).unwrap()).unwrap();
        db.flush().unwrap();
    }
    assert_eq!(raw_answer_ids(dir.path(), s), vec!["old".to_string()], "the orphan is there to begin with");
    let log = open(dir.path());
    log.create_session(s, new_session("p")).await.unwrap();
    assert_eq!(log.answer(s, "old").await.unwrap(), None);
    drop(log);
    assert_eq!(raw_answer_ids(dir.path(), s), Vec::<String>::new());
}

// ------------------------------------------------------------------------------------------------
// Crash atomicity: an append's answer and its events are one sled batch (one segment-log record), so
// a SIGKILL keeps both or neither. The test runs this same test binary as a child (`answer_crash_child`, which does nothing
// unless VESTIBULE_ANSWER_CRASH_DIR is set), kills it once it has acknowledged enough appends, and
// checks the reopened log.
// ------------------------------------------------------------------------------------------------

const CRASH_DIR: &str = "VESTIBULE_ANSWER_CRASH_DIR";
/// The same, for the segment-log backend's child.
const SEGMENTS_CRASH_DIR: &str = "VESTIBULE_ANSWER_CRASH_SEGMENTS_DIR";
const CRASH_SESSIONS: u8 = 4;

fn crash_session(i: u8) -> SessionId {
    SessionId::from_bytes([0xa0 + i; 16])
}

/// Appends from one task per session until killed: each append is 1 to 3 events answered by the
/// command id `c<seq of its first event>`; prints `ack <session index> <last seq>` once durable.
#[test]
fn answer_crash_child() {
    let Ok(dir) = std::env::var(CRASH_DIR) else { return };
    run_crash_child(move || std::sync::Arc::new(SledEventLog::open(config(dir.as_ref(), Durability::Durable)).unwrap()));
}

/// [`answer_crash_child`] on the segment log.
#[test]
fn answer_crash_child_segments() {
    let Ok(dir) = std::env::var(SEGMENTS_CRASH_DIR) else { return };
    run_crash_child(move || std::sync::Arc::new(SegmentEventLog::open(segments_config(dir.as_ref())).unwrap()));
}

fn segments_config(dir: &std::path::Path) -> StoreConfig {
    // Small segments, so kills also land around segment roll-overs.
    config(dir, Durability::Durable).with_segment_bytes(64 * 1024)
}

fn run_crash_child(open_log: impl FnOnce() -> std::sync::Arc<dyn EventLog> + Send + 'static) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let log = open_log();
        for i in 0..CRASH_SESSIONS {
            match log.create_session(crash_session(i), new_session("crash")).await {
                Ok(_) | Err(StoreError::SessionExists(_)) => {}
                Err(e) => panic!("create: {e}"),
            }
        }
        let tasks: Vec<_> = (0..CRASH_SESSIONS)
            .map(|i| {
                let log = log.clone();
                tokio::spawn(async move {
                    let s = crash_session(i);
                    let mut seq = log.latest_seq(s).await.unwrap();
                    loop {
                        let n = 1 + (seq + u64::from(i)) % 3;
                        let command_id = format!("c{}", seq + 1);
                        let events = (seq + 1..=seq + n).map(|q| crash_event(&command_id, q)).collect();
                        log.append_answered(s, seq, events, accepted(&command_id, seq + n)).await.unwrap();
                        seq += n;
                        println!("ack {i} {seq}");
                    }
                })
            })
            .collect();
        // The tasks never end: this waits until the child is killed, or ends it when one panics.
        futures_util::future::try_join_all(tasks).await.unwrap();
    });
}

fn crash_event(command_id: &str, seq: u64) -> vestibule_store::NewEvent {
    let mut e = event(seq);
    e.correlation_id = Some(command_id.to_string());
    e
}

#[tokio::test]
async fn an_answer_and_its_events_survive_a_kill_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    kill_and_check("answer_crash_child", CRASH_DIR, dir.path(), move || {
        std::sync::Arc::new(SledEventLog::open(config(&path, Durability::Durable)).unwrap())
    })
    .await;
}

#[tokio::test]
async fn on_the_segment_log_an_answer_and_its_events_survive_a_kill_together_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    kill_and_check("answer_crash_child_segments", SEGMENTS_CRASH_DIR, dir.path(), move || {
        std::sync::Arc::new(SegmentEventLog::open(segments_config(&path)).unwrap())
    })
    .await;
}

/// Runs `child` (this test binary, one test) on `dir` four times, killing it each time once it has
/// acknowledged a number of appends, and checks the log reopened by `open_log` after each kill.
async fn kill_and_check(child: &str, env: &str, dir: &std::path::Path, open_log: impl Fn() -> std::sync::Arc<dyn EventLog>) {
    let seed: u64 = std::env::var("VESTIBULE_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut acked: HashMap<u8, u64> = HashMap::new();
    for cycle in 0..4 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", child, "--nocapture", "--test-threads=1"])
            .env(env, dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill once the child has acknowledged a number of appends (counted, not timed), plus a
        // random number more, so kills land at different points of the writer's cycle.
        let wanted = 20 + rng.random_range(0..200);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < wanted {
            let Some(Ok(line)) = lines.next() else { panic!("seed {seed}, cycle {cycle}: the child ended after {seen} acks") };
            let Some(rest) = line.strip_prefix("ack ") else { continue };
            let (i, seq) = rest.split_once(' ').unwrap();
            acked.insert(i.parse().unwrap(), seq.parse().unwrap());
            seen += 1;
        }
        child.kill().unwrap();
        // Acks printed between the count and the kill are still acks.
        for line in lines.map_while(Result::ok) {
            if let Some((i, seq)) = line.strip_prefix("ack ").and_then(|r| r.split_once(' ')) {
                acked.insert(i.parse().unwrap(), seq.parse().unwrap());
            }
        }
        child.wait().unwrap();

        let log = open_log();
        for i in 0..CRASH_SESSIONS {
            let s = crash_session(i);
            let events = log.read(s, 1, None).await.unwrap();
            let last = events.last().map_or(0, |e| e.seq);
            assert!(last >= acked.get(&i).copied().unwrap_or(0), "seed {seed}: session {i} lost acknowledged events");
            // Every decision in the log has its answer, naming its last event...
            let mut decisions: Vec<(String, u64)> = Vec::new();
            for e in &events {
                let c = e.correlation_id.clone().unwrap();
                match decisions.last_mut() {
                    Some((last_id, last_seq)) if *last_id == c => *last_seq = e.seq,
                    _ => decisions.push((c, e.seq)),
                }
            }
            for (command_id, seq) in &decisions {
                assert_eq!(log.answer(s, command_id).await.unwrap(), Some(accepted(command_id, *seq)), "seed {seed}: session {i}");
            }
            // ...and no answer outlives its events.
            let next = format!("c{}", last + 1);
            assert_eq!(log.answer(s, &next).await.unwrap(), None, "seed {seed}: an answer without its events");
        }
    }
    assert!(acked.values().sum::<u64>() > 0);
}
