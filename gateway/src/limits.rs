//! What one client may hold: sockets per address and in total (bounded by the process's open-file
//! limit), WebSocket connections per address and in total, commands per second per session, new
//! sessions per minute per address, and resumes per minute per address and per session.
//!
//! The counting is a plain data structure ([`SocketTable`], [`SocketLimits::from_budget`]); the
//! shell around it ([`Sockets`], [`SocketSlot`], [`raise_open_file_limit`]) locks, frees slots on
//! drop and reads the process's limits.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use vestibule_store::SessionId;

/// A token bucket: `rate` tokens per second, at most `burst` saved up.
#[derive(Debug)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(rate_per_second: f64, burst: u32) -> Self {
        Self::new_at(rate_per_second, burst, Instant::now())
    }

    fn new_at(rate_per_second: f64, burst: u32, now: Instant) -> Self {
        Self { rate: rate_per_second, burst: burst.max(1) as f64, tokens: burst.max(1) as f64, last: now }
    }

    /// Takes a token if one is available at `now`.
    pub fn try_take_at(&mut self, now: Instant) -> bool {
        self.refill_at(now);
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

    fn refill_at(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
    }

    /// Whether any token is left at `now` (after [`Self::spend_at`] the bucket may be in debt).
    fn has_tokens_at(&mut self, now: Instant) -> bool {
        self.refill_at(now);
        self.tokens > 0.0
    }

    /// Spends `amount` tokens at `now`, going into debt if there are fewer: what was already
    /// done (bytes written) is counted in full, and the debt is refilled before anything more.
    fn spend_at(&mut self, amount: f64, now: Instant) {
        self.refill_at(now);
        self.tokens -= amount;
    }

    /// Whether it has refilled to its burst by `now`: it is then the same as a new bucket.
    fn is_full_at(&self, now: Instant) -> bool {
        self.tokens + now.saturating_duration_since(self.last).as_secs_f64() * self.rate >= self.burst
    }
}

/// One token bucket per key, kept while anyone holds it and after that until it has refilled (a new
/// one would then be the same).
#[derive(Debug)]
pub struct KeyedBuckets<K> {
    rate_per_second: f64,
    burst: u32,
    buckets: Mutex<HashMap<K, Arc<Mutex<TokenBucket>>>>,
}

/// One command bucket per session, shared by all of the session's connections, so that opening
/// more sockets on a session does not multiply its rate, and kept after they close until it has
/// refilled, so that closing and reopening them does not reset it either.
pub type SessionRateLimits = KeyedBuckets<SessionId>;

/// The rates of `hello`s a gateway takes:
/// - new sessions per client address ([`client_key`]): creating sessions costs the event log a
///   write and keeps data until retention expires them, so one client must not create them as
///   fast as it can open sockets (`limits.sessions_per_minute`, `session_burst`);
/// - resumes per client address (`limits.resumes_per_minute`, `resume_burst`) and per session
///   (`limits.session_resumes_per_minute`, `session_resume_burst`): a resume's welcome may carry
///   the whole state (hundreds of KB), built by the session's actor and, in a cluster, published
///   over NATS by its owner; one client resuming its own large session over and over overloaded
///   the owner of a cluster (outside review).
pub struct HelloRateLimits {
    new_sessions: KeyedBuckets<IpAddr>,
    resumes_by_client: KeyedBuckets<IpAddr>,
    resumes_by_session: KeyedBuckets<SessionId>,
}

impl HelloRateLimits {
    pub fn new(limits: &crate::config::Limits) -> Self {
        let per_second = |per_minute: u32| f64::from(per_minute) / 60.0;
        Self {
            new_sessions: KeyedBuckets::new(per_second(limits.sessions_per_minute), limits.session_burst),
            resumes_by_client: KeyedBuckets::new(per_second(limits.resumes_per_minute), limits.resume_burst),
            resumes_by_session: KeyedBuckets::new(per_second(limits.session_resumes_per_minute), limits.session_resume_burst),
        }
    }

