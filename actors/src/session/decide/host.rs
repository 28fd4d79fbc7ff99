//! The host app's EIP-1193 requests (spec §4 Wallet request outcome, §5 Wallet calls, §6): each
//! `HostRequest` is validated, routed (the session's own state, the chain service, the connected
//! wallet with or without the transaction stack, or refused after 300 ms), and settled with an
//! answer the host's provider reads from the state. See `machines::host_requests` and decision 0909.

use super::{Decision, MODAL_CLOSED, modal};
use crate::machines::connection::ConnectionStatus;
use crate::machines::embedded_wallet::{AUTH_CONNECTOR_ID, EMBEDDED_EVM_METHODS};
use crate::machines::host_requests::{
    self, HostRequest, HostRoute, MAX_CALL_GAS, MAX_ID_LEN, MAX_JSON_BYTES, MAX_METHOD_LEN, MAX_PENDING, MAX_PENDING_JSON_BYTES,
    NOT_ALLOWED, NOT_ALLOWED_DELAY_MS, classify, codes,
};
use crate::machines::network_switch::{NETWORK_NOT_FOUND, UNRECOGNIZED_CHAIN};
use crate::machines::requests::{RequestKind, WalletOutcome};
use crate::machines::router::{NavigationMode, View};
use crate::machines::toasts::ToastVariant;
use crate::model::caip::{CaipNetworkId, Namespace};
use crate::model::connector::MAX_WALLET_ERROR_CHARS;
use crate::session::{DomainError, Event};

/// EIP-1193's wording for 4100.
pub const UNAUTHORIZED: &str = "The requested account and/or method has not been authorized by the user.";
/// EIP-1193's wording for 4001: the visitor's Cancel on the ApproveTransaction view.
pub const USER_REJECTED: &str = "User rejected the request.";
/// Why a request of a page that reloaded is rejected (its promise is gone with the page).
pub const PAGE_RELOADED: &str = "Disconnected: the page reloaded";

fn error(code: i64, message: impl Into<String>) -> WalletOutcome {
    WalletOutcome::Error { code, message: message.into() }
}

fn invalid_params(message: impl Into<String>) -> WalletOutcome {
    error(codes::INVALID_PARAMS, format!("Invalid params: {}", message.into()))
}

/// The connected eip155 account (whichever namespace is active: the host's provider is the EVM
/// one): its address, wallet and network.
struct Eip155 {
    address: String,
    connector_id: String,
    network: Option<CaipNetworkId>,
}

fn eip155(d: &Decision) -> Option<Eip155> {
    let conn = d.state.connection.namespace(Namespace::Eip155);
    if conn.status != ConnectionStatus::Connected {
        return None;
    }
    Some(Eip155 {
        address: conn.address.clone()?,
        connector_id: conn.connector_id.clone()?,
        network: conn.network.as_ref().map(|n| n.caip_network_id.clone()),
    })
}

/// The network a chain read goes to: the connected account's, else the session's first eip155
/// network.
fn read_network(d: &Decision) -> Option<CaipNetworkId> {
    let connected = d.state.connection.namespace(Namespace::Eip155);
    if connected.status == ConnectionStatus::Connected {
        return connected.network.as_ref().map(|n| n.caip_network_id.clone());
    }
    d.state.networks.iter().find(|n| n.namespace() == Namespace::Eip155).map(|n| n.caip_network_id.clone())
}

fn hex_chain_id(network: &CaipNetworkId) -> Option<String> {
    network.reference.parse::<u64>().ok().map(|id| format!("{id:#x}"))
}

fn is_hex_data(text: &str) -> bool {
    text.strip_prefix("0x").is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Spec §5: a call's 'to' and 'data' must start with 0x (and be hex); `from`, when given, must be
/// the connected account.
fn check_call(call: &serde_json::Value, from: Option<&str>) -> Result<(), String> {
    let Some(call) = call.as_object() else { return Err("the call must be an object".into()) };
    for field in ["to", "data", "input"] {
        match call.get(field) {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::String(v)) if is_hex_data(v) => {}
            Some(_) => return Err(format!("'{field}' must start with 0x")),
        }
    }
    if let (Some(expected), Some(given)) = (from, call.get("from")) {
        if !given.as_str().is_some_and(|g| g.eq_ignore_ascii_case(expected)) {
            return Err("'from' is not the connected account".into());
        }
    }
    Ok(())
}

