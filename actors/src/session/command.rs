//! Commands: what a session is asked to do. `ClientCommand`s arrive over the wire from the widget;
//! `Command::Start` and `Command::Tick` come from the runtime itself (session creation, a deadline
//! that fell due) and cannot be sent by a client.

use serde::{Deserialize, Serialize};
use strum::IntoStaticStr;
use ts_rs::TS;

use crate::machines::activity::ActivityPage;
use crate::machines::balances::BalancesSnapshot;
use crate::machines::embedded_wallet::{EmbeddedWalletInfo, LoginMethod, OtpRejection, OtpStep, UpdateStep};
use crate::machines::requests::WalletOutcome;
use crate::machines::router::{RouteParams, View};
use crate::machines::send::{PreparedSolanaTransfer, SendForm, SolanaSubmitFailure};
use crate::machines::toasts::ToastVariant;
use crate::model::caip::CaipNetworkId;
use crate::model::caip::Namespace;
use crate::model::connector::DiscoveredWallet;
use crate::model::options::{SessionOptions, SocialProvider};
use crate::session::ClientErrorKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, IntoStaticStr)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum ClientCommand {
    /// A page (re)loaded and attached: stored connections are re-synced with the wallet.
    PageLoaded {},
    OpenModal {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        view: Option<View>,
    },
    CloseModal {},
    Navigate {
        view: View,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        params: Option<RouteParams>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        replace: Option<bool>,
    },
    GoBack {},
    /// The wallets the browser discovered (EIP-6963 announcements and a legacy injected provider).
    ReportWallets {
        wallets: Vec<DiscoveredWallet>,
    },
    SelectConnector {
        connector_id: String,
    },
    /// The Connect view's email form: asks the embedded service to mail a code (docs/embedded-wallet.md).
    ConnectEmail {
        email: String,
    },
    /// A social login button of the Connect view.
    ConnectSocial {
        provider: SocialProvider,
    },
    /// The host bridge heard the secure frame's `FRAME_READY`.
    EmbeddedFrameReady {
        frame_id: String,
    },
    /// The social login's popup was closed before the login finished.
    SocialPopupClosed {},
    /// Back from an email or social login in progress: the Connect view.
    CancelEmbeddedLogin {},
    /// The UpdateEmailWallet view: change the embedded user's email to `email`.
    UpdateEmail {
        email: String,
    },
    /// The host bridge's request to the frame failed, or got no answer within 120 s.
    EmbeddedRequestFailed {
        message: String,
    },
    Disconnect {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        namespace: Option<Namespace>,
    },
    /// Make `namespace` the active one: at once when it holds a connected account, else the modal
    /// shows SwitchActiveChain (spec section 2).
    SwitchActiveNamespace {
        namespace: Namespace,
    },
    /// The SwitchActiveChain view's button: switch to its namespace and go where its params say
    /// (Connect, to connect a wallet there).
    ConfirmSwitchActiveChain {},
    /// The outcome of a wallet request the session issued.
    ResolveWalletRequest {
        request_id: String,
        outcome: WalletOutcome,
    },
    /// EIP-1193 `accountsChanged`, or a Wallet Standard `change` event's accounts.
    WalletAccountsChanged {
        connector_id: String,
        accounts: Vec<String>,
    },
    /// EIP-1193 `chainChanged`.
    WalletChainChanged {
        connector_id: String,
        chain_id: String,
    },
    /// EIP-1193 `disconnect`.
    WalletDisconnected {
        connector_id: String,
    },
    ShowToast {
        message: String,
        variant: ToastVariant,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional, type = "number")]
        duration_ms: Option<u64>,
        /// Never closes by itself.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        persistent: Option<bool>,
    },
    DismissToast {
        id: String,
    },
    /// A swipe gesture on a toast; the server decides whether it dismisses.
    SwipeToast {
        id: String,
        distance_px: f64,
        elapsed_ms: f64,
    },
    SetToastHover {
        hovered: bool,
    },
    SetToastInteraction {
        active: bool,
    },
    SetPageVisibility {
        hidden: bool,
    },
    /// The Sign button of the SIWXSignMessage view: ask the wallet to sign the server's message.
    SiwxSign {},
    /// The Cancel button of the SIWXSignMessage view.
    SiwxCancel {},
    /// Sign out: end the sign-in session of `account` (CAIP-10), or of the active account.
    SiwxSignOut {
        #[ts(optional)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        account: Option<String>,
    },
    /// The Tokens tab or the Account header wants the balances (a no-op while they are fresh, and
    /// for 30 s after a failed fetch).
    RefreshBalances {},
    /// The Activity tab: the newest page, or (`more`) the next one.
    LoadActivity {
        #[serde(default)]
        more: bool,
    },
    /// The Send view's form as typed so far (kept across reloads).
    SetSendForm {
        form: SendForm,
    },
    /// The Send view's Send button: validate `form` and ask the connected wallet to send it.
    SubmitSend {
        form: SendForm,
    },
    ResetSend {},
    /// The Networks view: ask the connected wallet to switch to `network`.
    SwitchNetwork {
        network: CaipNetworkId,
    },
    /// The SwitchNetwork view's retry after a failure.
    RetrySwitchNetwork {},
    /// An EIP-1193 request of the host app (its provider), answered through the session: its answer
    /// is `hostRequests.items[requestId].outcome` in the state.
    HostRequest {
        request_id: String,
        method: String,
        #[serde(default)]
        #[ts(type = "unknown")]
        params: serde_json::Value,
    },
    /// The ApproveTransaction view's Cancel: the visitor refuses the host's request `request_id`
    /// (on the transaction stack); the host gets 4001 and the wallet's prompt is withdrawn.
    CancelHostRequest {
        request_id: String,
    },
    /// A problem in the widget itself (its mirrored chart disagreed with the state, a view failed to
    /// render). Recorded as `ClientErrorReported`; changes nothing else. Never carries secrets.
    ReportClientError {
        kind: ClientErrorKind,
        detail: String,
    },
}

