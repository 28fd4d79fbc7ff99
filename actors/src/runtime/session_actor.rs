//! `ModalSession`: the actor that owns one session. It rehydrates from snapshot + tail, decides each
//! command, appends the events with the expected seq, and only once they are durable makes the new
//! state current and publishes one diff to every attached connection. Commands are handled one at a
//! time (the mailbox waits for the append).
//!
//! The handlers are small: each message has one, and what they share is named for what it does:
//! [`ModalSession::recall`] (a repeated command id gets its first answer), [`ModalSession::wake`]
//! (rehydrate a hibernated session), [`ModalSession::decide`], [`ModalSession::commit`] and
//! [`ModalSession::publish`] (a decision's events, durably, then to every connection),
//! [`ModalSession::remember`] (an answer without events, durably), [`ModalSession::hibernate`].

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use flume::TrySendError;
use vestibule_store::{AnswerRefusal, AppendOutcome, CommandAnswer, EventLog, NewEvent, Payload, SessionId, Snapshot, StoreError};

use super::effects::ContractSignatureChecker;
use super::frames::{DecidedEvents, DiffFrame, Folded, build_diff, decided_events, diffs_since, fold_log_counting};
use super::interner::Interner;
use super::{Clock, ConnectionLink, Outbound, RuntimeConfig, RuntimeMetrics};
use crate::decider::Ctx;
use crate::protocol::{CommandStatus, PROTOCOL_VERSION, ServerMessage, close};
use crate::session::wire::{self, CanonicalState};
use crate::session::{
    self, ClientCommand, Command, CommandError, Event, Evolved, RefusalCode, Region, Regions, STATE_SCHEMA_VERSION, SessionState,
};

/// The answer to a command, as the caller of [`Execute`] receives it (connections get the same as a
/// `result` frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReply {
    pub status: CommandStatus,
    pub seq: u64,
    pub error: Option<CommandError>,
}

impl CommandReply {
    fn accepted(seq: u64) -> Self {
        Self { status: CommandStatus::Accepted, seq, error: None }
    }

    fn refused(seq: u64, error: CommandError) -> Self {
        Self { status: CommandStatus::Refused, seq, error: Some(error) }
    }

    /// Refusals a retry must not get again (the retry runs the command): see `RefusalCode::is_transient`.
    fn is_transient(&self) -> bool {
        self.error.as_ref().is_some_and(|e| e.code.is_transient())
    }

    fn to_frame(&self, command_id: &str) -> Arc<str> {
        let message = ServerMessage::Result {
            command_id: command_id.to_string(),
            status: self.status,
            seq: Some(self.seq),
            error: self.error.clone(),
        };
        serde_json::to_string(&message).expect("a result serializes").into()
    }

    fn to_answer(&self, command_id: &str) -> CommandAnswer {
        CommandAnswer {
            command_id: command_id.to_string(),
            seq: self.seq,
            refusal: self.error.as_ref().map(|e| AnswerRefusal { code: e.code.as_str().to_string(), message: e.message.clone() }),
        }
    }

    fn from_answer(answer: CommandAnswer) -> Self {
        match answer.refusal {
            None => Self::accepted(answer.seq),
            Some(AnswerRefusal { code, message }) => {
                use serde::de::IntoDeserializer;
                let code: Result<RefusalCode, serde::de::value::Error> = serde::Deserialize::deserialize(code.as_str().into_deserializer());
                // A code this build does not know (written by a newer one) is still a refusal.
                Self::refused(answer.seq, CommandError::new(code.unwrap_or(RefusalCode::Internal), message))
            }
        }
    }
}

fn internal_error(message: &str) -> CommandError {
    CommandError::new(RefusalCode::Internal, message)
}

fn storage_unavailable() -> CommandError {
    CommandError::new(RefusalCode::StorageUnavailable, "the event log is unavailable; retry")
}

fn log_full(budget: u64) -> CommandError {
    CommandError::new(
        RefusalCode::LogFull,
        format!("this session has written its {budget} bytes to the event log and takes no more commands; start a new session"),
    )
}

/// Answers written without events (refusals, no-ops) that a fold cannot count again (they are not
/// in the events): once this many bytes of them came after the last snapshot, the session takes
/// one, which records them. So a restart forgets at most this much (decision 0107).
const UNFOLDED_ANSWER_BYTES: u64 = 64 * 1024;

/// Why an effect's answer was recorded as failed when its events were larger than the log takes.
const TOO_LARGE_TO_KEEP: &str = "the answer is too large to keep";

/// A chain effect the state waits for.
enum ChainAsk {
    Balances(crate::machines::balances::BalanceFetch),
    Activity(crate::machines::activity::ActivityFetch),
    /// The hash the wallet answered, and the transfer it answered for.
    Receipt(String, crate::machines::send::Transfer),
    HostRead {
        request_id: String,
        network: crate::model::caip::CaipNetworkId,
        method: String,
        params: serde_json::Value,
    },
    SolanaPrepare(crate::machines::send::SolanaSend),
    SolanaSubmit {
        id: u64,
        network: crate::model::caip::CaipNetworkId,
        from: String,
        message: String,
        signed: String,
    },
}

use crate::machines::send::SolanaSendStep;

/// What every session of a registry shares: the log, the clock, the configuration, the metrics,
/// the contract checker and the interner of equal regions.
pub(crate) struct SessionShell {
    pub log: Arc<dyn EventLog>,
    pub clock: Arc<dyn Clock>,
    pub config: RuntimeConfig,
    pub metrics: Arc<RuntimeMetrics>,
    pub checker: Option<Arc<dyn ContractSignatureChecker>>,
    pub chain: Arc<dyn super::effects::ChainEffects>,
    pub embedded: Arc<dyn super::effects::EmbeddedEffects>,
    /// What each client address may write across its sessions.
    pub write_shares: Arc<dyn super::effects::ClientWriteShares>,
    pub interner: Interner,
}

/// Runs a command from a client. The result goes to the connection `reply_to` (before the diff) and
/// is returned to the sender.
#[derive(Message)]
#[rtype(result = "CommandReply")]
pub struct Execute {
    pub command_id: String,
    pub command: ClientCommand,
    pub reply_to: Option<u64>,
    /// When the gateway read the command's frame (`vestibule_command_seconds` runs from here).
    pub received_at: Instant,
}

impl Execute {
    /// A command received now.
    pub fn new(command_id: impl Into<String>, command: ClientCommand, reply_to: Option<u64>) -> Self {
        Self { command_id: command_id.into(), command, reply_to, received_at: Instant::now() }
    }
}

/// Creates the session's first event (runtime only).
#[derive(Message)]
#[rtype(result = "CommandReply")]
pub(crate) struct Start {
    pub command: Command,
}

