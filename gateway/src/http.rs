//! Plain HTTP endpoints (health, metrics, the static files) and the bounds every HTTP request is
//! held to: the size of its head, the size of its body and the time it may take to send the body.
//! (The time to send the head is the HTTP service's `client_request_timeout`, set in `server.rs`.)

use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::{InternalError, JsonPayloadError, QueryPayloadError};
use actix_web::http::header::{self, HeaderMap};
use actix_web::http::{ConnectionType, Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{FromRequest, Handler, HttpMessage, HttpResponse, Resource, Responder, web};
use futures_util::StreamExt;
use prometheus_client::encoding::text::encode;

use crate::limits::SocketKind;
use crate::server::{CloseAfterAnswer, RequestArrived};
use crate::state::AppState;

pub async fn healthz(state: web::Data<AppState>) -> HttpResponse {
    if let Some(reason) = state.registry.log().failure() {
        // The details (paths, errno) are in the log; a probe only needs to know it must restart us.
        tracing::error!(%reason, "health check: the event log has failed");
        return HttpResponse::ServiceUnavailable().json(serde_json::json!({ "status": "store_failed" }));
    }
    if let Some(reason) = state.disk.replaced() {
        tracing::error!(%reason, "health check: the data directory was replaced");
        return HttpResponse::ServiceUnavailable().json(serde_json::json!({ "status": "store_failed" }));
    }
    if state.is_shutting_down() {
        return HttpResponse::ServiceUnavailable().json(serde_json::json!({ "status": "shutting_down" }));
    }
    // Not failed, but taking no new visitors: send them elsewhere until there is room.
    if state.disk.is_low() {
        return HttpResponse::ServiceUnavailable().json(serde_json::json!({ "status": "disk_low" }));
    }
    // In a cluster, a gateway that lost its lease (cut from NATS) runs no session until it has
    // registered again: the load balancer should send visitors elsewhere meanwhile.
    if state.cluster.as_ref().is_some_and(|c| c.leases.epoch().is_none()) {
        return HttpResponse::ServiceUnavailable().json(serde_json::json!({ "status": "no_cluster_lease" }));
    }
    HttpResponse::Ok().json(serde_json::json!({
        "status": "ok",
        "liveSessions": state.registry.live(),
        "connections": state.sockets.open(SocketKind::WebSocket),
        "httpConnections": state.sockets.open(SocketKind::Http),
    }))
}

pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let mut text = String::new();
    let mut registry = state.metrics.registry(state.registry.log().metrics());
    if let Some(cluster) = &state.cluster {
        cluster.register_metrics(&mut registry);
    }
    if encode(&mut text, &registry).is_err() {
        return HttpResponse::InternalServerError().finish();
    }
    HttpResponse::Ok().insert_header((header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")).body(text)
}

/// The replay timeline's policy. The page draws what visitors recorded (their wallets' names and
/// icons, their options) in the operator's browser, which holds the admin token: nothing may be
/// loaded from anywhere but this gateway (a visitor's image URL told an outside host when the
/// operator looked; an outside review), only `data:` images besides, and no page may frame it.
pub const REPLAY_PAGE_POLICY: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; \
     connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The headers `/replay.html` is served with.
pub fn replay_page_headers() -> actix_web::middleware::DefaultHeaders {
    actix_web::middleware::DefaultHeaders::new()
        .add((header::CONTENT_SECURITY_POLICY, REPLAY_PAGE_POLICY))
        .add((header::X_FRAME_OPTIONS, "DENY"))
        .add((header::REFERRER_POLICY, "no-referrer"))
}

/// `GET /replay.html`: the built page, under [`REPLAY_PAGE_POLICY`].
pub async fn replay_page(request: actix_web::HttpRequest, path: std::path::PathBuf) -> actix_web::Result<HttpResponse> {
    Ok(actix_files::NamedFile::open_async(path).await?.into_response(&request))
}

/// Served at `/` when the client has not been built.
pub async fn not_built() -> HttpResponse {
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(
        "<!doctype html><title>Vestibule</title><h1>Vestibule gateway</h1>\
         <p>The widget and demo app are not built. Run <code>./scripts/run</code>, which builds them, \
         or <code>npm --prefix client run build</code>.</p>",
    )
}

/// `GET /devnet.json`: the devnet file this gateway was started with (`--devnet`), which the demo
/// app reads to give its dev wallet the devnet's chains and funded key (decision 0910); 404 when
/// started without one. Read at each request (a few hundred bytes) and never cached: every devnet
/// run has new ports and contract addresses.
pub async fn devnet(state: web::Data<AppState>) -> HttpResponse {
    let Some(path) = state.config.devnet.clone() else {
        return api_error(StatusCode::NOT_FOUND, "no_devnet", "this gateway runs without a devnet");
    };
    match web::block(move || std::fs::read(path)).await {
        Ok(Ok(bytes)) => HttpResponse::Ok().content_type("application/json").insert_header((header::CACHE_CONTROL, "no-store")).body(bytes),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "cannot read the devnet file");
            api_error(StatusCode::SERVICE_UNAVAILABLE, "devnet_unreadable", "the devnet file cannot be read")
        }
        Err(_) => HttpResponse::ServiceUnavailable().finish(),
    }
}

