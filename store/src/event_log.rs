use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::Stream;
use serde::{Deserialize, Serialize};

use crate::{Envelope, NewEvent, Payload, SessionId, StoreError};

/// A stream of one session's envelopes, in seq order.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Envelope, StoreError>> + Send + 'static>>;

/// How appends become durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Durability {
    /// Every append resolves only after a flush (fsync) that covers it; flushes are shared between
    /// concurrent appends (group commit). The default.
    #[default]
    Durable,
    /// Appends resolve once written to memory; a background flush runs every `interval_ms`.
    /// A crash loses at most that interval. For tests and load runs that choose it explicitly.
    Buffered { interval_ms: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Active,
    Ended,
}

/// What a caller supplies when a session is created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewSession {
    pub project: String,
    pub created_ms: u64,
    /// Hash of the token that lets a client re-attach. Never the token itself; never exported.
    pub resume_token_hash: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub session: SessionId,
    pub project: String,
    pub status: SessionStatus,
    pub created_ms: u64,
    /// Time of the newest event (or of creation), Unix ms.
    pub last_activity_ms: u64,
    pub latest_seq: u64,
    pub resume_token_hash: Option<String>,
}

/// Filters for [`EventLog::list_sessions`]; `None` matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFilter {
    pub project: Option<String>,
    pub status: Option<SessionStatus>,
    /// Only sessions whose last activity is at or after this time (Unix ms).
    pub active_since_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPage {
    pub sessions: Vec<SessionMeta>,
    /// Pass as `after` to get the next page; `None` when this is the last page.
    pub next: Option<SessionId>,
}

/// A cached fold of a session's events up to `seq`. Snapshots are a cache: deleting all of them never
/// changes any session's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub seq: u64,
    /// Version of the *state's* schema; a snapshot of another version is ignored on read.
    pub schema_version: u32,
    pub time_ms: u64,
    /// The state as JSON text, written once by whoever took the snapshot and stored as it is (as
    /// an event's payload is): no `serde_json::Value` tree on the way in or out.
    pub state: Payload,
    /// The bytes the session had written to its log when the snapshot was taken, as its writer
    /// counted them (for the session runtime: [`NewEvent::log_bytes`] of every event and
    /// [`CommandAnswer::log_bytes`] of every answer; decision 0107). `None`: unknown (a snapshot
    /// stored before this count existed, record format 1). The log stores it and gives it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<u64>,
}

/// Where an append's events were stored: seqs `first_seq ..= last_seq`, that is
/// `expected_seq + 1 ..= expected_seq + n` (an append has at least one event). The caller has the
/// events it appended; the log does not hand them back (that would mean parsing their payloads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendOutcome {
    pub first_seq: u64,
    pub last_seq: u64,
}

impl AppendOutcome {
    /// The outcome of appending `count` events (at least one) after `expected_seq`.
    pub fn after(expected_seq: u64, count: usize) -> Self {
        debug_assert!(count > 0, "an append has at least one event");
        Self { first_seq: expected_seq + 1, last_seq: expected_seq + count as u64 }
    }

    /// The seqs the events were stored at.
    pub fn seqs(&self) -> std::ops::RangeInclusive<u64> {
        self.first_seq..=self.last_seq
    }
}

/// How a session answered a command, remembered so that the same command id sent again gets the
/// same answer and changes nothing, across restarts (see [`EventLog::answer`]). The log stores it
/// and gives it back; it does not interpret it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandAnswer {
    /// The caller's id for the command (1 to 1024 bytes).
    pub command_id: String,
    /// The stream's seq the answer names (for an accepted command that wrote events: its last event).
    pub seq: u64,
    /// `None`: accepted. `Some`: refused, and why.
    pub refusal: Option<AnswerRefusal>,
}

impl CommandAnswer {
    /// What remembering this answer writes, as a session's budget of log bytes counts it
    /// (decision 0107): the answer record ([`crate::layout::answer_record_len`]) and its command id,
    /// not the backend's own framing.
    pub fn log_bytes(&self) -> u64 {
        (crate::layout::answer_record_len(self) + self.command_id.len()) as u64
    }
}

/// Why a command was refused, in the caller's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerRefusal {
    pub code: String,
    pub message: String,
}

/// When sessions are expired. Nothing but expiry ever deletes events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPolicy {
    /// Ended sessions are expired this long after their last activity.
    pub ended_after: Duration,
    /// Sessions of any status with no activity for this long are expired.
    pub idle_after: Duration,
    /// At most this many sessions are expired per batch.
    pub batch_size: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpireReport {
    pub sessions_expired: u64,
    /// The sessions expired, so that whoever holds them open (a live actor, its connections) can
    /// let them go.
    pub expired: Vec<SessionId>,
    pub events_deleted: u64,
    /// True when more sessions were due than the batch allowed.
    pub more_due: bool,
}