/// Attaches a connection. The session sends it a `welcome` and, when resuming, every diff after
/// `last_seq`, before any newer diff.
#[derive(Message)]
#[rtype(result = "Result<(), CommandError>")]
pub struct Attach {
    pub link: ConnectionLink,
    pub last_seq: Option<u64>,
    /// Sent in the welcome when the session was just created.
    pub new_resume_token: Option<String>,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Detach {
    pub connection: u64,
}

/// The session's current state, for tests and the debug API.
#[derive(Message)]
#[rtype(result = "Result<SessionSnapshot, CommandError>")]
pub struct Inspect;

#[derive(Debug, Clone)]
pub struct SessionSnapshot {
    pub seq: u64,
    pub state: SessionState,
    pub state_hash: String,
    pub connections: usize,
    /// Whether the session was hibernated before this inspection woke it.
    pub was_hibernated: bool,
    /// The bytes the session counts as written to its event log (decision 0107).
    pub log_bytes: u64,
}

/// A command the session gives itself: a deadline that fell due, or an effect's outcome. It goes
/// through the mailbox like a client's command, so it is decided only when no other decision is
/// between deciding and being durable (two decisions from the same seq would conflict).
#[derive(Message)]
#[rtype(result = "CommandReply")]
struct Internal {
    command: Command,
}

/// A runtime command from outside the session (`Registry::deliver`): decided as an effect's outcome.
#[derive(Message)]
#[rtype(result = "CommandReply")]
pub(crate) struct Deliver {
    pub command: Command,
}

/// Where a command came from: whether its answer is remembered, who hears it, and the
/// correlation id its events carry.
#[derive(Debug, Clone)]
enum Source {
    /// A client's command: answered to the connection `reply_to`, remembered under its id.
    Client { command_id: String, reply_to: Option<u64>, received_at: Instant },
    /// A deadline that fell due: `timer:<seq>`.
    Timer,
    /// An effect's outcome: `effect:<seq>`.
    Effect,
    /// The session's creation: `session:start`.
    Start,
}

impl Source {
    /// The correlation id of the events decided from the session at `seq`.
    fn correlation(&self, seq: u64) -> String {
        match self {
            Source::Client { command_id, .. } => command_id.clone(),
            Source::Timer => format!("timer:{}", seq + 1),
            Source::Effect => format!("effect:{}", seq + 1),
            Source::Start => "session:start".into(),
        }
    }
}

/// The state of an awake session; a hibernated session has none (it is rebuilt from the log).
struct Awake {
    state: SessionState,
    canonical: CanonicalState,
}

/// A decision whose events are being appended: what becomes current once they are durable.
struct Pending {
    /// The events as the diff carries them (a JSON array of `WireEvent`s).
    wire_events: Vec<u8>,
    event_count: usize,
    state: SessionState,
    canonical: CanonicalState,
    /// The regions whose canonical JSON changed, with their bytes before (for the diff).
    changed: Vec<(Region, Arc<[u8]>)>,
    hash: String,
    /// What the append writes: its events and the client's answer (`NewEvent::log_bytes`,
    /// `CommandAnswer::log_bytes`).
    log_bytes: u64,
}

/// The last answers, kept in memory so a quick repeat needs no read; every answer is also in the log.
#[derive(Default)]
struct AnswerCache {
    recent: VecDeque<(String, CommandReply)>,
}

impl AnswerCache {
    fn get(&self, command_id: &str) -> Option<&CommandReply> {
        self.recent.iter().rev().find(|(id, _)| id == command_id).map(|(_, r)| r)
    }

    fn insert(&mut self, command_id: &str, reply: CommandReply, capacity: usize) {
        if capacity == 0 {
            return;
        }
        while self.recent.len() >= capacity {
            self.recent.pop_front();
        }
        self.recent.push_back((command_id.to_string(), reply));
    }

    fn clear(&mut self) {
        self.recent = VecDeque::new();
    }
}

/// The outcome of the pure part of a decision.
enum Decided {
    /// Events, with the state they lead to.
    Events(Evolved),
    /// Accepted, but nothing changes.
    Unchanged,
    Refused(CommandError),
}

pub struct ModalSession {
    id: SessionId,
    shell: Arc<SessionShell>,
    on_stop: Option<Box<dyn FnOnce(SessionId, Addr<ModalSession>) + Send>>,
    seq: u64,
    hash: String,
    /// `None` while hibernated (and before the first rehydration).
    awake: Option<Box<Awake>>,
    /// Whether the session was awake and hibernated since (counted in the metrics).
    hibernated: bool,
    /// Set when the log could not be folded: the session refuses everything until restarted.
    failed: Option<String>,
    connections: Vec<ConnectionLink>,
    recent: VecDeque<DiffFrame>,
    answers: AnswerCache,
    timer: Option<(u64, SpawnHandle)>,
    passivation: Option<SpawnHandle>,
    hibernation: Option<SpawnHandle>,
    /// When the session last did anything (tokio's clock, as its timers use).
    last_activity: tokio::time::Instant,
    /// The nonce the next sign-in message will carry (see `Ctx::nonce`); replaced once used.
    nonce: String,
    /// The nonce of the contract check in flight, so a check is asked once.
    checking: Option<String>,
    /// Chain effects in flight: (kind, key) of each, so a change of state does not ask twice, and
    /// its future's handle, so one the state no longer waits for is cancelled (a receipt poll runs
    /// 120 s: a transfer dropped from the list must not keep polling the node).
    chain_in_flight: std::collections::HashMap<(&'static str, String), SpawnHandle>,
    /// Embedded-wallet effects in flight, by effect id, so each is asked once.
    embedded_in_flight: std::collections::HashSet<u64>,
    last_snapshot_seq: u64,
    /// The bytes the session has written to its log (events and answers; decision 0107): counted
    /// exactly as it writes, kept while it hibernates, recovered from the log when it starts.
    log_bytes: u64,
    /// Bytes of answers written without events since the last snapshot: a fold does not see them.
    unfolded_answer_bytes: u64,
    /// Whether this actor has logged that the session's log is full (it does so once).
    log_full_logged: bool,
    /// The address of the client that last sent a command or attached, when the gateway knew it
    /// ([`ConnectionLink::client`]): host reads and receipt waits are asked on its behalf, so one
    /// client's sessions share one client's part of the chain calls at the nodes. Not recorded: a
    /// session (re)started has none until a connection attaches, and asks neither meanwhile
    /// ([`ModalSession::asks_for_a_client`]).
    client: Option<std::net::IpAddr>,
    /// Whether the last look at the state's effects left host reads or receipt waits unasked for
    /// lack of a client: kept while hibernated, so that the attach that brings one wakes it.
    waiting_for_a_client: bool,
    /// The widget's error reports taken lately (at most a few; none allocated until the first).
    /// Kept while hibernated; a restart forgets it, and the log budget still bounds the rest.
    client_error_reports: session::ClientErrorReportWindow,
}

fn ready<T: 'static>(value: T) -> ResponseActFuture<ModalSession, T> {
    Box::pin(actix::fut::ready(value))
}

impl ModalSession {
    pub(crate) fn new(id: SessionId, shell: Arc<SessionShell>, on_stop: Box<dyn FnOnce(SessionId, Addr<ModalSession>) + Send>) -> Self {
        Self {
            id,
            shell,
            on_stop: Some(on_stop),
            seq: 0,
            hash: String::new(),
            awake: None,
            hibernated: false,
            failed: None,
            connections: Vec::new(),
            recent: VecDeque::new(),
            answers: AnswerCache::default(),
            timer: None,
            passivation: None,
            hibernation: None,
            last_activity: tokio::time::Instant::now(),
            nonce: crate::siwx::generate_nonce().as_str().to_string(),
            checking: None,
            chain_in_flight: Default::default(),
            embedded_in_flight: Default::default(),
            last_snapshot_seq: 0,
            log_bytes: 0,
            unfolded_answer_bytes: 0,
            log_full_logged: false,
            client: None,
            waiting_for_a_client: false,
            client_error_reports: Default::default(),
        }
    }

    fn config(&self) -> &RuntimeConfig {
        &self.shell.config
    }

    fn metrics(&self) -> &RuntimeMetrics {
        &self.shell.metrics
    }

    // --- Answers -------------------------------------------------------------------------------

