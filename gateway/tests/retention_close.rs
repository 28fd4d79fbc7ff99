//! Retention expiring a session closes its attached connections with 4006 ("start a new session").
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
