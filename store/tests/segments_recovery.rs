//! The segment log's own crash discipline (decision 0105): a torn last frame is cut at every block,
//! corruption anywhere else is an error naming its place, data survives reopening, segments roll
//! over when full and go once nothing in them is live.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{event, new_session};
use serde_json::json;
use vestibule_store::{
    AnswerRefusal, CommandAnswer, Durability, EventLog, RetentionPolicy, SegmentEventLog, SessionId, SessionStatus, Snapshot, StoreConfig,
    StoreError,
};

const SMALL_SEGMENT: u64 = 64 * 1024;

fn config(dir: &Path) -> StoreConfig {
    StoreConfig::at(dir).with_segment_bytes(SMALL_SEGMENT)
}

fn open(dir: &Path) -> Arc<SegmentEventLog> {
    Arc::new(SegmentEventLog::open(config(dir)).expect("open"))
}

fn segment(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("{n:08}.seg"))
}

fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(".seg")).collect();
    names.sort();
    names
}

/// The frames of a segment file, as `(start, end)`, read with the format of frame.rs:
/// `u32 BE length | u32 BE CRC-32C | records`, ending at a zero length.
fn frames(path: &Path) -> Vec<(usize, usize)> {
    let bytes = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        out.push((at, at + 8 + len));
        at += 8 + len;
    }
    out
}

fn checkpoint_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.contains(".ckpt")).collect();
    names.sort();
    names
}

fn remove_checkpoints(dir: &Path) {
    for name in checkpoint_files(dir) {
        std::fs::remove_file(dir.join(name)).unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for name in segment_files(from) {
        std::fs::copy(from.join(&name), to.join(&name)).unwrap();
    }
}

fn answer(command_id: &str, seq: u64) -> CommandAnswer {
    CommandAnswer { command_id: command_id.into(), seq, refusal: None }
}

/// One session, one create frame and `appends` append frames of two events each (each append
/// awaited, so each is its own frame). Returns the session.
async fn write_frames(dir: &Path, appends: u64) -> SessionId {
    let log = open(dir);
    let s = SessionId::from_bytes([0x5e; 16]);
    log.create_session(s, new_session("torn")).await.unwrap();
    for i in 0..appends {
        let seq = i * 2;
        log.append_answered(s, seq, vec![event(seq + 1), event(seq + 2)], answer(&format!("c{i}"), seq + 2)).await.unwrap();
    }
    s
}

/// After a reopen: the first `appends` appends are all there with their answers, nothing after.
async fn check_intact(log: &SegmentEventLog, s: SessionId, appends: u64, what: &str) {
    let events = log.read(s, 1, None).await.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(events.len() as u64, appends * 2, "{what}");
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "{what}");
        assert_eq!(e.payload, json!({ "n": e.seq }), "{what}");
    }
    for i in 0..appends {
        assert_eq!(log.answer(s, &format!("c{i}")).await.unwrap(), Some(answer(&format!("c{i}"), i * 2 + 2)), "{what}");
    }
    assert_eq!(log.answer(s, &format!("c{appends}")).await.unwrap(), None, "{what}: the torn append's answer is gone");
}

/// Reopens `dir`, checks the torn append is gone and the rest intact, appends, and checks that the
/// new append survives another reopen (so nothing of the torn frame was left to trip over).
async fn reopen_and_check(dir: &Path, s: SessionId, kept: u64, what: &str) {
    {
        let log = SegmentEventLog::open(config(dir)).unwrap_or_else(|e| panic!("{what}: {e}"));
        check_intact(&log, s, kept, what).await;
        let seq = kept * 2;
        log.append_answered(s, seq, vec![event(seq + 1), event(seq + 2)], answer(&format!("c{kept}"), seq + 2)).await.unwrap();
    }
    let log = SegmentEventLog::open(config(dir)).unwrap_or_else(|e| panic!("{what}, second reopen: {e}"));
    check_intact(&log, s, kept + 1, what).await;
}

