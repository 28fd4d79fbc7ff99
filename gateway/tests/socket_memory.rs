//! Measures the gateway's resident memory per idle WebSocket connection, apart from the session
//! actor's: sessions are created and their connections closed (the actors stay live), then every
//! session is resumed and left idle; the growth divided by the sessions is the connections' share.
//! Then sockets that upgraded but never said hello are opened: the bare socket's share.
//!
//! Not a pass/fail test (ignored by default); run in release:
//!
//! ```sh
//! cargo test --release -p vestibule-gateway --test socket_memory -- --ignored --nocapture
//! ```
//!
//! `SOCKET_MEMORY_SESSIONS` (default 10000) and `SOCKET_MEMORY_BARE` (default 5000) set the counts;
//! `GATEWAY_BIN` measures another build of the binary (its configuration keys must exist there).

mod support;

use std::net::IpAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::*;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use vestibule_actors::protocol::PROTOCOL_VERSION;

const CONFIG_FOR_MANY: &str = r#"
[[projects]]
id = "test"
allowed_origins = ["http://localhost:*"]

[limits]
connections_per_ip = 1000000
max_connections = 1000000
sessions_per_minute = 1000000
session_burst = 1000000
hello_timeout = "1h"

[runtime]
passivate_after = "1h"
"#;

fn count(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn source(i: usize) -> IpAddr {
    IpAddr::from([127, 0, 0, 1 + (i % 4) as u8])
}

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn open(addr: &str, i: usize) -> Ws {
    let stream = raw::connect_from(source(i), addr).await.expect("connected");
    let mut request = format!("ws://{addr}/ws?projectId=test").into_client_request().unwrap();
    request.headers_mut().insert("Origin", HeaderValue::from_static(ORIGIN));
    tokio_tungstenite::client_async(request, stream).await.expect("upgraded").0
}

async fn first_json(ws: &mut Ws) -> Value {
    loop {
        match ws.next().await.expect("a frame").expect("a frame") {
            Message::Text(text) => return serde_json::from_str(&text).unwrap(),
            _ => continue,
        }
    }
}

async fn settled_rss(gateway: &Gateway) -> u64 {
    tokio::time::sleep(Duration::from_secs(2)).await;
    gateway.rss_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run in release with --ignored --nocapture"]
async fn resident_memory_per_idle_connection() {
    let sessions = count("SOCKET_MEMORY_SESSIONS", 10_000);
    let bare = count("SOCKET_MEMORY_BARE", 5_000);
    let gateway = Gateway::start(CONFIG_FOR_MANY);
    let addr = gateway.addr.clone();
    let start_rss = settled_rss(&gateway).await;

    // Sessions whose actors stay live with no connection.
    let created: Vec<(String, String, u64)> = futures_util::stream::iter(0..sessions)
        .map(|i| {
            let addr = addr.clone();
            async move {
                let mut ws = open(&addr, i).await;
                ws.send(Message::text(json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test" }).to_string()))
                    .await
                    .unwrap();
                let welcome = first_json(&mut ws).await;
                let _ = ws.close(None).await;
                (
                    welcome["sessionId"].as_str().unwrap().to_string(),
                    welcome["resumeToken"].as_str().unwrap().to_string(),
                    welcome["seq"].as_u64().unwrap(),
                )
            }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    let sessions_rss = settled_rss(&gateway).await;

    // Every session resumed, the connection left idle.
    let connections: Vec<Ws> = futures_util::stream::iter(created.into_iter().enumerate())
        .map(|(i, (session, token, seq))| {
            let addr = addr.clone();
            async move {
                let mut ws = open(&addr, i).await;
                let hello = json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "sessionId": session, "resumeToken": token, "lastSeq": seq });
                ws.send(Message::text(hello.to_string())).await.unwrap();
                assert_eq!(first_json(&mut ws).await["type"], "welcome");
                ws
            }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    let connected_rss = settled_rss(&gateway).await;

    // Upgraded sockets that never say hello.
    let mut bare_sockets = Vec::with_capacity(bare);
    for i in 0..bare {
        bare_sockets.push(raw::upgrade_from(source(i), &addr, "test", ORIGIN).await);
    }
    let bare_rss = settled_rss(&gateway).await;

    let kib = |bytes: u64, n: usize| bytes as f64 / n.max(1) as f64 / 1024.0;
    println!("gateway RSS at start {:.1} MiB", start_rss as f64 / 1048576.0);
    println!("{sessions} live sessions without connections: {:.2} KiB each", kib(sessions_rss.saturating_sub(start_rss), sessions));
    println!("{sessions} idle connections (resumed, welcomed): {:.2} KiB each", kib(connected_rss.saturating_sub(sessions_rss), sessions));
    println!("{bare} upgraded sockets before any hello: {:.2} KiB each", kib(bare_rss.saturating_sub(connected_rss), bare));
    println!("session + connection: {:.2} KiB each", kib(connected_rss.saturating_sub(start_rss), sessions));
    drop(connections);
    drop(bare_sockets);
}
