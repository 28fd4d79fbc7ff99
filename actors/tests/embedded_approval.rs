//! Given / when / then: the embedded wallet's approvals (docs/embedded-wallet.md; spec §4 SIWX and
//! Wallet request outcome). Connector `auth` has no wallet UI: while the session waits for it to sign
//! or send, the modal shows ApproveTransaction (the secure frame is placed over it), and when the
//! answer comes the flow continues as it does for any wallet. Other wallets keep today's views.

use vestibule_actors::machines::embedded_wallet::{AUTH_CONNECTOR_ID, EmbeddedWalletInfo, FRAME_SETTLE_MS, LoginMethod, OtpStep};
use vestibule_actors::machines::requests::{RequestKind, WalletOutcome};
use vestibule_actors::machines::router::{RouteParams, View};
use vestibule_actors::machines::send::{SendForm, SendStatus, SentStatus};
use vestibule_actors::machines::siwx::{SIGNATURE_DECLINED, SiwxStatus};
use vestibule_actors::model::caip::CaipNetworkId;
use vestibule_actors::model::options::{Features, SessionOptions};
use vestibule_actors::session::{ClientCommand as C, Command, DomainError, Event, SessionState, has_sign_in_session};
use vestibule_actors::testing::*;

const EMAIL: &str = "visitor@example.com";
const HASH: &str = "0x00000000000000000000000000000000000000000000000000000000000000aa";

/// A session on a gateway serving the embedded wallet (and, with `served`, the chain service for
/// its networks), its frame ready.
fn embedded_session(options: SessionOptions, served: bool) -> Given {
    let networks = options.validate().expect("valid options");
    let served_networks = if served { networks.iter().map(|n| n.caip_network_id.clone()).collect() } else { Vec::new() };
    given(vec![
        Event::SessionStarted {
            project: "test".into(),
            origin: "http://localhost:3000".into(),
            options,
            networks,
            served_networks,
            embedded_frame_origin: Some(FRAME_ORIGIN.into()),
        },
        Event::EmbeddedFrameLoading { deadline_ms: T0 + 20_000 },
    ])
    .and(C::EmbeddedFrameReady { frame_id: "frame-1".into() })
    .at(T0 + FRAME_SETTLE_MS)
    .and(Command::Tick)
}

/// The visitor logs in by email; the embedded wallet holds `address` (the test signer's, so
/// sign-in messages really verify).
fn logged_in(g: Given, address: &str) -> Given {
    g.and(C::ConnectEmail { email: EMAIL.into() })
        .and(Command::EmbeddedOtpSent { challenge_id: "c-1".into(), step: OtpStep::VerifyOtp })
        .and(Command::EmbeddedLoginVerified {
            method: LoginMethod::Email,
            user_id: "u-1".into(),
            email: Some(EMAIL.into()),
            username: None,
            wallet: Some(EmbeddedWalletInfo { wallet_id: "w-1".into(), eip155_address: address.into(), solana_address: solana_address() }),
            from_frame: Some("frame-1".into()),
        })
}

fn with_email(options: SessionOptions) -> SessionOptions {
    SessionOptions { features: Features { email: true, ..options.features.clone() }, ..options }
}

fn approval_shown(state: &SessionState) -> Option<String> {
    let route = state.router.current_route()?;
    (route.view == View::ApproveTransaction).then(|| route.params.as_ref().and_then(|p| p.request_id.clone())).flatten()
}

fn sign_request(g: &Given) -> (String, String) {
    let id = g.pending_request();
    let request = &g.state.requests.items[&id];
    assert_eq!(request.connector_id, AUTH_CONNECTOR_ID);
    match &request.kind {
        RequestKind::SignMessage { message, .. } => (id, message.clone()),
        other => panic!("expected a sign request, got {other:?}"),
    }
}

// --- SIWX with the embedded wallet ---------------------------------------------------------------

fn embedded_siwx(required: bool) -> Given {
    let g = logged_in(embedded_session(with_email(sign_in_options(required)), false), &signer_address());
    assert_eq!(g.state.router.current(), View::SiwxSignMessage, "connecting with no sign-in session opens SIWXSignMessage");
    g
}

