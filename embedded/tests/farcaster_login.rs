//! Sign In With Farcaster through the frame API, against an in-process fake relay (the three
//! /v1/channel routes over HTTP) and a fake custody lookup. The poll interval is a millisecond and
//! the bound is a number of polls, so nothing depends on the machine's speed.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, test, web};
use alloy_primitives::Address;
use serde_json::{Value, json};
use support::{FRAME_ORIGIN, RecordingMailer, RecordingSink};
use vestibule_embedded::farcaster::{CustodyLookup, FarcasterError};
use vestibule_embedded::seal::test_key_pair;
use vestibule_embedded::{
    EmbeddedService, FarcasterConfig, LoginMethod, ManualClock, Notice, SeededEntropy, ShareKeys, configure_frame_routes,
};

const NOW_MS: u64 = 1_700_000_000_000;
const FID: u64 = 4242;

#[derive(Default)]
struct Channel {
    request: Value,
    completed: Option<Value>,
    pending_polls_left: u32,
}

#[derive(Default)]
struct Relay {
    channels: HashMap<String, Channel>,
    next: u32,
    /// The URL the next channels are answered with (`{token}` replaced), instead of Warpcast's.
    url: Option<String>,
    /// How long each status answer takes (a slow relay).
    status_delay: Option<Duration>,
    /// Status requests received.
    polls: u32,
}

async fn create_channel(body: web::Json<Value>, relay: web::Data<Mutex<Relay>>) -> HttpResponse {
    let mut relay = relay.lock().unwrap();
    relay.next += 1;
    let token = format!("channel-{}", relay.next);
    let nonce = body["nonce"].clone();
    relay.channels.insert(token.clone(), Channel { request: body.into_inner(), completed: None, pending_polls_left: 2 });
    let url = relay.url.as_deref().unwrap_or("https://warpcast.com/~/siwf?channelToken={token}").replace("{token}", &token);
    HttpResponse::Created().json(json!({ "channelToken": token, "url": url, "nonce": nonce }))
}

async fn channel_status(request: HttpRequest, relay: web::Data<Mutex<Relay>>) -> HttpResponse {
    let token = request
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned();
    let delay = {
        let mut relay = relay.lock().unwrap();
        relay.polls += 1;
        relay.status_delay
    };
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let mut relay = relay.lock().unwrap();
    let Some(channel) = relay.channels.get_mut(&token) else {
        return HttpResponse::Unauthorized().finish();
    };
    if channel.pending_polls_left > 0 {
        channel.pending_polls_left -= 1;
        return HttpResponse::Accepted().json(json!({ "state": "pending" }));
    }
    match &channel.completed {
        Some(done) => HttpResponse::Ok().json(done),
        None => HttpResponse::Accepted().json(json!({ "state": "pending" })),
    }
}

fn start_relay() -> (String, Arc<web::Data<Mutex<Relay>>>) {
    let relay = web::Data::new(Mutex::new(Relay::default()));
    let shared = Arc::new(relay.clone());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(relay.clone())
            .route("/v1/channel", web::post().to(create_channel))
            .route("/v1/channel/status", web::get().to(channel_status))
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    actix_web::rt::spawn(server);
    (format!("http://127.0.0.1:{port}"), shared)
}

/// The chain's answers: custody by fid, and the auth addresses in force (the KeyRegistry's).
struct FakeCustody(HashMap<u64, Address>, Vec<(u64, Address)>);

#[async_trait::async_trait]
impl CustodyLookup for FakeCustody {
    async fn custody_of(&self, fid: u64) -> Result<Address, FarcasterError> {
        self.0.get(&fid).copied().ok_or_else(|| FarcasterError::Chain("unknown fid".into()))
    }
    async fn is_auth_address(&self, fid: u64, address: Address) -> Result<bool, FarcasterError> {
        Ok(self.1.contains(&(fid, address)))
    }
}

/// The key of the fid's one auth address (not its custody).
fn auth_key() -> k256::ecdsa::SigningKey {
    key(42)
}

