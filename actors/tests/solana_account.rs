//! Given / when / then: a Solana account's balances and sends (issue 14, spec §4 Send, §5 Send and
//! Addresses, §7, §8, §9): SOL and SPL balances asked of the chain service as for EVM (the same
//! cache, retry block and "Token Balance Unavailable"), the Send view's validation with Solana
//! receivers, the transaction built by the server (an effect), signed by the wallet (a
//! `signTransaction` request), sent by the server (an effect), confirmed by its signature's
//! status, and after it the view back on Account with fresh balances.

use vestibule_actors::machines::balances::{BalancesStatus, RETRY_BLOCK_MS, TOKEN_BALANCE_UNAVAILABLE};
use vestibule_actors::machines::requests::{RequestKind, WalletOutcome};
use vestibule_actors::machines::router::View;
use vestibule_actors::machines::send::{
    AMOUNT_AND_RECEIVER_REQUIRED, INVALID_RECEIVER, SendForm, SendStatus, SentStatus, SolanaSendStep, SolanaSubmitFailure, TOKEN_REQUIRED,
    TransferKind, UNSUPPORTED_CHAIN,
};
use vestibule_actors::model::caip::{CaipNetworkId, Namespace};
use vestibule_actors::model::networks::SOLANA_DEVNET;
use vestibule_actors::session::{ClientCommand as C, Command, Event, ReceiptOutcome};
use vestibule_actors::testing::*;

fn devnet() -> CaipNetworkId {
    SOLANA_DEVNET.parse().unwrap()
}

fn connected(start: Vec<Event>) -> Given {
    connected_listing(start, &["solana:devnet"])
}

/// Connected by a wallet whose account lists `chains` (Wallet Standard names or CAIP-2 ids).
fn connected_listing(start: Vec<Event>, chains: &[&str]) -> Given {
    let g = given(start)
        .and(C::ReportWallets { wallets: vec![dev_wallet(), dev_solana_wallet()] })
        .and(C::OpenModal { view: None })
        .and(C::SelectConnector { connector_id: DEV_SOLANA_CONNECTOR.into() });
    let request_id = g.pending_request();
    g.and(C::ResolveWalletRequest { request_id, outcome: solana_ok(&[&solana_address()], chains) })
}

fn served() -> Given {
    connected(started_serving(multichain_options(None)))
}

fn loaded() -> Given {
    let g = served();
    let id = g.state.balances.pending.as_ref().expect("a fetch").id;
    g.and(Command::BalancesFetched { id, outcome: Ok(solana_balances_of(&devnet(), &solana_address())) })
}

fn native() -> String {
    format!("{SOLANA_DEVNET}/native")
}

fn demo() -> String {
    format!("{SOLANA_DEVNET}/token:{DEMO_MINT}")
}

fn form(token: Option<&str>, amount: &str, receiver: &str) -> SendForm {
    SendForm { token: token.map(str::to_string), amount: amount.into(), receiver: receiver.into() }
}

/// Submitted, prepared by the chain service: the wallet is asked to sign.
fn signing(token: &str, amount: &str) -> (Given, String) {
    let g = loaded().and(C::SubmitSend { form: form(Some(token), amount, SOLANA_RECEIVER) });
    let id = g.state.send.solana.as_ref().unwrap().id;
    let g = g.and(Command::SolanaSendPrepared { id, outcome: Ok(prepared_solana_transfer(true)) });
    let request_id = g.pending_request();
    (g, request_id)
}

// --- the cluster --------------------------------------------------------------------------------

/// A session on devnet and testnet, its account's wallet listing both.
fn on_two_clusters() -> Given {
    on_two_clusters_listing(&["solana:devnet", "solana:testnet"])
}

fn on_two_clusters_listing(chains: &[&str]) -> Given {
    use vestibule_actors::model::networks::SOLANA_TESTNET;
    use vestibule_actors::model::options::NetworkOption;
    let mut options = multichain_options(None);
    options.networks.push(NetworkOption::Known(SOLANA_TESTNET.parse().unwrap()));
    connected_listing(started_with(options), chains)
}

