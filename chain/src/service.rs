//! [`ChainService`]: the one chain service of a gateway, shared by every session. Its methods are
//! what the session runtime runs as effects; each resolves in bounded time (the RPC policy bounds
//! every call) with a value or a typed error whose `Display` is the spec's message.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy::primitives::{Address, B256};
use alloy::rpc::client::RpcClient;
use alloy::transports::http::reqwest;
use futures_util::FutureExt;
use futures_util::future::Shared;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::activity::cache::{ACTIVITY_CACHE_TTL, ActivityCache, ActivityKey, MAX_CACHED_ACTIVITY_BYTES, MAX_CACHED_ACTIVITY_PAGES};
use crate::activity::otterscan::OtterscanActivity;
use crate::activity::{ActivityCursor, ActivityPage, ActivitySource};
use crate::balances::{AccountAddress, BALANCE_CACHE_TTL, Balances, TokenMetadataCache, TtlCache, fetch_balances};
use crate::clock::{Clock, TokioClock};
use crate::config::{ActivitySourceKind, ChainConfig, ConfigError, NetworkSettings};
use crate::metrics::{ChainMetrics, NetworkMetrics};
use crate::prices::{AssetId, PriceSource, StaticPrices};
use crate::receipt::{ExpectedTransaction, ReceiptOutcome, check_mined, wait_for_receipt};
use crate::rpc::chain_id::{ChainIdGate, watch};
use crate::rpc::{HttpEndpoint, RpcPolicy, endpoints_client};
use crate::send::{SendCall, SendError, SendForm, build_send};
use crate::shared_task::{Joined, SharedTasks};
use crate::slots::CallSlots;
use crate::solana::SolAddress;
use crate::solana::rpc::{MintCache, PreparedTransaction, SignatureOutcome, TransferRequest};
use crate::solana::tx::{SignedTransactionError, check_signed};
use crate::{ActivityError, BalanceError, ChainError, NetworkId};

/// The largest answer a host's read takes from a node by default: 65 KiB, just over the 64 KiB of
/// JSON a session takes as a host request's result (`vestibule_actors::machines::host_requests::
/// MAX_JSON_BYTES`), with room for the JSON-RPC envelope. A larger answer would be refused by the
/// session anyway; this refuses it as it arrives, instead of after reading up to
/// `[rpc] max_response_bytes` (16 MiB).
pub const DEFAULT_HOST_READ_MAX_RESPONSE_BYTES: usize = 65 * 1024;

/// How many calls forwarded for hosts and frames may be at the nodes at once, across every
/// session, by default ([`ChainServiceBuilder::max_forwarded_in_flight`]; `[limits]
/// host_chain_calls` in the gateway).
pub const DEFAULT_MAX_FORWARDED_IN_FLIGHT: usize = 256;

/// How many of the forwarded calls at the nodes at once one client address may hold, by default
/// ([`ChainServiceBuilder::max_forwarded_per_client`]; `[limits] host_chain_calls_per_client` in
/// the gateway): an eighth of [`DEFAULT_MAX_FORWARDED_IN_FLIGHT`], two sessions' worth of pending
/// host reads.
pub const DEFAULT_MAX_FORWARDED_PER_CLIENT: usize = 32;

/// JSON-RPC's "limit exceeded" (EIP-1474), as a forwarded call refused by that bound answers.
pub const LIMIT_EXCEEDED: i64 = -32005;

/// The widest block range a host's `eth_getLogs` may ask for (both ends included). A wider one is
/// refused with -32602 without reaching a node (decision 0914 and docs/chain.md).
pub const MAX_HOST_LOGS_BLOCK_RANGE: u64 = 10_000;

/// Most (address, network) pairs whose balances are kept at once.
const MAX_CACHED_BALANCES: usize = 100_000;

type BalanceKey = (NetworkId, AccountAddress);
type SharedActivity = Shared<oneshot::Receiver<Result<ActivityPage, ChainError>>>;

/// Activity pages for every session, and the fetches in flight (each with an id: a fetch whose
/// entry was dropped by an invalidation while it ran does not store its page).
struct ActivityState {
    cache: ActivityCache,
    in_flight: HashMap<ActivityKey, (u64, SharedActivity)>,
    next_fetch: u64,
    /// After an account's transaction was mined in block N, its newest page is kept only once it
    /// reaches block N: a node whose search index lags its receipts must not have a page without
    /// the transaction kept for 30 s. Each floor lasts the cache's TTL at most.
    floors: HashMap<(NetworkId, Address), (u64, tokio::time::Instant)>,
}

impl ActivityState {
    /// Whether a fetched page may be stored: not a newest page below its account's floor.
    fn may_store(&mut self, key: &ActivityKey, page: &ActivityPage, now: tokio::time::Instant) -> bool {
        if key.2.is_some() {
            return true;
        }
        let Some(&(floor, set_at)) = self.floors.get(&(key.0, key.1)) else { return true };
        let reached = page.transactions.first().is_some_and(|t| t.block_number >= floor);
        if reached || now.saturating_duration_since(set_at) >= ACTIVITY_CACHE_TTL {
            self.floors.remove(&(key.0, key.1));
            return true;
        }
        false
    }

    fn set_floor(&mut self, network: NetworkId, account: Address, block: u64, now: tokio::time::Instant) {
        if self.floors.len() >= MAX_CACHED_ACTIVITY_PAGES {
            self.floors.retain(|_, (_, at)| now.saturating_duration_since(*at) < ACTIVITY_CACHE_TTL);
        }
        if self.floors.len() < MAX_CACHED_ACTIVITY_PAGES {
            let floor = self.floors.entry((network, account)).or_insert((block, now));
            *floor = (floor.0.max(block), now);
        }
    }
}

