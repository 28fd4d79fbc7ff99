//! The embedded wallet's decisions (docs/embedded-wallet.md): the secure frame's load, email and
//! social login, the embedded service's answers, the connection through the built-in `auth`
//! connector, the email change and signing out. Without a frame origin (a gateway with no embedded
//! wallet), email and social login answer with the catalogue's errors as before (decision 0400).

use super::{Decision, MODAL_CLOSED, sign_in};
use crate::machines::connection::{Account, ConnectionStatus};
use crate::machines::embedded_wallet::{
    AUTH_CONNECTOR_ID, CHAIN_NOT_SUPPORTED, EMAIL_COOLDOWN_MS, EMAIL_DEPENDENCY_UNAVAILABLE, EMAIL_UPDATE_POLL_MS, EmbeddedUser,
    EmbeddedWalletInfo, FARCASTER_FAILED, FRAME_LOAD_FAILED, FRAME_LOAD_TIMEOUT_MS, FRAME_SETTLE_MS, FrameStatus, LoginMethod, LoginStatus,
    NO_AUTH_CONNECTOR, NOT_EMBEDDED_CONNECTION, OtpRejection, OtpStep, POPUP_CLOSED, REQUEST_TIMED_OUT, REQUEST_TIMEOUT_MS,
    SOCIAL_INIT_FAILED, UpdateStatus, UpdateStep, bounded_text, cooldown_message, display_username, validate_email, wants_frame,
};
use crate::machines::router::{NavigationMode, View};
use crate::machines::toasts::{ToastRequest, ToastVariant};
use crate::model::caip::Namespace;
use crate::model::connector::{Connector, ConnectorType};
use crate::model::networks::NetworkRef;
use crate::model::options::{AccountType, SocialProvider};
use crate::session::{DomainError, Event};

/// The connect request id the connection records while an embedded login is under way (no wallet
/// request is issued: the embedded service, not the browser's wallet, answers).
const LOGIN_REQUEST_ID: &str = "embedded-login";

fn frame_wanted(d: &Decision) -> bool {
    wants_frame(d.state.embedded.frame_origin.as_deref(), &d.state.options.features)
}

/// The session started, or a page (re)loaded: the page loads a new frame, which must announce
/// itself within 20 s.
pub(super) fn load_frame(d: &mut Decision) {
    if frame_wanted(d) {
        d.push(Event::EmbeddedFrameLoading { deadline_ms: d.now_ms + FRAME_LOAD_TIMEOUT_MS });
    }
}

/// `PageLoaded`: the old page's frame is gone, and with it any login or email change it was
/// carrying (its challenge belongs to that frame); the new page loads a new frame.
pub(super) fn page_loaded(d: &mut Decision) {
    if d.state.embedded.login.status.in_progress() {
        d.push(Event::EmbeddedLoginCancelled {});
        abandon_connecting(d, "Connection interrupted by a page reload");
    }
    if matches!(d.state.embedded.update.status, UpdateStatus::Sending | UpdateStatus::PrimaryOtp | UpdateStatus::SecondaryOtp) {
        d.push(Event::EmbeddedEmailUpdateFinished {});
    }
    load_frame(d);
}

/// `EmbeddedFrameReady`: the frame announced itself; it is ready 500 ms later (spec §9).
pub(super) fn frame_ready(d: &mut Decision, frame_id: &str) -> Result<(), DomainError> {
    if d.state.embedded.frame_origin.is_none() {
        return Err(DomainError::FeatureDisabled("embedded wallet"));
    }
    bounded_text("frameId", frame_id)?;
    // Only a frame the page is loading may announce itself: a second announcement (or one after the
    // load timed out and the alert was shown) is stale.
    if d.state.embedded.frame.status == FrameStatus::Loading {
        d.push(Event::EmbeddedFrameAnnounced { frame_id: frame_id.to_string(), ready_at_ms: d.now_ms + FRAME_SETTLE_MS });
    }
    Ok(())
}

