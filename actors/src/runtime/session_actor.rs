//! `ModalSession`: the actor that owns one session. It rehydrates from snapshot + tail, decides each
//! command, appends the events with the expected seq, evolves, and only then publishes one diff to
//! every attached connection. Commands are handled one at a time (the mailbox waits for the append).

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::mpsc::error::TrySendError;
use vestibule_store::{AppendOutcome, EventLog, SessionId, Snapshot, StoreError};

use super::frames::{build_diff, diffs_since, fold_log, to_new_event, DiffFrame};
use super::{Clock, ConnectionLink, Outbound, RuntimeConfig, RuntimeMetrics};
use crate::decider::Ctx;
use crate::protocol::{close, CommandStatus, ServerMessage, WireEvent, PROTOCOL_VERSION};
use super::effects::ContractSignatureChecker;
use crate::session::{self, wire, ClientCommand, Command, CommandError, Event, RefusalCode, SessionState, STATE_SCHEMA_VERSION};

/// The answer to a command, as the caller of [`Execute`] receives it (connections get the same as a
/// `result` frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReply {
    pub status: CommandStatus,
    pub seq: u64,
    pub error: Option<CommandError>,
}

impl CommandReply {
    fn refused(seq: u64, error: CommandError) -> Self {
        Self { status: CommandStatus::Refused, seq, error: Some(error) }
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
}

fn internal_error(message: &str) -> CommandError {
    CommandError::new(RefusalCode::Internal, message)
}

/// A decision's resulting state, computed before its events are appended.
struct Committed {
    state: SessionState,
    json: serde_json::Value,
    hash: String,
}

/// Runs a command from a client. The result goes to the connection `reply_to` (before the diff) and
/// is returned to the sender.
#[derive(Message)]
#[rtype(result = "CommandReply")]
pub struct Execute {
    pub command_id: String,
    pub command: ClientCommand,
    pub reply_to: Option<u64>,
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
}

pub struct ModalSession {
    id: SessionId,
    log: Arc<dyn EventLog>,
    clock: Arc<dyn Clock>,
    config: Arc<RuntimeConfig>,
    metrics: Arc<RuntimeMetrics>,
    on_stop: Option<Box<dyn FnOnce(SessionId, Addr<ModalSession>) + Send>>,
    state: SessionState,
    json: serde_json::Value,
    hash: String,
    seq: u64,
    /// Set when the log could not be folded: the session refuses everything until restarted.
    failed: Option<String>,
    connections: Vec<ConnectionLink>,
    recent: VecDeque<DiffFrame>,
    results: HashMap<String, CommandReply>,
    result_order: VecDeque<String>,
    timer: Option<(u64, SpawnHandle)>,
    passivation: Option<SpawnHandle>,
    /// The nonce the next sign-in message will carry (see `Ctx::nonce`); replaced once used.
    nonce: String,
    checker: Option<Arc<dyn ContractSignatureChecker>>,
    /// The nonce of the contract check in flight, so a check is asked once.
    checking: Option<String>,
    last_snapshot_seq: u64,
}

impl ModalSession {
    pub(crate) fn new(
        id: SessionId,
        log: Arc<dyn EventLog>,
        clock: Arc<dyn Clock>,
        config: Arc<RuntimeConfig>,
        metrics: Arc<RuntimeMetrics>,
        on_stop: Box<dyn FnOnce(SessionId, Addr<ModalSession>) + Send>,
    ) -> Self {
        let state = SessionState::default();
        let json = wire::to_value(&state);
        let hash = wire::state_hash(&json);
        Self {
            id,
            log,
            clock,
            config,
            metrics,
            on_stop: Some(on_stop),
            state,
            json,
            hash,
            seq: 0,
            failed: None,
            connections: Vec::new(),
            recent: VecDeque::new(),
            results: HashMap::new(),
            result_order: VecDeque::new(),
            timer: None,
            passivation: None,
            nonce: crate::siwx::generate_nonce().as_str().to_string(),
            checker: None,
            checking: None,
            last_snapshot_seq: 0,
        }
    }

    pub(crate) fn with_checker(mut self, checker: Option<Arc<dyn ContractSignatureChecker>>) -> Self {
        self.checker = checker;
        self
    }

