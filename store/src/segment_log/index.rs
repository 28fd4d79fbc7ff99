//! The in-memory index: for every live session, where its records are. Rebuilt from the segments
//! at open (`recover.rs`), changed afterwards only by the writer thread, and only with what is
//! already written (and, in durable mode, synced), so a reader never finds a place that a crash
//! could take back.
//!
//! Memory (64-bit, measured by `memory_per_session_event_and_answer` below):
//! - per session: 224 bytes of key and `SessionIndex`, held in a `BTreeMap` (whose nodes, about
//!   two-thirds full, make it ~300), plus the heap of its project name and resume-token hash
//!   (~80 bytes as the gateway uses them): ~400 bytes, against the ~100 that decision 0105 guessed;
//! - per append (not per event: an append's events are one record): one [`Extent`], 16 bytes, in a
//!   vector that grows by doubling;
//! - per remembered answer: one `u64 → Pos` entry, 16 bytes plus a control byte, in a hash table
//!   at most 7/8 full that grows by doubling (so 18 to 37 bytes);
//! - per segment the session wrote to: 16 bytes of live-byte accounting.
//!
//! A session that sent 1,000 commands, each one append with its answer: ~400 + 16 k + ~30 k ≈ 47 KB.
//! Nothing is spilled: an idle session costs its entry for as long as it lives (see mod.rs).

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use super::segment::Pos;
use crate::layout::MetaRecord;
use crate::{SessionId, SessionMeta, SessionStatus};

/// Where one append's events are: the record holding seqs `first_seq ..` (up to the next extent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    pub first_seq: u64,
    pub pos: Pos,
}

/// The keys are already SipHash outputs (keyed, see [`Index::hash`]): hashing them again is waste.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Answers by hash of their command id. A hit is confirmed by reading the record and comparing the
/// whole id; an entry a newer one with the same hash displaces (the same id remembered again, or a
/// collision) moves to `overflow`, so a collision costs a second read, never a wrong answer.
#[derive(Default)]
pub(crate) struct Answers {
    pub(super) main: HashMap<u64, Pos, BuildHasherDefault<IdHasher>>,
    pub(super) overflow: Vec<(u64, Pos)>,
}

impl Answers {
    pub(super) fn insert(&mut self, hash: u64, pos: Pos) {
        if let Some(old) = self.main.insert(hash, pos) {
            self.overflow.push((hash, old));
        }
    }

    /// The records that may hold the answer, newest first.
    fn candidates(&self, hash: u64) -> Vec<Pos> {
        let Some(&first) = self.main.get(&hash) else { return Vec::new() };
        let older = self.overflow.iter().rev().filter(|(h, _)| *h == hash).map(|(_, p)| *p);
        std::iter::once(first).chain(older).collect()
    }
}

pub(crate) struct SessionIndex {
    pub meta: MetaRecord,
    pub latest_seq: u64,
    pub last_activity_ms: u64,
    pub extents: Vec<Extent>,
    /// The newest snapshot of each state schema version.
    pub snapshots: Vec<(u32, Pos)>,
    pub answers: Answers,
    /// Bytes of this session's records in each segment: what its expiry frees. A segment whose
    /// records compaction copied away stays here at 0 until it is deleted: it still holds the
    /// originals, so the session's tombstone must outlive it (else a full scan would find them,
    /// and nothing cancelling them, once the copies' and the tombstone's segments were gone).
    pub(super) bytes: Vec<(u32, u64)>,
}

impl SessionIndex {
    pub(super) fn new(meta: MetaRecord) -> Self {
        let last_activity_ms = meta.created_ms;
        Self {
            meta,
            latest_seq: 0,
            last_activity_ms,
            extents: Vec::new(),
            snapshots: Vec::new(),
            answers: Answers::default(),
            bytes: Vec::new(),
        }
    }

    pub(crate) fn full_meta(&self, session: SessionId) -> SessionMeta {
        SessionMeta {
            session,
            project: self.meta.project.clone(),
            status: self.meta.status,
            created_ms: self.meta.created_ms,
            last_activity_ms: self.last_activity_ms,
            latest_seq: self.latest_seq,
            resume_token_hash: self.meta.resume_token_hash.clone(),
        }
    }

