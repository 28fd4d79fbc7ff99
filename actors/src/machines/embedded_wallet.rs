//! The embedded wallet (spec §2, §4 Email login / Social login / Email update / Secure frame, §5,
//! §8, §9; docs/embedded-wallet.md): the secure frame's load, the email OTP and social logins, the
//! embedded user and its wallet, and the change of the user's email.
//!
//! The session records what the visitor saw: steps, deadlines, the cooldown and the errors. The
//! email (the embedded user has one) lives here; OTPs, shares and keys never reach the session
//! (the host page hands the OTP straight to the frame), so no event type has a field for them.
//! What the embedded service must do (mail an OTP, start a social login, start an email change,
//! forget a frame's login) is a pending effect in this state, performed once by the actor
//! (`runtime::effects::EmbeddedEffects`), whose outcome comes back as a runtime command.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{ANY_STATE, Region, Statechart, region, t, tg};
use crate::model::options::{AccountType, Features, SocialProvider};
use crate::session::{DomainError, Event};

pub const ID: &str = "embedded";

/// The built-in connector of embedded accounts (spec §3: type AUTH).
pub const AUTH_CONNECTOR_ID: &str = "auth";

/// The EVM RPC methods the embedded wallet performs, each after the visitor's approval drawn by the
/// secure frame (docs/embedded-wallet.md; spec §6: the not-safe methods). A host's other wallet
/// methods to an `auth` account are refused by the session with 4200 before any view shows
/// (`decide/host.rs`); the frame takes its list from this one (generated `constants.ts`). Solana's
/// `solana_sign*` methods are matched by prefix (as `solana_signMessage`).
pub const EMBEDDED_EVM_METHODS: &[&str] = &["personal_sign", "eth_signTypedData_v4", "eth_sendTransaction"];

/// Whether `request` is one the embedded wallet asks the visitor to approve: a signing or sending
/// request to connector `auth` (never a `Connect` or `Sync`, nor a read).
pub fn needs_approval(request: &crate::machines::requests::WalletRequest) -> bool {
    use crate::machines::requests::RequestKind;
    request.connector_id == AUTH_CONNECTOR_ID
        && match &request.kind {
            RequestKind::SignMessage { .. } | RequestKind::SignTransaction { .. } => true,
            RequestKind::Rpc { method, .. } => {
                EMBEDDED_EVM_METHODS.contains(&method.as_str()) || method.starts_with("solana_sign") || method.starts_with("solana:sign")
            }
            RequestKind::Connect | RequestKind::Sync => false,
        }
}

/// Catalogue, secure frame errors: the email login's provider could not be loaded.
pub const EMAIL_DEPENDENCY_UNAVAILABLE: &str = "Unable to load email login dependency";
/// Catalogue, errors: a social login could not start.
pub const SOCIAL_INIT_FAILED: &str = "Failed to initiate social connection";
/// Catalogue, errors: a Farcaster login could not start.
pub const FARCASTER_FAILED: &str = "Failed to connect to farcaster";
/// Catalogue, secure frame alerts: the frame did not load within [`FRAME_LOAD_TIMEOUT_MS`].
pub const FRAME_LOAD_FAILED: &str = "Network Error - Could not load embedded wallet";
/// Catalogue, secure frame alerts: a request to the frame got no answer within [`REQUEST_TIMEOUT_MS`].
pub const REQUEST_TIMED_OUT: &str = "Embedded Wallet Request Timed Out";
/// Catalogue, secure frame errors: a login where the session has no network the embedded wallet
/// holds an account on (eip155 or solana; spec §5: a login is created only when the chain is
/// supported).
pub const CHAIN_NOT_SUPPORTED: &str = "Chain is not supported";
/// The social popup was closed before the login finished (spec §4 Social login).
pub const POPUP_CLOSED: &str = "Popup closed";
/// Spec §5 Email update errors.
pub const NO_AUTH_CONNECTOR: &str = "No auth connector found";
pub const NOT_EMBEDDED_CONNECTION: &str = "Not connected to email or social";
/// Spec §8: the OTP refusals.
pub const OTP_WRONG: &str = "Invalid code";
pub const OTP_EXPIRED: &str = "Code expired";
pub const OTP_ATTEMPTS: &str = "Too many attempts";

