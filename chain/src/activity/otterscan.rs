//! Activity from a node's Otterscan API (anvil, erigon, reth serve it), completed with
//! `eth_getLogs`.
//!
//! `ots_searchTransactionsBefore(address, block, n)` returns, newest first, whole blocks of the
//! transactions whose trace touches `address` as sender or recipient, until at least `n` are found
//! (with their receipts and times). That misses ERC-20/721 transfers to (or from) the account in
//! transactions it neither sent nor was called by, so the same block range is searched with
//! `eth_getLogs` on the Transfer topic, and the transactions found there are fetched too.
//!
//! A page covers a range of whole blocks; the cursor is the lowest block of the page (`before:N`),
//! and the next page searches below it. Three round trips per page: the search, the logs, then
//! one batch for the transactions the logs found and the tokens not yet known.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use alloy::primitives::{Address, B256, Bytes, U64, U256};
use alloy::rpc::client::{RpcClient, Waiter};
use alloy::sol_types::SolCall;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::{
    ActivityCursor, ActivityPage, ActivitySource, Direction, OperationType, Transaction, TransactionStatus, Transfer, TransferAsset,
    newest_first_without_spam,
};
use crate::ChainError;
use crate::balances::{TokenMetadata, TokenMetadataCache};
use crate::config::NetworkSettings;
use crate::erc20::{IERC20, TRANSFER_TOPIC, decode_decimals, decode_symbol};

pub struct OtterscanActivity {
    client: RpcClient,
    network: NetworkSettings,
    metadata: Arc<TokenMetadataCache>,
}

impl OtterscanActivity {
    pub fn new(client: RpcClient, network: NetworkSettings, metadata: Arc<TokenMetadataCache>) -> Self {
        Self { client, network, metadata }
    }
}

// What the node sends, read leniently: only the fields used, all quantities optional where nodes
// differ (Otterscan's receipts carry `timestamp`, plain receipts do not).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeTransaction {
    hash: B256,
    from: Address,
    to: Option<Address>,
    value: U256,
    #[serde(default)]
    input: Bytes,
    block_number: Option<U64>,
    transaction_index: Option<U64>,
    block_timestamp: Option<U64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeReceipt {
    transaction_hash: B256,
    status: Option<U64>,
    #[serde(default)]
    logs: Vec<NodeLog>,
    timestamp: Option<U64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeLog {
    address: Address,
    topics: Vec<B256>,
    #[serde(default)]
    data: Bytes,
    transaction_hash: Option<B256>,
    block_number: Option<U64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OtsPage {
    txs: Vec<NodeTransaction>,
    receipts: Vec<NodeReceipt>,
    last_page: bool,
}

#[derive(Debug, Clone, Deserialize)]
struct NodeBlock {
    timestamp: U64,
}

/// The block range a page covers, and where the next one starts: pure, from the search's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRange {
    /// Lowest block of the page.
    pub low: u64,
    /// Highest block of the page.
    pub high: u64,
    /// The cursor of the next page: search below this block.
    pub next_before: Option<u64>,
}

/// `high`: the highest block the page may hold; `oldest_found`: the lowest block among the
/// search's transactions; `last_page`: the search says nothing is older. A page wider than
/// `max_range` blocks is cut to its newest `max_range`, and the next page continues below the cut.
pub fn page_range(high: u64, oldest_found: Option<u64>, last_page: bool, max_range: u64) -> PageRange {
    let (low, mut next_before) = match oldest_found {
        // Pages hold whole blocks, so the next page starts below this one's lowest block.
        Some(oldest) if !last_page && oldest > 0 => (oldest, Some(oldest)),
        _ => (0, None),
    };
    let mut low = low.min(high);
    let span = high - low + 1;
    if span > max_range {
        low = high + 1 - max_range;
        next_before = Some(low);
    }
    PageRange { low, high, next_before }
}

/// Where a page ends when its token logs name more transactions the search did not find than one
/// page fetches (`cap`, the page size: each costs the node a transaction and a receipt read). Any
/// address can be sent token transfers by anyone, so those transactions are not bounded by what
/// the account did: an address in many logs (the zero address, a spammed one) would otherwise
/// have one page fetch every transaction of `max_log_block_range` blocks at once.
///
/// `log_only`: (block, hash) of each such transaction. Within `cap`: the range as it was and every
/// hash. Beyond: the page keeps the newest whole blocks that hold fewer than `cap` of them, and the
/// next page starts below them; if the newest such block alone holds more than `cap`, the page is
/// that block and above, with the first `cap` of its hashes (in hash order) and not the rest.
pub fn cut_at_log_only(range: PageRange, log_only: &[(u64, B256)], cap: usize) -> (PageRange, Vec<B256>) {
    let mut newest_first: Vec<(u64, B256)> = log_only.iter().copied().collect::<HashSet<_>>().into_iter().collect();
    if newest_first.len() <= cap {
        return (range, newest_first.into_iter().map(|(_, hash)| hash).collect());
    }
    newest_first.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let first_left_out = newest_first[cap].0;
    let above: Vec<B256> = newest_first.iter().take_while(|(block, _)| *block > first_left_out).map(|(_, hash)| *hash).collect();
    if !above.is_empty() {
        let low = first_left_out + 1;
        return (PageRange { low, next_before: Some(low), ..range }, above);
    }
    let low = first_left_out;
    let kept = newest_first.iter().filter(|(block, _)| *block == low).take(cap).map(|(_, hash)| *hash).collect();
    (PageRange { low, next_before: (low > 0).then_some(low), ..range }, kept)
}

/// The most token contracts whose metadata (`decimals`, `symbol`) one page asks for. Any address
/// can be sent transfers from any number of contracts nobody else knows; past this bound the
/// rest of a page's unknown tokens are shown as tokens without symbol or decimals (amounts in base
/// units), and are asked for on a later page that meets them.
pub const MAX_TOKEN_LOOKUPS_PER_PAGE: usize = 32;

/// The most transfers one transaction shows (the native one first, then its logs in order). A
/// contract can emit any number of Transfer logs naming the account in one transaction; kept
/// whole, one page's event would outgrow the session's log (and the view). The operation type is
/// judged on all of them.
pub const MAX_TRANSFERS_PER_TRANSACTION: usize = 10;

/// The unknown tokens one page asks about: at most [`MAX_TOKEN_LOOKUPS_PER_PAGE`], in address
/// order (the same page asks for the same ones).
pub fn tokens_to_look_up(unknown: impl IntoIterator<Item = Address>) -> Vec<Address> {
    let mut unknown: Vec<Address> = unknown.into_iter().collect::<HashSet<_>>().into_iter().collect();
    unknown.sort();
    unknown.truncate(MAX_TOKEN_LOOKUPS_PER_PAGE);
    unknown
}

fn parse_cursor(cursor: &ActivityCursor) -> Result<u64, ChainError> {
    cursor
        .0
        .strip_prefix("before:")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| ChainError::Decode(format!("not an activity cursor of this source: {:?}", cursor.0)))
}

