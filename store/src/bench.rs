//! The event log benchmark: durable append throughput and latency at several concurrency levels,
//! against a ceiling measured in the same run, and replay read speed.
//!
//! Run it with `cargo bench -p vestibule-store --bench store` (or `vestibule bench store`).
//! [`run`] builds its own Tokio runtime: call it from a plain thread (inside an async context, use
//! `spawn_blocking`).
//!
//! - **Ours**: `concurrency` sessions, each with one task that appends one event, waits for the
//!   append to resolve (durable: after the fsync covering it), and appends the next.
//! - **Ceiling**: raw sled, no log: batches of `concurrency` records with exactly the bytes and
//!   keys the log writes, one `apply_batch` and one flush (sled flush + fdatasync, the same flush
//!   the log does) per batch, back to back on one thread. That is the best any group commit of
//!   `concurrency` waiting appenders could do on this sled, so `ratio` = ours / ceiling is the cost
//!   of the log's machinery (queueing, validation, metadata, waking waiters).
//! - **Replay**: one session of `replay_events` events, read with `stream` after a reopen.
//!
//! Within a level, ours and the ceiling alternate in `rounds` short slices, so a busy moment of the
//! (shared) machine hits both sides rather than one.
//!
//! [`run_on`] runs the same workload (and the replay) on another backend of the [`EventLog`] trait
//! given as a [`BenchBackend`] (the gateway's `vestibule bench store --backend jetstream` passes
//! the NATS JetStream log); it has no ceiling and no fsync probe (the backend's storage is
//! elsewhere), so those columns are empty.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::{Durability, EventLog, NewEvent, NewSession, SessionId, SledEventLog, StoreConfig, StoreError, layout};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchOptions {
    /// Where the temporary logs go (a fresh subdirectory, removed afterwards). Default: the system
    /// temp directory. It should be on the disk the log will really use.
    pub dir: Option<PathBuf>,
    /// Concurrent sessions (one appending task each) per level.
    pub concurrency: Vec<usize>,
    /// Measured time per level, for ours and for the ceiling each.
    pub secs_per_level: f64,
    /// Each level alternates ours and the ceiling this many times (`secs_per_level / rounds` each).
    pub rounds: usize,
    /// Unmeasured warm-up before each measured slice.
    pub warmup_secs: f64,
    /// Size of each event's JSON payload, roughly.
    pub payload_bytes: usize,
    /// Events in the replayed session.
    pub replay_events: u64,
}

impl BenchOptions {
    /// Refuses durations a measurement cannot take: NaN, infinite, 0 or less, or over a day
    /// (`Duration::from_secs_f64` panicked on them, midway, leaving the temporary logs behind).
    pub fn check(&self) -> Result<(), StoreError> {
        for (name, secs, zero_ok) in [("secs_per_level", self.secs_per_level, false), ("warmup_secs", self.warmup_secs, true)] {
            if !(secs.is_finite() && (secs > 0.0 || (zero_ok && secs == 0.0)) && secs <= 86_400.0) {
                return Err(StoreError::Engine(format!("bench: {name} is {secs}, not a number of seconds above 0 and at most 86400")));
            }
        }
        Ok(())
    }
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            dir: None,
            concurrency: vec![1, 16, 256],
            secs_per_level: 4.0,
            rounds: 4,
            warmup_secs: 0.2,
            payload_bytes: 160,
            replay_events: 100_000,
        }
    }
}

/// Another backend to benchmark: opens a fresh, empty log under a label (one per level, one for the
/// replay; opening the same label again reopens that log), and removes it afterwards.
#[async_trait::async_trait]
pub trait BenchBackend: Send + Sync {
    /// What the report's title says, e.g. "NATS JetStream, 3 replicas, nats://…".
    fn describe(&self) -> String;
    async fn open(&self, label: &str) -> Result<Arc<dyn EventLog>, StoreError>;
    async fn remove(&self, label: &str) -> Result<(), StoreError>;
}

/// The segment log (decision 0105) in directories under `root`, durable, as the gateway opens it.
pub struct SegmentsBench {
    root: PathBuf,
}

