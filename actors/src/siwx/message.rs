//! Sign-in messages: EIP-4361 (Sign-In With Ethereum) and CAIP-122 / Sign-In With Solana.
//!
//! [`SiwxMessage`] is a validated message: every field is a type that can only hold a value its
//! grammar allows, so rendering ([`SiwxMessage::to_message`], `Display`) cannot fail and always
//! parses back ([`SiwxMessage::parse`]) to an equal value. [`MessageFields`] is the loose,
//! string-typed form (what JSON, a web form or the conformance vectors carry);
//! [`SiwxMessage::from_fields`] is the builder that validates it.

use std::fmt;
use std::str::FromStr;

use alloy_primitives::Address;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::grammar;

/// The message version this library speaks (`Version: 1`).
pub const VERSION: &str = "1";

/// Which CAIP-122 profile a message follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Namespace {
    /// EIP-4361, Sign-In With Ethereum (`eip155` accounts).
    Eip155,
    /// Sign-In With Solana (`solana` accounts).
    Solana,
}

impl Namespace {
    /// The blockchain name in the header line (`... sign in with your {name} account:`).
    pub fn blockchain_name(self) -> &'static str {
        match self {
            Namespace::Eip155 => "Ethereum",
            Namespace::Solana => "Solana",
        }
    }

    /// The CAIP-2 namespace (`eip155`, `solana`).
    pub fn caip2(self) -> &'static str {
        match self {
            Namespace::Eip155 => "eip155",
            Namespace::Solana => "solana",
        }
    }

    fn header_suffix(self) -> &'static str {
        match self {
            Namespace::Eip155 => " wants you to sign in with your Ethereum account:",
            Namespace::Solana => " wants you to sign in with your Solana account:",
        }
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.caip2())
    }
}

/// Why a field value was refused (by the builder or inside the parser).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// A required field is absent.
    #[error("missing required field `{0}`")]
    Missing(&'static str),
    /// A field's value does not match its grammar.
    #[error("invalid `{field}`: {reason}")]
    Invalid {
        /// The field, as named in [`MessageFields`] (camelCase).
        field: &'static str,
        /// What the grammar expected.
        reason: &'static str,
    },
    /// An Ethereum address that is 40 hex digits but not in its EIP-55 mixed-case form
    /// (all-lowercase and all-uppercase included: see `docs/decisions/0200-siwx-address-case.md`).
    #[error("address is not in EIP-55 checksum form (expected {expected})")]
    AddressNotChecksummed {
        /// The EIP-55 form of the same 20 bytes.
        expected: String,
    },
}

impl FieldError {
    fn invalid(field: &'static str, reason: &'static str) -> Self {
        FieldError::Invalid { field, reason }
    }
}

macro_rules! text_type {
    ($(#[$doc:meta])* $name:ident, $field:literal, $check:expr, $reason:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            /// Validates `s` against this field's grammar.
            pub fn new(s: impl Into<String>) -> Result<Self, FieldError> {
                let s = s.into();
                let check: fn(&str) -> bool = $check;
                if check(&s) { Ok(Self(s)) } else { Err(FieldError::invalid($field, $reason)) }
            }

            /// The value as it appears in the message.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = FieldError;
            fn from_str(s: &str) -> Result<Self, FieldError> {
                Self::new(s)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Self::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
            }
        }
    };
}

