//! Activity (spec §3 Transaction, §4 Transaction list, §5 Filtering, §9 Operation types): an
//! account's transactions on one network, newest first, a page at a time, from a pluggable
//! [`ActivitySource`]. The model and the rules that need no node (operation type, signs, spam,
//! year-month) are pure and live here; [`otterscan`] is the source over a node's Otterscan API.

pub mod cache;
pub mod otterscan;

use alloy::primitives::{Address, B256, U256};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{ChainError, NetworkId};

/// Where a page of activity comes from.
#[async_trait]
pub trait ActivitySource: Send + Sync + 'static {
    /// The page of `address`'s transactions after `cursor` (`None`: the newest).
    async fn page(&self, address: Address, cursor: Option<&ActivityCursor>) -> Result<ActivityPage, ChainError>;
}

/// Where the next page starts. Opaque to the session: each source writes and reads its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ActivityCursor(pub String);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityPage {
    /// Newest first; spam already dropped.
    pub transactions: Vec<Transaction>,
    /// `None` on the last page.
    pub next: Option<ActivityCursor>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transaction {
    pub hash: B256,
    pub network: NetworkId,
    pub block_number: u64,
    /// Position in its block: with the block number, the order of transactions.
    pub index: u64,
    /// When the block was mined, in seconds since the Unix epoch.
    pub mined_at: u64,
    pub status: TransactionStatus,
    pub from: Address,
    /// `None` for a contract creation.
    pub to: Option<Address>,
    pub operation: OperationType,
    /// The value this transaction moved to or from the account (only those transfers).
    pub transfers: Vec<Transfer>,
}

