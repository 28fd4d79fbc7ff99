//! The retention task: runs [`EventLog::expire`] batches on an interval. Expiry is the only thing
//! that ever deletes events.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;

use crate::{EventLog, ExpireReport, RetentionPolicy};

/// Most `expire` batches one run does before it waits for the next interval.
const MAX_BATCHES_PER_RUN: usize = 1000;

/// What a retention task did, over its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionTotals {
    pub runs: u64,
    pub sessions_expired: u64,
}

/// Handle to the task started by [`spawn_retention`]. Dropping it (or [`RetentionHandle::stop`])
/// stops the task after the batch it is running.
pub struct RetentionHandle {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    runs: Arc<AtomicU64>,
    expired: Arc<AtomicU64>,
}

impl RetentionHandle {
    /// Runs completed so far.
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Acquire)
    }

    /// Sessions expired by this task so far.
    pub fn sessions_expired(&self) -> u64 {
        self.expired.load(Ordering::Acquire)
    }

    /// Stop the task, wait for it to finish its current run, and return its totals.
    pub fn stop(mut self) -> RetentionTotals {
        self.shutdown();
        RetentionTotals { runs: self.runs(), sessions_expired: self.sessions_expired() }
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RetentionHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// One retention run: `expire` batches until nothing more is due (or a bound is hit), then the
/// counts and disk use are logged at info level.
pub async fn run_retention_once(log: &dyn EventLog, policy: &RetentionPolicy, now_ms: u64) -> ExpireReport {
    let mut total = ExpireReport::default();
    for _ in 0..MAX_BATCHES_PER_RUN {
        match log.expire(policy, now_ms).await {
            Ok(r) => {
                total.sessions_expired += r.sessions_expired;
                total.expired.extend(r.expired);
                total.events_deleted += r.events_deleted;
                total.more_due = r.more_due;
                if !r.more_due {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "retention: expiring sessions failed; will retry at the next run");
                break;
            }
        }
    }
    match log.disk_usage().await {
        Ok(bytes) => tracing::info!(
            sessions_expired = total.sessions_expired,
            events_deleted = total.events_deleted,
            more_due = total.more_due,
            disk_bytes = bytes,
            "retention run"
        ),
        Err(error) => tracing::info!(
            sessions_expired = total.sessions_expired,
            events_deleted = total.events_deleted,
            more_due = total.more_due,
            %error,
            "retention run (disk use unknown)"
        ),
    }
    total
}

/// Start the retention task on its own thread (with its own small runtime, so it works whatever
/// runtime the caller uses): a run at once, then one every `interval`.
pub fn spawn_retention(log: Arc<dyn EventLog>, policy: RetentionPolicy, interval: Duration) -> RetentionHandle {
    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    let runs = Arc::new(AtomicU64::new(0));
    let expired = Arc::new(AtomicU64::new(0));
    let (runs_t, expired_t) = (runs.clone(), expired.clone());
    let thread = std::thread::Builder::new()
        .name("vestibule-retention".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
                Ok(rt) => rt,
                Err(error) => {
                    tracing::error!(%error, "retention: cannot start its runtime; retention is off");
                    return;
                }
            };
            rt.block_on(async move {
                loop {
                    let report = run_retention_once(log.as_ref(), &policy, now_ms()).await;
                    expired_t.fetch_add(report.sessions_expired, Ordering::AcqRel);
                    runs_t.fetch_add(1, Ordering::AcqRel);
                    tokio::select! {
                        _ = tokio::time::sleep(interval) => {}
                        _ = &mut stop_rx => break,
                    }
                }
            });
        })
        .ok();
    if thread.is_none() {
        tracing::error!("retention: cannot start its thread; retention is off");
    }
    RetentionHandle { stop: Some(stop_tx), thread, runs, expired }
}
