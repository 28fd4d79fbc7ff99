//! One WebSocket connection: the hello handshake, then commands in and frames out, with a window of
//! unacknowledged diffs, a command rate limit, a heartbeat and graceful shutdown.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use actix_ws::{CloseCode, CloseReason, Message, MessageStream, ProtocolError, Session};
use futures_util::StreamExt;
use tokio::sync::mpsc::Receiver;
use tracing::Instrument;
use vestibule_actors::protocol::{close, ClientMessage, CommandStatus, ProtocolErrorCode, ServerMessage, PROTOCOL_VERSION};
use vestibule_actors::runtime::{Attach, AttachError, ConnectionLink, CreateError, Detach, DropSignal, Execute, ModalSession, Outbound};
use vestibule_actors::session::{CommandError, RefusalCode};
use vestibule_store::SessionId;

use crate::limits::{ConnectionSlot, TokenBucket};
use crate::state::AppState;

pub struct Connection {
    state: Arc<AppState>,
    id: u64,
    project: String,
    origin: String,
    _slot: ConnectionSlot,
}

/// How the connection ends: a close frame with this code and reason.
struct Ending {
    code: u16,
    reason: String,
}

impl Ending {
    fn new(code: u16, reason: impl Into<String>) -> Self {
        Self { code, reason: reason.into() }
    }
}

fn error_frame(code: ProtocolErrorCode, message: &str, close: Option<u16>) -> String {
    serde_json::to_string(&ServerMessage::Error { code, message: message.into(), close }).expect("an error serializes")
}

/// A close frame's reason is at most 123 bytes (RFC 6455 5.5: control frames carry 125 bytes, two
/// of them the code); longer reasons are cut at a character boundary.
fn close_description(reason: &str) -> String {
    let mut end = reason.len().min(123);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    reason[..end].to_string()
}

fn valid_command_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The attached session.
struct Attached {
    session_id: SessionId,
    addr: actix::Addr<ModalSession>,
    outbound: Receiver<Outbound>,
    dropped: Arc<DropSignal>,
}

impl Connection {
    pub fn new(state: Arc<AppState>, project: String, origin: String, slot: ConnectionSlot) -> Self {
        let id = state.next_connection_id();
        Self { state, id, project, origin, _slot: slot }
    }

    pub async fn run(self, mut ws: Session, mut stream: MessageStream) {
        let span = tracing::info_span!("connection", connection = self.id, project = %self.project, session = tracing::field::Empty);
        async move {
            self.state.metrics.connections.inc();
            self.state.metrics.connections_opened.inc();
            let ending = match self.handshake(&mut ws, &mut stream).await {
                Ok(attached) => {
                    tracing::Span::current().record("session", tracing::field::display(attached.session_id));
                    let addr = attached.addr.clone();
                    let ending = self.serve(&mut ws, &mut stream, attached).await;
                    addr.do_send(Detach { connection: self.id });
                    ending
                }
                Err(ending) => ending,
            };
            self.state.metrics.connections.dec();
            tracing::debug!(code = ending.code, reason = %ending.reason, "connection closed");
            let reason = CloseReason { code: CloseCode::from(ending.code), description: Some(close_description(&ending.reason)) };
            // A client that does not read could block the close frame forever.
            let _ = tokio::time::timeout(self.state.config.limits.write_timeout, ws.close(Some(reason))).await;
        }
        .instrument(span)
        .await
    }

    async fn send_text(&self, ws: &mut Session, text: &str) -> Result<(), Ending> {
        match tokio::time::timeout(self.state.config.limits.write_timeout, ws.text(text.to_string())).await {
            Ok(Ok(())) => {
                self.state.metrics.frames_sent.inc();
                Ok(())
            }
            Ok(Err(_)) => Err(Ending::new(close::NORMAL, "closed")),
            Err(_) => {
                self.state.metrics.refusal("write_timeout");
                Err(Ending::new(close::TOO_SLOW, "the client does not read"))
            }
        }
    }

    /// Sends an error and ends the connection with `code`.
    async fn fail(&self, ws: &mut Session, code: ProtocolErrorCode, message: &str, close_code: u16) -> Ending {
        let _ = self.send_text(ws, &error_frame(code, message, Some(close_code))).await;
        Ending::new(close_code, message)
    }

