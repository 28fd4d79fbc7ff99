//! One simulated visitor: a real WebSocket client speaking the protocol as the widget does. It
//! mirrors the session (patch + state hash on every diff), acks, checks seq continuity, answers the
//! session's wallet requests as a wallet would (signing with a real key), and resumes with its
//! `lastSeq` when the connection drops.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::signers::local::PrivateKeySigner;
use alloy::signers::SignerSync;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use vestibule_actors::session::wire;

use super::metrics::Metrics;
use super::scenario::{Scenario, Step};

/// Where and how visitors connect.
pub struct Target {
    pub addr: SocketAddr,
    pub project: String,
    pub origin: String,
    pub source_addrs: Vec<IpAddr>,
}

type Ws = WebSocketStream<TcpStream>;

/// Why a command did not complete.
#[derive(Debug)]
pub enum Broken {
    /// The connection is gone (or the gateway restarts): reconnect and resume.
    Connection(String),
    /// The mirror disagreed with the server: reconnect for the whole state.
    Resync,
}

pub struct Visitor {
    pub index: usize,
    target: Arc<Target>,
    metrics: Arc<Metrics>,
    scenario: Scenario,
    signer: PrivateKeySigner,
    ws: Option<Ws>,
    pub session_id: Option<String>,
    resume_token: Option<String>,
    seq: u64,
    state: Value,
    next_command: u64,
    step: usize,
    /// Commands the server accepted that must be in the log: (command id, result seq).
    pub must_persist: Vec<String>,
    /// Commands that got a `result` (accepted or refused): proof of a round trip.
    pub answered: u64,
}

impl Visitor {
    pub fn new(index: usize, target: Arc<Target>, metrics: Arc<Metrics>, scenario: Scenario) -> Self {
        // A distinct, valid secp256k1 key per visitor (index + 1 is never 0 or above the order).
        let mut key = [0u8; 32];
        key[24..].copy_from_slice(&(index as u64 + 1).to_be_bytes());
        key[0] = 0x11;
        Visitor {
            index,
            target,
            metrics,
            scenario,
            signer: PrivateKeySigner::from_slice(&key).expect("a valid key"),
            ws: None,
            session_id: None,
            resume_token: None,
            seq: 0,
            state: Value::Null,
            next_command: 0,
            step: 0,
            must_persist: Vec::new(),
            answered: 0,
        }
    }

    async fn open_socket(&self) -> Result<Ws, String> {
        let addr = self.target.addr;
        let socket = if addr.is_ipv4() { TcpSocket::new_v4() } else { TcpSocket::new_v6() }.map_err(|e| e.to_string())?;
        if !self.target.source_addrs.is_empty() {
            let source = self.target.source_addrs[self.index % self.target.source_addrs.len()];
            socket.bind(SocketAddr::new(source, 0)).map_err(|e| format!("bind {source}: {e}"))?;
        }
        let stream = socket.connect(addr).await.map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let url = format!("ws://{addr}/ws?projectId={}", self.target.project);
        let mut request = url.into_client_request().map_err(|e| e.to_string())?;
        request.headers_mut().insert("Origin", HeaderValue::from_str(&self.target.origin).map_err(|e| e.to_string())?);
        let (ws, _) = tokio_tungstenite::client_async(request, stream).await.map_err(|e| e.to_string())?;
        Ok(ws)
    }

