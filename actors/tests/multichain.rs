//! Given / when / then: Solana wallets (Wallet Standard) beside EVM wallets in one session, the
//! active namespace and SwitchActiveChain, features by namespace (spec sections 2, 5, 6 and 9), and
//! Sign-In With Solana through the session.

use vestibule_actors::machines::connection::{ConnectionStatus, ConnectorStatus};
use vestibule_actors::machines::requests::{RequestKind, WalletOutcome};
use vestibule_actors::machines::router::{NavigationMode, Route, RouteParams, View};
use vestibule_actors::machines::siwx::{SIGNATURE_DECLINED, SiwxMethod, VERIFICATION_FAILED};
use vestibule_actors::model::caip::{Namespace, NamespaceFeatures};
use vestibule_actors::model::connector::{ConnectorGroup, ConnectorType, DiscoveredWallet};
use vestibule_actors::model::networks::SOLANA_DEVNET;
use vestibule_actors::session::upcast::SessionUpcaster;
use vestibule_actors::session::{ClientCommand as C, DomainError, Event};
use vestibule_actors::siwx::SiwxMessage;
use vestibule_actors::testing::*;
use vestibule_store::Upcaster;

fn multichain() -> Given {
    given(started_with(multichain_options(None)))
}

fn discovered() -> Given {
    multichain().and(C::ReportWallets { wallets: vec![dev_wallet(), dev_solana_wallet()] }).and(C::OpenModal { view: None })
}

fn solana_connected() -> Given {
    let g = discovered().and(C::SelectConnector { connector_id: DEV_SOLANA_CONNECTOR.into() });
    let request_id = g.pending_request();
    g.and(C::ResolveWalletRequest { request_id, outcome: solana_ok(&[&solana_address()], &["solana:devnet"]) })
}

fn solana_account() -> String {
    format!("{SOLANA_DEVNET}:{}", solana_address())
}

#[test]
fn given_a_wallet_standard_wallet_when_reported_then_it_is_a_solana_connector_listed_like_evm_wallets() {
    let state = discovered().state;
    let connector = state.connection.connector(DEV_SOLANA_CONNECTOR).expect("a Solana connector");
    assert_eq!((connector.kind, connector.namespaces.as_slice()), (ConnectorType::Announced, &[Namespace::Solana][..]));
    let injected = state.connect_view.groups.iter().find(|g| g.group == ConnectorGroup::Injected).expect("installed wallets");
    let names: Vec<(&str, &[Namespace])> = injected.entries.iter().map(|e| (e.name.as_str(), e.namespaces.as_slice())).collect();
    assert_eq!(names, vec![("Dev Wallet", &[Namespace::Eip155][..]), (DEV_SOLANA_WALLET, &[Namespace::Solana][..])]);
}

#[test]
fn given_solana_wallets_when_reported_twice_by_name_then_one_connector_and_an_rdns_is_refused() {
    let twice = multichain().when(C::ReportWallets { wallets: vec![dev_solana_wallet(), dev_solana_wallet()] });
    assert_eq!(twice.state().connection.connectors.len(), 1);
    let with_rdns = DiscoveredWallet { rdns: Some("io.sol".into()), ..dev_solana_wallet() };
    assert!(
        matches!(multichain().when(C::ReportWallets { wallets: vec![with_rdns] }).error(), DomainError::InvalidInput { field, .. } if field == "wallets[0].rdns")
    );
    let injected = DiscoveredWallet { kind: ConnectorType::Injected, ..dev_solana_wallet() };
    assert!(
        matches!(multichain().when(C::ReportWallets { wallets: vec![injected] }).error(), DomainError::InvalidInput { field, .. } if field == "wallets[0].kind")
    );
    let bitcoin = DiscoveredWallet { namespace: Some(Namespace::Bip122), ..dev_solana_wallet() };
    assert!(
        matches!(multichain().when(C::ReportWallets { wallets: vec![bitcoin] }).error(), DomainError::InvalidInput { field, .. } if field == "wallets[0].namespace")
    );
}