#[test]
fn given_a_solana_account_whose_wallet_lists_one_cluster_when_switching_to_another_then_refused() {
    use vestibule_actors::model::networks::SOLANA_TESTNET;
    let testnet: CaipNetworkId = SOLANA_TESTNET.parse().unwrap();
    // Given: the wallet lists devnet only (by its Wallet Standard name); the state says so.
    let g = on_two_clusters_listing(&["solana:devnet"]).and(C::Navigate { view: View::Networks, params: None, replace: None });
    let signable = &g.state.connection.namespace(Namespace::Solana).signable_networks;
    assert_eq!(signable.as_deref(), Some(&[devnet()][..]));
    // When / then: a switch to testnet is refused, naming it, and nothing moves.
    let then = g.when(C::SwitchNetwork { network: testnet.clone() });
    match then.error() {
        vestibule_actors::session::DomainError::InvalidInput { field, message } => {
            assert_eq!((field.as_str(), message.as_str()), ("network", "the wallet's account does not support Solana Testnet"));
        }
        other => panic!("unexpected {other:?}"),
    }
    // The positive probe: the same account listing testnet too (by its CAIP-2 id) moves there.
    let listing_both = on_two_clusters_listing(&["solana:devnet", SOLANA_TESTNET]);
    let signable = &listing_both.state.connection.namespace(Namespace::Solana).signable_networks;
    assert_eq!(signable.as_deref(), Some(&[devnet(), testnet.clone()][..]));
    assert!(listing_both.when(C::SwitchNetwork { network: testnet }).events().iter().any(|e| matches!(e, Event::NetworkChanged { .. })));
}

#[test]
fn given_a_solana_wallet_that_lists_no_chain_when_switching_cluster_then_it_moves() {
    use vestibule_actors::model::networks::SOLANA_TESTNET;
    let g = on_two_clusters_listing(&[]);
    assert_eq!(g.state.connection.namespace(Namespace::Solana).signable_networks, None, "a wallet that does not say: any");
    let then = g.when(C::SwitchNetwork { network: SOLANA_TESTNET.parse().unwrap() });
    assert!(then.events().iter().any(|e| matches!(e, Event::NetworkChanged { .. })), "{:?}", then.event_types());
}

#[test]
fn given_a_solana_account_when_switching_cluster_then_the_session_moves_it_without_asking_the_wallet() {
    use vestibule_actors::model::networks::SOLANA_TESTNET;
    let g = on_two_clusters().and(C::Navigate { view: View::Networks, params: None, replace: None });
    let solana_network = |state: &vestibule_actors::session::SessionState| {
        state.connection.namespace(Namespace::Solana).network.as_ref().map(|n| n.caip_network_id.to_string())
    };
    assert_eq!(solana_network(&g.state).as_deref(), Some(SOLANA_DEVNET));
    let then = g.when(C::SwitchNetwork { network: SOLANA_TESTNET.parse().unwrap() });
    assert!(!then.event_types().contains(&"WalletRequestIssued"), "{:?}", then.event_types());
    let state = then.state();
    assert_eq!(solana_network(&state).as_deref(), Some(SOLANA_TESTNET));
    let caip = state.connection.namespace(Namespace::Solana).caip_address.as_ref().map(|a| a.to_string());
    assert_eq!(caip, Some(format!("{SOLANA_TESTNET}:{}", solana_address())));
    assert_eq!(state.router.current(), View::Account);
}

