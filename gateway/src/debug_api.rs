//! The debug API: read any session's events while the gateway runs (the replay CLI needs the data
//! directory to itself). Off unless `admin_token` is configured; every request must carry
//! `Authorization: Bearer <admin_token>`, compared in constant time.
//!
//! - `GET /debug/sessions?project=&status=&since=&after=&limit=` — one page of sessions
//! - `GET /debug/sessions/{id}/events?from=&to=` — events (at most 10 000 per request)
//! - `GET /debug/sessions/{id}/state?seq=` — the folded state after seq (default: the latest)
//! - `GET /debug/sessions/{id}/follow?from=` — Server-Sent Events: each committed event as `data:`

use std::str::FromStr;

use actix_web::{HttpRequest, HttpResponse, http::header, web};
use futures_util::StreamExt;
use serde::Deserialize;
use subtle::ConstantTimeEq;
use vestibule_store::{Envelope, SessionFilter, SessionId};

use crate::state::AppState;

fn authorized(state: &AppState, req: &HttpRequest) -> Result<(), HttpResponse> {
    let Some(expected) = state.config.admin_token.as_deref() else {
        return Err(HttpResponse::NotFound()
            .json(serde_json::json!({ "code": "disabled", "message": "the debug API is off (no admin_token configured)" })));
    };
    let given =
        req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).unwrap_or("");
    if bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(HttpResponse::Unauthorized().json(serde_json::json!({ "code": "unauthorized", "message": "a valid admin token is required" })))
    }
}

fn wire(e: &Envelope) -> serde_json::Value {
    serde_json::json!({ "seq": e.seq, "timeMs": e.time_ms, "type": e.event_type, "schemaVersion": e.schema_version, "correlationId": e.correlation_id, "checksum": e.checksum, "payload": e.payload })
}

fn bad_request(message: String) -> HttpResponse {
    HttpResponse::BadRequest().json(serde_json::json!({ "code": "bad_request", "message": message }))
}

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    project: Option<String>,
    status: Option<String>,
    since: Option<String>,
    after: Option<String>,
    limit: Option<usize>,
}

pub async fn sessions(state: web::Data<AppState>, req: HttpRequest, q: web::Query<ListQuery>) -> HttpResponse {
    if let Err(r) = authorized(&state, &req) {
        return r;
    }
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
        Err(e) => HttpResponse::InternalServerError().json(serde_json::json!({ "code": "store", "message": e.to_string() })),
    }
}

#[derive(Debug, Deserialize)]
pub struct RangeQuery {
    from: Option<u64>,
    to: Option<u64>,
}

pub async fn events(state: web::Data<AppState>, req: HttpRequest, id: web::Path<String>, q: web::Query<RangeQuery>) -> HttpResponse {
    if let Err(r) = authorized(&state, &req) {
        return r;
    }
    let Ok(id) = SessionId::from_str(&id) else { return bad_request("not a session id".into()) };
    let from = q.from.unwrap_or(1).max(1);
    let to = Some(q.to.unwrap_or(u64::MAX).min(from.saturating_add(9_999)));
    match state.registry.log().session_meta(id).await {
        Ok(Some(_)) => {}
        Ok(None) => return HttpResponse::NotFound().json(serde_json::json!({ "code": "not_found", "message": "no such session" })),
        Err(e) => return HttpResponse::InternalServerError().json(serde_json::json!({ "code": "store", "message": e.to_string() })),
    }
    match state.registry.log().read(id, from, to).await {
        Ok(events) => HttpResponse::Ok().json(events.iter().map(wire).collect::<Vec<_>>()),
        Err(e) => HttpResponse::InternalServerError().json(serde_json::json!({ "code": "store", "message": e.to_string() })),
    }
}

#[derive(Debug, Deserialize)]
pub struct StateQuery {
    seq: Option<u64>,
}

/// `GET /debug/sessions/{id}/state?seq=N`: the state as the visitor had it after seq N (the fold of
/// the log up to N), with its hash, for the replay timeline.
pub async fn state_at(state: web::Data<AppState>, req: HttpRequest, id: web::Path<String>, q: web::Query<StateQuery>) -> HttpResponse {
    if let Err(r) = authorized(&state, &req) {
        return r;
    }
    let Ok(id) = SessionId::from_str(&id) else { return bad_request("not a session id".into()) };
    match state.registry.log().session_meta(id).await {
        Ok(Some(_)) => {}
        Ok(None) => return HttpResponse::NotFound().json(serde_json::json!({ "code": "not_found", "message": "no such session" })),
        Err(e) => return HttpResponse::InternalServerError().json(serde_json::json!({ "code": "store", "message": e.to_string() })),
    }
    match vestibule_actors::runtime::fold_log(state.registry.log().as_ref(), id, q.seq).await {
        Ok((folded, seq)) => {
            let json = vestibule_actors::session::wire::to_value(&folded);
            let hash = vestibule_actors::session::wire::state_hash(&json);
            HttpResponse::Ok().json(serde_json::json!({ "seq": seq, "state": json, "stateHash": hash }))
        }
        Err(e) => HttpResponse::InternalServerError().json(serde_json::json!({ "code": "store", "message": e.to_string() })),
    }
}

pub async fn follow(state: web::Data<AppState>, req: HttpRequest, id: web::Path<String>, q: web::Query<RangeQuery>) -> HttpResponse {
    if let Err(r) = authorized(&state, &req) {
        return r;
    }
    let Ok(id) = SessionId::from_str(&id) else { return bad_request("not a session id".into()) };
    let stream = state.registry.log().follow(id, q.from.unwrap_or(1).max(1)).map(|item| {
        let line = match item {
            Ok(e) => format!("data: {}\n\n", wire(&e)),
            Err(e) => format!("event: error\ndata: {}\n\n", serde_json::json!({ "message": e.to_string() })),
        };
        Ok::<_, actix_web::Error>(web::Bytes::from(line))
    });
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .streaming(stream)
}