    /// Takes a new session from `client`'s bucket if one is available now.
    pub fn try_new_session(&self, client: IpAddr) -> bool {
        self.new_sessions.try_take(client_key(client))
    }

    /// Takes a resume from `client`'s bucket (`limits.resumes_per_minute`) if one is available now.
    pub fn try_resume_from(&self, client: IpAddr) -> bool {
        self.resumes_by_client.try_take(client_key(client))
    }

    /// Takes a resume from `session`'s bucket (`limits.session_resumes_per_minute`) if one is
    /// available now.
    pub fn try_resume_of(&self, session: SessionId) -> bool {
        self.resumes_by_session.try_take(session)
    }
}

impl<K: Hash + Eq + Copy> KeyedBuckets<K> {
    pub fn new(rate_per_second: f64, burst: u32) -> Self {
        Self { rate_per_second, burst, buckets: Mutex::default() }
    }

    /// The key's bucket: the one held or last held for it, or a full one.
    pub fn bucket(&self, key: K) -> Arc<Mutex<TokenBucket>> {
        self.bucket_at(key, Instant::now())
    }

    /// Takes a token from the key's bucket if one is available now.
    pub fn try_take(&self, key: K) -> bool {
        let now = Instant::now();
        self.bucket_at(key, now).lock().expect("bucket lock").try_take_at(now)
    }

    fn bucket_at(&self, key: K, now: Instant) -> Arc<Mutex<TokenBucket>> {
        let mut buckets = self.buckets.lock().expect("bucket lock");
        if let Some(bucket) = buckets.get(&key) {
            return bucket.clone();
        }
        // Now and then (amortized: the map at most doubles between sweeps), forget the buckets
        // nobody holds that have refilled. Those kept are the keys that took a token within the
        // last `burst / rate` seconds.
        if buckets.len() >= 64 && buckets.len().is_power_of_two() {
            buckets.retain(|_, b| Arc::strong_count(b) > 1 || !b.lock().expect("bucket lock").is_full_at(now));
        }
        let bucket = Arc::new(Mutex::new(TokenBucket::new_at(self.rate_per_second, self.burst, now)));
        buckets.insert(key, bucket.clone());
        bucket
    }

    /// Sessions with a bucket entry (live or not yet swept), for tests.
    pub fn tracked(&self) -> usize {
        self.buckets.lock().expect("bucket lock").len()
    }
}

/// Bytes of event log per client address ([`client_key`]), across all its sessions:
/// `[limits] client_log_bytes_per_hour`, all of which may be written at once. Once spent, the
/// address's commands are refused until it has refilled; bytes a write took past the share are a
/// debt paid before the next one.
pub struct ClientLogShares {
    buckets: KeyedBuckets<IpAddr>,
}

impl ClientLogShares {
    pub fn per_hour(bytes: u64) -> Self {
        let burst = u32::try_from(bytes).unwrap_or(u32::MAX);
        Self { buckets: KeyedBuckets::new(bytes as f64 / 3600.0, burst) }
    }

    pub fn may_write_at(&self, client: IpAddr, now: Instant) -> bool {
        self.buckets.bucket_at(client_key(client), now).lock().expect("bucket lock").has_tokens_at(now)
    }

    pub fn wrote_at(&self, client: IpAddr, bytes: u64, now: Instant) {
        self.buckets.bucket_at(client_key(client), now).lock().expect("bucket lock").spend_at(bytes as f64, now);
    }
}

/// The address a client is counted under: an IPv4 address, or the /64 an IPv6 address belongs to
/// (one subscriber is usually given a whole /64, so counting single IPv6 addresses would limit
/// nothing).
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

/// What a socket carries: plain HTTP (until it is upgraded) or a WebSocket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SocketKind {
    Http,
    WebSocket,
}

/// Why a socket or an upgrade was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotRefusal {
    /// This address holds as many as it may.
    PerIp,
    /// The server holds as many as it may.
    Total,
}