struct Network {
    settings: NetworkSettings,
    client: RpcClient,
    /// The same endpoints and policy for a host's reads, but answers refused past the host-read
    /// bound as they arrive ([`ChainServiceBuilder::host_read_max_response_bytes`]).
    host_client: RpcClient,
    /// Each endpoint (redacted) with its chain id gate, when the chain it serves is checked (its
    /// chain id on eip155, its genesis hash on Solana).
    chain_ids: Vec<(String, Arc<ChainIdGate>)>,
    activity: Option<Arc<dyn ActivitySource>>,
    metrics: NetworkMetrics,
}

struct Inner {
    networks: HashMap<NetworkId, Network>,
    clock: Arc<dyn Clock>,
    metrics: Arc<ChainMetrics>,
    prices: Option<Arc<dyn PriceSource>>,
    /// Token symbols and decimals, shared by balances and the Otterscan activity sources.
    metadata: Arc<TokenMetadataCache>,
    /// SPL mints' decimals and programs.
    mints: MintCache,
    balances: Mutex<TtlCache<BalanceKey, Balances>>,
    /// Fetches in flight, shared by the sessions that ask for the same account, stopped when none
    /// waits any more (a session that moved on to another account, or ended).
    balances_in_flight: SharedTasks<BalanceKey, Result<Balances, BalanceError>>,
    activity: Mutex<ActivityState>,
    receipt_poll_interval: Duration,
    host_reads: &'static [&'static str],
    /// Slots for the calls forwarded for hosts and frames ([`ChainService::request`],
    /// [`ChainService::host_read`]) that may be at the nodes at once, across every session and
    /// per client address.
    forwarded: Arc<CallSlots>,
    /// The endpoints whose chain (id or genesis hash) is to be checked, until the checks are
    /// started (in a tokio runtime: at build when there is one, else at the first use).
    chain_id_checks: Mutex<Vec<ChainIdCheck>>,
    chain_id_checks_started: std::sync::atomic::AtomicBool,
}

/// One endpoint's chain id (or genesis hash) check, before it is started.
struct ChainIdCheck {
    network: NetworkId,
    endpoint: HttpEndpoint,
    gate: std::sync::Weak<ChainIdGate>,
    timeout: Duration,
}

/// Cheap to clone: clones share everything (clients, caches, metrics).
#[derive(Clone)]
pub struct ChainService {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ChainService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainService").field("networks", &self.networks()).finish()
    }
}

/// Builds a [`ChainService`]; the defaults are what production uses.
pub struct ChainServiceBuilder {
    config: ChainConfig,
    clock: Arc<dyn Clock>,
    prices: Option<Arc<dyn PriceSource>>,
    activity: HashMap<NetworkId, Arc<dyn ActivitySource>>,
    receipt_poll_interval: Duration,
    activity_cache: (usize, usize),
    host_reads: &'static [&'static str],
    host_read_max_response_bytes: usize,
    max_forwarded_in_flight: usize,
    max_forwarded_per_client: usize,
    check_chain_ids: bool,
}

impl ChainServiceBuilder {
    /// The largest answer read from a node for [`ChainService::host_read`] (default
    /// [`DEFAULT_HOST_READ_MAX_RESPONSE_BYTES`], never more than `[rpc] max_response_bytes`): a
    /// larger one is refused as it arrives.
    pub fn host_read_max_response_bytes(mut self, bytes: usize) -> Self {
        self.host_read_max_response_bytes = bytes;
        self
    }

    /// How many calls forwarded for hosts and frames ([`ChainService::request`],
    /// [`ChainService::host_read`]) may be at the nodes at once, across every session (default
    /// [`DEFAULT_MAX_FORWARDED_IN_FLIGHT`], at least 1). One more is refused at once with JSON-RPC
    /// -32005 "limit exceeded" without reaching a node: each session may have 16 host reads
    /// pending, so without a bound for all, many sessions could hold thousands of calls at the
    /// nodes and spend the operator's provider quota, or the node's patience, for everyone.
    pub fn max_forwarded_in_flight(mut self, calls: usize) -> Self {
        self.max_forwarded_in_flight = calls.max(1);
        self
    }

    /// How many of those one client address may hold (default
    /// [`DEFAULT_MAX_FORWARDED_PER_CLIENT`], at least 1, at most `max_forwarded_in_flight`): the
    /// caller names the client ([`ChainService::host_read`]'s `client`). One more of that client
    /// is refused with -32005 as above, while others' calls go on: without a share, one client
    /// with a few sessions and a call the node is slow at would hold every slot.
    pub fn max_forwarded_per_client(mut self, calls: usize) -> Self {
        self.max_forwarded_per_client = calls.max(1);
        self
    }

