//! Opening: rebuild the index from the newest index checkpoint that verifies and the frames after
//! it, or, without one, from every segment in order.
//!
//! - The tail segment is the last one holding data. Its last frame is a torn write (never
//!   acknowledged: the sync that would have acknowledged it did not return) only when all of these
//!   hold; it is then cut off, with a warning:
//!   - the file has its preallocated size (at least the configured segment size, or the size of
//!     the other segment files if smaller): segments are preallocated, so a shorter file was cut
//!     from outside;
//!   - the frame's length lies inside the file and its CRC fails: a torn length is never longer
//!     than the one written (unwritten bytes are zeros), and the writer never writes a frame past
//!     the preallocated size, so a frame that runs past the end is damage;
//!   - the frame is incomplete: some 512-byte block of it (the smallest unit a device writes) is
//!     all zeros, as the part a crash did not write is. A frame every block of which was written
//!     but whose CRC fails (a flipped bit) was damaged after it was written;
//!   - no intact frame starts where it ends, and nothing but zeros comes after it.
//!
//!   A zero length (the end of the data) followed by non-zero bytes is a torn write whose header's
//!   block was not written, unless an intact frame follows its records (then a damaged header).
//!   Anything else at the tail is corruption, like a bad frame elsewhere.
//! - Before the bytes after the end of the data are zeroed again (in place: the file keeps its
//!   size), any that are not zero are copied to `<segment>.seg.torn-<offset>` beside it (fsynced),
//!   so a cut never destroys bytes without a trace; what to do with them is the operator's call.
//!   Zeroing means a later frame can never run into the remains of an earlier torn one.
//! - A bad frame anywhere else (an earlier segment, or with data after it) is corruption: opening
//!   fails with an error naming the segment and offset. Nothing is ever skipped.
//! - A compaction COPY must say truly what it moved: the record it carries is at its `from`, in an
//!   earlier segment (whole, or inside the earlier copy its released length says), and its origin
//!   is that record's; a copy whose `from` segment is gone must have been made from the oldest
//!   segment. Anything else is corruption: such a copy would open now and make a later open fail,
//!   once compaction had moved the session's records by what the copy claimed.
//! - Segments after the tail hold no data (the writer creates one ahead of need): they are deleted,
//!   and the writer creates a fresh one.
//!
//! A checkpoint ([`checkpoint`]) is used only if it verifies: its CRC and format; the place it
//! covers is in a segment that holds data, and the frame it says ends there is there and intact
//! (so a checkpoint newer than the data, after a torn write was cut, is refused); every segment on
//! disk up to that place is one it knows (the ones it knows that are gone were deleted after it,
//! and are forgotten as the writer would); and, once the frames after it are applied, by the same
//! rules as a full scan, nothing it holds refers to a segment that is gone. Any failure, including
//! one while scanning after it, is a warning and the next older checkpoint, then a full scan, is
//! tried: a full scan is what reports real corruption. The tail is repaired (cut and zeroed) only
//! once the index is settled.
//!
//! Residual risks, accepted:
//! - damage to both the length and the records of a frame in the tail segment can hide the intact
//!   frames after it, which would then be cut as part of a torn write (their bytes are kept in the
//!   `.torn-` file);
//! - damage that zeroes a whole 512-byte block of the last frame, or its length, looks like a torn
//!   write and is cut (kept in the `.torn-` file);
//! - a tail segment cut from outside exactly at a frame boundary is indistinguishable from a log
//!   that ends there (a warning says the file is short);
//! - with a checkpoint, frames before its place are not read at open. Every read of a record
//!   checks the CRC of the frame around it (`read.rs`), so corruption there is reported when the
//!   record is read (a corrupt record naming its session, segment file and offset), never served.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::checkpoint::{self, Covers};
use super::frame::{self, Header};
use super::index::{Anomaly, Change, Index, Update};
use super::record::{self, Body};
use super::segment::{self, Pos};
use crate::{SessionId, StoreError, layout};

/// What opening found: the index, and where the writer continues.
pub(crate) struct Recovered {
    pub index: Index,
    /// The segment the writer appends to, and the end of its data.
    pub active: u32,
    pub end: u64,
    /// Where the last frame of the active segment starts (`None`: it holds no frame).
    pub last_frame: Option<u32>,
    /// The checkpoint the index was restored from, if any (the end of the data it covers).
    pub checkpoint: Option<Pos>,
    /// Bytes of frames read at open: what is not yet in any checkpoint.
    pub scanned: u64,
    /// Per segment read at open: the offset reading started at, and where every frame from there
    /// starts.
    pub frames: HashMap<u32, (u32, Vec<u32>)>,
}

/// Rebuilds the index of the log in `dir` (creating its first segment if there is none).
pub(crate) fn recover(dir: &Path, segment_bytes: u64) -> Result<Recovered, StoreError> {
    let io = |source| StoreError::Io { dir: dir.to_path_buf(), source };
    let mut segs = segment::list(dir).map_err(io)?;
    if segs.is_empty() {
        segment::create(dir, 1, segment_bytes).map_err(io)?;
        segs.push(1);
    }
    let tail = tail_segment(dir, &segs).map_err(io)?;
    let full_len = preallocated_len(dir, &segs, tail, segment_bytes).map_err(io)?;
    // Segments after the tail hold no data; they are deleted once the log is known to open (a
    // refused open changes nothing).
    let empty: Vec<u32> = segs.iter().copied().filter(|&s| s > tail).collect();
    segs.retain(|&s| s <= tail);
    if let Err(e) = checkpoint::remove_leftovers(dir) {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot remove unfinished index checkpoints");
    }
    let checkpoints = checkpoint::list(dir).unwrap_or_else(|e| {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot list the index checkpoints; scanning the whole log");
        Vec::new()
    });
    let mut found = None;
    for (_, path) in checkpoints {
        match from_checkpoint(dir, &segs, tail, full_len, &path) {
            Ok(scanned) => {
                found = Some(scanned);
                break;
            }
            Err(reason) => tracing::warn!(
                checkpoint = %path.display(),
                %reason,
                "ignoring an index checkpoint that does not verify (an older one, or a full scan, is used)"
            ),
        }
    }
    let (scan, checkpoint) = match found {
        Some((scan, covers)) => (scan, Some(covers)),
        None => (full_scan(dir, &segs, tail, full_len)?, None),
    };
    for &seg in &empty {
        std::fs::remove_file(segment::path(dir, seg)).map_err(io)?;
    }
    segment::sync_dir(dir).map_err(io)?;
    // Only now, with the index settled, is the tail cut at the end of its data and zeroed after it.
    let file = segment::open_rw(dir, tail).map_err(io)?;
    zero_after(dir, tail, &file, scan.end, segment_bytes).map_err(io)?;
    Ok(Recovered {
        index: scan.index,
        active: tail,
        end: scan.end,
        last_frame: scan.last_frame,
        checkpoint,
        scanned: scan.scanned,
        frames: scan.frames,
    })
}

