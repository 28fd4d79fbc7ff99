//! What the gateways of a cluster share besides the sessions, with real `vestibule serve` processes
//! on a real nats-server: the key that signs sign-in tokens (a token issued by one gateway verifies
//! on another), each session's command rate limit (held by the owner, so connections proxied
//! through other gateways do not multiply it), and retention forgetting the owners of the sessions
//! it expires.

mod support;

use std::time::{Duration, Instant};

use alloy::signers::local::PrivateKeySigner;
use serde_json::{Value, json};
use support::*;
use vestibule_actors::protocol::PROTOCOL_VERSION;
use vestibule_store_jetstream::async_nats;
use vestibule_store_jetstream::test_server::NatsServer;

/// No test here waits for a lease to lapse: a long `lease_ttl`, so that no stall of a busy machine
/// costs a live gateway its lease (it declares it lost after TTL/2 without a renewal) and its sessions.
fn cluster_config(server: &NatsServer, extra: &str) -> String {
    format!(
        "{CONFIG}\n[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"{}\"]\n\n[cluster]\nenabled = true\nlease_ttl = \"60s\"\n\n{extra}",
        server.url
    )
}

async fn start_server() -> NatsServer {
    tokio::task::spawn_blocking(NatsServer::start).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_token_issued_by_one_gateway_verifies_on_another() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let config = cluster_config(&server, "");
    let a = Gateway::start_at(&dir.path().join("a"), &config, "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config, "127.0.0.1:0");
    // Each gateway made a key of its own in its data directory; the cluster signs with one of them.
    let key_file = |g: &str| std::fs::read_to_string(dir.path().join(g).join("keys/siwx-ed25519.key")).unwrap();
    assert_ne!(key_file("a"), key_file("b"), "two random keys");
    let (_, jwks_a) = a.http_get("/.well-known/jwks.json", None).await;
    let (_, jwks_b) = b.http_get("/.well-known/jwks.json", None).await;
    assert_eq!(jwks_a, jwks_b, "both gateways publish the cluster's key");

    let wallet = PrivateKeySigner::from_slice(&[0x62; 32]).unwrap();
    let mut client = Client::create(&a, json!({ "siwx": { "statement": "Sign in to the test app" } })).await;
    connect_wallet(&mut client, &wallet.address().to_checksum(None), "0x1").await;
    sign(&mut client, &wallet).await;
    let creds = json!({ "sessionId": client.session_id, "resumeToken": client.resume_token });
    let (status, body) = a.http_post("/siwx/token", &creds).await;
    assert_eq!(status, 200, "{body}");
    let token = serde_json::from_str::<Value>(&body).unwrap()["token"].as_str().unwrap().to_string();

    // The host's backend may ask any gateway behind the load balancer.
    for gateway in [&a, &b] {
        let (_, verdict) = gateway.http_post("/siwx/introspect", &json!({ "token": token, "audience": "test" })).await;
        assert_eq!(serde_json::from_str::<Value>(&verdict).unwrap()["active"], true, "{verdict}");
    }
    // The sign-in HTTP API on a gateway that does not own the session starts no actor there: reads
    // fold the log, a sign-out runs on the owner (whose connected visitor sees it at once).
    let (status, listed) = b.http_post("/siwx/sessions", &creds).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(serde_json::from_str::<Value>(&listed).unwrap()["sessions"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(b.http_post("/siwx/signout", &creds).await.0, 204);
    wait_for(&mut client, "the sign-out on the owner", Duration::from_secs(30), |s| {
        s["siwx"]["sessions"].as_object().is_some_and(|m| m.is_empty())
    })
    .await;
    for gateway in [&a, &b] {
        let (_, verdict) = gateway.http_post("/siwx/introspect", &json!({ "token": token, "audience": "test" })).await;
        assert_eq!(serde_json::from_str::<Value>(&verdict).unwrap()["reason"], "signed_out", "{verdict}");
    }
    let (_, health) = b.http_get("/healthz", None).await;
    assert_eq!(serde_json::from_str::<Value>(&health).unwrap()["liveSessions"], 0, "no actor on the non-owner: {health}");
    assert_eq!(b.metric("vestibule_cluster_acquisitions_total").await, 0.0);
    // And a token signed by a key the cluster does not use is refused (the check has teeth).
    let stranger = vestibule_gateway::siwx::token::TokenKeys::from_secret([7; 32]);
    let claims: vestibule_gateway::siwx::token::SignInClaims =
        vestibule_gateway::siwx::token::verify_with(&decoding_key(&jwks_a), &token, now_s()).expect("the cluster's key verifies it");
    let forged = stranger.issue(&claims);
    let (_, verdict) = b.http_post("/siwx/introspect", &json!({ "token": forged, "audience": "test" })).await;
    assert_eq!(serde_json::from_str::<Value>(&verdict).unwrap()["active"], false, "{verdict}");
    client.close().await;
}

fn decoding_key(jwks: &str) -> jsonwebtoken::DecodingKey {
    let set: jsonwebtoken::jwk::JwkSet = serde_json::from_str(jwks).unwrap();
    jsonwebtoken::DecodingKey::from_jwk(&set.keys[0]).unwrap()
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// Commands that change the state and arm no deadline.
fn command(i: usize) -> Value {
    match i % 3 {
        0 => json!({ "type": "OpenModal" }),
        1 => json!({ "type": "Navigate", "view": "AllWallets" }),
        _ => json!({ "type": "CloseModal" }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_rate_limit_holds_per_session_across_gateways() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    // One command a second after a burst of 5: per gateway, two proxies would let 10 through at once.
    let config = cluster_config(&server, "[limits]\ncommands_per_second = 1\ncommand_burst = 5\n");
    let gateways: Vec<Gateway> = ["a", "b", "c"].iter().map(|g| Gateway::start_at(&dir.path().join(g), &config, "127.0.0.1:0")).collect();
    let owner = Client::create(&gateways[0], json!({})).await;
    let (mut via_b, _) = Client::resume(&gateways[1], &owner.session_id, &owner.resume_token, Some(owner.seq), owner.state.clone()).await;
    let (mut via_c, _) = Client::resume(&gateways[2], &owner.session_id, &owner.resume_token, Some(owner.seq), owner.state.clone()).await;
    via_c.next_command = 5000; // command ids are per session: the two clients must not reuse each other's
    assert_eq!(gateways[1].metric("vestibule_cluster_proxied_total").await, 1.0);
    assert_eq!(gateways[2].metric("vestibule_cluster_proxied_total").await, 1.0);

    let started = Instant::now();
    let (mut accepted, mut limited) = (0u64, 0u64);
    for i in 0..30 {
        let client = if i % 2 == 0 { &mut via_b } else { &mut via_c };
        let result = client.command(command(i)).await;
        match (result["status"].as_str(), result["error"]["code"].as_str()) {
            (Some("accepted"), _) => accepted += 1,
            (Some("refused"), Some("rate_limited")) => limited += 1,
            _ => panic!("unexpected result {result}"),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    // The bucket allows the burst plus one a second since it was made (before `started`), plus one
    // for the refill in flight: a bound that a slower machine only widens.
    let allowed = 5 + elapsed.ceil() as u64 + 1;
    assert!(limited > 0, "the limit was reached ({accepted} accepted in {elapsed:.1} s)");
    assert!(accepted <= allowed, "{accepted} commands accepted in {elapsed:.1} s through two gateways; the session allows {allowed}");
    assert_eq!(accepted + limited, 30);

    // The HTTP API's sign-out through the gateways that do not own the session spends the owner's
    // bucket too (each gateway's own bucket would let a burst of 5 through each, 10 in all).
    let creds = json!({ "sessionId": owner.session_id, "resumeToken": owner.resume_token });
    let started = Instant::now();
    let (mut run, mut limited) = (0u64, 0u64);
    for i in 0..10 {
        let (status, body) = gateways[1 + i % 2].http_post("/siwx/signout", &creds).await;
        match status {
            204 | 409 => run += 1,
            429 => {
                assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["code"], "rate_limited", "{body}");
                limited += 1
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    assert!(limited > 0, "the owner's limit held over HTTP ({run} run in {elapsed:.1} s)");
    assert!(run <= elapsed.ceil() as u64 + 2, "{run} sign-outs run in {elapsed:.1} s through two gateways");
    via_b.close().await;
    via_c.close().await;
    owner.close().await;
}

/// In this process (`server::start`), so that the retention pass runs at a chosen time instead of
/// waiting for the real clock to make the session due.
#[actix_web::test]
async fn retention_forgets_the_owners_of_the_sessions_it_expires() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gateway.toml");
    // The background pass runs once at start (nothing is due) and not again during the test.
    std::fs::write(&file, cluster_config(&server, "[retention]\ninterval = \"24h\"\n")).unwrap();
    let overrides = vestibule_gateway::config::Overrides {
        listen: Some("127.0.0.1:0".into()),
        data: Some(dir.path().join("data")),
        static_dir: Some(dir.path().join("none")),
        devnet: None,
    };
    let config = vestibule_gateway::config::GatewayConfig::load(Some(&file), &overrides).unwrap();
    let idle_after = config.retention.idle_after;
    let running = vestibule_gateway::server::start(config).await.unwrap();
    let url = format!("ws://{}/ws?projectId=test", running.addr);
    let mut ws = connect(&url, ORIGIN).await.unwrap();
    send(&mut ws, json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test" })).await;
    let session = recv_json(&mut ws).await["sessionId"].as_str().unwrap().to_string();
    send(&mut ws, json!({ "type": "command", "id": "c1", "command": command(0) })).await;
    assert_eq!(recv_json(&mut ws).await["status"], "accepted");

    let nats = async_nats::connect(&server.url).await.unwrap();
    let js = async_nats::jetstream::new(nats);
    let owners = js.get_key_value("VESTIBULE_owners").await.unwrap();
    let owner_messages = || async { js.get_stream("KV_VESTIBULE_owners").await.unwrap().info().await.unwrap().state.messages };
    assert!(owners.entry(session.as_str()).await.unwrap().is_some(), "the session has an owner");
    assert_eq!(owner_messages().await, 1);

    // A pass at a time when the session has been idle for longer than `idle_after`.
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let report = running.expire_sessions(now_ms + idle_after.as_millis() as u64 + 60_000).await;
    assert_eq!(report.expired.iter().map(ToString::to_string).collect::<Vec<_>>(), vec![session.clone()]);
    assert_eq!(read_until_close(&mut ws).await.0, Some(4006));
    // Its owner entry is gone with its history: nothing is left in the bucket.
    assert!(owners.entry(session.as_str()).await.unwrap().is_none(), "the owner entry is forgotten");
    assert_eq!(owner_messages().await, 0, "no delete marker left behind");
    running.stop().await;
}
