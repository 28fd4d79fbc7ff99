//! The whole-directory migration from the sled backend to the segment log (decision 0105,
//! condition 5): `vestibule store migrate --data DIR --to segments`.
//!
//! Offline, and never destructive. In order:
//! 1. `DIR` must hold a sled log, and no one may hold it: the sled log is opened (which takes its
//!    lock) and stays open until the switch is done, so no gateway can write to it meanwhile.
//! 2. A temporary directory left by an interrupted run, `DIR.migrating`, is deleted if it holds
//!    only what a run writes there (a segment log, copies of `DIR`'s other entries); one holding
//!    anything else is not a leftover and is refused, untouched. Then the free disk is checked against an estimate of the copy's size.
//! 3. Every live session is copied into a segment log in `DIR.migrating`: its metadata record,
//!    its event records, its answers and its snapshots, byte for byte as sled stores them
//!    ([`CopiedRecord`]). Sessions that are expired but not yet purged are not copied (sled no
//!    longer serves them either).
//! 4. The new log is synced, closed, and opened again (a full recovery scan of what is on disk),
//!    and every session is compared through the [`EventLog`] trait with the sled one: metadata,
//!    every event, every answer, every snapshot, and the session list.
//! 5. Whatever else `DIR` holds (the sign-in token key in `keys/`, the embedded vault) is copied
//!    into the new directory, which is synced.
//! 6. The switch: `DIR` and `DIR.migrating` are exchanged in one `renameat2(RENAME_EXCHANGE)`, so
//!    at every instant `DIR` holds a complete log, the old or the new. The old one is then renamed
//!    `DIR.sled-<unix seconds>` and kept until the operator deletes it; the parent is synced.
//!
//! A crash before the exchange leaves `DIR` untouched; a rerun deletes `DIR.migrating` and starts
//! over. A crash between the exchange and the rename leaves the new log in `DIR` and the old one in
//! `DIR.migrating`: a rerun finds `DIR` already migrated and moves the old log aside as step 6 does
//! (it never deletes a `DIR.migrating` that holds a sled log).
//!
//! How answers land: sled keeps every answer as a record of its own. An answer that came with an
//! append is, in the segment log, written in the same record as its events (atomic with them), but
//! the two places have the same meaning to readers (`answer` finds either). The migration writes
//! every answer as a record of its own, after the session's events: atomicity with the events
//! matters for a crash between them, and the whole copy is switched in atomically or not at all.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use crate::layout;
use crate::{
    Durability, EventLog, LocalBackend, NoUpcasting, SegmentEventLog, SessionFilter, SessionId, SledEventLog, StoreConfig, StoreError,
};

/// One record copied from sled into the segment log, as sled stores it (see
/// `SegmentEventLog::write_copied`).
pub(crate) enum CopiedRecord {
    /// The metadata record (status, created time, project, resume-token hash).
    Meta(Vec<u8>),
    /// Event records with seqs `expected_seq + 1 ..`.
    Events {
        expected_seq: u64,
        records: Vec<Vec<u8>>,
    },
    Answer {
        command_id: String,
        record: Vec<u8>,
    },
    Snapshot {
        seq: u64,
        schema_version: u32,
        record: Vec<u8>,
    },
}

/// Events per copied append, and their bytes: one extent each in the segment log's index (so not
/// one per event), small enough that reading one event does not read megabytes, and a quarter of
/// a segment at most (a record must fit one).
const CHUNK_EVENTS: usize = 512;
const CHUNK_BYTES: u64 = 256 * 1024;
/// Sessions copied (and verified) at a time: their writes share the writer's group commits.
const IN_FLIGHT: usize = 32;
/// Events compared per read in verification.
const VERIFY_CHUNK: u64 = 1024;
/// Bytes the segment log adds per record (record header, session id, lengths), for the estimate.
const RECORD_OVERHEAD: u64 = 32;

/// The step a progress report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Copying,
    Verifying,
}

/// `done` of `total` sessions through `step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub step: Step,
    pub done: u64,
    pub total: u64,
}

