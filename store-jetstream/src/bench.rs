//! The event log benchmark ([`vestibule_store::bench::run_on`]) on JetStream: each level gets a
//! stream (and buckets) of its own, named `<prefix><label>`, deleted afterwards. Used by
//! `vestibule bench store --backend jetstream`.

use std::sync::Arc;

use vestibule_store::bench::BenchBackend;
use vestibule_store::{EventLog, StoreError};

use crate::{JetStreamConfig, JetStreamEventLog, engine};

pub struct JetStreamBench {
    config: JetStreamConfig,
    prefix: String,
}

impl JetStreamBench {
    /// Streams `VBENCH<random>_<label>` on `config`'s servers with its replicas (its `stream` is
    /// not used: the bench never touches a real log).
    pub fn new(config: JetStreamConfig) -> Self {
        let prefix = format!("VBENCH{:08x}_", rand::random::<u32>());
        Self { config, prefix }
    }

    fn config(&self, label: &str) -> JetStreamConfig {
        self.config.clone().with_stream(format!("{}{label}", self.prefix))
    }
}

#[async_trait::async_trait]
impl BenchBackend for JetStreamBench {
    fn describe(&self) -> String {
        format!(
            "NATS JetStream ({} replica{}, {})",
            self.config.replicas,
            if self.config.replicas == 1 { "" } else { "s" },
            self.config.servers.join(", ")
        )
    }

    async fn open(&self, label: &str) -> Result<Arc<dyn EventLog>, StoreError> {
        Ok(Arc::new(JetStreamEventLog::open(self.config(label)).await?))
    }

    async fn remove(&self, label: &str) -> Result<(), StoreError> {
        let name = self.config(label).stream;
        // Logs in as the log did: a server with authorization refuses an anonymous client.
        let options =
            self.config.connect_options("vestibule bench".to_string()).await.map_err(|e| StoreError::Engine(format!("JetStream: {e}")))?;
        let client = options.connect(self.config.servers.clone()).await.map_err(|e| engine("connect", e))?;
        let js = async_nats::jetstream::new(client);
        js.delete_stream(&name).await.map_err(|e| engine(&format!("delete the stream {name}"), e))?;
        for bucket in [format!("{name}_status"), format!("{name}_snapshots")] {
            js.delete_key_value(&bucket).await.map_err(|e| engine(&format!("delete the bucket {bucket}"), e))?;
        }
        Ok(())
    }
}
