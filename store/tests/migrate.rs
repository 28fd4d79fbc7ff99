//! The whole-directory migration from sled to the segment log (`vestibule_store::migrate`): a sled
//! directory written through the `EventLog` trait reads the same once migrated; an interrupted run
//! is finished or started over by running it again; and what is not a sled log is refused.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use vestibule_store::migrate::{MigrateError, MigrateOptions, MigrateReport, Step, migrate_to_segments, temporary_dir};
use vestibule_store::{
    AnswerRefusal, CommandAnswer, Envelope, EventLog, LocalBackend, NewEvent, NewSession, RetentionPolicy, SegmentEventLog, SessionFilter,
    SessionId, SessionMeta, SessionStatus, SledEventLog, Snapshot, StoreConfig,
};

const SEGMENT_BYTES: u64 = 64 * 1024;

fn config(dir: &Path) -> StoreConfig {
    StoreConfig::at(dir).with_lock_wait_ms(5000).with_segment_bytes(SEGMENT_BYTES)
}

fn options(dir: &Path) -> MigrateOptions {
    MigrateOptions { segment_bytes: SEGMENT_BYTES, lock_wait_ms: 5000, ..MigrateOptions::new(dir) }
}

fn event(n: u64, command: Option<&str>) -> NewEvent {
    NewEvent {
        time_ms: 1_700_000_000_000 + n,
        event_type: if n.is_multiple_of(3) { "wallet.connected".into() } else { "modal.opened".into() },
        schema_version: 1 + (n % 2) as u32,
        correlation_id: command.map(Into::into),
        checksum: command.map(|c| format!("sum-{c}")),
        // Key order and number forms that a re-encoding could change; copied as bytes, they cannot.
        payload: json!({"z": n, "a": {"email": "someone@example.com", "f": 1.5}, "list": [n, "x"]}).into(),
    }
}

/// What a session looks like through the trait: everything the gateway reads of it.
#[derive(Debug, PartialEq)]
struct Seen {
    meta: SessionMeta,
    events: Vec<Envelope>,
    answers: Vec<Option<CommandAnswer>>,
    snapshots: Vec<Option<Snapshot>>,
}

const COMMANDS: [&str; 5] = ["cmd-append", "cmd-refused", "cmd-noop", "cmd-late", "cmd-unknown"];

async fn seen(log: &dyn EventLog, session: SessionId) -> Seen {
    let mut answers = Vec::new();
    for command in COMMANDS {
        answers.push(log.answer(session, command).await.unwrap());
    }
    let mut snapshots = Vec::new();
    for version in [1, 2, 3] {
        snapshots.push(log.get_snapshot(session, version).await.unwrap());
    }
    Seen { meta: log.session_meta(session).await.unwrap().unwrap(), events: log.read(session, 1, None).await.unwrap(), answers, snapshots }
}

struct Populated {
    sessions: Vec<SessionId>,
    expired: SessionId,
}