/// Where the migration works, and what it writes.
#[derive(Debug, Clone)]
pub struct MigrateOptions {
    /// The data directory (the gateway's `--data`): a sled log, and whatever else lives beside it.
    pub dir: PathBuf,
    /// Segment size of the new log (the gateway's default unless a test wants small ones).
    pub segment_bytes: u64,
    /// How long to wait for another holder of the sled log to let go before refusing: 0 (at once)
    /// for the command; tests that just closed the log in-process wait (sled lets go of its lock
    /// shortly after the last handle is dropped).
    pub lock_wait_ms: u64,
}

impl MigrateOptions {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into(), segment_bytes: StoreConfig::default().segment_bytes, lock_wait_ms: 0 }
    }
}

/// What a migration did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrateReport {
    /// The data directory, which now holds the segment log.
    pub dir: PathBuf,
    /// Where the old sled log (and a copy of everything else that was in `dir`) is kept.
    pub kept_at: PathBuf,
    /// A temporary directory of an interrupted run that was deleted first.
    pub removed_leftover: Option<PathBuf>,
    pub sessions: u64,
    pub events: u64,
    pub answers: u64,
    pub snapshots: u64,
    /// Snapshots not copied because sled could not read them either (a snapshot is a cache).
    pub snapshots_unreadable: u64,
    /// Bytes of the records copied.
    pub record_bytes: u64,
    /// Entries of `dir` that are not the log's, copied beside the new one (e.g. `keys`).
    pub carried: Vec<String>,
    /// sled's size on disk, and the segment log's (its segments are preallocated).
    pub sled_disk_bytes: u64,
    pub segments_disk_bytes: u64,
    /// The free-disk check: the estimate, and what was free.
    pub needed_bytes: u64,
    pub free_bytes: u64,
    pub copy_time: Duration,
    pub verify_time: Duration,
    pub total_time: Duration,
}

/// Why a migration did not happen. In every case the data directory is as it was.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("{} does not exist (is it the gateway's --data directory?)", .0.display())]
    Missing(PathBuf),
    #[error("{} holds no event log (neither sled's files nor segments): nothing to migrate", .0.display())]
    NoLog(PathBuf),
    #[error("{} already holds a segment log: nothing to migrate{note}", dir.display())]
    AlreadySegments { dir: PathBuf, note: String },
    #[error(
        "the data directory {} is in use: a gateway (or another tool) holds its sled log. Stop it, then run the migration again",
        .0.display()
    )]
    Locked(PathBuf),
    #[error(
        "not enough free disk beside {}: the copy needs about {needed} bytes, {free} are free (the old log is kept until you delete it)",
        dir.display()
    )]
    NoSpace { dir: PathBuf, needed: u64, free: u64 },
    #[error("{} holds a sled log, not a temporary copy: move it away by hand, then run the migration again", .0.display())]
    ForeignTemporary(PathBuf),
    #[error(
        "{} holds {entry}, which a migration does not write there: it is not a leftover of one; move it away by hand, then \
         run the migration again",
        tmp.display()
    )]
    ForeignLeftover { tmp: PathBuf, entry: String },
    #[error("the copy differs from the sled log ({reason}); the sled log is untouched, the copy is left in {} to inspect", tmp.display())]
    Differs { reason: String, tmp: PathBuf },
    #[error(
        "cannot exchange {} and {} atomically ({source}); the sled log is untouched in the first, the verified segment log is \
         complete in the second: stop every gateway and swap them by hand",
        dir.display(),
        tmp.display()
    )]
    NoExchange { dir: PathBuf, tmp: PathBuf, source: std::io::Error },
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn io_error(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> MigrateError {
    let path = path.to_path_buf();
    move |source| MigrateError::Io { what, path, source }
}

/// `DIR.migrating`: where the new log is built, beside `dir` (on the same filesystem, so that the
/// switch is a rename).
pub fn temporary_dir(dir: &Path) -> PathBuf {
    sibling(dir, "migrating")
}

fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "data".into());
    dir.with_file_name(format!("{name}.{suffix}"))
}

/// `DIR.sled-<unix seconds>`, or with `-2`, `-3`… if that exists.
fn aside_dir(dir: &Path) -> PathBuf {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut candidate = sibling(dir, &format!("sled-{secs}"));
    let mut n = 1;
    while candidate.symlink_metadata().is_ok() {
        n += 1;
        candidate = sibling(dir, &format!("sled-{secs}-{n}"));
    }
    candidate
}

