//! Several gateways on one JetStream log, one owner per session (docs/scale-out.md, decision 0112).
//!
//! Ownership is a lease (`vestibule_store_jetstream::lease`). A connection whose session another
//! live gateway owns is *proxied*: this gateway keeps the socket (window, rate limit, heartbeat) and
//! the owner attaches a link to the session's actor on its behalf. Over NATS core, on subjects
//! outside the event stream (`<stream>_route.<gateway>.…`):
//!
//! | subject | from → to | content |
//! |---|---|---|
//! | `R.<owner>.attach` | proxy → owner, request | session, the client's resume token, the owner epoch the proxy saw, its own id and epoch, the subject for frames, `lastSeq` → `attached {link, secret}` / `moved` / `failed` |
//! | `R.<proxy>.c.<connection>.<attempt>.<nonce>` | owner → proxy | every frame of the link, numbered (`n`), kind `d` (diff, seq `s`), `m` (message), `x` (closed, code in the body); a frame over the server's `max_payload` in parts, each numbered, all but the last marked `c` |
//! | `R.<owner>.cmd` | proxy → owner, request | link, its secret, the client's command frame as received → `queued` / `busy` / `gone` / `rateLimited` |
//! | `R.<owner>.detach` | proxy → owner | `{link, secret}`: the client left; or `{frames}`: the subject for frames of an attach the proxy gave up on (no answer in time) |
//! | `R.<owner>.exec` | any gateway → owner, request | session, the caller's resume token, command id, a command from the HTTP API (`/siwx/signout`) → `done {error}` / `moved` |
//!
//! **Who may publish on these subjects** (decision 0114). They must be reachable by the cluster's
//! gateways only: NATS permissions (the gateways' own account or credentials) are the boundary, as
//! for the event stream and the KV buckets. The owner does not take the subjects' word for it all
//! the same (defence in depth, against a client that can publish but not read others' traffic):
//! - `attach` and `exec` carry the client's resume token, which the owner checks against the
//!   session as the gateway the client connected to did (`Registry::authorize_token`, constant
//!   time): reaching a session through the route needs what the public WebSocket needs.
//! - An attached link has a secret, 128 random bits drawn by the owner and sent only in the
//!   `attached` reply. Every `cmd` and `detach` of the link carries it; one with a wrong or missing
//!   secret is answered as for an unknown link (`gone`, or nothing for a detach), never applied,
//!   and counted (`vestibule_cluster_route_refused_total`, logged at debug without the secret).
//!   Link ids stay the gateway's sequential connection ids (the session's actor knows a link by
//!   one): guessing an id is pointless without its secret.
//! - The subject for frames ends with 128 random bits drawn by the proxy per attempt: nobody can
//!   guess it to slip frames into a proxied connection, or to detach its link as "given up on".
//!   The owner publishes frames only under the requesting gateway's own `R.<proxy>.c.` subjects.
//!
//! None of this protects against whoever can read the route's traffic (they see tokens, secrets
//! and every frame): that is what NATS permissions and TLS are for. All the gateways of a cluster
//! run the same version (docs/scale-out.md): nothing here speaks the previous route format.
//!
//! A numbering gap (NATS dropped frames of a slow subscriber) closes the client with 4004: it
//! resumes and gets what it missed. The proxy drops the client with 1011 (resume) when the owner's
//! registration is gone or a command finds no responder; the owner drops a link whose proxy's
//! registration is gone. A gateway that loses its own lease stops all its sessions (1001).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;
use vestibule_actors::protocol::{ClientMessage, close};
use vestibule_actors::runtime::{
    Attach, AttachError, ConnectionLink, Detach, DropNotice, Execute, ModalSession, Outbound, OutboundReceiver,
};
use vestibule_actors::session::{ClientCommand, CommandError, RefusalCode};
use vestibule_store::SessionId;
use vestibule_store_jetstream::async_nats::{self, HeaderMap};
use vestibule_store_jetstream::lease::{Leases, Owner};

use crate::limits::TokenBucket;
use crate::state::AppState;

pub struct Cluster {
    pub leases: Leases,
    prefix: String,
    /// Links this gateway serves for other gateways' connections.
    served: Mutex<ServedLinks>,
    /// Connections this gateway proxied to another owner, since it started.
    proxied: std::sync::atomic::AtomicU64,
    /// Numbers this gateway's attach attempts, so that each subscribes to a subject of its own.
    attempts: std::sync::atomic::AtomicU64,
    /// Route requests refused for want of proof: a `cmd` or `detach` without its link's secret, an
    /// `attach` or `exec` without the session's resume token, an `attach` naming a subject for
    /// frames not under its gateway's own.
    refused: std::sync::atomic::AtomicU64,
    /// Attaches being served per session, from their authorization until their welcome is
    /// published (or they fail): at most [`ATTACHES_IN_FLIGHT`] each.
    attaching: Arc<Mutex<HashMap<SessionId, usize>>>,
    /// Attaches refused for now (answered `full`): the session had [`ATTACHES_IN_FLIGHT`] in
    /// flight, or its resumes were over `limits.session_resumes_per_minute`.
    attaches_refused: std::sync::atomic::AtomicU64,
    /// Attaches the proxy had given up on before the owner built their welcome (not built).
    attaches_given_up: std::sync::atomic::AtomicU64,
}

/// Attaches of one session an owner serves at once (each builds a welcome, which may carry the
/// whole state, and publishes it over NATS); one more is answered `full`, and the proxy refuses
/// its client with `rate_limited` (close 1013: the widget backs off and resumes). Without a bound,
/// one client resuming its own large session over and over through another gateway had the owner
/// build and publish welcomes without end (outside review).
const ATTACHES_IN_FLIGHT: usize = 4;

