//! The sled backend of [`EventLog`].
//!
//! Threads and channels, so that it works from any Tokio runtime or plain thread:
//! - every write goes through a bounded queue to one writer thread ([`writer`]), which applies
//!   whatever is queued as one atomic sled batch, flushes once, and completes the waiters through
//!   oneshot channels (group commit);
//! - reads run on the caller's thread against sled directly, then wait (only in durable mode, and
//!   only if the writer has an unflushed batch) until what they read is durable;
//! - followers get commit notifications from a bounded broadcast sent after each flush, and
//!   re-read from the log when they fall behind.

mod writer;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use self::writer::{AnswerWrite, Op, Writer};
use crate::histogram::{AtomicHistogram, BATCH_APPENDS_BOUNDS, FLUSH_SECONDS_BOUNDS, HistogramSnapshot};
use crate::layout::{self, MetaRecord};
use crate::{
    AppendOutcome, CommandAnswer, Durability, Envelope, EventLog, EventStream, ExpireReport, NewEvent, NewSession, NoUpcasting,
    RetentionPolicy, SessionFilter, SessionId, SessionMeta, SessionPage, SessionStatus, Snapshot, StoreConfig, StoreError, Upcaster,
};

/// Events read per step by `stream` and `follow`.
const CHUNK: usize = 1024;
/// Events deleted per writer batch while purging an expired session.
const PURGE_CHUNK: usize = 4096;
/// Snapshots deleted per writer batch by `delete_snapshots`.
const SNAPSHOT_CHUNK: usize = 1024;
/// Metadata records `list_sessions` looks at before it returns a (possibly short) page.
const LIST_SCAN_BUDGET: usize = 10_000;

/// What a flush made durable, for followers: the new last seq of each appended session, and the
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

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Progress {
    /// Every write batch up to this generation is durable.
    durable_gen: u64,
    /// The writer stopped (closed or failed): generations above `durable_gen` never will be.
    closed: bool,
}

pub(crate) struct Counters {
    batches: AtomicU64,
    flushes: AtomicU64,
    appends: AtomicU64,
    events: AtomicU64,
    answers: AtomicU64,
    /// Duration of each flush (blob sync + sled flush + fdatasync).
    flush_seconds: AtomicHistogram,
    /// Appends in each batch that wrote: how much group commit shares a flush.
    batch_appends: AtomicHistogram,
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
        }
    }
}

/// What `/metrics` shows of the store.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoreMetrics {
    pub stats: StoreStats,
    pub flush_seconds: HistogramSnapshot,
    pub batch_appends: HistogramSnapshot,
}

/// Counters since open, for tests, metrics and the benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreStats {
    /// Writer batches processed (each one atomic sled batch).
    pub batches: u64,
    /// Flushes (sled flush + fdatasync) done; in durable mode, one per batch that wrote.
    pub flushes: u64,
    /// Successful appends.
    pub appends: u64,
    /// Events those appends wrote.
    pub events: u64,
    /// Answer records written (with an append's events, or alone).
    pub answers: u64,
}

pub(crate) struct Shared {
    db: sled::Db,
    tree: sled::Tree,
    dir: PathBuf,
    durability: Durability,
    upcaster: Arc<dyn Upcaster>,
    max_event_bytes: usize,
    /// Generation of the newest write batch the writer has started to apply.
    applied_gen: AtomicU64,
    progress: watch::Sender<Progress>,
    /// `None` once the log is closed (which ends every follower).
    notices: Mutex<Option<broadcast::Sender<Arc<Notice>>>>,
    stats: Counters,
    /// Set once, when a write or flush failed: why the log accepts no more writes.
    failure: std::sync::OnceLock<String>,
}

fn is_lock_error(e: &std::io::Error) -> bool {
    // sled 0.34.7 reports a failed `flock` as ErrorKind::Other with this text (config.rs).
    e.kind() == std::io::ErrorKind::WouldBlock || e.to_string().contains("could not acquire lock")
}