    /// Starts the effects the state asks for (see `runtime::effects`); after every change and
    /// after rehydration, so a check interrupted by a restart is asked again.
    fn run_effects(&mut self, ctx: &mut Context<Self>) {
        let Some(check) = self.state.siwx.pending_contract_check() else {
            self.checking = None;
            return;
        };
        if self.checking.as_deref() == Some(check.nonce.as_str()) {
            return;
        }
        let nonce = check.nonce.clone();
        self.checking = Some(nonce.clone());
        tracing::debug!(session = %self.id, seq = self.seq, chain = %check.chain, "checking a contract account's signature");
        let future = match &self.checker {
            Some(checker) => checker.check(check),
            None => super::effects::no_checker(),
        };
        ctx.spawn(future.into_actor(self).map(move |verdict, _act, ctx| {
            ctx.address().do_send(Internal { command: Command::SiwxContractChecked { nonce, verdict } });
        }));
    }

    fn remember(&mut self, command_id: &str, reply: &CommandReply) {
        if self.results.insert(command_id.to_string(), reply.clone()).is_none() {
            self.result_order.push_back(command_id.to_string());
        }
        while self.result_order.len() > self.config.remembered_commands {
            if let Some(old) = self.result_order.pop_front() {
                self.results.remove(&old);
            }
        }
    }

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
                self.metrics.connections_dropped.get_or_create(&super::metrics::ReasonLabel { reason: "too_slow" }).inc();
                tracing::info!(session = %self.id, connection = link.id, "dropped a connection that fell behind");
                false
            }
            Err(TrySendError::Closed(_)) => {
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
        self.metrics.diffs_published.inc();
    }

    /// Decides `command`; if it yields events, appends them and publishes the diff. The future holds
    /// the mailbox until the append is durable, so commands are applied in order.
    fn run(&mut self, command: Command, correlation: String, reply_to: Option<u64>) -> ResponseActFuture<Self, CommandReply> {
        let client_command = matches!(command, Command::Client(_));
        if let Some(reason) = &self.failed {
            let reply = CommandReply::refused(self.seq, internal_error(reason));
            return Box::pin(actix::fut::ready(reply));
        }
        if client_command {
            if let Some(previous) = self.results.get(&correlation).cloned() {
                self.metrics.command("duplicate");
                self.send_to(reply_to, Outbound::Message(previous.to_frame(&correlation)));
                return Box::pin(actix::fut::ready(previous));
            }
        }
        let now = self.clock.now_ms();
        let command_type = command.type_name();
        let decided = catch_unwind(AssertUnwindSafe(|| {
            session::decide(&self.state, command, &Ctx { now_ms: now, options: &self.state.options, nonce: &self.nonce })
        }));
        let events = match decided {
            Err(_) => {
                tracing::error!(session = %self.id, seq = self.seq, command = command_type, "a decision panicked; the command is refused");
                let reply = CommandReply::refused(self.seq, internal_error("the command could not be decided"));
                self.metrics.command("failed");
                return Box::pin(actix::fut::ready(self.answer(&correlation, reply_to, client_command, reply)));
            }
            Ok(Err(refusal)) => {
                tracing::debug!(session = %self.id, seq = self.seq, command_id = %correlation, command = command_type, code = refusal.code().as_str(), "refused");
                self.metrics.command("refused");
                let reply = CommandReply::refused(self.seq, refusal.to_wire());
                return Box::pin(actix::fut::ready(self.answer(&correlation, reply_to, client_command, reply)));
            }
            Ok(Ok(events)) if events.is_empty() => {
                self.metrics.command("accepted");
                let reply = CommandReply { status: CommandStatus::Accepted, seq: self.seq, error: None };
                return Box::pin(actix::fut::ready(self.answer(&correlation, reply_to, client_command, reply)));
            }
            Ok(Ok(events)) => events,
        };
        if events.iter().any(|e| matches!(e, Event::SiwxChallengeIssued { challenge } if challenge.nonce == self.nonce)) {
            // Drawn now, not when the append succeeds: a nonce is never offered twice, even if
            // this decision is refused by the store.
            self.nonce = crate::siwx::generate_nonce().as_str().to_string();
        }
        // Evolve before appending: the new state's hash is recorded with the events, so a replay can
        // prove it reaches the states clients were sent. Nothing changes here until the append is durable.
        let evolved = catch_unwind(AssertUnwindSafe(|| events.iter().fold(self.state.clone(), session::evolve)));
        let Ok(next) = evolved else {
            tracing::error!(session = %self.id, seq = self.seq, command = command_type, "evolving a decision panicked; the command is refused");
            self.metrics.command("failed");
            let reply = CommandReply::refused(self.seq, internal_error("the command could not be applied"));
            return Box::pin(actix::fut::ready(self.answer(&correlation, reply_to, client_command, reply)));
        };
        let next_json = wire::to_value(&next);
        let next_hash = wire::state_hash(&next_json);
        let last = events.len() - 1;
        let new_events = events
            .iter()
            .enumerate()
            .map(|(i, e)| to_new_event(e, now, &correlation, (i == last).then(|| next_hash.clone())))
            .collect();
        let log = self.log.clone();
        let (id, expected) = (self.id, self.seq);
        let started = Instant::now();
        Box::pin(async move { log.append(id, expected, new_events).await }.into_actor(self).map(
            move |result, act, ctx| {
                act.metrics.append_seconds.observe(started.elapsed().as_secs_f64());
                let reply = match result {
                    Ok(outcome) => act.apply(events, outcome, Committed { state: next, json: next_json, hash: next_hash }, &correlation, reply_to, client_command, ctx),
                    Err(error) => {
                        let reply = act.append_failed(error, ctx);
                        // The client must hear about it (it would otherwise wait for a result
                        // forever), but the refusal is not remembered: it is transient, and a retry
                        // with the same command id must run the command again.
                        if client_command {
                            act.send_to(reply_to, Outbound::Message(reply.to_frame(&correlation)));
                        }
                        reply
                    }
                };
                act.rearm(ctx);
                reply
            },
        ))
    }