/// Migrates the sled log in `options.dir` to the segment log, as the module documentation says.
/// `progress` hears of every session copied and verified.
pub async fn migrate_to_segments(options: &MigrateOptions, mut progress: impl FnMut(Progress)) -> Result<MigrateReport, MigrateError> {
    let started = Instant::now();
    // Absolute and without symlinks, so that `DIR.migrating` and the switch are beside the real
    // directory, also for `--data .` or a link to it.
    let dir = match std::fs::canonicalize(&options.dir) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(MigrateError::Missing(options.dir.clone())),
        Err(e) => return Err(io_error("cannot resolve", &options.dir)(e)),
    };
    let dir = dir.as_path();
    let tmp = temporary_dir(dir);
    check_source(dir, &tmp)?;

    // Held until the switch is done: while it is, no gateway can open the sled log and write to it.
    let sled = match SledEventLog::open_with_upcaster(StoreConfig::at(dir).with_lock_wait_ms(options.lock_wait_ms), Arc::new(NoUpcasting)) {
        Ok(log) => log,
        Err(StoreError::Locked { .. }) => return Err(MigrateError::Locked(dir.to_path_buf())),
        Err(e) => return Err(e.into()),
    };
    let mut report = MigrateReport { dir: dir.to_path_buf(), ..MigrateReport::default() };
    let carried = carried_entries(dir)?;
    report.removed_leftover = remove_leftover(&tmp, &carried)?;

    let survey = survey(sled.raw_tree(), dir)?;
    let carried_bytes: u64 = carried.iter().map(|p| tree_size(p)).sum();
    report.needed_bytes = survey.bytes + survey.records * RECORD_OVERHEAD + 2 * options.segment_bytes + carried_bytes;
    report.free_bytes = free_bytes(dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))?;
    if report.free_bytes < report.needed_bytes {
        return Err(MigrateError::NoSpace { dir: dir.to_path_buf(), needed: report.needed_bytes, free: report.free_bytes });
    }
    report.sled_disk_bytes = sled.disk_usage().await?;

    let target_config = StoreConfig::at(&tmp)
        .with_segment_bytes(options.segment_bytes)
        // Nothing is acknowledged to anyone while copying: one sync at the end covers it all.
        .with_durability(Durability::Buffered { interval_ms: 1000 });
    let sessions = live_sessions(sled.raw_tree(), dir)?;
    let total = sessions.len() as u64;
    let chunk_bytes = CHUNK_BYTES.min(options.segment_bytes / 4) as usize;
    {
        let copy_started = Instant::now();
        let target = SegmentEventLog::open(target_config.clone())?;
        let mut copies = futures_util::stream::iter(sessions.iter().copied())
            .map(|session| copy_session(sled.raw_tree(), dir, &target, session, chunk_bytes))
            .buffer_unordered(IN_FLIGHT);
        let mut done = 0;
        progress(Progress { step: Step::Copying, done, total });
        while let Some(counts) = copies.next().await {
            let counts = counts?;
            report.sessions += 1;
            report.events += counts.events;
            report.answers += counts.answers;
            report.snapshots += counts.snapshots;
            report.snapshots_unreadable += counts.snapshots_unreadable;
            report.record_bytes += counts.bytes;
            done += 1;
            progress(Progress { step: Step::Copying, done, total });
        }
        drop(copies);
        target.flush().await?;
        report.copy_time = copy_started.elapsed();
    } // closing the log syncs it and lets go of its lock

    {
        let verify_started = Instant::now();
        // Opened again: what is compared is what recovery reads back from disk, not the writer's memory.
        let target = SegmentEventLog::open(target_config)?;
        let differs = |reason: String| MigrateError::Differs { reason, tmp: tmp.clone() };
        let mut checks = futures_util::stream::iter(sessions.iter().copied())
            .map(|session| verify_session(&sled, &target, session))
            .buffer_unordered(IN_FLIGHT);
        let mut done = 0;
        progress(Progress { step: Step::Verifying, done, total });
        while let Some(checked) = checks.next().await {
            checked?.map_err(differs)?;
            done += 1;
            progress(Progress { step: Step::Verifying, done, total });
        }
        drop(checks);
        same_session_lists(&sled, &target).await?.map_err(differs)?;
        report.segments_disk_bytes = target.disk_usage().await?;
        report.verify_time = verify_started.elapsed();
    }

    for entry in &carried {
        let name = entry.file_name().unwrap_or_default();
        copy_tree(entry, &tmp.join(name))?;
        report.carried.push(name.to_string_lossy().into_owned());
    }
    sync_dir(&tmp)?;

    report.kept_at = switch(dir, &tmp)?;
    drop(sled); // its files are in `kept_at` now
    report.total_time = started.elapsed();
    Ok(report)
}