impl SegmentsBench {
    /// Logs go in a fresh directory under `dir` (the temp dir by default), removed afterwards.
    pub fn new(dir: Option<PathBuf>) -> Self {
        let base = dir.unwrap_or_else(std::env::temp_dir);
        SegmentsBench { root: base.join(format!("vestibule-segments-bench-{}-{}", std::process::id(), SessionId::random())) }
    }
}

/// Whatever ended the bench (a panic included), its directory goes: nothing else is ever put in it.
impl Drop for SegmentsBench {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Removes a bench's directory when dropped: at its end, and when it panics midway.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[async_trait::async_trait]
impl BenchBackend for SegmentsBench {
    fn describe(&self) -> String {
        format!("segment log (durable, in {})", self.root.display())
    }

    async fn open(&self, label: &str) -> Result<Arc<dyn EventLog>, StoreError> {
        Ok(Arc::new(crate::SegmentEventLog::open(bench_config(&self.root.join(label)))?))
    }

    async fn remove(&self, label: &str) -> Result<(), StoreError> {
        let dir = self.root.join(label);
        std::fs::remove_dir_all(&dir).map_err(|source| StoreError::Io { dir, source })?;
        // The last one out removes the root too (nothing else is ever put in it).
        let _ = std::fs::remove_dir(&self.root);
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelReport {
    pub concurrency: usize,
    pub appends: u64,
    pub secs: f64,
    pub appends_per_sec: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Appends per flush (the group commit's batch size); sled only.
    pub appends_per_flush: Option<f64>,
    /// Raw sled, same bytes, batches of `concurrency`, one flush each: records per second; sled only.
    pub ceiling_per_sec: Option<f64>,
    /// `appends_per_sec / ceiling_per_sec`; sled only.
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    pub events: u64,
    pub secs: f64,
    pub events_per_sec: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// The log measured: "sled" or the [`BenchBackend`]'s description.
    pub backend: String,
    pub options: BenchOptions,
    /// Bytes of one stored event record.
    pub record_bytes: usize,
    /// Mean time of one fdatasync of a 4 KiB overwrite on the bench's disk, measured first (sled only).
    pub fsync_ms: Option<f64>,
    pub levels: Vec<LevelReport>,
    pub replay: ReplayReport,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.fsync_ms {
            Some(fsync_ms) => writeln!(
                f,
                "event log benchmark: durable appends of one {} B record, {:.1} s per level; fsync ≈ {:.3} ms",
                self.record_bytes, self.options.secs_per_level, fsync_ms
            )?,
            None => writeln!(
                f,
                "event log benchmark on {}: acknowledged appends of one {} B record, {:.1} s per level",
                self.backend, self.record_bytes, self.options.secs_per_level
            )?,
        }
        let opt = |v: Option<f64>, width: usize, precision: usize| match v {
            Some(v) => format!("{v:>width$.precision$}"),
            None => format!("{:>width$}", "-"),
        };
        writeln!(
            f,
            "{:>9} {:>11} {:>8} {:>8} {:>8} {:>10} {:>11} {:>6}",
            "sessions", "appends/s", "p50 ms", "p99 ms", "max ms", "per flush", "ceiling/s", "ratio"
        )?;
        for l in &self.levels {
            writeln!(
                f,
                "{:>9} {:>11.0} {:>8.3} {:>8.3} {:>8.2} {} {} {}{}",
                l.concurrency,
                l.appends_per_sec,
                l.p50_ms,
                l.p99_ms,
                l.max_ms,
                opt(l.appends_per_flush, 10, 1),
                opt(l.ceiling_per_sec, 11, 0),
                opt(l.ratio.map(|r| r * 100.0), 5, 0),
                if l.ratio.is_some() { "%" } else { " " }
            )?;
        }
        writeln!(
            f,
            "replay: {} events streamed in {:.3} s = {:.0} events/s",
            self.replay.events, self.replay.secs, self.replay.events_per_sec
        )
    }
}

fn bench_event(payload_bytes: usize, n: u64) -> NewEvent {
    NewEvent {
        time_ms: 1_700_000_000_000 + n,
        event_type: "bench.appended".into(),
        schema_version: 1,
        correlation_id: Some(format!("cmd-{n:016x}")),
        checksum: None,
        payload: serde_json::json!({ "n": n, "pad": "x".repeat(payload_bytes.saturating_sub(24)) }).into(),
    }
}

fn bench_config(dir: &Path) -> StoreConfig {
    StoreConfig { lock_wait_ms: 10_000, ..StoreConfig::at(dir).with_durability(Durability::Durable) }
}

/// Mean fdatasync of a 4 KiB overwrite in place (no file growth, so no metadata to commit).
fn fsync_ms(dir: &Path) -> Result<f64, StoreError> {
    use std::os::unix::fs::FileExt;
    let io = |source| StoreError::Io { dir: dir.to_path_buf(), source };
    let path = dir.join("fsync-probe");
    let f = std::fs::File::create(&path).map_err(io)?;
    let block = vec![7u8; 4096];
    f.write_all_at(&block, 0).and_then(|_| f.sync_all()).map_err(io)?;
    let n = 200;
    let start = Instant::now();
    for _ in 0..n {
        f.write_all_at(&block, 0).map_err(io)?;
        f.sync_data().map_err(io)?;
    }
    let ms = start.elapsed().as_secs_f64() * 1000.0 / f64::from(n);
    let _ = std::fs::remove_file(path);
    Ok(ms)
}

/// Run the whole benchmark. Takes about `2 * (secs_per_level + rounds * warmup_secs)` per level,
/// plus the replay (a few seconds): about 40 s with the defaults.
pub fn run(options: BenchOptions) -> Result<BenchReport, StoreError> {
    options.check()?;
    let base = options.dir.clone().unwrap_or_else(std::env::temp_dir);
    let root = base.join(format!("vestibule-store-bench-{}-{}", std::process::id(), SessionId::random()));
    std::fs::create_dir_all(&root).map_err(|source| StoreError::Io { dir: root.clone(), source })?;
    let root = RemoveOnDrop(root);
    run_in(&root.0, options)
}

fn run_in(root: &Path, options: BenchOptions) -> Result<BenchReport, StoreError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| StoreError::Io { dir: root.to_path_buf(), source })?;
    let record_bytes = layout::encode_event(&bench_event(options.payload_bytes, 0)).map_err(StoreError::Engine)?.len();
    let fsync_ms = fsync_ms(root)?;
    let rounds = options.rounds.max(1);
    let slice = options.secs_per_level / rounds as f64;
    let mut levels = Vec::new();
    for (i, &c) in options.concurrency.iter().enumerate() {
        let c = c.max(1);
        let sled = Arc::new(SledEventLog::open(bench_config(&root.join(format!("ours-{i}"))))?);
        let mut ours = rt.block_on(OursRig::open(sled.clone(), Some(sled), c, options.payload_bytes))?;
        let mut ceiling = CeilingRig::open(&root.join(format!("ceiling-{i}")), c, options.payload_bytes)?;
        let mut hist = new_histogram();
        let (mut appends, mut secs, mut flushes, mut flushed_appends) = (0u64, 0.0, 0u64, 0u64);
        let (mut records, mut ceiling_secs) = (0u64, 0.0);
        // Alternate short slices of ours and of the ceiling, so both see the same machine: it is
        // shared, and its disk and CPUs are busier at some moments than at others.
        for _ in 0..rounds {
            let o = rt.block_on(ours.measure(options.warmup_secs, slice))?;
            hist.add(&o.hist).map_err(|e| StoreError::Engine(e.to_string()))?;
            appends += o.appends;
            secs += o.secs;
            flushes += o.flushes;
            flushed_appends += o.flushed_appends;
            let (r, s) = ceiling.measure(options.warmup_secs, slice)?;
            records += r;
            ceiling_secs += s;
        }
        let appends_per_sec = appends as f64 / secs;
        let ceiling_per_sec = records as f64 / ceiling_secs;
        levels.push(LevelReport {
            concurrency: c,
            appends,
            secs,
            appends_per_sec,
            p50_ms: hist.value_at_quantile(0.50) as f64 / 1000.0,
            p99_ms: hist.value_at_quantile(0.99) as f64 / 1000.0,
            max_ms: hist.max() as f64 / 1000.0,
            appends_per_flush: Some(flushed_appends as f64 / flushes.max(1) as f64),
            ceiling_per_sec: Some(ceiling_per_sec),
            ratio: Some(appends_per_sec / ceiling_per_sec),
        });
    }
    let replay = rt.block_on(async {
        let dir = root.join("replay");
        let s = write_replay_session(&SledEventLog::open(bench_config(&dir))?, &options).await?;
        // Reopened, as when a session is rehydrated after a restart.
        replay(&SledEventLog::open(bench_config(&dir))?, s).await
    })?;
    Ok(BenchReport { backend: "sled".into(), options, record_bytes, fsync_ms: Some(fsync_ms), levels, replay })
}

/// The same workload and replay on `backend` (no ceiling, no fsync probe). Builds its own runtime,
/// as [`run`]; every log it opened is removed at the end, failed or not.
pub fn run_on(backend: &dyn BenchBackend, options: BenchOptions) -> Result<BenchReport, StoreError> {
    options.check()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| StoreError::Engine(format!("bench runtime: {e}")))?;
    let mut labels = Vec::new();
    let result = rt.block_on(run_on_in(backend, &options, &mut labels));
    for label in labels {
        if let Err(e) = rt.block_on(backend.remove(&label)) {
            tracing::warn!(%label, error = %e, "bench: could not remove a log it made");
        }
    }
    result.map(|(record_bytes, levels, replay)| BenchReport {
        backend: backend.describe(),
        options,
        record_bytes,
        fsync_ms: None,
        levels,
        replay,
    })
}

