//! Vestibule's chain service: the server side of everything an EVM account shows and does, over
//! JSON-RPC with the spec's policy (§7 Chain RPC). See `docs/chain.md`.

pub mod metrics;
pub mod network;
pub mod rpc;

pub use metrics::ChainMetrics;
pub use network::NetworkId;
