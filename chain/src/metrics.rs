//! The chain service's metrics, per network, for the gateway's `/metrics`
//! ([`ChainMetrics::register`] adds them to a prometheus-client registry).

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NetworkLabel {
    pub network: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NetworkKindLabels {
    pub network: String,
    pub kind: &'static str,
}

fn latency_histogram() -> Histogram {
    // 5 ms … ~20 s: local nodes answer in a millisecond or two, remote ones in tens to hundreds,
    // and the attempt timeout is 10 s.
    Histogram::new(exponential_buckets(0.005, 2.0, 13))
}

type HistogramFamily = Family<NetworkLabel, Histogram, fn() -> Histogram>;

/// Counters and histograms shared by every network of a [`crate::ChainService`].
#[derive(Debug)]
pub struct ChainMetrics {
    /// HTTP attempts sent upstream (what the node sees).
    pub requests: Family<NetworkLabel, Counter>,
    /// JSON-RPC calls in those attempts (a batch of 1,000 calls is one request, 1,000 calls).
    pub calls: Family<NetworkLabel, Counter>,
    /// Attempts that were retried on the same endpoint.
    pub retries: Family<NetworkLabel, Counter>,
    /// Calls moved on to the next endpoint of the network.
    pub fallbacks: Family<NetworkLabel, Counter>,
    /// Failed attempts, by kind: `http_status`, `rpc_error`, `timeout`, `network`, `bad_response`.
    pub errors: Family<NetworkKindLabels, Counter>,
    /// Duration of each upstream attempt.
    pub latency_seconds: HistogramFamily,
    /// Calls answered by an identical call already in flight.
    pub deduplicated: Family<NetworkLabel, Counter>,
    /// Balance look-ups answered from the 30 s cache or a fetch in flight (`hit`), those that went
    /// to the node because nothing was cached (`miss`), and those that went to the node past the
    /// cache because the account had just sent a transaction (`fresh`). Kept apart so that a load
    /// run can count exactly the fetches the cache is meant to save.
    pub balance_cache: Family<NetworkKindLabels, Counter>,
    /// Activity page look-ups answered from the 30 s page cache or a fetch in flight (`hit`), and
    /// those that went to the node (`miss`).
    pub activity_cache: Family<NetworkKindLabels, Counter>,
    /// Cached activity pages dropped before their time: `evicted` to stay within the cache's
    /// bounds, `invalidated` because a transaction from or to the account was mined.
    pub activity_cache_dropped: Family<NetworkKindLabels, Counter>,
    /// Calls forwarded for hosts and frames refused without reaching a node because as many as
    /// the service allows were already in flight (`all`: `max_forwarded_in_flight`), or the
    /// caller's client address held its share of them (`client`: `max_forwarded_per_client`).
    pub forwarded_refused: Family<NetworkKindLabels, Counter>,
}

impl Default for ChainMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            calls: Family::default(),
            retries: Family::default(),
            fallbacks: Family::default(),
            errors: Family::default(),
            latency_seconds: Family::new_with_constructor(latency_histogram),
            deduplicated: Family::default(),
            balance_cache: Family::default(),
            activity_cache: Family::default(),
            activity_cache_dropped: Family::default(),
            forwarded_refused: Family::default(),
        }
    }
}

impl ChainMetrics {
    /// Adds every metric to `registry` (names start with `vestibule_chain_`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register("vestibule_chain_rpc_requests", "JSON-RPC HTTP attempts sent upstream, by network", self.requests.clone());
        registry.register(
            "vestibule_chain_rpc_calls",
            "JSON-RPC calls in those attempts (each call of a batch), by network",
            self.calls.clone(),
        );
        registry.register("vestibule_chain_rpc_retries", "JSON-RPC attempts retried on the same endpoint", self.retries.clone());
        registry.register("vestibule_chain_rpc_fallbacks", "JSON-RPC calls moved on to a network's next endpoint", self.fallbacks.clone());
        registry.register("vestibule_chain_rpc_errors", "Failed JSON-RPC attempts, by network and kind", self.errors.clone());
        registry.register("vestibule_chain_rpc_latency_seconds", "Duration of each JSON-RPC HTTP attempt", self.latency_seconds.clone());
        registry.register(
            "vestibule_chain_rpc_deduplicated",
            "JSON-RPC calls answered by an identical call in flight",
            self.deduplicated.clone(),
        );
        registry.register(
            "vestibule_chain_balance_cache",
            "Balance look-ups by outcome (hit: from the 30 s cache or a fetch in flight, miss: fetched, fresh: fetched past the cache after a transaction)",
            self.balance_cache.clone(),
        );
        registry.register(
            "vestibule_chain_activity_cache",
            "Activity page look-ups by outcome (hit: from the 30 s page cache or a fetch in flight, miss: fetched)",
            self.activity_cache.clone(),
        );
        registry.register(
            "vestibule_chain_activity_cache_dropped",
            "Cached activity pages dropped early (evicted: the cache's bounds, invalidated: the account's transaction was mined)",
            self.activity_cache_dropped.clone(),
        );
        registry.register(
            "vestibule_chain_forwarded_refused",
            "Host and frame chain calls refused with -32005 because the most allowed at once were in flight (all) or the client held its share (client)",
            self.forwarded_refused.clone(),
        );
    }

    /// The handle one network's layers record through.
    pub fn for_network(self: &std::sync::Arc<Self>, network: &crate::NetworkId) -> NetworkMetrics {
        NetworkMetrics { all: self.clone(), label: NetworkLabel { network: network.to_string() } }
    }
}

