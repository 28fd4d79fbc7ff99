//! The router: a stack of views inside the modal. There are no URL routes; the top of the stack is
//! what the modal shows.

use serde::{Deserialize, Serialize};
use strum::{IntoStaticStr, VariantArray};
use ts_rs::TS;

use crate::chart::{ANY_STATE, Statechart, region, tg};
use crate::model::caip::{CaipNetworkId, Namespace};
use crate::session::Event;

pub const ID: &str = "router";

/// Views of the modal (spec section 2) and the sub-views the flows need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, TS, IntoStaticStr, VariantArray)]
pub enum View {
    #[default]
    Connect,
    /// Waiting for the chosen wallet to answer the connect request.
    ConnectingWallet,
    AllWallets,
    Networks,
    Account,
    SwitchNetwork,
    SwitchActiveChain,
    #[serde(rename = "SIWXSignMessage")]
    #[strum(serialize = "SIWXSignMessage")]
    SiwxSignMessage,
    ApproveTransaction,
    UpdateEmailWallet,
    /// Email login: the code mailed to verify a new device.
    EmailVerifyDevice,
    /// Email login: the code mailed to log in.
    EmailVerifyOtp,
    /// Social login: the popup is open.
    ConnectingSocial,
    /// Farcaster login: the relay's URL as a link and a QR code, no popup (spec §2).
    ConnectingFarcaster,
    /// Email change: the code mailed to the current address.
    UpdateEmailPrimaryOtp,
    /// Email change: the code mailed to the new address.
    UpdateEmailSecondaryOtp,
    Swap,
    /// A wallet feature of the Account view (spec §9 wallet features): the send form.
    Send,
    /// A wallet feature of the Account view: the address with a copy button and a QR code.
    Receive,
}

impl View {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Views a visitor may navigate to directly. The others are entered only by a flow the server
    /// runs (a connect in progress, a sign-in request, a transaction to approve...).
    pub fn is_navigable(self) -> bool {
        matches!(
            self,
            View::Connect
                | View::AllWallets
                | View::Networks
                | View::Account
                | View::Swap
                | View::Send
                | View::Receive
                | View::UpdateEmailWallet
        )
    }
}

/// Parameters of the views that take them (spec: SwitchActiveChain, UpdateEmailWallet), and the
/// connector a ConnectingWallet view is waiting for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RouteParams {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub connector_id: Option<String>,
    /// SwitchActiveChain: the namespace to switch to. Connect (after SwitchActiveChain): the
    /// namespace whose wallets it lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub switch_to_chain: Option<Namespace>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub navigate_to: Option<View>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub navigate_with_replace: Option<bool>,
    /// SwitchActiveChain: the network the switch leads to (the session's first in that namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub network: Option<CaipNetworkId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub redirect_view: Option<View>,
    /// ApproveTransaction shown for the embedded wallet (connector `auth`): the wallet request whose
    /// approval the secure frame draws over the view. Absent on the host's transaction stack's view.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub request_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    pub view: View,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub params: Option<RouteParams>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum NavigationMode {
    /// On top of the current view; Back returns to it.
    Push,
    /// Instead of the current view.
    Replace,
    /// The new view becomes the only one.
    Reset,
}

/// The stack never grows past this; pushing beyond it drops the oldest entry.
pub const MAX_DEPTH: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct RouterState {
    /// The view shown: the top of the stack.
    pub current: View,
    /// Bottom first; the last entry is the current view. Never empty.
    pub stack: Vec<Route>,
}

impl Default for RouterState {
    fn default() -> Self {
        Self { current: View::Connect, stack: vec![Route { view: View::Connect, params: None }] }
    }
}

impl RouterState {
    pub fn current(&self) -> View {
        self.stack.last().map_or(View::Connect, |r| r.view)
    }

    pub fn current_route(&self) -> Option<&Route> {
        self.stack.last()
    }

    /// The view Back would return to.
    pub fn previous(&self) -> Option<View> {
        self.stack.len().checked_sub(2).map(|i| self.stack[i].view)
    }
}

/// The event that shows `view` (unless it is already the only view and `mode` is a reset).
pub fn navigate(state: &RouterState, view: View, params: Option<RouteParams>, mode: NavigationMode) -> Option<Event> {
    let unchanged = state.current() == view
        && state.current_route().and_then(|r| r.params.as_ref()) == params.as_ref()
        && (mode != NavigationMode::Reset || state.stack.len() == 1);
    (!unchanged).then_some(Event::Navigated { view, params, mode })
}

pub fn evolve(mut state: RouterState, event: &Event) -> RouterState {
    match event {
        Event::Navigated { view, params, mode } => {
            let route = Route { view: *view, params: params.clone() };
            match mode {
                NavigationMode::Push => {
                    state.stack.push(route);
                    if state.stack.len() > MAX_DEPTH {
                        state.stack.remove(0);
                    }
                }
                NavigationMode::Replace => {
                    state.stack.pop();
                    state.stack.push(route);
                }
                NavigationMode::Reset => state.stack = vec![route],
            }
        }
        Event::WentBack { .. } => {
            if state.stack.len() > 1 {
                state.stack.pop();
            }
        }
        _ => {}
    }
    state.current = state.stack.last().map_or(View::Connect, |r| r.view);
    state
}

pub fn chart() -> Statechart {
    let names: Vec<&str> = View::VARIANTS.iter().map(|v| v.name()).collect();
    let mut transitions = Vec::new();
    for view in &names {
        transitions.push(tg(ANY_STATE, "Navigated", view, "/view", *view));
        transitions.push(tg(ANY_STATE, "WentBack", view, "/to", *view));
    }
    Statechart {
        id: ID.into(),
        description: "Which view the modal shows: the top of a stack of views.".into(),
        regions: vec![region(ID, "/router/current", View::Connect.name(), &names, transitions)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_replace_reset_and_back() {
        let s = RouterState::default();
        let s = evolve(s, &Event::Navigated { view: View::AllWallets, params: None, mode: NavigationMode::Push });
        assert_eq!(s.current(), View::AllWallets);
        assert_eq!(s.previous(), Some(View::Connect));
        let s = evolve(s, &Event::Navigated { view: View::Networks, params: None, mode: NavigationMode::Replace });
        assert_eq!(s.stack.len(), 2);
        let s = evolve(s, &Event::WentBack { to: View::Connect });
        assert_eq!(s.current(), View::Connect);
        let s = evolve(s, &Event::Navigated { view: View::Account, params: None, mode: NavigationMode::Reset });
        assert_eq!(s.stack.len(), 1);
    }

    #[test]
    fn the_stack_is_bounded() {
        let mut s = RouterState::default();
        for _ in 0..100 {
            s = evolve(s, &Event::Navigated { view: View::Networks, params: None, mode: NavigationMode::Push });
        }
        assert_eq!(s.stack.len(), MAX_DEPTH);
    }

    #[test]
    fn navigating_to_the_current_view_is_no_event() {
        assert_eq!(navigate(&RouterState::default(), View::Connect, None, NavigationMode::Push), None);
        assert!(navigate(&RouterState::default(), View::Account, None, NavigationMode::Push).is_some());
    }
}
