//! Spec §8 "Transaction errors": what a node (or a wallet relaying one) says when a transaction
//! cannot be sent, mapped to the catalogue's messages. Nodes word these differently (geth, anvil,
//! erigon, nethermind, providers), so the mapping matches on the phrases they share.

use serde::{Deserialize, Serialize};

use crate::ChainError;
use crate::rpc::RpcFailure;

/// One entry of the transaction error catalogue. `Display` is the catalogue's message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TransactionError {
    /// The node's revert reason, when it gave one, is kept apart from the message.
    #[error("execution reverted")]
    ExecutionReverted { reason: Option<String> },
    #[error("fee cap too high")]
    FeeCapTooHigh,
    #[error("fee cap too low")]
    FeeCapTooLow,
    #[error("nonce too high")]
    NonceTooHigh,
    #[error("nonce too low")]
    NonceTooLow,
    #[error("nonce at its maximum")]
    NonceMaxValue,
    #[error("insufficient funds")]
    InsufficientFunds,
    #[error("intrinsic gas too high")]
    IntrinsicGasTooHigh,
    #[error("intrinsic gas too low")]
    IntrinsicGasTooLow,
    #[error("transaction type unsupported")]
    TransactionTypeUnsupported,
    #[error("tip above fee cap")]
    TipAboveFeeCap,
    /// EIP-1193 4001 (and 5000, which the spec treats as a rejection): the visitor said no.
    #[error("user rejected the request")]
    UserRejected,
    #[error("HTTP request failed")]
    HttpRequestFailed,
    #[error("RPC request failed")]
    RpcRequestFailed,
    #[error("request timed out")]
    Timeout,
    /// Anything else, wrapped (spec §8: "Unknown errors are wrapped as an unknown RPC error").
    #[error("unknown RPC error")]
    Unknown { code: Option<i64>, message: String },
}

impl TransactionError {
    /// Classifies a JSON-RPC or EIP-1193 error by its code and message.
    pub fn classify(code: Option<i64>, message: &str) -> Self {
        let m = message.to_ascii_lowercase();
        let has = |phrases: &[&str]| phrases.iter().any(|p| m.contains(p));
        if matches!(code, Some(4001 | 5000)) {
            Self::UserRejected
        } else if code == Some(3) || has(&["execution reverted", "revert"]) {
            Self::ExecutionReverted { reason: revert_reason(message) }
        } else if has(&[
            "max priority fee per gas higher than max fee per gas",
            "tip higher than fee cap",
            "maxpriorityfeepergas higher than maxfeepergas",
        ]) {
            Self::TipAboveFeeCap
        } else if has(&["fee cap higher than 2^256", "max fee per gas higher than 2^256", "fee cap too high"]) {
            Self::FeeCapTooHigh
        } else if has(&[
            "fee cap less than block base fee",
            "max fee per gas less than block base fee",
            "fee cap too low",
            "transaction is outdated",
        ]) {
            Self::FeeCapTooLow
        } else if has(&["nonce has max value", "nonce max value"]) {
            Self::NonceMaxValue
        } else if has(&["nonce too high"]) {
            Self::NonceTooHigh
        } else if has(&["nonce too low", "transaction already imported", "already known"]) {
            Self::NonceTooLow
        } else if has(&["insufficient funds"]) {
            Self::InsufficientFunds
        } else if has(&["intrinsic gas too high", "gas limit reached", "exceeds block gas limit"]) {
            Self::IntrinsicGasTooHigh
        } else if has(&["intrinsic gas too low", "gas too low"]) {
            Self::IntrinsicGasTooLow
        } else if has(&["transaction type not supported", "type not supported", "unsupported transaction type"]) {
            Self::TransactionTypeUnsupported
        } else {
            Self::Unknown { code, message: message.to_string() }
        }
    }