fn topic_of(address: Address) -> B256 {
    address.into_word()
}

fn eth_call_params(to: Address, data: Vec<u8>) -> (serde_json::Value, &'static str) {
    (json!({ "to": to, "data": Bytes::from(data) }), "latest")
}

#[async_trait]
impl ActivitySource for OtterscanActivity {
    async fn page(&self, address: Address, cursor: Option<&ActivityCursor>) -> Result<ActivityPage, ChainError> {
        let page_size = self.network.activity.page_size;

        // 1. The search, and the head when starting from the newest.
        let before = cursor.map(parse_cursor).transpose()?;
        if before == Some(0) {
            return Ok(ActivityPage { transactions: vec![], next: None });
        }
        let mut batch = self.client.new_batch();
        let head: Option<Waiter<U64>> = match before {
            None => Some(batch.add_call("eth_blockNumber", &())?),
            Some(_) => None,
        };
        // `0` asks Otterscan for the newest blocks.
        let search: Waiter<OtsPage> = batch.add_call("ots_searchTransactionsBefore", &(address, before.unwrap_or(0), page_size))?;
        batch.send().await?;
        let search = search.await?;
        let found_high = search.txs.iter().filter_map(|t| t.block_number).map(|b| b.to::<u64>()).max();
        let high = match (before, head) {
            (Some(before), _) => before - 1,
            (None, Some(head)) => head.await?.to::<u64>().max(found_high.unwrap_or(0)),
            (None, None) => unreachable!("the head is asked for when there is no cursor"),
        };
        let oldest_found = search.txs.iter().filter_map(|t| t.block_number).map(|b| b.to::<u64>()).min();
        let range = page_range(high, oldest_found, search.last_page, self.network.activity.max_log_block_range);

        // 2. Token transfers to and from the account in the same blocks.
        let logs_filter = |from: Option<B256>, to: Option<B256>| {
            json!([{
                "fromBlock": U64::from(range.low),
                "toBlock": U64::from(range.high),
                "topics": [TRANSFER_TOPIC, from, to],
            }])
        };
        let mut batch = self.client.new_batch();
        let incoming: Waiter<Vec<NodeLog>> = batch.add_call("eth_getLogs", &logs_filter(None, Some(topic_of(address))))?;
        let outgoing: Waiter<Vec<NodeLog>> = batch.add_call("eth_getLogs", &logs_filter(Some(topic_of(address)), None))?;
        batch.send().await?;
        let logs: Vec<NodeLog> = incoming.await?.into_iter().chain(outgoing.await?).collect();

        // 3. The transactions only the logs found (at most a page of them: the range may shrink),
        //    and unknown tokens' metadata.
        let mut transactions: BTreeMap<B256, (NodeTransaction, Option<NodeReceipt>)> = BTreeMap::new();
        let receipts: BTreeMap<B256, NodeReceipt> = search.receipts.into_iter().map(|r| (r.transaction_hash, r)).collect();
        let log_block = |l: &NodeLog| l.block_number.map(|b| b.to::<u64>());
        let searched: HashSet<B256> = search.txs.iter().map(|t| t.hash).collect();
        let log_only: Vec<(u64, B256)> = logs
            .iter()
            .filter_map(|l| Some((log_block(l)?, l.transaction_hash?)))
            .filter(|(block, hash)| *block >= range.low && !searched.contains(hash))
            .collect();
        let (range, missing) = cut_at_log_only(range, &log_only, page_size as usize);
        for tx in search.txs {
            let in_range = tx.block_number.is_some_and(|b| b.to::<u64>() >= range.low);
            if in_range {
                let receipt = receipts.get(&tx.hash).cloned();
                transactions.insert(tx.hash, (tx, receipt));
            }
        }
        let logs: Vec<NodeLog> = logs.into_iter().filter(|l| log_block(l).is_some_and(|b| b >= range.low)).collect();
        let mut token_contracts: HashSet<Address> = logs.iter().filter(|l| l.topics.len() == 3).map(|l| l.address).collect();
        for (_, receipt) in transactions.values() {
            for log in receipt.iter().flat_map(|r| &r.logs) {
                if log.topics.first() == Some(&TRANSFER_TOPIC) && log.topics.len() == 3 {
                    token_contracts.insert(log.address);
                }
            }
        }
        let unknown_tokens = tokens_to_look_up(token_contracts.into_iter().filter(|t| self.metadata.get(self.network.id, *t).is_none()));

        let mut batch = self.client.new_batch();
        let mut fetched = Vec::new();
        for hash in &missing {
            let tx: Waiter<NodeTransaction> = batch.add_call("eth_getTransactionByHash", &(hash,))?;
            let receipt: Waiter<NodeReceipt> = batch.add_call("eth_getTransactionReceipt", &(hash,))?;
            fetched.push((tx, receipt));
        }
        let mut token_calls = Vec::new();
        for token in &unknown_tokens {
            let decimals: Waiter<Bytes> = batch.add_call("eth_call", &eth_call_params(*token, IERC20::decimalsCall {}.abi_encode()))?;
            let symbol: Waiter<Bytes> = batch.add_call("eth_call", &eth_call_params(*token, IERC20::symbolCall {}.abi_encode()))?;
            token_calls.push((*token, decimals, symbol));
        }
        if !fetched.is_empty() || !token_calls.is_empty() {
            batch.send().await?;
        }
        for (tx, receipt) in fetched {
            let tx = tx.await?;
            let receipt = receipt.await?;
            transactions.insert(tx.hash, (tx, Some(receipt)));
        }
        for (token, decimals, symbol) in token_calls {
            // A contract that does not answer, or answers outside the bounds (a symbol of at most 32
            // printable characters, at most 36 decimals), is shown without symbol or decimals, and
            // nothing is kept about it.
            let decimals = decimals.await.ok().and_then(|d| decode_decimals(&d));
            let symbol = symbol.await.ok().and_then(|s| decode_symbol(&s));
            if let (Some(decimals), Some(symbol)) = (decimals, symbol) {
                self.metadata.insert(self.network.id, token, TokenMetadata { symbol, decimals });
            }
        }

        // Block times for transactions whose answers lacked them (plain receipts).
        let untimed: Vec<u64> = transactions
            .values()
            .filter(|(tx, receipt)| mined_at(tx, receipt.as_ref()).is_none())
            .filter_map(|(tx, _)| tx.block_number.map(|b| b.to::<u64>()))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let mut block_times = BTreeMap::new();
        if !untimed.is_empty() {
            let mut batch = self.client.new_batch();
            let blocks = untimed
                .iter()
                .map(|n| Ok((*n, batch.add_call::<_, NodeBlock>("eth_getBlockByNumber", &(U64::from(*n), false))?)))
                .collect::<Result<Vec<_>, ChainError>>()?;
            batch.send().await?;
            for (number, block) in blocks {
                block_times.insert(number, block.await?.timestamp.to::<u64>());
            }
        }

        let transactions =
            transactions.into_values().map(|(tx, receipt)| self.to_transaction(address, tx, receipt, &block_times)).collect();
        Ok(ActivityPage {
            transactions: newest_first_without_spam(transactions),
            next: range.next_before.map(|b| ActivityCursor(format!("before:{b}"))),
        })
    }
}

