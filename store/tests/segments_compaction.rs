//! Compaction of the segment log (decision 0105): live records of mostly dead segments are copied
//! to the head of the log and the old segments deleted, without changing anything a reader sees,
//! after a reopen from a checkpoint or by a full scan, or after a crash at any point of it.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use vestibule_store::{
    CommandAnswer, Durability, EventLog, NewEvent, NewSession, RetentionPolicy, SegmentEventLog, SessionId, SessionStatus, Snapshot,
    StoreConfig,
};

const SEGMENT: u64 = 64 * 1024;

fn config(dir: &Path, compact_percent: u32) -> StoreConfig {
    // Small steps, so that a compaction spans many batches; checkpoints every two segments.
    StoreConfig::at(dir).with_segment_bytes(SEGMENT).with_checkpoint_bytes(2 * SEGMENT).with_compaction(compact_percent, 8 * 1024)
}

fn open(dir: &Path, compact_percent: u32) -> Arc<SegmentEventLog> {
    Arc::new(SegmentEventLog::open(config(dir, compact_percent)).expect("open"))
}

/// Buffered: the workload's appends need no fsync each (compaction syncs its copies whatever the
/// mode, and a close syncs everything), which keeps the test fast on a slow disk.
fn open_buffered(dir: &Path, compact_percent: u32) -> Arc<SegmentEventLog> {
    let config = config(dir, compact_percent).with_durability(Durability::Buffered { interval_ms: 1000 });
    Arc::new(SegmentEventLog::open(config).expect("open"))
}

fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(".seg")).collect();
    names.sort();
    names
}

fn remove_checkpoints(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.contains(".ckpt") {
            std::fs::remove_file(dir.join(name)).unwrap();
        }
    }
}

fn event(n: u64, pad: usize) -> NewEvent {
    NewEvent {
        time_ms: 1_000 + n,
        event_type: "test.counted".into(),
        schema_version: 1,
        correlation_id: Some(format!("cmd-{n}")),
        checksum: None,
        payload: json!({ "n": n, "pad": "x".repeat(pad) }).into(),
    }
}

fn new_session() -> NewSession {
    NewSession { project: "compact".into(), created_ms: 1_000, resume_token_hash: Some("h".repeat(64)) }
}

#[derive(Default, Clone)]
struct Model {
    /// Per event: its n (the payload's) and pad.
    events: Vec<(u64, usize)>,
    status: Option<SessionStatus>,
    answers: HashMap<String, CommandAnswer>,
    snapshots: HashMap<u32, Snapshot>,
}

struct World {
    live: HashMap<SessionId, Model>,
    gone: Vec<SessionId>,
}

async fn check(log: &SegmentEventLog, world: &World, what: &str) {
    for (s, m) in &world.live {
        let meta = log.session_meta(*s).await.unwrap().unwrap_or_else(|| panic!("{what}: session {s} is missing"));
        assert_eq!(meta.latest_seq, m.events.len() as u64, "{what}: latest seq of {s}");
        assert_eq!(Some(meta.status), m.status, "{what}: status of {s}");
        let events = log.read(*s, 1, None).await.unwrap();
        let got: Vec<(u64, usize)> =
            events.iter().map(|e| (e.payload["n"].as_u64().unwrap(), e.payload["pad"].as_str().unwrap().len())).collect();
        assert_eq!(got, m.events, "{what}: events of {s}");
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.seq, i as u64 + 1);
        }
        for (id, a) in &m.answers {
            assert_eq!(log.answer(*s, id).await.unwrap().as_ref(), Some(a), "{what}: answer {id} of {s}");
        }
        assert_eq!(log.answer(*s, "never-sent").await.unwrap(), None);
        for v in 1..=3 {
            assert_eq!(log.get_snapshot(*s, v).await.unwrap().as_ref(), m.snapshots.get(&v), "{what}: snapshot {v} of {s}");
        }
    }
    for s in &world.gone {
        assert!(log.session_meta(*s).await.unwrap().is_none(), "{what}: expired session {s} is back");
    }
}

