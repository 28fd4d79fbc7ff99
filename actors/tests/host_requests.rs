//! Given / when / then: the host app's EIP-1193 requests through the session (issue 13; spec §4
//! Wallet request outcome, §5 Wallet calls, §6): safe reads asked of the chain service as effects,
//! signing and sending through the connected wallet on the transaction stack, disallowed methods
//! rejected after 300 ms with the message, parameters checked, everything bounded.

use serde_json::{Value, json};
use vestibule_actors::machines::host_requests::{
    HostRequestsStatus, HostRoute, MAX_CALL_GAS, MAX_JSON_BYTES, MAX_PENDING, MAX_PENDING_JSON_BYTES, MAX_SETTLED, MAX_SETTLED_JSON_BYTES,
    NOT_ALLOWED, NOT_ALLOWED_DELAY_MS, codes,
};
use vestibule_actors::machines::modal::ModalStatus;
use vestibule_actors::machines::network_switch::SwitchStatus;
use vestibule_actors::machines::requests::{RequestKind, WalletOutcome};
use vestibule_actors::machines::router::View;
use vestibule_actors::machines::toasts::ToastVariant;
use vestibule_actors::model::caip::{CaipNetworkId, Namespace};
use vestibule_actors::model::options::SessionOptions;
use vestibule_actors::session::{ClientCommand as C, Command, DomainError, Event};
use vestibule_actors::testing::*;

fn options() -> SessionOptions {
    serde_json::from_value(json!({ "networks": ["eip155:1", "eip155:42161"] })).unwrap()
}

fn connect(g: Given) -> Given {
    let g = g.and(C::ReportWallets { wallets: vec![dev_wallet()] }).and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    g.and(C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[ALICE], "0x1") })
}

/// Connected on eip155:1, the modal closed, on a gateway that serves the session's networks.
fn connected_served() -> Given {
    connect(given(started_serving(options())))
}

/// Connected on eip155:1 on a gateway without a chain service.
fn connected_unserved() -> Given {
    connect(given(started_with(options())))
}

fn host(id: &str, method: &str, params: Value) -> C {
    C::HostRequest { request_id: id.into(), method: method.into(), params }
}

fn send_tx() -> Value {
    json!([{ "from": ALICE, "to": "0x000000000000000000000000000000000000dEaD", "value": "0x1", "data": "0x" }])
}

fn outcome(g: &Given, id: &str) -> Option<WalletOutcome> {
    g.state.host_requests.get(id).and_then(|r| r.outcome.clone())
}

fn error_code(g: &Given, id: &str) -> Option<i64> {
    match outcome(g, id) {
        Some(WalletOutcome::Error { code, .. }) => Some(code),
        _ => None,
    }
}

fn wallet_requests_issued(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(e, Event::WalletRequestIssued { .. })).count()
}

// --- safe reads -----------------------------------------------------------------------------------

#[test]
fn given_a_served_network_when_the_host_calls_eth_call_then_the_chain_service_is_asked_and_no_wallet() {
    let g = connected_served();
    let then = g.when(host("h1", "eth_call", json!([{ "to": DEMO_TOKEN, "data": "0x70a08231" }, "latest"])));
    assert_eq!(wallet_requests_issued(then.events()), 0, "a safe read never prompts the wallet");
    let state = then.state();
    let read = state.host_requests.get("h1").expect("recorded");
    assert_eq!(read.route, HostRoute::Chain);
    assert_eq!(read.network, Some(CaipNetworkId::eip155(1)));
    assert!(read.is_pending());
    assert_eq!(state.host_requests.chain_reads().count(), 1, "the runtime's effect is in the state");
    assert_eq!(state.modal.status, ModalStatus::Closed);
}

#[test]
fn given_a_pending_read_when_the_chain_service_answers_then_the_host_gets_the_result() {
    let g = connected_served().and(host("h1", "eth_getBalance", json!([ALICE, "latest"])));
    assert_eq!(g.state.host_requests.status, HostRequestsStatus::Pending);
    let g =
        g.and(Command::HostReadAnswered { request_id: "h1".into(), outcome: WalletOutcome::Ok { result: json!("0x4563918244f40000") } });
    assert_eq!(outcome(&g, "h1"), Some(WalletOutcome::Ok { result: json!("0x4563918244f40000") }));
    assert_eq!(g.state.host_requests.status, HostRequestsStatus::Idle);
    assert_eq!(g.state.host_requests.get("h1").unwrap().params, Value::Null, "an answered request keeps no params");
    // A late second answer changes nothing.
    assert!(g.when(Command::HostReadAnswered { request_id: "h1".into(), outcome: wallet_err(-32000, "late") }).events().is_empty());
}

#[test]
fn given_no_connection_when_the_host_reads_then_the_session_s_first_network_answers() {
    let g = given(started_serving(options()));
    let g = g.and(host("h1", "eth_blockNumber", Value::Null));
    let read = g.state.host_requests.get("h1").unwrap();
    assert_eq!((read.route, read.network.clone()), (HostRoute::Chain, Some(CaipNetworkId::eip155(1))));
}

