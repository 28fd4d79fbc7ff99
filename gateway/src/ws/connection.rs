//! One WebSocket connection: the hello handshake, then commands in and frames out, with a window of
//! unacknowledged diffs, a per-session command rate limit, a heartbeat and graceful shutdown.
//!
//! The connection is one task that owns its socket (tungstenite over the raw TCP stream) and reads
//! one frame at a time: a frame whose header announces more than `limits.max_frame_bytes` is
//! refused before its payload is read, so a client can make the server hold at most one frame.
//! Text frames are written by the connection itself, straight from the session's shared text (see
//! `codec::text_frame_header`); tungstenite writes only control frames.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::frame::{CloseFrame, Utf8Bytes};
use tracing::Instrument;
use vestibule_actors::protocol::{ClientMessage, CommandStatus, PROTOCOL_VERSION, ProtocolErrorCode, ServerMessage, close};
use vestibule_actors::runtime::{
    Attach, AttachError, ConnectionLink, CreateError, Detach, DropNotice, Execute, ModalSession, Outbound, OutboundReceiver,
};
use vestibule_actors::session::{CommandError, RefusalCode, bounded_message};
use vestibule_store::SessionId;

use super::Socket;
use super::codec::{Incoming, classify, text_frame_header};
use super::hello::{HelloError, parse_hello};
use super::window::AckWindow;
use crate::cluster::{CommandOutcome, Route, RouteError};
use crate::limits::TokenBucket;
use crate::state::AppState;

/// After our close frame, how long (and how many bytes) the client's remaining data is read and
/// dropped before the socket is closed: closing with unread data sends a TCP reset, which may
/// destroy our last frames in the client's receive buffer before it has read them.
const LINGER: std::time::Duration = std::time::Duration::from_secs(1);
const LINGER_BYTES: usize = 256 * 1024;

pub struct Connection {
    state: Arc<AppState>,
    id: u64,
    project: String,
    origin: String,
    /// The client's address (the socket's peer, or what a trusted proxy forwarded), which new
    /// sessions, host reads and receipt waits are counted under.
    client: Option<std::net::IpAddr>,
}

/// How the connection ends.
enum Ending {
    /// We close with this code and reason (any error frame was sent before).
    Close { code: u16, reason: String },
    /// The client closed (its close frame is answered) or vanished.
    ClientGone,
}

impl Ending {
    fn close(code: u16, reason: impl Into<String>) -> Self {
        Ending::Close { code, reason: reason.into() }
    }
}

async fn next_incoming(ws: &mut Socket) -> Incoming {
    classify(ws.next().await)
}

/// At most this many queued frames go out in one write.
const OUTBOUND_BATCH: usize = 8;

/// A refusal of the command `id` decided by the gateway, not the session: it is not remembered, so
/// the same id sent again (corrected, or once the rate allows) runs.
fn refused_result(id: &str, code: RefusalCode, message: &str) -> String {
    let result = ServerMessage::Result {
        command_id: id.into(),
        status: CommandStatus::Refused,
        seq: None,
        error: Some(CommandError::new(code, message)),
    };
    serde_json::to_string(&result).expect("a result serializes")
}

/// The id of a `command` frame that does not read as one, if it has a valid id: its refusal can then
/// be a result the client can match to what it sent. Read from the top level of the frame's object
/// only ([`top_level_strings`]), so that a command nested deeper than JSON parsing allows (its
/// params 130 arrays deep) is still refused by its id: refused without one, it was never settled
/// and the widget sent it again after every reconnect (an outside review).
fn unreadable_command_id(text: &str) -> Option<String> {
    let [kind, id] = top_level_strings(text, ["type", "id"]);
    (kind.as_deref() == Some("command") && id.as_deref().is_some_and(valid_command_id)).then_some(id?)
}