/// A notice of the embedded service (`from_frame`: the frame whose request it answers) moves the
/// session only when it is about the frame this session announced. The frame API registers a frame
/// for any live session id, so whoever learnt the id could register another frame and, through
/// it, post failures, or a login of their own, to this session. `None`: the outcome of one of the
/// session's own effects, asked for its announced frame.
pub(super) fn from_announced_frame(d: &Decision, from_frame: Option<&str>) -> Result<(), DomainError> {
    match from_frame {
        Some(frame) if d.state.embedded.frame.frame_id.as_deref() != Some(frame) => {
            Err(DomainError::InvalidInput { field: "frameId".into(), message: "not the frame this session announced".into() })
        }
        _ => Ok(()),
    }
}

/// `ConnectEmail`: the feature, the address, a network the embedded wallet has an account on, the
/// 30 s cooldown, the frame; then the embedded service is asked to mail a code (a pending effect).
pub(super) fn email(d: &mut Decision, email: &str) -> Result<(), DomainError> {
    if !d.state.options.features.email {
        return Err(DomainError::FeatureDisabled("email"));
    }
    let email = email.trim();
    validate_email(email)?;
    if embedded_networks(d).is_empty() {
        d.toast(CHAIN_NOT_SUPPORTED, ToastVariant::Error);
        return Ok(());
    }
    if d.state.embedded.frame_origin.is_none() {
        d.toast(EMAIL_DEPENDENCY_UNAVAILABLE, ToastVariant::Error);
        return Ok(());
    }
    if let Some(until) = d.state.embedded.cooldown_until_ms.filter(|until| *until > d.now_ms) {
        d.toast(&cooldown_message(until, d.now_ms), ToastVariant::Error);
        return Ok(());
    }
    if d.state.embedded.frame.status == FrameStatus::Failed {
        d.toast(EMAIL_DEPENDENCY_UNAVAILABLE, ToastVariant::Error);
        return Ok(());
    }
    d.push(Event::EmbeddedOtpRequested {
        email: email.to_string(),
        deadline_ms: d.now_ms + REQUEST_TIMEOUT_MS,
        cooldown_until_ms: d.now_ms + EMAIL_COOLDOWN_MS,
    });
    start_connecting(d);
    Ok(())
}

/// `ConnectSocial`: the provider must be enabled; the embedded service is asked for its
/// authorization URL (a pending effect) while the client opens its popup. Farcaster opens no popup:
/// the service opens a relay channel and the modal shows its URL (spec §2).
pub(super) fn social(d: &mut Decision, provider: SocialProvider) -> Result<(), DomainError> {
    if !d.state.options.features.socials.contains(&provider) {
        return Err(DomainError::FeatureDisabled("socials"));
    }
    let farcaster = provider == SocialProvider::Farcaster;
    if embedded_networks(d).is_empty() {
        d.toast(CHAIN_NOT_SUPPORTED, ToastVariant::Error);
        return Ok(());
    }
    if d.state.embedded.frame_origin.is_none() || d.state.embedded.frame.status == FrameStatus::Failed {
        d.toast(if farcaster { FARCASTER_FAILED } else { SOCIAL_INIT_FAILED }, ToastVariant::Error);
        return Ok(());
    }
    d.push(Event::EmbeddedSocialStarted { provider, deadline_ms: d.now_ms + REQUEST_TIMEOUT_MS });
    start_connecting(d);
    let view = if farcaster { View::ConnectingFarcaster } else { View::ConnectingSocial };
    d.navigate(view, None, NavigationMode::Push);
    Ok(())
}

/// `SocialPopupClosed`: the visitor closed the popup before the login finished.
pub(super) fn popup_closed(d: &mut Decision) {
    if matches!(d.state.embedded.login.status, LoginStatus::SocialStarting | LoginStatus::SocialPopup) {
        fail_login(d, POPUP_CLOSED);
    }
}

/// The modal closed: a login in progress is a connect flow, so it ends with "Modal closed" (spec
/// §4), and a social popup waiting for it closes; a verification arriving later is ignored.
pub(super) fn modal_closed(d: &mut Decision) {
    if d.state.embedded.login.status.in_progress() {
        d.push(Event::EmbeddedLoginCancelled {});
        abandon_connecting(d, MODAL_CLOSED);
    }
}

