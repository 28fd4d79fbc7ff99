//! The frame API end to end through the actix handlers: registration, email login with a wrong
//! then a right code, binding a wallet with real signatures, and the shares a second frame gets.

mod support;

use actix_web::http::StatusCode;
use actix_web::{App, test};
use serde_json::{Value, json};
use support::{FRAME_ORIGIN, HOST_ORIGIN, harness};
use vestibule_embedded::binding::test_keys::WalletKeys;
use vestibule_embedded::seal::{open_as_frame, test_key_pair};
use vestibule_embedded::{LoginMethod, Notice, OtpRejection, OtpStep, Sealed, SeededEntropy, WalletAddresses, configure_frame_routes};

macro_rules! app {
    ($harness:expr) => {{
        let service = $harness.service.clone();
        test::init_service(App::new().configure(move |cfg| configure_frame_routes(cfg, service))).await
    }};
}

async fn post(
    app: &impl actix_web::dev::Service<actix_http::Request, Response = actix_web::dev::ServiceResponse, Error = actix_web::Error>,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let request = test::TestRequest::post().uri(path).insert_header(("origin", FRAME_ORIGIN)).set_json(body).to_request();
    let response = test::call_service(app, request).await;
    let status = response.status();
    let body: Value = serde_json::from_slice(&test::read_body(response).await).unwrap_or(Value::Null);
    (status, body)
}

fn sealed(value: &Value) -> Sealed {
    serde_json::from_value(value.clone()).unwrap()
}

fn wrong(code: &str) -> String {
    let first = (code.as_bytes()[0] - b'0' + 1) % 10;
    format!("{first}{}", &code[1..])
}

