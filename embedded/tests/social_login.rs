//! Social login through the frame API against an in-process OAuth 2.0 / OIDC provider: an OIDC
//! provider issuing RS256 id_tokens (a fixed test key) and a userinfo-only provider (GitHub's shape).

mod support;

use std::sync::{Arc, Mutex};

use actix_web::http::StatusCode;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, test, web};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{FRAME_ORIGIN, HOST_ORIGIN, harness};
use vestibule_embedded::seal::test_key_pair;
use vestibule_embedded::{LoginMethod, Notice, SeededEntropy, SocialProviderConfig, configure_frame_routes};

const TEST_KEY_PEM: &str = include_str!("fixtures/oidc-test-key.pem");
const CLIENT_ID: &str = "client-1";
const GOOD_CODE: &str = "good-code";
const NOW_SECS: u64 = 1_700_000_000;

#[derive(Default)]
struct Expected {
    code_challenge: String,
    nonce: String,
}

struct Provider {
    base: String,
    issuer: String,
    expected: Arc<Mutex<Expected>>,
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn jwks() -> Value {
    use rsa::pkcs8::DecodePrivateKey;
    use rsa::traits::PublicKeyParts;
    let key = rsa::RsaPrivateKey::from_pkcs8_pem(TEST_KEY_PEM).unwrap();
    json!({ "keys": [{ "kty": "RSA", "kid": "test-key", "alg": "RS256", "use": "sig",
        "n": b64url(&key.n().to_bytes_be()), "e": b64url(&key.e().to_bytes_be()) }] })
}

fn signing_key() -> jsonwebtoken::EncodingKey {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    use rsa::pkcs8::DecodePrivateKey;
    let key = rsa::RsaPrivateKey::from_pkcs8_pem(TEST_KEY_PEM).unwrap();
    jsonwebtoken::EncodingKey::from_rsa_der(key.to_pkcs1_der().unwrap().as_bytes())
}

async fn token(form: web::Form<Vec<(String, String)>>, state: web::Data<(Arc<Mutex<Expected>>, String)>) -> HttpResponse {
    let field = |name: &str| form.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone()).unwrap_or_default();
    let expected = state.0.lock().unwrap();
    let pkce_ok = b64url(&Sha256::digest(field("code_verifier").as_bytes())) == expected.code_challenge;
    if field("grant_type") != "authorization_code" || field("code") != GOOD_CODE || field("client_id") != CLIENT_ID || !pkce_ok {
        return HttpResponse::BadRequest().json(json!({ "error": "invalid_grant" }));
    }
    if field("redirect_uri") != format!("{FRAME_ORIGIN}/oauth/callback") {
        return HttpResponse::BadRequest().json(json!({ "error": "invalid_redirect" }));
    }
    let claims = json!({ "iss": state.1, "aud": CLIENT_ID, "sub": "oidc-subject-1", "exp": NOW_SECS + 300, "iat": NOW_SECS,
        "nonce": expected.nonce, "email": "oidc@example.com", "preferred_username": "oidc-user" });
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("test-key".into());
    let id_token = jsonwebtoken::encode(&header, &claims, &signing_key()).unwrap();
    HttpResponse::Ok().json(json!({ "access_token": "access-1", "token_type": "Bearer", "id_token": id_token }))
}

async fn userinfo(request: HttpRequest) -> HttpResponse {
    match request.headers().get("authorization").and_then(|value| value.to_str().ok()) {
        Some("Bearer access-1") => HttpResponse::Ok().json(json!({ "id": 4242, "login": "octo", "email": "octo@example.com" })),
        _ => HttpResponse::Unauthorized().finish(),
    }
}

fn start_provider() -> Provider {
    let expected = Arc::new(Mutex::new(Expected::default()));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let issuer = format!("http://localhost:{port}");
    let state = web::Data::new((expected.clone(), issuer.clone()));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .route("/token", web::post().to(token))
            .route("/jwks", web::get().to(|| async { HttpResponse::Ok().json(jwks()) }))
            .route("/userinfo", web::get().to(userinfo))
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    actix_web::rt::spawn(server);
    Provider { base: format!("http://127.0.0.1:{port}"), issuer, expected }
}

