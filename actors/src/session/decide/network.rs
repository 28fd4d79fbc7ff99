//! Network switching (spec §2, §4 Network switch paths, §8): the Networks view's choice asks the
//! connected wallet `wallet_switchEthereumChain`; a wallet that does not know the chain (4902) is
//! asked `wallet_addEthereumChain` with the session's chain definition and then to switch again.
//! The SwitchNetwork view shows while it is pending, with the wallet's error and a retry. The
//! switch is finished by the wallet's `chainChanged` (or its answer to the switch), which moves the
//! connection; balances and activity then follow the new chain (`account::follow_connection`).
//! The embedded wallet (`auth`) and Solana wallets are not asked: each request they sign names
//! the connection's network, so the session moves the connection itself.

use super::{Decision, sign_in, wallet_error_message};
use crate::machines::connection::ConnectionStatus;
use crate::machines::embedded_wallet::AUTH_CONNECTOR_ID;
use crate::machines::host_requests;
use crate::machines::network_switch::{SWITCH_DECLINED, SwitchStatus, SwitchStep, UNRECOGNIZED_CHAIN};
use crate::machines::requests::{RequestKind, WalletOutcome, WalletRequest};
use crate::machines::router::{NavigationMode, View};
use crate::machines::send::SendStatus;
use crate::model::caip::{CaipNetworkId, Namespace};
use crate::model::networks::{ChainDefinition, NetworkRef};
use crate::session::{DomainError, Event};

fn chain_id_hex(network: &CaipNetworkId) -> Option<String> {
    let id: u64 = network.reference.parse().ok()?;
    Some(format!("{id:#x}"))
}

/// `SwitchNetwork`: one of the session's networks of the active account's namespace (eip155 or
/// solana), while that account is connected.
pub(super) fn switch(d: &mut Decision, target: CaipNetworkId) -> Result<(), DomainError> {
    if !d.state.options.enable_network_switch {
        return Err(DomainError::FeatureDisabled("enableNetworkSwitch"));
    }
    let chain = d.state.networks.iter().find(|c| c.caip_network_id == target).cloned().ok_or_else(|| DomainError::InvalidInput {
        field: "network".into(),
        message: format!("{target} is not one of the session's networks"),
    })?;
    if target.namespace == Namespace::Solana {
        return switch_solana(d, &chain);
    }
    if target.namespace != Namespace::Eip155 {
        return Err(DomainError::InvalidInput { field: "network".into(), message: "only eip155 and solana networks are switched".into() });
    }
    let account = d.state.evm_account().ok_or(DomainError::NotConnected)?;
    if d.state.network_switch.in_progress() {
        return Err(DomainError::SwitchPending);
    }
    if account.network.caip_network_id == target {
        // Already there: nothing to ask; a failed attempt's view is left.
        if d.state.network_switch.status == SwitchStatus::Failed {
            d.push(Event::NetworkSwitchCancelled {});
        }
        d.navigate(View::Account, None, NavigationMode::Reset);
        return Ok(());
    }
    if account.connector_id == AUTH_CONNECTOR_ID {
        // Spec §4 "Auth-connected wallet: switch through the embedded wallet". Asking the frame
        // `wallet_switchEthereumChain` would be refused: it signs, it does not switch.
        nothing_in_flight(d, Namespace::Eip155)?;
        if d.state.network_switch.status == SwitchStatus::Failed {
            d.push(Event::NetworkSwitchCancelled {});
        }
        moved_by_the_session(d, Namespace::Eip155, &chain);
        // A host's wallet_switchEthereumChain waiting for it: EIP-3326 answers null.
        super::host::switch_settled(d, WalletOutcome::Ok { result: serde_json::Value::Null });
        // Then, as after a wallet's chainChanged, a sign-in for the account on its new chain.
        sign_in::request_if_needed(d);
        return Ok(());
    }
    ask(d, &account.connector_id, &chain, SwitchStep::Switch)
}