/// A session's place among the attaches in flight ([`Cluster::attaching`]), freed when dropped.
struct AttachSlot {
    attaching: Arc<Mutex<HashMap<SessionId, usize>>>,
    session: SessionId,
}

impl AttachSlot {
    /// A place for one more attach of `session`, if it has fewer than [`ATTACHES_IN_FLIGHT`].
    fn take(attaching: &Arc<Mutex<HashMap<SessionId, usize>>>, session: SessionId) -> Option<Self> {
        let mut counts = attaching.lock().expect("attaching lock");
        let count = counts.entry(session).or_default();
        if *count >= ATTACHES_IN_FLIGHT {
            return None;
        }
        *count += 1;
        Some(Self { attaching: attaching.clone(), session })
    }
}

impl Drop for AttachSlot {
    fn drop(&mut self) {
        let mut counts = self.attaching.lock().expect("attaching lock");
        if let Some(count) = counts.get_mut(&self.session) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.session);
            }
        }
    }
}

/// How many attaches given up on (by their subject for frames) an owner remembers before it has
/// attached them: a proxy's detach can overtake the attach it cancels.
const ABANDONED_ATTACHES: usize = 1024;

#[derive(Default)]
struct ServedLinks {
    by_link: HashMap<u64, Served>,
    /// Subjects for frames whose attach the proxy gave up on and this gateway has not attached
    /// (yet), oldest first; at most [`ABANDONED_ATTACHES`].
    abandoned: std::collections::VecDeque<String>,
}

impl ServedLinks {
    /// The proxy gave up on the attach that named `frames`: its link, if attached, is removed;
    /// otherwise the subject is remembered, for the attach to be refused when it comes.
    fn abandon(&mut self, frames: &str) -> Option<Served> {
        // In constant time: the subject ends with the proxy's random nonce (a guess must not
        // learn it a byte at a time).
        if let Some(link) = self.by_link.iter().find(|(_, s)| same(&s.frames, frames)).map(|(link, _)| *link) {
            return self.by_link.remove(&link);
        }
        if self.abandoned.len() == ABANDONED_ATTACHES {
            self.abandoned.pop_front();
        }
        self.abandoned.push_back(frames.to_string());
        None
    }

    /// Whether the attach that named `frames` was given up on (forgetting it: subjects are not reused).
    fn was_abandoned(&mut self, frames: &str) -> bool {
        let found = self.abandoned.iter().position(|f| same(f, frames));
        found.map(|i| self.abandoned.remove(i)).is_some()
    }
}

/// Whether two strings are equal, in time that depends on their lengths only.
fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// A served link's secret: 128 random bits drawn by the owner when it attaches the link, sent only
/// in the `attached` reply to the proxy. Every `cmd` and `detach` of the link must carry it (hex).
#[derive(Clone, Copy)]
pub struct LinkSecret([u8; 16]);

impl LinkSecret {
    fn random() -> Self {
        // `rand`'s thread generator: a CSPRNG seeded from the operating system, as resume tokens.
        Self(rand::random())
    }

    fn to_hex(self) -> String {
        hex::encode(self.0)
    }

    fn from_hex(text: &str) -> Option<Self> {
        let mut bytes = [0u8; 16];
        hex::decode_to_slice(text, &mut bytes).ok().map(|()| Self(bytes))
    }

    /// Whether `given` (hex, as on the wire) is this secret, compared in constant time. Anything
    /// else (missing, not 32 hex digits) is not; its shape is the caller's, nothing of the secret.
    fn matches(&self, given: &str) -> bool {
        Self::from_hex(given).is_some_and(|given| bool::from(self.0.ct_eq(&given.0)))
    }
}

/// Never printed: a log line must not carry a secret.
impl std::fmt::Debug for LinkSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkSecret(..)")
    }
}

/// A link a proxied connection was given by the session's owner: its id (the owner's connection id
/// for it, sequential, not secret) and its secret, which every command and detach carries.
#[derive(Debug, Clone, Copy)]
pub struct RemoteLink {
    pub id: u64,
    secret: LinkSecret,
}

struct Served {
    addr: actix::Addr<ModalSession>,
    /// Proof that a `cmd` or `detach` for the link comes from the proxy the link was attached for.
    secret: LinkSecret,
    detached: CancellationToken,
    /// The subject the proxy named for the link's frames (unique per attach attempt).
    frames: String,
    /// The session's command rate limit on this gateway, its owner: shared with the session's local
    /// connections and every proxied one, so the limit is per session across the cluster, not per
    /// gateway.
    commands: Arc<Mutex<TokenBucket>>,
}

/// No `Debug`: it holds the client's resume token.
#[derive(Serialize, Deserialize)]
struct AttachRequest {
    session: String,
    /// The client's resume token, checked by the owner too (none: refused).
    #[serde(default)]
    resume_token: String,
    owner_epoch: u64,
    from: String,
    from_epoch: u64,
    frames: String,
    last_seq: Option<u64>,
    /// The client's address as the proxying gateway counts it (`limits::client_key`), for the
    /// session's host reads' share of the chain calls. A member's word: a cluster member could
    /// name another address, which only moves its own sessions' reads to another share. Absent
    /// from a gateway of an earlier version: none, and the reads count only towards the total.
    #[serde(default)]
    client: Option<std::net::IpAddr>,
}

