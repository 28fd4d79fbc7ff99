use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::machines::connect_view::{self, ConnectView};
use crate::machines::connection::{self, ConnectionState};
use crate::machines::modal::{self, ModalState};
use crate::machines::requests::{self, WalletRequests};
use crate::machines::router::{self, RouterState, View};
use crate::machines::siwx::{self, SiwxState};
use crate::machines::toasts::{self, ToastQueue};
use crate::model::networks::ChainDefinition;
use crate::model::options::SessionOptions;
use crate::session::Event;

/// Version of [`SessionState`]'s shape. Snapshots of another version are ignored (and rebuilt from
/// the log), so bump this whenever the state's serialized form changes.
pub const STATE_SCHEMA_VERSION: u32 = 4;

/// A session's whole state: the fold of its events. Mirrored by the browser, field for field.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    pub started: bool,
    pub project: String,
    pub origin: String,
    pub options: SessionOptions,
    /// The networks the host app supports, resolved.
    pub networks: Vec<ChainDefinition>,
    pub modal: ModalState,
    pub router: RouterState,
    pub connection: ConnectionState,
    /// Derived: what the Connect view lists.
    pub connect_view: ConnectView,
    pub toasts: ToastQueue,
    pub requests: WalletRequests,
    pub siwx: SiwxState,
}

/// The state after one more event. Total: never fails, ignores what does not apply.
pub fn evolve(mut state: SessionState, event: &Event) -> SessionState {
    if let Event::SessionStarted { project, origin, options, networks } = event {
        state.started = true;
        state.project = project.clone();
        state.origin = origin.clone();
        state.options = options.clone();
        state.networks = networks.clone();
    }
    state.modal = modal::evolve(std::mem::take(&mut state.modal), event);
    state.router = router::evolve(std::mem::take(&mut state.router), event);
    state.connection = connection::evolve(std::mem::take(&mut state.connection), event);
    state.toasts = toasts::evolve(std::mem::take(&mut state.toasts), event);
    state.requests = requests::evolve(std::mem::take(&mut state.requests), event);
    state.siwx = siwx::evolve(std::mem::take(&mut state.siwx), event);
    derive(&mut state);
    state
}

/// Recomputes the fields that are functions of the rest of the state.
fn derive(state: &mut SessionState) {
    connection::derive(&mut state.connection);
    state.connect_view = connect_view::derive(
        &state.options,
        &state.connection.connectors,
        &state.connection.recent_wallets,
        state.connection.namespaces_of("walletConnect").iter().any(|_| true),
    );
    state.modal.closable = closable(state);
}

/// Spec: closing is disabled on ApproveTransaction or SIWXSignMessage when sign-in is required and no
/// sign-in session exists.
fn closable(state: &SessionState) -> bool {
    let sign_in_required = state.options.sign_in().is_some_and(|s| s.required);
    let guarded_view = matches!(state.router.current(), View::ApproveTransaction | View::SiwxSignMessage);
    !(sign_in_required && guarded_view && !has_sign_in_session(state))
}

/// Whether the active account holds a sign-in session (expired ones are removed by a deadline).
pub fn has_sign_in_session(state: &SessionState) -> bool {
    state.active_caip_address().is_some_and(|a| state.siwx.session_for(&a).is_some())
}

impl SessionState {
    /// The earliest deadline in the state, when the runtime must send `Tick`.
    pub fn next_deadline(&self) -> Option<u64> {
        [self.toasts.next_deadline(), self.siwx.next_deadline()].into_iter().flatten().min()
    }

    /// The active namespace's account as CAIP-10 (`eip155:1:0xAb…`), when connected.
    pub fn active_caip_address(&self) -> Option<String> {
        let ns = self.connection.active_namespace?;
        let conn = self.connection.namespace(ns);
        if conn.status != crate::machines::connection::ConnectionStatus::Connected {
            return None;
        }
        Some(format!("{}:{}", conn.network.as_ref()?.caip_network_id, conn.address.as_ref()?))
    }
}