text_type!(
    /// The optional URI scheme before the domain (`https` in `https://example.com wants you ...`).
    Scheme, "scheme", grammar::is_scheme, "expected an RFC 3986 scheme"
);
text_type!(
    /// The `domain`: an RFC 3986 authority (`[userinfo@]host[:port]`) with a non-empty host.
    Domain, "domain", |s| grammar::authority_parts(s).is_some(),
    "expected an RFC 3986 authority with a host"
);
text_type!(
    /// The `statement`: one or more of RFC 3986 `reserved` / `unreserved` characters or spaces (so
    /// ASCII only, and never a line break).
    Statement, "statement", |s| !s.is_empty() && s.bytes().all(grammar::is_statement_char),
    "expected 1*( reserved / unreserved / \" \" ) (ASCII, no line break)"
);
text_type!(
    /// An RFC 3986 `URI` (absolute, fragment allowed): the `URI` field and each resource.
    Uri, "uri", grammar::is_uri, "expected an RFC 3986 URI"
);
text_type!(
    /// The `nonce`: at least 8 ASCII letters or digits.
    Nonce, "nonce", |s| s.len() >= 8 && s.bytes().all(|c| c.is_ascii_alphanumeric()),
    "expected at least 8 ASCII letters or digits"
);
text_type!(
    /// The `request-id`: RFC 3986 `*pchar` (may be empty).
    RequestId, "requestId", grammar::is_pchars, "expected RFC 3986 *pchar"
);
text_type!(
    /// A SIWS `Chain ID`: one of the values of Phantom's Sign-In With Solana grammar
    /// (`message-chain-id`): `mainnet`, `testnet`, `devnet`, `localnet`, `solana:mainnet`,
    /// `solana:testnet`, `solana:devnet`. Kept as written; [`SolanaChainRef::caip2`] names the
    /// CAIP-2 network (genesis-hash reference) it denotes.
    SolanaChainRef, "chainId",
    |s| SOLANA_CHAIN_IDS.iter().any(|(id, _)| *id == s),
    "expected mainnet, testnet, devnet, localnet, solana:mainnet, solana:testnet or solana:devnet"
);

/// SIWS `Chain ID` values and the CAIP-2 network each denotes (CAIP-30: the first 32 characters
/// of the cluster's genesis hash). `localnet` has no fixed genesis: it stands for any other
/// Solana network and is written `solana:localnet`.
const SOLANA_CHAIN_IDS: [(&str, &str); 7] = [
    ("mainnet", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"),
    ("testnet", "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"),
    ("devnet", "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"),
    ("localnet", "solana:localnet"),
    ("solana:mainnet", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"),
    ("solana:testnet", "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"),
    ("solana:devnet", "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"),
];

impl SolanaChainRef {
    /// The CAIP-2 network this `Chain ID` denotes (`devnet` -> `solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1`).
    pub fn caip2(&self) -> &'static str {
        SOLANA_CHAIN_IDS.iter().find(|(id, _)| *id == self.0).map(|(_, caip2)| *caip2).expect("validated at construction")
    }

    /// The `Chain ID` a message for the CAIP-2 network `caip2` carries: the cluster's name for
    /// mainnet, testnet and devnet, `localnet` for any other Solana network.
    pub fn for_caip2(caip2: &str) -> Self {
        let id = SOLANA_CHAIN_IDS[..4].iter().find(|(_, c)| *c == caip2).map_or("localnet", |(id, _)| *id);
        Self(id.to_string())
    }
}

impl Domain {
    /// The authority's parts.
    pub fn parts(&self) -> grammar::AuthorityParts<'_> {
        grammar::authority_parts(&self.0).expect("validated at construction")
    }
}

impl Uri {
    /// `scheme://host[:port]` with scheme and host lowercased; `None` when the URI has no authority.
    pub fn origin(&self) -> Option<String> {
        grammar::uri_origin(&self.0)
    }
}

/// An RFC 3339 timestamp, kept as written (so `2021-09-30T16:25:24.000Z` and
/// `2021-09-30T16:25:24Z` render back byte for byte) together with the instant it denotes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Timestamp {
    text: String,
    at: OffsetDateTime,
}

impl Timestamp {
    /// Parses a strict, calendar-valid RFC 3339 `date-time` (upper-case `T` and `Z`).
    pub fn parse(s: impl Into<String>) -> Result<Self, FieldError> {
        Self::parse_field(s.into(), "timestamp")
    }

