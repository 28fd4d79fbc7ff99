//! Counters and histograms of the session runtime, registered by the gateway for `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: &'static str,
}

pub struct RuntimeMetrics {
    pub live_sessions: Gauge,
    /// Live sessions that are hibernated (their state dropped until the next command).
    pub hibernated_sessions: Gauge,
    /// Seconds to rebuild a session's state from its snapshot and tail.
    pub rehydrate_seconds: Histogram,
    pub commands: Family<OutcomeLabel, Counter>,
    /// Seconds from a decision to its events being durable.
    pub append_seconds: Histogram,
    /// Seconds from a client's command frame read by the gateway to its result and diff handed to
    /// the session's connections, for commands that wrote events: the gateway's own share of the
    /// command→diff latency a client measures (without the socket writes and the network).
    pub command_seconds: Histogram,
    pub events_appended: Counter,
    pub diffs_published: Counter,
    pub connections_dropped: Family<ReasonLabel, Counter>,
    /// Resumes refused because the session had `max_connections` attached already.
    pub connections_refused: Counter,
    pub snapshots_written: Counter,
}

/// The command histogram's bucket bounds: fine around the milliseconds a command should take, with a
/// bound at 2 ms so that the share of commands slower than that is exact.
const COMMAND_SECONDS_BUCKETS: [f64; 18] =
    [0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.006, 0.008, 0.012, 0.016, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];

impl Default for RuntimeMetrics {
    fn default() -> Self {
        Self {
            live_sessions: Gauge::default(),
            hibernated_sessions: Gauge::default(),
            rehydrate_seconds: Histogram::new(exponential_buckets(0.00005, 2.0, 16)),
            commands: Family::default(),
            append_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            command_seconds: Histogram::new(COMMAND_SECONDS_BUCKETS.into_iter()),
            events_appended: Counter::default(),
            diffs_published: Counter::default(),
            connections_dropped: Family::default(),
            connections_refused: Counter::default(),
            snapshots_written: Counter::default(),
        }
    }
}

impl RuntimeMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register("vestibule_live_sessions", "Session actors running on this node", self.live_sessions.clone());
        registry.register("vestibule_hibernated_sessions", "Live sessions that are hibernated", self.hibernated_sessions.clone());
        registry.register(
            "vestibule_rehydrate_seconds",
            "Time to rebuild a session from its snapshot and tail",
            self.rehydrate_seconds.clone(),
        );
        registry.register("vestibule_commands", "Commands handled, by outcome", self.commands.clone());
        registry.register("vestibule_append_seconds", "Time from decision to durable events", self.append_seconds.clone());
        registry.register(
            "vestibule_command_seconds",
            "Time from a command frame read to its result and diff handed to the session's connections",
            self.command_seconds.clone(),
        );
        registry.register("vestibule_events_appended", "Events made durable", self.events_appended.clone());
        registry.register("vestibule_diffs_published", "Diffs published to connections", self.diffs_published.clone());
        registry.register(
            "vestibule_connections_dropped_by_session",
            "Connections a session dropped, by reason",
            self.connections_dropped.clone(),
        );
        registry.register(
            "vestibule_connections_refused_by_session",
            "Connections refused because their session had as many attached as it may",
            self.connections_refused.clone(),
        );
        registry.register("vestibule_snapshots_written", "Snapshots written", self.snapshots_written.clone());
    }

    pub fn command(&self, outcome: &'static str) {
        self.commands.get_or_create(&OutcomeLabel { outcome }).inc();
    }
}