#[test]
fn given_an_embedded_account_when_sign_is_clicked_then_approve_transaction_shows_the_frames_request() {
    let g = embedded_siwx(false);
    let then = g.when(C::SiwxSign {});
    let state = then.state();
    let request = state.requests.order[0].clone();
    assert_eq!(approval_shown(&state), Some(request.clone()), "the view names the request the frame approves");
    assert_eq!(state.router.previous(), Some(View::SiwxSignMessage), "pushed on the sign-in view");
    assert_eq!(state.siwx.status, SiwxStatus::Signing);
    assert!(state.modal.is_open());
    assert!(then.events().iter().any(|e| matches!(e, Event::Navigated {
        view: View::ApproveTransaction,
        params: Some(RouteParams { request_id: Some(id), .. }),
        ..
    } if *id == request)));
}

#[test]
fn given_an_embedded_sign_in_approval_when_the_frame_signs_then_signed_in_and_the_modal_closes() {
    let g = embedded_siwx(false).and(C::SiwxSign {});
    let (request_id, message) = sign_request(&g);
    let signature = personal_sign(&SIGNER_KEY, &message);
    let then = g.when(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!(signature) } });
    assert!(then.event_types().contains(&"SiwxSignedIn"), "{:?}", then.event_types());
    let state = then.state();
    assert!(has_sign_in_session(&state));
    assert!(!state.modal.is_open(), "signing stores the session and closes the modal");
    assert_eq!(state.router.current(), View::Account);
    assert_eq!(state.router.stack.len(), 1);
}

#[test]
fn given_a_signed_in_embedded_account_when_it_switches_network_then_a_sign_in_for_the_new_chain_is_asked() {
    let mut options = with_email(sign_in_options(false));
    options.networks =
        ["eip155:1", "eip155:42161"].map(|id| vestibule_actors::model::options::NetworkOption::Known(id.parse().unwrap())).into();
    let g = logged_in(embedded_session(options, false), &signer_address()).and(C::SiwxSign {});
    let (request_id, message) = sign_request(&g);
    let g = g.and(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!(personal_sign(&SIGNER_KEY, &message)) },
    });
    assert!(has_sign_in_session(&g.state) && g.state.siwx.challenge.is_none());
    let moved = g.and(C::OpenModal { view: None }).and(C::SwitchNetwork { network: "eip155:42161".parse().unwrap() });
    let challenge = moved.state.siwx.challenge.as_ref().expect("a message for the account on its new chain");
    assert_eq!(challenge.account, format!("eip155:42161:{}", signer_address()));
    assert_eq!(moved.state.router.current(), View::SiwxSignMessage);
    // Back on the chain it signed in on: its session holds, nothing is asked.
    let back = moved.and(C::SwitchNetwork { network: "eip155:1".parse().unwrap() });
    assert!(back.state.siwx.challenge.is_none());
}

#[test]
fn given_an_embedded_sign_in_approval_when_declined_then_sign_in_reopens_with_its_error() {
    let g = embedded_siwx(false).and(C::SiwxSign {});
    let (request_id, _) = sign_request(&g);
    let then = g.when(C::ResolveWalletRequest { request_id, outcome: wallet_err(4001, "User rejected the request.") });
    let state = then.state();
    assert_eq!(state.router.current(), View::SiwxSignMessage);
    assert_eq!(state.router.stack.iter().filter(|r| r.view == View::SiwxSignMessage).count(), 1, "not twice on the stack");
    assert!(state.router.stack.iter().all(|r| r.view != View::ApproveTransaction));
    assert_eq!(state.siwx.error.as_deref(), Some(SIGNATURE_DECLINED));
    assert_eq!(state.siwx.status, SiwxStatus::Ready);
    assert!(state.modal.is_open());
    // And signing again shows the approval again.
    let again = then_given(g, then.events()).and(C::SiwxSign {});
    assert_eq!(approval_shown(&again.state), Some(again.pending_request()));
}

#[test]
fn given_required_sign_in_with_an_embedded_account_when_approving_then_closing_is_disabled() {
    let g = embedded_siwx(true).and(C::SiwxSign {});
    assert_eq!(g.state.router.current(), View::ApproveTransaction);
    assert!(!g.state.modal.closable, "spec §4: closing is disabled on ApproveTransaction while sign-in is required");
    assert_eq!(g.when(C::CloseModal {}).error(), &DomainError::CloseDisabled);
    let (request_id, message) = sign_request(&g);
    let signature = personal_sign(&SIGNER_KEY, &message);
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!(signature) } });
    assert!(has_sign_in_session(&g.state));
    assert!(!g.state.modal.is_open());
}

