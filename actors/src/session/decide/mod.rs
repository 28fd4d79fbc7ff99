//! The session's decisions: commands in, events out. Pure: time and options come from `Ctx`.
//! Decisions that span machines live here, one module per command group; single-machine rules live
//! in `crate::machines`.
//!
//! - [`modal`]: page loads, opening and closing the modal, navigation.
//! - [`wallets`]: discovered wallets, connecting, the wallet's answers and events, disconnecting.
//! - [`toasts`]: showing, dismissing and pausing toasts.
//! - [`embedded`]: the embedded wallet: secure frame, email and social login, email change.
//! - [`sign_in`]: SIWX challenges, signatures, verification and sign-in sessions.
//! - [`account`]: balances and activity of the connected EVM account (chain effects).
//! - [`send`]: the Send view's form, validation, transfer and receipt.
//! - [`network`]: switching the connected wallet's chain (and adding it on 4902).
//! - [`host`]: the host app's EIP-1193 requests (chain reads, wallet calls, the transaction stack).
//! - [`approval`]: the embedded wallet's approvals on ApproveTransaction, one rule after every
//!   decision for every flow.

mod account;
mod approval;
pub(super) mod embedded;
mod host;
mod modal;
mod network;
mod send;
pub(super) mod sign_in;
mod toasts;
mod wallets;

use crate::decider::Ctx;
use crate::machines::connection::ConnectionStatus;
use crate::machines::requests::{self, RequestKind, WalletRequest};
use crate::machines::router::{self, NavigationMode, RouteParams, View};
use crate::machines::toasts::{PauseReason, ToastRequest, ToastVariant};
use crate::model::caip::Namespace;
use crate::session::state::evolve_in_place;
use crate::session::{ClientCommand, Command, DomainError, Event, SessionState};