    /// The methods [`ChainService::request`] forwards: the session's chain reads (spec §6, the
    /// list the caller routes here; `vestibule_actors::machines::host_requests::CHAIN_READ_METHODS`
    /// in the gateway). None by default: a service nobody told what is safe forwards nothing.
    pub fn host_reads(mut self, methods: &'static [&'static str]) -> Self {
        self.host_reads = methods;
        self
    }

    /// Whether each endpoint is checked to serve its network when the service starts (default:
    /// yes): an EVM endpoint's `eth_chainId` (decision 0914), a Solana endpoint's `getGenesisHash`
    /// (decision 0915). Tests that count a stub node's requests turn it off.
    pub fn check_chain_ids(mut self, check: bool) -> Self {
        self.check_chain_ids = check;
        self
    }

    /// The activity page cache's bounds: most pages, most bytes (default 10,000 and 64 MiB).
    pub fn activity_cache_bounds(mut self, max_pages: usize, max_bytes: usize) -> Self {
        self.activity_cache = (max_pages, max_bytes);
        self
    }

    /// The clock the balance cache reads (default: tokio's, virtual in tests that pause time).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// A price source other than the configured one.
    pub fn price_source(mut self, prices: Arc<dyn PriceSource>) -> Self {
        self.prices = Some(prices);
        self
    }

    /// An activity source for `network` other than the configured one.
    pub fn activity_source(mut self, network: NetworkId, source: Arc<dyn ActivitySource>) -> Self {
        self.activity.insert(network, source);
        self
    }

    /// How often a receipt is asked for while waiting (default 1 s).
    pub fn receipt_poll_interval(mut self, every: Duration) -> Self {
        self.receipt_poll_interval = every;
        self
    }

    pub fn build(mut self) -> Result<ChainService, ConfigError> {
        let settings = self.config.validate()?;
        let metrics = Arc::new(ChainMetrics::default());
        let metadata = Arc::new(TokenMetadataCache::default());
        crate::tls::install_crypto_provider();
        // No redirects: a configured endpoint answers itself. Following one would post the call
        // (and any key in the URL's path) wherever a compromised or misconfigured node points.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ConfigError { field: "networks".into(), message: format!("cannot make an HTTP client: {e}") })?;
        let policy: &RpcPolicy = &self.config.rpc;
        let mut networks = HashMap::new();
        let mut chain_id_checks = Vec::new();
        for settings in settings {
            let network_metrics = metrics.for_network(&settings.id);
            let host_policy =
                RpcPolicy { max_response_bytes: policy.max_response_bytes.min(self.host_read_max_response_bytes), ..policy.clone() };
            // One gate per endpoint, shared by the general and the host-read clients.
            let expected = Some(settings.id).filter(|_| self.check_chain_ids);
            let gates: Vec<Option<Arc<ChainIdGate>>> = settings.rpc_urls.iter().map(|_| expected.map(ChainIdGate::new)).collect();
            let endpoints = |bound: usize| {
                settings
                    .rpc_urls
                    .iter()
                    .zip(&gates)
                    .map(|(url, gate)| {
                        let endpoint = HttpEndpoint::new(http.clone(), url.clone(), bound);
                        match gate {
                            Some(gate) => endpoint.with_chain_id_gate(gate.clone()),
                            None => endpoint,
                        }
                    })
                    .collect::<Vec<_>>()
            };
            for (url, gate) in settings.rpc_urls.iter().zip(&gates) {
                if let Some(gate) = gate {
                    chain_id_checks.push(ChainIdCheck {
                        network: settings.id,
                        endpoint: HttpEndpoint::new(http.clone(), url.clone(), policy.max_response_bytes.min(64 * 1024)),
                        gate: Arc::downgrade(gate),
                        timeout: policy.attempt_timeout,
                    });
                }
            }
            let chain_ids = settings
                .rpc_urls
                .iter()
                .zip(&gates)
                .filter_map(|(url, gate)| Some((crate::rpc::http::redact(url), gate.clone()?)))
                .collect();
            let client = endpoints_client(endpoints(policy.max_response_bytes), policy, network_metrics.clone());
            let host_client = endpoints_client(endpoints(host_policy.max_response_bytes), &host_policy, network_metrics.clone());
            let activity = self.activity.remove(&settings.id).or_else(|| match settings.activity.source {
                ActivitySourceKind::Otterscan if !settings.id.is_solana() => {
                    Some(Arc::new(OtterscanActivity::new(client.clone(), settings.clone(), metadata.clone())) as Arc<dyn ActivitySource>)
                }
                ActivitySourceKind::Otterscan | ActivitySourceKind::None => None,
            });
            networks.insert(settings.id, Network { settings, client, host_client, chain_ids, activity, metrics: network_metrics });
        }
        let prices = match (self.prices, &self.config.prices) {
            (Some(prices), _) => Some(prices),
            (None, Some(config)) => {
                Some(Arc::new(StaticPrices::from_config(config).map_err(|message| ConfigError { field: "prices".into(), message })?)
                    as Arc<dyn PriceSource>)
            }
            (None, None) => None,
        };
        let service = ChainService {
            inner: Arc::new(Inner {
                networks,
                clock: self.clock,
                metrics,
                prices,
                metadata,
                mints: MintCache::default(),
                balances: Mutex::new(TtlCache::new(BALANCE_CACHE_TTL, MAX_CACHED_BALANCES)),
                balances_in_flight: SharedTasks::default(),
                activity: Mutex::new(ActivityState {
                    cache: ActivityCache::new(ACTIVITY_CACHE_TTL, self.activity_cache.0, self.activity_cache.1),
                    in_flight: HashMap::new(),
                    next_fetch: 0,
                    floors: HashMap::new(),
                }),
                receipt_poll_interval: self.receipt_poll_interval,
                host_reads: self.host_reads,
                forwarded: CallSlots::new(self.max_forwarded_in_flight, self.max_forwarded_per_client),
                chain_id_checks: Mutex::new(chain_id_checks),
                chain_id_checks_started: Default::default(),
            }),
        };
        service.start_chain_id_checks();
        Ok(service)
    }
}

impl ChainService {
    pub fn builder(config: &ChainConfig) -> ChainServiceBuilder {
        ChainServiceBuilder {
            config: config.clone(),
            clock: Arc::new(TokioClock),
            prices: None,
            activity: HashMap::new(),
            receipt_poll_interval: Duration::from_secs(1),
            activity_cache: (MAX_CACHED_ACTIVITY_PAGES, MAX_CACHED_ACTIVITY_BYTES),
            host_reads: &[],
            host_read_max_response_bytes: DEFAULT_HOST_READ_MAX_RESPONSE_BYTES,
            max_forwarded_in_flight: DEFAULT_MAX_FORWARDED_IN_FLIGHT,
            max_forwarded_per_client: DEFAULT_MAX_FORWARDED_PER_CLIENT,
            check_chain_ids: true,
        }
    }