    fn parse_field(text: String, field: &'static str) -> Result<Self, FieldError> {
        match grammar::parse_rfc3339(&text) {
            Some(at) => Ok(Self { text, at }),
            None => Err(FieldError::invalid(field, "expected a calendar-valid RFC 3339 date-time")),
        }
    }

    /// Renders an instant as RFC 3339 (`Z` for UTC, fraction digits only when non-zero).
    pub fn from_datetime(at: OffsetDateTime) -> Self {
        let text = at.format(&Rfc3339).expect("every year in 0..=9999 formats as RFC 3339");
        Self::parse(text).expect("time's RFC 3339 output is strict RFC 3339")
    }

    /// The instant.
    pub fn at(&self) -> OffsetDateTime {
        self.at
    }

    /// The timestamp as written in the message.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::parse(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A Solana account address: a 32-byte ed25519 public key, written in base58.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SolanaAddress(pub [u8; 32]);

impl SolanaAddress {
    /// Decodes base58 text that must encode exactly 32 bytes, in its canonical spelling.
    pub fn parse(s: &str) -> Result<Self, FieldError> {
        let bytes = bs58::decode(s).into_vec().map_err(|_| FieldError::invalid("address", "expected base58 text"))?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| FieldError::invalid("address", "expected a base58 32-byte public key"))?;
        let this = Self(key);
        if this.to_string() != s {
            return Err(FieldError::invalid("address", "expected canonical base58"));
        }
        Ok(this)
    }

    /// The public key bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for SolanaAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&bs58::encode(self.0).into_string())
    }
}

impl fmt::Debug for SolanaAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SolanaAddress({self})")
    }
}

/// Parses an Ethereum address that must be in EIP-55 checksum form.
pub fn parse_eip55_address(s: &str) -> Result<Address, FieldError> {
    let well_formed = s.strip_prefix("0x").is_some_and(|h| h.len() == 40 && h.bytes().all(|c| c.is_ascii_hexdigit()));
    if !well_formed {
        return Err(FieldError::invalid("address", "expected 0x followed by 40 hex digits"));
    }
    Address::parse_checksummed(s, None).map_err(|_| {
        let address: Address = s.parse().expect("40 hex digits after 0x");
        FieldError::AddressNotChecksummed { expected: address.to_checksum(None) }
    })
}

/// The signing account together with the chain it is bound to: the message's `address` and
/// `Chain ID` lines, which CAIP-10 writes as one account id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Account {
    /// An EIP-155 account: `Chain ID` in decimal and an EIP-55 address.
    Eip155 {
        /// The EIP-155 chain id (`1` for Ethereum mainnet).
        chain_id: u64,
        /// The account address.
        address: Address,
    },
    /// A Solana account: the chain reference and a base58 ed25519 public key.
    Solana {
        /// The `Chain ID` (`mainnet`, `devnet`, `solana:testnet` ...).
        chain: SolanaChainRef,
        /// The account's public key.
        address: SolanaAddress,
    },
}

impl Account {
    /// The namespace.
    pub fn namespace(&self) -> Namespace {
        match self {
            Account::Eip155 { .. } => Namespace::Eip155,
            Account::Solana { .. } => Namespace::Solana,
        }
    }

    /// The address as written in the message (EIP-55 or base58).
    pub fn address_text(&self) -> String {
        match self {
            Account::Eip155 { address, .. } => address.to_checksum(None),
            Account::Solana { address, .. } => address.to_string(),
        }
    }

    /// The `Chain ID` line's value (decimal, or the Solana chain reference).
    pub fn chain_text(&self) -> String {
        match self {
            Account::Eip155 { chain_id, .. } => chain_id.to_string(),
            Account::Solana { chain, .. } => chain.to_string(),
        }
    }