/// Refuses what is not a sled log; finishes the switch of a run interrupted after its exchange.
fn check_source(dir: &Path, tmp: &Path) -> Result<(), MigrateError> {
    match LocalBackend::detect(dir)? {
        Some(LocalBackend::Sled) => Ok(()),
        Some(LocalBackend::Segments) => {
            let note = match LocalBackend::detect(tmp) {
                // Interrupted between the exchange and the rename: the old log is the temporary one.
                Ok(Some(LocalBackend::Sled)) => {
                    let aside = aside_dir(dir);
                    std::fs::rename(tmp, &aside).map_err(io_error("cannot move aside", tmp))?;
                    sync_dir(parent_of(dir))?;
                    format!(
                        " (an interrupted migration had switched it already; its old sled log, left in {}, is now kept in {})",
                        tmp.display(),
                        aside.display()
                    )
                }
                _ => String::new(),
            };
            Err(MigrateError::AlreadySegments { dir: dir.to_path_buf(), note })
        }
        None if dir.exists() => Err(MigrateError::NoLog(dir.to_path_buf())),
        None => Err(MigrateError::Missing(dir.to_path_buf())),
    }
}

/// Deletes the temporary directory of an interrupted run, if it holds only what a run writes there:
/// the segment log's files (`NNNNNNNN.seg`, `index-….ckpt` and their `.tmp`, `LOCK`) and copies of
/// the entries `carried` from the data directory. Anything else (a sled log, an operator's files, a
/// symlink to elsewhere) is not ours: refused, and nothing deleted (any `DIR.migrating` was deleted
/// whole, whatever it held).
fn remove_leftover(tmp: &Path, carried: &[PathBuf]) -> Result<Option<PathBuf>, MigrateError> {
    let Ok(meta) = tmp.symlink_metadata() else {
        return Ok(None);
    };
    if let Ok(Some(LocalBackend::Sled)) = LocalBackend::detect(tmp) {
        return Err(MigrateError::ForeignTemporary(tmp.to_path_buf()));
    }
    let foreign = |entry: String| MigrateError::ForeignLeftover { tmp: tmp.to_path_buf(), entry };
    if !meta.is_dir() {
        return Err(foreign("itself: it is not a directory".into()));
    }
    let carried: Vec<_> = carried.iter().filter_map(|p| p.file_name()).collect();
    for entry in std::fs::read_dir(tmp).map_err(io_error("cannot read", tmp))? {
        let entry = entry.map_err(io_error("cannot read", tmp))?;
        let name = entry.file_name();
        let text = name.to_string_lossy();
        let segment = text.strip_suffix(".seg").is_some_and(|n| n.len() == 8 && n.bytes().all(|b| b.is_ascii_digit()));
        let checkpoint = text.starts_with("index-") && (text.ends_with(".ckpt") || text.ends_with(".ckpt.tmp"));
        if !(segment || checkpoint || text == "LOCK" || carried.contains(&name.as_os_str())) {
            return Err(foreign(text.into_owned()));
        }
    }
    std::fs::remove_dir_all(tmp).map_err(io_error("cannot delete the leftover", tmp))?;
    Ok(Some(tmp.to_path_buf()))
}

fn sled_error(dir: &Path) -> impl Fn(sled::Error) -> StoreError {
    let dir = dir.to_path_buf();
    move |e| StoreError::Engine(format!("{e} (data directory {})", dir.display()))
}

