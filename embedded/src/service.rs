//! The imperative shell: [`EmbeddedService`] holds the stores behind one lock (never held across an
//! await), mails codes, calls providers, and tells the session what happened through the gateway's
//! [`NoticeSink`]. The gateway calls the session-side methods (`send_login_otp`, `start_social`,
//! `start_email_update`, `sign_out`, `forget_session`); the frame routes call the rest.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::binding::{BindingError, verify_binding};
use crate::config::{EmbeddedConfig, ShareKeys, SocialProviderConfig};
use crate::farcaster::{CustodyLookup, FarcasterError, HttpRelay, PendingChannels, RelayClient, RpcCustody};
use crate::frames::{Frame, FrameError, FrameLogin, FrameRegistry, PendingEmailUpdate};
use crate::mail::{MailPurpose, Mailer};
use crate::mail_limits::{MAIL_BUDGET_KEYS, MailBudget, client_key};
use crate::otp::{OtpCode, OtpPurpose, OtpRejected, OtpRejection, OtpStore};
use crate::rpc_limits::{self, ChainCallLimits};
use crate::seal::{FramePublicKey, Sealed, seal_to_frame};
use crate::social::{PendingLogins, SocialError};
use crate::throttle::{Throttle, ThrottleError, ThrottleRules};
use crate::vault::{User, Vault, VaultError};
use crate::{Clock, Entropy, OsEntropy, SystemClock, b64url_decode, normalize_email};

/// What the frame may ask of the chain (filling and sending a transaction), nothing else.
pub const FRAME_RPC_METHODS: &[&str] = &[
    "eth_chainId",
    "eth_getTransactionCount",
    "eth_estimateGas",
    "eth_gasPrice",
    "eth_maxPriorityFeePerGas",
    "eth_getBlockByNumber",
    "eth_sendRawTransaction",
];

/// The largest answer of a frame's chain call, as JSON: a block's header with its transactions'
/// hashes fits; the frame reads nothing larger.
pub const FRAME_RPC_MAX_ANSWER_BYTES: usize = 256 * 1024;

/// A frame's call's params as they go upstream, or why not: blocks are read without their
/// transactions (the frame reads only the base fee), and gas is estimated without state overrides.
fn frame_rpc_params(method: &str, params: serde_json::Value) -> Result<serde_json::Value, EmbeddedError> {
    let refuse = |message: &str| Err(EmbeddedError::BadRequest(message.into()));
    match method {
        "eth_getBlockByNumber" => match params.as_array().map(Vec::as_slice) {
            Some([tag]) | Some([tag, serde_json::Value::Bool(false)]) => Ok(serde_json::json!([tag, false])),
            _ => refuse("eth_getBlockByNumber takes a block and false (the frame reads blocks without their transactions)"),
        },
        "eth_estimateGas" if params.as_array().is_some_and(|params| params.len() > 2) => {
            refuse("eth_estimateGas takes a transaction and a block, without state overrides")
        }
        _ => Ok(params),
    }
}

/// The calls that name an account must name the frame's own (`address`): the frame asks the nonce
/// of, and estimates gas from, its wallet's address only, and the gateway's node is no oracle of
/// other accounts' nonces or of calls from any sender.
fn frame_rpc_for_address(method: &str, params: &serde_json::Value, address: &str) -> Result<(), EmbeddedError> {
    let own = |value: Option<&serde_json::Value>| value.and_then(|v| v.as_str()).is_some_and(|a| a.eq_ignore_ascii_case(address));
    match method {
        "eth_getTransactionCount" if !own(params.get(0)) => {
            Err(EmbeddedError::BadRequest("eth_getTransactionCount takes the wallet's own address".into()))
        }
        "eth_estimateGas" if !own(params.get(0).and_then(|tx| tx.get("from"))) => {
            Err(EmbeddedError::BadRequest("eth_estimateGas takes a transaction from the wallet's own address".into()))
        }
        _ => Ok(()),
    }
}

/// A chain call counted in its user's allowance until dropped: answered, failed, or abandoned by a
/// client that went away while it ran.
struct ChainCallInFlight<'a> {
    service: &'a EmbeddedService,
    user_id: String,
}

impl Drop for ChainCallInFlight<'_> {
    fn drop(&mut self) {
        self.service.state().chain_calls.end(&self.user_id);
    }
}

