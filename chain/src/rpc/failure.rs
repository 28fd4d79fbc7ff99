//! Why a JSON-RPC call got no answer, carried through alloy's `TransportError` so callers above
//! alloy's client can tell a timeout from a refused connection from an HTTP status.

use alloy::transports::{TransportError, TransportErrorKind};

/// A call that every endpoint of a network failed to answer (the last endpoint's failure).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcFailure {
    /// Spec §8: "HTTP request failed" (with a status).
    #[error("HTTP request failed: status {status}")]
    HttpStatus { status: u16 },
    /// Spec §8: "HTTP request failed" (refused, reset, no status).
    #[error("HTTP request failed: {0}")]
    Network(String),
    /// Spec §8: "request timed out".
    #[error("request timed out")]
    Timeout,
    /// The endpoint's answer was not JSON-RPC, or lacked answers to some requests.
    #[error("RPC request failed: {0}")]
    BadResponse(String),
}

impl RpcFailure {
    /// The metric label of a failed attempt of this kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::HttpStatus { .. } => "http_status",
            Self::Network(_) => "network",
            Self::Timeout => "timeout",
            Self::BadResponse(_) => "bad_response",
        }
    }

    pub fn into_transport_error(self) -> TransportError {
        TransportErrorKind::custom(self)
    }

    /// The failure inside a transport error made by this crate's layers; other transport errors
    /// (which these layers never produce) become `BadResponse` with their text.
    pub fn from_transport_error(error: &TransportError) -> Option<Self> {
        match error {
            TransportError::Transport(TransportErrorKind::Custom(inner)) => {
                Some(inner.downcast_ref::<Self>().cloned().unwrap_or_else(|| Self::BadResponse(inner.to_string())))
            }
            TransportError::Transport(other) => Some(Self::BadResponse(other.to_string())),
            _ => None,
        }
    }
}
