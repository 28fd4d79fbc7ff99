//! The frame origin's routes (docs/embedded-wallet.md, "Frame origin routes" and "Frame API"):
//! the frame page with its CSP, its assets, the approval window's page, the popup's loading page, the OAuth callback page, and
//! the JSON API under /api (Origin = frame_origin, bodies ≤ 16 KiB, errors as
//! `{ "error": { "code", "message" } }`).

use std::future::{Ready, ready};

use actix_web::error::JsonPayloadError;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError, web};
use serde::Deserialize;

use crate::service::{EmailUpdateStep, EmbeddedError, EmbeddedService};

/// The largest JSON body the frame API reads.
pub const API_BODY_LIMIT: usize = 16 * 1024;

impl ResponseError for EmbeddedError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        response.insert_header((header::CACHE_CONTROL, "no-store"));
        if let EmbeddedError::Cooldown { retry_after_secs }
        | EmbeddedError::EmailRateLimited { retry_after_secs }
        | EmbeddedError::RpcRateLimited { retry_after_secs } = self
        {
            response.insert_header((header::RETRY_AFTER, retry_after_secs.to_string()));
        }
        response.json(serde_json::json!({ "error": { "code": self.code(), "message": self.to_string() } }))
    }
}

/// Present in every /api handler's arguments, first: refuses a request whose `Origin` is not the
/// frame origin before its body is parsed (the gateway's `bounded_request` has read at most its
/// 64 KiB by then).
pub struct FromFrameOrigin;

impl FromRequest for FromFrameOrigin {
    type Error = EmbeddedError;
    type Future = Ready<Result<Self, EmbeddedError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let expected = req.app_data::<web::Data<EmbeddedService>>().map(|service| service.config().frame_origin().to_owned());
        let origin = req.headers().get(header::ORIGIN).and_then(|value| value.to_str().ok());
        ready(match (expected, origin) {
            (Some(expected), Some(origin)) if origin == expected => Ok(FromFrameOrigin),
            _ => Err(EmbeddedError::BadOrigin),
        })
    }
}

fn json_config() -> web::JsonConfig {
    web::JsonConfig::default().limit(API_BODY_LIMIT).error_handler(|error, _| {
        let error = match error {
            JsonPayloadError::Overflow { .. } | JsonPayloadError::OverflowKnownLength { .. } => EmbeddedError::BodyTooLarge,
            JsonPayloadError::ContentType => EmbeddedError::BadRequest("Content-Type must be application/json".into()),
            // The parser's own words (line and column, or the field), without actix's prefix.
            JsonPayloadError::Deserialize(e) => EmbeddedError::BadRequest(format!("malformed request: {e}")),
            other => EmbeddedError::BadRequest(format!("malformed request: {other}")),
        };
        error.into()
    })
}

/// The frame's routes on the frame origin; the gateway mounts them on its `frame_listen` server.
pub fn configure_frame_routes(cfg: &mut web::ServiceConfig, service: web::Data<EmbeddedService>) {
    let assets = service.config().frame_assets_dir.join("assets");
    cfg.app_data(service)
        .route("/frame", web::get().to(frame_page))
        .route("/loading", web::get().to(loading_page))
        .route("/approve", web::get().to(approval_window_page))
        .route("/oauth/callback", web::get().to(oauth_callback))
        .service(actix_files::Files::new("/frame/assets", assets))
        .service(
            web::scope("/api")
                .app_data(json_config())
                .route("/frames", web::post().to(register_frame))
                .route("/email/verify", web::post().to(verify_email))
                .route("/social/complete", web::post().to(complete_social))
                .route("/farcaster/complete", web::post().to(complete_farcaster))
                .route("/wallet", web::post().to(bind_wallet))
                .route("/wallet/share", web::post().to(wallet_share))
                .route("/email/update/verify", web::post().to(verify_email_update))
                .route("/rpc", web::post().to(rpc))
                .default_service(web::to(|_: FromFrameOrigin| async { Err::<HttpResponse, _>(EmbeddedError::NotFound) })),
        );
}

fn html(status: StatusCode, csp: &str, body: impl Into<Vec<u8>>) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8")))
        .insert_header((header::CONTENT_SECURITY_POLICY, csp))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body.into())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FrameQuery {
    project_id: Option<String>,
}