#[test]
fn given_a_solana_send_in_progress_when_switching_cluster_then_refused() {
    use vestibule_actors::model::networks::SOLANA_TESTNET;
    let mut options = multichain_options(None);
    options.networks.push(vestibule_actors::model::options::NetworkOption::Known(SOLANA_TESTNET.parse().unwrap()));
    let g = connected_listing(started_serving(options), &["solana:devnet", "solana:testnet"]);
    let id = g.state.balances.pending.as_ref().expect("a fetch").id;
    let g = g.and(Command::BalancesFetched { id, outcome: Ok(solana_balances_of(&devnet(), &solana_address())) });
    let sending = g.clone().and(C::SubmitSend { form: form(Some(&native()), "0.5", SOLANA_RECEIVER) });
    assert_eq!(sending.state.send.status, SendStatus::Sending);
    let testnet: CaipNetworkId = SOLANA_TESTNET.parse().unwrap();
    assert_eq!(sending.when(C::SwitchNetwork { network: testnet.clone() }).error(), &vestibule_actors::session::DomainError::SendPending);
    // The positive probe: before the send, the same switch moves the connection.
    assert!(g.when(C::SwitchNetwork { network: testnet }).events().iter().any(|e| matches!(e, Event::NetworkChanged { .. })));
}

#[test]
fn given_a_switched_solana_account_when_the_page_reloads_then_its_sync_keeps_the_cluster_the_visitor_chose() {
    use vestibule_actors::model::networks::SOLANA_TESTNET;
    let synced_after_reload = |g: Given| {
        let g = g.and(C::PageLoaded {});
        let request_id = g.pending_request();
        let all = ["solana:mainnet", "solana:devnet", "solana:testnet"];
        let g = g.and(C::ResolveWalletRequest { request_id, outcome: solana_ok(&[&solana_address()], &all) });
        g.state.connection.namespace(Namespace::Solana).network.as_ref().map(|n| n.caip_network_id.to_string())
    };
    // Not switched: the session's first Solana network the account supports.
    assert_eq!(synced_after_reload(on_two_clusters()).as_deref(), Some(SOLANA_DEVNET));
    let switched = on_two_clusters().and(C::SwitchNetwork { network: SOLANA_TESTNET.parse().unwrap() });
    assert_eq!(synced_after_reload(switched).as_deref(), Some(SOLANA_TESTNET));
}

#[test]
fn given_no_active_solana_account_when_switching_to_a_cluster_then_not_connected() {
    use vestibule_actors::model::networks::SOLANA_TESTNET;
    let then = given(started_with(multichain_options(None))).when(C::SwitchNetwork { network: SOLANA_DEVNET.parse().unwrap() });
    assert_eq!(then.error(), &vestibule_actors::session::DomainError::NotConnected);
    // The positive path from the same options, connected: accepted.
    let g = on_two_clusters();
    assert!(
        g.when(C::SwitchNetwork { network: SOLANA_TESTNET.parse().unwrap() })
            .events()
            .iter()
            .any(|e| matches!(e, Event::NetworkChanged { .. }))
    );
}

// --- balances -------------------------------------------------------------------------------------

#[test]
fn given_a_served_solana_network_when_the_wallet_connects_then_its_balances_are_requested() {
    let g = served();
    let fetch = g.state.balances.pending.clone().expect("a fetch is pending");
    assert_eq!((fetch.network, fetch.address.as_str(), fetch.fresh), (devnet(), solana_address().as_str(), false));
    assert_eq!(g.state.balances.status, BalancesStatus::Loading);
}

#[test]
fn given_a_solana_network_the_gateway_does_not_serve_when_the_wallet_connects_then_nothing_is_fetched_nor_prompted() {
    let g = connected(started_with(multichain_options(None)));
    assert!(g.state.balances.pending.is_none());
    assert!(!g.history.iter().any(|e| matches!(e, Event::BalancesRequested { .. })));
    assert_ne!(g.state.router.current(), View::Networks, "no switch prompt for a Solana account");
}

#[test]
fn given_a_pending_fetch_when_the_service_answers_then_sol_and_spl_balances_are_shown() {
    let b = loaded().state.balances;
    assert_eq!(b.status, BalancesStatus::Loaded);
    assert_eq!(b.native.as_ref().map(|n| (n.symbol.as_str(), n.decimals, n.display.as_str())), Some(("SOL", 9, "2")));
    assert_eq!(b.tokens.iter().map(|t| (t.symbol.as_str(), t.asset.as_str())).collect::<Vec<_>>(), vec![("DEMO", demo().as_str())]);
}