/// A read's `gas`, when given: a quantity of at most [`MAX_CALL_GAS`].
fn check_gas(call: &serde_json::Value) -> Result<(), String> {
    match call.get("gas") {
        None | Some(serde_json::Value::Null) => Ok(()),
        Some(serde_json::Value::String(gas)) => match gas.strip_prefix("0x").and_then(|hex| u64::from_str_radix(hex, 16).ok()) {
            Some(gas) if gas <= MAX_CALL_GAS => Ok(()),
            _ => Err(format!("'gas' must be a quantity of at most {MAX_CALL_GAS}")),
        },
        Some(_) => Err("'gas' must be a hex quantity".into()),
    }
}

/// Checks the calls a method carries (`eth_call`, `eth_estimateGas`, `eth_sendTransaction`,
/// `wallet_sendCalls`).
fn check_params(method: &str, params: &serde_json::Value, from: Option<&str>) -> Result<(), String> {
    if !(params.is_array() || params.is_object() || params.is_null()) {
        return Err("params must be an array or an object".into());
    }
    let first = params.get(0);
    match method {
        "eth_call" | "eth_estimateGas" => {
            // The call and a block: state overrides (a third param) are not passed to the node.
            if params.as_array().is_some_and(|all| all.len() > 2) {
                return Err("state overrides are not forwarded".into());
            }
            let call = first.ok_or("a call object is required")?;
            check_call(call, None)?;
            check_gas(call)
        }
        "eth_sendTransaction" => {
            let call = first.ok_or("a transaction object is required")?;
            check_call(call, from)
        }
        "wallet_sendCalls" => {
            let batch = first.and_then(|b| b.as_object()).ok_or("a calls object is required")?;
            if let (Some(expected), Some(given)) = (from, batch.get("from")) {
                if !given.as_str().is_some_and(|g| g.eq_ignore_ascii_case(expected)) {
                    return Err("'from' is not the connected account".into());
                }
            }
            let calls = batch.get("calls").and_then(|c| c.as_array()).ok_or("'calls' must be an array")?;
            calls.iter().try_for_each(|c| check_call(c, None))
        }
        _ => Ok(()),
    }
}

fn check_id(id: &str) -> Result<(), DomainError> {
    let ok =
        !id.is_empty() && id.len() <= MAX_ID_LEN && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    if ok {
        Ok(())
    } else {
        Err(DomainError::InvalidInput {
            field: "requestId".into(),
            message: format!("1 to {MAX_ID_LEN} letters, digits, '-', '_', '.' or ':'"),
        })
    }
}

