//! The embedded wallet through the runtime: the actor asks the embedded service once per pending
//! effect and feeds its answer back, and `Registry::deliver` runs the service's notices.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use actix::System;
use support::*;
use vestibule_actors::machines::embedded_wallet::{EmbeddedWalletInfo, LoginMethod, LoginStatus, OtpStep};
use vestibule_actors::model::caip::Namespace;
use vestibule_actors::model::options::SocialProvider;
use vestibule_actors::runtime::{ChainFuture, DeliverError, EmbeddedEffects, Inspect, ManualClock, RuntimeConfig};
use vestibule_actors::session::{ClientCommand, Command};
use vestibule_actors::testing::{ALICE, FRAME_ORIGIN, T0, embedded_options, solana_address};
use vestibule_store::SessionId;

/// An embedded service that mails every code at once and counts what it was asked.
#[derive(Default)]
struct CountingService {
    otps: AtomicUsize,
}

impl EmbeddedEffects for CountingService {
    fn send_login_otp(&self, _: SessionId, frame_id: String, email: String) -> ChainFuture<Command> {
        assert_eq!((frame_id.as_str(), email.as_str()), ("frame-1", "visitor@example.com"));
        self.otps.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::ready(Command::EmbeddedOtpSent { challenge_id: "c-1".into(), step: OtpStep::VerifyOtp }))
    }
    fn start_social(&self, _: SessionId, _: String, _: SocialProvider, _: String) -> ChainFuture<Command> {
        Box::pin(std::future::ready(Command::EmbeddedSocialFailed { message: "not in this test".into(), from_frame: None }))
    }
    fn start_farcaster(&self, _: SessionId, _: String) -> ChainFuture<Command> {
        Box::pin(std::future::ready(Command::EmbeddedSocialFailed { message: "not in this test".into(), from_frame: None }))
    }
    fn start_email_update(&self, _: SessionId, _: String, _: String) -> ChainFuture<Command> {
        Box::pin(std::future::ready(Command::EmbeddedEmailUpdateFailed { message: "not in this test".into() }))
    }
    fn sign_out(&self, _: SessionId, _: String) -> ChainFuture<()> {
        Box::pin(std::future::ready(()))
    }
}

#[test]
fn an_email_login_runs_through_the_actor_and_the_service_notices_are_delivered() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let clock = Arc::new(ManualClock::at(T0));
        let config = RuntimeConfig { embedded_frame_origin: Some(FRAME_ORIGIN.into()), ..quiet_config() };
        let service = Arc::new(CountingService::default());
        let registry = registry(open_log(dir.path()), clock.clone(), config).with_embedded(service.clone());
        let (id, _) = registry.create("test", "http://localhost:3000", embedded_options(vec![])).await.unwrap();
        let session = registry.session(id);
        let state = session.send(Inspect).await.unwrap().unwrap().state;
        assert_eq!(state.embedded.frame_origin.as_deref(), Some(FRAME_ORIGIN));
        session.send(execute("c1", ClientCommand::EmbeddedFrameReady { frame_id: "frame-1".into() })).await.unwrap();
        clock.advance(500);
        until_state(&registry, id, |s| s.embedded.ready_frame().is_some(), "the frame is ready 500 ms after its announcement").await;
        let reply = session.send(execute("c2", ClientCommand::ConnectEmail { email: "visitor@example.com".into() })).await.unwrap();
        assert!(reply.error.is_none());
        until_state(&registry, id, |s| s.embedded.login.status == LoginStatus::AwaitingOtp, "the service's answer came back").await;
        assert_eq!(service.otps.load(Ordering::SeqCst), 1, "asked once");

        let refused = registry.deliver(id, Command::Client(ClientCommand::CloseModal {})).await;
        assert!(matches!(refused, Err(DeliverError::ClientCommand("CloseModal"))), "{refused:?}");
        let unknown = registry.deliver(SessionId::random(), Command::EmbeddedSignOutDone).await;
        assert!(matches!(unknown, Err(DeliverError::UnknownSession)), "{unknown:?}");
        let wallet = EmbeddedWalletInfo { wallet_id: "w-1".into(), eip155_address: ALICE.into(), solana_address: solana_address() };
        let verified = |from_frame: &str| Command::EmbeddedLoginVerified {
            method: LoginMethod::Email,
            user_id: "u-1".into(),
            email: Some("visitor@example.com".into()),
            username: None,
            wallet: Some(wallet.clone()),
            from_frame: Some(from_frame.into()),
        };
        // About another frame of this session (anyone who learnt the session id could register
        // one): refused, and nothing changes.
        let from_elsewhere = registry.deliver(id, verified("frame-2")).await;
        assert!(matches!(&from_elsewhere, Err(DeliverError::Refused { message, .. }) if message.contains("frameId")), "{from_elsewhere:?}");
        let state = session.send(Inspect).await.unwrap().unwrap().state;
        assert_eq!(state.embedded.login.status, LoginStatus::AwaitingOtp);
        // About the frame the session announced: taken.
        registry.deliver(id, verified("frame-1")).await.unwrap();
        let state = session.send(Inspect).await.unwrap().unwrap().state;
        assert_eq!(state.connection.namespace(Namespace::Eip155).connector_id.as_deref(), Some("auth"));
        assert_eq!(state.embedded.login.status, LoginStatus::Connected);
        // The log holds the email (the user has one) but no code: there is no field for it.
        let log = registry.log().read(id, 1, None).await.unwrap();
        assert!(log.iter().all(|e| !e.payload.to_string().to_ascii_lowercase().contains("\"otp\":")));
    });
}

async fn until_state(
    registry: &vestibule_actors::runtime::Registry,
    id: SessionId,
    done: impl Fn(&vestibule_actors::session::SessionState) -> bool,
    what: &str,
) {
    for _ in 0..2000 {
        let state = registry.session(id).send(Inspect).await.unwrap().unwrap().state;
        if done(&state) {
            return;
        }
        actix::clock::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("never: {what}");
}
