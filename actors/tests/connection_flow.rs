//! Given / when / then: the connection machine and the modal and router decisions around it.

use vestibule_actors::machines::connection::ConnectionStatus;
use vestibule_actors::machines::requests::RequestKind;
use vestibule_actors::machines::router::View;
use vestibule_actors::model::caip::Namespace;
use vestibule_actors::model::connector::{ConnectorType, DiscoveredWallet, MAX_WALLET_ERROR_CHARS};
use vestibule_actors::session::{CONNECTION_REJECTED, ClientCommand as C, DomainError, Event, FAILED_TO_CONNECT, MODAL_CLOSED};
use vestibule_actors::testing::*;

fn discovered() -> Given {
    given(started()).and(C::ReportWallets { wallets: vec![dev_wallet()] }).and(C::OpenModal { view: None })
}

fn selecting() -> Given {
    discovered().and(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() })
}

#[test]
fn given_a_discovered_wallet_when_selected_then_a_connect_request_is_issued_and_the_view_waits() {
    let then = discovered().when(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    assert_eq!(then.event_types(), vec!["WalletRequestIssued", "ConnectStarted", "Navigated"]);
    let state = then.state();
    assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Connecting);
    assert_eq!(state.router.current(), View::ConnectingWallet);
    let request = &state.requests.items[&state.requests.order[0]];
    assert_eq!(request.kind, RequestKind::Connect);
    assert_eq!(request.connector_id, DEV_WALLET_RDNS);
}

#[test]
fn given_an_unknown_connector_when_selected_then_refused() {
    let then = discovered().when(C::SelectConnector { connector_id: "io.nope".into() });
    assert_eq!(then.error(), &DomainError::UnknownConnector("io.nope".into()));
}

#[test]
fn given_a_pending_connect_when_the_wallet_answers_then_connected_and_the_modal_closes_on_account() {
    let g = selecting();
    let then = g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome: wallet_ok(&[ALICE], "0x1") });
    assert_eq!(
        then.event_types(),
        vec!["WalletRequestSettled", "WalletRequestsDrained", "Connected", "RecentWalletUsed", "ModalClosed", "Navigated"]
    );
    let state = then.state();
    let eip155 = state.connection.namespace(Namespace::Eip155);
    assert_eq!(eip155.status, ConnectionStatus::Connected);
    assert_eq!(eip155.address.as_deref(), Some(ALICE));
    assert_eq!(eip155.caip_address.as_ref().unwrap().to_string(), format!("eip155:1:{ALICE}"));
    assert!(eip155.network.as_ref().unwrap().supported);
    assert_eq!(state.connection.recent_wallets[0].id, DEV_WALLET_RDNS);
    assert_eq!(state.router.current(), View::Account);
    assert!(!state.modal.is_open());
    assert_eq!(state.connection.connector_status[DEV_WALLET_RDNS], vestibule_actors::machines::connection::ConnectorStatus::Connected);
}

#[test]
fn given_a_pending_connect_when_the_wallet_rejects_with_4001_then_connection_rejected_and_back_to_connect() {
    let g = selecting();
    let then = g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome: wallet_err(4001, "User rejected the request.") });
    let failed = then.events().iter().find_map(|e| match e {
        Event::ConnectFailed { message, code, .. } => Some((message.clone(), *code)),
        _ => None,
    });
    assert_eq!(failed, Some((CONNECTION_REJECTED.to_string(), Some(4001))));
    let state = then.state();
    assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Disconnected);
    assert_eq!(state.router.current(), View::Connect);
    let toast = state.toasts.items.values().next().expect("an error toast");
    assert_eq!(toast.message, CONNECTION_REJECTED);
    assert!(toast.visible);
}

