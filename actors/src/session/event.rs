//! Every event a session can record. One flat enum so each event type is one name in the log, in the
//! statecharts and on the wire; each machine's `evolve` reacts to the variants that concern it.
//!
//! Changing a variant's payload incompatibly means bumping its schema version in
//! [`Event::schema_version`] and adding an upcaster in `session::upcast`; the log is never rewritten.

use serde::{Deserialize, Serialize};
use strum::{IntoStaticStr, VariantNames};
use ts_rs::TS;

use crate::machines::activity::{ActivityFetch, ActivityPage};
use crate::machines::balances::{BalanceFetch, BalancesSnapshot};
use crate::machines::connection::Account;
use crate::machines::embedded_wallet::{EmbeddedUser, EmbeddedWalletInfo, OtpRejection, OtpStep, UpdateStep};
use crate::machines::host_requests::HostRequest;
use crate::machines::network_switch::SwitchStep;
use crate::machines::requests::{WalletOutcome, WalletRequest};
use crate::machines::router::{NavigationMode, RouteParams, View};
use crate::machines::send::{PreparedSolanaTransfer, SendForm, SentStatus, SolanaSend, Transfer};
use crate::machines::siwx::{SignInSession, SiwxChallenge};
use crate::machines::toasts::{PauseReason, ToastDismissal, ToastVariant};
use crate::model::caip::{CaipNetworkId, Namespace};
use crate::model::connector::{Connector, RecentWallet};
use crate::model::networks::{ChainDefinition, NetworkRef};
use crate::model::options::{SessionOptions, SocialProvider};
use crate::session::ClientErrorKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, IntoStaticStr, VariantNames)]
#[serde(tag = "type", content = "payload", rename_all_fields = "camelCase")]
pub enum Event {
    // --- session ---
    /// The first event of every session: where it runs and the host app's validated options, with the
    /// networks resolved (so a replay does not depend on today's catalogue).
    SessionStarted {
        project: String,
        origin: String,
        options: SessionOptions,
        networks: Vec<ChainDefinition>,
        /// The networks this gateway's chain service serves (balances, activity, sends, reads).
        /// Absent in sessions started before the chain service existed.
        #[serde(default)]
        served_networks: Vec<CaipNetworkId>,
        /// The secure frame's origin (the gateway's `[embedded] frame_origin`); absent when this
        /// gateway has no embedded wallet, and in sessions started before it existed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        embedded_frame_origin: Option<String>,
    },

    // --- modal ---
    ModalOpened {},
    ModalClosed {},

    // --- router ---
    Navigated {
        view: View,
        #[ts(optional)]
        #[serde(default, skip_serializing_if = "Option::is_none")]
        params: Option<RouteParams>,
        mode: NavigationMode,
    },
    WentBack {
        to: View,
    },

    // --- connection ---
    ConnectorsUpdated {
        connectors: Vec<Connector>,
    },
    ConnectStarted {
        namespace: Namespace,
        connector_id: String,
        request_id: String,
    },
    Connected {
        namespace: Namespace,
        connector_id: String,
        accounts: Vec<Account>,
        network: NetworkRef,
        /// The session's networks the account can sign on, when the wallet listed its chains
        /// (`NamespaceConnection::signable_networks`); absent in logs written before it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        signable_networks: Option<Vec<CaipNetworkId>>,
    },
    ConnectFailed {
        namespace: Namespace,
        connector_id: String,
        /// The wallet's error code, if the wallet answered with one.
        #[ts(type = "number | null")]
        code: Option<i64>,
        message: String,
    },
    SyncStarted {
        namespace: Namespace,
        connector_id: String,
        request_id: String,
    },
    Synced {
        namespace: Namespace,
        accounts: Vec<Account>,
        network: NetworkRef,
        /// As in `Connected`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        signable_networks: Option<Vec<CaipNetworkId>>,
    },
    SyncFailed {
        namespace: Namespace,
        message: String,
    },
    AccountsChanged {
        namespace: Namespace,
        accounts: Vec<Account>,
    },
    NetworkChanged {
        namespace: Namespace,
        network: NetworkRef,
    },
    Disconnected {
        namespace: Namespace,
        reason: String,
    },
    RecentWalletUsed {
        wallet: RecentWallet,
    },
    /// The visitor switched the active chain namespace (`SwitchActiveNamespace`, or confirming
    /// SwitchActiveChain); the namespace may have no connected account yet.
    ActiveNamespaceChanged {
        namespace: Namespace,
    },