/// The size of what will be copied, for the free-disk estimate.
struct Survey {
    records: u64,
    bytes: u64,
}

fn survey(tree: &sled::Tree, dir: &Path) -> Result<Survey, StoreError> {
    let mut survey = Survey { records: 0, bytes: 0 };
    for item in tree.iter() {
        let (k, v) = item.map_err(sled_error(dir))?;
        if matches!(k.first(), Some(&(layout::ANSWER_KIND | layout::EVENT_KIND | layout::META_KIND | layout::SNAPSHOT_KIND))) {
            survey.records += 1;
            survey.bytes += (k.len() + v.len()) as u64;
        }
    }
    Ok(survey)
}

/// Sessions with metadata, in id order. An expired session's metadata goes first (its events are
/// purged after), so this is exactly the sessions sled serves.
fn live_sessions(tree: &sled::Tree, dir: &Path) -> Result<Vec<SessionId>, StoreError> {
    let mut sessions = Vec::new();
    for key in tree.scan_prefix([layout::META_KIND]).keys() {
        let key = key.map_err(sled_error(dir))?;
        if let Some(session) = layout::parse_meta_key(&key) {
            sessions.push(session);
        }
    }
    Ok(sessions)
}

#[derive(Default)]
struct Counts {
    events: u64,
    answers: u64,
    snapshots: u64,
    snapshots_unreadable: u64,
    bytes: u64,
}

async fn copy_session(
    tree: &sled::Tree,
    dir: &Path,
    target: &SegmentEventLog,
    session: SessionId,
    max_chunk_bytes: usize,
) -> Result<Counts, StoreError> {
    let err = sled_error(dir);
    let mut counts = Counts::default();
    let meta = tree.get(layout::meta_key(&session)).map_err(&err)?.ok_or(StoreError::UnknownSession(session))?;
    counts.bytes += meta.len() as u64;
    target.write_copied(session, CopiedRecord::Meta(meta.to_vec())).await?;

    let mut latest = 0u64;
    let mut chunk: Vec<Vec<u8>> = Vec::new();
    let mut chunk_bytes = 0usize;
    let mut events = tree.scan_prefix(layout::event_prefix(&session));
    loop {
        let next = events.next().transpose().map_err(&err)?;
        if let Some((key, record)) = &next {
            let expected = latest + chunk.len() as u64 + 1;
            match layout::parse_event_key(key) {
                Some((s, seq)) if s == session && seq == expected => {}
                found => {
                    let reason = match found {
                        Some((_, seq)) => format!("missing from the log (the next stored seq is {seq})"),
                        None => "malformed key".into(),
                    };
                    return Err(StoreError::Corrupt { session, seq: expected, reason });
                }
            }
            chunk_bytes += record.len();
            chunk.push(record.to_vec());
        }
        let full = chunk.len() >= CHUNK_EVENTS || chunk_bytes >= max_chunk_bytes;
        if !chunk.is_empty() && (full || next.is_none()) {
            let records = std::mem::take(&mut chunk);
            let n = records.len() as u64;
            counts.bytes += chunk_bytes as u64;
            chunk_bytes = 0;
            target.write_copied(session, CopiedRecord::Events { expected_seq: latest, records }).await?;
            latest += n;
            counts.events += n;
        }
        if next.is_none() {
            break;
        }
    }

    for item in tree.scan_prefix(layout::answer_prefix(&session)) {
        let (key, record) = item.map_err(&err)?;
        let Some((_, command_id)) = layout::parse_answer_key(&key) else {
            return Err(StoreError::Corrupt { session, seq: 0, reason: "an answer key that is not UTF-8".into() });
        };
        counts.bytes += record.len() as u64;
        counts.answers += 1;
        target.write_copied(session, CopiedRecord::Answer { command_id, record: record.to_vec() }).await?;
    }

    for item in tree.scan_prefix(layout::snapshot_prefix(&session)) {
        let (_, record) = item.map_err(&err)?;
        match layout::decode_snapshot(&record) {
            // sled ignores a snapshot it cannot read, or one past the end of the stream: so does
            // the copy (a snapshot is a cache, rebuilt from the events).
            Ok(snapshot) if snapshot.seq <= latest => {
                counts.bytes += record.len() as u64;
                counts.snapshots += 1;
                let copied = CopiedRecord::Snapshot { seq: snapshot.seq, schema_version: snapshot.schema_version, record: record.to_vec() };
                target.write_copied(session, copied).await?;
            }
            _ => counts.snapshots_unreadable += 1,
        }
    }
    Ok(counts)
}

