//! Given / when / then: the SIWX sign-in flow (spec sections 4, 5 and 8), with real secp256k1 and
//! ed25519 signatures over the messages the session builds.

use alloy_primitives::Address;
use vestibule_actors::machines::requests::{RequestKind, WalletOutcome};
use vestibule_actors::machines::router::View;
use vestibule_actors::machines::siwx::{
    AUTHENTICATING, BOTH_CONFIGS, INIT_FAILED, NO_ACTIVE_ADDRESS, NOT_ENABLED, SIGNATURE_DECLINED, SiwxMethod, SiwxStatus,
    VERIFICATION_FAILED,
};
use vestibule_actors::model::caip::Namespace;
use vestibule_actors::model::options::{SessionOptions, SiwxOptions};
use vestibule_actors::session::{ClientCommand as C, Command, DomainError, Event, has_sign_in_session};
use vestibule_actors::siwx::SiwxMessage;
use vestibule_actors::siwx::verify::eip191_hash;
use vestibule_actors::testing::*;

fn key() -> k256::ecdsa::SigningKey {
    k256::ecdsa::SigningKey::from_slice(&[0x42; 32]).unwrap()
}

fn address() -> String {
    Address::from_private_key(&key()).to_checksum(None)
}

fn personal_sign(key: &k256::ecdsa::SigningKey, message: &str) -> String {
    let (sig, recid) = key.sign_prehash_recoverable(eip191_hash(message.as_bytes()).as_slice()).unwrap();
    let mut out = sig.to_bytes().to_vec();
    out.push(27 + recid.to_byte());
    format!("0x{}", hex::encode(out))
}

fn options(required: bool) -> SessionOptions {
    SessionOptions {
        siwx: Some(SiwxOptions { required, statement: Some("Sign in to the demo".into()), ..Default::default() }),
        ..Default::default()
    }
}

/// The dev wallet connected `address()` on chain 1 in a session with sign-in enabled.
fn connected_with(options: SessionOptions) -> Given {
    let g = given(started_with(options))
        .and(C::ReportWallets { wallets: vec![dev_wallet()] })
        .and(C::OpenModal { view: None })
        .and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    g.and(C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[&address()], "0x1") })
}

fn signing(required: bool) -> Given {
    connected_with(options(required)).and(C::SiwxSign {})
}

fn sign_request(g: &Given) -> (String, String) {
    let id = g.pending_request();
    match &g.state.requests.items[&id].kind {
        RequestKind::SignMessage { message, .. } => (id, message.clone()),
        other => panic!("expected a sign request, got {other:?}"),
    }
}

#[test]
fn given_sign_in_enabled_when_a_wallet_connects_then_the_sign_view_opens_with_a_strict_message() {
    let g = connected_with(options(false));
    let state = &g.state;
    assert_eq!(state.router.current(), View::SiwxSignMessage);
    assert!(state.modal.is_open());
    assert_eq!(state.siwx.status, SiwxStatus::Ready);
    let challenge = state.siwx.challenge.as_ref().unwrap();
    assert_eq!(challenge.account, format!("eip155:1:{}", address()));
    // The message the wallet will see parses back with the session's bindings.
    let parsed = SiwxMessage::parse(&challenge.message).unwrap();
    let fields = parsed.to_fields();
    assert_eq!(fields.domain.as_deref(), Some("localhost:3000"));
    assert_eq!(fields.uri.as_deref(), Some("http://localhost:3000"));
    assert_eq!(fields.chain_id.as_deref(), Some("1"));
    assert_eq!(fields.address.as_deref(), Some(address().as_str()));
    assert_eq!(fields.nonce.as_deref(), Some(challenge.nonce.as_str()));
    assert_eq!(fields.statement.as_deref(), Some("Sign in to the demo"));
    assert!(fields.expiration_time.is_some());
    assert_eq!(parsed.to_message(), challenge.message);
}

