//! Time as an input: the service reads "now" through a [`Clock`], so caches and waits can be
//! tested without waiting.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Instant;
}

/// Tokio's clock: the real one, or the virtual one of a test that paused time.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Instant>,
}

impl ManualClock {
    pub fn new() -> Self {
        Self { now: Mutex::new(Instant::now()) }
    }

    pub fn advance(&self, by: Duration) {
        *self.now.lock().unwrap() += by;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.now.lock().unwrap()
    }
}
