//! The debug API: read any session's events while the gateway runs (the replay CLI needs the data
//! directory to itself). Off unless `admin_token` is configured; every request must carry
//! `Authorization: Bearer <admin_token>`, compared in constant time.
//!
//! - `GET /debug/sessions?project=&status=&since=&after=&limit=` — one page of sessions
//! - `GET /debug/sessions/{id}/events?from=&to=` — events (at most 10 000 per request)
//! - `GET /debug/sessions/{id}/state?seq=` — the folded state after seq (default: the latest)
//! - `GET /debug/sessions/{id}/follow?from=` — Server-Sent Events: each committed event as `data:`
//!
//! Bounded (`[limits]`): at most `debug_follows` follow streams and `debug_state_folds` state
//! rebuilds at once (one more is answered 429 `busy`); a rebuild runs on a blocking thread and reads
//! the log in chunks, so the HTTP workers keep answering; a follow stream sends a comment line after
//! `debug_follow_heartbeat` of silence, and one whose client takes none of it for
//! `write_timeout` is closed by the socket's write timeout (`server::AdmittedSocket`).

use std::str::FromStr;
use std::sync::Arc;

use std::future::{Ready, ready};

use actix_web::error::InternalError;
use actix_web::http::{StatusCode, header};
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use serde::Deserialize;
use sha2::Digest;
use subtle::ConstantTimeEq;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use vestibule_store::{Envelope, EventStream, SessionFilter, SessionId};

use crate::http::api_error;
use crate::state::AppState;

/// Present in every debug handler's arguments, first: a request without the admin token is refused
/// (404 while the API is off, 401 otherwise) before its path or query is looked at, so that an
/// outsider learns nothing from how those are parsed.
pub struct Admin;

impl FromRequest for Admin {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let expected = req.app_data::<web::Data<AppState>>().and_then(|state| state.config.admin_token.clone());
        let Some(expected) = expected else {
            let response = api_error(StatusCode::NOT_FOUND, "disabled", "the debug API is off (no admin_token configured)");
            return ready(Err(InternalError::from_response("the debug API is off", response).into()));
        };
        let given =
            req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).unwrap_or("");
        // Digests of the same length: `ct_eq` on slices of different lengths answers at once,
        // which would tell a prober the token's length.
        let digest = |token: &str| sha2::Sha256::digest(token.as_bytes());
        if bool::from(digest(given).ct_eq(&digest(&expected))) {
            ready(Ok(Admin))
        } else {
            let response = api_error(StatusCode::UNAUTHORIZED, "unauthorized", "a valid admin token is required");
            ready(Err(InternalError::from_response("no valid admin token", response).into()))
        }
    }
}

fn wire(e: &Envelope) -> serde_json::Value {
    serde_json::json!({ "seq": e.seq, "timeMs": e.time_ms, "type": e.event_type, "schemaVersion": e.schema_version, "correlationId": e.correlation_id, "checksum": e.checksum, "payload": e.payload })
}

fn bad_request(message: String) -> HttpResponse {
    api_error(StatusCode::BAD_REQUEST, "bad_request", &message)
}

fn store_failed(error: impl std::fmt::Display) -> HttpResponse {
    api_error(StatusCode::INTERNAL_SERVER_ERROR, "store", &error.to_string())
}

fn no_such_session() -> HttpResponse {
    api_error(StatusCode::NOT_FOUND, "not_found", "no such session")
}

/// 429 `busy`: as many of these as `[limits] {limit}` allows are running; retry when one is done.
fn busy(what: &str, limit: &str, n: usize) -> HttpResponse {
    let message = format!("{n} {what} at once is this gateway's limit (`limits.{limit}`); retry when one has ended");
    let mut response = api_error(StatusCode::TOO_MANY_REQUESTS, "busy", &message);
    response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    response
}

/// What the debug API may run at once, per gateway: follow streams and state rebuilds, each a
/// permit held for as long as it runs.
pub struct DebugGates {
    follows: Arc<Semaphore>,
    folds: Arc<Semaphore>,
}

impl DebugGates {
    pub fn new(limits: &crate::config::Limits) -> Self {
        Self { follows: Arc::new(Semaphore::new(limits.debug_follows)), folds: Arc::new(Semaphore::new(limits.debug_state_folds)) }
    }
}

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    project: Option<String>,
    status: Option<String>,
    since: Option<String>,
    after: Option<String>,
    limit: Option<usize>,
}

pub async fn sessions(_: Admin, state: web::Data<AppState>, q: web::Query<ListQuery>) -> HttpResponse {
    let status = match q.status.as_deref().map(crate::replay::parse_status).transpose() {
        Ok(s) => s,
        Err(e) => return bad_request(e.to_string()),
    };
    let since = match q.since.as_deref().map(crate::replay::parse_time).transpose() {
        Ok(s) => s,
        Err(e) => return bad_request(e.to_string()),
    };
    let after = match q.after.as_deref().map(SessionId::from_str).transpose() {
        Ok(a) => a,
        Err(_) => return bad_request("`after` is not a session id".into()),
    };
    let filter = SessionFilter { project: q.project.clone(), status, active_since_ms: since };
    match state.registry.log().list_sessions(&filter, after, q.limit.unwrap_or(100).clamp(1, 1000)).await {
        Ok(page) => HttpResponse::Ok().json(serde_json::json!({
            "sessions": page.sessions.iter().map(|m| serde_json::json!({
                "session": m.session.to_string(), "project": m.project, "status": m.status,
                "events": m.latest_seq, "createdMs": m.created_ms, "lastActivityMs": m.last_activity_ms,
            })).collect::<Vec<_>>(),
            "next": page.next.map(|n| n.to_string()),
        })),
        Err(e) => store_failed(e),
    }
}