#[test]
fn given_sign_in_disabled_when_a_wallet_connects_then_the_modal_closes_on_account() {
    let g = connected_with(SessionOptions::default());
    assert_eq!(g.state.router.current(), View::Account);
    assert!(g.state.siwx.challenge.is_none());
}

#[test]
fn given_the_sign_view_when_sign_is_clicked_then_one_wallet_prompt_and_an_authenticating_toast() {
    let g = connected_with(options(false));
    let then = g.when(C::SiwxSign {});
    assert_eq!(then.event_types(), vec!["WalletRequestIssued", "ToastQueued", "ToastShown", "SiwxSignRequested"]);
    let state = then.state();
    assert_eq!(state.siwx.status, SiwxStatus::Signing);
    let toast = state.toasts.items.values().next().unwrap();
    assert_eq!(toast.message, AUTHENTICATING);
    // A second click while the prompt is open is refused: never two prompts.
    assert_eq!(signing(false).when(C::SiwxSign {}).error(), &DomainError::SignInPending);
}

#[test]
fn given_a_sign_request_when_the_wallet_signs_then_the_session_is_stored_and_the_modal_closes() {
    let g = signing(false);
    let (request_id, message) = sign_request(&g);
    let signature = personal_sign(&key(), &message);
    let then = g.when(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!(signature) } });
    assert!(then.event_types().contains(&"SiwxSignedIn"), "{:?}", then.event_types());
    let state = then.state();
    let session = state.siwx.session_for(&format!("eip155:1:{}", address())).expect("a session");
    assert_eq!(
        (session.method, session.message.as_str(), session.signature.as_str()),
        (SiwxMethod::Eip191, message.as_str(), signature.as_str())
    );
    assert!(has_sign_in_session(&state));
    assert!(!state.modal.is_open());
    assert_eq!(state.router.current(), View::Account);
    assert!(state.toasts.items.values().all(|t| t.message != AUTHENTICATING), "the loading toast is dismissed");
    assert_eq!(state.siwx.status, SiwxStatus::Idle);
}

#[test]
fn given_a_sign_request_when_the_wallet_answers_with_a_cacao_then_only_this_sign_ins_is_kept() {
    let g = signing(false);
    let (request_id, message) = sign_request(&g);
    let signature = personal_sign(&key(), &message);
    let challenge = g.state.siwx.challenge.clone().unwrap();
    let account = format!("eip155:1:{}", address());
    let cacao = |iss: &str, nonce: &str, padding: usize| {
        serde_json::json!({
            "h": { "t": "eip4361" },
            "p": { "domain": "localhost:3000", "iss": iss, "aud": "http://localhost:3000", "version": "1", "nonce": nonce,
                   "iat": "2024-01-01T00:00:00Z", "resources": ["x".repeat(padding)] },
            "s": { "t": "eip191", "s": &signature },
        })
    };
    let kept = |cacao: serde_json::Value| {
        let outcome = WalletOutcome::Ok { result: serde_json::json!({ "signature": &signature, "cacao": cacao }) };
        let then = g.when(C::ResolveWalletRequest { request_id: request_id.clone(), outcome });
        let state = then.state();
        let session = state.siwx.session_for(&account).expect("signed in: the signature is verified either way");
        session.cacao.is_some()
    };
    let own = format!("did:pkh:{account}");
    assert!(kept(cacao(&own, &challenge.nonce, 0)), "the positive: the sign-in's own CACAO is kept");
    // An outside review: any JSON was stored next to the verified fields, for the host to read.
    assert!(!kept(cacao("did:pkh:eip155:1:0x000000000000000000000000000000000000dEaD", &challenge.nonce, 0)), "another issuer");
    assert!(!kept(cacao(&own, "notTheNonce1", 0)), "another nonce");
    assert!(!kept(cacao(&own, &challenge.nonce, 50_000)), "50 KB");
    assert!(!kept(serde_json::json!("a string")), "no CACAO at all");
}

