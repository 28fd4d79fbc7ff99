//! One simulated visitor: a real WebSocket client speaking the protocol as the widget does. It
//! mirrors the session (patch + state hash on every diff, re-serializing only the regions a diff touches), acks, checks seq continuity, answers the
//! session's wallet requests as a wallet would (signing with a real key), and resumes with its
//! `lastSeq` when the connection drops.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::signers::SignerSync;
use alloy::signers::local::PrivateKeySigner;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use vestibule_actors::protocol::{ClientMessage, CommandStatus};
use vestibule_actors::session::RefusalCode;
use vestibule_actors::session::wire::{self, StateMirror};

use super::devnet::{AccountWallet, Devnet};
use super::inbound::{Inbound, Kind};
use super::metrics::Metrics;
use super::scenario::{Class, Scenario, Step};

/// Where and how visitors connect.
pub struct Target {
    /// The gateways: a visitor opens its session on `addrs[index % len]` and resumes on the next
    /// one each time it reconnects.
    pub addrs: Vec<SocketAddr>,
    pub project: String,
    pub origin: String,
    pub source_addrs: Vec<IpAddr>,
    /// The protocol version the visitors speak (`--protocol`): the current one, or 1 to drive a
    /// gateway from before the two-level state hash (decision 0311) for a before/after figure.
    pub protocol: u32,
    /// Gateways known dead (a failover run's SIGKILLed one: never tried again) and the visitors'
    /// unplanned drops and resumes (`failover.rs`).
    pub outages: Arc<super::failover::Outages>,
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
    mirror: StateMirror,
    next_command: u64,
    step: usize,
    /// Commands the server accepted that must be in the log: (command id, result seq).
    pub must_persist: Vec<String>,
    /// Commands that got a `result` (accepted or refused): proof of a round trip.
    pub answered: u64,
    /// The `account` scenario: the devnet and the address this visitor connects with.
    account: Option<(Arc<Devnet>, Arc<AccountWallet>)>,
    /// Chain effects in flight, each with when the command that started it was sent: the
    /// balance fetch, the activity page, and the receipts of sent transactions (by hash).
    balances_since: Option<Instant>,
    activity_since: Option<Instant>,
    receipts_waiting: Vec<(String, Instant)>,
    /// Which of the target's gateways this visitor's socket is (or will be) on, and which one
    /// opened its session (its owner, as long as that gateway lives).
    gateway: usize,
    home: usize,
    /// The next `drop_connection` is the scenario's own (a planned reconnect), not a lost socket.
    dropping_on_purpose: bool,
    /// Acks written to the socket's buffer but not yet sent: they go out with the next command, in
    /// the same write, or before the visitor waits without one (`flush_acks`).
    acks_unsent: bool,
}

