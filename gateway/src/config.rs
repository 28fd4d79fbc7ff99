//! The gateway's configuration: defaults, then a TOML file, then `VESTIBULE_*` environment variables
//! (nested keys joined by `__`, e.g. `VESTIBULE_LIMITS__MAX_FRAME_BYTES=131072`), then command-line
//! flags. Validated at start; every error names the field.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use vestibule_actors::runtime::RuntimeConfig;

use crate::origin::{DEFAULT_ALLOWED_ORIGINS, OriginPattern};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    /// Address to listen on; port 0 picks a free port (the chosen address is printed).
    pub listen: String,
    /// The reverse proxies (TLS terminators, load balancers) in front of the gateway, as addresses
    /// or CIDR ranges: a request from one of them is counted under the client address it forwards
    /// in `forwarded_header` (`client_address.rs`). None by default: each socket's peer is the client.
    pub trusted_proxies: crate::client_address::TrustedProxies,
    /// The header those proxies append the client's address to: `x-forwarded-for` (the default)
    /// or RFC 7239's `forwarded`. Only that one is read: the other is whatever the client sent.
    pub forwarded_header: crate::client_address::ForwardedHeader,
    /// Data directory of the event log.
    pub data: PathBuf,
    /// Directory served at `/` (the demo app and the widget's script).
    pub static_dir: PathBuf,
    /// HTTP worker threads; 0 means one per CPU.
    pub workers: usize,
    pub log_format: LogFormat,
    pub store: StoreSettings,
    pub runtime: RuntimeConfig,
    pub limits: Limits,
    pub retention: RetentionSettings,
    /// Projects allowed to open sessions. When none is configured, a `demo` project with the spec's
    /// default allowed origins (plus this gateway's own origin) exists.
    pub projects: Vec<ProjectConfig>,
    /// Enables the debug API (`/debug/...`) for callers presenting this bearer token.
    pub admin_token: Option<String>,
    pub siwx: SiwxSettings,
    /// The chain service's networks (`[networks."eip155:1"] rpc_urls = [...]`, `tokens`,
    /// `activity`, `native_currency`), by CAIP-2 id: vestibule-chain's own types. None by default:
    /// the catalogue's networks get no endpoint unless configured (docs/chain.md).
    pub networks: std::collections::BTreeMap<String, vestibule_chain::config::NetworkConfig>,
    /// The chain service's RPC policy (spec §7 Chain RPC); every field optional.
    pub rpc: vestibule_chain::rpc::RpcPolicy,
    /// Where fiat prices come from; without it no fiat value is ever shown.
    pub prices: Option<vestibule_chain::config::PriceSourceConfig>,
    /// A local devnet's `devnet.json` (written by tests/peers/scripts/devnet-setup.mjs; `./scripts/run`
    /// passes it as `--devnet`): its networks join `networks` (one configured in both keeps the
    /// configuration's table), and the file is served at `/devnet.json` for the demo app's dev
    /// wallet (decision 0910). None by default: no devnet, no route.
    pub devnet: Option<PathBuf>,
    /// Several gateways on one JetStream log, one owner per session (docs/scale-out.md). Off by
    /// default; needs `store.backend = "jetstream"`.
    pub cluster: ClusterSettings,
    /// The embedded wallet (email and social login through the secure frame; docs/embedded-wallet.md):
    /// `[embedded]` with `[embedded.smtp]` and `[embedded.social.<provider>]`. Off when absent: email
    /// and social login then answer the catalogue's errors (decision 0400).
    #[serde(skip_serializing)]
    pub embedded: Option<vestibule_embedded::EmbeddedConfig>,
}

/// `[cluster]`: session ownership by leases and routing between gateways over NATS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSettings {
    pub enabled: bool,
    /// This process's id in the cluster (letters, digits, `-`, `_`); random when absent. A fixed id
    /// restarted before its previous lease lapsed waits for the lapse.
    pub gateway_id: Option<String>,
    /// How long a dead gateway's sessions stay its own: it renews every fifth of this, and its
    /// sessions are taken over by others once it lapses. Every gateway of a cluster uses the same.
    #[serde(with = "humantime_serde")]
    pub lease_ttl: Duration,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        Self { enabled: false, gateway_id: None, lease_ttl: Duration::from_secs(10) }
    }
}

/// The part of `devnet.json` the gateway reads: per CAIP-2 network, its node and its token.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DevnetFile {
    networks: std::collections::BTreeMap<String, DevnetNetwork>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DevnetNetwork {
    rpc_url: String,
    #[serde(default)]
    token: Option<DevnetToken>,
}

#[derive(Debug, Deserialize)]
struct DevnetToken {
    address: String,
    name: Option<String>,
    symbol: Option<String>,
    decimals: Option<u8>,
}

/// Server-side sign-in settings. RPC endpoints come only from here, never from the browser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SiwxSettings {
    /// JSON-RPC endpoints for contract-account (EIP-1271) checks, by CAIP-2 chain id:
    /// `rpc_urls = { "eip155:1" = "https://..." }`. Without one, contract accounts cannot sign in.
    pub rpc_urls: std::collections::BTreeMap<String, String>,
    /// An on-chain check that takes longer fails.
    #[serde(with = "humantime_serde")]
    pub check_timeout: Duration,
    /// Longest life of a sign-in token (a token never outlives its sign-in session).
    #[serde(with = "humantime_serde")]
    pub token_ttl: Duration,
    /// The `iss` claim of sign-in tokens.
    pub issuer: String,
}