#[test]
fn given_no_chain_service_when_the_host_reads_then_the_connected_wallet_answers_without_the_stack() {
    let g = connected_unserved();
    let then = g.when(host("h1", "eth_call", json!([{ "to": DEMO_TOKEN, "data": "0x" }])));
    assert_eq!(wallet_requests_issued(then.events()), 1);
    let g = g.and(host("h1", "eth_call", json!([{ "to": DEMO_TOKEN, "data": "0x" }])));
    let request = g.state.requests.get(&g.pending_request()).unwrap().clone();
    assert!(matches!(&request.kind, RequestKind::Rpc { method, .. } if method == "eth_call"));
    assert!(g.state.host_requests.stack.is_empty(), "a read is not on the transaction stack");
    assert_eq!(g.state.modal.status, ModalStatus::Closed);
    let g = g.and(C::ResolveWalletRequest { request_id: request.id, outcome: WalletOutcome::Ok { result: json!("0x01") } });
    assert_eq!(outcome(&g, "h1"), Some(WalletOutcome::Ok { result: json!("0x01") }));
}

#[test]
fn given_no_chain_service_and_no_wallet_when_the_host_reads_then_rejected_4100() {
    let g = given(started_with(options())).and(host("h1", "eth_call", json!([{ "to": DEMO_TOKEN }])));
    assert_eq!(error_code(&g, "h1"), Some(codes::UNAUTHORIZED));
}

#[test]
fn given_a_connection_when_the_host_asks_accounts_and_chain_then_the_session_answers_at_once() {
    let g = connected_served().and(host("a", "eth_accounts", Value::Null)).and(host("c", "eth_chainId", json!([])));
    assert_eq!(outcome(&g, "a"), Some(WalletOutcome::Ok { result: json!([ALICE]) }));
    assert_eq!(outcome(&g, "c"), Some(WalletOutcome::Ok { result: json!("0x1") }));
    let fresh = given(started_serving(options())).and(host("a", "eth_accounts", Value::Null));
    assert_eq!(outcome(&fresh, "a"), Some(WalletOutcome::Ok { result: json!([]) }));
}

// --- signing and sending: the transaction stack ---------------------------------------------------

#[test]
fn given_no_connection_when_the_host_sends_a_transaction_then_rejected_4100_without_a_wallet_request() {
    let g = given(started_serving(options()));
    let then = g.when(host("h1", "eth_sendTransaction", send_tx()));
    assert_eq!(wallet_requests_issued(then.events()), 0);
    let state = then.state();
    assert!(matches!(state.host_requests.get("h1").unwrap().outcome, Some(WalletOutcome::Error { code: codes::UNAUTHORIZED, .. })));
    assert_eq!(state.modal.status, ModalStatus::Closed);
}

#[test]
fn given_a_connection_when_the_host_sends_a_transaction_then_the_wallet_is_asked_on_the_stack_with_the_modal_open() {
    let g = connected_served();
    let then = g.when(host("h1", "eth_sendTransaction", send_tx()));
    assert_eq!(
        then.event_types(),
        vec!["WalletRequestIssued", "HostRequestReceived", "TransactionStackPushed", "ModalOpened", "Navigated"]
    );
    let state = then.state();
    let request = state.requests.items.values().next().unwrap();
    assert_eq!(request.kind, RequestKind::Rpc { method: "eth_sendTransaction".into(), params: send_tx() });
    assert_eq!(request.connector_id, DEV_WALLET_RDNS);
    assert_eq!(state.host_requests.stack, vec!["h1".to_string()]);
    assert_eq!(state.router.current(), View::ApproveTransaction);
}

#[test]
fn given_a_stacked_send_when_the_wallet_answers_then_popped_the_host_gets_the_hash_and_the_modal_closes() {
    let g = connected_served().and(host("h1", "eth_sendTransaction", send_tx()));
    let hash = format!("0x{:064x}", 7);
    let request_id = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: json!(hash) } });
    assert_eq!(outcome(&g, "h1"), Some(WalletOutcome::Ok { result: json!(hash) }));
    assert!(g.state.host_requests.stack.is_empty());
    assert_eq!(g.state.modal.status, ModalStatus::Closed);
    assert!(!g.state.send.sending.is_some(), "a host's send is not the Send view's");
}

#[test]
fn given_a_stacked_signature_when_the_wallet_refuses_then_popped_and_rejected_with_the_wallet_s_error() {
    let g = connected_served().and(host("h1", "personal_sign", json!(["0x68656c6c6f", ALICE])));
    let request_id = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: wallet_err(4001, "User rejected the request.") });
    assert_eq!(outcome(&g, "h1"), Some(wallet_err(4001, "User rejected the request.")));
    assert!(g.state.host_requests.stack.is_empty());
    assert_eq!(g.state.modal.status, ModalStatus::Closed);
}