    fn answer(&mut self, correlation: &str, reply_to: Option<u64>, client_command: bool, reply: CommandReply) -> CommandReply {
        if client_command {
            self.remember(correlation, &reply);
            self.send_to(reply_to, Outbound::Message(reply.to_frame(correlation)));
        }
        reply
    }

    /// Makes a durable decision current and publishes it: the result to the sender, then one diff to
    /// every connection.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        events: Vec<Event>,
        outcome: AppendOutcome,
        next: Committed,
        correlation: &str,
        reply_to: Option<u64>,
        client_command: bool,
        ctx: &mut Context<Self>,
    ) -> CommandReply {
        let before = std::mem::replace(&mut self.json, next.json);
        self.state = next.state;
        self.hash = next.hash;
        let wire_events: Vec<WireEvent> = outcome
            .envelopes
            .iter()
            .zip(events)
            .map(|(envelope, event)| WireEvent { seq: envelope.seq, time_ms: envelope.time_ms, correlation_id: envelope.correlation_id.clone(), event })
            .collect();
        let prev_seq = self.seq;
        self.seq = outcome.last_seq().unwrap_or(self.seq);
        self.metrics.events_appended.inc_by(wire_events.len() as u64);
        self.metrics.command("accepted");
        let frame = build_diff(prev_seq, wire_events, &before, &self.json, self.hash.clone());
        let reply = CommandReply { status: CommandStatus::Accepted, seq: self.seq, error: None };
        self.answer(correlation, reply_to, client_command, reply.clone());
        self.broadcast(&frame);
        self.recent.push_back(frame);
        while self.recent.len() > self.config.recent_diffs {
            self.recent.pop_front();
        }
        self.maybe_snapshot(ctx);
        if self.connections.is_empty() {
            self.schedule_passivation(ctx);
        }
        reply
    }

    fn append_failed(&mut self, error: StoreError, ctx: &mut Context<Self>) -> CommandReply {
        match error {
            StoreError::Conflict { actual, .. } => {
                // Another writer moved the stream: reload it, and let the client retry.
                tracing::warn!(session = %self.id, seq = self.seq, actual, "append conflict; reloading the session");
                self.reload(ctx);
                self.metrics.command("conflict");
                CommandReply::refused(self.seq, CommandError::new(RefusalCode::Conflict, "the session changed; retry"))
            }
            error => {
                tracing::error!(session = %self.id, seq = self.seq, %error, "append failed");
                self.metrics.command("failed");
                CommandReply::refused(self.seq, CommandError::new(RefusalCode::StorageUnavailable, "the event log is unavailable; retry"))
            }
        }
    }

    fn reload(&mut self, ctx: &mut Context<Self>) {
        let log = self.log.clone();
        let id = self.id;
        // Enough of the tail to remember the last commands' results (a command has a few events).
        let tail_len = self.config.remembered_commands as u64 * 4;
        ctx.wait(
            async move {
                let (state, seq) = fold_log(log.as_ref(), id, None).await?;
                let tail = log.read(id, seq.saturating_sub(tail_len) + 1, None).await?;
                Ok::<_, StoreError>((state, seq, tail))
            }
            .into_actor(self)
            .map(|result, act, ctx| match result {
                Ok((state, seq, tail)) => {
                    act.json = wire::to_value(&state);
                    act.hash = wire::state_hash(&act.json);
                    act.state = state;
                    act.seq = seq;
                    act.last_snapshot_seq = seq;
                    act.recent.clear();
                    // Commands whose events are in the log were accepted: a retry gets that answer.
                    let mut accepted: Vec<(String, u64)> = Vec::new();
                    for e in tail {
                        if let Some(c) = e.correlation_id.filter(|c| !c.contains(':')) {
                            match accepted.last_mut() {
                                Some((last, s)) if *last == c => *s = e.seq,
                                _ => accepted.push((c, e.seq)),
                            }
                        }
                    }
                    for (command_id, seq) in accepted {
                        act.remember(&command_id, &CommandReply { status: CommandStatus::Accepted, seq, error: None });
                    }
                    act.rearm(ctx);
                }
                Err(error) => {
                    tracing::error!(session = %act.id, %error, "the session's log cannot be read");
                    act.failed = Some(format!("the session's log cannot be read: {error}"));
                }
            }),
        );
    }

    fn maybe_snapshot(&mut self, ctx: &mut Context<Self>) {
        if self.seq < self.last_snapshot_seq + self.config.snapshot_every {
            return;
        }
        self.last_snapshot_seq = self.seq;
        let snapshot = Snapshot { seq: self.seq, schema_version: STATE_SCHEMA_VERSION, time_ms: self.clock.now_ms(), state: self.json.clone() };
        let log = self.log.clone();
        let id = self.id;
        ctx.spawn(async move { log.put_snapshot(id, snapshot).await }.into_actor(self).map(|result, act, _| match result {
            Ok(()) => {
                act.metrics.snapshots_written.inc();
            }
            // A snapshot is a cache; the log stays complete without it.
            Err(error) => tracing::warn!(session = %act.id, %error, "snapshot failed"),
        }));
    }

    /// Arms one timer for the earliest deadline in the state; its firing becomes a `Tick` command.
    fn rearm(&mut self, ctx: &mut Context<Self>) {
        self.run_effects(ctx);
        let deadline = self.state.next_deadline();
        if self.timer.as_ref().map(|t| t.0) == deadline {
            return;
        }
        if let Some((_, handle)) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        if let Some(deadline) = deadline {
            let delay = deadline.saturating_sub(self.clock.now_ms());
            let handle = ctx.run_later(Duration::from_millis(delay), |act, ctx| {
                act.timer = None;
                // Through the mailbox: a command may be between its decision and its append now.
                ctx.address().do_send(Internal { command: Command::Tick });
            });
            self.timer = Some((deadline, handle));
        }
    }

    fn schedule_passivation(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.passivation.take() {
            ctx.cancel_future(handle);
        }
        self.passivation = Some(ctx.run_later(self.config.passivate_after, |act, ctx| {
            act.passivation = None;
            if act.connections.is_empty() {
                tracing::debug!(session = %act.id, seq = act.seq, "passivating an idle session");
                ctx.stop();
            }
        }));
    }

    fn welcome(&self, resumed: bool, resume_token: Option<String>) -> Arc<str> {
        let message = ServerMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            session_id: self.id.to_string(),
            resume_token,
            seq: self.seq,
            resumed,
            state: (!resumed).then(|| Box::new(self.state.clone())),
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
    /// when the diffs do not fit its channel.
    fn admit(&mut self, link: ConnectionLink, diffs: Option<Vec<DiffFrame>>, token: Option<String>, ctx: &mut Context<Self>) {
        let room = link.sender.max_capacity().saturating_sub(1);
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
        self.connections.push(link);
    }
}

