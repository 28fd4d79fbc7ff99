//! The writer thread: the only code that writes to the sled tree.
//!
//! It takes every queued operation (up to `max_batch_ops`), validates them in arrival order against
//! the state as of the previous batch plus what this batch already staged, stages all their writes
//! into ONE `sled::Batch`, applies it (atomic, also across a crash), then — in durable mode —
//! flushes once and only then completes every waiter of the batch. Operations that arrive during a
//! flush queue up and form the next batch: that is the group commit.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::{Notice, Shared};
use crate::layout::{self, MetaRecord};
use crate::{Durability, RetentionPolicy, SessionId, SessionStatus, StoreError};

pub(crate) type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// Writer cache entries beyond this are dropped (between batches) and re-read on demand.
const CACHE_LIMIT: usize = 262_144;

pub(crate) enum Op {
    Create {
        session: SessionId,
        meta: MetaRecord,
        record: Vec<u8>,
        reply: Reply<()>,
    },
    /// Returns the seq of the first appended event. `answer` (key, record) is written in the same
    /// batch as the events, so a crash keeps both or neither.
    Append {
        session: SessionId,
        expected: u64,
        records: Vec<Vec<u8>>,
        answer: Option<AnswerWrite>,
        reply: Reply<u64>,
    },
    /// The answer to a command that wrote no event.
    RememberAnswer {
        session: SessionId,
        answer: AnswerWrite,
        reply: Reply<()>,
    },
    SetStatus {
        session: SessionId,
        status: SessionStatus,
        reply: Reply<()>,
    },
    PutSnapshot {
        session: SessionId,
        seq: u64,
        schema_version: u32,
        record: Vec<u8>,
        reply: Reply<()>,
    },
    /// Deletes at most `limit` snapshots; returns how many it deleted.
    DeleteSnapshots {
        session: Option<SessionId>,
        limit: usize,
        reply: Reply<usize>,
    },
    /// Expires those of `candidates` that are (still) due; returns them.
    Expire {
        candidates: Vec<SessionId>,
        policy: RetentionPolicy,
        now_ms: u64,
        reply: Reply<Vec<SessionId>>,
    },
    /// Deletes at most `limit` events of an expired session; returns (deleted, finished).
    Purge {
        session: SessionId,
        limit: usize,
        reply: Reply<(u64, bool)>,
    },
    Flush {
        reply: Reply<()>,
    },
    /// Buffered mode's timer: flush if anything is unflushed.
    Tick,
}

/// An answer record, encoded by the caller: its key and its bytes.
pub(crate) struct AnswerWrite {
    pub key: Vec<u8>,
    pub record: Vec<u8>,
}

/// Whether a session was already expired by the retention policy at `now_ms`.
pub(crate) fn is_due(policy: &RetentionPolicy, status: SessionStatus, last_activity_ms: u64, now_ms: u64) -> bool {
    let idle = now_ms.saturating_sub(last_activity_ms);
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    (status == SessionStatus::Ended && idle >= ms(policy.ended_after)) || idle >= ms(policy.idle_after)
}

/// A waiter to complete once its batch is applied (and flushed when that is required).
trait Complete: Send {
    /// `failure` is set when the batch could not be applied or flushed.
    fn complete(self: Box<Self>, failure: Option<StoreError>);
}

struct Pending<T: Send> {
    reply: Reply<T>,
    result: Result<T, StoreError>,
}

impl<T: Send> Complete for Pending<T> {
    fn complete(self: Box<Self>, failure: Option<StoreError>) {
        let result = match (self.result, failure) {
            (Ok(_), Some(f)) => Err(f),
            (result, _) => result,
        };
        let _ = self.reply.send(result);
    }
}

#[derive(Default)]
struct BatchState {
    batch: sled::Batch,
    writes: usize,
    appends: u64,
    events: u64,
    answers: u64,
    touched: HashSet<SessionId>,
    staged_meta: HashMap<SessionId, MetaRecord>,
    notice: Notice,
    /// Sessions this batch appended to.
    notice_sessions: HashSet<SessionId>,
    force_flush: bool,
    tick: bool,
    done: Vec<Box<dyn Complete>>,
}

impl BatchState {
    fn push<T: Send + 'static>(&mut self, reply: Reply<T>, result: Result<T, StoreError>) {
        self.done.push(Box::new(Pending { reply, result }));
    }
}

