//! The per-address lockout of one-time codes and the cooldown between mails, kept in the vault's
//! sled database so that neither a new session nor a gateway restart resets them.
//!
//! A challenge dies after `otp_attempts` wrong codes (otp.rs), but a new one could be asked for
//! every `email_cooldown`: without this, 5 fresh guesses every 30 s per address forever. Here every
//! wrong code for an address counts (the one that kills its challenge too), whatever challenge,
//! frame or session it came through: once an address has `max_failures` failures within the rolling
//! `window`, no code is mailed to it and no outstanding code of it is checked until the oldest of
//! them leaves the window. A successful login clears the count.
//!
//! Records are keyed by the normalized email in plain form. A keyed hash would keep the addresses
//! out of this tree, but the vault's `embedded/emails` tree in the same database already holds them
//! in plain form, so it would hide nothing from whoever reads the database; the key would also have
//! to outlive restarts (one more secret to keep) and an operator could no longer see or clear the
//! record of an address. An address stays here at most `window` after its last failure (`cooldown`
//! after its last mail when it has none).
//!
//! Bound: a record is its key (≤ 254 bytes) and at most `max_failures` timestamps and one more
//! as JSON: about 400 bytes at the default of 10, under 2 KiB at the maximum of 100. The tree holds
//! at most [`THROTTLE_CAPACITY`] addresses that may be mailed to; a new address beyond it sweeps
//! out expired records first and is refused (`Full`) when none expired. A failure is always
//! recorded, capacity or not (refusing it would lift the lockout), and failures come only from live
//! challenges (at most 10 000 in the process): so at most THROTTLE_CAPACITY + 10 000 records, about
//! 45 MB at the default (220 MB at the maximum). Expired records are swept every
//! [`SWEEP_EVERY_MS`] of service time when a code is mailed.
//!
//! Time is the service's clock (`now_ms`), never the system clock. Every write is flushed before
//! it is acknowledged, as the vault's are.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::service::EmbeddedError;

/// The sled tree (the vault's trees are prefixed `embedded/` as well).
pub const THROTTLE_TREE: &str = "embedded/otp-throttle";
/// The most addresses the tree takes for mailing (see the module's bound).
pub const THROTTLE_CAPACITY: usize = 100_000;
/// How often (in service time) mailing a code sweeps out expired records.
pub const SWEEP_EVERY_MS: u64 = 10 * 60_000;

/// The rules, from `[embedded]`: `otp_lockout_failures`, `otp_lockout_window`, `email_cooldown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThrottleRules {
    pub max_failures: u32,
    pub window_ms: u64,
    pub cooldown_ms: u64,
    pub capacity: usize,
}

impl ThrottleRules {
    pub fn from_config(config: &crate::EmbeddedConfig) -> Self {
        Self {
            max_failures: config.otp_lockout_failures.max(1),
            window_ms: config.otp_lockout_window.as_millis() as u64,
            cooldown_ms: config.email_cooldown.as_millis() as u64,
            capacity: THROTTLE_CAPACITY,
        }
    }
}

#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum ThrottleError {
    #[error("too many wrong codes for this address; retry in {retry_after_secs} s")]
    Locked { retry_after_secs: u64 },
    #[error("a code was mailed to this address moments ago; retry in {retry_after_secs} s")]
    Cooldown { retry_after_secs: u64 },
    #[error("too many codes are being mailed; try again shortly")]
    Full,
    #[error("the lockout's database failed: {0}")]
    Db(String),
}

impl From<sled::Error> for ThrottleError {
    fn from(error: sled::Error) -> Self {
        Self::Db(error.to_string())
    }
}

impl From<ThrottleError> for EmbeddedError {
    fn from(error: ThrottleError) -> Self {
        match error {
            ThrottleError::Locked { retry_after_secs } => Self::Locked { retry_after_secs },
            ThrottleError::Cooldown { retry_after_secs } => Self::Cooldown { retry_after_secs },
            ThrottleError::Full => Self::Busy(error.to_string()),
            ThrottleError::Db(_) => {
                tracing::error!(%error, "the OTP lockout failed");
                Self::Internal
            }
        }
    }
}

/// What recording a failure left of the address's budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Wrong codes the address may still take within the window.
    pub left: u32,
    /// Set when this failure spent the budget: the address is locked for that long.
    pub locked_for_secs: Option<u64>,
}

/// One address's record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    /// When its latest failures happened (ms), oldest first; none older than the window, at most
    /// `max_failures` of them.
    #[serde(default)]
    failures: Vec<u64>,
    /// When a code was last mailed to it.
    #[serde(default)]
    last_mailed_ms: Option<u64>,
}