impl Actor for ModalSession {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(self.config.mailbox_capacity);
        self.metrics.live_sessions.inc();
        self.reload(ctx);
        self.schedule_passivation(ctx);
    }

    fn stopped(&mut self, ctx: &mut Self::Context) {
        self.metrics.live_sessions.dec();
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
        AtomicResponse::new(self.run(Command::Client(msg.command), msg.command_id, msg.reply_to))
    }
}

/// A command the session gives itself: a deadline that fell due, or an effect's outcome. It goes
/// through the mailbox like a client's command, so it is decided only when no other decision is
/// between deciding and being durable (two decisions from the same seq would conflict).
#[derive(Message)]
#[rtype(result = "CommandReply")]
struct Internal {
    command: Command,
}

impl Handler<Internal> for ModalSession {
    type Result = AtomicResponse<Self, CommandReply>;

    fn handle(&mut self, msg: Internal, _: &mut Context<Self>) -> Self::Result {
        let correlation = match &msg.command {
            Command::Tick => format!("timer:{}", self.seq + 1),
            _ => format!("effect:{}", self.seq + 1),
        };
        AtomicResponse::new(Box::pin(self.run(msg.command, correlation, None).map(|reply, act, ctx| {
            act.rearm(ctx);
            reply
        })))
    }
}