    // --- toasts ---
    ToastQueued {
        id: String,
        message: String,
        variant: ToastVariant,
        #[ts(type = "number | null")]
        auto_close_ms: Option<u64>,
        #[ts(type = "number")]
        at_ms: u64,
    },
    ToastShown {
        id: String,
        #[ts(type = "number | null")]
        deadline_ms: Option<u64>,
    },
    ToastDismissed {
        id: String,
        reason: ToastDismissal,
    },
    ToastReshowScheduled {
        #[ts(type = "number")]
        at_ms: u64,
    },
    ToastReshowCancelled {},
    ToastsCleared {},
    ToastPauseStarted {
        reason: PauseReason,
        #[ts(type = "number")]
        at_ms: u64,
    },
    ToastPauseEnded {
        reason: PauseReason,
        #[ts(type = "number")]
        at_ms: u64,
        /// No other reason keeps the timers paused.
        resumed: bool,
    },

    // --- wallet requests ---
    WalletRequestIssued {
        request: WalletRequest,
    },
    WalletRequestSettled {
        id: String,
        outcome: WalletOutcome,
    },
    WalletRequestCancelled {
        id: String,
        reason: String,
    },
    WalletRequestsDrained {},

    // --- siwx ---
    /// A sign-in message was built for the active account, with a fresh single-use nonce.
    SiwxChallengeIssued {
        challenge: SiwxChallenge,
    },
    SiwxSignRequested {
        request_id: String,
        #[ts(type = "string | null")]
        toast_id: Option<String>,
    },
    /// The wallet refused to sign (EIP-1193 4001); the same message can be signed again.
    SiwxDeclined {
        message: String,
    },
    /// The signature is not the account's EIP-191 signature: the account may be a contract, whose
    /// `isValidSignature` the runtime asks on chain.
    SiwxContractCheckStarted {
        signature: String,
    },
    /// The signature did not verify; its nonce is spent.
    SiwxVerificationFailed {
        code: String,
        message: String,
    },
    SiwxSignedIn {
        session: SignInSession,
    },
    SiwxCancelled {},
    /// A sign-in session ended: `reason` is `revoked`, `expired` or `disconnected`.
    SiwxSignedOut {
        account: String,
        reason: String,
    },

    // --- balances ---
    /// The active account's balances are wanted; the runtime asks the chain service.
    BalancesRequested {
        fetch: BalanceFetch,
    },
    BalancesLoaded {
        #[ts(type = "number")]
        id: u64,
        balances: BalancesSnapshot,
        #[ts(type = "number")]
        at_ms: u64,
    },
    /// Spec §8: "Token Balance Unavailable"; no retry before `retryBlockedUntilMs`.
    BalancesFailed {
        #[ts(type = "number")]
        id: u64,
        message: String,
        #[ts(type = "number")]
        retry_blocked_until_ms: u64,
    },
    BalancesCleared {},

    // --- activity ---
    ActivityRequested {
        fetch: ActivityFetch,
    },
    ActivityLoaded {
        #[ts(type = "number")]
        id: u64,
        page: ActivityPage,
    },
    /// Spec §4: the list is emptied and the cursor cleared.
    ActivityFailed {
        #[ts(type = "number")]
        id: u64,
        message: String,
    },
    ActivityCleared {},

    // --- send ---
    SendFormChanged {
        form: SendForm,
    },
    /// The form did not validate (spec §5's messages).
    SendRejected {
        message: String,
    },
    /// The connected wallet was asked to send `transfer`.
    SendSubmitted {
        transfer: Transfer,
    },
    /// A Solana send: the chain service is asked to build the transaction of `transfer`.
    SolanaSendStarted {
        send: SolanaSend,
        transfer: Transfer,
    },
    /// The chain service built the transaction; the wallet is asked to sign it (`request_id`).
    SolanaTransferPrepared {
        #[ts(type = "number")]
        id: u64,
        prepared: PreparedSolanaTransfer,
        request_id: String,
    },
    /// The wallet signed it (base64); the chain service is asked to send it.
    SolanaTransferSigned {
        #[ts(type = "number")]
        id: u64,
        signed: String,
    },
    SendSucceeded {
        hash: String,
        #[ts(type = "number")]
        sent_ms: u64,
    },
    /// The wallet or its node refused (spec §8's transaction error catalogue).
    SendFailed {
        #[ts(type = "number | null")]
        code: Option<i64>,
        message: String,
    },
    /// Spec: resetSend clears every send field.
    SendReset {},
    /// What the node's receipt says of a transaction sent from this session.
    ReceiptRecorded {
        hash: String,
        status: SentStatus,
        #[ts(type = "number | null")]
        block_number: Option<u64>,
    },

