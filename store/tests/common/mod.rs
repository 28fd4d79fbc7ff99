#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use vestibule_store::{Durability, NewEvent, NewSession, SledEventLog, StoreConfig};

pub fn config(dir: &Path, durability: Durability) -> StoreConfig {
    // sled lets go of its file lock a moment after the last handle is dropped.
    StoreConfig::at(dir).with_durability(durability).with_lock_wait_ms(10_000)
}

pub fn open(dir: &Path) -> Arc<SledEventLog> {
    Arc::new(SledEventLog::open(config(dir, Durability::Durable)).expect("open"))
}

pub fn temp_log() -> (tempfile::TempDir, Arc<SledEventLog>) {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path());
    (dir, log)
}

pub fn event(n: u64) -> NewEvent {
    NewEvent {
        time_ms: 1_000 + n,
        event_type: "test.counted".into(),
        schema_version: 1,
        correlation_id: Some(format!("cmd-{n}")),
        checksum: None,
        payload: json!({ "n": n }).into(),
    }
}

pub fn new_session(project: &str) -> NewSession {
    NewSession { project: project.into(), created_ms: 1_000, resume_token_hash: Some("h".repeat(64)) }
}
