//! Opening a segment log (`store/src/segment_log`, decision 0105) whose segment files hold any
//! bytes: a crash's torn tail, a bad disk, a hand-edited file, compaction's copies. The first byte
//! chooses how the rest becomes the files:
//! - even: one segment file, the bytes as they are (mostly refused by a frame's checksum, or cut
//!   as a torn tail);
//! - 1 modulo 4: one segment file, a sequence of `u16 BE length | records` chunks, each sealed into
//!   a frame whose checksum holds, so that the records themselves are decoded and indexed;
//! - 3 modulo 4: a program ([`Model`]) that writes the segments as the writer would: sessions,
//!   events, answers, snapshots, expiries, new segments, and compaction (COPY records of the live
//!   records of the oldest segment, copies of copies, and the deletion of dead segments, so that
//!   some copies' original segments are gone: recovery's `early_copies`); and, when the first
//!   byte's bit 2 is set, bad COPY records among them (a record copied twice, a wrong place,
//!   origin, size or session, a copy of a copy, a cut record).
//!
//! Opening must never panic. When it succeeds, the log must be consistent and usable: every session
//! listed reads back exactly its events `1..=latest_seq`, in order, or is refused as corrupt naming
//! that session (an event that does not decode); opening it again gives the same sessions and
//! events; and a new session appended to it survives another reopen. For a program: a log without
//! bad copies must open, with exactly the sessions, metadata, events, answers and snapshots the
//! program wrote, again after the reopen (from the index checkpoint written at close); a log with a
//! copy recovery cannot decode, one that releases more bytes than its session has where it says
//! its record was (`Anomaly::BadCopy`), or a second copy of a record (when the segments of the
//! record and of both copies are on disk), must be refused.

#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use vestibule_store::layout::{self, MetaRecord};
use vestibule_store::{
    AnswerRefusal, CommandAnswer, Durability, EventLog, NewEvent, NewSession, SegmentEventLog, SessionFilter, SessionId, SessionMeta,
    SessionStatus, Snapshot, StoreConfig, StoreError,
};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime"))
}

const WORKDIR_PREFIX: &str = "vestibule-fuzz-segments-";

/// One directory per fuzzing process (workers may share a corpus), on tmpfs when there is one:
/// every input writes a file. libFuzzer ends the process without a hook to remove it, so each new
/// process first removes the directories of processes that are gone; at most one is left behind.
fn workdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(WORKDIR_PREFIX)) else { continue };
            if !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        base.join(format!("{WORKDIR_PREFIX}{}", std::process::id()))
    })
}

/// The segment file of modes 0 and 1 (mode 3 is [`Model::run`]).
fn segment_bytes(data: &[u8]) -> Vec<u8> {
    let Some((&mode, rest)) = data.split_first() else { return Vec::new() };
    if mode % 2 == 0 {
        return rest.to_vec();
    }
    let (mut file, mut rest) = (Vec::new(), rest);
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        file.extend_from_slice(&vestibule_store::segment_frame(&rest[2..2 + len]));
        rest = &rest[2 + len..];
    }
    file
}

fn config(dir: &Path) -> StoreConfig {
    // The smallest segments the log accepts; buffered, so an input costs no sync.
    StoreConfig::at(dir.to_path_buf()).with_segment_bytes(64 * 1024).with_durability(Durability::Buffered { interval_ms: 1000 })
}

