//! The writer thread: the only code that writes segments or changes the index.
//!
//! As the sled backend's writer (decision 0102): it takes every queued operation (up to
//! `max_batch_ops`), validates them in arrival order against the index plus what this batch already
//! staged, and encodes all their records into ONE frame. It writes the frame with one positional
//! write at the end of the active segment, then, in durable mode, `fdatasync`s once, and only then
//! publishes the batch's changes to the index and completes every waiter (group commit). In
//! buffered mode it publishes and completes after the write and syncs on its interval.
//!
//! Between batches it creates the next segment ahead of need (so a write never opens a file),
//! deletes segments that hold no live data once everything written is synced, takes one bounded
//! step of compaction (copies live records of the oldest segment forward), and, every
//! `checkpoint_bytes` of log, writes an index checkpoint ([`super::checkpoint`]).
//!
//! A checkpoint is serialized here, under the index's read lock, at a synced place between batches
//! (the writer owns the index, so it cannot change meanwhile; readers are not held up). Writing and
//! fsyncing the file, the rename and the directory fsync happen on a short-lived thread, so the
//! group commit waits only for the serialization (measured in docs/performance.md). At most one
//! such thread runs; on close the writer writes the last checkpoint itself and waits for it.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::checkpoint::{self, Covers};
use super::frame::Header;
use super::index::{Change, Update};
use super::record::Body;
use super::record::{self, AnswerWrite};
use super::segment::{self, Pos};
use super::{Notice, Shared, frame};
use crate::layout::{self, MetaRecord};
use crate::{Durability, RetentionPolicy, SessionId, SessionStatus, StoreError};

pub(crate) type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// A metadata record is at most this long (format, status, time, two labels of at most 1024 bytes).
const MAX_META_LEN: usize = 14 + 2 * layout::MAX_LABEL_BYTES;

pub(crate) enum Op {
    Create {
        session: SessionId,
        meta: MetaRecord,
        record: Vec<u8>,
        reply: Reply<()>,
    },
    /// Returns the seq of the first appended event. The answer, if any, is in the same record.
    Append {
        session: SessionId,
        expected: u64,
        records: Vec<Vec<u8>>,
        /// Time of the last event: the session's last activity once it is written.
        last_time: u64,
        answer: Option<AnswerWrite>,
        reply: Reply<u64>,
    },
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
    /// Drops the snapshots of at most `limit` sessions; returns how many it dropped.
    DeleteSnapshots {
        session: Option<SessionId>,
        limit: usize,
        reply: Reply<usize>,
    },
    /// Expires those of `candidates` that are (still) due; returns them with their event counts.
    Expire {
        candidates: Vec<SessionId>,
        policy: RetentionPolicy,
        now_ms: u64,
        reply: Reply<Vec<(SessionId, u64)>>,
    },
    /// Replied once everything before it is durable and the housekeeping between batches is
    /// done (the next segment made, dead ones deleted, a compaction step, a checkpoint): until the
    /// next operation the writer leaves the directory alone, so a copy of it then is a consistent
    /// image.
    Flush {
        reply: Reply<()>,
    },
    /// Buffered mode's timer: sync if anything is unsynced.
    Tick,
    /// Write an index checkpoint now; replied once it is durable.
    Checkpoint {
        reply: Reply<()>,
    },
}

impl Op {
    /// The most bytes this operation's records can take in a frame.
    fn max_len(&self) -> usize {
        match self {
            Op::Create { record, .. } => record::bare_len(record.len()),
            Op::Append { records, answer, .. } => record::events_len(records, answer.as_ref()),
            Op::RememberAnswer { answer, .. } => record::answer_len(answer),
            Op::SetStatus { .. } => record::bare_len(MAX_META_LEN),
            Op::PutSnapshot { record, .. } => record::bare_len(record.len()),
            Op::DeleteSnapshots { limit, .. } => limit * record::bare_len(0),
            Op::Expire { candidates, .. } => candidates.len() * record::bare_len(0),
            Op::Flush { .. } | Op::Tick | Op::Checkpoint { .. } => 0,
        }
    }
}

/// Whether a session was already expired by the retention policy at `now_ms`.
pub(crate) fn is_due(policy: &RetentionPolicy, status: SessionStatus, last_activity_ms: u64, now_ms: u64) -> bool {
    let idle = now_ms.saturating_sub(last_activity_ms);
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    (status == SessionStatus::Ended && idle >= ms(policy.ended_after)) || idle >= ms(policy.idle_after)
}

/// A waiter to complete once its batch is written (and synced when that is required).
trait Complete: Send {
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

/// A session as this batch left it, ahead of the index.
enum Staged {
    Gone,
    Live { latest: u64, meta: Option<MetaRecord> },
}

/// One group commit being formed: its frame, the index changes it makes (at offsets in the frame),
/// and its waiters.
struct Batch {
    frame: Vec<u8>,
    /// Changes with `pos.offset` relative to the frame's start (its segment is known at write).
    updates: Vec<Update>,
    staged: HashMap<SessionId, Staged>,
    touched: HashSet<SessionId>,
    snapshots_staged: HashSet<SessionId>,
    snapshots_dropped: HashSet<SessionId>,
    notice: Notice,
    appends: u64,
    events: u64,
    answers: u64,
    force_flush: bool,
    tick: bool,
    done: Vec<Box<dyn Complete>>,
}

impl Batch {
    fn new() -> Self {
        Self {
            frame: frame::new_frame(4096),
            updates: Vec::new(),
            staged: HashMap::new(),
            touched: HashSet::new(),
            snapshots_staged: HashSet::new(),
            snapshots_dropped: HashSet::new(),
            notice: Notice::default(),
            appends: 0,
            events: 0,
            answers: 0,
            force_flush: false,
            tick: false,
            done: Vec::new(),
        }
    }

