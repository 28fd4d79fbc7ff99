//! Given / when / then: the EVM account's decisions (issue 13): balances and activity asked of the
//! chain service as effects whose outcomes come back as commands, the Send view's validation and
//! transfer, receipts, and switching the wallet's network.

use vestibule_actors::machines::balances::{BalancesStatus, RETRY_BLOCK_MS, TOKEN_BALANCE_UNAVAILABLE};
use vestibule_actors::machines::network_switch::SwitchStatus;
use vestibule_actors::machines::requests::{RequestKind, WalletOutcome};
use vestibule_actors::machines::router::View;
use vestibule_actors::machines::send::{AMOUNT_AND_RECEIVER_REQUIRED, SendForm, SendStatus, SentStatus, TOKEN_REQUIRED, UNSUPPORTED_CHAIN};
use vestibule_actors::model::caip::{CaipNetworkId, Namespace};
use vestibule_actors::model::options::SessionOptions;
use vestibule_actors::session::{ClientCommand as C, Command, DomainError, Event, ReceiptOutcome};
use vestibule_actors::testing::*;

fn options() -> SessionOptions {
    serde_json::from_value(serde_json::json!({ "networks": ["eip155:1", "eip155:42161"] })).unwrap()
}

fn mainnet() -> CaipNetworkId {
    CaipNetworkId::eip155(1)
}

/// Connected on eip155:1 with a gateway that serves the session's networks.
fn connected_served(options: SessionOptions) -> Given {
    let g = given(started_serving(options))
        .and(C::ReportWallets { wallets: vec![dev_wallet()] })
        .and(C::OpenModal { view: None })
        .and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request = g.pending_request();
    g.and(C::ResolveWalletRequest { request_id: request, outcome: wallet_ok(&[ALICE], "0x1") })
}

/// Connected, with the balances loaded.
fn loaded() -> Given {
    let g = connected_served(options());
    let id = g.state.balances.pending.as_ref().unwrap().id;
    g.and(Command::BalancesFetched { id, outcome: Ok(balances_of(&mainnet(), ALICE)) })
}

fn form(token: Option<&str>, amount: &str, receiver: &str) -> SendForm {
    SendForm { token: token.map(str::to_string), amount: amount.into(), receiver: receiver.into() }
}

const NATIVE: &str = "eip155:1/native";

fn demo_asset() -> String {
    format!("eip155:1/erc20:{}", DEMO_TOKEN.to_ascii_lowercase())
}

// --- balances -------------------------------------------------------------------------------------

#[test]
fn given_a_served_network_when_the_wallet_connects_then_the_balances_are_requested() {
    let g = connected_served(options());
    assert!(g.history.iter().any(|e| matches!(e, Event::BalancesRequested { .. })));
    let fetch = g.state.balances.pending.clone().expect("a fetch is pending");
    assert_eq!(fetch.network, mainnet());
    assert_eq!(fetch.address, ALICE);
    assert!(!fetch.fresh);
    assert_eq!(g.state.balances.status, BalancesStatus::Loading);
}

#[test]
fn given_no_served_network_when_the_wallet_connects_then_nothing_is_fetched() {
    let g = given(started_with(options()))
        .and(C::ReportWallets { wallets: vec![dev_wallet()] })
        .and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: request, outcome: wallet_ok(&[ALICE], "0x1") });
    assert!(g.state.balances.pending.is_none());
    assert!(!g.history.iter().any(|e| matches!(e, Event::BalancesRequested { .. })));
}

#[test]
fn given_a_pending_fetch_when_the_service_answers_then_loaded_without_zero_decimal_tokens() {
    let g = loaded();
    let b = &g.state.balances;
    assert_eq!(b.status, BalancesStatus::Loaded);
    assert_eq!(b.native.as_ref().unwrap().symbol, "ETH");
    assert_eq!(b.tokens.iter().map(|t| t.symbol.as_str()).collect::<Vec<_>>(), vec!["DEMO"], "zero-decimal tokens are left out");
    assert_eq!(b.fetched_ms, Some(T0));
    assert!(b.pending.is_none());
}