#[test]
fn given_two_stacked_requests_when_the_first_is_answered_then_the_modal_stays_open_until_the_second() {
    let g = connected_served().and(host("h1", "eth_sendTransaction", send_tx())).and(host("h2", "personal_sign", json!(["0x00", ALICE])));
    let (first, second) = (g.state.requests.order[0].clone(), g.state.requests.order[1].clone());
    let g = g.and(C::ResolveWalletRequest { request_id: first, outcome: WalletOutcome::Ok { result: json!(format!("0x{:064x}", 1)) } });
    assert_eq!(g.state.host_requests.stack, vec!["h2".to_string()]);
    assert_eq!(g.state.modal.status, ModalStatus::Open);
    let g = g.and(C::ResolveWalletRequest { request_id: second, outcome: WalletOutcome::Ok { result: json!("0xsig") } });
    assert_eq!(g.state.modal.status, ModalStatus::Closed);
}

#[test]
fn given_the_visitor_s_own_open_modal_when_a_stacked_request_is_answered_then_the_modal_stays_open() {
    let g = connected_served().and(C::OpenModal { view: None }).and(host("h1", "eth_sendTransaction", send_tx()));
    assert_eq!(g.state.router.current(), View::Account, "the visitor's view is kept");
    let request_id = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: json!(format!("0x{:064x}", 1)) } });
    assert!(g.state.host_requests.stack.is_empty());
    assert_eq!(g.state.modal.status, ModalStatus::Open);
}

#[test]
fn given_stacked_requests_at_a_browser_wallet_and_a_pending_read_when_the_modal_closes_then_the_wallets_answers_settle_them() {
    // An outside review: closing the modal told the host 4001 while the wallet, whose prompt is its
    // own, went on to send the transaction; the hash was lost and a dapp would offer to send again.
    let g = connected_served()
        .and(host("r", "eth_call", json!([{ "to": DEMO_TOKEN, "data": "0x" }])))
        .and(host("h1", "eth_sendTransaction", send_tx()))
        .and(host("h2", "personal_sign", json!(["0x00", ALICE])));
    let then = g.when(C::CloseModal {});
    assert!(!then.event_types().contains(&"WalletRequestCancelled"), "{:?}", then.event_types());
    let g = g.and(C::CloseModal {});
    assert!(!g.state.modal.is_open());
    for id in ["h1", "h2"] {
        assert!(g.state.host_requests.get(id).unwrap().is_pending(), "{id} waits for the wallet");
    }
    // The wallet's answers settle them, and pop the stack.
    let requests: Vec<String> = g.state.requests.order.clone();
    assert_eq!(requests.len(), 2);
    let g = g.and(C::ResolveWalletRequest { request_id: requests[0].clone(), outcome: wallet_ok(&[], "0xabc") });
    let g = g.and(C::ResolveWalletRequest {
        request_id: requests[1].clone(),
        outcome: WalletOutcome::Error { code: codes::USER_REJECTED, message: "User rejected".into() },
    });
    assert!(outcome(&g, "h1").is_some_and(|o| matches!(o, WalletOutcome::Ok { .. })), "{:?}", outcome(&g, "h1"));
    assert_eq!(error_code(&g, "h2"), Some(codes::USER_REJECTED));
    assert!(g.state.host_requests.stack.is_empty());
    assert!(!g.state.modal.is_open());
    // Spec §6: safe reads are not aborted.
    assert!(g.state.host_requests.get("r").unwrap().is_pending());
    let g = g.and(Command::HostReadAnswered { request_id: "r".into(), outcome: WalletOutcome::Ok { result: json!("0x") } });
    assert!(outcome(&g, "r").is_some());
}

#[test]
fn given_a_browser_wallets_stacked_request_when_the_modal_closes_and_reopens_then_it_still_waits_and_its_answer_settles_it() {
    let g = connected_served().and(host("h1", "eth_sendTransaction", send_tx()));
    let request = g.pending_request();
    let g = g.and(C::CloseModal {}).and(C::OpenModal { view: None });
    assert_eq!(g.state.host_requests.stack, vec!["h1".to_string()]);
    assert_eq!(g.pending_request(), request);
    let g = g.and(C::ResolveWalletRequest { request_id: request, outcome: wallet_ok(&[], "0x1") });
    assert!(outcome(&g, "h1").is_some_and(|o| matches!(o, WalletOutcome::Ok { .. })));
}

#[test]
fn given_pending_host_requests_when_the_page_reloads_then_each_is_rejected_4900() {
    let g = connected_served().and(host("r", "eth_call", json!([{ "to": DEMO_TOKEN }]))).and(host("s", "eth_sendTransaction", send_tx()));
    let g = g.and(C::PageLoaded {});
    assert_eq!(error_code(&g, "r"), Some(codes::DISCONNECTED));
    assert_eq!(error_code(&g, "s"), Some(codes::DISCONNECTED));
    assert_eq!(g.state.host_requests.status, HostRequestsStatus::Idle);
    assert!(g.state.host_requests.stack.is_empty());
}

// --- disallowed methods ---------------------------------------------------------------------------