/// `CancelEmbeddedLogin`: back to Connect.
pub(super) fn cancel(d: &mut Decision) {
    let login = &d.state.embedded.login;
    if login.status != LoginStatus::Idle && login.status != LoginStatus::Connected {
        d.push(Event::EmbeddedLoginCancelled {});
        abandon_connecting(d, "Connection cancelled");
    }
    d.navigate(View::Connect, None, NavigationMode::Reset);
}

/// `EmbeddedRequestFailed`: the host bridge's request to the frame failed or timed out.
pub(super) fn request_failed(d: &mut Decision, message: &str) -> Result<(), DomainError> {
    bounded_text("message", message)?;
    let message = message.trim();
    if d.state.embedded.login.status.in_progress() {
        fail_login(d, message);
    } else if update_in_progress(d) {
        d.push(Event::EmbeddedEmailUpdateFailed { message: message.to_string() });
        d.toast(message, ToastVariant::Error);
    } else {
        d.toast(message, ToastVariant::Error);
    }
    Ok(())
}

/// `UpdateEmail`: the UpdateEmailWallet view's form (spec §4 Email update).
pub(super) fn update_email(d: &mut Decision, email: &str) -> Result<(), DomainError> {
    let email = email.trim();
    validate_email(email)?;
    if d.state.embedded.frame_origin.is_none() || d.state.embedded.user.is_none() || d.state.embedded.frame.status == FrameStatus::Failed {
        d.toast(NO_AUTH_CONNECTOR, ToastVariant::Error);
        return Ok(());
    }
    let active_is_embedded = d
        .state
        .connection
        .active_namespace
        .map(|ns| d.state.connection.namespace(ns))
        .is_some_and(|c| c.status == ConnectionStatus::Connected && c.connector_id.as_deref() == Some(AUTH_CONNECTOR_ID));
    if !active_is_embedded {
        d.toast(NOT_EMBEDDED_CONNECTION, ToastVariant::Error);
        return Ok(());
    }
    d.push(Event::EmbeddedEmailUpdateStarted { new_email: email.to_string(), deadline_ms: d.now_ms + REQUEST_TIMEOUT_MS });
    Ok(())
}

/// A deadline fell due: the frame's load or settle time, a request's 120 s, the email change's poll.
pub(super) fn tick(d: &mut Decision) {
    let now = d.now_ms;
    let frame = d.state.embedded.frame.clone();
    match frame.status {
        FrameStatus::Loading if frame.deadline_ms.is_some_and(|at| at <= now) => {
            d.push(Event::EmbeddedFrameFailed { message: FRAME_LOAD_FAILED.into() });
            // Spec §8 alert: stays until the visitor dismisses it.
            let request = ToastRequest { persistent: true, ..ToastRequest::new(FRAME_LOAD_FAILED, ToastVariant::Error) };
            let events = crate::machines::toasts::show(&d.state.toasts, request, now);
            d.extend(events);
            if d.state.embedded.login.status.in_progress() {
                fail_login(d, EMAIL_DEPENDENCY_UNAVAILABLE);
            }
        }
        FrameStatus::Settling if frame.deadline_ms.is_some_and(|at| at <= now) => d.push(Event::EmbeddedFrameReady {}),
        _ => {}
    }
    let login = &d.state.embedded.login;
    if login.status.in_progress() && login.deadline_ms.is_some_and(|at| at <= now) {
        fail_login(d, REQUEST_TIMED_OUT);
    }
    let update = d.state.embedded.update.clone();
    if update.deadline_ms.is_some_and(|at| at <= now) {
        if update.status == UpdateStatus::Polling {
            // Spec §4 Email update: the changed email is in the state; the modal closes.
            d.push(Event::EmbeddedEmailUpdateFinished {});
            d.close_modal();
            if d.state.router.current() != View::Account {
                d.navigate(View::Account, None, NavigationMode::Reset);
            }
        } else if update_in_progress(d) {
            d.push(Event::EmbeddedEmailUpdateFailed { message: REQUEST_TIMED_OUT.into() });
            d.toast(REQUEST_TIMED_OUT, ToastVariant::Error);
        }
    }
}

// --- The embedded service's answers (runtime commands) -------------------------------------------