    /// Whether the index holds a record at `place`: the events starting at `seq`, the answer whose
    /// command id hashes to `answer`, or a snapshot (the places [`Self::repoint`] moves).
    pub(crate) fn holds(&self, place: Pos, seq: Option<u64>, answer: Option<u64>) -> bool {
        let events =
            seq.is_some_and(|seq| self.extents.binary_search_by_key(&seq, |e| e.first_seq).is_ok_and(|i| self.extents[i].pos == place));
        let answer = answer.is_some_and(|hash| {
            self.answers.main.get(&hash) == Some(&place) || self.answers.overflow.iter().any(|&(h, p)| h == hash && p == place)
        });
        events || answer || self.snapshots.iter().any(|&(_, p)| p == place)
    }

    /// Whatever the index holds at `from` is at `to` now (a record copied forward).
    fn repoint(&mut self, from: Pos, to: Pos, seq: Option<u64>, answer: Option<u64>) {
        if let Some(seq) = seq
            && let Ok(i) = self.extents.binary_search_by_key(&seq, |e| e.first_seq)
            && self.extents[i].pos == from
        {
            self.extents[i].pos = to;
        }
        if let Some(hash) = answer {
            match self.answers.main.get_mut(&hash) {
                Some(p) if *p == from => *p = to,
                _ => {
                    for (h, p) in &mut self.answers.overflow {
                        if *h == hash && *p == from {
                            *p = to;
                        }
                    }
                }
            }
        }
        for (_, p) in &mut self.snapshots {
            if *p == from {
                *p = to;
            }
        }
    }

    /// Bytes of this session's records in `seg`.
    pub(crate) fn bytes_in(&self, seg: u32) -> u64 {
        self.bytes.iter().find(|(s, _)| *s == seg).map_or(0, |(_, n)| *n)
    }

    fn add_bytes(&mut self, seg: u32, len: u64) {
        match self.bytes.iter_mut().find(|(s, _)| *s == seg) {
            Some((_, n)) => *n += len,
            None => self.bytes.push((seg, len)),
        }
    }
}

/// A change one record makes, as the writer stages it and recovery reads it.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    Create(MetaRecord),
    Status(SessionStatus),
    /// `last_time`: the time of the append's last event (the session's newest).
    Events {
        first_seq: u64,
        count: u64,
        last_time: Option<u64>,
        answer: Option<u64>,
    },
    Answer(u64),
    /// `None`: a snapshot this code cannot read; it takes space, and is never returned.
    Snapshot(Option<u32>),
    DropSnapshots,
    Expiry,
    /// A COPY record (compaction): the record the index holds at `from` is now the one this copy
    /// carries; `released` bytes at `from` are no longer the session's. `seq` (the first seq of
    /// carried events) and `answer` (the hash of a carried answer's command id) find the place.
    Moved {
        from: Pos,
        released: u64,
        seq: Option<u64>,
        answer: Option<u64>,
    },
}

/// A record's change at its place; `len` is the record's whole length.
#[derive(Debug, Clone)]
pub(crate) struct Update {
    pub session: SessionId,
    pub pos: Pos,
    pub len: u32,
    pub change: Change,
}

/// What stopped a change from applying (only recovery can meet these: the writer validates first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Anomaly {
    /// A record of a session that does not exist (its creation's segment may have been deleted
    /// after a later expiry: recovery decides).
    NoSession,
    /// Events that do not continue the stream.
    Gap { expected: u64, found: u64 },
    /// A creation of a session that exists.
    Duplicate,
    /// A copy of a record the session does not have where the copy says it was.
    BadCopy,
}

/// An expiry's tombstone, live while any segment that held the session's records still exists:
/// without it, reopening would bring those records back.
pub(super) struct Tombstone {
    pub seg: u32,
    pub bytes: u64,
    pub covers: Vec<u32>,
}

pub(crate) struct Index {
    pub(super) sessions: BTreeMap<SessionId, SessionIndex>,
    /// The SipHash keys of the answer hashes. Random for an index built by a full scan; an index
    /// restored from a checkpoint keeps the checkpoint's, because its hashes were made with them.
    pub(super) keys: (u64, u64),
    /// Live bytes per existing segment; a segment at 0 can be deleted (unless the writer uses it).
    pub(super) live: BTreeMap<u32, u64>,
    pub(super) tombstones: Vec<Tombstone>,
}