    /// The first answer to `command_id`, if the session gave one: from memory, else from the log.
    fn recall(&mut self, command_id: &str) -> ResponseActFuture<Self, Result<Option<CommandReply>, StoreError>> {
        if let Some(reply) = self.answers.get(command_id) {
            return ready(Ok(Some(reply.clone())));
        }
        let (log, id, command_id) = (self.shell.log.clone(), self.id, command_id.to_string());
        Box::pin(
            async move { log.answer(id, &command_id).await }
                .into_actor(self)
                .map(|answer, _, _| answer.map(|a| a.map(CommandReply::from_answer))),
        )
    }

    /// Sends a repeated command its first answer again: nothing is decided, nothing changes.
    fn repeat_answer(&mut self, command_id: &str, reply_to: Option<u64>, reply: CommandReply) -> CommandReply {
        self.metrics().command("duplicate");
        self.answers.insert(command_id, reply.clone(), self.shell.config.remembered_commands);
        self.send_to(reply_to, Outbound::Message(reply.to_frame(command_id)));
        reply
    }

    /// Answers a command that wrote no event. A client's answer is made durable first (so a retry,
    /// even after a restart, gets it again), unless it is a transient refusal, which a retry must not
    /// get again. If the answer cannot be made durable, the client is told to retry instead.
    fn remember(&mut self, source: Source, reply: CommandReply) -> ResponseActFuture<Self, CommandReply> {
        let Source::Client { command_id, reply_to, .. } = source else { return ready(reply) };
        if reply.is_transient() {
            self.send_to(reply_to, Outbound::Message(reply.to_frame(&command_id)));
            return ready(reply);
        }
        let (log, id, answer) = (self.shell.log.clone(), self.id, reply.to_answer(&command_id));
        let answer_bytes = answer.log_bytes();
        Box::pin(async move { log.remember_answer(id, answer).await }.into_actor(self).map(move |written, act, ctx| {
            let reply = match written {
                Ok(()) => {
                    act.answers.insert(&command_id, reply.clone(), act.shell.config.remembered_commands);
                    act.wrote(answer_bytes, true, ctx);
                    reply
                }
                Err(error) => {
                    tracing::error!(session = %act.id, seq = act.seq, %error, "an answer could not be made durable");
                    CommandReply::refused(act.seq, storage_unavailable())
                }
            };
            act.send_to(reply_to, Outbound::Message(reply.to_frame(&command_id)));
            reply
        }))
    }

    /// Answers without remembering (the session failed, or the refusal is transient).
    fn answer_unremembered(&mut self, source: &Source, reply: CommandReply) -> CommandReply {
        if let Source::Client { command_id, reply_to, .. } = source {
            self.send_to(*reply_to, Outbound::Message(reply.to_frame(command_id)));
        }
        reply
    }

    // --- Rehydration and hibernation ----------------------------------------------------------------

    /// Makes the session awake: if hibernated, folds snapshot + tail. An error is the reply to give.
    fn wake(&mut self) -> ResponseActFuture<Self, Result<(), CommandReply>> {
        if let Some(reason) = &self.failed {
            return ready(Err(CommandReply::refused(self.seq, internal_error(reason))));
        }
        if self.awake.is_some() {
            return ready(Ok(()));
        }
        let (log, id, started) = (self.shell.log.clone(), self.id, Instant::now());
        Box::pin(async move { fold_log_counting(log.as_ref(), id).await }.into_actor(self).map(move |folded, act, ctx| {
            act.metrics().rehydrate_seconds.observe(started.elapsed().as_secs_f64());
            match folded {
                Ok(Folded { state, seq, log_bytes }) => {
                    // Awake, the session counted exactly (answers without events included), so the
                    // fold can only have counted less; after another writer's events, more.
                    act.log_bytes = act.log_bytes.max(log_bytes);
                    act.become_awake(state, seq, ctx);
                    Ok(())
                }
                Err(error @ StoreError::Corrupt { .. }) => {
                    tracing::error!(session = %act.id, %error, "the session's log cannot be folded");
                    act.failed = Some(format!("the session's log cannot be read: {error}"));
                    Err(CommandReply::refused(act.seq, internal_error("the session's log cannot be read")))
                }
                Err(error) => {
                    tracing::warn!(session = %act.id, %error, "the session could not be rehydrated");
                    Err(CommandReply::refused(act.seq, storage_unavailable()))
                }
            }
        }))
    }

    /// Makes a folded state current: shares its regions with other sessions, hashes it, re-arms its
    /// deadlines and effects.
    fn become_awake(&mut self, mut state: SessionState, seq: u64, ctx: &mut Context<Self>) {
        let mut canonical = CanonicalState::of(&state);
        self.shell.interner.share(&mut state, &mut canonical, Regions::ALL);
        let hash = canonical.hash();
        if seq != self.seq {
            // Another writer moved the stream (or this is the first load): the ring no longer follows on.
            self.recent.clear();
            self.last_snapshot_seq = seq;
        } else if !self.hash.is_empty() && hash != self.hash {
            tracing::warn!(session = %self.id, seq, "the session rehydrated to another hash than it had; clients will resync");
        }
        self.seq = seq;
        self.hash = hash;
        if std::mem::take(&mut self.hibernated) {
            self.metrics().hibernated_sessions.dec();
        }
        self.awake = Some(Box::new(Awake { state, canonical }));
        self.rearm(ctx);
    }

    /// Drops what the log can rebuild: the state and its bytes, the diff ring, the answer cache.
    /// Connections, deadlines and the seq and hash stay, so an idle client notices nothing.
    fn hibernate(&mut self, ctx: &mut Context<Self>) {
        if self.awake.is_none() {
            return;
        }
        // Waking then costs one snapshot read and a tail shorter than `hibernation_snapshot_after`,
        // not a tail of up to `snapshot_every` events. Answers written without events since the last
        // snapshot are recorded too: the count of the log's bytes must not depend on the session
        // staying in memory (passivation follows hibernation; decision 0107).
        if self.seq >= self.last_snapshot_seq + self.config().hibernation_snapshot_after.max(1) || self.unfolded_answer_bytes > 0 {
            self.write_snapshot(ctx);
        }
        if let Some(awake) = self.awake.take() {
            self.shell.interner.release(awake.state, awake.canonical);
        }
        self.recent = VecDeque::new();
        self.answers.clear();
        self.connections.shrink_to_fit();
        self.hibernated = true;
        self.metrics().hibernated_sessions.inc();
        tracing::trace!(session = %self.id, seq = self.seq, "hibernated");
    }

    /// (Re)starts the countdown to hibernation; any activity calls it. Activity only moves
    /// `last_activity` on: the one timer, when it fires, waits out what is left of the countdown
    /// from there, so a busy session does not cancel and arm a timer per command.
    fn schedule_hibernation(&mut self, ctx: &mut Context<Self>) {
        self.last_activity = tokio::time::Instant::now();
        if self.hibernation.is_none() {
            self.arm_hibernation(self.config().hibernate_after, ctx);
        }
    }

    fn arm_hibernation(&mut self, after: Duration, ctx: &mut Context<Self>) {
        self.hibernation = Some(ctx.run_later(after, |act, ctx| {
            act.hibernation = None;
            let idle = act.last_activity.elapsed();
            match act.config().hibernate_after.checked_sub(idle) {
                Some(left) if !left.is_zero() => act.arm_hibernation(left, ctx),
                _ => act.hibernate(ctx),
            }
        }));
    }

