//! `/ws`: the widget's WebSocket. The upgrade is refused unless the project exists, the page's
//! Origin is on its allowlist and the client's address has a free WebSocket slot; `/ws/check`
//! answers the same question over plain HTTP, because a browser cannot read why an upgrade failed.
//!
//! Upgrades do not go through actix-web: actix-http hands every request carrying
//! `Upgrade: websocket` to [`upgrade`] together with the socket, which answers the handshake itself
//! and then speaks WebSocket with tungstenite (`docs/decisions/0310-websocket-on-the-raw-socket.md`):
//! frame sizes are checked at the frame header, and nothing is buffered beyond one frame.

mod budgeted;
pub mod codec;
mod connection;
mod hello;
mod window;

use std::net::IpAddr;
use std::sync::Arc;

use actix_codec::Framed;
use actix_http::body::BodySize;
use actix_http::h1;
use actix_http::header::{self, HeaderMap};
use actix_http::{Request, Response, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::SinkExt;
use serde::Deserialize;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use vestibule_actors::protocol::ProtocolErrorCode;

use crate::config::{Limits, Project};
use crate::limits::SlotRefusal;
use crate::server::AdmittedSocket;
use crate::state::AppState;

pub use connection::Connection;
pub use hello::{Hello, HelloError, parse_hello};
pub use window::AckWindow;

/// A socket whose request asked for a WebSocket, as actix-http hands it over.
pub type Upgrading = Framed<AdmittedSocket, h1::Codec>;

/// The WebSocket a connection speaks over.
pub type Socket = WebSocketStream<budgeted::BudgetedSocket>;

#[derive(Debug, Deserialize)]
pub struct WsQuery {
    #[serde(rename = "projectId")]
    project_id: Option<String>,
}

/// Why an upgrade is refused: the spec's alert titles, with HTTP statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    ProjectIdNotConfigured,
    InvalidProjectId,
    InvalidAppConfiguration,
    RateLimited,
    ShuttingDown,
}

impl Refusal {
    pub fn code(self) -> ProtocolErrorCode {
        match self {
            Refusal::ProjectIdNotConfigured => ProtocolErrorCode::ProjectIdNotConfigured,
            Refusal::InvalidProjectId => ProtocolErrorCode::InvalidProjectId,
            Refusal::InvalidAppConfiguration => ProtocolErrorCode::InvalidAppConfiguration,
            Refusal::RateLimited => ProtocolErrorCode::RateLimited,
            Refusal::ShuttingDown => ProtocolErrorCode::ShuttingDown,
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Refusal::ProjectIdNotConfigured => "Project ID Not Configured",
            Refusal::InvalidProjectId => "Invalid Project ID",
            Refusal::InvalidAppConfiguration => "Invalid App Configuration",
            Refusal::RateLimited => "Rate Limited",
            Refusal::ShuttingDown => "Server shutting down",
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Refusal::ProjectIdNotConfigured => StatusCode::BAD_REQUEST,
            Refusal::InvalidProjectId | Refusal::InvalidAppConfiguration => StatusCode::FORBIDDEN,
            Refusal::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Refusal::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn body(self) -> String {
        serde_json::json!({ "code": self.code(), "message": self.message() }).to_string()
    }

    fn response(self) -> HttpResponse {
        HttpResponse::build(self.status())
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
            .content_type("application/json")
            .body(self.body())
    }
}

/// The request's `Origin`, if it has exactly one: a request is sent from one page (RFC 6454 7.3),
/// and with two, which one to check would be a guess that a proxy or a client could pick for us.
fn origin_of(headers: &HeaderMap) -> Option<&str> {
    let mut origins = headers.get_all(header::ORIGIN);
    match (origins.next(), origins.next()) {
        (Some(origin), None) => origin.to_str().ok(),
        _ => None,
    }
}

/// The checks an upgrade must pass, in order, before its socket is counted: the server is up, the
/// project exists and allows the page's origin. Returns the project.
fn admit<'a>(state: &'a AppState, headers: &HeaderMap, query: &WsQuery) -> Result<&'a Project, Refusal> {
    if state.is_shutting_down() {
        return Err(Refusal::ShuttingDown);
    }
    let project_id = query.project_id.as_deref().filter(|p| !p.is_empty()).ok_or(Refusal::ProjectIdNotConfigured)?;
    let project = state.projects.get(project_id).ok_or(Refusal::InvalidProjectId)?;
    // Browsers always send Origin on a WebSocket upgrade; a request without one is not a page.
    let origin = origin_of(headers).ok_or(Refusal::InvalidAppConfiguration)?;
    if !project.allows(origin) {
        return Err(Refusal::InvalidAppConfiguration);
    }
    Ok(project)
}