#[test]
fn given_loaded_balances_when_refreshed_within_30_s_then_nothing_is_fetched_and_after_it_they_are() {
    let g = loaded();
    assert!(g.clone().at(T0 + 29_000).when(C::RefreshBalances {}).events().is_empty());
    let then = g.at(T0 + 30_000).when(C::RefreshBalances {});
    assert!(matches!(then.events(), [Event::BalancesRequested { .. }]));
}

#[test]
fn given_a_pending_fetch_when_the_service_fails_then_token_balance_unavailable_and_retry_blocked_30_s() {
    let g = served();
    let id = g.state.balances.pending.as_ref().unwrap().id;
    let g = g.and(Command::BalancesFetched { id, outcome: Err("HTTP request failed".into()) });
    assert_eq!(g.state.balances.status, BalancesStatus::Failed);
    assert_eq!(g.state.balances.error.as_deref(), Some(TOKEN_BALANCE_UNAVAILABLE));
    assert!(g.state.toasts.items.values().any(|t| t.message == TOKEN_BALANCE_UNAVAILABLE));
    assert!(g.clone().at(T0 + RETRY_BLOCK_MS - 1).when(C::RefreshBalances {}).events().is_empty());
    assert!(!g.at(T0 + RETRY_BLOCK_MS).when(C::RefreshBalances {}).events().is_empty());
}

// --- validation -----------------------------------------------------------------------------------

fn rejected(g: Given, f: SendForm) -> Option<String> {
    let then = g.when(C::SubmitSend { form: f });
    assert!(!then.events().iter().any(|e| matches!(e, Event::SolanaSendStarted { .. })), "{:?}", then.events());
    then.state().send.error.clone()
}

#[test]
fn given_a_solana_account_when_the_form_is_incomplete_or_wrong_then_the_specs_messages_in_order() {
    let g = loaded();
    let n = native();
    assert_eq!(rejected(g.clone(), form(Some(&n), "", SOLANA_RECEIVER)).as_deref(), Some(AMOUNT_AND_RECEIVER_REQUIRED));
    assert_eq!(rejected(g.clone(), form(Some(&n), "1", " ")).as_deref(), Some(AMOUNT_AND_RECEIVER_REQUIRED));
    assert_eq!(rejected(g.clone(), form(None, "1", SOLANA_RECEIVER)).as_deref(), Some(TOKEN_REQUIRED));
    // An EVM token on a Solana account is no token of its balances.
    assert_eq!(rejected(g.clone(), form(Some("eip155:1/native"), "1", SOLANA_RECEIVER)).as_deref(), Some(TOKEN_REQUIRED));
    // Receivers: an EVM address; 31 and 45 characters; a character outside base58; 44 characters
    // naming more than 32 bytes.
    for receiver in [ALICE, &"1".repeat(31), &"1".repeat(45), "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAs0", &"z".repeat(44)] {
        assert_eq!(rejected(g.clone(), form(Some(&n), "1", receiver)).as_deref(), Some(INVALID_RECEIVER), "{receiver}");
    }
    assert_eq!(rejected(g.clone(), form(Some(&n), "0", SOLANA_RECEIVER)).as_deref(), Some("The amount must be more than zero"));
    assert_eq!(
        rejected(g.clone(), form(Some(&demo()), "0.0000001", SOLANA_RECEIVER)).as_deref(),
        Some("Invalid amount: DEMO has 6 decimals")
    );
    assert_eq!(rejected(g, form(Some(&n), "3", SOLANA_RECEIVER)).as_deref(), Some("insufficient funds"));
}

#[test]
fn given_a_solana_network_the_gateway_does_not_serve_when_sending_then_unsupported_chain() {
    let g = connected(started_with(multichain_options(None)));
    assert_eq!(rejected(g, form(Some(&native()), "1", SOLANA_RECEIVER)).as_deref(), Some(UNSUPPORTED_CHAIN));
}

// --- the send -------------------------------------------------------------------------------------