    /// Starts the endpoints' chain id and genesis hash checks (decisions 0914 and 0915) in the
    /// background, once, if in a tokio runtime; otherwise the first use within one starts them.
    fn start_chain_id_checks(&self) {
        use std::sync::atomic::Ordering;
        if self.inner.chain_id_checks_started.load(Ordering::Acquire) || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if self.inner.chain_id_checks_started.swap(true, Ordering::AcqRel) {
            return;
        }
        for check in std::mem::take(&mut *self.inner.chain_id_checks.lock().unwrap()) {
            tokio::spawn(watch(check.network, check.endpoint, check.gate, check.timeout));
        }
    }

    /// The service for a configuration, with the defaults. Must be called within a tokio runtime
    /// only when used (nothing connects until asked).
    pub fn new(config: &ChainConfig) -> Result<Self, ConfigError> {
        Self::builder(config).build()
    }

    /// The networks that have endpoints, in id order.
    pub fn networks(&self) -> Vec<NetworkId> {
        let mut ids: Vec<_> = self.inner.networks.keys().copied().collect();
        ids.sort();
        ids
    }

    /// Whether `network` has a chain service (spec §5: otherwise "Unsupported chain").
    pub fn supports(&self, network: NetworkId) -> bool {
        self.inner.networks.contains_key(&network)
    }

    pub fn settings(&self, network: NetworkId) -> Option<&NetworkSettings> {
        self.inner.networks.get(&network).map(|n| &n.settings)
    }

    /// Every network's metrics, for the gateway's registry ([`ChainMetrics::register`]).
    pub fn metrics(&self) -> &Arc<ChainMetrics> {
        &self.inner.metrics
    }

    /// The endpoints of `network` (`scheme://host:port`) that answered `eth_chainId` with another
    /// chain (decision 0914), or `getGenesisHash` with another cluster's (decision 0915), and are
    /// not used until they serve the network's, with why.
    pub fn endpoints_serving_another_chain(&self, network: NetworkId) -> Vec<(String, String)> {
        let Some(entry) = self.inner.networks.get(&network) else { return vec![] };
        entry.chain_ids.iter().filter_map(|(endpoint, gate)| Some((endpoint.clone(), gate.refusal()?))).collect()
    }

    pub fn network_metrics(&self, network: NetworkId) -> Option<NetworkMetrics> {
        self.inner.networks.get(&network).map(|n| n.metrics.clone())
    }

    /// alloy's client for `network`, with the policy underneath, for calls this API lacks.
    pub fn client(&self, network: NetworkId) -> Result<RpcClient, ChainError> {
        Ok(self.network(network)?.client.clone())
    }

    fn network(&self, network: NetworkId) -> Result<&Network, ChainError> {
        self.start_chain_id_checks();
        self.inner.networks.get(&network).ok_or(ChainError::UnsupportedNetwork(network))
    }

    /// `address`'s native and token balances on `network`. Kept 30 s per (network, address) for
    /// every session; concurrent asks for the same pair share one fetch (one JSON-RPC batch).
    /// Failures are not kept: the session blocks its own retry for 30 s (spec §8).
    pub async fn balances(&self, network: NetworkId, address: Address) -> Result<Balances, BalanceError> {
        self.balances_with(network, AccountAddress::Evm(address), false).await
    }

    /// Any account's balances: an EVM address on an eip155 network, a Solana public key on a
    /// Solana network (SOL and the configured SPL mints), with the same cache, sharing and
    /// failure rules. `fresh`: past the 30 s cache (see [`ChainService::fresh_balances`]).
    pub async fn account_balances(&self, network: NetworkId, address: AccountAddress, fresh: bool) -> Result<Balances, BalanceError> {
        let matches = matches!((network.is_solana(), address), (false, AccountAddress::Evm(_)) | (true, AccountAddress::Solana(_)));
        if !matches {
            return Err(BalanceError { cause: ChainError::Decode(format!("{address} is not an account of {network}")) });
        }
        self.balances_with(network, address, fresh).await
    }

    /// As [`ChainService::balances`], but never answered from the 30 s cache (it still shares a
    /// fetch in flight, and refreshes the cache): after the account sent a transaction, the
    /// balances it was shown before are known to be stale.
    pub async fn fresh_balances(&self, network: NetworkId, address: Address) -> Result<Balances, BalanceError> {
        self.balances_with(network, AccountAddress::Evm(address), true).await
    }

    async fn balances_with(&self, network: NetworkId, address: AccountAddress, fresh: bool) -> Result<Balances, BalanceError> {
        let entry = self.network(network).map_err(|cause| BalanceError { cause })?;
        let key = (network, address);
        if !fresh && let Some(cached) = self.inner.balances.lock().unwrap().get(&key, self.inner.clock.now()) {
            entry.metrics.balance_cache(true);
            return Ok(cached);
        }
        // Its own task, shared by every session asking for the account meanwhile: it completes and
        // is cached if the session that started it goes away while others wait, and stops when
        // none waits any more (an outside review had 50 sessions naming new accounts keep ~2,000
        // fetches at a slow node, still running after every socket had closed).
        let this = self.clone();
        let fetch = move |()| async move {
            let result = this.fetch_balances(network, address).await;
            if let Ok(balances) = &result {
                this.inner.balances.lock().unwrap().insert(key, balances.clone(), this.inner.clock.now());
            }
            result
        };
        let waiting = match self.inner.balances_in_flight.join_or_spawn(key, usize::MAX, (), fetch) {
            Joined::Shared(waiting) => {
                entry.metrics.balance_cache(true);
                waiting
            }
            Joined::Started(waiting) => {
                if fresh {
                    entry.metrics.balance_fresh_fetch();
                } else {
                    entry.metrics.balance_cache(false);
                }
                waiting
            }
            Joined::Full(()) => unreachable!("no bound on distinct accounts in flight"),
        };
        waiting.await.unwrap_or_else(|| Err(BalanceError { cause: ChainError::Decode("the balance fetch was cancelled".into()) }))
    }