fn map_sled_error(dir: &Path, e: sled::Error) -> StoreError {
    match e {
        sled::Error::Io(source) => StoreError::Io { dir: dir.to_path_buf(), source },
        other => StoreError::Engine(format!("{} (data directory {})", other, dir.display())),
    }
}

impl Shared {
    fn sled_error(&self, e: sled::Error) -> StoreError {
        map_sled_error(&self.dir, e)
    }

    /// The newest event of the session on disk: its seq (0 if none) and time.
    fn latest_on_disk(&self, session: &SessionId) -> Result<(u64, Option<u64>), StoreError> {
        let found = self.tree.get_lt(layout::event_key(session, u64::MAX)).map_err(|e| self.sled_error(e))?;
        Ok(match found {
            Some((k, v)) => match layout::parse_event_key(&k) {
                Some((s, seq)) if s == *session => (seq, layout::event_record_time(&v)),
                _ => (0, None),
            },
            None => (0, None),
        })
    }

    fn meta_record(&self, session: &SessionId) -> Result<Option<MetaRecord>, StoreError> {
        match self.tree.get(layout::meta_key(session)).map_err(|e| self.sled_error(e))? {
            Some(v) => layout::decode_meta(*session, &v).map(Some),
            None => Ok(None),
        }
    }

    fn exists(&self, session: &SessionId) -> Result<bool, StoreError> {
        self.tree.contains_key(layout::meta_key(session)).map_err(|e| self.sled_error(e))
    }

    fn full_meta(&self, session: SessionId, meta: MetaRecord) -> Result<SessionMeta, StoreError> {
        let (latest_seq, last_time) = self.latest_on_disk(&session)?;
        Ok(SessionMeta {
            session,
            project: meta.project,
            status: meta.status,
            created_ms: meta.created_ms,
            last_activity_ms: last_time.map_or(meta.created_ms, |t| t.max(meta.created_ms)),
            latest_seq,
            resume_token_hash: meta.resume_token_hash,
        })
    }

    fn session_meta(&self, session: SessionId) -> Result<Option<SessionMeta>, StoreError> {
        match self.meta_record(&session)? {
            Some(m) => self.full_meta(session, m).map(Some),
            None => Ok(None),
        }
    }

    /// Up to `limit` events with `from <= seq <= to`, decoded and upcast. The first must be `from`
    /// and the rest contiguous; a hole is reported, never skipped.
    fn read_events(&self, session: SessionId, from: u64, to: u64, limit: usize) -> Result<Vec<Envelope>, StoreError> {
        let from = from.max(1);
        if from > to || limit == 0 {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let range = layout::event_key(&session, from)..=layout::event_key(&session, to);
        for (expected, item) in (from..=to).zip(self.tree.range(range).take(limit)) {
            let (k, v) = item.map_err(|e| self.sled_error(e))?;
            let seq = match layout::parse_event_key(&k) {
                Some((s, seq)) if s == session => seq,
                _ => {
                    return Err(StoreError::Corrupt { session, seq: expected, reason: "malformed key".into() });
                }
            };
            if seq != expected {
                if !self.exists(&session)? {
                    return Err(StoreError::UnknownSession(session)); // expired while we read
                }
                return Err(StoreError::Corrupt {
                    session,
                    seq: expected,
                    reason: format!("missing from the log (the next stored seq is {seq})"),
                });
            }
            out.push(self.upcast(layout::decode_event(session, seq, &v)?)?);
        }
        Ok(out)
    }

    fn upcast(&self, mut env: Envelope) -> Result<Envelope, StoreError> {
        let payload = std::mem::take(&mut env.payload);
        match self.upcaster.upcast(&env.event_type, env.schema_version, payload) {
            Ok((version, payload)) => {
                env.schema_version = version;
                env.payload = payload;
                Ok(env)
            }
            Err(reason) => Err(StoreError::Corrupt {
                session: env.session,
                seq: env.seq,
                reason: format!("cannot upcast {} from schema version {}: {reason}", env.event_type, env.schema_version),
            }),
        }
    }

    /// Wait until everything a read that just finished may have seen is committed. In durable mode
    /// (or `strict`, for followers) that means flushed; buffered mode commits at write.
    async fn settle(&self, strict: bool) -> Result<(), StoreError> {
        let target = self.applied_gen.load(SeqCst);
        if !strict && matches!(self.durability, Durability::Buffered { .. }) {
            return Ok(());
        }
        if self.progress.borrow().durable_gen >= target {
            return Ok(());
        }
        let mut rx = self.progress.subscribe();
        loop {
            {
                let p = *rx.borrow_and_update();
                if p.durable_gen >= target {
                    return Ok(());
                }
                if p.closed {
                    return Err(StoreError::Closed);
                }
            }
            rx.changed().await.map_err(|_| StoreError::Closed)?;
        }
    }

    fn subscribe(&self) -> Option<broadcast::Receiver<Arc<Notice>>> {
        self.notices.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(broadcast::Sender::subscribe)
    }
}

/// The sled-backed [`EventLog`]. Cheap to share behind an `Arc`; dropping the last handle flushes
/// and stops the writer thread.
pub struct SledEventLog {
    shared: Arc<Shared>,
    tx: Option<mpsc::Sender<Op>>,
    writer: Option<JoinHandle<()>>,
    expire_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for SledEventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SledEventLog").field("dir", &self.shared.dir).field("durability", &self.shared.durability).finish_non_exhaustive()
    }
}