#[test]
fn given_a_method_in_neither_list_when_the_host_asks_then_the_modal_opens_and_after_300_ms_it_is_rejected_4200_with_the_message() {
    let g = connected_served();
    let then = g.when(host("x", "anvil_setBalance", json!([ALICE, "0x1"])));
    assert_eq!(wallet_requests_issued(then.events()), 0);
    let g = g.and(host("x", "anvil_setBalance", json!([ALICE, "0x1"])));
    assert_eq!(g.state.modal.status, ModalStatus::Open);
    assert_eq!(g.state.next_deadline(), Some(T0 + NOT_ALLOWED_DELAY_MS));
    assert!(!g.state.toasts.items.values().any(|t| t.message == NOT_ALLOWED), "not before 300 ms");
    // Time is an input: a tick 1 ms early does nothing to it.
    let early = g.clone().at(T0 + NOT_ALLOWED_DELAY_MS - 1).and(Command::Tick);
    assert!(early.state.host_requests.get("x").unwrap().is_pending());
    let g = g.at(T0 + NOT_ALLOWED_DELAY_MS).and(Command::Tick);
    assert_eq!(outcome(&g, "x"), Some(wallet_err(codes::UNSUPPORTED_METHOD, NOT_ALLOWED)));
    let toast = g.state.toasts.items.values().find(|t| t.message == NOT_ALLOWED).expect("the message shows");
    assert_eq!(toast.variant, ToastVariant::Error);
    assert_eq!(g.state.next_deadline().filter(|d| *d <= T0 + NOT_ALLOWED_DELAY_MS), None);
}

// --- parameters and bounds -----------------------------------------------------------------------

#[test]
fn given_to_or_data_without_0x_when_the_host_calls_then_rejected_as_invalid_params_without_a_wallet_request() {
    let bad = [
        ("eth_sendTransaction", json!([{ "to": "000000000000000000000000000000000000dEaD", "value": "0x1" }])),
        ("eth_sendTransaction", json!([{ "to": "0x000000000000000000000000000000000000dEaD", "data": "a9059cbb" }])),
        ("eth_call", json!([{ "to": DEMO_TOKEN, "data": "70a08231" }])),
        ("wallet_sendCalls", json!([{ "calls": [{ "to": DEMO_TOKEN, "data": "zz" }] }])),
        ("eth_sendTransaction", json!([{ "from": DEMO_TOKEN, "to": DEMO_TOKEN }])),
        ("eth_sendTransaction", json!("not params")),
    ];
    for (i, (method, params)) in bad.into_iter().enumerate() {
        let id = format!("b{i}");
        let then = connected_served().when(host(&id, method, params.clone()));
        assert_eq!(wallet_requests_issued(then.events()), 0, "{method} {params}");
        let state = then.state();
        assert!(
            matches!(&state.host_requests.get(&id).unwrap().outcome, Some(WalletOutcome::Error { code: codes::INVALID_PARAMS, .. })),
            "{method} {params}"
        );
    }
    // Fence: the same calls with 0x go through.
    let good = connected_served().when(host("g", "wallet_sendCalls", json!([{ "calls": [{ "to": DEMO_TOKEN, "data": "0xa9059cbb" }] }])));
    assert_eq!(wallet_requests_issued(good.events()), 1);
}

#[test]
fn given_params_over_the_bound_when_the_host_asks_then_rejected_invalid_params_and_not_kept() {
    let big = json!([{ "to": DEMO_TOKEN, "data": format!("0x{}", "00".repeat(MAX_JSON_BYTES / 2)) }]);
    let g = connected_served().and(host("big", "eth_call", big));
    assert_eq!(error_code(&g, "big"), Some(codes::INVALID_PARAMS));
    assert_eq!(g.state.host_requests.get("big").unwrap().params, Value::Null);
}

#[test]
fn given_a_read_with_state_overrides_or_unbounded_gas_when_the_host_asks_then_rejected_invalid_params_without_the_node() {
    // A looping override with all the gas there is kept the devnet's node busy for good (outside
    // attack): such reads never reach the chain service.
    let looping = json!({ DEMO_TOKEN: { "code": "0x5b600056" } });
    let call = |gas: &str| json!({ "to": DEMO_TOKEN, "data": "0x", "gas": gas });
    let within = format!("0x{MAX_CALL_GAS:x}");
    let over = format!("0x{:x}", MAX_CALL_GAS + 1);
    for (method, params) in [
        ("eth_call", json!([call(&within), "latest", looping])),
        ("eth_estimateGas", json!([call(&within), "latest", looping])),
        ("eth_call", json!([call(&over), "latest"])),
        ("eth_estimateGas", json!([call("0xffffffffffffffff")])),
        ("eth_call", json!([call("lots"), "latest"])),
    ] {
        let g = connected_served().and(host("r", method, params.clone()));
        assert_eq!(error_code(&g, "r"), Some(codes::INVALID_PARAMS), "{method} {params}");
        assert_eq!(g.state.host_requests.chain_reads().count(), 0, "{method} {params}: the node is not asked");
    }
    // The positive probe: the same call with a block's gas, and without, is asked of the node.
    for params in [json!([call(&within), "latest"]), json!([{ "to": DEMO_TOKEN, "data": "0x" }])] {
        let g = connected_served().and(host("r", "eth_call", params.clone()));
        assert_eq!(g.state.host_requests.chain_reads().count(), 1, "{params}");
    }
}