impl Default for SiwxSettings {
    fn default() -> Self {
        Self {
            rpc_urls: Default::default(),
            check_timeout: Duration::from_secs(10),
            token_ttl: Duration::from_secs(3600),
            issuer: "vestibule".into(),
        }
    }
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            trusted_proxies: Default::default(),
            forwarded_header: Default::default(),
            data: PathBuf::from("data"),
            static_dir: PathBuf::from("client/dist"),
            workers: 0,
            log_format: LogFormat::Text,
            store: StoreSettings::default(),
            runtime: RuntimeConfig::default(),
            limits: Limits::default(),
            retention: RetentionSettings::default(),
            projects: vec![],
            admin_token: None,
            siwx: SiwxSettings::default(),
            networks: Default::default(),
            rpc: Default::default(),
            prices: None,
            devnet: None,
            cluster: ClusterSettings::default(),
            embedded: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DurabilityMode {
    /// Every acknowledged event is on disk (group commit). The default.
    Durable,
    /// Events are flushed every `flush_interval`; a crash may lose that much. For load runs.
    Buffered,
}

/// Which event log backs the sessions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    /// Embedded sled in `<data>/` (one gateway per directory). The default.
    #[default]
    Sled,
    /// The segment log in `<data>/` (decision 0105): one frame, one write and one sync per group
    /// commit, and an in-memory index. Not the default until decision 0105's conditions are met.
    Segments,
    /// A NATS JetStream stream shared by every gateway (`[store.jetstream]`; docs/scale-out.md).
    Jetstream,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSettings {
    pub backend: StoreBackend,
    /// sled and segments: JetStream acknowledges a write once stored (by a quorum with replicas).
    pub durability: DurabilityMode,
    #[serde(with = "humantime_serde")]
    pub flush_interval: Duration,
    /// Servers, stream name and replicas when `backend = "jetstream"`.
    pub jetstream: vestibule_store_jetstream::JetStreamConfig,
    /// Segment size, checkpoints and compaction when `backend = "segments"`.
    pub segments: SegmentSettings,
    /// sled's page cache, in bytes (`backend = "sled"`). sled holds several times this (about 10×
    /// at 32 MiB, measured), and what it holds grew with every byte written up to that: at sled's
    /// own default of 256 MiB a gateway held 1.3 GB after 1 GB of events, with no session left
    /// (docs/performance.md, "sled's memory").
    pub sled_cache_bytes: u64,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            backend: StoreBackend::Sled,
            durability: DurabilityMode::Durable,
            flush_interval: Duration::from_millis(10),
            jetstream: Default::default(),
            segments: Default::default(),
            sled_cache_bytes: 32 * 1024 * 1024,
        }
    }
}

/// `[store.segments]`: the segment log's tunables (decision 0105; their meaning is
/// `vestibule_store::StoreConfig`'s, and so are the defaults). Ignored by the other backends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SegmentSettings {
    /// Size of each segment file, preallocated: 1 MiB to 1 GiB.
    pub segment_bytes: u64,
    /// An index checkpoint every this many bytes of log (and at close), so that opening scans
    /// only what follows it; 0 writes one only at close; else at least 1 MiB.
    pub checkpoint_bytes: u64,
    /// The oldest segment is compacted once at most this percentage of it is live; 0 never, at
    /// most 99.
    pub compact_below_percent: u32,
    /// Bytes one compaction step reads between two group commits: 4 KiB up to `segment_bytes`.
    pub compact_step_bytes: u64,
}

impl Default for SegmentSettings {
    fn default() -> Self {
        let store = vestibule_store::StoreConfig::default();
        Self {
            segment_bytes: store.segment_bytes,
            checkpoint_bytes: store.checkpoint_bytes,
            compact_below_percent: store.compact_below_percent,
            compact_step_bytes: store.compact_step_bytes,
        }
    }
}

impl SegmentSettings {
    /// `Err((field, message))` for a value the log would clamp or could not work with.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        const MIB: u64 = 1024 * 1024;
        if !(MIB..=1024 * MIB).contains(&self.segment_bytes) {
            // Below 1 MiB a segment would not hold a group commit of the largest events.
            return Err(("segment_bytes", format!("{} is not between 1048576 (1 MiB) and 1073741824 (1 GiB)", self.segment_bytes)));
        }
        if self.checkpoint_bytes != 0 && self.checkpoint_bytes < MIB {
            // Each checkpoint writes the whole index: more often would cost more than it saves.
            return Err(("checkpoint_bytes", format!("{} is neither 0 nor at least 1048576 (1 MiB)", self.checkpoint_bytes)));
        }
        if self.compact_below_percent > 99 {
            // At 100 a segment all live would be copied again and again.
            return Err(("compact_below_percent", format!("{} is more than 99", self.compact_below_percent)));
        }
        if !(4096..=self.segment_bytes).contains(&self.compact_step_bytes) {
            return Err((
                "compact_step_bytes",
                format!("{} is not between 4096 and segment_bytes ({})", self.compact_step_bytes, self.segment_bytes),
            ));
        }
        Ok(())
    }
}