/// Refuses, touching nothing, to open `dir` with less than `min_free` bytes (plus 1/32 of its
/// `db` file) free on its disk: sled's recovery writes in place (its `db` file, a snapshot), and
/// one cut short by a full disk left `Read corrupted data` for every later open, every acknowledged
/// event lost (an outside review, 5 of 8 opens of a directory on a full disk, a reading tool's
/// included). A supervisor restarting the gateway after its store failed for want of space then
/// fails cleanly until there is room.
fn refuse_on_a_full_disk(dir: &Path, min_free: u64) -> Result<(), StoreError> {
    let io = |source| StoreError::Io { dir: dir.to_path_buf(), source };
    let db_bytes = match std::fs::metadata(dir.join("db")) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(io(e)),
    };
    let stat = rustix::fs::statvfs(dir).map_err(|e| io(e.into()))?;
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    let needed = min_free.saturating_add(db_bytes / 32);
    if free < needed {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            format!(
                "{free} bytes free on its disk, fewer than the {needed} opening it may need (sled recovers its log in place, \
                 and a recovery cut short by a full disk leaves it unreadable); nothing was changed: free some space and start again"
            ),
        )));
    }
    Ok(())
}

impl SledEventLog {
    /// Open (or create) the log at `config.path`, with no upcasting. See [`Self::open_with_upcaster`].
    pub fn open(config: StoreConfig) -> Result<Self, StoreError> {
        Self::open_with_upcaster(config, Arc::new(NoUpcasting))
    }

