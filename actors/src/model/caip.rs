//! CAIP-2 network ids (`namespace:reference`) and CAIP-10 account ids (`namespace:reference:address`),
//! and the per-namespace address rules of the spec (section 5, Addresses).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Chain namespaces. eip155 and solana have full features; the others appear only as namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum Namespace {
    Eip155,
    Solana,
    Polkadot,
    Bip122,
    Cosmos,
}

impl Namespace {
    pub const ALL: [Namespace; 5] = [Namespace::Eip155, Namespace::Solana, Namespace::Polkadot, Namespace::Bip122, Namespace::Cosmos];

    pub fn as_str(self) -> &'static str {
        match self {
            Namespace::Eip155 => "eip155",
            Namespace::Solana => "solana",
            Namespace::Polkadot => "polkadot",
            Namespace::Bip122 => "bip122",
            Namespace::Cosmos => "cosmos",
        }
    }

    /// Whether `address` is well formed for this namespace: EVM is an optional `0x` plus 40 hex
    /// characters; Solana is 32 to 44 base58 characters; other namespaces have no accepted form.
    pub fn is_valid_address(self, address: &str) -> bool {
        match self {
            Namespace::Eip155 => {
                let hex = address.strip_prefix("0x").unwrap_or(address);
                hex.len() == 40 && hex.bytes().all(|b| b.is_ascii_hexdigit())
            }
            Namespace::Solana => (32..=44).contains(&address.len()) && address.bytes().all(|b| BASE58_ALPHABET.contains(&b)),
            _ => false,
        }
    }

    /// The one spelling of a valid `address`: EVM addresses in EIP-55 mixed case with `0x`
    /// (wallets may report any case, with or without the prefix, and one key must not become
    /// several accounts, sign-in sessions and token subjects); Solana's as they are (base58 has
    /// one spelling per key). `None` when the address is not valid for the namespace.
    pub fn canonical_address(self, address: &str) -> Option<String> {
        if !self.is_valid_address(address) {
            return None;
        }
        match self {
            Namespace::Eip155 => {
                let hex = address.strip_prefix("0x").unwrap_or(address);
                let address: alloy_primitives::Address = format!("0x{hex}").parse().ok()?;
                Some(address.to_checksum(None))
            }
            _ => Some(address.to_string()),
        }
    }
}

/// What a namespace supports (spec section 9, feature support by namespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceFeatures {
    /// Token balances: eip155, solana.
    pub balance: bool,
    /// Names and avatars: eip155.
    pub names: bool,
    /// Transaction activity: eip155.
    pub activity: bool,
    /// Sending tokens: eip155, solana.
    pub send: bool,
}

impl Namespace {
    /// Spec section 9: Balance on eip155 and solana, Names and Activity on eip155, Send on eip155
    /// and solana; nothing on the namespaces that only appear as namespaces.
    pub fn features(self) -> NamespaceFeatures {
        let full = matches!(self, Namespace::Eip155 | Namespace::Solana);
        let evm = self == Namespace::Eip155;
        NamespaceFeatures { balance: full, names: evm, activity: evm, send: full }
    }
}

const BASE58_ALPHABET: &[u8] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Namespace {
    type Err = CaipError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Namespace::ALL.into_iter().find(|n| n.as_str() == s).ok_or_else(|| CaipError(format!("unknown chain namespace {s:?}")))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CaipError(pub String);

/// A CAIP-2 network id such as `eip155:1`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CaipNetworkId {
    pub namespace: Namespace,
    pub reference: String,
}

impl CaipNetworkId {
    pub fn new(namespace: Namespace, reference: impl Into<String>) -> Self {
        Self { namespace, reference: reference.into() }
    }

    pub fn eip155(chain_id: u64) -> Self {
        Self::new(Namespace::Eip155, chain_id.to_string())
    }
}

impl fmt::Display for CaipNetworkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.namespace, self.reference)
    }
}

impl FromStr for CaipNetworkId {
    type Err = CaipError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split(':');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(ns), Some(reference), None) if !ns.is_empty() && !reference.is_empty() => {
                Ok(Self { namespace: ns.parse()?, reference: reference.to_string() })
            }
            _ => Err(CaipError(format!("a network id is namespace:reference, got {s:?}"))),
        }
    }
}

/// A CAIP-10 account id such as `eip155:1:0xab…`: exactly three non-empty colon-separated parts with
/// a known namespace, each part in CAIP-10's grammar (`reference` 1 to 32 of `[-_a-zA-Z0-9]`,
/// `account_address` 1 to 128 of `[-.%a-zA-Z0-9]`), and an address in the namespace's form
/// (spec section 5: EVM `0x` + 40 hex, Solana 32 to 44 base58 characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CaipAddress {
    pub network: CaipNetworkId,
    pub address: String,
}

impl CaipAddress {
    /// `namespace:reference:address` with the address in its one spelling
    /// ([`Namespace::canonical_address`]).
    pub fn canonical(&self) -> String {
        let address = self.network.namespace.canonical_address(&self.address).unwrap_or_else(|| self.address.clone());
        format!("{}:{address}", self.network)
    }
}

impl fmt::Display for CaipAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.network, self.address)
    }
}