/// A crash tears a write in whole blocks (a device writes 512-byte sectors, the page cache whole
/// pages), in place: the segment keeps its preallocated size. A cut of the file, or a flipped byte
/// in a complete frame, is damage, refused (`segments_damage.rs`).
#[tokio::test]
async fn a_torn_last_frame_is_cut_at_every_block_and_every_acknowledged_append_survives() {
    let pristine = tempfile::tempdir().unwrap();
    let appends = 4;
    let s = write_frames(pristine.path(), appends).await;
    let seg = segment(pristine.path(), 1);
    let all = frames(&seg);
    assert_eq!(all.len() as u64, 1 + appends, "one frame per group commit");
    let (start, end) = *all.last().unwrap();

    for cut in 0..(end - start) {
        // Written up to the block boundary at or after `cut` bytes of the frame; zeros after.
        let from = if cut == 0 { start } else { (start + cut).next_multiple_of(512) };
        if from >= end {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), dir.path());
        let path = segment(dir.path(), 1);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[from..end].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        reopen_and_check(dir.path(), s, appends - 1, &format!("the last frame written up to byte {}", from - start)).await;
    }
    for flip in start..end {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), dir.path());
        let path = segment(dir.path(), 1);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[flip] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        match SegmentEventLog::open(config(dir.path())) {
            Err(StoreError::Engine(msg)) => assert!(msg.contains(&format!("offset {start}")), "byte {flip}: {msg}"),
            other => panic!("byte {} of the last frame flipped: expected a corruption error, got {other:?}", flip - start),
        }
    }
}

#[tokio::test]
async fn corruption_before_the_last_frame_is_an_error_naming_its_place() {
    let pristine = tempfile::tempdir().unwrap();
    write_frames(pristine.path(), 4).await;
    let all = frames(&segment(pristine.path(), 1));
    let (start, end) = all[2];
    // A byte of its records, of its CRC, and of its length (smaller and larger).
    for (flip, mask) in [(start + 20, 0x01u8), (start + 5, 0x80), (start + 3, 0x01), (start + 3, 0x80), (start + 1, 0x01), (end - 1, 0x10)]
    {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), dir.path());
        let path = segment(dir.path(), 1);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[flip] ^= mask;
        std::fs::write(&path, &bytes).unwrap();
        match SegmentEventLog::open(config(dir.path())) {
            Err(StoreError::Engine(msg)) => {
                assert!(msg.contains("00000001.seg") && msg.contains(&format!("offset {start}")), "byte {flip}: {msg}");
            }
            other => panic!("byte {flip} ^ {mask:#x}: expected a corruption error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn corruption_in_an_earlier_segment_is_an_error_even_in_its_last_frame() {
    let dir = tempfile::tempdir().unwrap();
    let s = SessionId::random();
    {
        let log = open(dir.path());
        log.create_session(s, new_session("p")).await.unwrap();
        let mut seq = 0;
        while segment_files(dir.path()).len() < 4 {
            let mut e = event(seq + 1);
            e.payload = json!({ "pad": "x".repeat(2000) }).into();
            seq = log.append(s, seq, vec![e]).await.unwrap().last_seq;
        }
    }
    // The scan's rule: the close's index checkpoint would skip segment 1 (its frames are not read
    // at open; see recover.rs, residual risks), so it goes.
    remove_checkpoints(dir.path());
    let (start, end) = *frames(&segment(dir.path(), 1)).last().unwrap();
    let path = segment(dir.path(), 1);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[end - 1] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    match SegmentEventLog::open(config(dir.path())) {
        Err(StoreError::Engine(msg)) => assert!(msg.contains("00000001.seg") && msg.contains(&format!("offset {start}")), "{msg}"),
        other => panic!("expected a corruption error, got {other:?}"),
    }
}

#[tokio::test]
async fn data_survives_reopen_with_many_sessions_answers_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let sessions: Vec<SessionId> = (0..200).map(|_| SessionId::random()).collect();
    let policy =
        RetentionPolicy { ended_after: std::time::Duration::ZERO, idle_after: std::time::Duration::from_secs(1 << 30), batch_size: 1000 };
    {
        let log = open(dir.path());
        let tasks = sessions.iter().enumerate().map(|(i, &s)| {
            let log = log.clone();
            tokio::spawn(async move {
                log.create_session(s, new_session(if i % 2 == 0 { "even" } else { "odd" })).await.unwrap();
                for k in 0..(i as u64 % 7 + 1) {
                    log.append_answered(s, k, vec![event(k + 1)], answer(&format!("c{k}"), k + 1)).await.unwrap();
                }
                let refusal = AnswerRefusal { code: "nope".into(), message: format!("session {i}") };
                log.remember_answer(s, CommandAnswer { command_id: "refused".into(), seq: 1, refusal: Some(refusal) }).await.unwrap();
                log.put_snapshot(
                    s,
                    Snapshot { seq: 1, schema_version: 3, time_ms: 9, state: json!({ "i": i }).into(), log_bytes: Some(i as u64) },
                )
                .await
                .unwrap();
                if i % 5 == 0 {
                    log.set_status(s, SessionStatus::Ended).await.unwrap();
                }
            })
        });
        for t in futures_util::future::join_all(tasks).await {
            t.unwrap();
        }
        // Ended sessions expire; their ids are gone after the reopen too.
        assert_eq!(log.expire(&policy, 1_000_000).await.unwrap().sessions_expired, 40);
        log.delete_snapshots(Some(sessions[1])).await.unwrap();
    }
    for round in 0..2 {
        let log = open(dir.path());
        let listed = log.list_sessions(&Default::default(), None, 1000).await.unwrap().sessions;
        assert_eq!(listed.len(), 160, "round {round}");
        for (i, &s) in sessions.iter().enumerate() {
            let meta = log.session_meta(s).await.unwrap();
            if i % 5 == 0 {
                assert!(meta.is_none(), "round {round}: session {i} was expired");
                assert_eq!(log.answer(s, "c0").await.unwrap(), None);
                continue;
            }
            let meta = meta.unwrap();
            let n = i as u64 % 7 + 1;
            assert_eq!((meta.latest_seq, meta.project.as_str()), (n, if i % 2 == 0 { "even" } else { "odd" }), "round {round}");
            assert_eq!(meta.last_activity_ms, event(n).time_ms);
            assert_eq!(log.read(s, 1, None).await.unwrap().len() as u64, n);
            assert_eq!(log.answer(s, &format!("c{}", n - 1)).await.unwrap(), Some(answer(&format!("c{}", n - 1), n)));
            assert_eq!(log.answer(s, "refused").await.unwrap().unwrap().refusal.unwrap().message, format!("session {i}"));
            let snap = log.get_snapshot(s, 3).await.unwrap();
            assert_eq!(snap.map(|s| s.state.to_value()), if i == 1 { None } else { Some(json!({ "i": i })) }, "round {round}: session {i}");
        }
    }
}