/// No `Debug`: `attached` holds the link's secret.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "status")]
enum AttachReply {
    Attached {
        link: u64,
        /// The link's [`LinkSecret`], hex.
        secret: String,
    },
    Moved,
    Failed {
        message: String,
    },
    /// Refused for now, the client retries later: the session has as many connections attached
    /// as it may (`limits.connections_per_session`), as many attaches in flight as it may
    /// ([`ATTACHES_IN_FLIGHT`]), or was resumed more often than `limits.session_resumes_per_minute`.
    Full {
        message: String,
    },
}

/// No `Debug`: it holds the link's secret.
#[derive(Serialize, Deserialize)]
struct CommandRequest {
    link: u64,
    /// The link's [`LinkSecret`], hex (none or another: answered `gone`, as for an unknown link).
    #[serde(default)]
    secret: String,
    frame: String,
}

/// What a `detach` names (no `Debug`: it holds a secret).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum DetachRequest {
    /// The client left: the link, with its secret (none or another: ignored).
    Link {
        link: u64,
        #[serde(default)]
        secret: String,
    },
    /// The proxy gave up on the attach that named `frames` (it never learnt the link or its secret;
    /// the subject's random nonce is the proof).
    GivenUp { frames: String },
}

/// A command from the HTTP API for a session another gateway owns. No `Debug`: it holds the
/// caller's resume token.
#[derive(Serialize, Deserialize)]
struct ExecRequest {
    session: String,
    /// The caller's resume token, checked by the owner too (none: refused).
    #[serde(default)]
    resume_token: String,
    command_id: String,
    command: ClientCommand,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "status")]
enum ExecReply {
    Done { error: Option<CommandError> },
    Moved,
}

/// Where the HTTP API's reads and commands for a session go (decision 0112: one actor per session
/// in the whole cluster, so a gateway that does not own the session starts none for it).
pub enum Placement {
    /// This gateway owns the session (or just took it): its actor here.
    Here,
    /// Another live gateway owns it.
    Owner(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommandOutcome {
    Queued,
    Busy,
    Gone,
    /// The owner's rate limit for the session refused it (the proxy's own limit let it through).
    RateLimited,
}

/// Where a connection's session runs.
pub enum Route {
    Local,
    Remote(RemoteAttachment),
}

/// A connection proxied to the owner: its frames arrive on `outbound` as a local link's would.
pub struct RemoteAttachment {
    pub owner: String,
    pub link: RemoteLink,
    pub outbound: OutboundReceiver,
    pub dropped: DropNotice,
}

#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    #[error("the session's gateway is unavailable")]
    Unavailable,
    #[error("{0}")]
    Failed(String),
    /// Refused for now (the session has as many connections or attaches in flight as it may, or
    /// was resumed too often); the client retries later.
    #[error("{0}")]
    Full(String),
}

enum Attempt {
    Retry,
    Failed(String),
    Full(String),
}

impl Cluster {
    pub fn new(leases: Leases, stream: &str) -> Arc<Self> {
        Arc::new(Self {
            leases,
            prefix: format!("{stream}_route"),
            served: Mutex::default(),
            proxied: Default::default(),
            attempts: Default::default(),
            refused: Default::default(),
            attaching: Default::default(),
            attaches_refused: Default::default(),
            attaches_given_up: Default::default(),
        })
    }

    /// `vestibule_cluster_*` on `/metrics`.
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        use prometheus_client::metrics::{counter::Counter, gauge::Gauge};
        let counter = |v: u64| {
            let c: Counter = Counter::default();
            c.inc_by(v);
            c
        };
        registry.register(
            "vestibule_cluster_acquisitions",
            "Sessions this gateway took the lease of (new, free or from a dead owner)",
            counter(self.leases.acquisitions()),
        );
        registry.register(
            "vestibule_cluster_takeovers",
            "Sessions taken over from a gateway whose lease had lapsed",
            counter(self.leases.takeovers()),
        );
        registry.register(
            "vestibule_cluster_proxied",
            "Connections proxied to the gateway owning their session",
            counter(self.proxied.load(std::sync::atomic::Ordering::Relaxed)),
        );
        registry.register(
            "vestibule_cluster_route_refused",
            "Route requests refused for want of proof: a cmd or detach without its link's secret, an attach or exec without the session's resume token",
            counter(self.refused.load(std::sync::atomic::Ordering::Relaxed)),
        );
        registry.register(
            "vestibule_cluster_attaches_refused",
            "Proxied attaches refused for now (the proxy's client is told to retry later): the session had as many attaches in flight as it may, or was resumed too often",
            counter(self.attaches_refused.load(std::sync::atomic::Ordering::Relaxed)),
        );
        registry.register(
            "vestibule_cluster_attaches_given_up",
            "Proxied attaches the proxy had given up on (its client left, or the answer came too late) before their welcome was built",
            counter(self.attaches_given_up.load(std::sync::atomic::Ordering::Relaxed)),
        );
        let served: Gauge = Gauge::default();
        served.set(self.served.lock().expect("served lock").by_link.len() as i64);
        registry.register("vestibule_cluster_served_links", "Links this gateway serves for other gateways' connections", served);
        let held: Gauge = Gauge::default();
        held.set(i64::from(self.leases.epoch().is_some()));
        registry.register("vestibule_cluster_lease_held", "1 while this gateway holds its cluster lease", held);
    }

    fn client(&self) -> &async_nats::Client {
        self.leases.client()
    }

    fn subject(&self, gateway: &str, kind: &str) -> String {
        format!("{}.{gateway}.{kind}", self.prefix)
    }