/// How many sockets of each kind may be open, per client address and in total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketLimits {
    pub http_per_ip: usize,
    pub http_total: usize,
    pub websocket_per_ip: usize,
    pub websocket_total: usize,
}

/// Open file descriptors the sockets may use: the soft open-file limit minus what the process
/// already had open when it started serving and minus a reserve for the event log and friends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorBudget {
    pub open_file_limit: u64,
    pub in_use: u64,
    pub reserved: u64,
}

impl DescriptorBudget {
    pub fn for_sockets(&self) -> u64 {
        self.open_file_limit.saturating_sub(self.in_use).saturating_sub(self.reserved)
    }
}

/// Each plain HTTP socket may hold a second descriptor: a static file being sent.
const DESCRIPTORS_PER_HTTP_SOCKET: u64 = 2;
/// Plain HTTP sockets get at most this share of the budget; WebSockets get the rest.
const HTTP_SHARE_OF_BUDGET: u64 = 4;

impl SocketLimits {
    /// The configured limits, lowered so that every socket the server admits, each with the files
    /// it may open, fits in `budget`: with all of them open, the event log still finds its
    /// reserved descriptors free. Fails when the budget cannot hold a useful server.
    #[allow(clippy::too_many_arguments)]
    pub fn from_budget(
        budget: DescriptorBudget,
        http_per_ip: usize,
        max_http: usize,
        websocket_per_ip: usize,
        max_websockets: usize,
    ) -> Result<Self, String> {
        let available = budget.for_sockets();
        let http_total = (max_http as u64).min(available / HTTP_SHARE_OF_BUDGET / DESCRIPTORS_PER_HTTP_SOCKET);
        let websocket_total = (max_websockets as u64).min(available.saturating_sub(http_total * DESCRIPTORS_PER_HTTP_SOCKET));
        if http_total < 4 || websocket_total < 4 {
            return Err(format!(
                "the open-file limit ({}) leaves too few descriptors for sockets: {} in use, {} reserved (limits.reserved_fds)",
                budget.open_file_limit, budget.in_use, budget.reserved
            ));
        }
        let http_total = http_total as usize;
        let websocket_total = websocket_total as usize;
        Ok(Self {
            http_per_ip: http_per_ip.min(http_total),
            http_total,
            websocket_per_ip: websocket_per_ip.min(websocket_total),
            websocket_total,
        })
    }
}

/// Open sockets by kind and client address.
#[derive(Debug, Default)]
pub struct SocketTable {
    http: KindCount,
    websocket: KindCount,
}

#[derive(Debug, Default)]
struct KindCount {
    by_key: HashMap<IpAddr, usize>,
    total: usize,
}

impl KindCount {
    /// Room for one more socket of `key` (none: in the total only).
    fn check(&self, key: Option<IpAddr>, per_ip: usize, total: usize) -> Result<(), SlotRefusal> {
        if self.total >= total {
            return Err(SlotRefusal::Total);
        }
        if key.is_some_and(|key| self.by_key.get(&key).copied().unwrap_or(0) >= per_ip) {
            return Err(SlotRefusal::PerIp);
        }
        Ok(())
    }

    /// One more socket, of `key` (none: counted in the total only).
    fn add(&mut self, key: Option<IpAddr>) {
        if let Some(key) = key {
            *self.by_key.entry(key).or_default() += 1;
        }
        self.total += 1;
    }

    fn remove(&mut self, key: Option<IpAddr>) {
        self.total = self.total.saturating_sub(1);
        if let Some(key) = key
            && let Some(count) = self.by_key.get_mut(&key)
        {
            *count -= 1;
            if *count == 0 {
                self.by_key.remove(&key);
            }
        }
    }
}

