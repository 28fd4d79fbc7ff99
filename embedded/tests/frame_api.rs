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
    // Named with the frame it is about: the session takes notices only from the frame it announced.
    assert_eq!(h.sink.frames(), vec![frame_id.clone()]);
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

    // Another session naming this frame cannot sign it out (any page can tell its session any
    // frame id): the frame still gets its share.
    h.service.sign_out("s2", &known_id);
    let (status, _) = post(&app, "/api/wallet/share", json!({ "frameToken": known_token })).await;
    assert_eq!(status, StatusCode::OK, "a stranger's sign-out was taken");
    // After its own session's sign-out the frame gets no share.
    h.service.sign_out("s3", &known_id);
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
async fn given_the_frame_pages_then_the_frame_names_its_ancestors_the_approval_window_none_and_unknown_projects_get_404() {
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
    // The popup's pages may be framed by no page either.
    let response = test::call_service(&app, test::TestRequest::get().uri("/loading").to_request()).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers().get("content-security-policy").unwrap(), "default-src 'self'; frame-ancestors 'none'");
    // The approval window's page may be framed by no page, the project's included.
    let response = test::call_service(&app, test::TestRequest::get().uri("/approve").to_request()).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers().get("content-security-policy").unwrap(), "default-src 'self'; frame-ancestors 'none'");
    assert_eq!(response.headers().get("x-frame-options").unwrap(), "DENY");
    assert_eq!(test::read_body(response).await, "<!doctype html><title>approve</title>");
    let response = test::call_service(&app, test::TestRequest::get().uri("/oauth/callback?code=c&state=unknown").to_request()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(response.headers().get("content-security-policy").unwrap(), "default-src 'none'; frame-ancestors 'none'");
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

#[actix_web::test]
async fn given_an_address_with_an_account_when_another_user_moves_to_it_then_nothing_tells_until_its_code_is_typed() {
    let h = harness(vec![]);
    let app = app!(h);
    let (_, _, owner) = logged_in_frame(&h, &app, "s1", "taken@example.com", 1).await;
    let (frame_id, token, prober) = logged_in_frame(&h, &app, "s2", "prober@example.com", 2).await;
    h.clock.advance_ms(30_000);

    // When the other user asks to move to the address that has an account: the change starts as
    // for a free address (a code to the prober's own address), so its answer tells nothing
    let step = h.service.start_email_update("s2", &frame_id, "Taken@Example.com").await.unwrap();
    assert_eq!(step, vestibule_embedded::EmailUpdateStep::Primary);
    let primary = h.mailer.last_code("prober@example.com");
    let (status, body) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "primary", "otp": primary })).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Then only whoever reads the address's own mail learns it is taken, and nothing moves
    let secondary = h.mailer.last_code("taken@example.com");
    let (status, body) =
        post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "secondary", "otp": secondary })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("email_taken")), "{body}");
    assert_eq!(body["error"]["message"], "That email belongs to another account");
    let user_of = |email: &str| h.service.vault_user_id_by_email(support::PROJECT, email);
    assert_eq!((user_of("taken@example.com"), user_of("prober@example.com")), (Some(owner), Some(prober)));
    // The change is over: the used code does not count again.
    let (status, _) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "secondary", "otp": secondary })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// A chain that records each call (session, address, chain, method, params) and answers `0x1`,
/// except `eth_sendRawTransaction` (refused) and `eth_gasPrice` (an answer of 300 KiB).
#[derive(Default)]
struct FakeChain(std::sync::Mutex<Vec<(String, String, String, String, Value)>>);

#[async_trait::async_trait]
impl vestibule_embedded::FrameRpc for FakeChain {
    async fn call(
        &self,
        session_id: &str,
        address: &str,
        chain_id: &str,
        method: &str,
        params: Value,
    ) -> Result<Value, vestibule_embedded::RpcFailure> {
        self.0.lock().unwrap().push((session_id.into(), address.into(), chain_id.into(), method.into(), params));
        match method {
            "eth_sendRawTransaction" => {
                Err(vestibule_embedded::RpcFailure { code: -32000, message: "sender is not the logged-in address".into() })
            }
            "eth_gasPrice" => Ok(json!(format!("0x{}", "1".repeat(300 * 1024)))),
            _ => Ok(json!("0x1")),
        }
    }
}

/// The harness with `chain` behind the frame's chain calls (the harness's service has none).
fn harness_with_chain(chain: std::sync::Arc<FakeChain>) -> support::Harness {
    let mut h = harness(vec![]);
    let dir = h.dir.path().join("with-chain");
    let service = vestibule_embedded::EmbeddedService::builder(
        support::config(&dir),
        vestibule_embedded::ShareKeys { server: [1; 32], recovery: [2; 32] },
        h.mailer.clone(),
        h.sink.clone(),
    )
    .rpc(chain)
    .clock(h.clock.clone())
    .build()
    .unwrap();
    h.service = actix_web::web::Data::new(service);
    h
}