fn mined_at(tx: &NodeTransaction, receipt: Option<&NodeReceipt>) -> Option<u64> {
    receipt.and_then(|r| r.timestamp).or(tx.block_timestamp).map(|t| t.to::<u64>())
}

impl OtterscanActivity {
    fn to_transaction(
        &self,
        account: Address,
        tx: NodeTransaction,
        receipt: Option<NodeReceipt>,
        block_times: &BTreeMap<u64, u64>,
    ) -> Transaction {
        let block_number = tx.block_number.map_or(0, |b| b.to::<u64>());
        let mined_at = mined_at(&tx, receipt.as_ref()).or_else(|| block_times.get(&block_number).copied()).unwrap_or(0);
        let status = match receipt.as_ref().and_then(|r| r.status) {
            Some(s) if s.is_zero() => TransactionStatus::Failed,
            _ => TransactionStatus::Confirmed,
        };
        let mut transfers = Vec::new();
        if let Some(to) = tx.to
            && !tx.value.is_zero()
            && let Some(direction) = Direction::of(account, tx.from, to)
        {
            let native = &self.network.native_currency;
            transfers.push(Transfer {
                asset: TransferAsset::Native { symbol: native.symbol.clone(), decimals: native.decimals },
                from: tx.from,
                to,
                amount: tx.value,
                direction,
            });
        }
        for log in receipt.iter().flat_map(|r| &r.logs) {
            if let Some(transfer) = self.token_transfer(account, log) {
                transfers.push(transfer);
            }
        }
        let operation = OperationType::from_node_data(account, tx.from, tx.to, &tx.input, &transfers);
        transfers.truncate(MAX_TRANSFERS_PER_TRANSACTION);
        Transaction {
            hash: tx.hash,
            network: self.network.id,
            block_number,
            index: tx.transaction_index.map_or(0, |i| i.to::<u64>()),
            mined_at,
            status,
            from: tx.from,
            to: tx.to,
            operation,
            transfers,
        }
    }