async fn frame_page(service: web::Data<EmbeddedService>, query: web::Query<FrameQuery>) -> HttpResponse {
    let Some(csp) = query.project_id.as_deref().and_then(|project| service.frame_csp(project)) else {
        return html(StatusCode::NOT_FOUND, "default-src 'none'", "<!doctype html><title>Unknown project</title>");
    };
    let path = service.config().frame_assets_dir.join("frame.html");
    match tokio::fs::read(&path).await {
        Ok(page) => html(StatusCode::OK, &csp, page),
        Err(error) => {
            tracing::error!(path = %path.display(), %error, "the frame page is missing; build the client (client/dist-frame)");
            html(StatusCode::SERVICE_UNAVAILABLE, "default-src 'none'", "<!doctype html><title>Frame unavailable</title>")
        }
    }
}

/// The approval window's page (decision 1505): the frame opens it as a window of its own when a
/// request waits for the visitor, so that the host page cannot paint over what is approved. No page
/// may frame it (a framed copy could be covered as the frame can); it needs no project (it shows
/// only what its opener, the frame, sends it).
async fn approval_window_page(service: web::Data<EmbeddedService>) -> HttpResponse {
    let path = service.config().frame_assets_dir.join("approve.html");
    match tokio::fs::read(&path).await {
        Ok(page) => {
            let mut response = html(StatusCode::OK, "default-src 'self'; frame-ancestors 'none'", page);
            response.headers_mut().insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
            response
        }
        Err(error) => {
            tracing::error!(path = %path.display(), %error, "the approval window's page is missing; build the client (client/dist-frame)");
            html(StatusCode::SERVICE_UNAVAILABLE, "default-src 'none'", "<!doctype html><title>Approval unavailable</title>")
        }
    }
}

const LOADING_PAGE: &str =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>Loading…</title></head><body><p>Loading…</p></body></html>";

async fn loading_page(service: web::Data<EmbeddedService>) -> HttpResponse {
    let page =
        tokio::fs::read(service.config().frame_assets_dir.join("loading.html")).await.unwrap_or_else(|_| LOADING_PAGE.as_bytes().to_vec());
    // A popup's first page: no page frames it.
    html(StatusCode::OK, "default-src 'self'; frame-ancestors 'none'", page)
}

#[derive(Deserialize)]
struct CallbackQuery {
    state: Option<String>,
}

fn escape_attribute(text: &str) -> String {
    text.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;").replace('\'', "&#39;")
}

/// The provider's redirect target. Its script (/frame/assets/callback.js) reads the host origin
/// from `data-host-origin` on <body> (the pending login's host origin) and posts the result there.
async fn oauth_callback(service: web::Data<EmbeddedService>, query: web::Query<CallbackQuery>) -> HttpResponse {
    // The provider's redirect lands in the popup: no page frames it.
    let csp = "default-src 'self'; script-src 'self'; frame-ancestors 'none'";
    let Some(host_origin) = query.state.as_deref().and_then(|state| service.callback_host_origin(state)) else {
        return html(
            StatusCode::BAD_REQUEST,
            "default-src 'none'; frame-ancestors 'none'",
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>Sign-in failed</title></head><body><p>This sign-in link is unknown or expired. Close this window and try again.</p></body></html>",
        );
    };
    let data = escape_attribute(&host_origin);
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Signing in…</title></head><body data-host-origin=\"{data}\"><p>Signing in…</p><script src=\"/frame/assets/callback.js\"></script></body></html>"
    );
    html(StatusCode::OK, csp, page)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RegisterFrame {
    session_id: String,
    hpke_public_key: String,
    #[serde(default)]
    device_wallets: Vec<String>,
    /// The token of the frame this one replaces (a page reload): its login carries over.
    #[serde(default)]
    resume_token: Option<String>,
}

/// The client's address as the server in front of these routes determined it (the address its
/// trusted reverse proxies forwarded), put in the request's extensions by that server; without one,
/// the socket's peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub std::net::IpAddr);

fn client_address(req: &HttpRequest) -> Option<std::net::IpAddr> {
    use actix_web::HttpMessage as _;
    req.extensions().get::<ClientAddress>().map(|client| client.0).or_else(|| req.peer_addr().map(|peer| peer.ip()))
}