    /// The CAIP-2 chain id (`eip155:1`, `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp` for a message
    /// whose `Chain ID` is `mainnet`).
    pub fn caip2(&self) -> String {
        match self {
            Account::Eip155 { chain_id, .. } => format!("eip155:{chain_id}"),
            Account::Solana { chain, .. } => chain.caip2().to_string(),
        }
    }

    /// The CAIP-10 account id (`eip155:1:0xAb...`, `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:7S3P...`).
    pub fn caip10(&self) -> String {
        format!("{}:{}", self.caip2(), self.address_text())
    }
}

impl fmt::Display for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.caip10())
    }
}

/// Parses an EIP-155 `Chain ID`: canonical decimal (`1*DIGIT` without leading zeros) that fits
/// in a `u64`. `eip155:1` or `0x1` are refused.
pub fn parse_eip155_chain_id(s: &str) -> Result<u64, FieldError> {
    let canonical = !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    if !canonical {
        return Err(FieldError::invalid("chainId", "expected a decimal EIP-155 chain id without leading zeros"));
    }
    s.parse().map_err(|_| FieldError::invalid("chainId", "chain id does not fit in 64 bits"))
}

/// A validated sign-in message (EIP-4361 or SIWS, told apart by [`Account`]).
///
/// Serde writes and reads it as its message text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SiwxMessage {
    /// Optional scheme before the domain (EIP-4361 `[ scheme "://" ]`); `https` is assumed when
    /// absent.
    pub scheme: Option<Scheme>,
    /// The RFC 3986 authority asking for the sign-in.
    pub domain: Domain,
    /// The address and chain.
    pub account: Account,
    /// Optional human-readable statement.
    pub statement: Option<Statement>,
    /// The subject of the sign-in.
    pub uri: Uri,
    /// The server-issued nonce.
    pub nonce: Nonce,
    /// When the message was issued.
    pub issued_at: Timestamp,
    /// When the message stops being valid.
    pub expiration_time: Option<Timestamp>,
    /// When the message starts being valid.
    pub not_before: Option<Timestamp>,
    /// Optional request id.
    pub request_id: Option<RequestId>,
    /// Optional `Resources:` list. `Some(vec![])` renders a `Resources:` line with no entries
    /// (the grammar allows it); `None` renders no line.
    pub resources: Option<Vec<Uri>>,
}

/// The string-typed form of a message's fields, named as in EIP-4361's reference data model
/// (camelCase in JSON). `chainId` deserializes from a JSON number or string.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageFields {
    /// `https` in `https://example.com wants you to ...`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// RFC 3986 authority.
    pub domain: Option<String>,
    /// EIP-55 or base58 address.
    pub address: Option<String>,
    /// Statement line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    /// URI.
    pub uri: Option<String>,
    /// Must be `"1"`.
    pub version: Option<String>,
    /// Decimal EIP-155 chain id, or Solana chain reference.
    #[serde(deserialize_with = "number_or_string")]
    pub chain_id: Option<String>,
    /// Nonce.
    pub nonce: Option<String>,
    /// RFC 3339.
    pub issued_at: Option<String>,
    /// RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration_time: Option<String>,
    /// RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_before: Option<String>,
    /// `*pchar`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// URIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<String>>,
}

fn number_or_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrStr {
        Num(u64),
        Str(String),
    }
    Ok(Option::<NumOrStr>::deserialize(d)?.map(|v| match v {
        NumOrStr::Num(n) => n.to_string(),
        NumOrStr::Str(s) => s,
    }))
}

/// Where and why parsing failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub kind: ParseErrorKind,
}

/// What was wrong with a message's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// A CR character: lines end with LF only.
    #[error("carriage return found; lines must end with LF only")]
    CarriageReturn,
    /// The first line is not a sign-in header for Ethereum or Solana.
    #[error("expected `<domain> wants you to sign in with your Ethereum account:` or `... Solana account:`")]
    Header,
    /// A line that the grammar requires is absent or different.
    #[error("expected {0}")]
    Expected(&'static str),
    /// A field's value is invalid.
    #[error(transparent)]
    Field(#[from] FieldError),
    /// Lines after the last field (a field out of order, a stray line or a trailing LF).
    #[error("unexpected line (out of order field, stray text or trailing line feed)")]
    Unexpected,
}

struct Lines<'a> {
    lines: Vec<&'a str>,
    pos: usize,
}