#[test]
fn given_a_session_without_solana_networks_when_a_solana_wallet_is_reported_then_it_is_not_listed() {
    let state = given(started()).when(C::ReportWallets { wallets: vec![dev_wallet(), dev_solana_wallet()] }).state();
    assert_eq!(state.connection.connectors.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), vec![DEV_WALLET_RDNS]);
}

#[test]
fn excluded_featured_and_recent_rules_apply_to_solana_wallets_too() {
    let mut options = multichain_options(None);
    options.exclude_wallet_ids = vec!["dev solana wallet".into()];
    let state = given(started_with(options)).when(C::ReportWallets { wallets: vec![dev_wallet(), dev_solana_wallet()] }).state();
    let listed: Vec<&str> = state.connect_view.groups.iter().flat_map(|g| &g.entries).map(|e| e.name.as_str()).collect();
    assert_eq!(listed, vec!["Dev Wallet"], "excluded by name, case-insensitively");

    let mut options = multichain_options(None);
    options.featured_wallet_ids = vec![DEV_SOLANA_CONNECTOR.into()];
    let state = given(started_with(options)).when(C::ReportWallets { wallets: vec![dev_wallet(), dev_solana_wallet()] }).state();
    let featured = state.connect_view.groups.iter().find(|g| g.group == ConnectorGroup::Featured).expect("a featured group");
    assert_eq!(featured.entries[0].name, DEV_SOLANA_WALLET);

    // Connecting the Solana wallet makes it a recent wallet, listed under Recent and not again.
    let state = solana_connected().state;
    assert_eq!(state.connection.recent_wallets[0].id, DEV_SOLANA_CONNECTOR);
    let recent = state.connect_view.groups.iter().find(|g| g.group == ConnectorGroup::Recent).expect("recent");
    assert_eq!(recent.entries[0].connector_id.as_deref(), Some(DEV_SOLANA_CONNECTOR));
    let injected = state.connect_view.groups.iter().find(|g| g.group == ConnectorGroup::Injected).expect("installed");
    assert!(injected.entries.iter().all(|e| e.name != DEV_SOLANA_WALLET));
}

#[test]
fn given_a_solana_connector_when_selected_then_a_solana_connect_request_and_the_answer_connects_devnet() {
    let g = discovered();
    let then = g.when(C::SelectConnector { connector_id: DEV_SOLANA_CONNECTOR.into() });
    assert_eq!(then.event_types(), vec!["WalletRequestIssued", "ConnectStarted", "Navigated"]);
    let state = then.state();
    let request = &state.requests.items[&state.requests.order[0]];
    assert_eq!((request.namespace, &request.kind), (Namespace::Solana, &RequestKind::Connect));

    let state = solana_connected().state;
    let solana = state.connection.namespace(Namespace::Solana);
    assert_eq!(solana.status, ConnectionStatus::Connected);
    assert_eq!(solana.caip_address.as_ref().unwrap().to_string(), solana_account());
    assert_eq!(solana.network.as_ref().map(|n| (n.name.as_str(), n.supported)), Some(("Solana Devnet", true)));
    assert_eq!(state.connection.active_namespace, Some(Namespace::Solana));
    assert_eq!(state.router.current(), View::Account);
}

#[test]
fn given_a_solana_account_on_chains_the_session_lacks_then_it_is_on_the_unsupported_network() {
    let g = discovered().and(C::SelectConnector { connector_id: DEV_SOLANA_CONNECTOR.into() });
    let then =
        g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome: solana_ok(&[&solana_address()], &["solana:mainnet"]) });
    let network = then.state().connection.namespace(Namespace::Solana).network.clone().unwrap();
    assert!(!network.supported);
    assert_eq!(network.caip_network_id.to_string(), "solana:mainnet");
    // An invalid Solana address fails the connect.
    let then = g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome: solana_ok(&["0OIl"], &["solana:devnet"]) });
    assert!(then.events().iter().any(|e| matches!(e, Event::ConnectFailed { namespace: Namespace::Solana, .. })));
}