/// Spec §9: the frame is ready this long after its ready event.
pub const FRAME_SETTLE_MS: u64 = 500;
/// Spec §9: the frame's load timeout.
pub const FRAME_LOAD_TIMEOUT_MS: u64 = 20_000;
/// Spec §9: each request to the frame (and through it to the embedded service).
pub const REQUEST_TIMEOUT_MS: u64 = 120_000;
/// Spec §5 Email: another code is mailed at most this often.
pub const EMAIL_COOLDOWN_MS: u64 = 30_000;
/// Spec §4 Email update: the modal polls for the changed email every second, then closes.
pub const EMAIL_UPDATE_POLL_MS: u64 = 1_000;
/// The longest message, id or URL taken from the embedded service or the client.
pub const MAX_TEXT_CHARS: usize = 2048;

/// RFC 5321's limits: 254 characters in all, 64 in the local part, 63 per domain label.
const MAX_EMAIL_CHARS: usize = 254;
const MAX_LOCAL_CHARS: usize = 64;
const MAX_LABEL_CHARS: usize = 63;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum FrameStatus {
    /// No frame is wanted (no frame origin, or neither email nor socials enabled).
    #[default]
    Idle,
    Loading,
    /// The frame announced itself; it is ready [`FRAME_SETTLE_MS`] later.
    Settling,
    Ready,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct FrameState {
    pub status: FrameStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub frame_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub deadline_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum LoginStatus {
    #[default]
    Idle,
    SendingOtp,
    AwaitingOtp,
    SocialStarting,
    SocialPopup,
    CreatingWallet,
    Connected,
    Failed,
}

impl LoginStatus {
    /// A login is under way (the connection of the auth connector is connecting).
    pub fn in_progress(self) -> bool {
        matches!(self, Self::SendingOtp | Self::AwaitingOtp | Self::SocialStarting | Self::SocialPopup | Self::CreatingWallet)
    }
}

/// How an embedded user logged in: `email` or a social provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum LoginMethod {
    Email,
    Google,
    X,
    Farcaster,
    Discord,
    Apple,
    Github,
    Facebook,
}

impl From<SocialProvider> for LoginMethod {
    fn from(p: SocialProvider) -> Self {
        match p {
            SocialProvider::Google => Self::Google,
            SocialProvider::X => Self::X,
            SocialProvider::Farcaster => Self::Farcaster,
            SocialProvider::Discord => Self::Discord,
            SocialProvider::Apple => Self::Apple,
            SocialProvider::Github => Self::Github,
            SocialProvider::Facebook => Self::Facebook,
        }
    }
}

impl LoginMethod {
    /// The name the auth connector shows for this login.
    pub fn connector_name(self) -> &'static str {
        match self {
            Self::Email => "Email",
            Self::Google => "Google",
            Self::X => "X",
            Self::Farcaster => "Farcaster",
            Self::Discord => "Discord",
            Self::Apple => "Apple",
            Self::Github => "GitHub",
            Self::Facebook => "Facebook",
        }
    }
}

/// Which OTP the embedded service mailed: a new device is verified first (spec §4 Email login).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum OtpStep {
    VerifyDevice,
    VerifyOtp,
}

/// Why the embedded service refused an OTP (the frame's `otp_wrong` / `otp_expired` / `otp_attempts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum OtpRejection {
    Wrong,
    Expired,
    Attempts,
}

