//! The embedded wallet's session side (docs/embedded-wallet.md): the frame's load, email OTP and
//! social login, the connection through `auth`, the email change and signing out, with the spec's
//! messages and deadlines, given / when / then.

use vestibule_actors::machines::connection::ConnectionStatus;
use vestibule_actors::machines::embedded_wallet::*;
use vestibule_actors::machines::router::View;
use vestibule_actors::model::caip::Namespace;
use vestibule_actors::model::options::{SessionOptions, SocialProvider};
use vestibule_actors::session::{ClientCommand, Command, DomainError, Event};
use vestibule_actors::testing::*;

const EMAIL: &str = "visitor@example.com";

fn frame_ready_at(g: Given, at: u64) -> Given {
    g.at(at).and(ClientCommand::EmbeddedFrameReady { frame_id: "frame-1".into() }).at(at + FRAME_SETTLE_MS).and(Command::Tick)
}

/// A session with email, Google and Discord enabled, and its frame ready at T0 + 500 ms.
fn ready() -> Given {
    frame_ready_at(given(started_embedded(embedded_options(vec![SocialProvider::Google, SocialProvider::Discord]))), T0)
}

/// Multichain (Ethereum and Solana Devnet) with email, frame ready.
fn ready_multichain() -> Given {
    let options = SessionOptions { features: embedded_options(vec![]).features, ..multichain_options(None) };
    frame_ready_at(given(started_embedded(options)), T0)
}

fn toasts(state: &vestibule_actors::session::SessionState) -> Vec<String> {
    state.toasts.order.iter().map(|id| state.toasts.items[id].message.clone()).collect()
}

fn otp_sent(g: Given) -> Given {
    g.and(ClientCommand::ConnectEmail { email: EMAIL.into() })
        .and(Command::EmbeddedOtpSent { challenge_id: "c-1".into(), step: OtpStep::VerifyOtp })
}

fn wallet() -> EmbeddedWalletInfo {
    EmbeddedWalletInfo { wallet_id: "w-1".into(), eip155_address: ALICE.into(), solana_address: solana_address() }
}

/// The frame the notices of the embedded service name: the one the session announced.
fn frame() -> Option<String> {
    Some("frame-1".into())
}

fn verified(method: LoginMethod, wallet: Option<EmbeddedWalletInfo>) -> Command {
    Command::EmbeddedLoginVerified { method, user_id: "u-1".into(), email: Some(EMAIL.into()), username: None, wallet, from_frame: frame() }
}

// --- the frame ---------------------------------------------------------------------------------------

#[test]
fn given_a_frame_origin_when_the_session_starts_then_the_frame_loads_with_a_20_s_deadline() {
    let g = given(Vec::new());
    let then = g.when(Command::Start {
        project: "test".into(),
        origin: "http://localhost:3000".into(),
        options: embedded_options(vec![]),
        served_networks: vec![],
        embedded_frame_origin: Some(FRAME_ORIGIN.into()),
    });
    assert_eq!(then.event_types(), ["SessionStarted", "EmbeddedFrameLoading"]);
    let state = then.state();
    assert_eq!(state.embedded.frame_origin.as_deref(), Some(FRAME_ORIGIN));
    assert_eq!(state.embedded.frame.status, FrameStatus::Loading);
    assert_eq!(state.embedded.frame.deadline_ms, Some(T0 + 20_000));
    assert_eq!(state.next_deadline(), Some(T0 + 20_000));
}

#[test]
fn given_no_frame_origin_or_no_login_method_when_the_session_starts_then_no_frame_loads() {
    for (origin, options) in [(None, embedded_options(vec![])), (Some(FRAME_ORIGIN.to_string()), SessionOptions::default())] {
        let then = given(Vec::new()).when(Command::Start {
            project: "test".into(),
            origin: "http://localhost:3000".into(),
            options,
            served_networks: vec![],
            embedded_frame_origin: origin,
        });
        assert_eq!(then.event_types(), ["SessionStarted"]);
        assert_eq!(then.state().embedded.frame.status, FrameStatus::Idle);
    }
}

#[test]
fn given_a_loading_frame_when_it_announces_itself_then_it_is_ready_500_ms_later() {
    let g = given(started_embedded(embedded_options(vec![]))).at(T0 + 1_000);
    let g = g.and(ClientCommand::EmbeddedFrameReady { frame_id: "frame-1".into() });
    assert_eq!(g.state.embedded.frame.status, FrameStatus::Settling);
    assert_eq!(g.state.embedded.frame.deadline_ms, Some(T0 + 1_500));
    let early = g.clone().at(T0 + 1_499).and(Command::Tick);
    assert_eq!(early.state.embedded.frame.status, FrameStatus::Settling, "499 ms is not enough");
    let g = g.at(T0 + 1_500).and(Command::Tick);
    assert_eq!(g.state.embedded.frame.status, FrameStatus::Ready);
    assert_eq!(g.state.embedded.ready_frame(), Some("frame-1"));
    assert_eq!(g.state.embedded.frame.deadline_ms, None);
}

#[test]
fn given_a_loading_frame_when_20_s_pass_then_it_failed_and_the_alert_stays() {
    let g = given(started_embedded(embedded_options(vec![])));
    let before = g.clone().at(T0 + 19_999).and(Command::Tick);
    assert_eq!(before.state.embedded.frame.status, FrameStatus::Loading);
    let g = g.at(T0 + 20_000).and(Command::Tick);
    assert_eq!(g.state.embedded.frame.status, FrameStatus::Failed);
    assert_eq!(toasts(&g.state), [FRAME_LOAD_FAILED]);
    let toast = &g.state.toasts.items[&g.state.toasts.order[0]];
    assert_eq!(toast.auto_close_ms, None, "the alert is persistent");
    // Then an email login says the dependency could not be loaded.
    let then = g.when(ClientCommand::ConnectEmail { email: EMAIL.into() });
    assert_eq!(toasts(&then.state()).last().map(String::as_str), Some(EMAIL_DEPENDENCY_UNAVAILABLE));
    assert_eq!(then.state().embedded.login.status, LoginStatus::Idle);
}