    fn schedule_passivation(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.passivation.take() {
            ctx.cancel_future(handle);
        }
        self.passivation = Some(ctx.run_later(self.config().passivate_after, |act, ctx| {
            act.passivation = None;
            if !act.connections.is_empty() {
                return;
            }
            tracing::debug!(session = %act.id, seq = act.seq, "passivating an idle session");
            // Answers written without events since the last snapshot are in no event for the next
            // fold to count: a snapshot records them before the session goes, or every passivation
            // would forget up to `UNFOLDED_ANSWER_BYTES` of the budget (decision 0107).
            if act.unfolded_answer_bytes > 0 && act.awake.is_some() {
                act.write_snapshot_then(ctx, |act, ctx| {
                    if act.connections.is_empty() {
                        ctx.stop();
                    }
                });
            } else {
                ctx.stop();
            }
        }));
    }

    // --- Deciding and committing ------------------------------------------------------------------

    /// Wakes the session, then decides `command`.
    fn wake_and_decide(&mut self, command: Command, source: Source) -> ResponseActFuture<Self, CommandReply> {
        Box::pin(self.wake().then(move |woke, act, ctx| match woke {
            Ok(()) => act.decide(command, source, ctx),
            Err(reply) => ready(act.answer_unremembered(&source, reply)),
        }))
    }

    /// The pure decision, guarded: a panic refuses the command instead of killing the session.
    fn decide_pure(&self, state: &SessionState, command: Command, now_ms: u64) -> Decided {
        let command_type = command.type_name();
        let decided = catch_unwind(AssertUnwindSafe(|| {
            session::decide_evolved(state, command, &Ctx { now_ms, options: &state.options, nonce: &self.nonce })
        }));
        match decided {
            Ok(Ok(evolved)) if evolved.events.is_empty() => Decided::Unchanged,
            Ok(Ok(evolved)) => Decided::Events(evolved),
            Ok(Err(refusal)) => {
                tracing::debug!(session = %self.id, seq = self.seq, command = command_type, code = refusal.code().as_str(), "refused");
                Decided::Refused(refusal.to_wire())
            }
            Err(_) => {
                tracing::error!(session = %self.id, seq = self.seq, command = command_type, "a decision panicked; the command is refused");
                Decided::Refused(internal_error("the command could not be decided"))
            }
        }
    }

    /// Decides `command` on the awake state: a refusal or a no-op is answered (and remembered), events
    /// are committed. The future holds the mailbox until the answer is durable.
    fn decide(&mut self, command: Command, source: Source, ctx: &mut Context<Self>) -> ResponseActFuture<Self, CommandReply> {
        if matches!(source, Source::Client { .. }) && self.log_full() {
            // Before deciding, and not remembered: the refusal writes nothing, so the log stops
            // growing. The runtime's own commands (ticks, effects' outcomes) still run: they follow
            // from what the visitor already did, and refusing them could strand a machine waiting.
            self.metrics().command("log_full");
            if !std::mem::replace(&mut self.log_full_logged, true) {
                tracing::warn!(
                    session = %self.id,
                    seq = self.seq,
                    log_bytes = self.log_bytes,
                    budget = self.config().max_log_bytes,
                    "the session's event log is full; its commands are refused"
                );
            }
            let reply = CommandReply::refused(self.seq, log_full(self.config().max_log_bytes));
            self.after_activity(ctx);
            return ready(self.answer_unremembered(&source, reply));
        }
        let refusal = matches!(source, Source::Client { .. }).then(|| self.shell.write_shares.refusal(self.client)).flatten();
        if let Some(refusal) = refusal {
            // Like a full log: before deciding, writing nothing, not remembered (the same command
            // may come again once the address's share has refilled, or the disk has room).
            let error = match refusal {
                super::WriteRefusal::ClientShare => CommandError::new(
                    RefusalCode::RateLimited,
                    "this client address has written its share of the event log for now (limits.client_log_bytes_per_hour); retry later",
                ),
                super::WriteRefusal::DiskLow => CommandError::new(
                    RefusalCode::StorageUnavailable,
                    "the event log's disk is nearly full (limits.min_free_disk_bytes); retry later",
                ),
            };
            self.metrics().command(if error.code == RefusalCode::RateLimited { "rate_limited" } else { "storage_unavailable" });
            self.after_activity(ctx);
            return ready(self.answer_unremembered(&source, CommandReply::refused(self.seq, error)));
        }
        let Some(awake) = self.awake.as_ref() else {
            return ready(self.answer_unremembered(&source, CommandReply::refused(self.seq, internal_error("the session is not loaded"))));
        };
        let now = self.shell.clock.now_ms();
        if matches!(command, Command::Client(ClientCommand::ReportClientError { .. })) && !self.client_error_reports.take(now) {
            // Refused before deciding, and transient (not remembered): the same report may be
            // sent again once the window has room.
            self.metrics().command("refused");
            let message = format!(
                "at most {} error reports per {} s",
                session::MAX_CLIENT_ERROR_REPORTS,
                session::CLIENT_ERROR_REPORT_WINDOW_MS / 1000
            );
            let reply = CommandReply::refused(self.seq, CommandError::new(RefusalCode::RateLimited, message));
            self.after_activity(ctx);
            return self.remember(source, reply);
        }
        // An effect's answer that the log will not take must still end what waits for it.
        let fallback = matches!(source, Source::Effect).then(|| command.failed_effect_answer(TOO_LARGE_TO_KEEP)).flatten();
        match self.decide_pure(&awake.state, command, now) {
            Decided::Refused(error) => {
                let outcome = if error.code == RefusalCode::Internal { "failed" } else { "refused" };
                self.metrics().command(outcome);
                let reply = CommandReply::refused(self.seq, error);
                self.after_activity(ctx);
                self.remember(source, reply)
            }
            Decided::Unchanged => {
                self.metrics().command("accepted");
                self.after_activity(ctx);
                self.remember(source, CommandReply::accepted(self.seq))
            }
            Decided::Events(evolved) => self.commit(evolved, source, now, fallback),
        }
    }

    /// Serializes and hashes only the regions the decision's events touch in the state they lead to,
    /// and appends them (with the client's answer, atomically). Nothing becomes current until the
    /// append is durable.
    fn commit(&mut self, evolved: Evolved, source: Source, now: u64, fallback: Option<Command>) -> ResponseActFuture<Self, CommandReply> {
        let Evolved { events, state } = evolved;
        if events.iter().any(|e| matches!(e, Event::SiwxChallengeIssued { challenge } if challenge.nonce == self.nonce)) {
            // Drawn now, not when the append succeeds: a nonce is never offered twice, even if
            // this decision is refused by the store.
            self.nonce = crate::siwx::generate_nonce().as_str().to_string();
        }
        let awake = self.awake.as_ref().expect("decide checked that the session is awake");
        // The new state's hash is recorded with the events, so a replay can prove it reaches the
        // states clients were sent.
        let touched = events.iter().fold(Regions::NONE, |set, e| set.union(e.regions()));
        let mut canonical = awake.canonical.clone();
        let changed = canonical.update(&state, touched);
        let hash = canonical.hash();
        let correlation = source.correlation(self.seq);
        let expected = self.seq;
        let DecidedEvents { new_events, wire_json } = decided_events(&events, expected, now, &correlation, hash.clone());
        let answer = match &source {
            Source::Client { command_id, .. } => Some(CommandReply::accepted(expected + new_events.len() as u64).to_answer(command_id)),
            _ => None,
        };
        let log_bytes = new_events.iter().map(NewEvent::log_bytes).sum::<u64>() + answer.as_ref().map_or(0, CommandAnswer::log_bytes);
        let pending = Pending { wire_events: wire_json, event_count: events.len(), state, canonical, changed, hash, log_bytes };
        let (log, id, started) = (self.shell.log.clone(), self.id, Instant::now());
        let append = async move {
            match answer {
                Some(answer) => log.append_answered(id, expected, new_events, answer).await,
                None => log.append(id, expected, new_events).await,
            }
        };
        Box::pin(append.into_actor(self).map(move |appended, act, ctx| {
            act.metrics().append_seconds.observe(started.elapsed().as_secs_f64());
            let reply = match appended {
                Ok(outcome) => act.publish(pending, outcome, &source, ctx),
                Err(StoreError::InvalidAppend(why)) if fallback.is_some() => {
                    // An effect's answer too large for the log (a hostile node's or token's data):
                    // its failure goes in instead, so nothing waits for it for good.
                    tracing::warn!(session = %act.id, seq = act.seq, %why, "an effect's answer cannot be kept; recording it as failed");
                    act.metrics().command("failed");
                    if let Some(command) = fallback {
                        ctx.address().do_send(Internal { command });
                    }
                    CommandReply::refused(act.seq, storage_unavailable())
                }
                Err(error) => {
                    // The client must hear about it (it would otherwise wait for a result forever),
                    // but the refusal is not remembered: it is transient.
                    let reply = act.append_failed(error, ctx);
                    act.answer_unremembered(&source, reply)
                }
            };
            act.after_activity(ctx);
            reply
        }))
    }