/// Sessions of every shape: long (several copied appends, across segments) and empty, answered
/// through appends, refusals and no-ops, with snapshots of two state versions, ended, with and
/// without resume-token hashes; and one expired (not copied, as sled no longer serves it).
async fn populate(dir: &Path) -> Populated {
    let log = SledEventLog::open(config(dir)).unwrap();
    let mut sessions = Vec::new();
    for i in 0..6u64 {
        let id = SessionId::random();
        let hash = i.is_multiple_of(2).then(|| format!("{:064x}", i + 1));
        log.create_session(
            id,
            NewSession { project: format!("project-{}", i % 2), created_ms: 1_600_000_000_000 + i, resume_token_hash: hash },
        )
        .await
        .unwrap();
        let events = match i {
            0 => 1300, // more than one copied append
            5 => 0,    // created, never used
            _ => 7 + i,
        };
        if events > 0 {
            let mut seq = log
                .append_answered(
                    id,
                    0,
                    vec![event(1, Some("cmd-append")), event(2, None)],
                    CommandAnswer { command_id: "cmd-append".into(), seq: 2, refusal: None },
                )
                .await
                .unwrap()
                .last_seq;
            while seq < events {
                let batch: Vec<NewEvent> = (seq + 1..=(seq + 100).min(events)).map(|n| event(n, None)).collect();
                seq = log.append(id, seq, batch).await.unwrap().last_seq;
            }
            let refusal = AnswerRefusal { code: "not_connected".into(), message: "Not connected ✗".into() };
            log.remember_answer(id, CommandAnswer { command_id: "cmd-refused".into(), seq, refusal: Some(refusal) }).await.unwrap();
            log.remember_answer(id, CommandAnswer { command_id: "cmd-noop".into(), seq, refusal: None }).await.unwrap();
            let state = json!({"step": i, "wallet": {"address": "0xabc"}});
            log.put_snapshot(id, Snapshot { seq: seq / 2, schema_version: 1, time_ms: 5, state: state.clone().into(), log_bytes: None })
                .await
                .unwrap();
            log.put_snapshot(id, Snapshot { seq, schema_version: 2, time_ms: 6, state: state.into(), log_bytes: Some(seq * 100) })
                .await
                .unwrap();
            let late = vec![event(seq + 1, Some("cmd-late"))];
            log.append_answered(id, seq, late, CommandAnswer { command_id: "cmd-late".into(), seq: seq + 1, refusal: None }).await.unwrap();
        }
        if i % 3 == 1 {
            log.set_status(id, SessionStatus::Ended).await.unwrap();
        }
        sessions.push(id);
    }
    let expired = SessionId::random();
    log.create_session(expired, NewSession { project: "gone".into(), created_ms: 1, resume_token_hash: None }).await.unwrap();
    log.append(expired, 0, vec![NewEvent { time_ms: 10, ..event(1, None) }]).await.unwrap();
    log.set_status(expired, SessionStatus::Ended).await.unwrap();
    let policy = RetentionPolicy { ended_after: Duration::from_millis(1), idle_after: Duration::from_secs(1 << 40), batch_size: 10 };
    // At time 1000 only the session last active at 10 is due; the others' activity is in 2020-23.
    let report = log.expire(&policy, 1000).await.unwrap();
    assert_eq!(report.expired, vec![expired]);
    log.flush().await.unwrap();
    Populated { sessions, expired }
}

async fn everything_seen(log: &dyn EventLog, sessions: &[SessionId]) -> (Vec<Seen>, Vec<SessionMeta>, Vec<SessionMeta>) {
    let mut all = Vec::new();
    for &id in sessions {
        all.push(seen(log, id).await);
    }
    let listed = log.list_sessions(&SessionFilter::default(), None, 1000).await.unwrap().sessions;
    let filtered = SessionFilter { project: Some("project-1".into()), status: Some(SessionStatus::Ended), active_since_ms: None };
    let ended = log.list_sessions(&filtered, None, 1000).await.unwrap().sessions;
    (all, listed, ended)
}

