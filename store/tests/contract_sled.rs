//! The EventLog contract (src/contract.rs) on the sled backend, each case in a directory of its own.

mod common;

use std::sync::Arc;

use vestibule_store::{Durability, EventLog, SledEventLog, Upcaster};

struct Sled {
    dir: tempfile::TempDir,
}

impl vestibule_store::contract::Harness for Sled {
    async fn fresh() -> Self {
        Sled { dir: tempfile::tempdir().unwrap() }
    }

    async fn open(&self, upcaster: Arc<dyn Upcaster>) -> Arc<dyn EventLog> {
        let config = common::config(self.dir.path(), Durability::Durable);
        Arc::new(SledEventLog::open_with_upcaster(config, upcaster).unwrap())
    }
}

vestibule_store::contract_tests!(Sled);
