//! Index checkpoints: the whole index as of a place in the log, so that opening reads it and scans
//! only what was written after that place (decision 0105, condition 5).
//!
//! A checkpoint is `index-<segment>-<offset>.ckpt` in the log's directory:
//!
//! ```text
//! u8     format = 1 (decision 0101: first, never rewritten)
//! 4      b"VIXC"
//! u32 BE segment, u32 BE offset   the end of the data it covers (a frame boundary)
//! u32 BE offset of the frame that ends there (opening checks that frame is there, intact)
//! u64 BE, u64 BE                  the SipHash keys of its answer hashes
//! u32 BE n, n × (u32 seg | u64 live bytes)
//! u32 BE n, n × (u32 seg | u64 bytes | u32 m | m × u32 covered seg)              tombstones
//! u32 BE n, n × session:
//!   16 id | u32 len | metadata record (layout::encode_meta) | u64 latest seq | u64 last activity
//!   | u32 n × (u64 first seq | u32 seg | u32 offset)                             extents
//!   | u32 n × (u32 schema version | u32 seg | u32 offset)                        snapshots
//!   | u32 n × (u64 hash | u32 seg | u32 offset)                                  answers (main)
//!   | u32 n × (u64 hash | u32 seg | u32 offset)                                  answers displaced, oldest first
//!   | u32 n × (u32 seg | u64 bytes)                                              bytes per segment
//! u32 BE CRC-32C of everything before it
//! ```
//!
//! Written atomically (a `.tmp`, fsynced, renamed, then the directory fsynced), only at a place
//! that is synced, so a checkpoint never covers data a crash could take back. The newest
//! [`KEEP`] are kept. Opening ([`super::recover`]) ignores, with a warning, one that does not
//! verify, and falls back to an older one or to a full scan: a checkpoint can make opening faster,
//! never change what it finds.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::index::{Answers, Extent, Index, SessionIndex, Tombstone};
use super::segment::{self, Pos};
use crate::SessionId;
use crate::layout;

pub(crate) const FORMAT_V1: u8 = 1;
const MAGIC: &[u8; 4] = b"VIXC";
const PREFIX: &str = "index-";
const SUFFIX: &str = ".ckpt";
const TMP_SUFFIX: &str = ".ckpt.tmp";
/// Checkpoints kept: the newest, and one older in case the newest turns out not to verify.
pub(crate) const KEEP: usize = 2;

/// What a checkpoint says about the log: where its data ended, and where the frame ending there
/// starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Covers {
    pub end: Pos,
    pub last_frame: u32,
}

pub(crate) fn path(dir: &Path, end: Pos) -> PathBuf {
    dir.join(format!("{PREFIX}{:08}-{:010}{SUFFIX}", end.seg, end.offset))
}

fn parse_name(name: &str) -> Option<Pos> {
    let (seg, offset) = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?.split_once('-')?;
    if seg.len() != 8 || offset.len() != 10 {
        return None;
    }
    Some(Pos { seg: seg.parse().ok()?, offset: offset.parse().ok()? })
}

/// The checkpoints in `dir`, newest first, by the place their names say they cover.
pub(crate) fn list(dir: &Path) -> io::Result<Vec<(Pos, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if let Some(end) = entry.file_name().to_str().and_then(parse_name) {
            found.push((end, entry.path()));
        }
    }
    found.sort_by_key(|(end, _)| std::cmp::Reverse(*end));
    Ok(found)
}