#[actix_web::test]
async fn given_a_frame_when_the_visitor_logs_in_by_email_and_binds_a_wallet_then_other_frames_get_the_right_shares() {
    let h = harness(vec![]);
    let app = app!(h);
    let entropy = SeededEntropy::new(5);

    // Given a registered frame
    let (frame_key, frame_public) = test_key_pair(&entropy);
    let (status, frame) = post(&app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": frame_public, "deviceWallets": [] })).await;
    assert_eq!(status, StatusCode::OK, "{frame}");
    let frame_id = frame["frameId"].as_str().unwrap().to_owned();
    let token = frame["frameToken"].as_str().unwrap().to_owned();

    // When the session asks for a code
    let sent = h.service.send_login_otp("s1", &frame_id, "Visitor@Example.com").await.unwrap();
    assert_eq!(sent.step, OtpStep::VerifyOtp);
    let code = h.mailer.last_code("visitor@example.com");

    // Then a wrong code is refused and the session hears of it
    let (status, body) =
        post(&app, "/api/email/verify", json!({ "frameToken": token, "challengeId": sent.challenge_id, "otp": wrong(&code) })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["code"], "otp_wrong");
    assert_eq!(h.sink.take(), vec![("s1".into(), Notice::OtpRejected { reason: OtpRejection::Wrong, attempts_left: 4 })]);

    // And the right code logs in, with no wallet yet
    let (status, login) =
        post(&app, "/api/email/verify", json!({ "frameToken": token, "challengeId": sent.challenge_id, "otp": code })).await;
    assert_eq!(status, StatusCode::OK, "{login}");
    assert_eq!(login["wallet"], Value::Null);
    assert_eq!(login["email"], "visitor@example.com");
    let user_id = login["userId"].as_str().unwrap().to_owned();
    let notices = h.sink.take();
    assert!(matches!(&notices[..], [(session, Notice::LoginVerified { method: LoginMethod::Email, wallet: None, .. })] if session == "s1"));

    // When the frame binds its new wallet with signatures by both keys
    let keys = WalletKeys::from_seed(77);
    let (evm_signature, solana_signature) = keys.sign_binding(&frame_id, &user_id);
    let server_share = [0x11u8; 33];
    let recovery_share = [0x33u8; 33];
    let mut bind = json!({
        "frameToken": token,
        "eip155Address": keys.eip155_address(),
        "solanaAddress": keys.solana_address(),
        "serverShare": vestibule_embedded::b64url(&server_share),
        "recoveryShare": vestibule_embedded::b64url(&recovery_share),
        "eip155Signature": evm_signature,
        "solanaSignature": solana_signature,
    });
    let forged = WalletKeys::from_seed(78).sign_binding(&frame_id, &user_id);
    let mut forged_bind = bind.clone();
    forged_bind["eip155Signature"] = json!(forged.0);
    let (status, body) = post(&app, "/api/wallet", forged_bind).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_signature")));

    let (status, bound) = post(&app, "/api/wallet", bind.clone()).await;
    assert_eq!(status, StatusCode::OK, "{bound}");
    let wallet_id = bound["walletId"].as_str().unwrap().to_owned();
    let addresses =
        WalletAddresses { wallet_id: wallet_id.clone(), eip155_address: keys.eip155_address(), solana_address: keys.solana_address() };
    assert_eq!(h.sink.take(), vec![("s1".into(), Notice::WalletBound(addresses.clone()))]);
    bind["frameToken"] = json!(token);
    let (status, body) = post(&app, "/api/wallet", bind).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("wallet_exists")));
    // No share is stored in the clear.
    for value in h.service.vault_raw_values() {
        assert!(!value.windows(33).any(|window| window == server_share || window == recovery_share));
    }

    // The logged-in frame gets the server share again for each signature.
    let (status, body) = post(&app, "/api/wallet/share", json!({ "frameToken": token })).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(open_as_frame(&frame_key, &frame_id, &sealed(&body["serverShare"])).unwrap(), server_share);

    // Then a frame of a new device (no device share) gets the server and recovery shares
    h.clock.advance_ms(31_000);
    let (new_key, new_public) = test_key_pair(&entropy);
    let (_, new_frame) = post(&app, "/api/frames", json!({ "sessionId": "s2", "hpkePublicKey": new_public, "deviceWallets": [] })).await;
    let (new_id, new_token) = (new_frame["frameId"].as_str().unwrap().to_owned(), new_frame["frameToken"].as_str().unwrap().to_owned());
    let sent = h.service.send_login_otp("s2", &new_id, "visitor@example.com").await.unwrap();
    assert_eq!(sent.step, OtpStep::VerifyDevice);
    let code = h.mailer.last_code("visitor@example.com");
    let (status, login) =
        post(&app, "/api/email/verify", json!({ "frameToken": new_token, "challengeId": sent.challenge_id, "otp": code })).await;
    assert_eq!(status, StatusCode::OK, "{login}");
    assert_eq!(login["wallet"]["walletId"], wallet_id.as_str());
    assert_eq!(login["wallet"]["eip155Address"], keys.eip155_address().as_str());
    assert_eq!(open_as_frame(&new_key, &new_id, &sealed(&login["wallet"]["serverShare"])).unwrap(), server_share);
    assert_eq!(open_as_frame(&new_key, &new_id, &sealed(&login["wallet"]["recoveryShare"])).unwrap(), recovery_share);
    // A share sealed to one frame does not open as another.
    assert_eq!(open_as_frame(&frame_key, &frame_id, &sealed(&login["wallet"]["serverShare"])), None);
    let notices = h.sink.take();
    assert!(matches!(&notices[..], [(session, Notice::LoginVerified { wallet: Some(w), .. })] if session == "s2" && *w == addresses));

    // And a frame that holds the device share gets only the server share
    h.clock.advance_ms(31_000);
    let (_, known_public) = test_key_pair(&entropy);
    let (_, known) =
        post(&app, "/api/frames", json!({ "sessionId": "s3", "hpkePublicKey": known_public, "deviceWallets": [wallet_id] })).await;
    let (known_id, known_token) = (known["frameId"].as_str().unwrap().to_owned(), known["frameToken"].as_str().unwrap().to_owned());
    let sent = h.service.send_login_otp("s3", &known_id, "visitor@example.com").await.unwrap();
    assert_eq!(sent.step, OtpStep::VerifyOtp);
    let code = h.mailer.last_code("visitor@example.com");
    let (_, login) =
        post(&app, "/api/email/verify", json!({ "frameToken": known_token, "challengeId": sent.challenge_id, "otp": code })).await;
    assert!(login["wallet"]["serverShare"].is_object());
    assert!(login["wallet"].get("recoveryShare").is_none(), "{login}");

    // After sign-out the frame gets no share.
    h.service.sign_out(&known_id);
    let (status, body) = post(&app, "/api/wallet/share", json!({ "frameToken": known_token })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("not_logged_in")));
}

