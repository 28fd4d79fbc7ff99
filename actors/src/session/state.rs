use std::sync::Arc;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::machines::activity::{self, ActivityState};
use crate::machines::balances::{self, BalancesState};
use crate::machines::connect_view::{self, ConnectView};
use crate::machines::connection::{self, ConnectionState};
use crate::machines::embedded_wallet::{self, EmbeddedState};
use crate::machines::host_requests::{self, HostRequestsState};
use crate::machines::modal::{self, ModalState};
use crate::machines::network_switch::{self, NetworkSwitchState};
use crate::machines::requests::{self, WalletRequests};
use crate::machines::router::{self, RouterState, View};
use crate::machines::send::{self, SendState};
use crate::machines::siwx::{self, SiwxState};
use crate::machines::toasts::{self, ToastQueue};
use crate::model::caip::CaipNetworkId;
use crate::model::connector::{Connector, RecentWallet};
use crate::model::networks::ChainDefinition;
use crate::model::options::SessionOptions;
use crate::session::Event;

/// Version of [`SessionState`]'s shape. Snapshots of another version are ignored (and rebuilt from
/// the log), so bump this whenever the state's serialized form changes.
pub const STATE_SCHEMA_VERSION: u32 = 11;

// Each top-level field is a `Region`: the unit the runtime re-serializes, hashes and diffs after a
// decision, and the unit sessions share. The larger regions sit behind an `Arc` and are changed
// copy-on-write (`Arc::make_mut`) only by the events that touch them (`Event::regions`), so a clone
// of the state costs a few reference counts, untouched regions keep their identity, and sessions
// whose region is equal can hold one copy of it (the runtime interns them). On the wire (and in the
// generated TypeScript) an `Arc<T>` is exactly a `T`. (A plain comment: doc comments go into
// client/src/generated.)
/// A session's whole state: the fold of its events. Mirrored by the browser, field for field.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    pub started: bool,
    pub project: String,
    pub origin: String,
    pub options: Arc<SessionOptions>,
    /// The networks the host app supports, resolved.
    pub networks: Arc<Vec<ChainDefinition>>,
    pub modal: Arc<ModalState>,
    pub router: Arc<RouterState>,
    pub connection: Arc<ConnectionState>,
    /// Derived: what the Connect view lists.
    pub connect_view: Arc<ConnectView>,
    pub toasts: Arc<ToastQueue>,
    pub requests: Arc<WalletRequests>,
    pub siwx: Arc<SiwxState>,
    /// The networks this gateway's chain service serves (from the session's start).
    pub chain_service: Arc<ChainServiceState>,
    pub balances: Arc<BalancesState>,
    pub activity: Arc<ActivityState>,
    pub send: Arc<SendState>,
    pub network_switch: Arc<NetworkSwitchState>,
    /// The host app's EIP-1193 requests and the transaction stack.
    pub host_requests: Arc<HostRequestsState>,
    /// The embedded wallet: the secure frame, email and social login, the embedded user.
    pub embedded: Arc<EmbeddedState>,
}

/// What the gateway's chain service serves, as the session was started with it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ChainServiceState {
    pub networks: Vec<CaipNetworkId>,
}

impl ChainServiceState {
    pub fn serves(&self, network: &CaipNetworkId) -> bool {
        self.networks.contains(network)
    }
}

/// A top-level field of [`SessionState`], in the order of its JSON key (canonical JSON sorts keys,
/// so the whole state's canonical form is its regions' canonical forms in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Region {
    Activity,
    Balances,
    ChainService,
    ConnectView,
    Connection,
    Embedded,
    HostRequests,
    Modal,
    NetworkSwitch,
    Networks,
    Options,
    Origin,
    Project,
    Requests,
    Router,
    Send,
    Siwx,
    Started,
    Toasts,
}

impl Region {
    /// Every region, in canonical (JSON key) order.
    pub const ALL: [Region; 19] = [
        Region::Activity,
        Region::Balances,
        Region::ChainService,
        Region::ConnectView,
        Region::Connection,
        Region::Embedded,
        Region::HostRequests,
        Region::Modal,
        Region::NetworkSwitch,
        Region::Networks,
        Region::Options,
        Region::Origin,
        Region::Project,
        Region::Requests,
        Region::Router,
        Region::Send,
        Region::Siwx,
        Region::Started,
        Region::Toasts,
    ];