/// Binds a wallet made from `seed` to the frame's login; its keys.
async fn bind_wallet(
    app: &impl actix_web::dev::Service<actix_http::Request, Response = actix_web::dev::ServiceResponse, Error = actix_web::Error>,
    frame_id: &str,
    token: &str,
    user_id: &str,
    seed: u8,
) -> WalletKeys {
    let keys = WalletKeys::from_seed(seed);
    let (evm, sol) = keys.sign_binding(frame_id, user_id);
    let (status, _) = post(
        app,
        "/api/wallet",
        json!({
        "frameToken": token, "eip155Address": keys.eip155_address(), "solanaAddress": keys.solana_address(),
        "serverShare": vestibule_embedded::b64url(&[1u8; 33]), "recoveryShare": vestibule_embedded::b64url(&[2u8; 33]),
        "eip155Signature": evm, "solanaSignature": sol }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    keys
}

fn chain_call(token: &str, method: &str, params: Value) -> Value {
    json!({ "frameToken": token, "chainId": "eip155:1", "method": method, "params": params })
}

#[actix_web::test]
async fn given_a_frame_with_a_wallet_when_it_calls_the_chain_then_allowed_methods_go_through_for_its_address() {
    let chain = std::sync::Arc::new(FakeChain::default());
    let h = harness_with_chain(chain.clone());
    let app = app!(h);
    let (frame_id, token, user_id) = logged_in_frame(&h, &app, "s1", "a@example.com", 3).await;
    let (status, body) = post(&app, "/api/rpc", json!({ "frameToken": token, "chainId": "eip155:1", "method": "eth_chainId" })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("no_wallet")));

    let keys = bind_wallet(&app, &frame_id, &token, &user_id, 5).await;

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
    // The calls that name an account go through for the wallet's own address (in any case) only:
    // the node is no oracle of other accounts.
    let own = keys.eip155_address().to_uppercase().replacen("0X", "0x", 1);
    let stranger = "0x0000000000000000000000000000000000000001";
    for (params, through) in [(json!([own, "pending"]), true), (json!([stranger, "pending"]), false), (json!([]), false)] {
        let (status, body) = post(&app, "/api/rpc", chain_call(&token, "eth_getTransactionCount", params.clone())).await;
        assert_eq!(status == StatusCode::OK, through, "eth_getTransactionCount {params}: {status} {body}");
    }
    for (params, through) in [
        (json!([{ "from": keys.eip155_address(), "to": stranger, "value": "0x1" }]), true),
        (json!([{ "from": stranger, "to": stranger, "data": "0x" }]), false),
        (json!([{ "to": stranger }]), false),
    ] {
        let (status, body) = post(&app, "/api/rpc", chain_call(&token, "eth_estimateGas", params.clone())).await;
        assert_eq!(status == StatusCode::OK, through, "eth_estimateGas {params}: {status} {body}");
    }
    let calls = chain.0.lock().unwrap().clone();
    assert_eq!(calls.len(), 4, "the two sendRaw/chainId calls and the two of the wallet's own address");
    assert!(
        calls
            .iter()
            .all(|(session, address, chain_id, _, _)| session == "s1" && *address == keys.eip155_address() && chain_id == "eip155:1")
    );
}

#[actix_web::test]
async fn given_a_frame_with_a_wallet_when_it_calls_faster_than_its_allowance_then_it_is_told_when_to_come_back_and_other_users_are_not() {
    let chain = std::sync::Arc::new(FakeChain::default());
    let h = harness_with_chain(chain.clone());
    let app = app!(h);
    let (frame_id, token, user_id) = logged_in_frame(&h, &app, "s1", "a@example.com", 3).await;
    bind_wallet(&app, &frame_id, &token, &user_id, 5).await;
    let (other_frame, other_token, other_user) = logged_in_frame(&h, &app, "s2", "b@example.com", 4).await;
    bind_wallet(&app, &other_frame, &other_token, &other_user, 6).await;

    for call in 0..vestibule_embedded::rpc_limits::BURST {
        let (status, body) = post(&app, "/api/rpc", chain_call(&token, "eth_chainId", json!([]))).await;
        assert_eq!((status, &body), (StatusCode::OK, &json!({ "result": "0x1" })), "call {call}");
    }
    let request = test::TestRequest::post()
        .uri("/api/rpc")
        .insert_header(("origin", FRAME_ORIGIN))
        .set_json(chain_call(&token, "eth_chainId", json!([])))
        .to_request();
    let response = test::call_service(&app, request).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers().get("retry-after").unwrap(), "1");
    let body: Value = serde_json::from_slice(&test::read_body(response).await).unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");
    assert_eq!(chain.0.lock().unwrap().len(), vestibule_embedded::rpc_limits::BURST as usize, "the refused call did not go upstream");

    // Another user's allowance is its own.
    let (status, _) = post(&app, "/api/rpc", chain_call(&other_token, "eth_chainId", json!([]))).await;
    assert_eq!(status, StatusCode::OK);
    // A call's worth comes back after 1/CALLS_PER_SECOND s.
    h.clock.advance_ms(1000 / u64::from(vestibule_embedded::rpc_limits::CALLS_PER_SECOND));
    let (status, _) = post(&app, "/api/rpc", chain_call(&token, "eth_chainId", json!([]))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = post(&app, "/api/rpc", chain_call(&token, "eth_chainId", json!([]))).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
}

#[actix_web::test]
async fn given_a_frame_with_a_wallet_when_it_asks_for_whole_blocks_state_overrides_or_a_huge_answer_then_it_is_refused() {
    let chain = std::sync::Arc::new(FakeChain::default());
    let h = harness_with_chain(chain.clone());
    let app = app!(h);
    let (frame_id, token, user_id) = logged_in_frame(&h, &app, "s1", "a@example.com", 3).await;
    bind_wallet(&app, &frame_id, &token, &user_id, 5).await;

    let (status, body) = post(&app, "/api/rpc", chain_call(&token, "eth_getBlockByNumber", json!(["latest", true]))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_request")));
    let overrides = json!([{ "to": "0x0000000000000000000000000000000000000001" }, "latest", { "0x01": { "code": "0x00" } }]);
    let (status, body) = post(&app, "/api/rpc", chain_call(&token, "eth_estimateGas", overrides)).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_request")));
    assert!(chain.0.lock().unwrap().is_empty(), "neither went upstream");

    // A block is read without its transactions, whether the frame says so or not.
    for params in [json!(["latest"]), json!(["latest", false])] {
        let (status, body) = post(&app, "/api/rpc", chain_call(&token, "eth_getBlockByNumber", params)).await;
        assert_eq!((status, &body), (StatusCode::OK, &json!({ "result": "0x1" })));
        assert_eq!(chain.0.lock().unwrap().pop().unwrap().4, json!(["latest", false]));
    }
    let (status, body) = post(&app, "/api/rpc", chain_call(&token, "eth_gasPrice", json!([]))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -32603);
    assert_eq!(body["error"]["message"], "the answer is larger than 262144 bytes");
}

struct FailingMailer;

#[async_trait::async_trait]
impl vestibule_embedded::Mailer for FailingMailer {
    async fn send_code(
        &self,
        _: &str,
        _: &vestibule_embedded::OtpCode,
        _: vestibule_embedded::MailPurpose,
        _: &str,
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
    let (frame_id, _) = service.register_frame("s1", &public, vec![], None).await.unwrap();
    for _ in 0..2 {
        let error = service.send_login_otp("s1", &frame_id, "a@example.com").await.unwrap_err();
        assert_eq!((error.code(), error.status()), ("mail_failed", 502));
    }
}

/// A service on `db` with the harness's mailer, sink and clock; building another on the same
/// database is a gateway restart (frames and codes in memory are gone, the vault stays).
fn lockout_service(h: &support::Harness, db: &sled::Db, seed: u64) -> actix_web::web::Data<vestibule_embedded::EmbeddedService> {
    let service = vestibule_embedded::EmbeddedService::builder(
        support::config(h.dir.path()),
        vestibule_embedded::ShareKeys { server: [1; 32], recovery: [2; 32] },
        h.mailer.clone(),
        h.sink.clone(),
    )
    .clock(h.clock.clone())
    .entropy(std::sync::Arc::new(SeededEntropy::new(seed)))
    .db(db.clone())
    .build()
    .unwrap();
    actix_web::web::Data::new(service)
}

/// Registers a frame of `session`; gives (frameId, frameToken).
async fn lockout_frame(
    app: &impl actix_web::dev::Service<actix_http::Request, Response = actix_web::dev::ServiceResponse, Error = actix_web::Error>,
    session: &str,
    seed: u64,
) -> (String, String) {
    let (_, public) = test_key_pair(&SeededEntropy::new(seed));
    let (status, frame) = post(app, "/api/frames", json!({ "sessionId": session, "hpkePublicKey": public })).await;
    assert_eq!(status, StatusCode::OK, "{frame}");
    (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned())
}

#[actix_web::test]
async fn given_wrong_codes_across_challenges_when_the_address_budget_is_spent_then_its_codes_are_refused_across_sessions_and_restarts_until_the_window_passes()
 {
    use vestibule_embedded::{Clock, EmbeddedError};
    const VICTIM: &str = "victim@example.com";
    const DAY_MS: u64 = 24 * 3600 * 1000;
    let mut h = harness(vec![]);
    let db = sled::Config::new().path(h.dir.path().join("lockout-db")).open().unwrap();
    h.service = lockout_service(&h, &db, 11);
    let app = app!(h);
    let mails_to_victim = |h: &support::Harness| h.mailer.sent.lock().unwrap().iter().filter(|(to, _, _)| to == VICTIM).count();
    let verify = |token: &str, challenge_id: &str, otp: &str| json!({ "frameToken": token, "challengeId": challenge_id, "otp": otp });
    let first_failure = h.clock.now_ms();

    // Given a code mailed to the address for a frame of session s1, and five wrong codes that kill it
    let (frame_a, token_a) = lockout_frame(&app, "s1", 21).await;
    let sent = h.service.send_login_otp("s1", &frame_a, VICTIM).await.unwrap();
    let code = h.mailer.last_code(VICTIM);
    for _ in 0..4 {
        let (status, body) = post(&app, "/api/email/verify", verify(&token_a, &sent.challenge_id, &wrong(&code))).await;
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("otp_wrong")));
    }
    let (_, body) = post(&app, "/api/email/verify", verify(&token_a, &sent.challenge_id, &wrong(&code))).await;
    assert_eq!(body["error"]["code"], "otp_attempts");

    // and, past the cooldown, a new code for a frame of another session (mailing still works) taking four more
    h.clock.advance_ms(30_000);
    let (frame_b, token_b) = lockout_frame(&app, "s2", 22).await;
    let sent_b = h.service.send_login_otp("s2", &frame_b, VICTIM).await.unwrap();
    let code_b = h.mailer.last_code(VICTIM);
    for _ in 0..4 {
        let (_, body) = post(&app, "/api/email/verify", verify(&token_b, &sent_b.challenge_id, &wrong(&code_b))).await;
        assert_eq!(body["error"]["code"], "otp_wrong");
    }
    // (the session is told how many tries the address has left, not only the challenge)
    assert_eq!(h.sink.take().pop().unwrap(), ("s2".into(), Notice::OtpRejected { reason: OtpRejection::Wrong, attempts_left: 1 }));
    // and a third session's frame holding an outstanding code for the address
    h.clock.advance_ms(30_000);
    let (frame_c, token_c) = lockout_frame(&app, "s3", 23).await;
    let sent_c = h.service.send_login_otp("s3", &frame_c, VICTIM).await.unwrap();
    let code_c = h.mailer.last_code(VICTIM);
    assert_eq!(mails_to_victim(&h), 3);

    // When the tenth wrong code comes
    let (status, body) = post(&app, "/api/email/verify", verify(&token_b, &sent_b.challenge_id, &wrong(&code_b))).await;

    // Then it spends the address's budget: locked, and the session hears "too many attempts"
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("otp_locked")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("24 hours"), "{body}");
    assert_eq!(h.sink.take(), vec![("s2".into(), Notice::OtpRejected { reason: OtpRejection::Attempts, attempts_left: 0 })]);
    // A code for another address still verifies (positive probe) ...
    let (frame_d, token_d) = lockout_frame(&app, "s4", 24).await;
    let other = h.service.send_login_otp("s4", &frame_d, "other@example.com").await.unwrap();
    let (status, _) =
        post(&app, "/api/email/verify", verify(&token_d, &other.challenge_id, &h.mailer.last_code("other@example.com"))).await;
    assert_eq!(status, StatusCode::OK);
    h.sink.take();
    // ... but the third frame's outstanding code for the address, right as it is, is refused
    let (status, body) = post(&app, "/api/email/verify", verify(&token_c, &sent_c.challenge_id, &code_c)).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("otp_locked")), "{body}");
    assert_eq!(h.sink.take(), vec![("s3".into(), Notice::OtpRejected { reason: OtpRejection::Attempts, attempts_left: 0 })]);

    // And a new code for the address is refused, past the cooldown, to a new frame of a new
    // session that is mailed a code for another address at once (positive probe)
    h.clock.advance_ms(30_000);
    let (frame_e, _) = lockout_frame(&app, "s5", 25).await;
    h.service.send_login_otp("s5", &frame_e, "third@example.com").await.unwrap();
    let error = h.service.send_login_otp("s5", &frame_e, VICTIM).await.unwrap_err();
    let expected_wait = (first_failure + DAY_MS - h.clock.now_ms()).div_ceil(1000);
    assert!(matches!(error, EmbeddedError::Locked { retry_after_secs } if retry_after_secs == expected_wait), "{error:?}");
    assert_eq!((error.code(), error.status()), ("otp_locked", 429));
    assert_eq!(mails_to_victim(&h), 3, "no code went out");

    // When the gateway restarts on the same database, just after mailing a code to `cooled` (for a
    // frame of its own: frame_e's cooldown runs since third@)
    let (frame_h, _) = lockout_frame(&app, "s8", 28).await;
    h.service.send_login_otp("s8", &frame_h, "cooled@example.com").await.unwrap();
    drop(app);
    h.service = lockout_service(&h, &db, 12);
    let app = app!(h);

    // Then a fresh address is mailed (positive probe), the lockout holds, and so does the cooldown
    let (frame_f, _) = lockout_frame(&app, "s6", 26).await;
    h.service.send_login_otp("s6", &frame_f, "fresh@example.com").await.unwrap();
    let error = h.service.send_login_otp("s6", &frame_f, VICTIM).await.unwrap_err();
    assert_eq!(error.code(), "otp_locked", "the lockout survives a restart");
    let error = h.service.send_login_otp("s6", &frame_f, "cooled@example.com").await.unwrap_err();
    assert!(matches!(error, EmbeddedError::Cooldown { retry_after_secs: 30 }), "the cooldown survives a restart: {error:?}");
    h.clock.advance_ms(30_000);
    h.service.send_login_otp("s6", &frame_f, "cooled@example.com").await.unwrap();
    assert_eq!(mails_to_victim(&h), 3);

    // And a second before the window ends the address is still locked; once it has ended, it is
    // mailed again and the right code logs in
    h.clock.advance_ms(first_failure + DAY_MS - 1_000 - h.clock.now_ms());
    let (frame_g, token_g) = lockout_frame(&app, "s7", 27).await;
    let error = h.service.send_login_otp("s7", &frame_g, VICTIM).await.unwrap_err();
    assert!(matches!(error, EmbeddedError::Locked { retry_after_secs: 1 }), "{error:?}");
    h.clock.advance_ms(1_000);
    let sent = h.service.send_login_otp("s7", &frame_g, VICTIM).await.unwrap();
    let (status, login) = post(&app, "/api/email/verify", verify(&token_g, &sent.challenge_id, &h.mailer.last_code(VICTIM))).await;
    assert_eq!(status, StatusCode::OK, "{login}");
    assert_eq!(login["email"], VICTIM);
}