#[actix_web::test]
async fn given_codes_when_wrong_five_times_or_expired_then_the_challenge_dies_and_the_session_is_told() {
    let h = harness(vec![]);
    let app = app!(h);
    let entropy = SeededEntropy::new(6);
    let (_, public) = test_key_pair(&entropy);
    let (_, frame) = post(&app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public })).await;
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());

    let sent = h.service.send_login_otp("s1", &frame_id, "a@example.com").await.unwrap();
    // A second code to the same address within 30 s is refused.
    let error = h.service.send_login_otp("s1", &frame_id, "a@example.com").await.unwrap_err();
    assert_eq!(error.code(), "email_cooldown");
    let code = h.mailer.last_code("a@example.com");
    for _ in 0..4 {
        post(&app, "/api/email/verify", json!({ "frameToken": token, "challengeId": sent.challenge_id, "otp": wrong(&code) })).await;
    }
    let (_, body) =
        post(&app, "/api/email/verify", json!({ "frameToken": token, "challengeId": sent.challenge_id, "otp": wrong(&code) })).await;
    assert_eq!(body["error"]["code"], "otp_attempts");
    let (_, body) = post(&app, "/api/email/verify", json!({ "frameToken": token, "challengeId": sent.challenge_id, "otp": code })).await;
    assert_eq!(body["error"]["code"], "otp_expired");
    let last = h.sink.take().pop().unwrap().1;
    assert_eq!(last, Notice::OtpRejected { reason: OtpRejection::Expired, attempts_left: 0 });

    h.clock.advance_ms(30_000);
    let sent = h.service.send_login_otp("s1", &frame_id, "a@example.com").await.unwrap();
    let code = h.mailer.last_code("a@example.com");
    h.clock.advance_ms(600_000);
    let (_, body) = post(&app, "/api/email/verify", json!({ "frameToken": token, "challengeId": sent.challenge_id, "otp": code })).await;
    assert_eq!(body["error"]["code"], "otp_expired");
}

#[actix_web::test]
async fn given_bad_requests_when_posted_then_origin_size_and_token_are_refused_with_the_error_shape() {
    let h = harness(vec![]);
    let app = app!(h);
    let entropy = SeededEntropy::new(7);
    let (_, public) = test_key_pair(&entropy);
    let register = json!({ "sessionId": "s1", "hpkePublicKey": public, "deviceWallets": [] });

    let request = test::TestRequest::post().uri("/api/frames").insert_header(("origin", HOST_ORIGIN)).set_json(&register).to_request();
    let response = test::call_service(&app, request).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let body: Value = test::read_body_json(response).await;
    assert_eq!(body["error"]["code"], "bad_origin");
    let request = test::TestRequest::post().uri("/api/frames").set_json(&register).to_request();
    assert_eq!(test::call_service(&app, request).await.status(), StatusCode::FORBIDDEN);

    let huge = json!({ "sessionId": "s1", "hpkePublicKey": "x".repeat(17 * 1024) });
    let (status, body) = post(&app, "/api/frames", huge).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("body_too_large")));

    let (status, frame) = post(&app, "/api/frames", register).await;
    assert_eq!(status, StatusCode::OK);
    let token = frame["frameToken"].as_str().unwrap();
    let forged = format!("{}.{}", frame["frameId"].as_str().unwrap(), vestibule_embedded::b64url(&[9u8; 32]));
    let (status, body) = post(&app, "/api/wallet/share", json!({ "frameToken": forged })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("unauthorized")));
    let (status, body) = post(&app, "/api/wallet/share", json!({ "frameToken": token })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("not_logged_in")));

    let (status, body) =
        post(&app, "/api/rpc", json!({ "frameToken": token, "chainId": "eip155:1", "method": "eth_sign", "params": [] })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::FORBIDDEN, Some("method_not_allowed")));
    let (status, body) = post(&app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": "AAAA" })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_request")));
    let (status, body) = post(&app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": "AAAA", "extra": 1 })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_request")));
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("malformed request: unknown field `extra`"), "the parser's words, the field named: {message}");
    let (status, body) = post(&app, "/api/nothing", json!({})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
}