#[tokio::test]
async fn segments_roll_over_when_full_and_go_once_nothing_in_them_is_live() {
    let dir = tempfile::tempdir().unwrap();
    let (keep, drop_me) = (SessionId::from_bytes([1; 16]), SessionId::from_bytes([2; 16]));
    let padded = |n: u64, t: u64| {
        let mut e = event(n);
        e.time_ms = t;
        e.payload = json!({ "n": n, "pad": "y".repeat(3000) }).into();
        e
    };
    {
        let log = open(dir.path());
        log.create_session(keep, new_session("p")).await.unwrap();
        log.create_session(drop_me, new_session("p")).await.unwrap();
        log.append(keep, 0, vec![padded(1, 5_000_000)]).await.unwrap();
        // ~300 KiB of one session's events: several 64 KiB segments.
        for n in 1..=100 {
            log.append(drop_me, n - 1, vec![padded(n, 1_000)]).await.unwrap();
        }
        let files = segment_files(dir.path());
        assert!(files.len() >= 6, "{files:?}");
        assert!(log.disk_usage().await.unwrap() >= files.len() as u64 * SMALL_SEGMENT);
        assert_eq!(log.read(drop_me, 1, None).await.unwrap().len(), 100);
    }
    // Without compaction, which would move `keep`'s few bytes out of segment 1 and delete it too
    // (segments_compaction.rs tests that).
    let without_compaction = || Arc::new(SegmentEventLog::open(config(dir.path()).with_compaction(0, 0)).expect("open"));
    let log = without_compaction();
    assert_eq!(log.read(drop_me, 1, None).await.unwrap().len(), 100, "read back across segments after a reopen");
    let before = segment_files(dir.path());
    let policy =
        RetentionPolicy { ended_after: std::time::Duration::ZERO, idle_after: std::time::Duration::from_secs(3600), batch_size: 10 };
    let report = log.expire(&policy, 5_000_000).await.unwrap();
    assert_eq!((report.expired.clone(), report.events_deleted), (vec![drop_me], 100));
    // The deletion happens on the writer between batches; a flush waits for them.
    log.flush().await.unwrap();
    let after = segment_files(dir.path());
    assert!(after.len() + 3 <= before.len(), "segments only the expired session used are deleted: {before:?} -> {after:?}");
    assert!(after.contains(&"00000001.seg".to_string()), "the segment of a live session stays: {after:?}");
    drop(log);
    let log = without_compaction();
    assert!(log.session_meta(drop_me).await.unwrap().is_none(), "the tombstone outlives the deleted segments");
    assert_eq!(log.read(keep, 1, None).await.unwrap()[0].payload["n"], json!(1));
    log.append(keep, 1, vec![event(2)]).await.unwrap();
}