/// Every session and its events, read through the public API.
async fn contents(log: &SegmentEventLog) -> Vec<(SessionId, u64, Vec<(u64, String)>)> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = log.list_sessions(&SessionFilter::default(), after, 100).await.expect("listing a log that opened");
        for meta in &page.sessions {
            let events = match log.read(meta.session, 1, None).await {
                Ok(events) => events,
                // A record whose frame is intact but whose event does not decode (only a frame built
                // by the fuzzer, with its checksum made to hold, can be that) is reported when read,
                // with its session, as the sled backend does; never skipped.
                Err(StoreError::Corrupt { session, .. }) if session == meta.session => {
                    all.push((meta.session, meta.latest_seq, Vec::new()));
                    continue;
                }
                Err(other) => panic!("reading the listed session {}: {other}", meta.session),
            };
            let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
            assert_eq!(seqs, (1..=meta.latest_seq).collect::<Vec<_>>(), "session {} reads back 1..=latest_seq", meta.session);
            all.push((meta.session, meta.latest_seq, events.into_iter().map(|e| (e.seq, e.event_type)).collect()));
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return all,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let dir = workdir();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("the fuzz directory");
    let model = match data.split_first() {
        Some((mode, program)) if mode % 4 == 3 => {
            let model = Model::run(program, mode & 4 != 0);
            for (seg, bytes) in &model.files {
                std::fs::write(dir.join(format!("{seg:08}.seg")), bytes).expect("a segment file");
            }
            Some(model)
        }
        _ => {
            std::fs::write(dir.join("00000001.seg"), segment_bytes(data)).expect("the segment file");
            None
        }
    };
    runtime().block_on(async {
        let log = match SegmentEventLog::open(config(dir)) {
            Ok(log) => log,
            Err(e) if model.as_ref().is_some_and(|m| m.valid) => panic!("a log the writer could have written does not open: {e}"),
            Err(_) => return,
        };
        if let Some(why) = model.as_ref().and_then(Model::must_refuse) {
            panic!("a log with {why} opened");
        }
        if let Some(model) = model.as_ref().filter(|m| m.valid) {
            model.check(&log, "opened by a full scan").await;
        }
        let before = contents(&log).await;
        drop(log);
        let log = SegmentEventLog::open(config(dir)).expect("a log that opened once opens again");
        assert_eq!(contents(&log).await, before, "opening again gives the same log");
        if let Some(model) = model.as_ref().filter(|m| m.valid) {
            model.check(&log, "opened again, from its checkpoint").await;
        }

        let session = SessionId::random();
        log.create_session(session, NewSession { project: "fuzz".into(), created_ms: 1, resume_token_hash: None })
            .await
            .expect("a recovered log takes a new session");
        let event = NewEvent {
            time_ms: 2,
            event_type: "fuzz.appended".into(),
            schema_version: 1,
            correlation_id: None,
            checksum: None,
            payload: serde_json::json!({}).into(),
        };
        log.append(session, 0, vec![event]).await.expect("a recovered log takes an append");
        log.flush().await.expect("and makes it durable");
        drop(log);
        let log = SegmentEventLog::open(config(dir)).expect("the log opens after the append");
        let after = contents(&log).await;
        assert_eq!(after.len(), before.len() + 1, "the new session is there beside the recovered ones");
        assert!(after.iter().any(|(s, seq, _)| *s == session && *seq == 1));
    });
});

// ---------------------------------------------------------------------------------------------
// Mode 3: segments as the writer writes them, compaction included
// ---------------------------------------------------------------------------------------------

// The on-disk format (store/src/segment_log/frame.rs and record.rs), written out here: the fuzz
// target sees only the store's public API.
const FRAME_HEADER: usize = 8;
const RECORD_HEADER: usize = 5;
/// Bytes of a COPY record before the record it carries: header, session, five `u32`.
const COPY_PREFIX: u32 = (RECORD_HEADER + SessionId::LEN + 5 * 4) as u32;
const CREATE: u8 = b'm';
const EVENTS: u8 = b'e';
const ANSWER: u8 = b'a';
const STATUS: u8 = b'u';
const SNAPSHOT: u8 = b's';
const DROP_SNAPSHOTS: u8 = b'd';
const EXPIRY: u8 = b'x';
const COPY: u8 = b'c';
/// A segment takes no frame past this (the log's segments are 64 KiB).
const SEGMENT_FILL: usize = 48 * 1024;
/// Snapshot versions the program writes, and the check reads.
const VERSIONS: u32 = 3;