    async fn fetch_balances(&self, network: NetworkId, address: AccountAddress) -> Result<Balances, BalanceError> {
        let entry = self.network(network).map_err(|cause| BalanceError { cause })?;
        let fetched = match address {
            AccountAddress::Evm(address) => fetch_balances(&entry.client, &entry.settings, &self.inner.metadata, address).await,
            AccountAddress::Solana(owner) => {
                crate::solana::rpc::fetch_balances(&entry.client, &entry.settings, &self.inner.mints, owner).await
            }
        };
        let mut balances = fetched.map_err(|cause| BalanceError { cause })?;
        if let Some(prices) = &self.inner.prices {
            let assets: Vec<AssetId> = std::iter::once(balances.native.asset).chain(balances.tokens.iter().map(|t| t.asset)).collect();
            match prices.usd_prices(&assets).await {
                Ok(known) => {
                    balances.native = balances.native.clone().with_price(known.get(&balances.native.asset).copied());
                    for token in &mut balances.tokens {
                        *token = token.clone().with_price(known.get(&token.asset).copied());
                    }
                }
                // Balances without fiat rather than no balances.
                Err(error) => tracing::warn!(%network, %error, "prices unavailable; balances shown without fiat"),
            }
        }
        Ok(balances)
    }

    /// A page of `address`'s activity on `network` (`cursor`: `None` for the newest page). Kept
    /// 30 s per (network, address, cursor) for every session, within the cache's bounds;
    /// concurrent asks for the same page share one fetch; failures are not kept. A mined
    /// transaction from or to the address drops its pages ([`ChainService::receipt`]).
    pub async fn activity(
        &self,
        network: NetworkId,
        address: Option<Address>,
        cursor: Option<&ActivityCursor>,
    ) -> Result<ActivityPage, ActivityError> {
        let address = address.ok_or(ActivityError::MissingAccountAddress)?;
        let entry = self.network(network).map_err(ActivityError::Failed)?;
        let source = entry.activity.clone().ok_or(ActivityError::Failed(ChainError::UnsupportedNetwork(network)))?;
        let key: ActivityKey = (network, address, cursor.cloned());
        let shared = {
            let mut state = self.inner.activity.lock().unwrap();
            if let Some(page) = state.cache.get(&key, self.inner.clock.now()) {
                entry.metrics.activity_cache(true);
                return Ok(page);
            }
            if let Some((_, shared)) = state.in_flight.get(&key) {
                entry.metrics.activity_cache(true);
                shared.clone()
            } else {
                entry.metrics.activity_cache(false);
                let id = state.next_fetch;
                state.next_fetch += 1;
                let (tx, rx) = oneshot::channel();
                let shared = rx.shared();
                state.in_flight.insert(key.clone(), (id, shared.clone()));
                // Its own task, as for balances: the page is stored and leaves the table even if
                // the session that asked goes away.
                let this = self.clone();
                let metrics = entry.metrics.clone();
                tokio::spawn(async move {
                    let result = source.page(address, key.2.as_ref()).await;
                    {
                        let mut state = this.inner.activity.lock().unwrap();
                        // Not ours any more: an invalidation dropped it while it ran.
                        if state.in_flight.get(&key).is_some_and(|(current, _)| *current == id) {
                            state.in_flight.remove(&key);
                            let now = this.inner.clock.now();
                            if let Ok(page) = &result
                                && state.may_store(&key, page, now)
                            {
                                let inserted = state.cache.insert(key, page.clone(), now);
                                if inserted.evicted > 0 {
                                    metrics.activity_pages_dropped("evicted", inserted.evicted);
                                }
                            }
                        }
                    }
                    let _ = tx.send(result);
                });
                shared
            }
        };
        shared.await.unwrap_or_else(|_| Err(ChainError::Decode("the activity fetch was cancelled".into()))).map_err(ActivityError::Failed)
    }

    /// Drops the cached activity pages of `accounts` on `network`, and lets no fetch already in
    /// flight for them store its page: their activity changed in block `mined_in`. Until a newest
    /// page reaching that block is read (or 30 s have passed), their newest page is not kept.
    pub fn invalidate_activity(&self, network: NetworkId, accounts: &[Address], mined_in: u64) {
        if accounts.is_empty() {
            return;
        }
        let now = self.inner.clock.now();
        let mut state = self.inner.activity.lock().unwrap();
        let mut dropped = 0;
        for account in accounts {
            state.set_floor(network, *account, mined_in, now);
            dropped += state.cache.invalidate(network, *account);
            state.in_flight.retain(|(n, a, _), _| !(*n == network && a == account));
        }
        drop(state);
        if dropped > 0
            && let Some(entry) = self.inner.networks.get(&network)
        {
            entry.metrics.activity_pages_dropped("invalidated", dropped);
        }
    }