#[test]
fn given_pending_requests_near_the_byte_budget_when_one_more_would_pass_it_then_refused() {
    // 58 KiB messages: two fit in 128 KiB, a third does not (16 of them held 1.9 MB of state).
    let message = |i: usize| json!([format!("0x{i:02x}{}", "ab".repeat(29 * 1024)), ALICE]);
    let g = connected_served().and(host("s0", "personal_sign", message(0))).and(host("s1", "personal_sign", message(1)));
    assert!(g.state.host_requests.get("s1").is_some_and(|r| r.is_pending()), "two are taken (positive probe)");
    assert_eq!(
        g.when(host("s2", "personal_sign", message(2))).error(),
        &DomainError::TooMany { what: "bytes of pending host requests' params".into(), max: MAX_PENDING_JSON_BYTES }
    );
    // A small request still fits.
    assert!(g.when(host("small", "eth_blockNumber", Value::Null)).result.is_ok());
}

#[test]
fn given_sixteen_pending_when_one_more_comes_then_refused_and_ids_are_checked() {
    let mut g = connected_served();
    for i in 0..MAX_PENDING {
        g = g.and(host(&format!("p{i}"), "eth_blockNumber", Value::Null));
    }
    assert_eq!(
        g.when(host("one-more", "eth_blockNumber", Value::Null)).error(),
        &DomainError::TooMany { what: "pending host requests".into(), max: MAX_PENDING }
    );
    let g = g.and(Command::HostReadAnswered { request_id: "p0".into(), outcome: WalletOutcome::Ok { result: json!("0x1") } });
    assert!(g.when(host("one-more", "eth_blockNumber", Value::Null)).result.is_ok(), "room again once one is answered");
    assert!(matches!(g.when(host("p1", "eth_blockNumber", Value::Null)).error(), DomainError::InvalidInput { .. }), "ids are not reused");
    assert!(matches!(g.when(host(&"x".repeat(65), "eth_blockNumber", Value::Null)).error(), DomainError::InvalidInput { .. }));
    assert!(matches!(g.when(host("has space", "eth_blockNumber", Value::Null)).error(), DomainError::InvalidInput { .. }));
}

#[test]
fn given_many_answered_requests_then_only_the_newest_answers_are_kept() {
    let mut g = connected_served();
    for i in 0..MAX_SETTLED + 5 {
        g = g.and(host(&format!("a{i}"), "eth_accounts", Value::Null));
    }
    assert_eq!(g.state.host_requests.items.len(), MAX_SETTLED);
    assert!(g.state.host_requests.get("a0").is_none());
    assert!(g.state.host_requests.get(&format!("a{}", MAX_SETTLED + 4)).is_some());
}

#[test]
fn given_large_answers_then_the_oldest_are_forgotten_so_the_answers_kept_stay_within_their_budget() {
    // Each answer a little under the 64 KiB bound: two fit in the budget together, three do not.
    let large = WalletOutcome::Ok { result: json!(format!("0x{}", "ab".repeat(30_000))) };
    assert!(2 * 60_004 < MAX_SETTLED_JSON_BYTES && 3 * 60_004 > MAX_SETTLED_JSON_BYTES);
    let answer = |g: Given, id: &str| {
        g.and(host(id, "eth_blockNumber", Value::Null)).and(Command::HostReadAnswered { request_id: id.into(), outcome: large.clone() })
    };
    let g = answer(answer(connected_served(), "r0"), "r1");
    assert!(["r0", "r1"].iter().all(|id| g.state.host_requests.get(id).is_some_and(|r| r.outcome.is_some())), "two are kept");
    // An outside review: 16 answers of 64 KiB each were kept, about 1 MB per session.
    let g = g.and(host("r2", "eth_blockNumber", Value::Null));
    let then = g.when(Command::HostReadAnswered { request_id: "r2".into(), outcome: large.clone() });
    assert!(then.events().contains(&Event::HostAnswersForgotten { ids: vec!["r0".into()] }), "{:?}", then.event_types());
    let state = then.state();
    assert!(state.host_requests.get("r0").is_none(), "the oldest is forgotten");
    assert_eq!(state.host_requests.get("r2").and_then(|r| r.outcome.clone()), Some(large), "never the new one");
    assert!(state.host_requests.get("r1").is_some());
}

// --- the ApproveTransaction view: Cancel, and closing while sign-in is required ------------------