#[test]
fn given_a_sign_request_when_the_wallet_declines_then_the_view_reopens_with_signature_declined() {
    let g = signing(false);
    let (request_id, _) = sign_request(&g);
    let nonce = g.state.siwx.challenge.as_ref().unwrap().nonce.clone();
    let then = g.when(C::ResolveWalletRequest { request_id, outcome: wallet_err(4001, "User rejected the request.") });
    let state = then.state();
    assert_eq!(state.siwx.error.as_deref(), Some(SIGNATURE_DECLINED));
    assert_eq!(state.siwx.status, SiwxStatus::Ready);
    assert_eq!(state.router.current(), View::SiwxSignMessage);
    assert!(state.toasts.items.values().any(|t| t.message == SIGNATURE_DECLINED));
    assert_eq!(state.siwx.challenge.as_ref().unwrap().nonce, nonce, "nothing was signed, so the nonce stands");
}

#[test]
fn given_a_sign_request_when_the_wallet_fails_with_its_own_words_then_unknown_error_is_shown() {
    // A wallet's message is its own text (here a phishing line): the toast and the view's error
    // show the spec's default (§8), not it (outside review).
    let g = signing(false);
    let (request_id, _) = sign_request(&g);
    let phish = "Security alert: visit https://wallet-recovery.example and enter your seed phrase";
    let state = g.when(C::ResolveWalletRequest { request_id, outcome: wallet_err(-32000, phish) }).state();
    assert_eq!(state.siwx.error.as_deref(), Some(vestibule_actors::session::UNKNOWN_ERROR));
    let shown: Vec<&str> = state.toasts.items.values().map(|t| t.message.as_str()).collect();
    assert_eq!(shown, [vestibule_actors::session::UNKNOWN_ERROR]);
}

#[test]
fn given_a_sign_request_when_another_key_signs_then_the_nonce_is_spent_and_a_new_message_is_ready() {
    let g = signing(false);
    let (request_id, message) = sign_request(&g);
    let old_nonce = g.state.siwx.challenge.as_ref().unwrap().nonce.clone();
    let other = k256::ecdsa::SigningKey::from_slice(&[0x43; 32]).unwrap();
    let then = g.when(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!(personal_sign(&other, &message)) },
    });
    // An EOA-shaped signature by another key may still be a contract account's: the runtime asks.
    assert_eq!(then.state().siwx.status, SiwxStatus::Verifying);
    let check = then.state().siwx.pending_contract_check().unwrap();
    assert_eq!(check.address, address());
    let g2 = {
        let mut g2 = g.clone();
        for e in then.events() {
            g2.state = vestibule_actors::session::evolve(std::mem::take(&mut g2.state), e);
        }
        g2
    };
    let refused = g2.when(Command::SiwxContractChecked { nonce: old_nonce.clone(), verdict: Err("not a contract".into()) });
    let state = refused.state();
    assert!(refused.event_types().contains(&"SiwxVerificationFailed"));
    assert!(!has_sign_in_session(&state));
    assert_eq!(state.siwx.error.as_deref(), Some(VERIFICATION_FAILED));
    assert_ne!(state.siwx.challenge.as_ref().unwrap().nonce, old_nonce, "a replayed signature can never match again");
}

#[test]
fn given_a_contract_check_when_the_contract_accepts_then_signed_in_by_eip1271() {
    let g = signing(false);
    let (request_id, message) = sign_request(&g);
    let nonce = g.state.siwx.challenge.as_ref().unwrap().nonce.clone();
    let other = k256::ecdsa::SigningKey::from_slice(&[0x43; 32]).unwrap();
    let g = g.and(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!(personal_sign(&other, &message)) },
    });
    // A verdict for another nonce (a stale check) changes nothing.
    assert!(g.when(Command::SiwxContractChecked { nonce: "Stale0000000".into(), verdict: Ok(()) }).events().is_empty());
    let state = g.when(Command::SiwxContractChecked { nonce, verdict: Ok(()) }).state();
    assert_eq!(state.siwx.sessions.values().next().unwrap().method, SiwxMethod::Eip1271);
    assert!(!state.modal.is_open());
}