    /// A read request (one of the builder's `host_reads`, spec §6 safe methods), forwarded to the
    /// network's nodes through the policy, with the answer bound of `[rpc] max_response_bytes`.
    /// Any other method is refused with "Requested RPC call is not allowed" without reaching a
    /// node, and so is an `eth_getLogs` over more than [`MAX_HOST_LOGS_BLOCK_RANGE`] blocks (as a
    /// JSON-RPC -32602 error). The node's JSON-RPC error comes back as [`ChainError::Rpc`]. A
    /// session's host requests go through [`ChainService::host_read`], which bounds answers more.
    /// Counts towards the calls at the nodes at once, not towards any client's share.
    pub async fn request(&self, network: NetworkId, method: &str, params: serde_json::Value) -> Result<serde_json::Value, ChainError> {
        let entry = self.network(network)?;
        self.forward(&entry.client, entry, method, params, None).await
    }

    /// A session host's read request: as [`ChainService::request`], but an answer larger than the
    /// host-read bound ([`DEFAULT_HOST_READ_MAX_RESPONSE_BYTES`]: just over what the session takes)
    /// is refused as it arrives, not read whole first; and `client`, the address of the client it
    /// came from, may hold at most [`ChainServiceBuilder::max_forwarded_per_client`] calls at the
    /// nodes at once.
    pub async fn host_read(
        &self,
        network: NetworkId,
        method: &str,
        params: serde_json::Value,
        client: Option<IpAddr>,
    ) -> Result<serde_json::Value, ChainError> {
        let entry = self.network(network)?;
        self.forward(&entry.host_client, entry, method, params, client).await
    }

    /// `client`: the one that asks `method` (the host reads' answers are bounded more); `entry`'s
    /// own client asks what the range check of an `eth_getLogs` needs (a whole block's header and
    /// transaction hashes may be more than a host read's answer may be).
    async fn forward(
        &self,
        client: &RpcClient,
        entry: &Network,
        method: &str,
        params: serde_json::Value,
        caller: Option<IpAddr>,
    ) -> Result<serde_json::Value, ChainError> {
        if !self.inner.host_reads.contains(&method) {
            return Err(ChainError::MethodNotAllowed { method: method.to_string() });
        }
        let _slot = self.inner.forwarded.try_take(caller).map_err(|refusal| {
            entry.metrics.forwarded_refused(refusal.kind());
            ChainError::Rpc { code: LIMIT_EXCEEDED, message: "limit exceeded".to_string(), data: None }
        })?;
        let params = if params.is_null() { serde_json::Value::Array(vec![]) } else { params };
        // Ethereum's and Solana's JSON-RPC methods take their params by position; by name (which
        // JSON-RPC 2.0 allows, and some nodes read) they would pass checks that read positions.
        if !params.is_array() {
            return Err(ChainError::Rpc { code: -32602, message: format!("{method} takes its params in an array"), data: None });
        }
        if method == "eth_getLogs" {
            check_logs_range(&entry.client, &params).await?;
        }
        let raw: Box<RawValue> = client.request(method.to_string(), params).await?;
        serde_json::from_str(raw.get()).map_err(|e| ChainError::Decode(e.to_string()))
    }

    /// Waits up to `max_wait` for the receipt of the transaction `hash` on `network`, polling less
    /// often as it waits ([`crate::receipt::receipt_poll_delay`]). The hash came from a wallet (the
    /// browser): once mined, the transaction is checked against `expected`, and one sent to another
    /// address is [`ReceiptOutcome::SentElsewhere`], by another account
    /// [`ReceiptOutcome::SentByAnother`], with another value or calldata
    /// [`ReceiptOutcome::OtherCall`].
    /// Once the transfer is mined, the activity pages of the accounts it touched (sender,
    /// recipient, the sides of its token transfers) are dropped before this returns, so the next
    /// page asked is read anew.
    pub async fn receipt(
        &self,
        network: NetworkId,
        hash: B256,
        max_wait: Duration,
        expected: &ExpectedTransaction,
    ) -> Result<ReceiptOutcome, ChainError> {
        let entry = self.network(network)?;
        let outcome = wait_for_receipt(&entry.client, hash, max_wait, self.inner.receipt_poll_interval).await?;
        match outcome {
            ReceiptOutcome::Mined(mined) => match check_mined(&entry.client, mined, expected).await? {
                ReceiptOutcome::Mined(mined) => {
                    self.invalidate_activity(network, &mined.accounts, mined.block_number);
                    Ok(ReceiptOutcome::Mined(mined))
                }
                other => Ok(other),
            },
            other => Ok(other),
        }
    }

    /// A Solana send's transaction from `from` to `to`, built with a recent blockhash (SOL: a
    /// System transfer; SPL: `TransferChecked` with the mint's decimals, the receiver's associated
    /// token account created idempotently when missing), for the wallet to sign.
    pub async fn prepare_solana_transfer(
        &self,
        network: NetworkId,
        from: SolAddress,
        to: SolAddress,
        request: TransferRequest,
    ) -> Result<PreparedTransaction, ChainError> {
        if !network.is_solana() {
            return Err(ChainError::UnsupportedNetwork(network));
        }
        let entry = self.network(network)?;
        crate::solana::rpc::prepare_transfer(&entry.client, network, &self.inner.mints, from, to, request).await
    }

    /// Sends a transaction the wallet signed, after checking it is `message` (the bytes the
    /// server built) signed by `payer`. Gives its signature.
    pub async fn send_solana_transaction(
        &self,
        network: NetworkId,
        message: &[u8],
        signed: &[u8],
        payer: SolAddress,
    ) -> Result<String, SolanaSendError> {
        if !network.is_solana() {
            return Err(SolanaSendError::Chain(ChainError::UnsupportedNetwork(network)));
        }
        let entry = self.network(network).map_err(SolanaSendError::Chain)?;
        let checked = check_signed(message, signed, &payer).map_err(SolanaSendError::Signed)?;
        let signature = checked.signature;
        let sent = crate::solana::rpc::send_transaction(&entry.client, &checked.wire).await.map_err(SolanaSendError::Chain)?;
        if sent != signature {
            tracing::warn!(%network, "the node reported another signature than the transaction's");
        }
        Ok(signature)
    }

