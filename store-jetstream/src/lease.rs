//! One owner per session across gateways (docs/decisions/0112-session-ownership-by-gateway-leases.md).
//!
//! Two KV buckets beside the event stream `S`:
//!
//! | bucket | key | value | lifetime |
//! |---|---|---|---|
//! | `S_gateways` | gateway id | `{"epoch": E}` | bucket `max_age` = `lease_ttl`: lapses unless renewed |
//! | `S_owners` | session id | `{"gateway": G, "epoch": E}` | until overwritten, or purged when retention expires the session |
//! | `S_secrets` | secret name | hex | created once by the first gateway, read by the others |
//!
//! A gateway *registers* by creating its key with a fresh random epoch and renews it (update with
//! the revision it last wrote) every fifth of the TTL. A session belongs to gateway `G` while
//! `S_owners[session]` names `G` with the epoch `S_gateways[G]` holds now: a gateway that dies stops
//! renewing, its key lapses, and every session it owned is free at once — one renewal per gateway,
//! not per session. Taking a session is a compare-and-set on `S_owners` (create, or update with the
//! revision read), so of two gateways racing for it exactly one wins.
//!
//! A gateway that cannot renew (NATS unreachable, or its key was lost) declares its lease lost
//! *before* the server can expire it (measured from the moment it sent its last successful
//! renewal), tells its listeners (the gateway stops its sessions and closes their sockets), and
//! registers again with a new epoch. The lease is for liveness; safety is the event log's
//! expected-sequence check (docs/decisions/0111): a stale owner's late append is a `Conflict`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::kv;
use async_nats::jetstream::stream;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use vestibule_store::{SessionId, StoreError};

use crate::JetStreamConfig;

/// Who runs a session's actor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// This gateway (it holds the session's lease under its current epoch).
    Me,
    /// Another live gateway, registered under `epoch`.
    Other { gateway: String, epoch: u64 },
}