#[test]
fn given_valid_sol_when_submitted_then_the_chain_service_is_asked_to_build_it_in_lamports() {
    let then = loaded().when(C::SubmitSend { form: form(Some(&native()), "1.5", SOLANA_RECEIVER) });
    let send = then.state().send.solana.clone().expect("a Solana send under way");
    assert_eq!((send.amount.as_str(), send.mint.as_deref(), send.receiver.as_str()), ("1500000000", None, SOLANA_RECEIVER));
    assert_eq!(send.step, SolanaSendStep::Preparing);
    assert_eq!(then.state().send.status, SendStatus::Sending);
    let transfer = then.state().send.sending.clone().unwrap();
    assert_eq!((transfer.kind, transfer.amount.as_str(), transfer.symbol.as_str()), (TransferKind::Native, "1.5", "SOL"));
    assert!(then.state().requests.order.is_empty(), "no wallet request before the transaction is built");
}

#[test]
fn given_valid_spl_when_submitted_then_base_units_of_the_mint() {
    let then = loaded().when(C::SubmitSend { form: form(Some(&demo()), "12.5", SOLANA_RECEIVER) });
    let send = then.state().send.solana.clone().unwrap();
    assert_eq!((send.amount.as_str(), send.mint.as_deref()), ("12500000", Some(DEMO_MINT)));
    assert_eq!(then.state().send.sending.as_ref().unwrap().kind, TransferKind::Spl);
}

#[test]
fn given_a_built_transaction_then_the_solana_wallet_is_asked_to_sign_it() {
    let (g, request_id) = signing(&native(), "1");
    let request = g.state.requests.get(&request_id).unwrap();
    assert_eq!(request.namespace, Namespace::Solana);
    assert_eq!(request.connector_id, DEV_SOLANA_CONNECTOR);
    let RequestKind::SignTransaction { transaction, address, network } = &request.kind else { panic!("{:?}", request.kind) };
    assert_eq!(
        (transaction.clone(), address.clone(), network.clone()),
        (prepared_solana_transfer(true).transaction, solana_address(), devnet())
    );
    assert_eq!(g.state.send.sending.as_ref().unwrap().request_id, request_id);
    assert!(matches!(g.state.send.solana.as_ref().unwrap().step, SolanaSendStep::Signing { creates_receiver_account: true, .. }));
}

#[test]
fn given_the_wallet_signed_when_the_service_sent_it_then_success_back_to_account_and_pending_confirmation() {
    let (g, request_id) = signing(&demo(), "2");
    let g = g.and(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!({ "signedTransaction": "AQID" }) },
    });
    let send = g.state.send.solana.clone().unwrap();
    assert_eq!(send.step, SolanaSendStep::Submitting { message: prepared_solana_transfer(true).message, signed: "AQID".into() });
    let signature = "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW";
    let g = g
        .and(C::Navigate { view: View::Send, params: None, replace: None })
        .and(Command::SolanaSendSubmitted { id: send.id, outcome: Ok(signature.into()) });
    assert_eq!(g.state.send.status, SendStatus::Idle);
    assert!(g.state.send.solana.is_none());
    assert_eq!(g.state.send.sent[0].hash, signature);
    assert_eq!(g.state.send.sent[0].status, SentStatus::Pending);
    assert_eq!(g.state.router.current(), View::Account, "spec §4: after a Solana send, the view returns to Account");
    assert_eq!(g.state.send.form, SendForm::default());

    // Confirmed: fresh balances are fetched.
    let then =
        g.when(Command::ReceiptObserved { hash: signature.into(), outcome: ReceiptOutcome::Mined { success: true, block_number: 42 } });
    assert_eq!(then.state().send.sent[0].status, SentStatus::Confirmed);
    assert!(then.events().iter().any(|e| matches!(e, Event::BalancesRequested { fetch } if fetch.fresh)));
}