#[test]
fn given_fresh_balances_when_refreshed_within_30_s_then_nothing_happens_and_after_30_s_a_fetch() {
    let g = loaded();
    assert_eq!(g.clone().at(T0 + 29_999).when(C::RefreshBalances {}).event_types(), Vec::<&str>::new());
    let then = g.at(T0 + 30_000).when(C::RefreshBalances {});
    assert_eq!(then.event_types(), vec!["BalancesRequested"]);
}

#[test]
fn given_a_pending_fetch_when_it_fails_then_the_toast_shows_and_a_retry_is_blocked_for_30_s() {
    let g = connected_served(options());
    let id = g.state.balances.pending.as_ref().unwrap().id;
    let g = g.and(Command::BalancesFetched { id, outcome: Err("node down".into()) });
    assert_eq!(g.state.balances.status, BalancesStatus::Failed);
    assert_eq!(g.state.balances.retry_blocked_until_ms, Some(T0 + RETRY_BLOCK_MS));
    assert!(g.state.toasts.items.values().any(|t| t.message == TOKEN_BALANCE_UNAVAILABLE));
    assert!(g.clone().at(T0 + RETRY_BLOCK_MS - 1).when(C::RefreshBalances {}).events().is_empty());
    assert_eq!(g.at(T0 + RETRY_BLOCK_MS).when(C::RefreshBalances {}).event_types(), vec!["BalancesRequested"]);
}

#[test]
fn given_a_superseded_fetch_when_its_late_answer_arrives_then_it_changes_nothing() {
    let g = connected_served(options());
    let id = g.state.balances.pending.as_ref().unwrap().id;
    let then = g.when(Command::BalancesFetched { id: id + 7, outcome: Ok(balances_of(&mainnet(), ALICE)) });
    assert!(then.events().is_empty());
}

#[test]
fn given_no_connection_when_balances_are_refreshed_then_refused() {
    let g = given(started_serving(options()));
    assert_eq!(g.when(C::RefreshBalances {}).error(), &DomainError::NotConnected);
}

// --- activity -------------------------------------------------------------------------------------

#[test]
fn given_no_account_when_activity_is_loaded_then_refused_with_the_specs_message() {
    let g = given(started_serving(options()));
    let e = g.when(C::LoadActivity { more: false }).error().clone();
    assert_eq!(e, DomainError::NoAccountAddress);
    assert_eq!(e.to_string(), "Transactions can't be fetched without an accountAddress");
}

#[test]
fn given_a_connected_account_when_activity_pages_arrive_then_newest_first_with_the_next_cursor() {
    let g = loaded().and(C::LoadActivity { more: false });
    let id = g.state.activity.pending.as_ref().unwrap().id;
    let g = g.and(Command::ActivityFetched { id, outcome: Ok(activity_page(&mainnet(), ALICE, 1_700_000_500, Some("c1"))) });
    assert_eq!(g.state.activity.next.as_deref(), Some("c1"));
    let g = g.and(C::LoadActivity { more: true });
    let fetch = g.state.activity.pending.clone().unwrap();
    assert_eq!(fetch.cursor.as_deref(), Some("c1"));
    let g = g.and(Command::ActivityFetched { id: fetch.id, outcome: Ok(activity_page(&mainnet(), ALICE, 1_700_000_100, None)) });
    let times: Vec<u64> = g.state.activity.transactions.iter().map(|t| t.mined_at).collect();
    assert_eq!(times, vec![1_700_000_500, 1_700_000_100]);
    assert_eq!(g.state.activity.next, None);
    // No next page: `more` asks nothing.
    assert!(g.when(C::LoadActivity { more: true }).events().is_empty());
}

#[test]
fn given_a_pending_page_when_it_fails_then_the_list_is_emptied_with_the_specs_toast() {
    let g = loaded().and(C::LoadActivity { more: false });
    let id = g.state.activity.pending.as_ref().unwrap().id;
    let g = g.and(Command::ActivityFetched { id, outcome: Err("ots down".into()) });
    assert!(g.state.activity.transactions.is_empty());
    assert_eq!(g.state.activity.next, None);
    assert!(g.state.toasts.items.values().any(|t| t.message == "Failed to fetch transactions"));
}

// --- send -----------------------------------------------------------------------------------------

