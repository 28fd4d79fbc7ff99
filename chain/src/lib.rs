//! Vestibule's chain service: the server side of everything an EVM account shows and does
//! (balances, activity, sends, receipts, a host's read requests), shared by every session, over
//! JSON-RPC with the spec's policy (§7 Chain RPC). See `docs/chain.md`.
//!
//! [`ChainService`] is the API the session runtime calls as effects; the rest are its parts, each
//! usable and tested on its own: the policy's pure decisions ([`rpc::policy`]) and the tower layers
//! that carry them out ([`rpc`]), exact amounts ([`amount`]), send calls ([`send`]), the spec's
//! transaction errors ([`tx_errors`]), the activity model and sources ([`activity`]).

pub mod activity;
pub mod amount;
pub mod balances;
pub mod clock;
pub mod config;
pub mod erc20;
pub mod error;
pub mod metrics;
pub mod network;
pub mod prices;
pub mod receipt;
pub mod rpc;
pub mod send;
pub mod service;
pub mod shared_task;
pub mod slots;
pub mod solana;
pub mod tls;
pub mod tx_errors;

pub use activity::{ActivityCursor, ActivityPage, ActivitySource};
pub use balances::{AccountAddress, AssetBalance, Balances};
pub use config::{ChainConfig, ConfigError};
pub use error::{ActivityError, BalanceError, ChainError};
pub use metrics::ChainMetrics;
pub use network::NetworkId;
pub use receipt::{ExpectedTransaction, ReceiptOutcome};
pub use service::{ChainService, ChainServiceBuilder, SolanaSendError};
pub use tx_errors::TransactionError;