impl Record {
    /// Until when the address is locked: `max_failures` failures within the window.
    fn locked_until(&self, rules: &ThrottleRules, now: u64) -> Option<u64> {
        let max = rules.max_failures as usize;
        if self.failures.len() < max {
            return None;
        }
        let until = self.failures[self.failures.len() - max].saturating_add(rules.window_ms);
        (until > now).then_some(until)
    }

    fn cooldown_until(&self, rules: &ThrottleRules, now: u64) -> Option<u64> {
        let until = self.last_mailed_ms?.saturating_add(rules.cooldown_ms);
        (until > now).then_some(until)
    }

    /// Times ahead of `now` (the clock went back) become `now`, so that a lock or a cooldown
    /// lasts at most one period from the first look after the step; whether any changed.
    fn clamp_to(&mut self, now: u64) -> bool {
        let ahead = self.failures.iter().chain(&self.last_mailed_ms).any(|&at| at > now);
        if ahead {
            self.failures.iter_mut().chain(&mut self.last_mailed_ms).for_each(|at| *at = (*at).min(now));
        }
        ahead
    }

    /// Drops what no longer counts at `now`.
    fn prune(&mut self, rules: &ThrottleRules, now: u64) {
        self.failures.retain(|&at| at.saturating_add(rules.window_ms) > now);
        let max = rules.max_failures as usize;
        if self.failures.len() > max {
            self.failures.drain(..self.failures.len() - max);
        }
        if self.cooldown_until(rules, now).is_none() {
            self.last_mailed_ms = None;
        }
    }

    fn is_empty(&self) -> bool {
        self.failures.is_empty() && self.last_mailed_ms.is_none()
    }
}

fn secs_until(until: u64, now: u64) -> u64 {
    until.saturating_sub(now).div_ceil(1000).max(1)
}

struct Counts {
    /// Records in the tree (counted once at open, then kept by every insert and remove).
    len: usize,
    next_sweep_ms: u64,
}

pub struct Throttle {
    tree: sled::Tree,
    rules: ThrottleRules,
    /// Serializes the read-modify-write of records (and holds the counts).
    counts: Mutex<Counts>,
}