#[test]
fn given_an_empty_form_when_submitted_then_an_amount_and_receiver_are_required() {
    let then = loaded().when(C::SubmitSend { form: form(Some(NATIVE), "", ALICE) });
    assert_eq!(then.state().send.error.as_deref(), Some(AMOUNT_AND_RECEIVER_REQUIRED));
    let then = loaded().when(C::SubmitSend { form: form(Some(NATIVE), "1", " ") });
    assert_eq!(then.state().send.error.as_deref(), Some(AMOUNT_AND_RECEIVER_REQUIRED));
}

#[test]
fn given_no_token_when_submitted_then_a_token_is_required() {
    let then = loaded().when(C::SubmitSend { form: form(None, "1", ALICE) });
    assert_eq!(then.state().send.error.as_deref(), Some(TOKEN_REQUIRED));
    assert!(then.state().requests.order.is_empty(), "no wallet request");
}

#[test]
fn given_a_network_the_service_does_not_serve_when_submitted_then_unsupported_chain() {
    let g = given(started_with(options()))
        .and(C::ReportWallets { wallets: vec![dev_wallet()] })
        .and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: request, outcome: wallet_ok(&[ALICE], "0x1") });
    let then = g.when(C::SubmitSend { form: form(Some(NATIVE), "1", ALICE) });
    assert_eq!(then.state().send.error.as_deref(), Some(UNSUPPORTED_CHAIN));
}

#[test]
fn given_more_than_the_balance_when_submitted_then_insufficient_funds_and_no_request() {
    let then = loaded().when(C::SubmitSend { form: form(Some(NATIVE), "6", ALICE) });
    let state = then.state();
    assert!(state.send.error.is_some());
    assert!(state.requests.order.is_empty());
}

#[test]
fn given_a_valid_native_send_when_submitted_then_the_wallet_is_asked_eth_send_transaction_in_wei() {
    let then = loaded().when(C::SubmitSend { form: form(Some(NATIVE), "1.5", ALICE) });
    let state = then.state();
    assert_eq!(state.send.status, SendStatus::Sending);
    let request = &state.requests.items[&state.requests.order[0]];
    let RequestKind::Rpc { method, params } = &request.kind else { panic!("an RPC request") };
    assert_eq!(method, "eth_sendTransaction");
    assert_eq!(params[0]["to"], serde_json::json!(ALICE));
    assert_eq!(params[0]["value"], serde_json::json!("0x14d1120d7b160000"), "1.5 ETH in wei");
    assert_eq!(request.namespace, Namespace::Eip155);
    // The transfer records its sender, which its receipt must name.
    let sender = state.connection.namespace(Namespace::Eip155).address.clone().expect("connected");
    assert_eq!(state.send.sending.as_ref().map(|t| t.from.as_str()), Some(sender.as_str()));
    assert_eq!(params[0]["from"], serde_json::json!(sender));
    // And the value and calldata it was built with, which the mined transaction must carry.
    let transfer = state.send.sending.as_ref().unwrap();
    assert_eq!((transfer.value.as_str(), transfer.data.as_str()), ("0x14d1120d7b160000", "0x"));
}

#[test]
fn given_a_valid_erc20_send_when_submitted_then_the_wallet_is_asked_to_call_transfer_with_the_tokens_decimals() {
    let then = loaded().when(C::SubmitSend { form: form(Some(&demo_asset()), "2", ALICE) });
    let state = then.state();
    let request = &state.requests.items[&state.requests.order[0]];
    let RequestKind::Rpc { params, .. } = &request.kind else { panic!("an RPC request") };
    assert_eq!(params[0]["to"], serde_json::json!(DEMO_TOKEN));
    let data = params[0]["data"].as_str().unwrap();
    assert!(data.starts_with("0xa9059cbb"), "transfer(address,uint256)");
    assert!(data.ends_with(&format!("{:064x}", 2_000_000_000_000_000_000u128)), "2 tokens of 18 decimals");
    let transfer = state.send.sending.as_ref().unwrap();
    assert_eq!((transfer.value.as_str(), transfer.data.as_str()), ("0x0", data));
}

fn sending(asset: &str) -> Given {
    loaded().and(C::SubmitSend { form: form(Some(asset), "1", ALICE) })
}

const HASH: &str = "0x00000000000000000000000000000000000000000000000000000000000000aa";