impl Visitor {
    pub fn new(index: usize, target: Arc<Target>, metrics: Arc<Metrics>, scenario: Scenario) -> Self {
        // A distinct, valid secp256k1 key per visitor (index + 1 is never 0 or above the order).
        let mut key = [0u8; 32];
        key[24..].copy_from_slice(&(index as u64 + 1).to_be_bytes());
        key[0] = 0x11;
        let gateway = index % target.addrs.len().max(1);
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
            mirror: StateMirror::new(Value::Null),
            next_command: 0,
            step: 0,
            must_persist: Vec::new(),
            answered: 0,
            account: None,
            balances_since: None,
            activity_since: None,
            receipts_waiting: Vec::new(),
            gateway,
            home: gateway,
            dropping_on_purpose: false,
            acks_unsent: false,
        }
    }

    /// Connects with `wallet`'s address on the devnet's first network, and sends for real.
    pub fn with_account(mut self, devnet: Arc<Devnet>, wallet: Arc<AccountWallet>) -> Self {
        self.account = Some((devnet, wallet));
        self
    }

    /// Steps run so far.
    pub fn steps_done(&self) -> usize {
        self.step
    }

    async fn open_socket(&self) -> Result<Ws, String> {
        let addr = self.target.addrs[self.gateway];
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
        // tungstenite's default read buffer is 128 KiB, zero-filled on the first read: resident for
        // the connection's life, 12 GiB for 100,000 visitors. Frames larger than 4 KiB (a welcome
        // with the whole state) grow it for as long as they need.
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(4096);
        let (ws, _) = tokio_tungstenite::client_async_with_config(request, stream, Some(config)).await.map_err(|e| e.to_string())?;
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
                Err(e) => {
                    // Counted apart from errors: retries are expected while a gateway restarts.
                    self.metrics.count(&format!("connect_retry:{}", failure_reason(&e)));
                    // A gateway that refuses (or is dead): try the next one still alive.
                    self.gateway = self.target.outages.next_live(self.gateway, self.target.addrs.len());
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
                let mut hello = json!({ "type": "hello", "protocol": self.target.protocol, "projectId": self.target.project, "sessionId": id, "resumeToken": token });
                if !self.mirror.state().is_null() {
                    hello["lastSeq"] = json!(self.seq);
                }
                hello
            }
            _ => {
                let networks = self.account.as_ref().map(|(devnet, _)| &devnet.networks_option);
                json!({ "type": "hello", "protocol": self.target.protocol, "projectId": self.target.project, "options": self.scenario.options(networks) })
            }
        };
        ws.send(Message::text(hello.to_string())).await.map_err(|e| e.to_string())?;
        let welcome = read_value(&mut ws, Duration::from_secs(10)).await.map_err(|e| format!("no welcome: {e}"))?;
        if welcome["type"] != "welcome" {
            return Err(format!("refused: {}", welcome["code"].as_str().unwrap_or("unknown")));
        }
        let resumed = self.session_id.is_some();
        if !resumed {
            self.home = self.gateway;
            self.session_id = welcome["sessionId"].as_str().map(str::to_string);
            self.resume_token = welcome["resumeToken"].as_str().map(str::to_string);
        }
        if welcome["resumed"] != json!(true) {
            // The whole state's hash from its JSON as received (a key that is no region counts too);
            // from then on the mirror serializes only the regions a diff touches.
            let state = welcome["state"].clone();
            self.seq = welcome["seq"].as_u64().unwrap_or(0);
            let hash = if self.target.protocol == 1 { wire::legacy_state_hash(&state) } else { wire::state_hash(&state) };
            self.mirror = StateMirror::new(state);
            if hash != welcome["stateHash"].as_str().unwrap_or_default() {
                self.metrics.hash_mismatch();
            }
        } else if welcome["seq"].as_u64() == Some(self.seq) {
            // Resumed at the mirror's own seq: no diff follows to prove the state, so the welcome's
            // hash must be the mirror's (a gateway that lost the visitor's last events and moved
            // on to the same seq has another state).
            let hash = if self.target.protocol == 1 { self.mirror.legacy_hash() } else { self.mirror.hash() };
            if hash != welcome["stateHash"].as_str().unwrap_or_default() {
                self.metrics.hash_mismatch();
            }
        }
        self.ws = Some(ws);
        self.acks_unsent = false;
        self.metrics.connected(resumed);
        if resumed {
            self.target.outages.resumed(self.index);
        }
        Ok(())
    }

    pub fn drop_connection(&mut self) {
        // The resume goes to the next live gateway (with one gateway, the same); once per connection.
        if self.ws.take().is_some() {
            if !std::mem::take(&mut self.dropping_on_purpose) {
                self.target.outages.dropped(self.index);
            }
            self.gateway = self.target.outages.next_live(self.gateway, self.target.addrs.len());
        }
    }

    pub fn is_connected(&self) -> bool {
        self.ws.is_some()
    }

    /// Applies one diff to the mirror; `false` if it does not follow on (a gap or a repeat) or
    /// the hash disagrees, in which case the mirror must be rebuilt.
    fn apply_diff(&mut self, diff: &mut Inbound) -> bool {
        if diff.prev_seq != Some(self.seq) {
            eprintln!(
                "GAP: visitor {} session {} mirrors seq {}, got a diff with prevSeq {:?} seq {:?} (events {})",
                self.index,
                self.session_id.as_deref().unwrap_or("?"),
                self.seq,
                diff.prev_seq,
                diff.seq,
                diff.event_count()
            );
            self.metrics.gap();
            return false;
        }
        let Some(patch) = diff.patch.take() else {
            self.metrics.error("bad_patch");
            return false;
        };
        if self.mirror.apply(patch).is_err() {
            self.metrics.error("bad_patch");
            return false;
        }
        let hash = if self.target.protocol == 1 { self.mirror.legacy_hash() } else { self.mirror.hash() };
        if diff.state_hash.as_deref() != Some(hash.as_str()) {
            self.metrics.hash_mismatch();
            return false;
        }
        self.seq = diff.seq.unwrap_or(self.seq);
        self.metrics.events(diff.event_count());
        true
    }

    /// Acknowledges the mirror's seq: written to the socket's buffer, sent with whatever is sent
    /// next (a visitor answering a diff and then sending its next command makes one write of both,
    /// as the widget's transport does within one task). Acks are cumulative (`docs/protocol.md`).
    async fn ack(&mut self) -> Result<(), Broken> {
        let ack = serde_json::to_string(&ClientMessage::Ack { seq: self.seq }).expect("an ack serializes");
        let ws = self.ws.as_mut().ok_or_else(|| Broken::Connection("not connected".into()))?;
        ws.feed(Message::text(ack)).await.map_err(|e| Broken::Connection(e.to_string()))?;
        self.acks_unsent = true;
        Ok(())
    }

    /// Sends the acks still in the socket's buffer: before waiting with nothing to send, so that the
    /// gateway's window of unacknowledged diffs never waits on the visitor's next command.
    pub async fn flush_acks(&mut self) -> Result<(), Broken> {
        if !std::mem::take(&mut self.acks_unsent) {
            return Ok(());
        }
        let ws = self.ws.as_mut().ok_or_else(|| Broken::Connection("not connected".into()))?;
        ws.flush().await.map_err(|e| Broken::Connection(e.to_string()))
    }

    /// After every diff applied: notes the chain effects that started (`started`: when the command
    /// that started them was sent, or now for a diff nobody asked for) and times those whose
    /// outcome the state now shows.
    fn observe_effects(&mut self, started: Instant) {
        if self.account.is_none() {
            return;
        }
        for (which, name) in [("balances", "balances"), ("activity", "activity")] {
            let pending = !self.mirror.state()[which]["pending"].is_null();
            let since = if which == "balances" { &mut self.balances_since } else { &mut self.activity_since };
            match (*since, pending) {
                (None, true) => *since = Some(started),
                (Some(at), false) => {
                    *since = None;
                    self.metrics.effect(name, at.elapsed());
                    self.metrics.count(&format!("{name}:{}", self.mirror.state()[which]["status"].as_str().unwrap_or("unknown")));
                }
                _ => {}
            }
        }
        let sent = &self.mirror.state()["send"]["sent"];
        let (metrics, receipts) = (&self.metrics, &mut self.receipts_waiting);
        receipts.retain(|(hash, at)| {
            let status = sent
                .as_array()
                .and_then(|all| all.iter().find(|s| s["hash"].as_str() == Some(hash.as_str())))
                .and_then(|s| s["status"].as_str());
            match status {
                Some("pending") | None => true,
                Some(status) => {
                    metrics.effect("receipt", at.elapsed());
                    metrics.count(&format!("receipt:{status}"));
                    false
                }
            }
        });
    }

    /// Whether a chain effect this visitor started is still without an outcome.
    pub fn effects_in_flight(&self) -> bool {
        self.balances_since.is_some() || self.activity_since.is_some() || !self.receipts_waiting.is_empty()
    }

    /// Reads, applies and acks diffs for `duration` (a visitor thinking, or waiting for its chain
    /// effects), so that their outcomes are timed when they arrive, not at the next command.
    pub async fn think(&mut self, duration: Duration) -> Result<(), Broken> {
        let until = Instant::now() + duration;
        loop {
            self.flush_acks().await?;
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            let ws = self.ws.as_mut().ok_or_else(|| Broken::Connection("not connected".into()))?;
            let mut frame = match read_frame(ws, left).await {
                Ok(f) => f,
                Err(e) if e == "timed out" => return Ok(()),
                Err(e) => return Err(Broken::Connection(e)),
            };
            if frame.kind == Kind::Diff {
                if !self.apply_diff(&mut frame) {
                    return Err(Broken::Resync);
                }
                self.observe_effects(Instant::now());
                self.ack().await?;
            }
        }
    }

    /// Waits for `go` (the traffic's start) while reading, as a widget left open does: tungstenite
    /// answers the gateway's pings as it reads them, diffs are applied and acked, so an idle visitor
    /// is a live client the heartbeat keeps, not a silent one it closes after `heartbeat_timeout`.
    /// A connection lost meanwhile is counted (`idle_drop:<why>`) and resumed until `deadline()`.
    pub async fn idle_until(&mut self, go: &mut tokio::sync::watch::Receiver<bool>, deadline: impl Fn() -> Instant) {
        loop {
            if *go.borrow() {
                return;
            }
            let flushed = self.flush_acks().await;
            let lost = match (flushed, self.ws.as_mut()) {
                (Err(lost), _) => Some(lost),
                (Ok(()), None) => Some(Broken::Connection("not connected".into())),
                (Ok(()), Some(ws)) => {
                    let frame = tokio::select! {
                        _ = go.wait_for(|g| *g) => return,
                        // Cancel-safe: a frame is taken off the stream only when `next` completes.
                        frame = read_frame(ws, Duration::from_secs(3600)) => frame,
                    };
                    match frame {
                        Ok(mut frame) if frame.kind == Kind::Diff => {
                            if self.apply_diff(&mut frame) {
                                self.observe_effects(Instant::now());
                                self.ack().await.err()
                            } else {
                                Some(Broken::Resync)
                            }
                        }
                        Ok(_) => None,
                        Err(e) if e == "timed out" => None,
                        Err(e) => Some(Broken::Connection(e)),
                    }
                }
            };
            let Some(lost) = lost else { continue };
            let why = match &lost {
                Broken::Connection(e) => failure_reason(e),
                Broken::Resync => "resync".to_string(),
            };
            self.metrics.error(&format!("idle_drop:{why}"));
            self.drop_connection();
            if matches!(lost, Broken::Resync) {
                self.forget_mirror();
            }
            if let Err(e) = self.connect(deadline()).await {
                self.metrics.error(&format!("reconnect_failed:{}", failure_reason(&e)));
                return;
            }
        }
    }

    /// After the last step: waits (reading diffs) until every chain effect this visitor started
    /// has its outcome, for at most `patience`; counts those that never came.
    pub async fn settle(&mut self, patience: Duration) -> Result<(), Broken> {
        let until = Instant::now() + patience;
        while self.effects_in_flight() && Instant::now() < until {
            self.think(Duration::from_millis(200).min(until.saturating_duration_since(Instant::now()))).await?;
        }
        if self.balances_since.is_some() {
            self.metrics.error("effect_unfinished:balances");
        }
        if self.activity_since.is_some() {
            self.metrics.error("effect_unfinished:activity");
        }
        for _ in &self.receipts_waiting {
            self.metrics.error("effect_unfinished:receipt");
        }
        Ok(())
    }

    /// Sends a command and waits for its result and (if it changed the state) its diff, applying
    /// and acking every diff on the way (timers produce diffs nobody asked for).
    async fn execute(&mut self, command: Value, always_writes: bool, class: Class) -> Result<(), Broken> {
        self.next_command += 1;
        let id = format!("v{}c{}", self.index, self.next_command);
        // Written as it reads (a `Value` displays as compact JSON): no map built to serialize.
        let text = format!(r#"{{"type":"command","id":"{id}","command":{command}}}"#);
        // The acks of the diffs before it go out in the same write (`ack`).
        self.acks_unsent = false;
        let effects_before = self.effects_in_flight();
        let ws = self.ws.as_mut().ok_or_else(|| Broken::Connection("not connected".into()))?;
        let sent = Instant::now();
        ws.send(Message::text(text.clone())).await.map_err(|e| Broken::Connection(e.to_string()))?;
        // The latest send of this command (a transient refusal sends it again, same id).
        let mut attempt_sent = sent;
        let mut retry_delay = Duration::from_millis(20);
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
            let left = Duration::from_secs(10).saturating_sub(attempt_sent.elapsed());
            if left.is_zero() {
                self.metrics.error(if result_seq.is_some() { "diff_timeout" } else { "result_timeout" });
                return Err(Broken::Connection("no answer within 10 s".into()));
            }
            let ws = self.ws.as_mut().ok_or_else(|| Broken::Connection("not connected".into()))?;
            let (mut frame, arrived) = match read_frame_timed(ws, left).await {
                Ok(f) => f,
                Err(e) if e == "timed out" => {
                    self.metrics.error(if result_seq.is_some() { "diff_timeout" } else { "result_timeout" });
                    return Err(Broken::Connection(e));
                }
                Err(e) => return Err(Broken::Connection(e)),
            };
            match frame.kind {
                Kind::Diff => {
                    if !self.apply_diff(&mut frame) {
                        return Err(Broken::Resync);
                    }
                    let ours = frame.first_correlation() == Some(id.as_str());
                    if ours {
                        diff_seen = true;
                        let latency = arrived.duration_since(sent);
                        self.metrics.diff(latency);
                        self.metrics.class_diff(class.name(), latency);
                        if self.target.addrs.len() > 1 {
                            self.metrics.class_diff(
                                if self.gateway == self.home { "via the owner gateway" } else { "via another gateway (proxied)" },
                                latency,
                            );
                        }
                        if class == Class::NonChain && effects_before {
                            // The subset the target is about: this session's own chain effect
                            // was in flight when the command was sent.
                            self.metrics.class_diff("non-chain, own chain effect in flight", latency);
                        }
                        self.must_persist.push(id.clone());
                    }
                    self.observe_effects(if ours { sent } else { Instant::now() });
                    self.ack().await?;
                }
                Kind::Result if frame.command_id.as_deref() == Some(id.as_str()) => {
                    let accepted = frame.status == Some(CommandStatus::Accepted);
                    let code = frame.code_name();
                    let transient = frame.refusal().is_some_and(|code| TRANSIENT_REFUSALS.contains(&code));
                    if !accepted && transient && sent.elapsed() < TRANSIENT_PATIENCE {
                        // Not remembered by the session (docs/protocol.md): sent again with the
                        // same id, it runs. Counted apart from errors, as a widget retries it.
                        self.metrics.count(&format!("transient:{code}"));
                        tokio::time::sleep(retry_delay).await;
                        retry_delay = (retry_delay * 2).min(Duration::from_millis(500));
                        let ws = self.ws.as_mut().ok_or_else(|| Broken::Connection("not connected".into()))?;
                        attempt_sent = Instant::now();
                        ws.send(Message::text(text.clone())).await.map_err(|e| Broken::Connection(e.to_string()))?;
                        continue;
                    }
                    self.answered += 1;
                    self.metrics.result(arrived.duration_since(sent), accepted);
                    if !accepted {
                        self.metrics.error(&format!("refused:{code}"));
                        return Ok(());
                    }
                    if always_writes && !diff_seen {
                        // Its events are durable now even if the diff never arrives (a crash).
                        self.must_persist.push(id.clone());
                    }
                    result_seq = Some(frame.seq.unwrap_or(0));
                }
                Kind::Error => {
                    let code = frame.code_name();
                    if frame.close.is_none() {
                        // Closes are expected (a gateway or its lease gone); anything else is worth a line.
                        eprintln!("visitor {} session {}: error frame {frame:?}", self.index, self.session_id.as_deref().unwrap_or("?"));
                    }
                    self.metrics.error(&format!("protocol:{code}"));
                    if frame.close.is_some() {
                        return Err(Broken::Connection(code.to_string()));
                    }
                }
                Kind::Result | Kind::Other => {}
            }
        }
    }

    /// Runs the scenario's next step.
    pub async fn step(&mut self) -> Result<(), Broken> {
        if self.scenario.needs_balances(self.step) {
            // Bounded by the RPC policy's whole-call limit (30 s) and then some.
            let until = Instant::now() + Duration::from_secs(60);
            while self.balances_since.is_some() && Instant::now() < until {
                self.think(Duration::from_millis(50)).await?;
            }
        }
        let step = self.scenario.step(self.step, self.mirror.state());
        self.step += 1;
        match step {
            Step::Command { command, always_writes, class } => self.execute(command, always_writes, class).await,
            Step::AnswerConnect => {
                let Some(request) = pending_request(self.mirror.state(), "connect") else { return Ok(()) };
                let (address, chain_id) = match &self.account {
                    Some((devnet, wallet)) => (wallet.address.to_checksum(None), format!("0x{:x}", devnet.chain_id)),
                    None => (self.signer.address().to_checksum(None), "0x1".to_string()),
                };
                // With an account on a served network, connecting starts the first balance fetch.
                let class = if self.account.is_some() { Class::Chain } else { Class::NonChain };
                let outcome = json!({ "status": "ok", "result": { "accounts": [address], "chainId": chain_id } });
                self.execute(json!({ "type": "ResolveWalletRequest", "requestId": request.0, "outcome": outcome }), true, class).await
            }
            Step::AnswerSend => {
                let Some((devnet, wallet)) = self.account.clone() else { return Ok(()) };
                let Some((request_id, kind)) = pending_rpc(self.mirror.state(), "eth_sendTransaction") else { return Ok(()) };
                let started = Instant::now();
                let outcome = match devnet.send(&wallet, &kind["params"][0]).await {
                    Ok(hash) => {
                        self.metrics.count("sends");
                        // Waited for from now: its receipt's diff may come before this answer's result.
                        self.receipts_waiting.push((hash.to_ascii_lowercase(), started));
                        json!({ "status": "ok", "result": hash })
                    }
                    Err((code, message)) => {
                        self.metrics.error("send:node_refused");
                        json!({ "status": "error", "code": code, "message": message })
                    }
                };
                self.execute(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome }), true, Class::Chain)
                    .await
            }
            Step::AnswerSign => {
                let Some((request_id, kind)) = pending_request(self.mirror.state(), "signMessage") else { return Ok(()) };
                let message = kind["message"].as_str().unwrap_or_default();
                let signature = match self.signer.sign_message_sync(message.as_bytes()) {
                    Ok(s) => format!("0x{}", hex::encode(s.as_bytes())),
                    Err(e) => return Err(Broken::Connection(format!("signing failed: {e}"))),
                };
                let outcome = json!({ "status": "ok", "result": signature });
                self.execute(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome }), true, Class::NonChain)
                    .await
            }
            Step::Reconnect => {
                self.dropping_on_purpose = true;
                self.drop_connection();
                Err(Broken::Connection("dropped on purpose".into()))
            }
        }
    }

    /// The mirrored state's size in bytes of JSON (what each diff's hash check reads).
    pub fn state_bytes(&self) -> usize {
        self.mirror.state().to_string().len()
    }

    /// After a mirror disagreement, the next connect asks for the whole state.
    pub fn forget_mirror(&mut self) {
        self.mirror = StateMirror::new(Value::Null);
        self.seq = 0;
    }
}

