//! Readers: places from the index (under its read lock, released before any I/O), records by
//! `pread`, then the sled layout's decoders and the upcaster.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

use futures_util::StreamExt;
use tokio::sync::broadcast;

use super::record::{self, Body};
use super::segment::Pos;
use super::{Notice, Shared};
use crate::{CommandAnswer, Envelope, EventStream, SessionId, Snapshot, StoreError, layout};

/// Events read per step by `stream` and `follow`.
const CHUNK: usize = 1024;
/// No record is larger than a segment, and segments are at most 1 GiB: a longer length is garbage.
const MAX_RECORD: usize = 1 << 30;

/// Why a record could not be read.
enum ReadError {
    Io(io::Error),
    Bad(String),
}

impl Shared {
    fn exists(&self, session: &SessionId) -> bool {
        self.index.read().unwrap_or_else(|p| p.into_inner()).get(session).is_some()
    }

    /// The kind and body of the record at `pos`.
    fn read_record(&self, pos: Pos) -> Result<(u8, Vec<u8>), ReadError> {
        let mut header = [0u8; record::HEADER_LEN];
        self.files.read_at(pos, &mut header).map_err(ReadError::Io)?;
        let (kind, len) = record::parse_header(&header).ok_or_else(|| ReadError::Bad("short header".into()))?;
        if len > MAX_RECORD {
            return Err(ReadError::Bad(format!("a record length of {len} bytes")));
        }
        let mut body = vec![0u8; len];
        let at = Pos { seg: pos.seg, offset: pos.offset + record::HEADER_LEN as u32 };
        self.files.read_at(at, &mut body).map_err(ReadError::Io)?;
        Ok((kind, body))
    }

    /// A read of one of `session`'s records failed: if the session was expired meanwhile (and its
    /// segment deleted) that is what the caller hears; otherwise the record is named.
    fn read_failure(&self, session: SessionId, seq: u64, pos: Pos, e: ReadError) -> StoreError {
        if !self.exists(&session) {
            return StoreError::UnknownSession(session);
        }
        match e {
            ReadError::Io(source) => StoreError::Io { dir: self.dir.clone(), source },
            ReadError::Bad(reason) => {
                StoreError::Corrupt { session, seq, reason: format!("segment {} offset {}: {reason}", pos.seg, pos.offset) }
            }
        }
    }

    /// Up to `limit` events with `from <= seq <= to`, decoded and upcast; with `durable_before`, only
    /// those written before that place.
    /// As [`Self::read_events_once`], looked up again when a segment is not found: compaction
    /// moved the records and deleted the segment between the look-up and the read.
    pub(super) fn read_events(
        &self,
        session: SessionId,
        from: u64,
        to: u64,
        limit: usize,
        durable_before: Option<Pos>,
    ) -> Result<Vec<Envelope>, StoreError> {
        retry_moved(|| self.read_events_once(session, from, to, limit, durable_before))
    }