    /// Waits up to `max_wait` for the Solana transaction `signature` to be confirmed.
    pub async fn signature_status(&self, network: NetworkId, signature: &str, max_wait: Duration) -> Result<SignatureOutcome, ChainError> {
        let entry = self.network(network)?;
        crate::solana::rpc::wait_for_signature(&entry.client, signature, max_wait, self.inner.receipt_poll_interval).await
    }

    /// The transaction a send form asks for, validated with the spec's messages.
    pub fn prepare_send(&self, network: NetworkId, form: &SendForm) -> Result<SendCall, SendError> {
        build_send(form, self.supports(network))
    }
}

/// Refuses an `eth_getLogs` whose filter spans more than [`MAX_HOST_LOGS_BLOCK_RANGE`] blocks, with
/// -32602. The node is asked for its head (`eth_blockNumber`) only when the range ends at a tag
/// ("latest", "safe", "finalized", "pending" or none) and starts at a number or "earliest".
async fn check_logs_range(client: &RpcClient, params: &serde_json::Value) -> Result<(), ChainError> {
    let refuse = |message: String| ChainError::Rpc { code: -32602, message, data: None };
    let (from, to, from_words) = match logs_range(params, MAX_HOST_LOGS_BLOCK_RANGE).map_err(refuse)? {
        LogsRange::Bounded => return Ok(()),
        LogsRange::ToHead { from } => (from, None, format!("block {from}")),
        LogsRange::FromTag { tag, to } => {
            // `safe` and `finalized` may lag the head by more than the bound (on some chains by
            // hours of blocks): the node is asked which block the tag names.
            let block: Option<serde_json::Value> = client.request("eth_getBlockByNumber", (tag, false)).await?;
            let number = block.as_ref().and_then(|b| b.get("number")).and_then(serde_json::Value::as_str);
            let Some(from) = number.and_then(|n| n.strip_prefix("0x")).and_then(|n| u64::from_str_radix(n, 16).ok()) else {
                // A node that names no such block answers the logs call with its own error.
                return Ok(());
            };
            (from, to, format!("the {tag} block ({from})"))
        }
    };
    let (to, to_words) = match to {
        Some(to) => (to, format!("block {to}")),
        None => {
            let head: alloy::primitives::U64 = client.request("eth_blockNumber", ()).await?;
            (head.to::<u64>(), "the head".to_string())
        }
    };
    let span = to.saturating_sub(from).saturating_add(1);
    if to >= from && span > MAX_HOST_LOGS_BLOCK_RANGE {
        return Err(refuse(format!(
            "eth_getLogs from {from_words} to {to_words} spans {span} blocks; at most {MAX_HOST_LOGS_BLOCK_RANGE} at once"
        )));
    }
    Ok(())
}

/// What [`logs_range`] found of an `eth_getLogs` filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogsRange {
    /// One block (`blockHash`), a range within the bound, or one starting at the head (`latest`,
    /// `pending`, no `fromBlock`).
    Bounded,
    /// From block `from` to the head (`latest`, `safe`, `finalized`, `pending`, no `toBlock`: the
    /// head is the highest they can be): within the bound only if the head is close enough.
    ToHead { from: u64 },
    /// From the block `tag` (`safe` or `finalized`) names, which may be far below the head, to
    /// block `to`, or to the head (`None`).
    FromTag { tag: &'static str, to: Option<u64> },
}

