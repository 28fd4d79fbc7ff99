//! Segment files: names, creation with preallocation, the directory lock, and the bounded set of
//! read-only descriptors readers share.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::StoreError;

/// The lock file whose `flock` keeps a second process (or a second open in this one) out.
const LOCK_FILE: &str = "LOCK";
const SUFFIX: &str = ".seg";

/// A place in the log: a segment and an offset in it. Ordered as the log was written, because
/// segments are numbered in the order they are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Pos {
    pub seg: u32,
    pub offset: u32,
}

impl Pos {
    /// As one number, for the atomic durable mark followers read.
    pub(crate) fn packed(self) -> u64 {
        (u64::from(self.seg) << 32) | u64::from(self.offset)
    }

    pub(crate) fn unpack(v: u64) -> Self {
        Self { seg: (v >> 32) as u32, offset: v as u32 }
    }
}

pub(crate) fn path(dir: &Path, seg: u32) -> PathBuf {
    dir.join(format!("{seg:08}{SUFFIX}"))
}

/// The segment numbers in `dir`, ascending. Other files are not the log's and are left alone.
pub(crate) fn list(dir: &Path) -> io::Result<Vec<u32>> {
    let mut segs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(SUFFIX)) else { continue };
        if stem.len() == 8
            && let Ok(n) = stem.parse::<u32>()
        {
            segs.push(n);
        }
    }
    segs.sort_unstable();
    Ok(segs)
}

/// Creates segment `seg`, preallocated to `size` bytes of zeros, and makes it and its directory
/// entry durable, so that writing into it later needs no metadata sync but the extents'.
pub(crate) fn create(dir: &Path, seg: u32, size: u64) -> io::Result<File> {
    let file = OpenOptions::new().read(true).write(true).create_new(true).open(path(dir, seg))?;
    preallocate(&file, size)?;
    file.sync_all()?;
    sync_dir(dir)?;
    Ok(file)
}

pub(crate) fn open_rw(dir: &Path, seg: u32) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(path(dir, seg))
}

/// Grows `file` to `size` bytes with its blocks allocated: `fallocate` mode 0, which also sets the
/// size, so an `fdatasync` after a write into the range never has a size change to sync. Where the
/// file system cannot (`EOPNOTSUPP`), `set_len` gives a sparse file of the same size: still no
/// size change at write, only block allocation.
pub(crate) fn preallocate(file: &File, size: u64) -> io::Result<()> {
    let have = file.metadata()?.len();
    if have >= size {
        return Ok(());
    }
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), have, size - have) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::OPNOTSUPP) => file.set_len(size),
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Takes the directory's lock, waiting up to `wait_ms` for another holder to let go.
pub(crate) fn lock(dir: &Path, wait_ms: u64) -> Result<File, StoreError> {
    let io = |source| StoreError::Io { dir: dir.to_path_buf(), source };
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(dir.join(LOCK_FILE)).map_err(io)?;
    let deadline = Instant::now() + Duration::from_millis(wait_ms);
    loop {
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(file),
            Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(StoreError::Locked { dir: dir.to_path_buf() }),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(io(e.into())),
        }
    }
}

/// Read-only descriptors of recently read segments, at most `capacity` of them (counted in the
/// gateway's descriptor budget). Readers share them: `pread` needs no seek, so no lock is held
/// while reading.
pub(crate) struct ReadFiles {
    dir: PathBuf,
    capacity: usize,
    open: Mutex<Lru>,
    /// Where frames start, per segment: a reader checks the CRC of the frame around the record it
    /// reads, so it must find that frame ([`Self::frame_of`]).
    frames: RwLock<HashMap<u32, FrameTable>>,
}

/// The frames of one segment known so far: every frame that starts at or after `known_from` (itself
/// a frame boundary), in order. Frames before it (a segment an index checkpoint covers, not read at
/// open) are found by walking the frame headers from the start of the segment, once, on the first
/// read that needs them. Four bytes per frame.
#[derive(Debug, Default)]
struct FrameTable {
    known_from: u32,
    starts: Vec<u32>,
}

impl FrameTable {
    fn find(&self, offset: u32) -> Option<u32> {
        if offset < self.known_from {
            return None;
        }
        let i = self.starts.partition_point(|&s| s <= offset);
        (i > 0).then(|| self.starts[i - 1])
    }
}

#[derive(Default)]
struct Lru {
    tick: u64,
    /// (segment, descriptor, last use); a handful of entries, so a linear scan is the fastest map.
    entries: Vec<(u32, Arc<File>, u64)>,
}

impl ReadFiles {
    pub(crate) fn new(dir: PathBuf, capacity: usize) -> Self {
        Self { dir, capacity: capacity.max(1), open: Mutex::new(Lru::default()), frames: RwLock::new(HashMap::new()) }
    }

    /// Recovery read every frame of `seg` from `known_from` (a frame boundary) on: they start at
    /// `starts`.
    pub(crate) fn set_frames(&self, seg: u32, known_from: u32, starts: Vec<u32>) {
        self.frames.write().unwrap_or_else(|p| p.into_inner()).insert(seg, FrameTable { known_from, starts });
    }

