//! Errors of the chain service. Each operation's error displays the spec's user-facing message
//! (§5, §6, §8) and keeps the cause as its source, for logs and events.

use alloy::transports::TransportError;

use crate::NetworkId;
use crate::rpc::RpcFailure;

/// Why a question to a network got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The network has no chain service here (no RPC endpoint configured). Spec §5.
    #[error("Unsupported chain")]
    UnsupportedNetwork(NetworkId),
    /// Every endpoint failed: "HTTP request failed", "request timed out", "RPC request failed".
    #[error(transparent)]
    Transport(#[from] RpcFailure),
    /// The node answered with a JSON-RPC error.
    #[error("RPC request failed: {message} (code {code})")]
    Rpc { code: i64, message: String, data: Option<String> },
    /// The node's answer could not be read as what was asked for.
    #[error("RPC request failed: unexpected answer: {0}")]
    Decode(String),
    /// Spec §6: a method outside the safe read list.
    #[error("Requested RPC call is not allowed")]
    MethodNotAllowed { method: String },
}

impl ChainError {
    /// A label for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnsupportedNetwork(_) => "unsupported_network",
            Self::Transport(failure) => failure.kind(),
            Self::Rpc { .. } => "rpc_error",
            Self::Decode(_) => "decode",
            Self::MethodNotAllowed { .. } => "not_allowed",
        }
    }
}

impl From<TransportError> for ChainError {
    fn from(error: TransportError) -> Self {
        if let Some(payload) = error.as_error_resp() {
            return Self::Rpc {
                code: payload.code,
                message: payload.message.to_string(),
                data: payload.data.as_ref().map(|d| d.get().to_owned()),
            };
        }
        if let Some(failure) = RpcFailure::from_transport_error(&error) {
            return Self::Transport(failure);
        }
        Self::Decode(error.to_string())
    }
}

/// A balance refresh failed. Spec §8: "Token Balance Unavailable" (the session blocks a retry for
/// 30 s).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Token Balance Unavailable")]
pub struct BalanceError {
    #[source]
    pub cause: ChainError,
}

/// Activity could not be listed. Spec §8.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActivityError {
    #[error("Transactions can't be fetched without an accountAddress")]
    MissingAccountAddress,
    /// The session empties the list and clears the cursor (spec §4 Transaction list).
    #[error("Failed to fetch transactions")]
    Failed(#[source] ChainError),
}
