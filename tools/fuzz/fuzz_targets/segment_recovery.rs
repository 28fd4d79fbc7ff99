//! Opening a segment log (`store/src/segment_log`, decision 0105) whose one segment file holds any
//! bytes: a crash's torn tail, a bad disk, a hand-edited file. The first byte chooses how the rest
//! becomes the file:
//! - even: the bytes as they are (mostly refused by a frame's checksum, or cut as a torn tail);
//! - odd: a sequence of `u16 BE length | records` chunks, each sealed into a frame whose checksum
//!   holds, so that the records themselves are decoded and indexed.
//!
//! Opening must never panic. When it succeeds, the log must be consistent and usable: every session
//! listed reads back exactly its events `1..=latest_seq`, in order, or is refused as corrupt naming
//! that session (an event that does not decode); opening it again gives the same sessions and
//! events; and a new session appended to it survives another reopen.

#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use vestibule_store::{Durability, EventLog, NewEvent, NewSession, SegmentEventLog, SessionFilter, SessionId, StoreConfig, StoreError};

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
    std::fs::write(dir.join("00000001.seg"), segment_bytes(data)).expect("the segment file");
    runtime().block_on(async {
        let Ok(log) = SegmentEventLog::open(config(dir)) else { return };
        let before = contents(&log).await;
        drop(log);
        let log = SegmentEventLog::open(config(dir)).expect("a log that opened once opens again");
        assert_eq!(contents(&log).await, before, "opening again gives the same log");

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
            payload: serde_json::json!({}),
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