/// A place in the log (the store's `Pos`): ordered as the log was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    seg: u32,
    offset: u32,
}

/// A whole record: kind, length, session, body.
fn record(kind: u8, session: &SessionId, body: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(RECORD_HEADER + SessionId::LEN + body.len());
    r.push(kind);
    r.extend_from_slice(&((SessionId::LEN + body.len()) as u32).to_be_bytes());
    r.extend_from_slice(session.as_bytes());
    r.extend_from_slice(body);
    r
}

fn answer_body(out: &mut Vec<u8>, answer: &CommandAnswer) {
    out.extend_from_slice(&(answer.command_id.len() as u16).to_be_bytes());
    out.extend_from_slice(answer.command_id.as_bytes());
    out.extend_from_slice(&layout::encode_answer(answer).expect("an answer"));
}

/// A record the program wrote.
struct Written {
    session: usize,
    /// Its place and whole length (of a copy: the whole COPY record).
    at: Place,
    len: u64,
    /// The place the index holds for it: `at`, or, for a copy, the record it carries.
    held: Place,
    /// Where the record was first written.
    origin: Place,
    /// The record (for a copy, the one it carries), whole.
    inner: Vec<u8>,
    /// Neither copied forward since nor an expiry.
    live: bool,
    /// The segment of the copy that moved it forward, once one did.
    copied_to: Option<u32>,
}

/// A session as the program wrote it: what the log must give back while it lives.
struct Session {
    id: SessionId,
    alive: bool,
    meta: MetaRecord,
    /// (seq, type, time)
    events: Vec<(u64, String, u64)>,
    last_activity_ms: u64,
    /// The newest answer to each command id.
    answers: BTreeMap<String, CommandAnswer>,
    /// The newest snapshot of each version (none since the last drop).
    snapshots: BTreeMap<u32, Snapshot>,
    /// Bytes of its records in each segment (the index's accounting: what keeps a segment).
    bytes: BTreeMap<u32, u64>,
}

/// An expiry's tombstone in `seg`: it keeps `seg` while any segment it covers exists.
struct Tombstone {
    seg: u32,
    covers: Vec<u32>,
}

/// A bad copy recovery must refuse while its segment (and, for a bad size, the segment it names)
/// is on disk.
struct Refusal {
    copy_seg: u32,
    from_seg: Option<u32>,
    /// For a record copied twice: the segment of its first copy, which recovery must have read
    /// to know.
    first_copy_seg: Option<u32>,
    why: &'static str,
}

/// The input's bytes, one at a time; zeros once they run out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn next(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn byte(&mut self) -> u8 {
        self.next().unwrap_or(0)
    }
}

/// Writes segments as the writer does (one frame per batch, compaction's copies in frames of
/// their own, dead segments deleted), and keeps what a reader must find in them. `valid` until the
/// program writes a bad copy.
struct Model {
    /// The segments on disk.
    files: BTreeMap<u32, Vec<u8>>,
    /// The segment written to, and the records of the frame being built there.
    active: u32,
    frame: Vec<u8>,
    written: Vec<Written>,
    sessions: Vec<Session>,
    tombstones: Vec<Tombstone>,
    /// The segment being compacted, and how many of its records were looked at.
    compacting: Option<(u32, usize)>,
    valid: bool,
    refusals: Vec<Refusal>,
}