    /// Makes a durable decision current and publishes it: the result to the sender, then one diff to
    /// every connection.
    fn publish(&mut self, pending: Pending, outcome: AppendOutcome, source: &Source, ctx: &mut Context<Self>) -> CommandReply {
        let Pending { wire_events, event_count, mut state, mut canonical, changed, hash, log_bytes } = pending;
        let Some(awake) = self.awake.as_mut() else {
            // Cannot happen (nothing hibernates a session while a decision is in flight), but if it
            // did, the durable events must not be published from a state they do not follow.
            tracing::error!(session = %self.id, seq = self.seq, "a durable decision found its session asleep; reloading");
            ctx.wait(self.wake().map(|_, _, _| ()));
            return CommandReply::refused(self.seq, CommandError::new(RefusalCode::Conflict, "the session changed; retry"));
        };
        let patch = wire::patch_regions(&changed, &canonical);
        let changed_regions: Regions = changed.iter().map(|(r, _)| *r).collect();
        self.shell.interner.share(&mut state, &mut canonical, changed_regions);
        awake.state = state;
        awake.canonical = canonical;
        self.hash = hash;
        // The log stored the events where the decision numbered them (an append after any other
        // seq is a conflict, refused before this).
        debug_assert_eq!(outcome.seqs(), self.seq + 1..=self.seq + event_count as u64);
        let prev_seq = self.seq;
        self.seq = outcome.last_seq;
        self.metrics().events_appended.inc_by(event_count as u64);
        self.metrics().command("accepted");
        let frame = build_diff(prev_seq, self.seq, &wire_events, &patch, self.hash.clone());
        let reply = CommandReply::accepted(self.seq);
        if let Source::Client { command_id, reply_to, .. } = source {
            // Already durable: written with the events.
            self.answers.insert(command_id, reply.clone(), self.shell.config.remembered_commands);
            self.send_to(*reply_to, Outbound::Message(reply.to_frame(command_id)));
        }
        self.broadcast(&frame);
        if let Source::Client { received_at, .. } = source {
            self.metrics().command_seconds.observe(received_at.elapsed().as_secs_f64());
        }
        self.remember_diff(frame);
        self.wrote(log_bytes, false, ctx);
        self.maybe_snapshot(ctx);
        reply
    }

    // --- The budget of log bytes (decision 0107) ---------------------------------------------------

    /// Whether the session has written its budget of bytes to its log: its clients' commands are
    /// then refused with `log_full`.
    fn log_full(&self) -> bool {
        self.log_bytes >= self.config().max_log_bytes
    }

    /// Counts `bytes` the session made durable in its log; `unfolded`: an answer without events,
    /// which only a snapshot keeps across a restart. The write that fills the budget takes a
    /// snapshot, so a restart finds it full even if such answers filled it.
    fn wrote(&mut self, bytes: u64, unfolded: bool, ctx: &mut Context<Self>) {
        let was_full = self.log_full();
        self.log_bytes += bytes;
        if let Some(client) = self.client {
            self.shell.write_shares.wrote(client, bytes);
        }
        if unfolded {
            self.unfolded_answer_bytes += bytes;
        }
        if self.log_full() && !was_full {
            if !std::mem::replace(&mut self.log_full_logged, true) {
                tracing::warn!(
                    session = %self.id,
                    seq = self.seq,
                    log_bytes = self.log_bytes,
                    budget = self.config().max_log_bytes,
                    "the session's event log is full; its commands will be refused"
                );
            }
            self.write_snapshot(ctx);
        } else if self.unfolded_answer_bytes >= UNFOLDED_ANSWER_BYTES {
            self.write_snapshot(ctx);
        }
    }

    /// Reloads the session from the log, which moved past it (another writer's append, or an
    /// append of this session's own that failed ambiguously: a timed-out publish that was stored).
    /// The events it missed were never published to its connections (with a shared log: a gateway
    /// killed after its append was sent, or another gateway running the session). Sends them their
    /// diffs, rebuilt from the log, before anything else is decided, or drops them to resume: a
    /// client must never see a gap.
    fn catch_up_with_log(&mut self) -> ResponseActFuture<Self, ()> {
        self.awake = None;
        let (log, id, from) = (self.shell.log.clone(), self.id, self.seq);
        Box::pin(self.wake().then(move |woke, act, _| {
            let to = act.seq;
            async move {
                match woke {
                    Ok(()) if to > from => Some(diffs_since(log.as_ref(), id, from).await),
                    _ => None,
                }
            }
            .into_actor(act)
            .map(move |rebuilt, act, _| match rebuilt {
                None => {}
                Some(Ok(Some(diffs))) if diffs.last().map(|d| d.seq) == Some(to) && act.seq == to => {
                    for frame in diffs {
                        act.broadcast(&frame);
                        act.remember_diff(frame);
                    }
                }
                Some(other) => {
                    if let Err(error) = other {
                        tracing::warn!(session = %act.id, %error, from, "could not rebuild the other writer's diffs");
                    }
                    act.drop_connections_to_resume();
                }
            })
        }))
    }

    fn append_failed(&mut self, error: StoreError, ctx: &mut Context<Self>) -> CommandReply {
        match error {
            StoreError::Conflict { actual, .. } => {
                // Another writer moved the stream: reload it, and let the client retry.
                tracing::warn!(session = %self.id, seq = self.seq, actual, "append conflict; reloading the session");
                ctx.wait(self.catch_up_with_log());
                self.metrics().command("conflict");
                CommandReply::refused(self.seq, CommandError::new(RefusalCode::Conflict, "the session changed; retry"))
            }
            error => {
                tracing::error!(session = %self.id, seq = self.seq, %error, "append failed");
                self.metrics().command("failed");
                CommandReply::refused(self.seq, storage_unavailable())
            }
        }
    }

    /// After anything the session did: deadlines and effects follow the state, idle countdowns restart.
    fn after_activity(&mut self, ctx: &mut Context<Self>) {
        self.rearm(ctx);
        self.schedule_hibernation(ctx);
        if self.connections.is_empty() {
            self.schedule_passivation(ctx);
        }
    }

    fn maybe_snapshot(&mut self, ctx: &mut Context<Self>) {
        if self.seq >= self.last_snapshot_seq + self.config().snapshot_every {
            self.write_snapshot(ctx);
        }
    }

    /// Writes a snapshot of the current state in the background (a cache: a failure is only logged).
    fn write_snapshot(&mut self, ctx: &mut Context<Self>) {
        self.write_snapshot_then(ctx, |_, _| {});
    }

