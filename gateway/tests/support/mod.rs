//! Test support: the real `vestibule` binary on a loopback port with a real sled directory, and a
//! real WebSocket client that mirrors the session the way the widget does (patches + hash check).
#![allow(dead_code)]

pub mod raw;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use vestibule_actors::protocol::PROTOCOL_VERSION;
use vestibule_actors::session::wire;

pub const ORIGIN: &str = "http://localhost:3000";

pub const CONFIG: &str = r#"
[[projects]]
id = "test"
allowed_origins = ["http://localhost:*"]

[[projects]]
id = "other"
allowed_origins = ["https://other.example"]
"#;

/// A `vestibule serve` process. Killed (SIGKILL) when dropped.
pub struct Gateway {
    pub child: Child,
    pub addr: String,
    pub data: PathBuf,
    pub config: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl Gateway {
    pub fn start(config: &str) -> Gateway {
        let dir = tempfile::tempdir().expect("a temp dir");
        let data = dir.path().join("data");
        let mut gateway = Self::start_at(&data, config, "127.0.0.1:0");
        gateway._dir = Some(dir);
        gateway
    }

    /// Starts on `data` (kept by the caller) at `listen`.
    pub fn start_at(data: &Path, config: &str, listen: &str) -> Gateway {
        Self::start_with(data, config, listen, |_| {})
    }

    /// Starts in a temp dir with the process limits `setup` sets on the child (e.g. a low open-file
    /// limit, with [`ProcessLimits`]).
    pub fn start_limited(config: &str, limits: ProcessLimits) -> Gateway {
        let dir = tempfile::tempdir().expect("a temp dir");
        let data = dir.path().join("data");
        let mut gateway = Self::start_with(&data, config, "127.0.0.1:0", |command| limits.apply(command));
        gateway._dir = Some(dir);
        gateway
    }

    /// Starts on `data` at `listen`, letting `setup` adjust the child's command first.
    pub fn start_with(data: &Path, config: &str, listen: &str, setup: impl FnOnce(&mut Command)) -> Gateway {
        let config_path = data.with_extension("toml");
        std::fs::create_dir_all(data.parent().unwrap()).unwrap();
        std::fs::write(&config_path, config).unwrap();
        // GATEWAY_BIN runs another build of the binary (e.g. to measure an older one).
        let binary = std::env::var("GATEWAY_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_vestibule").to_string());
        let mut command = Command::new(binary);
        setup(&mut command);
        let mut child = command
            .args(["serve", "--listen", listen, "--data"])
            .arg(data)
            .arg("--config")
            .arg(&config_path)
            .arg("--static-dir")
            .arg(data.join("no-static"))
            .env("VESTIBULE_LOG", std::env::var("TEST_GATEWAY_LOG").unwrap_or_else(|_| "error".into()))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the vestibule binary starts");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("the gateway prints its address");
        let addr = line
            .trim()
            .strip_prefix("vestibule listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Gateway { child, addr, data: data.to_path_buf(), config: config_path, _dir: None }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// File descriptors the gateway process has open now.
    pub fn open_descriptors(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map_or(0, |d| d.count())
    }

    /// Waits (polling) for the process to exit; `None` if it is still running after `patience`.
    pub fn wait_for_exit(&mut self, patience: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + patience;
        loop {
            if let Some(status) = self.child.try_wait().expect("the child can be waited for") {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn ws_url(&self, project: &str) -> String {
        format!("ws://{}/ws?projectId={project}", self.addr)
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn terminate(&mut self) -> std::process::ExitStatus {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        self.child.wait().expect("the gateway exits")
    }

    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }

    pub async fn http_get(&self, path: &str, origin: Option<&str>) -> (u16, String) {
        let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
        self.http_get_with(path, &origin).await
    }

    /// GET with extra header lines (each ending in CRLF).
    pub async fn http_get_with(&self, path: &str, headers: &str) -> (u16, String) {
        self.http_exchange(format!("GET {path} HTTP/1.1\r\nHost: {}\r\n{headers}Connection: close\r\n\r\n", self.addr)).await
    }

    pub async fn http_post(&self, path: &str, body: &Value) -> (u16, String) {
        self.http_post_raw(path, "application/json", &body.to_string()).await
    }

    /// POST of any body with any content type, as a client that gets it wrong would send it.
    pub async fn http_post_raw(&self, path: &str, content_type: &str, body: &str) -> (u16, String) {
        let (addr, length) = (&self.addr, body.len());
        self.http_exchange(format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n{body}"
        ))
        .await
    }

    /// Sends one request (which asks to close) and reads the answer to the end: its status and body.
    async fn http_exchange(&self, request: String) -> (u16, String) {
        let (status, _, body) = self.http_exchange_with_head(request).await;
        (status, body)
    }

    /// GET `path`: the status, the head (status line and headers, lower-cased) and the body.
    pub async fn http_get_head(&self, path: &str) -> (u16, String, String) {
        self.http_exchange_with_head(format!("GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.addr)).await
    }

    async fn http_exchange_with_head(&self, request: String) -> (u16, String, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = TcpStream::connect(&self.addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((response.as_str(), ""));
        (status, head.to_ascii_lowercase(), body.to_string())
    }

    pub async fn metric(&self, name_and_labels: &str) -> f64 {
        let (_, body) = self.http_get("/metrics", None).await;
        body.lines()
            .find(|l| l.starts_with(name_and_labels) && l[name_and_labels.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    }
}

/// Resource limits set on the gateway's process before it starts (`setrlimit` in `pre_exec`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessLimits {
    /// RLIMIT_NOFILE, soft and hard (so the gateway cannot raise it).
    pub open_files: Option<u64>,
    /// RLIMIT_FSIZE: writes past this offset fail with EFBIG (SIGXFSZ is ignored), a real I/O
    /// failure for the event log to meet.
    pub file_size: Option<u64>,
}

impl ProcessLimits {
    pub fn apply(self, command: &mut Command) {
        use std::os::unix::process::CommandExt;
        // SAFETY: between fork and exec only async-signal-safe calls are made (setrlimit, signal).
        unsafe {
            command.pre_exec(move || {
                if let Some(n) = self.open_files {
                    let limit = libc::rlimit { rlim_cur: n, rlim_max: n };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if let Some(n) = self.file_size {
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    let limit = libc::rlimit { rlim_cur: n, rlim_max: n };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.kill();
    }
}

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A WebSocket client that mirrors its session like the widget: it applies each diff's patch to its
/// copy of the state and checks seq continuity and the state hash.
pub struct Client {
    pub ws: Ws,
    pub session_id: String,
    pub resume_token: String,
    pub seq: u64,
    pub state: Value,
    pub diffs: Vec<Value>,
    pub next_command: u64,
}

pub async fn connect(url: &str, origin: &str) -> Result<Ws, tokio_tungstenite::tungstenite::Error> {
    let mut request = url.into_client_request().unwrap();
    request.headers_mut().insert("Origin", HeaderValue::from_str(origin).unwrap());
    tokio_tungstenite::connect_async_with_config(request, None, true).await.map(|(ws, _)| ws)
}

/// A WebSocket to the `test` project opened from `source` (a loopback address of its own, so that
/// one test can act as several clients).
pub async fn connect_from(gateway: &Gateway, source: std::net::IpAddr) -> Ws {
    connect_from_with(gateway, source, &[]).await
}

/// [`connect_from`] with more request headers (`X-Forwarded-For`, as a reverse proxy adds it).
pub async fn connect_from_with(gateway: &Gateway, source: std::net::IpAddr, headers: &[(&'static str, &str)]) -> Ws {
    let stream = raw::connect_from(source, &gateway.addr).await.expect("connected");
    let mut request = gateway.ws_url("test").into_client_request().unwrap();
    request.headers_mut().insert("Origin", HeaderValue::from_static(ORIGIN));
    for (name, value) in headers {
        request.headers_mut().append(*name, HeaderValue::from_str(value).unwrap());
    }
    tokio_tungstenite::client_async(request, MaybeTlsStream::Plain(stream)).await.expect("upgraded").0
}

pub async fn recv_json(ws: &mut Ws) -> Value {
    recv_json_within(ws, Duration::from_secs(10)).await.expect("a frame in time")
}

/// The next JSON text frame, or `None` if the connection closed (or nothing came in time).
pub async fn recv_json_within(ws: &mut Ws, timeout: Duration) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => return None,
            Ok(None) | Ok(Some(Err(_))) => return None,
            Ok(Some(Ok(Message::Text(text)))) => return Some(serde_json::from_str(&text).expect("server frames are JSON")),
            Ok(Some(Ok(Message::Close(_)))) => return None,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// Reads until the connection closes; returns the close code and every JSON frame before it.
/// The bound (30 s) is above twice the cluster tests' `lease_ttl`: a proxied connection is closed
/// once its owner's lease has lapsed.
pub async fn read_until_close(ws: &mut Ws) -> (Option<u16>, Vec<Value>) {
    let mut frames = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => panic!("the connection did not close in time (frames: {frames:?})"),
            Ok(None) | Ok(Some(Err(_))) => return (None, frames),
            Ok(Some(Ok(Message::Close(frame)))) => return (frame.map(|f| u16::from(f.code)), frames),
            Ok(Some(Ok(Message::Text(text)))) => frames.push(serde_json::from_str(&text).unwrap()),
            Ok(Some(Ok(_))) => {}
        }
    }
}

pub fn close_code(code: CloseCode) -> u16 {
    u16::from(code)
}

impl Client {
    /// Opens a new session with `options`.
    pub async fn create(gateway: &Gateway, options: Value) -> Client {
        let ws = connect(&gateway.ws_url("test"), ORIGIN).await.expect("upgrade accepted");
        Self::create_on(ws, options).await
    }

    /// Opens a new session with `options` from the loopback address `source`.
    pub async fn create_from(gateway: &Gateway, source: std::net::IpAddr, options: Value) -> Client {
        Self::create_on(connect_from(gateway, source).await, options).await
    }

    async fn create_on(mut ws: Ws, options: Value) -> Client {
        send(&mut ws, json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "options": options })).await;
        let welcome = recv_json(&mut ws).await;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        let mut client = Client {
            ws,
            session_id: welcome["sessionId"].as_str().unwrap().to_string(),
            resume_token: welcome["resumeToken"].as_str().expect("a new session has a token").to_string(),
            seq: 0,
            state: Value::Null,
            diffs: vec![],
            next_command: 0,
        };
        client.apply_welcome(&welcome);
        client
    }

    /// Re-attaches to `session_id` with `last_seq`; returns the welcome. The welcome is waited for
    /// up to 30 s, above twice the cluster tests' `lease_ttl`: a resume of a dead owner's session
    /// waits (up to 2 × TTL) for its lease to lapse.
    pub async fn resume(gateway: &Gateway, session_id: &str, token: &str, last_seq: Option<u64>, state: Value) -> (Client, Value) {
        Self::resume_at(&gateway.ws_url("test"), session_id, token, last_seq, state).await
    }

    /// [`Client::resume`] through the gateway at `url` (`Gateway::ws_url`).
    pub async fn resume_at(url: &str, session_id: &str, token: &str, last_seq: Option<u64>, state: Value) -> (Client, Value) {
        let ws = connect(url, ORIGIN).await.expect("upgrade accepted");
        Self::resume_on(ws, session_id, token, last_seq, state).await
    }

    /// [`Client::resume`] from the loopback address `source`.
    pub async fn resume_from(
        gateway: &Gateway,
        source: std::net::IpAddr,
        session_id: &str,
        token: &str,
        last_seq: Option<u64>,
        state: Value,
    ) -> (Client, Value) {
        Self::resume_on(connect_from(gateway, source).await, session_id, token, last_seq, state).await
    }

    async fn resume_on(mut ws: Ws, session_id: &str, token: &str, last_seq: Option<u64>, state: Value) -> (Client, Value) {
        let mut hello =
            json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "sessionId": session_id, "resumeToken": token });
        if let Some(last) = last_seq {
            hello["lastSeq"] = json!(last);
        }
        send(&mut ws, hello).await;
        let welcome = recv_json_within(&mut ws, Duration::from_secs(30)).await.expect("a welcome in time");
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        let mut client = Client {
            ws,
            session_id: session_id.into(),
            resume_token: token.into(),
            seq: last_seq.unwrap_or(0),
            state,
            diffs: vec![],
            next_command: 1000,
        };
        client.apply_welcome(&welcome);
        (client, welcome)
    }

    fn apply_welcome(&mut self, welcome: &Value) {
        if welcome["resumed"] == json!(false) {
            self.state = welcome["state"].clone();
            self.seq = welcome["seq"].as_u64().unwrap();
            assert_eq!(wire::state_hash(&self.state), welcome["stateHash"].as_str().unwrap(), "welcome hash");
        }
    }

    /// Applies a diff: seq continuity, patch, hash.
    pub fn apply_diff(&mut self, diff: &Value) {
        assert_eq!(diff["type"], "diff", "{diff}");
        assert_eq!(diff["prevSeq"].as_u64().unwrap(), self.seq, "a gap or a repeat before {diff}");
        let patch: json_patch::Patch = serde_json::from_value(diff["patch"].clone()).unwrap();
        json_patch::patch(&mut self.state, &patch).expect("the patch applies");
        assert_eq!(wire::state_hash(&self.state), diff["stateHash"].as_str().unwrap(), "the mirrored state hashes like the server's");
        let events = diff["events"].as_array().unwrap();
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e["seq"].as_u64().unwrap(), self.seq + 1 + i as u64, "event seqs are contiguous");
        }
        self.seq = diff["seq"].as_u64().unwrap();
        self.diffs.push(diff.clone());
    }

    pub async fn send_command(&mut self, command: Value) -> String {
        self.next_command += 1;
        let id = format!("c{}", self.next_command);
        send(&mut self.ws, json!({ "type": "command", "id": id, "command": command })).await;
        id
    }

    /// Sends a command and reads its result and, if it changed something, its diff.
    pub async fn command(&mut self, command: Value) -> Value {
        let id = self.send_command(command).await;
        let result = self.recv_non_diff().await;
        assert_eq!(result["type"], "result", "{result}");
        assert_eq!(result["commandId"], id.as_str());
        if result["status"] == "accepted" && result["seq"].as_u64().unwrap() > self.seq {
            let diff = recv_json(&mut self.ws).await;
            self.apply_diff(&diff);
            self.ack().await;
        }
        result
    }

    /// The next frame that is not a diff, applying diffs that arrive first.
    pub async fn recv_non_diff(&mut self) -> Value {
        loop {
            let frame = recv_json(&mut self.ws).await;
            if frame["type"] == "diff" {
                self.apply_diff(&frame);
            } else {
                return frame;
            }
        }
    }

    /// Applies diffs until the mirror reaches `seq`.
    pub async fn catch_up(&mut self, seq: u64) {
        while self.seq < seq {
            let frame = recv_json(&mut self.ws).await;
            self.apply_diff(&frame);
        }
        self.ack().await;
    }

    pub async fn ack(&mut self) {
        let seq = self.seq;
        send(&mut self.ws, json!({ "type": "ack", "seq": seq })).await;
    }

    /// For tests that kill the gateway: a command id, or `None` when the connection is gone.
    pub async fn try_send_command(&mut self, command: Value) -> Option<String> {
        self.next_command += 1;
        let id = format!("c{}", self.next_command);
        let frame = json!({ "type": "command", "id": id, "command": command });
        self.ws.send(Message::text(frame.to_string())).await.ok().map(|_| id)
    }

    /// For tests that kill the gateway: `false` when the connection is gone.
    pub async fn try_ack(&mut self) -> bool {
        let seq = self.seq;
        self.ws.send(Message::text(json!({ "type": "ack", "seq": seq }).to_string())).await.is_ok()
    }

    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

pub async fn send(ws: &mut Ws, value: Value) {
    ws.send(Message::text(value.to_string())).await.expect("the frame is sent");
}

pub fn show_toast(message: &str) -> Value {
    json!({ "type": "ShowToast", "message": message, "variant": "success" })
}

/// A toast that never closes by itself: for tests that count a session's events or compare its
/// hashes while the gateway runs, where a default toast's auto-dismiss (4 s) would add an event
/// whenever the machine is slow enough.
pub fn show_persistent_toast(message: &str) -> Value {
    json!({ "type": "ShowToast", "message": message, "variant": "success", "persistent": true })
}

/// Folds the session's log from scratch, ignoring snapshots, with the gateway stopped.
pub async fn fold_from_disk(data: &Path, session: &str) -> (Value, u64) {
    let log = vestibule_gateway::store::open_at(vestibule_store::StoreConfig::at(data).with_lock_wait_ms(5000)).expect("the log opens");
    let id: vestibule_store::SessionId = session.parse().unwrap();
    let events = log.read(id, 1, None).await.unwrap();
    let mut state = vestibule_actors::session::SessionState::default();
    for e in &events {
        let event = vestibule_actors::session::Event::from_parts(&e.event_type, e.payload.clone()).unwrap();
        state = vestibule_actors::session::evolve(state, &event);
    }
    (wire::to_value(&state), events.last().map_or(0, |e| e.seq))
}

// --- the widget and the wallet in the sign-in flow ---

pub fn first_request(state: &Value) -> (String, Value) {
    let id = state["requests"]["order"][0].as_str().expect("a pending wallet request").to_string();
    (id.clone(), state["requests"]["items"][&id]["kind"].clone())
}

/// Reports the dev wallet, connects `address` on `chain_hex`, and returns the client on the
/// SIWXSignMessage view.
pub async fn connect_wallet(client: &mut Client, address: &str, chain_hex: &str) {
    let wallet = json!({ "name": "Dev Wallet", "rdns": "dev.vestibule.wallet", "kind": "ANNOUNCED" });
    client.command(json!({ "type": "ReportWallets", "wallets": [wallet] })).await;
    client.command(json!({ "type": "SelectConnector", "connectorId": "dev.vestibule.wallet" })).await;
    let (request_id, kind) = first_request(&client.state);
    assert_eq!(kind["type"], "connect");
    let outcome = json!({ "status": "ok", "result": { "accounts": [address], "chainId": chain_hex } });
    let result = client.command(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome })).await;
    assert_eq!(result["status"], "accepted", "{result}");
}

/// Clicks Sign and answers the wallet prompt with `signer`'s `personal_sign` of the exact message.
pub async fn sign(client: &mut Client, signer: &alloy::signers::local::PrivateKeySigner) -> String {
    let result = client.command(json!({ "type": "SiwxSign", })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    let (request_id, kind) = first_request(&client.state);
    assert_eq!(kind["type"], "signMessage");
    let message = kind["message"].as_str().unwrap().to_string();
    let signature =
        format!("0x{}", hex::encode(alloy::signers::SignerSync::sign_message_sync(signer, message.as_bytes()).unwrap().as_bytes()));
    let outcome = json!({ "status": "ok", "result": signature });
    client.command(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome })).await;
    message
}

/// Applies diffs (acknowledging them) until `done` holds for the mirrored state, for at most
/// `patience`; panics with the state otherwise. A bound, never a timing the test relies on.
pub async fn wait_for(client: &mut Client, what: &str, patience: Duration, done: impl Fn(&Value) -> bool) {
    let deadline = tokio::time::Instant::now() + patience;
    while !done(&client.state) {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let Some(frame) = recv_json_within(&mut client.ws, left).await else {
            panic!("{what}: nothing came within {patience:?}; state: {:#}", client.state);
        };
        if frame["type"] == "diff" {
            client.apply_diff(&frame);
            client.ack().await;
        }
    }
}

/// The EVM devnet the chain tests run against: one anvil at chain id [`evm::CHAIN_ID`].
pub mod evm {
    use alloy::primitives::U256;
    use serde_json::{Value, json};

    pub const CHAIN_ID: u64 = 31337;
    /// anvil's second development account (funded by anvil itself).
    pub const ANVIL_1: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

    pub fn ether(n: u64) -> U256 {
        U256::from(n) * U256::from(10u64).pow(U256::from(18))
    }

    /// The session option naming the anvil network.
    pub fn anvil_network() -> Value {
        json!({
            "caipNetworkId": format!("eip155:{CHAIN_ID}"),
            "name": "Anvil",
            "nativeCurrency": { "name": "Ether", "symbol": "ETH", "decimals": 18 },
            "testnet": true
        })
    }
}
