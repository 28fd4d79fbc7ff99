//! Activity (spec §3 Transaction, §4 Transaction list, §5 Filtering, §9 Operation types): the
//! connected account's transactions on the connected chain, newest first, a page at a time by a
//! cursor. Pages come from the chain service as an effect (`Command::ActivityFetched`); a failure
//! empties the list and clears the cursor ("Failed to fetch transactions").

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{ANY_STATE, Statechart, region, t};
use crate::model::caip::CaipNetworkId;
use crate::session::Event;

pub const ID: &str = "activity";

/// Spec §8.
pub const FAILED_TO_FETCH: &str = "Failed to fetch transactions";
pub const NO_ACCOUNT_ADDRESS: &str = "Transactions can't be fetched without an accountAddress";
/// At most this many transactions are kept (pages beyond it are not asked for).
pub const MAX_TRANSACTIONS: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ActivityStatus {
    #[default]
    Idle,
    Loading,
    Loaded,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum TransactionStatus {
    Confirmed,
    Failed,
}

/// What a transaction did for the account (spec §9; the first group from node data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
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
    pub fn sign(self) -> Option<Sign> {
        match self {
            Self::Receive | Self::Deposit | Self::Borrow | Self::Claim => Some(Sign::Plus),
            Self::Withdraw | Self::Repay | Self::Burn => Some(Sign::Minus),
            Self::Send | Self::Trade | Self::Approve | Self::Deploy | Self::Execute => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum Sign {
    Plus,
    Minus,
}

/// An NFT in a transfer (spec §3: nft_info name, flags.is_spam, preview url).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct NftInfo {
    #[ts(type = "string | null")]
    pub name: Option<String>,
    #[ts(type = "string | null")]
    pub preview_url: Option<String>,
    pub is_spam: bool,
}

/// The account's side of one transfer in a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTransfer {
    #[ts(type = "string | null")]
    pub symbol: Option<String>,
    /// Floored to 3 decimals (spec §9: transaction names show 3 decimals).
    pub quantity: String,
    /// + for value in, − for value out, none for a transfer to oneself.
    pub sign: Option<Sign>,
    pub nft: Option<NftInfo>,
}

/// Spec §3 Transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ActivityTransaction {
    /// The transaction hash.
    pub id: String,
    pub network: CaipNetworkId,
    /// Seconds since the Unix epoch.
    #[ts(type = "number")]
    pub mined_at: u64,
    /// `YYYY-MM` of `minedAt` in UTC: the list is grouped by it.
    pub year_month: String,
    pub operation_type: OperationType,
    pub status: TransactionStatus,
    pub sent_from: String,
    #[ts(type = "string | null")]
    pub sent_to: Option<String>,
    pub transfers: Vec<ActivityTransfer>,
}

impl ActivityTransaction {
    /// Spec §5: a transaction all of whose transfers are spam NFTs is dropped.
    pub fn is_spam(&self) -> bool {
        !self.transfers.is_empty() && self.transfers.iter().all(|t| t.nft.as_ref().is_some_and(|n| n.is_spam))
    }
}

/// A page as the chain service answers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ActivityPage {
    pub transactions: Vec<ActivityTransaction>,
    #[ts(type = "string | null")]
    pub next: Option<String>,
}

/// A page the session is waiting for (the runtime asks the chain service).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ActivityFetch {
    #[ts(type = "number")]
    pub id: u64,
    pub network: CaipNetworkId,
    pub address: String,
    /// `None` for the newest page.
    #[ts(type = "string | null")]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ActivityState {
    pub status: ActivityStatus,
    pub network: Option<CaipNetworkId>,
    #[ts(type = "string | null")]
    pub address: Option<String>,
    /// Newest first; spam dropped; only the connected chain's.
    pub transactions: Vec<ActivityTransaction>,
    /// The cursor of the next page; `None` when there is none.
    #[ts(type = "string | null")]
    pub next: Option<String>,
    pub pending: Option<ActivityFetch>,
    #[ts(type = "number")]
    pub last_fetch: u64,
    #[ts(type = "string | null")]
    pub error: Option<String>,
}

impl ActivityState {
    pub fn belongs_to(&self, network: &CaipNetworkId, address: &str) -> bool {
        self.network.as_ref() == Some(network) && self.address.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(address))
    }
}

pub fn evolve(mut state: ActivityState, event: &Event) -> ActivityState {
    match event {
        Event::ActivityRequested { fetch } => {
            if !state.belongs_to(&fetch.network, &fetch.address) || fetch.cursor.is_none() {
                state = ActivityState { last_fetch: state.last_fetch, ..Default::default() };
                state.network = Some(fetch.network.clone());
                state.address = Some(fetch.address.clone());
            }
            state.status = ActivityStatus::Loading;
            state.last_fetch = fetch.id;
            state.error = None;
            state.pending = Some(fetch.clone());
        }
        Event::ActivityLoaded { page, .. } => {
            state.status = ActivityStatus::Loaded;
            state.pending = None;
            for tx in &page.transactions {
                if state.transactions.len() < MAX_TRANSACTIONS && !state.transactions.iter().any(|t| t.id == tx.id) {
                    state.transactions.push(tx.clone());
                }
            }
            state.next = page.next.clone().filter(|_| state.transactions.len() < MAX_TRANSACTIONS);
        }
        Event::ActivityFailed { message, .. } => {
            // Spec §4: on failure, empty is true and next is cleared.
            state.status = ActivityStatus::Failed;
            state.pending = None;
            state.transactions = Vec::new();
            state.next = None;
            state.error = Some(message.clone());
        }
        Event::ActivityCleared {} => state = ActivityState { last_fetch: state.last_fetch, ..Default::default() },
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    Statechart {
        id: ID.into(),
        description: "The Activity tab's transaction list: loading, then loaded (empty or filled, with a next cursor) or failed (emptied)."
            .into(),
        regions: vec![region(
            ID,
            "/activity/status",
            "idle",
            &["idle", "loading", "loaded", "failed"],
            vec![
                t(ANY_STATE, "ActivityRequested", "loading"),
                t("loading", "ActivityLoaded", "loaded"),
                t("loading", "ActivityFailed", "failed"),
                t(ANY_STATE, "ActivityCleared", "idle"),
            ],
        )],
    }
}
