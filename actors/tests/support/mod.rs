//! Shared by the runtime tests: a real sled log in a temporary directory, a registry on a manual
//! clock, and ways to wait for things without sleeping.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use vestibule_actors::machines::toasts::ToastVariant;
use vestibule_actors::runtime::{
    ConnectionLink, Execute, ManualClock, Outbound, OutboundReceiver, Registry, RuntimeConfig, RuntimeMetrics,
};
use vestibule_actors::session::ClientCommand;
use vestibule_actors::session::upcast::SessionUpcaster;
use vestibule_store::{EventLog, SledEventLog, StoreConfig};

pub const T0: u64 = vestibule_actors::testing::T0;

pub fn open_log(dir: &std::path::Path) -> Arc<dyn EventLog> {
    Arc::new(SledEventLog::open_with_upcaster(StoreConfig::at(dir).with_lock_wait_ms(5000), Arc::new(SessionUpcaster)).unwrap())
}

/// Nothing happens by the passing of time unless a test asks for it: no passivation, no hibernation.
pub fn quiet_config() -> RuntimeConfig {
    RuntimeConfig { passivate_after: Duration::from_secs(3600), hibernate_after: Duration::from_secs(3600), ..RuntimeConfig::default() }
}

pub fn registry(log: Arc<dyn EventLog>, clock: Arc<ManualClock>, config: RuntimeConfig) -> Registry {
    Registry::new(log, clock, config, Arc::new(RuntimeMetrics::default()))
}

pub fn execute(id: &str, command: ClientCommand) -> Execute {
    Execute::new(id, command, None)
}

pub fn toast(message: &str, duration_ms: Option<u64>, persistent: bool) -> ClientCommand {
    ClientCommand::ShowToast { message: message.into(), variant: ToastVariant::Success, duration_ms, persistent: Some(persistent) }
}

/// Waits until `condition` holds, letting the runtime (and the actors on it) run between checks.
/// Bounded by a number of turns, not by time; panics with `what` if it never holds.
pub async fn until(mut condition: impl FnMut() -> bool, what: &str) {
    for _ in 0..200_000 {
        if condition() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never happened: {what}");
}

/// Gives every task woken so far (a fired timer's actor, say) a bounded number of turns to run:
/// the fence before a check that something did *not* happen. A count of turns, not a wait.
pub async fn settle() {
    for _ in 0..1_000 {
        tokio::task::yield_now().await;
    }
}

/// Fires every timer due within `by`, on the runtime's clock, without waiting for real time: the
/// clock is paused, moved forward, and resumed (the log's writer is another thread, whose replies
/// must not make a paused clock jump ahead, so it runs paused only here).
pub async fn advance_timers(by: Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}

/// A connection as the gateway makes one: the link the session sends to, and what it received.
pub struct TestConnection {
    pub link: Option<ConnectionLink>,
    pub frames: OutboundReceiver,
}

impl TestConnection {
    pub fn new(id: u64) -> Self {
        let (link, frames, _dropped) = ConnectionLink::new(id, 256);
        Self { link: Some(link), frames }
    }

    /// The frames received so far, as JSON.
    pub fn received(&mut self) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        while let Ok(frame) = self.frames.try_recv() {
            let text = match frame {
                Outbound::Diff { text, .. } | Outbound::Message(text) => text,
            };
            out.push(serde_json::from_str(&text).unwrap());
        }
        out
    }
}

pub fn registry_with_metrics(log: Arc<dyn EventLog>, clock: Arc<ManualClock>, config: RuntimeConfig) -> (Registry, Arc<RuntimeMetrics>) {
    let metrics = Arc::new(RuntimeMetrics::default());
    (Registry::new(log, clock, config, metrics.clone()), metrics)
}