    fn push<T: Send + 'static>(&mut self, reply: Reply<T>, result: Result<T, StoreError>) {
        self.done.push(Box::new(Pending { reply, result }));
    }

    /// Adds a record (written by `put`, which returns its length) and the change it makes.
    fn record(&mut self, session: SessionId, change: Change, put: impl FnOnce(&mut Vec<u8>) -> usize) {
        let offset = self.frame.len() as u32;
        let len = put(&mut self.frame) as u32;
        self.updates.push(Update { session, pos: Pos { seg: 0, offset }, len, change });
        self.touched.insert(session);
    }
}

/// Where the writer continues: the active segment, the end of its data, and where its last frame
/// starts (`None`: it holds none).
pub(crate) struct Place {
    pub seg: u32,
    pub end: u64,
    pub last_frame: Option<u32>,
}

/// When checkpoints are due: every `every` bytes of log (0: only on close or request); `since`
/// bytes are not in any checkpoint yet. `ends_in`: the segment the newest checkpoint ends in.
/// Opening cannot use a checkpoint whose segment is gone, so deleting it makes one due at once.
pub(crate) struct Checkpoints {
    pub every: u64,
    pub since: u64,
    pub ends_in: Option<u32>,
}

pub(crate) struct Writer {
    shared: Arc<Shared>,
    rx: mpsc::Receiver<Op>,
    max_batch_ops: usize,
    segment_bytes: u64,
    active: File,
    active_seg: u32,
    /// End of the data in the active segment: where the next frame goes.
    end: u64,
    /// The segment created ahead of need.
    next: Option<(u32, File)>,
    /// Highest segment number created: the next is one more. (Only a number whose file held no
    /// data, deleted at open, is ever used again.)
    last_seg: u32,
    /// Written but not yet synced.
    dirty: bool,
    pending_notice: Notice,
    last_flush: Instant,
    /// Set when a write, sync or segment creation failed: nothing is acknowledged after that.
    failure: Option<(Option<io::ErrorKind>, String)>,
    /// An expiry may have left segments without live data.
    reclaim_due: bool,
    /// Where the last frame written to the active segment starts: a checkpoint names it, so that
    /// opening can check the frame is still there.
    last_frame: Option<u32>,
    checkpoints: Checkpoints,
    /// The thread writing the last checkpoint, if it may still run.
    checkpoint_thread: Option<JoinHandle<()>>,
    /// Callers of `checkpoint` waiting for the next one.
    checkpoint_waiters: Vec<Reply<()>>,
    /// Callers of `flush` waiting for the end of the batch's housekeeping.
    flush_waiters: Vec<Reply<()>>,
    compaction: Compaction,
}

/// Compaction's settings and progress (see [`Writer::compact_step`]).
pub(crate) struct Compaction {
    /// Compact the oldest sealed segment when its live bytes are at most this percentage of a
    /// segment; 0: never.
    pub below_percent: u32,
    /// Bytes of frames one step reads (at least one frame).
    pub step_bytes: u64,
    pub(crate) current: Option<Compacting>,
    /// A segment whose compaction found something it did not expect: not tried again (a warning
    /// says why); compaction stops behind it, since it goes oldest first.
    pub(crate) blocked: Option<u32>,
}

impl Compaction {
    pub(crate) fn new(below_percent: u32, step_bytes: u64) -> Self {
        Self { below_percent: below_percent.min(100), step_bytes: step_bytes.max(1), current: None, blocked: None }
    }
}

/// The segment being compacted: first read through once (`planned` false) to find each session's
/// bytes of the incarnation that is live, then read again and copied.
pub(crate) struct Compacting {
    seg: u32,
    /// The next frame to read.
    cursor: u64,
    planned: bool,
    /// Per session: where its last expiry in this segment ends (its records before are of an
    /// expired incarnation), and the bytes of its records after that.
    sessions: HashMap<SessionId, (u64, u64)>,
    /// Per session: bytes of its records after its last expiry that this pass has passed so far.
    passed: HashMap<SessionId, u64>,
    copied: u64,
    started: Instant,
}

impl Writer {
    pub(crate) fn new(
        shared: Arc<Shared>,
        rx: mpsc::Receiver<Op>,
        max_batch_ops: usize,
        segment_bytes: u64,
        place: Place,
        checkpoints: Checkpoints,
        compaction: Compaction,
    ) -> io::Result<Self> {
        let Place { seg: active_seg, end, last_frame } = place;
        let active = segment::open_rw(&shared.dir, active_seg)?;
        let mut writer = Self {
            shared,
            rx,
            max_batch_ops: max_batch_ops.max(1),
            segment_bytes,
            active,
            active_seg,
            end,
            next: None,
            last_seg: active_seg,
            dirty: false,
            pending_notice: Notice::default(),
            last_flush: Instant::now(),
            failure: None,
            reclaim_due: true,
            last_frame,
            checkpoints,
            checkpoint_thread: None,
            checkpoint_waiters: Vec::new(),
            flush_waiters: Vec::new(),
            compaction,
        };
        writer.create_next()?;
        Ok(writer)
    }