/// The block range of `eth_getLogs` params (`[filter]`), checked against `max` blocks: pure.
/// `Err` (the message for -32602) when both ends are known and more than `max` blocks apart, an
/// end is neither a hex quantity nor a block tag, or the params are not one filter object in an
/// array: a node that reads params by name (`{"filter": {...}}`, which JSON-RPC 2.0 allows) would
/// otherwise run a range this check never saw (an outside review).
pub fn logs_range(params: &serde_json::Value, max: u64) -> Result<LogsRange, String> {
    use serde_json::Value;
    let filter = match params.as_array().map(Vec::as_slice) {
        Some([Value::Object(filter)]) => filter,
        _ => {
            return Err("eth_getLogs takes one filter object in an array: [{ fromBlock, toBlock, address, topics, blockHash }]".to_string());
        }
    };
    // Only the filter's own keys, spelled exactly: Go's JSON decoding (geth, erigon) matches keys
    // whatever their case, so a `FromBlock` this check did not read would be the node's range.
    if let Some(other) = filter.keys().find(|key| !matches!(key.as_str(), "fromBlock" | "toBlock" | "address" | "topics" | "blockHash")) {
        return Err(format!("an eth_getLogs filter takes fromBlock, toBlock, address, topics or blockHash, not {other:?}"));
    }
    if filter.get("blockHash").is_some_and(|h| !h.is_null()) {
        return Ok(LogsRange::Bounded);
    }
    /// One end of the range.
    enum End {
        Number(u64),
        /// `latest`, `pending`, or none given.
        Head,
        /// `safe` or `finalized`: at or below the head, by how much only the node knows.
        Behind(&'static str),
    }
    fn end(name: &str, value: Option<&Value>) -> Result<End, String> {
        match value {
            None | Some(Value::Null) => Ok(End::Head),
            Some(Value::String(tag)) if matches!(tag.as_str(), "latest" | "pending") => Ok(End::Head),
            Some(Value::String(tag)) if tag == "safe" => Ok(End::Behind("safe")),
            Some(Value::String(tag)) if tag == "finalized" => Ok(End::Behind("finalized")),
            Some(Value::String(tag)) if tag == "earliest" => Ok(End::Number(0)),
            Some(Value::String(hex)) => hex
                .strip_prefix("0x")
                .filter(|digits| !digits.is_empty())
                .and_then(|digits| u64::from_str_radix(digits, 16).ok())
                .map(End::Number)
                .ok_or_else(|| format!("{name} is not a block number (hex) or tag: {hex:?}")),
            Some(other) => Err(format!("{name} is not a block number (hex) or tag: {other}")),
        }
    }
    let from = end("fromBlock", filter.get("fromBlock"))?;
    let to = end("toBlock", filter.get("toBlock"))?;
    match (from, to) {
        (End::Head, _) => Ok(LogsRange::Bounded),
        (End::Behind(tag), End::Number(to)) => Ok(LogsRange::FromTag { tag, to: Some(to) }),
        // To `safe` from `finalized` (or the same tag) is at most the head from there.
        (End::Behind(tag), End::Head | End::Behind(_)) => Ok(LogsRange::FromTag { tag, to: None }),
        (End::Number(from), End::Head | End::Behind(_)) => Ok(LogsRange::ToHead { from }),
        (End::Number(from), End::Number(to)) => {
            let span = to.saturating_sub(from).saturating_add(1);
            if to >= from && span > max {
                return Err(format!("eth_getLogs from block {from} to {to} spans {span} blocks; at most {max} at once"));
            }
            Ok(LogsRange::Bounded)
        }
    }
}

/// Why a signed Solana transaction was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SolanaSendError {
    #[error(transparent)]
    Signed(SignedTransactionError),
    #[error(transparent)]
    Chain(ChainError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_logs_range_is_checked_when_both_ends_are_known() {
        let range = |from: serde_json::Value, to: serde_json::Value| logs_range(&json!([{ "fromBlock": from, "toBlock": to }]), 10_000);
        assert_eq!(range(json!("0x0"), json!("0x270f")), Ok(LogsRange::Bounded), "10,000 blocks");
        assert!(range(json!("0x0"), json!("0x2710")).unwrap_err().contains("spans 10001 blocks"));
        assert!(range(json!("earliest"), json!("0x2710")).is_err());
        assert_eq!(range(json!("0x10"), json!("0x1")), Ok(LogsRange::Bounded), "an empty range is the node's to answer");
        assert_eq!(range(json!("earliest"), json!("latest")), Ok(LogsRange::ToHead { from: 0 }));
        assert_eq!(range(json!("0x64"), json!(null)), Ok(LogsRange::ToHead { from: 100 }));
        assert_eq!(logs_range(&json!([{ "fromBlock": "0x64" }]), 10_000), Ok(LogsRange::ToHead { from: 100 }));
        assert_eq!(range(json!("latest"), json!("0xffffffff")), Ok(LogsRange::Bounded), "from the head on");
        assert_eq!(logs_range(&json!([{}]), 10_000), Ok(LogsRange::Bounded), "latest to latest");
        assert_eq!(range(json!("0x64"), json!("finalized")), Ok(LogsRange::ToHead { from: 100 }), "at most the head");
        assert_eq!(range(json!("finalized"), json!(null)), Ok(LogsRange::FromTag { tag: "finalized", to: None }));
        assert_eq!(range(json!("safe"), json!("latest")), Ok(LogsRange::FromTag { tag: "safe", to: None }));
        assert_eq!(range(json!("finalized"), json!("safe")), Ok(LogsRange::FromTag { tag: "finalized", to: None }));
        assert_eq!(range(json!("safe"), json!("0x2710")), Ok(LogsRange::FromTag { tag: "safe", to: Some(10_000) }));
        assert_eq!(
            logs_range(&json!([{ "blockHash": "0xab", "fromBlock": "0x0", "toBlock": "0xffffff" }]), 10_000),
            Ok(LogsRange::Bounded)
        );
        for bad in [json!(12), json!("12"), json!("0x"), json!("0xzz"), json!("oldest"), json!({ "blockNumber": "0x1" })] {
            assert!(range(bad.clone(), json!("latest")).is_err(), "{bad}");
        }
        // Params of any other shape are refused (an outside review: by name, they reached the node
        // unchecked); the positive probe is every accepted `[filter]` above.
        for shape in [
            json!("not a filter"),
            json!({ "filter": { "fromBlock": "0x0", "toBlock": "0xffffff" } }),
            json!({ "fromBlock": "0x0", "toBlock": "0xffffff" }),
            json!([]),
            json!([{ "fromBlock": "0x0" }, { "toBlock": "0xffffff" }]),
            json!(["0x0"]),
            json!(null),
        ] {
            assert!(logs_range(&shape, 10_000).unwrap_err().contains("one filter object"), "{shape}");
        }
        // A key spelled otherwise, which a Go node would read as `fromBlock`, is refused (the
        // positive probe: spelled exactly, with the other keys of a filter, it is checked).
        for key in ["FromBlock", "fromblock", "TOBLOCK", "blockhash", "extra"] {
            assert!(logs_range(&json!([{ key: "0x0" }]), 10_000).unwrap_err().contains(key), "{key}");
        }
        let full = json!([{ "fromBlock": "0x0", "toBlock": "0x10", "address": "0x00", "topics": [] }]);
        assert_eq!(logs_range(&full, 10_000), Ok(LogsRange::Bounded));
    }
}
