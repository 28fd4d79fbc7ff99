//! The segment log's last segment under damage versus under a crash (decision 0105, "Torn writes
//! and damage"): a torn last frame (a crash wrote only some of its 512-byte blocks, in a segment of
//! its preallocated size) is cut, and its bytes are kept beside the segment; a cut file, a flipped
//! byte in a complete frame, or a length past the end is refused at open, naming file and offset,
//! and nothing is changed. Reads check the CRC of the frame around every record, so damage an
//! index checkpoint let opening skip is an error, never data. A crash while a segment is being
//! created loses nothing.

mod common;

use std::path::{Path, PathBuf};

use common::{event, new_session};
use serde_json::json;
use vestibule_store::{CommandAnswer, EventLog, SegmentEventLog, SessionId, StoreConfig, StoreError};

const SEGMENT: u64 = 64 * 1024;
const BLOCK: usize = 512;

fn config(dir: &Path) -> StoreConfig {
    StoreConfig::at(dir).with_segment_bytes(SEGMENT)
}

fn segment(dir: &Path, n: u32) -> PathBuf {
    dir.join(format!("{n:08}.seg"))
}

fn files(dir: &Path, containing: &str) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.contains(containing)).collect();
    names.sort();
    names
}

/// The frames of a segment file as `(start, end)`: `u32 BE length | u32 CRC | records`, ending at a
/// zero length.
fn frames(path: &Path) -> Vec<(usize, usize)> {
    let bytes = std::fs::read(path).unwrap();
    let (mut out, mut at) = (Vec::new(), 0);
    while at + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        out.push((at, at + 8 + len));
        at += 8 + len;
    }
    out
}

fn answer(i: u64) -> CommandAnswer {
    CommandAnswer { command_id: format!("c{i}"), seq: i * 2 + 2, refusal: None }
}

/// Events large enough that one append's frame spans several 512-byte blocks.
fn padded(n: u64) -> vestibule_store::NewEvent {
    let mut e = event(n);
    e.payload = json!({ "n": n, "pad": "p".repeat(900) }).into();
    e
}

#[allow(non_snake_case)]
fn SESSION_ID() -> SessionId {
    SessionId::from_bytes([0x5e; 16])
}

/// Given a log in `dir` of one session and `appends` acknowledged appends (two events each, one
/// frame each), closed (so its last segment is preallocated, and a checkpoint covers it).
async fn given_acknowledged_appends(dir: &Path, appends: u64) {
    let log = SegmentEventLog::open(config(dir)).unwrap();
    log.create_session(SESSION_ID(), new_session("damage")).await.unwrap();
    for i in 0..appends {
        log.append_answered(SESSION_ID(), i * 2, vec![padded(i * 2 + 1), padded(i * 2 + 2)], answer(i)).await.unwrap();
    }
}

fn copy_of(pristine: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in files(pristine, "") {
        if name != "LOCK" {
            std::fs::copy(pristine.join(&name), dir.path().join(&name)).unwrap();
        }
    }
    dir
}

fn remove(dir: &Path, containing: &str) {
    for name in files(dir, containing) {
        std::fs::remove_file(dir.join(name)).unwrap();
    }
}

fn edit(path: &Path, change: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    change(&mut bytes);
    std::fs::write(path, &bytes).unwrap();
}

/// Then the log opens with the first `kept` appends, every one intact, and takes the next append
/// (so nothing of what was cut is left to trip over), which survives another open.
async fn then_it_opens_with(dir: &Path, kept: u64, what: &str) {
    for round in 0..2 {
        let log = SegmentEventLog::open(config(dir)).unwrap_or_else(|e| panic!("{what}, open {round}: {e}"));
        let events = log.read(SESSION_ID(), 1, None).await.unwrap_or_else(|e| panic!("{what}: {e}"));
        let appended = kept + round;
        assert_eq!(events.len() as u64, appended * 2, "{what}, open {round}");
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.payload["n"], json!(i + 1), "{what}");
        }
        for i in 0..appended {
            assert_eq!(log.answer(SESSION_ID(), &format!("c{i}")).await.unwrap(), Some(answer(i)), "{what}");
        }
        if round == 0 {
            log.append_answered(SESSION_ID(), kept * 2, vec![padded(kept * 2 + 1), padded(kept * 2 + 2)], answer(kept)).await.unwrap();
        }
    }
}

