//! The session's decisions: commands in, events out. Pure: time and options come from `Ctx`.
//! Decisions that span machines live here; single-machine rules live in `crate::machines`.

use crate::decider::Ctx;
use crate::machines::connection::{self, ConnectionStatus};
use crate::machines::embedded_login;
use crate::machines::requests::{self, RequestKind, WalletOutcome, WalletRequest};
use crate::machines::router::{self, NavigationMode, RouteParams, View};
use crate::machines::toasts::{self, PauseReason, ToastRequest, ToastVariant, MAX_MESSAGE_CHARS};
use crate::model::caip::Namespace;
use crate::model::connector::RecentWallet;
use crate::session::{client_error, evolve, sign_in, ClientCommand, Command, DomainError, Event, SessionState};

pub const CONNECTION_REJECTED: &str = "Connection rejected";
pub const MODAL_CLOSED: &str = "Modal closed";
pub const FAILED_TO_CONNECT: &str = "Failed to connect";
pub const UNKNOWN_ERROR: &str = "Unknown error";

/// Events accumulated by a decision, with the state they lead to, so each step of a decision sees
/// the effect of the previous ones (ids, queue lengths).
pub(super) struct Decision {
    pub(super) state: SessionState,
    events: Vec<Event>,
    pub(super) now_ms: u64,
    /// `Ctx::nonce`: for at most one sign-in message per decision.
    pub(super) nonce: String,
}

impl Decision {
    pub(super) fn new(state: &SessionState, ctx: &Ctx) -> Self {
        Self { state: state.clone(), events: Vec::new(), now_ms: ctx.now_ms, nonce: ctx.nonce.to_string() }
    }

    pub(super) fn push(&mut self, event: Event) {
        self.state = evolve(std::mem::take(&mut self.state), &event);
        self.events.push(event);
    }

    pub(super) fn extend(&mut self, events: impl IntoIterator<Item = Event>) {
        for e in events {
            self.push(e);
        }
    }

    pub(super) fn navigate(&mut self, view: View, params: Option<RouteParams>, mode: NavigationMode) {
        if let Some(e) = router::navigate(&self.state.router, view, params, mode) {
            self.push(e);
        }
    }

    pub(super) fn toast(&mut self, message: &str, variant: ToastVariant) {
        let events = toasts::show(&self.state.toasts, ToastRequest::new(message, variant), self.now_ms);
        self.extend(events);
    }

    pub(super) fn open_modal(&mut self) {
        if !self.state.modal.is_open() {
            self.push(Event::ModalOpened {});
        }
    }

    pub(super) fn close_modal(&mut self) {
        if self.state.modal.is_open() {
            self.push(Event::ModalClosed {});
        }
    }

    /// Ends requests (settled or cancelled by `event`) and marks the machine idle when none is left.
    pub(super) fn end_request(&mut self, event: Event) {
        let id = match &event {
            Event::WalletRequestSettled { id, .. } | Event::WalletRequestCancelled { id, .. } => id.clone(),
            _ => unreachable!("end_request takes a settle or cancel event"),
        };
        let drained = requests::drained_after(&self.state.requests, &[id.as_str()]);
        self.push(event);
        if let Some(drained) = drained {
            self.push(drained);
        }
    }

    pub(super) fn issue_request(&mut self, connector_id: &str, namespace: Namespace, kind: RequestKind) -> Result<String, DomainError> {
        if self.state.requests.order.len() >= requests::MAX_PENDING {
            return Err(DomainError::TooMany { what: "pending wallet requests".into(), max: requests::MAX_PENDING });
        }
        let id = self.state.requests.next_request_id();
        self.push(Event::WalletRequestIssued {
            request: WalletRequest {
                id: id.clone(),
                connector_id: connector_id.to_string(),
                namespace,
                kind,
                issued_ms: self.now_ms,
            },
        });
        Ok(id)
    }

    /// Abandons the connect or sync a namespace is waiting for.
    pub(super) fn abandon_pending(&mut self, namespace: Namespace, message: &str) {
        let ns = self.state.connection.namespace(namespace).clone();
        if ns.status != ConnectionStatus::Connecting {
            return;
        }
        if let Some(request_id) = &ns.pending_request {
            if self.state.requests.get(request_id).is_some() {
                self.end_request(Event::WalletRequestCancelled { id: request_id.clone(), reason: message.into() });
            }
        }
        self.push(Event::ConnectFailed {
            namespace,
            connector_id: ns.connector_id.unwrap_or_default(),
            code: None,
            message: message.into(),
        });
    }

