//! Readers: places from the index (under its read lock, released before any I/O), records by
//! `pread`, then the sled layout's decoders and the upcaster.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

use futures_util::StreamExt;
use tokio::sync::broadcast;

use super::frame;
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

    /// The kind and body of the record at `pos`, from the frame around it, whose CRC is checked
    /// on every read: bytes damaged after the log opened (or before, where an index checkpoint let
    /// opening skip them) are a corruption error naming the segment file and offset, never data.
    /// `frame` keeps the last frame read and checked, for the next record of the same read.
    fn read_record(&self, pos: Pos, frame: &mut Option<(Pos, Vec<u8>)>) -> Result<(u8, Vec<u8>), ReadError> {
        let path = || super::segment::path(&self.dir, pos.seg).display().to_string();
        let cached = frame.as_ref().is_some_and(|(start, records)| {
            start.seg == pos.seg
                && pos.offset >= start.offset + frame::HEADER_LEN as u32
                && u64::from(pos.offset) < u64::from(start.offset) + (frame::HEADER_LEN + records.len()) as u64
        });
        if !cached {
            let start = self
                .files
                .frame_of(pos)
                .map_err(ReadError::Io)?
                .ok_or_else(|| ReadError::Bad(format!("no frame of {} holds a record at offset {}", path(), pos.offset)))?;
            let mut h = [0u8; frame::HEADER_LEN];
            let start = Pos { seg: pos.seg, offset: start };
            self.files.read_at(start, &mut h).map_err(ReadError::Io)?;
            let header = frame::Header::parse(&h);
            let end = u64::from(start.offset) + frame::HEADER_LEN as u64 + u64::from(header.len);
            if u64::from(pos.offset) + record::HEADER_LEN as u64 > end || header.len as usize > MAX_RECORD {
                return Err(ReadError::Bad(format!(
                    "the frame at offset {} of {} ({} bytes) does not hold a record at offset {}",
                    start.offset,
                    path(),
                    header.len,
                    pos.offset
                )));
            }
            let mut records = vec![0u8; header.len as usize];
            let at = Pos { seg: pos.seg, offset: start.offset + frame::HEADER_LEN as u32 };
            self.files.read_at(at, &mut records).map_err(ReadError::Io)?;
            if !header.matches(&records) {
                return Err(ReadError::Bad(format!(
                    "the CRC of the frame at offset {} of {} ({} bytes) does not match",
                    start.offset,
                    path(),
                    header.len
                )));
            }
            *frame = Some((start, records));
        }
        let Some((start, records)) = frame.as_ref() else { unreachable!("read above") };
        let from = (pos.offset - start.offset) as usize - frame::HEADER_LEN;
        let header: &[u8; record::HEADER_LEN] = records
            .get(from..from + record::HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| ReadError::Bad("short header".into()))?;
        let (kind, len) = record::parse_header(header).ok_or_else(|| ReadError::Bad("short header".into()))?;
        let body = records
            .get(from + record::HEADER_LEN..)
            .and_then(|rest| rest.get(..len))
            .ok_or_else(|| ReadError::Bad(format!("a record of {len} bytes runs past the end of its frame")))?;
        Ok((kind, body.to_vec()))
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
        after_lookup();
        let mut out = Vec::new();
        let mut frame = None;
        for extent in extents {
            if out.len() >= limit || durable_before.is_some_and(|mark| extent.pos >= mark) {
                break;
            }
            let (kind, body) =
                self.read_record(extent.pos, &mut frame).map_err(|e| self.read_failure(session, extent.first_seq, extent.pos, e))?;
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
        after_lookup();
        for pos in candidates.unwrap_or_default() {
            let (kind, body) = match self.read_record(pos, &mut None) {
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
        after_lookup();
        let (kind, body) = match self.read_record(pos, &mut None) {
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

// A test seam, compiled into unit tests only. Between a read's index look-up (under the read lock)
// and its file reads, the writer may move the records (compaction) and delete their segment; that
// is what `retry_moved` is for. Nothing a test can do from outside gets between the two without
// sleeping and hoping, so a test puts here what compaction would do, and the next read on its
// thread runs it (once) right after its look-up. See the tests below.
#[cfg(test)]
thread_local! {
    static AFTER_LOOKUP: std::cell::RefCell<Option<Box<dyn FnOnce()>>> = const { std::cell::RefCell::new(None) };
}

#[inline(always)]
fn after_lookup() {
    #[cfg(test)]
    if let Some(hook) = AFTER_LOOKUP.with(|h| h.borrow_mut().take()) {
        hook();
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;
    use std::sync::{Mutex, OnceLock, RwLock};

    use serde_json::json;
    use tokio::sync::watch;

    use super::super::index::{Change, Index, Update};
    use super::super::record::AnswerWrite;
    use super::super::segment::{self, ReadFiles};
    use super::super::{Counters, frame, sealed_frame};
    use super::*;
    use crate::layout::MetaRecord;
    use crate::{Durability, NewEvent, NoUpcasting, SessionStatus};

    /// The session of the tests.
    fn sid() -> SessionId {
        SessionId::from_bytes([7; 16])
    }

    /// One segment as the writer leaves it, and the index of it: session `sid()` created, its events
    /// 1..=2 written with the answer to "c1", event 3, a snapshot of version 1; one frame.
    struct Log {
        _dir: tempfile::TempDir,
        shared: Arc<Shared>,
        /// Each record of segment 1: its place, its bytes, its change to the index.
        records: Vec<(Pos, Vec<u8>, Change)>,
    }

    fn event(seq: u64) -> Vec<u8> {
        let e = NewEvent {
            time_ms: 100 + seq,
            event_type: format!("test.e{seq}"),
            schema_version: 1,
            correlation_id: None,
            checksum: None,
            payload: json!({ "seq": seq }).into(),
        };
        layout::encode_event(&e).unwrap()
    }

    fn answer() -> CommandAnswer {
        CommandAnswer { command_id: "c1".into(), seq: 2, refusal: None }
    }

    fn snapshot() -> Snapshot {
        Snapshot { seq: 3, schema_version: 1, time_ms: 103, state: json!({ "n": 3 }).into(), log_bytes: Some(300) }
    }

    fn log() -> Log {
        let dir = tempfile::tempdir().unwrap();
        let mut index = Index::new();
        let meta = MetaRecord { status: SessionStatus::Active, created_ms: 1, project: "p".into(), resume_token_hash: None };
        let answer = AnswerWrite { command_id: "c1".into(), record: layout::encode_answer(&answer()).unwrap() };
        let mut built: Vec<(Vec<u8>, Change)> = Vec::new();
        let mut put = |change: Change, write: &dyn Fn(&mut Vec<u8>) -> usize| {
            let mut whole = Vec::new();
            write(&mut whole);
            built.push((whole, change));
        };
        put(Change::Create(meta.clone()), &|o| record::put_meta(o, record::CREATE, &sid(), &layout::encode_meta(&meta).unwrap()));
        let events = Change::Events { first_seq: 1, count: 2, last_time: Some(102), answer: Some(index.hash("c1")) };
        put(events, &|o| record::put_events(o, &sid(), 1, &[event(1), event(2)], Some(&answer)));
        put(Change::Events { first_seq: 3, count: 1, last_time: Some(103), answer: None }, &|o| {
            record::put_events(o, &sid(), 3, &[event(3)], None)
        });
        put(Change::Snapshot(Some(1)), &|o| record::put_snapshot(o, &sid(), &layout::encode_snapshot(&snapshot()).unwrap()));

        index.add_segment(1);
        let (mut records, mut bytes) = (Vec::new(), Vec::new());
        for (whole, change) in built {
            let pos = Pos { seg: 1, offset: (frame::HEADER_LEN + bytes.len()) as u32 };
            index.apply(Update { session: sid(), pos, len: whole.len() as u32, change: change.clone() }).unwrap();
            bytes.extend_from_slice(&whole);
            records.push((pos, whole, change));
        }
        std::fs::write(segment::path(dir.path(), 1), sealed_frame(&bytes)).unwrap();
        let (closed, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            dir: dir.path().to_path_buf(),
            durability: Durability::Durable,
            upcaster: Arc::new(NoUpcasting),
            max_event_bytes: 1 << 20,
            index: RwLock::new(index),
            files: ReadFiles::new(dir.path().to_path_buf(), 4),
            durable: AtomicU64::new(Pos { seg: 2, offset: 0 }.packed()),
            closed,
            notices: Mutex::new(None),
            stats: Counters::default(),
            failure: OnceLock::new(),
        });
        Log { _dir: dir, shared, records }
    }

    impl Log {
        /// What compaction and `reclaim` do to segment 1, run right after the next read's index
        /// look-up on this thread: every record copied to segment 2 as COPY records (written
        /// before the index changes, as the writer does), the index pointed at the copies, then
        /// segment 1's descriptor closed, its file deleted and the segment forgotten.
        fn compact_after_the_next_look_up(&self) {
            let (shared, records) = (self.shared.clone(), self.records.clone());
            let hook = move || {
                let (mut copies, mut moves) = (Vec::new(), Vec::new());
                for (from, whole, change) in records {
                    let pos = Pos { seg: 2, offset: (frame::HEADER_LEN + copies.len()) as u32 };
                    let len = record::put_copy(&mut copies, &sid(), from, whole.len() as u32, from, &whole);
                    let (seq, answer) = match change {
                        Change::Events { first_seq, answer, .. } => (Some(first_seq), answer),
                        _ => (None, None),
                    };
                    let change = Change::Moved { from, released: whole.len() as u64, seq, answer };
                    moves.push(Update { session: sid(), pos, len: len as u32, change });
                }
                std::fs::write(segment::path(&shared.dir, 2), sealed_frame(&copies)).unwrap();
                let mut index = shared.index.write().unwrap();
                index.add_segment(2);
                for m in moves {
                    index.apply(m).unwrap();
                }
                assert_eq!(index.dead_segments(&[2]), vec![1], "nothing of segment 1 is live any more");
                shared.files.forget(1);
                std::fs::remove_file(segment::path(&shared.dir, 1)).unwrap();
                index.forget_segments(&[1]);
            };
            AFTER_LOOKUP.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
        }

        /// The hook ran: segment 1 is gone, and the index names only segment 2.
        fn assert_compacted(&self) {
            assert!(AFTER_LOOKUP.with(|h| h.borrow().is_none()), "the read looked the index up");
            assert!(!segment::path(&self.shared.dir, 1).exists());
            let index = self.shared.index.read().unwrap();
            assert_eq!(index.segments(), vec![2]);
            assert_eq!(index.check_places(), Ok(()));
        }
    }

    fn all_events(shared: &Shared) -> Result<Vec<Envelope>, StoreError> {
        shared.read_events(sid(), 1, u64::MAX - 1, usize::MAX, None)
    }

    #[test]
    fn events_moved_after_the_look_up_are_read_again_at_their_copies() {
        let log = log();
        // Read once before: from segment 1, whose descriptor the readers now keep open.
        let before = all_events(&log.shared).unwrap();
        assert_eq!(
            before.iter().map(|e| (e.seq, e.event_type.as_str())).collect::<Vec<_>>(),
            [(1, "test.e1"), (2, "test.e2"), (3, "test.e3")]
        );

        log.compact_after_the_next_look_up();
        let after = all_events(&log.shared).unwrap();

        log.assert_compacted();
        assert_eq!(after, before, "the same events, read from the copies");
    }

    #[test]
    fn an_answer_moved_after_the_look_up_is_read_again_at_its_copy() {
        let log = log();
        assert_eq!(log.shared.answer(sid(), "c1").unwrap(), Some(answer()));

        log.compact_after_the_next_look_up();
        let found = log.shared.answer(sid(), "c1").unwrap();

        log.assert_compacted();
        assert_eq!(found, Some(answer()));
    }

    #[test]
    fn a_snapshot_moved_after_the_look_up_is_read_again_at_its_copy() {
        let log = log();
        assert_eq!(log.shared.snapshot(sid(), 1).unwrap(), Some(snapshot()));

        log.compact_after_the_next_look_up();
        let found = log.shared.snapshot(sid(), 1).unwrap();

        log.assert_compacted();
        assert_eq!(found, Some(snapshot()));
    }
}
