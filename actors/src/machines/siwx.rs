//! Sign-in with the connected wallet (SIWX: EIP-4361 for `eip155`, Sign-In With Solana for `solana`).
//!
//! The server builds the message (its nonce is single use and bound to this session), the browser
//! only asks the wallet to sign it, and the server verifies the signature: EIP-191 recovery and
//! ed25519 here, in the decision; a contract account (EIP-1271) needs chain state, so the decision
//! records a pending check and the runtime performs it, answering with
//! `Command::SiwxContractChecked`. A verified signature stores a sign-in session per CAIP-10
//! account; sessions expire at the message's expiration time (a deadline in the state).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{ANY_STATE, Statechart, region, t};
use crate::session::Event;

pub const ID: &str = "siwx";

/// Spec messages (section 8).
pub const SIGNATURE_DECLINED: &str = "Signature declined";
pub const INIT_FAILED: &str = "A problem occurred while trying initialize authentication";
pub const AUTHENTICATING: &str = "Authenticating...";
pub const NOT_ENABLED: &str = "SIWX is not enabled";
pub const NO_ACTIVE_ADDRESS: &str = "No ActiveCaipAddress found";
pub const NO_ACTIVE_NETWORK: &str = "No ActiveCaipNetwork or client found";
pub const BOTH_CONFIGS: &str = "Cannot set both `siweConfig` and `siwx` options";
/// Shown when a signature does not verify (the spec does not name this case).
pub const VERIFICATION_FAILED: &str = "The signature could not be verified";

/// Default validity of a sign-in (the message's Expiration Time), when the host sets none.
pub const DEFAULT_EXPIRES_IN_SECONDS: u64 = 24 * 60 * 60;
/// At most this many sign-in sessions are kept per modal session (oldest dropped first).
pub const MAX_SESSIONS: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum SiwxStatus {
    /// No sign-in is being asked for.
    #[default]
    Idle,
    /// A message is ready; the visitor has not asked the wallet to sign it yet (or declined).
    Ready,
    /// The wallet was asked to sign; the Sign button is disabled.
    Signing,
    /// A contract account's signature is being checked on chain (EIP-1271).
    Verifying,
}

/// How a signature was proven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum SiwxMethod {
    Eip191,
    Eip1271,
    Ed25519,
}

/// A message the server built for the active account, waiting for its signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SiwxChallenge {
    /// CAIP-10 account the message is for.
    pub account: String,
    /// CAIP-2 network.
    pub chain: String,
    pub nonce: String,
    /// The exact text the wallet signs.
    pub message: String,
    #[ts(type = "number")]
    pub issued_ms: u64,
    #[ts(type = "number")]
    pub expires_ms: u64,
    /// The wallet request asking for the signature, while one is pending.
    #[ts(type = "string | null")]
    pub request_id: Option<String>,
    /// The "Authenticating..." toast shown while signing and verifying.
    #[ts(type = "string | null")]
    pub toast_id: Option<String>,
    /// A signature waiting for the on-chain (EIP-1271) check.
    #[ts(type = "string | null")]
    pub signature: Option<String>,
}

/// What the runtime must check on chain: `isValidSignature(hash(message), signature)` at `address`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ContractCheck {
    pub nonce: String,
    pub address: String,
    pub chain: String,
    pub message: String,
    pub signature: String,
}

/// A verified sign-in (spec: data, message, signature, optionally cacao).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SignInSession {
    /// Unique within the modal session (`si1`, `si2`, ...); the token's `sis` claim.
    pub id: String,
    /// CAIP-10 account.
    pub account: String,
    pub chain: String,
    pub message: String,
    pub signature: String,
    pub method: SiwxMethod,
    #[ts(type = "number")]
    pub issued_ms: u64,
    #[ts(type = "number")]
    pub expires_ms: u64,
    /// CAIP-74 CACAO, when the wallet produced one (not for plain `personal_sign`).
    #[ts(type = "unknown")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacao: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SiwxState {
    pub status: SiwxStatus,
    pub challenge: Option<SiwxChallenge>,
    /// The message the SIWXSignMessage view shows under the button ("Signature declined").
    #[ts(type = "string | null")]
    pub error: Option<String>,
    /// Sign-in sessions by CAIP-10 account.
    pub sessions: BTreeMap<String, SignInSession>,
    #[ts(type = "number")]
    pub next_session: u64,
}