#[test]
fn given_both_wallets_connected_then_one_session_holds_an_eip155_and_a_solana_account() {
    let state = connected_both().state;
    let eip155 = state.connection.namespace(Namespace::Eip155);
    let solana = state.connection.namespace(Namespace::Solana);
    assert_eq!((eip155.status, solana.status), (ConnectionStatus::Connected, ConnectionStatus::Connected));
    assert_eq!(eip155.address.as_deref(), Some(ALICE));
    assert_eq!(solana.address.as_deref(), Some(solana_address().as_str()));
    assert_eq!(state.connection.active_namespace, Some(Namespace::Solana), "the newest connection is active");
    assert_eq!(state.connection.connector_status[DEV_SOLANA_CONNECTOR], ConnectorStatus::Connected);
    assert_eq!(state.connection.connector_status[DEV_WALLET_RDNS], ConnectorStatus::Active);
    assert_eq!(state.active_caip_address(), Some(solana_account()));
}

#[test]
fn given_both_connected_when_switching_namespaces_then_the_active_account_follows() {
    let g = connected_both();
    let then = g.when(C::SwitchActiveNamespace { namespace: Namespace::Eip155 });
    assert_eq!(then.event_types(), vec!["ActiveNamespaceChanged"]);
    let state = then.state();
    assert_eq!(state.active_caip_address(), Some(format!("eip155:1:{ALICE}")));
    assert_eq!(state.connection.connector_status[DEV_WALLET_RDNS], ConnectorStatus::Connected);
    assert_eq!(state.connection.connector_status[DEV_SOLANA_CONNECTOR], ConnectorStatus::Active);
    // Switching to the namespace already active changes nothing; one without networks is refused.
    assert!(g.when(C::SwitchActiveNamespace { namespace: Namespace::Solana }).events().is_empty());
    assert_eq!(
        g.when(C::SwitchActiveNamespace { namespace: Namespace::Bip122 }).error(),
        &DomainError::NamespaceNotSupported(Namespace::Bip122)
    );
}

#[test]
fn given_only_evm_connected_when_switching_to_solana_then_switch_active_chain_shows_with_its_params() {
    let g = connected();
    assert_eq!(
        g.when(C::SwitchActiveNamespace { namespace: Namespace::Solana }).error(),
        &DomainError::NamespaceNotSupported(Namespace::Solana),
        "a session without Solana networks cannot switch there"
    );
    let g = discovered().and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[ALICE], "0x1") });
    let then = g.when(C::SwitchActiveNamespace { namespace: Namespace::Solana });
    let state = then.state();
    assert!(state.modal.is_open());
    assert_eq!(state.router.current(), View::SwitchActiveChain);
    let params = state.router.current_route().unwrap().params.clone().unwrap();
    assert_eq!(
        params,
        RouteParams {
            switch_to_chain: Some(Namespace::Solana),
            navigate_to: Some(View::Connect),
            navigate_with_replace: Some(true),
            network: Some(SOLANA_DEVNET.parse().unwrap()),
            ..Default::default()
        }
    );
    assert_eq!(state.connection.active_namespace, Some(Namespace::Eip155), "nothing switches before the visitor confirms");

    // Confirming switches to Solana (no account there yet) and replaces the view with Connect.
    let g = g.and(C::SwitchActiveNamespace { namespace: Namespace::Solana });
    let then = g.when(C::ConfirmSwitchActiveChain {});
    assert_eq!(then.event_types(), vec!["ActiveNamespaceChanged", "Navigated"]);
    assert!(matches!(then.events()[1], Event::Navigated { view: View::Connect, mode: NavigationMode::Replace, .. }));
    let state = then.state();
    assert_eq!(state.connection.active_namespace, Some(Namespace::Solana));
    assert_eq!(state.active_caip_address(), None);
    assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Connected, "the EVM account stays connected");
    assert_eq!(state.connection.connector_status[DEV_WALLET_RDNS], ConnectorStatus::Active);

    // Then a Solana wallet connects there.
    let g = g.and(C::ConfirmSwitchActiveChain {}).and(C::SelectConnector { connector_id: DEV_SOLANA_CONNECTOR.into() });
    let request_id = g.pending_request();
    let state = g.when(C::ResolveWalletRequest { request_id, outcome: solana_ok(&[&solana_address()], &["solana:devnet"]) }).state();
    assert_eq!(state.active_caip_address(), Some(solana_account()));
    assert!(state.connection.is_connected());
}