    pub(crate) fn run(mut self) {
        // Whatever way this thread ends (even a panic), waiters for a failure or followers must hear.
        struct CloseOnExit(Arc<Shared>);
        impl Drop for CloseOnExit {
            fn drop(&mut self) {
                self.0.closed.send_replace(true);
                self.0.notices.lock().unwrap_or_else(|p| p.into_inner()).take();
            }
        }
        let _close = CloseOnExit(self.shared.clone());
        let mut ops = Vec::with_capacity(self.max_batch_ops);
        let mut last_batch_len = 0;
        while let Some(first) = self.rx.blocking_recv() {
            ops.push(first);
            self.take_waiting(&mut ops);
            // The last commit was shared, so appenders are many and running (on a machine with
            // fewer cores than busy threads, some wait for a core this thread holds). Yield the
            // core once before committing, so that those already deciding can join this commit:
            // at saturation that makes commits about five times larger and this thread's CPU per
            // command half (docs/performance.md, "A commit that lets the appenders in"). No
            // wall-clock wait: with nothing else runnable the yield returns at once, and sporadic
            // appends (batches of one) never yield.
            if last_batch_len > 1 && ops.len() < self.max_batch_ops {
                std::thread::yield_now();
                self.take_waiting(&mut ops);
            }
            last_batch_len = ops.len();
            self.process(&mut ops);
            self.between_batches();
            if !self.flush_waiters.is_empty()
                && let Some(t) = self.checkpoint_thread.take()
            {
                let _ = t.join(); // it reports its own failure
            }
            for reply in std::mem::take(&mut self.flush_waiters) {
                let _ = reply.send(match self.failure {
                    Some(_) => Err(self.failure_error()),
                    None => Ok(()),
                });
            }
            if !self.checkpoint_waiters.is_empty() {
                let result = self.checkpoint(true).map_err(|e| e.to_string());
                for reply in self.checkpoint_waiters.drain(..) {
                    let _ = reply.send(result.clone().map_err(StoreError::Engine));
                }
            }
        }
        self.shutdown();
    }

    /// Adds the operations already queued, up to a batch.
    fn take_waiting(&mut self, ops: &mut Vec<Op>) {
        while ops.len() < self.max_batch_ops {
            match self.rx.try_recv() {
                Ok(op) => ops.push(op),
                Err(_) => break,
            }
        }
    }

    /// Stages the operations into as few frames as fit a segment (one, but for huge batches), and
    /// commits each.
    fn process(&mut self, ops: &mut Vec<Op>) {
        let max_frame = self.max_frame();
        let mut b = Batch::new();
        for op in ops.drain(..) {
            let need = op.max_len();
            if need > max_frame {
                self.refuse_too_large(op, need, max_frame, &mut b);
                continue;
            }
            if !frame::is_empty(&b.frame) && b.frame.len() + need > max_frame + frame::HEADER_LEN {
                self.commit(std::mem::replace(&mut b, Batch::new()));
                // A batch larger than a segment: the next one may be needed again.
                self.between_batches();
            }
            self.stage(op, &mut b);
        }
        self.commit(b);
    }

    /// Most bytes of records one frame may hold: it must fit an empty segment.
    fn max_frame(&self) -> usize {
        usize::try_from(self.segment_bytes).unwrap_or(usize::MAX) - frame::HEADER_LEN
    }