impl Model {
    /// Runs `program`; with `bad_copies`, its operation 15 writes a bad copy (else it compacts).
    fn run(program: &[u8], bad_copies: bool) -> Model {
        let mut m = Model {
            files: BTreeMap::from([(1, Vec::new())]),
            active: 1,
            frame: Vec::new(),
            written: Vec::new(),
            sessions: Vec::new(),
            tombstones: Vec::new(),
            compacting: None,
            valid: true,
            refusals: Vec::new(),
        };
        let mut input = Input(program);
        while let Some(op) = input.next() {
            let b = input.byte();
            match op % 16 {
                0 | 1 => m.create(b),
                2..=4 => m.append(b, input.byte()),
                5 => m.answer(b, input.byte()),
                6 => m.set_status(b),
                7 => m.snapshot(b, input.byte()),
                8 => m.drop_snapshots(b),
                9 => m.expire(b),
                10 => m.flush(),
                11 => m.roll(),
                12 | 13 => m.compact(b),
                14 => m.reclaim(),
                15 if !bad_copies => m.compact(b),
                _ => {
                    let (c, d) = (input.byte(), input.byte());
                    m.bad_copy(b, c, d);
                }
            }
        }
        m.flush();
        m
    }

    /// Ends the frame being built (a batch).
    fn flush(&mut self) {
        if !self.frame.is_empty() {
            let frame = vestibule_store::segment_frame(&self.frame);
            self.files.get_mut(&self.active).expect("the active segment").extend_from_slice(&frame);
            self.frame.clear();
        }
    }

    fn roll(&mut self) {
        self.flush();
        self.active += 1;
        self.files.insert(self.active, Vec::new());
    }

    /// Adds a record to the frame being built (in a new segment if it would not fit); its place.
    fn put(&mut self, whole: &[u8]) -> Place {
        if self.files[&self.active].len() + FRAME_HEADER + self.frame.len() + whole.len() > SEGMENT_FILL {
            self.roll();
        }
        let offset = self.files[&self.active].len() + FRAME_HEADER + self.frame.len();
        self.frame.extend_from_slice(whole);
        Place { seg: self.active, offset: offset as u32 }
    }

    /// Writes a record of session `s` (neither a copy nor an expiry), counted as its bytes.
    fn write(&mut self, s: usize, kind: u8, body: &[u8]) {
        let whole = record(kind, &self.sessions[s].id, body);
        let at = self.put(&whole);
        *self.sessions[s].bytes.entry(at.seg).or_default() += whole.len() as u64;
        self.written.push(Written {
            session: s,
            at,
            len: whole.len() as u64,
            held: at,
            origin: at,
            inner: whole,
            live: true,
            copied_to: None,
        });
    }

    /// A living session, chosen by `b`.
    fn pick(&self, b: u8) -> Option<usize> {
        let alive: Vec<usize> = (0..self.sessions.len()).filter(|&s| self.sessions[s].alive).collect();
        (!alive.is_empty()).then(|| alive[usize::from(b) % alive.len()])
    }

    fn create(&mut self, b: u8) {
        // Unique, and not in the order of creation.
        let mut id = [0x5e; 16];
        id[0] = b;
        id[8..].copy_from_slice(&(self.sessions.len() as u64).to_be_bytes());
        let meta = MetaRecord {
            status: SessionStatus::Active,
            created_ms: u64::from(b) * 3,
            project: format!("p{}", b % 3),
            resume_token_hash: (b % 2 == 1).then(|| "h".into()),
        };
        let body = layout::encode_meta(&meta).expect("a meta record");
        self.sessions.push(Session {
            id: SessionId::from_bytes(id),
            alive: true,
            last_activity_ms: meta.created_ms,
            meta,
            events: Vec::new(),
            answers: BTreeMap::new(),
            snapshots: BTreeMap::new(),
            bytes: BTreeMap::new(),
        });
        self.write(self.sessions.len() - 1, CREATE, &body);
    }