async fn run_on_in(
    backend: &dyn BenchBackend,
    options: &BenchOptions,
    labels: &mut Vec<String>,
) -> Result<(usize, Vec<LevelReport>, ReplayReport), StoreError> {
    let record_bytes = layout::encode_event(&bench_event(options.payload_bytes, 0)).map_err(StoreError::Engine)?.len();
    let rounds = options.rounds.max(1);
    let slice = options.secs_per_level / rounds as f64;
    let mut levels = Vec::new();
    for (i, &c) in options.concurrency.iter().enumerate() {
        let c = c.max(1);
        let label = format!("L{i}");
        labels.push(label.clone());
        let log = backend.open(&label).await?;
        let mut ours = OursRig::open(log, None, c, options.payload_bytes).await?;
        let mut hist = new_histogram();
        let (mut appends, mut secs) = (0u64, 0.0);
        // Slices as with sled (the warm-ups and the restarts of the tasks are the same).
        for _ in 0..rounds {
            let o = ours.measure(options.warmup_secs, slice).await?;
            hist.add(&o.hist).map_err(|e| StoreError::Engine(e.to_string()))?;
            appends += o.appends;
            secs += o.secs;
        }
        levels.push(LevelReport {
            concurrency: c,
            appends,
            secs,
            appends_per_sec: appends as f64 / secs,
            p50_ms: hist.value_at_quantile(0.50) as f64 / 1000.0,
            p99_ms: hist.value_at_quantile(0.99) as f64 / 1000.0,
            max_ms: hist.max() as f64 / 1000.0,
            appends_per_flush: None,
            ceiling_per_sec: None,
            ratio: None,
        });
    }
    labels.push("replay".into());
    let s = write_replay_session(backend.open("replay").await?.as_ref(), options).await?;
    // Reopened (a new connection and handle), as when another gateway rehydrates the session.
    let replay = replay(backend.open("replay").await?.as_ref(), s).await?;
    Ok((record_bytes, levels, replay))
}