/// A Solana account's cluster. A Wallet Standard wallet is on no cluster: each transaction the
/// session asks it to sign names its chain (the connection's network), and the embedded wallet
/// does the same, so the session moves the connection itself, with nothing to ask. An account
/// whose wallet listed the chains it supports moves only to one of them.
fn switch_solana(d: &mut Decision, chain: &ChainDefinition) -> Result<(), DomainError> {
    let conn = d.state.connection.namespace(Namespace::Solana);
    if d.state.connection.active_namespace != Some(Namespace::Solana) || conn.status != ConnectionStatus::Connected {
        return Err(DomainError::NotConnected);
    }
    if conn.network.as_ref().map(|n| &n.caip_network_id) == Some(&chain.caip_network_id) {
        d.navigate(View::Account, None, NavigationMode::Reset);
        return Ok(());
    }
    if conn.signable_networks.as_ref().is_some_and(|signable| !signable.contains(&chain.caip_network_id)) {
        return Err(DomainError::InvalidInput {
            field: "network".into(),
            message: format!("the wallet's account does not support {}", chain.name),
        });
    }
    nothing_in_flight(d, Namespace::Solana)?;
    moved_by_the_session(d, Namespace::Solana, chain);
    sign_in::request_if_needed(d);
    Ok(())
}

/// A connection the session moves itself must have nothing in flight on its network: the wallet
/// (the frame) reads the network when it comes to sign, so a transfer being built or a request
/// waiting for the visitor's approval would be signed, and shown, for another chain than the one
/// it was made for. A browser wallet asked to switch keeps its own order; this is the session's.
fn nothing_in_flight(d: &Decision, namespace: Namespace) -> Result<(), DomainError> {
    if d.state.send.status == SendStatus::Sending {
        return Err(DomainError::SendPending);
    }
    if d.state.requests.items.values().any(|r| r.namespace == namespace) {
        return Err(DomainError::InvalidInput {
            field: "network".into(),
            message: "a request to the wallet is waiting on this network; answer it first".into(),
        });
    }
    Ok(())
}

/// The connection of `namespace` moves to `chain` with no wallet asked (the embedded wallet's EVM
/// account, a Solana account): each request signed later names the connection's network at that
/// moment. Balances and activity follow (`account::follow_connection`).
fn moved_by_the_session(d: &mut Decision, namespace: Namespace, chain: &ChainDefinition) {
    d.push(Event::NetworkChanged { namespace, network: NetworkRef::of(chain) });
    // From the views of switching, as a wallet's switch returns; a host's request for another
    // view (an approval waiting on the stack) keeps its view.
    if matches!(d.state.router.current(), View::Networks | View::SwitchNetwork) {
        d.navigate(View::Account, None, NavigationMode::Reset);
    }
}

/// `RetrySwitchNetwork`: the failed switch's target again.
pub(super) fn retry(d: &mut Decision) -> Result<(), DomainError> {
    let s = &d.state.network_switch;
    match (s.status, s.target.clone()) {
        (SwitchStatus::Failed, Some(target)) => switch(d, target),
        _ => Err(DomainError::InvalidInput { field: "networkSwitch".into(), message: "there is no failed switch to retry".into() }),
    }
}

fn ask(d: &mut Decision, connector_id: &str, chain: &ChainDefinition, step: SwitchStep) -> Result<(), DomainError> {
    let chain_id = chain_id_hex(&chain.caip_network_id).ok_or_else(|| DomainError::InvalidInput {
        field: "network".into(),
        message: format!("{} has no numeric chain id", chain.caip_network_id),
    })?;
    let (method, params) = match step {
        SwitchStep::Switch => ("wallet_switchEthereumChain", serde_json::json!([{ "chainId": chain_id }])),
        SwitchStep::Add => {
            let mut add = serde_json::json!({
                "chainId": chain_id,
                "chainName": chain.name,
                "nativeCurrency": { "name": chain.native_currency.name, "symbol": chain.native_currency.symbol, "decimals": chain.native_currency.decimals },
                "rpcUrls": chain.rpc_urls,
            });
            // EIP-3085: blockExplorerUrls is optional but, when given, holds at least one URL; a
            // null there is refused by strict wallets, so a chain without explorers leaves it out.
            if !chain.block_explorers.is_empty() {
                add["blockExplorerUrls"] = serde_json::json!(chain.block_explorers);
            }
            ("wallet_addEthereumChain", serde_json::json!([add]))
        }
    };
    let request_id = d.issue_request(connector_id, Namespace::Eip155, RequestKind::Rpc { method: method.into(), params })?;
    d.push(Event::NetworkSwitchStarted { target: chain.caip_network_id.clone(), request_id, step });
    d.open_modal();
    if d.state.router.current() != View::SwitchNetwork {
        d.navigate(View::SwitchNetwork, None, NavigationMode::Push);
    }
    Ok(())
}

/// Whether `request` is the switch (or add) being waited for.
pub(super) fn owns(d: &Decision, request: &WalletRequest) -> bool {
    d.state.network_switch.request_id.as_deref() == Some(request.id.as_str())
}

