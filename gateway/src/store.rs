//! Opening the event log from the gateway's configuration, and its background retention.

use std::sync::Arc;

use vestibule_actors::session::upcast::SessionUpcaster;
use vestibule_store::{Durability, EventLog, RetentionPolicy, SledEventLog, StoreConfig, StoreError};

use crate::config::{DurabilityMode, GatewayConfig, StoreBackend};

pub fn store_config(config: &GatewayConfig) -> StoreConfig {
    let durability = match config.store.durability {
        DurabilityMode::Durable => Durability::Durable,
        DurabilityMode::Buffered => Durability::Buffered { interval_ms: config.store.flush_interval.as_millis().max(1) as u64 },
    };
    StoreConfig::at(config.data.clone()).with_durability(durability)
}

/// Opens the configured log with the domain's upcaster. A sled directory held by another process
/// is reported by name.
pub async fn open(config: &GatewayConfig) -> anyhow::Result<Arc<dyn EventLog>> {
    match config.store.backend {
        StoreBackend::Sled => open_at(store_config(config)),
        StoreBackend::Jetstream => {
            let js = config.store.jetstream.clone();
            match vestibule_store_jetstream::JetStreamEventLog::open_with_upcaster(js, Arc::new(SessionUpcaster)).await {
                Ok(log) => Ok(Arc::new(log)),
                Err(e) => Err(anyhow::anyhow!("cannot open the event log on NATS JetStream: {e}")),
            }
        }
    }
}

pub fn open_at(store: StoreConfig) -> anyhow::Result<Arc<dyn EventLog>> {
    match SledEventLog::open_with_upcaster(store, Arc::new(SessionUpcaster)) {
        Ok(log) => Ok(Arc::new(log)),
        Err(e @ StoreError::Locked { .. }) => Err(anyhow::anyhow!("{e}")),
        Err(e) => Err(anyhow::anyhow!("cannot open the event log: {e}")),
    }
}

pub fn spawn_retention(log: Arc<dyn EventLog>, config: &GatewayConfig) {
    let r = &config.retention;
    let policy = RetentionPolicy { ended_after: r.ended_after, idle_after: r.idle_after, batch_size: r.batch_size };
    // The handle stops the task when dropped; the gateway keeps it for its whole life.
    std::mem::forget(vestibule_store::spawn_retention(log, policy, r.interval));
}