    async fn handshake(&self, ws: &mut Session, stream: &mut MessageStream) -> Result<Attached, Ending> {
        let limits = &self.state.config.limits;
        let first = match tokio::time::timeout(limits.hello_timeout, next_text(stream)).await {
            Err(_) => return Err(self.fail(ws, ProtocolErrorCode::BadHello, "no hello in time", close::BAD_HELLO).await),
            Ok(Err(ending)) => return Err(ending),
            Ok(Ok(text)) => text,
        };
        let hello = match serde_json::from_str::<ClientMessage>(&first) {
            Ok(hello @ ClientMessage::Hello { .. }) => hello,
            Ok(_) => return Err(self.fail(ws, ProtocolErrorCode::BadHello, "the first message must be hello", close::BAD_HELLO).await),
            Err(e) => {
                let message = format!("the first message must be hello: {e}");
                return Err(self.fail(ws, ProtocolErrorCode::BadHello, &message, close::BAD_HELLO).await);
            }
        };
        let ClientMessage::Hello { protocol, project_id, session_id, resume_token, last_seq, options } = hello else { unreachable!() };
        if protocol != PROTOCOL_VERSION {
            let message = format!("this server speaks protocol {PROTOCOL_VERSION}, the client {protocol}");
            return Err(self.fail(ws, ProtocolErrorCode::UnsupportedProtocol, &message, close::UNSUPPORTED_PROTOCOL).await);
        }
        if project_id != self.project {
            return Err(self.fail(ws, ProtocolErrorCode::BadHello, "hello.projectId differs from the URL's projectId", close::BAD_HELLO).await);
        }
        let registry = &self.state.registry;
        let (session_id, new_token, last_seq) = match session_id {
            None => match registry.create(&self.project, &self.origin, options.unwrap_or_default()).await {
                Ok((id, token)) => {
                    tracing::info!(session = %id, "session created");
                    (id, Some(token), None)
                }
                Err(CreateError::InvalidOptions(e)) => {
                    self.state.metrics.refusal(ProtocolErrorCode::InvalidOptions.as_str());
                    return Err(self.fail(ws, ProtocolErrorCode::InvalidOptions, &e.to_string(), close::BAD_HELLO).await);
                }
                Err(e) => {
                    tracing::error!(error = %e, "creating a session failed");
                    return Err(self.fail(ws, ProtocolErrorCode::Internal, "the session could not be created", close::INTERNAL).await);
                }
            },
            Some(text) => {
                let authorized = match (text.parse::<SessionId>(), resume_token) {
                    (Ok(id), Some(token)) => registry.authorize(id, &token).await.map(|()| id),
                    _ => Err(AttachError::Unauthorized),
                };
                match authorized {
                    Ok(id) => (id, None, last_seq),
                    Err(AttachError::Unauthorized) => {
                        self.state.metrics.refusal(ProtocolErrorCode::Unauthorized.as_str());
                        tracing::info!("resume refused");
                        return Err(self.fail(ws, ProtocolErrorCode::Unauthorized, "unauthorized", close::UNAUTHORIZED).await);
                    }
                    Err(AttachError::Store(e)) => {
                        tracing::error!(error = %e, "authorizing a resume failed");
                        return Err(self.fail(ws, ProtocolErrorCode::Internal, "the session could not be read", close::INTERNAL).await);
                    }
                }
            }
        };
        let (link, outbound, dropped) = ConnectionLink::new(self.id, limits.outbound_queue);
        let addr = registry.session(session_id);
        match addr.send(Attach { link, last_seq, new_resume_token: new_token }).await {
            Ok(Ok(())) => Ok(Attached { session_id, addr, outbound, dropped }),
            Ok(Err(CommandError { message, .. })) => {
                tracing::error!(session = %session_id, %message, "attach refused");
                Err(self.fail(ws, ProtocolErrorCode::Internal, "the session is unavailable", close::INTERNAL).await)
            }
            Err(_) => Err(self.fail(ws, ProtocolErrorCode::Busy, "the session is busy; retry", close::INTERNAL).await),
        }
    }