#[test]
fn given_a_pending_connect_when_the_wallet_fails_otherwise_then_failed_to_connect_not_its_words() {
    // Any page script can be a wallet, and its error message is its own text: a phishing line, a
    // URL written backwards between bidi overrides, 70 kB. The visitor sees the spec's phrase only,
    // in the toast and as the connection's last error (outside review).
    let messages = [
        "",
        "Wallet locked: your funds are at risk. Recover them now at https://wallet-recovery.example (enter your seed phrase)",
        "Approve \u{202E}cod.evil//:sptth\u{202C} to continue",
        &"A".repeat(70_000),
    ];
    for message in messages {
        let g = selecting();
        let request_id = g.pending_request();
        let then = g.when(C::ResolveWalletRequest { request_id: request_id.clone(), outcome: wallet_err(-32000, message) });
        assert!(
            then.events()
                .iter()
                .any(|e| matches!(e, Event::ConnectFailed { message, code, .. } if message == FAILED_TO_CONNECT && *code == Some(-32000))),
            "{:?}",
            then.event_types()
        );
        let state = then.state();
        assert_eq!(state.connection.namespace(Namespace::Eip155).last_error.as_deref(), Some(FAILED_TO_CONNECT));
        let shown: Vec<&str> = state.toasts.items.values().map(|t| t.message.as_str()).collect();
        assert_eq!(shown, [FAILED_TO_CONNECT]);
        // The wallet's own answer is still recorded with its request, its first 1024 characters
        // (a 70 kB message went to the log as it came).
        let kept: String = message.chars().take(MAX_WALLET_ERROR_CHARS).collect();
        let recorded = then.events().iter().find_map(|e| match e {
            Event::WalletRequestSettled { outcome, .. } => Some(outcome.clone()),
            _ => None,
        });
        assert_eq!(recorded, Some(wallet_err(-32000, &kept)));
    }
}

#[test]
fn given_announced_names_that_hide_or_reorder_text_when_reported_then_only_they_are_left_out() {
    // "\u{202E}ksaMateM" reads as "MetaMask"; a zero-width space makes a second "DevWallet"; control
    // characters and padding of wide spaces push what follows out of view (outside review).
    let named = |name: &str, rdns: &str| DiscoveredWallet { name: name.into(), rdns: Some(rdns.into()), ..dev_wallet() };
    let wallets = vec![
        named("\u{202E}ksaMateM", "com.evil.two"),
        named("Dev\u{200B}Wallet\u{200B}", "com.evil.three"),
        named("\u{0}\u{7}Ctl\u{1b}[31m", "com.evil.five"),
        named("Rabby \u{2003}\u{2003} recommended", "com.evil.four"),
        dev_wallet(),
        named("Zoë's Wallet 2", "com.zoe"),
    ];
    let state = given(started()).when(C::ReportWallets { wallets }).state();
    let names: Vec<&str> = state.connection.connectors.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Dev Wallet", "Zoë's Wallet 2"], "the honest wallets stay, the four disguised ones go");
}

#[test]
fn given_a_pending_connect_when_the_modal_closes_then_the_connect_rejects_with_modal_closed() {
    let then = selecting().when(C::CloseModal {});
    assert!(then.events().iter().any(|e| matches!(e, Event::ConnectFailed { message, .. } if message == MODAL_CLOSED)));
    assert!(then.events().iter().any(|e| matches!(e, Event::WalletRequestCancelled { .. })));
    let state = then.state();
    assert_eq!(state.router.current(), View::Connect);
    assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Disconnected);
    assert!(state.requests.items.is_empty());
}

#[test]
fn given_a_cancelled_request_when_the_late_answer_arrives_then_it_is_refused() {
    let g = selecting();
    let request_id = g.pending_request();
    let g = g.and(C::CloseModal {});
    let then = g.when(C::ResolveWalletRequest { request_id: request_id.clone(), outcome: wallet_ok(&[ALICE], "0x1") });
    assert_eq!(then.error(), &DomainError::UnknownRequest(request_id));
}

#[test]
fn given_a_wallet_on_an_unsupported_chain_when_connected_then_the_network_is_the_synthetic_unsupported_one() {
    let g = selecting();
    let state = g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome: wallet_ok(&[ALICE], "0x7a69") }).state();
    let network = state.connection.namespace(Namespace::Eip155).network.clone().unwrap();
    assert!(!network.supported);
    assert_eq!(network.caip_network_id.to_string(), "eip155:31337");
}

#[test]
fn given_a_malformed_wallet_answer_when_resolved_then_failed_to_connect() {
    let g = selecting();
    let then = g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome: wallet_ok(&["0xnope"], "0x1") });
    assert!(then.events().iter().any(|e| matches!(e, Event::ConnectFailed { message, .. } if message == "Failed to connect")));
}