#[test]
fn given_switch_active_chain_when_confirmed_then_connect_lists_that_namespace_and_all_wallets_come_back_on_request() {
    let g = discovered().and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    let g = g
        .and(C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[ALICE], "0x1") })
        .and(C::SwitchActiveNamespace { namespace: Namespace::Solana });

    let then = g.when(C::ConfirmSwitchActiveChain {});
    let state = then.state();
    assert_eq!(state.router.current(), View::Connect);
    assert_eq!(
        state.router.current_route().unwrap().params,
        Some(RouteParams { switch_to_chain: Some(Namespace::Solana), ..Default::default() }),
        "Connect is told which namespace's wallets to list"
    );

    // The view's way back to every wallet: Connect again, without the namespace, in its place.
    let g = g.and(C::ConfirmSwitchActiveChain {});
    let then = g.when(C::Navigate { view: View::Connect, params: None, replace: Some(true) });
    assert_eq!(then.event_types(), vec!["Navigated"]);
    let state = then.state();
    assert_eq!(state.router.current_route().unwrap(), &Route { view: View::Connect, params: None });
    assert_eq!(state.connection.active_namespace, Some(Namespace::Solana), "the namespace switched to stays active");
}

#[test]
fn confirming_switch_active_chain_elsewhere_is_refused() {
    assert_eq!(connected_both().when(C::ConfirmSwitchActiveChain {}).error(), &DomainError::NotOnView(View::SwitchActiveChain));
}

#[test]
fn send_is_modelled_only_on_eip155_and_solana() {
    let both = connected_both();
    assert_eq!(
        both.state.connection.active_features,
        NamespaceFeatures { balance: true, names: false, activity: false, send: true },
        "Solana: balance and send, no names, no activity"
    );
    let evm = both.when(C::SwitchActiveNamespace { namespace: Namespace::Eip155 }).state();
    assert_eq!(evm.connection.active_features, NamespaceFeatures { balance: true, names: true, activity: true, send: true });
    assert_eq!(given(started()).state.connection.active_features, NamespaceFeatures::default(), "no active namespace, no features");
    for ns in Namespace::ALL {
        assert_eq!(ns.features().send, matches!(ns, Namespace::Eip155 | Namespace::Solana), "{ns}");
    }
}

#[test]
fn given_both_connected_when_the_page_reloads_then_both_resync_without_a_prompt() {
    let g = connected_both();
    let then = g.when(C::PageLoaded {});
    let state = then.state();
    let kinds: Vec<(Namespace, RequestKind)> =
        state.requests.order.iter().map(|id| (state.requests.items[id].namespace, state.requests.items[id].kind.clone())).collect();
    assert_eq!(kinds, vec![(Namespace::Eip155, RequestKind::Sync), (Namespace::Solana, RequestKind::Sync)]);
    let g = g.and(C::PageLoaded {});
    let solana_sync = g.state.requests.order[1].clone();
    let state =
        g.when(C::ResolveWalletRequest { request_id: solana_sync, outcome: solana_ok(&[&solana_address()], &["solana:devnet"]) }).state();
    assert_eq!(state.connection.namespace(Namespace::Solana).status, ConnectionStatus::Connected);
    assert_eq!(state.active_caip_address(), Some(solana_account()));
}