/// Removes the `.tmp` files a crash left behind (only the holder of the directory lock calls it).
pub(crate) fn remove_leftovers(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_str().is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(TMP_SUFFIX)) {
            tracing::info!(file = %entry.path().display(), "removing an unfinished index checkpoint");
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Writes `bytes` (from [`encode`]) as the checkpoint covering `end`, atomically and durably, then
/// removes all but the newest [`KEEP`].
pub(crate) fn write(dir: &Path, end: Pos, bytes: &[u8]) -> io::Result<()> {
    let done = path(dir, end);
    let mut tmp = done.clone().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, &done)?;
    segment::sync_dir(dir)?;
    for (_, old) in list(dir)?.into_iter().skip(KEEP) {
        match std::fs::remove_file(&old) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The index as a checkpoint covering `covers`. Segments after `covers.end.seg` (the one created
/// ahead, empty) are left out: opening learns them from the directory.
pub(crate) fn encode(index: &Index, covers: Covers) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(64 + index.sessions.len() * 160);
    out.push(FORMAT_V1);
    out.extend_from_slice(MAGIC);
    put_pos(&mut out, covers.end);
    put_u32(&mut out, covers.last_frame);
    put_u64(&mut out, index.keys.0);
    put_u64(&mut out, index.keys.1);
    let live: Vec<(&u32, &u64)> = index.live.iter().filter(|(seg, _)| **seg <= covers.end.seg).collect();
    put_len(&mut out, live.len());
    for (seg, bytes) in live {
        put_u32(&mut out, *seg);
        put_u64(&mut out, *bytes);
    }
    put_len(&mut out, index.tombstones.len());
    for t in &index.tombstones {
        put_u32(&mut out, t.seg);
        put_u64(&mut out, t.bytes);
        put_len(&mut out, t.covers.len());
        t.covers.iter().for_each(|&c| put_u32(&mut out, c));
    }
    put_len(&mut out, index.sessions.len());
    for (id, s) in &index.sessions {
        out.extend_from_slice(id.as_bytes());
        let meta = layout::encode_meta(&s.meta).map_err(|e| format!("session {id}: {e}"))?;
        put_len(&mut out, meta.len());
        out.extend_from_slice(&meta);
        put_u64(&mut out, s.latest_seq);
        put_u64(&mut out, s.last_activity_ms);
        put_len(&mut out, s.extents.len());
        for e in &s.extents {
            put_u64(&mut out, e.first_seq);
            put_pos(&mut out, e.pos);
        }
        put_len(&mut out, s.snapshots.len());
        for (version, pos) in &s.snapshots {
            put_u32(&mut out, *version);
            put_pos(&mut out, *pos);
        }
        put_len(&mut out, s.answers.main.len());
        for (hash, pos) in &s.answers.main {
            put_u64(&mut out, *hash);
            put_pos(&mut out, *pos);
        }
        put_len(&mut out, s.answers.overflow.len());
        for (hash, pos) in &s.answers.overflow {
            put_u64(&mut out, *hash);
            put_pos(&mut out, *pos);
        }
        put_len(&mut out, s.bytes.len());
        for (seg, bytes) in &s.bytes {
            put_u32(&mut out, *seg);
            put_u64(&mut out, *bytes);
        }
    }
    let crc = crc32c::crc32c(&out);
    put_u32(&mut out, crc);
    Ok(out)
}

/// The index a checkpoint holds and what it covers; `Err` says why it does not verify. Never
/// panics, whatever the bytes.
pub(crate) fn decode(bytes: &[u8]) -> Result<(Index, Covers), String> {
    let (body, crc) = bytes.split_at_checked(bytes.len().saturating_sub(4)).filter(|(_, c)| c.len() == 4).ok_or("shorter than its CRC")?;
    if crc32c::crc32c(body).to_be_bytes() != crc {
        return Err("its CRC does not match".into());
    }
    let mut r = Reader { bytes: body };
    match r.u8()? {
        FORMAT_V1 => {}
        other => return Err(format!("unknown format {other}")),
    }
    if r.take(4)? != MAGIC {
        return Err("not an index checkpoint (no magic)".into());
    }
    let covers = Covers { end: r.pos()?, last_frame: r.u32()? };
    let mut index = Index::with_keys((r.u64()?, r.u64()?));
    for _ in 0..r.len(12)? {
        let seg = r.u32()?;
        if seg > covers.end.seg || index.live.insert(seg, r.u64()?).is_some() {
            return Err(format!("segment {seg} listed twice, or after the place it covers"));
        }
    }
    for _ in 0..r.len(16)? {
        let (seg, bytes) = (r.u32()?, r.u64()?);
        let covers = (0..r.len(4)?).map(|_| r.u32()).collect::<Result<_, _>>()?;
        index.tombstones.push(Tombstone { seg, bytes, covers });
    }
    let mut previous = None;
    for _ in 0..r.len(SessionId::LEN + 4)? {
        let id = SessionId::from_bytes(r.take(SessionId::LEN)?.try_into().map_err(|_| "short session id")?);
        if previous.is_some_and(|p| p >= id) {
            return Err(format!("session {id} out of order"));
        }
        previous = Some(id);
        let meta_len = r.len(1)?;
        let meta = layout::decode_meta(id, r.take(meta_len)?).map_err(|e| e.to_string())?;
        let mut s = SessionIndex::new(meta);
        s.latest_seq = r.u64()?;
        s.last_activity_ms = r.u64()?;
        s.extents = (0..r.len(16)?).map(|_| Ok(Extent { first_seq: r.u64()?, pos: r.pos()? })).collect::<Result<_, String>>()?;
        s.snapshots = (0..r.len(12)?).map(|_| Ok((r.u32()?, r.pos()?))).collect::<Result<_, String>>()?;
        let mut answers = Answers::default();
        for _ in 0..r.len(16)? {
            let (hash, pos) = (r.u64()?, r.pos()?);
            if answers.main.insert(hash, pos).is_some() {
                return Err(format!("session {id}: an answer hash listed twice"));
            }
        }
        answers.overflow = (0..r.len(16)?).map(|_| Ok((r.u64()?, r.pos()?))).collect::<Result<_, String>>()?;
        s.answers = answers;
        s.bytes = (0..r.len(12)?).map(|_| Ok((r.u32()?, r.u64()?))).collect::<Result<_, String>>()?;
        index.sessions.insert(id, s);
    }
    if !r.bytes.is_empty() {
        return Err(format!("{} bytes after the last session", r.bytes.len()));
    }
    Ok((index, covers))
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    put_u32(out, u32::try_from(n).unwrap_or(u32::MAX));
}

fn put_pos(out: &mut Vec<u8>, pos: Pos) {
    put_u32(out, pos.seg);
    put_u32(out, pos.offset);
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let (head, tail) = self.bytes.split_at_checked(n).ok_or("truncated")?;
        self.bytes = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().map_err(|_| "truncated")?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().map_err(|_| "truncated")?))
    }

    fn pos(&mut self) -> Result<Pos, String> {
        Ok(Pos { seg: self.u32()?, offset: self.u32()? })
    }

    /// A count of entries of at least `min_entry` bytes each: more than the rest could hold is
    /// refused before anything is allocated for them.
    fn len(&mut self, min_entry: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_entry) > self.bytes.len() {
            return Err(format!("a count of {n} entries that the remaining {} bytes cannot hold", self.bytes.len()));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use proptest::prelude::*;
    use serde_json::json;

    use super::super::{SegmentEventLog, recover};
    use super::*;
    use crate::{CommandAnswer, EventLog, NewEvent, NewSession, RetentionPolicy, SessionFilter, SessionStatus, Snapshot, StoreConfig};

    /// The smallest segments, so that a few dozen operations roll them, and expiries delete them.
    const SEGMENT: u64 = 64 * 1024;
    const SESSIONS: u8 = 5;
    const COMMANDS: u8 = 3;

    /// On tmpfs when there is one: these tests open and sync logs hundreds of times.
    fn tempdir() -> tempfile::TempDir {
        match Path::new("/dev/shm").is_dir() {
            true => tempfile::tempdir_in("/dev/shm").unwrap(),
            false => tempfile::tempdir().unwrap(),
        }
    }

    fn config(dir: &Path) -> StoreConfig {
        StoreConfig::at(dir).with_segment_bytes(SEGMENT)
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    fn session(n: u8) -> SessionId {
        SessionId::from_bytes([n + 1; 16])
    }

    fn event(seq: u64, pad: usize) -> NewEvent {
        NewEvent {
            time_ms: 1_000 + seq,
            event_type: "t".into(),
            schema_version: 1,
            correlation_id: None,
            checksum: None,
            payload: json!({ "seq": seq, "pad": "p".repeat(pad) }).into(),
        }
    }

    #[derive(Debug, Clone)]
    enum Step {
        Create(u8),
        Append {
            s: u8,
            events: u8,
            pad: u16,
        },
        AppendAnswered {
            s: u8,
            command: u8,
            pad: u16,
        },
        RememberAnswer {
            s: u8,
            command: u8,
        },
        SetStatus {
            s: u8,
            ended: bool,
        },
        PutSnapshot {
            s: u8,
            version: u8,
        },
        DeleteSnapshots(Option<u8>),
        Expire,
        Checkpoint,
        /// A copy of the directory as a crash now would leave it, checked after the run.
        Crash,
    }

    fn step() -> impl Strategy<Value = Step> {
        let s = 0..SESSIONS;
        prop_oneof![
            2 => s.clone().prop_map(Step::Create),
            4 => (s.clone(), 1..4u8, 0..12_000u16).prop_map(|(s, events, pad)| Step::Append { s, events, pad }),
            3 => (s.clone(), 0..COMMANDS, 0..12_000u16).prop_map(|(s, command, pad)| Step::AppendAnswered { s, command, pad }),
            1 => (s.clone(), 0..COMMANDS).prop_map(|(s, command)| Step::RememberAnswer { s, command }),
            3 => (s.clone(), prop::bool::weighted(0.8)).prop_map(|(s, ended)| Step::SetStatus { s, ended }),
            1 => (s.clone(), 1..3u8).prop_map(|(s, version)| Step::PutSnapshot { s, version }),
            1 => proptest::option::of(s).prop_map(Step::DeleteSnapshots),
            3 => Just(Step::Expire),
            2 => Just(Step::Checkpoint),
            2 => Just(Step::Crash),
        ]
    }

    async fn run(log: &SegmentEventLog, step: &Step) {
        let latest = |s: u8| async move { log.latest_seq(session(s)).await.ok() };
        let answer = |command: u8, seq: u64| CommandAnswer { command_id: format!("c{command}"), seq, refusal: None };
        // Operations on sessions that do not exist (or conflict) fail; that is part of the mix.
        match *step {
            Step::Create(s) => {
                let new = NewSession { project: format!("p{s}"), created_ms: 500, resume_token_hash: Some("h".into()) };
                let _ = log.create_session(session(s), new).await;
            }
            Step::Append { s, events, pad } => {
                if let Some(seq) = latest(s).await {
                    let events = (1..=u64::from(events)).map(|i| event(seq + i, usize::from(pad))).collect();
                    log.append(session(s), seq, events).await.unwrap();
                }
            }
            Step::AppendAnswered { s, command, pad } => {
                if let Some(seq) = latest(s).await {
                    let events = vec![event(seq + 1, usize::from(pad))];
                    log.append_answered(session(s), seq, events, answer(command, seq + 1)).await.unwrap();
                }
            }
            Step::RememberAnswer { s, command } => {
                let _ = log.remember_answer(session(s), answer(command, 0)).await;
            }
            Step::SetStatus { s, ended } => {
                let _ = log.set_status(session(s), if ended { SessionStatus::Ended } else { SessionStatus::Active }).await;
            }
            Step::PutSnapshot { s, version } => {
                if let Some(seq) = latest(s).await {
                    let snapshot = Snapshot {
                        seq,
                        schema_version: u32::from(version),
                        time_ms: 7,
                        state: json!({ "s": s, "seq": seq }).into(),
                        log_bytes: None,
                    };
                    log.put_snapshot(session(s), snapshot).await.unwrap();
                }
            }
            Step::DeleteSnapshots(s) => log.delete_snapshots(s.map(session)).await.unwrap(),
            Step::Expire => {
                let policy = RetentionPolicy { ended_after: Duration::ZERO, idle_after: Duration::from_secs(1 << 30), batch_size: 100 };
                log.expire(&policy, 1_000_000).await.unwrap();
            }
            Step::Checkpoint => log.checkpoint().await.unwrap(),
            Step::Crash => {}
        }
    }

    /// Copies the log's files (not its lock): what a crash at this moment would leave, once a
    /// `flush` has waited out the writer's housekeeping (it deletes segments after replying).
    fn copy(from: &Path, to: &Path, with_checkpoints: bool) {
        for entry in std::fs::read_dir(from).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name == "LOCK" || (!with_checkpoints && name.contains(".ckpt")) {
                continue;
            }
            std::fs::copy(from.join(&name), to.join(&name)).unwrap();
        }
    }

    fn has_checkpoint(dir: &Path) -> bool {
        !list(dir).unwrap().is_empty()
    }

    /// Everything a client can read of the log.
    async fn contents(log: &SegmentEventLog) -> String {
        let mut out = String::new();
        let sessions = log.list_sessions(&SessionFilter::default(), None, 1000).await.unwrap().sessions;
        for meta in sessions {
            let s = meta.session;
            let events: Vec<(u64, u64, serde_json::Value)> =
                log.read(s, 1, None).await.unwrap().into_iter().map(|e| (e.seq, e.time_ms, e.payload)).collect();
            let mut answers = Vec::new();
            for c in 0..COMMANDS {
                answers.push(log.answer(s, &format!("c{c}")).await.unwrap());
            }
            let mut snapshots = Vec::new();
            for v in 1..3 {
                snapshots.push(log.get_snapshot(s, v).await.unwrap().map(|snap| (snap.seq, snap.state)));
            }
            out.push_str(&format!("{meta:?}\n{events:?}\n{answers:?}\n{snapshots:?}\n"));
        }
        out
    }

    /// Opens the crash image `image` with its checkpoints and without them: the same index, the
    /// same place to continue, the same reads.
    async fn check_image(image: &Path) {
        let (with, without) = (tempdir(), tempdir());
        copy(image, with.path(), true);
        copy(image, without.path(), false);
        let expected_checkpoint = has_checkpoint(image);
        let a = recover::recover(with.path(), SEGMENT).unwrap();
        let b = recover::recover(without.path(), SEGMENT).unwrap();
        assert_eq!(a.checkpoint.is_some(), expected_checkpoint, "a checkpoint that is there is used");
        assert!(b.checkpoint.is_none());
        assert_eq!(a.index.dump(), b.index.dump());
        assert_eq!((a.active, a.end, a.last_frame), (b.active, b.end, b.last_frame));
        assert!(a.scanned <= b.scanned);
        drop((a, b));
        let a = contents(&SegmentEventLog::open(config(with.path())).unwrap()).await;
        let b = contents(&SegmentEventLog::open(config(without.path())).unwrap()).await;
        assert_eq!(a, b);
    }

    proptest! {
        // 32 cases by default (about a second); CKPT_CASES=300 for a deeper run.
        #![proptest_config(ProptestConfig { cases: std::env::var("CKPT_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(32), ..ProptestConfig::default() })]

        /// The central property: for any history, with checkpoints taken at any points, a crash at
        /// any point (and the close, which writes a checkpoint of its own) opens from the newest
        /// checkpoint to exactly what a full scan finds: the same index, the same reads.
        #[test]
        fn opening_from_a_checkpoint_finds_what_a_full_scan_finds(steps in proptest::collection::vec(step(), 1..80)) {
            check_history(&steps);
        }
    }

    /// Runs `steps`, copying the directory at each `Crash`, and checks every copy and the closed
    /// log with [`check_image`].
    fn check_history(steps: &[Step]) {
        runtime().block_on(async {
            let dir = tempdir();
            let mut images = Vec::new();
            {
                let log = SegmentEventLog::open(config(dir.path())).unwrap();
                for step in steps {
                    run(&log, step).await;
                    if let Step::Crash = step {
                        log.flush().await.unwrap();
                        let image = tempdir();
                        copy(dir.path(), image.path(), true);
                        images.push(image);
                    }
                }
            }
            for image in &images {
                check_image(image.path()).await;
            }
            check_image(dir.path()).await;
        });
    }

    /// Found by the property: recovery gave an expired session's tombstone a segment twice (once
    /// for the session's bytes there, once for its orphans), the checkpoint once.
    #[test]
    fn a_tombstone_names_each_segment_it_outlives_once() {
        use Step::*;
        check_history(&[
            Create(1),
            AppendAnswered { s: 1, command: 0, pad: 3576 },
            AppendAnswered { s: 1, command: 0, pad: 6780 },
            Create(2),
            Create(4),
            AppendAnswered { s: 2, command: 0, pad: 11660 },
            Append { s: 2, events: 3, pad: 6513 },
            Append { s: 2, events: 3, pad: 7738 },
            Append { s: 1, events: 3, pad: 8004 },
            Append { s: 1, events: 3, pad: 4553 },
            Create(3),
            SetStatus { s: 2, ended: true },
            Append { s: 1, events: 3, pad: 1286 },
            Expire,
            Create(0),
        ]);
    }

    /// Found by the property: an expiry deleted the segment the newest checkpoint ends in, and
    /// opening could use no checkpoint until the next one (64 MiB later); now one is written at once.
    #[test]
    fn deleting_the_segment_a_checkpoint_ends_in_writes_a_new_checkpoint() {
        use Step::*;
        check_history(&[
            Create(0),
            Append { s: 0, events: 1, pad: 79 },
            Create(4),
            Append { s: 0, events: 3, pad: 10861 },
            SetStatus { s: 0, ended: true },
            Append { s: 4, events: 3, pad: 4694 },
            Checkpoint,
            Append { s: 0, events: 2, pad: 9040 },
            Expire,
            Crash,
        ]);
    }

    /// Found by the property (CI, then again here): an expiry deleted the segment the newest
    /// checkpoint ends in right after the log rolled to a new segment, so no checkpoint could be
    /// written in its place (the new segment holds no frame to name) and the stale one stayed.
    #[test]
    fn a_checkpoint_whose_segment_is_deleted_before_a_new_one_can_be_written_goes_too() {
        use Step::*;
        check_history(&[
            Create(2),
            Append { s: 2, events: 3, pad: 6918 },
            AppendAnswered { s: 2, command: 0, pad: 10597 },
            Create(1),
            Append { s: 2, events: 3, pad: 11220 },
            Checkpoint,
            SetStatus { s: 2, ended: true },
            Expire,
            Crash,
        ]);
    }

    /// The figures of docs/performance.md ("Index checkpoints"): a log of 10,000 sessions, each
    /// with 10 answered appends of ~1 KB, opened with and without its checkpoint. Slow; run with
    /// `cargo test --release -p vestibule-store --lib -- --ignored --nocapture checkpoint_figures`.
    #[test]
    #[ignore]
    fn checkpoint_figures() {
        use std::time::Instant;
        let dir = tempfile::tempdir().unwrap();
        let config = StoreConfig::at(dir.path()).with_durability(crate::Durability::Buffered { interval_ms: 100 });
        runtime().block_on(async {
            let log = std::sync::Arc::new(SegmentEventLog::open(config.clone()).unwrap());
            let tasks = (0..10_000u32).map(|i| {
                let log = log.clone();
                tokio::spawn(async move {
                    let s = SessionId::from_bytes([&i.to_be_bytes()[..], &[7u8; 12]].concat().try_into().unwrap());
                    let new = NewSession { project: "bench".into(), created_ms: 1, resume_token_hash: Some("h".repeat(43)) };
                    log.create_session(s, new).await.unwrap();
                    for seq in 0..10 {
                        let answer = CommandAnswer { command_id: format!("{i}-{seq}"), seq: seq + 1, refusal: None };
                        log.append_answered(s, seq, vec![event(seq + 1, 1000)], answer).await.unwrap();
                    }
                })
            });
            for t in futures_util::future::join_all(tasks).await {
                t.unwrap();
            }
            log.flush().await.unwrap();
        });
        let log_bytes: u64 =
            segment::list(dir.path()).unwrap().iter().map(|&s| std::fs::metadata(segment::path(dir.path(), s)).unwrap().len()).sum();
        // The close wrote a checkpoint: set it aside for the full scan (warm page cache both times).
        let checkpoints = list(dir.path()).unwrap();
        let aside = |ckpt: &PathBuf| dir.path().join(format!("aside-{}", ckpt.file_name().unwrap().to_str().unwrap()));
        for (_, ckpt) in &checkpoints {
            std::fs::rename(ckpt, aside(ckpt)).unwrap();
        }
        let started = Instant::now();
        let full = recover::recover(dir.path(), config.segment_bytes).unwrap();
        let full_scan = started.elapsed();
        assert!(full.checkpoint.is_none());
        for (_, ckpt) in &checkpoints {
            std::fs::rename(aside(ckpt), ckpt).unwrap();
        }
        let started = Instant::now();
        let bytes =
            encode(&full.index, Covers { end: Pos { seg: full.active, offset: full.end as u32 }, last_frame: full.last_frame.unwrap() })
                .unwrap();
        let serialize = started.elapsed();
        drop(full);
        let started = Instant::now();
        let with = recover::recover(dir.path(), config.segment_bytes).unwrap();
        let from_checkpoint = started.elapsed();
        assert!(with.checkpoint.is_some());
        println!(
            "10,000 sessions, {} MiB of segments: full scan {full_scan:?}; checkpoint of {} KiB serialized in {serialize:?}; open from it {from_checkpoint:?}",
            log_bytes >> 20,
            bytes.len() >> 10
        );
    }
}