#[test]
fn given_a_stacked_send_when_the_visitor_cancels_then_rejected_4001_the_wallet_request_withdrawn_and_the_modal_closes() {
    let g = connected_served().and(host("h1", "eth_sendTransaction", send_tx()));
    let request_id = g.pending_request();
    let then = g.when(C::CancelHostRequest { request_id: "h1".into() });
    assert_eq!(
        then.event_types(),
        vec![
            "WalletRequestCancelled",
            "WalletRequestsDrained",
            "HostRequestSettled",
            "HostRequestsDrained",
            "TransactionStackPopped",
            "ModalClosed"
        ]
    );
    let g = g.and(C::CancelHostRequest { request_id: "h1".into() });
    assert_eq!(outcome(&g, "h1"), Some(wallet_err(codes::USER_REJECTED, "User rejected the request.")));
    assert!(g.state.host_requests.stack.is_empty());
    assert!(g.state.requests.get(&request_id).is_none(), "the wallet's prompt is withdrawn");
    assert_eq!(g.state.modal.status, ModalStatus::Closed);
}

#[test]
fn given_two_stacked_requests_when_the_top_one_is_cancelled_then_the_other_stays_with_the_modal_open() {
    let g = connected_served().and(host("h1", "eth_sendTransaction", send_tx())).and(host("h2", "personal_sign", json!(["0x00", ALICE])));
    let g = g.and(C::CancelHostRequest { request_id: "h1".into() });
    assert_eq!(error_code(&g, "h1"), Some(codes::USER_REJECTED));
    assert_eq!(g.state.host_requests.stack, vec!["h2".to_string()]);
    assert!(g.state.host_requests.get("h2").unwrap().is_pending());
    assert_eq!(g.state.modal.status, ModalStatus::Open);
    assert_eq!(g.state.router.current(), View::ApproveTransaction);
}

#[test]
fn given_a_request_not_on_the_stack_when_cancelled_then_refused() {
    let g = connected_served().and(host("r", "eth_call", json!([{ "to": DEMO_TOKEN, "data": "0x" }])));
    assert!(
        matches!(g.when(C::CancelHostRequest { request_id: "r".into() }).error(), DomainError::InvalidInput { .. }),
        "a safe read is not the visitor's to refuse"
    );
    assert!(matches!(g.when(C::CancelHostRequest { request_id: "nope".into() }).error(), DomainError::InvalidInput { .. }));
    let g = g.and(host("h1", "eth_sendTransaction", send_tx()));
    let request_id = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: json!(format!("0x{:064x}", 1)) } });
    assert!(
        matches!(g.when(C::CancelHostRequest { request_id: "h1".into() }).error(), DomainError::InvalidInput { .. }),
        "an answered one neither"
    );
}

/// Sign-in required: connected, the sign-in view left by a page reload (the modal closed), the
/// account synced back, and no sign-in session.
fn required_sign_in_without_session() -> Given {
    let mut opts = sign_in_options(true);
    opts.networks = options().networks;
    let g = connect(given(started_serving(opts)));
    assert!(g.state.siwx.challenge.is_some(), "the sign-in view asked");
    let g = g.and(C::PageLoaded {});
    let sync = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: sync, outcome: wallet_ok(&[ALICE], "0x1") });
    assert_eq!(g.state.modal.status, ModalStatus::Closed, "given: the modal is closed");
    g
}

#[test]
fn given_required_sign_in_and_no_session_when_the_host_sends_then_approve_transaction_cannot_be_closed() {
    let g = required_sign_in_without_session().and(host("h1", "eth_sendTransaction", send_tx()));
    assert_eq!(g.state.router.current(), View::ApproveTransaction);
    assert!(!g.state.modal.closable, "spec §4: closing is disabled on ApproveTransaction");
    assert_eq!(g.when(C::CloseModal {}).error(), &DomainError::CloseDisabled);
    // The visitor can still refuse the request itself.
    let g = g.and(C::CancelHostRequest { request_id: "h1".into() });
    assert_eq!(error_code(&g, "h1"), Some(codes::USER_REJECTED));
    // Fence: without sign-in required the same view can be closed.
    let open = connected_served().and(host("h1", "eth_sendTransaction", send_tx()));
    assert_eq!(open.state.router.current(), View::ApproveTransaction);
    assert!(open.state.modal.closable);
}

// --- wallet_switchEthereumChain through the session's network switch (spec §4 Network switch paths)

fn switch_to(id: &str, chain_id: &str) -> C {
    host(id, "wallet_switchEthereumChain", json!([{ "chainId": chain_id }]))
}

fn rpc_of(g: &Given, request_id: &str) -> (String, Value) {
    match &g.state.requests.get(request_id).expect("a wallet request").kind {
        RequestKind::Rpc { method, params } => (method.clone(), params.clone()),
        other => panic!("expected an RPC request, got {other:?}"),
    }
}

fn eip155_network(g: &Given) -> Option<CaipNetworkId> {
    g.state.connection.namespace(Namespace::Eip155).network.as_ref().map(|n| n.caip_network_id.clone())
}