fn oidc(provider: &Provider) -> SocialProviderConfig {
    SocialProviderConfig {
        client_id: CLIENT_ID.into(),
        client_secret: Some("secret".into()),
        authorization_endpoint: format!("{}/authorize", provider.base),
        token_endpoint: format!("{}/token", provider.base),
        userinfo_endpoint: None,
        jwks_uri: Some(format!("{}/jwks", provider.base)),
        issuer: Some(provider.issuer.clone()),
        scopes: vec!["openid".into(), "email".into()],
    }
}

fn userinfo_only(provider: &Provider) -> SocialProviderConfig {
    SocialProviderConfig {
        jwks_uri: None,
        issuer: None,
        userinfo_endpoint: Some(format!("{}/userinfo", provider.base)),
        scopes: vec!["read:user".into()],
        ..oidc(provider)
    }
}

fn query(url: &str) -> std::collections::HashMap<String, String> {
    url::Url::parse(url).unwrap().query_pairs().into_owned().collect()
}

macro_rules! app {
    ($harness:expr) => {{
        let service = $harness.service.clone();
        test::init_service(App::new().configure(move |cfg| configure_frame_routes(cfg, service))).await
    }};
}

macro_rules! post {
    ($app:expr, $path:expr, $body:expr) => {{
        let request = test::TestRequest::post().uri($path).insert_header(("origin", FRAME_ORIGIN)).set_json($body).to_request();
        let response = test::call_service(&$app, request).await;
        let status = response.status();
        let body: Value = serde_json::from_slice(&test::read_body(response).await).unwrap_or(Value::Null);
        (status, body)
    }};
}