impl SocketTable {
    /// A new connection from `key`: counted as plain HTTP.
    pub fn admit(&mut self, limits: &SocketLimits, key: IpAddr) -> Result<(), SlotRefusal> {
        self.http.check(Some(key), limits.http_per_ip, limits.http_total)?;
        self.http.add(Some(key));
        Ok(())
    }

    /// A new connection from a trusted reverse proxy: counted as plain HTTP, towards the total only
    /// (it carries many clients, known only once their requests arrive; and not under its own
    /// address, whose other hosts, an IPv6 /64's, are clients of their own).
    pub fn admit_proxied(&mut self, limits: &SocketLimits) -> Result<(), SlotRefusal> {
        self.http.check(None, limits.http_per_ip, limits.http_total)?;
        self.http.add(None);
        Ok(())
    }

    /// Whether a plain HTTP socket from `key` could become a WebSocket now.
    pub fn can_upgrade(&self, limits: &SocketLimits, key: IpAddr) -> Result<(), SlotRefusal> {
        self.websocket.check(Some(key), limits.websocket_per_ip, limits.websocket_total)
    }

    /// A plain HTTP socket from `key` becomes a WebSocket of `client` (the same address, or the
    /// one a trusted proxy forwarded; none: in the total only): it leaves the HTTP count of `key`,
    /// and counts for `client`.
    pub fn upgrade(&mut self, limits: &SocketLimits, key: Option<IpAddr>, client: Option<IpAddr>) -> Result<(), SlotRefusal> {
        self.websocket.check(client, limits.websocket_per_ip, limits.websocket_total)?;
        self.http.remove(key);
        self.websocket.add(client);
        Ok(())
    }

    pub fn release(&mut self, kind: SocketKind, key: Option<IpAddr>) {
        match kind {
            SocketKind::Http => self.http.remove(key),
            SocketKind::WebSocket => self.websocket.remove(key),
        }
    }

    pub fn open(&self, kind: SocketKind) -> usize {
        match kind {
            SocketKind::Http => self.http.total,
            SocketKind::WebSocket => self.websocket.total,
        }
    }
}

/// The socket table of a running server.
#[derive(Debug, Clone)]
pub struct Sockets {
    table: Arc<Mutex<SocketTable>>,
    limits: SocketLimits,
}

/// A socket's place in the table, freed when the socket is dropped.
#[derive(Debug)]
pub struct SocketSlot {
    sockets: Sockets,
    /// The address it counts for; none for a trusted proxy's plain HTTP socket (the total only).
    key: Option<IpAddr>,
    kind: SocketKind,
}

impl Sockets {
    pub fn new(limits: SocketLimits) -> Self {
        Self { table: Arc::default(), limits }
    }

    pub fn limits(&self) -> &SocketLimits {
        &self.limits
    }

    /// Admits a just-accepted socket from `ip` as plain HTTP; from a trusted reverse proxy
    /// (`proxied`), towards the total only.
    pub fn admit(&self, ip: IpAddr, proxied: bool) -> Result<SocketSlot, SlotRefusal> {
        let mut table = self.table.lock().expect("socket table lock");
        let key = if proxied {
            table.admit_proxied(&self.limits)?;
            None
        } else {
            let key = client_key(ip);
            table.admit(&self.limits, key)?;
            Some(key)
        };
        Ok(SocketSlot { sockets: self.clone(), key, kind: SocketKind::Http })
    }

    /// Whether an upgrade from `ip` would be admitted now (for `/ws/check`).
    pub fn can_upgrade(&self, ip: IpAddr) -> Result<(), SlotRefusal> {
        self.table.lock().expect("socket table lock").can_upgrade(&self.limits, client_key(ip))
    }

    pub fn open(&self, kind: SocketKind) -> usize {
        self.table.lock().expect("socket table lock").open(kind)
    }
}

impl SocketSlot {
    pub fn kind(&self) -> SocketKind {
        self.kind
    }

