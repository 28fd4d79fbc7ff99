//! Fiat prices, from a pluggable source. With no source configured nothing has a price, and no
//! fiat value is shown: a price is never invented.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use alloy::primitives::Address;
use async_trait::async_trait;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::NetworkId;
use crate::amount::Price;
use crate::config::PriceSourceConfig;
use crate::send::parse_evm_address;

/// An asset on a network: `eip155:1/native` (the native currency) or `eip155:1/erc20:0x…`
/// (CAIP-19's form for tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AssetId {
    Native(NetworkId),
    Erc20(NetworkId, Address),
    /// An SPL mint on a Solana network: `solana:<ref>/token:<mint>` (CAIP-19's Solana form).
    Spl(NetworkId, crate::solana::SolAddress),
}

impl fmt::Display for AssetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Native(network) => write!(f, "{network}/native"),
            Self::Erc20(network, address) => write!(f, "{network}/erc20:{address}"),
            Self::Spl(network, mint) => write!(f, "{network}/token:{mint}"),
        }
    }
}

impl FromStr for AssetId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let form = "an asset is `eip155:<chain>/native`, `eip155:<chain>/erc20:<address>`, \
                    `solana:<ref>/native` or `solana:<ref>/token:<mint>`";
        let (network, asset) = s.split_once('/').ok_or(form)?;
        let network: NetworkId = network.parse().map_err(|e| format!("{e}"))?;
        if asset == "native" {
            return Ok(Self::Native(network));
        }
        if network.is_solana() {
            let mint = asset.strip_prefix("token:").and_then(crate::solana::parse_solana_address).ok_or(form)?;
            return Ok(Self::Spl(network, mint));
        }
        let address = asset.strip_prefix("erc20:").and_then(parse_evm_address).ok_or(form)?;
        Ok(Self::Erc20(network, address))
    }
}

impl Serialize for AssetId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for AssetId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

/// Fiat (USD) prices of assets.
#[async_trait]
pub trait PriceSource: Send + Sync + 'static {
    /// The prices of those of `assets` the source knows; unknown assets are left out.
    async fn usd_prices(&self, assets: &[AssetId]) -> Result<HashMap<AssetId, Price>, String>;
}

/// Prices stated in the configuration.
#[derive(Debug, Clone, Default)]
pub struct StaticPrices {
    usd: HashMap<AssetId, Price>,
}

impl StaticPrices {
    /// From a validated configuration (see [`crate::ChainConfig::validate`]).
    pub fn from_config(config: &PriceSourceConfig) -> Result<Self, String> {
        let PriceSourceConfig::Static { usd } = config;
        let usd = usd
            .iter()
            .map(|(asset, price)| Ok((asset.parse()?, Price::parse(price).map_err(|e| e.to_string())?)))
            .collect::<Result<_, String>>()?;
        Ok(Self { usd })
    }
}

#[async_trait]
impl PriceSource for StaticPrices {
    async fn usd_prices(&self, assets: &[AssetId]) -> Result<HashMap<AssetId, Price>, String> {
        Ok(assets.iter().filter_map(|a| self.usd.get(a).map(|p| (*a, *p))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::address;

    #[test]
    fn asset_ids_parse_and_print() {
        let native: AssetId = "eip155:1/native".parse().unwrap();
        assert_eq!(native, AssetId::Native(NetworkId::eip155(1)));
        let token: AssetId = "eip155:10/erc20:0x0b2c639c533813f4aa9d7837caf62653d097ff85".parse().unwrap();
        assert_eq!(token, AssetId::Erc20(NetworkId::eip155(10), address!("0x0b2c639c533813f4aa9d7837caf62653d097ff85")));
        assert_eq!(token.to_string(), "eip155:10/erc20:0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85");
        assert!("eip155:1/slip44:60".parse::<AssetId>().is_err());
        assert!("eip155:1".parse::<AssetId>().is_err());
        let devnet: NetworkId = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1".parse().unwrap();
        let usdc: AssetId = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1/token:4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU".parse().unwrap();
        assert!(matches!(usdc, AssetId::Spl(n, _) if n == devnet));
        assert_eq!(usdc.to_string(), "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1/token:4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU");
        assert!("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1/erc20:0x0b2c639c533813f4aa9d7837caf62653d097ff85".parse::<AssetId>().is_err());
    }
}