#[actix_web::test]
async fn given_a_locked_out_address_when_its_owner_changes_email_then_its_pending_code_is_not_checked_and_no_new_code_goes_to_it() {
    const OLD: &str = "old@example.com";
    let h = harness(vec![]);
    let app = app!(h);
    let (frame_id, token, _) = logged_in_frame(&h, &app, "s1", OLD, 1).await;
    // Given an email change started (the code to the current address is mailed: positive probe)
    h.clock.advance_ms(30_000);
    h.service.start_email_update("s1", &frame_id, "new@example.com").await.unwrap();
    let primary = h.mailer.last_code(OLD);

    // When another session spends the address's budget on login codes (two challenges, 30 s apart)
    let (other_frame, other_token) = lockout_frame(&app, "s2", 31).await;
    let mut last = Value::Null;
    for _ in 0..2 {
        h.clock.advance_ms(30_000);
        let sent = h.service.send_login_otp("s2", &other_frame, OLD).await.unwrap();
        let code = h.mailer.last_code(OLD);
        for _ in 0..5 {
            let request = json!({ "frameToken": other_token, "challengeId": sent.challenge_id, "otp": wrong(&code) });
            last = post(&app, "/api/email/verify", request).await.1;
        }
    }
    assert_eq!(last["error"]["code"], "otp_locked");
    h.sink.take();

    // Then the pending code of the change, right as it is, is refused and the change is over
    let (status, body) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "primary", "otp": primary })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("otp_locked")), "{body}");
    assert_eq!(h.sink.take(), vec![("s1".into(), Notice::OtpRejected { reason: OtpRejection::Attempts, attempts_left: 0 })]);
    // And no new change mails the address, while the same frame may still ask for a login code
    // for another address (positive probe)
    h.clock.advance_ms(30_000);
    let error = h.service.start_email_update("s1", &frame_id, "new@example.com").await.unwrap_err();
    assert_eq!((error.code(), error.status()), ("otp_locked", 429));
    h.service.send_login_otp("s1", &frame_id, "else@example.com").await.unwrap();
}

