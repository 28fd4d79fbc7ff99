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
use vestibule_embedded::social::{SocialError, SocialIdentity, verify_id_token};
use vestibule_embedded::{LoginMethod, Notice, SeededEntropy, SocialProviderConfig, configure_frame_routes};

const TEST_KEY_PEM: &str = include_str!("fixtures/oidc-test-key.pem");
const CLIENT_ID: &str = "client-1";
const GOOD_CODE: &str = "good-code";
const NOW_SECS: u64 = 1_700_000_000;

#[derive(Default)]
struct Expected {
    code_challenge: String,
    nonce: String,
    /// Claims of the next id_tokens set over the usual ones (a null one removed).
    claims: serde_json::Map<String, Value>,
    /// The userinfo answer, instead of GitHub's usual one.
    userinfo: Option<Value>,
}

/// The usual claims of the provider's id_tokens, with `overrides` set over them (null: removed).
fn claims(issuer: &str, nonce: &str, overrides: &serde_json::Map<String, Value>) -> Value {
    let mut claims = json!({ "iss": issuer, "aud": CLIENT_ID, "sub": "oidc-subject-1", "exp": NOW_SECS + 300, "iat": NOW_SECS,
        "nonce": nonce, "email": "oidc@example.com", "email_verified": true, "preferred_username": "oidc-user" });
    for (name, value) in overrides {
        match value {
            Value::Null => claims.as_object_mut().unwrap().remove(name),
            value => claims.as_object_mut().unwrap().insert(name.clone(), value.clone()),
        };
    }
    claims
}

fn sign(claims: &Value) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some("test-key".into());
    jsonwebtoken::encode(&header, claims, &signing_key()).unwrap()
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
    let id_token = sign(&claims(&state.1, &expected.nonce, &expected.claims));
    HttpResponse::Ok().json(json!({ "access_token": "access-1", "token_type": "Bearer", "id_token": id_token }))
}

async fn userinfo(request: HttpRequest, state: web::Data<(Arc<Mutex<Expected>>, String)>) -> HttpResponse {
    let answer =
        state.0.lock().unwrap().userinfo.clone().unwrap_or_else(|| json!({ "id": 4242, "login": "octo", "email": "octo@example.com" }));
    match request.headers().get("authorization").and_then(|value| value.to_str().ok()) {
        Some("Bearer access-1") => HttpResponse::Ok().json(answer),
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
    *provider.expected.lock().unwrap() =
        Expected { code_challenge: params["code_challenge"].clone(), nonce: params["nonce"].clone(), ..Default::default() };
    let state = params["state"].clone();

    // When the provider redirects to the callback page
    let response =
        test::call_service(&app, test::TestRequest::get().uri(&format!("/oauth/callback?code={GOOD_CODE}&state={state}")).to_request())
            .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers().get("content-security-policy").unwrap(), "default-src 'self'; script-src 'self'; frame-ancestors 'none'");
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
    *provider.expected.lock().unwrap() =
        Expected { code_challenge: params["code_challenge"].clone(), nonce: params["nonce"].clone(), ..Default::default() };
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
    *provider.expected.lock().unwrap() =
        Expected { code_challenge: params["code_challenge"].clone(), nonce: "another-nonce".into(), ..Default::default() };
    let uri = format!("{FRAME_ORIGIN}/oauth/callback?code={GOOD_CODE}&state={}", params["state"]);
    let (status, body) = post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": uri }));
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("social_failed")));

    // A state of another session, a wrong code, a result URI off the frame origin
    let params = query(&h.service.start_social("s1", &frame_id, "google", HOST_ORIGIN).unwrap());
    *provider.expected.lock().unwrap() =
        Expected { code_challenge: params["code_challenge"].clone(), nonce: params["nonce"].clone(), ..Default::default() };
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
    // GitHub's /user says nothing of whether its email is verified: none is shown.
    assert_eq!((login["username"].as_str(), login.get("email").and_then(Value::as_str)), (Some("octo"), None));
}

// ------------------------------------------------------------------------------------------------
// The id_token against OpenID Connect Core 1.0 §3.1.3.7, checked directly (no provider round trip).
// (`test` is actix-web's here: the plain tests name the standard attribute in full.)

const ISSUER: &str = "https://idp.test";
const NONCE: &str = "the-login-nonce";
const NOW_MS: u64 = NOW_SECS * 1000;

fn direct_provider() -> SocialProviderConfig {
    SocialProviderConfig {
        client_id: CLIENT_ID.into(),
        client_secret: None,
        authorization_endpoint: format!("{ISSUER}/authorize"),
        token_endpoint: format!("{ISSUER}/token"),
        userinfo_endpoint: None,
        jwks_uri: Some(format!("{ISSUER}/jwks")),
        issuer: Some(ISSUER.into()),
        scopes: vec!["openid".into()],
    }
}

/// Verifies an id_token of the usual claims with `overrides` set over them (null: removed).
fn verify_with(overrides: Value, provider: &SocialProviderConfig) -> Result<SocialIdentity, SocialError> {
    let token = sign(&claims(ISSUER, NONCE, overrides.as_object().unwrap()));
    let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_value(jwks()).unwrap();
    verify_id_token(&token, &jwks, provider, NONCE, NOW_MS)
}

