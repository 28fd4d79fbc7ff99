//! What a load run measures: HDR latency histograms, counters, and a per-second timeline for the
//! progress line and the chart. Visitors record into one shared `Metrics` behind a mutex; a
//! record is a few nanoseconds against a network round trip, so the lock is not the bottleneck.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

pub struct Metrics {
    started: Instant,
    inner: Mutex<Inner>,
}

struct Inner {
    command_to_result: Histogram<u64>,
    command_to_diff: Histogram<u64>,
    commands: u64,
    accepted: u64,
    refused: u64,
    events: u64,
    errors: BTreeMap<String, u64>,
    gaps: u64,
    hash_mismatches: u64,
    connections: u64,
    reconnects: u64,
    /// One entry per elapsed second: commands answered, their command-to-diff histogram, and the
    /// longest hiccup.
    timeline: Vec<SecondRecord>,
    /// The machine's hiccups: how much later than asked the hiccup meter's thread woke (see
    /// `hiccups.rs`).
    hiccups: Histogram<u64>,
    /// Whether a hiccup meter ran (`--no-hiccups` leaves it off): without one, the report has no
    /// hiccup figures rather than zeros.
    hiccups_metered: bool,
    /// Command-to-diff by the scenario's class of command (`non-chain`, `chain`).
    by_class: BTreeMap<&'static str, Histogram<u64>>,
    /// From the command that started a chain effect to the diff carrying its outcome, by effect.
    effects: BTreeMap<&'static str, Histogram<u64>>,
    /// Scenario counters (sends answered, receipts by status, ...).
    counts: BTreeMap<String, u64>,
    /// Each visitor's mirrored state, in bytes of JSON, when it stopped.
    final_state_bytes: Histogram<u64>,
}

struct SecondRecord {
    /// Made at the second's first diff: a histogram is about 140 KB, and the hiccup meter makes an
    /// entry for every second of a run, idle holds included.
    diffs: Option<Histogram<u64>>,
    longest_hiccup_us: u64,
}

impl Inner {
    /// The record of second `second` of the run, with the seconds before it.
    fn second(&mut self, second: u64) -> &mut SecondRecord {
        while self.timeline.len() as u64 <= second {
            self.timeline.push(SecondRecord { diffs: None, longest_hiccup_us: 0 });
        }
        &mut self.timeline[second as usize]
    }
}

fn histogram() -> Histogram<u64> {
    // 1 µs to 60 s at 3 significant digits.
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds")
}

#[derive(Debug, Clone, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Self {
        let q = |q: f64| if h.is_empty() { 0 } else { h.value_at_quantile(q) };
        Percentiles { count: h.len(), p50_us: q(0.5), p90_us: q(0.9), p99_us: q(0.99), p999_us: q(0.999), max_us: h.max() }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Second {
    pub t: u64,
    pub commands: u64,
    pub p99_us: u64,
    /// The longest hiccup in this second: how late the hiccup meter's thread woke, at worst
    /// (`None`: the meter was off).
    pub hiccup_max_us: Option<u64>,
}