/// The event log the rest of the system uses. Implementations must be safe to share between threads
/// and runtimes (actix runs one Tokio runtime per worker thread).
#[async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Record a new session. Durable when it resolves (the caller hands out a resume token next).
    async fn create_session(&self, session: SessionId, new: NewSession) -> Result<SessionMeta, StoreError>;

    /// Append `events` after `expected_seq` (0 for an empty stream). Atomic: all or nothing.
    /// Resolves once the events are durable (per [`Durability`]). A mismatch is
    /// [`StoreError::Conflict`] carrying the actual seq, and writes nothing.
    async fn append(&self, session: SessionId, expected_seq: u64, events: Vec<NewEvent>) -> Result<AppendOutcome, StoreError>;

    /// [`EventLog::append`], and remember `answer` as the reply to the command that decided the
    /// events, in the same atomic write: after a crash both are in the log or neither is, so a
    /// command whose events are durable is always answered the same way again. A mismatch is
    /// [`StoreError::Conflict`] and writes neither.
    async fn append_answered(
        &self,
        session: SessionId,
        expected_seq: u64,
        events: Vec<NewEvent>,
        answer: CommandAnswer,
    ) -> Result<AppendOutcome, StoreError>;

    /// Remember the answer to a command that wrote no event (it was refused, or changed nothing).
    /// Resolves once the answer is durable (per [`Durability`]). The session must exist.
    async fn remember_answer(&self, session: SessionId, answer: CommandAnswer) -> Result<(), StoreError>;

    /// The answer remembered for `command_id` in `session`, if any. Answers are kept as long as the
    /// session (expiry removes them with its events). Never returns an answer a crash could take back.
    async fn answer(&self, session: SessionId, command_id: &str) -> Result<Option<CommandAnswer>, StoreError>;

    /// Events with `from_seq <= seq <= to_seq` (inclusive; `to_seq` `None` means to the end),
    /// upcast to the current schema.
    async fn read(&self, session: SessionId, from_seq: u64, to_seq: Option<u64>) -> Result<Vec<Envelope>, StoreError>;

    /// All events from `from_seq` to the end as it is now, read lazily (for long replays).
    fn stream(&self, session: SessionId, from_seq: u64) -> EventStream;

    /// Events from `from_seq`, then every event committed (durably) afterwards, until the session is
    /// expired or the log is closed. For following a live session.
    fn follow(&self, session: SessionId, from_seq: u64) -> EventStream;

    /// The last seq of the session's stream (0 when empty).
    async fn latest_seq(&self, session: SessionId) -> Result<u64, StoreError>;

    async fn session_meta(&self, session: SessionId) -> Result<Option<SessionMeta>, StoreError>;

    async fn set_status(&self, session: SessionId, status: SessionStatus) -> Result<(), StoreError>;

    /// Sessions in id order, starting after `after`, at most `limit` of them.
    async fn list_sessions(&self, filter: &SessionFilter, after: Option<SessionId>, limit: usize) -> Result<SessionPage, StoreError>;

    async fn put_snapshot(&self, session: SessionId, snapshot: Snapshot) -> Result<(), StoreError>;

    /// The session's snapshot if it was written with `schema_version`; others are ignored.
    async fn get_snapshot(&self, session: SessionId, schema_version: u32) -> Result<Option<Snapshot>, StoreError>;

    /// Delete one session's snapshots, or every snapshot when `session` is `None`.
    async fn delete_snapshots(&self, session: Option<SessionId>) -> Result<(), StoreError>;

    /// Expire one batch of sessions that the policy says are due at `now_ms`: their events,
    /// answers, snapshots and metadata.
    async fn expire(&self, policy: &RetentionPolicy, now_ms: u64) -> Result<ExpireReport, StoreError>;

    /// Bytes the log occupies on disk.
    async fn disk_usage(&self) -> Result<u64, StoreError>;

    /// Make everything appended so far durable (used at shutdown, and by buffered mode's callers).
    async fn flush(&self) -> Result<(), StoreError>;

    /// A graceful stop: make everything durable and leave on disk what closing the log leaves (the
    /// segment log's index checkpoint, so the next open need not scan the whole log), even while
    /// other handles still hold the log. It stays usable; dropping the last handle still closes it.
    /// The default flushes.
    async fn close(&self) -> Result<(), StoreError> {
        self.flush().await
    }

    /// Counters and histograms for a metrics endpoint; `None` for a backend that keeps none.
    fn metrics(&self) -> Option<crate::StoreMetrics> {
        None
    }

    /// Why the log accepts no more writes, once a write or flush has failed; `None` while it is
    /// healthy. A failed log stays failed: the process must restart and reopen it (decision 0102).
    fn failure(&self) -> Option<String> {
        None
    }

    /// Resolves with the reason once the log fails; never, while it stays healthy.
    async fn failed(&self) -> String {
        std::future::pending().await
    }
}