    fn refuse_too_large(&mut self, op: Op, need: usize, max: usize, b: &mut Batch) {
        let e = || StoreError::InvalidAppend(format!("the write takes {need} bytes; a segment holds at most {max}"));
        match op {
            Op::Create { reply, .. } | Op::RememberAnswer { reply, .. } | Op::SetStatus { reply, .. } | Op::PutSnapshot { reply, .. } => {
                b.push(reply, Err(e()))
            }
            Op::Append { reply, .. } => b.push(reply, Err(e())),
            Op::DeleteSnapshots { reply, .. } => b.push(reply, Err(e())),
            Op::Expire { reply, .. } => b.push(reply, Err(e())),
            Op::Flush { reply } | Op::Checkpoint { reply } => b.push(reply, Ok(())),
            Op::Tick => {}
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
        self.shared.closed.send_replace(true);
    }

    fn io_error(&self, source: io::Error) -> StoreError {
        StoreError::Io { dir: self.shared.dir.clone(), source }
    }

    /// Writes the batch's frame, syncs it when the mode says so, publishes it, and completes its
    /// waiters.
    fn commit(&mut self, mut b: Batch) {
        if self.failure.is_some() {
            return self.complete(b.done, Some(self.failure_error()));
        }
        self.shared.stats.batches.fetch_add(1, Relaxed);
        let written = if frame::is_empty(&b.frame) { Ok(None) } else { self.write(&mut b.frame).map(Some) };
        let result = written.and_then(|at| {
            if self.should_sync(&b) {
                self.sync()?;
            }
            Ok(at)
        });
        match result {
            Ok(at) => {
                if let Some(at) = at {
                    self.publish(&mut b, at);
                }
                if !self.dirty {
                    self.announce();
                }
                self.complete(b.done, None);
            }
            Err(e) => {
                self.fail(&e);
                self.complete(b.done, Some(self.failure_error()));
            }
        }
    }

    fn complete(&self, done: Vec<Box<dyn Complete>>, failure: Option<StoreError>) {
        for d in done {
            let failure = failure.as_ref().map(|_| self.failure_error());
            d.complete(failure);
        }
    }

    fn should_sync(&self, b: &Batch) -> bool {
        match self.shared.durability {
            Durability::Durable => self.dirty,
            Durability::Buffered { interval_ms } => {
                self.dirty && (b.force_flush || b.tick || self.last_flush.elapsed() >= Duration::from_millis(interval_ms))
            }
        }
    }

    /// Seals and writes a frame at the end of the data (in the next segment if it does not fit
    /// this one); returns where it went.
    fn write(&mut self, frame_bytes: &mut [u8]) -> Result<Pos, StoreError> {
        frame::seal(frame_bytes);
        let len = frame_bytes.len() as u64;
        if self.end > 0 && self.end + len > self.segment_bytes {
            self.roll()?;
        }
        let at = Pos { seg: self.active_seg, offset: self.end as u32 };
        self.active.write_all_at(frame_bytes, self.end).map_err(|e| self.io_error(e))?;
        self.shared.files.add_frame(at);
        self.end += len;
        self.dirty = true;
        self.last_frame = Some(at.offset);
        self.checkpoints.since += len;
        Ok(at)
    }

    /// Moves to the segment created ahead. The full one is synced first: a later segment's data
    /// must never be on disk without all of the earlier one's (recovery cuts torn writes only at
    /// the tail).
    fn roll(&mut self) -> Result<(), StoreError> {
        if self.dirty {
            self.sync()?;
        }
        let (seg, file) = self.next.take().ok_or_else(|| StoreError::Engine("no next segment to write into".into()))?;
        self.active = file;
        self.active_seg = seg;
        self.end = 0;
        self.last_frame = None;
        self.reclaim_due = true; // the full segment may already be dead
        Ok(())
    }

    /// `fdatasync` of the active segment: its size never changes (preallocated), so only the data
    /// and the written extents are synced.
    fn sync(&mut self) -> Result<(), StoreError> {
        let started = Instant::now();
        self.active.sync_data().map_err(|e| self.io_error(e))?;
        self.dirty = false;
        self.last_flush = Instant::now();
        let stats = &self.shared.stats;
        stats.flushes.fetch_add(1, Relaxed);
        stats.flush_seconds.observe((self.last_flush - started).as_secs_f64());
        let mark = Pos { seg: self.active_seg, offset: self.end as u32 };
        self.shared.durable.store(mark.packed(), SeqCst);
        Ok(())
    }

    /// Makes the batch's changes visible to readers, at the place its frame was written.
    fn publish(&mut self, b: &mut Batch, at: Pos) {
        let mut index = self.shared.index.write().unwrap_or_else(|p| p.into_inner());
        for mut u in b.updates.drain(..) {
            // Staged offsets count from the frame's start, header included.
            u.pos = Pos { seg: at.seg, offset: at.offset + u.pos.offset };
            self.reclaim_due |= matches!(u.change, Change::Expiry);
            if let Err(anomaly) = index.apply(u) {
                // The batch was validated against the index: this is a bug, not bad data.
                tracing::error!(?anomaly, "the segment log's writer staged a change its index refuses");
            }
        }
        drop(index);
        let stats = &self.shared.stats;
        stats.appends.fetch_add(b.appends, Relaxed);
        if b.appends > 0 {
            stats.batch_appends.observe(b.appends as f64);
        }
        stats.events.fetch_add(b.events, Relaxed);
        stats.answers.fetch_add(b.answers, Relaxed);
        self.pending_notice.merge(std::mem::take(&mut b.notice));
    }

    /// Tells followers what is now durable.
    fn announce(&mut self) {
        let notice = std::mem::take(&mut self.pending_notice);
        if !notice.is_empty()
            && let Some(tx) = self.shared.notices.lock().unwrap_or_else(|p| p.into_inner()).as_ref()
        {
            let _ = tx.send(Arc::new(notice)); // Err only means no follower is listening.
        }
    }

    /// Off the hot path: the next segment, and deleting dead ones.
    fn between_batches(&mut self) {
        if self.failure.is_some() {
            return;
        }
        if self.next.is_none()
            && let Err(e) = self.create_next()
        {
            let reason =
                format!("cannot create the next segment file {}: {e}", segment::path(&self.shared.dir, self.last_seg + 1).display());
            self.fail(&StoreError::Io { dir: self.shared.dir.clone(), source: io::Error::new(e.kind(), reason) });
            return;
        }
        // Only once everything written is synced: the tombstones that make a segment dead must be
        // durable before the segment goes.
        if self.reclaim_due && !self.dirty {
            self.reclaim();
        }
        self.compact_step();
        let every = self.checkpoints.every;
        if every > 0
            && self.checkpoints.since >= every
            && let Err(e) = self.checkpoint(false)
        {
            tracing::warn!(dir = %self.shared.dir.display(), error = %e, "cannot write an index checkpoint; opening will scan more");
        }
    }

    /// Writes an index checkpoint at the end of the data, after syncing it: on this thread and
    /// waited for when `wait`, else by a thread of its own (skipped, and tried again after the next
    /// batch, while the previous one still runs). `Err` only for a failure of the checkpoint itself;
    /// a sync failure fails the log.
    fn checkpoint(&mut self, wait: bool) -> Result<(), StoreError> {
        if self.failure.is_some() {
            return Err(self.failure_error());
        }
        match self.checkpoint_thread.take() {
            Some(t) if !wait && !t.is_finished() => {
                self.checkpoint_thread = Some(t);
                return Ok(());
            }
            Some(t) => {
                let _ = t.join(); // it reports its own failure
            }
            None => {}
        }
        if self.dirty {
            // Buffered mode: a checkpoint must never cover what a crash could still take back.
            if let Err(e) = self.sync() {
                self.fail(&e);
                return Err(self.failure_error());
            }
            self.announce();
        }
        // A segment without a frame yet (a new log, or just rolled): nothing to name; the
        // previous checkpoint covers everything before it.
        let Some(last_frame) = self.last_frame else { return Ok(()) };
        let covers = Covers { end: Pos { seg: self.active_seg, offset: self.end as u32 }, last_frame };
        let started = Instant::now();
        let bytes = {
            let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
            checkpoint::encode(&index, covers).map_err(StoreError::Engine)?
        };
        let serialized = started.elapsed();
        self.checkpoints.since = 0;
        self.checkpoints.ends_in = Some(covers.end.seg);
        let dir = self.shared.dir.clone();
        let write = move || {
            let result = checkpoint::write(&dir, covers.end, &bytes);
            match &result {
                Ok(()) => tracing::debug!(
                    dir = %dir.display(),
                    segment = covers.end.seg,
                    offset = covers.end.offset,
                    bytes = bytes.len(),
                    serialize_ms = serialized.as_secs_f64() * 1e3,
                    "index checkpoint written"
                ),
                Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "cannot write an index checkpoint; opening will scan more"),
            }
            result
        };
        if wait {
            return write().map_err(|e| self.io_error(e));
        }
        let spawned = std::thread::Builder::new().name("vestibule-segment-checkpoint".into()).spawn(move || {
            let _ = write();
        });
        match spawned {
            Ok(thread) => self.checkpoint_thread = Some(thread),
            Err(e) => tracing::warn!(error = %e, "cannot start the index checkpoint's thread; will retry"),
        }
        Ok(())
    }