#[test]
fn given_a_native_send_when_the_wallet_answers_a_hash_then_tracked_reset_and_the_receipt_refreshes_the_balance() {
    let g = sending(NATIVE);
    let request = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: request, outcome: WalletOutcome::Ok { result: serde_json::json!(HASH) } });
    assert_eq!(g.state.send.status, SendStatus::Idle);
    assert_eq!(g.state.send.form, SendForm::default(), "the send state is reset");
    assert_eq!(g.state.send.sent[0].status, SentStatus::Pending);
    let then = g
        .at(T0 + 2_000)
        .when(Command::ReceiptObserved { hash: HASH.into(), outcome: ReceiptOutcome::Mined { success: true, block_number: 9 } });
    assert_eq!(then.event_types(), vec!["ReceiptRecorded", "BalancesRequested"]);
    let state = then.state();
    assert_eq!(state.send.sent[0].status, SentStatus::Confirmed);
    assert!(state.balances.pending.as_ref().unwrap().fresh, "past the 30 s cache");
}

#[test]
fn given_an_erc20_send_when_the_wallet_answers_a_hash_then_back_to_account() {
    let g = sending(&demo_asset()).and(C::Navigate { view: View::Networks, params: None, replace: None });
    let request = g.pending_request();
    let then = g.when(C::ResolveWalletRequest { request_id: request, outcome: WalletOutcome::Ok { result: serde_json::json!(HASH) } });
    assert_eq!(then.state().router.current(), View::Account);
}

#[test]
fn given_a_send_when_the_wallet_rejects_then_the_catalogue_message_and_idle() {
    let g = sending(NATIVE);
    let request = g.pending_request();
    let then =
        g.when(C::ResolveWalletRequest { request_id: request, outcome: wallet_err(-32000, "insufficient funds for gas * price + value") });
    let state = then.state();
    assert_eq!(state.send.status, SendStatus::Idle);
    assert!(state.send.error.is_some());
    assert!(state.send.sent.is_empty());
}

#[test]
fn given_a_pending_send_when_the_page_reloads_then_the_transfer_fails() {
    let then = sending(NATIVE).when(C::PageLoaded {});
    let state = then.state();
    assert_eq!(state.send.status, SendStatus::Idle);
    assert!(state.send.sending.is_none());
}

// --- network switch -------------------------------------------------------------------------------

fn switching() -> Given {
    loaded().and(C::SwitchNetwork { network: CaipNetworkId::eip155(42161) })
}

#[test]
fn given_a_connected_account_when_switching_then_the_wallet_is_asked_and_switch_network_shows() {
    let g = switching();
    assert_eq!(g.state.network_switch.status, SwitchStatus::Switching);
    assert_eq!(g.state.router.current(), View::SwitchNetwork);
    let request = &g.state.requests.items[&g.pending_request()];
    assert_eq!(
        request.kind,
        RequestKind::Rpc { method: "wallet_switchEthereumChain".into(), params: serde_json::json!([{ "chainId": "0xa4b1" }]) }
    );
}

#[test]
fn given_a_switch_when_the_wallet_answers_then_the_network_moves_and_the_new_chains_balances_are_fetched() {
    let g = switching();
    let request = g.pending_request();
    let then = g.when(C::ResolveWalletRequest { request_id: request, outcome: WalletOutcome::Ok { result: serde_json::Value::Null } });
    let types = then.event_types();
    assert!(types.contains(&"NetworkChanged") && types.contains(&"NetworkSwitchFinished"), "{types:?}");
    assert_eq!(types.iter().filter(|t| **t == "BalancesRequested").count(), 1);
    let state = then.state();
    assert_eq!(state.router.current(), View::Account);
    assert_eq!(state.balances.pending.as_ref().unwrap().network, CaipNetworkId::eip155(42161));
    assert!(state.balances.native.is_none(), "the old chain's balances are cleared");
}