#[test]
fn solana_account_changes_and_disconnects_touch_only_the_solana_namespace() {
    let other = bs58::encode([9u8; 32]).into_string();
    let g = connected_both();
    let then = g.when(C::WalletAccountsChanged { connector_id: DEV_SOLANA_CONNECTOR.into(), accounts: vec![other.clone()] });
    assert_eq!(then.event_types(), vec!["AccountsChanged"]);
    assert_eq!(then.state().active_caip_address(), Some(format!("{SOLANA_DEVNET}:{other}")));
    assert!(matches!(
        g.when(C::WalletAccountsChanged { connector_id: DEV_SOLANA_CONNECTOR.into(), accounts: vec![ALICE.into()] }).error(),
        DomainError::InvalidInput { .. }
    ));

    // No account left: Solana disconnects, Ethereum stays and becomes active.
    let state = g.when(C::WalletAccountsChanged { connector_id: DEV_SOLANA_CONNECTOR.into(), accounts: vec![] }).state();
    assert_eq!(state.connection.namespace(Namespace::Solana).status, ConnectionStatus::Disconnected);
    assert_eq!(state.active_caip_address(), Some(format!("eip155:1:{ALICE}")));

    // Disconnect per namespace.
    let then = g.when(C::Disconnect { namespace: Some(Namespace::Solana) });
    let state = then.state();
    assert!(then.events().iter().any(|e| matches!(e, Event::Disconnected { namespace: Namespace::Solana, .. })));
    assert!(!then.events().iter().any(|e| matches!(e, Event::Disconnected { namespace: Namespace::Eip155, .. })));
    assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Connected);
    assert_eq!(state.connection.active_namespace, Some(Namespace::Eip155));
}

fn sign_in_solana(required: bool) -> Given {
    let g = given(started_with(multichain_options(Some(required))))
        .and(C::ReportWallets { wallets: vec![dev_solana_wallet()] })
        .and(C::OpenModal { view: None })
        .and(C::SelectConnector { connector_id: DEV_SOLANA_CONNECTOR.into() });
    let request_id = g.pending_request();
    g.and(C::ResolveWalletRequest { request_id, outcome: solana_ok(&[&solana_address()], &["solana:devnet"]) })
}

fn sign_request(g: &Given) -> (String, String) {
    let id = g.pending_request();
    match &g.state.requests.items[&id].kind {
        RequestKind::SignMessage { message, .. } => (id, message.clone()),
        other => panic!("expected a sign request, got {other:?}"),
    }
}

#[test]
fn given_sign_in_when_a_solana_wallet_connects_then_a_siws_message_in_phantoms_format_for_devnet() {
    let g = sign_in_solana(false);
    assert_eq!(g.state.router.current(), View::SiwxSignMessage);
    let challenge = g.state.siwx.challenge.clone().unwrap();
    assert_eq!(challenge.account, solana_account());
    let message = SiwxMessage::parse(&challenge.message).unwrap();
    assert_eq!(message.account.caip10(), solana_account(), "Chain ID devnet denotes the session's CAIP-2 network");
    assert!(challenge.message.starts_with(&format!("http://localhost:3000 wants you to sign in with your Solana account:\n{}\n\nURI: http://localhost:3000\nVersion: 1\nChain ID: devnet\nNonce: ", solana_address())), "{}", challenge.message);
}