impl OtpRejection {
    pub fn message(self) -> &'static str {
        match self {
            Self::Wrong => OTP_WRONG,
            Self::Expired => OTP_EXPIRED,
            Self::Attempts => OTP_ATTEMPTS,
        }
    }

    /// An expired code or too many attempts ends the challenge: a new code must be asked for.
    pub fn ends_challenge(self) -> bool {
        !matches!(self, Self::Wrong)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct LoginState {
    pub status: LoginStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub method: Option<LoginMethod>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub challenge_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub step: Option<OtpStep>,
    /// Where the client navigates its popup (the provider's authorization URL), or, for Farcaster,
    /// the relay's URL the modal shows as a link and a QR code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub social_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub attempts_left: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub deadline_ms: Option<u64>,
    /// The effect this login waits for (sendingOtp, socialStarting): asked of the embedded service once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub effect_id: Option<u64>,
}

/// The embedded user of this session (spec §3 Embedded-wallet user).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedUser {
    pub user_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub username: Option<String>,
    pub provider: LoginMethod,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub wallet_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub eip155_address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub solana_address: Option<String>,
    /// Spec §3/§4: the embedded wallet's accounts are EOAs (the fallback when no smart account
    /// can be deployed; this build deploys none).
    pub preferred_account_type: AccountType,
}

/// The embedded wallet's addresses, as the embedded service bound them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedWalletInfo {
    pub wallet_id: String,
    pub eip155_address: String,
    pub solana_address: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum UpdateStatus {
    #[default]
    Idle,
    Sending,
    PrimaryOtp,
    SecondaryOtp,
    Polling,
    Failed,
}

/// Which OTP of an email change the embedded service mailed: to the current address, then to the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum UpdateStep {
    Primary,
    Secondary,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct UpdateState {
    pub status: UpdateStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub new_email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub deadline_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub effect_id: Option<u64>,
}

/// A sign-out the embedded service must hear of (the frame `frame_id` forgets its login).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct PendingSignOut {
    pub frame_id: String,
    #[ts(type = "number")]
    pub effect_id: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedState {
    /// The secure frame's origin, from the gateway's configuration; none: no embedded wallet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub frame_origin: Option<String>,
    pub frame: FrameState,
    pub login: LoginState,
    /// Spec §5 Email: no other code before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub cooldown_until_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub user: Option<EmbeddedUser>,
    pub update: UpdateState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sign_out: Option<PendingSignOut>,
    /// The id of the last effect asked for (effects are performed once per id).
    #[ts(type = "number")]
    pub last_effect_id: u64,
}

/// An effect the state waits for, for the actor to perform (see `runtime::effects::EmbeddedEffects`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddedEffect {
    SendLoginOtp {
        frame_id: String,
        email: String,
    },
    StartSocial {
        frame_id: String,
        provider: SocialProvider,
    },
    /// Sign In With Farcaster: the service opens a relay channel and gives its URL.
    StartFarcaster {
        frame_id: String,
    },
    StartEmailUpdate {
        frame_id: String,
        new_email: String,
    },
    SignOut {
        frame_id: String,
    },
}

impl EmbeddedState {
    /// The earliest deadline of the frame, the login or the email change.
    pub fn next_deadline(&self) -> Option<u64> {
        [self.frame.deadline_ms, self.login.deadline_ms, self.update.deadline_ms].into_iter().flatten().min()
    }

    /// The ready frame's id.
    pub fn ready_frame(&self) -> Option<&str> {
        (self.frame.status == FrameStatus::Ready).then_some(self.frame.frame_id.as_deref()).flatten()
    }

    /// The effects the state waits for, each with its id. A login or email change asked for before
    /// the frame is ready waits for it (its 120 s deadline still runs).
    pub fn pending_effects(&self) -> Vec<(u64, EmbeddedEffect)> {
        let mut effects = Vec::new();
        if let Some(s) = &self.sign_out {
            effects.push((s.effect_id, EmbeddedEffect::SignOut { frame_id: s.frame_id.clone() }));
        }
        let Some(frame_id) = self.ready_frame() else { return effects };
        let frame_id = frame_id.to_string();
        if let Some(id) = self.login.effect_id {
            match (self.login.status, self.login.method) {
                (LoginStatus::SendingOtp, _) => {
                    if let Some(email) = &self.login.email {
                        effects.push((id, EmbeddedEffect::SendLoginOtp { frame_id: frame_id.clone(), email: email.clone() }));
                    }
                }
                (LoginStatus::SocialStarting, Some(LoginMethod::Farcaster)) => {
                    effects.push((id, EmbeddedEffect::StartFarcaster { frame_id: frame_id.clone() }));
                }
                (LoginStatus::SocialStarting, Some(method)) => {
                    if let Some(provider) = social_provider(method) {
                        effects.push((id, EmbeddedEffect::StartSocial { frame_id: frame_id.clone(), provider }));
                    }
                }
                _ => {}
            }
        }
        if let (UpdateStatus::Sending, Some(id), Some(new_email)) = (self.update.status, self.update.effect_id, &self.update.new_email) {
            effects.push((id, EmbeddedEffect::StartEmailUpdate { frame_id, new_email: new_email.clone() }));
        }
        effects
    }
}

