//! The account's chain data: balances (spec §7 Token balances, §8, §9) and activity (spec §4
//! Transaction list), asked of the chain service as effects, and following the connection: a new
//! account or network clears what belonged to the old one and fetches the new one's balances.

use super::Decision;
use crate::machines::activity::{ActivityFetch, ActivityPage, ActivityStatus, FAILED_TO_FETCH};
use crate::machines::balances::{self, BalanceFetch, BalancesSnapshot, BalancesStatus, TOKEN_BALANCE_UNAVAILABLE};
use crate::machines::router::{NavigationMode, View};
use crate::machines::toasts::ToastVariant;
use crate::session::{DomainError, Event, SessionState};

/// (address, network) of the connected eip155 or solana account (EVM addresses lowercased), with
/// whether it is supported and whether it is EVM.
fn account_key(state: &SessionState) -> Option<(String, String, bool, bool)> {
    state.chain_account().map(|a| {
        let evm = a.namespace == crate::model::caip::Namespace::Eip155;
        let address = if evm { a.address.to_ascii_lowercase() } else { a.address };
        (address, a.network.caip_network_id.to_string(), a.network.supported, evm)
    })
}

/// After every decision: when the connected account or its network changed, what belonged to the
/// old one goes, the new one's balances are fetched, and an unsupported network prompts a switch.
pub(super) fn follow_connection(d: &mut Decision, before: &SessionState) {
    let (old, new) = (account_key(before), account_key(&d.state));
    if old == new {
        return;
    }
    if d.state.balances.status != BalancesStatus::Idle || d.state.balances.native.is_some() {
        d.push(Event::BalancesCleared {});
    }
    if d.state.activity.status != ActivityStatus::Idle {
        d.push(Event::ActivityCleared {});
    }
    let Some((_, _, supported, evm)) = new else { return };
    if supported {
        request_balances(d, false);
    } else if evm && !d.state.options.allow_unsupported_chain {
        // Spec §4: an unsupported chain becomes the synthetic unsupported network; the visitor is
        // asked to switch to one of the session's networks.
        d.open_modal();
        d.navigate(View::Networks, None, NavigationMode::Reset);
    }
}

/// Asks for the connected account's balances, unless they are fresh (30 s), being fetched, or a
/// failure blocks a retry. `fresh`: after a transaction of the account's, past the caches.
pub(super) fn request_balances(d: &mut Decision, fresh: bool) -> bool {
    let Some(account) = d.state.chain_account() else { return false };
    if !d.state.chain_supported(&account.network) {
        return false;
    }
    let b = &d.state.balances;
    let same = b.belongs_to(&account.network.caip_network_id, &account.address);
    if same && !fresh {
        if b.pending.is_some() {
            return false;
        }
        if b.retry_blocked_until_ms.is_some_and(|until| d.now_ms < until) {
            return false;
        }
        if b.status == BalancesStatus::Loaded && b.fetched_ms.is_some_and(|at| d.now_ms < at + balances::CACHE_MS) {
            return false;
        }
    }
    let fetch = BalanceFetch { id: b.last_fetch + 1, network: account.network.caip_network_id, address: account.address, fresh };
    d.push(Event::BalancesRequested { fetch });
    true
}

/// `RefreshBalances`.
pub(super) fn refresh_balances(d: &mut Decision) -> Result<(), DomainError> {
    d.state.chain_account().ok_or(DomainError::NotConnected)?;
    request_balances(d, false);
    Ok(())
}

/// The chain service's answer to fetch `id`; a stale answer (another fetch superseded it) changes
/// nothing.
pub(super) fn balances_fetched(d: &mut Decision, id: u64, outcome: Result<BalancesSnapshot, String>) {
    if d.state.balances.pending.as_ref().is_none_or(|p| p.id != id) {
        return;
    }
    match outcome {
        Ok(mut balances) => {
            // Spec §5: tokens with zero decimals are left out.
            balances.tokens.retain(|t| t.decimals > 0);
            d.push(Event::BalancesLoaded { id, balances, at_ms: d.now_ms });
        }
        Err(_) => {
            d.push(Event::BalancesFailed {
                id,
                message: TOKEN_BALANCE_UNAVAILABLE.into(),
                retry_blocked_until_ms: d.now_ms + balances::RETRY_BLOCK_MS,
            });
            d.toast(TOKEN_BALANCE_UNAVAILABLE, ToastVariant::Error);
        }
    }
}

/// `LoadActivity`: the newest page (when the list is not loaded for this account yet), or the next.
pub(super) fn load_activity(d: &mut Decision, more: bool) -> Result<(), DomainError> {
    if !d.state.options.features.activity {
        return Err(DomainError::FeatureDisabled("activity"));
    }
    let account = d.state.evm_account().ok_or(DomainError::NoAccountAddress)?;
    let a = &d.state.activity;
    let same = a.belongs_to(&account.network.caip_network_id, &account.address);
    if same && a.pending.is_some() {
        return Ok(());
    }
    let cursor = if more {
        match (&a.next, same && a.status == ActivityStatus::Loaded) {
            (Some(next), true) => Some(next.clone()),
            _ => return Ok(()),
        }
    } else {
        if same && a.status == ActivityStatus::Loaded {
            return Ok(());
        }
        None
    };
    request_activity(d, cursor);
    Ok(())
}

/// Asks the chain service for a page; on a network it does not serve, the page fails at once.
pub(super) fn request_activity(d: &mut Decision, cursor: Option<String>) {
    let Some(account) = d.state.evm_account() else { return };
    let id = d.state.activity.last_fetch + 1;
    let network = account.network.caip_network_id.clone();
    d.push(Event::ActivityRequested { fetch: ActivityFetch { id, network, address: account.address, cursor } });
    if !d.state.chain_supported(&account.network) {
        fail_activity(d, id);
    }
}

fn fail_activity(d: &mut Decision, id: u64) {
    d.push(Event::ActivityFailed { id, message: FAILED_TO_FETCH.into() });
    d.toast(FAILED_TO_FETCH, ToastVariant::Error);
}

/// The chain service's page for fetch `id`: spam dropped, only the connected chain's transactions
/// (spec §5), newest first.
pub(super) fn activity_fetched(d: &mut Decision, id: u64, outcome: Result<ActivityPage, String>) {
    let Some(fetch) = d.state.activity.pending.clone().filter(|p| p.id == id) else { return };
    match outcome {
        Ok(mut page) => {
            page.transactions.retain(|t| !t.is_spam() && t.network == fetch.network);
            page.transactions.sort_by(|a, b| b.mined_at.cmp(&a.mined_at));
            d.push(Event::ActivityLoaded { id, page });
        }
        Err(_) => fail_activity(d, id),
    }
}

/// After a transaction of the account's was mined: its balances and its newest activity again.
pub(super) fn after_transaction(d: &mut Decision) {
    request_balances(d, true);
    if matches!(d.state.activity.status, ActivityStatus::Loaded | ActivityStatus::Failed) && d.state.activity.pending.is_none() {
        request_activity(d, None);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn messages_are_the_specs() {
        assert_eq!(super::TOKEN_BALANCE_UNAVAILABLE, "Token Balance Unavailable");
        assert_eq!(super::FAILED_TO_FETCH, "Failed to fetch transactions");
        assert_eq!(crate::machines::activity::NO_ACCOUNT_ADDRESS, "Transactions can't be fetched without an accountAddress");
    }
}