#[test]
fn given_an_embedded_approval_when_the_modal_is_closed_and_reopened_then_the_approval_shows_again() {
    let g = embedded_siwx(false).and(C::SiwxSign {}).and(C::CloseModal {});
    let request = g.pending_request();
    let g = g.and(C::OpenModal { view: None });
    assert_eq!(approval_shown(&g.state), Some(request));
    assert_eq!(g.state.router.previous(), Some(View::SiwxSignMessage));
}

#[test]
fn given_an_embedded_approval_when_the_visitor_navigates_then_it_stays_on_top() {
    let g = embedded_siwx(false).and(C::SiwxSign {});
    let request = g.pending_request();
    let g = g.and(C::GoBack {});
    assert_eq!(approval_shown(&g.state), Some(request));
    assert_eq!(
        g.when(C::Navigate {
            view: View::Account,
            params: Some(RouteParams { request_id: Some("r9".into()), ..Default::default() }),
            replace: None
        })
        .error(),
        &DomainError::InvalidInput { field: "params.requestId".into(), message: "set by the session only".into() }
    );
}

#[test]
fn given_an_external_wallets_sign_in_when_signing_then_todays_views_stay() {
    let g = given(started_with(sign_in_options(false)))
        .and(C::ReportWallets { wallets: vec![dev_wallet()] })
        .and(C::OpenModal { view: None })
        .and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[&signer_address()], "0x1") });
    let then = g.when(C::SiwxSign {});
    assert!(!then.event_types().contains(&"Navigated"), "the wallet draws its own prompt");
    let g = then_given(g, then.events());
    assert_eq!(g.state.router.current(), View::SiwxSignMessage);
    let declined = g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome: wallet_err(4001, "no") }).state();
    assert_eq!(declined.router.current(), View::SiwxSignMessage);
    let (request_id, message) = (
        g.pending_request(),
        match &g.state.requests.items[&g.pending_request()].kind {
            RequestKind::SignMessage { message, .. } => message.clone(),
            _ => unreachable!(),
        },
    );
    let signed = g.when(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!(personal_sign(&SIGNER_KEY, &message)) },
    });
    let state = signed.state();
    assert!(has_sign_in_session(&state));
    assert!(!state.modal.is_open());
    assert!(state.router.stack.iter().all(|r| r.view != View::ApproveTransaction));
}

#[test]
fn given_an_embedded_login_when_connecting_then_no_approval_shows() {
    // Connect and Sync to auth: the frame answers with the logged-in accounts, no approval.
    let g = logged_in(embedded_session(with_email(SessionOptions::default()), false), ALICE);
    assert!(g.history.iter().all(|e| !matches!(e, Event::Navigated { view: View::ApproveTransaction, .. })));
    let reloaded = g.and(C::PageLoaded {}).and(C::OpenModal { view: None });
    let sync = reloaded.pending_request();
    assert!(matches!(reloaded.state.requests.items[&sync].kind, RequestKind::Sync));
    assert_ne!(reloaded.state.router.current(), View::ApproveTransaction);
    let synced = reloaded.and(C::ResolveWalletRequest { request_id: sync, outcome: wallet_ok(&[ALICE], "0x1") });
    assert!(synced.state.connection.active_connected());
    assert!(synced.history.iter().all(|e| !matches!(e, Event::Navigated { view: View::ApproveTransaction, .. })));
}

// --- the Send view with the embedded wallet --------------------------------------------------------

const NATIVE: &str = "eip155:1/native";

fn mainnet() -> CaipNetworkId {
    CaipNetworkId::eip155(1)
}

/// The embedded account (ALICE) on eip155:1, balances loaded, on the Send view.
fn on_send() -> Given {
    let options: SessionOptions = serde_json::from_value(serde_json::json!({ "networks": ["eip155:1"] })).unwrap();
    let g = logged_in(embedded_session(with_email(options), true), ALICE);
    let id = g.state.balances.pending.as_ref().expect("a balance fetch").id;
    g.and(Command::BalancesFetched { id, outcome: Ok(balances_of(&mainnet(), ALICE)) }).and(C::OpenModal { view: None }).and(C::Navigate {
        view: View::Send,
        params: None,
        replace: None,
    })
}

