//! The embedded wallet's approvals (docs/embedded-wallet.md, spec §4 SIWX and Wallet request
//! outcome): the `auth` connector has no wallet UI of its own; the secure frame draws the approval of
//! every signing request over the ApproveTransaction view. One rule for every flow that asks `auth`
//! to sign or send (SIWX's message, the Send view's transfer, a Solana send's transaction, a host
//! request while the modal is already open):
//!
//! - after every decision, while such a request is pending and the modal is open, the modal shows
//!   ApproveTransaction, pushed on the view the flow was on, with the request's id in its params;
//! - when the request ends (answered or cancelled), before the flow hears of it, that view is left
//!   (Back, to the flow's view), so the flow continues exactly as it does for an external wallet.
//!
//! Requests to other connectors, and `Connect`/`Sync` to `auth`, never show ApproveTransaction here
//! (the host's transaction stack opens it on its own, decide/host.rs).

use super::Decision;
use crate::machines::embedded_wallet::needs_approval;
use crate::machines::router::{NavigationMode, Route, RouteParams, View};
use crate::session::{Event, SessionState};

/// The oldest pending request the frame must have approved.
fn oldest_pending(state: &SessionState) -> Option<String> {
    state.requests.order.iter().filter_map(|id| state.requests.get(id)).find(|r| needs_approval(r)).map(|r| r.id.clone())
}

fn params(request_id: String) -> Option<RouteParams> {
    Some(RouteParams { request_id: Some(request_id), ..Default::default() })
}

/// The request the current view shows the approval of, when ApproveTransaction was shown by this rule.
fn shown(state: &SessionState) -> Option<String> {
    match state.router.current_route() {
        Some(Route { view: View::ApproveTransaction, params: Some(RouteParams { request_id: Some(id), .. }) }) => Some(id.clone()),
        _ => None,
    }
}

/// After every decision: a pending approval shows on ApproveTransaction while the modal is open (the
/// frame is placed over that view). The host's own ApproveTransaction already shows it.
pub(super) fn show(d: &mut Decision) {
    if !d.state.modal.is_open() || d.state.router.current() == View::ApproveTransaction {
        return;
    }
    if let Some(id) = oldest_pending(&d.state) {
        d.navigate(View::ApproveTransaction, params(id), NavigationMode::Push);
    }
}

/// A request ended: when the view shows its approval, the next pending approval takes its place, or
/// the view goes back to where the flow was (which then continues as it would for any wallet).
pub(super) fn request_ended(d: &mut Decision) {
    let Some(id) = shown(&d.state) else { return };
    if d.state.requests.get(&id).is_some() {
        return;
    }
    if let Some(next) = oldest_pending(&d.state) {
        d.navigate(View::ApproveTransaction, params(next), NavigationMode::Replace);
        return;
    }
    match d.state.router.previous() {
        Some(to) => d.push(Event::WentBack { to }),
        None => {
            // Pushed views always have one below; should the bounded stack have dropped it, the
            // view the modal opens on.
            let view = if d.state.connection.active_connected() { View::Account } else { View::Connect };
            d.navigate(view, None, NavigationMode::Reset);
        }
    }
}