impl Throttle {
    pub fn open(db: &sled::Db, rules: ThrottleRules) -> Result<Self, ThrottleError> {
        let tree = db.open_tree(THROTTLE_TREE)?;
        let len = tree.len();
        Ok(Self { tree, rules, counts: Mutex::new(Counts { len, next_sweep_ms: 0 }) })
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The record of `email`, pruned at `now` (times ahead of it clamped, and stored so); an
    /// unreadable one is an error (fail closed: the sweep removes it).
    fn read(&self, email: &str, now: u64) -> Result<Option<Record>, ThrottleError> {
        let Some(bytes) = self.tree.get(email.as_bytes())? else {
            return Ok(None);
        };
        let mut record: Record =
            serde_json::from_slice(&bytes).map_err(|error| ThrottleError::Db(format!("unreadable record: {error}")))?;
        if record.clamp_to(now) {
            self.tree.insert(email.as_bytes(), serde_json::to_vec(&record).expect("throttle records serialize"))?;
            self.tree.flush()?;
        }
        record.prune(&self.rules, now);
        Ok(Some(record))
    }

    /// Stores (or, when empty, removes) the record and flushes.
    fn write(&self, counts: &mut Counts, email: &str, record: &Record) -> Result<(), ThrottleError> {
        if record.is_empty() {
            if self.tree.remove(email.as_bytes())?.is_some() {
                counts.len = counts.len.saturating_sub(1);
            }
        } else {
            let bytes = serde_json::to_vec(record).expect("throttle records serialize");
            if self.tree.insert(email.as_bytes(), bytes)?.is_none() {
                counts.len += 1;
            }
        }
        self.tree.flush()?;
        Ok(())
    }

    /// Whether a code may be mailed to `email` now: refused while the address is locked, within
    /// the cooldown of the last mail, or when the tree is full of live records.
    pub fn check_mail(&self, email: &str, now: u64) -> Result<(), ThrottleError> {
        let mut counts = self.counts();
        let record = self.read(email, now)?;
        if let Some(record) = &record {
            if let Some(until) = record.locked_until(&self.rules, now) {
                return Err(ThrottleError::Locked { retry_after_secs: secs_until(until, now) });
            }
            if let Some(until) = record.cooldown_until(&self.rules, now) {
                return Err(ThrottleError::Cooldown { retry_after_secs: secs_until(until, now) });
            }
        }
        if record.is_none() && counts.len >= self.rules.capacity {
            self.sweep_locked(&mut counts, now)?;
            if counts.len >= self.rules.capacity {
                return Err(ThrottleError::Full);
            }
        }
        Ok(())
    }

    /// Records that a code is being mailed to `email` (after `check_mail`); sweeps expired
    /// records now and then.
    pub fn record_mail(&self, email: &str, now: u64) -> Result<(), ThrottleError> {
        let mut counts = self.counts();
        if now >= counts.next_sweep_ms {
            self.sweep_locked(&mut counts, now)?;
        }
        let mut record = self.read(email, now)?.unwrap_or_default();
        record.last_mailed_ms = Some(now);
        self.write(&mut counts, email, &record)
    }

    /// The mail did not go out: the address may be mailed again at once.
    pub fn forget_mail(&self, email: &str, now: u64) -> Result<(), ThrottleError> {
        let mut counts = self.counts();
        if let Some(mut record) = self.read(email, now)? {
            record.last_mailed_ms = None;
            self.write(&mut counts, email, &record)?;
        }
        Ok(())
    }

    /// Refuses while `email` is locked out: none of its outstanding codes is checked, and no code
    /// goes to it as the new address of an email change.
    pub fn check_locked(&self, email: &str, now: u64) -> Result<(), ThrottleError> {
        let _counts = self.counts();
        match self.read(email, now)?.and_then(|record| record.locked_until(&self.rules, now)) {
            Some(until) => Err(ThrottleError::Locked { retry_after_secs: secs_until(until, now) }),
            None => Ok(()),
        }
    }

    /// Counts a wrong code for `email` (always recorded, whatever the capacity).
    pub fn record_failure(&self, email: &str, now: u64) -> Result<Budget, ThrottleError> {
        let mut counts = self.counts();
        let mut record = self.read(email, now)?.unwrap_or_default();
        record.failures.push(now);
        record.prune(&self.rules, now);
        self.write(&mut counts, email, &record)?;
        let left = self.rules.max_failures.saturating_sub(record.failures.len() as u32);
        let locked_for_secs = record.locked_until(&self.rules, now).map(|until| secs_until(until, now));
        Ok(Budget { left, locked_for_secs })
    }

    /// A login with a code of `email` succeeded: its failures no longer count.
    pub fn reset_failures(&self, email: &str, now: u64) -> Result<(), ThrottleError> {
        let mut counts = self.counts();
        if let Some(mut record) = self.read(email, now)?
            && !record.failures.is_empty()
        {
            record.failures.clear();
            self.write(&mut counts, email, &record)?;
        }
        Ok(())
    }

    /// Removes every record that no longer counts (and any unreadable one); gives how many.
    pub fn sweep(&self, now: u64) -> Result<usize, ThrottleError> {
        let mut counts = self.counts();
        self.sweep_locked(&mut counts, now)
    }

    fn sweep_locked(&self, counts: &mut Counts, now: u64) -> Result<usize, ThrottleError> {
        let mut removed = 0;
        let mut len = 0;
        for entry in self.tree.iter() {
            let (key, bytes) = entry?;
            let expired = match serde_json::from_slice::<Record>(&bytes) {
                Ok(mut record) => {
                    record.prune(&self.rules, now);
                    record.is_empty()
                }
                Err(_) => true,
            };
            if expired {
                self.tree.remove(key)?;
                removed += 1;
            } else {
                len += 1;
            }
        }
        if removed > 0 {
            self.tree.flush()?;
        }
        counts.len = len;
        counts.next_sweep_ms = now.saturating_add(SWEEP_EVERY_MS);
        Ok(removed)
    }

    /// How many records the tree holds.
    pub fn len(&self) -> usize {
        self.counts().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A wait in words for the visitor ("45 seconds", "12 minutes", "23 hours"), rounded up.
pub fn wait_in_words(secs: u64) -> String {
    let (count, unit) = match secs {
        0..=59 => (secs.max(1), "second"),
        60..=3599 => (secs.div_ceil(60), "minute"),
        _ => (secs.div_ceil(3600), "hour"),
    };
    if count == 1 { format!("1 {unit}") } else { format!("{count} {unit}s") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Clock, ManualClock};

    const SECOND: u64 = 1_000;
    const HOUR: u64 = 3_600 * SECOND;
    const DAY: u64 = 24 * HOUR;
    const VICTIM: &str = "victim@example.com";

    fn rules() -> ThrottleRules {
        ThrottleRules { max_failures: 10, window_ms: DAY, cooldown_ms: 30 * SECOND, capacity: 4 }
    }

    fn throttle() -> (Throttle, sled::Db, ManualClock) {
        let db = sled::Config::new().temporary(true).open().unwrap();
        (Throttle::open(&db, rules()).unwrap(), db, ManualClock::at(1_700_000_000_000))
    }

    /// `count` wrong codes, one second apart.
    fn fail(throttle: &Throttle, clock: &ManualClock, email: &str, count: u32) -> Budget {
        let mut budget = None;
        for _ in 0..count {
            budget = Some(throttle.record_failure(email, clock.now_ms()).unwrap());
            clock.advance_ms(SECOND);
        }
        budget.expect("at least one failure")
    }

    #[test]
    fn given_a_fresh_address_when_mailed_then_it_may_be_again_only_after_the_cooldown() {
        let (throttle, _db, clock) = throttle();
        // Given a fresh address, mailing is allowed
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Ok(()));
        // When a code is mailed
        throttle.record_mail(VICTIM, clock.now_ms()).unwrap();
        // Then another within 30 s is refused, saying how long to wait
        clock.advance_ms(10 * SECOND);
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Err(ThrottleError::Cooldown { retry_after_secs: 20 }));
        // (another address is not held)
        assert_eq!(throttle.check_mail("other@example.com", clock.now_ms()), Ok(()));
        // And after it, allowed again
        clock.advance_ms(20 * SECOND);
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Ok(()));
    }

