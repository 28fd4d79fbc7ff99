//! Plain HTTP endpoints: health, metrics, and the static files (demo app, widget script).

use actix_web::{http::header, web, HttpResponse};
use prometheus_client::encoding::text::encode;

use crate::state::AppState;

pub async fn healthz(state: web::Data<AppState>) -> HttpResponse {
    if state.is_shutting_down() {
        return HttpResponse::ServiceUnavailable().json(serde_json::json!({ "status": "shutting_down" }));
    }
    HttpResponse::Ok().json(serde_json::json!({
        "status": "ok",
        "liveSessions": state.registry.live(),
        "connections": state.connections.open(),
    }))
}

pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let mut text = String::new();
    if encode(&mut text, &state.metrics.registry(state.registry.log().metrics())).is_err() {
        return HttpResponse::InternalServerError().finish();
    }
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8"))
        .body(text)
}

/// Served at `/` when the client has not been built.
pub async fn not_built() -> HttpResponse {
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(
        "<!doctype html><title>Vestibule</title><h1>Vestibule gateway</h1>\
         <p>The widget and demo app are not built. Run <code>./scripts/run</code>, which builds them, \
         or <code>npm --prefix client run build</code>.</p>",
    )
}