#[test]
fn given_a_connection_when_disconnected_then_account_and_network_reset() {
    let then = connected().when(C::Disconnect { namespace: None });
    let state = then.state();
    let eip155 = state.connection.namespace(Namespace::Eip155);
    assert_eq!(eip155.status, ConnectionStatus::Disconnected);
    assert_eq!(eip155.address, None);
    assert_eq!(eip155.network, None);
    assert_eq!(state.connection.active_namespace, None);
    assert_eq!(state.router.current(), View::Connect);
}

#[test]
fn given_nothing_connected_when_disconnecting_then_refused() {
    assert_eq!(discovered().when(C::Disconnect { namespace: None }).error(), &DomainError::NotConnected);
}

#[test]
fn given_a_stored_connection_when_a_page_loads_then_it_becomes_connecting_and_a_silent_sync_is_requested() {
    let then = connected().when(C::PageLoaded {});
    let state = then.state();
    let eip155 = state.connection.namespace(Namespace::Eip155);
    assert_eq!(eip155.status, ConnectionStatus::Connecting);
    assert!(eip155.syncing);
    assert!(state.connection.loading);
    let request = &state.requests.items[&state.requests.order[0]];
    assert_eq!(request.kind, RequestKind::Sync);
}

#[test]
fn given_a_sync_when_the_wallet_still_grants_the_account_then_connected_again() {
    let g = connected().and(C::PageLoaded {});
    let state = g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome: wallet_ok(&[ALICE], "0x1") }).state();
    assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Connected);
    assert!(!state.connection.loading);
}

#[test]
fn given_a_sync_when_the_wallet_grants_nothing_or_fails_then_disconnected() {
    for outcome in [wallet_ok(&[], "0x1"), wallet_err(4100, "unauthorized")] {
        let g = connected().and(C::PageLoaded {});
        let state = g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome }).state();
        assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Disconnected);
        assert_eq!(state.connection.namespace(Namespace::Eip155).address, None);
    }
}

#[test]
fn given_a_connection_when_the_wallet_switches_chain_then_the_network_follows() {
    let state = connected().when(C::WalletChainChanged { connector_id: DEV_WALLET_RDNS.into(), chain_id: "0xa4b1".into() }).state();
    let eip155 = state.connection.namespace(Namespace::Eip155);
    assert_eq!(eip155.network.as_ref().unwrap().caip_network_id.to_string(), "eip155:42161");
    // Arbitrum is in the catalogue but not among this session's networks.
    assert!(!eip155.network.as_ref().unwrap().supported);
    assert!(eip155.caip_address.as_ref().unwrap().to_string().starts_with("eip155:42161:"));
}

#[test]
fn given_a_connection_when_the_wallet_reports_no_accounts_then_disconnected() {
    let state = connected().when(C::WalletAccountsChanged { connector_id: DEV_WALLET_RDNS.into(), accounts: vec![] }).state();
    assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Disconnected);
}

#[test]
fn given_a_wallet_that_spells_its_address_in_lower_case_when_connected_or_changed_then_the_account_is_checksummed() {
    let lower = ALICE.to_ascii_lowercase();
    let g = selecting();
    let state = g.when(C::ResolveWalletRequest { request_id: g.pending_request(), outcome: wallet_ok(&[&lower], "0x1") }).state();
    assert_eq!(state.connection.namespace(Namespace::Eip155).address.as_deref(), Some(ALICE));
    let without_prefix = ALICE[2..].to_ascii_uppercase();
    let state = connected().when(C::WalletAccountsChanged { connector_id: DEV_WALLET_RDNS.into(), accounts: vec![without_prefix] }).state();
    assert_eq!(state.connection.namespace(Namespace::Eip155).address.as_deref(), Some(ALICE));
    // The same account in another spelling changes nothing.
    let then = connected().when(C::WalletAccountsChanged { connector_id: DEV_WALLET_RDNS.into(), accounts: vec![lower] });
    assert!(then.event_types().is_empty(), "{:?}", then.event_types());
}