    /// The region's key in the state's JSON.
    pub const fn key(self) -> &'static str {
        match self {
            Region::Activity => "activity",
            Region::Balances => "balances",
            Region::ChainService => "chainService",
            Region::HostRequests => "hostRequests",
            Region::NetworkSwitch => "networkSwitch",
            Region::Send => "send",
            Region::ConnectView => "connectView",
            Region::Connection => "connection",
            Region::Embedded => "embedded",
            Region::Modal => "modal",
            Region::Networks => "networks",
            Region::Options => "options",
            Region::Origin => "origin",
            Region::Project => "project",
            Region::Requests => "requests",
            Region::Router => "router",
            Region::Siwx => "siwx",
            Region::Started => "started",
            Region::Toasts => "toasts",
        }
    }

    /// The region named by a JSON key of the state.
    pub fn from_key(key: &str) -> Option<Region> {
        Region::ALL.into_iter().find(|r| r.key() == key)
    }

    pub const fn index(self) -> usize {
        self as usize
    }
}

/// A set of [`Region`]s.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Regions(u32);

impl Regions {
    pub const NONE: Regions = Regions(0);
    pub const ALL: Regions = Regions((1 << Region::ALL.len()) - 1);

    pub const fn of(regions: &[Region]) -> Regions {
        let mut bits = 0u32;
        let mut i = 0;
        while i < regions.len() {
            bits |= 1 << regions[i] as u32;
            i += 1;
        }
        Regions(bits)
    }

    pub const fn contains(self, region: Region) -> bool {
        self.0 & (1 << region as u32) != 0
    }

    pub const fn union(self, other: Regions) -> Regions {
        Regions(self.0 | other.0)
    }

    pub const fn without(self, region: Region) -> Regions {
        Regions(self.0 & !(1 << region as u32))
    }