fn new_histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds")
}

struct OursRig {
    log: Arc<dyn EventLog>,
    /// The same log when it is sled's, for its flush statistics.
    sled: Option<Arc<SledEventLog>>,
    /// Each session and its current seq.
    sessions: Vec<(SessionId, u64)>,
    payload_bytes: usize,
}

struct OursSlice {
    hist: Histogram<u64>,
    appends: u64,
    secs: f64,
    flushes: u64,
    flushed_appends: u64,
}

impl OursRig {
    async fn open(log: Arc<dyn EventLog>, sled: Option<Arc<SledEventLog>>, c: usize, payload_bytes: usize) -> Result<Self, StoreError> {
        let mut sessions = Vec::with_capacity(c);
        for _ in 0..c {
            let s = SessionId::random();
            log.create_session(s, NewSession { project: "bench".into(), created_ms: 0, resume_token_hash: None }).await?;
            sessions.push((s, 0));
        }
        Ok(Self { log, sled, sessions, payload_bytes })
    }

    /// Every session appends in a loop for `warmup + secs`; only the last `secs` are measured.
    async fn measure(&mut self, warmup: f64, secs: f64) -> Result<OursSlice, StoreError> {
        let measure_from = Instant::now() + Duration::from_secs_f64(warmup);
        let stop = measure_from + Duration::from_secs_f64(secs);
        let stats_before = Arc::new(std::sync::Mutex::new(None));
        let tasks: Vec<_> = self
            .sessions
            .iter()
            .map(|&(s, mut seq)| {
                let (log, sled, payload_bytes, stats_before) =
                    (self.log.clone(), self.sled.clone(), self.payload_bytes, stats_before.clone());
                tokio::spawn(async move {
                    let mut hist = new_histogram();
                    let mut measured = 0u64;
                    loop {
                        let t0 = Instant::now();
                        if t0 >= stop {
                            break;
                        }
                        if let (true, Some(sled)) = (t0 >= measure_from, &sled) {
                            let mut first = stats_before.lock().unwrap();
                            if first.is_none() {
                                *first = Some(sled.stats());
                            }
                        }
                        let event = bench_event(payload_bytes, seq + 1);
                        seq = log.append(s, seq, vec![event]).await?.last_seq;
                        if t0 >= measure_from {
                            hist.saturating_record(t0.elapsed().as_micros() as u64);
                            measured += 1;
                        }
                    }
                    Ok::<_, StoreError>((s, seq, hist, measured))
                })
            })
            .collect();
        let mut slice = OursSlice { hist: new_histogram(), appends: 0, secs, flushes: 0, flushed_appends: 0 };
        let mut sessions = Vec::with_capacity(tasks.len());
        for t in tasks {
            let (s, seq, h, n) = t.await.map_err(|e| StoreError::Engine(format!("bench task: {e}")))??;
            slice.hist.add(h).map_err(|e| StoreError::Engine(e.to_string()))?;
            slice.appends += n;
            sessions.push((s, seq));
        }
        self.sessions = sessions;
        if let Some(sled) = &self.sled {
            let before = stats_before.lock().unwrap().unwrap_or_default();
            let after = sled.stats();
            slice.flushes = after.flushes.saturating_sub(before.flushes);
            slice.flushed_appends = after.appends.saturating_sub(before.appends);
        }
        Ok(slice)
    }
}