// ---- what one visitor may have mailed, whatever the addresses (mail_limits.rs) ----

/// Registers a frame of `session` from the client `peer` (ip:port); gives (frameId, frameToken).
async fn frame_from(
    app: &impl actix_web::dev::Service<actix_http::Request, Response = actix_web::dev::ServiceResponse, Error = actix_web::Error>,
    session: &str,
    seed: u64,
    peer: &str,
) -> (String, String) {
    let (_, public) = test_key_pair(&SeededEntropy::new(seed));
    let request = test::TestRequest::post()
        .uri("/api/frames")
        .insert_header(("origin", FRAME_ORIGIN))
        .peer_addr(peer.parse().unwrap())
        .set_json(json!({ "sessionId": session, "hpkePublicKey": public }))
        .to_request();
    let response = test::call_service(app, request).await;
    assert_eq!(response.status(), StatusCode::OK);
    let frame: Value = test::read_body_json(response).await;
    (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned())
}

fn mails_to(h: &support::Harness, to: &str) -> usize {
    h.mailer.sent.lock().unwrap().iter().filter(|(recipient, _, _)| recipient == to).count()
}

/// Records what it sends, and fails (as an SMTP server that refuses) for the recipients listed
/// in `failing` ("*": every one).
#[derive(Default)]
struct FlakyMailer {
    inner: support::RecordingMailer,
    failing: std::sync::Mutex<Vec<String>>,
}