fn full_scan(dir: &Path, segs: &[u32], tail: u32, full_len: u64) -> Result<Scan, StoreError> {
    let mut scan = Scan::new(dir, Index::new(), full_len);
    scan.on_disk = Some(segs.to_vec());
    scan.early_copies(segs)?;
    for &seg in segs {
        scan.index.add_segment(seg);
        scan.segment(seg, 0, seg == tail)?;
    }
    scan.finish()?;
    Ok(scan)
}

/// The index from the checkpoint at `path` and the frames after it, or why it cannot be used.
fn from_checkpoint(dir: &Path, segs: &[u32], tail: u32, full_len: u64, path: &Path) -> Result<(Scan, Pos), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let (index, covers) = checkpoint::decode(&bytes)?;
    if checkpoint::path(dir, covers.end) != path {
        return Err(format!("it covers segment {} offset {}, not what its name says", covers.end.seg, covers.end.offset));
    }
    if covers.end.seg > tail || !segs.contains(&covers.end.seg) {
        return Err(format!("it covers segment {}, which holds no data", covers.end.seg));
    }
    check_frame_ends_at(dir, covers).map_err(|reason| format!("it is newer than the log's data: {reason}"))?;
    let known = index.segments();
    if let Some(unknown) = segs.iter().find(|&&s| s <= covers.end.seg && !known.contains(&s)) {
        return Err(format!("segment {unknown} is on disk but not in it"));
    }
    // Segments it knows that are gone were deleted after it was written, once nothing in them was
    // live: forgotten as the writer forgot them, after the frames that made them dead. Those
    // frames may still name them: a compaction copy's `from` (decision 0105), so forgetting them
    // first would refuse the copy.
    let gone: Vec<u32> = known.into_iter().filter(|s| !segs.contains(s)).collect();

    let mut scan = Scan::new(dir, index, full_len);
    scan.last_frame = Some(covers.last_frame);
    let failed = |e: StoreError| format!("the frames after it do not apply: {e}");
    scan.segment(covers.end.seg, u64::from(covers.end.offset), covers.end.seg == tail).map_err(failed)?;
    for &seg in segs.iter().filter(|&&s| s > covers.end.seg) {
        scan.index.add_segment(seg);
        scan.segment(seg, 0, seg == tail).map_err(failed)?;
    }
    scan.index.forget_segments(&gone);
    scan.finish().map_err(failed)?;
    scan.index.check_places()?;
    Ok((scan, covers.end))
}

/// Checks that the frame a checkpoint says ends where it ends is there and intact.
fn check_frame_ends_at(dir: &Path, covers: Covers) -> Result<(), String> {
    let (start, end) = (u64::from(covers.last_frame), u64::from(covers.end.offset));
    let len = end.checked_sub(start + frame::HEADER_LEN as u64).ok_or("its last frame is shorter than a header")?;
    let file = File::open(segment::path(dir, covers.end.seg)).map_err(|e| e.to_string())?;
    let mut h = [0u8; frame::HEADER_LEN];
    file.read_exact_at(&mut h, start).map_err(|e| format!("its last frame at offset {start}: {e}"))?;
    let header = Header::parse(&h);
    if u64::from(header.len) != len {
        return Err(format!("the frame at offset {start} is {} bytes long, not {len}", header.len));
    }
    let mut records = vec![0u8; header.len as usize];
    file.read_exact_at(&mut records, start + frame::HEADER_LEN as u64).map_err(|e| format!("its last frame at offset {start}: {e}"))?;
    if !header.matches(&records) {
        return Err(format!("the CRC of the frame at offset {start} does not match"));
    }
    Ok(())
}

/// The size the tail segment must have for a bad last frame in it to be a torn write: the size
/// segments are preallocated to (`segment_bytes`), or, if the directory's other segments are smaller
/// (written with a smaller setting), theirs. A file shorter than that was cut from outside.
fn preallocated_len(dir: &Path, segs: &[u32], tail: u32, segment_bytes: u64) -> io::Result<u64> {
    let mut full = segment_bytes;
    for &seg in segs.iter().filter(|&&s| s != tail) {
        let len = std::fs::metadata(segment::path(dir, seg))?.len();
        if len > 0 {
            full = full.min(len);
        }
    }
    Ok(full)
}

/// The last segment whose first frame is not the end marker (or the first segment, if none is).
fn tail_segment(dir: &Path, segs: &[u32]) -> io::Result<u32> {
    for &seg in segs.iter().rev() {
        let file = File::open(segment::path(dir, seg))?;
        let mut len = [0u8; 4];
        let has_data = match file.read_exact_at(&mut len, 0) {
            Ok(()) => len != [0; 4],
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => file.metadata()?.len() > 0,
            Err(e) => return Err(e),
        };
        if has_data {
            return Ok(seg);
        }
    }
    Ok(segs.first().copied().unwrap_or(1))
}

fn corrupt(dir: &Path, place: Pos, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Engine(format!(
        "the event log is corrupt in {} at offset {}: {reason}; refusing to open it (nothing is skipped)",
        segment::path(dir, place.seg).display(),
        place.offset
    ))
}

/// A frame that could not be read, and why.
struct BadFrame {
    reason: String,
    /// Where the frame claims to end, if that is inside the file.
    claimed_end: Option<u64>,
}

/// Records of sessions not (or no longer) in the index: legitimate only when a later tombstone
/// explains them (their earlier records were in segments deleted after that tombstone).
struct Orphan {
    place: Pos,
    what: String,
    bytes: Vec<(u32, u64)>,
}