/// Refusals a client retries with the same command id (docs/protocol.md): another writer moved the
/// session, the log failed (e.g. a NATS election), the session's mailbox was full.
pub const TRANSIENT_REFUSALS: [RefusalCode; 3] = [RefusalCode::Conflict, RefusalCode::StorageUnavailable, RefusalCode::Busy];

/// How long after its first send a transiently refused command is still sent again; past it the
/// refusal counts as an error (`refused:<code>`).
const TRANSIENT_PATIENCE: Duration = Duration::from_secs(60);

/// A connect failure's kind for counters: `refused: <code>`, `no welcome: <why>`, else the text before the first colon.
pub fn failure_reason(e: &str) -> String {
    if e.starts_with("refused: ") || e.starts_with("no welcome: ") {
        e.chars().take(60).collect()
    } else {
        e.split(':').next().unwrap_or("failed").to_string()
    }
}

fn pending_request(state: &Value, kind: &str) -> Option<(String, Value)> {
    let requests = &state["requests"];
    requests["order"].as_array()?.iter().filter_map(|id| id.as_str()).find_map(|id| {
        let k = &requests["items"][id]["kind"];
        (k["type"] == kind).then(|| (id.to_string(), k.clone()))
    })
}

/// The pending wallet request for the JSON-RPC `method` (e.g. the Send view's
/// `eth_sendTransaction`).
fn pending_rpc(state: &Value, method: &str) -> Option<(String, Value)> {
    let requests = &state["requests"];
    requests["order"].as_array()?.iter().filter_map(|id| id.as_str()).find_map(|id| {
        let k = &requests["items"][id]["kind"];
        (k["type"] == "rpc" && k["method"] == method).then(|| (id.to_string(), k.clone()))
    })
}