#[test]
fn given_a_connection_when_the_host_switches_chain_then_the_session_s_switch_runs_with_the_switch_network_view() {
    let g = connected_served();
    let then = g.when(switch_to("s", "0xa4b1"));
    assert_eq!(
        then.event_types(),
        vec!["HostRequestReceived", "TransactionStackPushed", "ModalOpened", "Navigated", "WalletRequestIssued", "NetworkSwitchStarted"]
    );
    let g = g.and(switch_to("s", "0xa4b1"));
    assert_eq!(g.state.network_switch.status, SwitchStatus::Switching);
    assert_eq!(g.state.network_switch.target, Some(CaipNetworkId::eip155(42161)));
    assert_eq!(g.state.router.current(), View::SwitchNetwork);
    assert_eq!(g.state.router.stack.len(), 1, "opened for the host: nothing to go back to");
    let request = g.state.host_requests.get("s").unwrap();
    assert_eq!((request.route, request.network.clone()), (HostRoute::NetworkSwitch, Some(CaipNetworkId::eip155(42161))));
    assert!(request.is_pending());
    assert_eq!(rpc_of(&g, &g.pending_request()), ("wallet_switchEthereumChain".into(), json!([{ "chainId": "0xa4b1" }])));

    // The wallet switched: the session's network follows and the host gets null.
    let switch = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: switch, outcome: WalletOutcome::Ok { result: Value::Null } });
    assert_eq!(eip155_network(&g), Some(CaipNetworkId::eip155(42161)));
    assert_eq!(g.state.network_switch.status, SwitchStatus::Idle);
    assert_eq!(outcome(&g, "s"), Some(WalletOutcome::Ok { result: Value::Null }));
    assert!(g.state.host_requests.stack.is_empty());
    assert_eq!(g.state.modal.status, ModalStatus::Closed, "opened for the host's request, closed when it is settled");
    let answered = g.and(host("c", "eth_chainId", Value::Null));
    assert_eq!(outcome(&answered, "c"), Some(WalletOutcome::Ok { result: json!("0xa4b1") }));
}

#[test]
fn given_a_host_switch_when_the_wallet_does_not_know_the_chain_then_added_then_switched_and_the_host_gets_null() {
    let g = connected_served().and(switch_to("s", "0xa4b1"));
    let switch = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: switch, outcome: wallet_err(4902, "Unrecognized chain ID") });
    assert_eq!(g.state.network_switch.status, SwitchStatus::Adding);
    assert!(g.state.host_requests.get("s").unwrap().is_pending(), "4902 is not the host's answer");
    let add = g.pending_request();
    let (method, params) = rpc_of(&g, &add);
    assert_eq!(method, "wallet_addEthereumChain");
    assert_eq!(params[0]["chainId"], json!("0xa4b1"));
    let g = g.and(C::ResolveWalletRequest { request_id: add, outcome: WalletOutcome::Ok { result: Value::Null } });
    assert_eq!(g.state.network_switch.status, SwitchStatus::Switching);
    assert!(g.state.host_requests.get("s").unwrap().is_pending());
    let again = g.pending_request();
    assert_eq!(rpc_of(&g, &again).0, "wallet_switchEthereumChain");
    let g = g.and(C::ResolveWalletRequest { request_id: again, outcome: WalletOutcome::Ok { result: Value::Null } });
    assert_eq!(outcome(&g, "s"), Some(WalletOutcome::Ok { result: Value::Null }));
    assert_eq!(eip155_network(&g), Some(CaipNetworkId::eip155(42161)));
    assert_eq!(g.state.modal.status, ModalStatus::Closed);
}

#[test]
fn given_a_host_switch_when_the_wallet_refuses_then_the_host_gets_the_wallet_s_error_and_the_network_stays() {
    let g = connected_served().and(switch_to("s", "0xa4b1"));
    let switch = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: switch, outcome: wallet_err(4001, "User rejected the request.") });
    assert_eq!(
        outcome(&g, "s"),
        Some(wallet_err(4001, "User rejected the request.")),
        "the wallet's code and message, not the view's wording"
    );
    assert_eq!(g.state.network_switch.status, SwitchStatus::Failed);
    assert_eq!(g.state.network_switch.error.as_deref(), Some("Switch declined"));
    assert_eq!(eip155_network(&g), Some(CaipNetworkId::eip155(1)));
    assert!(g.state.host_requests.stack.is_empty());
    assert_eq!(g.state.modal.status, ModalStatus::Closed);

    // Any other wallet error is passed on as is too, and so is a failed add after 4902.
    let g = connected_served().and(switch_to("s", "0xa4b1"));
    let switch = g.pending_request();
    let g2 = g.clone().and(C::ResolveWalletRequest { request_id: switch.clone(), outcome: wallet_err(-32603, "Internal JSON-RPC error.") });
    assert_eq!(outcome(&g2, "s"), Some(wallet_err(-32603, "Internal JSON-RPC error.")));
    let g = g.and(C::ResolveWalletRequest { request_id: switch, outcome: wallet_err(4902, "Unrecognized chain ID") });
    let add = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: add, outcome: wallet_err(4001, "User rejected adding the chain") });
    assert_eq!(outcome(&g, "s"), Some(wallet_err(4001, "User rejected adding the chain")));
    assert_eq!(g.state.network_switch.status, SwitchStatus::Failed);
}