#[actix_web::test]
async fn given_the_frame_page_when_requested_then_its_csp_names_the_project_origins_and_unknown_projects_get_404() {
    let h = harness(vec![]);
    let app = app!(h);
    let response = test::call_service(&app, test::TestRequest::get().uri("/frame?projectId=project-1&chainId=eip155:1").to_request()).await;
    assert_eq!(response.status(), StatusCode::OK);
    let csp = response.headers().get("content-security-policy").unwrap().to_str().unwrap().to_owned();
    assert_eq!(csp, format!("default-src 'self'; frame-ancestors {HOST_ORIGIN}"));
    let response = test::call_service(&app, test::TestRequest::get().uri("/frame?projectId=other").to_request()).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = test::call_service(&app, test::TestRequest::get().uri("/frame/assets/callback.js").to_request()).await;
    assert_eq!(response.status(), StatusCode::OK);
    let response = test::call_service(&app, test::TestRequest::get().uri("/loading").to_request()).await;
    assert_eq!(response.status(), StatusCode::OK);
    let response = test::call_service(&app, test::TestRequest::get().uri("/oauth/callback?code=c&state=unknown").to_request()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = String::from_utf8(test::read_body(response).await.to_vec()).unwrap();
    assert!(!body.contains("<script"), "no message for an unknown state");
}

/// Logs a frame of session `session` in by email; gives (frameId, frameToken).
async fn logged_in_frame(
    h: &support::Harness,
    app: &impl actix_web::dev::Service<actix_http::Request, Response = actix_web::dev::ServiceResponse, Error = actix_web::Error>,
    session: &str,
    email: &str,
    seed: u64,
) -> (String, String, String) {
    let (_, public) = test_key_pair(&SeededEntropy::new(seed));
    let (_, frame) = post(app, "/api/frames", json!({ "sessionId": session, "hpkePublicKey": public })).await;
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    let sent = h.service.send_login_otp(session, &frame_id, email).await.unwrap();
    let code = h.mailer.last_code(email);
    let (status, login) =
        post(app, "/api/email/verify", json!({ "frameToken": token, "challengeId": sent.challenge_id, "otp": code })).await;
    assert_eq!(status, StatusCode::OK);
    h.sink.take();
    (frame_id, token, login["userId"].as_str().unwrap().to_owned())
}

#[actix_web::test]
async fn given_a_logged_in_frame_when_the_email_is_updated_with_both_codes_then_the_account_moves_to_the_new_address() {
    let h = harness(vec![]);
    let app = app!(h);
    let (frame_id, token, _) = logged_in_frame(&h, &app, "s1", "old@example.com", 1).await;

    // When the session starts the change: a code to the current address
    h.clock.advance_ms(30_000);
    let step = h.service.start_email_update("s1", &frame_id, "new@example.com").await.unwrap();
    assert_eq!(step, vestibule_embedded::EmailUpdateStep::Primary);
    let primary = h.mailer.last_code("old@example.com");
    // The secondary step cannot be skipped
    let (status, _) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "secondary", "otp": primary })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "primary", "otp": primary })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(h.sink.take(), vec![("s1".into(), Notice::EmailUpdateStep { step: vestibule_embedded::EmailUpdateStep::Secondary })]);

    // Then a code to the new address finishes it
    let secondary = h.mailer.last_code("new@example.com");
    let (_, body) =
        post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "secondary", "otp": wrong(&secondary) })).await;
    assert_eq!(body["error"]["code"], "otp_wrong");
    let (status, _) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "secondary", "otp": secondary })).await;
    assert_eq!(status, StatusCode::OK);
    let notices = h.sink.take();
    assert_eq!(notices.last().unwrap(), &("s1".into(), Notice::EmailUpdated { new_email: "new@example.com".into() }));

    // And the new address logs into the same account
    h.clock.advance_ms(30_000);
    let (new_frame, new_token) = {
        let (_, public) = test_key_pair(&SeededEntropy::new(2));
        let (_, frame) = post(&app, "/api/frames", json!({ "sessionId": "s2", "hpkePublicKey": public })).await;
        (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned())
    };
    let sent = h.service.send_login_otp("s2", &new_frame, "new@example.com").await.unwrap();
    let (_, login) = post(
        &app,
        "/api/email/verify",
        json!({ "frameToken": new_token, "challengeId": sent.challenge_id, "otp": h.mailer.last_code("new@example.com") }),
    )
    .await;
    assert_eq!(login["email"], "new@example.com");
    let first_user = h.sink.take();
    assert!(matches!(&first_user[..], [(_, Notice::LoginVerified { email: Some(e), .. })] if e == "new@example.com"));
}

struct FakeChain(std::sync::Mutex<Vec<(String, String, String, String)>>);