fn verify(overrides: Value) -> Result<SocialIdentity, SocialError> {
    verify_with(overrides, &direct_provider())
}

#[core::prelude::v1::test]
fn given_the_usual_id_token_when_verified_then_it_gives_the_subject_the_verified_email_and_the_name() {
    assert_eq!(
        verify(json!({})).unwrap(),
        SocialIdentity { subject: "oidc-subject-1".into(), email: Some("oidc@example.com".into()), username: Some("oidc-user".into()) }
    );
}

#[core::prelude::v1::test]
fn given_a_provider_without_an_issuer_when_an_id_token_is_verified_then_it_is_refused_whatever_its_iss() {
    // Given a provider configured with a JWKS but no issuer (or an empty one)
    for issuer in [None, Some(String::new())] {
        let provider = SocialProviderConfig { issuer, ..direct_provider() };
        // When a token of any issuer is verified, then it is refused
        for iss in [json!(ISSUER), json!("https://evil.example")] {
            assert!(matches!(verify_with(json!({ "iss": iss }), &provider), Err(SocialError::IdToken(_))), "{iss}");
        }
    }
    // And with the issuer configured, another issuer's token or one without `iss` is refused
    assert!(verify(json!({ "iss": "https://evil.example" })).is_err());
    assert!(verify(json!({ "iss": null })).is_err());
}

#[core::prelude::v1::test]
fn given_a_jwks_provider_without_an_issuer_when_the_service_is_built_then_it_is_refused_naming_the_provider_and_the_field() {
    // Given a configuration whose google provider has a jwks_uri and no issuer
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::config(dir.path());
    config.social.insert("google".into(), SocialProviderConfig { issuer: None, ..direct_provider() });
    // When the service is built
    let keys = vestibule_embedded::ShareKeys { server: [1; 32], recovery: [2; 32] };
    let built = vestibule_embedded::EmbeddedService::builder(
        config,
        keys,
        Arc::new(support::RecordingMailer::default()),
        Arc::new(support::RecordingSink::default()),
    )
    .build();
    // Then it is refused, the message naming social.google.issuer
    let error = built.err().expect("refused");
    assert!(error.starts_with("social.google.issuer must be set when jwks_uri is"), "{error}");
}

#[core::prelude::v1::test]
fn given_an_id_token_for_several_audiences_when_azp_is_missing_or_another_client_then_it_is_refused() {
    // Given tokens whose azp is missing while aud has several values, or names another client
    for overrides in [
        json!({ "aud": [CLIENT_ID, "other-client"] }),
        json!({ "aud": [CLIENT_ID, "other-client"], "azp": "other-client" }),
        json!({ "aud": CLIENT_ID, "azp": "other-client" }),
        json!({ "aud": [CLIENT_ID], "azp": "" }),
        json!({ "aud": ["other-client"], "azp": CLIENT_ID }),
    ] {
        // When verified, then each is refused
        assert!(matches!(verify(overrides.clone()), Err(SocialError::IdToken(_))), "{overrides}");
    }
    // And several audiences with azp = the client id, or one audience with or without it, pass
    assert!(verify(json!({ "aud": [CLIENT_ID, "other-client"], "azp": CLIENT_ID })).is_ok());
    assert!(verify(json!({ "aud": [CLIENT_ID] })).is_ok());
    assert!(verify(json!({ "azp": CLIENT_ID })).is_ok());
}

#[core::prelude::v1::test]
fn given_an_id_token_not_valid_yet_or_issued_in_the_future_when_verified_then_it_is_refused() {
    let skew = vestibule_embedded::social::CLOCK_SKEW_MS / 1000;
    // Given tokens whose nbf or iat is later than the service's clock by more than the skew
    for overrides in [
        json!({ "nbf": NOW_SECS + skew + 1 }),
        json!({ "nbf": NOW_SECS + 3600, "exp": NOW_SECS + 7200 }),
        json!({ "iat": NOW_SECS + skew + 1 }),
        json!({ "iat": NOW_SECS + 3600, "exp": NOW_SECS + 7200 }),
        json!({ "iat": null }),
    ] {
        // When verified, then each is refused
        assert!(matches!(verify(overrides.clone()), Err(SocialError::IdToken(_))), "{overrides}");
    }
    // And within the skew, or in the past, they pass; an expired token still does not
    assert!(verify(json!({ "nbf": NOW_SECS + skew, "iat": NOW_SECS + skew })).is_ok());
    assert!(verify(json!({ "nbf": NOW_SECS - 10, "iat": NOW_SECS - 10 })).is_ok());
    assert!(verify(json!({ "exp": NOW_SECS })).is_err());
}

#[core::prelude::v1::test]
fn given_an_id_token_with_an_empty_overlong_or_unprintable_subject_when_verified_then_it_is_refused() {
    // Given tokens whose sub is empty, longer than 255 characters, non-ASCII or with a control character
    for sub in [String::new(), "s".repeat(256), "sübject".into(), "sub\nject".into()] {
        // When verified, then each is refused
        assert!(matches!(verify(json!({ "sub": sub })), Err(SocialError::IdToken(_))), "{sub:?}");
    }
    // And 255 ASCII characters pass
    assert_eq!(verify(json!({ "sub": "s".repeat(255) })).unwrap().subject.len(), 255);
}