impl Transaction {
    /// The (year, month) of `mined_at` in UTC, which the Activity tab groups by.
    pub fn year_month(&self) -> (i32, u8) {
        let at = time::OffsetDateTime::from_unix_timestamp(i64::try_from(self.mined_at).unwrap_or(i64::MAX))
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
        (at.year(), u8::from(at.month()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransactionStatus {
    Confirmed,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    pub asset: TransferAsset,
    pub from: Address,
    pub to: Address,
    /// Base units (wei, token units, or 1 for an NFT).
    pub amount: U256,
    pub direction: Direction,
}

impl Transfer {
    /// + for value coming in, − for value going out, none for a transfer to oneself.
    pub fn sign(&self) -> Option<Sign> {
        match self.direction {
            Direction::In => Some(Sign::Plus),
            Direction::Out => Some(Sign::Minus),
            Direction::ToSelf => None,
        }
    }

    pub fn is_spam_nft(&self) -> bool {
        matches!(self.asset, TransferAsset::Nft { is_spam: true, .. })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TransferAsset {
    Native {
        symbol: String,
        decimals: u8,
    },
    /// Symbol and decimals are absent when the contract did not say.
    Erc20 {
        contract: Address,
        symbol: Option<String>,
        decimals: Option<u8>,
    },
    /// `is_spam` comes from the source (an indexer's flag); a plain node has none, so it is false.
    Nft {
        contract: Address,
        token_id: U256,
        name: Option<String>,
        preview_url: Option<String>,
        is_spam: bool,
    },
}

/// The account's side of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    In,
    Out,
    ToSelf,
}

impl Direction {
    pub fn of(account: Address, from: Address, to: Address) -> Option<Self> {
        match (from == account, to == account) {
            (true, true) => Some(Self::ToSelf),
            (true, false) => Some(Self::Out),
            (false, true) => Some(Self::In),
            (false, false) => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sign {
    Plus,
    Minus,
}

/// What a transaction did for the account. The first group is what a node's data shows; the
/// second comes from sources that know protocols (lending, staking), which the spec signs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationType {
    Send,
    Receive,
    Trade,
    Approve,
    Deploy,
    Execute,
    Burn,
    Deposit,
    Withdraw,
    Borrow,
    Repay,
    Claim,
}

impl OperationType {
    /// Spec §9: receive, deposit, borrow and claim add (+); withdraw, repay and burn subtract (−).
    /// Other types have no sign of their own: their transfers carry theirs ([`Transfer::sign`]).
    pub fn sign(&self) -> Option<Sign> {
        match self {
            Self::Receive | Self::Deposit | Self::Borrow | Self::Claim => Some(Sign::Plus),
            Self::Withdraw | Self::Repay | Self::Burn => Some(Sign::Minus),
            Self::Send | Self::Trade | Self::Approve | Self::Deploy | Self::Execute => None,
        }
    }

    /// From what a node shows of a transaction: who sent it, whether it created a contract, its
    /// calldata, and the account's transfers in it.
    pub fn from_node_data(account: Address, from: Address, to: Option<Address>, input: &[u8], transfers: &[Transfer]) -> Self {
        if to.is_none() {
            return Self::Deploy;
        }
        let incoming = transfers.iter().any(|t| t.direction == Direction::In);
        let outgoing = transfers.iter().any(|t| matches!(t.direction, Direction::Out | Direction::ToSelf));
        match (incoming, outgoing) {
            (true, true) => Self::Trade,
            (true, false) => Self::Receive,
            (false, true) if transfers.iter().all(|t| t.to == Address::ZERO) => Self::Burn,
            (false, true) => Self::Send,
            (false, false) if from == account && input.starts_with(&APPROVE_SELECTOR) => Self::Approve,
            (false, false) => Self::Execute,
        }
    }
}

/// `approve(address,uint256)`.
const APPROVE_SELECTOR: [u8; 4] = [0x09, 0x5e, 0xa7, 0xb3];

/// Spec §5: a transaction all of whose transfers are spam NFTs is dropped. (One with no
/// transfers is not spam: an approval or a contract call is the account's own doing.)
pub fn is_spam(transaction: &Transaction) -> bool {
    !transaction.transfers.is_empty() && transaction.transfers.iter().all(Transfer::is_spam_nft)
}

/// Newest first (block, then position in the block), spam dropped.
pub fn newest_first_without_spam(mut transactions: Vec<Transaction>) -> Vec<Transaction> {
    transactions.retain(|t| !is_spam(t));
    transactions.sort_by_key(|t| std::cmp::Reverse((t.block_number, t.index)));
    transactions
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::address;

    const ME: Address = address!("0x1111111111111111111111111111111111111111");
    const OTHER: Address = address!("0x2222222222222222222222222222222222222222");
    const TOKEN: Address = address!("0x3333333333333333333333333333333333333333");

    fn native(from: Address, to: Address) -> Transfer {
        let direction = Direction::of(ME, from, to).unwrap();
        Transfer { asset: TransferAsset::Native { symbol: "ETH".into(), decimals: 18 }, from, to, amount: U256::from(1), direction }
    }

    fn nft(spam: bool) -> Transfer {
        Transfer {
            asset: TransferAsset::Nft { contract: TOKEN, token_id: U256::from(7), name: None, preview_url: None, is_spam: spam },
            from: OTHER,
            to: ME,
            amount: U256::from(1),
            direction: Direction::In,
        }
    }

    fn tx(block: u64, index: u64, transfers: Vec<Transfer>) -> Transaction {
        Transaction {
            hash: B256::with_last_byte(block as u8),
            network: NetworkId::eip155(1),
            block_number: block,
            index,
            mined_at: 1_717_200_000,
            status: TransactionStatus::Confirmed,
            from: ME,
            to: Some(OTHER),
            operation: OperationType::Send,
            transfers,
        }
    }

    #[test]
    fn operation_types_from_node_data() {
        let op = |from, to, input: &[u8], transfers: &[Transfer]| OperationType::from_node_data(ME, from, to, input, transfers);
        assert_eq!(op(ME, Some(OTHER), &[], &[native(ME, OTHER)]), OperationType::Send);
        assert_eq!(op(OTHER, Some(ME), &[], &[native(OTHER, ME)]), OperationType::Receive);
        assert_eq!(op(ME, Some(OTHER), &[], &[native(ME, OTHER), native(OTHER, ME)]), OperationType::Trade);
        assert_eq!(op(ME, Some(ME), &[], &[native(ME, ME)]), OperationType::Send);
        assert_eq!(op(ME, Some(TOKEN), &[], &[native(ME, Address::ZERO)]), OperationType::Burn);
        assert_eq!(op(ME, None, &[0x60], &[]), OperationType::Deploy);
        assert_eq!(op(ME, Some(TOKEN), &[0x09, 0x5e, 0xa7, 0xb3, 0], &[]), OperationType::Approve);
        assert_eq!(op(ME, Some(TOKEN), &[0xde, 0xad, 0xbe, 0xef], &[]), OperationType::Execute);
    }

    #[test]
    fn signs_follow_the_spec_and_transfer_directions() {
        for op in [OperationType::Receive, OperationType::Deposit, OperationType::Borrow, OperationType::Claim] {
            assert_eq!(op.sign(), Some(Sign::Plus), "{op:?}");
        }
        for op in [OperationType::Withdraw, OperationType::Repay, OperationType::Burn] {
            assert_eq!(op.sign(), Some(Sign::Minus), "{op:?}");
        }
        assert_eq!(native(OTHER, ME).sign(), Some(Sign::Plus));
        assert_eq!(native(ME, OTHER).sign(), Some(Sign::Minus));
        assert_eq!(native(ME, ME).sign(), None);
    }

    #[test]
    fn a_transaction_of_only_spam_nfts_is_dropped() {
        let page = newest_first_without_spam(vec![
            tx(1, 0, vec![nft(true)]),
            tx(2, 0, vec![nft(true), nft(false)]),
            tx(3, 0, vec![nft(true), native(OTHER, ME)]),
            tx(4, 0, vec![]),
        ]);
        assert_eq!(page.iter().map(|t| t.block_number).collect::<Vec<_>>(), [4, 3, 2]);
    }

    #[test]
    fn newest_first_by_block_then_position() {
        let page = newest_first_without_spam(vec![tx(5, 0, vec![]), tx(9, 1, vec![]), tx(9, 3, vec![]), tx(7, 0, vec![])]);
        assert_eq!(page.iter().map(|t| (t.block_number, t.index)).collect::<Vec<_>>(), [(9, 3), (9, 1), (7, 0), (5, 0)]);
    }

    #[test]
    fn year_and_month_of_the_mined_time_in_utc() {
        let mut t = tx(1, 0, vec![]);
        t.mined_at = 1_717_200_000; // 2024-06-01T00:00:00Z
        assert_eq!(t.year_month(), (2024, 6));
        t.mined_at = 1_717_199_999;
        assert_eq!(t.year_month(), (2024, 5));
    }
}