    pub const fn intersects(self, other: Regions) -> bool {
        self.0 & other.0 != 0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The regions in the set, in canonical order.
    pub fn iter(self) -> impl Iterator<Item = Region> {
        Region::ALL.into_iter().filter(move |r| self.contains(*r))
    }
}

impl FromIterator<Region> for Regions {
    fn from_iter<I: IntoIterator<Item = Region>>(iter: I) -> Self {
        iter.into_iter().fold(Regions::NONE, |set, r| set.union(Regions::of(&[r])))
    }
}

/// The regions whose values the derived fields are computed from, per derived region.
const CONNECT_VIEW_INPUTS: Regions = Regions::of(&[Region::Options, Region::Connection]);
const CLOSABLE_INPUTS: Regions = Regions::of(&[Region::Options, Region::Router, Region::Connection, Region::Siwx]);

/// The regions `event` may change, derived fields included: the machines whose `evolve` reacts to
/// its type, plus every region derived from one of those. (`actors/tests/regions.rs` proves it over
/// random command sequences: the other regions stay byte for byte the same.)
pub fn regions_touched_by(event: &Event) -> Regions {
    let direct = match event {
        Event::SessionStarted { .. } => return Regions::ALL,
        Event::ModalOpened {} | Event::ModalClosed {} => Regions::of(&[Region::Modal]),
        Event::Navigated { .. } | Event::WentBack { .. } => Regions::of(&[Region::Router]),
        Event::ConnectorsUpdated { .. }
        | Event::ConnectStarted { .. }
        | Event::Connected { .. }
        | Event::ConnectFailed { .. }
        | Event::SyncStarted { .. }
        | Event::Synced { .. }
        | Event::SyncFailed { .. }
        | Event::AccountsChanged { .. }
        | Event::NetworkChanged { .. }
        | Event::Disconnected { .. }
        | Event::ActiveNamespaceChanged { .. }
        | Event::RecentWalletUsed { .. } => Regions::of(&[Region::Connection]),
        Event::ToastQueued { .. }
        | Event::ToastShown { .. }
        | Event::ToastDismissed { .. }
        | Event::ToastReshowScheduled { .. }
        | Event::ToastReshowCancelled {}
        | Event::ToastsCleared {}
        | Event::ToastPauseStarted { .. }
        | Event::ToastPauseEnded { .. } => Regions::of(&[Region::Toasts]),
        Event::WalletRequestIssued { .. }
        | Event::WalletRequestSettled { .. }
        | Event::WalletRequestCancelled { .. }
        | Event::WalletRequestsDrained {} => Regions::of(&[Region::Requests]),
        Event::SiwxChallengeIssued { .. }
        | Event::SiwxSignRequested { .. }
        | Event::SiwxDeclined { .. }
        | Event::SiwxContractCheckStarted { .. }
        | Event::SiwxVerificationFailed { .. }
        | Event::SiwxSignedIn { .. }
        | Event::SiwxCancelled {}
        | Event::SiwxSignedOut { .. } => Regions::of(&[Region::Siwx]),
        Event::BalancesRequested { .. } | Event::BalancesLoaded { .. } | Event::BalancesFailed { .. } | Event::BalancesCleared {} => {
            Regions::of(&[Region::Balances])
        }
        Event::ActivityRequested { .. } | Event::ActivityLoaded { .. } | Event::ActivityFailed { .. } | Event::ActivityCleared {} => {
            Regions::of(&[Region::Activity])
        }
        Event::SendFormChanged { .. }
        | Event::SendRejected { .. }
        | Event::SendSubmitted { .. }
        | Event::SolanaSendStarted { .. }
        | Event::SolanaTransferPrepared { .. }
        | Event::SolanaTransferSigned { .. }
        | Event::SendSucceeded { .. }
        | Event::SendFailed { .. }
        | Event::SendReset {}
        | Event::ReceiptRecorded { .. } => Regions::of(&[Region::Send]),
        Event::NetworkSwitchStarted { .. }
        | Event::NetworkSwitchFailed { .. }
        | Event::NetworkSwitchFinished {}
        | Event::NetworkSwitchCancelled {} => Regions::of(&[Region::NetworkSwitch]),
        Event::HostRequestReceived { .. }
        | Event::HostRequestSettled { .. }
        | Event::HostAnswersForgotten { .. }
        | Event::HostRequestsDrained {}
        | Event::TransactionStackPushed { .. }
        | Event::TransactionStackPopped { .. } => Regions::of(&[Region::HostRequests]),
        Event::EmbeddedFrameLoading { .. }
        | Event::EmbeddedFrameAnnounced { .. }
        | Event::EmbeddedFrameReady {}
        | Event::EmbeddedFrameFailed { .. }
        | Event::EmbeddedOtpRequested { .. }
        | Event::EmbeddedOtpSent { .. }
        | Event::EmbeddedOtpRejected { .. }
        | Event::EmbeddedSocialStarted { .. }
        | Event::EmbeddedSocialRedirected { .. }
        | Event::EmbeddedLoginFailed { .. }
        | Event::EmbeddedLoginCancelled {}
        | Event::EmbeddedLoginVerified { .. }
        | Event::EmbeddedWalletBound { .. }
        | Event::EmbeddedSignedOut { .. }
        | Event::EmbeddedSignOutDone {}
        | Event::EmbeddedEmailUpdateStarted { .. }
        | Event::EmbeddedEmailUpdateStepped { .. }
        | Event::EmbeddedEmailUpdated { .. }
        | Event::EmbeddedEmailUpdateFailed { .. }
        | Event::EmbeddedEmailUpdateFinished {} => Regions::of(&[Region::Embedded]),
        // Recorded for whoever replays the session; it moves no machine.
        Event::ClientErrorReported { .. } => Regions::NONE,
    };
    with_derived(direct)
}

/// `direct` plus the derived regions computed from it.
fn with_derived(direct: Regions) -> Regions {
    let mut touched = direct;
    if direct.intersects(CONNECT_VIEW_INPUTS) {
        touched = touched.union(Regions::of(&[Region::ConnectView]));
    }
    if direct.intersects(CLOSABLE_INPUTS) {
        touched = touched.union(Regions::of(&[Region::Modal]));
    }
    touched
}

/// The state after one more event. Total: never fails, ignores what does not apply.
///
/// Only the machines of the regions the event touches run, each on its own copy of its region
/// (copy-on-write), and derived fields are recomputed only from changed inputs; the result is the
/// same as running every machine and every derivation on every event (`evolve_every_machine`,
/// compared in `actors/tests/regions.rs`).
pub fn evolve(mut state: SessionState, event: &Event) -> SessionState {
    evolve_in_place(&mut state, event);
    state
}

/// [`evolve`] on a state the caller owns: no state is moved or built in its place (a decision
/// evolves its working state once per event it pushes).
pub fn evolve_in_place(state: &mut SessionState, event: &Event) {
    let touched = regions_touched_by(event);
    let connect_view_inputs = touched.intersects(CONNECT_VIEW_INPUTS).then(|| ConnectViewInputs::of(state));
    if let Event::SessionStarted { project, origin, options, networks, served_networks, .. } = event {
        state.started = true;
        state.project = project.clone();
        state.origin = origin.clone();
        state.options = Arc::new(options.clone());
        state.networks = Arc::new(networks.clone());
        state.chain_service = Arc::new(ChainServiceState { networks: served_networks.clone() });
    }
    if touched.contains(Region::Modal) {
        evolve_region(&mut state.modal, event, modal::evolve);
    }
    if touched.contains(Region::Router) {
        evolve_region(&mut state.router, event, router::evolve);
    }
    if touched.contains(Region::Connection) {
        evolve_region(&mut state.connection, event, connection::evolve);
        connection::derive(Arc::make_mut(&mut state.connection));
    }
    if touched.contains(Region::Toasts) {
        evolve_region(&mut state.toasts, event, toasts::evolve);
    }
    if touched.contains(Region::Requests) {
        evolve_region(&mut state.requests, event, requests::evolve);
    }
    if touched.contains(Region::Siwx) {
        evolve_region(&mut state.siwx, event, siwx::evolve);
    }
    if touched.contains(Region::Balances) {
        evolve_region(&mut state.balances, event, balances::evolve);
    }
    if touched.contains(Region::Activity) {
        evolve_region(&mut state.activity, event, activity::evolve);
    }
    if touched.contains(Region::Send) {
        evolve_region(&mut state.send, event, send::evolve);
    }
    if touched.contains(Region::NetworkSwitch) {
        evolve_region(&mut state.network_switch, event, network_switch::evolve);
    }
    if touched.contains(Region::HostRequests) {
        evolve_region(&mut state.host_requests, event, host_requests::evolve);
    }
    if touched.contains(Region::Embedded) {
        evolve_region(&mut state.embedded, event, embedded_wallet::evolve);
    }
    derive(state, touched, connect_view_inputs);
}

/// Runs a machine's `evolve` on the session's own copy of its region.
fn evolve_region<T: Clone + Default>(region: &mut Arc<T>, event: &Event, evolve: fn(T, &Event) -> T) {
    let own = Arc::make_mut(region);
    *own = evolve(std::mem::take(own), event);
}

/// What the Connect view is derived from, taken before an event so that the view is derived again
/// only when one of them changed: the shared values by pointer (an event that changes one replaces
/// it, never writes into it), the flag by value. Most connection events (a connect, a disconnect)
/// change none of them.
struct ConnectViewInputs {
    options: Arc<SessionOptions>,
    connectors: Arc<[Connector]>,
    recent_wallets: Arc<[RecentWallet]>,
    walletconnect_connected: bool,
}

impl ConnectViewInputs {
    fn of(state: &SessionState) -> Self {
        Self {
            options: state.options.clone(),
            connectors: state.connection.connectors.clone(),
            recent_wallets: state.connection.recent_wallets.clone(),
            walletconnect_connected: state.connection.holds_a_namespace(connect_view::WALLETCONNECT_CONNECTOR_ID),
        }
    }