impl FlakyMailer {
    fn fail(&self, recipients: &[&str]) {
        *self.failing.lock().unwrap() = recipients.iter().map(|r| r.to_string()).collect();
    }
}

#[async_trait::async_trait]
impl vestibule_embedded::Mailer for FlakyMailer {
    async fn send_code(
        &self,
        to: &str,
        code: &vestibule_embedded::OtpCode,
        purpose: vestibule_embedded::MailPurpose,
        project: &str,
    ) -> Result<(), vestibule_embedded::MailError> {
        let failing = self.failing.lock().unwrap().clone();
        if failing.iter().any(|r| r == "*" || r == to) {
            return Err(vestibule_embedded::MailError::Transport("554 transaction failed".into()));
        }
        self.inner.send_code(to, code, purpose, project).await
    }
}

/// The harness's service rebuilt with `mails_per_ip_per_hour` and `mailer` (its clock and sink).
fn service_with_budget(
    h: &mut support::Harness,
    per_hour: u32,
    mailer: std::sync::Arc<dyn vestibule_embedded::Mailer>,
) -> actix_web::web::Data<vestibule_embedded::EmbeddedService> {
    let mut config = support::config(&h.dir.path().join(format!("budget-{per_hour}")));
    config.mails_per_ip_per_hour = per_hour;
    let service = vestibule_embedded::EmbeddedService::builder(
        config,
        vestibule_embedded::ShareKeys { server: [1; 32], recovery: [2; 32] },
        mailer,
        h.sink.clone(),
    )
    .clock(h.clock.clone())
    .entropy(std::sync::Arc::new(SeededEntropy::new(99)))
    .build()
    .unwrap();
    actix_web::web::Data::new(service)
}

#[actix_web::test]
async fn given_a_frame_that_just_had_a_code_mailed_when_it_asks_for_another_address_then_it_waits_out_the_cooldown_whatever_the_address() {
    use vestibule_embedded::EmbeddedError;
    let h = harness(vec![]);
    let app = app!(h);
    // Given a frame that just had a code mailed to a@
    let (frame_id, _) = frame_from(&app, "s1", 41, "192.0.2.10:40001").await;
    h.service.send_login_otp("s1", &frame_id, "a@example.com").await.unwrap();

    // When it asks for b@ at once, and 10 s later
    let error = h.service.send_login_otp("s1", &frame_id, "b@example.com").await.unwrap_err();

    // Then it is refused with the cooldown and the seconds left (what the modal shows), nothing mailed
    assert!(matches!(error, EmbeddedError::Cooldown { retry_after_secs: 30 }), "{error:?}");
    assert_eq!((error.code(), error.status()), ("email_cooldown", 429));
    h.clock.advance_ms(10_000);
    let error = h.service.send_login_otp("s1", &frame_id, "b@example.com").await.unwrap_err();
    assert!(matches!(error, EmbeddedError::Cooldown { retry_after_secs: 20 }), "{error:?}");
    assert_eq!(mails_to(&h, "b@example.com"), 0);
    // nor does a new frame of the session (a reload) start a fresh cooldown
    let (reloaded, _) = frame_from(&app, "s1", 42, "192.0.2.10:40002").await;
    let error = h.service.send_login_otp("s1", &reloaded, "c@example.com").await.unwrap_err();
    assert!(matches!(error, EmbeddedError::Cooldown { retry_after_secs: 20 }), "{error:?}");
    // while a frame of another session from the same client address is mailed at once (positive probe)
    let (other, _) = frame_from(&app, "s2", 43, "192.0.2.10:40003").await;
    h.service.send_login_otp("s2", &other, "d@example.com").await.unwrap();

    // And once 30 s have passed since the first mail, b@ is mailed
    h.clock.advance_ms(19_999);
    let error = h.service.send_login_otp("s1", &frame_id, "b@example.com").await.unwrap_err();
    assert!(matches!(error, EmbeddedError::Cooldown { retry_after_secs: 1 }), "{error:?}");
    h.clock.advance_ms(1);
    h.service.send_login_otp("s1", &frame_id, "b@example.com").await.unwrap();
    assert_eq!(mails_to(&h, "b@example.com"), 1);
}