impl Index {
    pub(crate) fn new() -> Self {
        Self::with_keys((rand::random(), rand::random()))
    }

    pub(super) fn with_keys(keys: (u64, u64)) -> Self {
        Self { sessions: BTreeMap::new(), keys, live: BTreeMap::new(), tombstones: Vec::new() }
    }

    /// SipHash-2-4 of the command id under this index's keys. Keyed (and the keys secret, random
    /// per directory) so that clients cannot aim collisions at one session; a collision costs a
    /// second read, never a wrong answer (a hit is confirmed by reading the record). Written out
    /// rather than `RandomState`, because checkpoints store the hashes: the function must be the
    /// same in every build that reads them (`sip_hash_is_the_reference_siphash_2_4` pins it).
    pub(crate) fn hash(&self, command_id: &str) -> u64 {
        #[allow(deprecated)] // `SipHasher` is deprecated only in favour of the unkeyed `DefaultHasher`
        let mut h = std::hash::SipHasher::new_with_keys(self.keys.0, self.keys.1);
        h.write(command_id.as_bytes());
        h.finish()
    }

    pub(crate) fn get(&self, session: &SessionId) -> Option<&SessionIndex> {
        self.sessions.get(session)
    }

    pub(crate) fn sessions_after(&self, after: Option<SessionId>) -> impl Iterator<Item = (&SessionId, &SessionIndex)> {
        use std::ops::Bound::{Excluded, Unbounded};
        let start = after.map_or(Unbounded, Excluded);
        self.sessions.range((start, Unbounded))
    }

    pub(crate) fn add_segment(&mut self, seg: u32) {
        self.live.entry(seg).or_insert(0);
    }

    /// Applies one record's change. On an anomaly nothing changes.
    pub(crate) fn apply(&mut self, u: Update) -> Result<(), Anomaly> {
        let len = u64::from(u.len);
        if let Change::Expiry = u.change {
            return if self.expire(u.session, u.pos, len, Vec::new()) { Ok(()) } else { Err(Anomaly::NoSession) };
        }
        let session = match u.change {
            Change::Create(meta) => {
                if self.sessions.contains_key(&u.session) {
                    return Err(Anomaly::Duplicate);
                }
                self.sessions.entry(u.session).or_insert(SessionIndex::new(meta))
            }
            Change::Moved { from, released, seq, answer } => {
                let s = self.sessions.get_mut(&u.session).ok_or(Anomaly::NoSession)?;
                let i = s.bytes.iter().position(|&(seg, n)| seg == from.seg && n >= released).ok_or(Anomaly::BadCopy)?;
                s.bytes[i].1 -= released; // at 0 it stays, while the segment does (see `bytes`)
                if let Some(live) = self.live.get_mut(&from.seg) {
                    *live = live.saturating_sub(released);
                }
                let to = Pos { seg: u.pos.seg, offset: u.pos.offset + super::record::COPY_PREFIX as u32 };
                s.repoint(from, to, seq, answer);
                s
            }
            change => {
                let s = self.sessions.get_mut(&u.session).ok_or(Anomaly::NoSession)?;
                apply_to_session(s, change, u.pos)?;
                s
            }
        };
        session.add_bytes(u.pos.seg, len);
        *self.live.entry(u.pos.seg).or_insert(0) += len;
        Ok(())
    }

    /// Drops a session at its tombstone (at `pos`, `len` bytes), with `orphans`: bytes of its
    /// records that recovery could not attach to it. Returns whether the session existed.
    pub(crate) fn expire(&mut self, session: SessionId, pos: Pos, len: u64, orphans: Vec<(u32, u64)>) -> bool {
        let removed = self.sessions.remove(&session);
        let existed = removed.is_some();
        let mut covers = self.release(orphans);
        if let Some(s) = removed {
            covers.extend(self.release(s.bytes));
        }
        self.bury(pos, len, covers);
        existed
    }