#[derive(Debug, Serialize, Deserialize)]
struct GatewayValue {
    epoch: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct OwnerValue {
    gateway: String,
    epoch: u64,
}

fn engine(context: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Engine(format!("JetStream leases: {context}: {e}"))
}

/// The registration this process holds now.
#[derive(Debug, Clone, Copy)]
struct Registration {
    epoch: u64,
    revision: u64,
    /// When the last successful write of the key was *sent*: the server expires it `ttl` after it
    /// stored it, which is later.
    written_at: Instant,
}

struct Inner {
    client: async_nats::Client,
    js: async_nats::jetstream::Context,
    gateways: kv::Store,
    owners: kv::Store,
    owners_bucket: String,
    secrets: kv::Store,
    id: String,
    ttl: Duration,
    /// `None` while this process holds no lease (lost, not yet registered again).
    registration: Mutex<Option<Registration>>,
    /// The revision of a registration declared lost, which may still be the key's: registering
    /// again overwrites it.
    previous_revision: Mutex<Option<u64>>,
    /// Bumped each time the lease is lost: the gateway stops every session it runs.
    lost: tokio::sync::watch::Sender<u64>,
    acquisitions: AtomicU64,
    takeovers: AtomicU64,
    /// What [`Leases::is_live`] last read of each gateway's registration (its epoch, or none), and
    /// when: every link of a proxied session polls its peer's liveness, and all of them share one
    /// read per [`LIVENESS_FRESH_FOR`] of the TTL instead of one each.
    liveness: Mutex<std::collections::HashMap<String, (Instant, Option<u64>)>>,
    /// Held while one caller reads a registration for the others (one read, not one per caller).
    liveness_read: tokio::sync::Mutex<()>,
}

/// How long a read of a gateway's registration answers [`Leases::is_live`]: a fifth of the TTL, the
/// links' own polling interval, so a dead peer is seen at most one poll later than before.
const LIVENESS_FRESH_DIVISOR: u32 = 5;
/// Gateways whose liveness is remembered at once; beyond, the memory starts again.
const LIVENESS_MAX_GATEWAYS: usize = 1024;

/// Attempts at a shared secret while the cluster refuses requests, and the backoff between them
/// (doubling: about 16 s in all before the last attempt).
const SECRET_ATTEMPTS: u32 = 8;
const SECRET_RETRY_FIRST: Duration = Duration::from_millis(250);
const SECRET_RETRY_MAX: Duration = Duration::from_secs(4);

/// This gateway's membership of the cluster and its session leases. Cheap to clone.
#[derive(Clone)]
pub struct Leases {
    inner: Arc<Inner>,
    /// Drives the NATS connection and the renewal loop (as the event log's own runtime does).
    _runtime: Arc<RuntimeHolder>,
}

struct RuntimeHolder(Option<tokio::runtime::Runtime>);

impl Drop for RuntimeHolder {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// A gateway id: letters, digits, `-` and `_` (it is a KV key and a subject token).
pub fn valid_gateway_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A random gateway id, for a process that is not given one.
pub fn random_gateway_id() -> String {
    format!("gw-{}", hex::encode(rand::random::<[u8; 6]>()))
}

fn new_epoch() -> u64 {
    rand::random::<u64>().max(1)
}

fn is_wrong_revision(e: &kv::UpdateError) -> bool {
    matches!(e.kind(), kv::UpdateErrorKind::WrongLastRevision)
}

impl Leases {
    /// Connects to `config.servers`, creates (or checks) the two buckets, and registers gateway `id`
    /// with leases of `ttl`. A bucket made with another TTL is refused: every gateway of a cluster
    /// must use the same one. If `id` is held by a live process (a restart with a fixed id before its
    /// predecessor's lease lapsed), waits up to `ttl` for it to lapse.
    pub async fn join(config: &JetStreamConfig, id: &str, ttl: Duration) -> Result<Self, StoreError> {
        if !valid_gateway_id(id) {
            return Err(StoreError::Engine(format!("`cluster.gateway_id`: {id:?} must be 1 to 64 letters, digits, `-` or `_`")));
        }
        if ttl < Duration::from_secs(1) {
            return Err(StoreError::Engine("`cluster.lease_ttl`: at least 1s".into()));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("vestibule-lease")
            .enable_all()
            .build()
            .map_err(|e| engine("cannot start the lease runtime", e))?;
        let (config, id2) = (config.clone(), id.to_string());
        let joined = runtime.spawn(async move { connect(&config, id2, ttl).await }).await;
        let inner = match joined {
            Ok(Ok(inner)) => Arc::new(inner),
            Ok(Err(e)) => {
                runtime.shutdown_background();
                return Err(e);
            }
            Err(e) => {
                runtime.shutdown_background();
                return Err(engine("join", e));
            }
        };
        let registered = runtime.spawn({
            let inner = inner.clone();
            async move { inner.register(ttl).await }
        });
        match registered.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                runtime.shutdown_background();
                return Err(e);
            }
            Err(e) => {
                runtime.shutdown_background();
                return Err(engine("register", e));
            }
        }
        runtime.spawn(renew(Arc::downgrade(&inner)));
        Ok(Self { inner, _runtime: Arc::new(RuntimeHolder(Some(runtime))) })
    }

    pub fn gateway_id(&self) -> &str {
        &self.inner.id
    }

    pub fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// The NATS connection the leases use (the gateway routes over it too).
    pub fn client(&self) -> &async_nats::Client {
        &self.inner.client
    }

    /// The epoch this process is registered under now, `None` while it holds no lease.
    pub fn epoch(&self) -> Option<u64> {
        self.inner.current().map(|r| r.epoch)
    }

    /// Changes each time this gateway loses its lease.
    pub fn lost(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.lost.subscribe()
    }

    /// Sessions this process took (created or took over an owner entry), since it started.
    pub fn acquisitions(&self) -> u64 {
        self.inner.acquisitions.load(Ordering::Relaxed)
    }