/// CAIP-2 `reference`: 1 to 32 of `[-_a-zA-Z0-9]`.
pub fn is_caip2_reference(s: &str) -> bool {
    (1..=32).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl FromStr for CaipAddress {
    type Err = CaipError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split(':').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(CaipError(format!("a CAIP address has three non-empty parts, got {s:?}")));
        }
        let namespace: Namespace = parts[0].parse()?;
        if !is_caip2_reference(parts[1]) {
            return Err(CaipError(format!("{:?} is not a CAIP-2 reference (1 to 32 of [-_a-zA-Z0-9])", parts[1])));
        }
        let address = parts[2];
        let caip10_chars = address.len() <= 128 && address.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.%".contains(&b));
        if !caip10_chars {
            return Err(CaipError(format!("{address:?} is not a CAIP-10 account address")));
        }
        if matches!(namespace, Namespace::Eip155 | Namespace::Solana) && !namespace.is_valid_address(address) {
            return Err(CaipError(format!("{address:?} is not a {namespace} address")));
        }
        Ok(Self { network: CaipNetworkId::new(namespace, parts[1]), address: address.to_string() })
    }
}

macro_rules! serde_via_string {
    ($ty:ty, $ts:literal) => {
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }
        impl TS for $ty {
            type WithoutGenerics = Self;
            type OptionInnerType = Self;
            fn name() -> String {
                $ts.into()
            }
            fn inline() -> String {
                $ts.into()
            }
            fn inline_flattened() -> String {
                panic!("{} cannot be flattened", $ts)
            }
            fn decl() -> String {
                panic!("{} cannot be declared", $ts)
            }
            fn decl_concrete() -> String {
                panic!("{} cannot be declared", $ts)
            }
        }
    };
}
serde_via_string!(CaipNetworkId, "string");
serde_via_string!(CaipAddress, "string");

/// Parses an EIP-155 chain id as wallets report it: `0x`-prefixed hex (EIP-1193 `eth_chainId`) or
/// decimal.
pub fn parse_evm_chain_id(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.len() <= 16 => u64::from_str_radix(hex, 16).ok(),
        Some(_) => None,
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evm_addresses_are_an_optional_0x_and_40_hex_characters() {
        let a = "0x52908400098527886E0F7030069857D2E4169EE7";
        assert!(Namespace::Eip155.is_valid_address(a));
        assert!(Namespace::Eip155.is_valid_address(&a[2..]));
        assert!(!Namespace::Eip155.is_valid_address(&a[..41]));
        assert!(!Namespace::Eip155.is_valid_address("0xZZ908400098527886E0F7030069857D2E4169EE7"));
    }

    #[test]
    fn an_evm_address_has_one_spelling_whatever_case_or_prefix_it_came_in() {
        let canonical = "0x52908400098527886E0F7030069857D2E4169EE7";
        for spelling in [canonical, "0x52908400098527886e0f7030069857d2e4169ee7", "52908400098527886E0F7030069857D2E4169EE7"] {
            assert_eq!(Namespace::Eip155.canonical_address(spelling).as_deref(), Some(canonical), "{spelling}");
        }
        assert_eq!(Namespace::Eip155.canonical_address("0x1234"), None);
        let sol = "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV";
        assert_eq!(Namespace::Solana.canonical_address(sol).as_deref(), Some(sol));
        let caip: CaipAddress = "eip155:1:0x52908400098527886e0f7030069857d2e4169ee7".parse().unwrap();
        assert_eq!(caip.canonical(), format!("eip155:1:{canonical}"));
    }

    #[test]
    fn solana_addresses_are_32_to_44_base58_characters() {
        assert!(Namespace::Solana.is_valid_address("7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV"));
        assert!(!Namespace::Solana.is_valid_address("0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl"));
        assert!(!Namespace::Solana.is_valid_address("short"));
    }

    #[test]
    fn other_namespaces_accept_no_address() {
        assert!(!Namespace::Bip122.is_valid_address("bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"));
    }

    #[test]
    fn caip_addresses_need_three_non_empty_parts_and_a_known_namespace() {
        let ok: CaipAddress = "eip155:1:0xab16a96D359eC26a11e2C2b3d8f8B8942d5Bfcdb".parse().unwrap();
        assert_eq!(ok.network, CaipNetworkId::eip155(1));
        for bad in ["eip155:1", "eip155::0xab", "foo:1:0xab", "eip155:1:0xab:extra", ":1:0xab", "eip155:1:0xab"] {
            assert!(bad.parse::<CaipAddress>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn features_by_namespace_follow_section_9() {
        assert_eq!(Namespace::Eip155.features(), NamespaceFeatures { balance: true, names: true, activity: true, send: true });
        assert_eq!(Namespace::Solana.features(), NamespaceFeatures { balance: true, names: false, activity: false, send: true });
        for ns in [Namespace::Polkadot, Namespace::Bip122, Namespace::Cosmos] {
            assert_eq!(ns.features(), NamespaceFeatures::default());
        }
    }

    #[test]
    fn evm_chain_ids_parse_from_hex_and_decimal() {
        assert_eq!(parse_evm_chain_id("0x1"), Some(1));
        assert_eq!(parse_evm_chain_id("0xa4b1"), Some(42161));
        assert_eq!(parse_evm_chain_id("137"), Some(137));
        assert_eq!(parse_evm_chain_id("0x"), None);
        assert_eq!(parse_evm_chain_id("eip155:1"), None);
    }
}