    /// Open (or create) the log at `config.path`; events of older schema versions are converted by
    /// `upcaster` on every read. Blocking (sled recovers its log here): call it at startup, or from
    /// a blocking context. A directory another process holds open is [`StoreError::Locked`].
    pub fn open_with_upcaster(config: StoreConfig, upcaster: Arc<dyn Upcaster>) -> Result<Self, StoreError> {
        let dir = config.path.clone();
        let io = |source| StoreError::Io { dir: dir.clone(), source };
        std::fs::create_dir_all(&dir).map_err(io)?;
        refuse_on_a_full_disk(&dir, config.min_free_bytes_to_open)?;
        let sled_config = sled::Config::new()
            .path(&dir)
            .cache_capacity(config.cache_capacity_bytes)
            // We flush ourselves: per group commit (durable) or on our own timer (buffered).
            .flush_every_ms(None);
        let deadline = Instant::now() + Duration::from_millis(config.lock_wait_ms);
        let db = loop {
            match sled_config.open() {
                Ok(db) => break db,
                Err(sled::Error::Io(e)) if is_lock_error(&e) => {
                    if Instant::now() >= deadline {
                        return Err(StoreError::Locked { dir });
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(map_sled_error(&dir, e)),
            }
        };
        // sled writes its `conf` file without syncing it, and may just have created its files:
        // make them and the directory entries durable before anything is acknowledged.
        for file in [dir.join("conf"), dir.join("db"), dir.join("blobs"), dir.clone()] {
            match std::fs::File::open(&file).and_then(|f| f.sync_all()) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                other => other.map_err(io)?,
            }
        }
        let tree = db.open_tree(layout::TREE_NAME).map_err(|e| map_sled_error(&dir, e))?;
        match tree.get(layout::LAYOUT_KEY).map_err(|e| map_sled_error(&dir, e))? {
            Some(v) if v.as_ref() == layout::LAYOUT_VERSION.to_be_bytes() => {}
            Some(v) => {
                return Err(StoreError::Engine(format!(
                    "{} holds an event log of layout {:?}; this build reads layout {}",
                    dir.display(),
                    v.as_ref(),
                    layout::LAYOUT_VERSION
                )));
            }
            None => {
                tree.insert(layout::LAYOUT_KEY, &layout::LAYOUT_VERSION.to_be_bytes())
                    .and_then(|_| db.flush())
                    .map_err(|e| map_sled_error(&dir, e))?;
            }
        }

        let (progress, _) = watch::channel(Progress::default());
        let (notices, _) = broadcast::channel(config.follow_buffer.max(1));
        let shared = Arc::new(Shared {
            db,
            tree,
            dir: dir.clone(),
            durability: config.durability,
            upcaster,
            max_event_bytes: config.max_event_bytes,
            applied_gen: AtomicU64::new(0),
            progress,
            notices: Mutex::new(Some(notices)),
            stats: Counters::default(),
            failure: std::sync::OnceLock::new(),
        });
        let (tx, rx) = mpsc::channel(config.queue_capacity.max(1));
        let writer = Writer::new(shared.clone(), rx, config.max_batch_ops).map_err(io)?;
        let writer = std::thread::Builder::new().name("vestibule-store-writer".into()).spawn(move || writer.run()).map_err(io)?;
        if let Durability::Buffered { interval_ms } = config.durability {
            spawn_ticker(tx.downgrade(), Duration::from_millis(interval_ms.max(1)));
        }
        match config.durability {
            Durability::Durable => tracing::info!(
                dir = %dir.display(),
                durability = "durable",
                "event log opened: appends resolve after the fsync that covers them (group commit)"
            ),
            Durability::Buffered { interval_ms } => tracing::info!(
                dir = %dir.display(),
                durability = "buffered",
                interval_ms,
                "event log opened: appends resolve once written; a crash can lose up to the last {interval_ms} ms"
            ),
        }
        Ok(Self { shared, tx: Some(tx), writer: Some(writer), expire_lock: tokio::sync::Mutex::new(()) })
    }

    pub fn path(&self) -> &Path {
        &self.shared.dir
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

    pub fn metrics(&self) -> StoreMetrics {
        StoreMetrics {
            stats: self.stats(),
            flush_seconds: self.shared.stats.flush_seconds.snapshot(),
            batch_appends: self.shared.stats.batch_appends.snapshot(),
        }
    }

    /// The stored bytes of one event record, exactly as on disk (not decoded, not upcast).
    /// For diagnosing `Corrupt` errors and for checking that reads never rewrite the log.
    pub fn raw_event(&self, session: SessionId, seq: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let v = self.shared.tree.get(layout::event_key(&session, seq)).map_err(|e| self.shared.sled_error(e))?;
        Ok(v.map(|v| v.to_vec()))
    }

    /// The tree that holds the whole log, for reading its records as stored (the whole-directory
    /// migration, `crate::migrate`, copies them byte for byte). Nothing may write through it.
    pub(crate) fn raw_tree(&self) -> &sled::Tree {
        &self.shared.tree
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
            if r.len() > self.shared.max_event_bytes {
                return Err(StoreError::InvalidAppend(format!(
                    "event {i} encodes to {} bytes; the limit is {}",
                    r.len(),
                    self.shared.max_event_bytes
                )));
            }
            records.push(r);
        }
        Ok(records)
    }

    fn encode_answer(&self, session: SessionId, answer: &CommandAnswer) -> Result<AnswerWrite, StoreError> {
        let record = layout::encode_answer(answer).map_err(|reason| StoreError::InvalidAppend(format!("answer: {reason}")))?;
        if record.len() > self.shared.max_event_bytes {
            return Err(StoreError::InvalidAppend(format!(
                "the answer encodes to {} bytes; the limit is {}",
                record.len(),
                self.shared.max_event_bytes
            )));
        }
        Ok(AnswerWrite { key: layout::answer_key(&session, &answer.command_id), record })
    }

    async fn append_with(
        &self,
        session: SessionId,
        expected_seq: u64,
        events: Vec<NewEvent>,
        answer: Option<AnswerWrite>,
    ) -> Result<AppendOutcome, StoreError> {
        let records = self.encode_events(&events)?;
        let first = self.call(|reply| Op::Append { session, expected: expected_seq, records, answer, reply }).await?;
        debug_assert_eq!(first, expected_seq + 1);
        Ok(AppendOutcome::after(expected_seq, events.len()))
    }

    async fn purge(&self, session: SessionId) -> Result<u64, StoreError> {
        let mut deleted = 0;
        loop {
            let (n, done) = self.call(|reply| Op::Purge { session, limit: PURGE_CHUNK, reply }).await?;
            deleted += n;
            if done {
                return Ok(deleted);
            }
        }
    }

    /// Sessions that `policy` says are due at `now_ms`, in id order; at most `max`.
    fn due_sessions(&self, policy: &RetentionPolicy, now_ms: u64, max: usize) -> Result<Vec<SessionId>, StoreError> {
        let shared = &self.shared;
        let mut due = Vec::new();
        for item in shared.tree.scan_prefix([layout::META_KIND]) {
            let (k, v) = item.map_err(|e| shared.sled_error(e))?;
            let Some(session) = layout::parse_meta_key(&k) else { continue };
            let meta = match layout::decode_meta(session, &v) {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(%session, error = %e, "skipping unreadable session metadata in expiry");
                    continue;
                }
            };
            let (_, last_time) = shared.latest_on_disk(&session)?;
            let last_activity = last_time.map_or(meta.created_ms, |t| t.max(meta.created_ms));
            if writer::is_due(policy, meta.status, last_activity, now_ms) {
                due.push(session);
                if due.len() >= max {
                    break;
                }
            }
        }
        Ok(due)
    }
}