/// Makes sled's flush a real one: sled 0.34's flush ends in `sync_file_range`, which neither
/// flushes the drive's cache nor the file's metadata (its size, as the log grows), and it never
/// syncs the blob files it writes for very large pages. This adds `fdatasync` on the data file
/// and on any new blob file (plus the blob directory).
///
/// It holds the data file and the blob directory open for the log's whole life, so a flush needs no
/// new file descriptor: when the process is out of descriptors (a flood of sockets), flushing still
/// works. Only a blob sled has just written is opened (to sync it), and sled needed a descriptor to
/// write it anyway.
struct Syncer {
    db_file: File,
    /// The blob directory, read afresh (rewound) on every flush through the same descriptor.
    blob_dir: Option<rustix::fs::Dir>,
    synced_blobs: HashSet<Vec<u8>>,
}

impl Syncer {
    fn open(dir: &Path) -> io::Result<Self> {
        let db_file = File::open(dir.join("db"))?;
        let blob_dir = match File::open(dir.join("blobs")) {
            Ok(d) => Some(rustix::fs::Dir::new(d)?),
            // sled creates it at open; without it there are no blobs to sync.
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(Self { db_file, blob_dir, synced_blobs: HashSet::new() })
    }

    /// Sync blobs written since the last call; before the log that points at them is flushed.
    fn sync_blobs(&mut self) -> io::Result<()> {
        let Some(dir) = self.blob_dir.as_mut() else { return Ok(()) };
        dir.rewind();
        let mut seen = HashSet::with_capacity(self.synced_blobs.len());
        let mut new = false;
        while let Some(entry) = dir.read() {
            let entry = entry?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let name_bytes = name.to_bytes();
            if !self.synced_blobs.contains(name_bytes) {
                let blob = rustix::fs::openat(
                    dir.fd()?,
                    name,
                    rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                );
                match blob {
                    Ok(fd) => rustix::fs::fdatasync(&fd)?,
                    Err(rustix::io::Errno::NOENT) => continue, // collected meanwhile
                    Err(e) => return Err(e.into()),
                }
                new = true;
            }
            seen.insert(name_bytes.to_vec());
        }
        if new {
            rustix::fs::fsync(dir.fd()?)?;
        }
        self.synced_blobs = seen;
        Ok(())
    }

    fn sync_data_file(&self) -> io::Result<()> {
        self.db_file.sync_data()
    }
}

pub(crate) struct Writer {
    shared: Arc<Shared>,
    rx: mpsc::Receiver<Op>,
    max_batch_ops: usize,
    /// Latest seq per session as of everything staged so far; `None`: known not to exist.
    cache: HashMap<SessionId, Option<u64>>,
    generation: u64,
    dirty: bool,
    pending_notice: Notice,
    last_flush: Instant,
    syncer: Syncer,
    /// Set when a write or flush failed: nothing is acknowledged after that.
    failure: Option<(Option<io::ErrorKind>, String)>,
    /// Sessions whose appends the last batch acknowledged (see `gather`).
    returning: HashSet<SessionId>,
    gather_cooldown: u32,
    last_flush_time: Duration,
}

impl Writer {
    pub(crate) fn new(shared: Arc<Shared>, rx: mpsc::Receiver<Op>, max_batch_ops: usize) -> io::Result<Self> {
        let syncer = Syncer::open(&shared.dir)?;
        Ok(Self {
            shared,
            rx,
            max_batch_ops: max_batch_ops.max(1),
            cache: HashMap::new(),
            generation: 0,
            dirty: false,
            pending_notice: Notice::default(),
            last_flush: Instant::now(),
            syncer,
            failure: None,
            returning: HashSet::new(),
            gather_cooldown: 0,
            last_flush_time: Duration::ZERO,
        })
    }

    pub(crate) fn run(mut self) {
        // Whatever way this thread ends (even a panic), readers waiting for a flush must hear of it.
        struct CloseOnExit(Arc<Shared>);
        impl Drop for CloseOnExit {
            fn drop(&mut self) {
                self.0.progress.send_modify(|p| p.closed = true);
                self.0.notices.lock().unwrap_or_else(|p| p.into_inner()).take();
            }
        }
        let _close = CloseOnExit(self.shared.clone());
        let mut ops = Vec::with_capacity(self.max_batch_ops);
        while let Some(first) = self.rx.blocking_recv() {
            ops.push(first);
            while ops.len() < self.max_batch_ops {
                match self.rx.try_recv() {
                    Ok(op) => ops.push(op),
                    Err(_) => break,
                }
            }
            self.gather(&mut ops);
            self.process(&mut ops);
        }
        self.shutdown();
    }