/// The frame is registered under the client's address ([`ClientAddress`]), the one the gateway's
/// other per-address limits count: its codes spend that address's budget of mails.
async fn register_frame(
    _: FromFrameOrigin,
    req: HttpRequest,
    service: web::Data<EmbeddedService>,
    body: web::Json<RegisterFrame>,
) -> Result<HttpResponse, EmbeddedError> {
    let body = body.into_inner();
    let client = client_address(&req);
    let Some(previous) = body.resume_token.as_deref() else {
        let (frame_id, frame_token) = service.register_frame(&body.session_id, &body.hpke_public_key, body.device_wallets, client).await?;
        return Ok(secret().json(serde_json::json!({ "frameId": frame_id, "frameToken": frame_token })));
    };
    let (frame_id, frame_token, login) =
        service.resume_frame(&body.session_id, &body.hpke_public_key, body.device_wallets, previous, client).await?;
    let mut answer = serde_json::json!({ "frameId": frame_id, "frameToken": frame_token });
    if let Some(login) = login {
        answer["login"] = serde_json::to_value(login).map_err(|_| EmbeddedError::Internal)?;
    }
    Ok(secret().json(answer))
}

/// A 200 that no cache may keep: it carries a bearer token, a share, or an account's chain data.
fn secret() -> actix_web::HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    response.insert_header((header::CACHE_CONTROL, "no-store"));
    response
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VerifyEmail {
    frame_token: String,
    challenge_id: String,
    otp: String,
}

async fn verify_email(
    _: FromFrameOrigin,
    service: web::Data<EmbeddedService>,
    body: web::Json<VerifyEmail>,
) -> Result<HttpResponse, EmbeddedError> {
    let result = service.verify_email_otp(&body.frame_token, &body.challenge_id, &body.otp)?;
    Ok(secret().json(result))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CompleteSocial {
    frame_token: String,
    result_uri: String,
}

async fn complete_social(
    _: FromFrameOrigin,
    service: web::Data<EmbeddedService>,
    body: web::Json<CompleteSocial>,
) -> Result<HttpResponse, EmbeddedError> {
    let result = service.complete_social(&body.frame_token, &body.result_uri).await?;
    Ok(secret().json(result))
}

async fn complete_farcaster(
    _: FromFrameOrigin,
    service: web::Data<EmbeddedService>,
    body: web::Json<FrameTokenOnly>,
) -> Result<HttpResponse, EmbeddedError> {
    let result = service.complete_farcaster(&body.frame_token).await?;
    Ok(secret().json(result))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BindWallet {
    frame_token: String,
    eip155_address: String,
    solana_address: String,
    server_share: String,
    recovery_share: String,
    eip155_signature: String,
    solana_signature: String,
}

async fn bind_wallet(
    _: FromFrameOrigin,
    service: web::Data<EmbeddedService>,
    body: web::Json<BindWallet>,
) -> Result<HttpResponse, EmbeddedError> {
    let wallet_id = service.bind_wallet(
        &body.frame_token,
        &body.eip155_address,
        &body.solana_address,
        &body.server_share,
        &body.recovery_share,
        &body.eip155_signature,
        &body.solana_signature,
    )?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "walletId": wallet_id })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FrameTokenOnly {
    frame_token: String,
}

async fn wallet_share(
    _: FromFrameOrigin,
    service: web::Data<EmbeddedService>,
    body: web::Json<FrameTokenOnly>,
) -> Result<HttpResponse, EmbeddedError> {
    let sealed = service.release_server_share(&body.frame_token)?;
    Ok(secret().json(serde_json::json!({ "serverShare": sealed })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct VerifyEmailUpdate {
    frame_token: String,
    step: EmailUpdateStep,
    otp: String,
}

async fn verify_email_update(
    _: FromFrameOrigin,
    service: web::Data<EmbeddedService>,
    body: web::Json<VerifyEmailUpdate>,
) -> Result<HttpResponse, EmbeddedError> {
    service.verify_email_update(&body.frame_token, body.step, &body.otp).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({})))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FrameRpcRequest {
    frame_token: String,
    chain_id: String,
    method: String,
    #[serde(default)]
    params: serde_json::Value,
}

async fn rpc(
    _: FromFrameOrigin,
    service: web::Data<EmbeddedService>,
    body: web::Json<FrameRpcRequest>,
) -> Result<HttpResponse, EmbeddedError> {
    let body = body.into_inner();
    let answer = match service.frame_rpc(&body.frame_token, &body.chain_id, &body.method, body.params).await? {
        Ok(result) => serde_json::json!({ "result": result }),
        Err(failure) => serde_json::json!({ "error": failure }),
    };
    Ok(secret().json(answer))
}