    /// Counts and logs (at debug, never the proof itself) a route request refused for want of proof.
    fn refuse(&self, subject: &'static str, what: &'static str, session: Option<&str>, link: Option<u64>) {
        self.refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::debug!(subject, session, link, "route request refused: {what}");
    }

    /// Whether `frames` is a subject for frames of gateway `from`: under its own `R.<from>.c.`,
    /// tokens of letters, digits, `-` and `_` (no wildcard), so that an attach cannot have the
    /// owner publish a session's frames anywhere else on NATS.
    fn frames_subject_ok(&self, from: &str, frames: &str) -> bool {
        let token = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        vestibule_store_jetstream::lease::valid_gateway_id(from)
            && frames
                .strip_prefix(&self.prefix)
                .and_then(|rest| rest.strip_prefix('.'))
                .and_then(|rest| rest.strip_prefix(from))
                .and_then(|rest| rest.strip_prefix(".c."))
                .is_some_and(|rest| rest.split('.').all(token))
    }

    /// Claims a session this gateway just created (nobody else can know its id yet).
    pub async fn claim_new(&self, session: SessionId) -> Result<(), RouteError> {
        match self.leases.acquire(session).await {
            Ok(Owner::Me) => Ok(()),
            Ok(Owner::Other { gateway, .. }) => Err(RouteError::Failed(format!("a new session is owned by {gateway}"))),
            Err(e) => Err(RouteError::Failed(e.to_string())),
        }
    }

    /// Where the HTTP API's requests for `session` go: here, taking a free session (as a resume
    /// would), or its live owner.
    pub async fn place(&self, session: SessionId) -> Result<Placement, RouteError> {
        match self.leases.acquire(session).await {
            Ok(Owner::Me) => Ok(Placement::Here),
            Ok(Owner::Other { gateway, .. }) => Ok(Placement::Owner(gateway)),
            Err(e) => Err(RouteError::Failed(e.to_string())),
        }
    }

    /// Runs an HTTP API command on the session's owner; `Ok(error)` is the command's refusal, if any.
    /// `resume_token` is the caller's, already checked here: the owner checks it too.
    pub async fn execute_on(
        &self,
        owner: &str,
        session: SessionId,
        resume_token: &str,
        command_id: String,
        command: ClientCommand,
    ) -> Result<Option<CommandError>, RouteError> {
        let request = ExecRequest { session: session.to_string(), resume_token: resume_token.to_string(), command_id, command };
        let body = serde_json::to_vec(&request).expect("serializes");
        let reply = self.client().request(self.subject(owner, "exec"), body.into()).await.map_err(|_| RouteError::Unavailable)?;
        match serde_json::from_slice(&reply.payload) {
            Ok(ExecReply::Done { error }) => Ok(error),
            Ok(ExecReply::Moved) | Err(_) => Err(RouteError::Unavailable),
        }
    }

    async fn serve_exec(&self, state: &AppState, payload: &[u8]) -> ExecReply {
        let Ok(request) = serde_json::from_slice::<ExecRequest>(payload) else { return ExecReply::Moved };
        let Ok(session) = request.session.parse::<SessionId>() else { return ExecReply::Moved };
        // Before the lease is looked at (an `acquire` would take a free session's).
        match state.registry.authorize_token(session, &request.resume_token).await {
            Ok(()) => {}
            Err(AttachError::Unauthorized) => {
                self.refuse("exec", "not the session's resume token", Some(&request.session), None);
                return ExecReply::Moved;
            }
            Err(AttachError::Store(_)) => return ExecReply::Moved,
        }
        if !matches!(self.leases.acquire(session).await, Ok(Owner::Me)) {
            return ExecReply::Moved;
        }
        // The owner's bucket, which the session's connections share, whichever gateway took the request.
        if !crate::siwx::http::take_command_token(state, session) {
            let refused = CommandError::new(RefusalCode::RateLimited, "too many commands; slow down");
            return ExecReply::Done { error: Some(refused) };
        }
        match state.registry.session(session).send(Execute::new(request.command_id, request.command, None)).await {
            Ok(reply) => ExecReply::Done { error: reply.error },
            Err(_) => ExecReply::Moved,
        }
    }