#[async_trait::async_trait]
impl vestibule_embedded::FrameRpc for FakeChain {
    async fn call(
        &self,
        session_id: &str,
        address: &str,
        chain_id: &str,
        method: &str,
        _params: Value,
    ) -> Result<Value, vestibule_embedded::RpcFailure> {
        self.0.lock().unwrap().push((session_id.into(), address.into(), chain_id.into(), method.into()));
        if method == "eth_sendRawTransaction" {
            return Err(vestibule_embedded::RpcFailure { code: -32000, message: "sender is not the logged-in address".into() });
        }
        Ok(json!("0x1"))
    }
}

#[actix_web::test]
async fn given_a_frame_with_a_wallet_when_it_calls_the_chain_then_allowed_methods_go_through_for_its_address() {
    let chain = std::sync::Arc::new(FakeChain(Default::default()));
    let h = {
        let mut h = harness(vec![]);
        let dir = h.dir.path().join("with-chain");
        // Rebuild the service with the fake chain (the harness's has none).
        let service = vestibule_embedded::EmbeddedService::builder(
            support::config(&dir),
            vestibule_embedded::ShareKeys { server: [1; 32], recovery: [2; 32] },
            h.mailer.clone(),
            h.sink.clone(),
        )
        .rpc(chain.clone())
        .build()
        .unwrap();
        h.service = actix_web::web::Data::new(service);
        h
    };
    let app = app!(h);
    let (frame_id, token, user_id) = logged_in_frame(&h, &app, "s1", "a@example.com", 3).await;
    let (status, body) = post(&app, "/api/rpc", json!({ "frameToken": token, "chainId": "eip155:1", "method": "eth_chainId" })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("no_wallet")));

    let keys = WalletKeys::from_seed(5);
    let (evm, sol) = keys.sign_binding(&frame_id, &user_id);
    let (status, _) = post(
        &app,
        "/api/wallet",
        json!({
        "frameToken": token, "eip155Address": keys.eip155_address(), "solanaAddress": keys.solana_address(),
        "serverShare": vestibule_embedded::b64url(&[1u8; 33]), "recoveryShare": vestibule_embedded::b64url(&[2u8; 33]),
        "eip155Signature": evm, "solanaSignature": sol }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let (status, body) =
        post(&app, "/api/rpc", json!({ "frameToken": token, "chainId": "eip155:1", "method": "eth_chainId", "params": [] })).await;
    assert_eq!((status, &body), (StatusCode::OK, &json!({ "result": "0x1" })));
    let (status, body) = post(
        &app,
        "/api/rpc",
        json!({ "frameToken": token, "chainId": "eip155:1", "method": "eth_sendRawTransaction", "params": ["0x00"] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -32000);
    let (status, _) =
        post(&app, "/api/rpc", json!({ "frameToken": token, "chainId": "eip155:1", "method": "eth_accounts", "params": [] })).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let calls = chain.0.lock().unwrap().clone();
    assert_eq!(calls.len(), 2);
    assert!(
        calls.iter().all(|(session, address, chain_id, _)| session == "s1" && *address == keys.eip155_address() && chain_id == "eip155:1")
    );
}

struct FailingMailer;

#[async_trait::async_trait]
impl vestibule_embedded::Mailer for FailingMailer {
    async fn send_code(
        &self,
        _: &str,
        _: &vestibule_embedded::OtpCode,
        _: vestibule_embedded::MailPurpose,
    ) -> Result<(), vestibule_embedded::MailError> {
        Err(vestibule_embedded::MailError::Transport("connection refused".into()))
    }
}

#[actix_web::test]
async fn given_a_mail_server_that_fails_when_a_code_is_sent_then_the_error_is_mail_failed_and_a_retry_is_not_held_by_the_cooldown() {
    let h = harness(vec![]);
    let dir = h.dir.path().join("failing");
    let service = vestibule_embedded::EmbeddedService::builder(
        support::config(&dir),
        vestibule_embedded::ShareKeys { server: [1; 32], recovery: [2; 32] },
        std::sync::Arc::new(FailingMailer),
        h.sink.clone(),
    )
    .build()
    .unwrap();
    let (_, public) = test_key_pair(&SeededEntropy::new(8));
    let (frame_id, _) = service.register_frame("s1", &public, vec![]).unwrap();
    for _ in 0..2 {
        let error = service.send_login_otp("s1", &frame_id, "a@example.com").await.unwrap_err();
        assert_eq!((error.code(), error.status()), ("mail_failed", 502));
    }
}
