//! Server-side verification of signed sign-in messages (pure: time is a parameter).
//!
//! Order of checks: the text must parse ([`SiwxMessage::parse`]); then the message's claims are
//! held against the [`VerifyPolicy`] ([`check_message`]: domain, scheme, URI origin, chain, nonce,
//! issued-at, age, expiration, not-before); then the signature: EIP-191 `personal_sign` recovery for
//! `eip155` accounts ([`verify_eoa`]), ed25519 over the UTF-8 message bytes for `solana` accounts
//! ([`verify_solana`]). Contract accounts (EIP-1271) need chain state and are checked by the
//! gateway (`vestibule_gateway::siwx`), which calls [`check_message`] and [`recover_eip191`] from here.
//!
//! The signature is always checked over the exact text received, never over a re-rendering.

use alloy_primitives::{Address, B256, Signature};
use serde::Serialize;
use time::{Duration, OffsetDateTime};

use super::message::{Namespace, ParseError, SiwxMessage};

/// What the server expects of a message. `None` leaves that binding unchecked; [`Verified`] lists
/// what was left unchecked. A sign-in flow sets all of `expected_domain`, `expected_scheme`,
/// `expected_uri_origin` and `expected_nonce` ([`VerifyPolicy::for_origin`] does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyPolicy {
    /// The instant to judge the message's times at.
    pub now: OffsetDateTime,
    /// The RFC 3986 authority the message's `domain` must equal (host compared case-insensitively,
    /// userinfo and port exactly; a missing port is not the same as the default port).
    pub expected_domain: Option<String>,
    /// The scheme the message's header must carry (`https` is assumed when the header has none),
    /// compared case-insensitively.
    pub expected_scheme: Option<String>,
    /// The origin (`scheme://host[:port]`) the message's `URI` must have.
    pub expected_uri_origin: Option<String>,
    /// The nonce this server issued for this session.
    pub expected_nonce: Option<String>,
    /// CAIP-2 chain ids the account may be on (`eip155:1`, `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp`).
    pub allowed_chains: Option<Vec<String>>,
    /// How far in the future `Issued At` may be (clock skew). `None` disables the check, as the
    /// public conformance vectors expect. [`VerifyPolicy::new`] sets 60 seconds.
    pub max_issued_at_skew: Option<Duration>,
    /// How old `Issued At` may be. `None`: no limit.
    pub max_age: Option<Duration>,
}

/// The default tolerance for an `Issued At` ahead of the server's clock.
pub const DEFAULT_ISSUED_AT_SKEW: Duration = Duration::seconds(60);

impl VerifyPolicy {
    /// A policy judging times at `now`, with the default issued-at skew and no bindings.
    pub fn new(now: OffsetDateTime) -> Self {
        Self {
            now,
            expected_domain: None,
            expected_scheme: None,
            expected_uri_origin: None,
            expected_nonce: None,
            allowed_chains: None,
            max_issued_at_skew: Some(DEFAULT_ISSUED_AT_SKEW),
            max_age: None,
        }
    }

    /// A policy bound to the server's origin (`https://app.example` or `http://localhost:8080`)
    /// and the nonce issued to this session: the domain must be the origin's authority, the
    /// scheme (explicit or assumed `https`) the origin's scheme, and the URI of that origin.
    /// Returns `None` if `origin` is not `scheme://authority`.
    pub fn for_origin(origin: &str, nonce: &str, now: OffsetDateTime) -> Option<Self> {
        let (scheme, authority) = origin.split_once("://")?;
        if !super::grammar::is_scheme(scheme) || super::grammar::authority_parts(authority).is_none() {
            return None;
        }
        let mut p = Self::new(now);
        p.expected_domain = Some(authority.to_owned());
        p.expected_scheme = Some(scheme.to_owned());
        p.expected_uri_origin = Some(super::grammar::uri_origin(origin)?);
        p.expected_nonce = Some(nonce.to_owned());
        Some(p)
    }

