//! The segment-log backend of [`EventLog`] (decision 0105): numbered, preallocated segment files of
//! CRC-checked frames, and an in-memory index of where each session's records are.
//!
//! - Every write goes through a bounded queue to one writer thread ([`writer`]): one frame, one
//!   write and (durable mode) one `fdatasync` per group commit; the index changes only after that.
//! - Reads look the places up in the index under a read lock, then `pread` the records through a
//!   bounded set of read-only descriptors ([`segment::ReadFiles`]). They never wait for the writer:
//!   in durable mode the index only ever holds synced records.
//! - Followers get commit notifications after each sync, like the sled backend's, and read only up
//!   to the durable mark, whatever the mode.
//! - Opening ([`recover`]) restores the index from the newest index checkpoint that verifies
//!   ([`checkpoint`]) and scans only the frames after it (without one, every segment), and cuts a
//!   torn write at the tail. The writer writes a checkpoint every `checkpoint_bytes` of log (64 MiB,
//!   a segment, by default) and when the log is closed: serialized on the writer thread between
//!   batches, written and fsynced by a short-lived thread of its own.
//!
//! - Compaction ([`writer`], `compact_step`): between batches, in bounded steps, the live records of
//!   the oldest segment are copied to the head of the log (COPY records, [`record`]) once at most
//!   `compact_below_percent` of it (or of all sealed segments) is live; the index points at the
//!   copies only after they are synced, and the emptied segment is deleted as any dead one. Opening
//!   gives the same index whether it finds the originals, the copies, or both ([`recover`]).
//!
//! Not built (yet), deliberately:
//! - spilling the index of idle sessions to disk: every live session's index stays in memory
//!   (costs in [`index`]);
//! - compacting any segment but the oldest: recovery orders copies whose segment is gone before
//!   everything on disk, which holds only if they came from the oldest segment. A mostly live
//!   oldest segment is copied forward when the sealed segments together are mostly dead, so the
//!   disk stays bounded, at the price of copying that segment's live bytes.

mod checkpoint;
mod frame;
mod index;
mod read;
mod record;
mod recover;
mod segment;
mod writer;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use self::index::Index;
use self::record::AnswerWrite;
use self::segment::{Pos, ReadFiles};
use self::writer::{Op, Writer};
use crate::histogram::{AtomicHistogram, BATCH_APPENDS_BOUNDS, FLUSH_SECONDS_BOUNDS};
use crate::layout::{self, MetaRecord};
use crate::{
    AppendOutcome, CommandAnswer, Durability, Envelope, EventLog, EventStream, ExpireReport, NewEvent, NewSession, NoUpcasting,
    RetentionPolicy, SessionFilter, SessionId, SessionMeta, SessionPage, SessionStatus, Snapshot, StoreConfig, StoreError, StoreMetrics,
    StoreStats, Upcaster,
};

/// Sessions whose snapshots one writer batch drops in `delete_snapshots`.
const SNAPSHOT_CHUNK: usize = 1024;
/// Sessions one writer batch expires.
const EXPIRE_CHUNK: usize = 1024;
/// Sessions `list_sessions` looks at before it returns a (possibly short) page.
const LIST_SCAN_BUDGET: usize = 10_000;
/// Read-only descriptors readers keep open.
const READ_FILES: usize = 32;
/// Segment sizes accepted (a frame must fit one; offsets are 32-bit).
const MIN_SEGMENT_BYTES: u64 = 64 * 1024;
const MAX_SEGMENT_BYTES: u64 = 1 << 30;

/// A frame around `records`, sealed as the writer seals its frames (see `vestibule_store::segment_frame`).
pub(crate) fn sealed_frame(records: &[u8]) -> Vec<u8> {
    let mut sealed = frame::new_frame(records.len());
    sealed.extend_from_slice(records);
    frame::seal(&mut sealed);
    sealed
}

/// What a sync made durable, for followers: the new last seq of each appended session, and the
/// sessions that were expired.
#[derive(Debug, Default)]
pub(crate) struct Notice {
    committed: HashMap<SessionId, u64>,
    expired: HashSet<SessionId>,
}