    /// Drops a session whose history recovery found broken, keeping its bytes live: they are
    /// returned, to be accounted for as an orphan's until a later tombstone explains them.
    pub(crate) fn forget(&mut self, session: &SessionId) -> Vec<(u32, u64)> {
        self.sessions.remove(session).map(|s| s.bytes).unwrap_or_default()
    }

    /// Counts bytes that belong to no live session but must stay until a later tombstone (records
    /// of a session whose creation's segment is gone; recovery only).
    pub(crate) fn add_live(&mut self, seg: u32, len: u64) {
        *self.live.entry(seg).or_insert(0) += len;
    }

    /// Takes a dead session's bytes off its segments' live counts; returns those segments.
    pub(crate) fn release(&mut self, bytes: Vec<(u32, u64)>) -> Vec<u32> {
        bytes
            .into_iter()
            .map(|(seg, n)| {
                if let Some(live) = self.live.get_mut(&seg) {
                    *live = live.saturating_sub(n);
                }
                seg
            })
            .collect()
    }

    /// Records a tombstone at `pos` that must outlive the segments in `covers`.
    pub(crate) fn bury(&mut self, pos: Pos, len: u64, mut covers: Vec<u32>) {
        // A session's own bytes and its orphans (recovery) can name the same segment; a checkpoint
        // stores each segment once, so the index must too, or the two ways of opening differ.
        covers.sort_unstable();
        covers.dedup();
        covers.retain(|&s| s != pos.seg && self.live.contains_key(&s));
        if covers.is_empty() {
            return; // everything it cancels is in its own segment, or already deleted
        }
        self.add_live(pos.seg, len);
        self.tombstones.push(Tombstone { seg: pos.seg, bytes: len, covers });
    }

    /// Segments with no live data, except those in `keep` (the writer's current and next).
    pub(crate) fn dead_segments(&self, keep: &[u32]) -> Vec<u32> {
        self.live.iter().filter(|(seg, live)| **live == 0 && !keep.contains(seg)).map(|(seg, _)| *seg).collect()
    }

    /// `deleted` are gone from disk (durably): tombstones that only they needed die too.
    pub(crate) fn forget_segments(&mut self, deleted: &[u32]) {
        for seg in deleted {
            self.live.remove(seg);
        }
        for s in self.sessions.values_mut() {
            s.bytes.retain(|(seg, _)| !deleted.contains(seg));
        }
        let mut freed = Vec::new();
        self.tombstones.retain_mut(|t| {
            t.covers.retain(|s| !deleted.contains(s));
            if t.covers.is_empty() {
                freed.push((t.seg, t.bytes));
            }
            !t.covers.is_empty()
        });
        self.release(freed);
    }

    /// Checks that every place the index holds is in a segment it knows (one that exists): what a
    /// checkpoint's index must satisfy once the segments after it are applied.
    pub(crate) fn check_places(&self) -> Result<(), String> {
        let known = |seg: u32| self.live.contains_key(&seg);
        for (id, s) in &self.sessions {
            let places = s.extents.iter().map(|e| e.pos.seg).chain(s.snapshots.iter().map(|(_, p)| p.seg));
            let places = places.chain(s.answers.main.values().map(|p| p.seg)).chain(s.answers.overflow.iter().map(|(_, p)| p.seg));
            if let Some(seg) = places.chain(s.bytes.iter().map(|(seg, _)| *seg)).find(|&seg| !known(seg)) {
                return Err(format!("session {id} has a record in segment {seg}, which is not in the log"));
            }
        }
        match self.tombstones.iter().find(|t| !known(t.seg) || t.covers.iter().any(|&c| !known(c))) {
            Some(t) => Err(format!("a tombstone in segment {} refers to a segment not in the log", t.seg)),
            None => Ok(()),
        }
    }

    /// The oldest segment the index knows of, and its live bytes.
    pub(crate) fn oldest(&self) -> Option<(u32, u64)> {
        self.live.iter().next().map(|(s, n)| (*s, *n))
    }

    /// Every segment the index knows of, ascending.
    pub(crate) fn segments(&self) -> Vec<u32> {
        self.live.keys().copied().collect()
    }