    /// Closed-loop appenders (an actor appending its next event as soon as the previous one is
    /// durable, a load test) come back right after their batch completes. If the batch being formed
    /// lacks some of the sessions the previous batch just acknowledged, wait a moment for them
    /// (while they keep arriving, up to the duration of the last flush), so they share this flush
    /// rather than splitting into groups that alternate between flushes. When they do not come
    /// back, stop waiting for a while: sporadic appends pay at most one idle gap in 33 batches.
    fn gather(&mut self, ops: &mut Vec<Op>) {
        const IDLE_GAP: Duration = Duration::from_micros(50);
        const COOLDOWN_BATCHES: u32 = 32;
        let mut missing = std::mem::take(&mut self.returning);
        if missing.is_empty() || ops.len() >= self.max_batch_ops {
            return;
        }
        if self.gather_cooldown > 0 {
            self.gather_cooldown -= 1;
            return;
        }
        for op in ops.iter() {
            if let Op::Append { session, .. } = op {
                missing.remove(session);
            }
        }
        let start = Instant::now();
        let cap = self.last_flush_time.min(Duration::from_millis(1));
        let mut last_arrival = start;
        let mut arrived = 0usize;
        while !missing.is_empty() && ops.len() < self.max_batch_ops {
            match self.rx.try_recv() {
                Ok(op) => {
                    if let Op::Append { session, .. } = &op {
                        missing.remove(session);
                    }
                    ops.push(op);
                    arrived += 1;
                    last_arrival = Instant::now();
                }
                Err(mpsc::error::TryRecvError::Empty) => {
                    let now = Instant::now();
                    if now - last_arrival >= IDLE_GAP || now - start >= cap {
                        if arrived == 0 {
                            self.gather_cooldown = COOLDOWN_BATCHES;
                        }
                        break;
                    }
                    std::thread::yield_now();
                }
                Err(mpsc::error::TryRecvError::Disconnected) => break,
            }
        }
    }

    fn failure_error(&self) -> StoreError {
        match &self.failure {
            Some((Some(kind), msg)) => StoreError::Io {
                dir: self.shared.dir.clone(),
                source: io::Error::new(*kind, format!("an earlier write failed; the log accepts no more writes: {msg}")),
            },
            Some((None, msg)) => StoreError::Engine(format!(
                "an earlier write failed; the log accepts no more writes ({}): {msg}",
                self.shared.dir.display()
            )),
            None => StoreError::Closed,
        }
    }

    fn fail(&mut self, error: &StoreError) {
        tracing::error!(dir = %self.shared.dir.display(), %error, "event log write failed; refusing further writes");
        let kind = match error {
            StoreError::Io { source, .. } => Some(source.kind()),
            _ => None,
        };
        self.failure = Some((kind, error.to_string()));
        let _ = self.shared.failure.set(error.to_string());
        self.shared.progress.send_modify(|p| p.closed = true);
    }

    fn process(&mut self, ops: &mut Vec<Op>) {
        if self.failure.is_some() {
            let mut b = BatchState::default();
            for op in ops.drain(..) {
                self.stage(op, &mut b);
            }
            for d in b.done {
                d.complete(Some(self.failure_error()));
            }
            return;
        }
        if self.cache.len() > CACHE_LIMIT {
            self.cache.clear();
        }
        let mut b = BatchState::default();
        for op in ops.drain(..) {
            self.stage(op, &mut b);
        }
        let stats = &self.shared.stats;
        stats.batches.fetch_add(1, Relaxed);
        if b.writes > 0 {
            self.generation += 1;
            // Stored before the writes become visible, so a reader that sees them and then loads
            // this counter knows which flush it must wait for.
            self.shared.applied_gen.store(self.generation, SeqCst);
            if let Err(e) = self.shared.tree.apply_batch(std::mem::take(&mut b.batch)) {
                let e = self.shared.sled_error(e);
                self.fail(&e);
                for d in b.done {
                    d.complete(Some(self.failure_error()));
                }
                return;
            }
            self.dirty = true;
            stats.appends.fetch_add(b.appends, Relaxed);
            if b.appends > 0 {
                stats.batch_appends.observe(b.appends as f64);
            }
            stats.events.fetch_add(b.events, Relaxed);
            stats.answers.fetch_add(b.answers, Relaxed);
            self.pending_notice.merge(std::mem::take(&mut b.notice));
        }
        let flush_now = match self.shared.durability {
            Durability::Durable => self.dirty,
            Durability::Buffered { interval_ms } => {
                self.dirty && (b.force_flush || b.tick || self.last_flush.elapsed() >= Duration::from_millis(interval_ms))
            }
        };
        if flush_now && let Err(e) = self.flush() {
            self.fail(&e);
            for d in b.done {
                d.complete(Some(self.failure_error()));
            }
            return;
        }
        if flush_now {
            self.returning = b.notice_sessions;
        }
        for d in b.done {
            d.complete(None);
        }
    }