/// Bytes a request head takes on the wire: the request line and each `name: value\r\n`.
pub fn head_bytes(method: &str, uri: &str, headers: &HeaderMap) -> usize {
    let request_line = method.len() + 1 + uri.len() + " HTTP/1.1\r\n".len();
    request_line + headers.iter().map(|(name, value)| name.as_str().len() + 2 + value.len() + 2).sum::<usize>() + 2
}

/// An answer of the HTTP API that is not a success: `{"code", "message"}`, the shape of every
/// refusal this listener gives (`code` for programs, `message` for people).
pub fn api_error(status: StatusCode, code: &str, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(serde_json::json!({ "code": code, "message": message }))
}

/// A route of the API: `method` runs `handler` (and so does HEAD, for a GET: its answer without the
/// body); another method is answered 405 `method_not_allowed` in the API's shape, with `Allow`,
/// rather than falling through to the static files.
pub fn endpoint<F, Args>(path: &str, method: Method, handler: F) -> Resource
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    let mut resource = web::resource(path).route(web::method(method.clone()).to(handler.clone()));
    let mut allowed = method.to_string();
    if method == Method::GET {
        resource = resource.route(web::head().to(handler));
        allowed.push_str(", HEAD");
    }
    resource.default_service(web::to(move || {
        let allowed = allowed.clone();
        async move {
            let message = format!("this endpoint takes {allowed}");
            let mut response = api_error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", &message);
            response.headers_mut().insert(header::ALLOW, header::HeaderValue::from_str(&allowed).expect("methods are a header value"));
            response
        }
    }))
}

/// How a JSON body that is not what a route takes is refused: in the API's shape (not actix's plain
/// text), naming what is wrong: 415 for another content type, 413 over the size limit, 400
/// `bad_request` with the parser's words (line and column, or the unknown or missing field).
pub fn json_config() -> web::JsonConfig {
    web::JsonConfig::default().error_handler(|error, _| {
        let response = match &error {
            JsonPayloadError::ContentType => {
                api_error(StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "the body must be application/json")
            }
            JsonPayloadError::Overflow { limit } | JsonPayloadError::OverflowKnownLength { limit, .. } => {
                refusal(StatusCode::PAYLOAD_TOO_LARGE, "body_too_large", &format!("request bodies are limited to {limit} bytes"))
            }
            JsonPayloadError::Deserialize(e) => api_error(StatusCode::BAD_REQUEST, "bad_request", &format!("the JSON body: {e}")),
            other => api_error(StatusCode::BAD_REQUEST, "bad_request", &format!("the JSON body: {other}")),
        };
        InternalError::from_response(error, response).into()
    })
}

/// How a query string that does not fit a route is refused: 400 `bad_request` in the API's shape.
pub fn query_config() -> web::QueryConfig {
    web::QueryConfig::default().error_handler(|error, _| {
        let message = match &error {
            QueryPayloadError::Deserialize(e) => format!("the query string: {e}"),
            other => format!("the query string: {other}"),
        };
        let response = api_error(StatusCode::BAD_REQUEST, "bad_request", &message);
        InternalError::from_response(error, response).into()
    })
}

/// A refusal that also closes the connection: the client is misbehaving or too slow, and what it
/// has not sent yet must not be read as a next request. The connection type is set on the head, not
/// as a header: actix-http writes its own `Connection` header, and it would keep a connection whose
/// chunked body is unread open to drain it, for as long as the client cares to stay silent.
pub fn refusal(status: StatusCode, code: &str, message: &str) -> HttpResponse {
    let mut response = api_error(status, code, message);
    response.head_mut().set_connection_type(ConnectionType::Close);
    response
}

/// Why a request body was refused.
#[derive(Debug, PartialEq, Eq)]
enum BodyRefusal {
    TooLarge,
    TooSlow,
    Broken,
}