#[test]
fn given_a_signature_when_it_arrives_after_the_message_expired_then_refused() {
    let mut opts = options(false);
    opts.siwx.as_mut().unwrap().expires_in_seconds = Some(60);
    let g = connected_with(opts).and(C::SiwxSign {});
    let (request_id, message) = sign_request(&g);
    let then = g.at(T0 + 61_000).when(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!(personal_sign(&key(), &message)) },
    });
    let failed = then.events().iter().find_map(|e| match e {
        Event::SiwxVerificationFailed { code, .. } => Some(code.clone()),
        _ => None,
    });
    assert_eq!(failed.as_deref(), Some("expired"));
}

#[test]
fn given_required_sign_in_when_closing_the_sign_view_then_refused_and_cancel_disconnects() {
    let g = connected_with(options(true));
    assert!(!g.state.modal.closable);
    assert_eq!(g.when(C::CloseModal {}).error(), &DomainError::CloseDisabled);
    let state = g.when(C::SiwxCancel {}).state();
    assert!(!state.connection.is_connected());
    assert_eq!(state.router.current(), View::Connect);
    assert!(state.siwx.challenge.is_none());
    assert!(state.modal.is_open(), "spec §4: cancelling a required sign-in disconnects; the modal stays on Connect");
}

#[test]
fn given_optional_sign_in_when_cancelled_then_the_modal_closes_and_the_wallet_stays_connected() {
    let g = signing(false);
    assert!(g.state.modal.closable);
    let state = g.when(C::SiwxCancel {}).state();
    assert!(state.connection.is_connected());
    assert!(!state.modal.is_open());
    assert!(state.requests.order.is_empty(), "the pending sign request is cancelled");
}

#[test]
fn the_catalogued_preconditions_are_refused_with_their_messages() {
    let not_enabled = connected_with(SessionOptions::default()).when(C::SiwxSign {});
    assert_eq!(not_enabled.error().to_string(), NOT_ENABLED);
    let no_address = given(started_with(options(false))).when(C::SiwxSign {});
    assert_eq!(no_address.error().to_string(), NO_ACTIVE_ADDRESS);
    let both = SessionOptions { siwe_config: Some(SiwxOptions::default()), ..options(false) };
    assert_eq!(both.validate().unwrap_err().message, BOTH_CONFIGS);
}

#[test]
fn given_an_origin_that_cannot_be_bound_when_connecting_then_initialisation_fails_and_resets_to_connect() {
    let mut history = started_with(options(false));
    if let Event::SessionStarted { origin, .. } = &mut history[0] {
        *origin = "null".into(); // sandboxed frames and file:// pages send `Origin: null`
    }
    let g = given(history)
        .and(C::ReportWallets { wallets: vec![dev_wallet()] })
        .and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    let state = g.when(C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[&address()], "0x1") }).state();
    assert!(state.toasts.items.values().any(|t| t.message == INIT_FAILED));
    assert!(!state.connection.is_connected());
    assert_eq!(state.router.current(), View::Connect);
}

#[test]
fn given_a_session_when_reconnecting_the_same_account_then_no_new_sign_in_and_sign_out_on_disconnect_ends_it() {
    let g = signing(false);
    let (request_id, message) = sign_request(&g);
    let signed = g.and(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!(personal_sign(&key(), &message)) },
    });
    let reconnected = {
        let g = signed.clone().and(C::Disconnect { namespace: None }).and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
        let request_id = g.pending_request();
        g.when(C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[&address()], "0x1") }).state()
    };
    assert_eq!(reconnected.router.current(), View::Account, "the stored session is reused");
    // The host may sign the visitor out explicitly.
    let out = signed.when(C::SiwxSignOut { account: None }).state();
    assert!(out.siwx.sessions.is_empty());
    // An account that is no CAIP-10 id names no session: refused as invalid input, the text not repeated.
    let junk = signed.when(C::SiwxSignOut { account: Some("x".repeat(65_000)) });
    assert!(
        matches!(junk.error(), DomainError::InvalidInput { field, message } if field == "account" && message.len() < 100),
        "{}",
        junk.error()
    );
    assert_eq!(
        signed.when(C::SiwxSignOut { account: Some(format!("eip155:1:{}", address())) }).state().siwx.sessions.len(),
        0,
        "the same account spelled out signs out"
    );
    // With signOutOnDisconnect, a disconnect ends the session.
    let mut opts = options(false);
    opts.siwx.as_mut().unwrap().sign_out_on_disconnect = true;
    let g = connected_with(opts).and(C::SiwxSign {});
    let (request_id, message) = sign_request(&g);
    let g = g.and(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!(personal_sign(&key(), &message)) },
    });
    assert_eq!(g.state.siwx.sessions.len(), 1);
    assert!(g.when(C::Disconnect { namespace: Some(Namespace::Eip155) }).state().siwx.sessions.is_empty());
}