fn write_key(dir: &Path) -> PathBuf {
    let keys = dir.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let key = keys.join("siwx-ed25519.key");
    std::fs::write(&key, "ab".repeat(32)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    key
}

async fn migrate(dir: &Path) -> Result<MigrateReport, MigrateError> {
    migrate_to_segments(&options(dir), |_| {}).await
}

#[tokio::test]
async fn a_migrated_directory_reads_the_same_as_the_sled_one() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let populated = populate(&dir).await;
    write_key(&dir);
    let before = {
        let sled = SledEventLog::open(config(&dir)).unwrap();
        everything_seen(&sled, &populated.sessions).await
    };
    assert!(before.0.iter().any(|s| s.meta.status == SessionStatus::Ended) && before.0.iter().any(|s| s.meta.resume_token_hash.is_some()));
    assert!(before.0[0].answers.iter().filter(|a| a.is_some()).count() == 4, "the fixture answers four commands");

    let mut steps = Vec::new();
    let report = migrate_to_segments(&options(&dir), |p| steps.push(p)).await.unwrap();
    let total = populated.sessions.len() as u64;
    assert_eq!((report.sessions, report.snapshots, report.snapshots_unreadable), (total, 2 * (total - 1), 0));
    assert_eq!(report.answers, 4 * (total - 1), "every answer: with events, refused and no-op");
    assert_eq!(report.events, before.0.iter().map(|s| s.meta.latest_seq).sum::<u64>());
    assert_eq!(report.carried, vec!["keys".to_string()]);
    assert!(steps.contains(&vestibule_store::migrate::Progress { step: Step::Verifying, done: total, total }), "{steps:?}");
    assert_eq!(report.removed_leftover, None);

    assert_eq!(LocalBackend::detect(&dir).unwrap(), Some(LocalBackend::Segments));
    assert!(!temporary_dir(&dir).exists());
    let migrated = SegmentEventLog::open(config(&dir)).unwrap();
    let after = everything_seen(&migrated, &populated.sessions).await;
    assert_eq!(after, before);
    assert!(migrated.session_meta(populated.expired).await.unwrap().is_none(), "an expired session stays expired");
    // The migrated log goes on: the same command is answered the same, new ones append after.
    let first = populated.sessions[0];
    let latest = migrated.latest_seq(first).await.unwrap();
    migrated.append(first, latest, vec![event(latest + 1, None)]).await.unwrap();
    drop(migrated);

    let key = dir.join("keys/siwx-ed25519.key");
    assert_eq!(std::fs::read_to_string(&key).unwrap(), "ab".repeat(32));
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600, "the key stays private");

    // The old log is kept, untouched and readable by sled.
    assert!(report.kept_at.file_name().unwrap().to_string_lossy().starts_with("data.sled-"), "{:?}", report.kept_at);
    let kept = SledEventLog::open(config(&report.kept_at)).unwrap();
    assert_eq!(everything_seen(&kept, &populated.sessions).await, before);
}

#[tokio::test]
async fn a_run_interrupted_before_the_switch_is_started_over() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let populated = populate(&dir).await;
    // A crash mid-copy: a half-written segment log in the temporary directory, with a session
    // that is not in the sled log.
    let tmp = temporary_dir(&dir);
    let stray = SessionId::random();
    {
        let half = SegmentEventLog::open(config(&tmp)).unwrap();
        half.create_session(stray, NewSession { project: "half".into(), created_ms: 1, resume_token_hash: None }).await.unwrap();
    }
    std::fs::write(tmp.join("00000009.seg"), b"torn").unwrap();

    let report = migrate(&dir).await.unwrap();
    assert_eq!(report.removed_leftover.as_deref(), Some(tmp.as_path()));
    let migrated = SegmentEventLog::open(config(&dir)).unwrap();
    assert!(migrated.session_meta(stray).await.unwrap().is_none());
    assert_eq!(migrated.list_sessions(&SessionFilter::default(), None, 100).await.unwrap().sessions.len(), populated.sessions.len());
}

#[tokio::test]
async fn a_run_interrupted_after_the_exchange_is_finished_by_rerunning() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    populate(&dir).await;
    let report = migrate(&dir).await.unwrap();
    // As if the process died between the exchange and the rename: the old log is in the temporary
    // directory's place.
    let tmp = temporary_dir(&dir);
    std::fs::rename(&report.kept_at, &tmp).unwrap();

    let refused = migrate(&dir).await.unwrap_err();
    assert!(matches!(refused, MigrateError::AlreadySegments { .. }), "{refused:?}");
    let message = refused.to_string();
    assert!(message.contains("interrupted migration") && message.contains(".sled-"), "{message}");
    assert!(!tmp.exists(), "a temporary directory holding the sled log is moved aside, never deleted");
    let kept: Vec<PathBuf> = std::fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().path()).filter(|p| p != &dir).collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(LocalBackend::detect(&kept[0]).unwrap(), Some(LocalBackend::Sled));
}

