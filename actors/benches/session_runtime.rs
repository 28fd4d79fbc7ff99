//! `cargo bench -p vestibule-actors --bench session_runtime`: the session runtime's costs (not a
//! timed test; the figures go to docs/performance.md with this command).
//!
//! 1. Rehydration: rebuilding a 1,000-event session (real sled directory, durable log) from its
//!    snapshot and tail, as a hibernated or passivated session does on its next command:
//!    `fold_log_counting` (the fold `wake` does: it also counts the tail's bytes, decision 0107) +
//!    the canonical JSON and hash of every region. Three shapes: the snapshot at the
//!    last seq, the worst case of `snapshot_every = 100` (snapshot 99 events back), and no snapshot.
//! 2. Cost per decision of turning a new state into what is sent: the whole-state way of `2c8fb34`
//!    (JSON value, canonical JSON, SHA-256 of it all, JSON Patch of the whole tree) against the
//!    region way that ships (only the touched regions serialized, hashed and diffed; the two-level
//!    state hash of decision 0311), and the region way with protocol 1's hash (SHA-256 over the
//!    whole canonical JSON, which the gateway still computes for a `--protocol 1` client).
//!
//! Knobs: `VESTIBULE_BENCH_ITERS` (iterations per measurement, default 2000). Run by `cargo test`
//! (no `--bench` argument) it makes 3 iterations of each, a check that every measurement still
//! runs, not a measurement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use vestibule_actors::decider::Ctx;
use vestibule_actors::runtime::{Folded, fold_log_counting};
use vestibule_actors::session::upcast::SessionUpcaster;
use vestibule_actors::session::wire::{self, CanonicalState};
use vestibule_actors::session::{self, Command, Event, Regions, STATE_SCHEMA_VERSION, SessionState};
use vestibule_actors::testing::{T0, random_step, started};
use vestibule_store::{EventLog, NewEvent, NewSession, SessionId, SledEventLog, Snapshot, StoreConfig};

fn iterations() -> usize {
    // `cargo bench` passes `--bench` to a bench without libtest's harness; `cargo test` does not.
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let default = if measuring { 2000 } else { 3 };
    std::env::var("VESTIBULE_BENCH_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// p50, p99 and mean of `samples`, in µs.
fn summary(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = samples.iter().map(|d| us(*d)).sum::<f64>() / samples.len() as f64;
    (us(samples[samples.len() / 2]), us(samples[samples.len() * 99 / 100]), mean)
}

/// A session's decisions from random visitor steps (commands, ticks, effect outcomes), as the
/// runtime would make them: each decision's events and the state after it.
fn random_decisions(seed: u64, events_wanted: usize) -> Vec<(Vec<Event>, SessionState, String)> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let start = started();
    let mut state = start.iter().fold(SessionState::default(), session::evolve);
    let mut decisions = vec![(start, state.clone(), "session:start".to_string())];
    let (mut now, mut count, mut n) = (T0, 1, 0);
    while count < events_wanted {
        let (command, at) = random_step(&mut rng, &state, now);
        now = at;
        n += 1;
        let nonce = format!("BenchNonce{n:08}");
        let correlation = match &command {
            Command::Client(_) => format!("c{n}"),
            _ => format!("timer:{}", count + 1),
        };
        let ctx = Ctx { now_ms: now, options: &state.options, nonce: &nonce };
        let Ok(mut events) = session::decide(&state, command, &ctx) else { continue };
        events.truncate(events_wanted - count);
        if events.is_empty() {
            continue;
        }
        state = events.iter().fold(state, session::evolve);
        count += events.len();
        decisions.push((events, state.clone(), correlation));
    }
    decisions
}

fn new_event(event: &Event, correlation: &str) -> NewEvent {
    NewEvent {
        time_ms: T0,
        event_type: event.type_name().into(),
        schema_version: Event::schema_version(event.type_name()),
        correlation_id: Some(correlation.into()),
        checksum: None,
        payload: event.payload_json(),
    }
}

/// Writes a 1,000-event session; the last snapshot is at `snapshot_at` (or none).
async fn write_session(log: &SledEventLog, snapshot_at: Option<u64>) -> SessionId {
    let id = SessionId::random();
    log.create_session(id, NewSession { project: "bench".into(), created_ms: T0, resume_token_hash: None }).await.unwrap();
    let mut seq = 0;
    for (events, state, correlation) in random_decisions(7, 1000) {
        let n = events.len() as u64;
        log.append(id, seq, events.iter().map(|e| new_event(e, &correlation)).collect()).await.unwrap();
        seq += n;
        if let Some(at) = snapshot_at
            && seq <= at
        {
            let snapshot =
                Snapshot { seq, schema_version: STATE_SCHEMA_VERSION, time_ms: T0, state: wire::to_value(&state).into(), log_bytes: None };
            log.put_snapshot(id, snapshot).await.unwrap();
        }
    }
    assert_eq!(seq, 1000);
    id
}

async fn rehydration() {
    let dir = tempfile::tempdir().unwrap();
    let log = SledEventLog::open_with_upcaster(StoreConfig::at(dir.path()), Arc::new(SessionUpcaster)).unwrap();
    println!("rehydrating a 1,000-event session (snapshot + tail, canonical JSON and hash), durable sled log, {} runs each", iterations());
    println!("{:<34} {:>8} {:>8} {:>8} {:>10}", "shape", "p50 µs", "p99 µs", "mean µs", "tail");
    for (name, snapshot_at) in [("snapshot at seq 1000", Some(1000)), ("snapshot 99 events back", Some(901)), ("no snapshot", None)] {
        let id = write_session(&log, snapshot_at).await;
        let mut samples = Vec::with_capacity(iterations());
        let mut tail = 0;
        for _ in 0..iterations() {
            let started = Instant::now();
            let Folded { state, seq, .. } = fold_log_counting(&log, id).await.unwrap();
            let canonical = CanonicalState::of(&state);
            let hash = canonical.hash();
            samples.push(started.elapsed());
            assert_eq!(seq, 1000);
            std::hint::black_box(hash);
            let snapshot_seq = log.get_snapshot(id, STATE_SCHEMA_VERSION).await.unwrap().map_or(0, |s| s.seq);
            tail = seq - snapshot_seq;
        }
        let (p50, p99, mean) = summary(samples);
        println!("{name:<34} {p50:>8.1} {p99:>8.1} {mean:>8.1} {tail:>10}");
    }
}

/// The whole-state way, as the runtime did it at `2c8fb34`: the JSON value of the new state, the
/// SHA-256 of its whole canonical JSON, and the JSON Patch against the previous value.
fn whole_state(before: &serde_json::Value, after: &SessionState) -> (serde_json::Value, String, json_patch::Patch) {
    let value = wire::to_value(after);
    let hash = wire::legacy_state_hash(&value);
    let patch = json_patch::diff(before, &value);
    (value, hash, patch)
}

/// The region way over `decisions`, with `hash` for the state hash; p50, p99 and mean in µs.
fn regions_way(decisions: &[(Vec<Event>, SessionState, String)], hash: fn(&CanonicalState) -> String) -> (f64, f64, f64) {
    let mut samples = Vec::with_capacity(decisions.len());
    let mut canonical = CanonicalState::of(&decisions[0].1);
    for (events, state, _) in &decisions[1..] {
        let started = Instant::now();
        let touched = events.iter().fold(Regions::NONE, |set, e| set.union(e.regions()));
        let changed = canonical.update(state, touched);
        let state_hash = hash(&canonical);
        let patch = wire::patch_regions(&changed, &canonical);
        samples.push(started.elapsed());
        std::hint::black_box((state_hash, patch));
    }
    summary(samples)
}

/// The cost of `hash` alone on `canonical`, `runs` times; p50, p99 and mean in µs.
fn hash_alone(canonical: &CanonicalState, runs: usize, hash: fn(&CanonicalState) -> String) -> (f64, f64, f64) {
    let samples = (0..runs)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(hash(canonical));
            started.elapsed()
        })
        .collect();
    summary(samples)
}

