//! `/ws`: the widget's WebSocket. The upgrade is refused unless the project exists, the page's
//! Origin is on its allowlist and the client has a free connection slot; `/ws/check` answers the same
//! question over plain HTTP, because a browser cannot read why an upgrade failed.

mod connection;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;

use vestibule_actors::protocol::ProtocolErrorCode;

use crate::config::Project;
use crate::limits::{ConnectionSlot, SlotRefusal};
use crate::state::AppState;

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

    fn response(self) -> HttpResponse {
        let mut response = match self {
            Refusal::ProjectIdNotConfigured => HttpResponse::BadRequest(),
            Refusal::InvalidProjectId | Refusal::InvalidAppConfiguration => HttpResponse::Forbidden(),
            Refusal::RateLimited => HttpResponse::TooManyRequests(),
            Refusal::ShuttingDown => HttpResponse::ServiceUnavailable(),
        };
        response
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
            .json(serde_json::json!({ "code": self.code(), "message": self.message() }))
    }
}

fn origin_of(req: &HttpRequest) -> Option<String> {
    req.headers().get(header::ORIGIN).and_then(|o| o.to_str().ok()).map(str::to_string)
}

/// The checks an upgrade must pass, in order. Returns the project and the page's origin.
fn admit<'a>(state: &'a AppState, req: &HttpRequest, query: &WsQuery) -> Result<(&'a Project, String), Refusal> {
    if state.is_shutting_down() {
        return Err(Refusal::ShuttingDown);
    }
    let project_id = query.project_id.as_deref().filter(|p| !p.is_empty()).ok_or(Refusal::ProjectIdNotConfigured)?;
    let project = state.projects.get(project_id).ok_or(Refusal::InvalidProjectId)?;
    // Browsers always send Origin on a WebSocket upgrade; a request without one is not a page.
    let origin = origin_of(req).ok_or(Refusal::InvalidAppConfiguration)?;
    if !project.allows(&origin) {
        return Err(Refusal::InvalidAppConfiguration);
    }
    Ok((project, origin))
}

fn refuse(state: &AppState, req: &HttpRequest, refusal: Refusal) -> HttpResponse {
    state.metrics.refusal(refusal.code().as_str());
    let peer = req.peer_addr().map(|a| a.ip().to_string()).unwrap_or_default();
    tracing::info!(code = refusal.code().as_str(), origin = origin_of(req).as_deref().unwrap_or("-"), peer, "upgrade refused");
    refusal.response()
}

pub async fn upgrade(req: HttpRequest, body: web::Payload, query: web::Query<WsQuery>, state: web::Data<AppState>) -> HttpResponse {
    let (project, origin) = match admit(&state, &req, &query) {
        Ok(admitted) => admitted,
        Err(refusal) => return refuse(&state, &req, refusal),
    };
    let ip = req.peer_addr().map(|a| a.ip()).unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
    let slot: ConnectionSlot = match state.connections.acquire(ip) {
        Ok(slot) => slot,
        Err(SlotRefusal::PerIp | SlotRefusal::Total) => return refuse(&state, &req, Refusal::RateLimited),
    };
    let (response, session, stream) = match actix_ws::handle(&req, body) {
        Ok(parts) => parts,
        Err(e) => return e.error_response(),
    };
    let stream = stream.max_frame_size(state.config.limits.max_frame_bytes);
    let connection = connection::Connection::new(state.clone().into_inner(), project.id.clone(), origin, slot);
    actix_web::rt::spawn(connection.run(session, stream));
    response
}

/// `GET /ws/check?projectId=…`: would an upgrade from this page's Origin be accepted?
pub async fn check(req: HttpRequest, query: web::Query<WsQuery>, state: web::Data<AppState>) -> HttpResponse {
    match admit(&state, &req, &query) {
        Ok(_) => HttpResponse::Ok()
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
            .json(serde_json::json!({ "ok": true })),
        Err(refusal) => refusal.response(),
    }
}