/// `HostRequest`: records the request and routes it; answers what can be answered at once.
pub(super) fn request(d: &mut Decision, id: String, method: String, params: serde_json::Value) -> Result<(), DomainError> {
    check_id(&id)?;
    if d.state.host_requests.get(&id).is_some() {
        return Err(DomainError::InvalidInput { field: "requestId".into(), message: format!("{id} is already used") });
    }
    if method.len() > MAX_METHOD_LEN {
        return Err(DomainError::InvalidInput { field: "method".into(), message: format!("at most {MAX_METHOD_LEN} characters") });
    }
    if d.state.host_requests.pending_count() >= MAX_PENDING {
        return Err(DomainError::TooMany { what: "pending host requests".into(), max: MAX_PENDING });
    }
    let route = classify(&method);
    let bytes = serde_json::to_string(&params).map_or(usize::MAX, |s| s.len());
    let too_large = bytes > MAX_JSON_BYTES;
    if !too_large && d.state.host_requests.pending_json_bytes() + bytes > MAX_PENDING_JSON_BYTES {
        return Err(DomainError::TooMany { what: "bytes of pending host requests' params".into(), max: MAX_PENDING_JSON_BYTES });
    }
    let params = if too_large { serde_json::Value::Null } else { params };
    let mut received = HostRequest {
        id: id.clone(),
        method: method.clone(),
        params: params.clone(),
        route,
        network: None,
        wallet_request: None,
        deadline_ms: None,
        received_ms: d.now_ms,
        outcome: None,
    };
    if route == HostRoute::Disallowed {
        // Spec §5: the modal opens; 300 ms later the message shows and the request is rejected.
        received.deadline_ms = Some(d.now_ms + NOT_ALLOWED_DELAY_MS);
        d.push(Event::HostRequestReceived { request: received });
        if !d.state.modal.is_open() {
            modal::open(d, None)?;
        }
        return Ok(());
    }
    let account = eip155(d);
    let refusal = if too_large {
        Some(invalid_params(format!("params larger than {MAX_JSON_BYTES} bytes")))
    } else {
        check_params(&method, &params, account.as_ref().map(|a| a.address.as_str())).err().map(invalid_params)
    };
    if let Some(outcome) = refusal {
        d.push(Event::HostRequestReceived { request: received });
        settle(d, &id, outcome);
        return Ok(());
    }
    match route {
        HostRoute::Session => {
            d.push(Event::HostRequestReceived { request: received });
            let outcome = match (method.as_str(), &account) {
                ("eth_accounts", None) => WalletOutcome::Ok { result: serde_json::json!([]) },
                ("eth_accounts" | "eth_requestAccounts", Some(a)) => WalletOutcome::Ok { result: serde_json::json!([a.address]) },
                ("eth_chainId", _) => match read_network(d).as_ref().and_then(hex_chain_id) {
                    Some(chain) => WalletOutcome::Ok { result: serde_json::json!(chain) },
                    None => error(codes::DISCONNECTED, "No EVM network"),
                },
                _ => error(codes::UNAUTHORIZED, UNAUTHORIZED),
            };
            settle(d, &id, outcome);
        }
        HostRoute::Chain => {
            let network = read_network(d);
            match network.filter(|n| d.state.chain_service.serves(n)) {
                Some(network) => {
                    received.network = Some(network);
                    d.push(Event::HostRequestReceived { request: received });
                }
                // No RPC endpoint here: the connected wallet answers, without a prompt.
                None => forward(d, received, account, false)?,
            }
        }
        HostRoute::Wallet if method == "wallet_switchEthereumChain" => match account {
            Some(account) => switch_chain(d, received, account)?,
            None => forward(d, received, None, false)?,
        },
        HostRoute::Wallet => forward(d, received, account, false)?,
        HostRoute::WalletPrompt => forward(d, received, account, true)?,
        HostRoute::Disallowed | HostRoute::NetworkSwitch => unreachable!("not a classification of a method"),
    }
    Ok(())
}

/// To the connected wallet through the session's request queue; a prompt waits on the
/// transaction stack (spec §4), with the modal open on ApproveTransaction.
fn forward(d: &mut Decision, mut received: HostRequest, account: Option<Eip155>, prompt: bool) -> Result<(), DomainError> {
    let id = received.id.clone();
    let Some(account) = account else {
        d.push(Event::HostRequestReceived { request: received });
        settle(d, &id, error(codes::UNAUTHORIZED, UNAUTHORIZED));
        return Ok(());
    };
    if account.connector_id == AUTH_CONNECTOR_ID && !EMBEDDED_EVM_METHODS.contains(&received.method.as_str()) {
        // The embedded wallet would refuse it in the frame: answered here, before an approval
        // view shows for a request that cannot be approved (EIP-1193: 4200 unsupported method).
        let message = format!("The embedded wallet does not support {}", received.method);
        d.push(Event::HostRequestReceived { request: received });
        settle(d, &id, error(codes::UNSUPPORTED_METHOD, message));
        return Ok(());
    }
    let kind = RequestKind::Rpc { method: received.method.clone(), params: received.params.clone() };
    let wallet_request = d.issue_request(&account.connector_id, Namespace::Eip155, kind)?;
    received.wallet_request = Some(wallet_request);
    received.network = account.network;
    d.push(Event::HostRequestReceived { request: received });
    if prompt {
        let opened_modal = !d.state.modal.is_open();
        d.push(Event::TransactionStackPushed { id: id.clone(), opened_modal });
        if opened_modal {
            d.open_modal();
            d.navigate(View::ApproveTransaction, None, NavigationMode::Reset);
        }
    }
    Ok(())
}