    /// The index as text that does not depend on the hash keys or on the order of hash maps: two
    /// indexes that answer every question the same dump the same.
    #[cfg(test)]
    pub(crate) fn dump(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for (id, s) in &self.sessions {
            let mut answers: Vec<Vec<Pos>> = s.answers.main.keys().map(|&h| s.answers.candidates(h)).collect();
            answers.sort();
            let mut bytes = s.bytes.clone();
            bytes.sort_unstable();
            let _ = writeln!(
                out,
                "session {id}: {:?} latest {} active {} extents {:?} snapshots {:?} answers {answers:?} bytes {bytes:?}",
                s.meta, s.latest_seq, s.last_activity_ms, s.extents, s.snapshots
            );
        }
        let _ = writeln!(out, "live {:?}", self.live);
        let mut tombstones: Vec<(u32, u64, Vec<u32>)> = self
            .tombstones
            .iter()
            .map(|t| {
                let mut covers = t.covers.clone();
                covers.sort_unstable();
                (t.seg, t.bytes, covers)
            })
            .collect();
        tombstones.sort();
        let _ = writeln!(out, "tombstones {tombstones:?}");
        out
    }

    /// Live bytes of a segment the index knows.
    pub(crate) fn live_in(&self, seg: u32) -> Option<u64> {
        self.live.get(&seg).copied()
    }

    #[cfg(test)]
    pub(crate) fn live_bytes(&self, seg: u32) -> Option<u64> {
        self.live.get(&seg).copied()
    }

    /// The extents holding seqs `from ..= to` of a session, and its latest seq.
    pub(crate) fn extents(&self, session: &SessionId, from: u64, to: u64) -> Option<(Vec<Extent>, u64)> {
        let s = self.sessions.get(session)?;
        let to = to.min(s.latest_seq);
        if from > to {
            return Some((Vec::new(), s.latest_seq));
        }
        let start = s.extents.partition_point(|e| e.first_seq <= from).saturating_sub(1);
        let end = s.extents.partition_point(|e| e.first_seq <= to);
        Some((s.extents[start..end].to_vec(), s.latest_seq))
    }

    /// `None` when the session does not exist; else the records that may hold the answer.
    pub(crate) fn answer_candidates(&self, session: &SessionId, command_id: &str) -> Option<Vec<Pos>> {
        let hash = self.hash(command_id);
        self.sessions.get(session).map(|s| s.answers.candidates(hash))
    }
}