    /// Where `session` runs for connection `connection`: here (this gateway holds, or just took, its
    /// lease) or at its owner, attached through a link. A dead owner whose lease has not lapsed yet
    /// is waited for (up to twice the TTL), then the session is taken over and rehydrated here.
    /// `resume_token` is the client's, already checked here: the owner checks it too.
    pub async fn route(
        &self,
        state: &AppState,
        session: SessionId,
        resume_token: &str,
        last_seq: Option<u64>,
        connection: u64,
        client: Option<std::net::IpAddr>,
    ) -> Result<Route, RouteError> {
        let ttl = self.leases.ttl();
        let deadline = Instant::now() + ttl * 2;
        loop {
            match self.leases.acquire(session).await {
                Ok(Owner::Me) => return Ok(Route::Local),
                Ok(Owner::Other { gateway, epoch }) => {
                    match self.attach_remote(state, session, resume_token, &gateway, epoch, last_seq, connection, client).await {
                        Ok(attachment) => {
                            self.proxied.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            return Ok(Route::Remote(attachment));
                        }
                        Err(Attempt::Failed(message)) => return Err(RouteError::Failed(message)),
                        Err(Attempt::Full(message)) => return Err(RouteError::Full(message)),
                        Err(Attempt::Retry) => {}
                    }
                }
                Err(e) => tracing::warn!(session = %session, error = %e, "reading the session's owner failed"),
            }
            if Instant::now() > deadline {
                return Err(RouteError::Unavailable);
            }
            tokio::time::sleep(ttl / 5).await;
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn attach_remote(
        &self,
        state: &AppState,
        session: SessionId,
        resume_token: &str,
        owner: &str,
        owner_epoch: u64,
        last_seq: Option<u64>,
        connection: u64,
        client: Option<std::net::IpAddr>,
    ) -> Result<RemoteAttachment, Attempt> {
        let Some(my_epoch) = self.leases.epoch() else { return Err(Attempt::Retry) };
        // A subject per attempt: an owner that attached an earlier attempt after the proxy gave up
        // on it publishes where nobody listens, not into this attempt's numbering. Its last token,
        // 128 random bits, makes it unguessable: nobody else can publish frames into it, nor detach
        // the link as given up on.
        let attempt = self.attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nonce = hex::encode(rand::random::<[u8; 16]>());
        let frames = format!("{}.{}.c.{connection}.{attempt}.{nonce}", self.prefix, self.leases.gateway_id());
        let mut subscription = self.client().subscribe(frames.clone()).await.map_err(|_| Attempt::Retry)?;
        let request = AttachRequest {
            session: session.to_string(),
            resume_token: resume_token.to_string(),
            owner_epoch,
            from: self.leases.gateway_id().into(),
            from_epoch: my_epoch,
            frames,
            last_seq,
            client,
        };
        let body = serde_json::to_vec(&request).expect("serializes");
        // From here until the owner's answer is read, the attach is given up on if it ends: no
        // answer in time (the owner may still attach it, too late), an answer that cannot be used,
        // or this future dropped because the client left (`Connection::handshake`). The owner
        // drops that link, which nobody would ever detach otherwise, or does not build it.
        let mut given_up =
            GiveUpOnDrop { client: self.client().clone(), detach: self.subject(owner, "detach"), frames: Some(request.frames) };
        let reply = match self.client().request(self.subject(owner, "attach"), body.into()).await {
            Ok(reply) => reply,
            Err(e) => {
                tracing::info!(session = %session, owner, error = %e, "the owner did not answer an attach; retrying");
                return Err(Attempt::Retry);
            }
        };
        let (link, secret) = match serde_json::from_slice::<AttachReply>(&reply.payload) {
            Ok(AttachReply::Attached { link, secret }) => match LinkSecret::from_hex(&secret) {
                Some(secret) => (link, secret),
                // Unusable (no command could reach it): the owner drops it as given up on.
                None => return Err(Attempt::Failed("the attach reply's link secret is not 128 bits of hex".into())),
            },
            // The owner attached nothing: nothing to give up.
            reply => {
                given_up.frames = None;
                return Err(match reply {
                    Ok(AttachReply::Failed { message }) => Attempt::Failed(message),
                    Ok(AttachReply::Full { message }) => Attempt::Full(message),
                    Err(e) => Attempt::Failed(format!("unreadable attach reply: {e}")),
                    Ok(AttachReply::Moved | AttachReply::Attached { .. }) => Attempt::Retry,
                });
            }
        };
        given_up.frames = None;
        let (link_to_client, outbound, dropped) = ConnectionLink::new(connection, state.config.limits.outbound_queue);
        let (leases, owner_name) = (self.leases.clone(), owner.to_string());
        actix_web::rt::spawn(async move {
            let mut expected = 0u64;
            // The parts of a frame received so far (see `split_frame`).
            let mut partial = bytes::BytesMut::new();
            let mut check = tokio::time::interval(leases.ttl() / 5);
            loop {
                tokio::select! {
                    message = subscription.next() => {
                        let Some(message) = message else {
                            link_to_client.drop_with(close::INTERNAL);
                            return;
                        };
                        let header = |name: &str| message.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str().to_string());
                        if header("n").and_then(|n| n.parse::<u64>().ok()) != Some(expected) {
                            tracing::info!(link, expected, "frames from the owner were lost; the client resumes");
                            link_to_client.drop_with(close::TOO_SLOW);
                            return;
                        }
                        expected += 1;
                        // A part of a frame too large for one NATS message: the rest follows.
                        if header("c").is_some() {
                            partial.extend_from_slice(&message.payload);
                            continue;
                        }
                        let payload = if partial.is_empty() {
                            message.payload.clone()
                        } else {
                            partial.extend_from_slice(&message.payload);
                            std::mem::take(&mut partial).freeze()
                        };
                        let text: Arc<str> = match std::str::from_utf8(&payload) {
                            Ok(text) => text.into(),
                            Err(_) => {
                                link_to_client.drop_with(close::INTERNAL);
                                return;
                            }
                        };
                        let frame = match header("k").as_deref() {
                            Some("d") => Outbound::Diff { seq: header("s").and_then(|s| s.parse().ok()).unwrap_or(0), text },
                            Some("m") => Outbound::Message(text),
                            _ => {
                                link_to_client.drop_with(text.parse().unwrap_or(close::INTERNAL));
                                return;
                            }
                        };
                        match link_to_client.sender.try_send(frame) {
                            Ok(()) => {}
                            Err(flume::TrySendError::Full(_)) => {
                                link_to_client.drop_with(close::TOO_SLOW);
                                return;
                            }
                            Err(flume::TrySendError::Disconnected(_)) => return,
                        }
                    }
                    _ = check.tick() => {
                        if link_to_client.sender.is_disconnected() {
                            return;
                        }
                        if let Ok(false) = leases.is_live(&owner_name, owner_epoch).await {
                            tracing::info!(link, owner = %owner_name, "the session's owner is gone; the client resumes");
                            link_to_client.drop_with(close::INTERNAL);
                            return;
                        }
                    }
                }
            }
        });
        Ok(RemoteAttachment { owner: owner.to_string(), link: RemoteLink { id: link, secret }, outbound, dropped })
    }

    /// Forwards a client's command frame to the owner.
    pub async fn command(&self, owner: &str, link: &RemoteLink, frame: &str) -> CommandOutcome {
        let request = CommandRequest { link: link.id, secret: link.secret.to_hex(), frame: frame.to_string() };
        let body = serde_json::to_vec(&request).expect("serializes");
        match self.client().request(self.subject(owner, "cmd"), body.into()).await {
            Ok(reply) => serde_json::from_slice(&reply.payload).unwrap_or(CommandOutcome::Gone),
            Err(_) => CommandOutcome::Gone,
        }
    }

    pub fn detach(&self, owner: &str, link: &RemoteLink) {
        let client = self.client().clone();
        let subject = self.subject(owner, "detach");
        let body = serde_json::to_vec(&DetachRequest::Link { link: link.id, secret: link.secret.to_hex() }).expect("serializes");
        actix_web::rt::spawn(async move {
            let _ = client.publish(subject, body.into()).await;
        });
    }

    /// Serves other gateways' attaches, commands and detaches, and stops every session when this
    /// gateway's lease is lost. Runs on the actix system (sessions start on its arbiter).
    pub async fn serve(self: Arc<Self>, state: Arc<AppState>) -> anyhow::Result<()> {
        let me = self.leases.gateway_id().to_string();
        let mut attaches = self.client().subscribe(self.subject(&me, "attach")).await?;
        let mut commands = self.client().subscribe(self.subject(&me, "cmd")).await?;
        let mut detaches = self.client().subscribe(self.subject(&me, "detach")).await?;
        let mut execs = self.client().subscribe(self.subject(&me, "exec")).await?;
        let cluster = self.clone();
        let exec_state = state.clone();
        actix_web::rt::spawn(async move {
            while let Some(message) = execs.next().await {
                let (cluster, state) = (cluster.clone(), exec_state.clone());
                actix_web::rt::spawn(async move {
                    let reply = cluster.serve_exec(&state, &message.payload).await;
                    if let Some(to) = message.reply {
                        let _ = cluster.client().publish(to, serde_json::to_vec(&reply).expect("serializes").into()).await;
                    }
                });
            }
        });
        let cluster = self.clone();
        let attach_state = state.clone();
        actix_web::rt::spawn(async move {
            while let Some(message) = attaches.next().await {
                let (cluster, state) = (cluster.clone(), attach_state.clone());
                actix_web::rt::spawn(async move { cluster.serve_attach(&state, message).await });
            }
        });
        let cluster = self.clone();
        actix_web::rt::spawn(async move {
            while let Some(message) = commands.next().await {
                let outcome = cluster.serve_command(&message.payload);
                if let Some(reply) = message.reply {
                    let _ = cluster.client().publish(reply, serde_json::to_vec(&outcome).expect("serializes").into()).await;
                }
            }
        });
        let cluster = self.clone();
        actix_web::rt::spawn(async move {
            while let Some(message) = detaches.next().await {
                let Ok(request) = serde_json::from_slice::<DetachRequest>(&message.payload) else { continue };
                // A link and its secret (the client left), or the subject for frames of an attach
                // given up on.
                let mut served = cluster.served.lock().expect("served lock");
                let removed = match request {
                    DetachRequest::Link { link, secret } => match served.by_link.get(&link) {
                        Some(s) if s.secret.matches(&secret) => served.by_link.remove(&link),
                        Some(_) => {
                            drop(served);
                            cluster.refuse("detach", "not the link's secret", None, Some(link));
                            continue;
                        }
                        None => None,
                    },
                    DetachRequest::GivenUp { frames } => served.abandon(&frames),
                };
                drop(served);
                if let Some(removed) = removed {
                    removed.detached.cancel();
                }
            }
        });
        let mut lost = self.leases.lost();
        actix_web::rt::spawn(async move {
            while lost.changed().await.is_ok() {
                tracing::warn!("this gateway lost its cluster lease: stopping its sessions (clients resume elsewhere)");
                state.registry.stop_all();
            }
        });
        Ok(())
    }

    fn serve_command(&self, payload: &[u8]) -> CommandOutcome {
        let Ok(request) = serde_json::from_slice::<CommandRequest>(payload) else { return CommandOutcome::Gone };
        let Some((addr, commands, secret)) =
            self.served.lock().expect("served lock").by_link.get(&request.link).map(|s| (s.addr.clone(), s.commands.clone(), s.secret))
        else {
            return CommandOutcome::Gone;
        };
        // Before anything else, the rate limit included: a forged command spends nothing of the
        // session's, and is answered as for an unknown link.
        if !secret.matches(&request.secret) {
            self.refuse("cmd", "not the link's secret", None, Some(request.link));
            return CommandOutcome::Gone;
        }
        let Ok(ClientMessage::Command { id, command }) = serde_json::from_str::<ClientMessage>(&request.frame) else {
            return CommandOutcome::Gone;
        };
        if !commands.lock().expect("bucket lock").try_take() {
            return CommandOutcome::RateLimited;
        }
        match addr.try_send(Execute::new(id, command, Some(request.link))) {
            Ok(()) => CommandOutcome::Queued,
            Err(_) => CommandOutcome::Busy,
        }
    }

    async fn serve_attach(&self, state: &AppState, message: async_nats::Message) {
        let Some(reply_to) = message.reply.clone() else { return };
        let reply = self.attach_for(state, &message.payload).await;
        let (reply, forward) = match reply {
            // The only message the link's secret is ever sent in, to the proxy that asked.
            Ok(forward) => (AttachReply::Attached { link: forward.link, secret: forward.secret.to_hex() }, Some(forward)),
            Err(reply) => (reply, None),
        };
        let _ = self.client().publish(reply_to, serde_json::to_vec(&reply).expect("serializes").into()).await;
        if let Some(forward) = forward {
            self.forward(forward, state).await;
        }
    }

    async fn attach_for(&self, state: &AppState, payload: &[u8]) -> Result<Forward, AttachReply> {
        let request: AttachRequest = serde_json::from_slice(payload).map_err(|e| AttachReply::Failed { message: e.to_string() })?;
        let session: SessionId = request.session.parse().map_err(|_| AttachReply::Failed { message: "not a session id".into() })?;
        if self.leases.epoch() != Some(request.owner_epoch) {
            return Err(AttachReply::Moved);
        }
        // The route takes no gateway's word for it (decision 0114): the frames go only under the
        // requesting gateway's own subjects, and only to a holder of the session's resume token,
        // checked before the lease is looked at (an `acquire` would take a free session's).
        if !self.frames_subject_ok(&request.from, &request.frames) {
            self.refuse("attach", "a subject for frames not under its gateway's own", Some(&request.session), None);
            return Err(AttachReply::Failed { message: "unauthorized".into() });
        }
        match state.registry.authorize_token(session, &request.resume_token).await {
            Ok(()) => {}
            Err(AttachError::Unauthorized) => {
                self.refuse("attach", "not the session's resume token", Some(&request.session), None);
                return Err(AttachReply::Failed { message: "unauthorized".into() });
            }
            Err(AttachError::Store(e)) => return Err(AttachReply::Failed { message: e.to_string() }),
        }
        // Resumes of the session across the cluster: the proxy counted this one in its own bucket,
        // the owner counts it in the session's (as 0113 does for commands), so that resumes spread
        // over several gateways do not multiply the rate.
        if !state.hello_limits.try_resume_of(session) {
            self.attaches_refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let limit = state.config.limits.session_resumes_per_minute;
            return Err(AttachReply::Full {
                message: format!("too many resumes of this session (at most {limit} a minute); try again later"),
            });
        }
        let Some(slot) = AttachSlot::take(&self.attaching, session) else {
            self.attaches_refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::info!(session = %session, proxy = %request.from, "attach refused: as many in flight for the session as it may");
            return Err(AttachReply::Full { message: "the session is busy attaching other connections; try again later".into() });
        };
        match self.leases.acquire(session).await {
            Ok(Owner::Me) => {}
            _ => return Err(AttachReply::Moved),
        }
        // Before the actor builds the welcome (the whole state, for a resume without `lastSeq`): an
        // attach the proxy has given up on (its client left, or it stopped waiting) costs nothing
        // more. One given up on later is detached below, or by `abandon` once served.
        if self.served.lock().expect("served lock").was_abandoned(&request.frames) {
            self.attaches_given_up.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tracing::debug!(session = %session, proxy = %request.from, "the proxy gave up on this attach before its welcome");
            return Err(AttachReply::Failed { message: "the proxy gave up on this attach".into() });
        }
        // The gateway's next connection id, sequential (the session's actor knows its connections
        // by id, local and proxied alike): not secret, and not needed to be, since a `cmd` or
        // `detach` for it needs the link's secret too.
        let link = state.next_connection_id();
        let secret = LinkSecret::random();
        let (to_proxy, outbound, dropped) = ConnectionLink::new(link, state.config.limits.outbound_queue);
        let to_proxy = to_proxy.from_client(request.client.map(crate::limits::client_key));
        let addr = state.registry.session(session);
        match addr.send(Attach { link: to_proxy, last_seq: request.last_seq, new_resume_token: None }).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) if e.code == RefusalCode::RateLimited => return Err(AttachReply::Full { message: e.message }),
            Ok(Err(e)) => return Err(AttachReply::Failed { message: e.message }),
            Err(_) => return Err(AttachReply::Moved),
        }
        let detached = CancellationToken::new();
        let commands = state.command_limits.bucket(session);
        {
            let mut served = self.served.lock().expect("served lock");
            if served.was_abandoned(&request.frames) {
                drop(served);
                tracing::debug!(session = %session, link, proxy = %request.from, "the proxy gave up on this attach; detaching it");
                addr.do_send(Detach { connection: link });
                return Err(AttachReply::Failed { message: "the proxy gave up on this attach".into() });
            }
            let frames = request.frames.clone();
            served.by_link.insert(link, Served { addr: addr.clone(), secret, detached: detached.clone(), commands, frames });
        }
        tracing::debug!(session = %session, link, proxy = %request.from, "serving a proxied connection");
        Ok(Forward {
            link,
            secret,
            slot: Some(slot),
            addr,
            outbound,
            dropped,
            detached,
            frames: request.frames,
            proxy: request.from,
            proxy_epoch: request.from_epoch,
        })
    }

    /// Publishes a served link's frames to its proxy until the session drops it, the proxy detaches
    /// or the proxy's registration is gone.
    async fn forward(&self, mut f: Forward, state: &AppState) {
        // A session stopped because this gateway is stopping cleanly: the proxy's visitor is told
        // the server is going away (1001), as this gateway's own visitors are, not that it failed.
        let mut slot = f.slot.take();
        let closing = |code: Option<u16>| if state.is_shutting_down() { close::GOING_AWAY } else { code.unwrap_or(close::INTERNAL) };
        let mut n = 0u64;
        let mut check = tokio::time::interval(self.leases.ttl() / 5);
        let client = self.client().clone();
        // A frame larger than a NATS message may be (the server's `max_payload`, 1 MiB by default:
        // a welcome with a large state) goes in parts, each numbered, all but the last marked `c`.
        let part_size = client.max_payload().saturating_sub(PART_HEADROOM).max(MIN_PART);
        let publish = |n: &mut u64, kind: &str, seq: Option<u64>, body: bytes::Bytes| {
            let parts = split_frame(body, part_size);
            let last = parts.len() - 1;
            let messages: Vec<(HeaderMap, bytes::Bytes)> = parts
                .into_iter()
                .enumerate()
                .map(|(i, part)| {
                    let mut headers = HeaderMap::new();
                    headers.insert("n", n.to_string().as_str());
                    headers.insert("k", kind);
                    if let Some(seq) = seq {
                        headers.insert("s", seq.to_string().as_str());
                    }
                    if i < last {
                        headers.insert("c", "1");
                    }
                    *n += 1;
                    (headers, part)
                })
                .collect();
            let (client, subject) = (client.clone(), f.frames.clone());
            async move {
                for (headers, part) in messages {
                    let _ = client.publish_with_headers(subject.clone(), headers, part).await;
                }
            }
        };
        let frame_body = |frame: Outbound| match frame {
            Outbound::Diff { seq, text } => ("d", Some(seq), bytes::Bytes::copy_from_slice(text.as_bytes())),
            Outbound::Message(text) => ("m", None, bytes::Bytes::copy_from_slice(text.as_bytes())),
        };
        loop {
            tokio::select! {
                frame = f.outbound.recv_async() => match frame {
                    Ok(frame) => {
                        let (kind, seq, body) = frame_body(frame);
                        publish(&mut n, kind, seq, body).await;
                        // The welcome is out: the attach is no longer in flight.
                        drop(slot.take());
                    }
                    Err(_) => {
                        let code = closing(f.dropped.code());
                        publish(&mut n, "x", None, code.to_string().into()).await;
                        break;
                    }
                },
                code = f.dropped.dropped() => {
                    while let Ok(frame) = f.outbound.try_recv() {
                        let (kind, seq, body) = frame_body(frame);
                        publish(&mut n, kind, seq, body).await;
                    }
                    publish(&mut n, "x", None, closing(Some(code)).to_string().into()).await;
                    break;
                }
                _ = f.detached.cancelled() => break,
                _ = check.tick() => {
                    if let Ok(false) = self.leases.is_live(&f.proxy, f.proxy_epoch).await {
                        tracing::info!(link = f.link, proxy = %f.proxy, "the proxying gateway is gone; dropping its link");
                        break;
                    }
                }
            }
        }
        self.served.lock().expect("served lock").by_link.remove(&f.link);
        f.addr.do_send(Detach { connection: f.link });
    }
}

