//! Page loads, opening and closing the modal, and navigation.

use super::{Decision, MODAL_CLOSED};
use crate::machines::connection::ConnectionStatus;
use crate::machines::requests::RequestKind;
use crate::machines::router::{NavigationMode, RouteParams, View};
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
    d.close_modal();
    if d.state.router.current() == View::ConnectingWallet {
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
        None if d.state.connection.is_connected() => View::Account,
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
        reject_pending_connects(d, MODAL_CLOSED);
    }
    Ok(())
}

pub(super) fn navigate(d: &mut Decision, view: View, params: Option<RouteParams>, replace: bool) -> Result<(), DomainError> {
    check_navigable(&d.state, view)?;
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
        View::Account if !state.connection.is_connected() => Err(DomainError::NotConnected),
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
    if d.state.router.current() == View::ConnectingWallet {
        d.navigate(View::Connect, None, NavigationMode::Reset);
    }
}