    /// Of [`Self::acquisitions`], those taken from another (dead) registration.
    pub fn takeovers(&self) -> u64 {
        self.inner.takeovers.load(Ordering::Relaxed)
    }

    /// Whether `gateway` is registered under `epoch`, as read from the bucket's leader at most a
    /// fifth of the TTL ago (the read is shared by every caller meanwhile: each proxied link polls).
    /// Taking sessions over ([`Self::acquire`]) always reads afresh.
    pub async fn is_live(&self, gateway: &str, epoch: u64) -> Result<bool, StoreError> {
        let inner = &self.inner;
        let fresh_for = inner.ttl / LIVENESS_FRESH_DIVISOR;
        let remembered = || {
            let liveness = inner.liveness.lock().expect("liveness lock");
            liveness.get(gateway).filter(|(read_at, _)| read_at.elapsed() < fresh_for).map(|&(_, registered)| registered == Some(epoch))
        };
        if let Some(live) = remembered() {
            return Ok(live);
        }
        let _reading = inner.liveness_read.lock().await;
        // Another caller may have read it while this one waited.
        if let Some(live) = remembered() {
            return Ok(live);
        }
        let registered = inner.registered_epoch(gateway).await?;
        let mut liveness = inner.liveness.lock().expect("liveness lock");
        if liveness.len() >= LIVENESS_MAX_GATEWAYS {
            liveness.clear();
        }
        liveness.insert(gateway.to_owned(), (Instant::now(), registered));
        Ok(registered == Some(epoch))
    }

    /// The largest message the NATS server this process is connected to takes (`max_payload`).
    pub fn max_payload(&self) -> usize {
        self.inner.client.server_info().max_payload
    }

    /// Messages this process has sent to NATS over the leases' connection (for tests and metrics).
    pub fn messages_sent(&self) -> u64 {
        self.inner.client.statistics().out_messages.load(Ordering::Relaxed)
    }

    /// Who owns `session`, taking it if nobody live does. Exactly one of several gateways racing
    /// for the same session gets [`Owner::Me`]; the others get that one.
    pub async fn acquire(&self, session: SessionId) -> Result<Owner, StoreError> {
        let inner = &self.inner;
        let key = session.to_string();
        for _attempt in 0..16 {
            let Some(me) = inner.current() else {
                return Err(StoreError::Engine("this gateway holds no cluster lease (it is registering again)".into()));
            };
            let mine = Bytes::from(serde_json::to_vec(&OwnerValue { gateway: inner.id.clone(), epoch: me.epoch }).expect("serializes"));
            let entry = inner.owners.entry(key.clone()).await.map_err(|e| engine("read owner", e))?;
            let current = entry.as_ref().filter(|e| e.operation == kv::Operation::Put);
            match current {
                None => match inner.owners.create(&key, mine).await {
                    Ok(_) => {
                        inner.acquisitions.fetch_add(1, Ordering::Relaxed);
                        return Ok(Owner::Me);
                    }
                    Err(e) if matches!(e.kind(), kv::CreateErrorKind::AlreadyExists) => continue,
                    Err(e) => return Err(engine("create owner", e)),
                },
                Some(entry) => {
                    let owner: Option<OwnerValue> = serde_json::from_slice(&entry.value).ok();
                    if let Some(o) = &owner {
                        if o.gateway == inner.id && o.epoch == me.epoch {
                            return Ok(Owner::Me);
                        }
                        if o.gateway != inner.id && inner.is_live(&o.gateway, o.epoch).await? {
                            return Ok(Owner::Other { gateway: o.gateway.clone(), epoch: o.epoch });
                        }
                    }
                    // The owner's registration is gone (or the value unreadable): take it over.
                    match inner.owners.update(&key, mine, entry.revision).await {
                        Ok(_) => {
                            inner.acquisitions.fetch_add(1, Ordering::Relaxed);
                            inner.takeovers.fetch_add(1, Ordering::Relaxed);
                            tracing::info!(session = %session, from = ?owner.map(|o| o.gateway), "took the session over");
                            return Ok(Owner::Me);
                        }
                        Err(e) if is_wrong_revision(&e) => continue,
                        Err(e) => return Err(engine("take owner", e)),
                    }
                }
            }
        }
        Err(StoreError::Engine(format!("the owner of {session} kept changing")))
    }