    /// The bindings this policy leaves unchecked.
    pub fn unchecked(&self) -> Vec<Binding> {
        let mut v = Vec::new();
        if self.expected_domain.is_none() {
            v.push(Binding::Domain);
        }
        if self.expected_scheme.is_none() {
            v.push(Binding::Scheme);
        }
        if self.expected_uri_origin.is_none() {
            v.push(Binding::UriOrigin);
        }
        if self.expected_nonce.is_none() {
            v.push(Binding::Nonce);
        }
        if self.allowed_chains.is_none() {
            v.push(Binding::Chain);
        }
        if self.max_issued_at_skew.is_none() {
            v.push(Binding::IssuedAtSkew);
        }
        v
    }
}

/// A binding a [`VerifyPolicy`] may leave unchecked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    /// `expected_domain`.
    Domain,
    /// `expected_scheme`.
    Scheme,
    /// `expected_uri_origin`.
    UriOrigin,
    /// `expected_nonce`.
    Nonce,
    /// `allowed_chains`.
    Chain,
    /// `max_issued_at_skew`.
    IssuedAtSkew,
}

/// How the signature was proven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SignatureMethod {
    /// EIP-191 `personal_sign` recovery (an externally owned account).
    Eip191,
    /// EIP-1271 `isValidSignature` on the account's contract (checked by the gateway).
    Eip1271,
    /// ed25519 over the message bytes (a Solana account).
    Ed25519,
}

/// A message that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The parsed message (its `account` is the signed-in account).
    pub message: SiwxMessage,
    /// How the signature was proven.
    pub method: SignatureMethod,
    /// Bindings the policy did not check.
    pub unchecked: Vec<Binding>,
}

/// Why verification failed. [`VerifyError::code`] gives a stable snake_case reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The text is not a valid message.
    #[error("malformed message: {0}")]
    Malformed(#[from] ParseError),
    /// An EIP-4361 message given to the Solana verifier or the reverse.
    #[error("expected a {expected} message, got a {found} one")]
    WrongNamespace {
        /// What the verifier handles.
        expected: Namespace,
        /// What the message is.
        found: Namespace,
    },
    /// `domain` is not the expected one.
    #[error("domain {found:?} is not the expected {expected:?}")]
    DomainMismatch {
        /// Expected.
        expected: String,
        /// In the message.
        found: String,
    },
    /// The header's scheme (or the assumed `https`) is not the expected one.
    #[error("scheme {found:?} is not the expected {expected:?}")]
    SchemeMismatch {
        /// Expected.
        expected: String,
        /// In the message (`https` when absent).
        found: String,
    },
    /// The `URI` is not of the expected origin.
    #[error("URI {found:?} is not of the expected origin {expected:?}")]
    UriMismatch {
        /// Expected origin.
        expected: String,
        /// The message's URI.
        found: String,
    },
    /// The nonce is not the one issued.
    #[error("nonce is not the one issued for this session")]
    NonceMismatch,
    /// The chain is not allowed.
    #[error("chain {found} is not allowed")]
    ChainNotAllowed {
        /// The message's CAIP-2 chain id.
        found: String,
    },
    /// `Issued At` is further in the future than the allowed skew.
    #[error("issued at {issued_at}, later than now ({now}) plus the allowed skew")]
    IssuedInFuture {
        /// From the message.
        issued_at: String,
        /// The policy's now.
        now: String,
    },
    /// `Issued At` is older than the allowed age.
    #[error("issued at {issued_at}, older than the allowed age")]
    TooOld {
        /// From the message.
        issued_at: String,
    },
    /// `Expiration Time` has passed.
    #[error("expired at {expiration_time}")]
    Expired {
        /// From the message.
        expiration_time: String,
    },
    /// `Not Before` has not come yet.
    #[error("not valid before {not_before}")]
    NotYetValid {
        /// From the message.
        not_before: String,
    },
    /// The signature bytes cannot be a signature of this kind.
    #[error("malformed signature: {0}")]
    MalformedSignature(&'static str),
    /// The signature is well-formed but not by the message's account.
    #[error("signature is not by {expected}{}", recovered.as_ref().map(|r| format!(" (recovered {r})")).unwrap_or_default())]
    SignatureMismatch {
        /// The message's address.
        expected: String,
        /// The address recovered from an EIP-191 signature, when recovery succeeded.
        recovered: Option<String>,
    },
}

impl VerifyError {
    /// A stable snake_case reason code.
    pub fn code(&self) -> &'static str {
        match self {
            VerifyError::Malformed(_) => "malformed_message",
            VerifyError::WrongNamespace { .. } => "wrong_namespace",
            VerifyError::DomainMismatch { .. } => "domain_mismatch",
            VerifyError::SchemeMismatch { .. } => "scheme_mismatch",
            VerifyError::UriMismatch { .. } => "uri_mismatch",
            VerifyError::NonceMismatch => "nonce_mismatch",
            VerifyError::ChainNotAllowed { .. } => "chain_not_allowed",
            VerifyError::IssuedInFuture { .. } => "issued_in_future",
            VerifyError::TooOld { .. } => "too_old",
            VerifyError::Expired { .. } => "expired",
            VerifyError::NotYetValid { .. } => "not_yet_valid",
            VerifyError::MalformedSignature(_) => "malformed_signature",
            VerifyError::SignatureMismatch { .. } => "signature_mismatch",
        }
    }
}