/// Counters at a moment, for the progress line and the report.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    pub commands: u64,
    pub accepted: u64,
    pub refused: u64,
    pub events: u64,
    pub errors: BTreeMap<String, u64>,
    pub gaps: u64,
    pub hash_mismatches: u64,
    pub connections: u64,
    pub reconnects: u64,
    pub command_to_result: Percentiles,
    pub command_to_diff: Percentiles,
    /// `None` when no hiccup meter ran.
    pub hiccups: Option<Percentiles>,
    pub timeline: Vec<Second>,
    pub command_to_diff_by_class: BTreeMap<String, Percentiles>,
    pub effects: BTreeMap<String, Percentiles>,
    pub counts: BTreeMap<String, u64>,
    /// Visitors' mirrored states when they stopped, in bytes (the `_us` fields hold bytes here).
    pub final_state_bytes: Percentiles,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        Metrics {
            started: Instant::now(),
            inner: Mutex::new(Inner {
                command_to_result: histogram(),
                command_to_diff: histogram(),
                hiccups: histogram(),
                hiccups_metered: false,
                commands: 0,
                accepted: 0,
                refused: 0,
                events: 0,
                errors: BTreeMap::new(),
                gaps: 0,
                hash_mismatches: 0,
                connections: 0,
                reconnects: 0,
                timeline: Vec::new(),
                by_class: BTreeMap::new(),
                effects: BTreeMap::new(),
                counts: BTreeMap::new(),
                final_state_bytes: Histogram::new_with_bounds(1, 1 << 30, 3).expect("valid bounds"),
            }),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn result(&self, latency: Duration, accepted: bool) {
        self.with(|m| {
            m.commands += 1;
            if accepted {
                m.accepted += 1;
            } else {
                m.refused += 1;
            }
            let _ = m.command_to_result.record(latency.as_micros().max(1) as u64);
        });
    }

    pub fn diff(&self, latency: Duration) {
        let second = self.started.elapsed().as_secs();
        self.with(|m| {
            let us = latency.as_micros().max(1) as u64;
            let _ = m.command_to_diff.record(us);
            let _ = m.second(second).diffs.get_or_insert_with(histogram).record(us);
        });
    }

    /// A hiccup meter records into these metrics from now on.
    pub fn metering_hiccups(&self) {
        self.with(|m| m.hiccups_metered = true);
    }

    /// The hiccup meter woke `late` after the time it asked for.
    pub fn hiccup(&self, late: Duration) {
        self.hiccup_in_second(self.started.elapsed().as_secs(), late);
    }

    pub(crate) fn hiccup_in_second(&self, second: u64, late: Duration) {
        self.with(|m| {
            let us = late.as_micros().max(1) as u64;
            let _ = m.hiccups.record(us);
            let record = m.second(second);
            record.longest_hiccup_us = record.longest_hiccup_us.max(us);
        });
    }

    /// A command's diff, by the scenario's class of command (also counted by [`Metrics::diff`]).
    pub fn class_diff(&self, class: &'static str, latency: Duration) {
        self.with(|m| {
            let _ = m.by_class.entry(class).or_insert_with(histogram).record(latency.as_micros().max(1) as u64);
        });
    }

    /// A chain effect's outcome reached the visitor's mirror `latency` after the command that
    /// started it.
    pub fn effect(&self, effect: &'static str, latency: Duration) {
        self.with(|m| {
            let _ = m.effects.entry(effect).or_insert_with(histogram).record(latency.as_micros().max(1) as u64);
        });
    }

    pub fn final_state(&self, bytes: usize) {
        self.with(|m| {
            let _ = m.final_state_bytes.record(bytes.max(1) as u64);
        });
    }

    pub fn count(&self, what: &str) {
        self.with(|m| *m.counts.entry(what.to_string()).or_default() += 1);
    }

    pub fn events(&self, n: usize) {
        self.with(|m| m.events += n as u64);
    }

    pub fn error(&self, kind: &str) {
        self.with(|m| *m.errors.entry(kind.to_string()).or_default() += 1);
    }

    pub fn gap(&self) {
        self.with(|m| m.gaps += 1);
    }

    pub fn hash_mismatch(&self) {
        self.with(|m| m.hash_mismatches += 1);
    }

    pub fn connected(&self, resumed: bool) {
        self.with(|m| {
            m.connections += 1;
            if resumed {
                m.reconnects += 1;
            }
        });
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn totals(&self) -> Totals {
        self.with(|m| Totals {
            commands: m.commands,
            accepted: m.accepted,
            refused: m.refused,
            events: m.events,
            errors: m.errors.clone(),
            gaps: m.gaps,
            hash_mismatches: m.hash_mismatches,
            connections: m.connections,
            reconnects: m.reconnects,
            command_to_result: Percentiles::of(&m.command_to_result),
            command_to_diff: Percentiles::of(&m.command_to_diff),
            hiccups: m.hiccups_metered.then(|| Percentiles::of(&m.hiccups)),
            timeline: m
                .timeline
                .iter()
                .zip(0..)
                .map(|(s, t)| Second {
                    t,
                    commands: s.diffs.as_ref().map_or(0, |h| h.len()),
                    p99_us: s.diffs.as_ref().map_or(0, |h| Percentiles::of(h).p99_us),
                    hiccup_max_us: m.hiccups_metered.then_some(s.longest_hiccup_us),
                })
                .collect(),
            command_to_diff_by_class: m.by_class.iter().map(|(k, h)| (k.to_string(), Percentiles::of(h))).collect(),
            effects: m.effects.iter().map(|(k, h)| (k.to_string(), Percentiles::of(h))).collect(),
            counts: m.counts.clone(),
            final_state_bytes: Percentiles::of(&m.final_state_bytes),
        })
    }
}

/// A self-contained HTML page (inline SVG, no scripts or network) with throughput, p99
/// command-to-diff latency and the longest hiccup per second.
pub fn chart_html(title: &str, timeline: &[Second]) -> String {
    let (w, h, pad) = (900.0, 260.0, 40.0);
    let n = timeline.len().max(2) as f64;
    let line = |values: Vec<f64>, color: &str| {
        let max = values.iter().cloned().fold(1.0, f64::max);
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", pad + i as f64 * (w - 2.0 * pad) / (n - 1.0), h - pad - v / max * (h - 2.0 * pad)))
            .collect();
        (format!("<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>", points.join(" ")), max)
    };
    let (throughput, max_rate) = line(timeline.iter().map(|s| s.commands as f64).collect(), "#2b6cb0");
    let (latency, max_p99) = line(timeline.iter().map(|s| s.p99_us as f64 / 1000.0).collect(), "#c53030");
    let metered = timeline.iter().any(|s| s.hiccup_max_us.is_some());
    let (hiccups, max_hiccup) = line(timeline.iter().map(|s| s.hiccup_max_us.unwrap_or(0) as f64 / 1000.0).collect(), "#6b46c1");
    let axis = format!(
        "<line x1=\"{pad}\" y1=\"{y}\" x2=\"{x2}\" y2=\"{y}\" stroke=\"#999\"/><line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{y}\" stroke=\"#999\"/>",
        y = h - pad,
        x2 = w - pad
    );
    let svg = |body: &str, label: &str| {
        format!(
            "<h2>{label}</h2><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{label}\">{axis}{body}<text x=\"{pad}\" y=\"{}\" font-size=\"12\">0 s</text><text x=\"{}\" y=\"{}\" font-size=\"12\">{} s</text></svg>",
            h - pad + 16.0,
            w - pad - 30.0,
            h - pad + 16.0,
            timeline.len()
        )
    };
    let hiccup_panel = if metered {
        format!(
            "{}<p>Longest {max_hiccup:.2} ms: for that long a thread of the load generator could not run, whatever the \
             gateway did.</p>",
            svg(&hiccups, "Longest hiccup of the machine per second (ms)")
        )
    } else {
        "<p>The hiccup meter was off (<code>--no-hiccups</code>).</p>".to_string()
    };
    format!(
        "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font:14px system-ui,sans-serif;margin:2em}}</style><h1>{title}</h1>\
         {}<p>Peak {max_rate:.0} diffs/s.</p>{}<p>Peak p99 {max_p99:.2} ms.</p>{hiccup_panel}</html>",
        svg(&throughput, "Commands answered with a diff, per second"),
        svg(&latency, "p99 command-to-diff latency per second (ms)"),
    )
}