#[test]
fn given_a_siws_request_when_the_wallet_signs_declines_or_tampers_then_as_the_evm_flow() {
    let g = sign_in_solana(true).and(C::SiwxSign {});
    let (request_id, message) = sign_request(&g);
    let request = &g.state.requests.items[&request_id];
    assert_eq!(request.namespace, Namespace::Solana);
    assert!(matches!(&request.kind, RequestKind::SignMessage { address, .. } if *address == solana_address()));

    let signed = g
        .when(C::ResolveWalletRequest {
            request_id: request_id.clone(),
            outcome: WalletOutcome::Ok { result: serde_json::json!(solana_sign(&SOLANA_KEY, &message)) },
        })
        .state();
    let session = signed.siwx.session_for(&solana_account()).expect("signed in");
    assert_eq!(session.method, SiwxMethod::Ed25519);
    assert!(!signed.modal.is_open());

    let declined =
        g.when(C::ResolveWalletRequest { request_id: request_id.clone(), outcome: wallet_err(4001, "User rejected the request.") }).state();
    assert_eq!(declined.siwx.error.as_deref(), Some(SIGNATURE_DECLINED));
    assert_eq!(declined.siwx.challenge.as_ref().map(|c| c.message.as_str()), Some(message.as_str()), "the same message stays");

    // Another key's signature (a tampered one) is refused and the nonce is spent: no contract check on Solana.
    let then = g.when(C::ResolveWalletRequest {
        request_id,
        outcome: WalletOutcome::Ok { result: serde_json::json!(solana_sign(&[8; 32], &message)) },
    });
    assert!(!then.event_types().contains(&"SiwxContractCheckStarted"));
    let refused = then.state();
    assert_eq!(refused.siwx.error.as_deref(), Some(VERIFICATION_FAILED));
    assert!(refused.siwx.sessions.is_empty());
    assert_ne!(refused.siwx.challenge.as_ref().map(|c| c.nonce.clone()), g.state.siwx.challenge.as_ref().map(|c| c.nonce.clone()));
}

#[test]
fn switching_to_an_account_without_a_sign_in_session_asks_for_one() {
    let g = sign_in_solana(false).and(C::SiwxSign {});
    let (request_id, message) = sign_request(&g);
    let g = g
        .and(C::ResolveWalletRequest {
            request_id,
            outcome: WalletOutcome::Ok { result: serde_json::json!(solana_sign(&SOLANA_KEY, &message)) },
        })
        .and(C::ReportWallets { wallets: vec![dev_solana_wallet(), dev_wallet()] })
        .and(C::OpenModal { view: Some(View::Connect) })
        .and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    let g = g.and(C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[&signer_address()], "0x1") });
    assert!(g.state.siwx.challenge.as_ref().is_some_and(|c| c.account.starts_with("eip155:1:")), "the EVM account is asked to sign in");
    let g = g.and(C::SiwxCancel {});
    let then = g.when(C::SwitchActiveNamespace { namespace: Namespace::Solana });
    assert_eq!(then.event_types(), vec!["ActiveNamespaceChanged"], "the Solana account has signed in already");
    let back =
        g.and(C::SwitchActiveNamespace { namespace: Namespace::Solana }).when(C::SwitchActiveNamespace { namespace: Namespace::Eip155 });
    assert!(back.event_types().contains(&"SiwxChallengeIssued"));
}

#[test]
fn a_navigated_v1_event_naming_a_network_as_switch_to_chain_is_upcast_to_its_namespace() {
    let v1 = serde_json::json!({ "view": "SwitchActiveChain", "params": { "switchToChain": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1" }, "mode": "push" });
    let (version, payload) = SessionUpcaster.upcast("Navigated", 1, v1).unwrap();
    assert_eq!(version, 2);
    let event = Event::from_parts("Navigated", payload).unwrap();
    assert!(matches!(event, Event::Navigated { params: Some(RouteParams { switch_to_chain: Some(Namespace::Solana), .. }), .. }));
    let plain = serde_json::json!({ "view": "Account", "mode": "reset" });
    assert_eq!(SessionUpcaster.upcast("Navigated", 1, plain.clone()).unwrap(), (2, plain));
}