/// The smallest `limits.max_frame_bytes` taken: a wallet's answer the widget sends
/// (`MAX_WALLET_ANSWER_BYTES`, 63 KiB) and a host's request (64 KiB of params) must fit.
pub const MIN_FRAME_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest message a client may send (one frame, or the fragments of one message together).
    /// Checked at the frame header, before the payload is read.
    pub max_frame_bytes: usize,
    /// Commands per second per session (all its connections together), and the burst allowed.
    pub commands_per_second: u32,
    pub command_burst: u32,
    /// New sessions per minute per client address (an IPv4 address, or an IPv6 /64), on this
    /// gateway; a hello that would create one more is refused with `rate_limited` (close 1013).
    pub sessions_per_minute: u32,
    /// New sessions an address may create at once, above that rate.
    pub session_burst: u32,
    /// Resumes (a `hello` with a `sessionId`) per minute per client address, on this gateway,
    /// counted before the resume token is checked; one more is refused with `rate_limited` (close
    /// 1013). A resume's welcome may carry the whole state (hundreds of KB), and in a cluster it
    /// crosses NATS: without this, one client resuming over and over overloaded the owner.
    pub resumes_per_minute: u32,
    /// Resumes an address may make at once, above that rate.
    pub resume_burst: u32,
    /// Resumes per minute of one session, counted once its resume token is checked, on the gateway
    /// the client reached and, for a proxied resume, again on the session's owner (so the limit
    /// holds across a cluster); one more is refused with `rate_limited` (close 1013).
    pub session_resumes_per_minute: u32,
    /// Resumes of one session at once, above that rate.
    pub session_resume_burst: u32,
    /// WebSocket connections per client address (IPv6: per /64).
    pub connections_per_ip: usize,
    /// WebSocket connections in total; lowered at start to what the open-file limit allows.
    pub max_connections: usize,
    /// WebSocket connections attached to one session at once (each is sent every diff); a resume
    /// beyond it is refused with `rate_limited` (close 1013) until one of them closes.
    pub connections_per_session: usize,
    /// Bytes one session may write to its event log (its events and its remembered answers,
    /// counted as docs/protocol.md says); beyond it the session's commands are refused with
    /// `log_full` (not remembered: the refusal writes nothing). Copied into the runtime's
    /// `max_log_bytes` (decision 0107).
    pub session_log_bytes: u64,
    /// Bytes of event log one client address (an IPv4 address, or an IPv6 /64) may write across
    /// all its sessions per hour, all of which may be written at once; once spent, its commands are
    /// refused with `rate_limited` (writing nothing) until the share refills. The session budget
    /// alone let one address fill session after session as fast as it may create them.
    pub client_log_bytes_per_hour: u64,
    /// Free bytes the event log's disk (the data directory's) must keep: below it, new sessions
    /// and clients' commands are refused (retry later) and `/healthz` says `disk_low`, before a
    /// full disk fails the store. Read every 5 s; 0 watches nothing. Not read for a JetStream log.
    pub min_free_disk_bytes: u64,
    /// Plain HTTP connections (not upgraded) per client address.
    pub http_connections_per_ip: usize,
    /// Plain HTTP connections in total; lowered at start to a quarter of what the open-file limit
    /// allows (each may hold a second descriptor for a static file).
    pub max_http_connections: usize,
    /// Open-file descriptors kept free for the event log (sled's blob files and snapshots; the
    /// segment log's at most 32 read-only segments, its two writable ones and its lock), retention,
    /// logs and outgoing RPC connections: sockets are refused before they could take these.
    pub reserved_fds: usize,
    /// Time a client has to send a request's headers, from the moment it connects.
    #[serde(with = "humantime_serde")]
    pub header_timeout: Duration,
    /// Time a client has to send a request's whole body once its headers are in.
    #[serde(with = "humantime_serde")]
    pub body_timeout: Duration,
    /// An idle keep-alive connection is closed after this long.
    #[serde(with = "humantime_serde")]
    pub keep_alive: Duration,
    /// Largest request head (request line and headers together); larger is refused with 431.
    pub max_header_bytes: usize,
    /// Largest request body; larger is refused with 413.
    pub max_body_bytes: usize,
    /// Diffs a connection may have unacknowledged before the server holds the next one back.
    pub unacked_diffs: usize,
    /// A connection whose window is full, with a diff waiting, must acknowledge within this long,
    /// or it is closed with 4004 (it can resume).
    #[serde(with = "humantime_serde")]
    pub ack_timeout: Duration,
    /// Frames queued for one connection; a connection this far behind is dropped (it can resume).
    pub outbound_queue: usize,
    #[serde(with = "humantime_serde")]
    pub heartbeat_interval: Duration,
    #[serde(with = "humantime_serde")]
    pub heartbeat_timeout: Duration,
    #[serde(with = "humantime_serde")]
    pub hello_timeout: Duration,
    /// A send to a client that takes longer than this ends the connection: a WebSocket frame, or
    /// on plain HTTP a stall with no byte of the answer taken (no further request is read meanwhile).
    #[serde(with = "humantime_serde")]
    pub write_timeout: Duration,
    /// Debug API (`admin_token`): `GET /debug/sessions/{id}/follow` streams open at once, in all;
    /// one more is refused with 429 `busy`. They share the plain HTTP connections with visitors.
    pub debug_follows: usize,
    /// A follow stream with nothing to send for this long sends an SSE comment line, so that a
    /// follower that went away is noticed (the write fails) and its stream ended.
    #[serde(with = "humantime_serde")]
    pub debug_follow_heartbeat: Duration,
    /// Debug API: `GET /debug/sessions/{id}/state` rebuilds (log folds) running at once, each on a
    /// blocking thread, off the HTTP workers; one more is refused with 429 `busy`.
    pub debug_state_folds: usize,
    /// Chain calls forwarded for host apps (safe reads) and embedded-wallet frames (`/api/rpc`)
    /// that may be at the nodes at once, across every session; one more is refused at once with
    /// JSON-RPC -32005 "limit exceeded" without reaching a node.
    pub host_chain_calls: usize,
    /// How many of those one client address (an IPv4 address, an IPv6 /64) may hold with its
    /// sessions' host reads (at most `host_chain_calls`); one more of its reads is refused the
    /// same way while other clients' go on. Frames' calls are bounded per user instead. Unset:
    /// [`Limits::host_chain_calls_per_client`].
    pub host_chain_calls_per_client: Option<usize>,
    /// Receipt (or Solana signature) waits one client address may have at once across its
    /// sessions; one more waits for one of them to end, asking no node meanwhile.
    pub receipt_waits_per_client: usize,
}