    /// An ERC-20 (3 topics, amount in data) or ERC-721 (4 topics, token id last) transfer log that
    /// involves `account`.
    fn token_transfer(&self, account: Address, log: &NodeLog) -> Option<Transfer> {
        if log.topics.first() != Some(&TRANSFER_TOPIC) {
            return None;
        }
        let from = Address::from_word(*log.topics.get(1)?);
        let to = Address::from_word(*log.topics.get(2)?);
        let direction = Direction::of(account, from, to)?;
        let (asset, amount) = match log.topics.len() {
            3 => {
                let amount = U256::try_from_be_slice(log.data.get(..32)?)?;
                let known = self.metadata.get(self.network.id, log.address);
                let asset = TransferAsset::Erc20 {
                    contract: log.address,
                    symbol: known.as_ref().map(|k| k.symbol.clone()),
                    decimals: known.map(|k| k.decimals),
                };
                (asset, amount)
            }
            4 => {
                let token_id = U256::from_be_bytes(log.topics[3].0);
                let asset = TransferAsset::Nft { contract: log.address, token_id, name: None, preview_url: None, is_spam: false };
                (asset, U256::from(1))
            }
            _ => return None,
        };
        Some(Transfer { asset, from, to, amount, direction })
    }
}

impl std::fmt::Debug for OtterscanActivity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtterscanActivity").field("network", &self.network.id).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_spans_its_found_blocks_and_continues_below_them() {
        // Newest page: head 100, the search found blocks down to 60 and there is more.
        assert_eq!(page_range(100, Some(60), false, 1_000), PageRange { low: 60, high: 100, next_before: Some(60) });
        // Last page: everything down to genesis, no cursor.
        assert_eq!(page_range(59, Some(10), true, 1_000), PageRange { low: 0, high: 59, next_before: None });
        // Nothing found below: the rest of the chain, no cursor.
        assert_eq!(page_range(59, None, false, 1_000), PageRange { low: 0, high: 59, next_before: None });
    }

    #[test]
    fn a_page_wider_than_the_log_range_is_cut_and_continues_below_the_cut() {
        assert_eq!(page_range(10_000, Some(10), false, 1_000), PageRange { low: 9_001, high: 10_000, next_before: Some(9_001) });
        assert_eq!(page_range(10_000, None, true, 1_000), PageRange { low: 9_001, high: 10_000, next_before: Some(9_001) });
        assert_eq!(page_range(999, None, true, 1_000), PageRange { low: 0, high: 999, next_before: None });
    }

    #[test]
    fn a_page_looks_up_at_most_32_tokens_the_same_ones_each_time() {
        let tokens: Vec<Address> = (0..100u8).rev().map(|n| Address::with_last_byte(n)).collect();
        let picked = tokens_to_look_up(tokens.iter().copied().chain(tokens.iter().copied()));
        assert_eq!(picked.len(), MAX_TOKEN_LOOKUPS_PER_PAGE);
        assert_eq!(picked, (0..32u8).map(Address::with_last_byte).collect::<Vec<_>>());
        assert_eq!(tokens_to_look_up([Address::ZERO]), [Address::ZERO]);
    }

    fn hash(n: u8) -> B256 {
        B256::with_last_byte(n)
    }

    #[test]
    fn given_log_only_transactions_within_a_page_when_cut_then_the_range_and_all_of_them_stay() {
        let range = PageRange { low: 0, high: 100, next_before: None };
        let (cut, mut kept) = cut_at_log_only(range, &[(90, hash(1)), (80, hash(2)), (90, hash(1))], 2);
        kept.sort();
        assert_eq!((cut, kept), (range, vec![hash(1), hash(2)]), "the same hash twice (two logs) counts once");
    }

    #[test]
    fn given_more_log_only_transactions_than_a_page_when_cut_then_the_page_ends_above_the_first_block_left_out() {
        let range = PageRange { low: 0, high: 100, next_before: None };
        let log_only = [(50, hash(5)), (95, hash(1)), (90, hash(2)), (90, hash(3)), (70, hash(4))];
        // The newest 3 are 95, 90, 90; the first left out is at 70, so the page is 71..=100.
        let (cut, kept) = cut_at_log_only(range, &log_only, 3);
        assert_eq!(cut, PageRange { low: 71, high: 100, next_before: Some(71) });
        assert_eq!(kept, [hash(1), hash(2), hash(3)]);
        // A page of 2: the second 90 would be left out, so block 90 goes whole to the next page.
        let (cut, kept) = cut_at_log_only(range, &log_only, 2);
        assert_eq!(cut, PageRange { low: 91, high: 100, next_before: Some(91) });
        assert_eq!(kept, [hash(1)]);
    }

    #[test]
    fn given_one_block_with_more_log_only_transactions_than_a_page_when_cut_then_the_page_is_that_block_with_a_page_of_them() {
        let range = PageRange { low: 10, high: 100, next_before: Some(10) };
        let log_only: Vec<(u64, B256)> = (1..=5).rev().map(|n| (100, hash(n))).chain([(40, hash(9))]).collect();
        let (cut, kept) = cut_at_log_only(range, &log_only, 3);
        assert_eq!(cut, PageRange { low: 100, high: 100, next_before: Some(100) });
        assert_eq!(kept, [hash(1), hash(2), hash(3)], "the first of the block's hashes, in hash order");
        // At genesis there is nothing below.
        let genesis = PageRange { low: 0, high: 0, next_before: None };
        let (cut, kept) = cut_at_log_only(genesis, &[(0, hash(1)), (0, hash(2))], 1);
        assert_eq!((cut, kept), (PageRange { low: 0, high: 0, next_before: None }, vec![hash(1)]));
    }

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        assert_eq!(parse_cursor(&ActivityCursor("before:42".into())).unwrap(), 42);
        assert!(parse_cursor(&ActivityCursor("page=2".into())).is_err());
    }
}