struct Scan {
    dir: PathBuf,
    /// The segments on disk, for a full scan: a copy whose `from` is not among them was applied
    /// first (`early_copies`). `None` from a checkpoint, where every copy's `from` is in the index.
    on_disk: Option<Vec<u32>>,
    index: Index,
    orphans: HashMap<SessionId, Orphan>,
    /// The end of the data in the last segment scanned, and where its last frame starts.
    end: u64,
    last_frame: Option<u32>,
    /// Bytes of frames read.
    scanned: u64,
    /// The segment a copy's record was last looked up in ([`Self::check_copy`]): one descriptor.
    looked_up: Option<(u32, File)>,
    /// For each session and segment compaction copied its records from, the place of the last
    /// record copied, as far as this scan has seen ([`Self::check_copy`]).
    copied_up_to: HashMap<(SessionId, u32), u32>,
    /// The size the tail segment was preallocated to ([`preallocated_len`]).
    full_len: u64,
    /// Per segment scanned: where the scan started, and the start of every frame it applied, in
    /// order (readers find a record's frame by them, to check its CRC).
    frames: HashMap<u32, (u32, Vec<u32>)>,
}

impl Scan {
    fn new(dir: &Path, index: Index, full_len: u64) -> Self {
        Self {
            full_len,
            frames: HashMap::new(),
            dir: dir.to_path_buf(),
            on_disk: None,
            index,
            orphans: HashMap::new(),
            end: 0,
            last_frame: None,
            scanned: 0,
            looked_up: None,
            copied_up_to: HashMap::new(),
        }
    }

    /// Applies every frame of one segment from `start` (a frame boundary) to the end of its data.
    fn segment(&mut self, seg: u32, start: u64, is_tail: bool) -> Result<(), StoreError> {
        let dir = self.dir.clone();
        let io = |source| StoreError::Io { dir: dir.clone(), source };
        let file = File::open(segment::path(&self.dir, seg)).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        (&file).seek(SeekFrom::Start(start)).map_err(io)?;
        let mut reader = BufReader::with_capacity(1 << 20, &file);
        let mut offset = start;
        let mut records = Vec::new();
        if start > file_len {
            return Err(corrupt(&self.dir, Pos { seg, offset: start as u32 }, "the place to scan from is past the end of the file"));
        }
        if start == 0 {
            self.last_frame = None;
        }
        self.frames.insert(seg, (start as u32, Vec::new()));
        loop {
            let place = Pos { seg, offset: offset as u32 };
            match read_frame(&mut reader, offset, file_len, &mut records).map_err(io)? {
                Ok(None) => {
                    if is_tail {
                        self.check_end_of_tail(&file, place, file_len)?;
                    }
                    break;
                }
                Ok(Some(len)) => {
                    self.frame(place, &records)?;
                    self.frames.entry(seg).or_insert_with(|| (start as u32, Vec::new())).1.push(place.offset);
                    self.last_frame = Some(place.offset);
                    self.scanned += len;
                    offset += len;
                }
                Err(bad) if is_tail => match torn_or_damaged(&file, offset, &bad, file_len, self.full_len).map_err(io)? {
                    Ok(()) => {
                        tracing::warn!(
                            segment = %segment::path(&self.dir, seg).display(),
                            offset,
                            reason = %bad.reason,
                            "cutting off a torn write at the end of the event log (it was never acknowledged)"
                        );
                        break;
                    }
                    Err(reason) => return Err(corrupt(&self.dir, place, reason)),
                },
                Err(bad) => return Err(corrupt(&self.dir, place, bad.reason)),
            }
        }
        self.end = offset;
        Ok(())
    }

    /// The data of the tail ends at `place` (a zero length, or the end of the file). Non-zero bytes
    /// after it are the remains of a torn write whose header's block was not written, unless the
    /// file is short (cut from outside) or an intact frame follows their records (a damaged header
    /// hiding acknowledged frames): then it is corruption.
    fn check_end_of_tail(&self, file: &File, place: Pos, file_len: u64) -> Result<(), StoreError> {
        let io = |source| StoreError::Io { dir: self.dir.clone(), source };
        let at = u64::from(place.offset);
        if file_len < self.full_len && at > 0 && at < file_len {
            // The writer's files are full size; one cut short after its data ends exactly there.
            return Err(corrupt(
                &self.dir,
                place,
                format!(
                    "the data ends here, {} bytes before the end of the file, and the file is {file_len} bytes, shorter than the {} it was preallocated to (cut from outside, not a torn write)",
                    file_len - at,
                    self.full_len
                ),
            ));
        }
        if file_len < self.full_len {
            tracing::warn!(
                segment = %segment::path(&self.dir, place.seg).display(),
                file_len,
                preallocated = self.full_len,
                end_of_data = at,
                "the last segment file is shorter than segments are preallocated to: if it was cut from outside, anything after the end of its data is lost"
            );
        }
        let Some((first, _)) = nonzero_range(file, at, file_len).map_err(io)? else { return Ok(()) };
        if file_len < self.full_len {
            return Err(corrupt(
                &self.dir,
                place,
                format!(
                    "the data ends here but non-zero bytes follow at offset {first}, and the file is {file_len} bytes, shorter than the {} it was preallocated to (cut from outside, not a torn write)",
                    self.full_len
                ),
            ));
        }
        let walked = walk_records(file, at + frame::HEADER_LEN as u64, file_len).map_err(io)?;
        if walked > at + frame::HEADER_LEN as u64 && intact_frame_at(file, walked, file_len).map_err(io)? {
            return Err(corrupt(
                &self.dir,
                place,
                format!(
                    "a frame with a zero length, whose records run to an intact frame at offset {walked} (a damaged header, not a torn write)"
                ),
            ));
        }
        tracing::warn!(
            segment = %segment::path(&self.dir, place.seg).display(),
            offset = at,
            first_nonzero = first,
            "cutting off a torn write at the end of the event log whose header was never written (it was never acknowledged)"
        );
        Ok(())
    }