    /// Whether this gateway is the one of the cluster that runs periodic chores (retention): the
    /// live registered gateway with the smallest id. Two gateways may both think so for a moment
    /// while one joins or lapses; the chores must be idempotent (retention's purges are).
    pub async fn leads_chores(&self) -> Result<bool, StoreError> {
        let inner = &self.inner;
        if inner.current().is_none() {
            return Ok(false);
        }
        let mut keys = inner.gateways.keys().await.map_err(|e| engine("list gateways", e))?;
        let mut smallest: Option<String> = None;
        while let Some(key) = futures_util::StreamExt::next(&mut keys).await {
            let key = key.map_err(|e| engine("list gateways", e))?;
            if smallest.as_ref().is_none_or(|s| key < *s) {
                smallest = Some(key);
            }
        }
        Ok(smallest.is_none_or(|s| s >= inner.id))
    }

    /// Forgets the owners of sessions that retention expired: each key leaves the bucket with its
    /// history (a purge of the key's subject on the bucket's stream, which leaves no delete marker
    /// behind), so the bucket does not grow with every session ever opened.
    pub async fn forget(&self, sessions: &[SessionId]) -> Result<(), StoreError> {
        let inner = &self.inner;
        let stream = inner.js.get_stream(format!("KV_{}", inner.owners_bucket)).await.map_err(|e| engine("owners stream", e))?;
        for session in sessions {
            stream.purge().filter(format!("$KV.{}.{session}", inner.owners_bucket)).await.map_err(|e| engine("forget owner", e))?;
        }
        Ok(())
    }

    /// A secret every gateway of the cluster shares (e.g. the key that signs sign-in tokens, so
    /// that a token one gateway issued verifies on every other): the first gateway to ask stores
    /// `seed` under `name`; every later ask, from any gateway, gets that value.
    pub async fn shared_secret(&self, name: &str, seed: [u8; 32]) -> Result<[u8; 32], StoreError> {
        let secrets = &self.inner.secrets;
        // A cluster that is still settling (a bucket's stream just created, or its leader being
        // elected, while several gateways start at once) refuses a request for a moment ("no
        // stream found for given subject"): tried again with a backoff, each retry logged.
        let mut pause = SECRET_RETRY_FIRST;
        for attempt in 1..=SECRET_ATTEMPTS {
            let failure = match secrets.create(name, Bytes::from(hex::encode(seed))).await {
                Ok(_) => return Ok(seed),
                Err(e) if matches!(e.kind(), kv::CreateErrorKind::AlreadyExists) => match secrets.entry(name).await {
                    Ok(Some(entry)) if entry.operation == kv::Operation::Put => {
                        let text = std::str::from_utf8(&entry.value).unwrap_or_default();
                        return hex::decode(text.trim())
                            .ok()
                            .and_then(|b| <[u8; 32]>::try_from(b).ok())
                            .ok_or_else(|| StoreError::Engine(format!("the shared secret {name} in the cluster is not 32 bytes of hex")));
                    }
                    // Deleted between our create and our read: create again at once.
                    Ok(_) => continue,
                    Err(e) => engine(&format!("read the shared secret {name}"), e),
                },
                Err(e) => engine(&format!("store the shared secret {name}"), e),
            };
            if attempt == SECRET_ATTEMPTS {
                return Err(failure);
            }
            tracing::warn!(secret = name, attempt, retry_in = ?pause, error = %failure, "cannot reach the cluster's shared secret yet; retrying");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(SECRET_RETRY_MAX);
        }
        Err(StoreError::Engine(format!("the shared secret {name} kept changing")))
    }

