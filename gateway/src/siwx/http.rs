//! HTTP endpoints for sign-in: the public key set, a token for the page's signed-in session, token
//! introspection (which knows about sign-outs) and sign-out. Documented in `docs/siwx.md`.

use std::str::FromStr;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, web};
use serde::Deserialize;
use vestibule_actors::runtime::{Execute, Inspect, fold_log};
use vestibule_actors::session::{ClientCommand, CommandError, RefusalCode, SessionState};
use vestibule_store::SessionId;

use super::token::{SignInClaims, TokenError};
use crate::cluster::Placement;
use crate::http::api_error;
use crate::state::AppState;

/// Proof that the caller is the page holding the modal session (the resume token is what the widget
/// keeps; it is never sent anywhere else).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionCredentials {
    session_id: String,
    resume_token: String,
    /// For sign-out: the CAIP-10 account (default: the active one).
    #[serde(default)]
    account: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntrospectRequest {
    token: String,
    /// The project whose backend asks (the token's `aud`): required, so that no backend can take
    /// a token its users were given on another project's site for one of its own.
    audience: String,
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn unauthorized() -> HttpResponse {
    api_error(StatusCode::UNAUTHORIZED, "unauthorized", "unknown session or wrong resume token")
}

pub async fn jwks(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
        .json(state.token_keys.jwks())
}

/// The session's state for a read: from its actor when this gateway runs it; in a cluster, folded
/// from the log when another gateway owns it (no second actor for the session).
async fn session_state(state: &AppState, id: SessionId) -> Option<SessionState> {
    if let Some(cluster) = &state.cluster {
        match cluster.place(id).await.ok()? {
            Placement::Here => {}
            Placement::Owner(_) => return fold_log(state.registry.log().as_ref(), id, None).await.ok().map(|(s, _)| s),
        }
    }
    state.registry.session(id).send(Inspect).await.ok()?.ok().map(|snapshot| snapshot.state)
}

/// Why [`execute`] ran no command.
enum NotRun {
    /// The session's command budget (`limits.commands_per_second`) is spent.
    RateLimited,
    /// The session is unavailable.
    Unavailable,
}

/// Runs an HTTP API command on the session: here, or on its owner in a cluster. The gateway that
/// runs it takes a token from the session's command bucket first, the one its WebSocket
/// connections share, so that the HTTP API is no way around the session's rate limit (an owner
/// answers a spent bucket as a `rate_limited` refusal, `cluster.rs`). `Ok(error)` is the command's
/// refusal, if any.
/// `resume_token` is the caller's, already checked here: an owner elsewhere checks it too.
async fn execute(
    state: &AppState,
    id: SessionId,
    resume_token: &str,
    command_id: String,
    command: ClientCommand,
) -> Result<Option<CommandError>, NotRun> {
    if let Some(cluster) = &state.cluster {
        match cluster.place(id).await.map_err(|_| NotRun::Unavailable)? {
            Placement::Here => {}
            Placement::Owner(owner) => {
                return match cluster.execute_on(&owner, id, resume_token, command_id, command).await {
                    Ok(Some(refused)) if refused.code == RefusalCode::RateLimited => Err(NotRun::RateLimited),
                    Ok(outcome) => Ok(outcome),
                    Err(_) => Err(NotRun::Unavailable),
                };
            }
        }
    }
    if !take_command_token(state, id) {
        return Err(NotRun::RateLimited);
    }
    state.registry.session(id).send(Execute::new(command_id, command, None)).await.map(|reply| reply.error).map_err(|_| NotRun::Unavailable)
}

/// Takes one of the session's command tokens (the bucket its WebSocket connections share); a
/// spent bucket is counted as a `rate_limited` refusal.
pub(crate) fn take_command_token(state: &AppState, id: SessionId) -> bool {
    let taken = state.command_limits.try_take(id);
    if !taken {
        state.metrics.refusal(RefusalCode::RateLimited.as_str());
        tracing::debug!(session = %id, "HTTP command rate limited on this session");
    }
    taken
}

/// 429 with the code the WebSocket path refuses a command with; the bucket computes no wait, so
/// `Retry-After` is one second (a token's refill at the lowest configurable rate, 1/s).
fn rate_limited() -> HttpResponse {
    let mut response = api_error(StatusCode::TOO_MANY_REQUESTS, RefusalCode::RateLimited.as_str(), "too many commands; slow down");
    response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    response
}

fn unavailable() -> HttpResponse {
    api_error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "the session is unavailable; retry")
}

