//! Vestibule's chain service: the server side of everything an EVM account shows and does, over
//! JSON-RPC with the spec's policy (§7 Chain RPC). See `docs/chain.md`.

pub mod amount;
pub mod erc20;
pub mod error;
pub mod metrics;
pub mod network;
pub mod rpc;
pub mod safe;
pub mod send;
pub mod tx_errors;

pub use error::{ActivityError, BalanceError, ChainError};
pub use metrics::ChainMetrics;
pub use network::NetworkId;
pub use tx_errors::TransactionError;