    // --- network switch ---
    NetworkSwitchStarted {
        target: CaipNetworkId,
        request_id: String,
        step: SwitchStep,
    },
    NetworkSwitchFailed {
        #[ts(type = "number | null")]
        code: Option<i64>,
        message: String,
    },
    NetworkSwitchFinished {},
    NetworkSwitchCancelled {},

    // --- host requests ---
    /// The host app's provider asked something (`HostRequest`); how it is answered is its route.
    HostRequestReceived {
        request: HostRequest,
    },
    /// A host request's answer: what the host's promise resolves or rejects with.
    HostRequestSettled {
        id: String,
        outcome: WalletOutcome,
    },
    /// Answers dropped (oldest first) so that the answers kept stay within their bytes' budget
    /// (`host_requests::MAX_SETTLED_JSON_BYTES`).
    HostAnswersForgotten {
        ids: Vec<String>,
    },
    HostRequestsDrained {},
    /// Spec §4: a signing request waits on the transaction stack.
    TransactionStackPushed {
        id: String,
        /// The modal was opened for it (and closes when the stack empties).
        opened_modal: bool,
    },
    /// Spec §4: popped on success or error.
    TransactionStackPopped {
        id: String,
    },

    // --- embedded wallet (docs/embedded-wallet.md). No event carries an OTP, a share or a key. ---
    /// The page loads the secure frame; it must announce itself before `deadlineMs` (20 s).
    EmbeddedFrameLoading {
        #[ts(type = "number")]
        deadline_ms: u64,
    },
    /// The frame announced itself (`FRAME_READY`); it is ready at `readyAtMs` (spec: + 500 ms).
    EmbeddedFrameAnnounced {
        frame_id: String,
        #[ts(type = "number")]
        ready_at_ms: u64,
    },
    EmbeddedFrameReady {},
    /// The frame did not load in time (spec §8 alert).
    EmbeddedFrameFailed {
        message: String,
    },
    /// An email login: the embedded service is asked to mail a code to `email`.
    EmbeddedOtpRequested {
        email: String,
        #[ts(type = "number")]
        deadline_ms: u64,
        #[ts(type = "number")]
        cooldown_until_ms: u64,
    },
    /// The code was mailed; the visitor types it into the modal, which hands it to the frame.
    EmbeddedOtpSent {
        challenge_id: String,
        step: OtpStep,
        #[ts(type = "number")]
        deadline_ms: u64,
    },
    EmbeddedOtpRejected {
        reason: OtpRejection,
        #[ts(type = "number | null")]
        attempts_left: Option<u32>,
    },
    /// A social login: the embedded service is asked for the provider's authorization URL.
    EmbeddedSocialStarted {
        provider: SocialProvider,
        #[ts(type = "number")]
        deadline_ms: u64,
    },
    /// The popup is sent to the provider's authorization URL.
    EmbeddedSocialRedirected {
        url: String,
        #[ts(type = "number")]
        deadline_ms: u64,
    },
    EmbeddedLoginFailed {
        message: String,
    },
    EmbeddedLoginCancelled {},
    /// The embedded service verified the login: the user, and (`deadlineMs` null) their wallet,
    /// or (`deadlineMs` set) the frame creates one before then.
    EmbeddedLoginVerified {
        user: EmbeddedUser,
        #[ts(type = "number | null")]
        deadline_ms: Option<u64>,
    },
    /// The frame's new wallet was bound to the user.
    EmbeddedWalletBound {
        wallet: EmbeddedWalletInfo,
    },
    /// The embedded user signed out; the frame `frameId` (if any) is told to forget its login.
    EmbeddedSignedOut {
        #[ts(type = "string | null")]
        frame_id: Option<String>,
    },
    /// The embedded service heard of the sign-out.
    EmbeddedSignOutDone {},
    EmbeddedEmailUpdateStarted {
        new_email: String,
        #[ts(type = "number")]
        deadline_ms: u64,
    },
    /// The embedded service mailed the change's code to the current (primary) or new (secondary) address.
    EmbeddedEmailUpdateStepped {
        step: UpdateStep,
        #[ts(type = "number")]
        deadline_ms: u64,
    },
    /// The user's email is now `newEmail`; the modal polls once more at `pollAtMs`, then closes.
    EmbeddedEmailUpdated {
        new_email: String,
        #[ts(type = "number")]
        poll_at_ms: u64,
    },
    EmbeddedEmailUpdateFailed {
        message: String,
    },
    EmbeddedEmailUpdateFinished {},