#[actix_web::test]
async fn given_the_only_frame_of_a_session_just_had_a_code_mailed_when_a_reload_resumes_it_then_the_new_frame_waits_out_the_cooldown() {
    use vestibule_embedded::EmbeddedError;
    let h = harness(vec![]);
    let app = app!(h);
    // Given the session's one frame, that just had a code mailed to a@
    let (frame_id, token) = frame_from(&app, "s1", 51, "192.0.2.11:40001").await;
    h.service.send_login_otp("s1", &frame_id, "a@example.com").await.unwrap();
    h.clock.advance_ms(10_000);

    // When the page reloads and its new frame resumes the first one's token (which drops it)
    let (_, public) = test_key_pair(&SeededEntropy::new(52));
    let (status, resumed) = post(&app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public, "resumeToken": token })).await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    let resumed_id = resumed["frameId"].as_str().unwrap().to_owned();

    // Then the new frame waits out what is left of the first one's cooldown, nothing mailed
    let error = h.service.send_login_otp("s1", &resumed_id, "b@example.com").await.unwrap_err();
    assert!(matches!(error, EmbeddedError::Cooldown { retry_after_secs: 20 }), "a resumed frame starts afresh: {error:?}");
    assert_eq!(mails_to(&h, "b@example.com"), 0);
    // and is mailed once 30 s have passed since the first mail (positive probe)
    h.clock.advance_ms(20_000);
    h.service.send_login_otp("s1", &resumed_id, "b@example.com").await.unwrap();
    assert_eq!(mails_to(&h, "b@example.com"), 1);
}

#[actix_web::test]
async fn given_a_logged_in_frame_that_just_had_a_login_code_mailed_when_it_starts_an_email_change_then_the_frames_cooldown_holds_it() {
    use vestibule_embedded::EmbeddedError;
    let h = harness(vec![]);
    let app = app!(h);
    // Given a frame logged in as old@, past the address's cooldown, that just had a code mailed to x@
    let (frame_id, _, _) = logged_in_frame(&h, &app, "s1", "old@example.com", 51).await;
    h.clock.advance_ms(30_000);
    h.service.send_login_otp("s1", &frame_id, "x@example.com").await.unwrap();

    // When it starts an email change (a code to old@, whose own cooldown is over)
    let error = h.service.start_email_update("s1", &frame_id, "new@example.com").await.unwrap_err();

    // Then the frame's cooldown refuses it; and 30 s later the change starts (positive probe)
    assert!(matches!(error, EmbeddedError::Cooldown { retry_after_secs: 30 }), "{error:?}");
    assert_eq!(mails_to(&h, "old@example.com"), 1);
    h.clock.advance_ms(30_000);
    h.service.start_email_update("s1", &frame_id, "new@example.com").await.unwrap();
    assert_eq!(mails_to(&h, "old@example.com"), 2);
}

#[actix_web::test]
async fn given_one_client_address_with_many_sessions_when_they_ask_for_more_codes_than_its_budget_then_they_are_refused_and_another_address_is_served()
 {
    use vestibule_embedded::EmbeddedError;
    let h = harness(vec![]);
    let app = app!(h);
    // Given 30 frames of 30 sessions from one IPv6 /64, each of which had a code mailed to its own address
    for n in 0..30u64 {
        let (frame, _) = frame_from(&app, &format!("s{n}"), 100 + n, &format!("[2001:db8:7:7::{n:x}]:4000")).await;
        h.service.send_login_otp(&format!("s{n}"), &frame, &format!("v{n}@example.com")).await.unwrap();
    }

    // When one more frame of a new session from another address of that /64 asks for a code
    let (frame, _) = frame_from(&app, "s30", 130, "[2001:db8:7:7:ffff::1]:4000").await;
    let error = h.service.send_login_otp("s30", &frame, "v30@example.com").await.unwrap_err();

    // Then it is refused (one code refills every 3600 / 30 = 120 s) and nothing is mailed
    assert!(matches!(error, EmbeddedError::EmailRateLimited { retry_after_secs: 120 }), "{error:?}");
    assert_eq!((error.code(), error.status()), ("email_rate_limited", 429));
    assert_eq!(error.to_string(), "Too many codes were requested from your network; please try again in 2 minutes");
    assert!(!error.to_string().contains("v30"), "the message names no address");
    assert_eq!(mails_to(&h, "v30@example.com"), 0);
    // while another client address, and another /64, are served at once (positive probes)
    let (v4, _) = frame_from(&app, "s31", 131, "198.51.100.7:4000").await;
    h.service.send_login_otp("s31", &v4, "w1@example.com").await.unwrap();
    let (v6, _) = frame_from(&app, "s32", 132, "[2001:db8:7:8::1]:4000").await;
    h.service.send_login_otp("s32", &v6, "w2@example.com").await.unwrap();

    // And the spent /64 gets one code per 120 s: refused a second before, served at 120 s, then refused again
    h.clock.advance_ms(119_000);
    let error = h.service.send_login_otp("s30", &frame, "v30@example.com").await.unwrap_err();
    assert!(matches!(error, EmbeddedError::EmailRateLimited { retry_after_secs: 1 }), "{error:?}");
    h.clock.advance_ms(1_000);
    h.service.send_login_otp("s30", &frame, "v30@example.com").await.unwrap();
    let (next, _) = frame_from(&app, "s33", 133, "[2001:db8:7:7::99]:4000").await;
    let error = h.service.send_login_otp("s33", &next, "v33@example.com").await.unwrap_err();
    assert_eq!(error.code(), "email_rate_limited");
}