    fn create_next(&mut self) -> io::Result<()> {
        let seg = self.last_seg + 1;
        let file = segment::create(&self.shared.dir, seg, self.segment_bytes)?;
        self.shared.index.write().unwrap_or_else(|p| p.into_inner()).add_segment(seg);
        self.last_seg = seg;
        self.next = Some((seg, file));
        Ok(())
    }

    /// Deletes the segments no live record needs (not the active one, nor the next): dead ones,
    /// and those compaction emptied ([`Self::compact_step`]).
    fn reclaim(&mut self) {
        let keep = [self.active_seg, self.next.as_ref().map_or(self.active_seg, |n| n.0)];
        let dead = self.shared.index.read().unwrap_or_else(|p| p.into_inner()).dead_segments(&keep);
        if dead.is_empty() {
            self.reclaim_due = false;
            return;
        }
        let mut deleted = Vec::new();
        for seg in dead {
            self.shared.files.forget(seg);
            match std::fs::remove_file(segment::path(&self.shared.dir, seg)) {
                Ok(()) => deleted.push(seg),
                Err(e) if e.kind() == io::ErrorKind::NotFound => deleted.push(seg),
                Err(e) => tracing::warn!(segment = seg, error = %e, "cannot delete a segment without live data; will retry"),
            }
        }
        // The deletions must be durable before the tombstones that only they needed can die.
        if let Err(e) = segment::sync_dir(&self.shared.dir) {
            tracing::warn!(error = %e, "cannot sync the event log's directory after deleting segments; will retry");
            return;
        }
        tracing::debug!(?deleted, "deleted segments without live data");
        self.shared.index.write().unwrap_or_else(|p| p.into_inner()).forget_segments(&deleted);
        if self.checkpoints.ends_in.is_some_and(|seg| deleted.contains(&seg)) {
            self.checkpoints.since = self.checkpoints.since.max(self.checkpoints.every);
        }
    }

    /// One bounded step of compaction (decision 0105), between batches: when the oldest segment
    /// (never the active one, nor the next) is due ([`Self::start_compaction`]), its live
    /// records are copied to the head of the log as COPY records ([`record::put_copy`]), at most
    /// about `step_bytes` of it read per step. Each frame of copies is written and synced before
    /// the index points at the copies; once none of the segment is live, `reclaim` deletes it
    /// (after everything is synced, as always).
    ///
    /// Oldest first, always: recovery relies on it. A copy whose original's segment is gone was
    /// made from the oldest segment there was, so its record came before every segment still on
    /// disk, and a full scan applies such copies first (`recover::Scan::early_copies`).
    ///
    /// Each session's records are copied in the order they are in the segment, a step's copies of
    /// a frame synced together, so what was already copied (before a crash too) is a prefix of the
    /// session's records there: its length is what the session had there minus what it still has.
    fn compact_step(&mut self) {
        if self.compaction.below_percent == 0 || self.failure.is_some() {
            return;
        }
        if self.compaction.current.is_none() {
            self.compaction.current = self.start_compaction();
        }
        let Some(mut c) = self.compaction.current.take() else { return };
        let live = self.shared.index.read().unwrap_or_else(|p| p.into_inner()).live_in(c.seg);
        if live.is_none_or(|n| n == 0) {
            // Expiries emptied it meanwhile (or reclaim already deleted it): nothing left to copy.
            self.reclaim_due = true;
            return;
        }
        let (started, copied) = (Instant::now(), c.copied);
        let result = self.compact_some(&mut c);
        let copied = c.copied - copied;
        match result {
            Ok(false) => self.compaction.current = Some(c),
            Ok(true) => {
                self.shared.stats.compaction.segment_done();
                self.reclaim_due = true;
                if !self.dirty {
                    self.reclaim();
                }
                let left = self.shared.index.read().unwrap_or_else(|p| p.into_inner()).live_in(c.seg);
                tracing::debug!(
                    segment = c.seg,
                    copied = c.copied,
                    ms = c.started.elapsed().as_secs_f64() * 1e3,
                    left,
                    "compacted a segment"
                );
                if left.is_some_and(|n| n > 0) {
                    tracing::warn!(segment = c.seg, live = left, "a compacted segment still holds live bytes; compaction stops behind it");
                    self.compaction.blocked = Some(c.seg);
                }
            }
            Err(reason) => {
                if self.failure.is_none() {
                    tracing::warn!(segment = c.seg, %reason, "cannot compact a segment; compaction stops behind it");
                }
                self.compaction.blocked = Some(c.seg);
            }
        }
        // The deletion of a finished segment included: all of it holds up the next batch.
        self.shared.stats.compaction.step(started.elapsed(), copied);
    }

