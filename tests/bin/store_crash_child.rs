//! Child process of the store crash test (`tests/store_crash.rs`); not a tool.
//!
//! `store-crash-child append DIR CYCLE`: opens the durable log at DIR, makes sure the shared
//! sessions exist, creates this cycle's session, prints `ready`, then appends from one task per
//! session until it is killed, printing `ack SESSION SEQ` each time an append resolves.
//! `store-crash-child hold DIR`: opens the log, prints `ready`, and waits to be killed.
//! Either exits by itself after 60 s, so a lost child never lingers.

use std::io::Write;
use std::time::Duration;

use vestibule_store::{EventLog, NewSession, SledEventLog, StoreConfig, StoreError};
use vestibule_tests::store_crash::{ChildLine, SESSIONS, cycle_session, expected_event, session};

fn say(line: ChildLine) {
    let mut out = std::io::stdout().lock();
    // One write per line: a kill never leaves half a line that parses.
    let _ = out.write_all(format!("{}\n", line.render()).as_bytes());
    let _ = out.flush();
}

fn fail(msg: String) -> ! {
    eprintln!("store-crash-child: {msg}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(60));
        fail("still running after 60 s".into());
    });
    let (mode, dir) = match args.as_slice() {
        [_, mode, dir, ..] => (mode.as_str(), dir.clone()),
        _ => fail("usage: store-crash-child append DIR CYCLE | hold DIR".into()),
    };
    let config = StoreConfig::at(&dir).with_lock_wait_ms(20_000);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    match mode {
        "hold" => {
            let _log = SledEventLog::open(config).unwrap_or_else(|e| fail(format!("open: {e}")));
            say(ChildLine::Ready);
            std::thread::sleep(Duration::from_secs(120));
        }
        "append" => {
            let cycle: u64 = args.get(3).and_then(|c| c.parse().ok()).unwrap_or_else(|| fail("no cycle".into()));
            rt.block_on(append(config, cycle));
        }
        other => fail(format!("unknown mode {other}")),
    }
}

async fn append(config: StoreConfig, cycle: u64) {
    let log = std::sync::Arc::new(SledEventLog::open(config).unwrap_or_else(|e| fail(format!("open: {e}"))));
    let new = || NewSession { project: "crash".into(), created_ms: 0, resume_token_hash: None };
    for i in 0..SESSIONS {
        match log.create_session(session(i), new()).await {
            Ok(_) | Err(StoreError::SessionExists(_)) => {}
            Err(e) => fail(format!("create: {e}")),
        }
    }
    let mine = cycle_session(cycle);
    match log.create_session(mine, new()).await {
        Ok(_) => say(ChildLine::Created(mine)),
        Err(e) => fail(format!("create {mine}: {e}")),
    }
    say(ChildLine::Ready);
    let tasks: Vec<_> = (0..SESSIONS)
        .map(|i| {
            let log = log.clone();
            tokio::spawn(async move {
                let s = session(i);
                let mut seq = log.latest_seq(s).await.unwrap_or_else(|e| fail(format!("latest_seq: {e}")));
                loop {
                    // 1 to 3 events per append, varying with the position.
                    let n = 1 + (seq + i as u64) % 3;
                    let events = (seq + 1..=seq + n).map(|q| expected_event(s, q)).collect();
                    match log.append(s, seq, events).await {
                        Ok(outcome) => {
                            seq = outcome.last_seq;
                            say(ChildLine::Ack(s, seq));
                        }
                        Err(e) => fail(format!("append to {s} after {seq}: {e}")),
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}