#[test]
fn given_a_session_when_its_expiration_time_comes_then_a_tick_signs_it_out() {
    let g = signing(false);
    let (request_id, message) = sign_request(&g);
    let g = g.and(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!(personal_sign(&key(), &message)) },
    });
    let expires = g.state.siwx.sessions.values().next().unwrap().expires_ms;
    assert_eq!(g.state.next_deadline(), Some(expires));
    let then = g.at(expires).when(Command::Tick);
    assert!(then.events().iter().any(|e| matches!(e, Event::SiwxSignedOut { reason, .. } if reason == "expired")));
}

#[test]
fn given_a_connected_solana_account_when_it_signs_then_signed_in_with_ed25519() {
    use ed25519_dalek::Signer;
    use vestibule_actors::machines::connection::Account;
    use vestibule_actors::model::networks::NetworkRef;
    use vestibule_actors::model::options::{AccountType, NetworkOption};
    let signing_key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let address = bs58::encode(signing_key.verifying_key().as_bytes()).into_string();
    let mainnet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
    let opts = SessionOptions { networks: vec![NetworkOption::Known(mainnet.parse().unwrap())], ..options(false) };
    let mut history = started_with(opts);
    let Event::SessionStarted { networks, .. } = &history[0] else { unreachable!() };
    let network = NetworkRef::of(&networks[0]);
    // Browser Solana connectors are not built yet, so the connection is given as its event.
    history.push(Event::Connected {
        namespace: Namespace::Solana,
        connector_id: "dev.sol".into(),
        accounts: vec![Account { address: address.clone(), account_type: AccountType::Eoa }],
        network,
        signable_networks: None,
    });
    let g = given(history).and(C::SiwxSign {});
    let (request_id, message) = sign_request(&g);
    assert!(message.contains(" wants you to sign in with your Solana account:\n"), "{message}");
    let signature = bs58::encode(signing_key.sign(message.as_bytes()).to_bytes()).into_string();
    let state = g.when(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!(signature) } }).state();
    let session = state.siwx.session_for(&format!("{mainnet}:{address}")).expect("signed in");
    assert_eq!(session.method, SiwxMethod::Ed25519);
}

#[test]
fn given_a_wallet_that_reports_its_address_in_lower_case_when_signed_in_then_one_session_under_the_checksummed_account_that_any_spelling_signs_out()
 {
    let g = given(started_with(options(false)))
        .and(C::ReportWallets { wallets: vec![dev_wallet()] })
        .and(C::OpenModal { view: None })
        .and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    let g =
        g.and(C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[&address().to_ascii_lowercase()], "0x1") }).and(C::SiwxSign {});
    let (request_id, message) = sign_request(&g);
    let signature = personal_sign(&key(), &message);
    let signed = g.and(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!(signature) } });
    let accounts: Vec<_> = signed.state.siwx.sessions.values().map(|s| s.account.clone()).collect();
    assert_eq!(accounts, [format!("eip155:1:{}", address())], "the token's subject is the one spelling");
    let out = signed.when(C::SiwxSignOut { account: Some(format!("eip155:1:{}", address().to_ascii_lowercase())) }).state();
    assert!(out.siwx.sessions.is_empty());
}