    /// Make everything applied so far durable, then tell readers and followers.
    fn flush(&mut self) -> Result<(), StoreError> {
        if !self.dirty {
            return Ok(());
        }
        let io = |e: io::Error| StoreError::Io { dir: self.shared.dir.clone(), source: e };
        let started = Instant::now();
        self.syncer.sync_blobs().map_err(io)?;
        self.shared.db.flush().map_err(|e| self.shared.sled_error(e))?;
        self.syncer.sync_data_file().map_err(io)?;
        self.dirty = false;
        self.last_flush = Instant::now();
        self.last_flush_time = self.last_flush - started;
        self.shared.stats.flushes.fetch_add(1, Relaxed);
        self.shared.stats.flush_seconds.observe(self.last_flush_time.as_secs_f64());
        let generation = self.generation;
        self.shared.progress.send_modify(|p| p.durable_gen = generation);
        let notice = std::mem::take(&mut self.pending_notice);
        if !notice.is_empty()
            && let Some(tx) = self.shared.notices.lock().unwrap_or_else(|p| p.into_inner()).as_ref()
        {
            let _ = tx.send(Arc::new(notice)); // Err only means no follower is listening.
        }
        Ok(())
    }

    /// The queue is closed (the log was dropped): flush what is left. `CloseOnExit` then marks the
    /// log closed and drops the broadcast sender, which ends every follower.
    fn shutdown(mut self) {
        if self.failure.is_none()
            && let Err(e) = self.flush()
        {
            tracing::error!(dir = %self.shared.dir.display(), error = %e, "final flush of the event log failed");
        }
    }

    /// The latest seq of `session` as of everything staged so far, or `None` if it does not exist.
    fn lookup(&mut self, session: SessionId) -> Result<Option<u64>, StoreError> {
        if let Some(v) = self.cache.get(&session) {
            return Ok(*v);
        }
        let exists = self.shared.tree.contains_key(layout::meta_key(&session)).map_err(|e| self.shared.sled_error(e))?;
        let v = if exists { Some(self.shared.latest_on_disk(&session)?.0) } else { None };
        self.cache.insert(session, v);
        Ok(v)
    }

    fn meta_for_update(&mut self, session: SessionId, b: &BatchState) -> Result<MetaRecord, StoreError> {
        if let Some(m) = b.staged_meta.get(&session) {
            return Ok(m.clone());
        }
        self.shared.meta_record(&session)?.ok_or(StoreError::UnknownSession(session))
    }