/// The string values of the `keys` members of the JSON object `text`, at its top level, in one pass
/// without recursion, however deep the other members nest. A value that is not a plain string (one
/// with escapes included) reads as absent.
fn top_level_strings<const N: usize>(text: &str, keys: [&str; N]) -> [Option<String>; N] {
    let mut found: [Option<String>; N] = std::array::from_fn(|_| None);
    if !text.trim_start().starts_with('{') {
        return found;
    }
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    // The last string that ended at depth 1 followed by a colon: the member being read.
    let mut member: Option<(usize, usize)> = None;
    let mut expecting_key = false;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                let mut end = start;
                let mut escaped = false;
                while end < bytes.len() && bytes[end] != b'"' {
                    if bytes[end] == b'\\' {
                        escaped = true;
                        end += 1;
                    }
                    end += 1;
                }
                if depth == 1 {
                    if expecting_key {
                        member = Some((start, end.min(bytes.len())));
                        expecting_key = false;
                    } else if let Some((key_start, key_end)) = member.take()
                        && !escaped
                        && let Some(slot) = keys.iter().position(|k| k.as_bytes() == &bytes[key_start..key_end])
                    {
                        found[slot] = text.get(start..end).map(str::to_string);
                    }
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth == 1 && bytes[i] == b'{' {
                    expecting_key = true;
                }
                if depth == 2 {
                    member = None;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => {
                expecting_key = true;
                member = None;
            }
            _ => {}
        }
        i += 1;
    }
    found
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

/// A frame serialized once by the session and shared by every connection: handed to the socket
/// without a copy.
struct SharedText(Arc<str>);

impl AsRef<[u8]> for SharedText {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

fn shared_text(text: &Arc<str>) -> Utf8Bytes {
    Utf8Bytes::try_from(bytes::Bytes::from_owner(SharedText(text.clone()))).expect("a str is UTF-8")
}

/// Where the attached session runs.
enum Target {
    /// On this gateway.
    Local(actix::Addr<ModalSession>),
    /// On `owner`, which serves this connection through its link `link` (crate::cluster). The link
    /// (id and secret) boxed: unboxed, every connection's future, local ones included, is 32 B larger.
    Remote { owner: String, link: Box<crate::cluster::RemoteLink> },
}

/// The attached session.
struct Attached {
    session_id: SessionId,
    target: Target,
    outbound: OutboundReceiver,
    dropped: DropNotice,
    /// The session's command rate limit, shared with its other connections.
    commands: Arc<Mutex<TokenBucket>>,
}

impl Connection {
    /// The address the client is counted under (`limits::client_key`), when known.
    fn client(&self) -> Option<std::net::IpAddr> {
        self.client.map(crate::limits::client_key)
    }

    pub fn new(state: Arc<AppState>, project: String, origin: String, client: Option<std::net::IpAddr>) -> Self {
        let id = state.next_connection_id();
        Self { state, id, project, origin, client }
    }

    /// Serves the connection until it ends. Not an `async fn`: one keeps its arguments in the
    /// future's prefix besides the copies its body moves them into, so the socket and the
    /// connection would be resident twice for the connection's life (`connection_future_size`).
    pub fn run(self, mut ws: Socket) -> impl std::future::Future<Output = ()> {
        let span = tracing::info_span!("connection", connection = self.id, project = %self.project, session = tracing::field::Empty);
        async move {
            self.state.metrics.connections.inc();
            self.state.metrics.connections_opened.inc();
            // Boxed, as everything an idle connection does not wait in: the connection's future is
            // as large as its largest state, and it is resident for the connection's life.
            let ending = match Box::pin(self.handshake(&mut ws)).await {
                Ok(attached) => {
                    tracing::Span::current().record("session", tracing::field::display(attached.session_id));
                    let ending = self.serve(&mut ws, &attached).await;
                    self.detach(attached.target);
                    ending
                }
                Err(ending) => ending,
            };
            self.state.metrics.connections.dec();
            Box::pin(self.finish(&mut ws, ending)).await;
        }
        .instrument(span)
    }

    /// Takes this connection off its session.
    fn detach(&self, target: Target) {
        match target {
            Target::Local(addr) => addr.do_send(Detach { connection: self.id }),
            Target::Remote { owner, link } => {
                if let Some(cluster) = &self.state.cluster {
                    cluster.detach(&owner, &link);
                }
            }
        }
    }

    /// A frame the client sent before its welcome while its resume was routed (`early`), answered
    /// once the welcome is out: the welcome is the first frame a client gets. The widget sends
    /// nothing before its welcome; this keeps the order for a client that does.
    async fn answer_early(&self, ws: &mut Socket, attached: Attached, early: Option<Incoming>) -> Result<Attached, Ending> {
        let Some(early) = early else { return Ok(attached) };
        let answered = async {
            // The first frame the session queues for a connection is its welcome. None: the session
            // dropped the link, which `serve` reports.
            match attached.outbound.recv_async().await {
                Ok(Outbound::Message(text) | Outbound::Diff { text, .. }) => self.send_text(ws, shared_text(&text)).await?,
                Err(_) => return Ok(()),
            }
            match early {
                Incoming::Text(text) => {
                    let limits = &self.state.config.limits;
                    let mut window = AckWindow::new(limits.unacked_diffs, limits.ack_timeout);
                    Box::pin(self.on_text(ws, text.as_str(), &attached, &mut window, &mut false)).await
                }
                _ => {
                    self.state.metrics.refusal("binary_frame");
                    self.send_text(ws, error_frame(ProtocolErrorCode::MalformedMessage, "frames are JSON text", None).into()).await
                }
            }
        };
        match answered.await {
            Ok(()) => Ok(attached),
            Err(ending) => {
                self.detach(attached.target);
                Err(ending)
            }
        }
    }

    /// Sends the close frame (or answers the client's), then lets the socket go.
    async fn finish(&self, ws: &mut Socket, ending: Ending) {
        let timeout = self.state.config.limits.write_timeout;
        match ending {
            // Sends the answer to the client's close frame, if it sent one (tungstenite queued it).
            Ending::ClientGone => {
                let _ = tokio::time::timeout(timeout, ws.flush()).await;
            }
            Ending::Close { code, reason } => {
                tracing::debug!(code, %reason, "closing");
                let frame = CloseFrame { code: CloseCode::from(code), reason: close_description(&reason).into() };
                // A client that does not read could block the close frame forever.
                if let Ok(Ok(())) = tokio::time::timeout(timeout, ws.close(Some(frame))).await {
                    linger(ws).await;
                }
            }
        }
    }

    /// Sends a text frame: header and payload written straight to the socket (see
    /// [`text_frame_header`]), after whatever tungstenite still holds (a pong).
    async fn send_text(&self, ws: &mut Socket, text: Utf8Bytes) -> Result<(), Ending> {
        self.send_texts(ws, std::slice::from_ref(&text)).await
    }

    /// Sends text frames in one vectored write (a command's answer and its diff, queued together by
    /// the session, cost one system call and one segment instead of two), after whatever
    /// tungstenite still holds (a pong). The write timeout covers the whole batch, which
    /// [`OUTBOUND_BATCH`] bounds.
    async fn send_texts(&self, ws: &mut Socket, texts: &[Utf8Bytes]) -> Result<(), Ending> {
        let write = async {
            ws.flush().await.map_err(|_| ())?;
            let headers: Vec<([u8; 10], usize)> = texts.iter().map(|text| text_frame_header(text.len())).collect();
            let mut slices: Vec<std::io::IoSlice<'_>> = headers
                .iter()
                .zip(texts)
                .flat_map(|((header, n), text)| [std::io::IoSlice::new(&header[..*n]), std::io::IoSlice::new(text.as_bytes())])
                .collect();
            let mut unwritten = &mut slices[..];
            while !unwritten.is_empty() {
                match ws.get_mut().write_vectored(unwritten).await {
                    Ok(0) | Err(_) => return Err(()),
                    Ok(n) => std::io::IoSlice::advance_slices(&mut unwritten, n),
                }
            }
            Ok(())
        };
        match tokio::time::timeout(self.state.config.limits.write_timeout, write).await {
            Ok(Ok(())) => {
                self.state.metrics.frames_sent.inc_by(texts.len() as u64);
                Ok(())
            }
            Ok(Err(_)) => Err(Ending::ClientGone),
            Err(_) => {
                self.state.metrics.refusal("write_timeout");
                Err(Ending::close(close::TOO_SLOW, "the client does not read"))
            }
        }
    }

    /// Sends an error and ends the connection with `close_code`.
    async fn fail(&self, ws: &mut Socket, code: ProtocolErrorCode, message: &str, close_code: u16) -> Ending {
        if let Err(ending) = self.send_text(ws, error_frame(code, message, Some(close_code)).into()).await {
            return ending;
        }
        Ending::close(close_code, message)
    }

    /// The answer to a frame that breaks the rules of the socket itself (not of our protocol).
    async fn refuse_frame(&self, ws: &mut Socket, incoming: Incoming) -> Ending {
        let limits = &self.state.config.limits;
        match incoming {
            Incoming::TooLarge => {
                self.state.metrics.refusal(ProtocolErrorCode::FrameTooLarge.as_str());
                tracing::info!(max = limits.max_frame_bytes, "frame too large");
                let message = format!("messages are limited to {} bytes", limits.max_frame_bytes);
                self.fail(ws, ProtocolErrorCode::FrameTooLarge, &message, close::TOO_BIG).await
            }
            Incoming::InvalidUtf8 => {
                self.state.metrics.refusal("invalid_utf8");
                self.fail(ws, ProtocolErrorCode::MalformedMessage, "text frames must be UTF-8", close::INVALID_PAYLOAD).await
            }
            Incoming::Violation(violation) => {
                self.state.metrics.refusal("protocol_violation");
                tracing::info!(%violation, "WebSocket protocol violation");
                let message = format!("WebSocket protocol violation: {violation}");
                self.fail(ws, ProtocolErrorCode::MalformedMessage, &message, close::PROTOCOL_ERROR).await
            }
            Incoming::Gone => Ending::ClientGone,
            Incoming::Text(_) | Incoming::Binary | Incoming::Control => unreachable!("not a refusal"),
        }
    }

    /// The first text frame, within the hello timeout.
    async fn first_text(&self, ws: &mut Socket) -> Result<Utf8Bytes, Ending> {
        loop {
            match next_incoming(ws).await {
                Incoming::Text(text) => return Ok(text),
                Incoming::Control => continue,
                Incoming::Binary => {
                    self.state.metrics.refusal("binary_frame");
                    return Err(self
                        .fail(ws, ProtocolErrorCode::BadHello, "the first message must be a hello text frame", close::BAD_HELLO)
                        .await);
                }
                refused => return Err(self.refuse_frame(ws, refused).await),
            }
        }
    }

    async fn handshake(&self, ws: &mut Socket) -> Result<Attached, Ending> {
        let limits = &self.state.config.limits;
        let first = match tokio::time::timeout(limits.hello_timeout, self.first_text(ws)).await {
            Err(_) => return Err(self.fail(ws, ProtocolErrorCode::BadHello, "no hello in time", close::BAD_HELLO).await),
            Ok(result) => result?,
        };
        let hello = match parse_hello(first.as_str()) {
            Ok(hello) => hello,
            Err(HelloError::NotHello(message)) => return Err(self.fail(ws, ProtocolErrorCode::BadHello, &message, close::BAD_HELLO).await),
            Err(HelloError::Options(e)) => {
                self.state.metrics.refusal(ProtocolErrorCode::InvalidOptions.as_str());
                return Err(self.fail(ws, ProtocolErrorCode::InvalidOptions, &e.to_string(), close::BAD_HELLO).await);
            }
        };
        drop(first);
        if hello.protocol != PROTOCOL_VERSION {
            let message = format!("this server speaks protocol {PROTOCOL_VERSION}, the client {}", hello.protocol);
            return Err(self.fail(ws, ProtocolErrorCode::UnsupportedProtocol, &message, close::UNSUPPORTED_PROTOCOL).await);
        }
        if hello.project_id != self.project {
            return Err(self
                .fail(ws, ProtocolErrorCode::BadHello, "hello.projectId differs from the URL's projectId", close::BAD_HELLO)
                .await);
        }
        let registry = &self.state.registry;
        if hello.session_id.is_none()
            && let Some(client) = self.client()
            && !self.state.hello_limits.try_new_session(client)
        {
            self.state.metrics.refusal("new_sessions_rate_limited");
            tracing::info!("new session refused: too many from this address");
            let limits = &self.state.config.limits;
            let message =
                format!("too many new sessions from this address (at most {} a minute); try again later", limits.sessions_per_minute);
            return Err(self.fail(ws, ProtocolErrorCode::RateLimited, &message, close::TRY_AGAIN_LATER).await);
        }
        // Resumes, before the token is checked (a read of the session's metadata): a resume's
        // welcome may carry the whole state, so one client must not ask for them as fast as it can
        // open sockets (docs/protocol.md).
        if hello.session_id.is_some()
            && let Some(client) = self.client()
            && !self.state.hello_limits.try_resume_from(client)
        {
            self.state.metrics.refusal("resumes_rate_limited");
            tracing::info!("resume refused: too many from this address");
            let message = format!("too many resumes from this address (at most {} a minute); try again later", limits.resumes_per_minute);
            return Err(self.fail(ws, ProtocolErrorCode::RateLimited, &message, close::TRY_AGAIN_LATER).await);
        }
        if hello.session_id.is_none() && self.state.disk.is_low() {
            self.state.metrics.refusal("new_sessions_disk_low");
            let message = "the server's disk is nearly full and takes no new sessions; try again later";
            return Err(self.fail(ws, ProtocolErrorCode::Internal, message, close::TRY_AGAIN_LATER).await);
        }
        // `resume_token`: the token a resume was authorized with, which a proxied attach carries to
        // the session's owner (crate::cluster).
        let (session_id, new_token, resume_token, last_seq) = match hello.session_id {
            None => match registry.create(&self.project, &self.origin, hello.options.unwrap_or_default()).await {
                Ok((id, token)) => {
                    tracing::info!(session = %id, "session created");
                    if let Some(cluster) = &self.state.cluster
                        && let Err(e) = cluster.claim_new(id).await
                    {
                        tracing::error!(session = %id, error = %e, "claiming a new session failed");
                        return Err(self.fail(ws, ProtocolErrorCode::Internal, "the session could not be created", close::INTERNAL).await);
                    }
                    (id, Some(token), None, None)
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
                let authorized = match (text.parse::<SessionId>(), hello.resume_token) {
                    (Ok(id), Some(token)) => registry.authorize(id, &self.project, &token).await.map(|()| (id, token)),
                    _ => Err(AttachError::Unauthorized),
                };
                match authorized {
                    // Counted once the token is checked: nobody else can spend a session's resumes.
                    Ok((id, _)) if !self.state.hello_limits.try_resume_of(id) => {
                        self.state.metrics.refusal("session_resumes_rate_limited");
                        tracing::info!(session = %id, "resume refused: the session was resumed too often");
                        let message = format!(
                            "too many resumes of this session (at most {} a minute); try again later",
                            limits.session_resumes_per_minute
                        );
                        return Err(self.fail(ws, ProtocolErrorCode::RateLimited, &message, close::TRY_AGAIN_LATER).await);
                    }
                    Ok((id, token)) => (id, None, Some(token), hello.last_seq),
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
        // A frame the client sent while its resume was routed (cluster mode), answered after the welcome.
        let mut early = None;
        if let Some(resume_token) = &resume_token
            && let Some(cluster) = &self.state.cluster
        {
            // The route may wait (an owner slow to answer, a dead one's lease not lapsed yet: up to
            // 2 × TTL). Meanwhile the socket is read: once the client has left, the route is
            // dropped, which stops its retries and gives up on an attach in flight (the owner then
            // drops or never builds it). A frame the client sent meanwhile is kept for after the
            // welcome; the socket is not read further until then.
            let route = cluster.route(&self.state, session_id, resume_token, last_seq, self.id, self.client());
            tokio::pin!(route);
            let routed = loop {
                tokio::select! {
                    routed = &mut route => break routed,
                    incoming = next_incoming(ws), if early.is_none() => match incoming {
                        Incoming::Control => {}
                        Incoming::Text(_) | Incoming::Binary => early = Some(incoming),
                        gone => {
                            tracing::debug!(session = %session_id, "the client left while its resume was routed");
                            return Err(self.refuse_frame(ws, gone).await);
                        }
                    },
                }
            };
            match routed {
                Ok(Route::Local) => {}
                Ok(Route::Remote(remote)) => {
                    let commands = self.state.command_limits.bucket(session_id);
                    tracing::debug!(session = %session_id, owner = %remote.owner, "proxied to the session's owner");
                    let target = Target::Remote { owner: remote.owner, link: Box::new(remote.link) };
                    let attached = Attached { session_id, target, outbound: remote.outbound, dropped: remote.dropped, commands };
                    return self.answer_early(ws, attached, early).await;
                }
                Err(RouteError::Full(message)) => {
                    self.state.metrics.refusal(ProtocolErrorCode::RateLimited.as_str());
                    return Err(self.fail(ws, ProtocolErrorCode::RateLimited, &message, close::TRY_AGAIN_LATER).await);
                }
                Err(e) => {
                    tracing::warn!(session = %session_id, error = %e, "routing a resume failed");
                    return Err(self
                        .fail(ws, ProtocolErrorCode::Internal, "the session's gateway is unavailable; resume shortly", close::INTERNAL)
                        .await);
                }
            }
        }
        let (link, outbound, dropped) = ConnectionLink::new(self.id, limits.outbound_queue);
        let link = link.from_client(self.client());
        let addr = registry.session(session_id);
        match addr.send(Attach { link, last_seq, new_resume_token: new_token }).await {
            Ok(Ok(())) => {
                let commands = self.state.command_limits.bucket(session_id);
                self.answer_early(ws, Attached { session_id, target: Target::Local(addr), outbound, dropped, commands }, early).await
            }
            Ok(Err(CommandError { code: RefusalCode::RateLimited, message })) => {
                self.state.metrics.refusal(ProtocolErrorCode::RateLimited.as_str());
                tracing::info!(session = %session_id, "resume refused: the session has as many connections as it may");
                Err(self.fail(ws, ProtocolErrorCode::RateLimited, &message, close::TRY_AGAIN_LATER).await)
            }
            Ok(Err(CommandError { message, .. })) => {
                tracing::error!(session = %session_id, %message, "attach refused");
                Err(self.fail(ws, ProtocolErrorCode::Internal, "the session is unavailable", close::INTERNAL).await)
            }
            Err(_) => Err(self.fail(ws, ProtocolErrorCode::Busy, "the session is busy; retry", close::INTERNAL).await),
        }
    }

    /// `attached` by reference: an `async fn` keeps its arguments in its future's prefix, and this
    /// future lives as long as the connection.
    async fn serve(&self, ws: &mut Socket, attached: &Attached) -> Ending {
        let limits = &self.state.config.limits;
        let mut window = AckWindow::new(limits.unacked_diffs, limits.ack_timeout);
        // A diff that came while the window was full, waiting for an acknowledgement.
        let mut held: Option<(u64, Arc<str>)> = None;
        let mut ack_deadline = tokio::time::Instant::now();
        let mut rate_limit_logged = false;
        let mut last_heard = Instant::now();
        let mut heartbeat = tokio::time::interval(limits.heartbeat_interval);
        heartbeat.tick().await;
        let mut shutdown = self.state.shutdown_signal();
        // Made once, not once per turn of the loop: each of these registers a waiter when it is
        // made (or first polled) and takes it off again when dropped, which `select!` did to the
        // ones that did not fire on every frame in or out.
        let shutting_down = shutdown.changed();
        let dropped = attached.dropped.dropped();
        let mut outbound = attached.outbound.stream();
        tokio::pin!(shutting_down, dropped);
        loop {
            if window.has_room()
                && let Some((seq, text)) = held.take()
            {
                if let Err(ending) = self.send_text(ws, shared_text(&text)).await {
                    return ending;
                }
                window.sent(seq);
            }
            tokio::select! {
                incoming = next_incoming(ws) => {
                    last_heard = Instant::now();
                    self.state.metrics.frames_received.inc();
                    match incoming {
                        Incoming::Text(text) => {
                            if let Err(ending) = Box::pin(self.on_text(ws, text.as_str(), attached, &mut window, &mut rate_limit_logged)).await {
                                return ending;
                            }
                        }
                        Incoming::Binary => {
                            self.state.metrics.refusal("binary_frame");
                            let frame = error_frame(ProtocolErrorCode::MalformedMessage, "frames are JSON text", None);
                            if let Err(ending) = self.send_text(ws, frame.into()).await { return ending; }
                        }
                        Incoming::Control => {}
                        refused => return Box::pin(self.refuse_frame(ws, refused)).await,
                    }
                }
                code = &mut dropped => return Box::pin(self.dropped_by_session(ws, code)).await,
                frame = outbound.next(), if held.is_none() => {
                    let Some(frame) = frame else {
                        let code = attached.dropped.code().unwrap_or(close::INTERNAL);
                        return Box::pin(self.dropped_by_session(ws, code)).await;
                    };
                    // What the session queued with this frame goes out in the same write.
                    let mut batch = Vec::with_capacity(2);
                    let mut next = Some(frame);
                    while let Some(frame) = next.take() {
                        match frame {
                            Outbound::Diff { seq, text } if !window.has_room() => {
                                ack_deadline = tokio::time::Instant::from_std(window.wait(Instant::now()));
                                held = Some((seq, text));
                                break;
                            }
                            Outbound::Diff { seq, text } => {
                                batch.push(shared_text(&text));
                                window.sent(seq);
                            }
                            Outbound::Message(text) => batch.push(shared_text(&text)),
                        }
                        if batch.len() < OUTBOUND_BATCH {
                            next = attached.outbound.try_recv().ok();
                        }
                    }
                    if !batch.is_empty()
                        && let Err(ending) = self.send_texts(ws, &batch).await
                    {
                        return ending;
                    }
                }
                _ = tokio::time::sleep_until(ack_deadline), if held.is_some() => {
                    if window.expired(Instant::now()) {
                        self.state.metrics.refusal(ProtocolErrorCode::TooSlow.as_str());
                        let message = format!("more than {} diffs unacknowledged for {:?}; resume with lastSeq", limits.unacked_diffs, limits.ack_timeout);
                        return Box::pin(self.fail(ws, ProtocolErrorCode::TooSlow, &message, close::TOO_SLOW)).await;
                    }
                }
                _ = heartbeat.tick() => {
                    if last_heard.elapsed() > limits.heartbeat_timeout {
                        self.state.metrics.refusal(ProtocolErrorCode::HeartbeatTimeout.as_str());
                        return Box::pin(self.fail(ws, ProtocolErrorCode::HeartbeatTimeout, "no traffic from the client", close::HEARTBEAT_TIMEOUT)).await;
                    }
                    let ping = tokio::time::timeout(limits.write_timeout, ws.send(Message::Ping(Default::default()))).await;
                    if !matches!(ping, Ok(Ok(()))) {
                        return Ending::ClientGone;
                    }
                }
                _ = &mut shutting_down => {
                    return Box::pin(self.fail(ws, ProtocolErrorCode::ShuttingDown, "the server is restarting; resume shortly", close::GOING_AWAY)).await;
                }
            }
        }
    }

    /// The session dropped this connection: too far behind, expired, or the session stopped.
    async fn dropped_by_session(&self, ws: &mut Socket, code: u16) -> Ending {
        tracing::info!(code, "the session dropped this connection");
        match code {
            close::TOO_SLOW => {
                self.state.metrics.refusal(ProtocolErrorCode::TooSlow.as_str());
                self.fail(ws, ProtocolErrorCode::TooSlow, "too many frames queued for this connection; resume with lastSeq", code).await
            }
            // The session is gone for good: the close code says so, there is no error frame.
            close::SESSION_ENDED => Ending::close(code, "the session has expired; start a new one"),
            close::GOING_AWAY => self.fail(ws, ProtocolErrorCode::ShuttingDown, "the server is restarting; resume shortly", code).await,
            _ => self.fail(ws, ProtocolErrorCode::Internal, "the session stopped; resume with lastSeq", code).await,
        }
    }

    async fn on_text(
        &self,
        ws: &mut Socket,
        text: &str,
        attached: &Attached,
        window: &mut AckWindow,
        rate_limit_logged: &mut bool,
    ) -> Result<(), Ending> {
        let message = match serde_json::from_str::<ClientMessage>(text) {
            Ok(message) => message,
            Err(e) => {
                // Tell apart an unknown message type from malformed JSON, for the client's sake.
                if let Some(id) = unreadable_command_id(text) {
                    self.state.metrics.refusal(RefusalCode::InvalidInput.as_str());
                    let message = bounded_message(format!("the command does not read as one: {e}"));
                    return self.send_text(ws, refused_result(&id, RefusalCode::InvalidInput, &message).into()).await;
                }
                let value: Option<serde_json::Value> = serde_json::from_str(text).ok();
                let known = ["hello", "command", "ack", "ping"];
                let code = match value.as_ref().and_then(|v| v.get("type")).and_then(|t| t.as_str()) {
                    Some(t) if !known.contains(&t) => ProtocolErrorCode::UnknownMessageType,
                    _ => ProtocolErrorCode::MalformedMessage,
                };
                self.state.metrics.refusal(code.as_str());
                tracing::debug!(kind = code.as_str(), "refused a frame");
                return self.send_text(ws, error_frame(code, &bounded_message(e.to_string()), None).into()).await;
            }
        };
        match message {
            ClientMessage::Hello { .. } => {
                self.send_text(ws, error_frame(ProtocolErrorCode::BadHello, "already attached", None).into()).await
            }
            ClientMessage::Ping { nonce } => {
                self.send_text(ws, serde_json::to_string(&ServerMessage::Pong { nonce }).expect("pong serializes").into()).await
            }
            ClientMessage::Ack { seq } => {
                window.acked(seq);
                Ok(())
            }
            ClientMessage::Command { id, command } => {
                let refuse = |code: RefusalCode, message: &str| refused_result(&id, code, message);
                if !valid_command_id(&id) {
                    self.state.metrics.refusal(ProtocolErrorCode::MalformedMessage.as_str());
                    let frame = error_frame(ProtocolErrorCode::MalformedMessage, "a command id is 1 to 64 of A-Z a-z 0-9 - _", None);
                    return self.send_text(ws, frame.into()).await;
                }
                let rate_limited = |rate_limit_logged: &mut bool| {
                    self.state.metrics.refusal(RefusalCode::RateLimited.as_str());
                    if !*rate_limit_logged {
                        *rate_limit_logged = true;
                        tracing::info!(command_id = %id, "commands rate limited on this session");
                    }
                    refuse(RefusalCode::RateLimited, "too many commands; slow down")
                };
                let allowed = attached.commands.lock().expect("bucket lock").try_take();
                if !allowed {
                    return self.send_text(ws, rate_limited(rate_limit_logged).into()).await;
                }
                tracing::debug!(command_id = %id, command = command.type_name(), "command");
                let queued = match &attached.target {
                    Target::Local(addr) => addr.try_send(Execute::new(id.clone(), command, Some(self.id))).is_ok(),
                    Target::Remote { owner, link } => {
                        let cluster = self.state.cluster.as_ref().expect("a proxied connection has a cluster");
                        match cluster.command(owner, link, text).await {
                            CommandOutcome::Queued => true,
                            CommandOutcome::Busy => false,
                            // The owner holds the session's limit across every gateway.
                            CommandOutcome::RateLimited => return self.send_text(ws, rate_limited(rate_limit_logged).into()).await,
                            CommandOutcome::Gone => {
                                let message = "the session's gateway is unavailable; resume with lastSeq";
                                return Err(self.fail(ws, ProtocolErrorCode::Internal, message, close::INTERNAL).await);
                            }
                        }
                    }
                };
                if queued {
                    Ok(())
                } else {
                    self.state.metrics.refusal(RefusalCode::Busy.as_str());
                    self.send_text(ws, refuse(RefusalCode::Busy, "the session is busy; retry").into()).await
                }
            }
        }
    }
}

/// After our close frame: end our side (FIN), then read and drop what the client still sends, for
/// a moment, so that the socket is not closed with unread data (which sends a reset). The buffer is
/// allocated here, not kept for the connection's life.
async fn linger(ws: &mut Socket) {
    let socket = ws.get_mut();
    if socket.shutdown().await.is_err() {
        return;
    }
    let deadline = tokio::time::Instant::now() + LINGER;
    let mut buf = vec![0u8; 4096];
    let mut drained = 0;
    while drained < LINGER_BYTES {
        match tokio::time::timeout_at(deadline, socket.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{top_level_strings, unreadable_command_id};

    #[test]
    fn the_id_of_a_command_is_read_from_the_top_level_however_deep_the_rest_nests() {
        let deep = format!(r#"{{"type":"command","command":{{"params":{}1{}}},"id":"c-1"}}"#, "[".repeat(500), "]".repeat(500));
        assert!(serde_json::from_str::<serde_json::Value>(&deep).is_err(), "deeper than serde_json reads");
        assert_eq!(unreadable_command_id(&deep).as_deref(), Some("c-1"));
        // Members of nested objects, strings holding quotes, braces and escapes are not the top level's.
        let nested = r#"{"command":{"id":"inner","type":"command"},"note":"a \"}\" b","type":"command","id":"outer"}"#;
        assert_eq!(top_level_strings(nested, ["type", "id"]), [Some("command".to_string()), Some("outer".to_string())]);
        // No id, an invalid one, another message type, not an object: none.
        for text in [
            r#"{"type":"command"}"#,
            r#"{"type":"command","id":"bad id!"}"#,
            r#"{"type":"hello","id":"c-1"}"#,
            r#"["type","command","id","c-1"]"#,
            r#"{"type":"command","id":42}"#,
            "{",
            "",
        ] {
            assert_eq!(unreadable_command_id(text), None, "{text}");
        }
    }
}