impl Limits {
    /// One client address's share of the host chain calls at the nodes at once: as set, else
    /// [`vestibule_chain::service::DEFAULT_MAX_FORWARDED_PER_CLIENT`] (32) or all of
    /// `host_chain_calls` when fewer.
    pub fn host_chain_calls_per_client(&self) -> usize {
        self.host_chain_calls_per_client.unwrap_or(vestibule_chain::service::DEFAULT_MAX_FORWARDED_PER_CLIENT).min(self.host_chain_calls)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame_bytes: 64 * 1024,
            commands_per_second: 20,
            command_burst: 40,
            sessions_per_minute: 60,
            session_burst: 120,
            resumes_per_minute: 600,
            resume_burst: 600,
            session_resumes_per_minute: 30,
            session_resume_burst: 30,
            connections_per_ip: 256,
            max_connections: 50_000,
            connections_per_session: 16,
            session_log_bytes: vestibule_actors::runtime::DEFAULT_SESSION_LOG_BYTES,
            client_log_bytes_per_hour: 128 * 1024 * 1024,
            min_free_disk_bytes: 1024 * 1024 * 1024,
            http_connections_per_ip: 128,
            max_http_connections: 1024,
            reserved_fds: 128,
            header_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(10),
            keep_alive: Duration::from_secs(5),
            max_header_bytes: 16 * 1024,
            max_body_bytes: 64 * 1024,
            unacked_diffs: 64,
            ack_timeout: Duration::from_secs(10),
            outbound_queue: 256,
            heartbeat_interval: Duration::from_secs(15),
            heartbeat_timeout: Duration::from_secs(45),
            hello_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            debug_follows: 16,
            debug_follow_heartbeat: Duration::from_secs(15),
            debug_state_folds: 2,
            host_chain_calls: vestibule_chain::service::DEFAULT_MAX_FORWARDED_IN_FLIGHT,
            host_chain_calls_per_client: None,
            receipt_waits_per_client: crate::chain::DEFAULT_RECEIPT_WAITS_PER_CLIENT,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionSettings {
    /// Ended sessions are deleted this long after their last event.
    #[serde(with = "humantime_serde")]
    pub ended_after: Duration,
    /// Any session idle this long is deleted.
    #[serde(with = "humantime_serde")]
    pub idle_after: Duration,
    /// How often the background expiry runs.
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    pub batch_size: usize,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        Self {
            ended_after: Duration::from_secs(7 * 24 * 3600),
            idle_after: Duration::from_secs(30 * 24 * 3600),
            interval: Duration::from_secs(600),
            batch_size: 500,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    pub id: String,
    #[serde(default)]
    pub allowed_origins: Vec<String>,
}

/// A project with its patterns parsed.
#[derive(Debug, Clone)]
pub struct Project {
    pub id: String,
    pub allowed_origins: Vec<OriginPattern>,
}

impl Project {
    pub fn allows(&self, origin: &str) -> bool {
        self.allowed_origins.iter().any(|p| p.matches(origin))
    }
}

/// Flags that override the file and the environment.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Overrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub static_dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devnet: Option<PathBuf>,
}

/// Every `VESTIBULE_*` variable is read as configuration and an unknown one is an error (a typo
/// must not be silently ignored), so tools and tests use other names (e.g. `ANVIL_BIN`).
pub const ENV_PREFIX: &str = "VESTIBULE_";

#[derive(Debug, thiserror::Error)]
#[error("configuration: {0}")]
pub struct ConfigError(pub String);

impl GatewayConfig {
    /// Defaults, then `file`, then the `VESTIBULE_*` environment, then `overrides`.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Self, ConfigError> {
        Self::load_with_env(file, overrides, ENV_PREFIX)
    }

    /// As [`GatewayConfig::load`] with another environment prefix, so tests do not depend on the
    /// environment of whoever runs them.
    fn load_with_env(file: Option<&Path>, overrides: &Overrides, env_prefix: &str) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(GatewayConfig::default()));
        if let Some(file) = file {
            if !file.is_file() {
                return Err(ConfigError(format!("the config file {} does not exist", file.display())));
            }
            figment = figment.merge(Toml::file_exact(file));
        }
        figment = figment.merge(Env::prefixed(env_prefix).split("__").ignore(&["log"])).merge(Serialized::defaults(overrides));
        let mut config: GatewayConfig =
            figment.extract().map_err(|e| ConfigError(e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ")))?;
        config.add_devnet_networks()?;
        config.validate()?;
        Ok(config)
    }

    /// Adds the networks of the `devnet` file, if any, to `networks`. A network the configuration
    /// names too keeps the configuration's table: what an operator wrote wins over what a script
    /// generated. Validated with the rest afterwards.
    fn add_devnet_networks(&mut self) -> Result<(), ConfigError> {
        let Some(path) = &self.devnet else { return Ok(()) };
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError(format!("`devnet`: cannot read {}: {e}", path.display())))?;
        let file: DevnetFile =
            serde_json::from_str(&text).map_err(|e| ConfigError(format!("`devnet`: {} is not a devnet.json: {e}", path.display())))?;
        for (id, network) in file.networks {
            let tokens = network
                .token
                .into_iter()
                .map(|t| vestibule_chain::config::TokenConfig {
                    address: t.address,
                    symbol: t.symbol,
                    decimals: t.decimals,
                    name: t.name,
                    icon_url: None,
                })
                .collect();
            self.networks.entry(id).or_insert_with(|| vestibule_chain::config::NetworkConfig {
                rpc_urls: vec![network.rpc_url],
                native_currency: None,
                tokens,
                activity: Default::default(),
            });
        }
        Ok(())
    }