/// `Ok(Err(why))` when the copy of `session` differs from the original.
async fn verify_session(sled: &SledEventLog, target: &SegmentEventLog, session: SessionId) -> Result<Result<(), String>, StoreError> {
    let (before, after) = (sled.session_meta(session).await?, target.session_meta(session).await?);
    let Some(meta) = before else { return Ok(Err(format!("session {session} vanished from the sled log"))) };
    if Some(&meta) != after.as_ref() {
        // Not the metadata itself: it holds the resume-token hash, which is never printed.
        return Ok(Err(format!("session {session}: its metadata differs")));
    }
    let mut from = 1;
    while from <= meta.latest_seq {
        let to = (from + VERIFY_CHUNK - 1).min(meta.latest_seq);
        if sled.read(session, from, Some(to)).await? != target.read(session, from, Some(to)).await? {
            return Ok(Err(format!("session {session}: events {from}..={to} differ")));
        }
        from = to + 1;
    }
    for key in sled.raw_tree().scan_prefix(layout::answer_prefix(&session)).keys() {
        let key = key.map_err(sled_error(sled.path()))?;
        let Some((_, command_id)) = layout::parse_answer_key(&key) else { continue };
        let original = sled.answer(session, &command_id).await?;
        if original.is_none() || original != target.answer(session, &command_id).await? {
            return Ok(Err(format!("session {session}: the answer to command {command_id:?} differs")));
        }
    }
    for key in sled.raw_tree().scan_prefix(layout::snapshot_prefix(&session)).keys() {
        let key = key.map_err(sled_error(sled.path()))?;
        let Some(version) = key.get(1 + SessionId::LEN..).and_then(|v| <[u8; 4]>::try_from(v).ok()).map(u32::from_be_bytes) else {
            continue;
        };
        if sled.get_snapshot(session, version).await? != target.get_snapshot(session, version).await? {
            return Ok(Err(format!("session {session}: the snapshot of schema version {version} differs")));
        }
    }
    Ok(Ok(()))
}

/// Every page of `list_sessions`, unfiltered, is the same in both: no session missing, none extra.
async fn same_session_lists(sled: &SledEventLog, target: &SegmentEventLog) -> Result<Result<(), String>, StoreError> {
    let filter = SessionFilter::default();
    let mut after = None;
    loop {
        let (a, b) = (sled.list_sessions(&filter, after, 1000).await?, target.list_sessions(&filter, after, 1000).await?);
        if a.sessions != b.sessions {
            return Ok(Err(format!("the session lists differ after {after:?}")));
        }
        match (a.next, b.next) {
            (None, None) => return Ok(Ok(())),
            (Some(x), Some(y)) if x == y => after = Some(x),
            _ => return Ok(Err("the session lists end differently".into())),
        }
    }
}