#[test]
fn given_a_host_switch_when_the_wallet_reports_chain_changed_then_the_host_gets_null() {
    let g = connected_served().and(switch_to("s", "0xa4b1"));
    let g = g.and(C::WalletChainChanged { connector_id: DEV_WALLET_RDNS.into(), chain_id: "0xa4b1".into() });
    assert_eq!(outcome(&g, "s"), Some(WalletOutcome::Ok { result: Value::Null }));
    assert!(g.state.requests.order.is_empty(), "the switch request is no longer waited for");
    assert_eq!(g.state.modal.status, ModalStatus::Closed);
}

#[test]
fn given_a_host_switch_at_a_browser_wallet_when_the_modal_closes_then_the_wallets_answer_settles_it() {
    let g = connected_served().and(switch_to("s", "0xa4b1"));
    let g = g.and(C::CloseModal {});
    assert!(g.state.host_requests.get("s").unwrap().is_pending(), "the wallet may still switch");
    assert_eq!(g.state.requests.order.len(), 1, "the switch's wallet request stays");
    let request = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: request, outcome: WalletOutcome::Error { code: 4001, message: "no".into() } });
    assert_eq!(error_code(&g, "s"), Some(4001));
    assert!(g.state.host_requests.stack.is_empty());
}

#[test]
fn given_the_current_chain_or_a_foreign_chain_or_a_bad_id_when_the_host_switches_then_answered_without_the_session_s_switch() {
    // Already there: null at once, no wallet request, no modal.
    let then = connected_served().when(switch_to("s", "0x1"));
    assert_eq!(wallet_requests_issued(then.events()), 0);
    let state = then.state();
    assert_eq!(state.host_requests.get("s").unwrap().outcome, Some(WalletOutcome::Ok { result: Value::Null }));
    assert_eq!(state.modal.status, ModalStatus::Closed);
    // A chain outside the session's networks: the wallet is asked directly, as before.
    let g = connected_served().and(switch_to("p", "0x89"));
    assert_eq!(g.state.host_requests.get("p").unwrap().route, HostRoute::Wallet);
    assert_eq!(g.state.network_switch.status, SwitchStatus::Idle);
    assert_eq!(rpc_of(&g, &g.pending_request()), ("wallet_switchEthereumChain".into(), json!([{ "chainId": "0x89" }])));
    // Network switching disabled by the host's options: the wallet too.
    let mut o = options();
    o.enable_network_switch = false;
    let g = connect(given(started_serving(o))).and(switch_to("d", "0xa4b1"));
    assert_eq!(g.state.host_requests.get("d").unwrap().route, HostRoute::Wallet);
    assert_eq!(g.state.network_switch.status, SwitchStatus::Idle);
    // Not a chain id.
    let g = connected_served().and(host("b", "wallet_switchEthereumChain", json!([{ "chainId": "42161" }])));
    assert_eq!(error_code(&g, "b"), Some(codes::INVALID_PARAMS));
}

#[test]
fn given_a_pending_switch_when_the_host_asks_the_same_or_another_chain_then_it_rides_along_or_is_refused_32002() {
    let g = connected_served().and(C::OpenModal { view: None }).and(C::SwitchNetwork { network: CaipNetworkId::eip155(42161) });
    let other = g.clone().and(switch_to("x", "0x1"));
    assert_eq!(error_code(&other, "x"), Some(-32002));
    let then = g.when(switch_to("s", "0xa4b1"));
    assert_eq!(wallet_requests_issued(then.events()), 0, "the pending switch is not asked twice");
    let g = g.and(switch_to("s", "0xa4b1"));
    let switch = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: switch, outcome: WalletOutcome::Ok { result: Value::Null } });
    assert_eq!(outcome(&g, "s"), Some(WalletOutcome::Ok { result: Value::Null }));
    assert_eq!(g.state.modal.status, ModalStatus::Open, "the visitor's own modal stays open");
    assert_eq!(g.state.router.current(), View::Account);
}

#[test]
fn given_a_stacked_send_when_the_host_switches_then_approve_transaction_comes_back_after_the_switch() {
    let g = connected_served().and(host("t", "eth_sendTransaction", send_tx())).and(switch_to("s", "0xa4b1"));
    assert_eq!(g.state.router.current(), View::SwitchNetwork);
    assert_eq!(g.state.host_requests.stack, vec!["t".to_string(), "s".to_string()]);
    let switch = g.state.network_switch.request_id.clone().expect("the switch's wallet request");
    assert_eq!(rpc_of(&g, &switch).0, "wallet_switchEthereumChain");
    let g = g.and(C::ResolveWalletRequest { request_id: switch, outcome: WalletOutcome::Ok { result: Value::Null } });
    assert_eq!(outcome(&g, "s"), Some(WalletOutcome::Ok { result: Value::Null }));
    assert_eq!(g.state.host_requests.stack, vec!["t".to_string()]);
    assert_eq!(g.state.modal.status, ModalStatus::Open);
    assert_eq!(g.state.router.current(), View::ApproveTransaction);
}