fn social_provider(method: LoginMethod) -> Option<SocialProvider> {
    Some(match method {
        LoginMethod::Email => return None,
        LoginMethod::Google => SocialProvider::Google,
        LoginMethod::X => SocialProvider::X,
        LoginMethod::Farcaster => SocialProvider::Farcaster,
        LoginMethod::Discord => SocialProvider::Discord,
        LoginMethod::Apple => SocialProvider::Apple,
        LoginMethod::Github => SocialProvider::Github,
        LoginMethod::Facebook => SocialProvider::Facebook,
    })
}

/// Whether the session wants a secure frame: a frame origin is configured and email or a social
/// login is enabled.
pub fn wants_frame(frame_origin: Option<&str>, features: &Features) -> bool {
    frame_origin.is_some() && (features.email || !features.socials.is_empty())
}

/// Spec §5 Display: a Discord username ending in the legacy discriminator `0` loses it.
pub fn display_username(method: LoginMethod, username: Option<String>) -> Option<String> {
    match (method, username) {
        (LoginMethod::Discord, Some(name)) if name.len() > 1 && name.ends_with('0') => Some(name[..name.len() - 1].to_string()),
        (_, name) => name,
    }
}

/// Spec §5 Email: "Please try again after {n} seconds", n the seconds left rounded up.
pub fn cooldown_message(cooldown_until_ms: u64, now_ms: u64) -> String {
    let left_ms = cooldown_until_ms.saturating_sub(now_ms);
    format!("Please try again after {} seconds", left_ms.div_ceil(1000))
}

/// Spec section 5: "Email values must be valid". A dot-atom local part and a domain of at least two
/// LDH labels; quoted local parts and address literals are refused.
pub fn validate_email(email: &str) -> Result<(), DomainError> {
    let invalid = |message: &str| Err(DomainError::InvalidInput { field: "email".into(), message: message.into() });
    if email.len() > MAX_EMAIL_CHARS {
        return invalid("at most 254 characters");
    }
    let Some((local, domain)) = email.rsplit_once('@') else {
        return invalid("an email address needs an @");
    };
    let atom_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c);
    if local.is_empty() || local.len() > MAX_LOCAL_CHARS || local.split('.').any(|atom| atom.is_empty() || !atom.chars().all(atom_char)) {
        return invalid("the part before @ is not a valid mailbox name");
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= MAX_LABEL_CHARS
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if labels.len() < 2 || !labels.iter().all(label_ok) {
        return invalid("the part after @ is not a valid domain");
    }
    Ok(())
}

/// Checks a text the embedded service or the client sent (ids, URLs, messages): bounded, not empty.
pub fn bounded_text(field: &str, value: &str) -> Result<(), DomainError> {
    if value.trim().is_empty() || value.len() > MAX_TEXT_CHARS {
        return Err(DomainError::InvalidInput { field: field.into(), message: format!("1 to {MAX_TEXT_CHARS} characters") });
    }
    Ok(())
}

fn failed_login(message: &str) -> LoginState {
    LoginState { status: LoginStatus::Failed, message: Some(message.to_string()), ..LoginState::default() }
}