fn key(seed: u8) -> k256::ecdsa::SigningKey {
    k256::ecdsa::SigningKey::from_bytes(&[seed; 32].into()).unwrap()
}

fn address(key: &k256::ecdsa::SigningKey) -> Address {
    Address::from_public_key(key.verifying_key())
}

/// The FIP-11 message a Farcaster app signs for a channel.
fn siwf_message(request: &Value, signer: Address, fid: u64, nonce_override: Option<&str>) -> String {
    let nonce = nonce_override.unwrap_or(request["nonce"].as_str().unwrap());
    format!(
        "{domain} wants you to sign in with your Ethereum account:\n{signer}\n\nFarcaster Auth\n\nURI: {uri}\nVersion: 1\nChain ID: 10\nNonce: {nonce}\nIssued At: {issued}\nExpiration Time: {exp}\nNot Before: {nbf}\nResources:\n- farcaster://fid/{fid}",
        domain = request["domain"].as_str().unwrap(),
        signer = signer.to_checksum(None),
        uri = request["siweUri"].as_str().unwrap(),
        issued = request["notBefore"].as_str().unwrap(),
        exp = request["expirationTime"].as_str().unwrap(),
        nbf = request["notBefore"].as_str().unwrap(),
    )
}

fn sign(key: &k256::ecdsa::SigningKey, message: &str) -> String {
    let digest = alloy_primitives::eip191_hash_message(message.as_bytes());
    let (signature, recovery) = key.sign_prehash_recoverable(digest.as_slice()).unwrap();
    let mut bytes = signature.to_bytes().to_vec();
    bytes.push(27 + recovery.to_byte());
    format!("0x{}", hex::encode(bytes))
}

/// The app signs the channel's message with `signer` for `fid`.
fn complete(relay: &web::Data<Mutex<Relay>>, token: &str, signer: &k256::ecdsa::SigningKey, fid: u64, nonce: Option<&str>) {
    complete_named(relay, token, signer, fid, nonce, json!("alice"));
}

/// As [`complete`], the relay naming the user `username`.
fn complete_named(
    relay: &web::Data<Mutex<Relay>>,
    token: &str,
    signer: &k256::ecdsa::SigningKey,
    fid: u64,
    nonce: Option<&str>,
    username: Value,
) {
    let mut relay = relay.lock().unwrap();
    let channel = relay.channels.get_mut(token).unwrap();
    let message = siwf_message(&channel.request, address(signer), fid, nonce);
    channel.completed = Some(json!({
        "state": "completed", "message": message, "signature": sign(signer, &message),
        "fid": fid, "username": username, "displayName": "Alice", "custody": address(signer).to_checksum(None),
    }));
}

struct World {
    service: web::Data<EmbeddedService>,
    sink: Arc<RecordingSink>,
    relay: Arc<web::Data<Mutex<Relay>>>,
    clock: Arc<ManualClock>,
    _dir: tempfile::TempDir,
}

