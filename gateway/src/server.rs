//! `vestibule serve`: opens the log, starts the HTTP server and runs until SIGINT or SIGTERM, then
//! shuts down gracefully: stop accepting, close every WebSocket with 1001, stop the sessions, flush.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, App, HttpServer};
use vestibule_actors::runtime::{Registry, SystemClock};

use crate::config::GatewayConfig;
use crate::metrics::GatewayMetrics;
use crate::state::AppState;
use crate::{http, store, ws};

/// A running gateway: its address, and a handle to stop it.
pub struct Running {
    pub addr: std::net::SocketAddr,
    pub state: web::Data<AppState>,
    server: actix_web::dev::Server,
}

impl Running {
    /// Resolves when the server has stopped and the log is flushed.
    pub async fn wait(self) -> anyhow::Result<()> {
        self.server.await?;
        self.state.registry.stop_all();
        // Give stopping sessions a moment to finish in-flight appends before the final flush.
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.state.registry.log().flush().await?;
        tracing::info!("stopped");
        Ok(())
    }

    /// Graceful stop: refuse new connections, close open ones with 1001, then stop the server.
    pub async fn stop(&self) {
        self.state.begin_shutdown();
        tokio::time::sleep(Duration::from_millis(200)).await;
        self.server.handle().stop(true).await;
    }
}

/// Opens the log and starts serving. Must run inside an actix system.
pub async fn start(config: GatewayConfig) -> anyhow::Result<Running> {
    let log = store::open(&config).await?;
    let listener = TcpListener::bind(&config.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr()?;
    let projects = config.resolved_projects(&format!("http://{addr}"));
    let metrics = Arc::new(GatewayMetrics::default());
    let checker = crate::siwx::checker::RpcContractChecker::from_settings(&config.siwx)?;
    let registry = Registry::new(log.clone(), Arc::new(SystemClock), config.runtime.clone(), metrics.runtime.clone())
        .with_contract_checker(Arc::new(checker));
    let token_keys = crate::siwx::token::TokenKeys::load_or_create(&config.data)?;
    store::spawn_retention(log, &config);
    let workers = if config.workers == 0 { std::thread::available_parallelism().map_or(2, |n| n.get()) } else { config.workers };
    let static_dir = config.static_dir.clone();
    let has_static = static_dir.join("index.html").is_file();
    if !has_static {
        tracing::warn!(dir = %static_dir.display(), "the client is not built; / shows a notice");
    }
    let state = web::Data::new(AppState::new(config, projects, registry, metrics, token_keys));
    let app_state = state.clone();
    let server = HttpServer::new(move || {
        let app = App::new()
            .app_data(app_state.clone())
            .route("/ws", web::get().to(ws::upgrade))
            .route("/ws/check", web::get().to(ws::check))
            .route("/healthz", web::get().to(http::healthz))
            .route("/metrics", web::get().to(http::metrics))
            .route("/.well-known/jwks.json", web::get().to(crate::siwx::http::jwks))
            .route("/siwx/token", web::post().to(crate::siwx::http::token))
            .route("/siwx/introspect", web::post().to(crate::siwx::http::introspect))
            .route("/siwx/signout", web::post().to(crate::siwx::http::sign_out))
            .route("/siwx/sessions", web::post().to(crate::siwx::http::sessions))
            .route("/debug/sessions", web::get().to(crate::debug_api::sessions))
            .route("/debug/sessions/{id}/events", web::get().to(crate::debug_api::events))
            .route("/debug/sessions/{id}/state", web::get().to(crate::debug_api::state_at))
            .route("/debug/sessions/{id}/follow", web::get().to(crate::debug_api::follow));
        if has_static {
            app.service(actix_files::Files::new("/", &static_dir).index_file("index.html"))
        } else {
            app.route("/", web::get().to(http::not_built))
        }
    })
    .workers(workers)
    // Results and diffs are small frames written back to back; without this the second waits for
    // the client's delayed ACK (tens of milliseconds).
    .tcp_nodelay(true)
    .disable_signals()
    .shutdown_timeout(5)
    .listen(listener)?
    .run();
    Ok(Running { addr, state, server })
}

/// Runs until a signal, then stops gracefully.
pub async fn serve(config: GatewayConfig) -> anyhow::Result<()> {
    let running = start(config).await?;
    println!("vestibule listening on http://{}", running.addr);
    tracing::info!(addr = %running.addr, "listening");
    let state = running.state.clone();
    let handle = running.server.handle();
    actix_web::rt::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        state.begin_shutdown();
        tokio::time::sleep(Duration::from_millis(200)).await;
        handle.stop(true).await;
    });
    running.wait().await
}

async fn wait_for_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