    fn frame(&mut self, frame_place: Pos, records: &[u8]) -> Result<(), StoreError> {
        let base = frame_place.offset as usize + frame::HEADER_LEN;
        for raw in record::split(records) {
            let raw = raw.map_err(|(at, reason)| corrupt(&self.dir, Pos { seg: frame_place.seg, offset: (base + at) as u32 }, reason))?;
            let place = Pos { seg: frame_place.seg, offset: (base + raw.offset) as u32 };
            let (session, body) = record::decode(raw.kind, raw.body).map_err(|reason| corrupt(&self.dir, place, reason))?;
            if let Body::Copy(c) = &body {
                if self.on_disk.as_ref().is_some_and(|segs| !segs.contains(&c.from.seg)) {
                    continue; // applied before everything else, by `early_copies`
                }
                self.check_copy(session, place, c).map_err(|reason| corrupt(&self.dir, place, reason))?;
            }
            let change = self.change_of(body).map_err(|reason| corrupt(&self.dir, place, reason))?;
            if let Change::Moved { from, released, .. } = change {
                let bad_copy =
                    |dir: &Path| corrupt(dir, place, format!("a copy of a record session {session} does not have where it says"));
                if self.index.get(&session).is_none() && self.orphans.contains_key(&session) {
                    // A copy of an orphan (a record of a session whose creation's segment is
                    // gone, which a later tombstone must explain): moved as the writer moved it,
                    // among the orphan's bytes.
                    if !self.move_orphan(session, from.seg, released, place.seg, raw.len as u64) {
                        return Err(bad_copy(&self.dir));
                    }
                    continue;
                }
                // A copy of a record the index holds (its original was applied before it, or is
                // in the checkpoint): anything else is not what the writer wrote.
                let applied = self.index.apply(Update { session, pos: place, len: raw.len as u32, change });
                applied.map_err(|_| bad_copy(&self.dir))?;
                continue;
            }
            self.apply(Update { session, pos: place, len: raw.len as u32, change })?;
        }
        Ok(())
    }

    fn change_of(&self, body: Body<'_>) -> Result<Change, String> {
        Ok(match body {
            Body::Create(meta) => Change::Create(meta),
            Body::Status(meta) => Change::Status(meta.status),
            Body::Events(e) => {
                let last = e.records.last().ok_or("an events record without events")?;
                let last_time = layout::event_record_time(last).ok_or("an unreadable event record")?;
                Change::Events {
                    first_seq: e.first_seq,
                    count: e.records.len() as u64,
                    last_time: Some(last_time),
                    answer: e.answer.map(|(id, _)| self.index.hash(id)),
                }
            }
            Body::Answer { command_id, .. } => Change::Answer(self.index.hash(command_id)),
            Body::Snapshot(record) => Change::Snapshot(record::snapshot_version(record)),
            Body::DropSnapshots => Change::DropSnapshots,
            Body::Expiry => Change::Expiry,
            Body::Copy(c) => {
                let (_, inner) = record::decode(c.kind, c.body)?;
                let (seq, answer) = match inner {
                    Body::Events(e) => (Some(e.first_seq), e.answer.map(|(id, _)| self.index.hash(id))),
                    Body::Answer { command_id, .. } => (None, Some(self.index.hash(command_id))),
                    _ => (None, None),
                };
                Change::Moved { from: c.from, released: u64::from(c.released), seq, answer }
            }
        })
    }

    /// A copy (at `place`) says truly where the record it carries was and where it was first
    /// written: the record is at `from`, before the copy, either as itself (`released` is its
    /// length, and it was first written there) or inside an earlier copy of it (`released` is that
    /// copy's length, and the origin is the one that copy gives). Later opens apply the copies
    /// whose `from` segment is gone in the order of their origins, so a copy accepted here with an
    /// origin the log does not bear out would turn this log, once compaction has run, into one
    /// that does not open. And the record was not copied before: compaction walks a segment
    /// forwards, so the copies of one session's records from one segment name ever later places
    /// (a second copy of a record would release its bytes twice, and the compactor, which counts
    /// on those bytes, would then skip records it never copied). One positional read per copy; a
    /// copy whose `from` segment is gone (opening from a checkpoint) is not checked, and from a
    /// checkpoint only the copies after it are compared with each other.
    fn check_copy(&mut self, session: SessionId, place: Pos, c: &record::Copied<'_>) -> Result<(), String> {
        // Compaction copies from the oldest segment, never the one being written, to the head. A
        // copy within its own segment would break what the compactor counts on there: that what
        // it already copied of a session is a prefix of the session's records.
        if c.from.seg >= place.seg {
            return Err(format!("a copy of a record at {}:{}, not in an earlier segment", c.from.seg, c.from.offset));
        }
        if let Some(&last) = self.copied_up_to.get(&(session, c.from.seg))
            && c.from.offset <= last
        {
            return Err(format!(
                "a copy of a record at {}:{}, where compaction had already copied session {session}'s records up to offset {last}",
                c.from.seg, c.from.offset
            ));
        }
        let (whole, released) = (c.whole.len() as u64, u64::from(c.released));
        let prefix = record::COPY_PREFIX as u64;
        let in_a_copy = match released {
            n if n == whole => false,
            n if n == whole + prefix && u64::from(c.from.offset) >= prefix => true,
            n => return Err(format!("a copy that releases {n} bytes for a record of {whole} bytes")),
        };
        let start = if in_a_copy { u64::from(c.from.offset) - prefix } else { u64::from(c.from.offset) };
        if self.looked_up.as_ref().is_none_or(|(seg, _)| *seg != c.from.seg) {
            match File::open(segment::path(&self.dir, c.from.seg)) {
                Ok(file) => self.looked_up = Some((c.from.seg, file)),
                Err(e) if e.kind() == io::ErrorKind::NotFound && self.on_disk.is_none() => return Ok(()),
                Err(e) => return Err(format!("cannot read the segment a copy names: {e}")),
            }
        }
        let Some((_, file)) = &self.looked_up else { unreachable!("opened above") };
        let mut there = vec![0; released as usize];
        file.read_exact_at(&mut there, start).map_err(|_| "a copy of a record past the end of its segment".to_string())?;
        let origin = if in_a_copy {
            let earlier = match record::split(&there).next() {
                Some(Ok(raw)) if raw.kind == record::COPY && raw.len == there.len() => record::decode(raw.kind, raw.body),
                _ => Err("no copy".into()),
            };
            match earlier {
                Ok((_, Body::Copy(earlier))) if earlier.whole == c.whole => earlier.origin,
                _ => return Err("a copy of a record that is not inside the copy where it says".into()),
            }
        } else {
            if there != c.whole {
                return Err("a copy of a record that is not where it says".into());
            }
            c.from
        };
        if c.origin != origin {
            return Err(format!(
                "a copy that says its record was first written at {}:{}, not at {}:{}",
                c.origin.seg, c.origin.offset, origin.seg, origin.offset
            ));
        }
        self.copied_up_to.insert((session, c.from.seg), c.from.offset);
        Ok(())
    }