/// Reads the whole body into memory, at most `max` bytes and within `deadline`. A slow body (one
/// byte every few seconds) would otherwise hold its socket, its buffers and a descriptor forever.
async fn read_body(payload: &mut Payload, max: usize, timeout: Duration) -> Result<web::Bytes, BodyRefusal> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut body = web::BytesMut::new();
    loop {
        match tokio::time::timeout_at(deadline, payload.next()).await {
            Err(_) => return Err(BodyRefusal::TooSlow),
            Ok(None) => return Ok(body.freeze()),
            Ok(Some(Err(_))) => return Err(BodyRefusal::Broken),
            Ok(Some(Ok(chunk))) => {
                if body.len() + chunk.len() > max {
                    return Err(BodyRefusal::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}

fn announces_body(headers: &HeaderMap) -> bool {
    let length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    length.is_some_and(|n| n > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

/// Middleware on every route: a head over `limits.max_header_bytes` is refused with 431, a body
/// over `limits.max_body_bytes` with 413, and a body not complete within `limits.body_timeout`
/// with 408; each closes the connection. A request that passes has arrived: from then on, only its
/// handler decides how long it takes.
pub async fn bounded_request(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return next.call(req).await.map(ServiceResponse::map_into_boxed_body);
    };
    let limits = &state.config.limits;
    let head = head_bytes(req.method().as_str(), &req.uri().to_string(), req.headers());
    if head > limits.max_header_bytes {
        state.metrics.refusal("header_too_large");
        let message = format!("request headers are limited to {} bytes", limits.max_header_bytes);
        let response = refusal(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "header_too_large", &message);
        return Ok(closing(req.into_response(response)));
    }
    if announces_body(req.headers()) {
        let mut payload = req.take_payload();
        match read_body(&mut payload, limits.max_body_bytes, limits.body_timeout).await {
            Ok(body) => req.set_payload(Payload::from(body)),
            Err(refused) => {
                let (status, kind, message) = match refused {
                    BodyRefusal::TooLarge => (
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "body_too_large",
                        format!("request bodies are limited to {} bytes", limits.max_body_bytes),
                    ),
                    BodyRefusal::TooSlow => (
                        StatusCode::REQUEST_TIMEOUT,
                        "body_timeout",
                        format!("the request body did not arrive within {:?}", limits.body_timeout),
                    ),
                    BodyRefusal::Broken => (StatusCode::BAD_REQUEST, "body_broken", "the request body could not be read".to_string()),
                };
                state.metrics.refusal(kind);
                return Ok(closing(req.into_response(refusal(status, kind, &message))));
            }
        }
    }
    // Head and body are in: the handler may take its time (`server::AdmittedSocket`).
    if let Some(arrived) = req.conn_data::<RequestArrived>() {
        arrived.mark();
    }
    next.call(req).await.map(|response| closing(response.map_into_boxed_body()))
}

/// An answer that says `Connection: close` has its connection closed once it is written, whatever
/// is left of the request's body ([`CloseAfterAnswer`]).
fn closing(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    if response.response().head().connection_type() == ConnectionType::Close
        && let Some(close) = response.request().conn_data::<CloseAfterAnswer>()
    {
        close.request();
    }
    response
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    #[test]
    fn the_head_size_counts_the_request_line_and_every_header() {
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("host"), HeaderValue::from_static("a"));
        assert_eq!(head_bytes("GET", "/", &headers), "GET / HTTP/1.1\r\nhost: a\r\n\r\n".len());
        headers.insert(HeaderName::from_static("x-big"), HeaderValue::from_str(&"v".repeat(100_000)).unwrap());
        assert!(head_bytes("GET", "/", &headers) > 100_000);
    }

    #[tokio::test]
    async fn a_body_is_read_whole_within_its_size_and_time() {
        let (mut sender, payload) = actix_http::h1::Payload::create(false);
        sender.feed_data(web::Bytes::from_static(b"hello"));
        sender.feed_eof();
        let mut payload = Payload::from(payload);
        assert_eq!(read_body(&mut payload, 16, Duration::from_secs(60)).await.unwrap(), "hello");

        let (mut sender, payload) = actix_http::h1::Payload::create(false);
        sender.feed_data(web::Bytes::from_static(b"0123456789"));
        let mut payload = Payload::from(payload);
        assert_eq!(read_body(&mut payload, 4, Duration::from_secs(60)).await, Err(BodyRefusal::TooLarge));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stops_arriving_is_refused_when_its_time_is_up() {
        let (mut sender, payload) = actix_http::h1::Payload::create(false);
        sender.feed_data(web::Bytes::from_static(b"{"));
        let mut payload = Payload::from(payload);
        // The clock is paused: the deadline passes as soon as nothing else can run.
        assert_eq!(read_body(&mut payload, 1024, Duration::from_secs(10)).await, Err(BodyRefusal::TooSlow));
        drop(sender);
    }
}