const OTP_CAPACITY: usize = 10_000;
const FRAME_CAPACITY: usize = 10_000;
const SOCIAL_CAPACITY: usize = 10_000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletAddresses {
    pub wallet_id: String,
    pub eip155_address: String,
    pub solana_address: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoginMethod {
    Email,
    /// The provider's name (google, x, discord, github, apple, facebook).
    Social(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtpStep {
    /// The email has a wallet this browser holds no device share of: the modal says so.
    VerifyDevice,
    VerifyOtp,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtpSent {
    pub challenge_id: String,
    pub step: OtpStep,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmailUpdateStep {
    /// The code mailed to the current address.
    Primary,
    /// The code mailed to the new address.
    Secondary,
}

/// What the session must learn from the embedded service. Never carries a code, share or key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    OtpRejected { reason: OtpRejection, attempts_left: u32 },
    LoginVerified { method: LoginMethod, user_id: String, email: Option<String>, username: Option<String>, wallet: Option<WalletAddresses> },
    WalletBound(WalletAddresses),
    SocialFailed { message: String },
    EmailUpdateStep { step: EmailUpdateStep },
    EmailUpdated { new_email: String },
}

/// Implemented by the gateway: turns notices into runtime commands of the session.
pub trait NoticeSink: Send + Sync + 'static {
    /// `frame_id` is the frame the notice is about: the session takes it only from the frame it
    /// announced itself, since anyone who learnt a session id could register another frame for it.
    fn notify(&self, session_id: &str, frame_id: &str, notice: Notice);
    /// Whether a session is live (frames register only for live sessions, and the frames of
    /// sessions no longer live are the first to go when the registry is full). Only for the id's
    /// one spelling: the registry counts a session's frames by its id as text.
    fn session_is_live(&self, session_id: &str) -> bool;
    /// The project the session belongs to, as recorded when it was created (none: no such
    /// session). A frame takes its project from its session, never from what the frame or its
    /// page says: the users (so the wallets) its logins reach are that project's only.
    fn session_project(&self, session_id: &str) -> ProjectLookup;
}

/// The answer of [`NoticeSink::session_project`].
pub type ProjectLookup = std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send + 'static>>;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RpcFailure {
    pub code: i64,
    pub message: String,
}

/// Implemented by the gateway: one allowed chain call for the frame's logged-in address, through
/// its chain service (which checks eth_sendRawTransaction's sender against `address`).
#[async_trait::async_trait]
pub trait FrameRpc: Send + Sync + 'static {
    async fn call(
        &self,
        session_id: &str,
        address: &str,
        chain_id: &str,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, RpcFailure>;
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoginResult {
    pub user_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    pub wallet: Option<ReleasedWallet>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleasedWallet {
    pub wallet_id: String,
    pub eip155_address: String,
    pub solana_address: String,
    pub server_share: Sealed,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_share: Option<Sealed>,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("{}", .0.reason.message())]
    Otp(OtpRejected),
    /// Within `email_cooldown` of the last code mailed to the address or by the frame.
    #[error("A code was sent moments ago; please try again after {retry_after_secs} seconds")]
    Cooldown { retry_after_secs: u64 },
    /// The user's frames have made their allowance of chain calls (rpc_limits.rs).
    #[error("Too many chain calls; please try again in {retry_after_secs} seconds")]
    RpcRateLimited { retry_after_secs: u64 },
    /// The frame's client address has had `mails_per_ip_per_hour` codes mailed (mail_limits.rs).
    #[error("Too many codes were requested from your network; please try again in {}", crate::throttle::wait_in_words(*.retry_after_secs))]
    EmailRateLimited { retry_after_secs: u64 },
    /// The address took `otp_lockout_failures` wrong codes within `otp_lockout_window`.
    #[error("Too many wrong codes were entered for this email address; try again in {}", crate::throttle::wait_in_words(*.retry_after_secs))]
    Locked { retry_after_secs: u64 },
    #[error("that is not a valid email address")]
    BadEmail,
    #[error("the code could not be mailed")]
    Mail,
    #[error("Failed to initiate social connection")]
    SocialStart,
    #[error("Failed to connect")]
    SocialFailed,
    #[error("Failed to connect to farcaster")]
    FarcasterFailed,
    #[error("unknown or expired frame")]
    Unauthorized,
    #[error("this frame has no verified login")]
    NotLoggedIn,
    #[error("this account already has a wallet")]
    WalletExists,
    #[error("this account has no wallet")]
    NoWallet,
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Binding(#[from] BindingError),
    #[error("That email belongs to another account")]
    EmailTaken,
    #[error("{0}")]
    Busy(String),
    #[error("method {0} is not allowed from the frame")]
    MethodNotAllowed(String),
    #[error("chain calls are not available")]
    RpcUnavailable,
    #[error("unknown session")]
    UnknownSession,
    #[error("Origin must be the frame origin")]
    BadOrigin,
    #[error("request body too large (the limit is 16 KiB)")]
    BodyTooLarge,
    #[error("not found")]
    NotFound,
    #[error("internal error")]
    Internal,
}

impl EmbeddedError {
    /// The frame API's error code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Otp(rejected) => rejected.reason.code(),
            Self::Cooldown { .. } => "email_cooldown",
            Self::EmailRateLimited { .. } => "email_rate_limited",
            Self::RpcRateLimited { .. } => "rate_limited",
            Self::Locked { .. } => "otp_locked",
            Self::BadEmail => "bad_email",
            Self::Mail => "mail_failed",
            Self::SocialStart => "social_start_failed",
            Self::SocialFailed => "social_failed",
            Self::FarcasterFailed => "farcaster_failed",
            Self::Unauthorized => "unauthorized",
            Self::NotLoggedIn => "not_logged_in",
            Self::WalletExists => "wallet_exists",
            Self::NoWallet => "no_wallet",
            Self::BadRequest(_) => "bad_request",
            Self::Binding(_) => "bad_signature",
            Self::EmailTaken => "email_taken",
            Self::Busy(_) => "busy",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::RpcUnavailable => "rpc_unavailable",
            Self::UnknownSession => "unknown_session",
            Self::BadOrigin => "bad_origin",
            Self::BodyTooLarge => "body_too_large",
            Self::NotFound => "not_found",
            Self::Internal => "internal",
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            Self::Otp(_)
            | Self::BadEmail
            | Self::SocialStart
            | Self::SocialFailed
            | Self::FarcasterFailed
            | Self::BadRequest(_)
            | Self::Binding(_) => 400,
            Self::Unauthorized => 401,
            Self::NotLoggedIn | Self::MethodNotAllowed(_) | Self::BadOrigin => 403,
            Self::NoWallet | Self::UnknownSession | Self::NotFound => 404,
            Self::WalletExists | Self::EmailTaken => 409,
            Self::BodyTooLarge => 413,
            Self::Cooldown { .. } | Self::EmailRateLimited { .. } | Self::RpcRateLimited { .. } | Self::Locked { .. } => 429,
            Self::Mail => 502,
            Self::Busy(_) | Self::RpcUnavailable => 503,
            Self::Internal => 500,
        }
    }
}

impl From<FrameError> for EmbeddedError {
    fn from(error: FrameError) -> Self {
        match error {
            FrameError::Unauthorized => Self::Unauthorized,
            FrameError::Full => Self::Busy(error.to_string()),
            FrameError::BadDeviceWallets => Self::BadRequest(error.to_string()),
        }
    }
}

impl From<VaultError> for EmbeddedError {
    fn from(error: VaultError) -> Self {
        match error {
            VaultError::WalletExists => Self::WalletExists,
            VaultError::BadShare => Self::BadRequest(error.to_string()),
            VaultError::EmailTaken => Self::EmailTaken,
            other => {
                tracing::error!(error = %other, "embedded vault failed");
                Self::Internal
            }
        }
    }
}

/// The project's allowed host origins (the frame's frame-ancestors); none = unknown project.
pub type AllowedOrigins = Arc<dyn Fn(&str) -> Option<Vec<String>> + Send + Sync>;

struct State {
    otp: OtpStore,
    frames: FrameRegistry,
    social: PendingLogins,
    farcaster: PendingChannels,
    /// Per client address: the codes its frames may still have mailed (mail_limits.rs).
    mail_budget: MailBudget,
    /// Per logged-in user: the chain calls its frames may still make (rpc_limits.rs).
    chain_calls: ChainCallLimits,
}

/// What mailing one code took from the frame's cooldown and its client address's budget: given
/// back when the mail does not go out.
/// Whether a login may release the recovery share to a frame whose device has no share of the
/// wallet: after a proof of the account (a code, a provider's or Farcaster's answer), yes; for a
/// frame token handed on by a reload, never (the token alone must not open the wallet).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Recovery {
    ToANewDevice,
    Withheld,
}

struct MailTaken {
    frame_id: String,
    client: Option<IpAddr>,
    at_ms: u64,
    /// The frame's last mail before this one; none when the mail did not touch the frame's
    /// cooldown (the second code of an email change).
    frame_previous: Option<Option<u64>>,
}

pub struct EmbeddedService {
    pub(crate) config: EmbeddedConfig,
    pub(crate) providers: BTreeMap<String, SocialProviderConfig>,
    vault: Vault,
    mailer: Arc<dyn Mailer>,
    notices: Arc<dyn NoticeSink>,
    rpc: Option<Arc<dyn FrameRpc>>,
    allowed_origins: AllowedOrigins,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) entropy: Arc<dyn Entropy>,
    pub(crate) http: reqwest::Client,
    relay: Option<Arc<dyn RelayClient>>,
    custody: Option<Arc<dyn CustodyLookup>>,
    state: Mutex<State>,
    /// Per address, durable: wrong codes (the lockout) and the last mail (the cooldown).
    throttle: Throttle,
}

pub struct EmbeddedServiceBuilder {
    config: EmbeddedConfig,
    keys: ShareKeys,
    mailer: Arc<dyn Mailer>,
    notices: Arc<dyn NoticeSink>,
    rpc: Option<Arc<dyn FrameRpc>>,
    allowed_origins: AllowedOrigins,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    db: Option<sled::Db>,
    relay: Option<Arc<dyn RelayClient>>,
    custody: Option<Arc<dyn CustodyLookup>>,
    projects: Vec<String>,
}

impl EmbeddedServiceBuilder {
    /// The gateway's projects (each has the embedded wallet): a vault written before users were
    /// kept per project is migrated to the only one, or to `[embedded] legacy_users_project`,
    /// which must be one of them.
    pub fn projects(mut self, projects: impl IntoIterator<Item = String>) -> Self {
        self.projects = projects.into_iter().collect();
        self
    }
    pub fn rpc(mut self, rpc: Arc<dyn FrameRpc>) -> Self {
        self.rpc = Some(rpc);
        self
    }
    pub fn allowed_origins(mut self, allowed: impl Fn(&str) -> Option<Vec<String>> + Send + Sync + 'static) -> Self {
        self.allowed_origins = Arc::new(allowed);
        self
    }
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
    pub fn entropy(mut self, entropy: Arc<dyn Entropy>) -> Self {
        self.entropy = entropy;
        self
    }
    /// The Farcaster relay (else the configured relay over HTTP).
    pub fn farcaster_relay(mut self, relay: Arc<dyn RelayClient>) -> Self {
        self.relay = Some(relay);
        self
    }
    /// Where custody addresses are read (else `custodyOf` on the configured IdRegistry).
    pub fn custody_lookup(mut self, custody: Arc<dyn CustodyLookup>) -> Self {
        self.custody = Some(custody);
        self
    }
    /// The sled database of the vault (its trees are prefixed `embedded/`); else `data_dir`.
    pub fn db(mut self, db: sled::Db) -> Self {
        self.db = Some(db);
        self
    }

