//! A generator run by a driver (`vestibule-fleet`, several generators against several gateways):
//! it reports its progress in a status file, and once its sessions are all connected it holds them,
//! idle and answering pings, until the driver has measured the gateways and releases it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::metrics::Metrics;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct HoldArgs {
    /// Write this run's progress here as JSON, replaced every second (sessions connected,
    /// reconnects, errors, phase): for a driver running several generators (`vestibule-fleet`).
    #[arg(long)]
    pub status_file: Option<PathBuf>,
    /// Once every session is connected (or the ramp plus 30 s passed) and `--idle-secs` are over,
    /// hold them all, idle (reading: pings answered), until this file exists; then go on.
    #[arg(long)]
    pub hold_until: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Visitors are connecting.
    Ramp,
    /// Connected (as many as could), idle, waiting for the release.
    Holding,
    /// Released: traffic, then the report.
    Released,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub pid: u32,
    pub sessions: usize,
    /// Visitors whose session opened (each counted once).
    pub connected: usize,
    /// WebSocket connections opened, first ones and resumes.
    pub connections: u64,
    pub reconnects: u64,
    /// Errors by kind so far (`idle_drop:<why>`: a connection lost while idle).
    pub errors: std::collections::BTreeMap<String, u64>,
    /// Counters (`connect_retry:<why>`: a connect attempt that failed and was retried).
    #[serde(default)]
    pub counts: std::collections::BTreeMap<String, u64>,
    pub phase: Phase,
}

impl Status {
    pub fn read(path: &Path) -> Option<Status> {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    }

    /// Errors of kind `prefix…`, summed.
    pub fn errors_starting(&self, prefix: &str) -> u64 {
        self.errors.iter().filter(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v).sum()
    }
}

/// Writes the status file every second (and at each phase change) while it lives.
pub struct StatusWriter {
    phase: tokio::sync::watch::Sender<Phase>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl StatusWriter {
    pub fn spawn(args: &HoldArgs, sessions: usize, connected: Arc<AtomicUsize>, metrics: Arc<Metrics>) -> Self {
        let (phase, mut changes) = tokio::sync::watch::channel(Phase::Ramp);
        let task = args.status_file.clone().map(|path| {
            tokio::spawn(async move {
                loop {
                    let t = metrics.totals();
                    let status = Status {
                        pid: std::process::id(),
                        sessions,
                        connected: connected.load(Ordering::SeqCst),
                        connections: t.connections,
                        reconnects: t.reconnects,
                        errors: t.errors,
                        counts: t.counts,
                        phase: *changes.borrow_and_update(),
                    };
                    if let Err(e) = write_atomically(&path, &serde_json::to_vec(&status).expect("a status serializes")) {
                        eprintln!("cannot write the status file {}: {e}", path.display());
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                        changed = changes.changed() => if changed.is_err() { return },
                    }
                }
            })
        });
        StatusWriter { phase, task }
    }

    pub fn set(&self, phase: Phase) {
        let _ = self.phase.send(phase);
    }
}

impl Drop for StatusWriter {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Holds (with `--hold-until`) until the release file exists.
pub async fn hold(args: &HoldArgs, status: &StatusWriter) {
    let Some(release) = &args.hold_until else { return };
    status.set(Phase::Holding);
    while !release.exists() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    status.set(Phase::Released);
}

/// Replaces `path` whole (a reader never sees half a file): written beside it, then renamed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(".tmp");
    std::fs::write(&temp, bytes)?;
    std::fs::rename(&temp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_status_file_follows_the_phases_and_the_hold_ends_with_the_release_file() {
        let dir = tempfile::tempdir().unwrap();
        let args = HoldArgs { status_file: Some(dir.path().join("status.json")), hold_until: Some(dir.path().join("release")) };
        let connected = Arc::new(AtomicUsize::new(0));
        let metrics = Arc::new(Metrics::new());
        let writer = StatusWriter::spawn(&args, 3, connected.clone(), metrics.clone());
        connected.store(3, Ordering::SeqCst);
        metrics.connected(false);
        metrics.error("idle_drop:closed 1006");
        metrics.count("connect_retry:refused: busy");
        let status_path = args.status_file.clone().unwrap();
        let wait_for = |phase: Phase| {
            let path = status_path.clone();
            async move {
                // The writer writes once a second: polled, with a bound that only turns a status
                // that never comes into a failure (not a speed requirement).
                let deadline = std::time::Instant::now() + Duration::from_secs(60);
                loop {
                    if let Some(s) = Status::read(&path).filter(|s| s.phase == phase && s.connected == 3) {
                        return s;
                    }
                    assert!(std::time::Instant::now() < deadline, "no status in phase {phase:?} within 60 s");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        let holding = tokio::spawn({
            let args = args.clone();
            async move {
                let writer = writer;
                hold(&args, &writer).await;
                writer
            }
        });
        let s = wait_for(Phase::Holding).await;
        assert_eq!((s.sessions, s.connections, s.reconnects, s.errors_starting("idle_drop")), (3, 1, 0, 1));
        assert_eq!(s.counts.get("connect_retry:refused: busy"), Some(&1));
        assert!(!holding.is_finished(), "held until the release file exists");
        std::fs::write(args.hold_until.as_ref().unwrap(), b"").unwrap();
        let writer = tokio::time::timeout(Duration::from_secs(60), holding).await.expect("released").unwrap();
        wait_for(Phase::Released).await;
        drop(writer);
    }

    #[tokio::test]
    async fn without_a_release_file_there_is_no_hold() {
        let args = HoldArgs::default();
        let writer = StatusWriter::spawn(&args, 1, Arc::default(), Arc::new(Metrics::new()));
        tokio::time::timeout(Duration::from_secs(60), hold(&args, &writer)).await.expect("no hold");
    }
}
