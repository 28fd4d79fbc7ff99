//! `vestibule serve`: opens the log, starts the HTTP server and runs until SIGINT or SIGTERM, then
//! shuts down gracefully: stop accepting, close every WebSocket with 1001, stop the sessions, close the log (flushed, and checkpointed).
//!
//! The server is actix-server + actix-http's `HttpService` (what actix-web's `HttpServer` is made
//! of) with one step in front: each accepted socket must get a slot in the socket table
//! (`limits.rs`) or it is closed at once, before anything is read from it. The slot travels with the
//! socket ([`AdmittedSocket`]) and is freed when the socket is. WebSocket upgrades leave the HTTP
//! service for `ws::upgrade`, which speaks WebSocket on the socket itself.

use std::future::Future;
use std::io;
use std::net::TcpListener;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use actix_http::{HttpService, Protocol, Request};
use actix_service::{IntoServiceFactory, ServiceFactoryExt, fn_service, map_config};
use actix_web::dev::AppConfig;
use actix_web::http::{Method, header};
use actix_web::{App, web};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use vestibule_actors::runtime::{Registry, SystemClock};

use crate::config::GatewayConfig;
use crate::limits::{self, DescriptorBudget, SlotRefusal, SocketKind, SocketLimits, SocketSlot, Sockets};
use crate::metrics::GatewayMetrics;
use crate::state::AppState;
use crate::{http, store, ws};

/// A running gateway: its address, and a handle to stop it.
pub struct Running {
    pub addr: std::net::SocketAddr,
    pub state: web::Data<AppState>,
    server: actix_server::ServerHandle,
    /// The server's own task: it accepts and dispatches only while polled.
    serving: tokio::task::JoinHandle<io::Result<()>>,
}