impl ClientCommand {
    pub fn type_name(&self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Client(ClientCommand),
    /// Creates the session (runtime only).
    Start {
        project: String,
        origin: String,
        options: SessionOptions,
        served_networks: Vec<CaipNetworkId>,
        /// The secure frame's origin when this gateway serves the embedded wallet.
        embedded_frame_origin: Option<String>,
    },
    /// A deadline in the state fell due (runtime only).
    Tick,
    /// The runtime's answer to a pending on-chain signature check (EIP-1271) for the challenge
    /// with `nonce`: `Ok(())` when the contract accepted the signature, else why not.
    SiwxContractChecked {
        nonce: String,
        verdict: Result<(), String>,
    },
    /// The chain service's answer to the balance fetch `id` (runtime only).
    BalancesFetched {
        id: u64,
        outcome: Result<BalancesSnapshot, String>,
    },
    /// The chain service's answer to the activity fetch `id` (runtime only).
    ActivityFetched {
        id: u64,
        outcome: Result<ActivityPage, String>,
    },
    /// What the node's receipt says of a transaction this session sent (runtime only).
    ReceiptObserved {
        hash: String,
        outcome: ReceiptOutcome,
    },
    /// The chain service's answer to a host's safe read (runtime only).
    HostReadAnswered {
        request_id: String,
        outcome: WalletOutcome,
    },
    /// The chain service built the transaction of Solana send `id`, or why not (runtime only).
    SolanaSendPrepared {
        id: u64,
        outcome: Result<PreparedSolanaTransfer, String>,
    },
    /// The chain service sent Solana send `id`'s signed transaction: its signature, or why not
    /// (runtime only).
    SolanaSendSubmitted {
        id: u64,
        outcome: Result<String, SolanaSubmitFailure>,
    },
    // The embedded service's answers and notices (docs/embedded-wallet.md; runtime only). None
    // carries an OTP, a share or a key.
    /// The login code was mailed (`step`: a new device is verified first).
    EmbeddedOtpSent {
        challenge_id: String,
        step: OtpStep,
    },
    EmbeddedOtpSendFailed {
        message: String,
    },
    /// The embedded service refused the code the frame sent it.
    EmbeddedOtpRejected {
        reason: OtpRejection,
        attempts_left: Option<u32>,
        /// The frame a notice of the embedded service is about (`None`: the outcome of the
        /// session's own effect): refused unless it is the frame this session announced.
        from_frame: Option<String>,
    },
    /// The social login's authorization URL, for the popup.
    EmbeddedSocialRedirect {
        provider: SocialProvider,
        url: String,
    },
    EmbeddedSocialFailed {
        message: String,
        /// The frame a notice of the embedded service is about (`None`: the outcome of the
        /// session's own effect): refused unless it is the frame this session announced.
        from_frame: Option<String>,
    },
    /// The login was verified: the user and, if they have one, their wallet.
    EmbeddedLoginVerified {
        method: LoginMethod,
        user_id: String,
        email: Option<String>,
        username: Option<String>,
        wallet: Option<EmbeddedWalletInfo>,
        /// The frame a notice of the embedded service is about (`None`: the outcome of the
        /// session's own effect): refused unless it is the frame this session announced.
        from_frame: Option<String>,
    },
    /// The frame's new wallet was bound to the user.
    EmbeddedWalletBound {
        wallet_id: String,
        eip155_address: String,
        solana_address: String,
        /// The frame a notice of the embedded service is about (`None`: the outcome of the
        /// session's own effect): refused unless it is the frame this session announced.
        from_frame: Option<String>,
    },
    /// An email change's code was mailed to the current (primary) or new (secondary) address.
    EmbeddedEmailUpdateStep {
        step: UpdateStep,
        /// The frame a notice of the embedded service is about (`None`: the outcome of the
        /// session's own effect): refused unless it is the frame this session announced.
        from_frame: Option<String>,
    },
    EmbeddedEmailUpdateFailed {
        message: String,
    },
    EmbeddedEmailUpdated {
        new_email: String,
        /// The frame a notice of the embedded service is about (`None`: the outcome of the
        /// session's own effect): refused unless it is the frame this session announced.
        from_frame: Option<String>,
    },
    /// The embedded service heard of a sign-out (the effect finished).
    EmbeddedSignOutDone,
}

/// What became of a sent transaction when the runtime stopped waiting for its receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiptOutcome {
    Mined {
        success: bool,
        block_number: u64,
    },
    /// No receipt within the wait, or the node could not be asked (why).
    NotMined(String),
}

