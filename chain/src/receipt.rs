//! Waiting for a sent transaction's receipt (`eth_getTransactionReceipt`), for a bounded time.

use std::time::Duration;

use alloy::primitives::{Address, B256, Bytes, U64, U128, U256};
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
    /// Mined, but sent to another address than the one asked for: the hash (the wallet's word) is
    /// not the transfer's.
    SentElsewhere {
        to: Option<Address>,
    },
    /// Mined, but sent by another account than the one asked for: not the transfer either.
    SentByAnother {
        from: Option<Address>,
    },
    /// Mined, from and to the addresses asked for, but with another value or calldata: another
    /// transaction of the same account to the same address (an earlier transfer, another amount).
    OtherCall {
        value: U256,
    },
}

/// What the transaction behind a hash must be to be the transfer a session built. The hash is a
/// wallet's answer (the browser's word): without these checks any mined transaction's hash would
/// pass for the transfer. A field left `None` is not compared (a transfer recorded before it was).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpectedTransaction {
    /// The address it was built to: the receiver, or an ERC-20 transfer's token contract.
    pub to: Option<Address>,
    /// The account that submitted it.
    pub from: Option<Address>,
    /// The value and calldata it was built with.
    pub call: Option<(U256, Bytes)>,
}

impl ExpectedTransaction {
    /// What is wrong with `mined` by its receipt alone (the addresses), if anything.
    fn mismatch(&self, mined: &MinedReceipt) -> Option<ReceiptOutcome> {
        if self.to.is_some_and(|to| mined.to != Some(to)) {
            return Some(ReceiptOutcome::SentElsewhere { to: mined.to });
        }
        if self.from.is_some_and(|from| mined.from != Some(from)) {
            return Some(ReceiptOutcome::SentByAnother { from: mined.from });
        }
        None
    }
}

#[derive(Debug, Clone, Deserialize)]
struct NodeTransaction {
    value: U256,
    input: Bytes,
}