fn apply_to_session(s: &mut SessionIndex, change: Change, pos: Pos) -> Result<(), Anomaly> {
    match change {
        Change::Status(status) => s.meta.status = status,
        Change::Events { first_seq, count, last_time, answer } => {
            // Saturating: bad data must be refused, never overflow.
            let expected = s.latest_seq.saturating_add(1);
            let Some(latest) = first_seq.checked_add(count.saturating_sub(1)).filter(|_| first_seq == expected && count > 0) else {
                return Err(Anomaly::Gap { expected, found: first_seq });
            };
            s.extents.push(Extent { first_seq, pos });
            s.latest_seq = latest;
            // As the sled backend: the newest event's time, never before the creation.
            s.last_activity_ms = last_time.map_or(s.meta.created_ms, |t| t.max(s.meta.created_ms));
            if let Some(hash) = answer {
                s.answers.insert(hash, pos);
            }
        }
        Change::Answer(hash) => s.answers.insert(hash, pos),
        Change::Snapshot(Some(version)) => match s.snapshots.iter_mut().find(|(v, _)| *v == version) {
            Some(entry) => entry.1 = pos,
            None => s.snapshots.push((version, pos)),
        },
        Change::Snapshot(None) => {}
        Change::DropSnapshots => s.snapshots.clear(),
        Change::Create(_) | Change::Expiry | Change::Moved { .. } => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> MetaRecord {
        MetaRecord { status: SessionStatus::Active, created_ms: 10, project: "p".into(), resume_token_hash: None }
    }

    fn at(seg: u32, offset: u32) -> Pos {
        Pos { seg, offset }
    }

    fn up(session: SessionId, pos: Pos, change: Change) -> Update {
        Update { session, pos, len: 100, change }
    }

    #[test]
    fn extents_answers_and_space_follow_the_records() {
        let mut ix = Index::new();
        let (a, b) = (SessionId::from_bytes([1; 16]), SessionId::from_bytes([2; 16]));
        for seg in 1..=3 {
            ix.add_segment(seg);
        }
        ix.apply(up(a, at(1, 0), Change::Create(meta()))).unwrap();
        ix.apply(up(b, at(1, 100), Change::Create(meta()))).unwrap();
        let h = ix.hash("c1");
        ix.apply(up(a, at(1, 200), Change::Events { first_seq: 1, count: 3, last_time: Some(50), answer: Some(h) })).unwrap();
        ix.apply(up(a, at(2, 0), Change::Events { first_seq: 4, count: 2, last_time: Some(40), answer: None })).unwrap();
        assert_eq!(
            ix.apply(up(a, at(2, 100), Change::Events { first_seq: 9, count: 1, last_time: None, answer: None })),
            Err(Anomaly::Gap { expected: 6, found: 9 })
        );
        assert_eq!(ix.apply(up(a, at(2, 100), Change::Create(meta()))), Err(Anomaly::Duplicate));
        let s = ix.get(&a).unwrap();
        assert_eq!((s.latest_seq, s.last_activity_ms), (5, 40));
        assert_eq!(ix.extents(&a, 2, 4).unwrap().0.len(), 2);
        assert_eq!(ix.extents(&a, 4, 99).unwrap().0, vec![Extent { first_seq: 4, pos: at(2, 0) }]);
        assert!(ix.extents(&a, 6, 9).unwrap().0.is_empty());
        assert_eq!(ix.answer_candidates(&a, "c1"), Some(vec![at(1, 200)]));
        assert_eq!(ix.answer_candidates(&a, "c2"), Some(vec![]));
        assert_eq!(ix.answer_candidates(&b, "c1"), Some(vec![]));
        // The same id again: the newest first, the older kept.
        ix.apply(up(a, at(2, 200), Change::Answer(h))).unwrap();
        assert_eq!(ix.answer_candidates(&a, "c1"), Some(vec![at(2, 200), at(1, 200)]));

        assert_eq!((ix.live_bytes(1), ix.live_bytes(2)), (Some(300), Some(200)));
        ix.apply(up(a, at(3, 0), Change::Expiry)).unwrap();
        assert!(ix.get(&a).is_none());
        // b keeps segment 1; segment 2 is dead, but the tombstone in 3 lives while 1 or 2 exist.
        assert_eq!((ix.live_bytes(1), ix.live_bytes(2), ix.live_bytes(3)), (Some(100), Some(0), Some(100)));
        assert_eq!(ix.dead_segments(&[]), vec![2]);
        ix.forget_segments(&[2]);
        assert_eq!(ix.live_bytes(3), Some(100), "still needed for segment 1");
        ix.apply(up(b, at(3, 100), Change::Expiry)).unwrap();
        assert_eq!(ix.dead_segments(&[3]), vec![1]);
        ix.forget_segments(&[1]);
        assert_eq!(ix.dead_segments(&[]), vec![3]);
    }

    /// What compaction's COPY record at `copy` (of `copy_len` bytes) says of the record at `from`.
    fn moved(session: SessionId, copy: Pos, copy_len: u32, from: Pos, released: u64, seq: Option<u64>, answer: Option<u64>) -> Update {
        Update { session, pos: copy, len: copy_len, change: Change::Moved { from, released, seq, answer } }
    }

    /// Where the index points for a record carried by the COPY record at `copy`.
    fn carried(copy: Pos) -> Pos {
        at(copy.seg, copy.offset + super::super::record::COPY_PREFIX as u32)
    }

    /// Given session `a` in segment 1 (create at 0, events 1..=3 with the answer to "c1" at 100,
    /// events 4..=5 at 200, the answer to "c2" at 300, a snapshot of version 7 at 400) and session
    /// `b` (create at 500), every record 100 bytes; segments 1 and 2 exist.
    fn given_two_sessions_in_segment_1() -> (Index, SessionId, SessionId) {
        let mut ix = Index::new();
        let (a, b) = (SessionId::from_bytes([1; 16]), SessionId::from_bytes([2; 16]));
        ix.add_segment(1);
        ix.add_segment(2);
        let (c1, c2) = (ix.hash("c1"), ix.hash("c2"));
        ix.apply(up(a, at(1, 0), Change::Create(meta()))).unwrap();
        ix.apply(up(a, at(1, 100), Change::Events { first_seq: 1, count: 3, last_time: Some(50), answer: Some(c1) })).unwrap();
        ix.apply(up(a, at(1, 200), Change::Events { first_seq: 4, count: 2, last_time: Some(60), answer: None })).unwrap();
        ix.apply(up(a, at(1, 300), Change::Answer(c2))).unwrap();
        ix.apply(up(a, at(1, 400), Change::Snapshot(Some(7)))).unwrap();
        ix.apply(up(b, at(1, 500), Change::Create(meta()))).unwrap();
        (ix, a, b)
    }

    #[test]
    fn a_moved_events_record_is_found_at_its_copy_with_its_answer_and_its_bytes() {
        let (mut ix, a, b) = given_two_sessions_in_segment_1();
        let c1 = ix.hash("c1");
        assert_eq!((ix.live_bytes(1), ix.live_bytes(2)), (Some(600), Some(0)));

        // When compaction copies the events 1..=3 (and their answer) to segment 2, 141 bytes.
        ix.apply(moved(a, at(2, 0), 141, at(1, 100), 100, Some(1), Some(c1))).unwrap();

        // Then the index points at the record the copy carries, its answer too; nothing else moved.
        let copy = carried(at(2, 0));
        assert_eq!(ix.extents(&a, 1, 99).unwrap().0, vec![Extent { first_seq: 1, pos: copy }, Extent { first_seq: 4, pos: at(1, 200) }]);
        assert_eq!(ix.answer_candidates(&a, "c1"), Some(vec![copy]));
        assert_eq!(ix.answer_candidates(&a, "c2"), Some(vec![at(1, 300)]));
        assert_eq!(ix.get(&a).unwrap().snapshots, vec![(7, at(1, 400))]);
        assert_eq!(ix.get(&a).unwrap().latest_seq, 5, "a move is not an append");
        // And the released bytes left segment 1 for the copy's in segment 2, for the session and
        // for the segments' live counts; session b is untouched.
        let s = ix.get(&a).unwrap();
        assert_eq!((s.bytes_in(1), s.bytes_in(2)), (400, 141));
        assert_eq!((ix.live_bytes(1), ix.live_bytes(2)), (Some(500), Some(141)));
        assert_eq!((ix.get(&b).unwrap().bytes_in(1), ix.get(&b).unwrap().bytes_in(2)), (100, 0));
    }

    #[test]
    fn once_everything_live_is_moved_out_of_a_segment_it_is_dead_and_can_be_forgotten() {
        let (mut ix, a, b) = given_two_sessions_in_segment_1();
        let (c1, c2) = (ix.hash("c1"), ix.hash("c2"));

        // When every record of segment 1 is copied to segment 2, as compaction copies them: in
        // order, each copy 41 bytes more than its record.
        let copies = [
            (a, 0, None, None),
            (a, 100, Some(1), Some(c1)),
            (a, 200, Some(4), None),
            (a, 300, None, Some(c2)),
            (a, 400, None, None),
            (b, 500, None, None),
        ];
        for (i, &(session, offset, seq, answer)) in copies.iter().enumerate() {
            ix.apply(moved(session, at(2, 141 * i as u32), 141, at(1, offset), 100, seq, answer)).unwrap();
        }

        // Then every place is in segment 2, segment 1 holds nothing live and no session counts it.
        let s = ix.get(&a).unwrap();
        assert_eq!(s.extents, vec![Extent { first_seq: 1, pos: carried(at(2, 141)) }, Extent { first_seq: 4, pos: carried(at(2, 282)) }]);
        assert_eq!(ix.answer_candidates(&a, "c1"), Some(vec![carried(at(2, 141))]));
        assert_eq!(ix.answer_candidates(&a, "c2"), Some(vec![carried(at(2, 423))]));
        assert_eq!(s.snapshots, vec![(7, carried(at(2, 564)))]);
        assert_eq!((s.bytes_in(1), s.bytes_in(2)), (0, 5 * 141));
        assert_eq!((ix.live_bytes(1), ix.live_bytes(2)), (Some(0), Some(6 * 141)));
        assert_eq!(ix.dead_segments(&[2]), vec![1]);
        ix.forget_segments(&[1]);
        assert_eq!(ix.check_places(), Ok(()), "nothing refers to the deleted segment");

        // And a copy of a copy (segment 2 compacted in turn) moves the place again: `from` is the
        // carried record, `released` the whole earlier copy.
        ix.add_segment(3);
        ix.apply(moved(a, at(3, 0), 141, carried(at(2, 141)), 141, Some(1), Some(c1))).unwrap();
        assert_eq!(ix.extents(&a, 1, 1).unwrap().0, vec![Extent { first_seq: 1, pos: carried(at(3, 0)) }]);
        assert_eq!(ix.answer_candidates(&a, "c1"), Some(vec![carried(at(3, 0))]));
        assert_eq!((ix.live_bytes(2), ix.live_bytes(3)), (Some(5 * 141), Some(141)));
    }

    #[test]
    fn an_older_answer_to_the_same_command_follows_its_record_too() {
        let (mut ix, a, _) = given_two_sessions_in_segment_1();
        let c2 = ix.hash("c2");
        // Given the answer to "c2" remembered again in segment 2: the newer is found first.
        ix.apply(up(a, at(2, 0), Change::Answer(c2))).unwrap();
        assert_eq!(ix.answer_candidates(&a, "c2"), Some(vec![at(2, 0), at(1, 300)]));

        // When the older one (now behind the newer) is copied forward.
        ix.apply(moved(a, at(2, 100), 141, at(1, 300), 100, None, Some(c2))).unwrap();

        // Then it is found at its copy, still after the newer one.
        assert_eq!(ix.answer_candidates(&a, "c2"), Some(vec![at(2, 0), carried(at(2, 100))]));
    }

    #[test]
    fn a_move_of_a_record_the_session_does_not_have_is_refused_and_changes_nothing() {
        let (mut ix, a, b) = given_two_sessions_in_segment_1();
        let c1 = ix.hash("c1");
        let before = ix.dump();
        let nobody = SessionId::from_bytes([9; 16]);

        // When a copy claims a session that does not exist.
        assert_eq!(ix.apply(moved(nobody, at(2, 0), 141, at(1, 100), 100, Some(1), None)), Err(Anomaly::NoSession));
        // When it releases more bytes than the session has where it says the record was.
        assert_eq!(ix.apply(moved(b, at(2, 0), 141, at(1, 500), 101, None, None)), Err(Anomaly::BadCopy));
        assert_eq!(ix.apply(moved(a, at(2, 0), 141, at(1, 100), 601, Some(1), Some(c1))), Err(Anomaly::BadCopy));
        // When it says the record was in a segment where the session has nothing.
        assert_eq!(ix.apply(moved(a, at(2, 0), 141, at(2, 100), 100, Some(1), Some(c1))), Err(Anomaly::BadCopy));
        assert_eq!(ix.apply(moved(a, at(2, 0), 141, at(5, 100), 100, Some(1), Some(c1))), Err(Anomaly::BadCopy));

        // Then the index is as it was: no place, byte or live count changed.
        assert_eq!(ix.dump(), before);
    }

    #[test]
    fn sip_hash_is_the_reference_siphash_2_4() {
        // The reference vectors of SipHash-2-4 (Aumasson and Bernstein): key 00..0f, messages of
        // 0 and 1 bytes. Checkpoints store hashes: if this ever changes, so must their format.
        let ix = Index::with_keys((0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908));
        assert_eq!(ix.hash(""), 0x726f_db47_dd0e_0e31);
        assert_eq!(ix.hash("\0"), 0x74f8_39c5_93dc_67fd);
        assert_ne!(Index::new().hash("c1"), Index::new().hash("c1"), "random keys per new index");
    }

    #[test]
    fn memory_per_session_event_and_answer() {
        let entry = size_of::<SessionId>() + size_of::<SessionIndex>();
        println!("session entry {entry} B, extent {} B, answer {} B", size_of::<Extent>(), size_of::<(u64, Pos)>());
        assert_eq!(size_of::<Extent>(), 16);
        assert_eq!(size_of::<(u64, Pos)>(), 16);
        assert!(entry <= 240, "{entry}");
    }
}
