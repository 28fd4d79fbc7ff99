//! Retention expiring a session closes its attached connections with 4006 ("start a new session")
//! and ends its embedded-wallet frames.
//! The gateway runs in this process (`server::start` on a loopback port, a real sled directory, a
//! real WebSocket client) so that the retention pass can be run at a chosen time instead of waiting
//! for the real clock to make the session due.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use support::{ORIGIN, connect, read_until_close, recv_json, send};
use vestibule_actors::protocol::PROTOCOL_VERSION;
use vestibule_gateway::config::{GatewayConfig, ProjectConfig};

#[actix_web::test]
async fn retention_expiry_closes_attached_connections_with_4006() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = GatewayConfig {
        listen: "127.0.0.1:0".into(),
        data: dir.path().join("data"),
        static_dir: dir.path().join("none"),
        ..Default::default()
    };
    config.projects = vec![ProjectConfig { id: "test".into(), allowed_origins: vec!["http://localhost:*".into()] }];
    // The background pass runs once at start (nothing is due) and not again during the test.
    config.retention.interval = Duration::from_secs(24 * 3600);
    let idle_after = config.retention.idle_after;
    let running = vestibule_gateway::server::start(config).await.unwrap();
    let url = format!("ws://{}/ws?projectId=test", running.addr);

    let mut ws = connect(&url, ORIGIN).await.unwrap();
    send(&mut ws, json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test" })).await;
    let welcome = recv_json(&mut ws).await;
    let (session, token) = (welcome["sessionId"].as_str().unwrap().to_string(), welcome["resumeToken"].as_str().unwrap().to_string());
    send(&mut ws, json!({ "type": "command", "id": "c1", "command": { "type": "OpenModal" } })).await;
    assert_eq!(recv_json(&mut ws).await["status"], "accepted");

    // A pass at a time when the session has been idle for longer than `idle_after`.
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let later = now_ms + idle_after.as_millis() as u64 + 60_000;
    let report = running.expire_sessions(later).await;
    assert_eq!(report.expired.iter().map(ToString::to_string).collect::<Vec<_>>(), vec![session.clone()]);

    let (code, _) = read_until_close(&mut ws).await;
    assert_eq!(code, Some(4006));
    // The session is gone: its token no longer resumes anything.
    let mut ws = connect(&url, ORIGIN).await.unwrap();
    send(
        &mut ws,
        json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "sessionId": session, "resumeToken": token }),
    )
    .await;
    let (code, frames) = read_until_close(&mut ws).await;
    assert_eq!((code, frames[0]["code"].as_str()), (Some(4001), Some("unauthorized")));
    running.stop().await;
}

/// POSTs `body` to the frame origin's `path` from the frame origin: the status and the body.
async fn post_frame_api(frame_origin: &str, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = frame_origin.strip_prefix("http://").expect("an http frame origin");
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: {frame_origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").and_then(|(_, b)| serde_json::from_str(b).ok()).unwrap_or_default();
    (status, body)
}

#[actix_web::test]
async fn retention_expiry_ends_the_sessions_embedded_wallet_frames() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("frame-assets")).unwrap();
    std::fs::write(dir.path().join("share.key"), "11".repeat(32)).unwrap();
    std::fs::write(dir.path().join("recovery.key"), "22".repeat(32)).unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let file = dir.path().join("gateway.toml");
    // The background pass runs once at start (nothing is due) and not again during the test.
    std::fs::write(
        &file,
        format!(
            "[retention]\ninterval = \"24h\"\n\n[[projects]]\nid = \"test\"\nallowed_origins = [\"http://localhost:*\"]\n\n\
             [embedded]\nframe_listen = \"127.0.0.1:0\"\nframe_assets_dir = \"{}\"\nshare_key_file = \"{}\"\nrecovery_key_file = \"{}\"\n\n\
             [embedded.smtp]\nhost = \"localhost\"\nport = 25\nfrom = \"Vestibule <login@localhost>\"\nfile_dir = \"{}\"\n",
            path("frame-assets"),
            path("share.key"),
            path("recovery.key"),
            path("mail"),
        ),
    )
    .unwrap();
    let overrides = vestibule_gateway::config::Overrides {
        listen: Some("127.0.0.1:0".into()),
        data: Some(dir.path().join("data")),
        static_dir: Some(dir.path().join("none")),
        devnet: None,
    };
    let config = GatewayConfig::load(Some(&file), &overrides).unwrap();
    let idle_after = config.retention.idle_after;
    let running = vestibule_gateway::server::start(config).await.unwrap();
    let url = format!("ws://{}/ws?projectId=test", running.addr);
    let mut ws = connect(&url, ORIGIN).await.unwrap();
    send(
        &mut ws,
        json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "options": { "features": { "email": true } } }),
    )
    .await;
    let welcome = recv_json(&mut ws).await;
    let session = welcome["sessionId"].as_str().unwrap().to_string();
    let frame_origin = welcome["state"]["embedded"]["frameOrigin"].as_str().expect("the embedded wallet is on").to_string();

    // Given a frame of the session, known to the frame API (it has no login yet)
    let (_, public_key) = vestibule_embedded::seal::test_key_pair(&vestibule_embedded::SeededEntropy::new(1));
    let (status, frame) =
        post_frame_api(&frame_origin, "/api/frames", json!({ "sessionId": session, "hpkePublicKey": public_key, "deviceWallets": [] }))
            .await;
    assert_eq!(status, 200, "{frame}");
    let call = json!({ "frameToken": frame["frameToken"], "chainId": "eip155:1", "method": "eth_chainId", "params": [] });
    let (status, body) = post_frame_api(&frame_origin, "/api/rpc", call.clone()).await;
    assert_eq!((status, body["error"]["code"].as_str()), (403, Some("not_logged_in")), "{body}");

    // When retention deletes the session
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let report = running.expire_sessions(now_ms + idle_after.as_millis() as u64 + 60_000).await;
    assert_eq!(report.expired.len(), 1);

    // Then its frame's token is no longer known
    let (status, body) = post_frame_api(&frame_origin, "/api/rpc", call).await;
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("unauthorized")), "{body}");
    running.stop().await;
}