    async fn serve(&self, ws: &mut Session, stream: &mut MessageStream, mut attached: Attached) -> Ending {
        let limits = &self.state.config.limits;
        let mut unacked: VecDeque<u64> = VecDeque::new();
        let mut bucket = TokenBucket::new(limits.commands_per_second, limits.command_burst);
        let mut rate_limit_logged = false;
        let mut last_heard = Instant::now();
        let mut heartbeat = tokio::time::interval(limits.heartbeat_interval);
        heartbeat.tick().await;
        let mut shutdown = self.state.shutdown_signal();
        loop {
            let window_open = unacked.len() < limits.unacked_diffs;
            tokio::select! {
                incoming = stream.next() => {
                    let message = match incoming {
                        None => return Ending::new(close::NORMAL, "client went away"),
                        Some(Err(ProtocolError::Overflow)) => {
                            self.state.metrics.refusal(ProtocolErrorCode::FrameTooLarge.as_str());
                            tracing::info!(max = limits.max_frame_bytes, "frame too large");
                            let message = format!("frames are limited to {} bytes", limits.max_frame_bytes);
                            return self.fail(ws, ProtocolErrorCode::FrameTooLarge, &message, close::TOO_BIG).await;
                        }
                        Some(Err(e)) => return Ending::new(close::POLICY, format!("protocol error: {e}")),
                        Some(Ok(message)) => message,
                    };
                    last_heard = Instant::now();
                    self.state.metrics.frames_received.inc();
                    match message {
                        Message::Text(text) => {
                            if let Err(ending) = self.on_text(ws, &text, &attached, &mut unacked, &mut bucket, &mut rate_limit_logged).await {
                                return ending;
                            }
                        }
                        Message::Binary(_) => {
                            self.state.metrics.refusal("binary_frame");
                            let frame = error_frame(ProtocolErrorCode::MalformedMessage, "frames are JSON text", None);
                            if let Err(ending) = self.send_text(ws, &frame).await { return ending; }
                        }
                        Message::Ping(bytes) => { let _ = ws.pong(&bytes).await; }
                        Message::Pong(_) | Message::Nop => {}
                        Message::Continuation(_) => {
                            return self.fail(ws, ProtocolErrorCode::MalformedMessage, "fragmented frames are not supported", close::POLICY).await;
                        }
                        Message::Close(_) => return Ending::new(close::NORMAL, "client closed"),
                    }
                }
                code = attached.dropped.dropped() => return self.dropped_by_session(ws, code).await,
                frame = attached.outbound.recv(), if window_open => {
                    let Some(frame) = frame else {
                        let code = match attached.dropped.code() { 0 => close::INTERNAL, c => c };
                        return self.dropped_by_session(ws, code).await;
                    };
                    let text = match frame {
                        Outbound::Diff { seq, text } => { unacked.push_back(seq); text }
                        Outbound::Message(text) => text,
                    };
                    if let Err(ending) = self.send_text(ws, &text).await { return ending; }
                }
                _ = heartbeat.tick() => {
                    if last_heard.elapsed() > limits.heartbeat_timeout {
                        self.state.metrics.refusal(ProtocolErrorCode::HeartbeatTimeout.as_str());
                        return self.fail(ws, ProtocolErrorCode::HeartbeatTimeout, "no traffic from the client", close::HEARTBEAT_TIMEOUT).await;
                    }
                    if ws.ping(b"").await.is_err() {
                        return Ending::new(close::NORMAL, "closed");
                    }
                }
                _ = shutdown.changed() => {
                    return self.fail(ws, ProtocolErrorCode::ShuttingDown, "the server is restarting; resume shortly", close::GOING_AWAY).await;
                }
            }
        }
    }

    /// The session dropped this connection: too far behind, or the session stopped.
    async fn dropped_by_session(&self, ws: &mut Session, code: u16) -> Ending {
        let (kind, message) = if code == close::TOO_SLOW {
            self.state.metrics.refusal(ProtocolErrorCode::TooSlow.as_str());
            (ProtocolErrorCode::TooSlow, "too many unacknowledged diffs; resume with lastSeq")
        } else {
            (ProtocolErrorCode::Internal, "the session stopped; resume with lastSeq")
        };
        tracing::info!(code, "the session dropped this connection");
        self.fail(ws, kind, message, code).await
    }