    /// Writes a snapshot, then runs `then` once it is written or has failed (at once when the
    /// session holds no state to write).
    fn write_snapshot_then(&mut self, ctx: &mut Context<Self>, then: impl FnOnce(&mut Self, &mut Context<Self>) + 'static) {
        let Some(awake) = self.awake.as_ref() else {
            then(self, ctx);
            return;
        };
        self.last_snapshot_seq = self.seq;
        // The canonical JSON the session already keeps, as it is: the snapshot is the same text.
        let state = Payload::from_serialized(String::from_utf8(awake.canonical.to_json()).expect("canonical JSON is UTF-8"));
        let snapshot = Snapshot {
            seq: self.seq,
            schema_version: STATE_SCHEMA_VERSION,
            time_ms: self.shell.clock.now_ms(),
            state,
            log_bytes: Some(self.log_bytes),
        };
        self.unfolded_answer_bytes = 0;
        let (log, id) = (self.shell.log.clone(), self.id);
        ctx.spawn(async move { log.put_snapshot(id, snapshot).await }.into_actor(self).map(|result, act, ctx| {
            match result {
                Ok(()) => {
                    act.metrics().snapshots_written.inc();
                }
                // A snapshot is a cache; the log stays complete without it.
                Err(error) => tracing::warn!(session = %act.id, %error, "snapshot failed"),
            }
            then(act, ctx);
        }));
    }

    // --- Deadlines and effects ----------------------------------------------------------------------

    /// Arms one timer for the earliest deadline in the state; its firing becomes a `Tick` command.
    /// A hibernated session keeps the timer it had.
    fn rearm(&mut self, ctx: &mut Context<Self>) {
        let Some(awake) = self.awake.as_ref() else { return };
        let deadline = awake.state.next_deadline();
        self.run_effects(ctx);
        if self.timer.as_ref().map(|t| t.0) == deadline {
            return;
        }
        if let Some((_, handle)) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        if let Some(deadline) = deadline {
            // On the session's clock, not the runtime's: a deadline is a time in the domain.
            let due = self.shell.clock.sleep_until(deadline);
            let handle = ctx.spawn(due.into_actor(self).map(|(), act, ctx| {
                act.timer = None;
                // Through the mailbox: a command may be between its decision and its append now.
                ctx.address().do_send(Internal { command: Command::Tick });
            }));
            self.timer = Some((deadline, handle));
        }
    }

    /// Starts the effects the state asks for (see `runtime::effects`); after every change and
    /// after rehydration, so a check interrupted by a restart is asked again.
    fn run_effects(&mut self, ctx: &mut Context<Self>) {
        self.run_chain_effects(ctx);
        self.run_embedded_effects(ctx);
        let Some(check) = self.awake.as_ref().and_then(|a| a.state.siwx.pending_contract_check()) else {
            self.checking = None;
            return;
        };
        if self.checking.as_deref() == Some(check.nonce.as_str()) {
            return;
        }
        let nonce = check.nonce.clone();
        self.checking = Some(nonce.clone());
        tracing::debug!(session = %self.id, seq = self.seq, chain = %check.chain, "checking a contract account's signature");
        let future = match &self.shell.checker {
            Some(checker) => checker.check(check),
            None => super::effects::no_checker(),
        };
        ctx.spawn(future.into_actor(self).map(move |verdict, _act, ctx| {
            ctx.address().do_send(Internal { command: Command::SiwxContractChecked { nonce, verdict } });
        }));
    }

    /// Whether the calls made on a client's behalf (host reads, receipt waits) may be asked now:
    /// once the session knows its client's address, or has a connection (whose address the
    /// gateway may not know). A session just (re)started, woken by no connection (a sign-in token
    /// asked for by a host's backend, a restart), asks them when its client attaches; asked before,
    /// they would count towards no client's share.
    fn asks_for_a_client(&self) -> bool {
        self.client.is_some() || !self.connections.is_empty()
    }

    /// The chain reads the state waits for: each asked of the chain service once; its outcome
    /// comes back through the mailbox as a command (a stale one is ignored by the decision).
    fn run_chain_effects(&mut self, ctx: &mut Context<Self>) {
        let Some(state) = self.awake.as_ref().map(|a| &a.state) else { return };
        let mut wanted: Vec<((&'static str, String), ChainAsk)> = Vec::new();
        if let Some(fetch) = state.balances.pending.clone() {
            wanted.push((("balances", fetch.id.to_string()), ChainAsk::Balances(fetch)));
        }
        if let Some(fetch) = state.activity.pending.clone() {
            wanted.push((("activity", fetch.id.to_string()), ChainAsk::Activity(fetch)));
        }
        // Asked on behalf of a client, so only once the session knows whom for (see `client`).
        let for_a_client = self.asks_for_a_client();
        let waiting_for_a_client =
            !for_a_client && (state.send.awaiting_receipts().next().is_some() || state.host_requests.chain_reads().next().is_some());
        for sent in state.send.awaiting_receipts().filter(|_| for_a_client) {
            let ask = ChainAsk::Receipt(sent.hash.clone(), sent.transfer.clone());
            wanted.push((("receipt", sent.hash.clone()), ask));
        }
        if let Some(send) = state.send.solana.clone() {
            match &send.step {
                SolanaSendStep::Preparing => wanted.push((("solana_prepare", send.id.to_string()), ChainAsk::SolanaPrepare(send))),
                SolanaSendStep::Submitting { message, signed } => {
                    let ask = ChainAsk::SolanaSubmit {
                        id: send.id,
                        network: send.network.clone(),
                        from: send.from.clone(),
                        message: message.clone(),
                        signed: signed.clone(),
                    };
                    wanted.push((("solana_submit", send.id.to_string()), ask));
                }
                SolanaSendStep::Signing { .. } => {}
            }
        }
        for read in state.host_requests.chain_reads().filter(|_| for_a_client) {
            if let Some(network) = read.network.clone() {
                let ask =
                    ChainAsk::HostRead { request_id: read.id.clone(), network, method: read.method.clone(), params: read.params.clone() };
                wanted.push((("host_read", read.id.clone()), ask));
            }
        }
        self.waiting_for_a_client = waiting_for_a_client;
        let keys: std::collections::HashSet<_> = wanted.iter().map(|(k, _)| k.clone()).collect();
        self.chain_in_flight.retain(|key, handle| {
            let still_wanted = keys.contains(key);
            if !still_wanted {
                // Answered (then this is a no-op) or no longer waited for: stop asking.
                ctx.cancel_future(*handle);
            }
            still_wanted
        });
        for (key, ask) in wanted {
            if self.chain_in_flight.contains_key(&key) {
                continue;
            }
            let chain = self.shell.chain.clone();
            let future: std::pin::Pin<Box<dyn std::future::Future<Output = Command> + Send>> = match ask {
                ChainAsk::Balances(fetch) => {
                    let id = fetch.id;
                    Box::pin(async move { Command::BalancesFetched { id, outcome: chain.balances(fetch).await } })
                }
                ChainAsk::Activity(fetch) => {
                    let id = fetch.id;
                    Box::pin(async move { Command::ActivityFetched { id, outcome: chain.activity(fetch).await } })
                }
                ChainAsk::Receipt(hash, transfer) => {
                    let client = self.client;
                    Box::pin(async move { Command::ReceiptObserved { outcome: chain.receipt(hash.clone(), transfer, client).await, hash } })
                }
                ChainAsk::HostRead { request_id, network, method, params } => {
                    let client = self.client;
                    Box::pin(async move {
                        Command::HostReadAnswered { outcome: chain.host_read(network, method, params, client).await, request_id }
                    })
                }
                ChainAsk::SolanaPrepare(send) => {
                    let id = send.id;
                    Box::pin(async move { Command::SolanaSendPrepared { id, outcome: chain.prepare_solana_send(send).await } })
                }
                ChainAsk::SolanaSubmit { id, network, from, message, signed } => Box::pin(async move {
                    Command::SolanaSendSubmitted { id, outcome: chain.submit_solana_send(network, from, message, signed).await }
                }),
            };
            let handle = ctx.spawn(future.into_actor(self).map(|command, _act, ctx| {
                ctx.address().do_send(Internal { command });
            }));
            self.chain_in_flight.insert(key, handle);
        }
    }

    /// The embedded service's requests the state waits for: each asked once per effect id; its
    /// outcome comes back through the mailbox as a runtime command.
    fn run_embedded_effects(&mut self, ctx: &mut Context<Self>) {
        use crate::machines::embedded_wallet::EmbeddedEffect;
        let Some(state) = self.awake.as_ref().map(|a| &a.state) else { return };
        let wanted = state.embedded.pending_effects();
        let host_origin = state.origin.clone();
        let ids: std::collections::HashSet<u64> = wanted.iter().map(|(id, _)| *id).collect();
        self.embedded_in_flight.retain(|id| ids.contains(id));
        for (id, effect) in wanted {
            if !self.embedded_in_flight.insert(id) {
                continue;
            }
            let service = self.shell.embedded.clone();
            let session = self.id;
            // The log names the effect, never the email it is about.
            tracing::debug!(session = %self.id, seq = self.seq, effect = id, "asking the embedded service");
            let future: std::pin::Pin<Box<dyn std::future::Future<Output = Command> + Send>> = match effect {
                EmbeddedEffect::SendLoginOtp { frame_id, email } => service.send_login_otp(session, frame_id, email),
                EmbeddedEffect::StartSocial { frame_id, provider } => {
                    service.start_social(session, frame_id, provider, host_origin.clone())
                }
                EmbeddedEffect::StartFarcaster { frame_id } => service.start_farcaster(session, frame_id),
                EmbeddedEffect::StartEmailUpdate { frame_id, new_email } => service.start_email_update(session, frame_id, new_email),
                EmbeddedEffect::SignOut { frame_id } => Box::pin(async move {
                    service.sign_out(session, frame_id).await;
                    Command::EmbeddedSignOutDone
                }),
            };
            ctx.spawn(future.into_actor(self).map(|command, _act, ctx| {
                ctx.address().do_send(Internal { command });
            }));
        }
    }

    // --- Connections ----------------------------------------------------------------------------

    fn send_to(&mut self, connection: Option<u64>, frame: Outbound) {
        let Some(connection) = connection else { return };
        if let Some(i) = self.connections.iter().position(|c| c.id == connection) {
            self.deliver(i, frame);
        }
    }

    /// Sends to connection `i`; a connection whose channel is full is too far behind and is dropped
    /// (it will resume with `lastSeq`). Returns false when the connection was dropped.
    fn deliver(&mut self, i: usize, frame: Outbound) -> bool {
        match self.connections[i].sender.try_send(frame) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                let link = self.connections.swap_remove(i);
                link.drop_with(close::TOO_SLOW);
                self.metrics().connections_dropped.get_or_create(&super::metrics::ReasonLabel { reason: "too_slow" }).inc();
                tracing::info!(session = %self.id, connection = link.id, "dropped a connection that fell behind");
                false
            }
            Err(TrySendError::Disconnected(_)) => {
                self.connections.swap_remove(i);
                false
            }
        }
    }