    fn append(&mut self, b: u8, c: u8) {
        let Some(s) = self.pick(b) else { return };
        let session = &mut self.sessions[s];
        let (first, count) = (session.events.len() as u64 + 1, 1 + u64::from(c % 3));
        let mut body = Vec::new();
        body.extend_from_slice(&first.to_be_bytes());
        body.extend_from_slice(&(count as u32).to_be_bytes());
        for seq in first..first + count {
            let (event_type, time_ms) = (format!("fuzz.e{seq}"), u64::from(c) * 2 + seq);
            let event = NewEvent {
                time_ms,
                event_type: event_type.clone(),
                schema_version: 1,
                correlation_id: None,
                checksum: None,
                payload: serde_json::json!(seq).into(),
            };
            let encoded = layout::encode_event(&event).expect("an event record");
            body.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
            body.extend_from_slice(&encoded);
            session.events.push((seq, event_type, time_ms));
            session.last_activity_ms = time_ms.max(session.meta.created_ms);
        }
        if c & 4 == 0 {
            body.push(0);
        } else {
            let answer = CommandAnswer { command_id: format!("c{}", (c >> 3) % 4), seq: first + count - 1, refusal: None };
            body.push(1);
            answer_body(&mut body, &answer);
            session.answers.insert(answer.command_id.clone(), answer);
        }
        self.write(s, EVENTS, &body);
    }

    fn answer(&mut self, b: u8, c: u8) {
        let Some(s) = self.pick(b) else { return };
        let session = &mut self.sessions[s];
        let refusal = (c & 4 != 0).then(|| AnswerRefusal { code: "fuzz.refused".into(), message: format!("m{c}") });
        let answer = CommandAnswer { command_id: format!("c{}", c % 4), seq: session.events.len() as u64, refusal };
        let mut body = Vec::new();
        answer_body(&mut body, &answer);
        session.answers.insert(answer.command_id.clone(), answer);
        self.write(s, ANSWER, &body);
    }

    fn set_status(&mut self, b: u8) {
        let Some(s) = self.pick(b) else { return };
        let meta = &mut self.sessions[s].meta;
        meta.status = match meta.status {
            SessionStatus::Active => SessionStatus::Ended,
            SessionStatus::Ended => SessionStatus::Active,
        };
        let body = layout::encode_meta(meta).expect("a meta record");
        self.write(s, STATUS, &body);
    }

    fn snapshot(&mut self, b: u8, c: u8) {
        let Some(s) = self.pick(b) else { return };
        let session = &mut self.sessions[s];
        let snapshot = Snapshot {
            seq: session.events.len() as u64,
            schema_version: u32::from(c) % VERSIONS,
            time_ms: u64::from(c),
            state: serde_json::json!({ "c": c }).into(),
            // Both record formats: with the count of log bytes (2) and without (1).
            log_bytes: (c % 2 == 1).then_some(u64::from(c)),
        };
        let body = layout::encode_snapshot(&snapshot).expect("a snapshot record");
        session.snapshots.insert(snapshot.schema_version, snapshot);
        self.write(s, SNAPSHOT, &body);
    }

    fn drop_snapshots(&mut self, b: u8) {
        let Some(s) = self.pick(b) else { return };
        self.sessions[s].snapshots.clear();
        self.write(s, DROP_SNAPSHOTS, &[]);
    }

    /// The tombstone covers the other segments on disk that hold the session's records, as the
    /// index's does: those where it has bytes, and those whose records compaction copied away
    /// (at 0 bytes), which still hold the originals.
    fn expire(&mut self, b: u8) {
        let Some(s) = self.pick(b) else { return };
        let whole = record(EXPIRY, &self.sessions[s].id, &[]);
        let at = self.put(&whole);
        let session = &mut self.sessions[s];
        session.alive = false;
        let files = &self.files;
        let covers: Vec<u32> = session.bytes.keys().copied().filter(|&seg| seg != at.seg && files.contains_key(&seg)).collect();
        if !covers.is_empty() {
            self.tombstones.push(Tombstone { seg: at.seg, covers });
        }
        self.written.push(Written {
            session: s,
            at,
            len: whole.len() as u64,
            held: at,
            origin: at,
            inner: whole,
            live: false,
            copied_to: None,
        });
    }