#[derive(Debug, Deserialize)]
pub struct RangeQuery {
    from: Option<u64>,
    to: Option<u64>,
}

pub async fn events(_: Admin, state: web::Data<AppState>, id: web::Path<String>, q: web::Query<RangeQuery>) -> HttpResponse {
    let Ok(id) = SessionId::from_str(&id) else { return bad_request("not a session id".into()) };
    let from = q.from.unwrap_or(1).max(1);
    let to = Some(q.to.unwrap_or(u64::MAX).min(from.saturating_add(9_999)));
    match state.registry.log().session_meta(id).await {
        Ok(Some(_)) => {}
        Ok(None) => return no_such_session(),
        Err(e) => return store_failed(e),
    }
    match state.registry.log().read(id, from, to).await {
        Ok(events) => HttpResponse::Ok().json(events.iter().map(wire).collect::<Vec<_>>()),
        Err(e) => store_failed(e),
    }
}

#[derive(Debug, Deserialize)]
pub struct StateQuery {
    seq: Option<u64>,
}

/// `GET /debug/sessions/{id}/state?seq=N`: the state as the visitor had it after seq N (the fold of
/// the log up to N), with its hash, for the replay timeline. The fold runs on a blocking thread
/// (a session imported with a million events takes seconds), at most `limits.debug_state_folds`
/// at once.
pub async fn state_at(_: Admin, state: web::Data<AppState>, id: web::Path<String>, q: web::Query<StateQuery>) -> HttpResponse {
    let Ok(id) = SessionId::from_str(&id) else { return bad_request("not a session id".into()) };
    match state.registry.log().session_meta(id).await {
        Ok(Some(_)) => {}
        Ok(None) => return no_such_session(),
        Err(e) => return store_failed(e),
    }
    let Ok(permit) = state.debug_gates.folds.clone().try_acquire_owned() else {
        return busy("state rebuilds", "debug_state_folds", state.config.limits.debug_state_folds);
    };
    let log = state.registry.log().clone();
    let (seq, runtime) = (q.seq, tokio::runtime::Handle::current());
    // The worker's runtime drives the log's I/O meanwhile (JetStream); the fold itself, and the
    // serialization of a state that may be large, take this thread, not the worker.
    let rebuilt = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let (folded, seq) = runtime.block_on(vestibule_actors::runtime::fold_log(log.as_ref(), id, seq))?;
        let json = vestibule_actors::session::wire::to_value(&folded);
        let hash = vestibule_actors::session::wire::state_hash(&json);
        Ok::<_, vestibule_store::StoreError>(serde_json::json!({ "seq": seq, "state": json, "stateHash": hash }))
    })
    .await;
    match rebuilt {
        Ok(Ok(body)) => HttpResponse::Ok().json(body),
        Ok(Err(e)) => store_failed(e),
        Err(e) => store_failed(format!("the state rebuild failed: {e}")),
    }
}

/// `GET /debug/sessions/{id}/follow?from=N`: the session's events from N, then each one as it is
/// committed, as Server-Sent Events. At most `limits.debug_follows` at once; a comment line after
/// `limits.debug_follow_heartbeat` with nothing else sent.
pub async fn follow(_: Admin, state: web::Data<AppState>, id: web::Path<String>, q: web::Query<RangeQuery>) -> HttpResponse {
    let Ok(id) = SessionId::from_str(&id) else { return bad_request("not a session id".into()) };
    let Ok(permit) = state.debug_gates.follows.clone().try_acquire_owned() else {
        return busy("follow streams", "debug_follows", state.config.limits.debug_follows);
    };
    let period = state.config.limits.debug_follow_heartbeat;
    let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let following = Following { events: state.registry.log().follow(id, q.from.unwrap_or(1).max(1)), heartbeat, _permit: permit };
    // Pulled as the connection takes it: a client that stops reading stops the reads of the log
    // (actix-http polls the body only while its write buffer has room), and its connection is closed
    // once it has taken nothing for `limits.write_timeout`. The permit goes with the stream.
    let stream = futures_util::stream::unfold(following, |mut f| async move {
        let line = tokio::select! {
            item = f.events.next() => match item? {
                Ok(e) => format!("data: {}\n\n", wire(&e)),
                Err(e) => format!("event: error\ndata: {}\n\n", serde_json::json!({ "message": e.to_string() })),
            },
            _ = f.heartbeat.tick() => return Some((Ok::<_, actix_web::Error>(web::Bytes::from_static(HEARTBEAT)), f)),
        };
        f.heartbeat.reset();
        Some((Ok(web::Bytes::from(line)), f))
    });
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .streaming(stream)
}

/// An SSE comment: ignored by readers of the stream (`EventSource`, the timeline).
const HEARTBEAT: &[u8] = b": heartbeat\n\n";

struct Following {
    events: EventStream,
    heartbeat: tokio::time::Interval,
    _permit: OwnedSemaphorePermit,
}