/// Then opening is refused as corruption naming the segment file and `offset`, and the directory's
/// files are exactly as they were.
fn then_it_is_refused_at(dir: &Path, offset: usize, what: &str) {
    let before: Vec<(String, Vec<u8>)> =
        files(dir, ".seg").into_iter().map(|n| (n.clone(), std::fs::read(dir.join(&n)).unwrap())).collect();
    match SegmentEventLog::open(config(dir)) {
        Err(StoreError::Engine(msg)) => {
            assert!(msg.contains("00000001.seg") && msg.contains(&format!("offset {offset}")), "{what}: {msg}");
        }
        Err(other) => panic!("{what}: expected a corruption error, got {other}"),
        Ok(_) => panic!("{what}: opened; acknowledged appends would be lost"),
    }
    let after: Vec<(String, Vec<u8>)> = files(dir, ".seg").into_iter().map(|n| (n.clone(), std::fs::read(dir.join(&n)).unwrap())).collect();
    assert!(before == after, "{what}: a refused open changed the segment files");
}

#[tokio::test]
async fn a_torn_last_frame_is_cut_block_by_block_and_its_bytes_are_kept() {
    let pristine = tempfile::tempdir().unwrap();
    let appends = 3;
    given_acknowledged_appends(pristine.path(), appends).await;
    // The last frame is the one the crash tore: it was never acknowledged (the test plays it).
    let (start, end) = *frames(&segment(pristine.path(), 1)).last().unwrap();
    let blocks: Vec<usize> = (start / BLOCK..end.div_ceil(BLOCK)).collect();
    assert!(blocks.len() >= 4, "the last frame spans {} blocks", blocks.len());
    let unwritten = |bytes: &mut Vec<u8>, block: usize| {
        let (a, b) = ((block * BLOCK).max(start), ((block + 1) * BLOCK).min(end));
        bytes[a..b].fill(0);
    };
    // When a crash wrote only the blocks before one of them, or all but one of them (the page
    // cache writes back in any order), in place: the file keeps its preallocated size.
    let mut cases: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, &first_missing) in blocks.iter().enumerate() {
        cases.push((format!("written up to block {i}"), blocks[i..].to_vec()));
        cases.push((format!("all but block {i} written"), vec![first_missing]));
    }
    for (what, missing) in cases {
        let dir = copy_of(pristine.path());
        remove(dir.path(), ".ckpt"); // the close's checkpoint names the torn frame: a full scan
        let path = segment(dir.path(), 1);
        let torn = {
            let mut bytes = std::fs::read(&path).unwrap();
            for &b in &missing {
                unwritten(&mut bytes, b);
            }
            std::fs::write(&path, &bytes).unwrap();
            bytes
        };
        let len = std::fs::metadata(&path).unwrap().len();
        then_it_opens_with(dir.path(), appends - 1, &what).await;
        // Then what was cut is kept beside the segment, byte for byte, when anything was written.
        let kept = files(dir.path(), ".torn-");
        let written = torn[start..end].iter().rposition(|&b| b != 0).map(|last| &torn[start..start + last + 1]);
        match written {
            Some(written) => {
                assert_eq!(kept, [format!("00000001.seg.torn-{start}")], "{what}");
                assert_eq!(std::fs::read(dir.path().join(&kept[0])).unwrap(), written, "{what}");
            }
            None => assert!(kept.is_empty(), "{what}: nothing was written, so nothing is kept: {kept:?}"),
        }
        assert!(std::fs::metadata(&path).unwrap().len() >= len, "{what}: the segment never shrinks");
    }
}

#[tokio::test]
async fn damage_to_the_last_segment_is_refused_naming_its_place_and_nothing_is_cut() {
    let pristine = tempfile::tempdir().unwrap();
    let appends = 3;
    given_acknowledged_appends(pristine.path(), appends).await;
    let all = frames(&segment(pristine.path(), 1));
    let (start, end) = *all.last().unwrap();
    let (prev_start, _) = all[all.len() - 2];
    let mut cases: Vec<(String, usize, Box<dyn Fn(&mut Vec<u8>)>)> = Vec::new();
    // The file cut from outside, inside the last frame or the one before it.
    for cut in [start + 1, start + 8, (start + end) / 2, end - 1] {
        cases.push((format!("cut at {cut}"), start, Box::new(move |b: &mut Vec<u8>| b.truncate(cut))));
    }
    cases.push(("cut inside the frame before".into(), prev_start, Box::new(move |b: &mut Vec<u8>| b.truncate(start - 10))));
    // A byte of the last (complete) frame flipped: its header, its records, its last byte.
    for at in [start + 2, start + 5, start + 40, (start + end) / 2, end - 1] {
        cases.push((format!("byte {} of the last frame flipped", at - start), start, Box::new(move |b: &mut Vec<u8>| b[at] ^= 0x04)));
    }
    // Its length set past the end of the file.
    cases.push((
        "length 0xFFFFFFFF".into(),
        start,
        Box::new(move |b: &mut Vec<u8>| b[start..start + 4].copy_from_slice(&u32::MAX.to_be_bytes())),
    ));
    for (what, offset, damage) in cases {
        for checkpoint in [false, true] {
            let dir = copy_of(pristine.path());
            if !checkpoint {
                remove(dir.path(), ".ckpt");
            }
            edit(&segment(dir.path(), 1), |b| damage(b));
            then_it_is_refused_at(dir.path(), offset, &format!("{what} (checkpoint: {checkpoint})"));
            assert!(files(dir.path(), ".torn-").is_empty(), "{what}");
        }
    }
}

