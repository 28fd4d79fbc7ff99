use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where and how the JetStream event log lives; deserializable so the gateway can read it from its
/// config file (TOML):
///
/// ```toml
/// [store]
/// backend = "jetstream"
///
/// [store.jetstream]
/// servers = ["nats://10.0.0.1:4222", "nats://10.0.0.2:4222", "nats://10.0.0.3:4222"]
/// stream = "VESTIBULE"
/// replicas = 3
/// ```
///
/// Every field has a default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JetStreamConfig {
    /// NATS server URLs; the client connects to one and learns the rest of the cluster from it.
    pub servers: Vec<String>,
    /// Name of the event stream. It also names its subjects (`<stream>.ev.…`, `<stream>.ans.…`) and
    /// the KV buckets beside it (`<stream>_snapshots`, `<stream>_status`), so several logs can share
    /// one NATS account. Letters, digits, `_` and `-` only.
    pub stream: String,
    /// Replicas of the stream and the buckets (1, or 3 for a cluster that survives a node).
    pub replicas: usize,
    /// Largest encoded event record accepted by `append`, in bytes (larger is `InvalidAppend`).
    /// Must stay under the server's `max_payload` (1 MiB by default).
    pub max_event_bytes: usize,
    /// How long one JetStream request (publish ack, lookup) may take before it fails.
    #[serde(with = "humantime_serde")]
    pub request_timeout: Duration,
    /// How long opening the log (a gateway's start, a CLI command) keeps retrying when NATS does
    /// not answer yet: servers unreachable, or a cluster still electing leaders right after a node
    /// died. Attempts are spaced by a backoff doubling from 250 ms up to 4 s; `0s` tries once.
    #[serde(with = "humantime_serde")]
    pub open_timeout: Duration,
}

impl Default for JetStreamConfig {
    fn default() -> Self {
        Self {
            servers: vec!["nats://127.0.0.1:4222".into()],
            stream: "VESTIBULE".into(),
            replicas: 1,
            max_event_bytes: 256 * 1024,
            request_timeout: Duration::from_secs(5),
            open_timeout: Duration::from_secs(30),
        }
    }
}

impl JetStreamConfig {
    /// The defaults, on `servers`.
    pub fn at(servers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { servers: servers.into_iter().map(Into::into).collect(), ..Self::default() }
    }

    pub fn with_stream(mut self, stream: impl Into<String>) -> Self {
        self.stream = stream.into();
        self
    }

    /// Checks what the server would refuse later, with a message that names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.servers.is_empty() {
            return Err("`servers`: at least one NATS server URL is needed".into());
        }
        if self.stream.is_empty() || !self.stream.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(format!("`stream`: {:?} must be letters, digits, `_` or `-` (it names subjects and KV buckets)", self.stream));
        }
        if !(1..=5).contains(&self.replicas) {
            return Err(format!("`replicas`: {} is not between 1 and 5", self.replicas));
        }
        Ok(())
    }
}