    /// Counts this socket as a WebSocket of `client` from now on (the socket's peer, or the address
    /// a trusted proxy forwarded; none known: the address it was admitted under), if that address
    /// and the server have room.
    pub fn upgrade(&mut self, client: Option<IpAddr>) -> Result<(), SlotRefusal> {
        if self.kind == SocketKind::WebSocket {
            return Ok(());
        }
        let client = client.map(client_key).or(self.key);
        self.sockets.table.lock().expect("socket table lock").upgrade(&self.sockets.limits, self.key, client)?;
        self.key = client;
        self.kind = SocketKind::WebSocket;
        Ok(())
    }
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        self.sockets.table.lock().expect("socket table lock").release(self.kind, self.key);
    }
}

/// Raises the soft open-file limit to the hard limit (as Go's runtime and most servers do: the soft
/// default of 1024 is a relic) and returns the soft limit now in force.
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Ok(limit.rlim_cur as u64)
}

/// Descriptors the process has open now (from /proc; 64 if it cannot be read).
pub fn descriptors_in_use() -> u64 {
    // The directory handle read_dir opens is one of the entries it lists.
    std::fs::read_dir("/proc/self/fd").map_or(64, |entries| entries.count().saturating_sub(1) as u64)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn given_an_address_that_wrote_its_share_when_time_passes_then_it_writes_again_once_its_debt_is_refilled() {
        let shares = ClientLogShares::per_hour(3_600_000); // 1,000 bytes a second
        let t0 = Instant::now();
        let (a, b): (IpAddr, IpAddr) = ([192, 0, 2, 1].into(), [192, 0, 2, 2].into());
        assert!(shares.may_write_at(a, t0));
        // Given: the whole share at once, and 5,000 bytes past it (a write is counted in full).
        shares.wrote_at(a, 3_605_000, t0);
        assert!(!shares.may_write_at(a, t0));
        assert!(!shares.may_write_at(a, t0 + Duration::from_secs(4)), "4,000 of the 5,000 bytes of debt refilled");
        assert!(shares.may_write_at(a, t0 + Duration::from_secs(6)));
        // Another address has its own share; the addresses of one IPv6 /64 share one.
        assert!(shares.may_write_at(b, t0));
        let (v6, same_64): (IpAddr, IpAddr) = ("2001:db8::1".parse().unwrap(), "2001:db8::ffff".parse().unwrap());
        shares.wrote_at(v6, 3_700_000, t0);
        assert!(!shares.may_write_at(same_64, t0));
        assert!(shares.may_write_at("2001:db8:0:1::1".parse().unwrap(), t0), "another /64");
    }

    #[test]
    fn resumes_are_counted_per_address_and_per_session_apart_from_new_sessions() {
        let limits = crate::config::Limits {
            resume_burst: 3,
            session_resume_burst: 2,
            sessions_per_minute: 1,
            session_burst: 1,
            ..Default::default()
        };
        let hellos = HelloRateLimits::new(&limits);
        let (a, b): (IpAddr, IpAddr) = ([192, 0, 2, 1].into(), [192, 0, 2, 2].into());
        assert!((0..3).all(|_| hellos.try_resume_from(a)));
        assert!(!hellos.try_resume_from(a), "the address's burst is spent");
        assert!(hellos.try_resume_from(b), "another address has its own");
        let (s, t) = (SessionId::random(), SessionId::random());
        assert!(hellos.try_resume_of(s) && hellos.try_resume_of(s));
        assert!(!hellos.try_resume_of(s), "the session's burst is spent");
        assert!(hellos.try_resume_of(t), "another session has its own");
        assert!(hellos.try_new_session(a), "new sessions are counted apart");
        assert!(!hellos.try_new_session(a));
    }

    #[test]
    fn the_bucket_allows_a_burst_then_the_rate() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new_at(10.0, 3, start);
        assert!((0..3).all(|_| bucket.try_take_at(start)));
        assert!(!bucket.try_take_at(start));
        assert!(bucket.try_take_at(start + Duration::from_millis(100)));
        assert!(!bucket.try_take_at(start + Duration::from_millis(100)));
    }

    #[test]
    fn connections_of_one_session_share_its_bucket() {
        let limits = SessionRateLimits::new(1.0, 2);
        let session = SessionId::random();
        let a = limits.bucket(session);
        let b = limits.bucket(session);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(a.lock().unwrap().try_take());
        assert!(b.lock().unwrap().try_take());
        assert!(!a.lock().unwrap().try_take(), "two connections drew from one burst of 2");
        assert!(!Arc::ptr_eq(&a, &limits.bucket(SessionId::random())));
    }

    #[test]
    fn buckets_nobody_holds_are_swept_once_refilled() {
        let limits = SessionRateLimits::new(1.0, 1);
        let start = Instant::now();
        for _ in 0..1000 {
            drop(limits.bucket_at(SessionId::random(), start));
        }
        assert!(limits.tracked() <= 128, "{} entries kept", limits.tracked());
    }

    #[test]
    fn given_a_session_that_spent_its_burst_when_its_connections_close_and_a_new_one_opens_then_the_bucket_is_still_spent() {
        let limits = SessionRateLimits::new(1.0, 2);
        let start = Instant::now();
        let session = SessionId::random();
        let first = limits.bucket_at(session, start);
        assert!(first.lock().unwrap().try_take_at(start));
        assert!(first.lock().unwrap().try_take_at(start));
        drop(first);
        // Many other sessions come and go meanwhile, so that sweeps run.
        for _ in 0..300 {
            drop(limits.bucket_at(SessionId::random(), start));
        }
        let again = limits.bucket_at(session, start);
        assert!(!again.lock().unwrap().try_take_at(start), "reconnecting refilled the burst");
        assert!(again.lock().unwrap().try_take_at(start + std::time::Duration::from_secs(1)), "it refills at its rate");
        drop(again);

        // Once refilled, it is forgotten at the next sweep.
        let later = start + std::time::Duration::from_secs(10);
        for _ in 0..300 {
            drop(limits.bucket_at(SessionId::random(), later));
        }
        assert!(limits.tracked() < 300, "{} entries kept", limits.tracked());
    }

    fn limits() -> SocketLimits {
        SocketLimits { http_per_ip: 2, http_total: 3, websocket_per_ip: 1, websocket_total: 2 }
    }

    #[test]
    fn sockets_are_counted_per_address_and_in_total_and_an_upgrade_moves_one_to_the_websockets() {
        let l = limits();
        let mut t = SocketTable::default();
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        t.admit(&l, a).unwrap();
        t.admit(&l, a).unwrap();
        assert_eq!(t.admit(&l, a), Err(SlotRefusal::PerIp));
        t.admit(&l, b).unwrap();
        assert_eq!(t.admit(&l, b), Err(SlotRefusal::Total));
        t.upgrade(&l, Some(a), Some(a)).unwrap();
        assert_eq!((t.open(SocketKind::Http), t.open(SocketKind::WebSocket)), (2, 1));
        assert_eq!(t.can_upgrade(&l, a), Err(SlotRefusal::PerIp), "a has its one WebSocket");
        t.admit(&l, a).unwrap();
        t.upgrade(&l, Some(b), Some(b)).unwrap();
        t.admit(&l, b).unwrap();
        assert_eq!(t.upgrade(&l, Some(b), Some(b)), Err(SlotRefusal::Total));
        t.release(SocketKind::WebSocket, Some(a));
        assert_eq!(t.can_upgrade(&l, a), Ok(()));
    }

    #[test]
    fn a_trusted_proxy_s_sockets_count_towards_the_total_and_each_websocket_for_its_forwarded_client() {
        // Given a server with room for 3 plain sockets (2 per address) and 3 WebSockets (1 per
        // address), and a trusted proxy holding 3 sockets, more than one address may
        let sockets = Sockets::new(SocketLimits { websocket_total: 3, ..limits() });
        let proxy: IpAddr = "10.0.0.1".parse().unwrap();
        let mut held: Vec<SocketSlot> = (0..3).map(|_| sockets.admit(proxy, true).unwrap()).collect();
        assert_eq!(sockets.admit(proxy, true).unwrap_err(), SlotRefusal::Total, "the total still holds");

        // When two of them become WebSockets of two clients, and the third one of the first client
        let (alice, bob): (IpAddr, IpAddr) = ("203.0.113.7".parse().unwrap(), "203.0.113.8".parse().unwrap());
        held[0].upgrade(Some(alice)).unwrap();
        held[1].upgrade(Some(bob)).unwrap();

        // Then each counts for its client: the first client has its one, the proxy none
        assert_eq!(held[2].upgrade(Some(alice)).unwrap_err(), SlotRefusal::PerIp);
        assert_eq!(sockets.can_upgrade(alice), Err(SlotRefusal::PerIp));
        assert_eq!((sockets.open(SocketKind::Http), sockets.open(SocketKind::WebSocket)), (1, 2));
        // And closing one gives the slot back to its client
        drop(held.remove(0));
        assert_eq!(sockets.open(SocketKind::WebSocket), 1);
        assert_eq!(sockets.can_upgrade(alice), Ok(()));
        // And the proxy's plain socket is not counted under its own address: other hosts there (an
        // IPv6 /64's) may still open all an address may
        let _neighbours = [sockets.admit(proxy, false).unwrap(), sockets.admit(proxy, false).unwrap()];
        drop(held);
        assert_eq!(sockets.open(SocketKind::Http), 2);
    }

    #[test]
    fn a_slot_is_freed_when_its_socket_goes_and_counts_as_what_it_became() {
        let sockets = Sockets::new(limits());
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let mut slot = sockets.admit(ip, false).unwrap();
        slot.upgrade(Some(ip)).unwrap();
        assert_eq!((sockets.open(SocketKind::Http), sockets.open(SocketKind::WebSocket)), (0, 1));
        drop(slot);
        assert_eq!((sockets.open(SocketKind::Http), sockets.open(SocketKind::WebSocket)), (0, 0));
        // With no client address known at the upgrade, it counts for the address it was admitted under.
        let mut slot = sockets.admit(ip, false).unwrap();
        slot.upgrade(None).unwrap();
        assert_eq!(sockets.can_upgrade(ip), Err(SlotRefusal::PerIp));
        drop(slot);
        assert_eq!(sockets.can_upgrade(ip), Ok(()));
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64_and_mapped_ipv4_as_ipv4() {
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(client_key(a), client_key(c));
        assert_eq!(client_key("::ffff:10.1.2.3".parse().unwrap()), "10.1.2.3".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn limits_fit_the_descriptor_budget_with_every_http_socket_holding_a_file() {
        let budget = DescriptorBudget { open_file_limit: 1024, in_use: 24, reserved: 128 };
        let l = SocketLimits::from_budget(budget, 128, 1024, 256, 50_000).unwrap();
        assert_eq!(l.http_total, 872 / 4 / 2);
        assert_eq!(l.websocket_total, 872 - 2 * l.http_total);
        assert!(2 * l.http_total + l.websocket_total <= budget.for_sockets() as usize);
        assert_eq!((l.http_per_ip, l.websocket_per_ip), (l.http_total.min(128), 256));

        let roomy = DescriptorBudget { open_file_limit: 20_000, in_use: 30, reserved: 128 };
        let l = SocketLimits::from_budget(roomy, 128, 1024, 1_000_000, 1_000_000).unwrap();
        assert_eq!(l.http_total, 1024, "the configured maximum when the budget allows it");
        assert!(l.websocket_total >= 10_000);

        let tiny = DescriptorBudget { open_file_limit: 160, in_use: 30, reserved: 128 };
        assert!(SocketLimits::from_budget(tiny, 128, 1024, 256, 50_000).unwrap_err().contains("reserved_fds"));
    }
}