    pub(super) fn finish(self) -> Vec<Event> {
        self.events
    }
}

pub fn decide(state: &SessionState, command: Command, ctx: &Ctx) -> Result<Vec<Event>, DomainError> {
    match command {
        Command::Start { project, origin, options } => {
            if state.started {
                return Err(DomainError::AlreadyStarted);
            }
            let networks = options.validate().map_err(DomainError::InvalidOptions)?;
            Ok(vec![Event::SessionStarted { project, origin, options, networks }])
        }
        _ if !state.started => Err(DomainError::NotStarted),
        Command::Tick => {
            let mut d = Decision::new(state, ctx);
            let events = toasts::tick(&d.state.toasts, ctx.now_ms);
            d.extend(events);
            sign_in::expire_sessions(&mut d);
            Ok(d.finish())
        }
        Command::SiwxContractChecked { nonce, verdict } => {
            let mut d = Decision::new(state, ctx);
            sign_in::contract_checked(&mut d, &nonce, verdict);
            Ok(d.finish())
        }
        Command::Client(command) => decide_client(state, command, ctx),
    }
}

fn decide_client(state: &SessionState, command: ClientCommand, ctx: &Ctx) -> Result<Vec<Event>, DomainError> {
    let now = ctx.now_ms;
    let mut d = Decision::new(state, ctx);
    match command {
        ClientCommand::PageLoaded {} => page_loaded(&mut d)?,
        ClientCommand::OpenModal { view } => {
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
        }
        ClientCommand::CloseModal {} => {
            if d.state.modal.is_open() {
                if !d.state.modal.closable {
                    return Err(DomainError::CloseDisabled);
                }
                d.close_modal();
                reject_pending_connects(&mut d, MODAL_CLOSED);
            }
        }
        ClientCommand::Navigate { view, params, replace } => {
            check_navigable(&d.state, view)?;
            let mode = if replace == Some(true) { NavigationMode::Replace } else { NavigationMode::Push };
            d.navigate(view, params, mode);
        }
        ClientCommand::GoBack {} => {
            let to = d.state.router.previous().ok_or(DomainError::NothingToGoBackTo)?;
            d.push(Event::WentBack { to });
        }
        ClientCommand::ReportWallets { wallets } => {
            let connectors = connection::connectors_from(&wallets, &d.state.options)?;
            if connectors != d.state.connection.connectors {
                d.push(Event::ConnectorsUpdated { connectors });
            }
        }
        ClientCommand::SelectConnector { connector_id } => select_connector(&mut d, &connector_id)?,
        ClientCommand::ConnectEmail { email } => {
            let message = embedded_login::connect_email(&d.state.options.features, &email)?;
            d.toast(message, ToastVariant::Error);
        }
        ClientCommand::ConnectSocial { provider } => {
            let message = embedded_login::connect_social(&d.state.options.features, provider)?;
            d.toast(message, ToastVariant::Error);
        }
        ClientCommand::Disconnect { namespace } => {
            let targets: Vec<Namespace> = match namespace {
                Some(ns) if d.state.connection.namespace(ns).status != ConnectionStatus::Disconnected => vec![ns],
                Some(_) => return Err(DomainError::NotConnected),
                None => Namespace::ALL
                    .into_iter()
                    .filter(|ns| d.state.connection.namespace(*ns).status != ConnectionStatus::Disconnected)
                    .collect(),
            };
            if targets.is_empty() {
                return Err(DomainError::NotConnected);
            }
            for ns in targets {
                disconnect(&mut d, ns, "user");
            }
            d.close_modal();
            d.navigate(View::Connect, None, NavigationMode::Reset);
        }
        ClientCommand::ResolveWalletRequest { request_id, outcome } => resolve_request(&mut d, &request_id, outcome)?,
        ClientCommand::WalletAccountsChanged { connector_id, accounts } => {
            for ns in d.state.connection.namespaces_of(&connector_id) {
                if d.state.connection.namespace(ns).status != ConnectionStatus::Connected {
                    continue;
                }
                if accounts.is_empty() {
                    disconnect(&mut d, ns, "wallet");
                    if d.state.router.current() == View::Account {
                        d.navigate(View::Connect, None, NavigationMode::Reset);
                    }
                    continue;
                }
                if let Some(bad) = accounts.iter().find(|a| !ns.is_valid_address(a)) {
                    return Err(DomainError::InvalidInput { field: "accounts".into(), message: format!("{bad:?} is not a {ns} address") });
                }
                let accounts: Vec<connection::Account> = accounts
                    .iter()
                    .map(|a| connection::Account { address: a.clone(), account_type: crate::model::options::AccountType::Eoa })
                    .collect();
                if accounts != d.state.connection.namespace(ns).accounts {
                    d.push(Event::AccountsChanged { namespace: ns, accounts });
                    sign_in::request_if_needed(&mut d);
                }
            }
        }
        ClientCommand::WalletChainChanged { connector_id, chain_id } => {
            for ns in d.state.connection.namespaces_of(&connector_id) {
                if d.state.connection.namespace(ns).status != ConnectionStatus::Connected {
                    continue;
                }
                let network = connection::resolve_network(ns, &chain_id, &d.state.networks)
                    .map_err(|message| DomainError::InvalidInput { field: "chainId".into(), message })?;
                if Some(&network) != d.state.connection.namespace(ns).network.as_ref() {
                    d.push(Event::NetworkChanged { namespace: ns, network });
                    sign_in::request_if_needed(&mut d);
                }
            }
        }
        ClientCommand::WalletDisconnected { connector_id } => {
            for ns in d.state.connection.namespaces_of(&connector_id) {
                disconnect(&mut d, ns, "wallet");
            }
        }
        ClientCommand::ShowToast { message, variant, duration_ms, persistent } => {
            let message = message.trim();
            if message.is_empty() || message.chars().count() > MAX_MESSAGE_CHARS {
                return Err(DomainError::InvalidInput { field: "message".into(), message: format!("1 to {MAX_MESSAGE_CHARS} characters") });
            }
            if duration_ms.is_some_and(|ms| !(100..=60_000).contains(&ms)) {
                return Err(DomainError::InvalidInput { field: "durationMs".into(), message: "100 to 60000".into() });
            }
            let request = ToastRequest { message: message.into(), variant, duration_ms, persistent: persistent == Some(true) };
            let events = toasts::show(&d.state.toasts, request, now);
            d.extend(events);
        }
        ClientCommand::DismissToast { id } => {
            let events = toasts::dismiss(&d.state.toasts, &id, toasts::ToastDismissal::Closed, now)?;
            d.extend(events);
        }
        ClientCommand::SwipeToast { id, distance_px, elapsed_ms } => {
            let events = toasts::swipe(&d.state.toasts, &id, distance_px, elapsed_ms, now)?;
            d.extend(events);
        }
        ClientCommand::SetToastHover { hovered } => {
            let events = toasts::set_pause(&d.state.toasts, PauseReason::Hover, hovered, now);
            d.extend(events);
        }
        ClientCommand::SetToastInteraction { active } => {
            let events = toasts::set_pause(&d.state.toasts, PauseReason::Interaction, active, now);
            d.extend(events);
        }
        ClientCommand::SetPageVisibility { hidden } => {
            let events = toasts::set_pause(&d.state.toasts, PauseReason::PageHidden, hidden, now);
            d.extend(events);
        }
        ClientCommand::SiwxSign {} => sign_in::sign(&mut d)?,
        ClientCommand::SiwxCancel {} => sign_in::cancel(&mut d)?,
        ClientCommand::SiwxSignOut { account } => sign_in::sign_out(&mut d, account)?,
        ClientCommand::ReportClientError { kind, detail } => d.push(client_error::report(kind, &detail)?),
    }
    Ok(d.finish())
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

/// A new page: requests the previous page made can no longer be answered, and stored connections are
/// re-synced without prompting (spec: a stored `connected` becomes `connecting`, resolved by a sync).
fn page_loaded(d: &mut Decision) -> Result<(), DomainError> {
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

fn select_connector(d: &mut Decision, connector_id: &str) -> Result<(), DomainError> {
    let connector = d
        .state
        .connection
        .connector(connector_id)
        .cloned()
        .ok_or_else(|| DomainError::UnknownConnector(connector_id.to_string()))?;
    let namespace = connector.namespaces.first().copied().unwrap_or(Namespace::Eip155);
    match d.state.connection.namespace(namespace).status {
        ConnectionStatus::Connected => return Err(DomainError::AlreadyConnected(namespace)),
        ConnectionStatus::Connecting => d.abandon_pending(namespace, "Connection cancelled"),
        ConnectionStatus::Disconnected => {}
    }
    let request_id = d.issue_request(connector_id, namespace, RequestKind::Connect)?;
    d.push(Event::ConnectStarted { namespace, connector_id: connector_id.to_string(), request_id });
    d.open_modal();
    let params = RouteParams { connector_id: Some(connector_id.to_string()), ..Default::default() };
    d.navigate(View::ConnectingWallet, Some(params), NavigationMode::Push);
    Ok(())
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

/// Spec: disconnecting resets account and network state and the status becomes disconnected.
pub(super) fn disconnect(d: &mut Decision, namespace: Namespace, reason: &str) {
    let conn = d.state.connection.namespace(namespace).clone();
    if conn.status == ConnectionStatus::Disconnected {
        return;
    }
    if let Some(request_id) = conn.pending_request {
        if d.state.requests.get(&request_id).is_some() {
            d.end_request(Event::WalletRequestCancelled { id: request_id, reason: "disconnected".into() });
        }
    }
    sign_in::abandon_challenge_of(d, namespace);
    d.push(Event::Disconnected { namespace, reason: reason.into() });
    sign_in::sign_out_on_disconnect(d, namespace);
}

pub(super) fn wallet_error_message(outcome: &WalletOutcome) -> String {
    match outcome {
        WalletOutcome::Error { message, .. } if !message.trim().is_empty() => message.trim().chars().take(200).collect(),
        _ => UNKNOWN_ERROR.into(),
    }
}

fn resolve_request(d: &mut Decision, request_id: &str, outcome: WalletOutcome) -> Result<(), DomainError> {
    let request = d.state.requests.get(request_id).cloned().ok_or_else(|| DomainError::UnknownRequest(request_id.to_string()))?;
    d.end_request(Event::WalletRequestSettled { id: request.id.clone(), outcome: outcome.clone() });
    let ns = request.namespace;
    let conn = d.state.connection.namespace(ns).clone();
    let waiting = conn.status == ConnectionStatus::Connecting && conn.pending_request.as_deref() == Some(request_id);
    match request.kind {
        RequestKind::Connect if waiting => {
            let code = match &outcome {
                WalletOutcome::Error { code, .. } => Some(*code),
                WalletOutcome::Ok { .. } => None,
            };
            let answer = match &outcome {
                WalletOutcome::Ok { result } => connection::read_wallet_accounts(ns, result, &d.state.networks)
                    .and_then(|(accounts, network)| {
                        if accounts.is_empty() { Err("the wallet returned no account".into()) } else { Ok((accounts, network)) }
                    })
                    .map_err(|_| FAILED_TO_CONNECT.to_string()),
                e if e.is_user_rejection() => Err(CONNECTION_REJECTED.to_string()),
                e => Err(wallet_error_message(e)),
            };
            match answer {
                Ok((accounts, network)) => {
                    let connector = d.state.connection.connector(&request.connector_id).cloned();
                    d.push(Event::Connected {
                        namespace: ns,
                        connector_id: request.connector_id.clone(),
                        accounts,
                        network,
                    });
                    d.push(Event::RecentWalletUsed {
                        wallet: RecentWallet {
                            id: request.connector_id.clone(),
                            rdns: connector.as_ref().and_then(|c| c.rdns.clone()),
                            name: connector.map(|c| c.name).unwrap_or_else(|| request.connector_id.clone()),
                        },
                    });
                    // Spec: connecting with no sign-in session opens SIWXSignMessage.
                    if !sign_in::request_if_needed(d) {
                        d.close_modal();
                        d.navigate(View::Account, None, NavigationMode::Reset);
                    }
                }
                Err(message) => {
                    d.push(Event::ConnectFailed { namespace: ns, connector_id: request.connector_id.clone(), code, message: message.clone() });
                    d.toast(&message, ToastVariant::Error);
                    d.navigate(View::Connect, None, NavigationMode::Reset);
                }
            }
        }
        RequestKind::Sync if waiting => {
            let synced = match &outcome {
                WalletOutcome::Ok { result } => connection::read_wallet_accounts(ns, result, &d.state.networks)
                    .and_then(|(accounts, network)| {
                        if accounts.is_empty() { Err("the wallet no longer grants an account".into()) } else { Ok((accounts, network)) }
                    }),
                e => Err(wallet_error_message(e)),
            };
            match synced {
                Ok((accounts, network)) => d.push(Event::Synced { namespace: ns, accounts, network }),
                Err(message) => d.push(Event::SyncFailed { namespace: ns, message }),
            }
        }
        RequestKind::SignMessage { .. } => sign_in::signature_received(d, &request, outcome),
        // A late answer to a request the session stopped waiting for, or an RPC result: recorded.
        _ => {}
    }
    Ok(())
}