    fn broadcast(&mut self, frame: &DiffFrame) {
        let mut i = 0;
        while i < self.connections.len() {
            if self.deliver(i, Outbound::Diff { seq: frame.seq, text: frame.text.clone() }) {
                i += 1;
            }
        }
        self.metrics().diffs_published.inc();
    }

    /// Closes every connection with 4004 (too slow): each client resumes with its `lastSeq` and is
    /// sent what it missed, or the whole state.
    fn drop_connections_to_resume(&mut self) {
        for link in self.connections.drain(..) {
            link.drop_with(close::TOO_SLOW);
        }
    }

    /// Keeps the last diffs for clients that resume. The session's first diff (from seq 0) is not
    /// kept: no client has the state it starts from.
    fn remember_diff(&mut self, frame: DiffFrame) {
        if frame.prev_seq == 0 || self.config().recent_diffs == 0 {
            return;
        }
        while self.recent.len() >= self.config().recent_diffs {
            self.recent.pop_front();
        }
        self.recent.push_back(frame);
    }

    fn welcome(&self, resumed: bool, resume_token: Option<String>) -> Arc<str> {
        let state = match (resumed, self.awake.as_ref()) {
            (true, _) | (false, None) => None,
            (false, Some(awake)) => Some(Box::new(awake.state.clone())),
        };
        let message = ServerMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            session_id: self.id.to_string(),
            resume_token,
            seq: self.seq,
            resumed,
            state,
            state_hash: self.hash.clone(),
        };
        serde_json::to_string(&message).expect("a welcome serializes").into()
    }

    /// Drops every attached connection, telling each to close with `close_code`.
    pub(super) fn drop_connections(&mut self, close_code: u16) {
        for link in self.connections.drain(..) {
            link.drop_with(close_code);
        }
    }

    /// Sends the welcome and `diffs` to a new connection and adds it; falls back to the whole state
    /// when the diffs do not fit its channel (the session must then be awake).
    fn admit(&mut self, link: ConnectionLink, diffs: Option<Vec<DiffFrame>>, token: Option<String>, ctx: &mut Context<Self>) {
        let room = link.capacity.saturating_sub(1);
        let frames: Vec<Outbound> = match diffs {
            Some(diffs) if diffs.len() <= room => std::iter::once(Outbound::Message(self.welcome(true, token)))
                .chain(diffs.into_iter().map(|d| Outbound::Diff { seq: d.seq, text: d.text }))
                .collect(),
            _ => vec![Outbound::Message(self.welcome(false, token))],
        };
        for frame in frames {
            if link.sender.try_send(frame).is_err() {
                return;
            }
        }
        if let Some(handle) = self.passivation.take() {
            ctx.cancel_future(handle);
        }
        if link.client.is_some() {
            self.client = link.client;
        }
        self.connections.push(link);
        // The calls made on a client's behalf that waited for one (`asks_for_a_client`); a session
        // hibernated since is woken for them (nothing else would: host reads have no deadline).
        if self.awake.is_none() && self.waiting_for_a_client {
            ctx.wait(self.wake().map(|_, act, ctx| act.schedule_hibernation(ctx)));
        } else {
            self.run_chain_effects(ctx);
        }
    }

    /// Admits a connection with the whole state, waking the session for it.
    fn admit_with_state(&mut self, link: ConnectionLink, token: Option<String>) -> ResponseActFuture<Self, Result<(), CommandError>> {
        Box::pin(self.wake().map(move |woke, act, ctx| match woke {
            Ok(()) => {
                act.admit(link, None, token, ctx);
                act.schedule_hibernation(ctx);
                Ok(())
            }
            Err(reply) => Err(reply.error.unwrap_or_else(|| internal_error("the session is unavailable"))),
        }))
    }

