//! The SIWX flow's decisions (spec sections 4, 5 and 8). The machine's data and evolve are in
//! `machines::siwx`; the message grammar and verification in `crate::siwx`.

use time::OffsetDateTime;

use super::{Decision, disconnect, wallet_error_message};
use crate::machines::connection::ConnectionStatus;
use crate::machines::requests::{RequestKind, WalletOutcome, WalletRequest};
use crate::machines::router::{NavigationMode, View};
use crate::machines::siwx::{
    self, AUTHENTICATING, INIT_FAILED, NO_ACTIVE_ADDRESS, NO_ACTIVE_NETWORK, NOT_ENABLED, SIGNATURE_DECLINED, SignInSession, SiwxChallenge,
    SiwxMethod, SiwxStatus, VERIFICATION_FAILED,
};
use crate::machines::toasts::{self, ToastDismissal, ToastVariant};
use crate::model::caip::{CaipAddress, Namespace};
use crate::session::{DomainError, Event, SessionState};
use crate::siwx::{self as message, MessageFields, SignatureMethod, SiwxMessage, VerifyError, VerifyPolicy};

/// The account a sign-in would be for: CAIP-10, namespace, CAIP-2 chain, address.
struct Target {
    account: String,
    namespace: Namespace,
    chain: String,
    address: String,
    connector_id: String,
}

/// The active account, checked in the spec's order: SIWX enabled, an active address, an active
/// supported network.
fn target(state: &SessionState) -> Result<Target, DomainError> {
    if state.options.sign_in().is_none() {
        return Err(DomainError::SignInUnavailable(NOT_ENABLED));
    }
    let ns = state.connection.active_namespace.ok_or(DomainError::SignInUnavailable(NO_ACTIVE_ADDRESS))?;
    let conn = state.connection.namespace(ns);
    let address = match (&conn.status, &conn.address) {
        (ConnectionStatus::Connected, Some(a)) => a.clone(),
        _ => return Err(DomainError::SignInUnavailable(NO_ACTIVE_ADDRESS)),
    };
    let network = conn.network.as_ref().filter(|n| n.supported).ok_or(DomainError::SignInUnavailable(NO_ACTIVE_NETWORK))?;
    if !matches!(ns, Namespace::Eip155 | Namespace::Solana) {
        return Err(DomainError::SignInUnavailable(NO_ACTIVE_NETWORK));
    }
    Ok(Target {
        account: format!("{}:{address}", network.caip_network_id),
        namespace: ns,
        chain: network.caip_network_id.to_string(),
        address,
        connector_id: conn.connector_id.clone().unwrap_or_default(),
    })
}