    /// Gives up this gateway's registration at a clean shutdown: every session it owned is free at
    /// once (no wait for the TTL).
    pub async fn leave(&self) {
        let registration = self.inner.registration.lock().expect("lease lock").take();
        if let Some(r) = registration
            && let Err(e) = self.inner.gateways.delete_expect_revision(&self.inner.id, Some(r.revision)).await
        {
            tracing::warn!(error = %e, "could not release the gateway's lease; it lapses by itself");
        }
    }
}

async fn connect(config: &JetStreamConfig, id: String, ttl: Duration) -> Result<Inner, StoreError> {
    let options =
        config.connect_options(format!("vestibule {id}")).await.map_err(|e| StoreError::Engine(format!("JetStream leases: {e}")))?;
    let client =
        options.connect(config.servers.clone()).await.map_err(|e| engine(&format!("cannot connect to {:?}", config.servers), e))?;
    let js = async_nats::jetstream::new(client.clone());
    let bucket = |name: String, description: &str, max_age: Duration| kv::Config {
        bucket: name,
        description: description.to_string(),
        history: 1,
        max_age,
        num_replicas: config.replicas,
        storage: stream::StorageType::File,
        ..Default::default()
    };
    let gateways = leader_read_bucket(&js, bucket(format!("{}_gateways", config.stream), "Vestibule gateway leases", ttl)).await?;
    let owners_bucket = format!("{}_owners", config.stream);
    let owners = leader_read_bucket(&js, bucket(owners_bucket.clone(), "Vestibule session owners", Duration::ZERO)).await?;
    let secrets = leader_read_bucket(&js, bucket(format!("{}_secrets", config.stream), "Vestibule shared keys", Duration::ZERO)).await?;
    let (lost, _) = tokio::sync::watch::channel(0);
    Ok(Inner {
        client,
        js,
        gateways,
        owners,
        owners_bucket,
        secrets,
        id,
        ttl,
        registration: Mutex::new(None),
        previous_revision: Mutex::new(None),
        lost,
        acquisitions: AtomicU64::new(0),
        takeovers: AtomicU64::new(0),
        liveness: Mutex::new(std::collections::HashMap::new()),
        liveness_read: tokio::sync::Mutex::new(()),
    })
}

/// A bucket whose reads go to its stream's leader: a lagging replica could show a lapsed gateway
/// as live (harmless: a refused forward) or a re-registered one under its old epoch (which would
/// let another gateway take a live session).
///
/// Gateways started together on a fresh cluster race to make the bucket: a create that loses finds
/// it made (possibly already with direct reads off, which the server calls "a different
/// configuration"), and a replicated create can time out on a busy machine while the server goes on
/// making it. Each step is tried again, a bounded number of times (seen with three gateways started
/// at once on a 3-node cluster: `store-jetstream/tests/leases.rs`).
async fn leader_read_bucket(js: &async_nats::jetstream::Context, config: kv::Config) -> Result<kv::Store, StoreError> {
    const ATTEMPTS: u32 = 8;
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_leader_read_bucket(js, config.clone()).await {
            Ok(store) => return Ok(store),
            Err(BucketSetup::Refused(e)) => return Err(e),
            Err(BucketSetup::Failed(e)) if attempt >= ATTEMPTS => return Err(e),
            Err(BucketSetup::Failed(e)) => {
                tracing::info!(bucket = %config.bucket, attempt, error = %e, "setting the bucket up failed; trying again");
                tokio::time::sleep(Duration::from_millis(250) * attempt).await;
            }
        }
    }
}

enum BucketSetup {
    /// Another try may succeed (a lost creation race, a timeout, an election).
    Failed(StoreError),
    /// The bucket is there with a configuration this gateway refuses: no retry helps.
    Refused(StoreError),
}