    /// Admits a resuming connection with the diffs after `last`, rebuilt from the log; with the whole
    /// state if they cannot be.
    fn admit_from_log(
        &mut self,
        link: ConnectionLink,
        last: u64,
        token: Option<String>,
    ) -> ResponseActFuture<Self, Result<(), CommandError>> {
        let (log, id) = (self.shell.log.clone(), self.id);
        Box::pin(async move { diffs_since(log.as_ref(), id, last).await }.into_actor(self).then(move |rebuilt, act, ctx| match rebuilt {
            Ok(Some(diffs)) if diffs.last().map_or(last, |d| d.seq) == act.seq => {
                act.admit(link, Some(diffs), token, ctx);
                ready(Ok(()))
            }
            // Not where a diff ended (or the log moved on meanwhile): the whole state.
            Ok(_) => act.admit_with_state(link, token),
            Err(error) => {
                tracing::warn!(session = %act.id, %error, last, "could not rebuild diffs; sending the whole state");
                act.admit_with_state(link, token)
            }
        }))
    }
}

impl Actor for ModalSession {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(self.config().mailbox_capacity);
        self.metrics().live_sessions.inc();
        // Nothing is handled before the session knows its seq and state.
        ctx.wait(self.wake().map(|_, act, ctx| act.schedule_hibernation(ctx)));
        self.schedule_passivation(ctx);
    }

    fn stopped(&mut self, ctx: &mut Self::Context) {
        if let Some(awake) = self.awake.take() {
            self.shell.interner.release(awake.state, awake.canonical);
        }
        self.metrics().live_sessions.dec();
        if self.hibernated {
            self.metrics().hibernated_sessions.dec();
        }
        // A stop nobody asked for with a code (see `drop_connections`): the state is durable, so
        // the client resumes.
        self.drop_connections(close::INTERNAL);
        if let Some(on_stop) = self.on_stop.take() {
            on_stop(self.id, ctx.address());
        }
    }
}

impl Handler<Execute> for ModalSession {
    type Result = AtomicResponse<Self, CommandReply>;

    fn handle(&mut self, msg: Execute, _: &mut Context<Self>) -> Self::Result {
        let Execute { command_id, command, reply_to, received_at } = msg;
        if let Some(client) = self.connections.iter().find(|c| Some(c.id) == reply_to).and_then(|c| c.client) {
            self.client = Some(client);
        }
        let source = Source::Client { command_id: command_id.clone(), reply_to, received_at };
        if let Some(reason) = self.failed.clone() {
            let reply = self.answer_unremembered(&source, CommandReply::refused(self.seq, internal_error(&reason)));
            return AtomicResponse::new(ready(reply));
        }
        AtomicResponse::new(Box::pin(self.recall(&command_id).then(move |recalled, act, _| match recalled {
            // An answer past this session's seq: its append was reported failed (a timed-out
            // publish, e.g. while a NATS node died) but was stored. The session catches up with the
            // log first, so the client gets the command's diff, not an answer ahead of its state.
            Ok(Some(first)) if first.seq > act.seq => {
                tracing::warn!(session = %act.id, seq = act.seq, answered = first.seq, "a command's answer is past the session; reloading");
                Box::pin(act.catch_up_with_log().map(move |(), act, _| act.repeat_answer(&command_id, reply_to, first)))
            }
            Ok(Some(first)) => ready(act.repeat_answer(&command_id, reply_to, first)),
            Ok(None) => act.wake_and_decide(Command::Client(command), source),
            Err(error) => {
                tracing::warn!(session = %act.id, %error, "could not look up a command's answer");
                ready(act.answer_unremembered(&source, CommandReply::refused(act.seq, storage_unavailable())))
            }
        })))
    }
}

impl Handler<Internal> for ModalSession {
    type Result = AtomicResponse<Self, CommandReply>;

    fn handle(&mut self, msg: Internal, _: &mut Context<Self>) -> Self::Result {
        let source = match msg.command {
            Command::Tick => Source::Timer,
            _ => Source::Effect,
        };
        AtomicResponse::new(self.wake_and_decide(msg.command, source))
    }
}

impl Handler<Deliver> for ModalSession {
    type Result = AtomicResponse<Self, CommandReply>;

    fn handle(&mut self, msg: Deliver, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(self.wake_and_decide(msg.command, Source::Effect))
    }
}

impl Handler<Start> for ModalSession {
    type Result = AtomicResponse<Self, CommandReply>;

    fn handle(&mut self, msg: Start, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(self.wake_and_decide(msg.command, Source::Start))
    }
}

impl Handler<Attach> for ModalSession {
    type Result = AtomicResponse<Self, Result<(), CommandError>>;

    fn handle(&mut self, msg: Attach, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(reason) = &self.failed {
            return AtomicResponse::new(ready(Err(internal_error(reason))));
        }
        let Attach { link, last_seq, new_resume_token } = msg;
        // A connection whose socket is gone but whose link is still here (its detach not handled
        // yet) does not count: its channel is disconnected.
        self.connections.retain(|c| !c.sender.is_disconnected());
        let max = self.config().max_connections;
        if self.connections.len() >= max {
            self.metrics().connections_refused.inc();
            return AtomicResponse::new(ready(Err(CommandError::new(
                RefusalCode::RateLimited,
                format!("the session already has {max} connections; retry when one has closed"),
            ))));
        }
        let (seq, max_resume_events) = (self.seq, self.config().max_resume_events);
        let resumable = |last: u64| last < seq && seq - last <= max_resume_events;
        let result = match last_seq {
            Some(last) if last == self.seq => {
                self.admit(link, Some(vec![]), new_resume_token, ctx);
                ready(Ok(()))
            }
            // Only from where a diff ended: a `lastSeq` inside a decision's events is a state no
            // client was sent (the first diff after it would repeat events the client claims).
            Some(last) if resumable(last) && self.recent.iter().any(|f| f.prev_seq == last) => {
                let diffs: Vec<DiffFrame> = self.recent.iter().filter(|f| f.seq > last).cloned().collect();
                self.admit(link, Some(diffs), new_resume_token, ctx);
                ready(Ok(()))
            }
            Some(last) if resumable(last) => self.admit_from_log(link, last, new_resume_token),
            _ => self.admit_with_state(link, new_resume_token),
        };
        AtomicResponse::new(result)
    }
}

impl Handler<Detach> for ModalSession {
    type Result = ();

    fn handle(&mut self, msg: Detach, ctx: &mut Context<Self>) {
        self.connections.retain(|c| c.id != msg.connection);
        if self.connections.is_empty() {
            self.schedule_passivation(ctx);
        }
    }
}

impl Handler<Inspect> for ModalSession {
    type Result = AtomicResponse<Self, Result<SessionSnapshot, CommandError>>;

    fn handle(&mut self, _: Inspect, _: &mut Context<Self>) -> Self::Result {
        let was_hibernated = self.hibernated;
        AtomicResponse::new(Box::pin(self.wake().map(move |woke, act, ctx| {
            woke.map_err(|reply| reply.error.unwrap_or_else(|| internal_error("the session is unavailable")))?;
            act.schedule_hibernation(ctx);
            let awake = act.awake.as_ref().expect("woken");
            Ok(SessionSnapshot {
                seq: act.seq,
                state: awake.state.clone(),
                state_hash: act.hash.clone(),
                connections: act.connections.len(),
                was_hibernated,
                log_bytes: act.log_bytes,
            })
        })))
    }
}

/// Hibernates the session now (for tests and the memory benchmark: the runtime does it by itself
/// after `hibernate_after`).
#[derive(Message)]
#[rtype(result = "bool")]
pub struct HibernateNow;

impl Handler<HibernateNow> for ModalSession {
    type Result = bool;

    fn handle(&mut self, _: HibernateNow, ctx: &mut Context<Self>) -> bool {
        if let Some(handle) = self.hibernation.take() {
            ctx.cancel_future(handle);
        }
        self.hibernate(ctx);
        self.awake.is_none()
    }
}