fn spawn_ticker(tx: mpsc::WeakSender<Op>, interval: Duration) {
    let _ = std::thread::Builder::new().name("vestibule-store-ticker".into()).spawn(move || {
        loop {
            std::thread::sleep(interval);
            let Some(tx) = tx.upgrade() else { return };
            if tx.blocking_send(Op::Tick).is_err() {
                return;
            }
        }
    });
}

impl Drop for SledEventLog {
    fn drop(&mut self) {
        // Closing the queue stops the writer after it has flushed what it has.
        drop(self.tx.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        if self.shared.failure.get().is_some() {
            // sled 0.34 flushes when its last handle is dropped, and after an I/O error that flush
            // waits forever for a buffer that will never be written: dropping would hang whoever
            // drops the log (the process, on its way out). Leak the handles instead.
            std::mem::forget(self.shared.clone());
        }
    }
}

fn once_err(e: StoreError) -> EventStream {
    futures_util::stream::once(async move { Err(e) }).boxed()
}

struct StreamState {
    shared: Arc<Shared>,
    session: SessionId,
    next: u64,
    end: u64,
    buf: VecDeque<Envelope>,
    done: bool,
}

enum Phase {
    CatchUp,
    Live,
    Done,
}

struct FollowState {
    shared: Arc<Shared>,
    session: SessionId,
    next: u64,
    buf: VecDeque<Envelope>,
    rx: broadcast::Receiver<Arc<Notice>>,
    phase: Phase,
    first: bool,
}

#[async_trait]
impl EventLog for SledEventLog {
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
        let answer = self.encode_answer(session, &answer)?;
        self.append_with(session, expected_seq, events, Some(answer)).await
    }

