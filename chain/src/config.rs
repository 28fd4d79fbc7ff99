//! Configuration of the chain service, meant to sit in the gateway's config file:
//!
//! ```toml
//! [networks."eip155:31337"]
//! rpc_urls = ["http://127.0.0.1:8545", "http://127.0.0.1:8546"]
//! tokens = [{ address = "0x5FbDB2315678afecb367f032d93F642f64180aa3" }]
//! activity = { source = "otterscan" }
//!
//! [rpc]            # the spec's policy; every field optional
//! attempt_timeout = "10s"
//!
//! [prices]         # optional; without it no fiat value is ever shown
//! source = "static"
//! usd = { "eip155:1/native" = "3000.00" }
//! ```
//!
//! No network has an endpoint unless configured: the networks of the catalogue get none by default.
//! Unknown keys are errors, and [`ChainConfig::validate`] names the field at fault.

use std::collections::BTreeMap;

use alloy::primitives::Address;
use alloy::transports::http::reqwest::Url;
use serde::{Deserialize, Serialize};

use crate::NetworkId;
use crate::amount::Price;
use crate::network::ChainKind;
use crate::prices::AssetId;
use crate::rpc::RpcPolicy;
use crate::send::parse_evm_address;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainConfig {
    /// By CAIP-2 id (`"eip155:1"`).
    #[serde(default)]
    pub networks: BTreeMap<String, NetworkConfig>,
    #[serde(default)]
    pub rpc: RpcPolicy,
    #[serde(default)]
    pub prices: Option<PriceSourceConfig>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// JSON-RPC endpoints, in order of preference: the next is used when one fails.
    pub rpc_urls: Vec<String>,
    /// The native currency; Ether (18 decimals) when absent.
    #[serde(default)]
    pub native_currency: Option<NativeCurrency>,
    /// ERC-20 tokens whose balances are shown, in this order.
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
    #[serde(default)]
    pub activity: ActivityConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NativeCurrency {
    pub name: String,
    pub symbol: String,
    pub decimals: u8,
}

impl Default for NativeCurrency {
    fn default() -> Self {
        Self { name: "Ether".into(), symbol: "ETH".into(), decimals: 18 }
    }
}

impl NativeCurrency {
    /// A Solana network's native currency (9 decimals: lamports).
    pub fn sol() -> Self {
        Self { name: "Solana".into(), symbol: "SOL".into(), decimals: 9 }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    pub address: String,
    /// Read from the contract (`symbol()`, `decimals()`) when absent.
    #[serde(default)]
    pub symbol: Option<String>,
    #[serde(default)]
    pub decimals: Option<u8>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub icon_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ActivityConfig {
    pub source: ActivitySourceKind,
    /// The least number of transactions a page asks the node for (pages hold whole blocks).
    pub page_size: u32,
    /// The most blocks one `eth_getLogs` for incoming token transfers may span; a page covering
    /// more blocks is cut (its cursor then continues below the cut).
    pub max_log_block_range: u64,
}

impl Default for ActivityConfig {
    fn default() -> Self {
        Self { source: ActivitySourceKind::Otterscan, page_size: 20, max_log_block_range: 100_000 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivitySourceKind {
    /// The node's Otterscan API plus `eth_getLogs` (anvil, erigon, reth).
    Otterscan,
    /// No activity for this network.
    None,
}

/// Where fiat prices come from. Without one, no fiat value is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case", deny_unknown_fields)]
pub enum PriceSourceConfig {
    /// Prices in USD stated by the operator, by CAIP-19 asset id (`eip155:1/native` for the
    /// native currency, `eip155:1/erc20:0x…` for a token), e.g. for stablecoins or a demo.
    Static { usd: BTreeMap<String, String> },
}

/// A configuration error, naming the field (`networks."eip155:1".rpc_urls[0]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

fn error(field: impl Into<String>, message: impl ToString) -> ConfigError {
    ConfigError { field: field.into(), message: message.to_string() }
}

/// A network's configuration, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSettings {
    pub id: NetworkId,
    pub rpc_urls: Vec<Url>,
    pub native_currency: NativeCurrency,
    /// ERC-20 tokens (eip155 networks; empty on Solana).
    pub tokens: Vec<TokenSettings>,
    /// SPL mints (Solana networks; empty on eip155).
    pub spl_tokens: Vec<SplTokenSettings>,
    pub activity: ActivityConfig,
}

/// An SPL mint whose balance is shown (a Solana network's `tokens`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplTokenSettings {
    pub mint: crate::solana::SolAddress,
    /// SPL mints carry no symbol of their own (it lives in optional metadata accounts), so a
    /// Solana token's symbol is configured.
    pub symbol: String,
    /// Read from the mint account when absent.
    pub decimals: Option<u8>,
    pub name: Option<String>,
    pub icon_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSettings {
    pub address: Address,
    pub symbol: Option<String>,
    pub decimals: Option<u8>,
    pub name: Option<String>,
    pub icon_url: Option<String>,
}

impl ChainConfig {
    /// Checks everything a value's type does not: ids, URLs, addresses, prices, policy bounds.
    pub fn validate(&self) -> Result<Vec<NetworkSettings>, ConfigError> {
        self.validate_policy()?;
        if let Some(PriceSourceConfig::Static { usd }) = &self.prices {
            for (asset, price) in usd {
                let field = format!("prices.usd.{asset:?}");
                asset.parse::<AssetId>().map_err(|e| error(&field, e))?;
                Price::parse(price).map_err(|e| error(&field, e))?;
            }
        }
        self.networks.iter().map(|(key, network)| network.validate(key)).collect()
    }

    fn validate_policy(&self) -> Result<(), ConfigError> {
        let rpc = &self.rpc;
        if rpc.attempt_timeout.is_zero() {
            return Err(error("rpc.attempt_timeout", "must be more than zero"));
        }
        if rpc.call_timeout.is_some_and(|t| t.is_zero()) {
            return Err(error("rpc.call_timeout", "must be more than zero"));
        }
        if rpc.max_batch_size == 0 {
            return Err(error("rpc.max_batch_size", "must be at least 1"));
        }
        if rpc.max_response_bytes < 1024 {
            return Err(error("rpc.max_response_bytes", "at least 1024 (a JSON-RPC answer with its envelope)"));
        }
        if rpc.max_retries > 10 {
            return Err(error("rpc.max_retries", "at most 10 (each retry waits twice as long as the last)"));
        }
        Ok(())
    }
}

impl NetworkConfig {
    fn validate(&self, key: &str) -> Result<NetworkSettings, ConfigError> {
        let at = |field: &str| format!("networks.{key:?}.{field}");
        let id: NetworkId = key.parse().map_err(|e| error(format!("networks.{key:?}"), e))?;
        if self.rpc_urls.is_empty() {
            return Err(error(at("rpc_urls"), "list at least one JSON-RPC endpoint (or leave the network out)"));
        }
        let rpc_urls = self
            .rpc_urls
            .iter()
            .enumerate()
            .map(|(i, text)| parse_rpc_url(text).map_err(|e| error(at(&format!("rpc_urls[{i}]")), e)))
            .collect::<Result<Vec<_>, _>>()?;
        let native_currency = self.native_currency.clone().unwrap_or_else(|| match id.kind() {
            ChainKind::Evm => NativeCurrency::default(),
            ChainKind::Solana => NativeCurrency::sol(),
        });
        if native_currency.symbol.trim().is_empty() {
            return Err(error(at("native_currency.symbol"), "must not be empty"));
        }
        if id.is_solana() {
            if native_currency.decimals != 9 {
                return Err(error(at("native_currency.decimals"), "SOL has 9 decimals (lamports)"));
            }
            let spl_tokens = self.validate_spl_tokens(&at)?;
            // Spec §9: activity is an eip155 feature; a Solana network has no activity source.
            let activity = ActivityConfig { source: ActivitySourceKind::None, ..self.activity.clone() };
            return Ok(NetworkSettings { id, rpc_urls, native_currency, tokens: vec![], spl_tokens, activity });
        }
        let mut tokens = Vec::with_capacity(self.tokens.len());
        for (i, token) in self.tokens.iter().enumerate() {
            let address = parse_evm_address(&token.address)
                .ok_or_else(|| error(at(&format!("tokens[{i}].address")), "not an address (0x and 40 hex digits)"))?;
            if tokens.iter().any(|t: &TokenSettings| t.address == address) {
                return Err(error(at(&format!("tokens[{i}].address")), "listed twice"));
            }
            if let Some(icon) = &token.icon_url {
                Url::parse(icon).map_err(|e| error(at(&format!("tokens[{i}].icon_url")), e))?;
            }
            tokens.push(TokenSettings {
                address,
                symbol: token.symbol.clone(),
                decimals: token.decimals,
                name: token.name.clone(),
                icon_url: token.icon_url.clone(),
            });
        }
        if self.activity.page_size == 0 {
            return Err(error(at("activity.page_size"), "must be at least 1"));
        }
        if self.activity.max_log_block_range == 0 {
            return Err(error(at("activity.max_log_block_range"), "must be at least 1"));
        }
        Ok(NetworkSettings { id, rpc_urls, native_currency, tokens, spl_tokens: vec![], activity: self.activity.clone() })
    }

    /// A Solana network's `tokens`: SPL mints (base58 addresses) with a configured symbol.
    fn validate_spl_tokens(&self, at: &dyn Fn(&str) -> String) -> Result<Vec<SplTokenSettings>, ConfigError> {
        let mut tokens: Vec<SplTokenSettings> = Vec::with_capacity(self.tokens.len());
        for (i, token) in self.tokens.iter().enumerate() {
            let field = |name: &str| at(&format!("tokens[{i}].{name}"));
            let mint = crate::solana::parse_solana_address(&token.address)
                .ok_or_else(|| error(field("address"), "not a Solana mint address (32 to 44 base58 characters naming 32 bytes)"))?;
            if tokens.iter().any(|t| t.mint == mint) {
                return Err(error(field("address"), "listed twice"));
            }
            let symbol = token
                .symbol
                .clone()
                .filter(|s| !s.trim().is_empty())
                .ok_or_else(|| error(field("symbol"), "an SPL mint has no symbol of its own: configure one"))?;
            if token.decimals == Some(0) {
                return Err(error(field("decimals"), "tokens with zero decimals are never shown (spec §5)"));
            }
            if let Some(icon) = &token.icon_url {
                Url::parse(icon).map_err(|e| error(field("icon_url"), e))?;
            }
            tokens.push(SplTokenSettings {
                mint,
                symbol,
                decimals: token.decimals,
                name: token.name.clone(),
                icon_url: token.icon_url.clone(),
            });
        }
        Ok(tokens)
    }
}

/// An RPC endpoint URL: `http` or `https` (TLS through rustls with the ring provider; decision
/// 0906), with a host.
fn parse_rpc_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some() => Ok(url),
        "http" | "https" => Err("the URL has no host".into()),
        other => Err(format!("JSON-RPC endpoints are http(s) URLs, not {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(urls: &[&str]) -> NetworkConfig {
        NetworkConfig { rpc_urls: urls.iter().map(|u| u.to_string()).collect(), ..Default::default() }
    }

    fn config(key: &str, network: NetworkConfig) -> ChainConfig {
        ChainConfig { networks: [(key.to_string(), network)].into(), ..Default::default() }
    }

    #[test]
    fn no_network_has_an_endpoint_by_default() {
        assert_eq!(ChainConfig::default().validate(), Ok(vec![]));
    }

    #[test]
    fn a_valid_network_is_checked_into_settings() {
        let mut n = network(&["http://127.0.0.1:8545"]);
        n.tokens.push(TokenConfig { address: "5fbdb2315678afecb367f032d93f642f64180aa3".into(), ..Default::default() });
        let settings = config("eip155:31337", n).validate().unwrap();
        assert_eq!(settings[0].id, NetworkId::eip155(31337));
        assert_eq!(settings[0].native_currency.symbol, "ETH");
        assert_eq!(settings[0].tokens[0].address.to_string(), "0x5FbDB2315678afecb367f032d93F642f64180aa3");
    }

    const DEVNET: &str = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
    const MINT: &str = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";

    #[test]
    fn a_solana_network_takes_spl_mints_with_a_symbol() {
        let mut n = network(&["http://127.0.0.1:8899"]);
        n.tokens.push(TokenConfig { address: MINT.into(), symbol: Some("USDC".into()), ..Default::default() });
        let settings = config(DEVNET, n).validate().unwrap();
        assert_eq!(settings[0].id.to_string(), DEVNET);
        assert_eq!((settings[0].native_currency.symbol.as_str(), settings[0].native_currency.decimals), ("SOL", 9));
        assert_eq!(settings[0].spl_tokens[0].mint.to_string(), MINT);
        assert_eq!(settings[0].spl_tokens[0].decimals, None, "read from the mint");
        assert!(settings[0].tokens.is_empty());
        assert_eq!(settings[0].activity.source, ActivitySourceKind::None);
    }

    #[test]
    fn solana_configuration_errors_name_the_field() {
        let e = config("solana:mainnet", network(&["http://x"])).validate().unwrap_err();
        assert_eq!(e.field, r#"networks."solana:mainnet""#);
        assert!(e.message.contains("genesis hash"), "{e}");
        let mut n = network(&["http://x"]);
        n.tokens.push(TokenConfig {
            address: "0x5fbdb2315678afecb367f032d93f642f64180aa3".into(),
            symbol: Some("X".into()),
            ..Default::default()
        });
        let e = config(DEVNET, n).validate().unwrap_err();
        assert_eq!(e.field, r#"networks."solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1".tokens[0].address"#);
        let mut n = network(&["http://x"]);
        n.tokens.push(TokenConfig { address: MINT.into(), ..Default::default() });
        let e = config(DEVNET, n).validate().unwrap_err();
        assert_eq!(e.field, r#"networks."solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1".tokens[0].symbol"#);
        let mut n = network(&["http://x"]);
        n.native_currency = Some(NativeCurrency { decimals: 18, ..NativeCurrency::sol() });
        let e = config(DEVNET, n).validate().unwrap_err();
        assert!(e.field.ends_with("native_currency.decimals"), "{e}");
    }

    #[test]
    fn errors_name_the_field() {
        let e = config("bip122:000000000019d6689c085ae165831e93", network(&["http://x"])).validate().unwrap_err();
        assert_eq!(e.field, r#"networks."bip122:000000000019d6689c085ae165831e93""#);
        let e = config("eip155:1", network(&[])).validate().unwrap_err();
        assert_eq!(e.field, r#"networks."eip155:1".rpc_urls"#);
        let e = config("eip155:1", network(&["http://a", "ftp://b"])).validate().unwrap_err();
        assert_eq!(e.field, r#"networks."eip155:1".rpc_urls[1]"#);
        // HTTPS endpoints are accepted (decision 0906); a scheme other than http(s) is not.
        assert!(config("eip155:1", network(&["https://mainnet.example/KEY"])).validate().is_ok());
        let e = config("eip155:1", network(&["ws://mainnet.example"])).validate().unwrap_err();
        assert!(e.message.contains("http(s)"), "{e}");
        let mut n = network(&["http://a"]);
        n.tokens.push(TokenConfig { address: "0x12".into(), ..Default::default() });
        let e = config("eip155:1", n).validate().unwrap_err();
        assert_eq!(e.to_string(), r#"networks."eip155:1".tokens[0].address: not an address (0x and 40 hex digits)"#);
        let prices = PriceSourceConfig::Static { usd: [("eip155:1/native".to_string(), "cheap".to_string())].into() };
        let e = ChainConfig { prices: Some(prices), ..Default::default() }.validate().unwrap_err();
        assert_eq!(e.field, r#"prices.usd."eip155:1/native""#);
    }
}