#[tokio::test]
async fn a_held_directory_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    match SegmentEventLog::open(config(dir.path())) {
        Err(StoreError::Locked { dir: d }) => assert_eq!(d, dir.path()),
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(log);
    SegmentEventLog::open(config(dir.path())).expect("the lock goes with the log");
}

#[tokio::test]
async fn buffered_appends_resolve_before_the_sync_and_flush_makes_them_durable() {
    let dir = tempfile::tempdir().unwrap();
    let s = SessionId::random();
    {
        let log = SegmentEventLog::open(config(dir.path()).with_durability(Durability::Buffered { interval_ms: 60_000 })).unwrap();
        log.create_session(s, new_session("p")).await.unwrap();
        let synced = log.stats().flushes;
        for n in 1..=20 {
            log.append(s, n - 1, vec![event(n)]).await.unwrap();
        }
        assert_eq!(log.stats().flushes, synced, "no sync per append");
        assert_eq!(log.read(s, 1, None).await.unwrap().len(), 20, "readable once written");
        log.flush().await.unwrap();
        assert_eq!(log.stats().flushes, synced + 1);
    }
    assert_eq!(open(dir.path()).read(s, 1, None).await.unwrap().len(), 20);
}

#[tokio::test]
async fn a_failed_segment_creation_fails_the_log_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    // The next segment number is taken by a directory: creating that file fails at the first roll.
    let mut next = segment_files(dir.path()).len() as u32 + 1;
    while dir.path().join(format!("{next:08}.seg")).exists() {
        next += 1;
    }
    std::fs::create_dir(segment(dir.path(), next)).unwrap();
    let mut seq = 0;
    let mut result = Ok(());
    for n in 1..=200 {
        let mut e = event(n);
        e.payload = json!({ "pad": "z".repeat(2000) }).into();
        match log.append(s, seq, vec![e]).await {
            Ok(o) => seq = o.last_seq,
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    assert!(result.is_err(), "the log fails once it needs the segment it could not create");
    let reason = tokio::time::timeout(std::time::Duration::from_secs(10), log.failed()).await.expect("the failure is announced");
    assert!(reason.contains(&format!("{next:08}.seg")), "{reason}");
    assert_eq!(log.failure().as_deref(), Some(reason.as_str()));
    assert!(log.append(s, seq, vec![event(seq + 1)]).await.is_err(), "a failed log stays failed");
    assert_eq!(log.read(s, 1, None).await.unwrap().len() as u64, seq, "what was acknowledged is still readable");
}

#[tokio::test]
async fn in_buffered_mode_followers_see_only_synced_events() {
    use futures_util::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let log = SegmentEventLog::open(config(dir.path()).with_durability(Durability::Buffered { interval_ms: 60_000 })).unwrap();
    let s = SessionId::random();
    log.create_session(s, new_session("p")).await.unwrap();
    let mut follow = log.follow(s, 1);
    log.append(s, 0, vec![event(1)]).await.unwrap();
    assert_eq!(log.read(s, 1, None).await.unwrap().len(), 1, "readers see it once written");
    let early = tokio::time::timeout(std::time::Duration::from_millis(300), follow.next()).await;
    assert!(early.is_err(), "a follower saw an unsynced event: {early:?}");
    log.flush().await.unwrap();
    let e = tokio::time::timeout(std::time::Duration::from_secs(20), follow.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(e.seq, 1);
}

/// The checkpoint the close wrote (the newest, when there are several).
fn newest_checkpoint(dir: &Path) -> PathBuf {
    let names = checkpoint_files(dir);
    dir.join(names.last().expect("the close writes an index checkpoint"))
}

#[tokio::test]
async fn a_torn_or_damaged_checkpoint_is_ignored_and_the_log_still_opens_whole() {
    let pristine = tempfile::tempdir().unwrap();
    let appends = 3;
    let s = write_frames(pristine.path(), appends).await;
    {
        // A second checkpoint, older than the close's: the fallback before a full scan.
        let log = open(pristine.path());
        log.append(s, appends * 2, vec![event(appends * 2 + 1)]).await.unwrap();
        log.checkpoint().await.unwrap();
        log.append(s, appends * 2 + 1, vec![event(appends * 2 + 2)]).await.unwrap();
    }
    assert_eq!(checkpoint_files(pristine.path()).len(), 2, "the newest two are kept");
    let ckpt_len = std::fs::metadata(newest_checkpoint(pristine.path())).unwrap().len() as usize;
    let damages: Vec<(String, Box<dyn Fn(&mut Vec<u8>)>)> = vec![
        ("empty".into(), Box::new(|b: &mut Vec<u8>| b.clear())),
        ("cut to 3 bytes".into(), Box::new(|b: &mut Vec<u8>| b.truncate(3))),
        ("cut by 1 byte".into(), Box::new(|b: &mut Vec<u8>| b.truncate(b.len() - 1))),
        ("format byte".into(), Box::new(|b: &mut Vec<u8>| b[0] = 9)),
        ("a byte in the middle".into(), Box::new(move |b: &mut Vec<u8>| b[ckpt_len / 2] ^= 0x20)),
        ("the CRC".into(), Box::new(|b: &mut Vec<u8>| *b.last_mut().unwrap() ^= 1)),
    ];
    for both in [false, true] {
        for (what, damage) in &damages {
            let dir = tempfile::tempdir().unwrap();
            copy_dir(pristine.path(), dir.path());
            for name in checkpoint_files(pristine.path()) {
                std::fs::copy(pristine.path().join(&name), dir.path().join(&name)).unwrap();
            }
            let mut damaged = checkpoint_files(dir.path());
            if !both {
                damaged.drain(..damaged.len() - 1);
            }
            for name in damaged {
                let path = dir.path().join(name);
                let mut bytes = std::fs::read(&path).unwrap();
                damage(&mut bytes);
                std::fs::write(&path, &bytes).unwrap();
            }
            let log = SegmentEventLog::open(config(dir.path())).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(log.read(s, 1, None).await.unwrap().len() as u64, appends * 2 + 2, "{what}, both damaged: {both}");
            for i in 0..appends {
                assert_eq!(log.answer(s, &format!("c{i}")).await.unwrap(), Some(answer(&format!("c{i}"), i * 2 + 2)), "{what}");
            }
        }
    }
}

#[tokio::test]
async fn a_crash_before_the_checkpoints_rename_leaves_the_log_whole() {
    let dir = tempfile::tempdir().unwrap();
    let appends = 3;
    let s = write_frames(dir.path(), appends).await;
    // What a crash between the .tmp's write and its rename leaves: a .tmp (here a partial copy of
    // a newer checkpoint's bytes) beside the older checkpoint.
    let newest = newest_checkpoint(dir.path());
    let bytes = std::fs::read(&newest).unwrap();
    let tmp = dir.path().join("index-00000001-0000099999.ckpt.tmp");
    std::fs::write(&tmp, &bytes[..bytes.len() / 2]).unwrap();
    {
        let log = open(dir.path());
        check_intact(&log, s, appends, "with a leftover .tmp").await;
        assert!(!tmp.exists(), "opening removes the unfinished checkpoint");
    }
    // And a crash before the .tmp was even complete, with no other checkpoint at all.
    remove_checkpoints(dir.path());
    std::fs::write(&tmp, &bytes[..7]).unwrap();
    let log = open(dir.path());
    check_intact(&log, s, appends, "with only a leftover .tmp").await;
}

#[tokio::test]
async fn a_checkpoint_newer_than_the_data_is_refused() {
    let pristine = tempfile::tempdir().unwrap();
    let appends = 4;
    let s = write_frames(pristine.path(), appends).await;
    let (start, end) = *frames(&segment(pristine.path(), 1)).last().unwrap();
    // The close's checkpoint covers the last frame. A torn write of it (none of it written, or a
    // block of it not) is cut at open; the checkpoint, which names that frame, must not be used.
    for damage in ["unwritten", "block"] {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), dir.path());
        let ckpt = newest_checkpoint(pristine.path());
        std::fs::copy(&ckpt, dir.path().join(ckpt.file_name().unwrap())).unwrap();
        let path = segment(dir.path(), 1);
        let mut bytes = std::fs::read(&path).unwrap();
        match damage {
            "unwritten" => bytes[start..end].fill(0),
            _ => bytes[((end - 1) / 512 * 512).max(start)..end].fill(0),
        }
        std::fs::write(&path, &bytes).unwrap();
        reopen_and_check(dir.path(), s, appends - 1, &format!("the checkpoint's last frame: {damage}")).await;
    }
    // A checkpoint that names a segment with no data (a later one that was lost) is refused too.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(pristine.path(), dir.path());
    let ckpt = newest_checkpoint(pristine.path());
    let mut bytes = std::fs::read(&ckpt).unwrap();
    let name = ckpt.file_name().unwrap().to_str().unwrap().replacen("index-00000001", "index-00000002", 1);
    bytes[5..9].copy_from_slice(&2u32.to_be_bytes());
    let body = bytes.len() - 4;
    let crc = crc32c_of(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_be_bytes());
    std::fs::write(dir.path().join(name), &bytes).unwrap();
    let log = open(dir.path());
    check_intact(&log, s, appends, "a checkpoint of a segment that holds no data").await;
}

