//! Disk use of the segment log with and without compaction, for docs/performance.md: one
//! long-lived session that appends one answered event per round, among churning sessions (each
//! round one is created with four 2 KB events; sessions older than five rounds are ended and
//! expired). Durable mode. Prints, for compaction off and at 25 %: the most segment files seen,
//! the disk use at the end, the rounds per second, and the slowest append of the long-lived session
//! (a compaction step runs between two group commits, so a long step shows there), and compaction's
//! steps, bytes copied and longest step (`SegmentEventLog::compaction_stats`).
//!
//! `cargo run --release --locked -p vestibule-store --example compaction_space -- [ROUNDS] [SEGMENT_BYTES] [DIR]`
//! (defaults: 4000 rounds, 1 MiB segments, in a temporary directory on the default temp disk).

use std::time::{Duration, Instant};

use serde_json::json;
use vestibule_store::{
    CommandAnswer, Durability, EventLog, NewEvent, NewSession, RetentionPolicy, SegmentEventLog, SessionId, SessionStatus, StoreConfig,
};

fn event(n: u64, pad: usize) -> NewEvent {
    NewEvent {
        time_ms: 1_000 + n,
        event_type: "load.step".into(),
        schema_version: 1,
        correlation_id: Some(format!("cmd-{n}")),
        checksum: None,
        payload: json!({ "n": n, "pad": "x".repeat(pad) }).into(),
    }
}

fn new_session() -> NewSession {
    NewSession { project: "space".into(), created_ms: 1_000, resume_token_hash: Some("h".repeat(64)) }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: u64 = args.first().map_or(4000, |a| a.parse().expect("ROUNDS"));
    let segment_bytes: u64 = args.get(1).map_or(1 << 20, |a| a.parse().expect("SEGMENT_BYTES"));
    let root = match args.get(2) {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    println!("{rounds} rounds, {segment_bytes}-byte segments");
    println!(
        "compaction   most segment files   disk at end   rounds/s   slowest long-lived append   p99      steps   copied     longest step"
    );
    for percent in [0, 25] {
        let dir = root.path().join(format!("c{percent}"));
        let config = StoreConfig::at(&dir)
            .with_durability(Durability::Durable)
            .with_segment_bytes(segment_bytes)
            .with_compaction(percent, (segment_bytes / 4).max(64 * 1024));
        let log = SegmentEventLog::open(config).unwrap();
        let policy = RetentionPolicy { ended_after: Duration::ZERO, idle_after: Duration::from_secs(1 << 40), batch_size: 10_000 };
        let long = SessionId::random();
        log.create_session(long, new_session()).await.unwrap();
        let mut churn = std::collections::VecDeque::new();
        let (mut most, mut waits) = (0usize, Vec::with_capacity(rounds as usize));
        let started = Instant::now();
        for round in 0..rounds {
            let answer = CommandAnswer { command_id: format!("c{round}"), seq: round + 1, refusal: None };
            let t = Instant::now();
            log.append_answered(long, round, vec![event(round, 200)], answer).await.unwrap();
            waits.push(t.elapsed());
            let s = SessionId::random();
            log.create_session(s, new_session()).await.unwrap();
            log.append(s, 0, (0..4).map(|k| event(round * 10 + k, 2000)).collect()).await.unwrap();
            churn.push_back((round, s));
            while churn.front().is_some_and(|(r, _)| r + 5 <= round) {
                let (_, s) = churn.pop_front().unwrap();
                log.set_status(s, SessionStatus::Ended).await.unwrap();
            }
            log.expire(&policy, 10_000_000).await.unwrap();
            if round % 50 == 0 {
                let files = std::fs::read_dir(&dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "seg"));
                most = most.max(files.count());
            }
        }
        let elapsed = started.elapsed().as_secs_f64();
        let disk = log.disk_usage().await.unwrap();
        let stats = log.compaction_stats();
        waits.sort();
        let p99 = waits[waits.len() * 99 / 100];
        let slowest = waits.last().copied().unwrap_or_default();
        println!(
            "{:>9} %   {most:>18}   {:>8.1} MiB   {:>8.0}   {:>22.1} ms   {:>5.1} ms   {:>5}   {:>5.1} MiB   {:>7.1} ms",
            percent,
            disk as f64 / (1 << 20) as f64,
            rounds as f64 / elapsed,
            slowest.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            stats.steps,
            stats.copied_bytes as f64 / (1 << 20) as f64,
            stats.longest_step_us as f64 / 1e3
        );
    }
}