fn slot_refusal(_: SlotRefusal) -> Refusal {
    Refusal::RateLimited
}

/// The client's address: the socket's peer, or the address a trusted proxy forwarded for it.
fn client_of(state: &AppState, peer: Option<std::net::SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
    peer.map(|peer| state.config.trusted_proxies.client_of(peer.ip(), headers, state.config.forwarded_header))
}

fn log_refusal(state: &AppState, headers: &HeaderMap, client: Option<IpAddr>, refusal: Refusal) {
    state.metrics.refusal(refusal.code().as_str());
    let client = client.map(|ip| ip.to_string()).unwrap_or_default();
    tracing::info!(code = refusal.code().as_str(), origin = origin_of(headers).unwrap_or("-"), client, "upgrade refused");
}

fn query_of(uri: &actix_http::Uri) -> WsQuery {
    web::Query::<WsQuery>::from_query(uri.query().unwrap_or("")).map_or(WsQuery { project_id: None }, web::Query::into_inner)
}

/// The configuration of every WebSocket (see [`codec::websocket_config`]).
pub fn websocket_config(limits: &Limits) -> WebSocketConfig {
    codec::websocket_config(limits.max_frame_bytes)
}

/// Writes an HTTP response on a socket that is not going to be upgraded, then closes it.
async fn respond(mut framed: Upgrading, status: StatusCode, body: String) {
    let mut response = Response::build(status);
    // The connection type, not a `Connection` header: actix-http's encoder drops that header and
    // writes the codec's type, which for an upgrade request is `connection: upgrade`.
    response
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
        .force_close();
    let head = response.finish().drop_body();
    let body = web::Bytes::from(body);
    // Head and body in one write: a client that reads the head may take only the bytes that came
    // with it as the body (tungstenite's client does), and with TCP_NODELAY two flushes are two
    // segments.
    let write = async {
        framed.feed(h1::Message::Item((head, BodySize::Sized(body.len() as u64)))).await?;
        framed.feed(h1::Message::Chunk(Some(body))).await?;
        framed.feed(h1::Message::Chunk(None)).await?;
        framed.flush().await
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), write).await;
}

/// Every request with `Upgrade: websocket`, whatever its path, with its socket.
///
/// Runs inside actix-server's task for the connection, with actix-http's dispatcher, only until
/// the handshake is done: the WebSocket then runs in a task of its own ([`AppState::connections`])
/// and that task, with the dispatcher, ends. An idle connection keeps only its own task, whose
/// future is as large as its largest state (see [`connection_future_size`]).
pub async fn upgrade(state: Arc<AppState>, req: Request, framed: Upgrading) {
    let connections = state.connections.clone();
    let Some((socket, connection)) = accept(state, req, framed).await else {
        return;
    };
    connections.spawn_local(connection.run(socket));
}