/// Raw sled with the log's bytes: batches of `c` records, one flush (sled + fdatasync) each.
struct CeilingRig {
    db: sled::Db,
    tree: sled::Tree,
    data_file: std::fs::File,
    sessions: Vec<SessionId>,
    seq: u64,
    payload_bytes: usize,
    dir: PathBuf,
}

impl CeilingRig {
    fn open(dir: &Path, c: usize, payload_bytes: usize) -> Result<Self, StoreError> {
        let err = |e: sled::Error| StoreError::Engine(format!("{e} ({})", dir.display()));
        let db = sled::Config::new().path(dir).flush_every_ms(None).open().map_err(err)?;
        let tree = db.open_tree(layout::TREE_NAME).map_err(err)?;
        let data_file = std::fs::File::open(dir.join("db")).map_err(|source| StoreError::Io { dir: dir.to_path_buf(), source })?;
        let sessions = (0..c).map(|_| SessionId::random()).collect();
        Ok(Self { db, tree, data_file, sessions, seq: 0, payload_bytes, dir: dir.to_path_buf() })
    }

    /// Records committed per second over `secs`, after `warmup`: (records, seconds measured).
    fn measure(&mut self, warmup: f64, secs: f64) -> Result<(u64, f64), StoreError> {
        let dir = self.dir.clone();
        let err = |e: sled::Error| StoreError::Engine(format!("{e} ({})", dir.display()));
        let measure_from = Instant::now() + Duration::from_secs_f64(warmup);
        let stop = measure_from + Duration::from_secs_f64(secs);
        let mut measured = 0u64;
        let mut t_measure = None;
        loop {
            let now = Instant::now();
            if now >= stop {
                break;
            }
            if now >= measure_from && t_measure.is_none() {
                t_measure = Some(now);
            }
            self.seq += 1;
            let mut batch = sled::Batch::default();
            for s in &self.sessions {
                // Encoded per record, as the log's callers do.
                let record = layout::encode_event(&bench_event(self.payload_bytes, self.seq)).map_err(StoreError::Engine)?;
                batch.insert(&layout::event_key(s, self.seq), record);
            }
            self.tree.apply_batch(batch).map_err(err)?;
            self.db.flush().map_err(err)?;
            self.data_file.sync_data().map_err(|source| StoreError::Io { dir: dir.clone(), source })?;
            if t_measure.is_some() {
                measured += self.sessions.len() as u64;
            }
        }
        Ok((measured, t_measure.map_or(0.0, |t| t.elapsed().as_secs_f64()).max(1e-9)))
    }
}