/// Compares a secret (the nonce) without a timing side channel.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    subtle::ConstantTimeEq::ct_eq(a, b).into()
}

fn fmt_time(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339).unwrap_or_else(|_| t.to_string())
}

/// Holds a parsed message's claims against the policy (everything but the signature).
pub fn check_message(msg: &SiwxMessage, policy: &VerifyPolicy) -> Result<(), VerifyError> {
    if let Some(expected) = &policy.expected_domain {
        let found = msg.domain.parts();
        let matches = super::grammar::authority_parts(expected)
            .is_some_and(|e| e.userinfo == found.userinfo && e.host.eq_ignore_ascii_case(found.host) && e.port == found.port);
        if !matches {
            return Err(VerifyError::DomainMismatch { expected: expected.clone(), found: msg.domain.to_string() });
        }
    }
    if let Some(expected) = &policy.expected_scheme {
        let found = msg.scheme.as_ref().map_or("https", |s| s.as_str());
        if !found.eq_ignore_ascii_case(expected) {
            return Err(VerifyError::SchemeMismatch { expected: expected.clone(), found: found.to_owned() });
        }
    }
    if let Some(expected) = &policy.expected_uri_origin {
        let expected_origin = super::grammar::uri_origin(expected);
        if expected_origin.is_none() || msg.uri.origin() != expected_origin {
            return Err(VerifyError::UriMismatch { expected: expected.clone(), found: msg.uri.to_string() });
        }
    }
    if let Some(allowed) = &policy.allowed_chains {
        let found = msg.account.caip2();
        if !allowed.contains(&found) {
            return Err(VerifyError::ChainNotAllowed { found });
        }
    }
    if let Some(expected) = &policy.expected_nonce
        && !ct_eq(expected.as_bytes(), msg.nonce.as_str().as_bytes())
    {
        return Err(VerifyError::NonceMismatch);
    }
    let now = policy.now;
    let issued = msg.issued_at.at();
    if let Some(skew) = policy.max_issued_at_skew
        && issued > now + skew
    {
        return Err(VerifyError::IssuedInFuture { issued_at: msg.issued_at.to_string(), now: fmt_time(now) });
    }
    if let Some(max_age) = policy.max_age
        && now - issued > max_age
    {
        return Err(VerifyError::TooOld { issued_at: msg.issued_at.to_string() });
    }
    if let Some(exp) = &msg.expiration_time
        && now >= exp.at()
    {
        return Err(VerifyError::Expired { expiration_time: exp.to_string() });
    }
    if let Some(nbf) = &msg.not_before
        && now < nbf.at()
    {
        return Err(VerifyError::NotYetValid { not_before: nbf.to_string() });
    }
    Ok(())
}

/// The EIP-191 `personal_sign` hash of a message: keccak256 of
/// `"\x19Ethereum Signed Message:\n" + len(message) + message`. EIP-1271 wallets are asked about it.
pub fn eip191_hash(message: &[u8]) -> B256 {
    alloy_primitives::eip191_hash_message(message)
}