#[test]
fn given_a_ready_frame_when_the_page_reloads_then_a_new_frame_loads() {
    let g = ready().at(T0 + 5_000).and(ClientCommand::PageLoaded {});
    assert_eq!(g.state.embedded.frame.status, FrameStatus::Loading);
    assert_eq!(g.state.embedded.frame.frame_id, None);
    assert_eq!(g.state.embedded.frame.deadline_ms, Some(T0 + 25_000));
}

#[test]
fn given_no_frame_origin_when_a_frame_announces_itself_then_it_is_refused() {
    let then = given(started_with(embedded_options(vec![]))).when(ClientCommand::EmbeddedFrameReady { frame_id: "f".into() });
    assert_eq!(then.error(), &DomainError::FeatureDisabled("embedded wallet"));
}

// --- email login, without a frame origin (decision 0400) ---------------------------------------------

#[test]
fn given_no_frame_origin_when_connecting_by_email_or_social_then_the_catalogue_errors_answer() {
    let g = given(started_with(embedded_options(vec![SocialProvider::Google, SocialProvider::Farcaster])));
    let then = g.when(ClientCommand::ConnectEmail { email: " a@b.co ".into() });
    assert_eq!(toasts(&then.state()), [EMAIL_DEPENDENCY_UNAVAILABLE]);
    let then = g.when(ClientCommand::ConnectSocial { provider: SocialProvider::Google });
    assert_eq!(toasts(&then.state()), [SOCIAL_INIT_FAILED]);
    let then = g.when(ClientCommand::ConnectSocial { provider: SocialProvider::Farcaster });
    assert_eq!(toasts(&then.state()), [FARCASTER_FAILED]);
    let then = g.when(ClientCommand::ConnectSocial { provider: SocialProvider::Github });
    assert_eq!(then.error(), &DomainError::FeatureDisabled("socials"));
    let then = given(started()).when(ClientCommand::ConnectEmail { email: "a@b.co".into() });
    assert_eq!(then.error(), &DomainError::FeatureDisabled("email"));
}

// --- email login --------------------------------------------------------------------------------------

#[test]
fn given_a_ready_frame_when_connecting_by_email_then_a_code_is_asked_for_with_a_120_s_deadline() {
    let g = ready().at(T0 + 2_000);
    let then = g.when(ClientCommand::ConnectEmail { email: EMAIL.into() });
    let state = then.state();
    assert_eq!(state.embedded.login.status, LoginStatus::SendingOtp);
    assert_eq!(state.embedded.login.method, Some(LoginMethod::Email));
    assert_eq!(state.embedded.login.email.as_deref(), Some(EMAIL));
    assert_eq!(state.embedded.login.deadline_ms, Some(T0 + 122_000));
    assert_eq!(state.embedded.cooldown_until_ms, Some(T0 + 32_000));
    assert_eq!(
        state.embedded.pending_effects().into_iter().map(|(_, e)| e).collect::<Vec<_>>(),
        [EmbeddedEffect::SendLoginOtp { frame_id: "frame-1".into(), email: EMAIL.into() }]
    );
    // Spec §4: per-chain status connecting while the login is in progress.
    assert_eq!(state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Connecting);
    assert_eq!(state.connection.namespace(Namespace::Eip155).connector_id.as_deref(), Some(AUTH_CONNECTOR_ID));
}