impl Notice {
    fn is_empty(&self) -> bool {
        self.committed.is_empty() && self.expired.is_empty()
    }

    fn merge(&mut self, other: Notice) {
        for (s, seq) in other.committed {
            let e = self.committed.entry(s).or_insert(seq);
            *e = (*e).max(seq);
        }
        self.expired.extend(other.expired);
    }
}

pub(crate) struct Counters {
    batches: AtomicU64,
    flushes: AtomicU64,
    appends: AtomicU64,
    events: AtomicU64,
    answers: AtomicU64,
    flush_seconds: AtomicHistogram,
    batch_appends: AtomicHistogram,
    compaction: CompactionCounters,
}

#[derive(Default)]
pub(crate) struct CompactionCounters {
    steps: AtomicU64,
    copied_bytes: AtomicU64,
    segments: AtomicU64,
    longest_step_us: AtomicU64,
}

impl CompactionCounters {
    pub(crate) fn step(&self, took: Duration, copied: u64) {
        self.steps.fetch_add(1, Relaxed);
        self.copied_bytes.fetch_add(copied, Relaxed);
        self.longest_step_us.fetch_max(u64::try_from(took.as_micros()).unwrap_or(u64::MAX), Relaxed);
    }

    pub(crate) fn segment_done(&self) {
        self.segments.fetch_add(1, Relaxed);
    }
}

/// What compaction did since the log was opened ([`SegmentEventLog::compaction_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionStats {
    /// Steps taken (each between two batches).
    pub steps: u64,
    /// Bytes of records copied forward (as they were in the old segments).
    pub copied_bytes: u64,
    /// Segments whose compaction finished.
    pub segments: u64,
    /// The longest step, in microseconds: how long it held up the next group commit at most.
    pub longest_step_us: u64,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            batches: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            appends: AtomicU64::new(0),
            events: AtomicU64::new(0),
            answers: AtomicU64::new(0),
            flush_seconds: AtomicHistogram::new(FLUSH_SECONDS_BOUNDS),
            batch_appends: AtomicHistogram::new(BATCH_APPENDS_BOUNDS),
            compaction: CompactionCounters::default(),
        }
    }
}

pub(crate) struct Shared {
    dir: PathBuf,
    durability: Durability,
    upcaster: Arc<dyn Upcaster>,
    max_event_bytes: usize,
    index: RwLock<Index>,
    files: ReadFiles,
    /// Everything before this place (packed [`Pos`]) is synced: what followers may see.
    durable: AtomicU64,
    /// Set when the writer stops (closed or failed).
    closed: watch::Sender<bool>,
    /// `None` once the log is closed (which ends every follower).
    notices: Mutex<Option<broadcast::Sender<Arc<Notice>>>>,
    stats: Counters,
    /// Set once, when a write or sync failed: why the log accepts no more writes.
    failure: OnceLock<String>,
}

/// The segment-log [`EventLog`]. Cheap to share behind an `Arc`; dropping the last handle syncs and
/// stops the writer thread, then releases the directory lock.
pub struct SegmentEventLog {
    shared: Arc<Shared>,
    tx: Option<mpsc::Sender<Op>>,
    writer: Option<JoinHandle<()>>,
    expire_lock: tokio::sync::Mutex<()>,
    /// Held (`flock`) for the log's life: a second opener gets `StoreError::Locked`.
    _lock: std::fs::File,
}

impl std::fmt::Debug for SegmentEventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentEventLog")
            .field("dir", &self.shared.dir)
            .field("durability", &self.shared.durability)
            .finish_non_exhaustive()
    }
}

impl SegmentEventLog {
    /// Open (or create) the log at `config.path`, with no upcasting.
    pub fn open(config: StoreConfig) -> Result<Self, StoreError> {
        Self::open_with_upcaster(config, Arc::new(NoUpcasting))
    }