/// [`ChainMetrics`] with one network's label.
#[derive(Debug, Clone)]
pub struct NetworkMetrics {
    all: std::sync::Arc<ChainMetrics>,
    label: NetworkLabel,
}

impl NetworkMetrics {
    fn kind(&self, kind: &'static str) -> NetworkKindLabels {
        NetworkKindLabels { network: self.label.network.clone(), kind }
    }

    /// An HTTP attempt carrying `calls` JSON-RPC calls.
    pub fn request(&self, calls: usize) {
        self.all.requests.get_or_create(&self.label).inc();
        self.all.calls.get_or_create(&self.label).inc_by(calls as u64);
    }
    pub fn retry(&self) {
        self.all.retries.get_or_create(&self.label).inc();
    }
    pub fn fallback(&self) {
        self.all.fallbacks.get_or_create(&self.label).inc();
    }
    pub fn error(&self, kind: &'static str) {
        self.all.errors.get_or_create(&self.kind(kind)).inc();
    }
    pub fn latency(&self, took: Duration) {
        self.all.latency_seconds.get_or_create(&self.label).observe(took.as_secs_f64());
    }
    pub fn deduplicated(&self) {
        self.all.deduplicated.get_or_create(&self.label).inc();
    }
    /// A host's or frame's call refused because the most allowed at once were in flight (`all`)
    /// or its client held its share of them (`client`).
    pub fn forwarded_refused(&self, kind: &'static str) {
        self.all.forwarded_refused.get_or_create(&self.kind(kind)).inc();
    }
    pub fn balance_cache(&self, hit: bool) {
        self.all.balance_cache.get_or_create(&self.kind(if hit { "hit" } else { "miss" })).inc();
    }
    /// A fetch that went to the node past the cache (`ChainService::fresh_balances`).
    pub fn balance_fresh_fetch(&self) {
        self.all.balance_cache.get_or_create(&self.kind("fresh")).inc();
    }

    pub fn activity_cache(&self, hit: bool) {
        self.all.activity_cache.get_or_create(&self.kind(if hit { "hit" } else { "miss" })).inc();
    }
    /// `kind`: `evicted` or `invalidated`.
    pub fn activity_pages_dropped(&self, kind: &'static str, pages: usize) {
        self.all.activity_cache_dropped.get_or_create(&self.kind(kind)).inc_by(pages as u64);
    }

    /// Counter values, for tests and diagnostics.
    pub fn requests_sent(&self) -> u64 {
        self.all.requests.get_or_create(&self.label).get()
    }
    pub fn calls_sent(&self) -> u64 {
        self.all.calls.get_or_create(&self.label).get()
    }
    pub fn retries_made(&self) -> u64 {
        self.all.retries.get_or_create(&self.label).get()
    }
    pub fn errors_of(&self, kind: &'static str) -> u64 {
        self.all.errors.get_or_create(&self.kind(kind)).get()
    }
    /// Host and frame calls refused by the bound on those in flight, of `kind` (`all`, `client`).
    pub fn forwarded_refusals(&self, kind: &'static str) -> u64 {
        self.all.forwarded_refused.get_or_create(&self.kind(kind)).get()
    }
    /// Activity look-ups of `kind` (`hit`, `miss`).
    pub fn activity_lookups(&self, kind: &'static str) -> u64 {
        self.all.activity_cache.get_or_create(&self.kind(kind)).get()
    }
    /// Activity pages dropped early, of `kind` (`evicted`, `invalidated`).
    pub fn activity_pages_dropped_of(&self, kind: &'static str) -> u64 {
        self.all.activity_cache_dropped.get_or_create(&self.kind(kind)).get()
    }
    pub fn deduplicated_calls(&self) -> u64 {
        self.all.deduplicated.get_or_create(&self.label).get()
    }
}