#[test]
fn given_an_invalid_email_when_connecting_then_it_is_refused_with_the_field_named() {
    match ready().when(ClientCommand::ConnectEmail { email: "not-an-email".into() }).error() {
        DomainError::InvalidInput { field, .. } => assert_eq!(field, "email"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn given_a_frame_still_loading_when_connecting_by_email_then_the_code_waits_for_the_ready_frame() {
    let g = given(started_embedded(embedded_options(vec![]))).and(ClientCommand::ConnectEmail { email: EMAIL.into() });
    assert_eq!(g.state.embedded.login.status, LoginStatus::SendingOtp);
    assert!(g.state.embedded.pending_effects().is_empty(), "no frame to send it for yet");
    let g = frame_ready_at(g, T0 + 100);
    assert_eq!(g.state.embedded.pending_effects().len(), 1);
}

#[test]
fn given_a_code_asked_for_when_another_is_asked_within_30_s_then_the_seconds_left_are_shown_rounded_up() {
    let g = ready().at(T0 + 1_000).and(ClientCommand::ConnectEmail { email: EMAIL.into() });
    let then = g.clone().at(T0 + 1_000 + 10_400).when(ClientCommand::ConnectEmail { email: EMAIL.into() });
    assert_eq!(toasts(&then.state()), ["Please try again after 20 seconds"]);
    assert_eq!(then.state().embedded.login, g.state.embedded.login, "the login is unchanged");
    let then = g.clone().at(T0 + 1_000 + 29_999).when(ClientCommand::ConnectEmail { email: EMAIL.into() });
    assert_eq!(toasts(&then.state()), ["Please try again after 1 seconds"]);
    let then = g.at(T0 + 1_000 + 30_000).when(ClientCommand::ConnectEmail { email: EMAIL.into() });
    assert_eq!(then.state().embedded.login.status, LoginStatus::SendingOtp);
    assert_eq!(then.state().embedded.cooldown_until_ms, Some(T0 + 61_000));
}

#[test]
fn given_a_code_mailed_when_the_service_says_so_then_the_verify_views_show() {
    let g = ready().and(ClientCommand::OpenModal { view: None }).and(ClientCommand::ConnectEmail { email: EMAIL.into() });
    let g = g.at(T0 + 3_000).and(Command::EmbeddedOtpSent { challenge_id: "c-1".into(), step: OtpStep::VerifyDevice });
    assert_eq!(g.state.embedded.login.status, LoginStatus::AwaitingOtp);
    assert_eq!(g.state.embedded.login.step, Some(OtpStep::VerifyDevice));
    assert_eq!(g.state.embedded.login.challenge_id.as_deref(), Some("c-1"));
    assert_eq!(g.state.embedded.login.deadline_ms, Some(T0 + 123_000));
    assert_eq!(g.state.router.current(), View::EmailVerifyDevice);
    assert!(g.state.embedded.pending_effects().is_empty(), "the effect is done");
    let g = g.and(Command::EmbeddedOtpSent { challenge_id: "c-2".into(), step: OtpStep::VerifyOtp });
    assert_eq!(g.state.router.current(), View::EmailVerifyOtp);
    assert_eq!(g.state.router.stack.len(), 2, "the second code replaces the first view");
}

#[test]
fn given_a_code_asked_for_when_mailing_fails_then_the_login_failed_with_the_message() {
    let g = ready().and(ClientCommand::ConnectEmail { email: EMAIL.into() });
    let g = g.and(Command::EmbeddedOtpSendFailed { message: "The code could not be mailed".into() });
    assert_eq!(g.state.embedded.login.status, LoginStatus::Failed);
    assert_eq!(g.state.embedded.login.message.as_deref(), Some("The code could not be mailed"));
    assert_eq!(toasts(&g.state), ["The code could not be mailed"]);
    assert_eq!(g.state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Disconnected);
}

#[test]
fn given_a_wrong_code_then_invalid_code_and_the_attempts_left_show_and_the_challenge_stays() {
    let g =
        otp_sent(ready()).and(Command::EmbeddedOtpRejected { reason: OtpRejection::Wrong, attempts_left: Some(4), from_frame: frame() });
    assert_eq!(g.state.embedded.login.status, LoginStatus::AwaitingOtp);
    assert_eq!(g.state.embedded.login.message.as_deref(), Some("Invalid code"));
    assert_eq!(g.state.embedded.login.attempts_left, Some(4));
}

#[test]
fn given_an_expired_code_or_too_many_attempts_then_the_challenge_ends_back_on_connect_with_a_toast() {
    for (reason, message) in [(OtpRejection::Expired, "Code expired"), (OtpRejection::Attempts, "Too many attempts")] {
        let g = otp_sent(ready().and(ClientCommand::OpenModal { view: None }));
        let g = g.and(Command::EmbeddedOtpRejected { reason, attempts_left: Some(0), from_frame: frame() });
        assert_eq!(g.state.embedded.login.status, LoginStatus::Failed);
        assert_eq!(g.state.embedded.login.challenge_id, None);
        assert_eq!(g.state.router.current(), View::Connect);
        assert_eq!(toasts(&g.state), [message]);
        assert_eq!(g.state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Disconnected);
    }
}

#[test]
fn given_a_login_in_progress_when_120_s_pass_then_it_timed_out() {
    let g = otp_sent(ready().at(T0 + 1_000));
    let deadline = g.state.embedded.login.deadline_ms.expect("a deadline");
    assert_eq!(deadline, T0 + 121_000);
    let early = g.clone().at(deadline - 1).and(Command::Tick);
    assert_eq!(early.state.embedded.login.status, LoginStatus::AwaitingOtp);
    let g = g.at(deadline).and(Command::Tick);
    assert_eq!(g.state.embedded.login.status, LoginStatus::Failed);
    assert_eq!(g.state.embedded.login.message.as_deref(), Some(REQUEST_TIMED_OUT));
    assert_eq!(toasts(&g.state), [REQUEST_TIMED_OUT]);
}

#[test]
fn given_a_request_to_the_frame_failed_then_a_toast_shows_it_and_the_login_failed() {
    let g = otp_sent(ready()).and(ClientCommand::EmbeddedRequestFailed { message: "The frame did not answer".into() });
    assert_eq!(g.state.embedded.login.status, LoginStatus::Failed);
    assert_eq!(toasts(&g.state), ["The frame did not answer"]);
}

#[test]
fn given_a_login_in_progress_when_cancelled_then_connect_shows_and_the_login_is_idle() {
    let g = otp_sent(ready().and(ClientCommand::OpenModal { view: None })).and(ClientCommand::CancelEmbeddedLogin {});
    assert_eq!(g.state.embedded.login.status, LoginStatus::Idle);
    assert_eq!(g.state.router.current(), View::Connect);
    assert_eq!(g.state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Disconnected);
}

#[test]
fn given_a_login_with_a_wallet_when_verified_then_auth_connects_as_a_wallet_would() {
    let g = otp_sent(ready_multichain().and(ClientCommand::OpenModal { view: None })).and(verified(LoginMethod::Email, Some(wallet())));
    let e = &g.state.embedded;
    assert_eq!(e.login.status, LoginStatus::Connected);
    let user = e.user.as_ref().expect("the user");
    assert_eq!((user.user_id.as_str(), user.email.as_deref(), user.provider), ("u-1", Some(EMAIL), LoginMethod::Email));
    assert_eq!(user.eip155_address.as_deref(), Some(ALICE));
    let evm = g.state.connection.namespace(Namespace::Eip155);
    assert_eq!((evm.status, evm.connector_id.as_deref(), evm.address.as_deref()), (ConnectionStatus::Connected, Some("auth"), Some(ALICE)));
    assert_eq!(evm.network.as_ref().map(|n| n.caip_network_id.to_string()).as_deref(), Some("eip155:1"));
    let sol = g.state.connection.namespace(Namespace::Solana);
    assert_eq!((sol.status, sol.address.clone()), (ConnectionStatus::Connected, Some(solana_address())));
    assert_eq!(g.state.connection.active_namespace, Some(Namespace::Eip155));
    let auth = g.state.connection.connector(AUTH_CONNECTOR_ID).expect("the auth connector");
    assert_eq!((auth.name.as_str(), auth.kind), ("Email", vestibule_actors::model::connector::ConnectorType::Auth));
    assert_eq!(g.state.router.current(), View::Account);
    assert!(!g.state.modal.is_open(), "connected: the modal closes, as after a wallet's connect");
}

#[test]
fn given_the_auth_connector_when_the_page_reports_its_wallets_then_it_stays() {
    let g = otp_sent(ready()).and(verified(LoginMethod::Email, Some(wallet())));
    let g = g.and(ClientCommand::ReportWallets { wallets: vec![dev_wallet()] });
    assert!(g.state.connection.connector(AUTH_CONNECTOR_ID).is_some());
    assert!(g.state.connection.connector(DEV_WALLET_RDNS).is_some());
}

#[test]
fn given_sign_in_required_when_an_embedded_login_connects_then_its_message_goes_to_auth() {
    let options = SessionOptions { features: embedded_options(vec![]).features, ..sign_in_options(true) };
    let g = otp_sent(frame_ready_at(given(started_embedded(options)), T0)).and(verified(LoginMethod::Email, Some(wallet())));
    assert_eq!(g.state.router.current(), View::SiwxSignMessage);
    let g = g.and(ClientCommand::SiwxSign {});
    let request = &g.state.requests.items[&g.pending_request()];
    assert_eq!(request.connector_id, AUTH_CONNECTOR_ID);
}

#[test]
fn given_a_new_user_when_verified_then_the_wallet_is_created_within_120_s_and_bound() {
    let g = otp_sent(ready()).at(T0 + 9_000).and(verified(LoginMethod::Email, None));
    assert_eq!(g.state.embedded.login.status, LoginStatus::CreatingWallet);
    assert_eq!(g.state.embedded.login.deadline_ms, Some(T0 + 129_000));
    assert_eq!(g.state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Connecting);
    let timed_out = g.clone().at(T0 + 129_000).and(Command::Tick);
    assert_eq!(timed_out.state.embedded.login.message.as_deref(), Some(REQUEST_TIMED_OUT));
    let w = wallet();
    let g = g.and(Command::EmbeddedWalletBound {
        wallet_id: w.wallet_id,
        eip155_address: w.eip155_address,
        solana_address: w.solana_address,
        from_frame: frame(),
    });
    assert_eq!(g.state.embedded.login.status, LoginStatus::Connected);
    assert_eq!(g.state.embedded.user.as_ref().and_then(|u| u.wallet_id.as_deref()), Some("w-1"));
    assert_eq!(g.state.connection.namespace(Namespace::Eip155).address.as_deref(), Some(ALICE));
}

#[test]
fn given_a_bad_address_from_the_service_then_the_answer_is_refused() {
    let then = otp_sent(ready()).when(verified(
        LoginMethod::Email,
        Some(EmbeddedWalletInfo { wallet_id: "w".into(), eip155_address: "0x12".into(), solana_address: solana_address() }),
    ));
    assert!(matches!(then.error(), DomainError::InvalidInput { field, .. } if field == "eip155Address"));
}

#[test]
fn given_an_embedded_account_when_disconnected_then_the_user_is_cleared_and_the_frame_signs_out() {
    let g = otp_sent(ready()).and(verified(LoginMethod::Email, Some(wallet()))).and(ClientCommand::Disconnect { namespace: None });
    assert_eq!(g.state.embedded.user, None);
    assert_eq!(g.state.embedded.login.status, LoginStatus::Idle);
    let effects: Vec<_> = g.state.embedded.pending_effects().into_iter().map(|(_, e)| e).collect();
    assert_eq!(effects, [EmbeddedEffect::SignOut { frame_id: "frame-1".into() }]);
    let g = g.and(Command::EmbeddedSignOutDone);
    assert!(g.state.embedded.pending_effects().is_empty());
}

// --- social login -------------------------------------------------------------------------------------

#[test]
fn given_a_ready_frame_when_a_social_login_starts_then_the_service_is_asked_and_the_popup_follows_its_url() {
    let g = ready().and(ClientCommand::OpenModal { view: None }).and(ClientCommand::ConnectSocial { provider: SocialProvider::Google });
    assert_eq!(g.state.embedded.login.status, LoginStatus::SocialStarting);
    assert_eq!(g.state.embedded.login.deadline_ms, Some(T0 + FRAME_SETTLE_MS + 120_000));
    assert_eq!(g.state.router.current(), View::ConnectingSocial);
    let effects: Vec<_> = g.state.embedded.pending_effects().into_iter().map(|(_, e)| e).collect();
    assert_eq!(effects, [EmbeddedEffect::StartSocial { frame_id: "frame-1".into(), provider: SocialProvider::Google }]);
    let g = g.and(Command::EmbeddedSocialRedirect {
        provider: SocialProvider::Google,
        url: "https://accounts.example/authorize?state=s".into(),
    });
    assert_eq!(g.state.embedded.login.status, LoginStatus::SocialPopup);
    assert_eq!(g.state.embedded.login.social_url.as_deref(), Some("https://accounts.example/authorize?state=s"));
}

#[test]
fn given_a_social_popup_when_closed_then_popup_closed() {
    let g = ready().and(ClientCommand::ConnectSocial { provider: SocialProvider::Google }).and(ClientCommand::SocialPopupClosed {});
    assert_eq!(g.state.embedded.login.status, LoginStatus::Failed);
    assert_eq!(g.state.embedded.login.message.as_deref(), Some(POPUP_CLOSED));
    assert_eq!(toasts(&g.state), [POPUP_CLOSED]);
}

#[test]
fn given_a_social_login_when_the_modal_closes_then_it_ends_with_modal_closed_and_a_late_verification_connects_nothing() {
    let g = ready().and(ClientCommand::OpenModal { view: None }).and(ClientCommand::ConnectSocial { provider: SocialProvider::Google });
    let g = g.and(Command::EmbeddedSocialRedirect { provider: SocialProvider::Google, url: "https://accounts.example/authorize".into() });
    let evm = |g: &Given| g.state.connection.namespace(Namespace::Eip155).status;
    assert_eq!(evm(&g), ConnectionStatus::Connecting);
    // The same verification with the modal open connects: what the closed modal must prevent.
    let open = g.clone().and(verified(LoginMethod::Google, Some(wallet())));
    assert_eq!(evm(&open), ConnectionStatus::Connected);

    let closed = g.and(ClientCommand::CloseModal {});
    assert_eq!(closed.state.embedded.login.status, LoginStatus::Idle, "the popup follows the login's status and closes");
    assert_eq!(evm(&closed), ConnectionStatus::Disconnected);
    assert_eq!(closed.state.router.current(), View::Connect);
    let late = closed.and(verified(LoginMethod::Google, Some(wallet())));
    assert_eq!(evm(&late), ConnectionStatus::Disconnected);
    assert!(late.state.embedded.user.is_none());
}

#[test]
fn given_an_email_code_awaited_when_the_modal_closes_then_the_login_ends() {
    let g = otp_sent(ready().and(ClientCommand::OpenModal { view: None }));
    assert_eq!(g.state.embedded.login.status, LoginStatus::AwaitingOtp);
    let closed = g.and(ClientCommand::CloseModal {});
    assert_eq!(closed.state.embedded.login.status, LoginStatus::Idle);
    assert_eq!(closed.state.connection.namespace(Namespace::Eip155).status, ConnectionStatus::Disconnected);
}

#[test]
fn given_no_network_the_embedded_wallet_has_an_account_on_when_logging_in_then_chain_is_not_supported() {
    let bitcoin_only = || SessionOptions {
        networks: vec![vestibule_actors::model::options::NetworkOption::Known(
            vestibule_actors::model::networks::BITCOIN_MAINNET.parse().expect("valid"),
        )],
        ..embedded_options(vec![SocialProvider::Google])
    };
    let g = frame_ready_at(given(started_embedded(bitcoin_only())), T0).and(ClientCommand::OpenModal { view: None });
    for command in [ClientCommand::ConnectEmail { email: EMAIL.into() }, ClientCommand::ConnectSocial { provider: SocialProvider::Google }]
    {
        let then = g.when(command);
        assert!(!then.event_types().contains(&"EmbeddedOtpRequested") && !then.event_types().contains(&"EmbeddedSocialStarted"));
        assert_eq!(toasts(&then.state()), [CHAIN_NOT_SUPPORTED]);
        assert_eq!(then.state().embedded.login.status, LoginStatus::Idle);
    }
    // With an eip155 network the same login starts.
    let then = ready().when(ClientCommand::ConnectEmail { email: EMAIL.into() });
    assert!(then.event_types().contains(&"EmbeddedOtpRequested"));
}

// --- network switch ----------------------------------------------------------------------------------

fn connected_by_email_on_two_chains() -> Given {
    connected_by_email_on_two_chains_with(|_| {})
}

fn connected_by_email_on_two_chains_with(adjust: impl FnOnce(&mut SessionOptions)) -> Given {
    let mut options = SessionOptions {
        networks: ["eip155:1", "eip155:42161"]
            .map(|id| vestibule_actors::model::options::NetworkOption::Known(id.parse().expect("valid")))
            .into(),
        ..embedded_options(vec![])
    };
    adjust(&mut options);
    otp_sent(frame_ready_at(given(started_embedded(options)), T0)).and(verified(LoginMethod::Email, Some(wallet())))
}

#[test]
fn given_an_embedded_account_when_switching_network_then_the_session_moves_it_without_asking_the_frame() {
    let g = connected_by_email_on_two_chains().and(ClientCommand::OpenModal { view: None }).and(ClientCommand::Navigate {
        view: View::Networks,
        params: None,
        replace: None,
    });
    let then = g.when(ClientCommand::SwitchNetwork { network: "eip155:42161".parse().expect("valid") });
    assert!(!then.event_types().contains(&"WalletRequestIssued"), "{:?}", then.event_types());
    let state = then.state();
    let evm = state.connection.namespace(Namespace::Eip155);
    assert_eq!(evm.network.as_ref().map(|n| n.caip_network_id.to_string()).as_deref(), Some("eip155:42161"));
    assert_eq!(evm.connector_id.as_deref(), Some(AUTH_CONNECTOR_ID));
    assert_eq!(state.router.current(), View::Account);
}

#[test]
fn given_an_embedded_request_waiting_for_approval_when_switching_network_then_refused_until_it_is_answered() {
    let g = connected_by_email_on_two_chains().and(ClientCommand::HostRequest {
        request_id: "h-1".into(),
        method: "personal_sign".into(),
        params: serde_json::json!(["0x68", ALICE]),
    });
    let arbitrum: vestibule_actors::model::caip::CaipNetworkId = "eip155:42161".parse().expect("valid");
    // The frame reads the network when it signs: a switch now would sign (and show) another chain.
    let refused = g.when(ClientCommand::SwitchNetwork { network: arbitrum.clone() });
    assert!(matches!(refused.error(), DomainError::InvalidInput { field, .. } if field == "network"), "{:?}", refused.error());
    // The host's switch is answered with the refusal, and the network stays.
    let host = g.when(ClientCommand::HostRequest {
        request_id: "h-2".into(),
        method: "wallet_switchEthereumChain".into(),
        params: serde_json::json!([{ "chainId": "0xa4b1" }]),
    });
    let state = host.state();
    assert!(matches!(state.host_requests.items["h-2"].outcome, Some(vestibule_actors::machines::requests::WalletOutcome::Error { .. })));
    assert_eq!(
        state.connection.namespace(Namespace::Eip155).network.as_ref().map(|n| n.caip_network_id.to_string()).as_deref(),
        Some("eip155:1")
    );
    // Answered: the switch goes through.
    let request_id = g.pending_request();
    let answered = g.and(ClientCommand::ResolveWalletRequest {
        request_id,
        outcome: vestibule_actors::machines::requests::WalletOutcome::Ok { result: serde_json::json!("0x01") },
    });
    let moved = answered.and(ClientCommand::SwitchNetwork { network: arbitrum });
    assert_eq!(
        moved.state.connection.namespace(Namespace::Eip155).network.as_ref().map(|n| n.caip_network_id.to_string()).as_deref(),
        Some("eip155:42161")
    );
}

#[test]
fn given_an_embedded_account_when_the_host_switches_chain_then_it_gets_null_and_the_modal_it_opened_closes() {
    let g = connected_by_email_on_two_chains();
    assert!(!g.state.modal.is_open());
    let then = g.when(ClientCommand::HostRequest {
        request_id: "h-1".into(),
        method: "wallet_switchEthereumChain".into(),
        params: serde_json::json!([{ "chainId": "0xa4b1" }]),
    });
    let state = then.state();
    let evm = state.connection.namespace(Namespace::Eip155);
    assert_eq!(evm.network.as_ref().map(|n| n.caip_network_id.to_string()).as_deref(), Some("eip155:42161"));
    let settled = then.events().iter().find_map(|e| match e {
        Event::HostRequestSettled { id, outcome } if id == "h-1" => Some(outcome.clone()),
        _ => None,
    });
    assert_eq!(settled, Some(vestibule_actors::machines::requests::WalletOutcome::Ok { result: serde_json::Value::Null }));
    assert!(!state.modal.is_open());
}

#[test]
fn given_network_switching_off_when_the_host_switches_an_embedded_account_to_its_own_chain_then_null() {
    let g = connected_by_email_on_two_chains_with(|o| o.enable_network_switch = false);
    let switch = |chain: &str| ClientCommand::HostRequest {
        request_id: "h-1".into(),
        method: "wallet_switchEthereumChain".into(),
        params: serde_json::json!([{ "chainId": chain }]),
    };
    let outcome = |then: &vestibule_actors::testing::Then| then.state().host_requests.items.get("h-1").and_then(|r| r.outcome.clone());
    let ok = vestibule_actors::machines::requests::WalletOutcome::Ok { result: serde_json::Value::Null };
    assert_eq!(outcome(&g.when(switch("0x1"))), Some(ok.clone()));
    // Another chain with switching off is not switched (the frame does not switch).
    assert_ne!(outcome(&g.when(switch("0xa4b1"))), Some(ok));
}

#[test]
fn given_an_embedded_account_when_the_host_switches_to_a_chain_outside_the_session_then_4902_and_network_not_found() {
    let g = connected_by_email_on_two_chains();
    let then = g.when(ClientCommand::HostRequest {
        request_id: "h-1".into(),
        method: "wallet_switchEthereumChain".into(),
        params: serde_json::json!([{ "chainId": "0x89" }]),
    });
    let state = then.state();
    let outcome = state.host_requests.items.get("h-1").and_then(|r| r.outcome.clone());
    assert_eq!(
        outcome,
        Some(vestibule_actors::machines::requests::WalletOutcome::Error { code: 4902, message: "Unrecognized chain ID eip155:137".into() })
    );
    assert!(!then.event_types().contains(&"WalletRequestIssued"));
    assert_eq!(toasts(&state), [vestibule_actors::machines::network_switch::NETWORK_NOT_FOUND]);
    assert_eq!(
        state.connection.namespace(Namespace::Eip155).network.as_ref().map(|n| n.caip_network_id.to_string()).as_deref(),
        Some("eip155:1")
    );
}

fn farcaster_ready() -> Given {
    frame_ready_at(given(started_embedded(embedded_options(vec![SocialProvider::Farcaster]))), T0)
}

const FARCASTER_URL: &str = "https://warpcast.com/~/siwf?channelToken=c-1";

#[test]
fn given_a_ready_frame_when_a_farcaster_login_starts_then_the_service_opens_a_channel_and_the_modal_shows_its_url() {
    // Given a ready frame, when the visitor chooses Farcaster
    let g = farcaster_ready()
        .and(ClientCommand::OpenModal { view: None })
        .and(ClientCommand::ConnectSocial { provider: SocialProvider::Farcaster });
    // Then no popup: the ConnectingFarcaster view, and the service is asked for a relay channel
    assert_eq!(g.state.embedded.login.status, LoginStatus::SocialStarting);
    assert_eq!(g.state.embedded.login.method, Some(LoginMethod::Farcaster));
    assert_eq!(g.state.router.current(), View::ConnectingFarcaster);
    let effects: Vec<_> = g.state.embedded.pending_effects().into_iter().map(|(_, e)| e).collect();
    assert_eq!(effects, [EmbeddedEffect::StartFarcaster { frame_id: "frame-1".into() }]);
    // When the channel is open, its URL is in the state for the modal to show
    let g = g.and(Command::EmbeddedSocialRedirect { provider: SocialProvider::Farcaster, url: FARCASTER_URL.into() });
    assert_eq!(g.state.embedded.login.status, LoginStatus::SocialPopup);
    assert_eq!(g.state.embedded.login.social_url.as_deref(), Some(FARCASTER_URL));
    assert!(g.state.embedded.pending_effects().is_empty(), "asked once");
    // And a verified login connects as any social login does, through auth named Farcaster
    let g = g.and(verified(LoginMethod::Farcaster, Some(wallet())));
    assert_eq!(g.state.embedded.login.status, LoginStatus::Connected);
    assert_eq!(g.state.embedded.user.as_ref().map(|u| u.provider), Some(LoginMethod::Farcaster));
    assert_eq!(g.state.connection.connector(AUTH_CONNECTOR_ID).map(|c| c.name.as_str()), Some("Farcaster"));
}

#[test]
fn given_a_farcaster_login_when_the_relay_gives_its_app_scheme_then_it_is_kept_and_other_schemes_are_refused() {
    let g = farcaster_ready().and(ClientCommand::ConnectSocial { provider: SocialProvider::Farcaster });
    let then =
        g.when(Command::EmbeddedSocialRedirect { provider: SocialProvider::Farcaster, url: "farcaster://connect?channelToken=c".into() });
    assert_eq!(then.state().embedded.login.social_url.as_deref(), Some("farcaster://connect?channelToken=c"));
    let then = g.when(Command::EmbeddedSocialRedirect { provider: SocialProvider::Farcaster, url: "javascript:alert(1)".into() });
    assert!(matches!(then.error(), DomainError::InvalidInput { field, .. } if field == "url"));
    let google = ready().and(ClientCommand::ConnectSocial { provider: SocialProvider::Google });
    let then = google.when(Command::EmbeddedSocialRedirect { provider: SocialProvider::Google, url: "farcaster://connect".into() });
    assert!(matches!(then.error(), DomainError::InvalidInput { field, .. } if field == "url"));
}

#[test]
fn given_a_farcaster_login_when_the_service_or_the_frame_fails_then_failed_to_connect_to_farcaster() {
    let g = farcaster_ready().and(ClientCommand::ConnectSocial { provider: SocialProvider::Farcaster });
    let then = g.when(Command::EmbeddedSocialFailed { message: FARCASTER_FAILED.into(), from_frame: frame() });
    assert_eq!(then.state().embedded.login.status, LoginStatus::Failed);
    assert_eq!(toasts(&then.state()), [FARCASTER_FAILED]);
    let g = g.and(Command::EmbeddedSocialRedirect { provider: SocialProvider::Farcaster, url: FARCASTER_URL.into() });
    let then = g.when(ClientCommand::EmbeddedRequestFailed { message: FARCASTER_FAILED.into() });
    assert_eq!(then.state().embedded.login.message.as_deref(), Some(FARCASTER_FAILED));
    assert_eq!(toasts(&then.state()), [FARCASTER_FAILED]);
}

#[test]
fn given_a_farcaster_login_when_cancelled_or_timed_out_then_it_ends() {
    let g = farcaster_ready()
        .and(ClientCommand::OpenModal { view: None })
        .and(ClientCommand::ConnectSocial { provider: SocialProvider::Farcaster })
        .and(Command::EmbeddedSocialRedirect { provider: SocialProvider::Farcaster, url: FARCASTER_URL.into() });
    let then = g.when(ClientCommand::CancelEmbeddedLogin {});
    assert_eq!(then.state().embedded.login.status, LoginStatus::Idle);
    assert_eq!(then.state().router.current(), View::Connect);
    let g = g.at(T0 + FRAME_SETTLE_MS + 120_000).and(Command::Tick);
    assert_eq!(g.state.embedded.login.status, LoginStatus::Failed);
    assert_eq!(toasts(&g.state), [REQUEST_TIMED_OUT]);
}

#[test]
fn given_a_social_login_when_the_service_fails_then_its_message_shows() {
    let g = ready().and(ClientCommand::ConnectSocial { provider: SocialProvider::Google });
    let g = g.and(Command::EmbeddedSocialFailed { message: SOCIAL_INIT_FAILED.into(), from_frame: None });
    assert_eq!(g.state.embedded.login.status, LoginStatus::Failed);
    assert_eq!(toasts(&g.state), [SOCIAL_INIT_FAILED]);
}

#[test]
fn given_a_discord_login_when_verified_then_a_username_ending_in_0_loses_it() {
    let g = ready().and(ClientCommand::ConnectSocial { provider: SocialProvider::Discord });
    let g = g.and(Command::EmbeddedSocialRedirect { provider: SocialProvider::Discord, url: "https://discord.example/oauth2".into() });
    let g = g.and(Command::EmbeddedLoginVerified {
        method: LoginMethod::Discord,
        user_id: "u-2".into(),
        email: None,
        username: Some("alice0".into()),
        wallet: Some(wallet()),
        from_frame: frame(),
    });
    let user = g.state.embedded.user.as_ref().expect("user");
    assert_eq!(user.username.as_deref(), Some("alice"));
    assert_eq!(g.state.connection.connector(AUTH_CONNECTOR_ID).map(|c| c.name.as_str()), Some("Discord"));
}

// --- the email change ---------------------------------------------------------------------------------

fn connected_by_email() -> Given {
    otp_sent(ready()).and(verified(LoginMethod::Email, Some(wallet())))
}

#[test]
fn given_no_embedded_user_when_updating_the_email_then_no_auth_connector_found() {
    let then = ready().when(ClientCommand::UpdateEmail { email: "new@example.com".into() });
    assert_eq!(toasts(&then.state()), [NO_AUTH_CONNECTOR]);
    let then = given(started_with(embedded_options(vec![]))).when(ClientCommand::UpdateEmail { email: "new@example.com".into() });
    assert_eq!(toasts(&then.state()), [NO_AUTH_CONNECTOR]);
}

#[test]
fn given_the_active_account_is_an_external_wallet_when_updating_the_email_then_not_connected_to_email_or_social() {
    let g = ready_multichain().and(ClientCommand::ReportWallets { wallets: vec![dev_solana_wallet()] });
    let g = otp_sent(g).and(verified(LoginMethod::Email, Some(wallet())));
    let g = g.and(ClientCommand::Disconnect { namespace: Some(Namespace::Solana) }).and(ClientCommand::OpenModal { view: None });
    let g = g.and(ClientCommand::SelectConnector { connector_id: DEV_SOLANA_CONNECTOR.into() });
    let request_id = g.pending_request();
    let g = g.and(ClientCommand::ResolveWalletRequest { request_id, outcome: solana_ok(&[&solana_address()], &["solana:devnet"]) });
    assert_eq!(g.state.connection.active_namespace, Some(Namespace::Solana));
    let then = g.when(ClientCommand::UpdateEmail { email: "new@example.com".into() });
    assert_eq!(toasts(&then.state()).last().map(String::as_str), Some(NOT_EMBEDDED_CONNECTION));
}

#[test]
fn given_an_embedded_user_when_the_email_changes_then_both_codes_then_the_poll_closes_the_modal() {
    let g = connected_by_email().and(ClientCommand::OpenModal { view: Some(View::UpdateEmailWallet) });
    let g = g.at(T0 + 10_000).and(ClientCommand::UpdateEmail { email: "new@example.com".into() });
    assert_eq!(g.state.embedded.update.status, UpdateStatus::Sending);
    assert_eq!(g.state.embedded.update.deadline_ms, Some(T0 + 130_000));
    let effects: Vec<_> = g.state.embedded.pending_effects().into_iter().map(|(_, e)| e).collect();
    assert_eq!(effects, [EmbeddedEffect::StartEmailUpdate { frame_id: "frame-1".into(), new_email: "new@example.com".into() }]);
    let g = g.and(Command::EmbeddedEmailUpdateStep { step: UpdateStep::Primary, from_frame: None });
    assert_eq!((g.state.embedded.update.status, g.state.router.current()), (UpdateStatus::PrimaryOtp, View::UpdateEmailPrimaryOtp));
    let g = g.and(Command::EmbeddedEmailUpdateStep { step: UpdateStep::Secondary, from_frame: frame() });
    assert_eq!((g.state.embedded.update.status, g.state.router.current()), (UpdateStatus::SecondaryOtp, View::UpdateEmailSecondaryOtp));
    let g = g.at(T0 + 20_000).and(Command::EmbeddedEmailUpdated { new_email: "new@example.com".into(), from_frame: frame() });
    assert_eq!(g.state.embedded.update.status, UpdateStatus::Polling);
    assert_eq!(g.state.embedded.update.deadline_ms, Some(T0 + 21_000));
    assert_eq!(g.state.embedded.user.as_ref().and_then(|u| u.email.as_deref()), Some("new@example.com"));
    assert!(g.state.modal.is_open());
    let g = g.at(T0 + 21_000).and(Command::Tick);
    assert_eq!(g.state.embedded.update.status, UpdateStatus::Idle);
    assert!(!g.state.modal.is_open(), "the modal closes after the poll");
}

#[test]
fn given_an_email_change_when_120_s_pass_then_it_timed_out() {
    let g = connected_by_email().at(T0 + 10_000).and(ClientCommand::UpdateEmail { email: "new@example.com".into() });
    let g = g.at(T0 + 130_000).and(Command::Tick);
    assert_eq!(g.state.embedded.update.status, UpdateStatus::Failed);
    assert_eq!(toasts(&g.state).last().map(String::as_str), Some(REQUEST_TIMED_OUT));
}

// --- no OTP, share or key in any event --------------------------------------------------------------

#[test]
fn no_event_type_or_field_can_carry_an_otp_share_or_key() {
    let events = vec![
        Event::EmbeddedFrameLoading { deadline_ms: 1 },
        Event::EmbeddedFrameAnnounced { frame_id: "f".into(), ready_at_ms: 1 },
        Event::EmbeddedFrameReady {},
        Event::EmbeddedFrameFailed { message: "m".into() },
        Event::EmbeddedOtpRequested { email: EMAIL.into(), deadline_ms: 1, cooldown_until_ms: 1 },
        Event::EmbeddedOtpSent { challenge_id: "c".into(), step: OtpStep::VerifyOtp, deadline_ms: 1 },
        Event::EmbeddedOtpRejected { reason: OtpRejection::Wrong, attempts_left: Some(1) },
        Event::EmbeddedSocialStarted { provider: SocialProvider::Google, deadline_ms: 1 },
        Event::EmbeddedSocialRedirected { url: "https://x.example".into(), deadline_ms: 1 },
        Event::EmbeddedLoginFailed { message: "m".into() },
        Event::EmbeddedLoginCancelled {},
        Event::EmbeddedLoginVerified {
            user: EmbeddedUser {
                user_id: "u".into(),
                email: Some(EMAIL.into()),
                username: Some("n".into()),
                provider: LoginMethod::Email,
                wallet_id: Some("w".into()),
                eip155_address: Some(ALICE.into()),
                solana_address: Some(solana_address()),
                preferred_account_type: vestibule_actors::model::options::AccountType::Eoa,
            },
            deadline_ms: None,
        },
        Event::EmbeddedWalletBound { wallet: wallet() },
        Event::EmbeddedSignedOut { frame_id: Some("f".into()) },
        Event::EmbeddedSignOutDone {},
        Event::EmbeddedEmailUpdateStarted { new_email: EMAIL.into(), deadline_ms: 1 },
        Event::EmbeddedEmailUpdateStepped { step: UpdateStep::Primary, deadline_ms: 1 },
        Event::EmbeddedEmailUpdated { new_email: EMAIL.into(), poll_at_ms: 1 },
        Event::EmbeddedEmailUpdateFailed { message: "m".into() },
        Event::EmbeddedEmailUpdateFinished {},
    ];
    let embedded_types: Vec<&str> = Event::type_names().iter().copied().filter(|t| t.starts_with("Embedded")).collect();
    let covered: Vec<&str> = events.iter().map(Event::type_name).collect();
    assert_eq!(embedded_types, covered, "every embedded event type is checked here");
    let forbidden = ["otp", "code", "share", "key", "secret", "seed", "token", "password"];
    fn keys(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    out.push(k.to_ascii_lowercase());
                    keys(v, out);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }
    for event in &events {
        let back = Event::from_parts(event.type_name(), event.payload()).expect("round trip");
        assert_eq!(&back, event);
        let mut names = Vec::new();
        keys(&event.payload(), &mut names);
        for name in names {
            assert!(!forbidden.iter().any(|f| name.contains(f)), "{}: field {name}", event.type_name());
        }
        let type_name = event.type_name().to_ascii_lowercase();
        assert!(!["share", "key", "secret", "seed"].iter().any(|f| type_name.contains(f)), "{type_name}");
    }
}
