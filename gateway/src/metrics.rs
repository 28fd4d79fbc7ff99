//! `/metrics` in Prometheus text format: the runtime's metrics plus the gateway's own.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use vestibule_actors::runtime::RuntimeMetrics;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: &'static str,
}

#[derive(Default)]
pub struct GatewayMetrics {
    pub runtime: Arc<RuntimeMetrics>,
    pub connections: Gauge,
    pub connections_opened: Counter,
    pub frames_received: Counter,
    pub frames_sent: Counter,
    /// Refused upgrades, commands and frames, by kind.
    pub refusals: Family<KindLabel, Counter>,
}

impl GatewayMetrics {
    pub fn refusal(&self, kind: &'static str) {
        self.refusals.get_or_create(&KindLabel { kind }).inc();
    }

    pub fn registry(&self) -> Registry {
        let mut registry = Registry::default();
        self.runtime.register(&mut registry);
        registry.register("vestibule_connections", "Open WebSocket connections", self.connections.clone());
        registry.register("vestibule_connections_opened", "WebSocket connections accepted", self.connections_opened.clone());
        registry.register("vestibule_frames_received", "Frames received from clients", self.frames_received.clone());
        registry.register("vestibule_frames_sent", "Frames sent to clients", self.frames_sent.clone());
        registry.register("vestibule_refusals", "Refused upgrades, commands and frames, by kind", self.refusals.clone());
        registry
    }
}