    /// The oldest segment, if it is due: when at most `below_percent` of it is live, or of all the
    /// sealed segments together (then the oldest goes even if it is mostly live, so that a segment
    /// full of copies never stops compaction behind it: the sealed segments take at most about
    /// 100 / `below_percent` times their live bytes).
    fn start_compaction(&self) -> Option<Compacting> {
        let (seg, live, sealed, sealed_live) = {
            let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
            let (seg, live) = index.oldest()?;
            let sealed: Vec<u64> = index.segments().into_iter().filter(|&s| s < self.active_seg).filter_map(|s| index.live_in(s)).collect();
            (seg, live, sealed.len() as u128, sealed.iter().map(|&n| u128::from(n)).sum::<u128>())
        };
        let next = self.next.as_ref().map_or(self.active_seg, |n| n.0);
        if seg >= self.active_seg || seg == next || live == 0 || self.compaction.blocked == Some(seg) {
            return None;
        }
        let limit = u128::from(self.compaction.below_percent) * u128::from(self.segment_bytes);
        if u128::from(live) * 100 > limit && sealed_live * 100 > limit * sealed {
            return None;
        }
        let (sessions, passed) = (HashMap::new(), HashMap::new());
        Some(Compacting { seg, cursor: 0, planned: false, sessions, passed, copied: 0, started: Instant::now() })
    }

    /// Reads about `step_bytes` of the segment (whole frames); in the second pass, copies what is
    /// live. `Ok(true)`: the segment is done.
    fn compact_some(&mut self, c: &mut Compacting) -> Result<bool, String> {
        let max_frame = self.max_frame();
        let mut out = vec![Batch::new()];
        let mut read = 0u64;
        let mut pending: HashMap<SessionId, u64> = HashMap::new();
        let done = loop {
            if read >= self.compaction.step_bytes {
                break false;
            }
            let Some(records) = read_frame_at(&self.shared.files, c.seg, c.cursor)? else {
                if c.planned {
                    break true;
                }
                c.planned = true;
                c.cursor = 0;
                return Ok(false);
            };
            let base = c.cursor + frame::HEADER_LEN as u64;
            let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
            for raw in record::split(&records) {
                let raw = raw.map_err(|(at, reason)| format!("offset {}: {reason}", base + at as u64))?;
                let place = base + raw.offset as u64;
                let session = raw.body.get(..SessionId::LEN).and_then(|b| b.try_into().ok()).map(SessionId::from_bytes);
                let session = session.ok_or_else(|| format!("offset {place}: a record without a session"))?;
                let len = raw.len as u64;
                if !c.planned {
                    let e = c.sessions.entry(session).or_insert((0, 0));
                    if raw.kind == record::EXPIRY {
                        *e = (place + len, 0);
                    } else {
                        e.1 += len;
                    }
                    continue;
                }
                let Some(&(after, total)) = c.sessions.get(&session) else { return Err(format!("offset {place}: not seen before")) };
                if raw.kind == record::EXPIRY || place < after {
                    continue;
                }
                let Some(s) = index.get(&session) else { continue };
                let remaining = s.bytes_in(c.seg);
                let pend = pending.get(&session).copied().unwrap_or(0);
                let passed = c.passed.entry(session).or_insert(0);
                let before = *passed;
                *passed += len;
                // What of this session was copied already (this step's copies too) is a prefix.
                let moved =
                    total.checked_sub(remaining).ok_or_else(|| format!("session {session} has more bytes here than it wrote"))? + pend;
                if before + len <= moved {
                    // Counted as copied (before a restart) because what was copied of a session
                    // is a prefix of its records here. A log whose copies broke that (a copy of a
                    // later record first) would make this skip a record never copied, and the
                    // segment's deletion lose it: where the index shows the record still here,
                    // compaction stops instead.
                    let held = if raw.kind == record::COPY { place + record::COPY_PREFIX as u64 } else { place };
                    let held = Pos { seg: c.seg, offset: held as u32 };
                    let (seq, answer) = keys_of(&index, raw.kind, raw.body).map_err(|r| format!("offset {place}: {r}"))?;
                    if s.holds(held, seq, answer) {
                        return Err(format!("offset {place}: session {session}'s record counts as copied, but the index holds it here"));
                    }
                    continue;
                }
                if before < moved {
                    return Err(format!("offset {place}: session {session}'s copied bytes end inside a record"));
                }
                let here = Pos { seg: c.seg, offset: place as u32 };
                let (from, origin, kind, whole, body) = if raw.kind == record::COPY {
                    let (_, decoded) = record::decode(raw.kind, raw.body).map_err(|r| format!("offset {place}: {r}"))?;
                    let Body::Copy(cp) = decoded else { unreachable!("a COPY record decodes as a copy") };
                    let inner = Pos { seg: c.seg, offset: (place + record::COPY_PREFIX as u64) as u32 };
                    (inner, cp.origin, cp.kind, cp.whole, cp.body)
                } else {
                    let whole = &records[raw.offset..raw.offset + raw.len];
                    (here, here, raw.kind, whole, raw.body)
                };
                let (seq, answer) = keys_of(&index, kind, body).map_err(|r| format!("offset {place}: {r}"))?;
                let change = Change::Moved { from, released: len, seq, answer };
                let need = record::COPY_PREFIX + whole.len();
                let b = out.last_mut().expect("at least one frame");
                if !frame::is_empty(&b.frame) && b.frame.len() + need > max_frame + frame::HEADER_LEN {
                    out.push(Batch::new());
                }
                let b = out.last_mut().expect("at least one frame");
                b.record(session, change, |o| record::put_copy(o, &session, from, len as u32, origin, whole));
                *pending.entry(session).or_insert(0) += len;
                c.copied += len;
            }
            drop(index);
            c.cursor = base + records.len() as u64;
            read += frame::HEADER_LEN as u64 + records.len() as u64;
        };
        for mut b in out {
            if frame::is_empty(&b.frame) {
                continue;
            }
            // Written and synced before the index points at the copies.
            let written = self.write(&mut b.frame).and_then(|at| self.sync().map(|()| at));
            let at = match written {
                Ok(at) => at,
                Err(e) => {
                    self.fail(&e);
                    return Err(e.to_string());
                }
            };
            self.publish(&mut b, at);
            self.announce();
            if self.next.is_none()
                && let Err(e) = self.create_next()
            {
                let e = self.io_error(e);
                self.fail(&e);
                return Err(e.to_string());
            }
        }
        Ok(done)
    }

