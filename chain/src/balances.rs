//! Balances (spec §3 Token balance, §5 Filtering and Display, §7 Token balances): the native
//! balance and the configured ERC-20s of an address, read in one JSON-RPC batch, kept 30 s.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use alloy::primitives::{Address, Bytes, U256};
use alloy::rpc::client::{RpcClient, Waiter};
use alloy::sol_types::SolCall;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::time::Instant;

use crate::amount::{Amount, BALANCE_DISPLAY_DECIMALS, FiatValue, Price};
use crate::config::{NetworkSettings, TokenSettings};
use crate::erc20::{IERC20, decode_decimals, decode_symbol};
use crate::prices::AssetId;
use crate::{ChainError, NetworkId};

/// How long balances are reused for the same (address, network), across sessions (spec §9).
pub const BALANCE_CACHE_TTL: Duration = Duration::from_secs(30);

/// An address's balances on one network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Balances {
    pub network: NetworkId,
    pub address: AccountAddress,
    pub native: AssetBalance,
    /// The configured tokens, in configuration order; tokens with zero decimals, and tokens whose
    /// contract did not answer the ERC-20 calls, are left out.
    pub tokens: Vec<AssetBalance>,
}

/// An account on a network: an EVM address or a Solana public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccountAddress {
    Evm(Address),
    Solana(crate::solana::SolAddress),
}

impl std::fmt::Display for AccountAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Evm(a) => write!(f, "{a}"),
            Self::Solana(a) => write!(f, "{a}"),
        }
    }
}

impl Serialize for AccountAddress {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AccountAddress {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if let Some(a) = crate::send::parse_evm_address(&text) {
            return Ok(Self::Evm(a));
        }
        crate::solana::parse_solana_address(&text).map(Self::Solana).ok_or_else(|| serde::de::Error::custom("not an EVM or Solana address"))
    }
}

/// One asset's balance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssetBalance {
    pub asset: AssetId,
    pub symbol: String,
    pub name: Option<String>,
    pub icon_url: Option<String>,
    pub amount: Amount,
    /// Only with a price source that knows the asset.
    pub usd_price: Option<Price>,
    /// `amount × usd_price`, floored to the cent.
    pub usd_value: Option<FiatValue>,
}

impl AssetBalance {
    /// The amount as shown: floored to 3 decimals.
    pub fn display_amount(&self) -> String {
        self.amount.floor_to(BALANCE_DISPLAY_DECIMALS)
    }

    /// The fiat value as shown, `1234.56`, when there is one.
    pub fn display_usd_value(&self) -> Option<String> {
        self.usd_value.map(|v| v.to_string())
    }

    pub fn with_price(mut self, price: Option<Price>) -> Self {
        self.usd_price = price;
        self.usd_value = price.map(|p| self.amount.fiat_value(&p));
        self
    }
}

/// Values kept for a time, read with the time passed in (so tests control it).
#[derive(Debug)]
pub struct TtlCache<K, V> {
    ttl: Duration,
    max_entries: usize,
    entries: HashMap<K, (Instant, V)>,
}

impl<K: Eq + Hash + Clone, V: Clone> TtlCache<K, V> {
    pub fn new(ttl: Duration, max_entries: usize) -> Self {
        Self { ttl, max_entries: max_entries.max(1), entries: HashMap::new() }
    }

    /// The value stored less than `ttl` before `now`.
    pub fn get(&self, key: &K, now: Instant) -> Option<V> {
        self.entries.get(key).filter(|(at, _)| now.saturating_duration_since(*at) < self.ttl).map(|(_, v)| v.clone())
    }