    /// The chain service's configuration: `networks`, `rpc` and `prices` of this file.
    pub fn chain_config(&self) -> vestibule_chain::ChainConfig {
        vestibule_chain::ChainConfig { networks: self.networks.clone(), rpc: self.rpc.clone(), prices: self.prices.clone() }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: &str, message: String| Err(ConfigError(format!("`{field}`: {message}")));
        if let Err(e) = self.chain_config().validate() {
            return err(&e.field, e.message);
        }
        if let Err((field, message)) = self.store.segments.validate() {
            return err(&format!("store.segments.{field}"), message);
        }
        if self.store.backend == StoreBackend::Jetstream {
            if let Err(message) = self.store.jetstream.validate() {
                return Err(ConfigError(format!("`store.jetstream.{}", message.trim_start_matches('`'))));
            }
        }
        if self.cluster.enabled {
            if self.store.backend != StoreBackend::Jetstream {
                return err("cluster.enabled", "needs `store.backend = \"jetstream\"` (the gateways share its log)".into());
            }
            if let Some(id) = &self.cluster.gateway_id
                && !vestibule_store_jetstream::lease::valid_gateway_id(id)
            {
                return err("cluster.gateway_id", format!("{id:?} must be 1 to 64 letters, digits, `-` or `_`"));
            }
            if self.cluster.lease_ttl < Duration::from_secs(1) {
                return err("cluster.lease_ttl", "at least 1s".into());
            }
            // The embedded service keeps its frames, codes and pending logins in the process, and
            // a session's notices go to the local actor: with several owners that would split a login.
            if self.embedded.is_some() {
                return err(
                    "embedded",
                    "is not available with `cluster.enabled` yet (its frames and codes live in one gateway process)".into(),
                );
            }
        }
        for (chain, url) in &self.siwx.rpc_urls {
            let caip2_evm = chain.strip_prefix("eip155:").is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()));
            if !caip2_evm {
                return err(&format!("siwx.rpc_urls.{chain}"), "keys are CAIP-2 EVM chain ids such as \"eip155:1\"".into());
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return err(&format!("siwx.rpc_urls.{chain}"), format!("{url:?} is not an http(s) URL"));
            }
        }
        if self.siwx.token_ttl < Duration::from_secs(60) {
            return err("siwx.token_ttl", "at least 60s".into());
        }
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            return err("listen", format!("{:?} is not an address such as 127.0.0.1:8080", self.listen));
        }
        let l = &self.limits;
        // The widget sends a wallet's answer of up to `MAX_WALLET_ANSWER_BYTES` and a host's
        // request of up to 64 KiB of params: a smaller frame would close the socket on them (1009)
        // where the session has a clear answer to give.
        if l.max_frame_bytes < MIN_FRAME_BYTES || l.max_frame_bytes > 16 * 1024 * 1024 {
            return err(
                "limits.max_frame_bytes",
                format!("between {MIN_FRAME_BYTES} (a wallet's answer or a host's request must fit) and 16777216"),
            );
        }
        if l.commands_per_second == 0 || l.command_burst == 0 {
            return err("limits.commands_per_second", "must be at least 1 (and command_burst too)".into());
        }
        if l.sessions_per_minute == 0 || l.session_burst == 0 {
            return err("limits.sessions_per_minute", "must be at least 1 (and session_burst too)".into());
        }
        if l.resumes_per_minute == 0 || l.resume_burst == 0 {
            return err("limits.resumes_per_minute", "must be at least 1 (and resume_burst too)".into());
        }
        if l.session_resumes_per_minute == 0 || l.session_resume_burst == 0 {
            return err("limits.session_resumes_per_minute", "must be at least 1 (and session_resume_burst too)".into());
        }
        if l.unacked_diffs == 0 || l.outbound_queue <= l.unacked_diffs {
            return err("limits.outbound_queue", format!("must be larger than limits.unacked_diffs ({})", l.unacked_diffs));
        }
        if l.heartbeat_timeout <= l.heartbeat_interval {
            return err("limits.heartbeat_timeout", "must be longer than limits.heartbeat_interval".into());
        }
        if l.connections_per_session == 0 {
            return err("limits.connections_per_session", "must be at least 1".into());
        }
        if l.session_log_bytes == 0 {
            // 0 would refuse every session's first command: not a way to turn the budget off.
            return err(
                "limits.session_log_bytes",
                "must be at least 1 (bytes one session may write to its event log; the default is 16777216, 16 MiB)".into(),
            );
        }
        if !(1024 * 1024..=64 * 1024 * 1024 * 1024).contains(&self.store.sled_cache_bytes) {
            return err("store.sled_cache_bytes", "between 1048576 (1 MiB) and 68719476736 (64 GiB)".into());
        }
        if l.client_log_bytes_per_hour < 1024 * 1024 {
            return err(
                "limits.client_log_bytes_per_hour",
                "must be at least 1048576, 1 MiB (bytes one client address may write to the event log per hour; the default is 134217728, 128 MiB)".into(),
            );
        }
        if l.connections_per_ip == 0 || l.max_connections == 0 {
            return err("limits.connections_per_ip", "must be at least 1 (and max_connections too)".into());
        }
        if l.http_connections_per_ip == 0 || l.max_http_connections == 0 {
            return err("limits.http_connections_per_ip", "must be at least 1 (and max_http_connections too)".into());
        }
        if l.host_chain_calls == 0 {
            return err("limits.host_chain_calls", "must be at least 1".into());
        }
        if l.receipt_waits_per_client == 0 {
            return err("limits.receipt_waits_per_client", "must be at least 1".into());
        }
        if let Some(share) = l.host_chain_calls_per_client
            && (share == 0 || share > l.host_chain_calls)
        {
            let message = format!("must be at least 1 and at most limits.host_chain_calls ({})", l.host_chain_calls);
            return err("limits.host_chain_calls_per_client", message);
        }
        if l.debug_follows == 0 || l.debug_state_folds == 0 {
            let field = if l.debug_follows == 0 { "limits.debug_follows" } else { "limits.debug_state_folds" };
            return err(field, "must be at least 1 (the debug API is off unless admin_token is set)".into());
        }
        for (field, value) in [
            ("header_timeout", l.header_timeout),
            ("body_timeout", l.body_timeout),
            ("ack_timeout", l.ack_timeout),
            ("debug_follow_heartbeat", l.debug_follow_heartbeat),
        ] {
            if value.is_zero() {
                return err(&format!("limits.{field}"), "must be longer than 0s".into());
            }
        }
        if l.max_header_bytes < 1024 || l.max_header_bytes > 64 * 1024 {
            return err("limits.max_header_bytes", "between 1024 and 65536".into());
        }
        if l.max_body_bytes < 1024 || l.max_body_bytes > 16 * 1024 * 1024 {
            return err("limits.max_body_bytes", "between 1024 and 16777216".into());
        }
        if self.runtime.snapshot_every == 0 {
            return err("runtime.snapshot_every", "must be at least 1".into());
        }
        if self.runtime.mailbox_capacity < 2 {
            return err("runtime.mailbox_capacity", "must be at least 2".into());
        }
        if self.retention.batch_size == 0 {
            return err("retention.batch_size", "must be at least 1".into());
        }
        if self.admin_token.as_ref().is_some_and(|t| t.len() < 16) {
            return err("admin_token", "use at least 16 characters".into());
        }
        let mut ids = BTreeSet::new();
        for (i, p) in self.projects.iter().enumerate() {
            if p.id.is_empty() || p.id.len() > 64 || !p.id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return err(&format!("projects[{i}].id"), "1 to 64 of A-Z a-z 0-9 - _".into());
            }
            if !ids.insert(&p.id) {
                return err(&format!("projects[{i}].id"), format!("{:?} is listed twice", p.id));
            }
            for (j, pattern) in p.allowed_origins.iter().enumerate() {
                if let Err(e) = OriginPattern::parse(pattern) {
                    return err(&format!("projects[{i}].allowed_origins[{j}]"), e.to_string());
                }
                // The project's origins are the frame's `frame-ancestors`: `*`, or a wildcard over a
                // free hosting service's domain, would let any site (there) embed the wallet's
                // approval page, and place it under the visitor's cursor.
                if self.embedded.is_some() && OriginPattern::parse(pattern).is_ok_and(|p| p.admits_strangers()) {
                    return err(
                        &format!("projects[{i}].allowed_origins[{j}]"),
                        format!("{pattern:?} is refused with [embedded]: any site there could embed the wallet's frame; name the sites"),
                    );
                }
            }
        }
        Ok(())
    }

    /// The projects in force. `own_origin` (this gateway's address) is added to the default project
    /// so the demo app it serves can connect. With the embedded wallet the default project keeps
    /// only localhost and its own origin: its free-hosting wildcards would let any site there embed
    /// the wallet's frame (decision 0306).
    pub fn resolved_projects(&self, own_origin: &str) -> Vec<Project> {
        let parse = |patterns: &[String]| patterns.iter().filter_map(|p| OriginPattern::parse(p).ok()).collect();
        if self.projects.is_empty() {
            let mut patterns: Vec<String> = DEFAULT_ALLOWED_ORIGINS
                .iter()
                .filter(|p| self.embedded.is_none() || !OriginPattern::parse(p).is_ok_and(|p| p.admits_strangers()))
                .map(|s| s.to_string())
                .collect();
            patterns.push(own_origin.to_string());
            return vec![Project { id: "demo".into(), allowed_origins: parse(&patterns) }];
        }
        self.projects.iter().map(|p| Project { id: p.id.clone(), allowed_origins: parse(&p.allowed_origins) }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_toml(text: &str) -> Result<GatewayConfig, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.toml");
        std::fs::write(&path, text).unwrap();
        GatewayConfig::load_with_env(Some(&path), &Overrides::default(), TEST_ENV)
    }

    #[test]
    fn the_proxies_header_is_x_forwarded_for_unless_the_file_names_forwarded() {
        use crate::client_address::ForwardedHeader;
        assert_eq!(load_toml("").unwrap().forwarded_header, ForwardedHeader::XForwardedFor);
        let named = load_toml("trusted_proxies = [\"10.0.0.0/8\"]\nforwarded_header = \"forwarded\"\n").unwrap();
        assert_eq!(named.forwarded_header, ForwardedHeader::Forwarded);
        let error = load_toml("forwarded_header = \"x-real-ip\"\n").unwrap_err().to_string();
        assert!(error.contains("forwarded_header") || error.contains("x-real-ip"), "{error}");
    }

    const EMBEDDED: &str = "[embedded]\nframe_listen = \"127.0.0.1:0\"\nshare_key_file = \"s\"\nrecovery_key_file = \"r\"\n";

    #[test]
    fn with_the_embedded_wallet_the_default_project_drops_its_free_hosting_wildcards_and_projects_may_not_list_them() {
        let origins = |config: &GatewayConfig| {
            config.resolved_projects("http://127.0.0.1:8080")[0].allowed_origins.iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        let without = load_toml("").unwrap();
        assert!(origins(&without).contains(&"https://*.vercel.app".to_string()), "{:?}", origins(&without));
        let with = load_toml(EMBEDDED).unwrap();
        assert_eq!(origins(&with), ["http://localhost:*", "https://localhost:*", "http://127.0.0.1:8080"]);

        let project =
            |origin: &str| format!("{EMBEDDED}[[projects]]\nid = \"p\"\nallowed_origins = [\"https://shop.example\", \"{origin}\"]\n");
        for open in ["*", "https://*.vercel.app", "https://*.github.io"] {
            let error = load_toml(&project(open)).unwrap_err().to_string();
            assert!(error.contains("projects[0].allowed_origins[1]") && error.contains("embed"), "{open}: {error}");
        }
        load_toml(&project("https://*.shop.example")).expect("a wildcard over the project's own domain");
    }

    #[test]
    fn the_embedded_wallet_is_refused_in_a_cluster() {
        let toml = "[store]\nbackend = \"jetstream\"\n[cluster]\nenabled = true\n[embedded]\nframe_listen = \"127.0.0.1:0\"\nshare_key_file = \"s\"\nrecovery_key_file = \"r\"\n";
        let error = load_toml(toml).unwrap_err().to_string();
        assert!(error.contains("embedded") && error.contains("cluster"), "{error}");
    }

    #[test]
    fn any_origin_is_refused_for_a_project_only_with_the_embedded_wallet() {
        let project = "[[projects]]\nid = \"open\"\nallowed_origins = [\"https://a.example\", \"*\"]\n";
        assert!(load_toml(project).is_ok(), "without [embedded], `*` is the operator's choice");
        let embedded = "[embedded]\nframe_listen = \"127.0.0.1:0\"\nshare_key_file = \"s\"\nrecovery_key_file = \"r\"\n";
        let error = load_toml(&format!("{project}{embedded}")).unwrap_err().to_string();
        assert!(error.contains("projects[0].allowed_origins[1]") && error.contains("frame"), "{error}");
    }

    /// No test sets variables with this prefix, so the developer's `VESTIBULE_*` cannot leak in.
    const TEST_ENV: &str = "VESTIBULE_CONFIG_UNIT_TEST_";

    #[test]
    fn defaults_are_valid() {
        GatewayConfig::default().validate().unwrap();
    }

    #[test]
    fn a_file_overrides_defaults_and_flags_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.toml");
        std::fs::write(&path, "listen = \"127.0.0.1:9000\"\n[limits]\nmax_frame_bytes = 131072\n").unwrap();
        let c = GatewayConfig::load_with_env(Some(&path), &Overrides::default(), TEST_ENV).unwrap();
        assert_eq!((c.listen.as_str(), c.limits.max_frame_bytes), ("127.0.0.1:9000", 131072));
        let flags = Overrides { listen: Some("127.0.0.1:9001".into()), ..Default::default() };
        let c = GatewayConfig::load_with_env(Some(&path), &flags, TEST_ENV).unwrap();
        assert_eq!(c.listen, "127.0.0.1:9001");
    }

    #[test]
    fn errors_name_the_field() {
        let e = load_toml("[limits]\nmax_frame_bytes = \"lots\"\n").unwrap_err().to_string();
        assert!(e.contains("max_frame_bytes"), "{e}");
        let e = load_toml("[limits]\nmax_frame_bytes = 10\n").unwrap_err().to_string();
        assert!(e.contains("limits.max_frame_bytes"), "{e}");
        // Below what a wallet's answer or a host's request takes (the widget bounds its answers to
        // fit 64 KiB), and at it.
        let e = load_toml("[limits]\nmax_frame_bytes = 32768\n").unwrap_err().to_string();
        assert!(e.contains("limits.max_frame_bytes") && e.contains("65536"), "{e}");
        assert!(load_toml("[limits]\nmax_frame_bytes = 65536\n").is_ok());
        let e = load_toml("listn = \"x\"\n").unwrap_err().to_string();
        assert!(e.contains("listn"), "{e}");
        let e = load_toml("[[projects]]\nid = \"a\"\nallowed_origins = [\"https://a.*.b\"]\n").unwrap_err().to_string();
        assert!(e.contains("projects[0].allowed_origins[0]"), "{e}");
        let e = load_toml("[runtime]\npassivate_after = \"soon\"\n").unwrap_err().to_string();
        assert!(e.contains("passivate_after"), "{e}");
        // Set from `[embedded] frame_origin`, never from `[runtime]`: refused, not silently ignored.
        let e = load_toml("[runtime]\nembedded_frame_origin = \"https://frame.example\"\n").unwrap_err().to_string();
        assert!(e.contains("embedded_frame_origin"), "{e}");
    }

    #[test]
    fn the_host_chain_calls_at_once_have_a_default_and_0_is_refused() {
        assert_eq!(Limits::default().host_chain_calls, 256);
        assert_eq!(load_toml("[limits]\nhost_chain_calls = 8\n").unwrap().limits.host_chain_calls, 8);
        let e = load_toml("[limits]\nhost_chain_calls = 0\n").unwrap_err().to_string();
        assert!(e.contains("limits.host_chain_calls"), "{e}");
    }

    #[test]
    fn one_client_s_share_of_the_host_chain_calls_defaults_to_32_or_all_and_is_refused_outside_1_to_all() {
        assert_eq!(Limits::default().host_chain_calls_per_client(), 32);
        assert_eq!(load_toml("[limits]\nhost_chain_calls = 8\n").unwrap().limits.host_chain_calls_per_client(), 8);
        let set = load_toml("[limits]\nhost_chain_calls_per_client = 4\n").unwrap();
        assert_eq!(set.limits.host_chain_calls_per_client(), 4);
        for bad in ["host_chain_calls_per_client = 0", "host_chain_calls = 8\nhost_chain_calls_per_client = 9"] {
            let e = load_toml(&format!("[limits]\n{bad}\n")).unwrap_err().to_string();
            assert!(e.contains("limits.host_chain_calls_per_client"), "{e}");
        }
    }

    #[test]
    fn the_debug_apis_bounds_have_defaults_and_0_is_refused() {
        let l = Limits::default();
        assert_eq!((l.debug_follows, l.debug_follow_heartbeat, l.debug_state_folds), (16, Duration::from_secs(15), 2));
        let c = load_toml("[limits]\ndebug_follows = 3\ndebug_follow_heartbeat = \"250ms\"\ndebug_state_folds = 1\n").unwrap();
        assert_eq!(
            (c.limits.debug_follows, c.limits.debug_follow_heartbeat, c.limits.debug_state_folds),
            (3, Duration::from_millis(250), 1)
        );
        for (text, field) in [
            ("debug_follows = 0", "limits.debug_follows"),
            ("debug_state_folds = 0", "limits.debug_state_folds"),
            ("debug_follow_heartbeat = \"0s\"", "limits.debug_follow_heartbeat"),
        ] {
            let e = load_toml(&format!("[limits]\n{text}\n")).unwrap_err().to_string();
            assert!(e.contains(field), "{text}: {e}");
        }
    }

    #[test]
    fn a_sessions_budget_of_log_bytes_is_16_mib_by_default_and_0_is_refused() {
        assert_eq!(GatewayConfig::default().limits.session_log_bytes, 16 * 1024 * 1024);
        assert_eq!(Limits::default().session_log_bytes, RuntimeConfig::default().max_log_bytes, "the runtime's default is the same");
        assert_eq!(load_toml("[limits]\nsession_log_bytes = 4096\n").unwrap().limits.session_log_bytes, 4096);
        let e = load_toml("[limits]\nsession_log_bytes = 0\n").unwrap_err().to_string();
        assert!(e.contains("limits.session_log_bytes") && e.contains("at least 1"), "{e}");
        let e = load_toml("[limits]\nsession_log_bytes = -1\n").unwrap_err().to_string();
        assert!(e.contains("session_log_bytes"), "{e}");
        // The runtime's copy is not a `[runtime]` key.
        let e = load_toml("[runtime]\nmax_log_bytes = 4096\n").unwrap_err().to_string();
        assert!(e.contains("max_log_bytes"), "{e}");
    }

    #[test]
    fn networks_are_none_by_default_and_checked_naming_the_field() {
        assert!(GatewayConfig::default().networks.is_empty());
        let c = load_toml(
            "[networks.\"eip155:31337\"]\nrpc_urls = [\"http://127.0.0.1:8545\"]\ntokens = [{ address = \"0x5FbDB2315678afecb367f032d93F642f64180aa3\" }]\n[rpc]\nmax_retries = 2\n",
        )
        .unwrap();
        let settings = c.chain_config().validate().unwrap();
        assert_eq!(settings[0].id.to_string(), "eip155:31337");
        assert_eq!((settings[0].tokens.len(), c.rpc.max_retries), (1, 2));
        let e = load_toml("[networks.\"eip155:1\"]\nrpc_urls = [\"http://a\", \"ftp://b\"]\n").unwrap_err().to_string();
        assert!(e.contains(r#"networks."eip155:1".rpc_urls[1]"#), "{e}");
        let e =
            load_toml("[networks.\"eip155:1\"]\nrpc_urls = [\"http://a\"]\ntokens = [{ address = \"0x12\" }]\n").unwrap_err().to_string();
        assert!(e.contains(r#"networks."eip155:1".tokens[0].address"#), "{e}");
        let e = load_toml("[networks.\"eip155:1\"]\nrpc_url = [\"http://a\"]\n").unwrap_err().to_string();
        assert!(e.contains("rpc_url"), "{e}");
        let e = load_toml("[networks.\"solana:mainnet\"]\nrpc_urls = [\"http://a\"]\n").unwrap_err().to_string();
        assert!(e.contains(r#"networks."solana:mainnet""#), "{e}");
    }

    #[test]
    fn the_example_configuration_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("vestibule.example.toml");
        let c = GatewayConfig::load_with_env(Some(&path), &Overrides::default(), TEST_ENV).unwrap();
        let networks = c.chain_config().validate().unwrap();
        // An anvil and a Solana cluster (devnet's id, its SPL mint with a configured symbol).
        assert_eq!(
            networks.iter().map(|n| n.id.to_string()).collect::<Vec<_>>(),
            ["eip155:31337", "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"]
        );
        assert_eq!(networks[1].spl_tokens[0].symbol, "USDC");
        assert_eq!(c.rpc, vestibule_chain::rpc::RpcPolicy::default(), "the example states the spec's defaults");
        assert_eq!(c.siwx, SiwxSettings::default(), "the example's [siwx] states the defaults");
        assert_eq!(c.store, StoreSettings::default(), "the example's [store] and [store.segments] state the defaults");
        assert_eq!(c.limits, Limits::default(), "the example's [limits] states the defaults");
        assert_eq!(c.runtime, RuntimeConfig::default(), "the example's [runtime] states the defaults");
        assert_eq!(c.retention, RetentionSettings::default(), "the example's [retention] states the defaults");
        let defaults = GatewayConfig::default();
        assert_eq!(
            (c.workers, c.log_format, &c.static_dir, c.admin_token.as_deref()),
            (defaults.workers, defaults.log_format, &defaults.static_dir, None),
            "the example's top-level keys state the defaults"
        );
    }

    #[test]
    fn a_devnet_file_adds_its_networks_and_a_configured_network_keeps_its_table() {
        let dir = tempfile::tempdir().unwrap();
        let devnet = dir.path().join("devnet.json");
        std::fs::write(
            &devnet,
            r#"{ "devWallet": "0xeee4E1bC283Ff3c3305d56a2D3f17398913755dC", "networks": {
                "eip155:31337": { "chainId": 31337, "rpcUrl": "http://127.0.0.1:40001",
                  "token": { "address": "0x5FbDB2315678afecb367f032d93F642f64180aa3", "name": "Vestibule Demo Token", "symbol": "VDT", "decimals": 18 } },
                "eip155:31338": { "chainId": 31338, "rpcUrl": "http://127.0.0.1:40002" } } }"#,
        )
        .unwrap();
        let config = dir.path().join("v.toml");
        std::fs::write(&config, "[networks.\"eip155:31338\"]\nrpc_urls = [\"http://127.0.0.1:8545\"]\n").unwrap();
        let flags = Overrides { devnet: Some(devnet.clone()), ..Default::default() };
        let c = GatewayConfig::load_with_env(Some(&config), &flags, TEST_ENV).unwrap();
        assert_eq!(c.networks.keys().collect::<Vec<_>>(), ["eip155:31337", "eip155:31338"]);
        let devnet_chain = &c.networks["eip155:31337"];
        assert_eq!(devnet_chain.rpc_urls, ["http://127.0.0.1:40001"]);
        assert_eq!(
            (devnet_chain.tokens.len(), devnet_chain.tokens[0].symbol.as_deref(), devnet_chain.tokens[0].decimals),
            (1, Some("VDT"), Some(18))
        );
        assert_eq!(c.networks["eip155:31338"].rpc_urls, ["http://127.0.0.1:8545"], "the configuration's table wins");
        assert_eq!(c.chain_config().validate().unwrap().len(), 2);

        let without = GatewayConfig::load_with_env(Some(&config), &Overrides::default(), TEST_ENV).unwrap();
        assert_eq!(without.networks.keys().collect::<Vec<_>>(), ["eip155:31338"]);

        let missing = Overrides { devnet: Some(dir.path().join("nope.json")), ..Default::default() };
        let e = GatewayConfig::load_with_env(None, &missing, TEST_ENV).unwrap_err().to_string();
        assert!(e.contains("`devnet`") && e.contains("nope.json"), "{e}");
        std::fs::write(&devnet, r#"{ "networks": { "eip155:1": { "rpcUrl": "ftp://x" } } }"#).unwrap();
        let e = GatewayConfig::load_with_env(None, &flags, TEST_ENV).unwrap_err().to_string();
        assert!(e.contains(r#"networks."eip155:1".rpc_urls[0]"#), "{e}");
    }

    #[test]
    fn sleds_cache_is_32_mib_unless_set_and_is_checked() {
        assert_eq!(crate::store::store_config(&GatewayConfig::default()).cache_capacity_bytes, 32 * 1024 * 1024);
        let c = load_toml("[store]\nsled_cache_bytes = 8388608\n").unwrap();
        assert_eq!(crate::store::store_config(&c).cache_capacity_bytes, 8 << 20);
        let e = load_toml("[store]\nsled_cache_bytes = 1024\n").unwrap_err().to_string();
        assert!(e.contains("store.sled_cache_bytes"), "{e}");
    }

    #[test]
    fn the_segment_logs_tunables_are_the_stores_defaults_and_are_checked() {
        let defaults = vestibule_store::StoreConfig::default();
        let c = GatewayConfig::default();
        assert_eq!(
            (c.store.segments.segment_bytes, c.store.segments.checkpoint_bytes, c.store.segments.compact_below_percent),
            (defaults.segment_bytes, defaults.checkpoint_bytes, defaults.compact_below_percent)
        );
        let toml = "[store]\nbackend = \"segments\"\n[store.segments]\nsegment_bytes = 8388608\ncheckpoint_bytes = 0\ncompact_below_percent = 40\ncompact_step_bytes = 65536\n";
        let c = load_toml(toml).unwrap();
        let store = crate::store::store_config(&c);
        assert_eq!(
            (store.segment_bytes, store.checkpoint_bytes, store.compact_below_percent, store.compact_step_bytes),
            (8 << 20, 0, 40, 65536)
        );
        for (toml, field) in [
            ("segment_bytes = 65536", "store.segments.segment_bytes"),
            ("segment_bytes = 2147483648", "store.segments.segment_bytes"),
            ("checkpoint_bytes = 4096", "store.segments.checkpoint_bytes"),
            ("compact_below_percent = 100", "store.segments.compact_below_percent"),
            ("compact_step_bytes = 100", "store.segments.compact_step_bytes"),
            ("segment_byte = 1", "segment_byte"),
        ] {
            let e = load_toml(&format!("[store.segments]\n{toml}\n")).unwrap_err().to_string();
            assert!(e.contains(field), "{toml}: {e}");
        }
    }

    #[test]
    fn the_store_backend_is_sled_unless_another_is_chosen() {
        assert_eq!(GatewayConfig::default().store.backend, StoreBackend::Sled);
        assert_eq!(load_toml("[store]\nbackend = \"segments\"\n").unwrap().store.backend, StoreBackend::Segments);
        let e = load_toml("[store]\nbackend = \"rocksdb\"\n").unwrap_err().to_string();
        assert!(e.contains("segments"), "the error names the backends there are: {e}");
        let c = load_toml(
            "[store]\nbackend = \"jetstream\"\n[store.jetstream]\nservers = [\"nats://10.0.0.1:4222\"]\nstream = \"V2\"\nreplicas = 3\n",
        )
        .unwrap();
        assert_eq!(c.store.backend, StoreBackend::Jetstream);
        assert_eq!(
            (c.store.jetstream.servers.as_slice(), c.store.jetstream.stream.as_str(), c.store.jetstream.replicas),
            (&["nats://10.0.0.1:4222".to_string()][..], "V2", 3)
        );
        let e = load_toml("[store]\nbackend = \"jetstream\"\n[store.jetstream]\nstream = \"a.b\"\n").unwrap_err().to_string();
        assert!(e.contains("store.jetstream.stream"), "{e}");
        let e = load_toml("[store.jetstream]\nreplica = 3\n").unwrap_err().to_string();
        assert!(e.contains("replica"), "{e}");
        // How the gateway logs in to NATS: secrets in files, never in a server URL.
        let c = load_toml("[store]\nbackend = \"jetstream\"\n[store.jetstream]\nuser = \"v\"\npassword_file = \"/run/nats.pw\"\ntls_ca_file = \"/ca.pem\"\n")
            .unwrap();
        assert_eq!(c.store.jetstream.password_file.as_deref(), Some(std::path::Path::new("/run/nats.pw")));
        let e = load_toml("[store]\nbackend = \"jetstream\"\n[store.jetstream]\nservers = [\"nats://v:pw@10.0.0.1:4222\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("store.jetstream.servers") && !e.contains("pw@"), "{e}");
    }

    #[test]
    fn without_projects_a_demo_project_allows_the_defaults_and_the_gateway_itself() {
        let projects = GatewayConfig::default().resolved_projects("http://127.0.0.1:8080");
        assert_eq!(projects.len(), 1);
        assert!(projects[0].allows("http://localhost:5173"));
        assert!(projects[0].allows("http://127.0.0.1:8080"));
        assert!(!projects[0].allows("https://evil.example"));
    }
}