#[test]
fn given_a_switch_when_the_wallet_does_not_know_the_chain_then_it_is_added_then_switched() {
    let g = switching();
    let request = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: request, outcome: wallet_err(4902, "Unrecognized chain ID") });
    assert_eq!(g.state.network_switch.status, SwitchStatus::Adding);
    let add = &g.state.requests.items[&g.pending_request()];
    let RequestKind::Rpc { method, params } = &add.kind else { panic!() };
    assert_eq!(method, "wallet_addEthereumChain");
    assert_eq!(params[0]["chainId"], serde_json::json!("0xa4b1"));
    // A catalogue chain: its public endpoint and explorer (MetaMask refuses an empty rpcUrls).
    assert_eq!(params[0]["rpcUrls"], serde_json::json!(["https://arb1.arbitrum.io/rpc"]));
    assert_eq!(params[0]["blockExplorerUrls"], serde_json::json!(["https://arbiscan.io"]));
    let request = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: request, outcome: WalletOutcome::Ok { result: serde_json::Value::Null } });
    assert_eq!(g.state.network_switch.status, SwitchStatus::Switching);
    let switch = &g.state.requests.items[&g.pending_request()];
    assert!(matches!(&switch.kind, RequestKind::Rpc { method, .. } if method == "wallet_switchEthereumChain"));
}

/// Connected, switching to a devnet chain (with these explorers) that the wallet does not know.
fn adding_devnet_chain(explorers: &[&str]) -> serde_json::Value {
    let options: SessionOptions = serde_json::from_value(serde_json::json!({ "networks": ["eip155:1", {
        "caipNetworkId": "eip155:31338", "name": "Devnet 31338",
        "nativeCurrency": { "name": "Ether", "symbol": "ETH", "decimals": 18 },
        "rpcUrls": ["http://127.0.0.1:8546"], "blockExplorers": explorers
    }] }))
    .unwrap();
    let g = connected_served(options).and(C::SwitchNetwork { network: CaipNetworkId::eip155(31338) });
    let request = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: request, outcome: wallet_err(4902, "Unrecognized chain ID") });
    let RequestKind::Rpc { method, params } = &g.state.requests.items[&g.pending_request()].kind else { panic!() };
    assert_eq!(method, "wallet_addEthereumChain");
    assert_eq!(params[0]["chainId"], serde_json::json!("0x7a6a"));
    assert_eq!(params[0]["rpcUrls"], serde_json::json!(["http://127.0.0.1:8546"]));
    params[0].clone()
}

#[test]
fn given_a_chain_without_explorers_when_the_wallet_does_not_know_it_then_the_add_leaves_block_explorer_urls_out() {
    // EIP-3085: blockExplorerUrls, when present, holds at least one URL (strict wallets refuse a null).
    let add = adding_devnet_chain(&[]);
    assert!(add.get("blockExplorerUrls").is_none(), "{add}");
}

#[test]
fn given_a_chain_with_an_explorer_when_the_wallet_does_not_know_it_then_the_add_names_it() {
    let add = adding_devnet_chain(&["https://explorer.example"]);
    assert_eq!(add["blockExplorerUrls"], serde_json::json!(["https://explorer.example"]));
}

#[test]
fn given_a_switch_when_the_wallet_declines_then_failed_with_retry() {
    let g = switching();
    let request = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id: request, outcome: wallet_err(4001, "User rejected the request.") });
    assert_eq!(g.state.network_switch.status, SwitchStatus::Failed);
    assert_eq!(g.state.network_switch.error.as_deref(), Some("Switch declined"));
    assert_eq!(g.state.router.current(), View::SwitchNetwork);
    let g = g.and(C::RetrySwitchNetwork {});
    assert_eq!(g.state.network_switch.status, SwitchStatus::Switching);
}

#[test]
fn given_a_switch_when_the_wallet_reports_chain_changed_then_finished() {
    let g = switching();
    let then = g.when(C::WalletChainChanged { connector_id: DEV_WALLET_RDNS.into(), chain_id: "0xa4b1".into() });
    let state = then.state();
    assert_eq!(state.network_switch.status, SwitchStatus::Idle);
    assert!(state.requests.order.is_empty(), "the switch request is no longer waited for");
}

#[test]
fn given_network_switching_disabled_when_switching_then_refused() {
    let mut o = options();
    o.enable_network_switch = false;
    let g = connected_served(o);
    assert!(matches!(g.when(C::SwitchNetwork { network: CaipNetworkId::eip155(42161) }).error(), DomainError::FeatureDisabled(_)));
}

#[test]
fn given_a_switch_pending_when_switching_again_then_refused() {
    let g = switching();
    assert_eq!(g.when(C::SwitchNetwork { network: mainnet() }).error(), &DomainError::SwitchPending);
}