    /// Open (or create) the log at `config.path`; events of older schema versions are converted by
    /// `upcaster` on every read. Blocking (it reads the newest index checkpoint and scans the
    /// segments after it, or all of them): call it at startup, or from a
    /// blocking context. A directory another holder has open is [`StoreError::Locked`]; a corrupt
    /// frame anywhere but at the tail is an error naming its segment and offset.
    pub fn open_with_upcaster(config: StoreConfig, upcaster: Arc<dyn Upcaster>) -> Result<Self, StoreError> {
        let dir = config.path.clone();
        let io = |source| StoreError::Io { dir: dir.clone(), source };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let lock = segment::lock(&dir, config.lock_wait_ms)?;
        let segment_bytes = config.segment_bytes.clamp(MIN_SEGMENT_BYTES, MAX_SEGMENT_BYTES);
        let mut recovered = recover::recover(&dir, segment_bytes)?;
        let files = ReadFiles::new(dir.clone(), READ_FILES);
        for (seg, (known_from, starts)) in std::mem::take(&mut recovered.frames) {
            files.set_frames(seg, known_from, starts);
        }
        let (closed, _) = watch::channel(false);
        let (notices, _) = broadcast::channel(config.follow_buffer.max(1));
        let shared = Arc::new(Shared {
            dir: dir.clone(),
            durability: config.durability,
            upcaster,
            max_event_bytes: config.max_event_bytes,
            index: RwLock::new(recovered.index),
            files,
            durable: AtomicU64::new(Pos { seg: recovered.active, offset: recovered.end as u32 }.packed()),
            closed,
            notices: Mutex::new(Some(notices)),
            stats: Counters::default(),
            failure: OnceLock::new(),
        });
        let (tx, rx) = mpsc::channel(config.queue_capacity.max(1));
        let place = writer::Place { seg: recovered.active, end: recovered.end, last_frame: recovered.last_frame };
        let checkpoints =
            writer::Checkpoints { every: config.checkpoint_bytes, since: recovered.scanned, ends_in: recovered.checkpoint.map(|p| p.seg) };
        let compaction = writer::Compaction::new(config.compact_below_percent, config.compact_step_bytes);
        let writer = Writer::new(shared.clone(), rx, config.max_batch_ops, segment_bytes, place, checkpoints, compaction).map_err(io)?;
        let writer = std::thread::Builder::new().name("vestibule-segment-writer".into()).spawn(move || writer.run()).map_err(io)?;
        if let Durability::Buffered { interval_ms } = config.durability {
            spawn_ticker(tx.downgrade(), Duration::from_millis(interval_ms.max(1)));
        }
        tracing::info!(
            dir = %dir.display(),
            durability = ?config.durability,
            segment_bytes,
            active_segment = recovered.active,
            checkpoint = ?recovered.checkpoint.map(|p| (p.seg, p.offset)),
            scanned_bytes = recovered.scanned,
            "segment event log opened"
        );
        Ok(Self { shared, tx: Some(tx), writer: Some(writer), expire_lock: tokio::sync::Mutex::new(()), _lock: lock })
    }

    pub fn path(&self) -> &Path {
        &self.shared.dir
    }

    /// The segment size the log in `dir` was last written with: the size of its newest segment file
    /// that is not empty (segments are preallocated to the size set when they were made), within
    /// the sizes accepted. `None` when it holds no segment. For tools that open a directory without
    /// its configuration, so that they neither grow it nor shrink it (decision 0105).
    pub fn segment_bytes_in(dir: &Path) -> std::io::Result<Option<u64>> {
        let segs = match segment::list(dir) {
            Ok(segs) => segs,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        for seg in segs.into_iter().rev() {
            let len = std::fs::metadata(segment::path(dir, seg))?.len();
            if len > 0 {
                return Ok(Some(len.clamp(MIN_SEGMENT_BYTES, MAX_SEGMENT_BYTES)));
            }
        }
        Ok(None)
    }

    /// Writes an index checkpoint now (after syncing what is written), so that the next open scans
    /// only what is written after this. The writer also writes one every
    /// [`StoreConfig::checkpoint_bytes`] of log and when the log is closed.
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        self.call(|reply| Op::Checkpoint { reply }).await
    }

    pub fn durability(&self) -> Durability {
        self.shared.durability
    }

    pub fn stats(&self) -> StoreStats {
        let c = &self.shared.stats;
        StoreStats {
            batches: c.batches.load(Relaxed),
            flushes: c.flushes.load(Relaxed),
            appends: c.appends.load(Relaxed),
            events: c.events.load(Relaxed),
            answers: c.answers.load(Relaxed),
        }
    }