    /// Copies (compaction) whose `from` segment is gone, applied before the first segment: such a
    /// copy was made from the oldest segment there was, so its record came before everything on
    /// disk now. Applied as the records they carry, at their places, in the order the records were
    /// first written (their origins). One extra read of the log, for a full scan only.
    fn early_copies(&mut self, segs: &[u32]) -> Result<(), StoreError> {
        let dir = self.dir.clone();
        let io = |source| StoreError::Io { dir: dir.clone(), source };
        let mut early = Vec::new();
        for &seg in segs {
            let file = File::open(segment::path(&self.dir, seg)).map_err(io)?;
            let file_len = file.metadata().map_err(io)?.len();
            let mut reader = BufReader::with_capacity(1 << 20, &file);
            let (mut offset, mut records) = (0u64, Vec::new());
            // A bad frame ends this pass for the segment: the main pass decides what it is.
            while let Ok(Some(len)) = read_frame(&mut reader, offset, file_len, &mut records).map_err(io)? {
                let base = offset as usize + frame::HEADER_LEN;
                for raw in record::split(&records).map_while(Result::ok) {
                    if raw.kind != record::COPY {
                        continue;
                    }
                    let place = Pos { seg, offset: (base + raw.offset) as u32 };
                    let (session, body) = record::decode(raw.kind, raw.body).map_err(|reason| corrupt(&self.dir, place, reason))?;
                    let Body::Copy(c) = body else { continue };
                    if segs.contains(&c.from.seg) {
                        continue;
                    }
                    // Compaction copies from the oldest segment there is, and a record's origin is
                    // never after it: both come before every segment still on disk.
                    if segs.first().is_some_and(|&first| c.from.seg > first) || c.origin > c.from {
                        return Err(corrupt(
                            &self.dir,
                            place,
                            "a copy from a gone segment that was not the oldest, or of a record first written after it",
                        ));
                    }
                    let (_, inner) = record::decode(c.kind, c.body).map_err(|reason| corrupt(&self.dir, place, reason))?;
                    let change = self.change_of(inner).map_err(|reason| corrupt(&self.dir, place, reason))?;
                    let at = Pos { seg, offset: place.offset + record::COPY_PREFIX as u32 };
                    early.push((c.origin, Update { session, pos: at, len: raw.len as u32, change }));
                }
                offset += len;
            }
        }
        early.sort_by_key(|(origin, _)| *origin);
        for (_, u) in early {
            self.apply(u)?;
        }
        Ok(())
    }

    fn apply(&mut self, u: Update) -> Result<(), StoreError> {
        let (session, pos, len) = (u.session, u.pos, u64::from(u.len));
        if let Change::Expiry = u.change {
            let orphans = self.orphans.remove(&session).map(|o| o.bytes).unwrap_or_default();
            self.index.expire(session, pos, len, orphans);
            return Ok(());
        }
        match self.index.apply(u) {
            Ok(()) => Ok(()),
            Err(Anomaly::Duplicate) => Err(corrupt(&self.dir, pos, format!("session {session} is created a second time"))),
            Err(anomaly) => {
                let what = match anomaly {
                    Anomaly::Gap { expected, found } => {
                        format!("events of session {session} from seq {found}, after seq {}", expected.saturating_sub(1))
                    }
                    _ => format!("a record of session {session}, which does not exist"),
                };
                // Its history is broken here: only a later tombstone can explain that (its other
                // records were in segments deleted after its expiry). The whole session is an
                // orphan from now on, so that its records and their copies are all accounted for
                // in one place until then, whichever segments survived.
                let earlier = self.index.forget(&session);
                let orphan = self.orphans.entry(session).or_insert(Orphan { place: pos, what, bytes: Vec::new() });
                orphan.bytes.extend(earlier);
                orphan.bytes.push((pos.seg, len));
                self.index.add_live(pos.seg, len);
                Ok(())
            }
        }
    }

    /// Moves `released` of an orphan's bytes in `from` to the copy (`len` bytes in `to`), as the
    /// index moves a live session's (the bytes left in `from`, even none, still name it for the
    /// tombstone). `false` if the orphan has not that much there: not what the writer wrote.
    fn move_orphan(&mut self, session: SessionId, from: u32, released: u64, to: u32, len: u64) -> bool {
        let Some(orphan) = self.orphans.get_mut(&session) else { return false };
        if orphan.bytes.iter().filter(|(seg, _)| *seg == from).map(|(_, n)| n).sum::<u64>() < released {
            return false;
        }
        let mut left = released;
        for (_, n) in orphan.bytes.iter_mut().filter(|(seg, _)| *seg == from) {
            let taken = left.min(*n);
            *n -= taken;
            left -= taken;
        }
        orphan.bytes.push((to, len));
        self.index.release(vec![(from, released)]);
        self.index.add_live(to, len);
        true
    }

    /// Orphans no tombstone explained are corruption: the first one is reported.
    fn finish(&mut self) -> Result<(), StoreError> {
        match self.orphans.values().min_by_key(|o| o.place) {
            Some(o) => Err(corrupt(&self.dir, o.place, format!("{} (its earlier records are missing)", o.what))),
            None => Ok(()),
        }
    }
}

/// The most bytes of records a frame holds: it fits an empty segment of the largest size.
const MAX_FRAME_BYTES: u64 = super::MAX_SEGMENT_BYTES - frame::HEADER_LEN as u64;

/// Reads the frame at `offset` into `records`: `Ok(Some(frame length))`, `Ok(None)` at the end of
/// the data, or the reason it is bad.
fn read_frame(r: &mut impl Read, offset: u64, file_len: u64, records: &mut Vec<u8>) -> io::Result<Result<Option<u64>, BadFrame>> {
    let header_end = offset + frame::HEADER_LEN as u64;
    if header_end > file_len {
        let mut rest = Vec::new();
        r.read_to_end(&mut rest)?;
        return Ok(if rest.iter().all(|&b| b == 0) {
            Ok(None)
        } else {
            Err(BadFrame { reason: "a frame header runs past the end of the file".into(), claimed_end: None })
        });
    }
    let mut h = [0u8; frame::HEADER_LEN];
    r.read_exact(&mut h)?;
    let header = Header::parse(&h);
    if header.is_end() {
        return Ok(Ok(None));
    }
    // No writer makes a frame longer than a segment holds (`Writer::max_frame`), and no segment is
    // over `MAX_SEGMENT_BYTES`: a longer length is damage or a forgery, refused before its bytes are
    // allocated (a crafted sparse file whose frame claimed 4 GiB made `sessions list` allocate it).
    if u64::from(header.len) > MAX_FRAME_BYTES {
        let reason = format!("a frame claims {} bytes, more than any segment holds ({MAX_FRAME_BYTES})", header.len);
        return Ok(Err(BadFrame { reason, claimed_end: None }));
    }
    let end = header_end + u64::from(header.len);
    if end > file_len {
        let reason = format!("a frame of {} bytes runs past the end of the file ({file_len} bytes)", header.len);
        return Ok(Err(BadFrame { reason, claimed_end: None }));
    }
    records.resize(header.len as usize, 0);
    r.read_exact(records)?;
    if !header.matches(records) {
        return Ok(Err(BadFrame { reason: format!("the CRC of a frame of {} bytes does not match", header.len), claimed_end: Some(end) }));
    }
    Ok(Ok(Some(end - offset)))
}

