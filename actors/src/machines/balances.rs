//! Balances (spec §3 Token balance, §4, §7 Token balances, §8, §9): the active account's native
//! and token balances on its network, as the chain service read them. The decision records that a
//! fetch is wanted (`BalancesRequested`, with an id); the runtime asks the chain service (an
//! effect) and its answer comes back as `Command::BalancesFetched`, recorded as `BalancesLoaded`
//! or `BalancesFailed`. A failure shows "Token Balance Unavailable" and blocks a retry for 30 s.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{ANY_STATE, Statechart, region, t};
use crate::model::caip::CaipNetworkId;
use crate::session::Event;

pub const ID: &str = "balances";

/// Spec §8.
pub const TOKEN_BALANCE_UNAVAILABLE: &str = "Token Balance Unavailable";
/// Spec §9: after a failed fetch, no retry for this long.
pub const RETRY_BLOCK_MS: u64 = 30_000;
/// Spec §9: balances are kept this long; a refresh within it changes nothing.
pub const CACHE_MS: u64 = 30_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum BalancesStatus {
    #[default]
    Idle,
    Loading,
    Loaded,
    Failed,
}

/// One asset's balance (spec §3 Token balance), display-ready: the amount floored to 3 decimals,
/// fiat to 2, and fiat only with a price source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct TokenBalance {
    /// `eip155:1/native` or `eip155:1/erc20:0x…`.
    pub asset: String,
    /// The token contract; absent for the native currency.
    #[ts(type = "string | null")]
    pub address: Option<String>,
    #[ts(type = "string | null")]
    pub name: Option<String>,
    pub symbol: String,
    pub decimals: u8,
    /// Base units, in decimal.
    pub raw: String,
    /// Every digit (`1.234567`).
    pub quantity: String,
    /// Floored to 3 decimals (`1.234`).
    pub display: String,
    #[ts(type = "string | null")]
    pub usd_price: Option<String>,
    /// Floored to the cent (`12.34`).
    #[ts(type = "string | null")]
    pub usd_value: Option<String>,
    #[ts(type = "string | null")]
    pub icon_url: Option<String>,
}

/// An account's balances on one network, as the chain service answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct BalancesSnapshot {
    pub network: CaipNetworkId,
    pub address: String,
    pub native: TokenBalance,
    pub tokens: Vec<TokenBalance>,
}

/// A fetch the session is waiting for (the runtime performs it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct BalanceFetch {
    #[ts(type = "number")]
    pub id: u64,
    pub network: CaipNetworkId,
    pub address: String,
    /// Not from the service's 30 s cache (after a transaction of the account's).
    pub fresh: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct BalancesState {
    pub status: BalancesStatus,
    /// Whose balances these are.
    pub network: Option<CaipNetworkId>,
    #[ts(type = "string | null")]
    pub address: Option<String>,
    pub native: Option<TokenBalance>,
    /// The configured tokens (zero-decimal tokens left out), in configuration order.
    pub tokens: Vec<TokenBalance>,
    /// The sum of the fiat values, when any asset has one.
    #[ts(type = "string | null")]
    pub total_usd: Option<String>,
    #[ts(type = "number | null")]
    pub fetched_ms: Option<u64>,
    pub pending: Option<BalanceFetch>,
    #[ts(type = "number")]
    pub last_fetch: u64,
    /// Spec §8: no retry before this time after a failure.
    #[ts(type = "number | null")]
    pub retry_blocked_until_ms: Option<u64>,
    #[ts(type = "string | null")]
    pub error: Option<String>,
}

impl BalancesState {
    /// Every balance, native first.
    pub fn all(&self) -> impl Iterator<Item = &TokenBalance> {
        self.native.iter().chain(self.tokens.iter())
    }

    /// The balance of `asset` (`eip155:1/native`, `eip155:1/erc20:0x…`).
    pub fn find(&self, asset: &str) -> Option<&TokenBalance> {
        self.all().find(|b| b.asset.eq_ignore_ascii_case(asset))
    }

    /// Whether these are `address`'s balances on `network`.
    pub fn belongs_to(&self, network: &CaipNetworkId, address: &str) -> bool {
        self.network.as_ref() == Some(network) && self.address.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(address))
    }
}

pub fn evolve(mut state: BalancesState, event: &Event) -> BalancesState {
    match event {
        Event::BalancesRequested { fetch } => {
            if !state.belongs_to(&fetch.network, &fetch.address) {
                state = BalancesState { last_fetch: state.last_fetch, ..Default::default() };
                state.network = Some(fetch.network.clone());
                state.address = Some(fetch.address.clone());
            }
            state.status = BalancesStatus::Loading;
            state.last_fetch = fetch.id;
            state.pending = Some(fetch.clone());
        }
        Event::BalancesLoaded { balances, at_ms, .. } => {
            state.status = BalancesStatus::Loaded;
            state.pending = None;
            state.native = Some(balances.native.clone());
            state.tokens = balances.tokens.clone();
            state.total_usd = crate::model::evm::sum_fiat(state.all().filter_map(|b| b.usd_value.as_deref()));
            state.fetched_ms = Some(*at_ms);
            state.retry_blocked_until_ms = None;
            state.error = None;
        }
        Event::BalancesFailed { message, retry_blocked_until_ms, .. } => {
            state.status = BalancesStatus::Failed;
            state.pending = None;
            state.retry_blocked_until_ms = Some(*retry_blocked_until_ms);
            state.error = Some(message.clone());
        }
        Event::BalancesCleared {} => state = BalancesState { last_fetch: state.last_fetch, ..Default::default() },
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    Statechart {
        id: ID.into(),
        description: "The active account's balances: fetched by the chain service, kept 30 s, a failed fetch blocks a retry 30 s.".into(),
        regions: vec![region(
            ID,
            "/balances/status",
            "idle",
            &["idle", "loading", "loaded", "failed"],
            vec![
                t(ANY_STATE, "BalancesRequested", "loading"),
                t("loading", "BalancesLoaded", "loaded"),
                t("loading", "BalancesFailed", "failed"),
                t(ANY_STATE, "BalancesCleared", "idle"),
            ],
        )],
    }
}