impl<'a> Lines<'a> {
    fn err(&self, kind: impl Into<ParseErrorKind>) -> ParseError {
        ParseError { line: self.pos + 1, kind: kind.into() }
    }

    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.pos).copied()
    }

    fn next(&mut self, what: &'static str) -> Result<&'a str, ParseError> {
        let line = self.peek().ok_or_else(|| self.err(ParseErrorKind::Expected(what)))?;
        self.pos += 1;
        Ok(line)
    }

    fn empty(&mut self) -> Result<(), ParseError> {
        match self.peek() {
            Some("") => {
                self.pos += 1;
                Ok(())
            }
            _ => Err(self.err(ParseErrorKind::Expected("an empty line"))),
        }
    }

    /// The value of the required field line `label` (`"URI: "` ...).
    fn field(&mut self, label: &'static str, what: &'static str) -> Result<&'a str, ParseError> {
        match self.peek().and_then(|l| l.strip_prefix(label)) {
            Some(value) => {
                self.pos += 1;
                Ok(value)
            }
            None => Err(self.err(ParseErrorKind::Expected(what))),
        }
    }

    /// The value of the optional field line `label`, if the next line is it.
    fn optional(&mut self, label: &'static str) -> Option<&'a str> {
        let value = self.peek()?.strip_prefix(label)?;
        self.pos += 1;
        Some(value)
    }

    /// A field error on the line just consumed.
    fn fail(&self, e: FieldError) -> ParseError {
        ParseError { line: self.pos, kind: e.into() }
    }

    /// Applies a field validator to the line just consumed.
    fn check<T>(&self, r: Result<T, FieldError>) -> Result<T, ParseError> {
        r.map_err(|e| self.fail(e))
    }
}

impl SiwxMessage {
    /// The namespace (EIP-4361 or SIWS).
    pub fn namespace(&self) -> Namespace {
        self.account.namespace()
    }