/// Random operations: `long` long-lived sessions that write a little every round, among churning
/// ones that write more and are expired two rounds later. Returns the world and the most segment
/// files seen in the second half.
async fn workload(dir: &Path, seed: u64, rounds: u64, compact_percent: u32, reopen_every: u64) -> (World, usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut log = open_buffered(dir, compact_percent);
    let mut world = World { live: HashMap::new(), gone: Vec::new() };
    let long: Vec<SessionId> = (0..2).map(|_| SessionId::random()).collect();
    for s in &long {
        log.create_session(*s, new_session()).await.unwrap();
        world.live.insert(*s, Model { status: Some(SessionStatus::Active), ..Model::default() });
    }
    let mut churn: Vec<(u64, SessionId)> = Vec::new();
    let policy = RetentionPolicy { ended_after: Duration::ZERO, idle_after: Duration::from_secs(1 << 40), batch_size: 10_000 };
    let mut n = 0u64;
    let mut most = 0;
    for round in 0..rounds {
        for s in &long {
            let m = world.live.get_mut(s).unwrap();
            let expected = m.events.len() as u64;
            n += 1;
            let pad = rng.random_range(10..300);
            match rng.random_range(0..10) {
                0..=2 => {
                    let a = CommandAnswer { command_id: format!("c{n}"), seq: expected + 1, refusal: None };
                    log.append_answered(*s, expected, vec![event(n, pad)], a.clone()).await.unwrap();
                    m.answers.insert(a.command_id.clone(), a);
                }
                3 => {
                    let a = CommandAnswer { command_id: format!("r{n}"), seq: expected, refusal: None };
                    log.remember_answer(*s, a.clone()).await.unwrap();
                    m.answers.insert(a.command_id.clone(), a);
                    log.append(*s, expected, vec![event(n, pad)]).await.unwrap();
                }
                4 if expected > 0 => {
                    let v = rng.random_range(1..=3);
                    let snap =
                        Snapshot { seq: expected, schema_version: v, time_ms: n, state: json!({ "n": n }).into(), log_bytes: Some(n) };
                    log.put_snapshot(*s, snap.clone()).await.unwrap();
                    m.snapshots.insert(v, snap);
                    log.append(*s, expected, vec![event(n, pad)]).await.unwrap();
                }
                5 if rng.random_range(0..4) == 0 => {
                    log.delete_snapshots(Some(*s)).await.unwrap();
                    m.snapshots.clear();
                    log.set_status(*s, SessionStatus::Active).await.unwrap();
                    log.append(*s, expected, vec![event(n, pad)]).await.unwrap();
                }
                _ => {
                    let count = rng.random_range(1..=3);
                    let events: Vec<NewEvent> = (0..count).map(|k| event(n * 10 + k, pad)).collect();
                    log.append(*s, expected, events).await.unwrap();
                    m.events.extend((0..count).map(|k| (n * 10 + k, pad)));
                    continue;
                }
            }
            m.events.push((n, pad));
        }
        for _ in 0..2 {
            let s = SessionId::random();
            log.create_session(s, new_session()).await.unwrap();
            let mut m = Model { status: Some(SessionStatus::Active), ..Model::default() };
            for k in 0..3 {
                n += 1;
                let pad = rng.random_range(500..1500);
                log.append(s, k, vec![event(n, pad)]).await.unwrap();
                m.events.push((n, pad));
            }
            world.live.insert(s, m);
            churn.push((round, s));
        }
        let due: Vec<SessionId> = churn.iter().filter(|(r, _)| r + 2 <= round).map(|(_, s)| *s).collect();
        churn.retain(|(r, _)| r + 2 > round);
        for s in &due {
            log.set_status(*s, SessionStatus::Ended).await.unwrap();
        }
        let report = log.expire(&policy, 10_000_000).await.unwrap();
        assert_eq!(report.sessions_expired as usize, due.len(), "round {round}");
        for s in due {
            world.live.remove(&s);
            world.gone.push(s);
        }
        if reopen_every > 0 && round % reopen_every == reopen_every - 1 {
            drop(log);
            log = open_buffered(dir, compact_percent);
            check(&log, &world, &format!("seed {seed} round {round}: reopened")).await;
        }
        if round >= rounds / 2 {
            most = most.max(segment_files(dir).len());
        }
    }
    check(&log, &world, &format!("seed {seed}: before close")).await;
    drop(log);
    (world, most)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_every_read_and_bounds_the_segments() {
    for seed in 1..=2 {
        let dir = tempfile::tempdir().unwrap();
        let (world, most) = workload(dir.path(), seed, 160, 25, 40).await;
        // Reopened from the checkpoint written at close, then by a full scan.
        let log = open(dir.path(), 25);
        check(&log, &world, &format!("seed {seed}: from the checkpoint")).await;
        drop(log);
        remove_checkpoints(dir.path());
        let log = open(dir.path(), 25);
        check(&log, &world, &format!("seed {seed}: full scan")).await;
        drop(log);
        remove_checkpoints(dir.path());
        // A full scan again with compaction off: the copies alone are enough.
        let log = open(dir.path(), 0);
        check(&log, &world, &format!("seed {seed}: full scan, compaction off")).await;
        drop(log);

        println!("seed {seed}: at most {most} segment files with compaction");
        assert!(most <= 10, "seed {seed}: {most} segment files with compaction");
        if seed == 1 {
            let plain = tempfile::tempdir().unwrap();
            let (_, most_plain) = workload(plain.path(), seed, 160, 0, 0).await;
            println!("seed {seed}: at most {most_plain} without");
            assert!(most_plain >= 2 * most, "seed {seed}: without compaction {most_plain}, with {most}");
        }
    }
}

/// Copies the segment files and checkpoints of `from` to a new directory. Taken when the writer is
/// idle (right after `checkpoint()` returns, which the writer answers after its between-batches
/// work, compaction's step included): every disk state compaction goes through between its steps.
/// (A crash inside a step leaves an unsynced tail, which recovery cuts: the state before it.)
fn image(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        if name.ends_with(".seg") || name.contains(".ckpt") {
            std::fs::copy(e.path(), to.path().join(&name)).unwrap();
        }
    }
    to
}