pub fn evolve(mut state: EmbeddedState, event: &Event) -> EmbeddedState {
    match event {
        Event::SessionStarted { embedded_frame_origin, .. } => {
            state = EmbeddedState { frame_origin: embedded_frame_origin.clone(), ..EmbeddedState::default() };
        }
        Event::EmbeddedFrameLoading { deadline_ms } => {
            state.frame = FrameState { status: FrameStatus::Loading, frame_id: None, deadline_ms: Some(*deadline_ms) };
        }
        Event::EmbeddedFrameAnnounced { frame_id, ready_at_ms } => {
            state.frame = FrameState { status: FrameStatus::Settling, frame_id: Some(frame_id.clone()), deadline_ms: Some(*ready_at_ms) };
        }
        Event::EmbeddedFrameReady {} => {
            state.frame.status = FrameStatus::Ready;
            state.frame.deadline_ms = None;
        }
        Event::EmbeddedFrameFailed { .. } => {
            state.frame = FrameState { status: FrameStatus::Failed, frame_id: None, deadline_ms: None };
        }
        Event::EmbeddedOtpRequested { email, deadline_ms, cooldown_until_ms } => {
            state.last_effect_id += 1;
            state.login = LoginState {
                status: LoginStatus::SendingOtp,
                method: Some(LoginMethod::Email),
                email: Some(email.clone()),
                deadline_ms: Some(*deadline_ms),
                effect_id: Some(state.last_effect_id),
                ..LoginState::default()
            };
            state.cooldown_until_ms = Some(*cooldown_until_ms);
        }
        Event::EmbeddedOtpSent { challenge_id, step, deadline_ms } => {
            state.login.status = LoginStatus::AwaitingOtp;
            state.login.challenge_id = Some(challenge_id.clone());
            state.login.step = Some(*step);
            state.login.deadline_ms = Some(*deadline_ms);
            state.login.effect_id = None;
            state.login.message = None;
            state.login.attempts_left = None;
        }
        Event::EmbeddedOtpRejected { reason, attempts_left } => {
            if reason.ends_challenge() {
                state.login = failed_login(reason.message());
            } else {
                state.login.message = Some(reason.message().to_string());
                state.login.attempts_left = *attempts_left;
            }
        }
        Event::EmbeddedSocialStarted { provider, deadline_ms } => {
            state.last_effect_id += 1;
            state.login = LoginState {
                status: LoginStatus::SocialStarting,
                method: Some((*provider).into()),
                deadline_ms: Some(*deadline_ms),
                effect_id: Some(state.last_effect_id),
                ..LoginState::default()
            };
        }
        Event::EmbeddedSocialRedirected { url, deadline_ms } => {
            state.login.status = LoginStatus::SocialPopup;
            state.login.social_url = Some(url.clone());
            state.login.deadline_ms = Some(*deadline_ms);
            state.login.effect_id = None;
        }
        Event::EmbeddedLoginFailed { message } => state.login = failed_login(message),
        Event::EmbeddedLoginCancelled {} => state.login = LoginState::default(),
        Event::EmbeddedLoginVerified { user, deadline_ms } => {
            state.user = Some(user.clone());
            let method = state.login.method.or(Some(user.provider));
            state.login = match deadline_ms {
                Some(deadline) => {
                    LoginState { status: LoginStatus::CreatingWallet, method, deadline_ms: Some(*deadline), ..LoginState::default() }
                }
                None => LoginState { status: LoginStatus::Connected, method, ..LoginState::default() },
            };
        }
        Event::EmbeddedWalletBound { wallet } => {
            if let Some(user) = &mut state.user {
                user.wallet_id = Some(wallet.wallet_id.clone());
                user.eip155_address = Some(wallet.eip155_address.clone());
                user.solana_address = Some(wallet.solana_address.clone());
            }
            state.login = LoginState { status: LoginStatus::Connected, method: state.login.method, ..LoginState::default() };
        }
        Event::EmbeddedSignedOut { frame_id } => {
            state.user = None;
            state.login = LoginState::default();
            state.update = UpdateState::default();
            if let Some(frame_id) = frame_id {
                state.last_effect_id += 1;
                state.sign_out = Some(PendingSignOut { frame_id: frame_id.clone(), effect_id: state.last_effect_id });
            }
        }
        Event::EmbeddedSignOutDone {} => state.sign_out = None,
        Event::EmbeddedEmailUpdateStarted { new_email, deadline_ms } => {
            state.last_effect_id += 1;
            state.update = UpdateState {
                status: UpdateStatus::Sending,
                new_email: Some(new_email.clone()),
                message: None,
                deadline_ms: Some(*deadline_ms),
                effect_id: Some(state.last_effect_id),
            };
        }
        Event::EmbeddedEmailUpdateStepped { step, deadline_ms } => {
            state.update.status = match step {
                UpdateStep::Primary => UpdateStatus::PrimaryOtp,
                UpdateStep::Secondary => UpdateStatus::SecondaryOtp,
            };
            state.update.deadline_ms = Some(*deadline_ms);
            state.update.effect_id = None;
            state.update.message = None;
        }
        Event::EmbeddedEmailUpdated { new_email, poll_at_ms } => {
            if let Some(user) = &mut state.user {
                user.email = Some(new_email.clone());
            }
            state.update = UpdateState {
                status: UpdateStatus::Polling,
                new_email: Some(new_email.clone()),
                deadline_ms: Some(*poll_at_ms),
                ..UpdateState::default()
            };
        }
        Event::EmbeddedEmailUpdateFailed { message } => {
            state.update = UpdateState { status: UpdateStatus::Failed, message: Some(message.clone()), ..UpdateState::default() };
        }
        Event::EmbeddedEmailUpdateFinished {} => state.update = UpdateState::default(),
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    let frame: Region = region(
        "frame",
        "/embedded/frame/status",
        "idle",
        &["idle", "loading", "settling", "ready", "failed"],
        vec![
            t(ANY_STATE, "EmbeddedFrameLoading", "loading"),
            t("loading", "EmbeddedFrameAnnounced", "settling"),
            t("settling", "EmbeddedFrameReady", "ready"),
            t("loading", "EmbeddedFrameFailed", "failed"),
        ],
    );
    let login = region(
        "login",
        "/embedded/login/status",
        "idle",
        &["idle", "sendingOtp", "awaitingOtp", "socialStarting", "socialPopup", "creatingWallet", "connected", "failed"],
        vec![
            t(ANY_STATE, "EmbeddedOtpRequested", "sendingOtp"),
            t("sendingOtp", "EmbeddedOtpSent", "awaitingOtp"),
            tg("awaitingOtp", "EmbeddedOtpRejected", "awaitingOtp", "/reason", "wrong"),
            tg("awaitingOtp", "EmbeddedOtpRejected", "failed", "/reason", "expired"),
            tg("awaitingOtp", "EmbeddedOtpRejected", "failed", "/reason", "attempts"),
            t(ANY_STATE, "EmbeddedSocialStarted", "socialStarting"),
            t("socialStarting", "EmbeddedSocialRedirected", "socialPopup"),
            t(ANY_STATE, "EmbeddedLoginFailed", "failed"),
            t(ANY_STATE, "EmbeddedLoginCancelled", "idle"),
            tg(ANY_STATE, "EmbeddedLoginVerified", "connected", "/deadlineMs", serde_json::Value::Null),
            t(ANY_STATE, "EmbeddedLoginVerified", "creatingWallet"),
            t("creatingWallet", "EmbeddedWalletBound", "connected"),
            t(ANY_STATE, "EmbeddedSignedOut", "idle"),
        ],
    );
    let update = region(
        "update",
        "/embedded/update/status",
        "idle",
        &["idle", "sending", "primaryOtp", "secondaryOtp", "polling", "failed"],
        vec![
            t(ANY_STATE, "EmbeddedEmailUpdateStarted", "sending"),
            tg(ANY_STATE, "EmbeddedEmailUpdateStepped", "primaryOtp", "/step", "primary"),
            tg(ANY_STATE, "EmbeddedEmailUpdateStepped", "secondaryOtp", "/step", "secondary"),
            t(ANY_STATE, "EmbeddedEmailUpdated", "polling"),
            t(ANY_STATE, "EmbeddedEmailUpdateFailed", "failed"),
            t(ANY_STATE, "EmbeddedEmailUpdateFinished", "idle"),
            t(ANY_STATE, "EmbeddedSignedOut", "idle"),
        ],
    );
    Statechart {
        id: ID.into(),
        description: "The embedded wallet: the secure frame's load, email OTP and social login, and the change of the user's email.".into(),
        regions: vec![frame, login, update],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_emails_pass() {
        for ok in ["a@b.co", "first.last+tag@mail.example.org", "x_y-z@sub-domain.example"] {
            assert_eq!(validate_email(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn invalid_emails_are_refused_with_the_field_named() {
        for bad in [
            "",
            "plain",
            "@example.com",
            "a@",
            "a@localhost",
            "a..b@example.com",
            ".a@example.com",
            "a@-x.com",
            "a@x..com",
            "a b@example.com",
            "a@exa mple.com",
        ] {
            match validate_email(bad) {
                Err(DomainError::InvalidInput { field, .. }) => assert_eq!(field, "email", "{bad}"),
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
        let long_local = format!("{}@example.com", "a".repeat(65));
        assert!(validate_email(&long_local).is_err());
    }

    #[test]
    fn the_cooldown_message_rounds_the_seconds_left_up() {
        assert_eq!(cooldown_message(30_000, 0), "Please try again after 30 seconds");
        assert_eq!(cooldown_message(30_000, 1), "Please try again after 30 seconds");
        assert_eq!(cooldown_message(30_000, 29_001), "Please try again after 1 seconds");
        assert_eq!(cooldown_message(30_000, 28_999), "Please try again after 2 seconds");
    }

    #[test]
    fn discord_usernames_ending_in_zero_lose_it_and_others_keep_theirs() {
        assert_eq!(display_username(LoginMethod::Discord, Some("alice0".into())), Some("alice".into()));
        assert_eq!(display_username(LoginMethod::Discord, Some("alice7".into())), Some("alice7".into()));
        assert_eq!(display_username(LoginMethod::Github, Some("bob0".into())), Some("bob0".into()));
        assert_eq!(display_username(LoginMethod::Discord, None), None);
    }
}

#[cfg(test)]
mod approval_tests {
    use super::*;
    use crate::machines::requests::{RequestKind, WalletRequest};
    use crate::model::caip::Namespace;

    fn request(connector_id: &str, kind: RequestKind) -> WalletRequest {
        WalletRequest { id: "r1".into(), connector_id: connector_id.into(), namespace: Namespace::Eip155, kind, issued_ms: 0 }
    }

    fn rpc(method: &str) -> RequestKind {
        RequestKind::Rpc { method: method.into(), params: serde_json::Value::Null }
    }

    #[test]
    fn signing_and_sending_requests_to_auth_need_approval_and_nothing_else_does() {
        let sign = RequestKind::SignMessage { message: "m".into(), address: "a".into() };
        for kind in [sign.clone(), rpc("personal_sign"), rpc("eth_signTypedData_v4"), rpc("eth_sendTransaction")] {
            assert!(needs_approval(&request(AUTH_CONNECTOR_ID, kind.clone())), "{kind:?}");
            assert!(!needs_approval(&request("io.metamask", kind.clone())), "another wallet draws its own prompt: {kind:?}");
        }
        for method in ["solana_signMessage", "solana_signTransaction", "solana_signAllTransactions", "solana_signAndSendTransaction"] {
            assert!(needs_approval(&request(AUTH_CONNECTOR_ID, rpc(method))), "{method}");
        }
        // wallet_sendCalls: the embedded wallet does not perform it, so no approval is drawn for it.
        for kind in [
            RequestKind::Connect,
            RequestKind::Sync,
            rpc("eth_getBalance"),
            rpc("wallet_switchEthereumChain"),
            rpc("eth_accounts"),
            rpc("wallet_sendCalls"),
        ] {
            assert!(!needs_approval(&request(AUTH_CONNECTOR_ID, kind.clone())), "{kind:?}");
        }
    }
}