impl SiwxState {
    pub fn session_for(&self, account: &str) -> Option<&SignInSession> {
        self.sessions.get(account)
    }

    /// The on-chain check the runtime must perform, if any.
    pub fn pending_contract_check(&self) -> Option<ContractCheck> {
        let c = self.challenge.as_ref()?;
        if self.status != SiwxStatus::Verifying {
            return None;
        }
        Some(ContractCheck {
            nonce: c.nonce.clone(),
            address: c.account.rsplit(':').next().unwrap_or_default().to_string(),
            chain: c.chain.clone(),
            message: c.message.clone(),
            signature: c.signature.clone()?,
        })
    }

    /// When the earliest sign-in session expires.
    pub fn next_deadline(&self) -> Option<u64> {
        self.sessions.values().map(|s| s.expires_ms).min()
    }

    pub fn next_session_id(&self) -> String {
        format!("si{}", self.next_session + 1)
    }
}

pub fn evolve(mut state: SiwxState, event: &Event) -> SiwxState {
    match event {
        Event::SiwxChallengeIssued { challenge } => {
            // A message issued right after a failed verification keeps that failure on show.
            let after_failure = state.status == SiwxStatus::Idle && state.challenge.is_none();
            if !after_failure {
                state.error = None;
            }
            state.status = SiwxStatus::Ready;
            state.challenge = Some(challenge.clone());
        }
        Event::SiwxSignRequested { request_id, toast_id } => {
            state.status = SiwxStatus::Signing;
            state.error = None;
            if let Some(c) = state.challenge.as_mut() {
                c.request_id = Some(request_id.clone());
                c.toast_id = toast_id.clone();
            }
        }
        Event::SiwxDeclined { message } => {
            state.status = SiwxStatus::Ready;
            state.error = Some(message.clone());
            if let Some(c) = state.challenge.as_mut() {
                c.request_id = None;
                c.toast_id = None;
            }
        }
        Event::SiwxContractCheckStarted { signature } => {
            state.status = SiwxStatus::Verifying;
            if let Some(c) = state.challenge.as_mut() {
                c.request_id = None;
                c.signature = Some(signature.clone());
            }
        }
        Event::SiwxVerificationFailed { message, .. } => {
            // The nonce is spent: the decision issues a new challenge after this event.
            state.status = SiwxStatus::Idle;
            state.challenge = None;
            state.error = Some(message.clone());
        }
        Event::SiwxSignedIn { session } => {
            state.status = SiwxStatus::Idle;
            state.challenge = None;
            state.error = None;
            state.next_session += 1;
            state.sessions.insert(session.account.clone(), session.clone());
            while state.sessions.len() > MAX_SESSIONS {
                let oldest = state.sessions.values().min_by_key(|s| s.issued_ms).map(|s| s.account.clone());
                match oldest {
                    Some(account) => state.sessions.remove(&account),
                    None => break,
                };
            }
        }
        Event::SiwxCancelled {} => {
            state.status = SiwxStatus::Idle;
            state.challenge = None;
            state.error = None;
        }
        Event::SiwxSignedOut { account, .. } => {
            state.sessions.remove(account);
        }
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    Statechart {
        id: ID.into(),
        description: "Sign-in with the wallet: message, signature, verification.".into(),
        regions: vec![region(
            ID,
            "/siwx/status",
            "idle",
            &["idle", "ready", "signing", "verifying"],
            vec![
                // From any state: a new account or a spent nonce replaces the message.
                t(ANY_STATE, "SiwxChallengeIssued", "ready"),
                t("ready", "SiwxSignRequested", "signing"),
                t("signing", "SiwxDeclined", "ready"),
                t("signing", "SiwxContractCheckStarted", "verifying"),
                t("signing", "SiwxSignedIn", "idle"),
                t("verifying", "SiwxSignedIn", "idle"),
                t("signing", "SiwxVerificationFailed", "idle"),
                t("verifying", "SiwxVerificationFailed", "idle"),
                t("ready", "SiwxCancelled", "idle"),
                t("signing", "SiwxCancelled", "idle"),
                t("verifying", "SiwxCancelled", "idle"),
            ],
        )],
    }
}