fn world(custody: Address, poll_timeout: Duration) -> World {
    let (relay_url, relay) = start_relay();
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::config(dir.path());
    config.farcaster = Some(FarcasterConfig {
        relay_url,
        rpc_url: "http://127.0.0.1:9/unused".into(),
        id_registry: vestibule_embedded::config::FARCASTER_ID_REGISTRY.into(),
        key_registry: None,
        domain: None,
        siwe_uri: None,
        poll_interval: Duration::from_millis(1),
        poll_timeout,
    });
    let sink = Arc::new(RecordingSink::default());
    let clock = Arc::new(ManualClock::at(NOW_MS));
    let service = EmbeddedService::builder(
        config,
        ShareKeys { server: [1; 32], recovery: [2; 32] },
        Arc::new(RecordingMailer::default()),
        sink.clone(),
    )
    .clock(clock.clone())
    .entropy(Arc::new(SeededEntropy::new(7)))
    .custody_lookup(Arc::new(FakeCustody(HashMap::from([(FID, custody)]), vec![(FID, address(&auth_key()))])))
    .build()
    .unwrap();
    World { service: web::Data::new(service), sink, relay, clock, _dir: dir }
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

fn channel_token(url: &str) -> String {
    url.split("channelToken=").nth(1).unwrap().to_owned()
}

#[actix_web::test]
async fn given_a_channel_when_the_custody_key_signs_then_the_frame_is_logged_in_as_the_fid() {
    let custody = key(5);
    let w = world(address(&custody), Duration::from_secs(120));
    let service = w.service.clone();
    let app = test::init_service(App::new().configure(move |cfg| configure_frame_routes(cfg, service))).await;
    let (_, public) = test_key_pair(&SeededEntropy::new(1));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());

    // Given a started login: the relay was asked for the frame origin's domain and URI.
    let url = w.service.start_farcaster("s1", &frame_id).await.unwrap();
    assert!(url.starts_with("https://warpcast.com/~/siwf?channelToken="), "{url}");
    let channel = channel_token(&url);
    let request = w.relay.lock().unwrap().channels[&channel].request.clone();
    assert_eq!(request["domain"], "frame.test:8090");
    assert_eq!(request["siweUri"], FRAME_ORIGIN);
    assert_eq!(request["nonce"].as_str().unwrap().len(), 32);

    // When the Farcaster app signs with the fid's custody key (after two pending polls)
    complete(&w.relay, &channel, &custody, FID, None);
    let (status, login) = post!(app, "/api/farcaster/complete", json!({ "frameToken": token }));

    // Then the frame is logged in, and the session hears of a Farcaster login named by the relay
    assert_eq!(status, StatusCode::OK, "{login}");
    assert_eq!(login["username"], "alice");
    assert_eq!(login["wallet"], Value::Null);
    let notices = w.sink.take();
    assert!(
        matches!(&notices[..], [(s, Notice::LoginVerified { method: LoginMethod::Social(p), username: Some(u), .. })] if s == "s1" && p == "farcaster" && u == "alice"),
        "{notices:?}"
    );

    // And the channel is spent: completing again fails to connect to farcaster.
    let (status, body) = post!(app, "/api/farcaster/complete", json!({ "frameToken": token }));
    assert_eq!(
        (status, body["error"]["code"].as_str(), body["error"]["message"].as_str()),
        (StatusCode::BAD_REQUEST, Some("farcaster_failed"), Some("Failed to connect to farcaster"))
    );
    assert_eq!(w.sink.take(), vec![("s1".to_owned(), Notice::SocialFailed { message: "Failed to connect to farcaster".into() })]);

    // A second login of the same fid is the same user.
    let url = w.service.start_farcaster("s1", &frame_id).await.unwrap();
    complete(&w.relay, &channel_token(&url), &custody, FID, None);
    let (_, again) = post!(app, "/api/farcaster/complete", json!({ "frameToken": token }));
    assert_eq!(again["userId"], login["userId"]);
}

#[actix_web::test]
async fn given_a_channel_when_the_signature_or_message_is_wrong_then_it_fails_to_connect_to_farcaster() {
    let custody = key(5);
    let w = world(address(&custody), Duration::from_secs(120));
    let service = w.service.clone();
    let app = test::init_service(App::new().configure(move |cfg| configure_frame_routes(cfg, service))).await;
    let (_, public) = test_key_pair(&SeededEntropy::new(2));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());

    let failed = |(status, body): (StatusCode, Value)| {
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("farcaster_failed")), "{body}");
    };
    // A key that is not the fid's custody
    let url = w.service.start_farcaster("s1", &frame_id).await.unwrap();
    complete(&w.relay, &channel_token(&url), &key(6), FID, None);
    failed(post!(app, "/api/farcaster/complete", json!({ "frameToken": token })));
    // The custody key, but another nonce
    let url = w.service.start_farcaster("s1", &frame_id).await.unwrap();
    complete(&w.relay, &channel_token(&url), &custody, FID, Some("0123456789abcdef0123456789abcdef"));
    failed(post!(app, "/api/farcaster/complete", json!({ "frameToken": token })));
    // The custody key for another fid (no custody known)
    let url = w.service.start_farcaster("s1", &frame_id).await.unwrap();
    complete(&w.relay, &channel_token(&url), &custody, FID + 1, None);
    failed(post!(app, "/api/farcaster/complete", json!({ "frameToken": token })));
    // Signed after the message expired (the service's clock moved past 10 minutes)
    let url = w.service.start_farcaster("s1", &frame_id).await.unwrap();
    complete(&w.relay, &channel_token(&url), &custody, FID, None);
    w.clock.advance_ms(10 * 60 * 1000);
    failed(post!(app, "/api/farcaster/complete", json!({ "frameToken": token })));
    // No pending channel at all
    failed(post!(app, "/api/farcaster/complete", json!({ "frameToken": token })));
    assert!(w.sink.take().iter().all(|(_, n)| *n == Notice::SocialFailed { message: "Failed to connect to farcaster".into() }));
    // An unknown frame token is refused as such.
    let (status, _) = post!(app, "/api/farcaster/complete", json!({ "frameToken": "nope" }));
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Another session's frame cannot start a channel.
    assert!(w.service.start_farcaster("s2", &frame_id).await.is_err());
}