#[test]
fn recent_wallets_keep_the_two_newest() {
    let mut g = given(started()).and(C::ReportWallets {
        wallets: ["a", "b", "c"]
            .iter()
            .map(|n| DiscoveredWallet {
                name: n.to_uppercase(),
                rdns: Some(format!("io.{n}")),
                icon: None,
                kind: ConnectorType::Announced,
                namespace: None,
            })
            .collect(),
    });
    for n in ["a", "b", "c"] {
        g = g.and(C::SelectConnector { connector_id: format!("io.{n}") });
        let r = g.pending_request();
        g = g.and(C::ResolveWalletRequest { request_id: r, outcome: wallet_ok(&[ALICE], "0x1") }).and(C::Disconnect { namespace: None });
    }
    let ids: Vec<_> = g.state.connection.recent_wallets.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, vec!["io.c", "io.b"]);
}

#[test]
fn wallets_are_deduplicated_by_rdns_and_disabled_sources_are_dropped() {
    let mut w = dev_wallet();
    w.name = "Duplicate".into();
    let state = given(started()).when(C::ReportWallets { wallets: vec![dev_wallet(), w] }).state();
    assert_eq!(state.connection.connectors.len(), 1);
    assert_eq!(state.connection.connectors[0].name, "Dev Wallet");

    let mut options = vestibule_actors::model::options::SessionOptions::default();
    options.enable_eip6963 = false;
    let then = given(started_with(options)).when(C::ReportWallets { wallets: vec![dev_wallet()] });
    assert!(then.events().is_empty());
}

#[test]
fn the_account_view_needs_a_connection_and_flow_views_cannot_be_opened_directly() {
    assert_eq!(discovered().when(C::Navigate { view: View::Account, params: None, replace: None }).error(), &DomainError::NotConnected);
    assert_eq!(
        discovered().when(C::Navigate { view: View::SiwxSignMessage, params: None, replace: None }).error(),
        &DomainError::ViewNotNavigable(View::SiwxSignMessage)
    );
    let state = connected().when(C::OpenModal { view: None }).state();
    assert_eq!(state.router.current(), View::Account);
}

#[test]
fn a_new_page_abandons_the_old_pages_requests() {
    let state = selecting().when(C::PageLoaded {}).state();
    assert!(state.requests.items.is_empty());
    assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Disconnected);
    assert_eq!(state.router.current(), View::Connect);
}

#[test]
fn commands_before_start_are_refused() {
    assert_eq!(given([]).when(C::OpenModal { view: None }).error(), &DomainError::NotStarted);
}

fn with_email_and_google() -> Given {
    let mut options = vestibule_actors::model::options::SessionOptions::default();
    options.features.email = true;
    options.features.socials = vec![vestibule_actors::model::options::SocialProvider::Google];
    given(started_with(options)).and(C::OpenModal { view: None })
}

#[test]
fn given_email_enabled_when_an_email_is_submitted_then_the_missing_provider_is_shown_and_no_email_is_logged() {
    let then = with_email_and_google().when(C::ConnectEmail { email: "visitor@example.com".into() });
    assert_eq!(then.event_types(), vec!["ToastQueued", "ToastShown"]);
    let events = serde_json::to_string(then.events()).unwrap();
    assert!(events.contains("Unable to load email login dependency"), "{events}");
    assert!(!events.contains("visitor@example.com"), "the address must not reach the log: {events}");
}

#[test]
fn given_email_enabled_when_an_invalid_email_is_submitted_then_refused_naming_the_field() {
    let then = with_email_and_google().when(C::ConnectEmail { email: "not-an-email".into() });
    assert!(matches!(then.error(), DomainError::InvalidInput { field, .. } if field == "email"));
}

#[test]
fn given_email_disabled_when_an_email_is_submitted_then_refused() {
    let then = discovered().when(C::ConnectEmail { email: "visitor@example.com".into() });
    assert_eq!(then.error(), &DomainError::FeatureDisabled("email"));
}

#[test]
fn given_google_enabled_when_a_social_login_starts_then_failed_to_initiate_and_other_providers_are_refused() {
    use vestibule_actors::model::options::SocialProvider;
    let then = with_email_and_google().when(C::ConnectSocial { provider: SocialProvider::Google });
    assert_eq!(then.event_types(), vec!["ToastQueued", "ToastShown"]);
    assert!(serde_json::to_string(then.events()).unwrap().contains("Failed to initiate social connection"));
    let then = with_email_and_google().when(C::ConnectSocial { provider: SocialProvider::Github });
    assert_eq!(then.error(), &DomainError::FeatureDisabled("socials"));
}