    /// One step of compaction: up to `1 + b % 8` live records of the oldest segment (never the
    /// active one) copied, in order, in a frame of their own between batches.
    fn compact(&mut self, b: u8) {
        let oldest = *self.files.keys().next().expect("a segment");
        if oldest >= self.active {
            return;
        }
        let mut looked = match self.compacting {
            Some((seg, looked)) if seg == oldest => looked,
            _ => 0,
        };
        let records: Vec<usize> = (0..self.written.len()).filter(|&i| self.written[i].at.seg == oldest).collect();
        self.flush();
        let mut copied = 0;
        while looked < records.len() && copied <= b % 8 {
            let i = records[looked];
            looked += 1;
            if self.written[i].live && self.sessions[self.written[i].session].alive {
                self.copy(i);
                copied += 1;
            }
        }
        self.compacting = Some((oldest, looked));
        self.flush();
    }

    /// A COPY of the record `i` at the head of the log; the record's bytes go with it.
    fn copy(&mut self, i: usize) {
        let w = &mut self.written[i];
        w.live = false;
        let (s, from, released, origin, inner) = (w.session, w.held, w.len, w.origin, w.inner.clone());
        let bytes = &mut self.sessions[s].bytes;
        let left = bytes.get_mut(&from.seg).expect("a live record's bytes");
        *left -= released; // at 0 it stays: the segment still holds the original
        let mut body = Vec::with_capacity(20 + inner.len());
        for v in [from.seg, from.offset, released as u32, origin.seg, origin.offset] {
            body.extend_from_slice(&v.to_be_bytes());
        }
        body.extend_from_slice(&inner);
        let whole = record(COPY, &self.sessions[s].id, &body);
        let at = self.put(&whole);
        self.written[i].copied_to = Some(at.seg);
        *self.sessions[s].bytes.entry(at.seg).or_default() += whole.len() as u64;
        let held = Place { seg: at.seg, offset: at.offset + COPY_PREFIX };
        self.written.push(Written { session: s, at, len: whole.len() as u64, held, origin, inner, live: true, copied_to: None });
    }

    /// Deletes the segments nothing live needs, but the active one, as the writer's `reclaim`
    /// does (again and again: a deletion can free a tombstone, and its segment with it).
    fn reclaim(&mut self) {
        loop {
            let dead: Vec<u32> = self.files.keys().copied().filter(|&seg| seg != self.active && self.is_dead(seg)).collect();
            if dead.is_empty() {
                return;
            }
            for seg in dead {
                self.files.remove(&seg);
                if self.compacting.is_some_and(|(c, _)| c == seg) {
                    self.compacting = None;
                }
            }
        }
    }

    fn is_dead(&self, seg: u32) -> bool {
        let no_bytes = self.sessions.iter().all(|s| !s.alive || s.bytes.get(&seg).is_none_or(|&n| n == 0));
        let no_tombstone =
            self.tombstones.iter().all(|t| t.seg != seg || !t.covers.iter().any(|&c| c != seg && self.files.contains_key(&c)));
        no_bytes && no_tombstone
    }