fn failed<E: std::fmt::Display>(what: String) -> impl FnOnce(E) -> BucketSetup {
    move |e| BucketSetup::Failed(engine(&what, e))
}

async fn try_leader_read_bucket(js: &async_nats::jetstream::Context, config: kv::Config) -> Result<kv::Store, BucketSetup> {
    let name = config.bucket.clone();
    let max_age = config.max_age;
    let store = match js.get_key_value(&name).await {
        Ok(store) => store,
        Err(_) => match js.create_key_value(config).await {
            Ok(store) => store,
            // Made meanwhile by another gateway (or by this create, after its request timed out).
            Err(e) => js.get_key_value(&name).await.map_err(|_| BucketSetup::Failed(engine(&format!("create bucket {name}"), e)))?,
        },
    };
    let mut kv_stream = js.get_stream(format!("KV_{name}")).await.map_err(failed(format!("bucket {name}")))?;
    let info = kv_stream.info().await.map_err(failed(format!("bucket {name} info")))?.clone();
    if info.config.max_age != max_age {
        return Err(BucketSetup::Refused(StoreError::Engine(format!(
            "the bucket {name} has max_age {:?}, this gateway's `cluster.lease_ttl` wants {max_age:?}: every gateway of a cluster \
             needs the same lease_ttl (or delete the bucket while no gateway runs)",
            info.config.max_age
        ))));
    }
    if info.config.allow_direct {
        let mut c = info.config.clone();
        c.allow_direct = false;
        js.update_stream(c).await.map_err(failed(format!("bucket {name}: leader reads")))?;
    }
    // Always a handle made now, after the update: one made while the bucket still allowed direct
    // gets reads with them, and once another gateway starting at the same time has turned them off,
    // every read fails with "503 no responders" (seen with three gateways started together).
    drop(store);
    js.get_key_value(&name).await.map_err(failed(format!("bucket {name}")))
}

impl Inner {
    fn current(&self) -> Option<Registration> {
        *self.registration.lock().expect("lease lock")
    }

    /// The revision of this gateway's key if it still holds `epoch` (read from the leader).
    async fn still_registered(&self, epoch: u64) -> Option<u64> {
        let entry = self.gateways.entry(self.id.clone()).await.ok()??;
        let value: GatewayValue = serde_json::from_slice(&entry.value).ok()?;
        (entry.operation == kv::Operation::Put && value.epoch == epoch).then_some(entry.revision)
    }

    async fn is_live(&self, gateway: &str, epoch: u64) -> Result<bool, StoreError> {
        Ok(self.registered_epoch(gateway).await? == Some(epoch))
    }

    /// The epoch `gateway` is registered under now (read from the bucket's leader), or none.
    async fn registered_epoch(&self, gateway: &str) -> Result<Option<u64>, StoreError> {
        let entry = self.gateways.entry(gateway.to_string()).await.map_err(|e| engine("read gateway", e))?;
        Ok(entry
            .filter(|e| e.operation == kv::Operation::Put)
            .and_then(|e| serde_json::from_slice::<GatewayValue>(&e.value).ok())
            .map(|v| v.epoch))
    }