/// The size in bytes of the future an idle connection's task keeps. Known at compile time; nothing
/// is run.
pub fn connection_future_size() -> usize {
    fn size<A, F: std::future::Future>(_: impl FnOnce(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }
    let tasks = tokio_util::task::TaskTracker::new();
    size(|(connection, socket): (Connection, Socket)| tasks.track_future(connection.run(socket)))
}

/// The answer to an upgrade request: refused with an HTTP response, or accepted, the 101 sent and
/// the WebSocket ready to speak.
async fn accept(state: Arc<AppState>, req: Request, mut framed: Upgrading) -> Option<(Socket, Connection)> {
    let head = req.head();
    let client = client_of(&state, req.peer_addr(), &head.headers);
    if head.uri.path() != "/ws" {
        let body = serde_json::json!({ "code": "not_found", "message": "WebSocket upgrades are served at /ws" }).to_string();
        respond(framed, StatusCode::NOT_FOUND, body).await;
        return None;
    }
    let limits = &state.config.limits;
    if crate::http::head_bytes(head.method.as_str(), &head.uri.to_string(), &head.headers) > limits.max_header_bytes {
        state.metrics.refusal("header_too_large");
        let body = serde_json::json!({ "code": "header_too_large", "message": format!("request headers are limited to {} bytes", limits.max_header_bytes) });
        respond(framed, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, body.to_string()).await;
        return None;
    }
    let project = match admit(&state, &head.headers, &query_of(&head.uri)) {
        Ok(project) => project.id.clone(),
        Err(refusal) => {
            log_refusal(&state, &head.headers, client, refusal);
            respond(framed, refusal.status(), refusal.body()).await;
            return None;
        }
    };
    let handshake = match actix_http::ws::handshake(head) {
        Ok(handshake) => handshake,
        Err(e) => {
            state.metrics.refusal("bad_handshake");
            let body = serde_json::json!({ "code": "bad_handshake", "message": e.to_string() });
            respond(framed, StatusCode::BAD_REQUEST, body.to_string()).await;
            return None;
        }
    };
    // Counted for the client: the peer, or the address a trusted proxy forwarded.
    if let Err(refused) = framed.io_mut().slot_mut().upgrade(client) {
        let refusal = slot_refusal(refused);
        log_refusal(&state, &head.headers, client, refusal);
        respond(framed, refusal.status(), refusal.body()).await;
        return None;
    }
    let origin = origin_of(&head.headers).unwrap_or_default().to_string();
    let mut handshake = handshake;
    let switching = handshake.finish().drop_body();
    let sent = tokio::time::timeout(limits.write_timeout, framed.send(h1::Message::Item((switching, BodySize::None)))).await;
    if !matches!(sent, Ok(Ok(()))) {
        return None;
    }
    // Bytes the client sent after its request (it may not wait for our answer) are the start of the
    // WebSocket stream; there can be no more of them than the request head's buffer holds.
    // The dispatcher's read and write buffers (8 KiB each) are freed here, not kept for the
    // connection's life: tungstenite has buffers of its own.
    let (io, mut early) = {
        let parts = framed.into_parts();
        (parts.io, parts.read_buf.to_vec())
    };
    let io = budgeted::BudgetedSocket::new(io, limits.max_frame_bytes, &mut early);
    let socket = WebSocketStream::from_partially_read(io, early, Role::Server, Some(websocket_config(limits))).await;
    Some((socket, Connection::new(state, project, origin, client)))
}

/// `GET /ws` without a WebSocket upgrade: the same refusals as an upgrade, else 400.
pub async fn not_an_upgrade(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    match admit(&state, req.headers(), &query_of(req.uri())) {
        Ok(_) => HttpResponse::BadRequest().json(serde_json::json!({ "code": "bad_handshake", "message": "expected a WebSocket upgrade" })),
        Err(refusal) => {
            log_refusal(&state, req.headers(), client_of(&state, req.peer_addr(), req.headers()), refusal);
            refusal.response()
        }
    }
}

/// `GET /ws/check?projectId=…`: would an upgrade from this page's Origin, from this address, be
/// accepted now?
pub async fn check(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let admitted =
        admit(&state, req.headers(), &query_of(req.uri())).and_then(|_| match client_of(&state, req.peer_addr(), req.headers()) {
            Some(client) => state.sockets.can_upgrade(client).map_err(slot_refusal),
            None => Ok(()),
        });
    match admitted {
        Ok(()) => HttpResponse::Ok().insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")).json(serde_json::json!({ "ok": true })),
        Err(refusal) => refusal.response(),
    }
}

#[cfg(test)]
mod tests {
    /// An idle connection's future is resident for its life, once per connection: a regression
    /// check in bytes (the size is the compiler's, nothing is timed). Before the handshake and the
    /// rare paths were boxed, actix-http's dispatcher held a 12.9 KB future per connection.
    #[test]
    fn an_idle_connection_keeps_a_small_future() {
        let run = super::connection_future_size();
        println!("connection {run} B");
        // The task holding it adds its header and trailer (about 100 B on x86-64) and is rounded
        // up to 128 B; 2,048 B is also an allocator size class. One byte over and each connection
        // takes the next class, 2,560 B: the budgeted socket's 48 B, stored twice by an
        // `async fn run`, once made an idle session 1.7 KiB larger.
        assert!(run <= 1920, "the connection future is {run} B");
    }
}