fn cost_per_decision() {
    let decisions = random_decisions(11, 20_000);
    let runs = decisions.len().min(iterations() * 5).max(2);
    let decisions = &decisions[..runs];
    let sizes: Vec<usize> = decisions.iter().map(|(_, s, _)| CanonicalState::of(s).len()).collect();
    println!();
    println!(
        "cost per decision of state → hash + diff, over {runs} decisions of random visitors (state {}–{} bytes of canonical JSON)",
        sizes.iter().min().unwrap(),
        sizes.iter().max().unwrap()
    );
    println!("{:<66} {:>8} {:>8} {:>8}", "way", "p50 µs", "p99 µs", "mean µs");
    let row = |name: &str, (p50, p99, mean): (f64, f64, f64)| println!("{name:<66} {p50:>8.1} {p99:>8.1} {mean:>8.1}");

    let mut samples = Vec::with_capacity(runs);
    let mut before_value = wire::to_value(&decisions[0].1);
    for (_, state, _) in &decisions[1..] {
        let started = Instant::now();
        let (value, hash, patch) = whole_state(&before_value, state);
        samples.push(started.elapsed());
        std::hint::black_box((hash, patch));
        before_value = value;
    }
    row("whole state (2c8fb34): value, canonical JSON, SHA-256, tree diff", summary(samples));
    row("touched regions, two-level hash (shipped, decision 0311)", regions_way(decisions, CanonicalState::hash));
    row("touched regions, SHA-256 over the whole canonical JSON (protocol 1)", regions_way(decisions, CanonicalState::legacy_hash));

    let canonical = CanonicalState::of(&decisions[runs - 1].1);
    row(&format!("of which the two-level hash of a {}-byte state", canonical.len()), hash_alone(&canonical, runs, CanonicalState::hash));
    row(&format!("protocol 1's hash of the same {} bytes", canonical.len()), hash_alone(&canonical, runs, CanonicalState::legacy_hash));
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(rehydration());
    cost_per_decision();
}
