//! Per-connection command rate limiting and per-IP connection counting.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A token bucket: `rate` tokens per second, at most `burst` saved up.
#[derive(Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(rate_per_second: u32, burst: u32) -> Self {
        Self { rate: rate_per_second as f64, burst: burst.max(1) as f64, tokens: burst.max(1) as f64, last: Instant::now() }
    }

    /// Takes a token if one is available at `now`.
    pub fn try_take_at(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    pub fn try_take(&mut self) -> bool {
        self.try_take_at(Instant::now())
    }
}

/// Open connections per client IP and in total. Taking a slot returns a guard that frees it.
#[derive(Debug, Clone)]
pub struct ConnectionCounter {
    inner: Arc<Mutex<CounterInner>>,
    per_ip: usize,
    total: usize,
}

#[derive(Debug, Default)]
struct CounterInner {
    by_ip: HashMap<IpAddr, usize>,
    total: usize,
}

#[derive(Debug, PartialEq, Eq)]
pub enum SlotRefusal {
    PerIp,
    Total,
}

#[derive(Debug)]
pub struct ConnectionSlot {
    counter: ConnectionCounter,
    ip: IpAddr,
}

impl ConnectionCounter {
    pub fn new(per_ip: usize, total: usize) -> Self {
        Self { inner: Arc::default(), per_ip, total }
    }

    pub fn acquire(&self, ip: IpAddr) -> Result<ConnectionSlot, SlotRefusal> {
        let mut inner = self.inner.lock().expect("counter lock");
        if inner.total >= self.total {
            return Err(SlotRefusal::Total);
        }
        let count = inner.by_ip.entry(ip).or_default();
        if *count >= self.per_ip {
            return Err(SlotRefusal::PerIp);
        }
        *count += 1;
        inner.total += 1;
        Ok(ConnectionSlot { counter: self.clone(), ip })
    }

    pub fn open(&self) -> usize {
        self.inner.lock().expect("counter lock").total
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut inner = self.counter.inner.lock().expect("counter lock");
        inner.total = inner.total.saturating_sub(1);
        if let Some(count) = inner.by_ip.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                inner.by_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_bucket_allows_a_burst_then_the_rate() {
        let start = Instant::now();
        let mut bucket = TokenBucket { rate: 10.0, burst: 3.0, tokens: 3.0, last: start };
        assert!((0..3).all(|_| bucket.try_take_at(start)));
        assert!(!bucket.try_take_at(start));
        assert!(bucket.try_take_at(start + Duration::from_millis(100)));
        assert!(!bucket.try_take_at(start + Duration::from_millis(100)));
    }

    #[test]
    fn slots_are_counted_per_ip_and_freed_on_drop() {
        let counter = ConnectionCounter::new(2, 3);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let s1 = counter.acquire(a).unwrap();
        let _s2 = counter.acquire(a).unwrap();
        assert_eq!(counter.acquire(a).unwrap_err(), SlotRefusal::PerIp);
        let _s3 = counter.acquire(b).unwrap();
        assert_eq!(counter.acquire(b).unwrap_err(), SlotRefusal::Total);
        drop(s1);
        assert!(counter.acquire(a).is_ok());
    }
}