/// Whether a bad frame at `at` in the tail segment is a torn write (`Ok`) or damage (`Err`, why).
/// Torn: the file has its preallocated size (`full_len`), the frame's length lies inside it, some
/// 512-byte block of the frame is all zeros (unwritten), and nothing follows it: no intact frame
/// starts where it ends, and only zeros come after it. Where it ends is uncertain, because its
/// length may be the damaged part: both the end its length claims and the end its records run to
/// are tried.
fn torn_or_damaged(file: &File, at: u64, bad: &BadFrame, file_len: u64, full_len: u64) -> io::Result<Result<(), String>> {
    if file_len < full_len {
        return Ok(Err(format!(
            "{}; the file is {file_len} bytes, shorter than the {full_len} it was preallocated to (cut from outside, not a torn write)",
            bad.reason
        )));
    }
    let Some(claimed) = bad.claimed_end else {
        return Ok(Err(format!("{} (a torn write never runs past a preallocated segment)", bad.reason)));
    };
    let walked = walk_records(file, at + frame::HEADER_LEN as u64, file_len)?;
    for end in [claimed, walked] {
        if end > at && intact_frame_at(file, end, file_len)? {
            return Ok(Err(format!("{}, and an intact frame follows it at offset {end}", bad.reason)));
        }
    }
    // A frame whose records, read to where they stop parsing, match its CRC with that length is
    // complete: only its length was changed (a torn length is never one the CRC bears out).
    if walked > at + frame::HEADER_LEN as u64 && walked != claimed {
        let mut h = [0u8; frame::HEADER_LEN];
        file.read_exact_at(&mut h, at)?;
        let len = walked - at - frame::HEADER_LEN as u64;
        let mut records = vec![0u8; len as usize];
        file.read_exact_at(&mut records, at + frame::HEADER_LEN as u64)?;
        if (Header { len: len as u32, crc: Header::parse(&h).crc }).matches(&records) {
            return Ok(Err(format!("{}, yet its records match its CRC with a length of {len} bytes: its length was changed", bad.reason)));
        }
    }
    if !only_zeros(file, claimed.max(walked), file_len)? {
        return Ok(Err(format!("{}, and non-zero bytes follow it", bad.reason)));
    }
    if !has_unwritten_block(file, at, claimed)? {
        return Ok(Err(format!("{}, though every block of it was written (damaged after it was written, not a torn write)", bad.reason)));
    }
    Ok(Ok(()))
}

/// The unit a torn write leaves unwritten: a device writes whole sectors (512 bytes at least), and
/// the page cache whole pages, so the part of a frame a crash did not write is whole blocks of it.
const BLOCK: u64 = 512;

/// Whether some 512-byte block of `[at, end)` (its part of the block, at the frame's edges) is all
/// zeros: what is left of a frame part of which was never written (the preallocated space it went
/// into was zeros).
fn has_unwritten_block(file: &File, at: u64, end: u64) -> io::Result<bool> {
    let mut bytes = vec![0u8; (end - at) as usize];
    file.read_exact_at(&mut bytes, at)?;
    let mut b = at;
    while b < end {
        let next = ((b / BLOCK + 1) * BLOCK).min(end);
        if bytes[(b - at) as usize..(next - at) as usize].iter().all(|&x| x == 0) {
            return Ok(true);
        }
        b = next;
    }
    Ok(false)
}

/// The first non-zero byte at or after `at`, and the end of the last one, reading only the parts of
/// the file that hold data (`SEEK_DATA`; unwritten preallocated space is a hole to it on ext4).
fn nonzero_range(file: &File, at: u64, file_len: u64) -> io::Result<Option<(u64, u64)>> {
    let mut range: Option<(u64, u64)> = None;
    let mut buf = vec![0u8; 1 << 16];
    let mut pos = at;
    while pos < file_len {
        let (data, hole) = match rustix::fs::seek(file, rustix::fs::SeekFrom::Data(pos)) {
            Ok(data) => (data, rustix::fs::seek(file, rustix::fs::SeekFrom::Hole(data)).unwrap_or(file_len).min(file_len)),
            Err(rustix::io::Errno::NXIO) => break, // no data after `pos`
            Err(_) => (pos, file_len),             // not supported: read it all
        };
        let mut p = data.max(pos);
        while p < hole {
            let n = buf.len().min((hole - p) as usize);
            file.read_exact_at(&mut buf[..n], p)?;
            if let Some(first) = buf[..n].iter().position(|&b| b != 0) {
                let last = buf[..n].iter().rposition(|&b| b != 0).unwrap_or(first);
                let (f, l) = (p + first as u64, p + last as u64 + 1);
                range = Some(range.map_or((f, l), |(rf, _)| (rf, l)));
            }
            p += n as u64;
        }
        pos = hole.max(pos + 1);
    }
    Ok(range)
}

/// Where the records from `at` stop parsing (an unknown kind, or a body past the file).
fn walk_records(file: &File, mut at: u64, file_len: u64) -> io::Result<u64> {
    let mut header = [0u8; record::HEADER_LEN];
    while at + record::HEADER_LEN as u64 <= file_len {
        file.read_exact_at(&mut header, at)?;
        let Some((kind, len)) = record::parse_header(&header) else { break };
        let next = at + (record::HEADER_LEN + len) as u64;
        if !record::is_kind(kind) || len < SessionId::LEN || next > file_len {
            break;
        }
        at = next;
    }
    Ok(at)
}