impl Running {
    /// Resolves when the server has stopped and the log is flushed. An error when the event log
    /// failed: the process must exit (non-zero) so that it is restarted and reopens the log.
    pub async fn wait(self) -> anyhow::Result<()> {
        self.serving.await??;
        self.state.registry.stop_all();
        if let Some(cluster) = &self.state.cluster {
            // Every session this gateway owned is free at once for the others.
            tokio::time::sleep(Duration::from_millis(100)).await;
            cluster.leases.leave().await;
        }
        if let Some(reason) = self.state.registry.log().failure() {
            anyhow::bail!("the event log failed ({reason}); exiting so that a restart reopens it");
        }
        // Not closed (closing writes the segment log's checkpoint by path, into the other directory).
        if let Some(reason) = self.state.disk.replaced() {
            anyhow::bail!("{reason}; exiting without writing more");
        }
        // Give stopping sessions a moment to finish in-flight appends before the final flush.
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Closing flushes, and leaves what a close leaves (the segment log's index checkpoint):
        // the log's handles are shared, so the last one is never dropped before the process exits.
        self.state.registry.log().close().await?;
        tracing::info!("stopped");
        Ok(())
    }

    /// Graceful stop: refuse new connections, close open ones with 1001, then stop the server.
    pub async fn stop(&self) {
        stop_gracefully(&self.state, &self.server).await;
    }

    /// Runs one retention pass as if the time were `now_ms`, closing the connections of the
    /// sessions it expires (what the background retention does on its interval).
    pub async fn expire_sessions(&self, now_ms: u64) -> vestibule_store::ExpireReport {
        store::expire_sessions(&self.state.registry, &self.state.config, self.state.cluster.as_deref(), now_ms).await
    }
}

async fn stop_gracefully(state: &AppState, server: &actix_server::ServerHandle) {
    state.begin_shutdown();
    // Let the WebSockets send their 1001 and close before the workers stop polling them: they run
    // in tasks of their own, which actix-server's graceful stop does not wait for. Bounded as the
    // server's own wait is (`shutdown_timeout`).
    state.connections.close();
    let _ = tokio::time::timeout(SHUTDOWN_TIMEOUT, state.connections.wait()).await;
    server.stop(true).await;
}

/// How long a graceful stop waits for the WebSockets, then for the other connections.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// A socket that holds a slot in the socket table; the slot is freed when the socket is dropped.
///
/// While it carries plain HTTP it also bounds how long a request may take to arrive: from the first
/// byte of a request until it has arrived whole ([`RequestArrived`]) or the server starts answering
/// it, at most `limits.header_timeout + limits.body_timeout`. actix-http bounds only the first
/// request's head; without this a client could keep a connection (and its descriptor) forever by
/// trickling the head of its second request. Once a request has arrived, its handler may take as
/// long as it needs (the Farcaster completion waits for the visitor for up to two minutes).
pub struct AdmittedSocket {
    io: TcpStream,
    slot: SocketSlot,
    request_time: Duration,
    /// Armed by the first byte of a request, disarmed once the request has arrived or by the first
    /// byte of the answer.
    request_deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Set by [`RequestArrived::mark`] once a request's head and body are in.
    arrived: Arc<AtomicBool>,
    /// Set by a refusal that closes the connection ([`CloseAfterAnswer`]).
    close_requested: Arc<AtomicBool>,
    /// Armed by the first byte written once a close was requested: when it passes, reads end.
    closing: Option<Pin<Box<tokio::time::Sleep>>>,
    /// `limits.write_timeout`: how long an answer may wait for the client to take any of it.
    write_time: Duration,
    /// Armed when a write could not go out (the client is not reading), disarmed when one does;
    /// when it passes, the write fails and the connection is closed.
    write_deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The connection's task, waiting to read while a write could not go out.
    read_waiting: Option<std::task::Waker>,
}

/// After a refusal's answer has begun, how long the client's remaining bytes are still read (and
/// dropped) before the connection is closed: closing with unread data sends a TCP reset, which may
/// destroy the answer in the client's receive buffer before it has read it.
const CLOSE_LINGER: Duration = Duration::from_secs(1);

/// In each request's connection data: a refusal asks through it that the connection close once
/// answered. actix-http closes a connection whose answer says `Connection: close` only once the
/// request's body has been read to its end, and it keeps reading a chunked body the handler dropped
/// for as long as the client sends it, or stays silent: without this, a client that sends a chunk
/// header and nothing more would hold its socket, and its plain-HTTP slot, for ever.
#[derive(Clone)]
pub struct CloseAfterAnswer(Arc<AtomicBool>);

impl CloseAfterAnswer {
    pub fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// In each request's connection data: `http::bounded_request` marks through it that the request has
/// arrived whole, head and body, which ends the bound on its arrival. The next byte read starts the
/// next request's.
#[derive(Clone)]
pub struct RequestArrived(Arc<AtomicBool>);

impl RequestArrived {
    pub fn mark(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl AdmittedSocket {
    pub fn slot_mut(&mut self) -> &mut SocketSlot {
        &mut self.slot
    }

    /// Follows a write of plain HTTP: a write that goes out ends a stall; one that cannot starts
    /// (or continues) one, and a stall longer than `write_time` fails the write.
    ///
    /// actix-http answers pipelined requests one after another into its write buffer whether or
    /// not the client takes them, so a client that sends requests and never reads grew that buffer
    /// by tens of megabytes per connection and held its slot for ever. While a write is stalled,
    /// reads wait ([`AsyncRead::poll_read`] below), so no more requests come in to be answered.
    fn write_stall(&mut self, cx: &mut Context<'_>, written: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if self.slot.kind() == SocketKind::WebSocket {
            // A WebSocket has its own write timeout.
            return written;
        }
        match &written {
            Poll::Ready(Ok(n)) if *n > 0 => {
                self.write_deadline = None;
                if let Some(reader) = self.read_waiting.take() {
                    reader.wake();
                }
            }
            Poll::Pending => {
                let deadline = self.write_deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(self.write_time)));
                if deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client took none of the answer in time")));
                }
            }
            _ => {}
        }
        written
    }

    fn answering(&mut self, cx: &mut Context<'_>, written: &Poll<io::Result<usize>>) {
        if matches!(written, Poll::Ready(Ok(n)) if *n > 0) {
            self.request_deadline = None;
            if self.closing.is_none() && self.close_requested.load(Ordering::Relaxed) {
                let mut closing = Box::pin(tokio::time::sleep(CLOSE_LINGER));
                // Polled once here so that it wakes the connection's task: actix-http may not read
                // again on its own (a client that sends nothing gives it no reason to).
                let _ = closing.as_mut().poll(cx);
                self.closing = Some(closing);
            }
        }
    }
}