fn datetime(ms: u64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// The message's `Chain ID` for the session's CAIP-2 network: the decimal EIP-155 id, or the SIWS
/// cluster name (`mainnet`, `devnet`, `testnet`; `localnet` for another Solana network).
fn message_chain_id(namespace: Namespace, caip2: &str) -> String {
    match namespace {
        Namespace::Solana => message::SolanaChainRef::for_caip2(caip2).to_string(),
        _ => caip2.split_once(':').map(|(_, r)| r.to_string()).unwrap_or_default(),
    }
}

/// The CAIP-2 network the message itself names (what verification binds): the session's network,
/// or `solana:localnet` for a Solana network outside the three clusters.
fn message_caip2(caip2: &str) -> String {
    if caip2.starts_with("solana:") { message::SolanaChainRef::for_caip2(caip2).caip2().to_string() } else { caip2.to_string() }
}

/// Builds the message for `target`, bound to the session's origin and a fresh nonce.
fn build_challenge(state: &SessionState, t: &Target, now_ms: u64, nonce: &str) -> Result<SiwxChallenge, String> {
    let options = state.options.sign_in().ok_or("sign-in is not enabled")?;
    // A page's Origin is `scheme://authority`; `null` (sandboxed frames, file://) cannot be bound.
    let (scheme, authority) = state.origin.split_once("://").ok_or_else(|| format!("origin {:?} has no authority", state.origin))?;
    let (siwx_ns, address) = match t.namespace {
        Namespace::Eip155 => {
            let parsed: alloy_primitives::Address = t.address.parse().map_err(|e| format!("address: {e}"))?;
            (message::Namespace::Eip155, parsed.to_checksum(None))
        }
        _ => (message::Namespace::Solana, t.address.clone()),
    };
    let reference = message_chain_id(t.namespace, &t.chain);
    let expires_ms = now_ms + options.expires_in_seconds.unwrap_or(siwx::DEFAULT_EXPIRES_IN_SECONDS) * 1000;
    let fields = MessageFields {
        scheme: Some(scheme.to_string()),
        domain: Some(authority.to_string()),
        address: Some(address),
        statement: options.statement.clone(),
        uri: Some(state.origin.clone()),
        version: Some("1".into()),
        chain_id: Some(reference),
        nonce: Some(nonce.to_string()),
        issued_at: Some(message::Timestamp::from_datetime(datetime(now_ms)).as_str().to_string()),
        expiration_time: Some(message::Timestamp::from_datetime(datetime(expires_ms)).as_str().to_string()),
        ..Default::default()
    };
    let built = SiwxMessage::from_fields(siwx_ns, &fields).map_err(|e| e.to_string())?;
    Ok(SiwxChallenge {
        account: t.account.clone(),
        chain: t.chain.clone(),
        nonce: nonce.to_string(),
        message: built.to_message(),
        issued_ms: now_ms,
        expires_ms,
        request_id: None,
        toast_id: None,
        signature: None,
    })
}

/// Ends the pending sign request and the "Authenticating..." toast of the challenge, if any.
fn settle_pending(d: &mut Decision, reason: &str) {
    let Some(challenge) = d.state.siwx.challenge.clone() else { return };
    if let Some(id) = challenge.request_id.filter(|id| d.state.requests.get(id).is_some()) {
        d.end_request(Event::WalletRequestCancelled { id, reason: reason.into() });
    }
    dismiss_toast(d);
}

fn dismiss_toast(d: &mut Decision) {
    let Some(id) = d.state.siwx.challenge.as_ref().and_then(|c| c.toast_id.clone()) else { return };
    if let Ok(events) = toasts::dismiss(&d.state.toasts, &id, ToastDismissal::Closed, d.now_ms) {
        d.extend(events);
    }
}

/// After a connect, an account change or a network change: when sign-in is enabled and the active
/// account has no sign-in session, issue a message and show SIWXSignMessage. Returns whether the
/// sign-in flow took over the modal (so the caller must not route elsewhere).
pub(super) fn request_if_needed(d: &mut Decision) -> bool {
    let Ok(t) = target(&d.state) else {
        return false;
    };
    if d.state.siwx.session_for(&t.account).is_some() {
        // A challenge for another account is moot now.
        if d.state.siwx.challenge.is_some() {
            settle_pending(d, "the account changed");
            d.push(Event::SiwxCancelled {});
        }
        return false;
    }
    if d.state.siwx.challenge.as_ref().is_some_and(|c| c.account == t.account) {
        return true;
    }
    if d.state.siwx.challenge.is_some() {
        settle_pending(d, "the account changed");
    }
    issue_challenge(d, &t);
    true
}

fn issue_challenge(d: &mut Decision, t: &Target) {
    match build_challenge(&d.state, t, d.now_ms, &d.nonce.clone()) {
        Ok(challenge) => {
            d.push(Event::SiwxChallengeIssued { challenge });
            d.open_modal();
            d.navigate(View::SiwxSignMessage, None, NavigationMode::Reset);
        }
        Err(_) => init_failed(d),
    }
}

/// Spec: on an initialisation failure, show the message, disconnect and reset to Connect.
fn init_failed(d: &mut Decision) {
    if d.state.siwx.challenge.is_some() {
        d.push(Event::SiwxCancelled {});
    }
    d.toast(INIT_FAILED, ToastVariant::Error);
    for ns in Namespace::ALL {
        disconnect(d, ns, "sign-in could not start");
    }
    d.navigate(View::Connect, None, NavigationMode::Reset);
}

/// The Sign button: one wallet prompt per click, never two.
pub(super) fn sign(d: &mut Decision) -> Result<(), DomainError> {
    let t = target(&d.state)?;
    if matches!(d.state.siwx.status, SiwxStatus::Signing | SiwxStatus::Verifying) {
        return Err(DomainError::SignInPending);
    }
    let current = d.state.siwx.challenge.as_ref().is_some_and(|c| c.account == t.account && c.expires_ms > d.now_ms);
    if !current {
        issue_challenge(d, &t);
        if d.state.siwx.challenge.is_none() {
            return Ok(()); // initialisation failed and was reported
        }
    }
    let challenge = d.state.siwx.challenge.clone().expect("a challenge was just ensured");
    let address = t.address.clone();
    let request_id =
        d.issue_request(&t.connector_id, t.namespace, RequestKind::SignMessage { message: challenge.message.clone(), address })?;
    let toasts_before = d.state.toasts.next_id;
    d.toast(AUTHENTICATING, ToastVariant::Loading);
    let toast_id = (d.state.toasts.next_id > toasts_before).then(|| format!("t{}", d.state.toasts.next_id));
    d.push(Event::SiwxSignRequested { request_id, toast_id });
    Ok(())
}

/// The Cancel button: disconnects when sign-in is required, otherwise closes the modal.
pub(super) fn cancel(d: &mut Decision) -> Result<(), DomainError> {
    let required = d.state.options.sign_in().ok_or(DomainError::SignInUnavailable(NOT_ENABLED))?.required;
    settle_pending(d, "sign-in cancelled");
    if d.state.siwx.challenge.is_some() {
        d.push(Event::SiwxCancelled {});
    }
    if required {
        for ns in Namespace::ALL {
            disconnect(d, ns, "sign-in cancelled");
        }
        // The modal stays open on Connect, where another wallet can be chosen.
        d.navigate(View::Connect, None, NavigationMode::Reset);
    } else {
        d.close_modal();
    }
    Ok(())
}

pub(super) fn sign_out(d: &mut Decision, account: Option<String>) -> Result<(), DomainError> {
    // A sign-in session's account is a CAIP-10 id; anything else names none (and is not echoed
    // back at whatever length it came).
    let account = match account {
        Some(a) => {
            let parsed = a.parse::<CaipAddress>().map_err(|_| DomainError::InvalidInput {
                field: "account".into(),
                message: "a CAIP-10 account id (namespace:reference:address)".into(),
            })?;
            // Any spelling of the account names its sign-in session (sessions signed in before
            // accounts were kept in one spelling are found by the spelling given).
            let canonical = parsed.canonical();
            if d.state.siwx.session_for(&canonical).is_some() { canonical } else { a }
        }
        None => d.state.active_caip_address().ok_or(DomainError::SignInUnavailable(NO_ACTIVE_ADDRESS))?,
    };
    if d.state.siwx.session_for(&account).is_none() {
        return Err(DomainError::NoSignInSession(account));
    }
    d.push(Event::SiwxSignedOut { account, reason: "revoked".into() });
    Ok(())
}

/// A challenge for an account of `namespace` is abandoned when that namespace disconnects.
pub(super) fn abandon_challenge_of(d: &mut Decision, namespace: Namespace) {
    let prefix = format!("{}:", namespace.as_str());
    if d.state.siwx.challenge.as_ref().is_some_and(|c| c.account.starts_with(&prefix)) {
        settle_pending(d, "disconnected");
        d.push(Event::SiwxCancelled {});
    }
}

/// With `signOutOnDisconnect`, a disconnect ends the namespace's sign-in sessions.
pub(super) fn sign_out_on_disconnect(d: &mut Decision, namespace: Namespace) {
    if !d.state.options.sign_in().is_some_and(|s| s.sign_out_on_disconnect) {
        return;
    }
    let prefix = format!("{}:", namespace.as_str());
    let accounts: Vec<String> = d.state.siwx.sessions.keys().filter(|a| a.starts_with(&prefix)).cloned().collect();
    for account in accounts {
        d.push(Event::SiwxSignedOut { account, reason: "disconnected".into() });
    }
}

/// Sessions whose expiration time has come end (the state's deadline for them fell due).
pub(super) fn expire_sessions(d: &mut Decision) {
    let now = d.now_ms;
    let expired: Vec<String> = d.state.siwx.sessions.values().filter(|s| s.expires_ms <= now).map(|s| s.account.clone()).collect();
    for account in expired {
        d.push(Event::SiwxSignedOut { account, reason: "expired".into() });
    }
}

/// The wallet answered the sign request.
pub(super) fn signature_received(d: &mut Decision, request: &WalletRequest, outcome: WalletOutcome) {
    let Some(challenge) = d.state.siwx.challenge.clone() else { return };
    if d.state.siwx.status != SiwxStatus::Signing || challenge.request_id.as_deref() != Some(request.id.as_str()) {
        return; // a late answer to a request the flow no longer waits for: recorded only
    }
    let result = match outcome {
        WalletOutcome::Ok { result } => result,
        e => {
            dismiss_toast(d);
            let message = if e.is_user_rejection() { SIGNATURE_DECLINED.to_string() } else { wallet_error_message(&e) };
            d.push(Event::SiwxDeclined { message: message.clone() });
            d.toast(&message, ToastVariant::Error);
            d.navigate(View::SiwxSignMessage, None, NavigationMode::Replace);
            return;
        }
    };
    let (signature, cacao) = match &result {
        serde_json::Value::String(s) => (s.clone(), None),
        serde_json::Value::Object(o) => match o.get("signature").and_then(|s| s.as_str()) {
            Some(s) => (s.to_string(), o.get("cacao").cloned()),
            None => return failed(d, "malformed_signature"),
        },
        _ => return failed(d, "malformed_signature"),
    };
    let namespace = if challenge.chain.starts_with("solana:") { message::Namespace::Solana } else { message::Namespace::Eip155 };
    let Some(bytes) = crate::siwx::verify::decode_signature(&signature, namespace) else {
        return failed(d, "malformed_signature");
    };
    let Some(mut policy) = VerifyPolicy::for_origin(&d.state.origin, &challenge.nonce, datetime(d.now_ms)) else {
        return failed(d, "origin_unbindable");
    };
    policy.allowed_chains = Some(vec![message_caip2(&challenge.chain)]);
    match message::verify(&challenge.message, &bytes, &policy) {
        Ok(verified) => {
            let method = match verified.method {
                SignatureMethod::Ed25519 => SiwxMethod::Ed25519,
                _ => SiwxMethod::Eip191,
            };
            dismiss_toast(d);
            let cacao = vouched_cacao(cacao, &challenge, &signature);
            signed_in(d, &challenge, signature, method, cacao);
        }
        // Not the account's own key: it may be a contract account, asked on chain by the runtime.
        Err(VerifyError::SignatureMismatch { .. }) if namespace == message::Namespace::Eip155 => {
            d.push(Event::SiwxContractCheckStarted { signature });
        }
        Err(e) => failed(d, e.code()),
    }
}

/// The runtime's answer to `SiwxContractCheckStarted`.
pub(super) fn contract_checked(d: &mut Decision, nonce: &str, verdict: Result<(), String>) {
    let Some(challenge) = d.state.siwx.challenge.clone() else { return };
    if d.state.siwx.status != SiwxStatus::Verifying || challenge.nonce != nonce {
        return;
    }
    // The message's times are judged again now: a check that took long must not outlive them.
    let Some(policy) = VerifyPolicy::for_origin(&d.state.origin, nonce, datetime(d.now_ms)) else {
        return failed(d, "origin_unbindable");
    };
    let checked = SiwxMessage::parse(&challenge.message).map_err(VerifyError::from).and_then(|m| message::check_message(&m, &policy));
    match (verdict, checked) {
        (Ok(()), Ok(())) => {
            dismiss_toast(d);
            let signature = challenge.signature.clone().unwrap_or_default();
            signed_in(d, &challenge, signature, SiwxMethod::Eip1271, None);
        }
        (Ok(()), Err(e)) => failed(d, e.code()),
        (Err(_), _) => failed(d, "signature_mismatch"),
    }
}

/// The most bytes (as JSON) of a wallet's CACAO kept with a sign-in.
pub const MAX_CACAO_BYTES: usize = 8 * 1024;

/// A wallet's CAIP-74 CACAO is kept only when it is this sign-in's: its payload's issuer is the
/// account (`did:pkh:` and the CAIP-10 id), its domain and nonce the message's, its signature the
/// one verified, and it is small. The host reads it from the state as the sign-in's proof, so
/// one a wallet made up (any JSON: an outside review stored 50 KB naming another issuer next to
/// the verified fields) is dropped; the sign-in itself stands on the verified signature.
fn vouched_cacao(cacao: Option<serde_json::Value>, challenge: &SiwxChallenge, signature: &str) -> Option<serde_json::Value> {
    let cacao = cacao?;
    let small = serde_json::to_string(&cacao).is_ok_and(|json| json.len() <= MAX_CACAO_BYTES);
    let domain = SiwxMessage::parse(&challenge.message).ok().map(|m| m.domain.as_str().to_string());
    let payload = &cacao["p"];
    let ours = payload["iss"].as_str() == Some(format!("did:pkh:{}", challenge.account).as_str())
        && domain.is_some()
        && payload["domain"].as_str() == domain.as_deref()
        && payload["nonce"].as_str() == Some(challenge.nonce.as_str())
        && cacao["s"]["s"].as_str().is_some_and(|s| s.eq_ignore_ascii_case(signature));
    (small && ours).then_some(cacao)
}

fn signed_in(d: &mut Decision, challenge: &SiwxChallenge, signature: String, method: SiwxMethod, cacao: Option<serde_json::Value>) {
    let session = SignInSession {
        id: d.state.siwx.next_session_id(),
        account: challenge.account.clone(),
        chain: challenge.chain.clone(),
        message: challenge.message.clone(),
        signature,
        method,
        issued_ms: challenge.issued_ms,
        expires_ms: challenge.expires_ms,
        cacao,
    };
    d.push(Event::SiwxSignedIn { session });
    // Spec: signing stores the session and closes the modal.
    d.close_modal();
    d.navigate(View::Account, None, NavigationMode::Reset);
}

/// A signature that did not verify spends its nonce; a new message is ready at once.
fn failed(d: &mut Decision, code: &str) {
    dismiss_toast(d);
    d.push(Event::SiwxVerificationFailed { code: code.into(), message: VERIFICATION_FAILED.into() });
    d.toast(VERIFICATION_FAILED, ToastVariant::Error);
    if let Ok(t) = target(&d.state) {
        issue_challenge(d, &t); // keeps the error on show (see machines::siwx::evolve)
    }
}