/// The login code was mailed: the modal asks for it (a new device is verified first).
pub(super) fn otp_sent(d: &mut Decision, challenge_id: &str, step: OtpStep) -> Result<(), DomainError> {
    bounded_text("challengeId", challenge_id)?;
    if !matches!(d.state.embedded.login.status, LoginStatus::SendingOtp | LoginStatus::AwaitingOtp) {
        return Ok(());
    }
    d.push(Event::EmbeddedOtpSent { challenge_id: challenge_id.to_string(), step, deadline_ms: d.now_ms + REQUEST_TIMEOUT_MS });
    let view = match step {
        OtpStep::VerifyDevice => View::EmailVerifyDevice,
        OtpStep::VerifyOtp => View::EmailVerifyOtp,
    };
    let on_verify_view = matches!(d.state.router.current(), View::EmailVerifyDevice | View::EmailVerifyOtp);
    d.open_modal();
    d.navigate(view, None, if on_verify_view { NavigationMode::Replace } else { NavigationMode::Push });
    Ok(())
}

pub(super) fn otp_send_failed(d: &mut Decision, message: &str) -> Result<(), DomainError> {
    bounded_text("message", message)?;
    if d.state.embedded.login.status == LoginStatus::SendingOtp {
        fail_login(d, message.trim());
    }
    Ok(())
}

/// The embedded service refused the code: a wrong one may be typed again; an expired one or too
/// many attempts end the challenge (back to Connect, with a toast).
pub(super) fn otp_rejected(d: &mut Decision, reason: OtpRejection, attempts_left: Option<u32>) {
    if d.state.embedded.login.status != LoginStatus::AwaitingOtp {
        return;
    }
    d.push(Event::EmbeddedOtpRejected { reason, attempts_left });
    if reason.ends_challenge() {
        abandon_connecting(d, reason.message());
        d.toast(reason.message(), ToastVariant::Error);
        d.navigate(View::Connect, None, NavigationMode::Reset);
    }
}

pub(super) fn social_redirect(d: &mut Decision, provider: SocialProvider, url: &str) -> Result<(), DomainError> {
    bounded_text("url", url)?;
    // A Farcaster relay may give its app's own scheme.
    let farcaster_scheme = provider == SocialProvider::Farcaster && url.starts_with("farcaster://");
    if !(url.starts_with("https://") || url.starts_with("http://") || farcaster_scheme)
        || url.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(DomainError::InvalidInput { field: "url".into(), message: "an http(s) URL".into() });
    }
    let login = &d.state.embedded.login;
    if login.status == LoginStatus::SocialStarting && login.method == Some(provider.into()) {
        d.push(Event::EmbeddedSocialRedirected { url: url.to_string(), deadline_ms: d.now_ms + REQUEST_TIMEOUT_MS });
    }
    Ok(())
}

pub(super) fn social_failed(d: &mut Decision, message: &str) -> Result<(), DomainError> {
    bounded_text("message", message)?;
    if matches!(d.state.embedded.login.status, LoginStatus::SocialStarting | LoginStatus::SocialPopup) {
        fail_login(d, message.trim());
    }
    Ok(())
}

/// The embedded service verified the login: the user is known; with a wallet the visitor is
/// connected through `auth`, without one the frame creates it (120 s).
pub(super) fn login_verified(
    d: &mut Decision,
    method: LoginMethod,
    user_id: &str,
    email: Option<String>,
    username: Option<String>,
    wallet: Option<EmbeddedWalletInfo>,
) -> Result<(), DomainError> {
    bounded_text("userId", user_id)?;
    if let Some(email) = &email {
        validate_email(email)?;
    }
    if let Some(name) = &username {
        bounded_text("username", name)?;
    }
    if let Some(w) = &wallet {
        check_wallet(w)?;
    }
    if !d.state.embedded.login.status.in_progress() {
        return Ok(());
    }
    let user = EmbeddedUser {
        user_id: user_id.to_string(),
        email,
        username: display_username(method, username),
        provider: method,
        wallet_id: wallet.as_ref().map(|w| w.wallet_id.clone()),
        eip155_address: wallet.as_ref().map(|w| w.eip155_address.clone()),
        solana_address: wallet.as_ref().map(|w| w.solana_address.clone()),
        preferred_account_type: AccountType::Eoa,
    };
    let deadline_ms = wallet.is_none().then_some(d.now_ms + REQUEST_TIMEOUT_MS);
    d.push(Event::EmbeddedLoginVerified { user, deadline_ms });
    if wallet.is_some() {
        connect_auth(d);
    }
    Ok(())
}

