//! Page loads, opening and closing the modal, and navigation.

use super::{Decision, MODAL_CLOSED, sign_in};
use crate::machines::connection::ConnectionStatus;
use crate::machines::requests::RequestKind;
use crate::machines::router::{NavigationMode, Route, RouteParams, View};
use crate::model::caip::Namespace;
use crate::session::{DomainError, Event, SessionState};

/// A new page: requests the previous page made can no longer be answered, and stored connections are
/// re-synced without prompting (spec: a stored `connected` becomes `connecting`, resolved by a sync).
pub(super) fn page_loaded(d: &mut Decision) -> Result<(), DomainError> {
    for ns in Namespace::ALL {
        let conn = d.state.connection.namespace(ns).clone();
        if conn.status == ConnectionStatus::Connecting && !conn.syncing {
            d.abandon_pending(ns, "Connection interrupted by a page reload");
        }
    }
    let stale: Vec<String> = d.state.requests.order.clone();
    for id in stale {
        d.end_request(Event::WalletRequestCancelled { id, reason: "page reloaded".into() });
    }
    super::host::page_loaded(d);
    super::embedded::page_loaded(d);
    d.close_modal();
    if matches!(
        d.state.router.current(),
        View::ConnectingWallet | View::ConnectingSocial | View::ConnectingFarcaster | View::EmailVerifyDevice | View::EmailVerifyOtp
    ) {
        d.navigate(View::Connect, None, NavigationMode::Reset);
    }
    for ns in Namespace::ALL {
        let conn = d.state.connection.namespace(ns).clone();
        let Some(connector_id) = conn.connector_id.clone() else { continue };
        if conn.status == ConnectionStatus::Connected || conn.syncing {
            let request_id = d.issue_request(&connector_id, ns, RequestKind::Sync)?;
            d.push(Event::SyncStarted { namespace: ns, connector_id, request_id });
        }
    }
    Ok(())
}

/// Opens the modal on `view`, or on the view the session is at: the sign-in message while a
/// challenge waits, Account when connected, else Connect.
pub(super) fn open(d: &mut Decision, view: Option<View>) -> Result<(), DomainError> {
    let target = match view {
        Some(view) => {
            check_navigable(&d.state, view)?;
            view
        }
        None if d.state.siwx.challenge.is_some() => View::SiwxSignMessage,
        None if d.state.connection.active_connected() => View::Account,
        None => View::Connect,
    };
    d.open_modal();
    d.navigate(target, None, NavigationMode::Reset);
    Ok(())
}

/// Closes the modal when closing is allowed; pending connects are rejected with "Modal closed".
pub(super) fn close(d: &mut Decision) -> Result<(), DomainError> {
    if d.state.modal.is_open() {
        if !d.state.modal.closable {
            return Err(DomainError::CloseDisabled);
        }
        d.close_modal();
        super::embedded::modal_closed(d);
        reject_pending_connects(d, MODAL_CLOSED);
        super::host::modal_closed(d);
    }
    Ok(())
}

pub(super) fn navigate(d: &mut Decision, view: View, params: Option<RouteParams>, replace: bool) -> Result<(), DomainError> {
    check_navigable(&d.state, view)?;
    if params.as_ref().is_some_and(|p| p.request_id.is_some()) {
        return Err(DomainError::InvalidInput { field: "params.requestId".into(), message: "set by the session only".into() });
    }
    // A connector id (an rdns) and an email address are short: every route of the history keeps
    // its params, so a 60 KB one made each Navigate a diff of a megabyte.
    if let Some(p) = &params {
        for (field, value, max) in [("params.connectorId", &p.connector_id, 128), ("params.email", &p.email, 254)] {
            if value.as_ref().is_some_and(|v| v.len() > max) {
                return Err(DomainError::InvalidInput { field: field.into(), message: format!("at most {max} characters") });
            }
        }
    }
    let mode = if replace { NavigationMode::Replace } else { NavigationMode::Push };
    d.navigate(view, params, mode);
    Ok(())
}