    /// Parses message text with the strict grammar: fixed field order, case-sensitive labels,
    /// LF line ends, no trailing LF. The namespace comes from the header line.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        if let Some(i) = text.find('\r') {
            let line = text[..i].matches('\n').count() + 1;
            return Err(ParseError { line, kind: ParseErrorKind::CarriageReturn });
        }
        let mut ls = Lines { lines: text.split('\n').collect(), pos: 0 };

        // Header: [ scheme "://" ] domain " wants you to sign in with your <Chain> account:"
        let header = ls.next("the header line")?;
        let (ns, prefix) = [Namespace::Eip155, Namespace::Solana]
            .into_iter()
            .find_map(|ns| header.strip_suffix(ns.header_suffix()).map(|p| (ns, p)))
            .ok_or(ParseError { line: 1, kind: ParseErrorKind::Header })?;
        let (scheme, domain) = match prefix.split_once("://") {
            Some((scheme, domain)) => (Some(ls.check(Scheme::new(scheme))?), domain),
            None => (None, prefix),
        };
        if domain.is_empty() {
            return Err(ls.fail(FieldError::Missing("domain")));
        }
        let domain = ls.check(Domain::new(domain))?;

        let address = ls.next("the address line")?;
        if address.is_empty() {
            return Err(ls.fail(FieldError::Missing("address")));
        }
        enum Addr {
            Eth(Address),
            Sol(SolanaAddress),
        }
        let address = match ns {
            Namespace::Eip155 => Addr::Eth(ls.check(parse_eip55_address(address))?),
            Namespace::Solana => Addr::Sol(ls.check(SolanaAddress::parse(address))?),
        };
        ls.empty()?;

        // EIP-4361: LF [ statement LF ] LF.  SIWS: [ LF statement LF ] LF (no empty line twice).
        let statement = match ns {
            Namespace::Eip155 => {
                if ls.peek() == Some("") {
                    ls.pos += 1;
                    None
                } else {
                    let s = ls.next("a statement or an empty line")?;
                    let s = ls.check(Statement::new(s))?;
                    ls.empty()?;
                    Some(s)
                }
            }
            Namespace::Solana => {
                if ls.lines.get(ls.pos + 1) == Some(&"") {
                    let s = ls.next("a statement")?;
                    let s = ls.check(Statement::new(s))?;
                    ls.empty()?;
                    Some(s)
                } else {
                    None
                }
            }
        };

        let uri = ls.field("URI: ", "the `URI: ` line")?;
        let uri = ls.check(Uri::new(uri))?;
        let version = ls.field("Version: ", "the `Version: ` line")?;
        if version != VERSION {
            return Err(ls.fail(FieldError::invalid("version", "expected 1")));
        }
        let chain = ls.field("Chain ID: ", "the `Chain ID: ` line")?;
        let account = match address {
            Addr::Eth(address) => Account::Eip155 { chain_id: ls.check(parse_eip155_chain_id(chain))?, address },
            Addr::Sol(address) => Account::Solana { chain: ls.check(SolanaChainRef::new(chain))?, address },
        };
        let nonce = ls.field("Nonce: ", "the `Nonce: ` line")?;
        let nonce = ls.check(Nonce::new(nonce))?;
        let issued_at = ls.field("Issued At: ", "the `Issued At: ` line")?;
        let issued_at = ls.check(Timestamp::parse_field(issued_at.to_owned(), "issuedAt"))?;

        let mut expiration_time = None;
        if let Some(v) = ls.optional("Expiration Time: ") {
            expiration_time = Some(ls.check(Timestamp::parse_field(v.to_owned(), "expirationTime"))?);
        }
        let mut not_before = None;
        if let Some(v) = ls.optional("Not Before: ") {
            not_before = Some(ls.check(Timestamp::parse_field(v.to_owned(), "notBefore"))?);
        }
        let mut request_id = None;
        if let Some(v) = ls.optional("Request ID: ") {
            request_id = Some(ls.check(RequestId::new(v))?);
        }
        let mut resources = None;
        if ls.peek() == Some("Resources:") {
            ls.pos += 1;
            let mut list = Vec::new();
            while let Some(r) = ls.optional("- ") {
                list.push(ls.check(Uri::new(r).map_err(|_| FieldError::invalid("resources", "expected an RFC 3986 URI")))?);
            }
            resources = Some(list);
        }
        if ls.peek().is_some() {
            return Err(ls.err(ParseErrorKind::Unexpected));
        }

        Ok(SiwxMessage { scheme, domain, account, statement, uri, nonce, issued_at, expiration_time, not_before, request_id, resources })
    }

    /// Renders the message text (the bytes a wallet signs).
    pub fn to_message(&self) -> String {
        self.to_string()
    }

    /// Builds a message from string fields, validating each against its grammar.
    pub fn from_fields(namespace: Namespace, fields: &MessageFields) -> Result<Self, FieldError> {
        fn req<'a>(v: &'a Option<String>, name: &'static str) -> Result<&'a str, FieldError> {
            v.as_deref().ok_or(FieldError::Missing(name))
        }
        fn ts(v: &Option<String>, name: &'static str) -> Result<Option<Timestamp>, FieldError> {
            v.as_ref().map(|s| Timestamp::parse_field(s.clone(), name)).transpose()
        }
        let scheme = fields.scheme.as_deref().map(Scheme::new).transpose()?;
        let domain = Domain::new(req(&fields.domain, "domain")?)?;
        let address = req(&fields.address, "address")?;
        let chain = req(&fields.chain_id, "chainId")?;
        let account = match namespace {
            Namespace::Eip155 => Account::Eip155 { address: parse_eip55_address(address)?, chain_id: parse_eip155_chain_id(chain)? },
            Namespace::Solana => Account::Solana { address: SolanaAddress::parse(address)?, chain: SolanaChainRef::new(chain)? },
        };
        let statement = fields.statement.as_deref().map(Statement::new).transpose()?;
        let uri = Uri::new(req(&fields.uri, "uri")?)?;
        if req(&fields.version, "version")? != VERSION {
            return Err(FieldError::invalid("version", "expected 1"));
        }
        let nonce = Nonce::new(req(&fields.nonce, "nonce")?)?;
        let issued_at = ts(&fields.issued_at, "issuedAt")?.ok_or(FieldError::Missing("issuedAt"))?;
        let expiration_time = ts(&fields.expiration_time, "expirationTime")?;
        let not_before = ts(&fields.not_before, "notBefore")?;
        let request_id = fields.request_id.as_deref().map(RequestId::new).transpose()?;
        let resources = fields
            .resources
            .as_ref()
            .map(|list| {
                list.iter()
                    .map(|r| Uri::new(r.as_str()).map_err(|_| FieldError::invalid("resources", "expected an RFC 3986 URI")))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        Ok(SiwxMessage { scheme, domain, account, statement, uri, nonce, issued_at, expiration_time, not_before, request_id, resources })
    }

    /// The string-typed fields (the inverse of [`SiwxMessage::from_fields`]).
    pub fn to_fields(&self) -> MessageFields {
        MessageFields {
            scheme: self.scheme.as_ref().map(|s| s.to_string()),
            domain: Some(self.domain.to_string()),
            address: Some(self.account.address_text()),
            statement: self.statement.as_ref().map(|s| s.to_string()),
            uri: Some(self.uri.to_string()),
            version: Some(VERSION.to_owned()),
            chain_id: Some(self.account.chain_text()),
            nonce: Some(self.nonce.to_string()),
            issued_at: Some(self.issued_at.to_string()),
            expiration_time: self.expiration_time.as_ref().map(|t| t.to_string()),
            not_before: self.not_before.as_ref().map(|t| t.to_string()),
            request_id: self.request_id.as_ref().map(|r| r.to_string()),
            resources: self.resources.as_ref().map(|list| list.iter().map(|r| r.to_string()).collect()),
        }
    }
}

impl fmt::Display for SiwxMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.namespace();
        if let Some(scheme) = &self.scheme {
            write!(f, "{scheme}://")?;
        }
        writeln!(f, "{}{}", self.domain, ns.header_suffix())?;
        writeln!(f, "{}", self.account.address_text())?;
        match (ns, &self.statement) {
            (Namespace::Eip155, None) => f.write_str("\n\n")?,
            (Namespace::Solana, None) => f.write_str("\n")?,
            (_, Some(statement)) => write!(f, "\n{statement}\n\n")?,
        }
        writeln!(f, "URI: {}", self.uri)?;
        writeln!(f, "Version: {VERSION}")?;
        writeln!(f, "Chain ID: {}", self.account.chain_text())?;
        writeln!(f, "Nonce: {}", self.nonce)?;
        write!(f, "Issued At: {}", self.issued_at)?;
        if let Some(t) = &self.expiration_time {
            write!(f, "\nExpiration Time: {t}")?;
        }
        if let Some(t) = &self.not_before {
            write!(f, "\nNot Before: {t}")?;
        }
        if let Some(r) = &self.request_id {
            write!(f, "\nRequest ID: {r}")?;
        }
        if let Some(resources) = &self.resources {
            f.write_str("\nResources:")?;
            for r in resources {
                write!(f, "\n- {r}")?;
            }
        }
        Ok(())
    }
}

impl FromStr for SiwxMessage {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        Self::parse(s)
    }
}

impl Serialize for SiwxMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SiwxMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}