async fn authorized(state: &AppState, creds: &SessionCredentials) -> Option<SessionId> {
    let id = SessionId::from_str(&creds.session_id).ok()?;
    state.registry.authorize_token(id, &creds.resume_token).await.ok()?;
    Some(id)
}

/// `POST /siwx/token`: a token for the active account's sign-in session.
pub async fn token(state: web::Data<AppState>, body: web::Json<SessionCredentials>) -> HttpResponse {
    let Some(id) = authorized(&state, &body).await else { return unauthorized() };
    let Some(s) = session_state(&state, id).await else { return unavailable() };
    let s = &s;
    let Some(sign_in) = s.active_caip_address().and_then(|a| s.siwx.session_for(&a).cloned()) else {
        return api_error(StatusCode::NOT_FOUND, "no_sign_in_session", "the active account has not signed in");
    };
    let now = now_s();
    let exp = (sign_in.expires_ms / 1000).min(now + state.config.siwx.token_ttl.as_secs());
    let claims = SignInClaims {
        iss: state.config.siwx.issuer.clone(),
        sub: sign_in.account.clone(),
        aud: s.project.clone(),
        sid: id.to_string(),
        sis: sign_in.id.clone(),
        origin: s.origin.clone(),
        method: serde_json::to_value(sign_in.method).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
        iat: now,
        exp,
    };
    let token = state.token_keys.issue(&claims);
    tracing::info!(session = %id, sign_in = %sign_in.id, "sign-in token issued");
    HttpResponse::Ok().insert_header((header::CACHE_CONTROL, "no-store")).json(serde_json::json!({ "token": token, "claims": claims }))
}

/// `POST /siwx/sessions`: the modal session's sign-in sessions (account, chain, method, times).
pub async fn sessions(state: web::Data<AppState>, body: web::Json<SessionCredentials>) -> HttpResponse {
    let Some(id) = authorized(&state, &body).await else { return unauthorized() };
    let Some(session) = session_state(&state, id).await else { return unavailable() };
    let list: Vec<_> = session
        .siwx
        .sessions
        .values()
        .map(|s| serde_json::json!({ "id": s.id, "account": s.account, "chain": s.chain, "method": s.method, "issuedMs": s.issued_ms, "expiresMs": s.expires_ms }))
        .collect();
    HttpResponse::Ok().insert_header((header::CACHE_CONTROL, "no-store")).json(serde_json::json!({ "sessions": list }))
}

/// `POST /siwx/introspect`: whether a token is valid now, including sign-outs (which an offline
/// check cannot see before the token expires).
pub async fn introspect(state: web::Data<AppState>, body: web::Json<IntrospectRequest>) -> HttpResponse {
    let inactive = |reason: &str| HttpResponse::Ok().json(serde_json::json!({ "active": false, "reason": reason }));
    let claims = match state.token_keys.verify(&body.token, now_s()) {
        Ok(claims) => claims,
        Err(TokenError::Expired) => return inactive("expired"),
        Err(TokenError::BadSignature) => return inactive("bad_signature"),
        Err(TokenError::Malformed) => return inactive("malformed"),
    };
    if claims.aud != body.audience {
        return inactive("wrong_audience");
    }
    let Ok(id) = SessionId::from_str(&claims.sid) else { return inactive("malformed") };
    // A session that no longer exists (expired by retention) has no sign-in.
    if !matches!(state.registry.log().session_meta(id).await, Ok(Some(_))) {
        return inactive("signed_out");
    }
    let Some(session) = session_state(&state, id).await else { return unavailable() };
    match session.siwx.session_for(&claims.sub) {
        Some(s) if s.id == claims.sis => HttpResponse::Ok().json(serde_json::json!({ "active": true, "claims": claims })),
        _ => inactive("signed_out"),
    }
}

/// `POST /siwx/signout`: ends a sign-in session (the host's "sign out" button).
pub async fn sign_out(state: web::Data<AppState>, body: web::Json<SessionCredentials>) -> HttpResponse {
    let Some(id) = authorized(&state, &body).await else { return unauthorized() };
    let command = ClientCommand::SiwxSignOut { account: body.account.clone() };
    let command_id = format!("http-signout-{}", hex::encode(rand::random::<[u8; 8]>()));
    match execute(&state, id, &body.resume_token, command_id, command).await {
        Ok(None) => HttpResponse::NoContent().finish(),
        Ok(Some(e)) => HttpResponse::Conflict().json(serde_json::json!({ "code": e.code, "message": e.message })),
        Err(NotRun::RateLimited) => rate_limited(),
        Err(NotRun::Unavailable) => unavailable(),
    }
}