    // --- client ---
    /// The widget reported a problem of its own (`ReportClientError`). No machine moves.
    ClientErrorReported {
        kind: ClientErrorKind,
        detail: String,
    },
}

impl Event {
    /// The event's type as stored in the log and named in statecharts.
    pub fn type_name(&self) -> &'static str {
        self.into()
    }

    /// The regions of the session state this event may change (its type decides; see
    /// [`crate::session::regions_touched_by`]).
    pub fn regions(&self) -> crate::session::Regions {
        crate::session::regions_touched_by(self)
    }

    /// Every event type.
    pub fn type_names() -> &'static [&'static str] {
        Self::VARIANTS
    }

    /// The current schema version of an event type. Bump it when a payload changes incompatibly and
    /// teach `session::upcast` to convert the older version.
    pub fn schema_version(type_name: &str) -> u32 {
        match type_name {
            // v2 renamed `rdns` to `wallet.rdns` and added `name` (see session::upcast).
            "RecentWalletUsed" => 2,
            // v2: `params.switchToChain` is a namespace (`solana`), no longer a network id.
            "Navigated" => 2,
            _ => 1,
        }
    }

    /// The event's payload, as the log stores it.
    pub fn payload(&self) -> serde_json::Value {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(mut map)) => map.remove("payload").unwrap_or(serde_json::json!({})),
            _ => serde_json::json!({}),
        }
    }

    /// The event's payload as the JSON text the log stores and the diff carries, written once
    /// from the typed event (no `serde_json::Value` in between). serde writes an adjacently
    /// tagged event as `{"type":"<name>","payload":<payload>}`, so the payload is that text
    /// without its envelope; the same value as [`Event::payload`], with the members in the
    /// order the event declares them.
    pub fn payload_json(&self) -> vestibule_store::Payload {
        let mut text = serde_json::to_string(self).expect("an event serializes");
        // Checked piece by piece: building the expected head would allocate once per event.
        let payload_start = text
            .strip_prefix(r#"{"type":""#)
            .and_then(|rest| rest.strip_prefix(self.type_name()))
            .and_then(|rest| rest.strip_prefix(r#"","payload":"#))
            .filter(|_| text.ends_with('}'))
            .map(|payload| text.len() - payload.len());
        let Some(payload_start) = payload_start else { panic!("an event serializes as its type, then its payload: {text}") };
        text.truncate(text.len() - 1);
        text.drain(..payload_start);
        vestibule_store::Payload::from_serialized(text)
    }

    /// Rebuilds an event from its stored type and (current-version) payload.
    pub fn from_parts(type_name: &str, payload: serde_json::Value) -> Result<Event, serde_json::Error> {
        serde_json::from_value(serde_json::json!({ "type": type_name, "payload": payload }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_text_is_the_payload_value_with_the_members_in_declared_order() {
        let events = [
            Event::ConnectFailed {
                namespace: Namespace::Eip155,
                connector_id: "io.\"example\"".into(),
                code: Some(4001),
                message: "Connection rejected ✗".into(),
            },
            Event::ModalClosed {},
        ];
        for e in events {
            let text = e.payload_json();
            assert_eq!(text.to_value(), e.payload(), "{}", e.type_name());
            assert_eq!(Event::from_parts(e.type_name(), text.to_value()).unwrap(), e);
        }
        let text =
            Event::ConnectFailed { namespace: Namespace::Eip155, connector_id: "c".into(), code: None, message: "m".into() }.payload_json();
        assert!(text.json().starts_with(r#"{"namespace":"eip155","connectorId":"c""#), "{}", text.json());
    }

    #[test]
    fn events_round_trip_through_type_and_payload() {
        let e = Event::ConnectFailed {
            namespace: Namespace::Eip155,
            connector_id: "io.example".into(),
            code: Some(4001),
            message: "Connection rejected".into(),
        };
        assert_eq!(e.type_name(), "ConnectFailed");
        assert_eq!(e.payload()["connectorId"], "io.example");
        assert_eq!(Event::from_parts(e.type_name(), e.payload()).unwrap(), e);
        let empty = Event::ModalClosed {};
        assert_eq!(Event::from_parts("ModalClosed", empty.payload()).unwrap(), empty);
    }
}