    /// A COPY record the writer would not write, in a frame of its own: of the record `c, d` picks,
    /// in a way `b` picks. The model no longer knows what recovery must make of the log, except
    /// that some bad copies must be refused.
    fn bad_copy(&mut self, b: u8, c: u8, d: u8) {
        if self.written.is_empty() {
            return;
        }
        let w = &self.written[(usize::from(c) << 8 | usize::from(d)) % self.written.len()];
        let session = &self.sessions[w.session];
        let (mut id, mut from, mut released, mut origin, mut inner) = (session.id, w.held, w.len as u32, w.origin, w.inner.clone());
        let delta = u32::from(d % 64) + 1;
        let (mut refusal, mut first_copy_seg) = (None, None);
        match b % 8 {
            // The same record again: moved already, an expiry, or live but not the oldest.
            0 => {
                if let Some(seg) = w.copied_to {
                    first_copy_seg = Some(seg);
                    refusal = Some((Some(from.seg), "a record copied twice"));
                }
            }
            1 if d % 2 == 0 => from.offset = from.offset.wrapping_add(delta),
            1 => from.offset = from.offset.wrapping_sub(delta),
            2 => {
                released += delta;
                let has = if session.alive { session.bytes.get(&from.seg).copied().unwrap_or(0) } else { 0 };
                if self.valid && u64::from(released) > has {
                    refusal = Some((Some(from.seg), "a copy that releases more than its session has there"));
                }
            }
            // Another segment, maybe one that never was: an early copy, or a copy of nothing.
            3 => from.seg = u32::from(d % 8),
            4 => origin = Place { seg: u32::from(d % 8), offset: u32::from(c) },
            5 => {
                id = SessionId::from_bytes([0xee; 16]);
                refusal = Some((None, "a copy of another session's record"));
            }
            6 => {
                inner = record(COPY, &id, &[&[0u8; 20][..], &inner].concat());
                refusal = Some((None, "a copy of a copy, whole"));
            }
            _ => {
                inner.truncate(inner.len() - 1 - usize::from(d) % inner.len());
                refusal = Some((None, "a copy of a cut record"));
            }
        }
        let mut body = Vec::new();
        for v in [from.seg, from.offset, released, origin.seg, origin.offset] {
            body.extend_from_slice(&v.to_be_bytes());
        }
        body.extend_from_slice(&inner);
        self.flush();
        let at = self.put(&record(COPY, &id, &body));
        self.flush();
        if let Some((from_seg, why)) = refusal {
            self.refusals.push(Refusal { copy_seg: at.seg, from_seg, first_copy_seg, why });
        }
        self.valid = false;
    }

    /// Why opening the log must fail, if it must.
    fn must_refuse(&self) -> Option<&'static str> {
        let on_disk = |seg: u32| self.files.get(&seg).is_some_and(|f| !f.is_empty());
        let read = |r: &&Refusal| on_disk(r.copy_seg) && r.from_seg.is_none_or(on_disk) && r.first_copy_seg.is_none_or(on_disk);
        self.refusals.iter().find(read).map(|r| r.why)
    }

    /// The log gives back exactly what the program wrote.
    async fn check(&self, log: &SegmentEventLog, when: &str) {
        let mut alive: Vec<&Session> = self.sessions.iter().filter(|s| s.alive).collect();
        alive.sort_by_key(|s| s.id);
        let mut listed = Vec::new();
        let mut after = None;
        loop {
            let page = log.list_sessions(&SessionFilter::default(), after, 100).await.expect("listing");
            listed.extend(page.sessions);
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let expected: Vec<SessionMeta> = alive
            .iter()
            .map(|s| SessionMeta {
                session: s.id,
                project: s.meta.project.clone(),
                status: s.meta.status,
                created_ms: s.meta.created_ms,
                last_activity_ms: s.last_activity_ms,
                latest_seq: s.events.len() as u64,
                resume_token_hash: s.meta.resume_token_hash.clone(),
            })
            .collect();
        assert_eq!(listed, expected, "{when}: the sessions");
        for s in alive {
            let events = log.read(s.id, 1, None).await.unwrap_or_else(|e| panic!("{when}: reading session {}: {e}", s.id));
            let events: Vec<(u64, String, u64)> = events.into_iter().map(|e| (e.seq, e.event_type, e.time_ms)).collect();
            assert_eq!(events, s.events, "{when}: the events of session {}", s.id);
            for (command_id, answer) in &s.answers {
                let found = log.answer(s.id, command_id).await.unwrap_or_else(|e| panic!("{when}: answer {command_id:?}: {e}"));
                assert_eq!(found.as_ref(), Some(answer), "{when}: the answer to {command_id:?} of session {}", s.id);
            }
            for version in 0..VERSIONS {
                let found = log.get_snapshot(s.id, version).await.unwrap_or_else(|e| panic!("{when}: snapshot {version}: {e}"));
                assert_eq!(found.as_ref(), s.snapshots.get(&version), "{when}: the snapshot {version} of session {}", s.id);
            }
        }
    }
}