    #[test]
    fn given_failures_across_challenges_when_the_budget_is_spent_then_mail_and_verify_are_refused_until_the_oldest_leaves_the_window() {
        let (throttle, _db, clock) = throttle();
        let first = clock.now_ms();
        // Given nine wrong codes (two challenges' worth, less one)
        let budget = fail(&throttle, &clock, VICTIM, 9);
        assert_eq!(budget, Budget { left: 1, locked_for_secs: None });
        // the address may still be mailed and its codes checked
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Ok(()));
        assert_eq!(throttle.check_locked(VICTIM, clock.now_ms()), Ok(()));

        // When the tenth comes
        let budget = throttle.record_failure(VICTIM, clock.now_ms()).unwrap();
        assert_eq!(budget, Budget { left: 0, locked_for_secs: Some((first + DAY - clock.now_ms()) / SECOND) });

        // Then mailing and checking are refused until a day after the first failure
        let locked = ThrottleError::Locked { retry_after_secs: (first + DAY - clock.now_ms()) / SECOND };
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Err(locked.clone()));
        assert_eq!(throttle.check_locked(VICTIM, clock.now_ms()), Err(locked));
        assert_eq!(throttle.check_mail("other@example.com", clock.now_ms()), Ok(()), "only that address is locked");
        clock.advance_ms(first + DAY - SECOND - clock.now_ms());
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Err(ThrottleError::Locked { retry_after_secs: 1 }));

        // And once the first failure is a day old, one more is allowed (a rolling window), no more
        clock.advance_ms(SECOND);
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Ok(()));
        assert_eq!(throttle.check_locked(VICTIM, clock.now_ms()), Ok(()));
        let budget = throttle.record_failure(VICTIM, clock.now_ms()).unwrap();
        assert_eq!(budget, Budget { left: 0, locked_for_secs: Some(1) }, "locked until the second failure is a day old");
    }

    #[test]
    fn given_failures_when_a_login_succeeds_then_the_count_starts_again() {
        let (throttle, _db, clock) = throttle();
        fail(&throttle, &clock, VICTIM, 9);
        throttle.reset_failures(VICTIM, clock.now_ms()).unwrap();
        assert_eq!(fail(&throttle, &clock, VICTIM, 9), Budget { left: 1, locked_for_secs: None });
        assert_eq!(throttle.check_locked(VICTIM, clock.now_ms()), Ok(()));
        assert_eq!(fail(&throttle, &clock, VICTIM, 1).left, 0);
        assert!(matches!(throttle.check_locked(VICTIM, clock.now_ms()), Err(ThrottleError::Locked { .. })));
    }

    #[test]
    fn given_a_lock_and_a_cooldown_when_the_database_is_reopened_then_both_hold() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::at(1_700_000_000_000);
        {
            let db = sled::open(dir.path()).unwrap();
            let throttle = Throttle::open(&db, rules()).unwrap();
            fail(&throttle, &clock, VICTIM, 10);
            throttle.record_mail("other@example.com", clock.now_ms()).unwrap();
            // (the positive probe: a third address is free before the restart)
            assert_eq!(throttle.check_mail("third@example.com", clock.now_ms()), Ok(()));
        }
        // When the process starts again on the same files
        let db = crate::reopen_sled(dir.path());
        let throttle = Throttle::open(&db, rules()).unwrap();
        assert_eq!(throttle.len(), 2);
        assert_eq!(throttle.check_mail("third@example.com", clock.now_ms()), Ok(()));
        assert!(matches!(throttle.check_mail(VICTIM, clock.now_ms()), Err(ThrottleError::Locked { .. })));
        assert_eq!(throttle.check_mail("other@example.com", clock.now_ms()), Err(ThrottleError::Cooldown { retry_after_secs: 30 }));
    }

    #[test]
    fn given_a_full_tree_when_a_new_address_is_mailed_then_expired_records_are_swept_or_it_is_refused() {
        let (throttle, _db, clock) = throttle();
        // Given four addresses mailed just now (the capacity)
        for n in 0..4 {
            let email = format!("a{n}@example.com");
            assert_eq!(throttle.check_mail(&email, clock.now_ms()), Ok(()));
            throttle.record_mail(&email, clock.now_ms()).unwrap();
        }
        assert_eq!(throttle.len(), 4);
        // When a fifth is asked for within the cooldown of all four, it is refused
        assert_eq!(throttle.check_mail("new@example.com", clock.now_ms()), Err(ThrottleError::Full));
        // but a failure is always recorded (refusing it would lift the lockout)
        throttle.record_failure("a0@example.com", clock.now_ms()).unwrap();
        throttle.record_failure("new@example.com", clock.now_ms()).unwrap();
        assert_eq!(throttle.len(), 5);
        // Then once the cooldowns pass, the sweep makes room and keeps only what still counts
        clock.advance_ms(30 * SECOND);
        assert_eq!(throttle.check_mail("fresh@example.com", clock.now_ms()), Ok(()));
        assert_eq!(throttle.len(), 2, "the two addresses with a failure in the window stay");
        clock.advance_ms(DAY);
        assert_eq!(throttle.sweep(clock.now_ms()).unwrap(), 2);
        assert!(throttle.is_empty());
    }

    #[test]
    fn given_mails_over_time_when_the_sweep_is_due_then_expired_records_go_without_a_full_tree() {
        let (throttle, _db, clock) = throttle();
        throttle.record_mail("a@example.com", clock.now_ms()).unwrap();
        clock.advance_ms(SWEEP_EVERY_MS);
        throttle.record_mail("b@example.com", clock.now_ms()).unwrap();
        assert_eq!(throttle.len(), 1, "a@'s cooldown is long over");
    }

    #[test]
    fn given_a_mail_that_failed_when_forgotten_then_the_address_may_be_mailed_at_once_but_its_failures_stay() {
        let (throttle, _db, clock) = throttle();
        fail(&throttle, &clock, VICTIM, 3);
        throttle.record_mail(VICTIM, clock.now_ms()).unwrap();
        assert!(matches!(throttle.check_mail(VICTIM, clock.now_ms()), Err(ThrottleError::Cooldown { .. })));
        throttle.forget_mail(VICTIM, clock.now_ms()).unwrap();
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Ok(()));
        assert_eq!(fail(&throttle, &clock, VICTIM, 1).left, 6);
    }

    #[test]
    fn given_a_clock_that_went_back_when_checked_then_a_lock_or_cooldown_lasts_at_most_one_period() {
        let (throttle, _db, clock) = throttle();
        let later = clock.now_ms() + 365 * DAY;
        throttle.record_mail(VICTIM, later).unwrap();
        for _ in 0..10 {
            throttle.record_failure(VICTIM, later).unwrap();
        }
        // Then the first look counts them from now: a day's lock (and 30 s of cooldown under it)
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Err(ThrottleError::Locked { retry_after_secs: DAY / SECOND }));
        clock.advance_ms(DAY - SECOND);
        assert_eq!(throttle.check_locked(VICTIM, clock.now_ms()), Err(ThrottleError::Locked { retry_after_secs: 1 }));
        // and not a year
        clock.advance_ms(SECOND);
        assert_eq!(throttle.check_mail(VICTIM, clock.now_ms()), Ok(()));
    }

    #[test]
    fn given_waits_when_put_in_words_then_they_round_up_to_the_unit() {
        assert_eq!(wait_in_words(1), "1 second");
        assert_eq!(wait_in_words(45), "45 seconds");
        assert_eq!(wait_in_words(61), "2 minutes");
        assert_eq!(wait_in_words(3600), "1 hour");
        assert_eq!(wait_in_words(DAY / SECOND - 1), "24 hours");
    }
}
