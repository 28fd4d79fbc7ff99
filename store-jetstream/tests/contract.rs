//! The EventLog contract (vestibule_store::contract) on JetStream: each case on a nats-server of
//! its own.

use std::sync::Arc;

use vestibule_store::{EventLog, Upcaster};
use vestibule_store_jetstream::test_server::NatsServer;
use vestibule_store_jetstream::{JetStreamConfig, JetStreamEventLog};

struct JetStream {
    server: NatsServer,
}

impl vestibule_store::contract::Harness for JetStream {
    async fn fresh() -> Self {
        JetStream { server: tokio::task::spawn_blocking(NatsServer::start).await.unwrap() }
    }

    async fn open(&self, upcaster: Arc<dyn Upcaster>) -> Arc<dyn EventLog> {
        Arc::new(JetStreamEventLog::open_with_upcaster(JetStreamConfig::at([self.server.url.clone()]), upcaster).await.unwrap())
    }
}

vestibule_store::contract_tests!(JetStream);
