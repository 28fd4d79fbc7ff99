//! The imperative shell around the session decider: one `ModalSession` actor per live session, and
//! the registry that finds or starts them. The actor persists before it publishes: a command's diff
//! leaves only after its events are durable in the log.

mod frames;
mod metrics;
mod registry;
mod session_actor;

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use frames::{fold_log, DiffFrame};
pub use metrics::RuntimeMetrics;
pub use registry::{AttachError, CreateError, Registry};
pub use session_actor::{Attach, Detach, Execute, Inspect, ModalSession, SessionSnapshot};

/// Wall-clock time, supplied by the shell: the domain never reads a clock itself.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> u64;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeConfig {
    /// A snapshot is written every this many events.
    pub snapshot_every: u64,
    /// A session with no connection for this long is stopped (its state stays in the log).
    #[serde(with = "humantime_serde")]
    pub passivate_after: Duration,
    /// Messages waiting for one session actor; beyond it commands are refused as busy.
    pub mailbox_capacity: usize,
    /// Recent diffs kept in memory for fast resume; older ones are rebuilt from the log.
    pub recent_diffs: usize,
    /// A client further behind than this many events gets the whole state instead of diffs.
    pub max_resume_events: u64,
    /// Results kept per session so a retried command id gets its first answer.
    pub remembered_commands: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            snapshot_every: 100,
            passivate_after: Duration::from_secs(60),
            mailbox_capacity: 256,
            recent_diffs: 128,
            max_resume_events: 2000,
            remembered_commands: 256,
        }
    }
}

/// A frame for one connection. Text is serialized once per diff and shared by every connection.
#[derive(Debug, Clone)]
pub enum Outbound {
    /// A diff, counted against the connection's window of unacknowledged diffs.
    Diff { seq: u64, text: Arc<str> },
    /// Any other message (welcome, result).
    Message(Arc<str>),
}

/// How a session reaches one connection: a bounded channel, and the close code to use if the
/// session drops the connection (it cannot send a close frame through a full channel).
#[derive(Debug, Clone)]
pub struct ConnectionLink {
    pub id: u64,
    pub sender: tokio::sync::mpsc::Sender<Outbound>,
    close_code: Arc<AtomicU16>,
}

impl ConnectionLink {
    pub fn new(id: u64, capacity: usize) -> (Self, tokio::sync::mpsc::Receiver<Outbound>, Arc<AtomicU16>) {
        let (sender, receiver) = tokio::sync::mpsc::channel(capacity.max(1));
        let close_code = Arc::new(AtomicU16::new(0));
        (Self { id, sender, close_code: close_code.clone() }, receiver, close_code)
    }

    /// Records why the session is about to drop this link.
    pub fn set_close_code(&self, code: u16) {
        self.close_code.store(code, Ordering::Relaxed);
    }
}