impl Command {
    /// The same effect's answer as a failure saying `why`, for an answer that succeeded but cannot
    /// be kept (its events are larger than the log takes): the session then shows the failure it
    /// would show for a node that could not answer, instead of waiting for the answer for good.
    /// `None` for anything else, a failure already among them (so there is no loop).
    pub fn failed_effect_answer(&self, why: &str) -> Option<Command> {
        let why = why.to_string();
        match self {
            Command::BalancesFetched { id, outcome: Ok(_) } => Some(Command::BalancesFetched { id: *id, outcome: Err(why) }),
            Command::ActivityFetched { id, outcome: Ok(_) } => Some(Command::ActivityFetched { id: *id, outcome: Err(why) }),
            Command::HostReadAnswered { request_id, outcome: WalletOutcome::Ok { .. } } => Some(Command::HostReadAnswered {
                request_id: request_id.clone(),
                outcome: WalletOutcome::Error { code: crate::machines::host_requests::codes::INTERNAL, message: why },
            }),
            Command::SolanaSendPrepared { id, outcome: Ok(_) } => Some(Command::SolanaSendPrepared { id: *id, outcome: Err(why) }),
            _ => None,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Command::Client(c) => c.type_name(),
            Command::Start { .. } => "Start",
            Command::Tick => "Tick",
            Command::SiwxContractChecked { .. } => "SiwxContractChecked",
            Command::BalancesFetched { .. } => "BalancesFetched",
            Command::ActivityFetched { .. } => "ActivityFetched",
            Command::ReceiptObserved { .. } => "ReceiptObserved",
            Command::HostReadAnswered { .. } => "HostReadAnswered",
            Command::SolanaSendPrepared { .. } => "SolanaSendPrepared",
            Command::SolanaSendSubmitted { .. } => "SolanaSendSubmitted",
            Command::EmbeddedOtpSent { .. } => "EmbeddedOtpSent",
            Command::EmbeddedOtpSendFailed { .. } => "EmbeddedOtpSendFailed",
            Command::EmbeddedOtpRejected { .. } => "EmbeddedOtpRejected",
            Command::EmbeddedSocialRedirect { .. } => "EmbeddedSocialRedirect",
            Command::EmbeddedSocialFailed { .. } => "EmbeddedSocialFailed",
            Command::EmbeddedLoginVerified { .. } => "EmbeddedLoginVerified",
            Command::EmbeddedWalletBound { .. } => "EmbeddedWalletBound",
            Command::EmbeddedEmailUpdateStep { .. } => "EmbeddedEmailUpdateStep",
            Command::EmbeddedEmailUpdateFailed { .. } => "EmbeddedEmailUpdateFailed",
            Command::EmbeddedEmailUpdated { .. } => "EmbeddedEmailUpdated",
            Command::EmbeddedSignOutDone => "EmbeddedSignOutDone",
        }
    }
}

impl From<ClientCommand> for Command {
    fn from(c: ClientCommand) -> Self {
        Command::Client(c)
    }
}