/// EIP-1193 / MetaMask: the resource is busy (another switch is pending).
pub const SWITCH_PENDING_CODE: i64 = -32002;
pub const SWITCH_PENDING: &str = "A network switch is already pending";

/// The target of a `wallet_switchEthereumChain` (`[{ chainId: "0x…" }]`).
fn switch_target(params: &serde_json::Value) -> Option<CaipNetworkId> {
    let hex = params.get(0)?.get("chainId")?.as_str()?.strip_prefix("0x")?;
    let id = u64::from_str_radix(hex, 16).ok().filter(|_| !hex.is_empty() && hex.len() <= 16)?;
    Some(CaipNetworkId::eip155(id))
}

/// `wallet_switchEthereumChain` from the host (spec §4 Network switch paths): to one of the
/// session's networks, with network switching enabled and the EVM account active, it is the
/// session's own switch (SwitchNetwork view; 4902 → add → switch), so the session's network follows;
/// the host's request waits on the transaction stack until the switch finishes (null) or fails (the
/// wallet's error). A chain outside the session's networks, or switching disabled: the wallet is
/// asked directly, as any wallet call.
fn switch_chain(d: &mut Decision, mut received: HostRequest, account: Eip155) -> Result<(), DomainError> {
    let id = received.id.clone();
    let Some(target) = switch_target(&received.params) else {
        d.push(Event::HostRequestReceived { request: received });
        settle(d, &id, invalid_params("'chainId' must be a hex chain id"));
        return Ok(());
    };
    let in_session = d.state.networks.iter().any(|n| n.caip_network_id == target);
    if account.connector_id == AUTH_CONNECTOR_ID && account.network.as_ref() == Some(&target) && !d.state.network_switch.in_progress() {
        // Already there (EIP-3326 answers null), whatever the host's switching setting: the
        // embedded wallet has nothing to be asked.
        d.push(Event::HostRequestReceived { request: received });
        settle(d, &id, WalletOutcome::Ok { result: serde_json::Value::Null });
        return Ok(());
    }
    if !in_session && account.connector_id == AUTH_CONNECTOR_ID {
        // The embedded wallet signs on the session's networks only: EIP-3326's unknown chain,
        // and the catalogue's alert (a browser wallet is asked: it may know the chain).
        d.push(Event::HostRequestReceived { request: received });
        d.toast(NETWORK_NOT_FOUND, ToastVariant::Error);
        settle(d, &id, error(UNRECOGNIZED_CHAIN, format!("Unrecognized chain ID {target}")));
        return Ok(());
    }
    if !(in_session && d.state.options.enable_network_switch && d.state.evm_account().is_some()) {
        return forward(d, received, Some(account), false);
    }
    received.route = HostRoute::NetworkSwitch;
    received.network = Some(target.clone());
    d.push(Event::HostRequestReceived { request: received });
    let pending = d.state.network_switch.clone();
    if pending.in_progress() && pending.target.as_ref() != Some(&target) {
        settle(d, &id, error(SWITCH_PENDING_CODE, SWITCH_PENDING));
        return Ok(());
    }
    if !pending.in_progress() && account.network.as_ref() == Some(&target) {
        // Already there (EIP-3326 answers null).
        settle(d, &id, WalletOutcome::Ok { result: serde_json::Value::Null });
        return Ok(());
    }
    let opened_modal = !d.state.modal.is_open();
    d.push(Event::TransactionStackPushed { id: id.clone(), opened_modal });
    if opened_modal {
        d.open_modal();
        d.navigate(View::SwitchNetwork, None, NavigationMode::Reset);
    }
    // A switch to the same target already pending (the Networks view's): this request rides along.
    if !pending.in_progress()
        && let Err(e) = super::network::switch(d, target)
    {
        settle(d, &id, error(codes::INTERNAL, e.to_string()));
    }
    Ok(())
}