    async fn on_text(
        &self,
        ws: &mut Session,
        text: &str,
        attached: &Attached,
        unacked: &mut VecDeque<u64>,
        bucket: &mut TokenBucket,
        rate_limit_logged: &mut bool,
    ) -> Result<(), Ending> {
        let message = match serde_json::from_str::<ClientMessage>(text) {
            Ok(message) => message,
            Err(e) => {
                // Tell apart an unknown message type from malformed JSON, for the client's sake.
                let value: Option<serde_json::Value> = serde_json::from_str(text).ok();
                let known = ["hello", "command", "ack", "ping"];
                let code = match value.as_ref().and_then(|v| v.get("type")).and_then(|t| t.as_str()) {
                    Some(t) if !known.contains(&t) => ProtocolErrorCode::UnknownMessageType,
                    _ => ProtocolErrorCode::MalformedMessage,
                };
                self.state.metrics.refusal(code.as_str());
                tracing::debug!(kind = code.as_str(), "refused a frame");
                return self.send_text(ws, &error_frame(code, &e.to_string(), None)).await;
            }
        };
        match message {
            ClientMessage::Hello { .. } => {
                self.send_text(ws, &error_frame(ProtocolErrorCode::BadHello, "already attached", None)).await
            }
            ClientMessage::Ping { nonce } => {
                self.send_text(ws, &serde_json::to_string(&ServerMessage::Pong { nonce }).expect("pong serializes")).await
            }
            ClientMessage::Ack { seq } => {
                while unacked.front().is_some_and(|s| *s <= seq) {
                    unacked.pop_front();
                }
                Ok(())
            }
            ClientMessage::Command { id, command } => {
                let refuse = |code: RefusalCode, message: &str| {
                    serde_json::to_string(&ServerMessage::Result {
                        command_id: id.clone(),
                        status: CommandStatus::Refused,
                        seq: None,
                        error: Some(CommandError::new(code, message)),
                    })
                    .expect("a result serializes")
                };
                if !valid_command_id(&id) {
                    self.state.metrics.refusal(ProtocolErrorCode::MalformedMessage.as_str());
                    let frame = error_frame(ProtocolErrorCode::MalformedMessage, "a command id is 1 to 64 of A-Z a-z 0-9 - _", None);
                    return self.send_text(ws, &frame).await;
                }
                if !bucket.try_take() {
                    self.state.metrics.refusal(RefusalCode::RateLimited.as_str());
                    if !*rate_limit_logged {
                        *rate_limit_logged = true;
                        tracing::info!(command_id = %id, "commands rate limited on this connection");
                    }
                    return self.send_text(ws, &refuse(RefusalCode::RateLimited, "too many commands; slow down")).await;
                }
                tracing::debug!(command_id = %id, command = command.type_name(), "command");
                match attached.addr.try_send(Execute { command_id: id.clone(), command, reply_to: Some(self.id) }) {
                    Ok(()) => Ok(()),
                    Err(_) => {
                        self.state.metrics.refusal(RefusalCode::Busy.as_str());
                        self.send_text(ws, &refuse(RefusalCode::Busy, "the session is busy; retry")).await
                    }
                }
            }
        }
    }
}

/// The next text frame, answering pings on the way.
async fn next_text(stream: &mut MessageStream) -> Result<String, Ending> {
    loop {
        match stream.next().await {
            None => return Err(Ending::new(close::NORMAL, "client went away")),
            Some(Err(ProtocolError::Overflow)) => return Err(Ending::new(close::TOO_BIG, "frame too large")),
            Some(Err(e)) => return Err(Ending::new(close::POLICY, format!("protocol error: {e}"))),
            Some(Ok(Message::Text(text))) => return Ok(text.to_string()),
            Some(Ok(Message::Close(_))) => return Err(Ending::new(close::NORMAL, "client closed")),
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Nop)) => continue,
            Some(Ok(_)) => return Err(Ending::new(close::BAD_HELLO, "the first message must be a hello text frame")),
        }
    }
}