/// The wallet's answer to `wallet_switchEthereumChain` or `wallet_addEthereumChain`.
pub(super) fn answered(d: &mut Decision, request: &WalletRequest, outcome: WalletOutcome) {
    let s = d.state.network_switch.clone();
    let Some(target) = s.target.clone() else { return };
    let step = if s.status == SwitchStatus::Adding { SwitchStep::Add } else { SwitchStep::Switch };
    match (step, outcome) {
        // The wallet switched (EIP-3326 answers null); its chainChanged may be late or missing,
        // so the answer itself moves the connection.
        (SwitchStep::Switch, WalletOutcome::Ok { .. }) => arrived(d, &target),
        // Added: now switch to it.
        (SwitchStep::Add, WalletOutcome::Ok { .. }) => {
            let chain = d.state.networks.iter().find(|c| c.caip_network_id == target).cloned();
            if let Some(chain) = chain
                && let Err(e) = ask(d, &request.connector_id, &chain, SwitchStep::Switch)
            {
                failed(d, None, e.to_string(), None);
            }
        }
        (SwitchStep::Switch, WalletOutcome::Error { code, .. }) if code == UNRECOGNIZED_CHAIN => {
            let chain = d.state.networks.iter().find(|c| c.caip_network_id == target).cloned();
            if let Some(chain) = chain
                && let Err(e) = ask(d, &request.connector_id, &chain, SwitchStep::Add)
            {
                failed(d, None, e.to_string(), None);
            }
        }
        (_, e @ WalletOutcome::Error { .. }) => {
            let code = match &e {
                WalletOutcome::Error { code, .. } => Some(*code),
                WalletOutcome::Ok { .. } => None,
            };
            let message = if e.is_user_rejection() { SWITCH_DECLINED.to_string() } else { wallet_error_message(&e) };
            failed(d, code, message, Some(e));
        }
    }
}

/// The switch failed: the view shows `message`; a host's `wallet_switchEthereumChain` waiting for
/// it gets the wallet's own error (`wallet`), or an internal error with `message`.
fn failed(d: &mut Decision, code: Option<i64>, message: String, wallet: Option<WalletOutcome>) {
    d.push(Event::NetworkSwitchFailed { code, message: message.clone() });
    let outcome = wallet.unwrap_or(WalletOutcome::Error { code: host_requests::codes::INTERNAL, message });
    super::host::switch_settled(d, outcome);
}

/// The connected account is now on `network` (the switch's answer, or the wallet's chainChanged).
fn arrived(d: &mut Decision, network: &CaipNetworkId) {
    let on = d.state.connection.namespace(Namespace::Eip155).network.as_ref().map(|n| &n.caip_network_id) == Some(network);
    if !on && let Some(chain) = d.state.networks.iter().find(|c| &c.caip_network_id == network).cloned() {
        d.push(Event::NetworkChanged { namespace: Namespace::Eip155, network: NetworkRef::of(&chain) });
    }
    finish_if_arrived(d);
}

/// After the connection's network moved: a pending switch to it is finished and the view returns
/// to Account.
pub(super) fn finish_if_arrived(d: &mut Decision) {
    let s = &d.state.network_switch;
    if !(s.in_progress() || s.status == SwitchStatus::Failed) {
        return;
    }
    let current = d.state.connection.namespace(Namespace::Eip155).network.as_ref().map(|n| n.caip_network_id.clone());
    if current.is_some() && current == s.target {
        let request_id = s.request_id.clone();
        // Finished first, so the request's cancellation below is not taken for an abandoned switch.
        d.push(Event::NetworkSwitchFinished {});
        if let Some(request_id) = request_id
            && d.state.requests.get(&request_id).is_some()
        {
            d.end_request(Event::WalletRequestCancelled { id: request_id, reason: "the wallet switched".into() });
        }
        if d.state.router.current() == View::SwitchNetwork {
            d.navigate(View::Account, None, NavigationMode::Reset);
        }
        // EIP-3326: a switch answers null.
        super::host::switch_settled(d, WalletOutcome::Ok { result: serde_json::Value::Null });
    }
}

/// The switch's wallet request was cancelled (reload, disconnect, the modal closing or the
/// visitor's cancel of a host's switch): a host's switch waiting for it is rejected.
pub(super) fn cancelled(d: &mut Decision, request_id: &str, reason: &str) {
    if d.state.network_switch.request_id.as_deref() == Some(request_id) {
        d.push(Event::NetworkSwitchCancelled {});
        let code = super::host::cancel_code(reason);
        super::host::switch_settled(d, WalletOutcome::Error { code, message: reason.to_string() });
    }
}