/// The session's network switch finished (`Ok(null)`), failed (the wallet's error) or was
/// cancelled: the host's `wallet_switchEthereumChain` requests waiting for it are settled. When
/// other requests still wait on the stack of a modal opened for it, their view comes back.
pub(super) fn switch_settled(d: &mut Decision, outcome: WalletOutcome) {
    let waiting: Vec<String> =
        d.state.host_requests.pending().filter(|r| r.route == HostRoute::NetworkSwitch).map(|r| r.id.clone()).collect();
    if waiting.is_empty() {
        return;
    }
    for id in waiting {
        settle(d, &id, outcome.clone());
    }
    let hr = &d.state.host_requests;
    if !hr.stack.is_empty() && hr.opened_modal && d.state.modal.is_open() && d.state.router.current() != View::ApproveTransaction {
        d.navigate(View::ApproveTransaction, None, NavigationMode::Reset);
    }
}

/// Settles a pending host request: pops it from the transaction stack, and closes the modal when
/// the stack empties and the modal was opened for it (spec §4).
pub(super) fn settle(d: &mut Decision, id: &str, outcome: WalletOutcome) {
    if !d.state.host_requests.get(id).is_some_and(HostRequest::is_pending) {
        return;
    }
    let outcome = bounded(outcome);
    let drained = host_requests::drained_after(&d.state.host_requests, id);
    let forget = d.state.host_requests.answers_to_forget(id, host_requests::json_len(&outcome));
    d.push(Event::HostRequestSettled { id: id.to_string(), outcome });
    if !forget.is_empty() {
        d.push(Event::HostAnswersForgotten { ids: forget });
    }
    if let Some(drained) = drained {
        d.push(drained);
    }
    if d.state.host_requests.stack.iter().any(|s| s == id) {
        let opened_modal = d.state.host_requests.opened_modal;
        d.push(Event::TransactionStackPopped { id: id.to_string() });
        if d.state.host_requests.stack.is_empty() && opened_modal {
            d.close_modal();
        }
    }
}

/// An answer larger than the bound becomes an error (the state carries it to the page).
fn bounded(outcome: WalletOutcome) -> WalletOutcome {
    match &outcome {
        WalletOutcome::Ok { result } if serde_json::to_string(result).map_or(true, |s| s.len() > MAX_JSON_BYTES) => {
            error(codes::INTERNAL, format!("The answer is larger than {MAX_JSON_BYTES} bytes"))
        }
        WalletOutcome::Error { code, message } if message.chars().nth(MAX_WALLET_ERROR_CHARS).is_some() => {
            error(*code, message.chars().take(MAX_WALLET_ERROR_CHARS).collect::<String>())
        }
        _ => outcome,
    }
}

/// Whether a wallet request performs a host request.
pub(super) fn owns(d: &Decision, wallet_request: &str) -> bool {
    d.state.host_requests.for_wallet_request(wallet_request).is_some()
}

/// The wallet's answer to a host request it performed: the host gets it as is.
pub(super) fn answered(d: &mut Decision, wallet_request: &str, outcome: WalletOutcome) {
    if let Some(id) = d.state.host_requests.for_wallet_request(wallet_request).map(|r| r.id.clone()) {
        settle(d, &id, outcome);
    }
}

/// A host request's wallet request was cancelled: the modal closed or the visitor cancelled (4001,
/// spec §4), the page reloaded or the wallet disconnected (4900).
pub(super) fn cancelled(d: &mut Decision, wallet_request: &str, reason: &str) {
    if let Some(id) = d.state.host_requests.for_wallet_request(wallet_request).map(|r| r.id.clone()) {
        settle(d, &id, error(cancel_code(reason), reason));
    }
}

/// The visitor refused (4001) or the page that asked is gone (4900).
pub(super) fn cancel_code(reason: &str) -> i64 {
    if reason == MODAL_CLOSED || reason == USER_REJECTED { codes::USER_REJECTED } else { codes::DISCONNECTED }
}