/// One session of `replay_events` events, written in appends of 500.
async fn write_replay_session(log: &dyn EventLog, o: &BenchOptions) -> Result<SessionId, StoreError> {
    let s = SessionId::random();
    log.create_session(s, NewSession { project: "bench".into(), created_ms: 0, resume_token_hash: None }).await?;
    let mut seq = 0;
    while seq < o.replay_events {
        let n = (o.replay_events - seq).min(500);
        let events = (seq + 1..=seq + n).map(|i| bench_event(o.payload_bytes, i)).collect();
        seq = log.append(s, seq, events).await?.last_seq;
    }
    Ok(s)
}

/// Streams session `s` from seq 1 to its end, checking the order.
async fn replay(log: &dyn EventLog, s: SessionId) -> Result<ReplayReport, StoreError> {
    let start = Instant::now();
    let mut stream = log.stream(s, 1);
    let mut events = 0u64;
    while let Some(e) = stream.next().await {
        let e = e?;
        events += 1;
        if e.seq != events {
            return Err(StoreError::Engine(format!("replay out of order at {events}: got seq {}", e.seq)));
        }
    }
    let secs = start.elapsed().as_secs_f64();
    Ok(ReplayReport { events, secs, events_per_sec: events as f64 / secs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_run_produces_a_complete_report() {
        let dir = tempfile::tempdir().unwrap();
        let report = run(BenchOptions {
            dir: Some(dir.path().to_path_buf()),
            concurrency: vec![1, 4],
            secs_per_level: 0.2,
            rounds: 2,
            warmup_secs: 0.05,
            payload_bytes: 64,
            replay_events: 2_000,
        })
        .unwrap();
        assert_eq!(report.levels.len(), 2);
        for l in &report.levels {
            assert!(l.appends > 0 && l.appends_per_sec > 0.0 && l.ceiling_per_sec > Some(0.0), "{l:?}");
            assert!(l.p50_ms <= l.p99_ms && l.p99_ms <= l.max_ms, "{l:?}");
        }
        assert_eq!(report.replay.events, 2_000);
        let table = report.to_string();
        assert!(table.contains("ceiling/s") && table.contains("replay"), "{table}");
        // Cleaned up after itself.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// Given a duration that is not one (the outside review's `--secs NaN|inf|-1|1e300`), when the
    /// bench runs, then it is an error, not a panic midway, and no temporary log is left behind.
    #[test]
    fn a_duration_that_is_not_one_is_refused_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        for secs in [f64::NAN, f64::INFINITY, -1.0, 0.0, 1e300] {
            let options =
                BenchOptions { dir: Some(dir.path().to_path_buf()), secs_per_level: secs, replay_events: 10, ..BenchOptions::default() };
            let sled = std::panic::catch_unwind(|| run(options.clone())).unwrap_or_else(|_| panic!("{secs}: panicked"));
            assert!(sled.unwrap_err().to_string().contains("secs_per_level"), "{secs}");
            let segments = SegmentsBench::new(Some(dir.path().to_path_buf()));
            let on = std::panic::catch_unwind(|| run_on(&segments, options)).unwrap_or_else(|_| panic!("{secs}: panicked on segments"));
            assert!(on.is_err(), "{secs}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no temporary log left");
    }
}
