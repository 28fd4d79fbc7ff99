//! What one visitor may have mailed, whatever the addresses (decision 1502). The per-address
//! cooldown and lockout (throttle.rs) bound what reaches one mailbox; without these, one visitor
//! could have codes mailed to thousands of addresses through many frames and sessions, turning the
//! gateway into a spam relay that costs the operator money and mail reputation.
//!
//! * Per frame: `email_cooldown` (30 s) between any two codes a frame has mailed (login and email
//!   change), whatever the addresses; the frame's record is [`crate::frames::Frame::last_mail_ms`].
//!   A frame registered for a session takes over the latest mail of the session's frames, so a
//!   reload or a second frame does not start a fresh cooldown.
//! * Per client address: a token bucket of `mails_per_ip_per_hour` (30) mails, refilled
//!   continuously (one mail every 120 s at the default), keyed by the address that registered the
//!   frame, an IPv6 address counted by its /64 ([`client_key`], the rule of the gateway's other
//!   per-address limits). Every code counts, the second code of an email change too.
//!
//! A mail that fails gives back what it took. Neither record names an email address or a code.
//!
//! Bound: the buckets are a map of at most [`MAIL_BUDGET_KEYS`] client addresses (about 64 bytes
//! each with the map's slack: under 9 MB). A bucket that has refilled is the same as a new one;
//! when a new address finds the map full, the refilled buckets go first, then the fullest eighth
//! (those that give back the least), so one sweep makes room for many addresses. The buckets are in memory, per
//! gateway: a restart refills them (the per-address cooldown and lockout are durable).
//!
//! Time is the service's clock (`now_ms`), never the system clock.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};

/// The most client addresses whose buckets are kept (see the module's bound).
pub const MAIL_BUDGET_KEYS: usize = 100_000;

const HOUR_MS: u128 = 3_600_000;

/// The address a client is counted under: an IPv4 address, or the /64 an IPv6 address belongs to
/// (one subscriber is usually given a whole /64, so counting single IPv6 addresses would limit
/// nothing). The same rule as the gateway's `limits::client_key`, which this crate cannot depend on.
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

/// The client address's budget is spent until a mail's worth has refilled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spent {
    pub retry_after_secs: u64,
}

/// A token bucket kept as the time it will be full again (the generic cell rate algorithm), in
/// exact integer units: 1 ms = `per_hour` units, so one mail refills in [`HOUR_MS`] units.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// When the bucket is full again (units); it holds `per_hour − (full_at − now) / HOUR_MS` mails.
    full_at: u128,
    /// When it was last touched (ms): a clock seen behind it went back, and the bucket with it.
    at_ms: u64,
}

/// One token bucket of mails per client address (`None`: frames registered without a known peer,
/// which share one bucket).
pub struct MailBudget {
    per_hour: u32,
    capacity: usize,
    buckets: HashMap<Option<IpAddr>, Bucket>,
}

impl MailBudget {
    /// `per_hour` mails per client address (at least 1), at most `capacity` addresses kept.
    pub fn new(per_hour: u32, capacity: usize) -> Self {
        Self { per_hour: per_hour.max(1), capacity: capacity.max(1), buckets: HashMap::new() }
    }

    fn units(&self, ms: u64) -> u128 {
        u128::from(ms) * u128::from(self.per_hour)
    }

    /// How far ahead of now a bucket may be full again and still give one mail: all but one of
    /// its mails spent.
    fn tolerance(&self) -> u128 {
        u128::from(self.per_hour - 1) * HOUR_MS
    }

    /// The client's bucket at `now_ms`, moved back with the clock if the clock went back (so the
    /// wait it holds is kept, not stretched by the step); none when it is full.
    fn current(&mut self, client: Option<IpAddr>, now_ms: u64) -> Option<Bucket> {
        let step_back = self.units(self.buckets.get(&client)?.at_ms.saturating_sub(now_ms));
        let bucket = self.buckets.get_mut(&client)?;
        bucket.full_at = bucket.full_at.saturating_sub(step_back);
        bucket.at_ms = bucket.at_ms.min(now_ms);
        let bucket = *bucket;
        (bucket.full_at > self.units(now_ms)).then_some(bucket)
    }

    /// Whether `client` may have one more mail at `now_ms`.
    pub fn check(&mut self, client: Option<IpAddr>, now_ms: u64) -> Result<(), Spent> {
        let Some(bucket) = self.current(client, now_ms) else {
            return Ok(());
        };
        let allowed_from = bucket.full_at.saturating_sub(self.tolerance());
        let now = self.units(now_ms);
        if allowed_from <= now {
            return Ok(());
        }
        let per_second = u128::from(self.per_hour) * 1000;
        Err(Spent { retry_after_secs: (allowed_from - now).div_ceil(per_second).max(1) as u64 })
    }

    /// Takes one mail from `client`'s budget (after [`Self::check`], under the same lock).
    pub fn take(&mut self, client: Option<IpAddr>, now_ms: u64) {
        let now = self.units(now_ms);
        let full_at = match self.current(client, now_ms) {
            Some(bucket) => bucket.full_at,
            None => {
                if !self.buckets.contains_key(&client) {
                    self.make_room(now_ms);
                }
                now
            }
        };
        self.buckets.insert(client, Bucket { full_at: full_at + HOUR_MS, at_ms: now_ms });
    }