fn form(token: &str) -> SendForm {
    SendForm { token: Some(token.into()), amount: "1".into(), receiver: ALICE.into() }
}

fn then_given(mut g: Given, events: &[Event]) -> Given {
    for e in events {
        g.state = vestibule_actors::session::evolve(std::mem::take(&mut g.state), e);
    }
    g.history.extend(events.iter().cloned());
    g
}

#[test]
fn given_the_embedded_account_when_a_send_is_submitted_then_approve_transaction_shows_over_send() {
    let g = on_send().and(C::SubmitSend { form: form(NATIVE) });
    let request = g.pending_request();
    assert_eq!(g.state.requests.items[&request].connector_id, AUTH_CONNECTOR_ID);
    assert!(matches!(&g.state.requests.items[&request].kind, RequestKind::Rpc { method, .. } if method == "eth_sendTransaction"));
    assert_eq!(approval_shown(&g.state), Some(request));
    assert_eq!(g.state.router.previous(), Some(View::Send));
    assert!(g.state.modal.closable, "sign-in is not required here");
}

#[test]
fn given_an_embedded_native_send_when_the_frame_answers_a_hash_then_back_to_send_as_after_any_wallet() {
    let g = on_send().and(C::SubmitSend { form: form(NATIVE) });
    let request_id = g.pending_request();
    let state = g.when(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!(HASH) } }).state();
    assert_eq!(state.router.current(), View::Send, "a native send stays where it was, reset");
    assert_eq!(state.send.status, SendStatus::Idle);
    assert_eq!(state.send.sent[0].status, SentStatus::Pending);
    assert_eq!(state.send.sent[0].hash, HASH);
}

#[test]
fn given_an_embedded_erc20_send_when_the_frame_answers_a_hash_then_account() {
    let asset = format!("eip155:1/erc20:{}", DEMO_TOKEN.to_ascii_lowercase());
    let g = on_send().and(C::SubmitSend { form: form(&asset) });
    let request_id = g.pending_request();
    let state = g.when(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!(HASH) } }).state();
    assert_eq!(state.router.current(), View::Account);
    assert_eq!(state.router.stack.len(), 1);
}

#[test]
fn given_an_embedded_send_when_the_visitor_rejects_in_the_frame_then_send_with_its_error() {
    let g = on_send().and(C::SubmitSend { form: form(NATIVE) });
    let request_id = g.pending_request();
    let state = g.when(C::ResolveWalletRequest { request_id, outcome: wallet_err(4001, "User rejected the request.") }).state();
    assert_eq!(state.router.current(), View::Send);
    assert!(state.send.error.is_some());
    assert_eq!(state.send.status, SendStatus::Idle);
}

#[test]
fn given_an_embedded_send_when_the_page_reloads_then_the_approval_is_gone_and_the_send_failed() {
    let g = on_send().and(C::SubmitSend { form: form(NATIVE) });
    let state = g.when(C::PageLoaded {}).state();
    assert!(state.router.stack.iter().all(|r| r.view != View::ApproveTransaction));
    assert!(state.send.sending.is_none());
}

// --- host requests with the modal already open -----------------------------------------------------

#[test]
fn given_the_modal_open_when_the_host_asks_the_embedded_wallet_to_sign_then_the_approval_shows_and_leaves() {
    let g = logged_in(embedded_session(with_email(SessionOptions::default()), false), ALICE).and(C::OpenModal { view: None });
    assert_eq!(g.state.router.current(), View::Account);
    let g = g.and(C::HostRequest {
        request_id: "h1".into(),
        method: "personal_sign".into(),
        params: serde_json::json!(["0x68656c6c6f", ALICE]),
    });
    let wallet_request = g.pending_request();
    assert_eq!(approval_shown(&g.state), Some(wallet_request.clone()));
    let g = g.and(C::ResolveWalletRequest { request_id: wallet_request, outcome: WalletOutcome::Ok { result: serde_json::json!("0x01") } });
    assert_eq!(g.state.router.current(), View::Account);
    assert!(g.state.modal.is_open(), "the modal was open before the request");
    assert!(g.state.host_requests.stack.is_empty());
}

