//! CAIP-2 network ids of the networks the service talks to: EVM chains (`eip155:<chain id>`) and
//! Solana clusters (`solana:<first 32 characters of the genesis hash>`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Length of a Solana CAIP-2 reference: the genesis hash's first 32 base58 characters.
pub const SOLANA_REFERENCE_LEN: usize = 32;

const BASE58_ALPHABET: &[u8] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// A network, named as CAIP-2 does: `eip155:31337`, `solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1`.
/// Other namespaces (bip122, polkadot, …) have no JSON-RPC chain service here, so they are not
/// representable. `Copy`: a Solana reference is kept as its 32 ASCII bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NetworkId {
    Eip155 { chain_id: u64 },
    Solana { reference: [u8; SOLANA_REFERENCE_LEN] },
}

/// The namespace of a [`NetworkId`]: what protocol its nodes speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChainKind {
    Evm,
    Solana,
}

impl NetworkId {
    pub const fn eip155(chain_id: u64) -> Self {
        Self::Eip155 { chain_id }
    }

    /// A Solana network from its CAIP-2 reference (32 base58 characters).
    pub fn solana(reference: &str) -> Result<Self, NetworkIdError> {
        let bytes: [u8; SOLANA_REFERENCE_LEN] =
            reference.as_bytes().try_into().map_err(|_| NetworkIdError::BadSolanaReference(reference.into()))?;
        if !bytes.iter().all(|b| BASE58_ALPHABET.contains(b)) {
            return Err(NetworkIdError::BadSolanaReference(reference.into()));
        }
        Ok(Self::Solana { reference: bytes })
    }

    /// The EVM chain id; `None` for a Solana network.
    pub const fn chain_id(&self) -> Option<u64> {
        match self {
            Self::Eip155 { chain_id } => Some(*chain_id),
            Self::Solana { .. } => None,
        }
    }

    /// The CAIP-2 reference: an eip155 chain id in decimal, a Solana cluster's genesis hash's first
    /// 32 characters.
    pub fn reference(&self) -> String {
        match self {
            Self::Eip155 { chain_id } => chain_id.to_string(),
            // Checked to be ASCII base58 when made.
            Self::Solana { reference } => String::from_utf8_lossy(reference).into_owned(),
        }
    }

    pub const fn kind(&self) -> ChainKind {
        match self {
            Self::Eip155 { .. } => ChainKind::Evm,
            Self::Solana { .. } => ChainKind::Solana,
        }
    }

    pub const fn is_solana(&self) -> bool {
        matches!(self, Self::Solana { .. })
    }
}

impl fmt::Display for NetworkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Eip155 { chain_id } => write!(f, "eip155:{chain_id}"),
            // Checked to be ASCII base58 when made.
            Self::Solana { reference } => write!(f, "solana:{}", std::str::from_utf8(reference).unwrap_or("?")),
        }
    }
}

impl fmt::Debug for NetworkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NetworkId({self})")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkIdError {
    #[error("a network id is `namespace:reference` (CAIP-2), e.g. `eip155:1`")]
    NotCaip2,
    #[error("only eip155 and solana networks have a chain service, not `{0}`")]
    UnsupportedNamespace(String),
    #[error("an eip155 reference is a chain id in decimal without leading zeros, not `{0}`")]
    BadChainId(String),
    #[error(
        "a solana reference is the first 32 base58 characters of the cluster's genesis hash \
         (devnet: EtWTRABZaYq6iMfeYKouRu166VU2xqa1), not `{0}`"
    )]
    BadSolanaReference(String),
}

impl FromStr for NetworkId {
    type Err = NetworkIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (namespace, reference) = s.split_once(':').ok_or(NetworkIdError::NotCaip2)?;
        if namespace.is_empty() || reference.is_empty() || reference.contains(':') {
            return Err(NetworkIdError::NotCaip2);
        }
        match namespace {
            "eip155" => {
                let canonical = reference.bytes().all(|b| b.is_ascii_digit()) && (reference == "0" || !reference.starts_with('0'));
                let chain_id = reference.parse().ok().filter(|_| canonical).ok_or_else(|| NetworkIdError::BadChainId(reference.into()))?;
                Ok(Self::Eip155 { chain_id })
            }
            "solana" => Self::solana(reference),
            other => Err(NetworkIdError::UnsupportedNamespace(other.to_string())),
        }
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
        assert_eq!(id.chain_id(), Some(31337));
        assert_eq!(id.kind(), ChainKind::Evm);
        assert_eq!(id.to_string(), "eip155:31337");
        assert_eq!(id.reference(), "31337");
    }

    #[test]
    fn parses_solana_ids_and_prints_them_back() {
        let id: NetworkId = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1".parse().unwrap();
        assert_eq!(id.kind(), ChainKind::Solana);
        assert_eq!(id.chain_id(), None);
        assert_eq!(id.to_string(), "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1");
        assert_eq!(id.reference(), "EtWTRABZaYq6iMfeYKouRu166VU2xqa1");
        assert_ne!(id, "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".parse().unwrap());
    }

    #[test]
    fn refuses_other_namespaces_and_malformed_ids() {
        assert_eq!(
            "bip122:000000000019d6689c085ae165831e93".parse::<NetworkId>(),
            Err(NetworkIdError::UnsupportedNamespace("bip122".into()))
        );
        // The cluster's name, the whole genesis hash, and a non-base58 character are refused.
        assert_eq!("solana:mainnet".parse::<NetworkId>(), Err(NetworkIdError::BadSolanaReference("mainnet".into())));
        assert!(matches!(
            "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG".parse::<NetworkId>(),
            Err(NetworkIdError::BadSolanaReference(_))
        ));
        assert!(matches!("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa0".parse::<NetworkId>(), Err(NetworkIdError::BadSolanaReference(_))));
        assert_eq!("31337".parse::<NetworkId>(), Err(NetworkIdError::NotCaip2));
        assert_eq!("eip155:".parse::<NetworkId>(), Err(NetworkIdError::NotCaip2));
        assert_eq!("eip155:1:2".parse::<NetworkId>(), Err(NetworkIdError::NotCaip2));
        assert_eq!("eip155:0x1".parse::<NetworkId>(), Err(NetworkIdError::BadChainId("0x1".into())));
        assert_eq!("eip155:01".parse::<NetworkId>(), Err(NetworkIdError::BadChainId("01".into())));
        assert_eq!("eip155:-1".parse::<NetworkId>(), Err(NetworkIdError::BadChainId("-1".into())));
    }
}