    /// Opens the session (first time) or resumes it; retries until `deadline` while the gateway
    /// is away.
    pub async fn connect(&mut self, deadline: Instant) -> Result<(), String> {
        let mut delay = Duration::from_millis(20);
        loop {
            match self.try_connect().await {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() + delay >= deadline => return Err(e),
                Err(_) => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_millis(500));
                }
            }
        }
    }

    async fn try_connect(&mut self) -> Result<(), String> {
        let mut ws = self.open_socket().await?;
        let hello = match (&self.session_id, &self.resume_token) {
            (Some(id), Some(token)) => {
                let mut hello = json!({ "type": "hello", "protocol": 1, "projectId": self.target.project, "sessionId": id, "resumeToken": token });
                if !self.state.is_null() {
                    hello["lastSeq"] = json!(self.seq);
                }
                hello
            }
            _ => json!({ "type": "hello", "protocol": 1, "projectId": self.target.project, "options": self.scenario.options() }),
        };
        ws.send(Message::text(hello.to_string())).await.map_err(|e| e.to_string())?;
        let welcome = read_json(&mut ws, Duration::from_secs(10)).await.map_err(|e| format!("no welcome: {e}"))?;
        if welcome["type"] != "welcome" {
            return Err(format!("refused: {}", welcome["code"].as_str().unwrap_or("unknown")));
        }
        let resumed = self.session_id.is_some();
        if !resumed {
            self.session_id = welcome["sessionId"].as_str().map(str::to_string);
            self.resume_token = welcome["resumeToken"].as_str().map(str::to_string);
        }
        if welcome["resumed"] != json!(true) {
            self.state = welcome["state"].clone();
            self.seq = welcome["seq"].as_u64().unwrap_or(0);
            if wire::state_hash(&self.state) != welcome["stateHash"].as_str().unwrap_or_default() {
                self.metrics.hash_mismatch();
            }
        }
        self.ws = Some(ws);
        self.metrics.connected(resumed);
        Ok(())
    }

    pub fn drop_connection(&mut self) {
        self.ws = None;
    }

    pub fn is_connected(&self) -> bool {
        self.ws.is_some()
    }

    /// Applies one diff to the mirror; `false` if it does not follow on (a gap or a repeat) or
    /// the hash disagrees, in which case the mirror must be rebuilt.
    fn apply_diff(&mut self, diff: &Value) -> bool {
        if diff["prevSeq"].as_u64() != Some(self.seq) {
            self.metrics.gap();
            return false;
        }
        let Ok(patch) = serde_json::from_value::<json_patch::Patch>(diff["patch"].clone()) else {
            self.metrics.error("bad_patch");
            return false;
        };
        if json_patch::patch(&mut self.state, &patch).is_err() {
            self.metrics.error("bad_patch");
            return false;
        }
        if wire::state_hash(&self.state) != diff["stateHash"].as_str().unwrap_or_default() {
            self.metrics.hash_mismatch();
            return false;
        }
        self.seq = diff["seq"].as_u64().unwrap_or(self.seq);
        self.metrics.events(diff["events"].as_array().map_or(0, |e| e.len()));
        true
    }

    /// Sends a command and waits for its result and (if it changed the state) its diff, applying
    /// and acking every diff on the way (timers produce diffs nobody asked for).
    async fn execute(&mut self, command: Value, always_writes: bool) -> Result<(), Broken> {
        self.next_command += 1;
        let id = format!("v{}c{}", self.index, self.next_command);
        let frame = json!({ "type": "command", "id": id, "command": command }).to_string();
        let ws = self.ws.as_mut().ok_or_else(|| Broken::Connection("not connected".into()))?;
        let sent = Instant::now();
        ws.send(Message::text(frame)).await.map_err(|e| Broken::Connection(e.to_string()))?;
        let mut result_seq: Option<u64> = None;
        let mut diff_seen = false;
        loop {
            if let Some(seq) = result_seq
                && (diff_seen || self.seq >= seq)
            {
                return Ok(());
            }
            // One deadline for the whole command: timer diffs arriving meanwhile must not hide a
            // result that never comes.
            let left = Duration::from_secs(10).saturating_sub(sent.elapsed());
            if left.is_zero() {
                self.metrics.error(if result_seq.is_some() { "diff_timeout" } else { "result_timeout" });
                return Err(Broken::Connection("no answer within 10 s".into()));
            }
            let ws = self.ws.as_mut().ok_or_else(|| Broken::Connection("not connected".into()))?;
            let frame = match read_json(ws, left).await {
                Ok(f) => f,
                Err(e) if e == "timed out" => {
                    self.metrics.error(if result_seq.is_some() { "diff_timeout" } else { "result_timeout" });
                    return Err(Broken::Connection(e));
                }
                Err(e) => return Err(Broken::Connection(e)),
            };
            match frame["type"].as_str() {
                Some("diff") => {
                    if !self.apply_diff(&frame) {
                        return Err(Broken::Resync);
                    }
                    if frame["events"][0]["correlationId"].as_str() == Some(id.as_str()) {
                        diff_seen = true;
                        self.metrics.diff(sent.elapsed());
                        self.must_persist.push(id.clone());
                    }
                    let ack = json!({ "type": "ack", "seq": self.seq }).to_string();
                    if let Some(ws) = self.ws.as_mut() {
                        ws.send(Message::text(ack)).await.map_err(|e| Broken::Connection(e.to_string()))?;
                    }
                }
                Some("result") if frame["commandId"].as_str() == Some(id.as_str()) => {
                    let accepted = frame["status"] == "accepted";
                    self.answered += 1;
                    self.metrics.result(sent.elapsed(), accepted);
                    if !accepted {
                        self.metrics.error(&format!("refused:{}", frame["error"]["code"].as_str().unwrap_or("unknown")));
                        return Ok(());
                    }
                    if always_writes && !diff_seen {
                        // Its events are durable now even if the diff never arrives (a crash).
                        self.must_persist.push(id.clone());
                    }
                    result_seq = Some(frame["seq"].as_u64().unwrap_or(0));
                }
                Some("error") => {
                    let code = frame["code"].as_str().unwrap_or("unknown").to_string();
                    self.metrics.error(&format!("protocol:{code}"));
                    if frame["close"].is_number() {
                        return Err(Broken::Connection(code));
                    }
                }
                _ => {}
            }
        }
    }

    /// Runs the scenario's next step.
    pub async fn step(&mut self) -> Result<(), Broken> {
        let step = self.scenario.step(self.step, &self.state);
        self.step += 1;
        match step {
            Step::Command { command, always_writes } => self.execute(command, always_writes).await,
            Step::AnswerConnect => {
                let Some(request) = pending_request(&self.state, "connect") else { return Ok(()) };
                let address = self.signer.address().to_checksum(None);
                let outcome = json!({ "status": "ok", "result": { "accounts": [address], "chainId": "0x1" } });
                self.execute(json!({ "type": "ResolveWalletRequest", "requestId": request.0, "outcome": outcome }), true).await
            }
            Step::AnswerSign => {
                let Some((request_id, kind)) = pending_request(&self.state, "signMessage") else { return Ok(()) };
                let message = kind["message"].as_str().unwrap_or_default();
                let signature = match self.signer.sign_message_sync(message.as_bytes()) {
                    Ok(s) => format!("0x{}", hex::encode(s.as_bytes())),
                    Err(e) => return Err(Broken::Connection(format!("signing failed: {e}"))),
                };
                let outcome = json!({ "status": "ok", "result": signature });
                self.execute(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome }), true).await
            }
            Step::Reconnect => {
                self.drop_connection();
                Err(Broken::Connection("dropped on purpose".into()))
            }
        }
    }

    /// After a mirror disagreement, the next connect asks for the whole state.
    pub fn forget_mirror(&mut self) {
        self.state = Value::Null;
        self.seq = 0;
    }
}

fn pending_request(state: &Value, kind: &str) -> Option<(String, Value)> {
    let requests = &state["requests"];
    requests["order"].as_array()?.iter().filter_map(|id| id.as_str()).find_map(|id| {
        let k = &requests["items"][id]["kind"];
        (k["type"] == kind).then(|| (id.to_string(), k.clone()))
    })
}

async fn read_json(ws: &mut Ws, timeout: Duration) -> Result<Value, String> {
    loop {
        let message = match tokio::time::timeout(timeout, ws.next()).await {
            Err(_) => return Err("timed out".into()),
            Ok(None) => return Err("closed".into()),
            Ok(Some(Err(e))) => return Err(e.to_string()),
            Ok(Some(Ok(m))) => m,
        };
        match message {
            Message::Text(text) => return serde_json::from_str(&text).map_err(|e| e.to_string()),
            Message::Close(_) => return Err("closed".into()),
            _ => continue, // pings are answered by tungstenite
        }
    }
}