pub(super) fn wallet_bound(d: &mut Decision, wallet: EmbeddedWalletInfo) -> Result<(), DomainError> {
    check_wallet(&wallet)?;
    if d.state.embedded.login.status == LoginStatus::CreatingWallet {
        d.push(Event::EmbeddedWalletBound { wallet });
        connect_auth(d);
    }
    Ok(())
}

pub(super) fn email_update_step(d: &mut Decision, step: UpdateStep) {
    if !update_in_progress(d) {
        return;
    }
    d.push(Event::EmbeddedEmailUpdateStepped { step, deadline_ms: d.now_ms + REQUEST_TIMEOUT_MS });
    let view = match step {
        UpdateStep::Primary => View::UpdateEmailPrimaryOtp,
        UpdateStep::Secondary => View::UpdateEmailSecondaryOtp,
    };
    let on_otp_view = matches!(d.state.router.current(), View::UpdateEmailPrimaryOtp | View::UpdateEmailSecondaryOtp);
    d.navigate(view, None, if on_otp_view { NavigationMode::Replace } else { NavigationMode::Push });
}

pub(super) fn email_update_failed(d: &mut Decision, message: &str) -> Result<(), DomainError> {
    bounded_text("message", message)?;
    if update_in_progress(d) {
        d.push(Event::EmbeddedEmailUpdateFailed { message: message.trim().to_string() });
        d.toast(message.trim(), ToastVariant::Error);
    }
    Ok(())
}

pub(super) fn email_updated(d: &mut Decision, new_email: &str) -> Result<(), DomainError> {
    validate_email(new_email)?;
    if update_in_progress(d) && d.state.embedded.user.is_some() {
        d.push(Event::EmbeddedEmailUpdated { new_email: new_email.to_string(), poll_at_ms: d.now_ms + EMAIL_UPDATE_POLL_MS });
    }
    Ok(())
}

pub(super) fn sign_out_done(d: &mut Decision) {
    if d.state.embedded.sign_out.is_some() {
        d.push(Event::EmbeddedSignOutDone {});
    }
}

/// After a namespace disconnected: once the auth connector holds no namespace, the embedded user
/// is signed out and the frame told to forget its login.
pub(super) fn after_disconnect(d: &mut Decision) {
    if d.state.embedded.user.is_none() && d.state.embedded.login.status == LoginStatus::Idle {
        return;
    }
    if !d.state.connection.namespaces_of(AUTH_CONNECTOR_ID).is_empty() {
        return;
    }
    let frame_id = d.state.embedded.ready_frame().map(str::to_string);
    d.push(Event::EmbeddedSignedOut { frame_id });
}

// --- Helpers ---------------------------------------------------------------------------------------

fn update_in_progress(d: &Decision) -> bool {
    matches!(d.state.embedded.update.status, UpdateStatus::Sending | UpdateStatus::PrimaryOtp | UpdateStatus::SecondaryOtp)
}

fn check_wallet(w: &EmbeddedWalletInfo) -> Result<(), DomainError> {
    bounded_text("walletId", &w.wallet_id)?;
    if !Namespace::Eip155.is_valid_address(&w.eip155_address) {
        return Err(DomainError::InvalidInput { field: "eip155Address".into(), message: "not an EVM address".into() });
    }
    if !Namespace::Solana.is_valid_address(&w.solana_address) {
        return Err(DomainError::InvalidInput { field: "solanaAddress".into(), message: "not a Solana address".into() });
    }
    Ok(())
}

/// The namespaces an embedded account connects: eip155 and solana, where the session has a
/// network (eip155: the default network when it is one, else the first).
fn embedded_networks(d: &Decision) -> Vec<(Namespace, NetworkRef)> {
    let networks = &d.state.networks;
    let default = d.state.options.default_network.as_ref();
    [Namespace::Solana, Namespace::Eip155]
        .into_iter()
        .filter_map(|ns| {
            let in_ns = || networks.iter().filter(move |c| c.namespace() == ns);
            let chain = in_ns().find(|c| Some(&c.caip_network_id) == default).or_else(|| in_ns().next())?;
            Some((ns, NetworkRef::of(chain)))
        })
        .collect()
}

