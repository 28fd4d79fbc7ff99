//! How many chain calls (`POST /api/rpc`) one logged-in user's frames may make: a token bucket of
//! calls per user and a bound on the calls in flight at once. Without them a frame was an
//! unthrottled proxy to the operator's RPC endpoints (400 calls a second from one token, each
//! spending the operator's quota and the node's time).
//!
//! Keyed by user, not frame: every frame of a login (tabs, reloads) shares one allowance, and a new
//! frame does not bring a fresh one. The frame fills a transaction with four calls at once and sends
//! it with a fifth (client/src/frame/evm.ts), so the defaults leave room for a few transactions in
//! a burst and one every second after that.
//!
//! Pure: time is an input (the service's clock, in ms). Bound: at most `capacity` users are kept;
//! a new user beyond it sweeps out users whose bucket is full and who have nothing in flight, and
//! is refused (`Busy`) when none can go.

use std::collections::HashMap;

/// Calls per second a user's bucket refills.
pub const CALLS_PER_SECOND: u32 = 5;
/// Calls a full bucket holds.
pub const BURST: u32 = 20;
/// Calls of one user in flight at once.
pub const MAX_IN_FLIGHT: u32 = 8;
/// Users kept (the frame registry's own bound: only logged-in frames call).
pub const CAPACITY: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The bucket is empty; one call's worth is back after this many seconds.
    RateLimited { retry_after_secs: u64 },
    /// `MAX_IN_FLIGHT` calls are still running.
    TooManyInFlight,
    /// `CAPACITY` users are kept and none can be let go.
    Busy,
}

#[derive(Debug, Clone, Copy)]
struct Allowance {
    /// When the bucket is full again, in units of 1/`per_second` ms (one call is 1,000 units):
    /// the generic cell rate algorithm's theoretical arrival time.
    full_at: u128,
    in_flight: u32,
}

pub struct ChainCallLimits {
    per_second: u32,
    burst: u32,
    max_in_flight: u32,
    capacity: usize,
    users: HashMap<String, Allowance>,
}

impl Default for ChainCallLimits {
    fn default() -> Self {
        Self::new(CALLS_PER_SECOND, BURST, MAX_IN_FLIGHT, CAPACITY)
    }
}

const CALL: u128 = 1000;

impl ChainCallLimits {
    pub fn new(per_second: u32, burst: u32, max_in_flight: u32, capacity: usize) -> Self {
        Self {
            per_second: per_second.max(1),
            burst: burst.max(1),
            max_in_flight: max_in_flight.max(1),
            capacity: capacity.max(1),
            users: HashMap::new(),
        }
    }

    fn units(&self, now_ms: u64) -> u128 {
        u128::from(now_ms) * u128::from(self.per_second)
    }

    /// Starts one call of `user` at `now_ms`: takes a call from the bucket and counts it in
    /// flight until [`Self::end`].
    pub fn begin(&mut self, user: &str, now_ms: u64) -> Result<(), Refusal> {
        let now = self.units(now_ms);
        if !self.users.contains_key(user) {
            self.make_room(now)?;
        }
        let (burst, max_in_flight, per_second) = (self.burst, self.max_in_flight, self.per_second);
        let allowance = self.users.entry(user.to_owned()).or_insert(Allowance { full_at: now, in_flight: 0 });
        if allowance.in_flight >= max_in_flight {
            return Err(Refusal::TooManyInFlight);
        }
        let full_at = allowance.full_at.max(now) + CALL;
        let allowed_ahead = u128::from(burst) * CALL;
        if full_at - now > allowed_ahead {
            let wait_units = full_at - now - allowed_ahead;
            let retry_after_secs = wait_units.div_ceil(u128::from(per_second) * 1000).max(1) as u64;
            return Err(Refusal::RateLimited { retry_after_secs });
        }
        allowance.full_at = full_at;
        allowance.in_flight += 1;
        Ok(())
    }

    /// Ends a call [`Self::begin`] started (answered, failed or abandoned).
    pub fn end(&mut self, user: &str) {
        if let Some(allowance) = self.users.get_mut(user) {
            allowance.in_flight = allowance.in_flight.saturating_sub(1);
        }
    }

    fn make_room(&mut self, now: u128) -> Result<(), Refusal> {
        if self.users.len() < self.capacity {
            return Ok(());
        }
        self.users.retain(|_, allowance| allowance.in_flight > 0 || allowance.full_at > now);
        if self.users.len() < self.capacity { Ok(()) } else { Err(Refusal::Busy) }
    }

    #[cfg(test)]
    fn kept(&self) -> usize {
        self.users.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given_limits(per_second: u32, burst: u32, max_in_flight: u32, capacity: usize) -> ChainCallLimits {
        ChainCallLimits::new(per_second, burst, max_in_flight, capacity)
    }

    /// Begins and ends `n` calls at `now_ms`; how many were allowed.
    fn when_calls(limits: &mut ChainCallLimits, user: &str, n: usize, now_ms: u64) -> usize {
        (0..n)
            .filter(|_| {
                let allowed = limits.begin(user, now_ms).is_ok();
                if allowed {
                    limits.end(user);
                }
                allowed
            })
            .count()
    }

    #[test]
    fn given_a_full_bucket_when_calls_come_at_once_then_the_burst_passes_and_the_rest_wait() {
        let mut limits = given_limits(5, 20, 8, 10);
        assert_eq!(when_calls(&mut limits, "alice", 25, 1_000), 20);
        assert_eq!(limits.begin("alice", 1_000), Err(Refusal::RateLimited { retry_after_secs: 1 }));
    }

    #[test]
    fn given_an_empty_bucket_when_time_passes_then_calls_come_back_at_the_rate() {
        let mut limits = given_limits(5, 20, 8, 10);
        when_calls(&mut limits, "alice", 20, 0);
        assert_eq!(when_calls(&mut limits, "alice", 10, 199), 0, "a call's worth is 200 ms");
        assert_eq!(when_calls(&mut limits, "alice", 10, 200), 1);
        assert_eq!(when_calls(&mut limits, "alice", 10, 1_200), 5, "five a second");
        assert_eq!(when_calls(&mut limits, "alice", 30, 60_000), 20, "never more than the burst");
    }

    #[test]
    fn given_another_user_when_one_is_spent_then_the_other_is_not() {
        let mut limits = given_limits(5, 20, 8, 10);
        when_calls(&mut limits, "alice", 20, 0);
        assert_eq!(when_calls(&mut limits, "bob", 20, 0), 20);
    }

    #[test]
    fn given_calls_in_flight_when_one_more_begins_then_it_is_refused_until_one_ends() {
        let mut limits = given_limits(5, 20, 3, 10);
        for _ in 0..3 {
            limits.begin("alice", 0).unwrap();
        }
        assert_eq!(limits.begin("alice", 0), Err(Refusal::TooManyInFlight));
        limits.end("alice");
        assert_eq!(limits.begin("alice", 0), Ok(()));
    }

    #[test]
    fn given_the_capacity_is_reached_when_a_new_user_comes_then_idle_full_users_make_room() {
        let mut limits = given_limits(5, 20, 8, 2);
        limits.begin("alice", 0).unwrap(); // still in flight
        when_calls(&mut limits, "bob", 1, 0);
        // Bob's bucket is not full yet (200 ms), Alice has a call in flight.
        assert_eq!(limits.begin("carol", 100), Err(Refusal::Busy));
        // Once Bob's bucket is full again he can go; Alice cannot.
        assert_eq!(limits.begin("carol", 200), Ok(()));
        assert_eq!(limits.kept(), 2);
        limits.end("alice");
        limits.end("carol");
    }
}