fn checkpoint_paths(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.to_string_lossy().ends_with(".ckpt")).collect();
    paths.sort();
    paths
}

/// One round of the crash test: the kept session appends (answered; a snapshot every seventh
/// round), a churning session writes 12 KB and is expired.
async fn one_round(log: &SegmentEventLog, world: &mut World, keep: SessionId, n: &mut u64, round: u64) {
    let policy = RetentionPolicy { ended_after: Duration::ZERO, idle_after: Duration::from_secs(1 << 40), batch_size: 10_000 };
    let m = world.live.get_mut(&keep).unwrap();
    *n += 1;
    let a = CommandAnswer { command_id: format!("c{n}"), seq: m.events.len() as u64 + 1, refusal: None };
    log.append_answered(keep, m.events.len() as u64, vec![event(*n, 100)], a.clone()).await.unwrap();
    m.events.push((*n, 100));
    m.answers.insert(a.command_id.clone(), a);
    if round.is_multiple_of(7) {
        let snap = Snapshot {
            seq: m.events.len() as u64,
            schema_version: 1 + (round % 2) as u32,
            time_ms: *n,
            state: json!({ "n": n }).into(),
            log_bytes: (!round.is_multiple_of(3)).then_some(*n),
        };
        log.put_snapshot(keep, snap.clone()).await.unwrap();
        m.snapshots.insert(snap.schema_version, snap);
    }
    let s = SessionId::random();
    log.create_session(s, new_session()).await.unwrap();
    for k in 0..3 {
        *n += 1;
        log.append(s, k, vec![event(*n, 4000)]).await.unwrap();
    }
    log.set_status(s, SessionStatus::Ended).await.unwrap();
    log.expire(&policy, 10_000_000).await.unwrap();
    world.gone.push(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_image_between_any_two_steps_reopens_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let log = open_buffered(dir.path(), 25);
    let keep = SessionId::random();
    log.create_session(keep, new_session()).await.unwrap();
    let mut world = World { live: HashMap::new(), gone: Vec::new() };
    world.live.insert(keep, Model { status: Some(SessionStatus::Active), ..Model::default() });
    let mut images: Vec<(World, tempfile::TempDir)> = Vec::new();
    let mut n = 0;
    for round in 0..45u64 {
        one_round(&log, &mut world, keep, &mut n, round).await;
        log.checkpoint().await.unwrap();
        let snapshot = World { live: world.live.clone(), gone: world.gone.clone() };
        images.push((snapshot, image(dir.path())));
    }
    drop(log);
    // The kept session wrote to every segment: only compaction can have deleted the first ones.
    let files = segment_files(dir.path());
    assert!(files.len() <= 6 && files[0] != "00000001.seg", "{files:?}");
    let compacted = images.iter().position(|(_, img)| !img.path().join("00000001.seg").exists()).expect("segment 1 compacted");
    assert!(compacted + 10 < images.len(), "compacted only at image {compacted}");
    println!("segment 1 compacted by image {compacted} of {}; at the end: {files:?}", images.len());
    let old_checkpoints: Vec<Vec<(std::ffi::OsString, Vec<u8>)>> = images
        .iter()
        .map(|(_, img)| {
            checkpoint_paths(img.path()).iter().map(|p| (p.file_name().unwrap().to_owned(), std::fs::read(p).unwrap())).collect()
        })
        .collect();
    for (i, (world, img)) in images.iter().enumerate() {
        let what = format!("image {i}");
        // As it is (its newest checkpoint), with only the older one, with one from ten rounds
        // before (its segments compacted away since), and by a full scan.
        let log = open(img.path(), 25);
        check(&log, world, &format!("{what}: newest checkpoint")).await;
        drop(log);
        let img2 = image(img.path());
        let paths = checkpoint_paths(img2.path());
        if paths.len() > 1 {
            std::fs::remove_file(&paths[0]).unwrap();
            let log = open(img2.path(), 0);
            check(&log, world, &format!("{what}: older checkpoint")).await;
            drop(log);
        }
        if i >= 10 {
            let img3 = image(img.path());
            remove_checkpoints(img3.path());
            for (name, bytes) in &old_checkpoints[i - 10] {
                std::fs::write(img3.path().join(name), bytes).unwrap();
            }
            let log = open(img3.path(), 0);
            check(&log, world, &format!("{what}: a checkpoint ten rounds old")).await;
            drop(log);
        }
        remove_checkpoints(img.path());
        let log = open(img.path(), 0);
        check(&log, world, &format!("{what}: full scan")).await;
        drop(log);
        if i % 4 == 1 {
            // Carry on after the crash: a compaction cut short starts again, copying nothing twice.
            let log = open_buffered(img.path(), 25);
            let mut world = World { live: world.live.clone(), gone: world.gone.clone() };
            let mut n = 1_000_000 * (i as u64 + 1);
            for round in 0..12 {
                one_round(&log, &mut world, keep, &mut n, round).await;
            }
            check(&log, &world, &format!("{what}: carried on")).await;
            drop(log);
            for percent in [25, 0] {
                let log = open(img.path(), percent);
                check(&log, &world, &format!("{what}: carried on, reopened")).await;
                drop(log);
                remove_checkpoints(img.path());
            }
        }
    }
}

/// Found by the `segment_recovery` fuzz target's model of the writer. An expiry's tombstone covers
/// the segments where the session has bytes; once compaction had copied a record forward, the
/// segment holding the original no longer counted for the session, so the tombstone did not cover
/// it. When the copy's segment and the expiry's were deleted while the original's segment was
/// still there (its compaction not finished), a full scan found the original and nothing that
/// cancelled it: the expired session was back. The index now keeps such a segment for the session
/// (at 0 bytes) until it is deleted, so the tombstone, and its segment, outlive it.
///
/// Deterministic: one-frame compaction steps, one per batch (a flush is a batch); compaction is
/// stopped after the first copy by reopening with it off, as a slow or blocked compaction would be.
#[tokio::test]
async fn an_expired_session_stays_expired_when_its_moved_original_outlives_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let config = |percent| StoreConfig::at(dir.path()).with_segment_bytes(SEGMENT).with_compaction(percent, 1);
    let (x, w) = (SessionId::random(), SessionId::random());
    // Segment 1: x's creation, then w's (live to the end) and 50 KB of its events; x's 20 KB
    // append does not fit, and opens segment 2.
    let log = SegmentEventLog::open(config(100)).unwrap();
    log.create_session(x, new_session()).await.unwrap();
    log.create_session(w, new_session()).await.unwrap();
    for k in 0..5 {
        log.append(w, k, vec![event(k, 10_000)]).await.unwrap();
    }
    log.append(x, 0, vec![event(9, 20_000)]).await.unwrap();
    // The segment ahead (3) is made after the append is answered: the flush waits for it.
    log.flush().await.unwrap();
    assert_eq!(segment_files(dir.path()), ["00000001.seg", "00000002.seg", "00000003.seg"]);
    // Compaction of segment 1 (always due at 100 %): its planning pass, then the first copy, of
    // x's creation, into segment 2. Then it stops, with w's records still only in segment 1.
    while log.compaction_stats().copied_bytes == 0 {
        log.flush().await.unwrap();
    }
    drop(log);

    let log = SegmentEventLog::open(config(0)).unwrap();
    log.set_status(x, SessionStatus::Ended).await.unwrap();
    let policy = RetentionPolicy { ended_after: Duration::ZERO, idle_after: Duration::from_secs(1 << 40), batch_size: 10 };
    assert_eq!(log.expire(&policy, 10_000_000).await.unwrap().expired, vec![x]);
    // w's 50 KB append does not fit segment 2: segment 3. Segment 2 (x's append, the copy of x's
    // creation, x's expiry) is dead but for the tombstone, which must stay while segment 1, which
    // keeps w's records and x's original, does. (Before the fix, segment 2 was deleted here.)
    log.append(w, 5, vec![event(10, 50_000)]).await.unwrap();
    log.flush().await.unwrap();
    assert_eq!(segment_files(dir.path()), ["00000001.seg", "00000002.seg", "00000003.seg", "00000004.seg"]);
    assert!(log.session_meta(x).await.unwrap().is_none());
    drop(log);

    // Opening must give the same index whatever it finds (decision 0105); a full scan here.
    remove_checkpoints(dir.path());
    let log = SegmentEventLog::open(config(0)).unwrap();
    assert_eq!(log.latest_seq(w).await.unwrap(), 6);
    assert!(log.session_meta(x).await.unwrap().is_none(), "the expired session {x} is back after a full scan");
}