#[tokio::test]
async fn a_crash_while_a_segment_is_created_loses_nothing() {
    let pristine = tempfile::tempdir().unwrap();
    given_acknowledged_appends(pristine.path(), 3).await;
    assert_eq!(files(pristine.path(), ".seg"), ["00000001.seg", "00000002.seg"], "the writer made the next segment ahead");
    // When the crash came while the next segment was preallocated (not yet full size, all zeros),
    // or before it had any size at all:
    for len in [0, 1, 4096, SEGMENT - 1] {
        let dir = copy_of(pristine.path());
        std::fs::OpenOptions::new().write(true).open(segment(dir.path(), 2)).unwrap().set_len(len).unwrap();
        then_it_opens_with(dir.path(), 3, &format!("a next segment of {len} bytes")).await;
    }
    // And a crash while a new directory's first segment was created.
    for len in [0, 4096] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::File::create(segment(dir.path(), 1)).unwrap().set_len(len).unwrap();
        given_acknowledged_appends(dir.path(), 1).await;
        then_it_opens_with(dir.path(), 1, &format!("a first segment of {len} bytes")).await;
    }
}

#[tokio::test]
async fn a_flipped_byte_an_index_checkpoint_covers_is_a_corruption_error_when_read_never_data() {
    let dir = tempfile::tempdir().unwrap();
    given_acknowledged_appends(dir.path(), 3).await;
    assert!(!files(dir.path(), ".ckpt").is_empty(), "the close wrote a checkpoint covering every frame");
    let all = frames(&segment(dir.path(), 1));
    let (start, end) = all[2]; // the second append's frame: events 3 and 4
    let bytes = std::fs::read(segment(dir.path(), 1)).unwrap();
    // A hex-like character inside an event's payload, as the review changed an address.
    let at = start + bytes[start..end].windows(3).position(|w| w == b"ppp").unwrap() + 1;
    edit(&segment(dir.path(), 1), |b| b[at] = b'q');
    let log = SegmentEventLog::open(config(dir.path())).expect("the checkpoint lets opening skip the frame");
    // Reading the damaged events fails, naming the segment file and the frame's offset.
    for (from, to) in [(1, None), (3, Some(3)), (4, Some(4))] {
        match log.read(SESSION_ID(), from, to).await {
            Err(StoreError::Corrupt { session, reason, .. }) => {
                assert_eq!(session, SESSION_ID());
                assert!(reason.contains("00000001.seg") && reason.contains(&format!("offset {start}")), "{reason}");
                assert!(reason.contains("CRC"), "{reason}");
            }
            other => panic!("read {from}..{to:?}: expected a corruption error, got {other:?}"),
        }
    }
    // So does the answer in the same frame, and a stream through it; what is intact still reads.
    assert!(matches!(log.answer(SESSION_ID(), "c1").await, Err(StoreError::Corrupt { .. })));
    use futures_util::StreamExt;
    let streamed: Vec<_> = log.stream(SESSION_ID(), 1).collect().await;
    assert!(streamed.iter().any(|r| matches!(r, Err(StoreError::Corrupt { .. }))), "a stream through the frame fails");
    assert!(streamed.iter().all(|r| r.as_ref().is_err() || r.as_ref().unwrap().payload["pad"].as_str().unwrap().chars().all(|c| c == 'p')));
    let intact = log.read(SESSION_ID(), 1, Some(2)).await.unwrap();
    assert_eq!(intact.len(), 2);
    assert_eq!(log.read(SESSION_ID(), 5, None).await.unwrap().len(), 2);
}