use wallets::{disconnect, wallet_error_message};

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
        evolve_in_place(&mut self.state, &event);
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
        let events = crate::machines::toasts::show(&self.state.toasts, ToastRequest::new(message, variant), self.now_ms);
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
        let cancelled = matches!(event, Event::WalletRequestCancelled { .. });
        let reason = match &event {
            Event::WalletRequestCancelled { reason, .. } => reason.clone(),
            _ => String::new(),
        };
        let drained = requests::drained_after(&self.state.requests, &[id.as_str()]);
        self.push(event);
        if let Some(drained) = drained {
            self.push(drained);
        }
        // Off the embedded wallet's approval first: the flow then continues from its own view.
        approval::request_ended(self);
        if cancelled {
            send::cancelled(self, &id, &reason);
            network::cancelled(self, &id, &reason);
            host::cancelled(self, &id, &reason);
        }
    }

    pub(super) fn issue_request(&mut self, connector_id: &str, namespace: Namespace, kind: RequestKind) -> Result<String, DomainError> {
        if self.state.requests.order.len() >= requests::MAX_PENDING {
            return Err(DomainError::TooMany { what: "pending wallet requests".into(), max: requests::MAX_PENDING });
        }
        let id = self.state.requests.next_request_id();
        self.push(Event::WalletRequestIssued {
            request: WalletRequest { id: id.clone(), connector_id: connector_id.to_string(), namespace, kind, issued_ms: self.now_ms },
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

    /// The decision's events, once the rules that follow every decision have run.
    pub(super) fn finish(mut self) -> Evolved {
        approval::show(&mut self);
        Evolved { events: self.events, state: self.state }
    }
}

/// A decision's events and the state they lead to: the fold of `evolve` over the events, which the
/// decision computed anyway to see its own steps' effects (so the runtime need not fold again).
#[derive(Debug)]
pub struct Evolved {
    pub events: Vec<Event>,
    pub state: SessionState,
}

pub fn decide(state: &SessionState, command: Command, ctx: &Ctx) -> Result<Vec<Event>, DomainError> {
    decide_evolved(state, command, ctx).map(|evolved| evolved.events)
}

/// [`decide`], with the state its events lead to.
pub fn decide_evolved(state: &SessionState, command: Command, ctx: &Ctx) -> Result<Evolved, DomainError> {
    match command {
        Command::Start { project, origin, options, served_networks, embedded_frame_origin } => {
            if state.started {
                return Err(DomainError::AlreadyStarted);
            }
            let networks = options.validate().map_err(DomainError::InvalidOptions)?;
            let mut d = Decision::new(state, ctx);
            d.push(Event::SessionStarted { project, origin, options, networks, served_networks, embedded_frame_origin });
            embedded::load_frame(&mut d);
            Ok(d.finish())
        }
        _ if !state.started => Err(DomainError::NotStarted),
        Command::Tick => {
            let mut d = Decision::new(state, ctx);
            let events = crate::machines::toasts::tick(&d.state.toasts, ctx.now_ms);
            d.extend(events);
            sign_in::expire_sessions(&mut d);
            host::tick(&mut d);
            embedded::tick(&mut d);
            Ok(d.finish())
        }
        Command::SiwxContractChecked { nonce, verdict } => {
            let mut d = Decision::new(state, ctx);
            sign_in::contract_checked(&mut d, &nonce, verdict);
            Ok(d.finish())
        }
        Command::BalancesFetched { id, outcome } => {
            let mut d = Decision::new(state, ctx);
            account::balances_fetched(&mut d, id, outcome);
            Ok(d.finish())
        }
        Command::ActivityFetched { id, outcome } => {
            let mut d = Decision::new(state, ctx);
            account::activity_fetched(&mut d, id, outcome);
            Ok(d.finish())
        }
        Command::ReceiptObserved { hash, outcome } => {
            let mut d = Decision::new(state, ctx);
            send::receipt_observed(&mut d, &hash, outcome);
            Ok(d.finish())
        }
        Command::HostReadAnswered { request_id, outcome } => {
            let mut d = Decision::new(state, ctx);
            host::read_answered(&mut d, &request_id, outcome);
            Ok(d.finish())
        }
        Command::SolanaSendPrepared { id, outcome } => {
            let mut d = Decision::new(state, ctx);
            send::solana_prepared(&mut d, id, outcome)?;
            Ok(d.finish())
        }
        Command::SolanaSendSubmitted { id, outcome } => {
            let mut d = Decision::new(state, ctx);
            send::solana_submitted(&mut d, id, outcome);
            Ok(d.finish())
        }
        Command::EmbeddedOtpSent { challenge_id, step } => runtime(state, ctx, |d| embedded::otp_sent(d, &challenge_id, step)),
        Command::EmbeddedOtpSendFailed { message } => runtime(state, ctx, |d| embedded::otp_send_failed(d, &message)),
        Command::EmbeddedOtpRejected { reason, attempts_left, from_frame } => runtime(state, ctx, |d| {
            embedded::from_announced_frame(d, from_frame.as_deref())?;
            embedded::otp_rejected(d, reason, attempts_left);
            Ok(())
        }),
        Command::EmbeddedSocialRedirect { provider, url } => runtime(state, ctx, |d| embedded::social_redirect(d, provider, &url)),
        Command::EmbeddedSocialFailed { message, from_frame } => runtime(state, ctx, |d| {
            embedded::from_announced_frame(d, from_frame.as_deref())?;
            embedded::social_failed(d, &message)
        }),
        Command::EmbeddedLoginVerified { method, user_id, email, username, wallet, from_frame } => runtime(state, ctx, |d| {
            embedded::from_announced_frame(d, from_frame.as_deref())?;
            embedded::login_verified(d, method, &user_id, email, username, wallet)
        }),
        Command::EmbeddedWalletBound { wallet_id, eip155_address, solana_address, from_frame } => runtime(state, ctx, |d| {
            embedded::from_announced_frame(d, from_frame.as_deref())?;
            embedded::wallet_bound(d, crate::machines::embedded_wallet::EmbeddedWalletInfo { wallet_id, eip155_address, solana_address })
        }),
        Command::EmbeddedEmailUpdateStep { step, from_frame } => runtime(state, ctx, |d| {
            embedded::from_announced_frame(d, from_frame.as_deref())?;
            embedded::email_update_step(d, step);
            Ok(())
        }),
        Command::EmbeddedEmailUpdateFailed { message } => runtime(state, ctx, |d| embedded::email_update_failed(d, &message)),
        Command::EmbeddedEmailUpdated { new_email, from_frame } => runtime(state, ctx, |d| {
            embedded::from_announced_frame(d, from_frame.as_deref())?;
            embedded::email_updated(d, &new_email)
        }),
        Command::EmbeddedSignOutDone => runtime(state, ctx, |d| {
            embedded::sign_out_done(d);
            Ok(())
        }),
        Command::Client(command) => decide_client(state, command, ctx),
    }
}

/// A runtime command's decision, followed (like a client's) by what the connection's change implies.
fn runtime(state: &SessionState, ctx: &Ctx, decide: impl FnOnce(&mut Decision) -> Result<(), DomainError>) -> Result<Evolved, DomainError> {
    let mut d = Decision::new(state, ctx);
    decide(&mut d)?;
    account::follow_connection(&mut d, state);
    Ok(d.finish())
}

/// One handler per client command, grouped by module.
fn decide_client(state: &SessionState, command: ClientCommand, ctx: &Ctx) -> Result<Evolved, DomainError> {
    let mut decision = Decision::new(state, ctx);
    let d = &mut decision;
    match command {
        ClientCommand::PageLoaded {} => modal::page_loaded(d)?,
        ClientCommand::OpenModal { view } => modal::open(d, view)?,
        ClientCommand::CloseModal {} => modal::close(d)?,
        ClientCommand::Navigate { view, params, replace } => modal::navigate(d, view, params, replace == Some(true))?,
        ClientCommand::GoBack {} => modal::go_back(d)?,
        ClientCommand::ReportWallets { wallets } => wallets::report(d, &wallets)?,
        ClientCommand::SelectConnector { connector_id } => wallets::select_connector(d, &connector_id)?,
        ClientCommand::SwitchActiveNamespace { namespace } => modal::switch_namespace(d, namespace)?,
        ClientCommand::ConfirmSwitchActiveChain {} => modal::confirm_switch_active_chain(d)?,
        ClientCommand::Disconnect { namespace } => wallets::disconnect_requested(d, namespace)?,
        ClientCommand::ResolveWalletRequest { request_id, outcome } => wallets::resolve_request(d, &request_id, outcome)?,
        ClientCommand::WalletAccountsChanged { connector_id, accounts } => wallets::accounts_changed(d, &connector_id, &accounts)?,
        ClientCommand::WalletChainChanged { connector_id, chain_id } => wallets::chain_changed(d, &connector_id, &chain_id)?,
        ClientCommand::WalletDisconnected { connector_id } => wallets::wallet_disconnected(d, &connector_id)?,
        ClientCommand::ConnectEmail { email } => embedded::email(d, &email)?,
        ClientCommand::ConnectSocial { provider } => embedded::social(d, provider)?,
        ClientCommand::EmbeddedFrameReady { frame_id } => embedded::frame_ready(d, &frame_id)?,
        ClientCommand::SocialPopupClosed {} => embedded::popup_closed(d),
        ClientCommand::CancelEmbeddedLogin {} => embedded::cancel(d),
        ClientCommand::UpdateEmail { email } => embedded::update_email(d, &email)?,
        ClientCommand::EmbeddedRequestFailed { message } => embedded::request_failed(d, &message)?,
        ClientCommand::ShowToast { message, variant, duration_ms, persistent } => {
            toasts::show(d, &message, variant, duration_ms, persistent == Some(true))?
        }
        ClientCommand::DismissToast { id } => toasts::dismiss(d, &id)?,
        ClientCommand::SwipeToast { id, distance_px, elapsed_ms } => toasts::swipe(d, &id, distance_px, elapsed_ms)?,
        ClientCommand::SetToastHover { hovered } => toasts::pause(d, PauseReason::Hover, hovered),
        ClientCommand::SetToastInteraction { active } => toasts::pause(d, PauseReason::Interaction, active),
        ClientCommand::SetPageVisibility { hidden } => toasts::pause(d, PauseReason::PageHidden, hidden),
        ClientCommand::SiwxSign {} => sign_in::sign(d)?,
        ClientCommand::SiwxCancel {} => sign_in::cancel(d)?,
        ClientCommand::SiwxSignOut { account } => sign_in::sign_out(d, account)?,
        ClientCommand::RefreshBalances {} => account::refresh_balances(d)?,
        ClientCommand::LoadActivity { more } => account::load_activity(d, more)?,
        ClientCommand::SetSendForm { form } => send::set_form(d, form)?,
        ClientCommand::SubmitSend { form } => send::submit(d, form)?,
        ClientCommand::ResetSend {} => send::reset(d)?,
        ClientCommand::SwitchNetwork { network } => network::switch(d, network)?,
        ClientCommand::RetrySwitchNetwork {} => network::retry(d)?,
        ClientCommand::HostRequest { request_id, method, params } => host::request(d, request_id, method, params)?,
        ClientCommand::CancelHostRequest { request_id } => host::cancel(d, &request_id)?,
        ClientCommand::ReportClientError { kind, detail } => d.push(crate::session::client_error::report(kind, &detail)?),
    }
    // Whatever moved the connection (connect, accountsChanged, chainChanged, a switch, a
    // disconnect): a switch that arrived is finished, and the chain data follows the account.
    network::finish_if_arrived(d);
    account::follow_connection(d, state);
    Ok(decision.finish())
}