pub(super) fn go_back(d: &mut Decision) -> Result<(), DomainError> {
    let to = d.state.router.previous().ok_or(DomainError::NothingToGoBackTo)?;
    d.push(Event::WentBack { to });
    Ok(())
}

fn check_navigable(state: &SessionState, view: View) -> Result<(), DomainError> {
    if !view.is_navigable() {
        return Err(DomainError::ViewNotNavigable(view));
    }
    match view {
        View::Account | View::Send | View::Receive if !state.connection.active_connected() => Err(DomainError::NotConnected),
        View::Send if !state.options.features.send => Err(DomainError::FeatureDisabled("send")),
        View::Receive if !state.options.features.receive => Err(DomainError::FeatureDisabled("receive")),
        View::Swap if !state.options.features.swaps => Err(DomainError::FeatureDisabled("swaps")),
        View::AllWallets if !state.options.features.all_wallets => Err(DomainError::FeatureDisabled("allWallets")),
        _ => Ok(()),
    }
}

/// Spec: connect flows reject with "Modal closed" if the modal closes before connecting, and the view
/// returns to Connect.
fn reject_pending_connects(d: &mut Decision, message: &str) {
    for ns in Namespace::ALL {
        let conn = d.state.connection.namespace(ns);
        if conn.status == ConnectionStatus::Connecting && !conn.syncing {
            d.abandon_pending(ns, message);
        }
    }
    if matches!(
        d.state.router.current(),
        View::ConnectingWallet | View::ConnectingSocial | View::ConnectingFarcaster | View::EmailVerifyDevice | View::EmailVerifyOtp
    ) {
        d.navigate(View::Connect, None, NavigationMode::Reset);
    }
}

/// `SwitchActiveNamespace`: a namespace with a connected account becomes active at once (and asks
/// for a sign-in if that account has none); one without shows SwitchActiveChain (spec section 2:
/// "a different chain namespace with no connected account there") with the spec's params: the
/// namespace, where to go next (Connect, replacing the view) and the network it leads to.
pub(super) fn switch_namespace(d: &mut Decision, namespace: Namespace) -> Result<(), DomainError> {
    let network = d
        .state
        .networks
        .iter()
        .find(|c| c.namespace() == namespace)
        .map(|c| c.caip_network_id.clone())
        .ok_or(DomainError::NamespaceNotSupported(namespace))?;
    if d.state.connection.namespace(namespace).status == ConnectionStatus::Connected {
        if d.state.connection.active_namespace != Some(namespace) {
            d.push(Event::ActiveNamespaceChanged { namespace });
            sign_in::request_if_needed(d);
        }
        return Ok(());
    }
    let params = RouteParams {
        switch_to_chain: Some(namespace),
        navigate_to: Some(View::Connect),
        navigate_with_replace: Some(true),
        network: Some(network),
        ..Default::default()
    };
    d.open_modal();
    d.navigate(View::SwitchActiveChain, Some(params), NavigationMode::Push);
    Ok(())
}

/// The SwitchActiveChain view's button: the namespace becomes active (with no account yet) and the
/// view goes where its params say, so the visitor can connect a wallet there.
pub(super) fn confirm_switch_active_chain(d: &mut Decision) -> Result<(), DomainError> {
    let route = d.state.router.current_route().cloned();
    let params = match route {
        Some(Route { view: View::SwitchActiveChain, params: Some(params) }) => params,
        _ => return Err(DomainError::NotOnView(View::SwitchActiveChain)),
    };
    let namespace = params.switch_to_chain.ok_or(DomainError::NotOnView(View::SwitchActiveChain))?;
    if d.state.connection.active_namespace != Some(namespace) {
        d.push(Event::ActiveNamespaceChanged { namespace });
    }
    let to = params.navigate_to.unwrap_or(View::Connect);
    let mode = if params.navigate_with_replace == Some(true) { NavigationMode::Replace } else { NavigationMode::Push };
    // Connect lists the wallets of the namespace switched to (the view offers the others again).
    let params = (to == View::Connect).then(|| RouteParams { switch_to_chain: Some(namespace), ..Default::default() });
    d.navigate(to, params, mode);
    Ok(())
}