/// `CancelHostRequest`: the ApproveTransaction view's Cancel. The request must be waiting on the
/// transaction stack; it is rejected with 4001 and its wallet request withdrawn, which pops it
/// (and closes the modal when it was opened for the stack and the stack is now empty, spec §4).
pub(super) fn cancel(d: &mut Decision, id: &str) -> Result<(), DomainError> {
    let stacked = d.state.host_requests.stack.iter().any(|s| s == id);
    let request = d.state.host_requests.get(id).filter(|r| stacked && r.is_pending()).cloned();
    let Some(request) = request else {
        return Err(DomainError::InvalidInput { field: "requestId".into(), message: format!("{id} is not waiting for approval") });
    };
    withdraw(d, &request.id, USER_REJECTED);
    Ok(())
}

/// Rejects a stacked request for `reason` (the visitor's Cancel, the modal closing): its wallet
/// request is cancelled (for a network switch, the switch's), which settles it; else it is settled
/// here.
fn withdraw(d: &mut Decision, id: &str, reason: &str) {
    let Some(request) = d.state.host_requests.get(id).filter(|r| r.is_pending()).cloned() else { return };
    match wallet_request_of(d, &request) {
        Some(w) => d.end_request(Event::WalletRequestCancelled { id: w.id, reason: reason.into() }),
        None => settle(d, id, error(cancel_code(reason), reason)),
    }
}

/// The wallet request a host request waits on, if it is still waiting (for a network switch, the
/// switch's).
fn wallet_request_of(d: &Decision, request: &HostRequest) -> Option<crate::machines::requests::WalletRequest> {
    let id =
        if request.route == HostRoute::NetworkSwitch { d.state.network_switch.request_id.clone() } else { request.wallet_request.clone() };
    id.and_then(|w| d.state.requests.get(&w).cloned())
}

/// The modal closed: the requests on the transaction stack are rejected ("Modal closed", 4001)
/// and their wallet requests cancelled, but for those a browser wallet was asked: its prompt is
/// its own, outside the modal, and the visitor may still approve it, so the wallet's answer settles
/// them (an outside review: the host was told 4001 while the wallet went on to send the
/// transaction, whose hash was then lost; a dapp believing the rejection offers to send again).
/// The embedded wallet's requests are withdrawn: its approval is the session's to refuse. Safe
/// reads are not aborted (spec §6).
pub(super) fn modal_closed(d: &mut Decision) {
    let stacked: Vec<String> = d.state.host_requests.stack.clone();
    for id in stacked {
        let at_a_browser_wallet = d
            .state
            .host_requests
            .get(&id)
            .and_then(|request| wallet_request_of(d, request))
            .is_some_and(|w| w.connector_id != AUTH_CONNECTOR_ID);
        if !at_a_browser_wallet {
            withdraw(d, &id, MODAL_CLOSED);
        }
    }
}

/// A new page: the old page's requests can no longer be answered to anyone (its promises are
/// gone); whatever the wallet-request cancellation did not settle is settled here.
pub(super) fn page_loaded(d: &mut Decision) {
    let pending: Vec<String> = d.state.host_requests.pending().map(|r| r.id.clone()).collect();
    for id in pending {
        settle(d, &id, error(codes::DISCONNECTED, PAGE_RELOADED));
    }
}

/// The chain service's answer to a safe read (an effect's outcome; a late one is ignored).
pub(super) fn read_answered(d: &mut Decision, id: &str, outcome: WalletOutcome) {
    if d.state.host_requests.get(id).is_some_and(|r| r.is_pending() && r.route == HostRoute::Chain) {
        settle(d, id, outcome);
    }
}

/// A deadline: disallowed requests due are rejected with 4200 and the message shows (spec §5).
pub(super) fn tick(d: &mut Decision) {
    let due: Vec<String> = d
        .state
        .host_requests
        .pending()
        .filter(|r| r.route == HostRoute::Disallowed && r.deadline_ms.is_some_and(|at| at <= d.now_ms))
        .map(|r| r.id.clone())
        .collect();
    if due.is_empty() {
        return;
    }
    d.toast(NOT_ALLOWED, ToastVariant::Error);
    for id in due {
        settle(d, &id, error(codes::UNSUPPORTED_METHOD, NOT_ALLOWED));
    }
}
