//! Waiting for a sent transaction's receipt (`eth_getTransactionReceipt`), for a bounded time.

use std::time::Duration;

use alloy::primitives::{Address, B256, U64, U128};
use alloy::rpc::client::RpcClient;
use serde::{Deserialize, Serialize};

use crate::ChainError;
use crate::activity::TransactionStatus;

/// What became of a transaction when the wait ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReceiptOutcome {
    Mined(MinedReceipt),
    /// No receipt yet when the wait ended (still in the mempool, dropped, or on another node).
    NotYetMined,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinedReceipt {
    pub hash: B256,
    /// `Failed`: mined but reverted.
    pub status: TransactionStatus,
    pub block_number: u64,
    pub gas_used: u64,
    pub effective_gas_price: Option<u128>,
    pub contract_address: Option<Address>,
    /// The accounts whose activity it changed: its sender, its recipient (or the contract it
    /// created), and both sides of every ERC-20/721 `Transfer` it logged.
    #[serde(default)]
    pub accounts: Vec<Address>,
}

#[derive(Debug, Clone, Deserialize)]
struct NodeLog {
    #[serde(default)]
    topics: Vec<B256>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeReceipt {
    transaction_hash: B256,
    status: Option<U64>,
    block_number: Option<U64>,
    gas_used: U64,
    effective_gas_price: Option<U128>,
    contract_address: Option<Address>,
    #[serde(default)]
    from: Option<Address>,
    #[serde(default)]
    to: Option<Address>,
    #[serde(default)]
    logs: Vec<NodeLog>,
}

/// Polls every `poll_interval` until the receipt is there or `max_wait` has passed. A failed poll
/// is tried again at the next one; the error is returned only if the last poll failed too.
pub async fn wait_for_receipt(
    client: &RpcClient,
    hash: B256,
    max_wait: Duration,
    poll_interval: Duration,
) -> Result<ReceiptOutcome, ChainError> {
    let deadline = tokio::time::Instant::now() + max_wait;
    loop {
        let last = match client.request::<_, Option<NodeReceipt>>("eth_getTransactionReceipt", (hash,)).await {
            Ok(Some(receipt)) => return Ok(ReceiptOutcome::Mined(mined(receipt))),
            Ok(None) => Ok(ReceiptOutcome::NotYetMined),
            Err(error) => Err(ChainError::from(error)),
        };
        let now = tokio::time::Instant::now();
        if now + poll_interval > deadline {
            return last;
        }
        tokio::time::sleep(poll_interval).await;
    }
}

fn mined(receipt: NodeReceipt) -> MinedReceipt {
    let transfer_sides = receipt
        .logs
        .iter()
        .filter(|log| log.topics.len() >= 3 && log.topics[0] == crate::erc20::TRANSFER_TOPIC)
        .flat_map(|log| [Address::from_word(log.topics[1]), Address::from_word(log.topics[2])]);
    let mut accounts: Vec<Address> =
        [receipt.from, receipt.to, receipt.contract_address].into_iter().flatten().chain(transfer_sides).collect();
    accounts.sort();
    accounts.dedup();
    MinedReceipt {
        hash: receipt.transaction_hash,
        status: match receipt.status {
            Some(status) if status.is_zero() => TransactionStatus::Failed,
            _ => TransactionStatus::Confirmed,
        },
        block_number: receipt.block_number.map_or(0, |b| b.to()),
        gas_used: receipt.gas_used.to(),
        effective_gas_price: receipt.effective_gas_price.map(|p| p.to()),
        contract_address: receipt.contract_address,
        accounts,
    }
}