#[actix_web::test]
async fn given_mails_that_fail_when_codes_are_asked_for_then_neither_the_frames_cooldown_nor_the_client_budget_is_spent() {
    use vestibule_embedded::EmbeddedError;
    let mut h = harness(vec![]);
    let mailer = std::sync::Arc::new(FlakyMailer::default());
    h.service = service_with_budget(&mut h, 2, mailer.clone());
    let app = app!(h);
    let (frame_a, _) = frame_from(&app, "s1", 61, "192.0.2.20:5000").await;

    // Given a mail server that refuses every mail
    mailer.fail(&["*"]);
    // When one frame asks for codes to three addresses at once
    for to in ["a@example.com", "b@example.com", "c@example.com"] {
        let error = h.service.send_login_otp("s1", &frame_a, to).await.unwrap_err();
        // Then each is mail_failed, never held by the cooldown or the budget
        assert_eq!((error.code(), error.status()), ("mail_failed", 502), "{to}: {error:?}");
    }

    // And once the server works, the frame is mailed at once and the client address still has its
    // whole budget of 2: then it is spent
    mailer.fail(&[]);
    h.service.send_login_otp("s1", &frame_a, "d@example.com").await.unwrap();
    let (frame_b, _) = frame_from(&app, "s2", 62, "192.0.2.20:5001").await;
    h.service.send_login_otp("s2", &frame_b, "e@example.com").await.unwrap();
    let (frame_c, _) = frame_from(&app, "s3", 63, "192.0.2.20:5002").await;
    let error = h.service.send_login_otp("s3", &frame_c, "f@example.com").await.unwrap_err();
    assert!(matches!(error, EmbeddedError::EmailRateLimited { .. }), "{error:?}");
    assert_eq!(mailer.inner.sent.lock().unwrap().len(), 2);
}

#[actix_web::test]
async fn given_an_email_change_when_its_second_code_is_due_then_it_spends_the_client_budget_and_waits_for_room_without_spending_the_first_code()
 {
    let mut h = harness(vec![]);
    let mailer = std::sync::Arc::new(FlakyMailer::default());
    // 12 codes per hour: one refills every 300 s.
    h.service = service_with_budget(&mut h, 12, mailer.clone());
    let app = app!(h);
    const PEER: &str = "192.0.2.30";
    // Given a frame logged in as old@ (1 code) that started a change to new@ (2; a failed try before it took nothing)
    let (frame_id, token) = frame_from(&app, "s1", 71, &format!("{PEER}:6000")).await;
    let sent = h.service.send_login_otp("s1", &frame_id, "old@example.com").await.unwrap();
    let code = mailer.inner.last_code("old@example.com");
    let (status, _) = post(&app, "/api/email/verify", json!({ "frameToken": token, "challengeId": sent.challenge_id, "otp": code })).await;
    assert_eq!(status, StatusCode::OK);
    h.clock.advance_ms(30_000);
    // (a first try whose mail fails holds nothing back: retried at once)
    mailer.fail(&["old@example.com"]);
    let error = h.service.start_email_update("s1", &frame_id, "new@example.com").await.unwrap_err();
    assert_eq!(error.code(), "mail_failed");
    mailer.fail(&[]);
    h.service.start_email_update("s1", &frame_id, "new@example.com").await.unwrap();
    let primary = mailer.inner.last_code("old@example.com");

    // and a mail server that refuses the mail to the new address
    mailer.fail(&["new@example.com"]);
    let (status, body) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "primary", "otp": primary })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_GATEWAY, Some("mail_failed")), "{body}");
    mailer.fail(&[]);

    // When the client address's other frames take the rest of its budget (the failed mail gave its code back)
    for n in 0..10u64 {
        let (frame, _) = frame_from(&app, &format!("t{n}"), 200 + n, &format!("{PEER}:{}", 6001 + n)).await;
        h.service.send_login_otp(&format!("t{n}"), &frame, &format!("x{n}@example.com")).await.unwrap();
    }
    let (spent, _) = frame_from(&app, "t10", 210, &format!("{PEER}:6100")).await;
    assert_eq!(h.service.send_login_otp("t10", &spent, "x10@example.com").await.unwrap_err().code(), "email_rate_limited");

    // and the change is started again past the cooldowns, and its first code typed
    h.clock.advance_ms(300_000);
    h.service.start_email_update("s1", &frame_id, "new@example.com").await.unwrap();
    let primary = mailer.inner.last_code("old@example.com");
    let (status, body) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "primary", "otp": primary })).await;

    // Then the second code waits for room: refused with the wait, nothing mailed to new@
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("email_rate_limited")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().starts_with("Too many codes were requested from your network"), "{body}");
    assert!(!mailer.inner.sent.lock().unwrap().iter().any(|(to, _, _)| to == "new@example.com"));
    // And once a code has refilled, the same first code is still good and new@ is mailed
    h.clock.advance_ms(300_000);
    let (status, body) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "primary", "otp": primary })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let secondary = mailer.inner.last_code("new@example.com");
    let (status, _) = post(&app, "/api/email/update/verify", json!({ "frameToken": token, "step": "secondary", "otp": secondary })).await;
    assert_eq!(status, StatusCode::OK);
    assert!(h.service.vault_user_id_by_email(support::PROJECT, "new@example.com").is_some());
}

// ---- a page reload: the frame token hands a login on (resume_frame) ----

