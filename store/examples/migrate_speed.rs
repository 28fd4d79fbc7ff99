//! How fast `vestibule store migrate` moves a sled directory to the segment log: fills a sled
//! directory with gateway-like sessions (commands of one to three events, each answered, a refusal
//! and a snapshot per session, resume-token hashes), then runs the migration the command runs and
//! prints its report. For docs/performance.md ("The segment log next to sled").
//!
//! `cargo run --release --locked -p vestibule-store --example migrate_speed -- [SESSIONS] [COMMANDS] [DIR]`
//! (defaults: 10000 sessions of 10 commands, in a temporary directory on the default temp disk).

use std::time::Instant;

use serde_json::json;
use vestibule_store::migrate::{MigrateOptions, migrate_to_segments};
use vestibule_store::{
    AnswerRefusal, CommandAnswer, Durability, EventLog, NewEvent, NewSession, SessionId, SledEventLog, Snapshot, StoreConfig,
};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sessions: u64 = args.first().map_or(10_000, |a| a.parse().expect("SESSIONS"));
    let commands: u64 = args.get(1).map_or(10, |a| a.parse().expect("COMMANDS"));
    let root = match args.get(2) {
        Some(dir) => tempfile::tempdir_in(dir).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let dir = root.path().join("data");

    let filled = Instant::now();
    {
        let log = SledEventLog::open(StoreConfig::at(&dir).with_durability(Durability::Buffered { interval_ms: 200 })).unwrap();
        let mut pending = futures_util::stream::FuturesUnordered::new();
        for s in 0..sessions {
            pending.push(fill_session(&log, s, commands));
            if pending.len() >= 64 {
                futures_util::StreamExt::next(&mut pending).await;
            }
        }
        while futures_util::StreamExt::next(&mut pending).await.is_some() {}
        log.flush().await.unwrap();
    }
    eprintln!("filled {sessions} sessions of {commands} commands in {:.1} s", filled.elapsed().as_secs_f64());

    let options = MigrateOptions { lock_wait_ms: 5000, ..MigrateOptions::new(&dir) };
    let report = migrate_to_segments(&options, |_| {}).await.unwrap();
    let total = report.total_time.as_secs_f64();
    println!(
        "{} sessions, {} events, {} answers, {} snapshots, {} bytes of records: {:.2} s in all (copy {:.2} s, verify {:.2} s)",
        report.sessions,
        report.events,
        report.answers,
        report.snapshots,
        report.record_bytes,
        total,
        report.copy_time.as_secs_f64(),
        report.verify_time.as_secs_f64()
    );
    println!(
        "= {:.0} sessions/s, {:.0} events/s; on disk: sled {} bytes, segments {} bytes (preallocated)",
        report.sessions as f64 / total,
        report.events as f64 / total,
        report.sled_disk_bytes,
        report.segments_disk_bytes
    );
}

async fn fill_session(log: &SledEventLog, s: u64, commands: u64) {
    let id = SessionId::random();
    let hash = Some(format!("{:064x}", s));
    log.create_session(id, NewSession { project: "demo".into(), created_ms: 1_700_000_000_000, resume_token_hash: hash }).await.unwrap();
    let mut seq = 0;
    for c in 0..commands {
        let command_id = format!("c{c}");
        let events: Vec<NewEvent> = (0..1 + (s + c) % 3)
            .map(|e| NewEvent {
                time_ms: 1_700_000_000_000 + seq + e,
                event_type: "Connected".into(),
                schema_version: 1,
                correlation_id: Some(command_id.clone()),
                checksum: Some("0123456789abcdef".into()),
                payload: json!({"connectorId": "load.vestibule.wallet", "namespace": "eip155", "address": "0x52908400098527886E0F7030069857D2E4169EE7", "chainId": "eip155:1", "n": c}).into(),
            })
            .collect();
        let last = seq + events.len() as u64;
        let answer = CommandAnswer { command_id, seq: last, refusal: None };
        seq = log.append_answered(id, seq, events, answer).await.unwrap().last_seq;
    }
    let refusal = Some(AnswerRefusal { code: "not_connected".into(), message: "Connect a wallet first".into() });
    log.remember_answer(id, CommandAnswer { command_id: "refused".into(), seq, refusal }).await.unwrap();
    let state = json!({"modal": "open", "wallet": {"address": "0x52908400098527886E0F7030069857D2E4169EE7"}, "toasts": []});
    log.put_snapshot(
        id,
        Snapshot { seq, schema_version: 1, time_ms: 1_700_000_000_000 + seq, state: state.into(), log_bytes: Some(seq * 300) },
    )
    .await
    .unwrap();
}
