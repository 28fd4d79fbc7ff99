//! The registry: one `ModalSession` actor per session id on this node, started on demand and
//! forgotten when it stops.

use super::effects::{ChainEffects, ClientWriteShares, ContractSignatureChecker, EmbeddedEffects};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use vestibule_store::{EventLog, NewSession, SessionId, SessionMeta, StoreError};

use super::session_actor::{CommandReply, Deliver, SessionShell, Start};
use super::{Clock, ModalSession, RuntimeConfig, RuntimeMetrics};
use crate::model::options::{OptionsError, SessionOptions};
use crate::protocol::{CommandStatus, close};
use crate::session::Command;

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("{0}")]
    InvalidOptions(OptionsError),
    #[error("the session could not be started: {0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the session actor stopped")]
    Mailbox,
}

/// Why a runtime command could not be delivered to a session from outside (`Registry::deliver`).
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    /// Client commands come only over the session's connections, never through the runtime.
    #[error("{0} is a client command; only runtime commands are delivered")]
    ClientCommand(&'static str),
    /// Sessions are started only by `Registry::create`.
    #[error("Start is not delivered")]
    Start,
    #[error("no such session")]
    UnknownSession,
    /// The session decided the command and refused it.
    #[error("the session refused {command}: {message}")]
    Refused { command: &'static str, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the session actor stopped")]
    Mailbox,
}

#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// No such session, or the token does not match: the same answer for both, on purpose.
    #[error("unauthorized")]
    Unauthorized,
    #[error(transparent)]
    Store(#[from] StoreError),
}

struct Inner {
    sessions: Mutex<HashMap<SessionId, Addr<ModalSession>>>,
    /// Shared by every session actor.
    shell: Arc<SessionShell>,
}

#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

/// A resume token: 256 random bits, hex. Only its hash is stored.
fn new_resume_token() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

pub fn hash_resume_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `meta` lets `token` at the session, through `project` when one is given. The token hash
/// is compared in constant time; a session of another project is refused like a wrong token, so a
/// resume through the wrong project learns nothing about the session (not even that it exists).
fn resume_allowed(meta: &SessionMeta, project: Option<&str>, token: &str) -> bool {
    let Some(expected) = meta.resume_token_hash.as_deref() else { return false };
    let token_matches: bool = expected.as_bytes().ct_eq(hash_resume_token(token).as_bytes()).into();
    token_matches && project.is_none_or(|p| meta.project == p)
}

impl Registry {
    pub fn new(log: Arc<dyn EventLog>, clock: Arc<dyn Clock>, config: RuntimeConfig, metrics: Arc<RuntimeMetrics>) -> Self {
        Self {
            inner: Arc::new(Inner {
                sessions: Mutex::new(HashMap::new()),
                shell: Arc::new(SessionShell {
                    log,
                    clock,
                    config,
                    metrics,
                    checker: None,
                    chain: Arc::new(super::effects::NoChain),
                    embedded: Arc::new(super::effects::NoEmbedded),
                    write_shares: Arc::new(super::effects::UnlimitedWrites),
                    interner: Default::default(),
                }),
            }),
        }
    }

    /// Lets contract accounts sign in: sessions ask `checker` about their signatures (EIP-1271).
    /// Call before the registry is shared.
    pub fn with_contract_checker(mut self, checker: Arc<dyn ContractSignatureChecker>) -> Self {
        let inner = Arc::get_mut(&mut self.inner).expect("with_contract_checker is called before the registry is shared");
        Arc::get_mut(&mut inner.shell).expect("no session has started yet").checker = Some(checker);
        self
    }

    /// Serves chain reads (balances, activity, receipts) through `chain`: sessions started from now
    /// on record its networks. Call before the registry is shared.
    pub fn with_chain(mut self, chain: Arc<dyn ChainEffects>) -> Self {
        let inner = Arc::get_mut(&mut self.inner).expect("with_chain is called before the registry is shared");
        Arc::get_mut(&mut inner.shell).expect("no session has started yet").chain = chain;
        self
    }

    /// Serves the embedded wallet's requests (mail a login code, start a social login...) through
    /// `embedded`. Call before the registry is shared.
    pub fn with_embedded(mut self, embedded: Arc<dyn EmbeddedEffects>) -> Self {
        let inner = Arc::get_mut(&mut self.inner).expect("with_embedded is called before the registry is shared");
        Arc::get_mut(&mut inner.shell).expect("no session has started yet").embedded = embedded;
        self
    }

    /// Bounds what one client address may write to the event log across its sessions: its
    /// commands are refused `rate_limited` while `shares` says it has used up its share. Call
    /// before the registry is shared.
    pub fn with_client_write_shares(mut self, shares: Arc<dyn ClientWriteShares>) -> Self {
        let inner = Arc::get_mut(&mut self.inner).expect("with_client_write_shares is called before the registry is shared");
        Arc::get_mut(&mut inner.shell).expect("no session has started yet").write_shares = shares;
        self
    }

    /// Runs a runtime command in session `id` from outside it (the embedded service's notices:
    /// a verified login, a bound wallet...), waking or rehydrating the session as needed. Client
    /// commands and `Start` are refused. Must be polled inside an actix system.
    pub async fn deliver(&self, id: SessionId, command: Command) -> Result<(), DeliverError> {
        match &command {
            Command::Client(c) => return Err(DeliverError::ClientCommand(c.type_name())),
            Command::Start { .. } => return Err(DeliverError::Start),
            _ => {}
        }
        if self.inner.shell.log.session_meta(id).await?.is_none() {
            return Err(DeliverError::UnknownSession);
        }
        let name = command.type_name();
        let reply = self.session(id).send(Deliver { command }).await.map_err(|_| DeliverError::Mailbox)?;
        match reply.status {
            CommandStatus::Accepted => Ok(()),
            CommandStatus::Refused => {
                Err(DeliverError::Refused { command: name, message: reply.error.map(|e| e.message).unwrap_or_default() })
            }
        }
    }

    pub fn log(&self) -> &Arc<dyn EventLog> {
        &self.inner.shell.log
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.shell.clock
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.shell.config
    }

    /// Sessions with a running actor on this node.
    pub fn live(&self) -> usize {
        self.inner.sessions.lock().expect("registry lock").len()
    }

    /// Whether the session has a running actor on this node (hibernated or not): a session some
    /// page is attached to, or was until `passivate_after` ago.
    pub fn is_running(&self, id: SessionId) -> bool {
        self.inner.sessions.lock().expect("registry lock").get(&id).is_some_and(|addr| addr.connected())
    }

    /// The session's actor, started (on the current arbiter) if it is not running. Must be called
    /// from inside an actix system.
    pub fn session(&self, id: SessionId) -> Addr<ModalSession> {
        let mut sessions = self.inner.sessions.lock().expect("registry lock");
        if let Some(addr) = sessions.get(&id).filter(|a| a.connected()) {
            return addr.clone();
        }
        let weak = Arc::downgrade(&self.inner);
        let on_stop = Box::new(move |id: SessionId, addr: Addr<ModalSession>| {
            if let Some(inner) = weak.upgrade() {
                let mut sessions = inner.sessions.lock().expect("registry lock");
                if sessions.get(&id) == Some(&addr) {
                    sessions.remove(&id);
                }
            }
        });
        let addr = ModalSession::new(id, self.inner.shell.clone(), on_stop).start();
        sessions.insert(id, addr.clone());
        addr
    }

    /// Creates a session: validates the options, records it with the hash of a new resume token and
    /// appends its first event. Returns the id and the token (the only time it exists in clear).
    pub async fn create(&self, project: &str, origin: &str, options: SessionOptions) -> Result<(SessionId, String), CreateError> {
        options.validate().map_err(CreateError::InvalidOptions)?;
        let id = SessionId::random();
        let token = new_resume_token();
        let new = NewSession {
            project: project.to_string(),
            created_ms: self.inner.shell.clock.now_ms(),
            resume_token_hash: Some(hash_resume_token(&token)),
        };
        self.inner.shell.log.create_session(id, new).await?;
        let served_networks = self.inner.shell.chain.served_networks();
        let embedded_frame_origin = self.inner.shell.config.embedded_frame_origin.clone();
        let command = Command::Start { project: project.into(), origin: origin.into(), options, served_networks, embedded_frame_origin };
        let reply: CommandReply = self.session(id).send(Start { command }).await.map_err(|_| CreateError::Mailbox)?;
        match reply.status {
            CommandStatus::Accepted => Ok((id, token)),
            CommandStatus::Refused => Err(CreateError::Refused(reply.error.map(|e| e.message).unwrap_or_default())),
        }
    }

    /// Checks that `token` resumes session `id` of `project`: the token against the stored hash,
    /// and the session's project against the one the client connected through.
    pub async fn authorize(&self, id: SessionId, project: &str, token: &str) -> Result<(), AttachError> {
        self.check_token(id, Some(project), token).await
    }

    /// Checks `token` against session `id`'s stored hash, whatever its project: for the host app's
    /// backend, which holds the session's credentials and connects through no project.
    pub async fn authorize_token(&self, id: SessionId, token: &str) -> Result<(), AttachError> {
        self.check_token(id, None, token).await
    }

    async fn check_token(&self, id: SessionId, project: Option<&str>, token: &str) -> Result<(), AttachError> {
        let meta = self.inner.shell.log.session_meta(id).await?.ok_or(AttachError::Unauthorized)?;
        if resume_allowed(&meta, project, token) { Ok(()) } else { Err(AttachError::Unauthorized) }
    }

    /// Stops every session actor (at shutdown; their state is already durable). Their connections
    /// are closed with 1001: the client resumes once the server is back.
    pub fn stop_all(&self) {
        self.stop(|_| true, close::GOING_AWAY);
    }

    /// Stops the live actors of sessions retention has just expired; their connections are closed
    /// with 4006 (the session is gone: start a new one), and their embedded-wallet frames end.
    /// Returns how many were live.
    pub fn end_expired(&self, expired: &[SessionId]) -> usize {
        for id in expired {
            self.inner.shell.embedded.forget_session(*id);
        }
        let expired: HashSet<&SessionId> = expired.iter().collect();
        self.stop(|id| expired.contains(id), close::SESSION_ENDED)
    }

    fn stop(&self, which: impl Fn(&SessionId) -> bool, close_code: u16) -> usize {
        let sessions: Vec<_> =
            self.inner.sessions.lock().expect("registry lock").iter().filter(|(id, _)| which(id)).map(|(_, addr)| addr.clone()).collect();
        for addr in &sessions {
            addr.do_send(StopSession { close_code });
        }
        sessions.len()
    }
}

/// Stops a session actor, closing its connections with `close_code`.
#[derive(Message)]
#[rtype(result = "()")]
struct StopSession {
    close_code: u16,
}

impl Handler<StopSession> for ModalSession {
    type Result = ();

    fn handle(&mut self, msg: StopSession, ctx: &mut Context<Self>) {
        self.drop_connections(msg.close_code);
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vestibule_store::SessionStatus;

    fn meta(project: &str, token: &str) -> SessionMeta {
        SessionMeta {
            session: SessionId::random(),
            project: project.into(),
            status: SessionStatus::Active,
            created_ms: 0,
            last_activity_ms: 0,
            latest_seq: 1,
            resume_token_hash: Some(hash_resume_token(token)),
        }
    }

    #[test]
    fn a_resume_needs_the_right_token_and_the_session_own_project() {
        let m = meta("alpha", "secret");
        assert!(resume_allowed(&m, Some("alpha"), "secret"));
        assert!(!resume_allowed(&m, Some("beta"), "secret"), "another project's resume is refused");
        assert!(!resume_allowed(&m, Some("alpha"), "secreT"));
        assert!(resume_allowed(&m, None, "secret"), "the token alone, where no project is involved");
        assert!(!resume_allowed(&m, None, "secreT"));
        assert!(!resume_allowed(&SessionMeta { resume_token_hash: None, ..m }, Some("alpha"), "secret"));
    }
}