#[core::prelude::v1::test]
fn given_an_id_token_whose_email_is_not_stated_verified_when_verified_then_it_carries_no_email() {
    // Given tokens whose email_verified is false, absent or not a boolean true
    for verified in [json!(false), Value::Null, json!("false"), json!(1)] {
        // When verified, then the identity stands without the email
        let identity = verify(json!({ "email_verified": verified })).unwrap();
        assert_eq!((identity.subject.as_str(), identity.email), ("oidc-subject-1", None), "{verified}");
    }
    // And Apple's string "true" counts as verified
    assert_eq!(verify(json!({ "email_verified": "true" })).unwrap().email.as_deref(), Some("oidc@example.com"));
    // And a verified address or a name that cannot be shown is dropped, the identity standing
    let identity = verify(json!({ "email": "a@example.com\r\nBcc: b@example.com", "preferred_username": "evil\u{202E}txt.exe" })).unwrap();
    assert_eq!((identity.email, identity.username), (None, None));
}

#[actix_web::test]
async fn given_an_unverified_email_at_the_provider_when_the_visitor_logs_in_then_the_login_carries_no_email() {
    let provider = start_provider();
    let h = harness(vec![("google", oidc(&provider))]);
    let app = app!(h);
    let (_, public) = test_key_pair(&SeededEntropy::new(4));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    let login = |verified: Value| {
        let params = query(&h.service.start_social("s1", &frame_id, "google", HOST_ORIGIN).unwrap());
        let mut claims = serde_json::Map::new();
        claims.insert("email_verified".into(), verified);
        *provider.expected.lock().unwrap() =
            Expected { code_challenge: params["code_challenge"].clone(), nonce: params["nonce"].clone(), claims, userinfo: None };
        json!({ "frameToken": token, "resultUri": format!("{FRAME_ORIGIN}/oauth/callback?code={GOOD_CODE}&state={}", params["state"]) })
    };

    // Given the provider says the account's email is not verified, when the visitor logs in
    let (status, body) = post!(app, "/api/social/complete", login(json!(false)));
    // Then the login stands, and neither the frame nor the session is told an email
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!((body["username"].as_str(), body.get("email").and_then(Value::as_str)), (Some("oidc-user"), None));
    assert!(matches!(&h.sink.take()[..], [(_, Notice::LoginVerified { email: None, .. })]));

    // And once the provider says it is verified, it is shown
    let (status, body) = post!(app, "/api/social/complete", login(json!(true)));
    assert_eq!((status, body["email"].as_str()), (StatusCode::OK, Some("oidc@example.com")), "{body}");
    assert!(matches!(&h.sink.take()[..], [(_, Notice::LoginVerified { email: Some(e), .. })] if e == "oidc@example.com"));
}

#[actix_web::test]
async fn given_a_userinfo_answer_with_an_empty_subject_when_completed_then_it_fails_to_connect() {
    let provider = start_provider();
    let h = harness(vec![("discord", userinfo_only(&provider))]);
    let app = app!(h);
    let (_, public) = test_key_pair(&SeededEntropy::new(5));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    // Given a provider whose userinfo names no one (an empty id, or none at all)
    for answer in [json!({ "id": "", "username": "nobody" }), json!({ "username": "nobody" })] {
        let params = query(&h.service.start_social("s1", &frame_id, "discord", HOST_ORIGIN).unwrap());
        *provider.expected.lock().unwrap() =
            Expected { code_challenge: params["code_challenge"].clone(), userinfo: Some(answer.clone()), ..Default::default() };
        // When the visitor completes the login
        let uri = format!("{FRAME_ORIGIN}/oauth/callback?code={GOOD_CODE}&state={}", params["state"]);
        let (status, body) = post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": uri }));
        // Then it fails to connect, and no one is logged in
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("social_failed")), "{answer}");
        assert!(matches!(&h.sink.take()[..], [(_, Notice::SocialFailed { .. })]), "{answer}");
    }
    // And Discord's verified email is shown, its unverified one not
    for (verified, shown) in [(true, Some("d@example.com")), (false, None)] {
        let params = query(&h.service.start_social("s1", &frame_id, "discord", HOST_ORIGIN).unwrap());
        let answer = json!({ "id": "80351110224678912", "username": "nelly", "email": "d@example.com", "verified": verified });
        *provider.expected.lock().unwrap() =
            Expected { code_challenge: params["code_challenge"].clone(), userinfo: Some(answer), ..Default::default() };
        let uri = format!("{FRAME_ORIGIN}/oauth/callback?code={GOOD_CODE}&state={}", params["state"]);
        let (status, body) = post!(app, "/api/social/complete", json!({ "frameToken": token, "resultUri": uri }));
        assert_eq!((status, body.get("email").and_then(Value::as_str)), (StatusCode::OK, shown), "{body}");
    }
}