    fn stage(&mut self, op: Op, b: &mut BatchState) {
        if self.failure.is_some() {
            // Answer without touching anything; `process` completes these with the failure.
            match op {
                Op::Create { reply, .. }
                | Op::SetStatus { reply, .. }
                | Op::PutSnapshot { reply, .. }
                | Op::RememberAnswer { reply, .. }
                | Op::Flush { reply } => b.push(reply, Ok(())),
                Op::Append { reply, .. } => b.push(reply, Ok(0)),
                Op::DeleteSnapshots { reply, .. } => b.push(reply, Ok(0)),
                Op::Expire { reply, .. } => b.push(reply, Ok(Vec::new())),
                Op::Purge { reply, .. } => b.push(reply, Ok((0, false))),
                Op::Tick => {}
            }
            return;
        }
        match op {
            Op::Create { session, meta, record, reply } => {
                let r = self.stage_create(session, meta, record, b);
                b.push(reply, r);
            }
            Op::Append { session, expected, records, answer, reply } => {
                let r = self.stage_append(session, expected, records, answer, b);
                b.push(reply, r);
            }
            Op::RememberAnswer { session, answer, reply } => {
                let r = self.stage_remember_answer(session, answer, b);
                b.push(reply, r);
            }
            Op::SetStatus { session, status, reply } => {
                let r = self.stage_set_status(session, status, b);
                b.push(reply, r);
            }
            Op::PutSnapshot { session, seq, schema_version, record, reply } => {
                let r = self.stage_put_snapshot(session, seq, schema_version, record, b);
                b.push(reply, r);
            }
            Op::DeleteSnapshots { session, limit, reply } => {
                let r = self.stage_delete_snapshots(session, limit, b);
                b.push(reply, r);
            }
            Op::Expire { candidates, policy, now_ms, reply } => {
                let r = self.stage_expire(candidates, &policy, now_ms, b);
                b.push(reply, r);
            }
            Op::Purge { session, limit, reply } => {
                let r = self.stage_purge(session, limit, b);
                b.push(reply, r);
            }
            Op::Flush { reply } => {
                b.force_flush = true;
                b.push(reply, Ok(()));
            }
            Op::Tick => b.tick = true,
        }
    }

    fn stage_create(&mut self, session: SessionId, meta: MetaRecord, record: Vec<u8>, b: &mut BatchState) -> Result<(), StoreError> {
        if self.lookup(session)?.is_some() {
            return Err(StoreError::SessionExists(session));
        }
        // An expired session whose events are still being purged keeps its id until they are gone.
        let tree = &self.shared.tree;
        let err = |e| self.shared.sled_error(e);
        if tree.contains_key(layout::purge_key(&session)).map_err(err)?
            || tree.scan_prefix(layout::event_prefix(&session)).next().transpose().map_err(err)?.is_some()
        {
            return Err(StoreError::SessionExists(session));
        }
        // Answers left behind under this id (by a build that purged without removing them) belong
        // to an earlier life of the id: a new session must not inherit them.
        for key in tree.scan_prefix(layout::answer_prefix(&session)).keys() {
            b.batch.remove(key.map_err(err)?);
            b.writes += 1;
        }
        b.batch.insert(&layout::meta_key(&session), record);
        b.writes += 1;
        b.staged_meta.insert(session, meta);
        b.touched.insert(session);
        self.cache.insert(session, Some(0));
        // `create_session` is durable when it resolves, in buffered mode too.
        b.force_flush = true;
        Ok(())
    }

    fn stage_append(
        &mut self,
        session: SessionId,
        expected: u64,
        records: Vec<Vec<u8>>,
        answer: Option<AnswerWrite>,
        b: &mut BatchState,
    ) -> Result<u64, StoreError> {
        let actual = self.lookup(session)?.ok_or(StoreError::UnknownSession(session))?;
        if actual != expected {
            return Err(StoreError::Conflict { session, expected, actual });
        }
        let n = records.len() as u64;
        for (i, record) in records.into_iter().enumerate() {
            b.batch.insert(&layout::event_key(&session, actual + 1 + i as u64), record);
        }
        b.writes += n as usize;
        // In the same sled batch as the events: atomic with them, also across a crash.
        if let Some(answer) = answer {
            b.batch.insert(answer.key, answer.record);
            b.writes += 1;
            b.answers += 1;
        }
        b.appends += 1;
        b.events += n;
        b.touched.insert(session);
        b.notice.committed.insert(session, actual + n);
        b.notice_sessions.insert(session);
        self.cache.insert(session, Some(actual + n));
        Ok(actual + 1)
    }

    fn stage_remember_answer(&mut self, session: SessionId, answer: AnswerWrite, b: &mut BatchState) -> Result<(), StoreError> {
        self.lookup(session)?.ok_or(StoreError::UnknownSession(session))?;
        b.batch.insert(answer.key, answer.record);
        b.writes += 1;
        b.answers += 1;
        // An expiry later in this batch must not remove the session under this answer.
        b.touched.insert(session);
        Ok(())
    }