/// An attach the proxy is waiting for: when dropped still armed (`frames`), tells the owner the
/// attach that named `frames` is given up on (`detach {frames}`), so that it drops the link if it
/// attached it, or does not attach it (nor build its welcome) if that comes first.
struct GiveUpOnDrop {
    client: async_nats::Client,
    detach: String,
    frames: Option<String>,
}

impl Drop for GiveUpOnDrop {
    fn drop(&mut self) {
        let Some(frames) = self.frames.take() else { return };
        let body = serde_json::to_vec(&DetachRequest::GivenUp { frames }).expect("serializes");
        let (client, subject) = (self.client.clone(), std::mem::take(&mut self.detach));
        actix_web::rt::spawn(async move {
            let _ = client.publish(subject, body.into()).await;
        });
    }
}

/// Room left in a NATS message for a frame part's headers (`n`, `k`, `s`, `c`).
const PART_HEADROOM: usize = 1024;
/// The smallest part a frame is split into, whatever the server's `max_payload`.
const MIN_PART: usize = 1024;

/// A link's frame as the NATS messages it is published in: one, or parts of at most `part_size`
/// bytes (split anywhere: the proxy joins the bytes before reading them as UTF-8).
fn split_frame(body: bytes::Bytes, part_size: usize) -> Vec<bytes::Bytes> {
    if body.len() <= part_size {
        return vec![body];
    }
    (0..body.len()).step_by(part_size).map(|start| body.slice(start..(start + part_size).min(body.len()))).collect()
}

struct Forward {
    link: u64,
    secret: LinkSecret,
    /// The attach's place among the session's attaches in flight, given back once its first frame
    /// (the welcome) is published.
    slot: Option<AttachSlot>,
    addr: actix::Addr<ModalSession>,
    outbound: OutboundReceiver,
    dropped: DropNotice,
    detached: CancellationToken,
    frames: String,
    proxy: String,
    proxy_epoch: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_serves_a_bounded_number_of_attaches_of_one_session_at_once() {
        let attaching = Arc::default();
        let (session, other) = (SessionId::random(), SessionId::random());
        let mut held: Vec<AttachSlot> = (0..ATTACHES_IN_FLIGHT).map(|_| AttachSlot::take(&attaching, session).unwrap()).collect();
        assert!(AttachSlot::take(&attaching, session).is_none(), "one more than the bound");
        assert!(AttachSlot::take(&attaching, other).is_some(), "another session has its own");
        held.pop();
        let again = AttachSlot::take(&attaching, session).expect("a place freed when an attach is done");
        drop((held, again));
        assert!(attaching.lock().unwrap().is_empty(), "nothing kept for sessions with none in flight");
    }
}