/// Entries of `dir` that are not sled's own files (`conf`, `db`, `blobs/`, `snap.*`): what else the
/// gateway keeps in its data directory (the sign-in token key in `keys/`, the embedded vault).
fn carried_entries(dir: &Path) -> Result<Vec<PathBuf>, MigrateError> {
    let mut carried = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error("cannot read", dir))? {
        let entry = entry.map_err(io_error("cannot read", dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let sleds = matches!(name.as_ref(), "conf" | "db" | "blobs") || name.starts_with("snap.");
        // `LOCK` is the segment log's own lock file, which the new directory has already.
        if !sleds && name != "LOCK" {
            carried.push(entry.path());
        }
    }
    carried.sort();
    Ok(carried)
}

fn tree_size(path: &Path) -> u64 {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => std::fs::read_dir(path).map_or(0, |entries| entries.flatten().map(|e| tree_size(&e.path())).sum()),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// Copies a file, symlink or directory tree with its permissions (the token key is private), synced.
fn copy_tree(from: &Path, to: &Path) -> Result<(), MigrateError> {
    let meta = from.symlink_metadata().map_err(io_error("cannot read", from))?;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(from).map_err(io_error("cannot read", from))?;
        std::os::unix::fs::symlink(target, to).map_err(io_error("cannot write", to))?;
    } else if meta.is_dir() {
        std::fs::create_dir(to).map_err(io_error("cannot create", to))?;
        for entry in std::fs::read_dir(from).map_err(io_error("cannot read", from))? {
            let entry = entry.map_err(io_error("cannot read", from))?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        std::fs::set_permissions(to, meta.permissions()).map_err(io_error("cannot write", to))?;
        sync_dir(to)?;
    } else {
        std::fs::copy(from, to).map_err(io_error("cannot copy to", to))?;
        std::fs::File::open(to).and_then(|f| f.sync_all()).map_err(io_error("cannot sync", to))?;
    }
    Ok(())
}

fn parent_of(dir: &Path) -> &Path {
    dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

fn sync_dir(dir: &Path) -> Result<(), MigrateError> {
    std::fs::File::open(dir).and_then(|f| f.sync_all()).map_err(io_error("cannot sync", dir))
}

fn free_bytes(dir: &Path) -> Result<u64, MigrateError> {
    let stat = rustix::fs::statvfs(dir).map_err(|e| MigrateError::Io { what: "cannot stat", path: dir.to_path_buf(), source: e.into() })?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Puts the new log in `dir` in one atomic exchange, then the old one aside; returns where it is.
fn switch(dir: &Path, tmp: &Path) -> Result<PathBuf, MigrateError> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, dir, CWD, tmp, RenameFlags::EXCHANGE).map_err(|e| MigrateError::NoExchange {
        dir: dir.to_path_buf(),
        tmp: tmp.to_path_buf(),
        source: e.into(),
    })?;
    sync_dir(parent_of(dir))?;
    let aside = aside_dir(dir);
    std::fs::rename(tmp, &aside).map_err(io_error("cannot move aside", tmp))?;
    sync_dir(parent_of(dir))?;
    Ok(aside)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewSession;

    /// An event of the first record format, with a payload whose text serde would write otherwise
    /// (`{"a":2.5,"b":1}`), written the only way such a record still exists: by an older build.
    fn old_format_record() -> Vec<u8> {
        let mut record = vec![layout::EVENT_FORMAT_V1];
        record.extend_from_slice(&1_700_000_000_000u64.to_be_bytes());
        record.extend_from_slice(&3u32.to_be_bytes());
        record.extend_from_slice(&(b"Opened".len() as u16).to_be_bytes());
        record.extend_from_slice(b"Opened");
        record.extend_from_slice(&0u16.to_be_bytes()); // no correlation id
        record.extend_from_slice(br#"{"b":1,"a":2.50}"#);
        record
    }

    #[tokio::test]
    async fn records_are_copied_as_stored_not_re_encoded() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        let session = SessionId::random();
        {
            let sled = SledEventLog::open(StoreConfig::at(&dir)).unwrap();
            sled.create_session(session, NewSession { project: "p".into(), created_ms: 1, resume_token_hash: Some("h".repeat(64)) })
                .await
                .unwrap();
            sled.raw_tree().insert(layout::event_key(&session, 1), old_format_record()).unwrap();
            sled.raw_tree().flush().unwrap();
        }
        let options = MigrateOptions { segment_bytes: 64 * 1024, lock_wait_ms: 5000, ..MigrateOptions::new(&dir) };
        let report = migrate_to_segments(&options, |_| {}).await.unwrap();
        assert_eq!((report.sessions, report.events), (1, 1));

        let mut segments = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "seg") {
                segments.extend(std::fs::read(path).unwrap());
            }
        }
        let record = old_format_record();
        assert!(segments.windows(record.len()).any(|w| w == record.as_slice()), "the format-1 record, as it was");
        let log = SegmentEventLog::open(StoreConfig::at(&dir)).unwrap();
        let events = log.read(session, 1, None).await.unwrap();
        assert_eq!((events[0].schema_version, events[0].checksum.as_deref()), (3, None));
        assert_eq!(events[0].payload, serde_json::json!({"a": 2.5, "b": 1}));
    }
}