    /// The writer wrote a frame at `at` (before any index entry can point into it).
    pub(crate) fn add_frame(&self, at: Pos) {
        let mut frames = self.frames.write().unwrap_or_else(|p| p.into_inner());
        let table = frames.entry(at.seg).or_default();
        if table.starts.last().is_none_or(|&last| last < at.offset) {
            table.starts.push(at.offset);
        }
    }

    /// Where the frame holding `pos` starts, and its header as read. Frames of a segment not read
    /// since the log opened are found by walking its frame headers first (once per segment). `None`:
    /// no frame holds `pos` (the frame headers do not lead to it: corruption).
    pub(crate) fn frame_of(&self, pos: Pos) -> io::Result<Option<u32>> {
        let known = self.frames.read().unwrap_or_else(|p| p.into_inner()).get(&pos.seg).map(|t| (t.find(pos.offset), t.known_from));
        let walk_to = match known {
            Some((Some(start), _)) => return Ok(Some(start)),
            Some((None, known_from)) if pos.offset >= known_from => return Ok(None),
            Some((None, known_from)) => Some(known_from),
            None => None,
        };
        let walked = self.walk(pos.seg, walk_to)?;
        let mut frames = self.frames.write().unwrap_or_else(|p| p.into_inner());
        let table = frames.entry(pos.seg).or_insert_with(|| FrameTable { known_from: walk_to.unwrap_or(u32::MAX), starts: Vec::new() });
        if table.known_from > 0 {
            let limit = table.known_from;
            let mut starts: Vec<u32> = walked.into_iter().filter(|&s| s < limit).collect();
            starts.append(&mut table.starts);
            table.starts = starts;
            table.known_from = 0;
        }
        Ok(table.find(pos.offset))
    }

    /// The frame starts of segment `seg` from its beginning up to `to` (a frame boundary), or to the
    /// end of its data (a zero length, the end of the file, or a length that leads nowhere).
    fn walk(&self, seg: u32, to: Option<u32>) -> io::Result<Vec<u32>> {
        let file = self.get(seg)?;
        let len = file.metadata()?.len();
        let end = to.map_or(len, |t| u64::from(t).min(len));
        let (mut at, mut starts) = (0u64, Vec::new());
        let mut header = [0u8; 8];
        while at + 8 <= end {
            file.read_exact_at(&mut header, at)?;
            let n = u64::from(u32::from_be_bytes([header[0], header[1], header[2], header[3]]));
            if n == 0 || at + 8 + n > end {
                break;
            }
            starts.push(at as u32);
            at += 8 + n;
        }
        Ok(starts)
    }

    fn get(&self, seg: u32) -> io::Result<Arc<File>> {
        let mut lru = self.open.lock().unwrap_or_else(|p| p.into_inner());
        lru.tick += 1;
        let tick = lru.tick;
        if let Some(entry) = lru.entries.iter_mut().find(|e| e.0 == seg) {
            entry.2 = tick;
            return Ok(entry.1.clone());
        }
        let file = Arc::new(File::open(path(&self.dir, seg))?);
        if lru.entries.len() >= self.capacity
            && let Some(oldest) = lru.entries.iter().enumerate().min_by_key(|(_, e)| e.2).map(|(i, _)| i)
        {
            lru.entries.swap_remove(oldest);
        }
        lru.entries.push((seg, file.clone(), tick));
        Ok(file)
    }

    /// Closes the descriptor of a deleted segment (readers that hold it finish their read).
    pub(crate) fn forget(&self, seg: u32) {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).entries.retain(|e| e.0 != seg);
        self.frames.write().unwrap_or_else(|p| p.into_inner()).remove(&seg);
    }

    /// Reads exactly `buf.len()` bytes at `pos`.
    pub(crate) fn read_at(&self, pos: Pos, buf: &mut [u8]) -> io::Result<()> {
        self.get(pos.seg)?.read_exact_at(buf, u64::from(pos.offset))
    }

    #[cfg(test)]
    fn open_count(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_preallocated_listed_in_order_and_read_through_a_bounded_lru() {
        let dir = tempfile::tempdir().unwrap();
        for seg in [3, 1, 2] {
            let f = create(dir.path(), seg, 4096).unwrap();
            assert_eq!(f.metadata().unwrap().len(), 4096);
            f.write_all_at(&[seg as u8; 4], 100).unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        assert_eq!(list(dir.path()).unwrap(), vec![1, 2, 3]);
        assert!(create(dir.path(), 2, 4096).is_err(), "never overwrites a segment");
        let files = ReadFiles::new(dir.path().to_path_buf(), 2);
        for seg in [1, 2, 3, 1] {
            let mut buf = [0u8; 4];
            files.read_at(Pos { seg, offset: 100 }, &mut buf).unwrap();
            assert_eq!(buf, [seg as u8; 4]);
            assert!(files.open_count() <= 2);
        }
        files.forget(1);
        assert_eq!(files.open_count(), 1);
        assert!(Pos { seg: 1, offset: u32::MAX } < Pos { seg: 2, offset: 0 });
        assert_eq!(Pos::unpack(Pos { seg: 7, offset: 9 }.packed()), Pos { seg: 7, offset: 9 });
    }

    #[test]
    fn the_lock_keeps_a_second_holder_out_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock(dir.path(), 0).unwrap();
        assert!(matches!(lock(dir.path(), 0), Err(StoreError::Locked { .. })));
        drop(held);
        lock(dir.path(), 0).unwrap();
    }
}