    /// The queue is closed (the log was dropped): sync what is left, and checkpoint it so that the
    /// next open scans nothing.
    fn shutdown(mut self) {
        if self.failure.is_none()
            && self.dirty
            && let Err(e) = self.sync()
        {
            tracing::error!(dir = %self.shared.dir.display(), error = %e, "final sync of the event log failed");
        }
        self.announce();
        if self.failure.is_none()
            && self.checkpoints.since > 0
            && let Err(e) = self.checkpoint(true)
        {
            tracing::warn!(dir = %self.shared.dir.display(), error = %e, "cannot write the index checkpoint at close");
        }
        if let Some(thread) = self.checkpoint_thread.take() {
            let _ = thread.join();
        }
    }

    // -----------------------------------------------------------------------------------------
    // Validation and staging, in arrival order
    // -----------------------------------------------------------------------------------------

    /// The latest seq of `session` as of everything staged so far, or `None` if it does not exist.
    fn lookup(&self, session: SessionId, b: &Batch) -> Option<u64> {
        match b.staged.get(&session) {
            Some(Staged::Gone) => None,
            Some(Staged::Live { latest, .. }) => Some(*latest),
            None => self.shared.index.read().unwrap_or_else(|p| p.into_inner()).get(&session).map(|s| s.latest_seq),
        }
    }

    fn stage(&mut self, op: Op, b: &mut Batch) {
        if self.failure.is_some() {
            // `commit` completes these with the failure.
            return self.refuse_failed(op, b);
        }
        match op {
            Op::Create { session, meta, record, reply } => {
                let r = self.stage_create(session, meta, &record, b);
                b.push(reply, r);
            }
            Op::Append { session, expected, records, last_time, answer, reply } => {
                let r = self.stage_append(session, expected, &records, last_time, answer.as_ref(), b);
                b.push(reply, r);
            }
            Op::RememberAnswer { session, answer, reply } => {
                let r = self.stage_remember_answer(session, &answer, b);
                b.push(reply, r);
            }
            Op::SetStatus { session, status, reply } => {
                let r = self.stage_set_status(session, status, b);
                b.push(reply, r);
            }
            Op::PutSnapshot { session, seq, schema_version, record, reply } => {
                let r = self.stage_put_snapshot(session, seq, schema_version, &record, b);
                b.push(reply, r);
            }
            Op::DeleteSnapshots { session, limit, reply } => {
                let r = Ok(self.stage_delete_snapshots(session, limit, b));
                b.push(reply, r);
            }
            Op::Expire { candidates, policy, now_ms, reply } => {
                let r = Ok(self.stage_expire(candidates, &policy, now_ms, b));
                b.push(reply, r);
            }
            Op::Flush { reply } => {
                b.force_flush = true;
                self.flush_waiters.push(reply);
            }
            Op::Tick => b.tick = true,
            Op::Checkpoint { reply } => self.checkpoint_waiters.push(reply),
        }
    }

    fn refuse_failed(&self, op: Op, b: &mut Batch) {
        match op {
            Op::Create { reply, .. }
            | Op::SetStatus { reply, .. }
            | Op::PutSnapshot { reply, .. }
            | Op::RememberAnswer { reply, .. }
            | Op::Flush { reply }
            | Op::Checkpoint { reply } => b.push(reply, Ok(())),
            Op::Append { reply, .. } => b.push(reply, Ok(0)),
            Op::DeleteSnapshots { reply, .. } => b.push(reply, Ok(0)),
            Op::Expire { reply, .. } => b.push(reply, Ok(Vec::new())),
            Op::Tick => {}
        }
    }

    fn stage_create(&mut self, session: SessionId, meta: MetaRecord, record: &[u8], b: &mut Batch) -> Result<(), StoreError> {
        if self.lookup(session, b).is_some() {
            return Err(StoreError::SessionExists(session));
        }
        b.record(session, Change::Create(meta.clone()), |out| record::put_meta(out, record::CREATE, &session, record));
        b.staged.insert(session, Staged::Live { latest: 0, meta: Some(meta) });
        // `create_session` is durable when it resolves, in buffered mode too.
        b.force_flush = true;
        Ok(())
    }

    fn stage_append(
        &mut self,
        session: SessionId,
        expected: u64,
        records: &[Vec<u8>],
        last_time: u64,
        answer: Option<&AnswerWrite>,
        b: &mut Batch,
    ) -> Result<u64, StoreError> {
        let actual = self.lookup(session, b).ok_or(StoreError::UnknownSession(session))?;
        if actual != expected {
            return Err(StoreError::Conflict { session, expected, actual });
        }
        let n = records.len() as u64;
        let hash = answer.map(|a| self.shared.index.read().unwrap_or_else(|p| p.into_inner()).hash(&a.command_id));
        let change = Change::Events { first_seq: actual + 1, count: n, last_time: Some(last_time), answer: hash };
        b.record(session, change, |out| record::put_events(out, &session, actual + 1, records, answer));
        let meta = match b.staged.remove(&session) {
            Some(Staged::Live { meta, .. }) => meta,
            _ => None,
        };
        b.staged.insert(session, Staged::Live { latest: actual + n, meta });
        b.appends += 1;
        b.events += n;
        b.answers += u64::from(answer.is_some());
        b.notice.committed.insert(session, actual + n);
        Ok(actual + 1)
    }