    fn same_as(&self, now: &ConnectViewInputs) -> bool {
        Arc::ptr_eq(&self.options, &now.options)
            && Arc::ptr_eq(&self.connectors, &now.connectors)
            && Arc::ptr_eq(&self.recent_wallets, &now.recent_wallets)
            && self.walletconnect_connected == now.walletconnect_connected
    }

    fn connect_view(&self) -> ConnectView {
        connect_view::derive(&self.options, &self.connectors, &self.recent_wallets, self.walletconnect_connected)
    }
}

/// Recomputes the fields that are functions of the rest of the state, from the regions that
/// changed (`connect_view_before`: the Connect view's inputs before the event, when it touched
/// them); a derived region is written (and so copied) only when its value changes.
fn derive(state: &mut SessionState, changed: Regions, connect_view_before: Option<ConnectViewInputs>) {
    if let Some(before) = connect_view_before {
        let now = ConnectViewInputs::of(state);
        if !before.same_as(&now) {
            let view = now.connect_view();
            if *state.connect_view != view {
                state.connect_view = Arc::new(view);
            }
        }
    }
    if changed.intersects(CLOSABLE_INPUTS) {
        let closable = closable(state);
        if state.modal.closable != closable {
            Arc::make_mut(&mut state.modal).closable = closable;
        }
    }
}

/// `evolve` as it was before regions: every machine and every derivation on every event. The
/// reference the region-aware `evolve` is checked against; not used at run time.
#[doc(hidden)]
pub fn evolve_every_machine(mut state: SessionState, event: &Event) -> SessionState {
    if let Event::SessionStarted { project, origin, options, networks, served_networks, .. } = event {
        state.started = true;
        state.project = project.clone();
        state.origin = origin.clone();
        state.options = Arc::new(options.clone());
        state.networks = Arc::new(networks.clone());
        state.chain_service = Arc::new(ChainServiceState { networks: served_networks.clone() });
    }
    evolve_region(&mut state.modal, event, modal::evolve);
    evolve_region(&mut state.router, event, router::evolve);
    evolve_region(&mut state.connection, event, connection::evolve);
    evolve_region(&mut state.toasts, event, toasts::evolve);
    evolve_region(&mut state.requests, event, requests::evolve);
    evolve_region(&mut state.siwx, event, siwx::evolve);
    evolve_region(&mut state.balances, event, balances::evolve);
    evolve_region(&mut state.activity, event, activity::evolve);
    evolve_region(&mut state.send, event, send::evolve);
    evolve_region(&mut state.network_switch, event, network_switch::evolve);
    evolve_region(&mut state.host_requests, event, host_requests::evolve);
    evolve_region(&mut state.embedded, event, embedded_wallet::evolve);
    connection::derive(Arc::make_mut(&mut state.connection));
    state.connect_view = Arc::new(ConnectViewInputs::of(&state).connect_view());
    let closable = closable(&state);
    Arc::make_mut(&mut state.modal).closable = closable;
    state
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
        [self.toasts.next_deadline(), self.siwx.next_deadline(), self.host_requests.next_deadline(), self.embedded.next_deadline()]
            .into_iter()
            .flatten()
            .min()
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

/// The connected account of the active namespace when it is eip155 or solana: what balances and
/// sends are for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainAccount {
    pub namespace: crate::model::caip::Namespace,
    pub address: String,
    pub network: crate::model::networks::NetworkRef,
    pub connector_id: String,
}

/// The connected EVM account of the active namespace: what activity and network switches are for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvmAccount {
    pub address: String,
    pub network: crate::model::networks::NetworkRef,
    pub connector_id: String,
}