#[test]
fn given_a_failed_confirmation_then_reverted_and_the_balances_still_refresh() {
    let (g, request_id) = signing(&native(), "1");
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!("AQID") } });
    let id = g.state.send.solana.as_ref().unwrap().id;
    let g = g.and(Command::SolanaSendSubmitted { id, outcome: Ok("sig1".into()) });
    let then = g.when(Command::ReceiptObserved { hash: "sig1".into(), outcome: ReceiptOutcome::Mined { success: false, block_number: 9 } });
    assert_eq!(then.state().send.sent[0].status, SentStatus::Reverted);
    assert!(then.events().iter().any(|e| matches!(e, Event::BalancesRequested { .. })));
}

#[test]
fn given_the_wallet_refuses_then_user_rejected_and_nothing_is_sent() {
    let (g, request_id) = signing(&native(), "1");
    let then = g.when(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Error { code: 4001, message: "User rejected the request.".into() },
    });
    assert_eq!(then.state().send.error.as_deref(), Some("user rejected the request"));
    assert!(then.state().send.solana.is_none());
    assert_eq!(then.state().send.status, SendStatus::Idle);
    assert!(then.state().send.sent.is_empty());
}

#[test]
fn given_an_answer_that_is_not_a_signed_transaction_then_the_send_fails() {
    let (g, request_id) = signing(&native(), "1");
    let then = g.when(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!("not base64!") } });
    assert!(then.state().send.error.is_some());
    assert!(then.state().send.solana.is_none());
}

#[test]
fn given_the_build_or_the_send_fails_then_the_services_message_is_shown() {
    let g = loaded().and(C::SubmitSend { form: form(Some(&native()), "1", SOLANA_RECEIVER) });
    let id = g.state.send.solana.as_ref().unwrap().id;
    let then = g.when(Command::SolanaSendPrepared { id, outcome: Err("HTTP request failed".into()) });
    assert_eq!(then.state().send.error.as_deref(), Some("HTTP request failed"));
    assert!(then.state().requests.order.is_empty());

    let (g, request_id) = signing(&native(), "1");
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!("AQID") } });
    let id = g.state.send.solana.as_ref().unwrap().id;
    let then = g.when(Command::SolanaSendSubmitted { id, outcome: Err(SolanaSubmitFailure::Node("insufficient funds".into())) });
    assert_eq!(then.state().send.error.as_deref(), Some("insufficient funds"));
    assert!(then.state().send.sent.is_empty());
}

#[test]
fn given_the_wallet_signed_another_transaction_then_the_visitor_reads_why_it_was_not_sent() {
    // Given a Solana send whose wallet answered with a signed transaction
    let (g, request_id) = signing(&native(), "1");
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: WalletOutcome::Ok { result: serde_json::json!("AQID") } });
    let id = g.state.send.solana.as_ref().unwrap().id;

    // When the chain service's check refuses it (it never reached a node)
    let reason = "the wallet signed another transaction than the one asked";
    let then = g.when(Command::SolanaSendSubmitted { id, outcome: Err(SolanaSubmitFailure::Refused(reason.into())) });

    // Then the visitor reads the check's reason, not an RPC error nobody had
    let shown = "The transfer was not sent: the wallet signed another transaction than the one asked";
    assert_eq!(then.state().send.error.as_deref(), Some(shown));
    assert!(
        then.events().iter().any(|e| matches!(e, Event::SendFailed { code: None, message } if message == shown)),
        "{:?}",
        then.events()
    );
    assert!(then.state().toasts.items.values().any(|t| t.message == shown), "{:?}", then.state().toasts);
    assert!(then.state().send.sent.is_empty());
}

#[test]
fn given_a_stale_answer_then_nothing_changes() {
    let g = loaded().and(C::SubmitSend { form: form(Some(&native()), "1", SOLANA_RECEIVER) });
    let id = g.state.send.solana.as_ref().unwrap().id;
    assert!(g.clone().when(Command::SolanaSendPrepared { id: id + 1, outcome: Ok(prepared_solana_transfer(false)) }).events().is_empty());
    assert!(g.when(Command::SolanaSendSubmitted { id, outcome: Ok("sig".into()) }).events().is_empty(), "not yet signed");
}