impl AsyncRead for AdmittedSocket {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(closing) = this.closing.as_mut()
            && closing.as_mut().poll(cx).is_ready()
        {
            // The end of the stream, as if the client had closed: actix-http gives up the body it
            // was reading and closes the connection.
            return Poll::Ready(Ok(()));
        }
        if this.write_deadline.is_some() && this.slot.kind() != SocketKind::WebSocket {
            // A write is stalled: no more requests until the client takes the answers it has.
            this.read_waiting = Some(cx.waker().clone());
            return Poll::Pending;
        }
        if this.arrived.swap(false, Ordering::Relaxed) {
            // The request being handled has arrived: what is read from now on is the next one's.
            this.request_deadline = None;
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        // A WebSocket has its own deadlines (hello, heartbeat, acknowledgements).
        if this.slot.kind() == SocketKind::WebSocket {
            this.request_deadline = None;
            return read;
        }
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before && this.request_deadline.is_none() {
            this.request_deadline = Some(Box::pin(tokio::time::sleep(this.request_time)));
        }
        if let Some(deadline) = this.request_deadline.as_mut()
            && deadline.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the request did not arrive in time")));
        }
        read
    }
}

impl AsyncWrite for AdmittedSocket {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        self.answering(cx, &written);
        self.write_stall(cx, written)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.answering(cx, &written);
        self.write_stall(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The socket limits this process can afford: its open-file limit (raised to the hard limit), minus
/// what is open now and what the worker threads will open, minus `limits.reserved_fds`.
fn socket_limits(config: &GatewayConfig, workers: usize) -> anyhow::Result<SocketLimits> {
    let open_file_limit = limits::raise_open_file_limit()?;
    // Each worker thread opens an epoll instance and a waker; the signal handling a few more.
    let in_use = limits::descriptors_in_use() + 4 * workers as u64 + 8;
    let budget = DescriptorBudget { open_file_limit, in_use, reserved: config.limits.reserved_fds as u64 };
    let l = &config.limits;
    let socket_limits =
        SocketLimits::from_budget(budget, l.http_connections_per_ip, l.max_http_connections, l.connections_per_ip, l.max_connections)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    tracing::info!(
        open_file_limit,
        in_use,
        reserved = budget.reserved,
        http_total = socket_limits.http_total,
        http_per_ip = socket_limits.http_per_ip,
        websocket_total = socket_limits.websocket_total,
        websocket_per_ip = socket_limits.websocket_per_ip,
        "socket limits"
    );
    Ok(socket_limits)
}

/// Opens the log and starts serving. Must run inside an actix system.
pub async fn start(config: GatewayConfig) -> anyhow::Result<Running> {
    let log = store::open(&config).await?;
    let listener = TcpListener::bind(&config.listen).map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr()?;
    let projects = config.resolved_projects(&format!("http://{addr}"));
    let metrics = Arc::new(GatewayMetrics::default());
    // The one chain service of this gateway (docs/chain.md): sessions reach its networks through
    // `ChainEffects`; none is configured by default, and then sessions serve no network. The
    // host's reads it may forward are exactly the ones the session routes to it.
    let chain = vestibule_chain::ChainService::builder(&config.chain_config())
        .host_reads(forwarded_chain_methods(config.embedded.is_some()))
        .max_forwarded_in_flight(config.limits.host_chain_calls)
        .max_forwarded_per_client(config.limits.host_chain_calls_per_client())
        .build()
        .map_err(|e| anyhow::anyhow!("configuration: `{}`: {}", e.field, e.message))?;
    let _ = metrics.chain.set(chain.metrics().clone());
    tracing::info!(networks = ?chain.networks().iter().map(|n| n.to_string()).collect::<Vec<_>>(), "chain service");
    // Sign-in contract checks go through the chain service for its networks (decision 0913).
    let checker = crate::siwx::checker::RpcContractChecker::new(&config.siwx, &chain)?;
    // The embedded wallet (docs/embedded-wallet.md): its service and the frame origin's listener.
    let embedded = match &config.embedded {
        Some(embedded) => Some(start_embedded(embedded, &config, &projects, chain.clone())?),
        None => None,
    };
    // The disk the log is on (a JetStream log is on NATS's, which NATS watches).
    let local = config.store.backend != crate::config::StoreBackend::Jetstream;
    let min_free = if local { config.limits.min_free_disk_bytes } else { 0 };
    let disk = crate::disk::DiskWatch::new(config.data.clone(), min_free);
    // The log is open: its directory must stay at the data path.
    let disk = Arc::new(if local {
        disk.watching_the_directory().map_err(|e| anyhow::anyhow!("the data directory {}: {e}", config.data.display()))?
    } else {
        disk
    });
    disk.check();
    let mut runtime = config.runtime.clone();
    runtime.embedded_frame_origin = embedded.as_ref().map(|e| e.service.config().frame_origin().to_string());
    runtime.max_connections = config.limits.connections_per_session;
    runtime.max_log_bytes = config.limits.session_log_bytes;
    let mut registry = Registry::new(log.clone(), Arc::new(SystemClock), runtime, metrics.runtime.clone())
        .with_contract_checker(Arc::new(checker))
        .with_client_write_shares(Arc::new(crate::disk::ClientWrites {
            shares: crate::limits::ClientLogShares::per_hour(config.limits.client_log_bytes_per_hour),
            disk: disk.clone(),
        }))
        .with_chain(
            crate::chain::ServiceEffects::new(chain)
                .with_receipt_waits_per_client(config.limits.receipt_waits_per_client, metrics.receipt_waits_queued.clone())
                .into_arc(),
        );
    if let Some(embedded) = &embedded {
        registry = registry.with_embedded(Arc::new(crate::embedded::ServiceEmbedded { service: embedded.service.clone().into_inner() }));
        embedded.notices.attach(registry.clone());
    }
    let workers = if config.workers == 0 { std::thread::available_parallelism().map_or(2, |n| n.get()) } else { config.workers };
    let sockets = Sockets::new(socket_limits(&config, workers)?);
    let static_dir = config.static_dir.clone();
    let has_static = static_dir.join("index.html").is_file();
    if !has_static {
        tracing::warn!(dir = %static_dir.display(), "the client is not built; / shows a notice");
    }
    let limits = config.limits.clone();
    let cluster = if config.cluster.enabled {
        let id = config.cluster.gateway_id.clone().unwrap_or_else(vestibule_store_jetstream::lease::random_gateway_id);
        let leases = vestibule_store_jetstream::lease::Leases::join(&config.store.jetstream, &id, config.cluster.lease_ttl)
            .await
            .map_err(|e| anyhow::anyhow!("cannot join the cluster: {e}"))?;
        check_frames_cross_nats(config.limits.max_frame_bytes, leases.max_payload())?;
        tracing::info!(gateway = %id, lease_ttl = ?config.cluster.lease_ttl, "cluster: one owner per session");
        Some(crate::cluster::Cluster::new(leases, &config.store.jetstream.stream))
    } else {
        None
    };
    // Sign-in tokens are signed with this gateway's key, or in cluster mode with the key the
    // gateways share (a token issued by one verifies on every other).
    let local_secret = crate::siwx::token::TokenKeys::load_or_create_secret(&config.data)?;
    let token_secret = match &cluster {
        Some(cluster) => {
            let shared = cluster.leases.shared_secret("siwx-ed25519", local_secret).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            if shared != local_secret {
                tracing::info!("signing sign-in tokens with the cluster's shared key, not the one in the data directory");
            }
            shared
        }
        None => local_secret,
    };
    let token_keys = crate::siwx::token::TokenKeys::from_secret(token_secret);
    store::spawn_retention(registry.clone(), &config, cluster.clone());
    let state =
        web::Data::new(AppState::new(config, projects, registry, metrics, token_keys, sockets.clone(), cluster.clone(), disk.clone()));
    actix_web::rt::spawn(async move {
        let mut every = actix_web::rt::time::interval(crate::disk::CHECK_EVERY);
        loop {
            every.tick().await;
            disk.check();
        }
    });
    if let Some(cluster) = cluster {
        cluster.serve(state.clone().into_inner()).await?;
    }
    let app_state = state.clone();
    let frame_sockets = sockets.clone();
    let server = actix_server::Server::build().workers(workers).disable_signals().shutdown_timeout(SHUTDOWN_TIMEOUT.as_secs()).listen(
        "vestibule",
        listener,
        move || {
            let state = app_state.clone();
            let upgrade_state = app_state.clone();
            let sockets = sockets.clone();
            let admit = fn_service(move |io: TcpStream| {
                let admitted = admit_socket(&sockets, &state, io);
                async move { admitted.ok_or_else(|| actix_http::error::DispatchError::Io(io::ErrorKind::ConnectionRefused.into())) }
            });
            let upgrade = fn_service(move |(req, framed): (Request, ws::Upgrading)| {
                let state = upgrade_state.clone().into_inner();
                async move {
                    ws::upgrade(state, req, framed).await;
                    Ok::<_, actix_http::Error>(())
                }
            });
            let app = app(app_state.clone(), static_dir.clone(), has_static).into_factory().map_err(|e| e.error_response());
            admit.and_then(
                HttpService::build()
                    // Headers must be complete this long after the socket is accepted (slowloris);
                    // bodies are bounded by `http::bounded_request`.
                    .client_request_timeout(limits.header_timeout)
                    .client_disconnect_timeout(Duration::from_secs(1))
                    .keep_alive(limits.keep_alive)
                    .on_connect_ext(connection_data)
                    .upgrade(upgrade)
                    .finish(map_config(app, |_| AppConfig::default())),
            )
        },
    )?;
    let server = match embedded {
        Some(embedded) => {
            let frame_state = state.clone();
            let sockets = frame_sockets;
            tracing::info!(addr = %embedded.addr, origin = embedded.service.config().frame_origin(), "the secure frame's origin");
            server.listen("vestibule-frame", embedded.listener, move || {
                let state = frame_state.clone();
                let sockets = sockets.clone();
                let admit = fn_service(move |io: TcpStream| {
                    let admitted = admit_socket(&sockets, &state, io);
                    async move { admitted.ok_or_else(|| actix_http::error::DispatchError::Io(io::ErrorKind::ConnectionRefused.into())) }
                });
                let service = embedded.service.clone();
                let app = App::new()
                    .app_data(frame_state.clone())
                    .wrap(actix_web::middleware::from_fn(crate::client_address::mark_client_address))
                    .wrap(actix_web::middleware::from_fn(http::bounded_request))
                    // No answer is to be read as another type than it says (a visitor's text as script).
                    .wrap(actix_web::middleware::DefaultHeaders::new().add((header::X_CONTENT_TYPE_OPTIONS, "nosniff")))
                    .configure(move |cfg| vestibule_embedded::configure_frame_routes(cfg, service))
                    .into_factory()
                    .map_err(|e| e.error_response());
                admit.and_then(
                    HttpService::build()
                        .client_request_timeout(limits.header_timeout)
                        .client_disconnect_timeout(Duration::from_secs(1))
                        .keep_alive(limits.keep_alive)
                        .on_connect_ext(connection_data)
                        .finish(map_config(app, |_| AppConfig::default())),
                )
            })?
        }
        None => server,
    }
    .run();
    // A failed event log accepts no writes until the process restarts (decision 0102): stop
    // serving, so that `wait` returns an error and the process exits for its supervisor to restart.
    let (failure_state, failure_handle) = (state.clone(), server.handle());
    let handle = server.handle();
    let serving = actix_web::rt::spawn(server);
    let failing_log = state.registry.log().clone();
    let replaced_disk = state.disk.clone();
    actix_web::rt::spawn(async move {
        tokio::select! {
            reason = failing_log.failed() => {
                tracing::error!(%reason, "the event log failed: closing connections and exiting for a restart");
            }
            reason = replaced_disk.until_replaced() => {
                tracing::error!(%reason, "closing connections and exiting: a restart opens the directory now at the data path");
            }
        }
        stop_gracefully(&failure_state, &failure_handle).await;
    });
    Ok(Running { addr, state, server: handle, serving })
}

/// Bytes of a proxied command's request besides the client's frame (link, secret, field names).
const ROUTE_REQUEST_OVERHEAD: usize = 1024;

/// In cluster mode a proxied client's command frame crosses NATS in one message, as a JSON string
/// (escaping can make it up to six times its size: a control character is six). A frame the gateway
/// takes must fit, or a proxied client would be dropped (1011) for a command a direct client is
/// answered for: refused at start, naming the bound for this server.
fn check_frames_cross_nats(max_frame_bytes: usize, max_payload: usize) -> anyhow::Result<()> {
    let carried = max_payload.saturating_sub(ROUTE_REQUEST_OVERHEAD) / 6;
    if max_frame_bytes > carried {
        anyhow::bail!(
            "configuration: `limits.max_frame_bytes` = {max_frame_bytes} is more than a command can carry across NATS in \
             cluster mode: at most {carried} bytes with this NATS server's max_payload of {max_payload}; lower it, or raise \
             max_payload in the NATS servers' configuration"
        );
    }
    Ok(())
}

/// The chain methods this gateway's chain service forwards: the host reads a session routes to it
/// and, with the embedded wallet, what the frame needs to fill and send a transaction
/// (`FRAME_RPC_METHODS`; sessions never route those to it).
fn forwarded_chain_methods(embedded: bool) -> &'static [&'static str] {
    use vestibule_actors::machines::host_requests::CHAIN_READ_METHODS;
    static WITH_FRAME: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    if !embedded {
        return CHAIN_READ_METHODS;
    }
    WITH_FRAME.get_or_init(|| {
        let mut methods = CHAIN_READ_METHODS.to_vec();
        for method in vestibule_embedded::service::FRAME_RPC_METHODS {
            if !methods.contains(method) {
                methods.push(method);
            }
        }
        methods
    })
}

/// The embedded wallet's parts that `start` wires in.
struct EmbeddedParts {
    service: web::Data<vestibule_embedded::EmbeddedService>,
    notices: Arc<crate::embedded::SessionNotices>,
    listener: TcpListener,
    addr: std::net::SocketAddr,
}

/// Builds the embedded service (its vault under the data directory unless `data_dir` says where)
/// and binds the frame origin's listener.
fn start_embedded(
    embedded: &vestibule_embedded::EmbeddedConfig,
    config: &GatewayConfig,
    projects: &[crate::config::Project],
    chain: vestibule_chain::ChainService,
) -> anyhow::Result<EmbeddedParts> {
    let mut embedded = embedded.clone();
    if embedded.data_dir.is_none() {
        embedded.data_dir = Some(config.data.join("embedded-vault"));
    }
    let listener = TcpListener::bind(embedded.frame_listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {} (embedded.frame_listen): {e}", embedded.frame_listen))?;
    let addr = listener.local_addr()?;
    // Development (`./scripts/run` with a free port): no origin configured means the listener's own.
    if embedded.frame_origin.trim().is_empty() {
        embedded.frame_origin = format!("http://{addr}");
    }
    let keys = vestibule_embedded::ShareKeys::load(&embedded).map_err(|e| anyhow::anyhow!("configuration: `embedded`: {e}"))?;
    let smtp = embedded.smtp.as_ref().ok_or_else(|| {
        anyhow::anyhow!(
            "configuration: `embedded.smtp`: the embedded wallet mails login codes; configure an SMTP server (or `file_dir` in development)"
        )
    })?;
    let mailer = vestibule_embedded::LettreMailer::new(smtp, embedded.otp_ttl)
        .map_err(|e| anyhow::anyhow!("configuration: `embedded.smtp`: {e}"))?;
    let notices = Arc::new(crate::embedded::SessionNotices::default());
    let ancestors: Vec<(String, Vec<String>)> =
        projects.iter().map(|p| (p.id.clone(), p.allowed_origins.iter().map(|o| o.to_string()).collect())).collect();
    let service = vestibule_embedded::EmbeddedService::builder(embedded.clone(), keys, Arc::new(mailer), notices.clone())
        .rpc(Arc::new(crate::embedded::ChainFrameRpc { chain }))
        .projects(projects.iter().map(|p| p.id.clone()))
        .allowed_origins(move |project| ancestors.iter().find(|(id, _)| id == project).map(|(_, origins)| origins.clone()))
        .build()
        .map_err(|e| anyhow::anyhow!("configuration: `embedded`: {e}"))?;
    Ok(EmbeddedParts { service: web::Data::new(service), notices, listener, addr })
}

/// Puts the socket's [`CloseAfterAnswer`] and [`RequestArrived`] in its requests' connection data.
fn connection_data(socket: &AdmittedSocket, data: &mut actix_http::Extensions) {
    data.insert(CloseAfterAnswer(socket.close_requested.clone()));
    data.insert(RequestArrived(socket.arrived.clone()));
}

/// The socket, with its slot, or `None` when it was refused (and closed, by dropping it).
fn admit_socket(sockets: &Sockets, state: &AppState, io: TcpStream) -> Option<(AdmittedSocket, Protocol, Option<std::net::SocketAddr>)> {
    let limits = &state.config.limits;
    let request_time = limits.header_timeout + limits.body_timeout;
    let peer = io.peer_addr().ok()?;
    // A trusted reverse proxy's socket carries many clients: counted towards the total only, each
    // of its WebSockets for the client it forwards (`ws::accept`).
    match sockets.admit(peer.ip(), state.config.trusted_proxies.trusts(peer.ip())) {
        Ok(slot) => {
            // Results and diffs are small frames written back to back; without this the second
            // waits for the client's delayed ACK (tens of milliseconds).
            let _ = io.set_nodelay(true);
            let socket = AdmittedSocket {
                io,
                slot,
                request_time,
                request_deadline: None,
                arrived: Arc::default(),
                close_requested: Arc::default(),
                closing: None,
                write_time: limits.write_timeout,
                write_deadline: None,
                read_waiting: None,
            };
            Some((socket, Protocol::Http1, Some(peer)))
        }
        Err(refusal) => {
            state.metrics.refusal(match refusal {
                SlotRefusal::PerIp => "socket_limit_per_ip",
                SlotRefusal::Total => "socket_limit_total",
            });
            // Closed here, unread: a flood costs one accept and one close per socket.
            drop(io);
            None
        }
    }
}

fn app(
    state: web::Data<AppState>,
    static_dir: std::path::PathBuf,
    has_static: bool,
) -> App<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let app = App::new()
        .app_data(state)
        .app_data(http::json_config())
        .app_data(http::query_config())
        .wrap(actix_web::middleware::from_fn(http::bounded_request))
        // No answer is to be read as another type than it says (a visitor's text as script).
        .wrap(actix_web::middleware::DefaultHeaders::new().add((header::X_CONTENT_TYPE_OPTIONS, "nosniff")))
        .service(http::endpoint("/ws", Method::GET, ws::not_an_upgrade))
        .service(http::endpoint("/ws/check", Method::GET, ws::check))
        .service(http::endpoint("/healthz", Method::GET, http::healthz))
        .service(http::endpoint("/metrics", Method::GET, http::metrics))
        .service(http::endpoint("/devnet.json", Method::GET, http::devnet))
        .service(http::endpoint("/.well-known/jwks.json", Method::GET, crate::siwx::http::jwks))
        .service(http::endpoint("/siwx/token", Method::POST, crate::siwx::http::token))
        .service(http::endpoint("/siwx/introspect", Method::POST, crate::siwx::http::introspect))
        .service(http::endpoint("/siwx/signout", Method::POST, crate::siwx::http::sign_out))
        .service(http::endpoint("/siwx/sessions", Method::POST, crate::siwx::http::sessions))
        .service(http::endpoint("/debug/sessions", Method::GET, crate::debug_api::sessions))
        .service(http::endpoint("/debug/sessions/{id}/events", Method::GET, crate::debug_api::events))
        .service(http::endpoint("/debug/sessions/{id}/state", Method::GET, crate::debug_api::state_at))
        .service(http::endpoint("/debug/sessions/{id}/follow", Method::GET, crate::debug_api::follow));
    if has_static {
        let replay_page = static_dir.join("replay.html");
        let serve_replay_page = move |request: actix_web::HttpRequest| http::replay_page(request, replay_page.clone());
        app.service(
            web::resource("/replay.html")
                .wrap(http::replay_page_headers())
                .route(web::get().to(serve_replay_page.clone()))
                .route(web::head().to(serve_replay_page)),
        )
        // The replay page only under its route above, with its policy: the files service would
        // serve it bare at `/replay.html/` or `//replay.html` (an outside review loaded a
        // visitor's recorded image URL there).
        .service(
            actix_files::Files::new("/", static_dir)
                .index_file("index.html")
                .path_filter(|path, _| path.file_name() != Some("replay.html".as_ref())),
        )
    } else {
        app.route("/", web::get().to(http::not_built))
    }
}

/// Runs until a signal, then stops gracefully.
pub async fn serve(config: GatewayConfig) -> anyhow::Result<()> {
    let running = start(config).await?;
    println!("vestibule listening on http://{}", running.addr);
    tracing::info!(addr = %running.addr, "listening");
    let state = running.state.clone();
    let handle = running.server.clone();
    actix_web::rt::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        stop_gracefully(&state, &handle).await;
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
