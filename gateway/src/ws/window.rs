//! The window of diffs a connection has sent and the client has not acknowledged yet.
//!
//! At most `capacity` diffs are in flight. When the window is full and another diff is waiting,
//! the client has `ack_timeout` to acknowledge; a client that reads but never acknowledges would
//! otherwise stall forever without anyone noticing (its socket stays readable, so neither the
//! write timeout nor the heartbeat fires).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct AckWindow {
    /// Seqs of the diffs sent and not acknowledged, oldest first.
    unacked: VecDeque<u64>,
    capacity: usize,
    ack_timeout: Duration,
    /// When a diff first had to wait for room.
    waiting_since: Option<Instant>,
}

/// Unacknowledged seqs kept allocated once the window drains (a busy window grows to `capacity`;
/// an idle connection should not keep that).
const IDLE_CAPACITY: usize = 4;

impl AckWindow {
    pub fn new(capacity: usize, ack_timeout: Duration) -> Self {
        Self { unacked: VecDeque::new(), capacity: capacity.max(1), ack_timeout, waiting_since: None }
    }

    pub fn has_room(&self) -> bool {
        self.unacked.len() < self.capacity
    }

    pub fn unacknowledged(&self) -> usize {
        self.unacked.len()
    }

    /// A diff with `seq` was sent.
    pub fn sent(&mut self, seq: u64) {
        self.unacked.push_back(seq);
    }

    /// The client has applied everything up to `seq`.
    pub fn acked(&mut self, seq: u64) {
        while self.unacked.front().is_some_and(|s| *s <= seq) {
            self.unacked.pop_front();
        }
        if self.unacked.is_empty() && self.unacked.capacity() > IDLE_CAPACITY {
            self.unacked.shrink_to(IDLE_CAPACITY);
        }
        if self.has_room() {
            self.waiting_since = None;
        }
    }

    /// A diff is waiting for room at `now`. Returns the deadline for an acknowledgement, which
    /// runs from the moment the first diff had to wait.
    pub fn wait(&mut self, now: Instant) -> Instant {
        *self.waiting_since.get_or_insert(now) + self.ack_timeout
    }

    /// Whether a diff has waited for room past the deadline at `now`.
    pub fn expired(&self, now: Instant) -> bool {
        self.waiting_since.is_some_and(|since| now >= since + self.ack_timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_window_holds_the_next_diff_and_an_ack_makes_room() {
        let mut w = AckWindow::new(2, Duration::from_secs(10));
        w.sent(3);
        assert!(w.has_room());
        w.sent(5);
        assert!(!w.has_room());
        w.acked(4);
        assert_eq!(w.unacknowledged(), 1);
        assert!(w.has_room());
        w.acked(9);
        assert_eq!(w.unacknowledged(), 0);
    }

    #[test]
    fn a_client_that_never_acks_a_full_window_runs_out_of_time() {
        let start = Instant::now();
        let mut w = AckWindow::new(64, Duration::from_secs(10));
        for seq in 1..=64 {
            w.sent(seq);
        }
        assert!(!w.has_room());
        assert!(!w.expired(start), "no deadline before a diff waits");
        assert_eq!(w.wait(start), start + Duration::from_secs(10));
        // A later wait keeps the first deadline: more diffs arriving do not extend it.
        assert_eq!(w.wait(start + Duration::from_secs(4)), start + Duration::from_secs(10));
        assert!(!w.expired(start + Duration::from_millis(9_999)));
        assert!(w.expired(start + Duration::from_secs(10)));
    }

    #[test]
    fn an_ack_that_makes_room_lifts_the_deadline() {
        let start = Instant::now();
        let mut w = AckWindow::new(1, Duration::from_secs(1));
        w.sent(1);
        w.wait(start);
        w.acked(1);
        assert!(!w.expired(start + Duration::from_secs(5)));
        w.sent(2);
        assert_eq!(w.wait(start + Duration::from_secs(5)), start + Duration::from_secs(6), "a new wait, a new deadline");
    }

    #[test]
    fn an_ack_for_an_older_seq_frees_nothing() {
        let start = Instant::now();
        let mut w = AckWindow::new(1, Duration::from_secs(1));
        w.sent(7);
        w.wait(start);
        w.acked(6);
        assert!(!w.has_room());
        assert!(w.expired(start + Duration::from_secs(1)));
    }
}