impl SessionState {
    /// The active namespace's connected eip155 account, if that is what is connected.
    pub fn evm_account(&self) -> Option<EvmAccount> {
        let ns = self.connection.active_namespace.filter(|ns| *ns == crate::model::caip::Namespace::Eip155)?;
        let conn = self.connection.namespace(ns);
        if conn.status != crate::machines::connection::ConnectionStatus::Connected {
            return None;
        }
        Some(EvmAccount { address: conn.address.clone()?, network: conn.network.clone()?, connector_id: conn.connector_id.clone()? })
    }

    /// The active namespace's connected account when it is one with balances and send (eip155 or
    /// solana; spec §9).
    pub fn chain_account(&self) -> Option<ChainAccount> {
        use crate::model::caip::Namespace;
        let ns = self.connection.active_namespace.filter(|ns| matches!(ns, Namespace::Eip155 | Namespace::Solana))?;
        let conn = self.connection.namespace(ns);
        if conn.status != crate::machines::connection::ConnectionStatus::Connected {
            return None;
        }
        Some(ChainAccount {
            namespace: ns,
            address: conn.address.clone()?,
            network: conn.network.clone()?,
            connector_id: conn.connector_id.clone()?,
        })
    }

    /// Whether `network` is one of the session's networks and the chain service serves it.
    pub fn chain_supported(&self, network: &crate::model::networks::NetworkRef) -> bool {
        network.supported && self.chain_service.serves(&network.caip_network_id)
    }
}