#[actix_web::test]
async fn given_an_oidc_provider_when_the_visitor_completes_the_popup_then_the_frame_is_logged_in_by_the_verified_id_token() {
    let provider = start_provider();
    let h = harness(vec![("google", oidc(&provider)), ("github", userinfo_only(&provider))]);
    let app = app!(h);
    let (_, public) = test_key_pair(&SeededEntropy::new(1));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());

    // Given a started login
    let url = h.service.start_social("s1", &frame_id, "google", HOST_ORIGIN).unwrap();
    let params = query(&url);
    assert!(url.starts_with(&format!("{}/authorize?", provider.base)));
    assert_eq!(params["client_id"], CLIENT_ID);
    *provider.expected.lock().unwrap() = Expected { code_challenge: params["code_challenge"].clone(), nonce: params["nonce"].clone() };
    let state = params["state"].clone();

    // When the provider redirects to the callback page
    let response =
        test::call_service(&app, test::TestRequest::get().uri(&format!("/oauth/callback?code={GOOD_CODE}&state={state}")).to_request())
            .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers().get("content-security-policy").unwrap(), "default-src 'self'; script-src 'self'");
    let page = String::from_utf8(test::read_body(response).await.to_vec()).unwrap();
    assert!(page.contains(r#"data-host-origin="https://host.example""#), "{page}");
    assert!(page.contains(r#"<script src="/frame/assets/callback.js"></script>"#));

    // And the frame completes with the result URI
    let result_uri = format!("{FRAME_ORIGIN}/oauth/callback?code={GOOD_CODE}&state={state}");
    let (status, login) = post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": result_uri }));

    // Then it is logged in and the session hears who
    assert_eq!(status, StatusCode::OK, "{login}");
    assert_eq!(login["username"], "oidc-user");
    assert_eq!(login["wallet"], Value::Null);
    let notices = h.sink.take();
    assert!(
        matches!(&notices[..], [(s, Notice::LoginVerified { method: LoginMethod::Social(p), username: Some(u), .. })] if s == "s1" && p == "google" && u == "oidc-user"),
        "{notices:?}"
    );

    // And the same state cannot be spent twice
    let (status, body) = post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": result_uri }));
    assert_eq!(
        (status, body["error"]["code"].as_str(), body["error"]["message"].as_str()),
        (StatusCode::BAD_REQUEST, Some("social_failed"), Some("Failed to connect"))
    );
    assert_eq!(h.sink.take(), vec![("s1".to_owned(), Notice::SocialFailed { message: "Failed to connect".into() })]);

    // A second login of the same provider account is the same user.
    let url = h.service.start_social("s1", &frame_id, "google", HOST_ORIGIN).unwrap();
    let params = query(&url);
    *provider.expected.lock().unwrap() = Expected { code_challenge: params["code_challenge"].clone(), nonce: params["nonce"].clone() };
    let (_, again) = post!(
        app,
        "/api/social/complete",
        json!({ "frameToken": token, "resultUri": format!("{FRAME_ORIGIN}/oauth/callback?code={GOOD_CODE}&state={}", params["state"]) })
    );
    assert_eq!(again["userId"], login["userId"]);
}

#[actix_web::test]
async fn given_a_tampered_login_when_completed_then_it_fails_to_connect() {
    let provider = start_provider();
    let h = harness(vec![("google", oidc(&provider))]);
    let app = app!(h);
    let (_, public) = test_key_pair(&SeededEntropy::new(2));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    let (_, other) = post!(app, "/api/frames", json!({ "sessionId": "s2", "hpkePublicKey": public }));
    let other_token = other["frameToken"].as_str().unwrap().to_owned();

    // A wrong nonce in the id_token
    let params = query(&h.service.start_social("s1", &frame_id, "google", HOST_ORIGIN).unwrap());
    *provider.expected.lock().unwrap() = Expected { code_challenge: params["code_challenge"].clone(), nonce: "another-nonce".into() };
    let uri = format!("{FRAME_ORIGIN}/oauth/callback?code={GOOD_CODE}&state={}", params["state"]);
    let (status, body) = post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": uri }));
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("social_failed")));

    // A state of another session, a wrong code, a result URI off the frame origin
    let params = query(&h.service.start_social("s1", &frame_id, "google", HOST_ORIGIN).unwrap());
    *provider.expected.lock().unwrap() = Expected { code_challenge: params["code_challenge"].clone(), nonce: params["nonce"].clone() };
    let uri = format!("{FRAME_ORIGIN}/oauth/callback?code={GOOD_CODE}&state={}", params["state"]);
    let (status, _) = post!(app, "/api/social/complete", json!({ "frameToken": other_token, "resultUri": uri }));
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) =
        post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": uri.replace(FRAME_ORIGIN, "https://evil.example") }));
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": uri.replace(GOOD_CODE, "bad-code") }));
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // The state was spent by the failed attempt; the right code no longer works either.
    let (status, _) = post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": uri }));
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(h.sink.take().iter().all(|(_, notice)| matches!(notice, Notice::SocialFailed { .. })));

    // An unconfigured provider cannot start.
    let error = h.service.start_social("s1", &frame_id, "facebook", HOST_ORIGIN).unwrap_err();
    assert_eq!(error.to_string(), "Failed to initiate social connection");
}

#[actix_web::test]
async fn given_a_userinfo_only_provider_when_completed_then_the_identity_comes_from_userinfo() {
    let provider = start_provider();
    let h = harness(vec![("github", userinfo_only(&provider))]);
    let app = app!(h);
    let (_, public) = test_key_pair(&SeededEntropy::new(3));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    let params = query(&h.service.start_social("s1", &frame_id, "github", HOST_ORIGIN).unwrap());
    assert!(!params.contains_key("nonce"));
    provider.expected.lock().unwrap().code_challenge = params["code_challenge"].clone();
    let uri = format!("{FRAME_ORIGIN}/oauth/callback?code={GOOD_CODE}&state={}", params["state"]);
    let (status, login) = post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": uri }));
    assert_eq!(status, StatusCode::OK, "{login}");
    assert_eq!((login["username"].as_str(), login["email"].as_str()), (Some("octo"), Some("octo@example.com")));
}