    pub fn compaction_stats(&self) -> CompactionStats {
        let c = &self.shared.stats.compaction;
        CompactionStats {
            steps: c.steps.load(Relaxed),
            copied_bytes: c.copied_bytes.load(Relaxed),
            segments: c.segments.load(Relaxed),
            longest_step_us: c.longest_step_us.load(Relaxed),
        }
    }

    pub fn metrics(&self) -> StoreMetrics {
        StoreMetrics {
            stats: self.stats(),
            flush_seconds: self.shared.stats.flush_seconds.snapshot(),
            batch_appends: self.shared.stats.batch_appends.snapshot(),
        }
    }

    async fn call<T>(&self, op: impl FnOnce(oneshot::Sender<Result<T, StoreError>>) -> Op) -> Result<T, StoreError> {
        let tx = self.tx.as_ref().ok_or(StoreError::Closed)?;
        let (reply, rx) = oneshot::channel();
        tx.send(op(reply)).await.map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Encodes events on the caller's thread, so the writer only validates and writes.
    fn encode_events(&self, events: &[NewEvent]) -> Result<Vec<Vec<u8>>, StoreError> {
        if events.is_empty() {
            return Err(StoreError::InvalidAppend("an append needs at least one event".into()));
        }
        let mut records = Vec::with_capacity(events.len());
        for (i, e) in events.iter().enumerate() {
            let r = layout::encode_event(e).map_err(|reason| StoreError::InvalidAppend(format!("event {i}: {reason}")))?;
            self.check_size(&format!("event {i}"), r.len())?;
            records.push(r);
        }
        Ok(records)
    }

    fn check_size(&self, what: &str, len: usize) -> Result<(), StoreError> {
        if len > self.shared.max_event_bytes {
            return Err(StoreError::InvalidAppend(format!("{what} encodes to {len} bytes; the limit is {}", self.shared.max_event_bytes)));
        }
        Ok(())
    }

    fn encode_answer(&self, answer: &CommandAnswer) -> Result<AnswerWrite, StoreError> {
        let record = layout::encode_answer(answer).map_err(|reason| StoreError::InvalidAppend(format!("answer: {reason}")))?;
        self.check_size("the answer", record.len())?;
        Ok(AnswerWrite { command_id: answer.command_id.clone(), record })
    }

    async fn append_with(
        &self,
        session: SessionId,
        expected_seq: u64,
        events: Vec<NewEvent>,
        answer: Option<AnswerWrite>,
    ) -> Result<AppendOutcome, StoreError> {
        let records = self.encode_events(&events)?;
        let last_time = events.last().map_or(0, |e| e.time_ms);
        let first = self.call(|reply| Op::Append { session, expected: expected_seq, records, last_time, answer, reply }).await?;
        debug_assert_eq!(first, expected_seq + 1);
        Ok(AppendOutcome::after(expected_seq, events.len()))
    }

    /// Writes one record copied byte for byte from a sled log, through the writer like any other
    /// write (for `crate::migrate`). The trait's writes would decode and re-encode: an old event
    /// format would come out as the new one, and a payload's text as serde's.
    pub(crate) async fn write_copied(&self, session: SessionId, copied: crate::migrate::CopiedRecord) -> Result<(), StoreError> {
        use crate::migrate::CopiedRecord;
        match copied {
            CopiedRecord::Meta(record) => {
                let meta = layout::decode_meta(session, &record)?;
                self.call(|reply| Op::Create { session, meta, record, reply }).await
            }
            CopiedRecord::Events { expected_seq, records } => {
                let last_time = records.last().and_then(|r| layout::event_record_time(r)).unwrap_or(0);
                let answer = None;
                self.call(|reply| Op::Append { session, expected: expected_seq, records, last_time, answer, reply }).await.map(|_| ())
            }
            CopiedRecord::Answer { command_id, record } => {
                let answer = AnswerWrite { command_id, record };
                self.call(|reply| Op::RememberAnswer { session, answer, reply }).await
            }
            CopiedRecord::Snapshot { seq, schema_version, record } => {
                self.call(|reply| Op::PutSnapshot { session, seq, schema_version, record, reply }).await
            }
        }
    }

    /// Sessions that `policy` says are due at `now_ms`, in id order; at most `max`.
    fn due_sessions(&self, policy: &RetentionPolicy, now_ms: u64, max: usize) -> Vec<SessionId> {
        let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
        index
            .sessions_after(None)
            .filter(|(_, s)| writer::is_due(policy, s.meta.status, s.last_activity_ms, now_ms))
            .map(|(id, _)| *id)
            .take(max)
            .collect()
    }
}

fn spawn_ticker(tx: mpsc::WeakSender<Op>, interval: Duration) {
    let _ = std::thread::Builder::new().name("vestibule-segment-ticker".into()).spawn(move || {
        loop {
            std::thread::sleep(interval);
            let Some(tx) = tx.upgrade() else { return };
            if tx.blocking_send(Op::Tick).is_err() {
                return;
            }
        }
    });
}

impl Drop for SegmentEventLog {
    fn drop(&mut self) {
        // Closing the queue stops the writer after it has synced what it has; the lock goes after.
        drop(self.tx.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

#[async_trait]
impl EventLog for SegmentEventLog {
    async fn create_session(&self, session: SessionId, new: NewSession) -> Result<SessionMeta, StoreError> {
        let meta = MetaRecord {
            status: SessionStatus::Active,
            created_ms: new.created_ms,
            project: new.project,
            resume_token_hash: new.resume_token_hash,
        };
        let record = layout::encode_meta(&meta).map_err(StoreError::InvalidAppend)?;
        let m = meta.clone();
        self.call(|reply| Op::Create { session, meta: m, record, reply }).await?;
        Ok(SessionMeta {
            session,
            project: meta.project,
            status: meta.status,
            created_ms: meta.created_ms,
            last_activity_ms: meta.created_ms,
            latest_seq: 0,
            resume_token_hash: meta.resume_token_hash,
        })
    }

    async fn append(&self, session: SessionId, expected_seq: u64, events: Vec<NewEvent>) -> Result<AppendOutcome, StoreError> {
        self.append_with(session, expected_seq, events, None).await
    }

    async fn append_answered(
        &self,
        session: SessionId,
        expected_seq: u64,
        events: Vec<NewEvent>,
        answer: CommandAnswer,
    ) -> Result<AppendOutcome, StoreError> {
        let answer = self.encode_answer(&answer)?;
        self.append_with(session, expected_seq, events, Some(answer)).await
    }

    async fn remember_answer(&self, session: SessionId, answer: CommandAnswer) -> Result<(), StoreError> {
        let answer = self.encode_answer(&answer)?;
        self.call(|reply| Op::RememberAnswer { session, answer, reply }).await
    }

    async fn answer(&self, session: SessionId, command_id: &str) -> Result<Option<CommandAnswer>, StoreError> {
        self.shared.answer(session, command_id)
    }

    async fn read(&self, session: SessionId, from_seq: u64, to_seq: Option<u64>) -> Result<Vec<Envelope>, StoreError> {
        self.shared.read_events(session, from_seq, to_seq.unwrap_or(u64::MAX - 1), usize::MAX, None)
    }

    fn stream(&self, session: SessionId, from_seq: u64) -> EventStream {
        read::stream(self.shared.clone(), session, from_seq)
    }

    fn follow(&self, session: SessionId, from_seq: u64) -> EventStream {
        read::follow(self.shared.clone(), session, from_seq)
    }

    async fn latest_seq(&self, session: SessionId) -> Result<u64, StoreError> {
        let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
        index.get(&session).map(|s| s.latest_seq).ok_or(StoreError::UnknownSession(session))
    }

    async fn session_meta(&self, session: SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
        Ok(index.get(&session).map(|s| s.full_meta(session)))
    }

    async fn set_status(&self, session: SessionId, status: SessionStatus) -> Result<(), StoreError> {
        self.call(|reply| Op::SetStatus { session, status, reply }).await
    }

    async fn list_sessions(&self, filter: &SessionFilter, after: Option<SessionId>, limit: usize) -> Result<SessionPage, StoreError> {
        if limit == 0 {
            return Ok(SessionPage { sessions: Vec::new(), next: None });
        }
        let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
        let mut sessions = Vec::new();
        let mut iter = index.sessions_after(after);
        let mut scanned = 0usize;
        let mut last_scanned = None;
        for (id, s) in iter.by_ref() {
            scanned += 1;
            last_scanned = Some(*id);
            let keep = filter.project.as_ref().is_none_or(|p| *p == s.meta.project)
                && filter.status.is_none_or(|st| st == s.meta.status)
                && filter.active_since_ms.is_none_or(|t| s.last_activity_ms >= t);
            if keep {
                sessions.push(s.full_meta(*id));
            }
            if sessions.len() >= limit || scanned >= LIST_SCAN_BUDGET {
                break;
            }
        }
        // There is a next page if we stopped early and anything is left.
        let next = if iter.next().is_some() { last_scanned } else { None };
        Ok(SessionPage { sessions, next })
    }

    async fn put_snapshot(&self, session: SessionId, snapshot: Snapshot) -> Result<(), StoreError> {
        let record = layout::encode_snapshot(&snapshot).map_err(StoreError::InvalidAppend)?;
        let (seq, schema_version) = (snapshot.seq, snapshot.schema_version);
        self.call(|reply| Op::PutSnapshot { session, seq, schema_version, record, reply }).await
    }

    async fn get_snapshot(&self, session: SessionId, schema_version: u32) -> Result<Option<Snapshot>, StoreError> {
        self.shared.snapshot(session, schema_version)
    }

    async fn delete_snapshots(&self, session: Option<SessionId>) -> Result<(), StoreError> {
        loop {
            let n = self.call(|reply| Op::DeleteSnapshots { session, limit: SNAPSHOT_CHUNK, reply }).await?;
            if n < SNAPSHOT_CHUNK {
                return Ok(());
            }
        }
    }

    async fn expire(&self, policy: &RetentionPolicy, now_ms: u64) -> Result<ExpireReport, StoreError> {
        let _one_at_a_time = self.expire_lock.lock().await;
        let mut report = ExpireReport::default();
        let batch = policy.batch_size.max(1);
        let mut due = self.due_sessions(policy, now_ms, batch + 1);
        report.more_due = due.len() > batch;
        due.truncate(batch);
        while !due.is_empty() {
            let candidates: Vec<SessionId> = due.drain(..due.len().min(EXPIRE_CHUNK)).collect();
            let policy = policy.clone();
            let expired = self.call(|reply| Op::Expire { candidates, policy, now_ms, reply }).await?;
            for (session, events) in expired {
                report.sessions_expired += 1;
                report.events_deleted += events;
                report.expired.push(session);
            }
        }
        Ok(report)
    }

    async fn disk_usage(&self) -> Result<u64, StoreError> {
        let io = |source| StoreError::Io { dir: self.shared.dir.clone(), source };
        let mut total = 0;
        for seg in segment::list(&self.shared.dir).map_err(io)? {
            match std::fs::metadata(segment::path(&self.shared.dir, seg)) {
                Ok(m) => total += m.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {} // deleted meanwhile
                Err(e) => return Err(io(e)),
            }
        }
        Ok(total)
    }

    async fn flush(&self) -> Result<(), StoreError> {
        self.call(|reply| Op::Flush { reply }).await
    }

    /// Syncs and writes the index checkpoint a close writes (with `checkpoint_bytes = 0`, the only
    /// one): a gateway's graceful stop holds the log through many handles and never drops the last.
    async fn close(&self) -> Result<(), StoreError> {
        self.checkpoint().await
    }

    fn metrics(&self) -> Option<StoreMetrics> {
        Some(SegmentEventLog::metrics(self))
    }

    fn failure(&self) -> Option<String> {
        self.shared.failure.get().cloned()
    }

    async fn failed(&self) -> String {
        let mut closed = self.shared.closed.subscribe();
        // The writer sets the failure before it marks the log closed.
        let _ = closed.wait_for(|c| *c).await;
        match self.shared.failure.get() {
            Some(reason) => reason.clone(),
            // Closed normally: it will never fail now.
            None => std::future::pending().await,
        }
    }
}