#[test]
fn given_a_recent_wallet_when_used_again_then_the_list_is_kept_and_another_wallet_goes_first() {
    use std::sync::Arc;
    use vestibule_actors::model::connector::RecentWallet;
    use vestibule_actors::session::evolve;
    let wallet = |id: &str| RecentWallet { id: id.into(), rdns: Some(id.into()), name: id.into() };
    let state = evolve(connected().state, &Event::RecentWalletUsed { wallet: wallet("io.a") });
    let recent = state.connection.recent_wallets.clone();

    let again = evolve(state.clone(), &Event::RecentWalletUsed { wallet: wallet("io.a") });
    // The same list, not an equal copy: the Connect view, derived from it, is not derived again.
    assert!(Arc::ptr_eq(&again.connection.recent_wallets, &recent));

    let other = evolve(state, &Event::RecentWalletUsed { wallet: wallet("io.b") });
    let ids: Vec<&str> = other.connection.recent_wallets.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids[..2], ["io.b", "io.a"]);
}

#[test]
fn given_announcements_claiming_the_sessions_own_connector_ids_when_reported_then_only_they_are_left_out() {
    let claiming = |rdns: &str| DiscoveredWallet { name: "Impostor".into(), rdns: Some(rdns.into()), ..dev_wallet() };
    let wallets = vec![claiming("auth"), claiming("injected"), claiming("solana:Dev Solana Wallet"), dev_wallet()];
    let state = given(started()).when(C::ReportWallets { wallets }).state();
    let ids: Vec<&str> = state.connection.connectors.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, [DEV_WALLET_RDNS], "the honest wallet stays, the three impostors go");
}

#[test]
fn given_a_connection_when_an_event_names_the_embedded_wallet_or_too_many_accounts_then_refused() {
    let g = connected();
    for then in [
        g.when(C::WalletAccountsChanged { connector_id: "auth".into(), accounts: vec![ALICE.into()] }),
        g.when(C::WalletChainChanged { connector_id: "auth".into(), chain_id: "0x1".into() }),
        g.when(C::WalletDisconnected { connector_id: "auth".into() }),
    ] {
        assert!(matches!(then.error(), DomainError::InvalidInput { field, .. } if field == "connectorId"), "{:?}", then.error());
    }
    let many: Vec<String> = (0..65).map(|_| ALICE.to_string()).collect();
    let then = g.when(C::WalletAccountsChanged { connector_id: DEV_WALLET_RDNS.into(), accounts: many.clone() });
    assert!(matches!(then.error(), DomainError::TooMany { max: 64, .. }), "{:?}", then.error());
    // From the wallet itself, within the bound: taken.
    let bob = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".to_string();
    let mut accounts = vec![bob.clone()];
    accounts.extend(many[..63].iter().cloned());
    let state = g.when(C::WalletAccountsChanged { connector_id: DEV_WALLET_RDNS.into(), accounts }).state();
    assert_eq!(state.connection.namespace(Namespace::Eip155).address.as_deref(), Some(bob.as_str()));
}

#[test]
fn given_navigation_params_when_longer_than_a_connector_id_or_an_email_then_refused_naming_the_field() {
    use vestibule_actors::machines::router::RouteParams;
    let navigate = |params: RouteParams| discovered().when(C::Navigate { view: View::AllWallets, params: Some(params), replace: None });
    let long_id = RouteParams { connector_id: Some("a".repeat(129)), ..RouteParams::default() };
    assert!(matches!(navigate(long_id).error(), DomainError::InvalidInput { field, .. } if field == "params.connectorId"));
    let long_email = RouteParams { email: Some(format!("{}@example.com", "a".repeat(250))), ..RouteParams::default() };
    assert!(matches!(navigate(long_email).error(), DomainError::InvalidInput { field, .. } if field == "params.email"));
    let fine = RouteParams { connector_id: Some("a".repeat(128)), ..RouteParams::default() };
    assert_eq!(navigate(fine).state().router.current(), View::AllWallets);
}