    pub fn build(self) -> Result<EmbeddedService, String> {
        self.config.validate()?;
        let db = match (self.db, &self.config.data_dir) {
            (Some(db), _) => db,
            (None, Some(dir)) => {
                sled::open(dir).map_err(|error| format!("cannot open the embedded vault at {}: {error}", dir.display()))?
            }
            (None, None) => {
                tracing::warn!("[embedded] data_dir is not set: wallets live in a temporary database and vanish on restart");
                sled::Config::new().temporary(true).open().map_err(|error| error.to_string())?
            }
        };
        let throttle = Throttle::open(&db, ThrottleRules::from_config(&self.config)).map_err(|error| error.to_string())?;
        let legacy_project = match (&self.config.legacy_users_project, self.projects.as_slice()) {
            (Some(named), projects) if !projects.is_empty() && !projects.contains(named) => {
                return Err(format!("legacy_users_project {named:?} names no configured project (projects: {})", projects.join(", ")));
            }
            (Some(named), _) => Some(named.clone()),
            (None, [only]) => Some(only.clone()),
            (None, _) => None,
        };
        let vault = Vault::open(db, self.keys, legacy_project.as_deref(), &self.projects).map_err(|error| error.to_string())?;
        let ttl_ms = self.config.otp_ttl.as_millis() as u64;
        let state = State {
            otp: OtpStore::new(&*self.entropy, ttl_ms, self.config.otp_attempts, OTP_CAPACITY),
            frames: FrameRegistry::new(FRAME_CAPACITY),
            social: PendingLogins::new(SOCIAL_CAPACITY),
            farcaster: PendingChannels::new(SOCIAL_CAPACITY),
            mail_budget: MailBudget::new(self.config.mails_per_ip_per_hour, MAIL_BUDGET_KEYS),
            chain_calls: ChainCallLimits::default(),
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("cannot build the provider HTTP client: {error}"))?;
        let (mut relay, mut custody) = (self.relay, self.custody);
        if let Some(farcaster) = &self.config.farcaster {
            if relay.is_none() {
                relay = Some(Arc::new(HttpRelay { http: http.clone(), relay_url: farcaster.relay_url.clone() }));
            }
            if custody.is_none() {
                let id_registry = farcaster
                    .id_registry
                    .parse()
                    .map_err(|_| format!("[embedded.farcaster] id_registry {} is not an address", farcaster.id_registry))?;
                let key_registry = match &farcaster.key_registry {
                    Some(text) => Some(text.parse().map_err(|_| format!("[embedded.farcaster] key_registry {text} is not an address"))?),
                    None => None,
                };
                custody = Some(Arc::new(RpcCustody { http: http.clone(), rpc_url: farcaster.rpc_url.clone(), id_registry, key_registry }));
            }
        }
        Ok(EmbeddedService {
            relay,
            custody,
            providers: self.config.social.clone(),
            config: self.config,
            vault,
            mailer: self.mailer,
            notices: self.notices,
            rpc: self.rpc,
            allowed_origins: self.allowed_origins,
            clock: self.clock,
            entropy: self.entropy,
            http,
            state: Mutex::new(state),
            throttle,
        })
    }
}

fn valid_email(email: &str) -> bool {
    let email = email.trim();
    match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && email.len() <= 254
                && !email.chars().any(|c| c.is_whitespace() || c.is_control() || c == '<' || c == '>' || c == ',')
                && !domain.contains('@')
        }
        None => false,
    }
}

impl EmbeddedService {
    pub fn builder(
        config: EmbeddedConfig,
        keys: ShareKeys,
        mailer: Arc<dyn Mailer>,
        notices: Arc<dyn NoticeSink>,
    ) -> EmbeddedServiceBuilder {
        EmbeddedServiceBuilder {
            config,
            keys,
            mailer,
            notices,
            rpc: None,
            allowed_origins: Arc::new(|_| None),
            clock: Arc::new(SystemClock),
            entropy: Arc::new(OsEntropy),
            db: None,
            relay: None,
            custody: None,
            projects: Vec::new(),
        }
    }