/// `mined` checked against `expected`: its addresses by its receipt, then (when a call is
/// expected) its value and calldata by `eth_getTransactionByHash`, which a receipt does not carry.
pub async fn check_mined(client: &RpcClient, mined: MinedReceipt, expected: &ExpectedTransaction) -> Result<ReceiptOutcome, ChainError> {
    if let Some(wrong) = expected.mismatch(&mined) {
        return Ok(wrong);
    }
    let Some((value, input)) = &expected.call else { return Ok(ReceiptOutcome::Mined(mined)) };
    let transaction: Option<NodeTransaction> = client.request("eth_getTransactionByHash", (mined.hash,)).await.map_err(ChainError::from)?;
    // The node gave the receipt, so it knows the transaction; none would be a node out of step.
    let Some(transaction) = transaction else {
        return Err(ChainError::Decode(format!("no transaction {} where its receipt was", mined.hash)));
    };
    if transaction.value != *value || transaction.input != *input {
        return Ok(ReceiptOutcome::OtherCall { value: transaction.value });
    }
    Ok(ReceiptOutcome::Mined(mined))
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
    /// The account that sent it (as the node's receipt names it).
    #[serde(default)]
    pub from: Option<Address>,
    /// The address it was sent to (none for a deployment).
    #[serde(default)]
    pub to: Option<Address>,
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
/// The wait after the `polls`-th unanswered poll: `every` for the first 10 (most transactions are
/// mined by then), then twice as long every 5 polls, up to 8 × `every`. A hash that never mines
/// (a wallet's made-up answer costs the node nothing to give) costs 31 polls over 2 minutes at a
/// 1 s `every`, not 120.
pub fn receipt_poll_delay(polls: u32, every: Duration) -> Duration {
    let doublings = (polls + 4).saturating_sub(10) / 5;
    every * (1u32 << doublings.min(3))
}

pub async fn wait_for_receipt(
    client: &RpcClient,
    hash: B256,
    max_wait: Duration,
    poll_interval: Duration,
) -> Result<ReceiptOutcome, ChainError> {
    let deadline = tokio::time::Instant::now() + max_wait;
    let mut polls = 0u32;
    loop {
        let last = match client.request::<_, Option<NodeReceipt>>("eth_getTransactionReceipt", (hash,)).await {
            Ok(Some(receipt)) => return Ok(ReceiptOutcome::Mined(mined(receipt))),
            Ok(None) => Ok(ReceiptOutcome::NotYetMined),
            Err(error) => Err(ChainError::from(error)),
        };
        polls += 1;
        let wait = receipt_poll_delay(polls, poll_interval);
        let now = tokio::time::Instant::now();
        if now + wait > deadline {
            return last;
        }
        tokio::time::sleep(wait).await;
    }
}

/// The most accounts a receipt names for dropping cached activity: its sender, its recipient or
/// created contract, and the first sides of its token transfers. A contract can log any number of
/// transfers in one transaction, and each account named costs a pass over the activity cache
/// under its lock; an account past the bound sees its cached page for at most 30 s more.
pub const MAX_RECEIPT_ACCOUNTS: usize = 64;

fn mined(receipt: NodeReceipt) -> MinedReceipt {
    let transfer_sides = receipt
        .logs
        .iter()
        .filter(|log| log.topics.len() >= 3 && log.topics[0] == crate::erc20::TRANSFER_TOPIC)
        .flat_map(|log| [Address::from_word(log.topics[1]), Address::from_word(log.topics[2])]);
    let mut accounts: Vec<Address> = Vec::new();
    for account in [receipt.from, receipt.to, receipt.contract_address].into_iter().flatten().chain(transfer_sides) {
        if accounts.len() == MAX_RECEIPT_ACCOUNTS {
            break;
        }
        if !accounts.contains(&account) {
            accounts.push(account);
        }
    }
    accounts.sort();
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
        from: receipt.from,
        to: receipt.to,
        accounts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_hash_that_never_mines_when_polled_for_two_minutes_then_the_polls_thin_out_to_31() {
        let every = Duration::from_secs(1);
        let delays: Vec<u64> = (1..=30).map(|n| receipt_poll_delay(n, every).as_secs()).collect();
        assert_eq!(&delays[..10], [1; 10], "every second while most transactions mine");
        assert_eq!(&delays[10..20], [2, 2, 2, 2, 2, 4, 4, 4, 4, 4]);
        assert_eq!(&delays[20..], [8; 10], "then at most 8 s apart");
        // Polls within 120 s: the first at once, then one after each wait.
        let mut at = 0;
        let polls = 1
            + (1..)
                .map(|n| receipt_poll_delay(n, every).as_secs())
                .take_while(|d| {
                    at += d;
                    at <= 120
                })
                .count();
        assert_eq!(polls, 31);
    }

    #[test]
    fn given_a_receipt_with_thousands_of_transfers_when_read_then_it_names_its_own_sides_and_at_most_64_accounts() {
        let (from, to) = (Address::repeat_byte(0xf1), Address::repeat_byte(0x70));
        let logs: Vec<serde_json::Value> = (0..5_000u32)
            .map(|n| {
                let side = Address::left_padding_from(&n.to_be_bytes()).into_word();
                serde_json::json!({ "topics": [crate::erc20::TRANSFER_TOPIC, to.into_word(), side] })
            })
            .collect();
        let receipt: NodeReceipt = serde_json::from_value(serde_json::json!({
            "transactionHash": B256::repeat_byte(1), "status": "0x1", "blockNumber": "0x5", "gasUsed": "0x5208",
            "from": from, "to": to, "logs": logs,
        }))
        .unwrap();
        let accounts = mined(receipt).accounts;
        assert_eq!(accounts.len(), MAX_RECEIPT_ACCOUNTS);
        assert!(accounts.contains(&from) && accounts.contains(&to), "its own sender and recipient first");
        // The positive side: a small transaction names every side.
        let few: NodeReceipt = serde_json::from_value(serde_json::json!({
            "transactionHash": B256::repeat_byte(1), "status": "0x1", "blockNumber": "0x5", "gasUsed": "0x5208",
            "from": from, "to": to, "logs": [{ "topics": [crate::erc20::TRANSFER_TOPIC, from.into_word(), Address::ZERO.into_word()] }],
        }))
        .unwrap();
        assert_eq!(mined(few).accounts, [Address::ZERO, to, from]);
    }
}