impl Handler<Start> for ModalSession {
    type Result = AtomicResponse<Self, CommandReply>;

    fn handle(&mut self, msg: Start, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(self.run(msg.command, "session:start".into(), None))
    }
}

impl Handler<Attach> for ModalSession {
    type Result = AtomicResponse<Self, Result<(), CommandError>>;

    fn handle(&mut self, msg: Attach, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(reason) = &self.failed {
            let error = internal_error(reason);
            return AtomicResponse::new(Box::pin(actix::fut::ready(Err(error))));
        }
        let Attach { link, last_seq, new_resume_token } = msg;
        let ready = |r| AtomicResponse::new(Box::pin(actix::fut::ready(r)));
        match last_seq {
            Some(last) if last == self.seq => {
                self.admit(link, Some(vec![]), new_resume_token, ctx);
                ready(Ok(()))
            }
            Some(last) if last < self.seq && self.seq - last <= self.config.max_resume_events => {
                if self.recent.front().is_some_and(|f| f.prev_seq <= last) {
                    let diffs: Vec<DiffFrame> = self.recent.iter().filter(|f| f.seq > last).cloned().collect();
                    self.admit(link, Some(diffs), new_resume_token, ctx);
                    return ready(Ok(()));
                }
                let log = self.log.clone();
                let id = self.id;
                AtomicResponse::new(Box::pin(async move { diffs_since(log.as_ref(), id, last).await }.into_actor(self).map(
                    move |result, act, ctx| {
                        match result {
                            Ok(diffs) if diffs.last().map_or(last, |d| d.seq) == act.seq => act.admit(link, Some(diffs), new_resume_token, ctx),
                            Ok(_) => act.admit(link, None, new_resume_token, ctx),
                            Err(error) => {
                                tracing::warn!(session = %act.id, %error, last, "could not rebuild diffs; sending the whole state");
                                act.admit(link, None, new_resume_token, ctx);
                            }
                        }
                        Ok(())
                    },
                )))
            }
            _ => {
                self.admit(link, None, new_resume_token, ctx);
                ready(Ok(()))
            }
        }
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
    type Result = Result<SessionSnapshot, CommandError>;

    fn handle(&mut self, _: Inspect, _: &mut Context<Self>) -> Self::Result {
        if let Some(reason) = &self.failed {
            return Err(internal_error(reason));
        }
        Ok(SessionSnapshot { seq: self.seq, state: self.state.clone(), state_hash: self.hash.clone(), connections: self.connections.len() })
    }
}