#[actix_web::test]
async fn given_a_logged_in_frame_with_a_wallet_when_a_reload_resumes_it_then_only_the_server_share_comes_and_the_token_does_not_renew_itself()
 {
    let h = harness(vec![]);
    let app = app!(h);
    // Given a frame logged in by email that bound a wallet (registered at t0, so it lives until t0 + 24 h)
    let (frame_id, token, user_id) = logged_in_frame(&h, &app, "s1", "visitor@example.com", 1).await;
    let keys = WalletKeys::from_seed(77);
    let (eip155_signature, solana_signature) = keys.sign_binding(&frame_id, &user_id);
    let (server_share, recovery_share) = ([0x11u8; 33], [0x33u8; 33]);
    let (status, bound) = post(
        &app,
        "/api/wallet",
        json!({
            "frameToken": token, "eip155Address": keys.eip155_address(), "solanaAddress": keys.solana_address(),
            "serverShare": vestibule_embedded::b64url(&server_share), "recoveryShare": vestibule_embedded::b64url(&recovery_share),
            "eip155Signature": eip155_signature, "solanaSignature": solana_signature,
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{bound}");
    let wallet_id = bound["walletId"].as_str().unwrap().to_owned();
    // and three more frames of the session, so that the logged-in one is the oldest of four
    for seed in 2..5 {
        frame_from(&app, "s1", seed, "192.0.2.1:4000").await;
    }

    // When the page reloads on its device (which holds its share) and the new frame resumes the token
    h.clock.advance_ms(23 * 3_600_000);
    let entropy = SeededEntropy::new(9);
    let (reload_key, reload_public) = test_key_pair(&entropy);
    let (status, reloaded) = post(
        &app,
        "/api/frames",
        json!({ "sessionId": "s1", "hpkePublicKey": reload_public, "deviceWallets": [wallet_id], "resumeToken": token }),
    )
    .await;
    // Then the login comes along (making room for the new frame did not drop it), with the server share
    assert_eq!(status, StatusCode::OK, "{reloaded}");
    let (reload_id, reload_token) = (reloaded["frameId"].as_str().unwrap().to_owned(), reloaded["frameToken"].as_str().unwrap().to_owned());
    assert_eq!(reloaded["login"]["wallet"]["walletId"], wallet_id.as_str(), "{reloaded}");
    assert_eq!(open_as_frame(&reload_key, &reload_id, &sealed(&reloaded["login"]["wallet"]["serverShare"])).unwrap(), server_share);
    assert!(reloaded["login"]["wallet"].get("recoveryShare").is_none(), "{reloaded}");
    // and the old token is spent.
    let (status, _) = post(&app, "/api/wallet/share", json!({ "frameToken": token })).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // When whoever holds the new token resumes it from a frame of their own that claims no device
    // share (as a thief would, to be sent the recovery share as a new device is)
    let (thief_key, thief_public) = test_key_pair(&entropy);
    let (status, stolen) = post(
        &app,
        "/api/frames",
        json!({ "sessionId": "s1", "hpkePublicKey": thief_public, "deviceWallets": [], "resumeToken": reload_token }),
    )
    .await;
    // Then they get the one share a token gives (which cannot sign), not the recovery share
    assert_eq!(status, StatusCode::OK, "{stolen}");
    let (stolen_id, stolen_token) = (stolen["frameId"].as_str().unwrap().to_owned(), stolen["frameToken"].as_str().unwrap().to_owned());
    assert_eq!(open_as_frame(&thief_key, &stolen_id, &sealed(&stolen["login"]["wallet"]["serverShare"])).unwrap(), server_share);
    assert!(stolen["login"]["wallet"].get("recoveryShare").is_none(), "{stolen}");
    for value in [&reloaded, &stolen] {
        let text = value.to_string();
        assert!(!text.contains(&vestibule_embedded::b64url(&recovery_share)), "{text}");
    }

    // And the login handed on twice still ends when the first frame's would have: t0 + 24 h.
    h.clock.advance_ms(3_600_000 - 1);
    let (status, body) = post(&app, "/api/wallet/share", json!({ "frameToken": stolen_token })).await;
    assert_eq!(status, StatusCode::OK, "alive until the first frame's expiry: {body}");
    h.clock.advance_ms(1);
    let (status, _) = post(&app, "/api/wallet/share", json!({ "frameToken": stolen_token })).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "a resumed token does not live past the first frame's 24 h");
}

#[actix_web::test]
async fn given_an_address_just_mailed_when_an_email_change_to_it_is_confirmed_then_its_code_waits_out_the_address_cooldown() {
    let h = harness(vec![]);
    let app = app!(h);
    let mails_to_target = || mails_to(&h, "target@example.com");
    // Given two visitors logged in, and one of them starting a change to target@
    let (a_frame, a_token, _) = logged_in_frame(&h, &app, "s1", "a@example.com", 81).await;
    let (c_frame, c_token, _) = logged_in_frame(&h, &app, "s3", "c@example.com", 83).await;
    h.clock.advance_ms(30_000);
    h.service.start_email_update("s1", &a_frame, "target@example.com").await.unwrap();
    let a_primary = h.mailer.last_code("a@example.com");
    // and target@ just mailed a login code by a third frame
    let (_, b_public) = test_key_pair(&SeededEntropy::new(82));
    let (_, b) = post(&app, "/api/frames", json!({ "sessionId": "s2", "hpkePublicKey": b_public })).await;
    h.service.send_login_otp("s2", b["frameId"].as_str().unwrap(), "target@example.com").await.unwrap();
    assert_eq!(mails_to_target(), 1);

    // When the first code of the change is typed within target@'s cooldown
    let (status, body) =
        post(&app, "/api/email/update/verify", json!({ "frameToken": a_token, "step": "primary", "otp": a_primary })).await;
    // Then the second code waits: refused with the wait, nothing more mailed to target@
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("email_cooldown")), "{body}");
    assert_eq!(mails_to_target(), 1);
    // And past the cooldown the same first code is still good, and target@ gets its code
    h.clock.advance_ms(30_000);
    let (status, body) =
        post(&app, "/api/email/update/verify", json!({ "frameToken": a_token, "step": "primary", "otp": a_primary })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(mails_to_target(), 2);

    // And that code starts target@'s cooldown in turn: another visitor's change to it waits
    h.service.start_email_update("s3", &c_frame, "target@example.com").await.unwrap();
    let c_primary = h.mailer.last_code("c@example.com");
    let (status, body) =
        post(&app, "/api/email/update/verify", json!({ "frameToken": c_token, "step": "primary", "otp": c_primary })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("email_cooldown")), "{body}");
    assert_eq!(mails_to_target(), 2);
}