    async fn remember_answer(&self, session: SessionId, answer: CommandAnswer) -> Result<(), StoreError> {
        let answer = self.encode_answer(session, &answer)?;
        self.call(|reply| Op::RememberAnswer { session, answer, reply }).await
    }

    async fn answer(&self, session: SessionId, command_id: &str) -> Result<Option<CommandAnswer>, StoreError> {
        if layout::check_command_id(command_id).is_err() {
            return Ok(None); // could never have been remembered
        }
        let shared = &self.shared;
        let found = shared.tree.get(layout::answer_key(&session, command_id)).map_err(|e| shared.sled_error(e))?;
        // A miss needs no wait: a crash cannot bring an answer into existence. (Every new command is
        // a miss, so this keeps the common path free of flush waits.)
        let Some(record) = found else { return Ok(None) };
        // An expired session's answers go with its events; until then they are not its answers.
        if !shared.exists(&session)? {
            return Ok(None);
        }
        shared.settle(false).await?;
        layout::decode_answer(session, command_id, &record).map(Some)
    }

    async fn read(&self, session: SessionId, from_seq: u64, to_seq: Option<u64>) -> Result<Vec<Envelope>, StoreError> {
        let shared = &self.shared;
        if !shared.exists(&session)? {
            return Err(StoreError::UnknownSession(session));
        }
        let events = shared.read_events(session, from_seq, to_seq.unwrap_or(u64::MAX - 1), usize::MAX)?;
        shared.settle(false).await?;
        Ok(events)
    }

    fn stream(&self, session: SessionId, from_seq: u64) -> EventStream {
        let shared = self.shared.clone();
        // "The end as it is now": the stream stops there even if the session grows meanwhile.
        let end = match shared.exists(&session) {
            Ok(true) => match shared.latest_on_disk(&session) {
                Ok((end, _)) => end,
                Err(e) => return once_err(e),
            },
            Ok(false) => return once_err(StoreError::UnknownSession(session)),
            Err(e) => return once_err(e),
        };
        let state = StreamState { shared, session, next: from_seq.max(1), end, buf: VecDeque::new(), done: false };
        futures_util::stream::unfold(state, |mut s| async move {
            if let Some(e) = s.buf.pop_front() {
                return Some((Ok(e), s));
            }
            if s.done || s.next > s.end {
                return None;
            }
            let read = s.shared.read_events(s.session, s.next, s.end, CHUNK);
            let read = match read {
                Ok(v) => s.shared.settle(false).await.map(|_| v),
                Err(e) => Err(e),
            };
            match read {
                Ok(v) if v.is_empty() => None,
                Ok(v) => {
                    s.next = v.last().map_or(s.next, |e| e.seq + 1);
                    s.buf.extend(v);
                    let first = s.buf.pop_front()?;
                    Some((Ok(first), s))
                }
                Err(e) => {
                    s.done = true;
                    Some((Err(e), s))
                }
            }
        })
        .boxed()
    }

