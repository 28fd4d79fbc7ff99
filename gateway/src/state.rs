//! What every request handler shares.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use vestibule_actors::runtime::Registry;

use crate::config::{GatewayConfig, Project};
use crate::limits::{HelloRateLimits, SessionRateLimits, Sockets};
use crate::metrics::GatewayMetrics;
use crate::siwx::token::TokenKeys;

pub struct AppState {
    pub config: GatewayConfig,
    pub projects: HashMap<String, Project>,
    pub registry: Registry,
    pub metrics: Arc<GatewayMetrics>,
    /// Every open socket, plain HTTP or WebSocket, by client address.
    pub sockets: Sockets,
    /// Command rate limits, one bucket per session.
    pub command_limits: SessionRateLimits,
    /// New sessions and resumes, per client address and per session.
    pub hello_limits: HelloRateLimits,
    /// What the debug API may run at once (`limits.debug_follows`, `limits.debug_state_folds`).
    pub debug_gates: crate::debug_api::DebugGates,
    /// Signs the sign-in tokens the host app's backend verifies.
    pub token_keys: TokenKeys,
    /// Leases and routing between gateways, when `[cluster] enabled` (docs/scale-out.md).
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
    /// The free space of the event log's disk (`limits.min_free_disk_bytes`).
    pub disk: Arc<crate::disk::DiskWatch>,
    /// Every WebSocket connection's task, so that a graceful stop can wait for them to close: they
    /// run in tasks of their own, not in actix-server's, which would keep its connection task (its
    /// HTTP dispatcher, about 2 KiB) for the WebSocket's life.
    pub connections: tokio_util::task::TaskTracker,
    next_connection: AtomicU64,
    shutting_down: AtomicBool,
    shutdown: tokio::sync::watch::Sender<bool>,
}

impl AppState {
    pub fn new(
        config: GatewayConfig,
        projects: Vec<Project>,
        registry: Registry,
        metrics: Arc<GatewayMetrics>,
        token_keys: TokenKeys,
        sockets: Sockets,
        cluster: Option<Arc<crate::cluster::Cluster>>,
        disk: Arc<crate::disk::DiskWatch>,
    ) -> Self {
        let l = &config.limits;
        let command_limits = SessionRateLimits::new(l.commands_per_second as f64, l.command_burst);
        let hello_limits = HelloRateLimits::new(l);
        let debug_gates = crate::debug_api::DebugGates::new(l);
        Self {
            projects: projects.into_iter().map(|p| (p.id.clone(), p)).collect(),
            config,
            registry,
            metrics,
            sockets,
            command_limits,
            hello_limits,
            disk,
            debug_gates,
            token_keys,
            cluster,
            connections: tokio_util::task::TaskTracker::new(),
            next_connection: AtomicU64::new(1),
            shutting_down: AtomicBool::new(false),
            shutdown: tokio::sync::watch::channel(false).0,
        }
    }

    pub fn next_connection_id(&self) -> u64 {
        self.next_connection.fetch_add(1, Ordering::Relaxed)
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }

    /// Stop accepting connections and tell every open one to close with 1001.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Relaxed);
        let _ = self.shutdown.send(true);
    }

    pub fn shutdown_signal(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shutdown.subscribe()
    }
}