/// Recovers the signer of an EIP-191 `personal_sign` signature: 65 bytes `r || s || v` with `v`
/// in {27, 28} or {0, 1}. A high `s` is accepted (as `ecrecover` does).
pub fn recover_eip191(message: &[u8], signature: &[u8]) -> Result<Address, VerifyError> {
    let bytes: &[u8; 65] = signature.try_into().map_err(|_| VerifyError::MalformedSignature("expected 65 bytes (r, s, v)"))?;
    let parity = match bytes[64] {
        0 | 27 => false,
        1 | 28 => true,
        _ => return Err(VerifyError::MalformedSignature("v must be 27, 28, 0 or 1")),
    };
    let sig = Signature::from_bytes_and_parity(&bytes[..64], parity);
    sig.recover_address_from_msg(message).map_err(|_| VerifyError::MalformedSignature("no public key recovers from this signature"))
}

fn parse_and_check(message: &str, namespace: Namespace, policy: &VerifyPolicy) -> Result<SiwxMessage, VerifyError> {
    let msg = SiwxMessage::parse(message)?;
    if msg.namespace() != namespace {
        return Err(VerifyError::WrongNamespace { expected: namespace, found: msg.namespace() });
    }
    check_message(&msg, policy)?;
    Ok(msg)
}

/// Verifies an EIP-4361 message signed by an externally owned account (EIP-191 `personal_sign`).
pub fn verify_eoa(message: &str, signature: &[u8], policy: &VerifyPolicy) -> Result<Verified, VerifyError> {
    let msg = parse_and_check(message, Namespace::Eip155, policy)?;
    let super::message::Account::Eip155 { address, .. } = &msg.account else { unreachable!("namespace checked") };
    match recover_eip191(message.as_bytes(), signature) {
        Ok(recovered) if recovered == *address => {}
        Ok(recovered) => {
            return Err(VerifyError::SignatureMismatch {
                expected: address.to_checksum(None),
                recovered: Some(recovered.to_checksum(None)),
            });
        }
        Err(e) => return Err(e),
    }
    Ok(Verified { message: msg, method: SignatureMethod::Eip191, unchecked: policy.unchecked() })
}

/// Verifies a Sign-In With Solana message: an ed25519 signature (64 bytes) over the message's
/// UTF-8 bytes by the message's address (its 32-byte public key). Uses `verify_strict`, which
/// also refuses small-order keys and non-canonical signatures.
pub fn verify_solana(message: &str, signature: &[u8], policy: &VerifyPolicy) -> Result<Verified, VerifyError> {
    let msg = parse_and_check(message, Namespace::Solana, policy)?;
    let super::message::Account::Solana { address, .. } = &msg.account else { unreachable!("namespace checked") };
    let sig = ed25519_dalek::Signature::from_slice(signature)
        .map_err(|_| VerifyError::MalformedSignature("expected a 64-byte ed25519 signature"))?;
    let mismatch = || VerifyError::SignatureMismatch { expected: address.to_string(), recovered: None };
    let key = ed25519_dalek::VerifyingKey::from_bytes(address.as_bytes()).map_err(|_| mismatch())?;
    key.verify_strict(message.as_bytes(), &sig).map_err(|_| mismatch())?;
    Ok(Verified { message: msg, method: SignatureMethod::Ed25519, unchecked: policy.unchecked() })
}

/// Verifies a message of either namespace with the pure verifiers (EIP-191 or ed25519).
pub fn verify(message: &str, signature: &[u8], policy: &VerifyPolicy) -> Result<Verified, VerifyError> {
    let msg = SiwxMessage::parse(message)?;
    match msg.namespace() {
        Namespace::Eip155 => verify_eoa(message, signature, policy),
        Namespace::Solana => verify_solana(message, signature, policy),
    }
}

/// Decodes a signature given as text: `0x`-prefixed hex, or bare hex; for Solana a bare string
/// is hex only when it is 128 hex digits (64 bytes) and base58 (the usual spelling of Solana
/// signatures) otherwise. `None` if it is neither.
pub fn decode_signature(text: &str, namespace: Namespace) -> Option<Vec<u8>> {
    let t = text.trim();
    if let Some(h) = t.strip_prefix("0x") {
        return hex::decode(h).ok();
    }
    match namespace {
        Namespace::Eip155 => hex::decode(t).ok(),
        Namespace::Solana if t.len() == 128 => hex::decode(t).ok(),
        Namespace::Solana => bs58::decode(t).into_vec().ok(),
    }
}