    fn stage_remember_answer(&mut self, session: SessionId, answer: &AnswerWrite, b: &mut Batch) -> Result<(), StoreError> {
        self.lookup(session, b).ok_or(StoreError::UnknownSession(session))?;
        let hash = self.shared.index.read().unwrap_or_else(|p| p.into_inner()).hash(&answer.command_id);
        b.record(session, Change::Answer(hash), |out| record::put_answer(out, &session, answer));
        b.answers += 1;
        Ok(())
    }

    fn stage_set_status(&mut self, session: SessionId, status: SessionStatus, b: &mut Batch) -> Result<(), StoreError> {
        let latest = self.lookup(session, b).ok_or(StoreError::UnknownSession(session))?;
        let staged_meta = match b.staged.get(&session) {
            Some(Staged::Live { meta: Some(m), .. }) => Some(m.clone()),
            _ => None,
        };
        let mut meta = match staged_meta {
            Some(m) => m,
            None => {
                let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
                index.get(&session).map(|s| s.meta.clone()).ok_or(StoreError::UnknownSession(session))?
            }
        };
        meta.status = status;
        let encoded = layout::encode_meta(&meta).map_err(StoreError::InvalidAppend)?;
        b.record(session, Change::Status(status), |out| record::put_meta(out, record::STATUS, &session, &encoded));
        b.staged.insert(session, Staged::Live { latest, meta: Some(meta) });
        Ok(())
    }

    fn stage_put_snapshot(&mut self, session: SessionId, seq: u64, version: u32, record: &[u8], b: &mut Batch) -> Result<(), StoreError> {
        let latest = self.lookup(session, b).ok_or(StoreError::UnknownSession(session))?;
        if seq > latest {
            return Err(StoreError::InvalidAppend(format!(
                "snapshot of session {session} at seq {seq} is past the end of its stream (seq {latest})"
            )));
        }
        b.record(session, Change::Snapshot(Some(version)), |out| record::put_snapshot(out, &session, record));
        b.snapshots_staged.insert(session);
        b.snapshots_dropped.remove(&session);
        Ok(())
    }

    fn stage_delete_snapshots(&mut self, session: Option<SessionId>, limit: usize, b: &mut Batch) -> usize {
        let targets: Vec<SessionId> = match session {
            Some(s) => vec![s],
            None => {
                let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
                let stored = index.sessions_after(None).filter(|(_, s)| !s.snapshots.is_empty()).map(|(id, _)| *id);
                stored.chain(b.snapshots_staged.iter().copied()).collect()
            }
        };
        let mut n = 0;
        for s in targets {
            if n >= limit {
                break;
            }
            if b.snapshots_dropped.contains(&s) || self.lookup(s, b).is_none() || !self.has_snapshots(s, b) {
                continue;
            }
            b.record(s, Change::DropSnapshots, |out| record::put_bare(out, record::DROP_SNAPSHOTS, &s));
            b.snapshots_dropped.insert(s);
            b.snapshots_staged.remove(&s);
            n += 1;
        }
        n
    }

    fn has_snapshots(&self, session: SessionId, b: &Batch) -> bool {
        b.snapshots_staged.contains(&session)
            || self.shared.index.read().unwrap_or_else(|p| p.into_inner()).get(&session).is_some_and(|s| !s.snapshots.is_empty())
    }

    fn stage_expire(&mut self, candidates: Vec<SessionId>, policy: &RetentionPolicy, now_ms: u64, b: &mut Batch) -> Vec<(SessionId, u64)> {
        let mut expired = Vec::new();
        for session in candidates {
            // Anything this batch did to the session is newer than the caller's view: not now.
            if b.touched.contains(&session) {
                continue;
            }
            let due = {
                let index = self.shared.index.read().unwrap_or_else(|p| p.into_inner());
                index.get(&session).and_then(|s| is_due(policy, s.meta.status, s.last_activity_ms, now_ms).then_some(s.latest_seq))
            };
            let Some(events) = due else { continue };
            b.record(session, Change::Expiry, |out| record::put_bare(out, record::EXPIRY, &session));
            b.staged.insert(session, Staged::Gone);
            b.notice.expired.insert(session);
            expired.push((session, events));
        }
        expired
    }
}

/// The records of the frame at `at` of a sealed segment, read through the readers' bounded set of
/// descriptors (compaction opens none of its own); `None` at the end of its data.
/// What finds a record's place in the index (see [`Change::Moved`]): the first seq of the events it
/// holds and the hash of the command id of the answer it holds. A COPY record is read through to
/// the record it carries.
fn keys_of(index: &super::index::Index, kind: u8, body: &[u8]) -> Result<(Option<u64>, Option<u64>), String> {
    Ok(match record::decode(kind, body)?.1 {
        Body::Copy(cp) => return keys_of(index, cp.kind, cp.body),
        Body::Events(e) => (Some(e.first_seq), e.answer.map(|(id, _)| index.hash(id))),
        Body::Answer { command_id, .. } => (None, Some(index.hash(command_id))),
        _ => (None, None),
    })
}

fn read_frame_at(files: &segment::ReadFiles, seg: u32, at: u64) -> Result<Option<Vec<u8>>, String> {
    let place = |offset: u64| Pos { seg, offset: offset as u32 };
    let mut h = [0u8; frame::HEADER_LEN];
    match files.read_at(place(at), &mut h) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(format!("offset {at}: {e}")),
    }
    let header = Header::parse(&h);
    if header.is_end() {
        return Ok(None);
    }
    let mut records = vec![0u8; header.len as usize];
    files.read_at(place(at + frame::HEADER_LEN as u64), &mut records).map_err(|e| format!("offset {at}: {e}"))?;
    if !header.matches(&records) {
        return Err(format!("the CRC of the frame at offset {at} does not match"));
    }
    Ok(Some(records))
}