    /// The mail did not go out: gives its token back (a bucket that is full again is forgotten).
    pub fn give_back(&mut self, client: Option<IpAddr>, now_ms: u64) {
        let now = self.units(now_ms);
        match self.current(client, now_ms) {
            Some(bucket) if bucket.full_at.saturating_sub(HOUR_MS) > now => {
                self.buckets.insert(client, Bucket { full_at: bucket.full_at - HOUR_MS, at_ms: now_ms });
            }
            _ => {
                self.buckets.remove(&client);
            }
        }
    }

    /// Room for one more address: the buckets full again go, then the fullest eighth (those
    /// that give back the least).
    fn make_room(&mut self, now_ms: u64) {
        if self.buckets.len() < self.capacity {
            return;
        }
        let now = self.units(now_ms);
        self.buckets.retain(|_, bucket| bucket.full_at > now);
        if self.buckets.len() < self.capacity {
            return;
        }
        let mut fullest: Vec<(u128, Option<IpAddr>)> = self.buckets.iter().map(|(key, bucket)| (bucket.full_at, *key)).collect();
        let evict = (self.buckets.len() / 8).max(1);
        fullest.select_nth_unstable(evict - 1);
        for (_, key) in fullest.into_iter().take(evict) {
            self.buckets.remove(&key);
        }
    }

    /// How many client addresses have a bucket.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000;
    const T0: u64 = 1_700_000_000_000;

    fn ip(text: &str) -> Option<IpAddr> {
        Some(client_key(text.parse().unwrap()))
    }

    #[test]
    fn given_a_client_that_took_its_budget_when_it_asks_again_then_it_waits_for_one_mail_to_refill_and_others_are_served() {
        let mut budget = MailBudget::new(30, 16);
        let client = ip("192.0.2.1");
        for _ in 0..30 {
            assert_eq!(budget.check(client, T0), Ok(()));
            budget.take(client, T0);
        }
        // One mail refills every 3600 / 30 = 120 s.
        assert_eq!(budget.check(client, T0), Err(Spent { retry_after_secs: 120 }));
        assert_eq!(budget.check(ip("192.0.2.2"), T0), Ok(()), "another address has its own budget");
        assert_eq!(budget.check(client, T0 + 119 * SECOND), Err(Spent { retry_after_secs: 1 }));
        assert_eq!(budget.check(client, T0 + 120 * SECOND), Ok(()));
        budget.take(client, T0 + 120 * SECOND);
        assert!(budget.check(client, T0 + 120 * SECOND).is_err(), "refilled continuously, one at a time");
        // An hour later it is whole again.
        let later = T0 + 120 * SECOND + 3_600 * SECOND;
        for _ in 0..30 {
            budget.take(client, later);
        }
        assert!(budget.check(client, later).is_err());
    }

    #[test]
    fn given_a_mail_that_failed_when_its_token_is_given_back_then_the_budget_is_as_before() {
        let mut budget = MailBudget::new(2, 16);
        let client = ip("192.0.2.1");
        budget.take(client, T0);
        budget.take(client, T0);
        assert!(budget.check(client, T0).is_err());
        budget.give_back(client, T0);
        assert_eq!(budget.check(client, T0), Ok(()));
        budget.give_back(client, T0);
        assert!(budget.is_empty(), "a full bucket is forgotten");
        budget.give_back(client, T0);
        assert!(budget.is_empty(), "nothing is given beyond the budget");
    }

    #[test]
    fn given_ipv6_clients_when_keyed_then_a_64_shares_one_budget_and_mapped_ipv4_counts_as_ipv4() {
        let mut budget = MailBudget::new(1, 16);
        budget.take(ip("2001:db8:1:2::1"), T0);
        assert!(budget.check(ip("2001:db8:1:2:ffff::9"), T0).is_err(), "the same /64");
        assert_eq!(budget.check(ip("2001:db8:1:3::1"), T0), Ok(()), "another /64");
        budget.take(ip("::ffff:10.1.2.3"), T0);
        assert!(budget.check(ip("10.1.2.3"), T0).is_err());
    }

    #[test]
    fn given_a_full_map_when_new_addresses_come_then_refilled_buckets_go_first_then_the_fullest_and_the_map_stays_bounded() {
        let mut budget = MailBudget::new(10, 8);
        let spent = ip("198.51.100.1");
        for _ in 0..10 {
            budget.take(spent, T0);
        }
        for n in 2..=8 {
            budget.take(ip(&format!("198.51.100.{n}")), T0);
        }
        assert_eq!(budget.len(), 8);
        // When many more addresses come, the map holds at most 8 and the spent one stays
        for n in 0..100 {
            budget.take(ip(&format!("203.0.113.{n}")), T0 + SECOND);
            assert!(budget.len() <= 8);
        }
        assert!(budget.check(spent, T0 + SECOND).is_err(), "the emptiest bucket is the last to go");
        // Then once the others have refilled, they go before it
        let later = T0 + 400 * SECOND;
        budget.take(ip("192.0.2.200"), later);
        assert_eq!(budget.len(), 2);
        assert!(budget.check(spent, later).is_ok(), "it refilled a mail's worth meanwhile");
    }

    #[test]
    fn given_a_clock_that_went_back_when_checked_then_the_bucket_refills_from_now_on() {
        let mut budget = MailBudget::new(30, 16);
        let client = ip("192.0.2.1");
        let later = T0 + 365 * 24 * 3_600 * SECOND;
        for _ in 0..30 {
            budget.take(client, later);
        }
        assert_eq!(budget.check(client, T0), Err(Spent { retry_after_secs: 120 }));
        assert_eq!(budget.check(client, T0 + 119 * SECOND), Err(Spent { retry_after_secs: 1 }));
        assert_eq!(budget.check(client, T0 + 120 * SECOND), Ok(()), "not a year");
    }
}