#[test]
fn given_an_embedded_account_when_the_host_reads_then_no_approval() {
    let g = logged_in(embedded_session(with_email(SessionOptions::default()), false), ALICE).and(C::OpenModal { view: None });
    let g =
        g.and(C::HostRequest { request_id: "h1".into(), method: "eth_getBalance".into(), params: serde_json::json!([ALICE, "latest"]) });
    assert_eq!(g.state.router.current(), View::Account);
}

#[test]
fn given_an_embedded_account_when_the_host_asks_a_wallet_method_it_does_not_perform_then_4200_at_once_and_no_view() {
    let g = logged_in(embedded_session(with_email(SessionOptions::default()), false), ALICE);
    // The positive path: a method it performs asks the frame, over ApproveTransaction.
    let signing =
        g.when(C::HostRequest { request_id: "h0".into(), method: "personal_sign".into(), params: serde_json::json!(["0x68", ALICE]) });
    assert!(signing.event_types().contains(&"WalletRequestIssued"));
    let calls = serde_json::json!([{ "calls": [{ "to": ALICE, "data": "0x" }] }]);
    for (method, params) in [
        ("wallet_sendCalls", calls),
        ("wallet_getCapabilities", serde_json::json!([ALICE])),
        ("wallet_watchAsset", serde_json::json!([{}])),
        ("eth_sendRawTransaction", serde_json::json!(["0x02"])),
        ("wallet_grantPermissions", serde_json::json!([{}])),
    ] {
        let then = g.when(C::HostRequest { request_id: "h1".into(), method: method.into(), params });
        let types = then.event_types();
        assert!(!types.contains(&"WalletRequestIssued") && !types.contains(&"TransactionStackPushed"), "{method}: {types:?}");
        let state = then.state();
        let outcome = state.host_requests.items.get("h1").and_then(|r| r.outcome.clone());
        assert_eq!(
            outcome,
            Some(WalletOutcome::Error { code: 4200, message: format!("The embedded wallet does not support {method}") }),
            "{method}"
        );
        assert!(!state.modal.is_open(), "{method}: no view opened");
    }
}

// --- a Solana send from the embedded account --------------------------------------------------------

#[test]
fn given_the_embedded_solana_account_when_its_send_is_prepared_then_approval_shows_until_signed_then_send_then_account() {
    let devnet: CaipNetworkId = vestibule_actors::model::networks::SOLANA_DEVNET.parse().unwrap();
    let g = logged_in(embedded_session(with_email(multichain_options(None)), true), ALICE)
        .and(C::SwitchActiveNamespace { namespace: vestibule_actors::model::caip::Namespace::Solana });
    let id = g.state.balances.pending.as_ref().expect("a Solana balance fetch").id;
    let g = g
        .and(Command::BalancesFetched { id, outcome: Ok(solana_balances_of(&devnet, &solana_address())) })
        .and(C::OpenModal { view: None })
        .and(C::Navigate { view: View::Send, params: None, replace: None })
        .and(C::SubmitSend {
            form: SendForm { token: Some(format!("{devnet}/native")), amount: "1".into(), receiver: SOLANA_RECEIVER.into() },
        });
    assert_eq!(g.state.router.current(), View::Send, "nothing to approve while the chain service builds it");
    let send = g.state.send.solana.clone().unwrap().id;
    let g = g.and(Command::SolanaSendPrepared { id: send, outcome: Ok(prepared_solana_transfer(true)) });
    let request_id = g.pending_request();
    assert!(matches!(g.state.requests.items[&request_id].kind, RequestKind::SignTransaction { .. }));
    assert_eq!(approval_shown(&g.state), Some(request_id.clone()));
    let g = g.and(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!({ "signedTransaction": "AQID" }) },
    });
    assert_eq!(g.state.router.current(), View::Send, "signed: back on Send while the service sends it");
    let signature = "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW";
    let g = g.and(Command::SolanaSendSubmitted { id: send, outcome: Ok(signature.into()) });
    assert_eq!(g.state.router.current(), View::Account, "spec §4: after a Solana send, the view returns to Account");
}