/// Spec §4: per-chain status is connecting while the login is in progress (for the namespaces no
/// other wallet holds).
fn start_connecting(d: &mut Decision) {
    for (ns, _) in embedded_networks(d) {
        let conn = d.state.connection.namespace(ns).clone();
        let held_by_auth = conn.connector_id.as_deref() == Some(AUTH_CONNECTOR_ID);
        if conn.status == ConnectionStatus::Disconnected || (held_by_auth && conn.status == ConnectionStatus::Connecting) {
            d.push(Event::ConnectStarted { namespace: ns, connector_id: AUTH_CONNECTOR_ID.into(), request_id: LOGIN_REQUEST_ID.into() });
        }
    }
}

/// The namespaces the login set connecting fail with `message`.
fn abandon_connecting(d: &mut Decision, message: &str) {
    for ns in Namespace::ALL {
        let conn = d.state.connection.namespace(ns);
        if conn.status == ConnectionStatus::Connecting && conn.connector_id.as_deref() == Some(AUTH_CONNECTOR_ID) && !conn.syncing {
            d.abandon_pending(ns, message);
        }
    }
}

fn fail_login(d: &mut Decision, message: &str) {
    d.push(Event::EmbeddedLoginFailed { message: message.to_string() });
    abandon_connecting(d, message);
    d.toast(message, ToastVariant::Error);
}

/// The embedded account connects through the built-in `auth` connector exactly as an external
/// wallet's connect result would: Account, balances, sign-in and the rest follow unchanged.
fn connect_auth(d: &mut Decision) {
    let Some(user) = d.state.embedded.user.clone() else { return };
    let connector = Connector {
        id: AUTH_CONNECTOR_ID.into(),
        name: user.provider.connector_name().into(),
        kind: ConnectorType::Auth,
        rdns: None,
        icon: None,
        namespaces: vec![Namespace::Eip155, Namespace::Solana],
    };
    if d.state.connection.connector(AUTH_CONNECTOR_ID) != Some(&connector) {
        let mut connectors: Vec<Connector> = d.state.connection.connectors.iter().filter(|c| c.id != AUTH_CONNECTOR_ID).cloned().collect();
        connectors.push(connector);
        d.push(Event::ConnectorsUpdated { connectors });
    }
    // Solana first, so the EVM account (the spec's default namespace) ends up the active one.
    for (ns, network) in embedded_networks(d) {
        let address = match ns {
            Namespace::Eip155 => user.eip155_address.clone(),
            _ => user.solana_address.clone(),
        };
        let Some(address) = address else { continue };
        let conn = d.state.connection.namespace(ns);
        if conn.status == ConnectionStatus::Connected && conn.connector_id.as_deref() != Some(AUTH_CONNECTOR_ID) {
            continue;
        }
        if conn.status != ConnectionStatus::Connected
            && !(conn.status == ConnectionStatus::Connecting && conn.connector_id.as_deref() == Some(AUTH_CONNECTOR_ID))
        {
            d.push(Event::ConnectStarted { namespace: ns, connector_id: AUTH_CONNECTOR_ID.into(), request_id: LOGIN_REQUEST_ID.into() });
        }
        let accounts = vec![Account { address, account_type: AccountType::Eoa }];
        // The embedded wallet signs on every network of the session: no list.
        d.push(Event::Connected { namespace: ns, connector_id: AUTH_CONNECTOR_ID.into(), accounts, network, signable_networks: None });
    }
    // Spec: connecting with no sign-in session opens SIWXSignMessage.
    if !sign_in::request_if_needed(d) {
        d.close_modal();
        d.navigate(View::Account, None, NavigationMode::Reset);
    }
}

/// Keeps the auth connector in a connector list rebuilt from the browser's wallets.
pub(super) fn keep_auth_connector(d: &Decision, mut connectors: Vec<Connector>) -> Vec<Connector> {
    if let Some(auth) = d.state.connection.connector(AUTH_CONNECTOR_ID) {
        connectors.push(auth.clone());
    }
    connectors
}