    fn follow(&self, session: SessionId, from_seq: u64) -> EventStream {
        // Subscribe before the first read, so no commit between the two can be missed.
        let Some(rx) = self.shared.subscribe() else { return once_err(StoreError::Closed) };
        let state = FollowState {
            shared: self.shared.clone(),
            session,
            next: from_seq.max(1),
            buf: VecDeque::new(),
            rx,
            phase: Phase::CatchUp,
            first: true,
        };
        futures_util::stream::unfold(state, |mut f| async move {
            loop {
                if let Some(e) = f.buf.pop_front() {
                    return Some((Ok(e), f));
                }
                match f.phase {
                    Phase::Done => return None,
                    Phase::CatchUp => {
                        let first = std::mem::replace(&mut f.first, false);
                        match f.shared.exists(&f.session) {
                            Ok(true) => {}
                            Ok(false) if first => {
                                f.phase = Phase::Done;
                                return Some((Err(StoreError::UnknownSession(f.session)), f));
                            }
                            Ok(false) => return None, // expired
                            Err(e) => {
                                f.phase = Phase::Done;
                                return Some((Err(e), f));
                            }
                        }
                        let read = f.shared.read_events(f.session, f.next, u64::MAX - 1, CHUNK);
                        // Followers only ever see durable events, whatever the mode.
                        let read = match read {
                            Ok(v) => f.shared.settle(true).await.map(|_| v),
                            Err(e) => Err(e),
                        };
                        match read {
                            Ok(v) => {
                                if v.len() < CHUNK {
                                    f.phase = Phase::Live;
                                }
                                if let Some(last) = v.last() {
                                    f.next = last.seq + 1;
                                }
                                f.buf.extend(v);
                            }
                            Err(StoreError::UnknownSession(_)) => return None, // expired while reading
                            Err(e) => {
                                f.phase = Phase::Done;
                                return Some((Err(e), f));
                            }
                        }
                    }
                    Phase::Live => match f.rx.recv().await {
                        Ok(notice) => {
                            if notice.expired.contains(&f.session) {
                                f.phase = Phase::Done;
                            } else if notice.committed.get(&f.session).is_some_and(|&last| last >= f.next) {
                                f.phase = Phase::CatchUp;
                            }
                        }
                        // Fell behind the bounded notification buffer: re-read from the log.
                        Err(broadcast::error::RecvError::Lagged(_)) => f.phase = Phase::CatchUp,
                        Err(broadcast::error::RecvError::Closed) => f.phase = Phase::Done,
                    },
                }
            }
        })
        .boxed()
    }

    async fn latest_seq(&self, session: SessionId) -> Result<u64, StoreError> {
        if !self.shared.exists(&session)? {
            return Err(StoreError::UnknownSession(session));
        }
        let (seq, _) = self.shared.latest_on_disk(&session)?;
        self.shared.settle(false).await?;
        Ok(seq)
    }

    async fn session_meta(&self, session: SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let meta = self.shared.session_meta(session)?;
        self.shared.settle(false).await?;
        Ok(meta)
    }

    async fn set_status(&self, session: SessionId, status: SessionStatus) -> Result<(), StoreError> {
        self.call(|reply| Op::SetStatus { session, status, reply }).await
    }

