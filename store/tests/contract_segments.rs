//! The EventLog contract (src/contract.rs) on the segment-log backend, each case in a directory of
//! its own. Small segments (64 KiB), so the cases also cross segment boundaries.

mod common;

use std::sync::Arc;

use vestibule_store::{Durability, EventLog, SegmentEventLog, Upcaster};

struct Segments {
    dir: tempfile::TempDir,
}

impl vestibule_store::contract::Harness for Segments {
    async fn fresh() -> Self {
        Segments { dir: tempfile::tempdir().unwrap() }
    }

    async fn open(&self, upcaster: Arc<dyn Upcaster>) -> Arc<dyn EventLog> {
        let config = common::config(self.dir.path(), Durability::Durable).with_segment_bytes(64 * 1024);
        Arc::new(SegmentEventLog::open_with_upcaster(config, upcaster).unwrap())
    }
}

vestibule_store::contract_tests!(Segments);