    pub fn config(&self) -> &EmbeddedConfig {
        &self.config
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The frame page's CSP for a project, or none for an unknown project.
    pub fn frame_csp(&self, project_id: &str) -> Option<String> {
        let origins = (self.allowed_origins)(project_id)?;
        // Only plain origins reach the header: a `;` or blank would add directives.
        let ancestors: Vec<String> = origins
            .into_iter()
            .filter(|origin| !origin.is_empty() && origin.chars().all(|c| c.is_ascii_graphic() && c != ';' && c != ',' && c != '\''))
            .collect();
        let ancestors = if ancestors.is_empty() { "'none'".to_owned() } else { ancestors.join(" ") };
        Some(format!("default-src 'self'; frame-ancestors {ancestors}"))
    }

    // ---- session side (called by the gateway) ----

    /// Mails a login code for `email` to the visitor of `session_id` whose frame is `frame_id`.
    pub async fn send_login_otp(&self, session_id: &str, frame_id: &str, email: &str) -> Result<OtpSent, EmbeddedError> {
        if !valid_email(email) {
            return Err(EmbeddedError::BadEmail);
        }
        let email = normalize_email(email);
        // The frame's project: the address's user there, never another project's.
        let project = {
            let now = self.now();
            self.state().frames.of_session(session_id, frame_id, now)?.project.clone()
        };
        let existing_wallet = match self.vault.user_by_email(&project, &email)? {
            Some(user) => self.vault.wallet_of_user(&user.user_id)?,
            None => None,
        };
        let (challenge_id, code, step, taken) = {
            let now = self.now();
            let mut state = self.state();
            self.check_mail(&mut state, session_id, frame_id, &email, now)?;
            let frame = state.frames.of_session(session_id, frame_id, now)?;
            let step = match &existing_wallet {
                Some(wallet) if !frame.device_wallets.contains(&wallet.wallet_id) => OtpStep::VerifyDevice,
                _ => OtpStep::VerifyOtp,
            };
            let (challenge_id, code) = state
                .otp
                .issue(OtpPurpose::Login { email: email.clone() }, frame_id, now, &*self.entropy)
                .map_err(|error| EmbeddedError::Busy(error.to_string()))?;
            self.throttle.record_mail(&email, now)?;
            let taken = self.spend_mail(&mut state, session_id, frame_id, now)?;
            (challenge_id, code, step, taken)
        };
        if let Err(error) = self.mail(&email, &code, MailPurpose::Login, &project).await {
            // Nothing was sent: the code is void and the visitor may retry at once.
            self.state().otp.forget_owner(frame_id);
            self.give_back(taken, Some(&email));
            return Err(error);
        }
        Ok(OtpSent { challenge_id, step })
    }

    /// Whether the frame `frame_id` may have a code mailed to `email` now: not while the address
    /// is locked out for wrong codes, nor within `email_cooldown` of the address's last mail
    /// (both durable, throttle.rs) or of the frame's (whatever the address; the visitor is told
    /// the longer wait), nor once the frame's client address has spent its budget of mails
    /// (mail_limits.rs). Takes the state's guard so that the checks and `spend_mail` happen under
    /// the one lock.
    fn check_mail(&self, state: &mut State, session_id: &str, frame_id: &str, email: &str, now: u64) -> Result<(), EmbeddedError> {
        let frame = state.frames.of_session(session_id, frame_id, now)?;
        let client = frame.client;
        // A mail stamped ahead of now (the clock went back) counts from now: one cooldown at most.
        frame.last_mail_ms = frame.last_mail_ms.map(|at| at.min(now));
        let cooldown_ms = self.config.email_cooldown.as_millis() as u64;
        let frame_wait = match frame.last_mail_ms.map(|at| at.saturating_add(cooldown_ms)) {
            Some(until) if until > now => (until - now).div_ceil(1000).max(1),
            _ => 0,
        };
        let address_wait = match self.throttle.check_mail(email, now) {
            Ok(()) => 0,
            Err(ThrottleError::Cooldown { retry_after_secs }) => retry_after_secs,
            Err(other) => return Err(other.into()),
        };
        let wait = frame_wait.max(address_wait);
        if wait > 0 {
            return Err(EmbeddedError::Cooldown { retry_after_secs: wait });
        }
        state.mail_budget.check(client, now).map_err(|spent| EmbeddedError::EmailRateLimited { retry_after_secs: spent.retry_after_secs })
    }

    /// Records a code the frame is having mailed (after `check_mail`, under the same lock): the
    /// frame's cooldown starts and its client address's budget pays one mail.
    fn spend_mail(&self, state: &mut State, session_id: &str, frame_id: &str, now: u64) -> Result<MailTaken, EmbeddedError> {
        let frame = state.frames.of_session(session_id, frame_id, now)?;
        let frame_previous = frame.last_mail_ms.replace(now);
        let client = frame.client;
        state.mail_budget.take(client, now);
        Ok(MailTaken { frame_id: frame_id.to_owned(), client, at_ms: now, frame_previous: Some(frame_previous) })
    }

    /// The mail did not go out: the frame's cooldown, its client address's mail and (given
    /// `email`) the address's cooldown are given back, so the visitor may retry at once.
    fn give_back(&self, taken: MailTaken, email: Option<&str>) {
        let now = self.now();
        let mut state = self.state();
        if let Some(previous) = taken.frame_previous
            && let Some(frame) = state.frames.get_mut(&taken.frame_id)
            && frame.last_mail_ms == Some(taken.at_ms)
        {
            frame.last_mail_ms = previous;
        }
        state.mail_budget.give_back(taken.client, now);
        drop(state);
        if let Some(email) = email
            && let Err(forget) = self.throttle.forget_mail(email, now)
        {
            tracing::warn!(error = %forget, "the cooldown of a mail that failed stays");
        }
    }

    /// A code of `email` (the challenge of `frame_id`) was refused: a wrong one counts against the
    /// address. Gives the rejection to report (no more attempts left than the address has), or
    /// `Locked` when this one spent the address's budget (its challenge dies then).
    fn count_failure(
        &self,
        state: &mut State,
        frame_id: &str,
        email: Option<&str>,
        rejected: OtpRejected,
        now: u64,
    ) -> Result<OtpRejected, EmbeddedError> {
        let Some(email) = email.filter(|_| rejected.reason != OtpRejection::Expired) else {
            return Ok(rejected);
        };
        let budget = self.throttle.record_failure(email, now)?;
        if let Some(retry_after_secs) = budget.locked_for_secs {
            state.otp.forget_owner(frame_id);
            return Err(EmbeddedError::Locked { retry_after_secs });
        }
        Ok(OtpRejected { attempts_left: rejected.attempts_left.min(budget.left), ..rejected })
    }

    /// A code was refused because its address is locked out: the session hears "too many
    /// attempts" (the challenge is over; a new code is refused with the wait).
    fn refuse_locked(&self, session_id: &str, frame_id: &str, error: EmbeddedError) -> EmbeddedError {
        if matches!(error, EmbeddedError::Locked { .. }) {
            self.notices.notify(session_id, frame_id, Notice::OtpRejected { reason: OtpRejection::Attempts, attempts_left: 0 });
        }
        error
    }

    async fn mail(&self, to: &str, code: &OtpCode, purpose: MailPurpose, project: &str) -> Result<(), EmbeddedError> {
        self.mailer.send_code(to, code, purpose, project).await.map_err(|error| {
            // The error names the transport failure, never the code, nor the address (a relay's
            // refusal quotes it: "550 5.1.1 <ada@example.com>: Recipient address rejected").
            let error = without_address(&error.to_string(), to);
            tracing::warn!(%error, "mailing a one-time code failed");
            EmbeddedError::Mail
        })
    }

    /// Starts changing the login email of the frame's user: a code goes to the current address.
    pub async fn start_email_update(&self, session_id: &str, frame_id: &str, new_email: &str) -> Result<EmailUpdateStep, EmbeddedError> {
        if !valid_email(new_email) {
            return Err(EmbeddedError::BadEmail);
        }
        // Whether another account has the new address is told only once its owner has typed the
        // code mailed to it (`verify_email_update`): refused here, at once and without a mail,
        // the change would tell anyone logged in which addresses have an account.
        let new_email = normalize_email(new_email);
        let (current, code, taken, project) = {
            let now = self.now();
            let mut state = self.state();
            let frame = state.frames.of_session(session_id, frame_id, now)?;
            let login = frame.login.clone().ok_or(EmbeddedError::NotLoggedIn)?;
            let user = self.vault.user(&login.user_id)?.ok_or(EmbeddedError::NotLoggedIn)?;
            if user.project != frame.project {
                return Err(EmbeddedError::Unauthorized);
            }
            let project = user.project;
            let current = user.email.ok_or(EmbeddedError::BadRequest("this account has no email to change".into()))?;
            self.check_mail(&mut state, session_id, frame_id, &current, now)?;
            let purpose = OtpPurpose::UpdatePrimary { user_id: login.user_id, new_email: new_email.clone() };
            let (challenge_id, code) =
                state.otp.issue(purpose, frame_id, now, &*self.entropy).map_err(|error| EmbeddedError::Busy(error.to_string()))?;
            let frame = state.frames.of_session(session_id, frame_id, now)?;
            frame.email_update = Some(PendingEmailUpdate { challenge_id, step: EmailUpdateStep::Primary, new_email });
            self.throttle.record_mail(&current, now)?;
            let taken = self.spend_mail(&mut state, session_id, frame_id, now)?;
            (current, code, taken, project)
        };
        if let Err(error) = self.mail(&current, &code, MailPurpose::UpdatePrimary, &project).await {
            self.give_back(taken, Some(&current));
            return Err(error);
        }
        Ok(EmailUpdateStep::Primary)
    }

    /// Starts a social login; gives the provider's authorization URL for the popup.
    pub fn start_social(&self, session_id: &str, frame_id: &str, provider: &str, host_origin: &str) -> Result<String, EmbeddedError> {
        let Some(provider_config) = self.providers.get(provider) else {
            tracing::warn!(provider, "social login with an unconfigured provider");
            return Err(EmbeddedError::SocialStart);
        };
        let now = self.now();
        let mut state = self.state();
        state.frames.of_session(session_id, frame_id, now).map_err(|_| EmbeddedError::SocialStart)?;
        state
            .social
            .start(provider, provider_config, &self.config.oauth_redirect_uri(), session_id, frame_id, host_origin, now, &*self.entropy)
            .map_err(|error| {
                tracing::warn!(%error, provider, "social login could not start");
                EmbeddedError::SocialStart
            })
    }

    /// Forgets the login of `session_id`'s frame `frame_id` (the visitor disconnected). A frame of
    /// another session is left alone: a page can tell its session any frame id (`FRAME_READY`), so
    /// the id alone must not sign a stranger's frame out.
    pub fn sign_out(&self, session_id: &str, frame_id: &str) {
        let now = self.now();
        let mut state = self.state();
        let Ok(frame) = state.frames.of_session(session_id, frame_id, now) else { return };
        frame.login = None;
        frame.email_update = None;
        state.otp.forget_owner(frame_id);
        state.farcaster.forget(frame_id);
        state.social.forget_frame(frame_id);
    }

    /// Drops the frames of an ended session.
    pub fn forget_session(&self, session_id: &str) {
        let mut state = self.state();
        for frame_id in state.frames.forget_session(session_id) {
            state.otp.forget_owner(&frame_id);
            state.farcaster.forget(&frame_id);
            state.social.forget_frame(&frame_id);
        }
    }

    // ---- frame side (called by the frame routes) ----

    /// Registers a frame of a live session; `client` is the peer address of the request that
    /// registers it (the frame's codes spend that address's budget of mails). The new frame takes
    /// over the latest mail of the session's frames, so its `email_cooldown` does not start afresh.
    /// The frame belongs to its session's project, as the gateway recorded it ([`NoticeSink::
    /// session_project`]), whatever the page that loaded the frame said.
    pub async fn register_frame(
        &self,
        session_id: &str,
        hpke_public_key: &str,
        device_wallets: Vec<String>,
        client: Option<IpAddr>,
    ) -> Result<(String, String), EmbeddedError> {
        let project = self.live_session_project(session_id).await?;
        self.register_frame_of(session_id, &project, hpke_public_key, device_wallets, client)
    }

    /// The project of a live session; an id that names none is `UnknownSession`.
    async fn live_session_project(&self, session_id: &str) -> Result<String, EmbeddedError> {
        if session_id.is_empty() || session_id.len() > 128 || !self.notices.session_is_live(session_id) {
            return Err(EmbeddedError::UnknownSession);
        }
        match self.notices.session_project(session_id).await {
            Some(project) if !project.is_empty() => Ok(project),
            _ => Err(EmbeddedError::UnknownSession),
        }
    }

    fn register_frame_of(
        &self,
        session_id: &str,
        project: &str,
        hpke_public_key: &str,
        device_wallets: Vec<String>,
        client: Option<IpAddr>,
    ) -> Result<(String, String), EmbeddedError> {
        if !self.notices.session_is_live(session_id) {
            return Err(EmbeddedError::UnknownSession);
        }
        let public_key = FramePublicKey::from_b64url(hpke_public_key).map_err(|error| EmbeddedError::BadRequest(error.to_string()))?;
        let now = self.now();
        let mut state = self.state();
        let last_mail_ms = state.frames.last_mail_of_session(session_id, now);
        for dropped in state.frames.make_room(session_id, client.map(client_key), now, |session| self.notices.session_is_live(session)) {
            state.otp.forget_owner(&dropped);
            state.farcaster.forget(&dropped);
            state.social.forget_frame(&dropped);
        }
        let (frame_id, frame_token) = state.frames.register(session_id, public_key, device_wallets, now, &*self.entropy)?;
        let frame = state.frames.get_mut(&frame_id).ok_or(EmbeddedError::Internal)?;
        frame.client = client.map(client_key);
        frame.last_mail_ms = last_mail_ms;
        frame.project = project.to_owned();
        Ok((frame_id, frame_token))
    }

    /// Registers the frame a page reload brought, carrying over the login of the frame it
    /// replaces (`previous_token`, which the frame kept in its own origin's session storage): the
    /// visitor stays logged in across reloads without another code, and the old frame is gone.
    /// Only a frame of the same session, with a live token, hands its login on; the session is
    /// not told again (it already knows the login).
    ///
    /// The token is a bearer secret, so what it hands on is no more than its holder could already
    /// use: the server share only (with the device's own share that signs; a device without one,
    /// e.g. a browser that refused the frame its storage, logs in again), and the old frame's
    /// expiry (a token does not renew itself by being resumed).
    pub async fn resume_frame(
        &self,
        session_id: &str,
        hpke_public_key: &str,
        device_wallets: Vec<String>,
        previous_token: &str,
        client: Option<IpAddr>,
    ) -> Result<(String, String, Option<LoginResult>), EmbeddedError> {
        // The new frame's key is checked before the old frame goes, and the old one goes before the
        // new one registers, so that making room for the new frame cannot drop the login it carries.
        FramePublicKey::from_b64url(hpke_public_key).map_err(|error| EmbeddedError::BadRequest(error.to_string()))?;
        let project = self.live_session_project(session_id).await?;
        let carried = {
            let now = self.now();
            let mut state = self.state();
            match state.frames.authenticate(previous_token, now) {
                Ok(previous) if previous.session_id == session_id && previous.project == project => {
                    let (previous_id, login, expires_ms) = (previous.frame_id.clone(), previous.login.clone(), previous.expires_ms());
                    let last_mail_ms = previous.last_mail_ms;
                    state.frames.remove(&previous_id);
                    state.otp.forget_owner(&previous_id);
                    state.farcaster.forget(&previous_id);
                    state.social.forget_frame(&previous_id);
                    Some((login, expires_ms, last_mail_ms))
                }
                _ => None,
            }
        };
        let (frame_id, frame_token) = self.register_frame_of(session_id, &project, hpke_public_key, device_wallets, client)?;
        let Some((login, previous_expires_ms, previous_mail_ms)) = carried else {
            return Ok((frame_id, frame_token, None));
        };
        let now = self.now();
        let mut state = self.state();
        let frame = state.frames.of_session(session_id, &frame_id, now)?;
        frame.expire_by(previous_expires_ms);
        // The frame it replaces is gone before the new one registers, so its last mail is carried
        // here: a reload does not start a fresh `email_cooldown` (as for a frame registered anew).
        frame.last_mail_ms = frame.last_mail_ms.max(previous_mail_ms);
        let Some(login) = login else {
            return Ok((frame_id, frame_token, None));
        };
        let Some(user) = self.vault.user(&login.user_id)? else {
            return Ok((frame_id, frame_token, None));
        };
        let result = self.release_shares(frame, user, login.method, login.username, Recovery::Withheld)?;
        Ok((frame_id, frame_token, Some(result)))
    }

    pub fn verify_email_otp(&self, frame_token: &str, challenge_id: &str, otp: &str) -> Result<LoginResult, EmbeddedError> {
        let now = self.now();
        let mut state = self.state();
        let frame = state.frames.authenticate(frame_token, now)?;
        let (frame_id, session_id, project) = (frame.frame_id.clone(), frame.session_id.clone(), frame.project.clone());
        if !matches!(state.otp.purpose_of(challenge_id, &frame_id), None | Some(OtpPurpose::Login { .. })) {
            return Err(EmbeddedError::BadRequest("that challenge is not a login".into()));
        }
        // The address the code went to: none of its codes is checked while it is locked out.
        let address = match state.otp.purpose_of(challenge_id, &frame_id) {
            Some(OtpPurpose::Login { email }) => Some(email.clone()),
            _ => None,
        };
        if let Some(address) = &address
            && let Err(locked) = self.throttle.check_locked(address, now)
        {
            state.otp.forget_owner(&frame_id);
            drop(state);
            return Err(self.refuse_locked(&session_id, &frame_id, locked.into()));
        }
        match state.otp.verify(challenge_id, &frame_id, otp, now) {
            Ok(OtpPurpose::Login { email }) => {
                // The user of this address in the frame's project: a code typed into another
                // project's page never reaches this project's wallet, nor the reverse.
                let user = self.vault.login_email_user(&project, &email, now, &*self.entropy)?;
                self.throttle.reset_failures(&email, now)?;
                let frame = state.frames.authenticate(frame_token, now)?;
                self.complete_login(frame, user, LoginMethod::Email, None)
            }
            Ok(_) => Err(EmbeddedError::Internal),
            Err(rejected) => {
                let rejected = match self.count_failure(&mut state, &frame_id, address.as_deref(), rejected, now) {
                    Ok(rejected) => rejected,
                    Err(error) => {
                        drop(state);
                        return Err(self.refuse_locked(&session_id, &frame_id, error));
                    }
                };
                drop(state);
                self.notices.notify(
                    &session_id,
                    &frame_id,
                    Notice::OtpRejected { reason: rejected.reason, attempts_left: rejected.attempts_left },
                );
                Err(EmbeddedError::Otp(rejected))
            }
        }
    }

    /// Records the frame's login, releases the wallet's shares sealed to it and tells the session.
    fn complete_login(
        &self,
        frame: &mut Frame,
        user: User,
        method: LoginMethod,
        username: Option<String>,
    ) -> Result<LoginResult, EmbeddedError> {
        let result = self.release_shares(frame, user, method.clone(), username, Recovery::ToANewDevice)?;
        let addresses = result.wallet.as_ref().map(|wallet| WalletAddresses {
            wallet_id: wallet.wallet_id.clone(),
            eip155_address: wallet.eip155_address.clone(),
            solana_address: wallet.solana_address.clone(),
        });
        self.notices.notify(
            &frame.session_id,
            &frame.frame_id,
            Notice::LoginVerified {
                method,
                user_id: result.user_id.clone(),
                email: result.email.clone(),
                username: result.username.clone(),
                wallet: addresses,
            },
        );
        Ok(result)
    }

    /// Records the frame's login and releases the wallet's shares sealed to it (no notice: the
    /// caller says whether the session learns of it).
    fn release_shares(
        &self,
        frame: &mut Frame,
        user: User,
        method: LoginMethod,
        username: Option<String>,
        recovery: Recovery,
    ) -> Result<LoginResult, EmbeddedError> {
        // Never a share of another project's user to this frame (the vault finds users per
        // project; this holds it for every path that logs a frame in).
        if user.project != frame.project {
            tracing::error!("a login of one project's user reached a frame of another project; refused");
            return Err(EmbeddedError::Unauthorized);
        }
        let wallet = match self.vault.wallet_of_user(&user.user_id)? {
            Some(wallet) => {
                let server_share = self.vault.open_server_share(&wallet)?;
                let server_share = self.seal(frame, &server_share)?;
                let recovery_share = if recovery == Recovery::Withheld || frame.device_wallets.contains(&wallet.wallet_id) {
                    None
                } else {
                    let recovery = self.vault.open_recovery_share(&wallet)?;
                    Some(self.seal(frame, &recovery)?)
                };
                Some(ReleasedWallet {
                    wallet_id: wallet.wallet_id,
                    eip155_address: wallet.eip155_address,
                    solana_address: wallet.solana_address,
                    server_share,
                    recovery_share,
                })
            }
            None => None,
        };
        let username = username.or(user.username.clone());
        frame.login = Some(FrameLogin {
            user_id: user.user_id.clone(),
            email: user.email.clone(),
            username: username.clone(),
            method: method.clone(),
        });
        Ok(LoginResult { user_id: user.user_id, email: user.email, username, wallet })
    }

    fn seal(&self, frame: &Frame, share: &[u8]) -> Result<Sealed, EmbeddedError> {
        seal_to_frame(&frame.public_key, &frame.frame_id, share, &*self.entropy).map_err(|_| EmbeddedError::Internal)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn bind_wallet(
        &self,
        frame_token: &str,
        eip155_address: &str,
        solana_address: &str,
        server_share: &str,
        recovery_share: &str,
        eip155_signature: &str,
        solana_signature: &str,
    ) -> Result<String, EmbeddedError> {
        let now = self.now();
        let mut state = self.state();
        let frame = state.frames.authenticate(frame_token, now)?;
        let login = frame.login.clone().ok_or(EmbeddedError::NotLoggedIn)?;
        let (eip155_address, solana_address) =
            verify_binding(&frame.frame_id, &login.user_id, eip155_address, eip155_signature, solana_address, solana_signature)?;
        let decode =
            |text: &str, name: &str| b64url_decode(text).ok_or_else(|| EmbeddedError::BadRequest(format!("{name} must be base64url")));
        let server_share = decode(server_share, "serverShare")?;
        let recovery_share = decode(recovery_share, "recoveryShare")?;
        let wallet =
            self.vault.bind_wallet(&login.user_id, &eip155_address, &solana_address, &server_share, &recovery_share, &*self.entropy)?;
        // The frame made the key and keeps the device share of it.
        frame.device_wallets.push(wallet.wallet_id.clone());
        let addresses = WalletAddresses {
            wallet_id: wallet.wallet_id.clone(),
            eip155_address: wallet.eip155_address,
            solana_address: wallet.solana_address,
        };
        self.notices.notify(&frame.session_id, &frame.frame_id, Notice::WalletBound(addresses));
        Ok(wallet.wallet_id)
    }

    pub fn release_server_share(&self, frame_token: &str) -> Result<Sealed, EmbeddedError> {
        let now = self.now();
        let mut state = self.state();
        let frame = state.frames.authenticate(frame_token, now)?;
        let login = frame.login.clone().ok_or(EmbeddedError::NotLoggedIn)?;
        let wallet = self.vault.wallet_of_user(&login.user_id)?.ok_or(EmbeddedError::NoWallet)?;
        let share = self.vault.open_server_share(&wallet)?;
        self.seal(frame, &share)
    }

    pub async fn verify_email_update(&self, frame_token: &str, step: EmailUpdateStep, otp: &str) -> Result<(), EmbeddedError> {
        let now = self.now();
        let next = {
            let mut state = self.state();
            let frame = state.frames.authenticate(frame_token, now)?;
            let (frame_id, session_id, client, project) =
                (frame.frame_id.clone(), frame.session_id.clone(), frame.client, frame.project.clone());
            let pending = frame.email_update.clone().ok_or(EmbeddedError::BadRequest("no email change is pending".into()))?;
            if pending.step != step {
                return Err(EmbeddedError::BadRequest("that is not the pending step of the email change".into()));
            }
            // The right primary code has a code mailed to the new address: it spends the client
            // address's budget too (not the frame's cooldown: it follows the first code by design).
            // Refused before the code is checked, so that the code still works once there is room.
            if step == EmailUpdateStep::Primary {
                state
                    .mail_budget
                    .check(client, now)
                    .map_err(|spent| EmbeddedError::EmailRateLimited { retry_after_secs: spent.retry_after_secs })?;
                // The new address's code waits out that address's `email_cooldown` like any other
                // (one code per address per cooldown, whoever asks): checked before the first code
                // is used up, so the visitor types it again after the wait. A lockout is refused
                // below, once the code is right.
                if let Some(OtpPurpose::UpdatePrimary { new_email, .. }) = state.otp.purpose_of(&pending.challenge_id, &frame_id) {
                    match self.throttle.check_mail(new_email, now) {
                        Ok(()) | Err(ThrottleError::Locked { .. }) => {}
                        Err(ThrottleError::Cooldown { retry_after_secs }) => return Err(EmbeddedError::Cooldown { retry_after_secs }),
                        Err(other) => return Err(other.into()),
                    }
                }
            }
            // The address the code went to (the current one, then the new one): none of its codes
            // is checked while it is locked out.
            let address = match state.otp.purpose_of(&pending.challenge_id, &frame_id) {
                Some(OtpPurpose::UpdatePrimary { user_id, .. }) => self.vault.user(user_id)?.and_then(|user| user.email),
                Some(OtpPurpose::UpdateSecondary { new_email, .. }) => Some(new_email.clone()),
                _ => None,
            };
            if let Some(address) = &address
                && let Err(locked) = self.throttle.check_locked(address, now)
            {
                state.otp.forget_owner(&frame_id);
                if let Ok(frame) = state.frames.authenticate(frame_token, now) {
                    frame.email_update = None;
                }
                drop(state);
                return Err(self.refuse_locked(&session_id, &frame_id, locked.into()));
            }
            match state.otp.verify(&pending.challenge_id, &frame_id, otp, now) {
                Ok(OtpPurpose::UpdatePrimary { user_id, new_email }) => {
                    // No code goes to a new address that is locked out.
                    if let Err(locked) = self.throttle.check_locked(&new_email, now) {
                        if let Ok(frame) = state.frames.authenticate(frame_token, now) {
                            frame.email_update = None;
                        }
                        return Err(locked.into());
                    }
                    let purpose = OtpPurpose::UpdateSecondary { user_id, new_email: new_email.clone() };
                    let (challenge_id, code) =
                        state.otp.issue(purpose, &frame_id, now, &*self.entropy).map_err(|error| EmbeddedError::Busy(error.to_string()))?;
                    let frame = state.frames.authenticate(frame_token, now)?;
                    frame.email_update =
                        Some(PendingEmailUpdate { challenge_id, step: EmailUpdateStep::Secondary, new_email: new_email.clone() });
                    state.mail_budget.take(client, now);
                    self.throttle.record_mail(&new_email, now)?;
                    let taken = MailTaken { frame_id: frame_id.clone(), client, at_ms: now, frame_previous: None };
                    Some((session_id, frame_id, new_email, code, taken, project))
                }
                Ok(OtpPurpose::UpdateSecondary { user_id, new_email }) => {
                    // `EmailTaken` here goes to whoever proved they read the new address's mail.
                    let updated = self.vault.update_email(&user_id, &new_email);
                    let frame = state.frames.authenticate(frame_token, now)?;
                    frame.email_update = None;
                    let user = updated?;
                    if let Some(login) = frame.login.as_mut() {
                        login.email = user.email.clone();
                    }
                    drop(state);
                    self.notices.notify(&session_id, &frame_id, Notice::EmailUpdated { new_email });
                    None
                }
                Ok(OtpPurpose::Login { .. }) => return Err(EmbeddedError::Internal),
                Err(rejected) => {
                    let rejected = match self.count_failure(&mut state, &frame_id, address.as_deref(), rejected, now) {
                        Ok(rejected) => rejected,
                        Err(error) => {
                            if let Ok(frame) = state.frames.authenticate(frame_token, now) {
                                frame.email_update = None;
                            }
                            drop(state);
                            return Err(self.refuse_locked(&session_id, &frame_id, error));
                        }
                    };
                    if rejected.reason != OtpRejection::Wrong
                        && let Ok(frame) = state.frames.authenticate(frame_token, now)
                    {
                        frame.email_update = None;
                    }
                    drop(state);
                    self.notices.notify(
                        &session_id,
                        &frame_id,
                        Notice::OtpRejected { reason: rejected.reason, attempts_left: rejected.attempts_left },
                    );
                    return Err(EmbeddedError::Otp(rejected));
                }
            }
        };
        if let Some((session_id, frame_id, new_email, code, taken, project)) = next {
            if let Err(error) = self.mail(&new_email, &code, MailPurpose::UpdateSecondary, &project).await {
                self.give_back(taken, Some(&new_email));
                return Err(error);
            }
            self.notices.notify(&session_id, &frame_id, Notice::EmailUpdateStep { step: EmailUpdateStep::Secondary });
        }
        Ok(())
    }

    /// One allowed chain call for the frame's logged-in EVM address.
    pub async fn frame_rpc(
        &self,
        frame_token: &str,
        chain_id: &str,
        method: &str,
        params: serde_json::Value,
    ) -> Result<Result<serde_json::Value, RpcFailure>, EmbeddedError> {
        if !FRAME_RPC_METHODS.contains(&method) {
            return Err(EmbeddedError::MethodNotAllowed(method.chars().take(64).collect()));
        }
        if !chain_id.starts_with("eip155:") {
            return Err(EmbeddedError::BadRequest("chainId must be an eip155 CAIP-2 id".into()));
        }
        let params = frame_rpc_params(method, params)?;
        let rpc = self.rpc.as_ref().ok_or(EmbeddedError::RpcUnavailable)?;
        let (session_id, address, call) = {
            let now = self.now();
            let mut state = self.state();
            let frame = state.frames.authenticate(frame_token, now)?;
            let login = frame.login.clone().ok_or(EmbeddedError::NotLoggedIn)?;
            let session_id = frame.session_id.clone();
            let wallet = self.vault.wallet_of_user(&login.user_id)?.ok_or(EmbeddedError::NoWallet)?;
            frame_rpc_for_address(method, &params, &wallet.eip155_address)?;
            state.chain_calls.begin(&login.user_id, now).map_err(|refusal| match refusal {
                rpc_limits::Refusal::RateLimited { retry_after_secs } => EmbeddedError::RpcRateLimited { retry_after_secs },
                rpc_limits::Refusal::TooManyInFlight => EmbeddedError::RpcRateLimited { retry_after_secs: 1 },
                rpc_limits::Refusal::Busy => EmbeddedError::Busy("too many wallets are making chain calls; try again later".into()),
            })?;
            (session_id, wallet.eip155_address, ChainCallInFlight { service: self, user_id: login.user_id })
        };
        let answer = rpc.call(&session_id, &address, chain_id, method, params).await;
        drop(call);
        Ok(answer.and_then(|result| {
            let bytes = serde_json::to_vec(&result).map_or(usize::MAX, |json| json.len());
            if bytes > FRAME_RPC_MAX_ANSWER_BYTES {
                return Err(RpcFailure { code: -32603, message: format!("the answer is larger than {FRAME_RPC_MAX_ANSWER_BYTES} bytes") });
            }
            Ok(result)
        }))
    }

    /// The host origin of a pending social login (the callback page posts its result there).
    pub fn callback_host_origin(&self, state_param: &str) -> Option<String> {
        let now = self.now();
        self.state().social.host_origin(state_param, now)
    }

    pub async fn complete_social(&self, frame_token: &str, result_uri: &str) -> Result<LoginResult, EmbeddedError> {
        let now = self.now();
        let (session_id, frame_id, project, pending) = {
            let mut state = self.state();
            let frame = state.frames.authenticate(frame_token, now)?;
            let (session_id, frame_id, project) = (frame.session_id.clone(), frame.frame_id.clone(), frame.project.clone());
            let taken = crate::social::parse_result_uri(self.config.frame_origin(), result_uri)
                .and_then(|result| state.social.take(&result.state, &session_id, &frame_id, now).map(|pending| (result, pending)));
            (session_id, frame_id, project, taken)
        };
        let outcome = match pending {
            Ok((result, pending)) => self.finish_social(frame_token, &project, result, pending).await,
            Err(error) => Err(error),
        };
        outcome.map_err(|error| {
            // Escaped (`?`): the error may quote what a provider, a relay or the page sent.
            tracing::warn!(error = ?error.to_string(), "social login failed");
            self.notices.notify(&session_id, &frame_id, Notice::SocialFailed { message: "Failed to connect".into() });
            match error {
                SocialError::Frame(inner) => inner,
                _ => EmbeddedError::SocialFailed,
            }
        })
    }

    async fn finish_social(
        &self,
        frame_token: &str,
        project: &str,
        result: crate::social::CallbackResult,
        pending: crate::social::PendingSocial,
    ) -> Result<LoginResult, SocialError> {
        let provider = self.providers.get(&pending.provider).ok_or(SocialError::UnknownProvider)?;
        let code = result.code.ok_or(SocialError::Provider(result.error.unwrap_or_else(|| "no code".into())))?;
        let identity = crate::social::identify(
            &self.http,
            &pending.provider,
            provider,
            &self.config.oauth_redirect_uri(),
            &code,
            &pending,
            self.now(),
        )
        .await?;
        let now = self.now();
        let user = self
            .vault
            .login_social_user(project, &pending.provider, &identity.subject, identity.username.as_deref(), now, &*self.entropy)
            .map_err(|error| SocialError::Frame(error.into()))?;
        let mut state = self.state();
        let frame = state.frames.authenticate(frame_token, now).map_err(|error| SocialError::Frame(error.into()))?;
        if frame.session_id != pending.session_id {
            return Err(SocialError::StateMismatch);
        }
        let mut user = user;
        if user.email.is_none() {
            // Display only (see Vault::login_social_user).
            user.email = identity.email.clone();
        }
        self.complete_login(frame, user, LoginMethod::Social(pending.provider.clone()), identity.username).map_err(SocialError::Frame)
    }

    /// Starts a Farcaster login: opens a relay channel with a fresh nonce for the frame and gives
    /// the URL the visitor opens (or scans) with a Farcaster app.
    pub async fn start_farcaster(&self, session_id: &str, frame_id: &str) -> Result<String, EmbeddedError> {
        let fail = |error: FarcasterError| {
            tracing::warn!(%error, "a Farcaster login could not start");
            EmbeddedError::FarcasterFailed
        };
        let (Some(config), Some(relay)) = (&self.config.farcaster, &self.relay) else {
            return Err(fail(FarcasterError::NotConfigured));
        };
        let now = self.now();
        let nonce = crate::random_hex(&*self.entropy, 16);
        {
            let mut state = self.state();
            state.frames.of_session(session_id, frame_id, now).map_err(|_| EmbeddedError::FarcasterFailed)?;
            if !state.farcaster.has_room(frame_id, now) {
                return Err(fail(FarcasterError::Full));
            }
        }
        let request = crate::farcaster::channel_request(config, self.config.frame_origin(), &nonce, now);
        let channel = relay.create_channel(&request).await.map_err(fail)?;
        if channel.nonce != nonce {
            return Err(fail(FarcasterError::BadAnswer("the channel does not carry the nonce asked for".into())));
        }
        crate::farcaster::check_channel(&channel).map_err(fail)?;
        self.state().farcaster.insert(
            frame_id,
            crate::farcaster::PendingFarcaster {
                session_id: session_id.to_owned(),
                channel_token: channel.channel_token,
                nonce,
                domain: request.domain,
                siwe_uri: request.siwe_uri,
                expires_ms: now.saturating_add(crate::farcaster::PENDING_TTL_MS),
            },
        );
        Ok(channel.url)
    }

    /// Waits for the frame's Farcaster channel to complete (polling the relay), checks the signed
    /// message and its signer against the fid's custody address, and logs the frame in.
    pub async fn complete_farcaster(&self, frame_token: &str) -> Result<LoginResult, EmbeddedError> {
        let now = self.now();
        let (session_id, frame_id, project, pending) = {
            let mut state = self.state();
            let frame = state.frames.authenticate(frame_token, now)?;
            let (session_id, frame_id, project) = (frame.session_id.clone(), frame.frame_id.clone(), frame.project.clone());
            let pending = state.farcaster.take(&frame_id, &session_id, now);
            (session_id, frame_id, project, pending)
        };
        let outcome = match pending {
            Ok(pending) => self.finish_farcaster(frame_token, &project, pending).await,
            Err(error) => Err(SocialError::Provider(error.to_string())),
        };
        outcome.map_err(|error| {
            tracing::warn!(error = ?error.to_string(), "Farcaster login failed");
            self.notices.notify(&session_id, &frame_id, Notice::SocialFailed { message: crate::farcaster::FARCASTER_FAILED.into() });
            match error {
                SocialError::Frame(inner @ EmbeddedError::Unauthorized) => inner,
                _ => EmbeddedError::FarcasterFailed,
            }
        })
    }

    async fn finish_farcaster(
        &self,
        frame_token: &str,
        project: &str,
        pending: crate::farcaster::PendingFarcaster,
    ) -> Result<LoginResult, SocialError> {
        let as_social = |error: FarcasterError| SocialError::Provider(error.to_string());
        let (Some(config), Some(relay), Some(custody)) = (&self.config.farcaster, &self.relay, &self.custody) else {
            return Err(as_social(FarcasterError::NotConfigured));
        };
        let status = crate::farcaster::poll_until_completed(
            &**relay,
            &pending.channel_token,
            config.poll_interval,
            config.max_polls(),
            config.poll_timeout,
        )
        .await
        .map_err(as_social)?;
        let signed = crate::farcaster::check_completed(&status, &pending, self.now()).map_err(as_social)?;
        let custody_address = custody.custody_of(signed.fid).await.map_err(as_social)?;
        if custody_address != signed.signer && !custody.is_auth_address(signed.fid, signed.signer).await.map_err(as_social)? {
            return Err(as_social(FarcasterError::NotCustody));
        }
        let now = self.now();
        let subject = signed.fid.to_string();
        let user = self
            .vault
            .login_social_user(project, "farcaster", &subject, signed.username.as_deref(), now, &*self.entropy)
            .map_err(|error| SocialError::Frame(error.into()))?;
        let mut state = self.state();
        let frame = state.frames.authenticate(frame_token, now).map_err(|error| SocialError::Frame(error.into()))?;
        if frame.session_id != pending.session_id {
            return Err(SocialError::StateMismatch);
        }
        self.complete_login(frame, user, LoginMethod::Social("farcaster".into()), signed.username).map_err(SocialError::Frame)
    }

    /// The raw stored values of the vault (tests check no share is stored in the clear).
    pub fn vault_raw_values(&self) -> Vec<Vec<u8>> {
        self.vault.raw_values()
    }

    /// The id of the user of `project` whose login address is `email` (for tests).
    pub fn vault_user_id_by_email(&self, project: &str, email: &str) -> Option<String> {
        self.vault.user_by_email(project, &normalize_email(email)).ok().flatten().map(|user| user.user_id)
    }
}

/// `text` with every spelling of `address` (any case) replaced by `<recipient>`.
fn without_address(text: &str, address: &str) -> String {
    if address.is_empty() {
        return text.to_string();
    }
    let (lower, needle) = (text.to_lowercase(), address.to_lowercase());
    // Lower-casing can change byte lengths outside ASCII: then only the exact spelling is replaced.
    if lower.len() != text.len() || needle.len() != address.len() {
        return text.replace(address, "<recipient>");
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    for (at, _) in lower.match_indices(&needle) {
        out.push_str(&text[rest..at]);
        out.push_str("<recipient>");
        rest = at + needle.len();
    }
    out.push_str(&text[rest..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mail_servers_refusal_is_logged_without_the_address() {
        let refusal = "permanent error (550): 5.1.1 <Ada@Example.com>: Recipient address rejected";
        assert_eq!(without_address(refusal, "ada@example.com"), "permanent error (550): 5.1.1 <<recipient>>: Recipient address rejected");
        // The positive side: an error that names no address is unchanged.
        assert_eq!(without_address("connection refused", "ada@example.com"), "connection refused");
    }

    #[test]
    fn given_addresses_when_checked_then_only_plausible_single_mailboxes_pass() {
        assert!(valid_email("a@example.com"));
        assert!(valid_email(" A.b+c@sub.example.org "));
        for bad in [
            "",
            "a",
            "a@b",
            "@example.com",
            "a@.com",
            "a b@example.com",
            "a@example.com, b@example.com",
            "<a@example.com>",
            "a@b@example.com",
        ] {
            assert!(!valid_email(bad), "{bad}");
        }
    }
}
