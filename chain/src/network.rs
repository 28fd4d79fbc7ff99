//! CAIP-2 network ids of the EVM chains the service talks to (`eip155:<chain id>`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An EVM network, named as CAIP-2 does: `eip155:31337`. Other namespaces (solana, bip122, …) have
/// no JSON-RPC chain service here, so they are not representable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NetworkId {
    chain_id: u64,
}

impl NetworkId {
    pub const fn eip155(chain_id: u64) -> Self {
        Self { chain_id }
    }

    pub const fn chain_id(&self) -> u64 {
        self.chain_id
    }
}

impl fmt::Display for NetworkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "eip155:{}", self.chain_id)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkIdError {
    #[error("a network id is `namespace:reference` (CAIP-2), e.g. `eip155:1`")]
    NotCaip2,
    #[error("only eip155 networks have a chain service, not `{0}`")]
    UnsupportedNamespace(String),
    #[error("an eip155 reference is a chain id in decimal without leading zeros, not `{0}`")]
    BadChainId(String),
}

impl FromStr for NetworkId {
    type Err = NetworkIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (namespace, reference) = s.split_once(':').ok_or(NetworkIdError::NotCaip2)?;
        if namespace.is_empty() || reference.is_empty() || reference.contains(':') {
            return Err(NetworkIdError::NotCaip2);
        }
        if namespace != "eip155" {
            return Err(NetworkIdError::UnsupportedNamespace(namespace.to_string()));
        }
        let canonical = reference.bytes().all(|b| b.is_ascii_digit()) && (reference == "0" || !reference.starts_with('0'));
        let chain_id = reference.parse().ok().filter(|_| canonical).ok_or_else(|| NetworkIdError::BadChainId(reference.into()))?;
        Ok(Self { chain_id })
    }
}

impl Serialize for NetworkId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NetworkId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_eip155_ids_and_prints_them_back() {
        let id: NetworkId = "eip155:31337".parse().unwrap();
        assert_eq!(id.chain_id(), 31337);
        assert_eq!(id.to_string(), "eip155:31337");
    }

    #[test]
    fn refuses_other_namespaces_and_malformed_ids() {
        assert_eq!("solana:mainnet".parse::<NetworkId>(), Err(NetworkIdError::UnsupportedNamespace("solana".into())));
        assert_eq!("31337".parse::<NetworkId>(), Err(NetworkIdError::NotCaip2));
        assert_eq!("eip155:".parse::<NetworkId>(), Err(NetworkIdError::NotCaip2));
        assert_eq!("eip155:1:2".parse::<NetworkId>(), Err(NetworkIdError::NotCaip2));
        assert_eq!("eip155:0x1".parse::<NetworkId>(), Err(NetworkIdError::BadChainId("0x1".into())));
        assert_eq!("eip155:01".parse::<NetworkId>(), Err(NetworkIdError::BadChainId("01".into())));
        assert_eq!("eip155:-1".parse::<NetworkId>(), Err(NetworkIdError::BadChainId("-1".into())));
    }
}