    fn read_events_once(
        &self,
        session: SessionId,
        from: u64,
        to: u64,
        limit: usize,
        durable_before: Option<Pos>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let from = from.max(1);
        let (extents, _) =
            self.index.read().unwrap_or_else(|p| p.into_inner()).extents(&session, from, to).ok_or(StoreError::UnknownSession(session))?;
        let mut out = Vec::new();
        for extent in extents {
            if out.len() >= limit || durable_before.is_some_and(|mark| extent.pos >= mark) {
                break;
            }
            let (kind, body) = self.read_record(extent.pos).map_err(|e| self.read_failure(session, extent.first_seq, extent.pos, e))?;
            let corrupt = |reason: String| StoreError::Corrupt {
                session,
                seq: extent.first_seq,
                reason: format!("segment {} offset {}: {reason}", extent.pos.seg, extent.pos.offset),
            };
            let events = match record::decode(kind, &body).map_err(&corrupt)? {
                (s, Body::Events(e)) if s == session && e.first_seq == extent.first_seq => e,
                _ => return Err(corrupt("not this session's events record".into())),
            };
            for (k, bytes) in events.records.into_iter().enumerate() {
                let seq = events.first_seq.saturating_add(k as u64);
                if seq < from {
                    continue;
                }
                if seq > to || out.len() >= limit {
                    break;
                }
                out.push(self.upcast(layout::decode_event(session, seq, bytes)?)?);
            }
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

    /// A miss is answered from memory; a hit reads the record and compares the whole id.
    pub(super) fn answer(&self, session: SessionId, command_id: &str) -> Result<Option<CommandAnswer>, StoreError> {
        retry_moved(|| self.answer_once(session, command_id))
    }

    fn answer_once(&self, session: SessionId, command_id: &str) -> Result<Option<CommandAnswer>, StoreError> {
        if layout::check_command_id(command_id).is_err() {
            return Ok(None); // could never have been remembered
        }
        let candidates = self.index.read().unwrap_or_else(|p| p.into_inner()).answer_candidates(&session, command_id);
        for pos in candidates.unwrap_or_default() {
            let (kind, body) = match self.read_record(pos) {
                Ok(r) => r,
                Err(_) if !self.exists(&session) => return Ok(None), // expired meanwhile
                Err(e) => return Err(self.read_failure(session, 0, pos, e)),
            };
            let bad = |reason: String| StoreError::Corrupt {
                session,
                seq: 0,
                reason: format!("answer at segment {} offset {}: {reason}", pos.seg, pos.offset),
            };
            let (id, answer) = match record::decode(kind, &body).map_err(&bad)? {
                (s, Body::Answer { command_id, record }) if s == session => (command_id, record),
                (s, Body::Events(e)) if s == session => e.answer.ok_or_else(|| bad("an events record without an answer".into()))?,
                _ => return Err(bad("not an answer of this session".into())),
            };
            if id == command_id {
                return layout::decode_answer(session, command_id, answer).map(Some);
            }
        }
        Ok(None)
    }

    /// The session's snapshot of `schema_version`; an unreadable one is a miss (it is only a cache).
    pub(super) fn snapshot(&self, session: SessionId, schema_version: u32) -> Result<Option<Snapshot>, StoreError> {
        retry_moved(|| self.snapshot_once(session, schema_version))
    }

    fn snapshot_once(&self, session: SessionId, schema_version: u32) -> Result<Option<Snapshot>, StoreError> {
        let pos = {
            let index = self.index.read().unwrap_or_else(|p| p.into_inner());
            index.get(&session).and_then(|s| s.snapshots.iter().find(|(v, _)| *v == schema_version).map(|(_, p)| *p))
        };
        let Some(pos) = pos else { return Ok(None) };
        let (kind, body) = match self.read_record(pos) {
            Ok(r) => r,
            Err(_) if !self.exists(&session) => return Ok(None),
            Err(e) => return Err(self.read_failure(session, 0, pos, e)),
        };
        let decoded = match record::decode(kind, &body) {
            Ok((s, Body::Snapshot(r))) if s == session => layout::decode_snapshot(r),
            Ok(_) => Err("not a snapshot of this session".into()),
            Err(reason) => Err(reason),
        };
        match decoded {
            Ok(s) if s.schema_version == schema_version => Ok(Some(s)),
            Ok(_) => Ok(None),
            Err(reason) => {
                tracing::warn!(%session, schema_version, %reason, "ignoring unreadable snapshot");
                Ok(None)
            }
        }
    }

    fn durable_mark(&self) -> Pos {
        Pos::unpack(self.durable.load(SeqCst))
    }

    fn subscribe(&self) -> Option<broadcast::Receiver<Arc<Notice>>> {
        self.notices.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(broadcast::Sender::subscribe)
    }
}

/// Runs a read again (a few times) while it fails because a segment is gone: compaction deleted
/// it after moving its records, and the index now names their new places.
fn retry_moved<T>(mut read: impl FnMut() -> Result<T, StoreError>) -> Result<T, StoreError> {
    let mut tries = 0;
    loop {
        match read() {
            Err(StoreError::Io { ref source, .. }) if source.kind() == io::ErrorKind::NotFound && tries < 3 => tries += 1,
            result => return result,
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

/// Events from `from_seq` to the session's end as it is now, read in chunks.
pub(super) fn stream(shared: Arc<Shared>, session: SessionId, from_seq: u64) -> EventStream {
    let end = shared.index.read().unwrap_or_else(|p| p.into_inner()).get(&session).map(|s| s.latest_seq);
    let Some(end) = end else { return once_err(StoreError::UnknownSession(session)) };
    let state = StreamState { shared, session, next: from_seq.max(1), end, buf: VecDeque::new(), done: false };
    futures_util::stream::unfold(state, |mut s| async move {
        if let Some(e) = s.buf.pop_front() {
            return Some((Ok(e), s));
        }
        if s.done || s.next > s.end {
            return None;
        }
        match s.shared.read_events(s.session, s.next, s.end, CHUNK, None) {
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

/// Events from `from_seq`, then each durable commit, until the session expires or the log closes.
pub(super) fn follow(shared: Arc<Shared>, session: SessionId, from_seq: u64) -> EventStream {
    // Subscribe before the first read, so no commit between the two can be missed.
    let Some(rx) = shared.subscribe() else { return once_err(StoreError::Closed) };
    let state = FollowState { shared, session, next: from_seq.max(1), buf: VecDeque::new(), rx, phase: Phase::CatchUp, first: true };
    futures_util::stream::unfold(state, |mut f| async move {
        loop {
            if let Some(e) = f.buf.pop_front() {
                return Some((Ok(e), f));
            }
            match f.phase {
                Phase::Done => return None,
                Phase::CatchUp => {
                    if let Some(item) = catch_up(&mut f) {
                        return item.map(|e| (Err(e), f));
                    }
                }
                Phase::Live => wait_for_notice(&mut f).await,
            }
        }
    })
    .boxed()
}

/// One chunk of durable events into the buffer. `Some(None)`: the stream ends; `Some(Some(e))`: it
/// ends with `e`; `None`: go on.
fn catch_up(f: &mut FollowState) -> Option<Option<StoreError>> {
    let first = std::mem::replace(&mut f.first, false);
    // Loaded before the index is read: every place before it is synced.
    let mark = f.shared.durable_mark();
    match f.shared.read_events(f.session, f.next, u64::MAX - 1, CHUNK, Some(mark)) {
        Ok(v) => {
            if v.len() < CHUNK {
                f.phase = Phase::Live;
            }
            if let Some(last) = v.last() {
                f.next = last.seq + 1;
            }
            f.buf.extend(v);
            None
        }
        Err(StoreError::UnknownSession(_)) if !first => Some(None), // expired
        Err(e) => {
            f.phase = Phase::Done;
            Some(Some(e))
        }
    }
}

async fn wait_for_notice(f: &mut FollowState) {
    match f.rx.recv().await {
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
    }
}