    /// The catalogue entry for a failed call through the chain service.
    pub fn from_chain_error(error: &ChainError) -> Self {
        match error {
            ChainError::Transport(RpcFailure::Timeout) => Self::Timeout,
            ChainError::Transport(RpcFailure::HttpStatus { .. } | RpcFailure::Network(_)) => Self::HttpRequestFailed,
            ChainError::Transport(RpcFailure::BadResponse(_)) | ChainError::Decode(_) => Self::RpcRequestFailed,
            ChainError::Rpc { code, message, .. } => Self::classify(Some(*code), message),
            ChainError::UnsupportedNetwork(_) | ChainError::MethodNotAllowed { .. } => {
                Self::Unknown { code: None, message: error.to_string() }
            }
        }
    }
}

/// `"execution reverted: Not enough"` → `Some("Not enough")`.
fn revert_reason(message: &str) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    let at = lower.find("execution reverted")? + "execution reverted".len();
    let reason = message[at..].trim_start_matches([':', ' ']).trim();
    (!reason.is_empty()).then(|| reason.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use TransactionError as E;

    #[test]
    fn node_messages_map_to_the_catalogue() {
        let cases: &[(Option<i64>, &str, E)] = &[
            (
                Some(3),
                "execution reverted: ERC20: transfer amount exceeds balance",
                E::ExecutionReverted { reason: Some("ERC20: transfer amount exceeds balance".into()) },
            ),
            (Some(-32000), "execution reverted", E::ExecutionReverted { reason: None }),
            (Some(-32003), "Insufficient funds for gas * price + value", E::InsufficientFunds),
            (Some(-32000), "insufficient funds for transfer", E::InsufficientFunds),
            (Some(-32000), "nonce too low", E::NonceTooLow),
            (Some(-32000), "nonce too low: next nonce 5, tx nonce 3", E::NonceTooLow),
            (Some(-32000), "already known", E::NonceTooLow),
            (Some(-32000), "nonce too high", E::NonceTooHigh),
            (Some(-32000), "nonce has max value", E::NonceMaxValue),
            (Some(-32000), "max fee per gas less than block base fee", E::FeeCapTooLow),
            (Some(-32000), "fee cap higher than 2^256-1", E::FeeCapTooHigh),
            (Some(-32000), "max priority fee per gas higher than max fee per gas", E::TipAboveFeeCap),
            (Some(-32000), "intrinsic gas too low", E::IntrinsicGasTooLow),
            (Some(-32000), "intrinsic gas too high", E::IntrinsicGasTooHigh),
            (Some(-32000), "transaction type not supported", E::TransactionTypeUnsupported),
            (Some(4001), "User rejected the request.", E::UserRejected),
            (Some(-32000), "something new", E::Unknown { code: Some(-32000), message: "something new".into() }),
        ];
        for (code, message, expected) in cases {
            assert_eq!(&E::classify(*code, message), expected, "{message}");
        }
    }

    #[test]
    fn messages_are_the_catalogues() {
        assert_eq!(E::ExecutionReverted { reason: Some("x".into()) }.to_string(), "execution reverted");
        assert_eq!(E::NonceMaxValue.to_string(), "nonce at its maximum");
        assert_eq!(E::TipAboveFeeCap.to_string(), "tip above fee cap");
        assert_eq!(E::Unknown { code: None, message: "?".into() }.to_string(), "unknown RPC error");
    }

    #[test]
    fn transport_failures_map_to_http_rpc_and_timeout() {
        assert_eq!(E::from_chain_error(&ChainError::Transport(RpcFailure::Timeout)), E::Timeout);
        assert_eq!(E::from_chain_error(&ChainError::Transport(RpcFailure::HttpStatus { status: 502 })), E::HttpRequestFailed);
        assert_eq!(E::from_chain_error(&ChainError::Transport(RpcFailure::Network("refused".into()))), E::HttpRequestFailed);
        assert_eq!(E::from_chain_error(&ChainError::Transport(RpcFailure::BadResponse("x".into()))), E::RpcRequestFailed);
        let rpc = ChainError::Rpc { code: -32000, message: "nonce too low".into(), data: None };
        assert_eq!(E::from_chain_error(&rpc), E::NonceTooLow);
    }
}