#[actix_web::test]
async fn given_a_channel_nobody_completes_when_polled_then_it_gives_up_after_the_bound() {
    let custody = key(5);
    let w = world(address(&custody), Duration::from_millis(20));
    let service = w.service.clone();
    let app = test::init_service(App::new().configure(move |cfg| configure_frame_routes(cfg, service))).await;
    let (_, public) = test_key_pair(&SeededEntropy::new(3));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    w.service.start_farcaster("s1", &frame_id).await.unwrap();
    let (status, body) = post!(app, "/api/farcaster/complete", json!({ "frameToken": token }));
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("farcaster_failed")));
}

#[actix_web::test]
async fn given_a_relay_that_answers_slowly_when_polled_then_it_gives_up_once_the_poll_timeout_has_passed() {
    // Given a relay whose every status answer takes 30 ms, polled every millisecond for 100 ms (at
    // most 101 polls: without a bound in time, 101 slow answers; with the real client's 10 s
    // timeout per answer, about 20 minutes for the defaults)
    let custody = key(5);
    let w = world(address(&custody), Duration::from_millis(100));
    w.relay.lock().unwrap().status_delay = Some(Duration::from_millis(30));
    let service = w.service.clone();
    let app = test::init_service(App::new().configure(move |cfg| configure_frame_routes(cfg, service))).await;
    let (_, public) = test_key_pair(&SeededEntropy::new(3));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    w.service.start_farcaster("s1", &frame_id).await.unwrap();

    // When the frame waits for the login
    let (status, body) = post!(app, "/api/farcaster/complete", json!({ "frameToken": token }));

    // Then it fails once 100 ms have passed, after a few polls: never all 101 (however slow the
    // machine, a slower one polls fewer times in 100 ms)
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("farcaster_failed")));
    let polls = w.relay.lock().unwrap().polls;
    assert!((2..101).contains(&polls), "{polls} polls");
}

#[actix_web::test]
async fn given_no_farcaster_configuration_when_started_then_it_fails_to_connect_to_farcaster() {
    let h = support::harness(vec![]);
    let (_, public) = test_key_pair(&SeededEntropy::new(4));
    let (frame_id, _) = h.service.register_frame("s1", &public, vec![], None).await.unwrap();
    let error = h.service.start_farcaster("s1", &frame_id).await.unwrap_err();
    assert_eq!(error.to_string(), "Failed to connect to farcaster");
}

#[actix_web::test]
async fn given_a_channel_when_an_auth_address_of_the_fid_signs_then_the_frame_is_logged_in_as_the_fid() {
    let w = world(address(&key(5)), Duration::from_secs(120));
    let service = w.service.clone();
    let app = test::init_service(App::new().configure(move |cfg| configure_frame_routes(cfg, service))).await;
    let (_, public) = test_key_pair(&SeededEntropy::new(1));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    // Given a started login, when the fid's auth address (not its custody) signs
    let url = w.service.start_farcaster("s1", &frame_id).await.unwrap();
    complete(&w.relay, &channel_token(&url), &auth_key(), FID, None);
    let (status, login) = post!(app, "/api/farcaster/complete", json!({ "frameToken": token }));
    // Then the frame is logged in as the fid
    assert_eq!(status, StatusCode::OK, "{login}");
    assert!(matches!(&w.sink.take()[..], [(_, Notice::LoginVerified { .. })]));
}