/// The next text frame as a JSON value (the welcome, which carries the whole state).
async fn read_value(ws: &mut Ws, timeout: Duration) -> Result<Value, String> {
    let text = read_text(ws, timeout).await?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The next text frame after the welcome, read into what a visitor uses of it.
async fn read_frame(ws: &mut Ws, timeout: Duration) -> Result<Inbound, String> {
    read_frame_timed(ws, timeout).await.map(|(frame, _)| frame)
}

/// [`read_frame`], with when the frame was read off the socket: a diff's latency ends when the diff
/// arrives, before the visitor parses, applies and checks it (the harness's own work, which would
/// otherwise be counted as the gateway's).
async fn read_frame_timed(ws: &mut Ws, timeout: Duration) -> Result<(Inbound, Instant), String> {
    let text = read_text(ws, timeout).await?;
    let arrived = Instant::now();
    Ok((Inbound::parse(&text)?, arrived))
}

async fn read_text(ws: &mut Ws, timeout: Duration) -> Result<tokio_tungstenite::tungstenite::Utf8Bytes, String> {
    loop {
        let message = match tokio::time::timeout(timeout, ws.next()).await {
            Err(_) => return Err("timed out".into()),
            Ok(None) => return Err("closed".into()),
            Ok(Some(Err(e))) => return Err(e.to_string()),
            Ok(Some(Ok(m))) => m,
        };
        match message {
            Message::Text(text) => return Ok(text),
            Message::Close(frame) => return Err(format!("closed {}", frame.map_or(0, |f| u16::from(f.code)))),
            _ => continue, // pings are answered by tungstenite
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::net::TcpListener;

    use super::*;
    use crate::scenario::ScenarioKind;
    use vestibule_actors::protocol::PROTOCOL_VERSION;

    /// A gateway's heartbeat in miniature: welcome, then a ping every 100 ms; a client that has let
    /// `UNANSWERED_ALLOWED` pings in a row go by without a frame (no pong, nothing) is closed. Counts
    /// the pongs it got.
    ///
    /// Counted in pings, not timed: the test's single-threaded runtime (or the whole process) may be
    /// descheduled for a while on a busy machine, and a pause must not look like a visitor that
    /// stopped answering. After a pause the ticks resume at their pace (no burst), and frames already
    /// received are read before the next ping is counted. A visitor that never answers is closed
    /// after `UNANSWERED_ALLOWED` pings, and the test fails: the pongs it waits for never come.
    const UNANSWERED_ALLOWED: u32 = 30;

    async fn strict_gateway(pongs: Arc<AtomicUsize>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut ws = tokio_tungstenite::accept_async(stream).await.unwrap();
            let _hello = ws.next().await;
            let state = json!({});
            let welcome = json!({ "type": "welcome", "sessionId": "s1", "resumeToken": "t", "seq": 0, "state": state,
                "stateHash": wire::state_hash(&state) });
            ws.send(Message::text(welcome.to_string())).await.unwrap();
            let mut unanswered = 0;
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    frame = ws.next() => match frame {
                        Some(Ok(Message::Pong(_))) => { unanswered = 0; pongs.fetch_add(1, Ordering::SeqCst); }
                        Some(Ok(_)) => unanswered = 0,
                        _ => return,
                    },
                    _ = tick.tick() => {
                        if unanswered >= UNANSWERED_ALLOWED {
                            let _ = ws.close(None).await;
                            return;
                        }
                        if ws.send(Message::Ping(Default::default())).await.is_err() { return; }
                        unanswered += 1;
                    }
                }
            }
        });
        addr
    }

    #[tokio::test]
    async fn an_idle_visitor_answers_pings_so_the_heartbeat_keeps_it() {
        let pongs = Arc::new(AtomicUsize::new(0));
        let addr = strict_gateway(pongs.clone()).await;
        let target = Arc::new(Target {
            addrs: vec![addr],
            project: "demo".into(),
            origin: "http://localhost".into(),
            source_addrs: vec![],
            protocol: PROTOCOL_VERSION,
            outages: Arc::new(crate::failover::Outages::new(1, 0)),
        });
        let metrics = Arc::new(Metrics::new());
        let mut visitor = Visitor::new(0, target, metrics.clone(), Scenario::for_visitor(ScenarioKind::Connect, 0));
        visitor.connect(Instant::now() + Duration::from_secs(30)).await.unwrap();
        let (go, mut go_rx) = tokio::sync::watch::channel(false);
        let counted = pongs.clone();
        tokio::spawn(async move {
            // Counted, not timed: idling ends once the gateway has had ten pongs, which only a visitor
            // that keeps reading its socket while idle sends (tungstenite answers pings as it reads).
            while counted.load(Ordering::SeqCst) < 10 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let _ = go.send(true);
        });
        // A resume would fail (the fake serves one connection): any drop shows as an error. A visitor
        // that does not answer never reaches ten pongs, is closed after `UNANSWERED_ALLOWED` pings,
        // and ends here by the timeout (a bound, ten times as long) or by the error check below.
        tokio::time::timeout(Duration::from_secs(30), visitor.idle_until(&mut go_rx, || Instant::now())).await.expect("go ends the idling");
        let t = metrics.totals();
        assert!(t.errors.is_empty(), "the idle connection was kept: {:?}", t.errors);
        assert!(pongs.load(Ordering::SeqCst) >= 10, "pings answered while idle: {}", pongs.load(Ordering::SeqCst));
        assert!(visitor.is_connected());
    }
}