    /// Registers under a new epoch: creates the key, or, if our previous registration's key is still
    /// there, overwrites it (its sessions are free from that moment). A key held by another process
    /// with the same id is waited for, up to a TTL and a bit.
    async fn register(&self, ttl: Duration) -> Result<(), StoreError> {
        let epoch = new_epoch();
        let value = Bytes::from(serde_json::to_vec(&GatewayValue { epoch }).expect("serializes"));
        let deadline = Instant::now() + ttl + ttl / 2;
        let previous = self.previous_revision.lock().expect("lease lock").take();
        loop {
            let sent = Instant::now();
            let written = match previous {
                Some(revision) => match self.gateways.update(&self.id, value.clone(), revision).await {
                    Ok(r) => Ok(r),
                    Err(_) => self.gateways.create(&self.id, value.clone()).await.map_err(|e| e.to_string()),
                },
                None => self.gateways.create(&self.id, value.clone()).await.map_err(|e| e.to_string()),
            };
            match written {
                Ok(revision) => {
                    *self.registration.lock().expect("lease lock") = Some(Registration { epoch, revision, written_at: sent });
                    tracing::info!(gateway = %self.id, epoch, ttl = ?ttl, "registered in the cluster");
                    return Ok(());
                }
                Err(e) if Instant::now() > deadline => {
                    return Err(StoreError::Engine(format!(
                        "cannot register gateway {:?} in the cluster: {e} (another live process uses this id?)",
                        self.id
                    )));
                }
                Err(e) => {
                    tracing::info!(gateway = %self.id, error = %e, "gateway id held (a predecessor's lease?); waiting for it to lapse");
                    tokio::time::sleep(ttl / 8).await;
                }
            }
        }
    }
}

/// Renews the registration every fifth of the TTL (each try bounded by a fifth); declares it lost
/// when a renewal is refused, or when none succeeded for half the TTL (a failing renewal is noticed
/// by 0.8 TTL, before the server can expire the key), then registers again.
async fn renew(inner: std::sync::Weak<Inner>) {
    loop {
        let ttl = match inner.upgrade() {
            Some(i) => i.ttl,
            None => return,
        };
        tokio::time::sleep(ttl / 5).await;
        let Some(inner) = inner.upgrade() else { return };
        let Some(current) = inner.current() else {
            if inner.register(inner.ttl).await.is_err() {
                tracing::warn!(gateway = %inner.id, "cannot register again yet; retrying");
            }
            continue;
        };
        let value = Bytes::from(serde_json::to_vec(&GatewayValue { epoch: current.epoch }).expect("serializes"));
        let sent = Instant::now();
        let renewal = tokio::time::timeout(ttl / 5, inner.gateways.update(&inner.id, value, current.revision)).await;
        let lost = match renewal {
            Ok(Ok(revision)) => {
                let mut registration = inner.registration.lock().expect("lease lock");
                if registration.is_some_and(|r| r.epoch == current.epoch) {
                    *registration = Some(Registration { epoch: current.epoch, revision, written_at: sent });
                }
                false
            }
            Ok(Err(e)) if is_wrong_revision(&e) => match inner.still_registered(current.epoch).await {
                // A renewal that timed out (a NATS leader election) was stored after all: the key
                // still holds our epoch, which only we write. Go on from its revision.
                Some(revision) => {
                    let mut registration = inner.registration.lock().expect("lease lock");
                    if registration.is_some_and(|r| r.epoch == current.epoch) {
                        *registration = Some(Registration { revision, ..current });
                    }
                    let overdue = current.written_at.elapsed() > ttl / 2;
                    tracing::info!(gateway = %inner.id, overdue, "a renewal thought lost had been stored; continuing");
                    overdue
                }
                None => {
                    tracing::warn!(gateway = %inner.id, "the gateway's lease was lost (it lapsed or was overwritten)");
                    true
                }
            },
            Ok(Err(e)) => {
                let overdue = current.written_at.elapsed() > ttl / 2;
                tracing::warn!(gateway = %inner.id, error = %e, overdue, "lease renewal failed");
                overdue
            }
            Err(_) => {
                let overdue = current.written_at.elapsed() > ttl / 2;
                tracing::warn!(gateway = %inner.id, overdue, "lease renewal timed out");
                overdue
            }
        };
        if lost {
            {
                let mut registration = inner.registration.lock().expect("lease lock");
                *inner.previous_revision.lock().expect("lease lock") = registration.map(|r| r.revision);
                *registration = None;
            }
            inner.lost.send_modify(|n| *n += 1);
            if let Err(e) = inner.register(inner.ttl).await {
                tracing::warn!(gateway = %inner.id, error = %e, "cannot register again yet; retrying");
            }
        }
    }
}