#[actix_web::test]
async fn given_a_relay_answering_a_channel_url_that_is_not_a_safe_https_link_when_started_then_it_fails_to_connect_to_farcaster() {
    let w = world(address(&key(5)), Duration::from_secs(120));
    let (_, public) = test_key_pair(&SeededEntropy::new(5));
    let (frame_id, token) = w.service.register_frame("s1", &public, vec![], None).await.unwrap();
    // Given a relay whose channel URL is not https, carries credentials, hides characters or is too long
    for url in [
        "http://warpcast.com/~/siwf?channelToken={token}",
        "javascript:alert(document.domain)//{token}",
        "data:text/html,{token}",
        "https://warpcast.com@evil.example/~/siwf?channelToken={token}",
        "https://user:pass@warpcast.com/~/siwf?channelToken={token}",
        "https://warpcast.com/~/siwf?channelToken={token}\nhttps://evil.example/",
        "https://warpcast.com/~/siwf?channelToken={token} ",
        &format!("https://warpcast.com/~/siwf?channelToken={{token}}&pad={}", "a".repeat(512)),
    ] {
        w.relay.lock().unwrap().url = Some(url.to_owned());
        // When a login starts, then it fails to connect to farcaster and no channel is pending
        let error = w.service.start_farcaster("s1", &frame_id).await.unwrap_err();
        assert_eq!(error.to_string(), "Failed to connect to farcaster", "{url:?}");
    }
    assert!(w.service.complete_farcaster(&token).await.is_err(), "nothing was left pending");
    // And the relay's https URL is passed on as it is
    w.relay.lock().unwrap().url = Some("https://farcaster.xyz/~/siwf?channelToken={token}".into());
    assert!(w.service.start_farcaster("s1", &frame_id).await.unwrap().starts_with("https://farcaster.xyz/~/siwf?channelToken=channel-"));
}

#[actix_web::test]
async fn given_a_relay_username_that_cannot_be_shown_when_the_custody_key_signs_then_the_login_stands_without_it() {
    let custody = key(5);
    let w = world(address(&custody), Duration::from_secs(120));
    let service = w.service.clone();
    let app = test::init_service(App::new().configure(move |cfg| configure_frame_routes(cfg, service))).await;
    let (_, public) = test_key_pair(&SeededEntropy::new(6));
    let (_, frame) = post!(app, "/api/frames", json!({ "sessionId": "s1", "hpkePublicKey": public }));
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    // Given relay usernames with bidirectional or control characters, blank or too long
    for username in [json!("alice\u{202E}gpj.exe"), json!("ali\nce"), json!("\u{0007}"), json!("  "), json!("a".repeat(65))] {
        let url = w.service.start_farcaster("s1", &frame_id).await.unwrap();
        // When the custody key signs
        complete_named(&w.relay, &channel_token(&url), &custody, FID, None, username.clone());
        let (status, login) = post!(app, "/api/farcaster/complete", json!({ "frameToken": token }));
        // Then the frame is logged in as the fid, with no username shown
        assert_eq!(status, StatusCode::OK, "{username}: {login}");
        assert_eq!(login.get("username").and_then(Value::as_str), None, "{username}");
        assert!(matches!(&w.sink.take()[..], [(_, Notice::LoginVerified { username: None, .. })]), "{username}");
    }
    // And a 64-character name, or an ENS one, is shown
    for username in ["a".repeat(64), "alice.eth".into()] {
        let url = w.service.start_farcaster("s1", &frame_id).await.unwrap();
        complete_named(&w.relay, &channel_token(&url), &custody, FID, None, json!(username));
        let (_, login) = post!(app, "/api/farcaster/complete", json!({ "frameToken": token }));
        assert_eq!(login["username"].as_str(), Some(username.as_str()));
        w.sink.take();
    }
}