/// CRC-32C (Castagnoli), bit by bit: enough for a test to re-seal a checkpoint it edited.
fn crc32c_of(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0x82f6_3b78 } else { crc >> 1 };
        }
    }
    !crc
}

#[tokio::test]
async fn the_writer_checkpoints_every_checkpoint_bytes_and_opening_scans_only_what_follows() {
    let dir = tempfile::tempdir().unwrap();
    let s = SessionId::random();
    let config = config(dir.path()).with_checkpoint_bytes(32 * 1024);
    {
        let log = SegmentEventLog::open(config.clone()).unwrap();
        log.create_session(s, new_session("p")).await.unwrap();
        for n in 1..=60 {
            let mut e = event(n);
            e.payload = json!({ "n": n, "pad": "c".repeat(2000) }).into();
            log.append(s, n - 1, vec![e]).await.unwrap();
        }
        // The writer checkpoints on its own thread: waited for, with a bound that only turns a
        // checkpoint that never comes into a failure (not a speed requirement).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while checkpoint_files(dir.path()).iter().all(|n| n.ends_with(".tmp")) {
            assert!(std::time::Instant::now() < deadline, "no checkpoint was written within 60 s");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    assert!(checkpoint_files(dir.path()).len() <= 2, "{:?}", checkpoint_files(dir.path()));
    let log = SegmentEventLog::open(config).unwrap();
    let events = log.read(s, 1, None).await.unwrap();
    assert_eq!(events.len(), 60);
    assert_eq!(events[59].payload["n"], json!(60));
}

/// `segment_bytes` is a setting, not a property of the directory: a log written with one size
/// opens with another (its segments keep their sizes; new ones take the new size) and back.
#[tokio::test]
async fn the_segment_size_can_change_between_opens() {
    let dir = tempfile::tempdir().unwrap();
    let s = SessionId::from_bytes([3; 16]);
    let padded = |n: u64| {
        let mut e = event(n);
        e.payload = json!({ "n": n, "pad": "z".repeat(3000) }).into();
        e
    };
    let sizes = [SMALL_SEGMENT, 4 * SMALL_SEGMENT, SMALL_SEGMENT];
    let mut written = 0;
    for (round, size) in sizes.into_iter().enumerate() {
        let log = SegmentEventLog::open(StoreConfig::at(dir.path()).with_segment_bytes(size)).expect("open");
        if round == 0 {
            log.create_session(s, new_session("p")).await.unwrap();
        }
        assert_eq!(log.read(s, 1, None).await.unwrap().len() as u64, written, "round {round}: what was written before");
        for _ in 0..60 {
            log.append(s, written, vec![padded(written + 1)]).await.unwrap();
            written += 1;
        }
        let events = log.read(s, 1, None).await.unwrap();
        assert_eq!(events.iter().map(|e| e.payload["n"].as_u64().unwrap()).collect::<Vec<_>>(), (1..=written).collect::<Vec<_>>());
    }
    let largest = segment_files(dir.path()).iter().map(|n| std::fs::metadata(dir.path().join(n)).unwrap().len()).max().unwrap();
    assert_eq!(largest, 4 * SMALL_SEGMENT, "the segments made while the size was larger keep it");
}