fn intact_frame_at(file: &File, at: u64, file_len: u64) -> io::Result<bool> {
    let mut h = [0u8; frame::HEADER_LEN];
    if at + frame::HEADER_LEN as u64 > file_len {
        return Ok(false);
    }
    file.read_exact_at(&mut h, at)?;
    let header = Header::parse(&h);
    if header.is_end() || at + frame::HEADER_LEN as u64 + u64::from(header.len) > file_len {
        return Ok(false);
    }
    let mut records = vec![0u8; header.len as usize];
    file.read_exact_at(&mut records, at + frame::HEADER_LEN as u64)?;
    Ok(header.matches(&records))
}

fn only_zeros(file: &File, mut at: u64, file_len: u64) -> io::Result<bool> {
    let mut buf = vec![0u8; 1 << 16];
    while at < file_len {
        let n = buf.len().min((file_len - at) as usize);
        file.read_exact_at(&mut buf[..n], at)?;
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
        at += n as u64;
    }
    Ok(true)
}

/// Zeroes the tail segment after the end of its data, in place, and preallocates it to full size if
/// it is shorter: the bytes after the data are zeros once more (whatever a torn write left there).
/// Non-zero bytes there are first copied to `<segment>.seg.torn-<end>` beside it (fsynced, with its
/// directory entry), so that nothing is destroyed without a trace. The file never shrinks, so a
/// crash at any point leaves either the old image or one with its data intact.
fn zero_after(dir: &Path, seg: u32, file: &File, end: u64, segment_bytes: u64) -> io::Result<()> {
    let len = file.metadata()?.len();
    if let Some((_, last)) = nonzero_range(file, end, len)? {
        let mut cut = vec![0u8; (last - end) as usize];
        file.read_exact_at(&mut cut, end)?;
        let kept = keep_torn(dir, seg, end, &cut)?;
        tracing::warn!(
            segment = %segment::path(dir, seg).display(),
            offset = end,
            bytes = cut.len(),
            kept = %kept.display(),
            "the bytes cut from the end of the event log are kept in a file of their own"
        );
        let zeros = vec![0u8; cut.len().min(1 << 20)];
        let mut at = end;
        while at < last {
            let n = zeros.len().min((last - at) as usize);
            file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
    }
    segment::preallocate(file, segment_bytes.max(end))?;
    file.sync_all()
}

/// Writes `bytes` (cut from segment `seg` at `offset`) to `<segment>.seg.torn-<offset>`, durably.
/// A file of that name with the same bytes (a crash after it was written, before the cut) is
/// reused; one with other bytes is kept, and a `.1`, `.2`, … name is used instead.
fn keep_torn(dir: &Path, seg: u32, offset: u64, bytes: &[u8]) -> io::Result<PathBuf> {
    let base = format!("{}.torn-{offset}", segment::path(dir, seg).display());
    for n in 0u32.. {
        let path = PathBuf::from(if n == 0 { base.clone() } else { format!("{base}.{n}") });
        match std::fs::read(&path) {
            Ok(existing) if existing == bytes => return Ok(path),
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut out = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
        std::io::Write::write_all(&mut out, bytes)?;
        out.sync_all()?;
        segment::sync_dir(dir)?;
        return Ok(path);
    }
    unreachable!("some name is free")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionStatus;
    use crate::layout::MetaRecord;

    const SEGMENT_BYTES: u64 = 64 * 1024;

    /// The records of one session's creation, whole, and the session.
    fn a_creation() -> (SessionId, Vec<u8>) {
        let s = SessionId::from_bytes([7; 16]);
        let meta = MetaRecord { status: SessionStatus::Active, created_ms: 1, project: "p".into(), resume_token_hash: None };
        let mut create = Vec::new();
        record::put_meta(&mut create, record::CREATE, &s, &layout::encode_meta(&meta).unwrap());
        (s, create)
    }

    /// A copy record of `inner` with these claims.
    fn copy(s: SessionId, from: Pos, released: usize, origin: Pos, inner: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        record::put_copy(&mut out, &s, from, released as u32, origin, inner);
        out
    }

    /// Given a frame header claiming more bytes than any segment holds, in a file long enough to
    /// hold them (a sparse one), when the frame is read, then it is a bad frame, refused before a
    /// byte of it is allocated (the outside review's 4 GiB frame made `sessions list` abort).
    #[test]
    fn a_frame_longer_than_any_segment_is_refused_before_it_is_allocated() {
        let len = u32::try_from(MAX_FRAME_BYTES + 1).unwrap();
        let mut header = len.to_be_bytes().to_vec();
        header.extend_from_slice(&0x1234_5678u32.to_be_bytes());
        let mut records = Vec::new();
        let read = read_frame(&mut header.as_slice(), 0, u64::MAX, &mut records).expect("refused, not an I/O error");
        let bad = read.expect_err("a bad frame");
        assert!(bad.reason.contains("more than any segment holds") && bad.claimed_end.is_none(), "{}", bad.reason);
        assert_eq!(records.capacity(), 0, "nothing was allocated for it");
    }

    /// Segments 1, 2, … each holding one frame of the given records.
    fn given_segments(segments: &[&[u8]]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (i, records) in segments.iter().enumerate() {
            std::fs::write(segment::path(dir.path(), i as u32 + 1), super::super::sealed_frame(records)).unwrap();
        }
        dir
    }

    fn refusal(dir: &tempfile::TempDir) -> String {
        match recover(dir.path(), SEGMENT_BYTES) {
            Ok(_) => "opened".into(),
            Err(e) => e.to_string(),
        }
    }

    const FIRST: Pos = Pos { seg: 1, offset: frame::HEADER_LEN as u32 };

    #[test]
    fn a_copy_of_a_record_first_written_where_it_was_opens() {
        let (s, create) = a_creation();
        let first_copy = copy(s, FIRST, create.len(), FIRST, &create);
        let in_copy = Pos { seg: 2, offset: FIRST.offset + record::COPY_PREFIX as u32 };
        let copy_of_copy = copy(s, in_copy, first_copy.len(), FIRST, &create);
        let dir = given_segments(&[&create, &first_copy, &copy_of_copy]);
        let recovered = recover(dir.path(), SEGMENT_BYTES).expect("what the writer writes opens");
        assert!(recovered.index.get(&s).is_some());
    }

    #[test]
    fn a_copy_that_says_its_record_was_first_written_elsewhere_is_refused() {
        let (s, create) = a_creation();
        for wrong in [Pos { seg: 3, offset: 84 }, Pos { seg: 0, offset: 8 }, Pos { seg: 1, offset: 0 }] {
            let dir = given_segments(&[&create, &copy(s, FIRST, create.len(), wrong, &create)]);
            let why = refusal(&dir);
            assert!(why.contains("first written at"), "origin {wrong:?}: {why}");
        }
    }

    #[test]
    fn a_copy_of_a_copy_keeps_the_first_copys_origin_or_is_refused() {
        let (s, create) = a_creation();
        let first_copy = copy(s, FIRST, create.len(), FIRST, &create);
        let in_copy = Pos { seg: 2, offset: FIRST.offset + record::COPY_PREFIX as u32 };
        let dir = given_segments(&[&create, &first_copy, &copy(s, in_copy, first_copy.len(), in_copy, &create)]);
        assert!(refusal(&dir).contains("first written at 2:"), "{}", refusal(&dir));
    }

    #[test]
    fn a_copy_that_names_a_place_or_a_length_its_record_is_not_at_is_refused() {
        let (s, create) = a_creation();
        let shifted = Pos { seg: 1, offset: FIRST.offset - 1 };
        for (from, released, expected) in [
            (shifted, create.len(), "not where it says"),
            (FIRST, create.len() + 3, "releases"),
            (Pos { seg: 2, offset: FIRST.offset }, create.len(), "not in an earlier segment"),
            (Pos { seg: 2, offset: 0 }, create.len(), "not in an earlier segment"),
        ] {
            let dir = given_segments(&[&create, &copy(s, from, released, from, &create)]);
            let why = refusal(&dir);
            assert!(why.contains(expected), "{from:?} {released}: {why}");
        }
    }

    #[test]
    fn a_record_copied_twice_or_a_copy_that_goes_back_is_refused() {
        let (s, create) = a_creation();
        let first = events_record(s, 1);
        let first_at = Pos { seg: 1, offset: FIRST.offset + create.len() as u32 };
        let copy_create = copy(s, FIRST, create.len(), FIRST, &create);
        let copy_first = copy(s, first_at, first.len(), first_at, &first);
        let written = [create.as_slice(), first.as_slice()].concat();
        // Given: what the compactor writes (the session's records in the order it walked them).
        let in_order = given_segments(&[&written, &[copy_create.as_slice(), copy_first.as_slice()].concat()]);
        assert_eq!(refusal(&in_order), "opened");
        // When a record is copied twice, or a copy names a record before one copied already: then
        // the log is refused (the session has the bytes for either, so the counts alone passed it).
        for head in [[copy_create.as_slice(), copy_create.as_slice()].concat(), [copy_first.as_slice(), copy_create.as_slice()].concat()] {
            let why = refusal(&given_segments(&[&written, &head]));
            assert!(why.contains("had already copied"), "{why}");
        }
    }

    /// Found by the fuzz target's model: a copy of a session's later record, first of its records
    /// in that segment, opened (the checks above see one copy at a time). Compaction then counted
    /// the session's earlier record as copied (what it copied of a session is a prefix, by bytes),
    /// copied the later one again and deleted the segment: the earlier record was lost, and the log
    /// no longer opened. Compaction now stops where the index still holds a record it would skip.
    #[tokio::test]
    async fn compaction_stops_rather_than_skip_a_record_a_copy_jumped_over() {
        use crate::EventLog;
        let (s, create) = a_creation();
        let (first, second) = (events_record(s, 1), events_record(s, 2));
        assert_eq!(first.len(), second.len(), "the copy's bytes must stand for the first record exactly");
        let second_at = Pos { seg: 2, offset: FIRST.offset + first.len() as u32 };
        let dir = given_segments(&[
            &create,
            &[first.as_slice(), second.as_slice()].concat(),
            &copy(s, second_at, second.len(), second_at, &second),
        ]);
        let config = || crate::StoreConfig::at(dir.path()).with_segment_bytes(SEGMENT_BYTES).with_compaction(100, 1);
        // Given the log opened, when compaction has had 40 batches (a flush is one; each step reads
        // one frame, and these segments hold one each),
        let log = crate::SegmentEventLog::open(config()).expect("each copy on its own is what the writer could write");
        for _ in 0..40 {
            log.flush().await.unwrap();
        }
        let stats = log.compaction_stats();
        assert!(stats.copied_bytes > 0, "compaction ran (it copied the creation): {stats:?}");
        drop(log);
        // then a full scan still finds both events.
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "seg") {
                let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir_all(&path));
            }
        }
        let log = crate::SegmentEventLog::open(config()).expect("the log opens after compaction");
        let seqs: Vec<u64> = log.read(s, 1, None).await.unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2]);
    }

    /// Events `seq` of session `s`, whole.
    fn events_record(s: SessionId, seq: u64) -> Vec<u8> {
        let event = crate::NewEvent {
            time_ms: seq,
            event_type: format!("e{seq}"),
            schema_version: 1,
            correlation_id: None,
            checksum: None,
            payload: serde_json::json!(seq).into(),
        };
        let mut out = Vec::new();
        record::put_events(&mut out, &s, seq, &[layout::encode_event(&event).unwrap()], None);
        out
    }

    /// Segment 1 holds the creation (kept by other sessions' records, say); the segment that held
    /// events 1..2 is gone; segment 3 holds event 3; segment 4 a compaction copy of it, then,
    /// maybe, the session's expiry.
    fn a_session_with_a_gap_then_a_copy(expired: bool) -> tempfile::TempDir {
        let (s, create) = a_creation();
        let third = events_record(s, 3);
        let from = Pos { seg: 3, offset: FIRST.offset };
        let mut head = copy(s, from, third.len(), from, &third);
        if expired {
            record::put_bare(&mut head, record::EXPIRY, &s);
        }
        let dir = given_segments(&[&create, &events_record(s, 1), &third, &head]);
        std::fs::remove_file(segment::path(dir.path(), 2)).unwrap();
        dir
    }

    #[test]
    fn a_session_whose_middle_went_after_its_expiry_opens_though_its_records_were_copied() {
        let dir = a_session_with_a_gap_then_a_copy(true);
        let recovered = recover(dir.path(), SEGMENT_BYTES).expect("the expiry explains the gap");
        assert!(recovered.index.get(&a_creation().0).is_none());
    }

    #[test]
    fn a_gap_no_expiry_explains_is_refused() {
        let why = refusal(&a_session_with_a_gap_then_a_copy(false));
        assert!(why.contains("its earlier records are missing"), "{why}");
    }
}
