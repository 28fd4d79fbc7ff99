//! How a state travels: its canonical JSON, its hash, and the JSON Patch (RFC 6902) between two states.
//!
//! Canonical JSON is serde_json's compact form of the state with object keys sorted (serde_json's
//! `Value` keeps keys in a BTreeMap). The browser computes the same bytes from its mirror (sorted
//! keys, `JSON.stringify`), so equal states give equal hashes. The state holds no floating-point
//! numbers, so both sides print every number identically.

use sha2::{Digest, Sha256};

use crate::session::SessionState;

pub fn to_value(state: &SessionState) -> serde_json::Value {
    serde_json::to_value(state).expect("session state serializes")
}

pub fn canonical_json(value: &serde_json::Value) -> String {
    serde_json::to_string(value).expect("a JSON value serializes")
}

/// First 16 hex characters of SHA-256 over the canonical JSON: a consistency check, not a secret.
pub fn state_hash(value: &serde_json::Value) -> String {
    let digest = Sha256::digest(canonical_json(value).as_bytes());
    hex::encode(&digest[..8])
}

pub fn patch(before: &serde_json::Value, after: &serde_json::Value) -> json_patch::Patch {
    json_patch::diff(before, after)
}
