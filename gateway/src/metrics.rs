//! `/metrics` in Prometheus text format: the runtime's metrics plus the gateway's own.

use std::sync::Arc;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use vestibule_actors::runtime::RuntimeMetrics;
use vestibule_store::{HistogramSnapshot, StoreMetrics};

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
    /// Receipt waits waiting for their client address's turn (`limits.receipt_waits_per_client`).
    pub receipt_waits_queued: Gauge,
    /// The chain service's metrics (`vestibule_chain_*`, per network), once it is built.
    pub chain: std::sync::OnceLock<Arc<vestibule_chain::ChainMetrics>>,
}

impl GatewayMetrics {
    pub fn refusal(&self, kind: &'static str) {
        self.refusals.get_or_create(&KindLabel { kind }).inc();
    }

    /// A registry for one scrape; `store` is the event log's figures at this moment.
    pub fn registry(&self, store: Option<StoreMetrics>) -> Registry {
        let mut registry = Registry::default();
        if let Some(store) = store {
            registry.register("vestibule_store_flush_seconds", "Duration of each event log flush (fsync)", Snapshot(store.flush_seconds));
            registry.register("vestibule_store_batch_appends", "Appends sharing one group-commit batch", Snapshot(store.batch_appends));
            let counter = |v: u64| {
                let c: Counter = Counter::default();
                c.inc_by(v);
                c
            };
            registry.register("vestibule_store_batches", "Group-commit batches written", counter(store.stats.batches));
            registry.register("vestibule_store_flushes", "Event log flushes", counter(store.stats.flushes));
        }
        self.runtime.register(&mut registry);
        registry.register("vestibule_connections", "Open WebSocket connections", self.connections.clone());
        registry.register("vestibule_connections_opened", "WebSocket connections accepted", self.connections_opened.clone());
        registry.register("vestibule_frames_received", "Frames received from clients", self.frames_received.clone());
        registry.register("vestibule_frames_sent", "Frames sent to clients", self.frames_sent.clone());
        registry.register("vestibule_refusals", "Refused upgrades, commands and frames, by kind", self.refusals.clone());
        registry.register(
            "vestibule_receipt_waits_queued",
            "Receipt waits waiting for their client address's turn (limits.receipt_waits_per_client)",
            self.receipt_waits_queued.clone(),
        );
        if let Some(chain) = self.chain.get() {
            chain.register(&mut registry);
        }
        registry
    }
}

/// A histogram read from the store at scrape time (the store records without a metrics library).
#[derive(Debug)]
struct Snapshot(HistogramSnapshot);

impl EncodeMetric for Snapshot {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        // prometheus-client sums the per-bucket counts it is given into cumulative ones, so the
        // snapshot's cumulative counts go back to per-bucket here (given cumulative, it cumulated
        // twice: `+Inf` far above `_count`). It writes `le="+Inf"` for f64::MAX, its overflow bound.
        let mut below = 0;
        let buckets: Vec<(f64, u64)> = self
            .0
            .buckets
            .iter()
            .map(|&(le, cumulative)| {
                let in_bucket = cumulative - below;
                below = cumulative;
                (if le.is_infinite() { f64::MAX } else { le }, in_bucket)
            })
            .collect();
        encoder.encode_histogram::<NoLabelSet>(self.0.sum, self.0.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}