    fn stage_set_status(&mut self, session: SessionId, status: SessionStatus, b: &mut BatchState) -> Result<(), StoreError> {
        self.lookup(session)?.ok_or(StoreError::UnknownSession(session))?;
        let mut meta = self.meta_for_update(session, b)?;
        meta.status = status;
        let record = layout::encode_meta(&meta).map_err(StoreError::InvalidAppend)?;
        b.batch.insert(&layout::meta_key(&session), record);
        b.writes += 1;
        b.staged_meta.insert(session, meta);
        b.touched.insert(session);
        Ok(())
    }

    fn stage_put_snapshot(
        &mut self,
        session: SessionId,
        seq: u64,
        schema_version: u32,
        record: Vec<u8>,
        b: &mut BatchState,
    ) -> Result<(), StoreError> {
        let latest = self.lookup(session)?.ok_or(StoreError::UnknownSession(session))?;
        if seq > latest {
            return Err(StoreError::InvalidAppend(format!(
                "snapshot of session {session} at seq {seq} is past the end of its stream (seq {latest})"
            )));
        }
        b.batch.insert(&layout::snapshot_key(&session, schema_version), record);
        b.writes += 1;
        b.touched.insert(session);
        Ok(())
    }

    fn stage_delete_snapshots(&mut self, session: Option<SessionId>, limit: usize, b: &mut BatchState) -> Result<usize, StoreError> {
        let prefix: Vec<u8> = match session {
            Some(s) => layout::snapshot_prefix(&s).to_vec(),
            None => vec![layout::SNAPSHOT_KIND],
        };
        let mut n = 0;
        for key in self.shared.tree.scan_prefix(prefix).keys().take(limit) {
            let key = key.map_err(|e| self.shared.sled_error(e))?;
            b.batch.remove(key);
            n += 1;
        }
        b.writes += n;
        Ok(n)
    }

    fn stage_expire(
        &mut self,
        candidates: Vec<SessionId>,
        policy: &RetentionPolicy,
        now_ms: u64,
        b: &mut BatchState,
    ) -> Result<Vec<SessionId>, StoreError> {
        let mut expired = Vec::new();
        for session in candidates {
            // Anything this batch did to the session is newer than the caller's view: not now.
            if b.touched.contains(&session) || self.lookup(session)?.is_none() {
                continue;
            }
            let Some(meta) = self.shared.meta_record(&session)? else { continue };
            let (_, last_time) = self.shared.latest_on_disk(&session)?;
            let last_activity = last_time.map_or(meta.created_ms, |t| t.max(meta.created_ms));
            if !is_due(policy, meta.status, last_activity, now_ms) {
                continue;
            }
            b.batch.remove(&layout::meta_key(&session));
            for key in self.shared.tree.scan_prefix(layout::snapshot_prefix(&session)).keys() {
                b.batch.remove(key.map_err(|e| self.shared.sled_error(e))?);
            }
            // Marks the events for deletion (done in bounded chunks by `Purge`, resumable after a crash).
            b.batch.insert(&layout::purge_key(&session), Vec::<u8>::new());
            b.writes += 1;
            b.touched.insert(session);
            b.notice.expired.insert(session);
            self.cache.insert(session, None);
            expired.push(session);
        }
        Ok(expired)
    }

    fn stage_purge(&mut self, session: SessionId, limit: usize, b: &mut BatchState) -> Result<(u64, bool), StoreError> {
        if self.lookup(session)?.is_some() {
            return Err(StoreError::Engine(format!("refusing to purge the events of live session {session}")));
        }
        let err = |e| self.shared.sled_error(e);
        if !self.shared.tree.contains_key(layout::purge_key(&session)).map_err(err)? {
            return Ok((0, true)); // nothing marked: nothing to delete
        }
        let mut n = 0u64;
        for key in self.shared.tree.scan_prefix(layout::event_prefix(&session)).keys().take(limit) {
            b.batch.remove(key.map_err(err)?);
            n += 1;
        }
        // Then its answers, in the same bounded chunks; the marker goes when both are gone.
        let mut answers = 0usize;
        for key in self.shared.tree.scan_prefix(layout::answer_prefix(&session)).keys().take(limit - n as usize) {
            b.batch.remove(key.map_err(err)?);
            answers += 1;
        }
        let done = n as usize + answers < limit;
        if done {
            b.batch.remove(&layout::purge_key(&session));
        }
        b.writes += n as usize + answers + usize::from(done);
        b.touched.insert(session);
        Ok((n, done))
    }
}