#[tokio::test]
async fn what_is_not_a_sled_log_nobody_holds_is_refused() {
    let root = tempfile::tempdir().unwrap();

    let missing = root.path().join("missing");
    assert!(matches!(migrate(&missing).await, Err(MigrateError::Missing(_))));

    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    write_key(&empty);
    assert!(matches!(migrate(&empty).await, Err(MigrateError::NoLog(_))), "a directory with no log in it");

    let segments = root.path().join("segments");
    drop(SegmentEventLog::open(config(&segments)).unwrap());
    let refused = migrate(&segments).await.unwrap_err();
    assert!(matches!(refused, MigrateError::AlreadySegments { .. }) && refused.to_string().contains("already holds a segment log"));

    let mixed = root.path().join("mixed");
    drop(SegmentEventLog::open(config(&mixed)).unwrap());
    std::fs::write(mixed.join("conf"), b"").unwrap();
    let refused = migrate(&mixed).await.unwrap_err();
    assert!(refused.to_string().contains("both the sled and the segments backend"), "{refused}");

    let held = root.path().join("held");
    populate(&held).await;
    {
        let _gateway = SledEventLog::open(config(&held)).unwrap();
        let refused = migrate_to_segments(&MigrateOptions { lock_wait_ms: 0, ..options(&held) }, |_| {}).await.unwrap_err();
        assert!(matches!(refused, MigrateError::Locked(_)) && refused.to_string().contains("Stop it"), "{refused}");
    }

    let huge = MigrateOptions { segment_bytes: u64::MAX / 4, ..options(&held) };
    let refused = migrate_to_segments(&huge, |_| {}).await.unwrap_err();
    assert!(matches!(refused, MigrateError::NoSpace { .. }) && refused.to_string().contains("free"), "{refused}");

    // A temporary directory holding a sled log is never deleted.
    let foreign = temporary_dir(&held);
    drop(SledEventLog::open(config(&foreign)).unwrap());
    let refused = migrate(&held).await.unwrap_err();
    assert!(matches!(refused, MigrateError::ForeignTemporary(_)), "{refused:?}");

    // Every refusal left the directories as they were.
    assert_eq!(LocalBackend::detect(&held).unwrap(), Some(LocalBackend::Sled));
    assert_eq!(LocalBackend::detect(&foreign).unwrap(), Some(LocalBackend::Sled));
    assert_eq!(LocalBackend::detect(&segments).unwrap(), Some(LocalBackend::Segments));
}

/// Given a `DIR.migrating` that holds files a migration never writes there (the outside review put
/// an operator's notes in one), when the migration runs, then it refuses, naming the file, and
/// deletes nothing; a leftover of a run (a segment log and copies of `DIR`'s entries) still goes.
#[tokio::test]
async fn a_temporary_directory_holding_what_a_migration_does_not_write_is_refused_untouched() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    populate(&dir).await;
    write_key(&dir);
    let tmp = temporary_dir(&dir);
    drop(SegmentEventLog::open(config(&tmp)).unwrap());
    std::fs::create_dir(tmp.join("keys")).unwrap();
    std::fs::write(tmp.join("notes.txt"), b"mine").unwrap();

    let refused = migrate(&dir).await.unwrap_err();
    assert!(matches!(&refused, MigrateError::ForeignLeftover { entry, .. } if entry == "notes.txt"), "{refused:?}");
    assert!(refused.to_string().contains("move it away by hand"), "{refused}");
    assert_eq!(std::fs::read(tmp.join("notes.txt")).unwrap(), b"mine", "nothing was deleted");
    assert_eq!(LocalBackend::detect(&dir).unwrap(), Some(LocalBackend::Sled));

    std::fs::remove_file(tmp.join("notes.txt")).unwrap();
    let report = migrate(&dir).await.unwrap();
    assert_eq!(report.removed_leftover.as_deref(), Some(tmp.as_path()), "a run's own leftover is deleted");
}