    /// Stores `value` as of `now`. When full, expired entries go first, then the oldest.
    pub fn insert(&mut self, key: K, value: V, now: Instant) {
        if self.entries.len() >= self.max_entries && !self.entries.contains_key(&key) {
            let ttl = self.ttl;
            self.entries.retain(|_, (at, _)| now.saturating_duration_since(*at) < ttl);
            if self.entries.len() >= self.max_entries
                && let Some(oldest) = self.entries.iter().min_by_key(|(_, (at, _))| *at).map(|(k, _)| k.clone())
            {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(key, (now, value));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// What a token contract says about itself (it does not change, so it is kept for good). Only
/// metadata within the bounds of [`crate::erc20`] is ever made from a contract's answers (a symbol
/// of at most 32 printable characters, at most 36 decimals), so the cache's entries are small.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenMetadata {
    pub symbol: String,
    pub decimals: u8,
}

/// Token metadata by (network, contract), shared by balances and activity.
#[derive(Debug, Default)]
pub struct TokenMetadataCache {
    known: Mutex<HashMap<(NetworkId, Address), TokenMetadata>>,
}

impl TokenMetadataCache {
    /// More distinct tokens than this (activity meets arbitrary contracts) are not remembered. With
    /// symbols of at most 32 characters, the cache stays within a few MiB. Metadata that was
    /// refused is not kept at all (the token stays unknown, and is asked again when met again).
    const MAX_TOKENS: usize = 50_000;

    pub fn get(&self, network: NetworkId, token: Address) -> Option<TokenMetadata> {
        self.known.lock().unwrap().get(&(network, token)).cloned()
    }

    /// How many tokens' metadata is kept.
    pub fn len(&self) -> usize {
        self.known.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn insert(&self, network: NetworkId, token: Address, metadata: TokenMetadata) {
        let mut known = self.known.lock().unwrap();
        if known.len() < Self::MAX_TOKENS {
            known.insert((network, token), metadata);
        }
    }

    /// Metadata from the configuration alone, when it states both symbol and decimals.
    fn from_settings(token: &TokenSettings) -> Option<TokenMetadata> {
        Some(TokenMetadata { symbol: token.symbol.clone()?, decimals: token.decimals? })
    }
}

fn eth_call_params(to: Address, data: Vec<u8>) -> (serde_json::Value, &'static str) {
    (json!({ "to": to, "data": Bytes::from(data) }), "latest")
}

/// Waiters for one token's calls in the batch.
struct TokenCalls {
    balance: Waiter<Bytes>,
    decimals: Option<Waiter<Bytes>>,
    symbol: Option<Waiter<Bytes>>,
}

/// Reads `address`'s balances on `network` in ONE JSON-RPC batch: `eth_getBalance`, and for each
/// configured token `balanceOf`, plus `decimals`/`symbol` for tokens whose metadata is not yet
/// known. A token whose calls fail (not an ERC-20, reverts) is left out; a batch that gets no
/// answer is an error.
pub async fn fetch_balances(
    client: &RpcClient,
    network: &NetworkSettings,
    metadata: &TokenMetadataCache,
    address: Address,
) -> Result<Balances, ChainError> {
    let mut batch = client.new_batch();
    let native = batch.add_call::<_, U256>("eth_getBalance", &(address, "latest"))?;
    let mut calls = Vec::with_capacity(network.tokens.len());
    for token in &network.tokens {
        let known = metadata.get(network.id, token.address).or_else(|| TokenMetadataCache::from_settings(token));
        let balance_of = IERC20::balanceOfCall { owner: address }.abi_encode();
        let balance = batch.add_call("eth_call", &eth_call_params(token.address, balance_of))?;
        let (decimals, symbol) = if known.is_some() {
            (None, None)
        } else {
            let decimals = token
                .decimals
                .is_none()
                .then(|| batch.add_call("eth_call", &eth_call_params(token.address, IERC20::decimalsCall {}.abi_encode())))
                .transpose()?;
            let symbol = token
                .symbol
                .is_none()
                .then(|| batch.add_call("eth_call", &eth_call_params(token.address, IERC20::symbolCall {}.abi_encode())))
                .transpose()?;
            (decimals, symbol)
        };
        calls.push(TokenCalls { balance, decimals, symbol });
    }
    batch.send().await?;

    let native_amount = Amount::new(native.await?, network.native_currency.decimals);
    let native = AssetBalance {
        asset: AssetId::Native(network.id),
        symbol: network.native_currency.symbol.clone(),
        name: Some(network.native_currency.name.clone()),
        icon_url: None,
        amount: native_amount,
        usd_price: None,
        usd_value: None,
    };
    let mut tokens = Vec::new();
    for (token, calls) in network.tokens.iter().zip(calls) {
        match read_token(network.id, token, calls, metadata).await {
            Ok(Some(balance)) => tokens.push(balance),
            Ok(None) => {}
            Err(error) => {
                tracing::debug!(network = %network.id, token = %token.address, %error, "token left out of balances");
            }
        }
    }
    Ok(Balances { network: network.id, address: AccountAddress::Evm(address), native, tokens })
}

/// One token's balance from its answers; `None` for a token with zero decimals (spec §5).
async fn read_token(
    network: NetworkId,
    token: &TokenSettings,
    calls: TokenCalls,
    metadata: &TokenMetadataCache,
) -> Result<Option<AssetBalance>, ChainError> {
    let decode = |e: alloy::sol_types::Error| ChainError::Decode(e.to_string());
    let raw = IERC20::balanceOfCall::abi_decode_returns(&calls.balance.await?).map_err(decode)?;
    let known = match metadata.get(network, token.address).or_else(|| TokenMetadataCache::from_settings(token)) {
        Some(known) => known,
        None => {
            let decimals = match (token.decimals, calls.decimals) {
                (Some(d), _) => d,
                (None, Some(waiter)) => decode_decimals(&waiter.await?).ok_or_else(|| ChainError::Decode("decimals()".into()))?,
                (None, None) => return Err(ChainError::Decode("decimals were not asked".into())),
            };
            let symbol = match (&token.symbol, calls.symbol) {
                (Some(s), _) => s.clone(),
                (None, Some(waiter)) => decode_symbol(&waiter.await?).ok_or_else(|| ChainError::Decode("symbol()".into()))?,
                (None, None) => return Err(ChainError::Decode("symbol was not asked".into())),
            };
            let known = TokenMetadata { symbol, decimals };
            metadata.insert(network, token.address, known.clone());
            known
        }
    };
    if known.decimals == 0 {
        return Ok(None);
    }
    Ok(Some(AssetBalance {
        asset: AssetId::Erc20(network, token.address),
        symbol: known.symbol,
        name: token.name.clone(),
        icon_url: token.icon_url.clone(),
        amount: Amount::new(raw, known.decimals),
        usd_price: None,
        usd_value: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_values_last_exactly_the_ttl() {
        let t0 = Instant::now();
        let mut cache = TtlCache::new(BALANCE_CACHE_TTL, 10);
        cache.insert("k", 1, t0);
        assert_eq!(cache.get(&"k", t0), Some(1));
        assert_eq!(cache.get(&"k", t0 + Duration::from_millis(29_999)), Some(1));
        assert_eq!(cache.get(&"k", t0 + BALANCE_CACHE_TTL), None);
        assert_eq!(cache.get(&"other", t0), None);
    }

    #[test]
    fn a_full_cache_drops_expired_then_oldest_entries() {
        let t0 = Instant::now();
        let mut cache = TtlCache::new(Duration::from_secs(30), 2);
        cache.insert(1, "a", t0);
        cache.insert(2, "b", t0 + Duration::from_secs(1));
        cache.insert(3, "c", t0 + Duration::from_secs(2));
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&1, t0 + Duration::from_secs(2)), None, "the oldest went");
        cache.insert(4, "d", t0 + Duration::from_secs(40));
        assert_eq!(cache.len(), 1, "expired entries went first");
    }

    #[test]
    fn display_floors_the_amount_and_shows_fiat_only_with_a_price() {
        let balance = AssetBalance {
            asset: AssetId::Native(NetworkId::eip155(1)),
            symbol: "ETH".into(),
            name: None,
            icon_url: None,
            amount: Amount::parse("1.23456", 18).unwrap(),
            usd_price: None,
            usd_value: None,
        };
        assert_eq!(balance.display_amount(), "1.234");
        assert_eq!(balance.display_usd_value(), None);
        let priced = balance.with_price(Some(Price::parse("2000.999").unwrap()));
        assert_eq!(priced.display_usd_value().as_deref(), Some("2470.35"));
    }
}
