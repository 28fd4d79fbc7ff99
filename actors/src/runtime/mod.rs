//! The imperative shell around the session decider: one `ModalSession` actor per live session, and
//! the registry that finds or starts them. The actor persists before it publishes: a command's diff
//! leaves only after its events are durable in the log.

pub mod effects;
mod frames;
mod interner;
mod metrics;
mod registry;
mod session_actor;

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::protocol::close;

pub use effects::{ChainEffects, ChainFuture, ClientWriteShares, ContractSignatureChecker, EmbeddedEffects, WriteRefusal};
pub use frames::{DiffFrame, Folded, fold_log, fold_log_counting};
pub use metrics::RuntimeMetrics;
pub use registry::{AttachError, CreateError, DeliverError, Registry};
pub use session_actor::{Attach, CommandReply, Detach, Execute, HibernateNow, Inspect, ModalSession, SessionSnapshot};

/// Wall-clock time, supplied by the shell: the domain never reads a clock itself. The session's
/// deadlines (a toast's auto-dismiss, a sign-in's expiry) are waited for on the same clock, so a
/// test that moves a `ManualClock` moves them too, whatever the machine's speed.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> u64;

    /// Resolves once the clock reads `at_ms` or later (at once if it already does).
    fn sleep_until(&self, at_ms: u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        let delay = Duration::from_millis(at_ms.saturating_sub(self.now_ms()));
        Box::pin(tokio::time::sleep(delay))
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }
}

/// A clock that moves only when told: for tests and benchmarks, so event times and deadlines do
/// not depend on how fast the machine is. Deadlines waited for with `sleep_until` fall due when
/// `advance` reaches them, and only then.
#[derive(Debug)]
pub struct ManualClock {
    now_ms: tokio::sync::watch::Sender<u64>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::at(0)
    }
}

impl ManualClock {
    pub fn at(now_ms: u64) -> Self {
        Self { now_ms: tokio::sync::watch::Sender::new(now_ms) }
    }

    pub fn advance(&self, ms: u64) {
        self.now_ms.send_modify(|now| *now += ms);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        *self.now_ms.borrow()
    }