    async fn list_sessions(&self, filter: &SessionFilter, after: Option<SessionId>, limit: usize) -> Result<SessionPage, StoreError> {
        use std::ops::Bound::{Excluded, Included};
        let shared = &self.shared;
        let start = match after {
            Some(a) => Excluded(layout::meta_key(&a).to_vec()),
            None => Included(vec![layout::META_KIND]),
        };
        let end = Excluded(vec![layout::META_KIND + 1]);
        let mut sessions = Vec::new();
        let mut scanned = 0usize;
        let mut last_scanned = None;
        let mut iter = shared.tree.range::<Vec<u8>, _>((start, end));
        let mut exhausted = true;
        if limit > 0 {
            for item in iter.by_ref() {
                let (k, v) = item.map_err(|e| shared.sled_error(e))?;
                let Some(session) = layout::parse_meta_key(&k) else { continue };
                scanned += 1;
                last_scanned = Some(session);
                let record = layout::decode_meta(session, &v)?;
                let keep = filter.project.as_ref().is_none_or(|p| *p == record.project) && filter.status.is_none_or(|s| s == record.status);
                if keep {
                    let meta = shared.full_meta(session, record)?;
                    if filter.active_since_ms.is_none_or(|t| meta.last_activity_ms >= t) {
                        sessions.push(meta);
                    }
                }
                if sessions.len() >= limit || scanned >= LIST_SCAN_BUDGET {
                    exhausted = false;
                    break;
                }
            }
        }
        // There is a next page if we stopped early and anything is left.
        let next = if !exhausted && iter.next().is_some() { last_scanned } else { None };
        shared.settle(false).await?;
        Ok(SessionPage { sessions, next })
    }

    async fn put_snapshot(&self, session: SessionId, snapshot: Snapshot) -> Result<(), StoreError> {
        let record = layout::encode_snapshot(&snapshot).map_err(StoreError::InvalidAppend)?;
        let (seq, schema_version) = (snapshot.seq, snapshot.schema_version);
        self.call(|reply| Op::PutSnapshot { session, seq, schema_version, record, reply }).await
    }

    async fn get_snapshot(&self, session: SessionId, schema_version: u32) -> Result<Option<Snapshot>, StoreError> {
        let shared = &self.shared;
        let found = shared.tree.get(layout::snapshot_key(&session, schema_version)).map_err(|e| shared.sled_error(e))?;
        shared.settle(false).await?;
        let Some(record) = found else { return Ok(None) };
        match layout::decode_snapshot(&record) {
            Ok(s) if s.schema_version == schema_version => Ok(Some(s)),
            Ok(_) => Ok(None),
            Err(reason) => {
                // A snapshot is only a cache: an unreadable one is a miss, never a failure.
                tracing::warn!(%session, schema_version, %reason, "ignoring unreadable snapshot");
                Ok(None)
            }
        }
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
        // First finish purges an earlier run left behind (a crash or error mid-purge).
        let leftover: Vec<SessionId> = self
            .shared
            .tree
            .scan_prefix([layout::PURGE_KIND])
            .keys()
            .filter_map(|k| k.ok().and_then(|k| layout::parse_purge_key(&k)))
            .collect();
        for session in leftover {
            report.events_deleted += self.purge(session).await?;
        }
        let batch = policy.batch_size.max(1);
        let mut due = self.due_sessions(policy, now_ms, batch + 1)?;
        report.more_due = due.len() > batch;
        due.truncate(batch);
        if due.is_empty() {
            return Ok(report);
        }
        let policy = policy.clone();
        let expired = self.call(|reply| Op::Expire { candidates: due, policy, now_ms, reply }).await?;
        report.sessions_expired = expired.len() as u64;
        for &session in &expired {
            report.events_deleted += self.purge(session).await?;
        }
        report.expired = expired;
        Ok(report)
    }

    async fn disk_usage(&self) -> Result<u64, StoreError> {
        self.shared.db.size_on_disk().map_err(|e| self.shared.sled_error(e))
    }

    async fn flush(&self) -> Result<(), StoreError> {
        self.call(|reply| Op::Flush { reply }).await
    }

    fn metrics(&self) -> Option<StoreMetrics> {
        Some(SledEventLog::metrics(self))
    }

    fn failure(&self) -> Option<String> {
        self.shared.failure.get().cloned()
    }

    async fn failed(&self) -> String {
        let mut progress = self.shared.progress.subscribe();
        // The writer sets the failure before it marks the log closed.
        let _ = progress.wait_for(|p| p.closed).await;
        match self.shared.failure.get() {
            Some(reason) => reason.clone(),
            // Closed normally: it will never fail now.
            None => std::future::pending().await,
        }
    }
}