    fn sleep_until(&self, at_ms: u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        let mut now = self.now_ms.subscribe();
        Box::pin(async move {
            // The sender lives as long as the clock; if it is gone, nothing will ever be due.
            if now.wait_for(|now| *now >= at_ms).await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

/// The default budget of bytes one session may write to its event log (16 MiB).
pub const DEFAULT_SESSION_LOG_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeConfig {
    /// A snapshot is written every this many events.
    pub snapshot_every: u64,
    /// A session with no connection for this long is stopped (its state stays in the log).
    #[serde(with = "humantime_serde")]
    pub passivate_after: Duration,
    /// A session that decided nothing and admitted no connection for this long hibernates: it keeps
    /// its connections, seq and deadlines and drops its state, diff ring and answer cache, which the
    /// next command rebuilds from the log (snapshot + tail).
    #[serde(with = "humantime_serde")]
    pub hibernate_after: Duration,
    /// Hibernating writes a snapshot when at least this many events came after the last one; a
    /// shorter tail is folded again when the session wakes. A snapshot is the whole state (2 to
    /// 9 KB) and the store keeps what it writes in its cache, so snapshotting every session that
    /// hibernates after a handful of events costs more memory than the short fold costs time.
    pub hibernation_snapshot_after: u64,
    /// Messages waiting for one session actor; beyond it commands are refused as busy.
    pub mailbox_capacity: usize,
    /// Recent diffs kept in memory (while awake) for fast resume; older ones are rebuilt from the log.
    pub recent_diffs: usize,
    /// A client further behind than this many events gets the whole state instead of diffs.
    pub max_resume_events: u64,
    /// Answers kept in memory per session (while awake), so a quick retry needs no read. Every
    /// answer is remembered in the log regardless (`docs/decisions/0104-answers-in-the-log.md`).
    pub remembered_commands: usize,
    /// The secure frame's origin (`[embedded] frame_origin`): sessions started with one offer email
    /// and social login through the embedded wallet; `None`, they answer with the catalogue's errors.
    /// Not a configuration key (the gateway sets it from `[embedded]`), so `[runtime]` refuses it
    /// as unknown rather than accepting a value that would be ignored.
    #[serde(skip)]
    pub embedded_frame_origin: Option<String>,
    /// Connections attached at once (`[limits] connections_per_session`, which the gateway copies
    /// here; not a `[runtime]` key): each is sent every diff, so without a bound one resume token
    /// could fan one command out to every socket the per-address and total limits allow.
    #[serde(skip)]
    pub max_connections: usize,
    /// Bytes a session may write to its event log (`[limits] session_log_bytes`, which the gateway
    /// copies here; not a `[runtime]` key): once its events and answers reach it, its clients'
    /// commands are refused with `log_full` and write nothing (decision 0107).
    #[serde(skip)]
    pub max_log_bytes: u64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            snapshot_every: 100,
            passivate_after: Duration::from_secs(60),
            hibernate_after: Duration::from_secs(10),
            hibernation_snapshot_after: 16,
            mailbox_capacity: 256,
            recent_diffs: 16,
            max_resume_events: 2000,
            remembered_commands: 16,
            embedded_frame_origin: None,
            max_connections: 16,
            max_log_bytes: DEFAULT_SESSION_LOG_BYTES,
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

/// The receiving end of a connection's frame queue.
pub type OutboundReceiver = flume::Receiver<Outbound>;

/// How a session reaches one connection: a bounded channel, and a cancellation the session triggers
/// when it drops the connection (it cannot send a close frame through a full channel, and the
/// connection may not be reading the channel while it waits for acknowledgements).
///
/// The channel is flume's: its queue is a `VecDeque` that allocates nothing until a frame is queued,
/// where tokio's bounded channel allocates a block of 32 slots up front (1.3 KB for each of 10,000
/// idle connections, `docs/performance.md`).
#[derive(Debug, Clone)]
pub struct ConnectionLink {
    pub id: u64,
    pub sender: flume::Sender<Outbound>,
    /// The most frames the channel holds.
    pub capacity: usize,
    /// The client's address as the gateway counts it (an IPv4 address or an IPv6 /64), when known:
    /// the session's host reads count towards that address's share of the chain calls at the
    /// nodes at once ([`super::effects::ChainEffects::host_read`]).
    pub client: Option<IpAddr>,
    dropped: DropNotice,
}

/// The connection's view of its link being dropped: a cancellation token plus the close code the
/// session chose. The code is set before the token is cancelled, so whoever sees the cancellation
/// sees the code.
#[derive(Debug, Clone, Default)]
pub struct DropNotice {
    cancelled: CancellationToken,
    code: Arc<OnceLock<u16>>,
}

impl DropNotice {
    /// Resolves with the close code once the session has dropped the connection.
    pub async fn dropped(&self) -> u16 {
        self.cancelled.cancelled().await;
        self.code().unwrap_or(close::INTERNAL)
    }

    /// The close code if the session dropped the connection.
    pub fn code(&self) -> Option<u16> {
        self.code.get().copied()
    }
}

impl ConnectionLink {
    pub fn new(id: u64, capacity: usize) -> (Self, OutboundReceiver, DropNotice) {
        let capacity = capacity.max(1);
        let (sender, receiver) = flume::bounded(capacity);
        let dropped = DropNotice::default();
        (Self { id, sender, capacity, client: None, dropped: dropped.clone() }, receiver, dropped)
    }

    /// The same link, for a connection from `client` (see [`ConnectionLink::client`]).
    pub fn from_client(self, client: Option<IpAddr>) -> Self {
        Self { client, ..self }
    }

    /// Tells the connection the session dropped it, and why. The first code wins.
    pub fn drop_with(&self, code: u16) {
        let _ = self.dropped.code.set(code);
        self.dropped.cancelled.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dropped_link_tells_its_connection_the_first_close_code() {
        let (link, _outbound, dropped) = ConnectionLink::new(1, 4);
        assert_eq!(dropped.code(), None);
        link.drop_with(close::TOO_SLOW);
        link.drop_with(close::SESSION_ENDED);
        assert_eq!(dropped.dropped().await, close::TOO_SLOW);
        assert_eq!(dropped.code(), Some(close::TOO_SLOW));
    }
}
