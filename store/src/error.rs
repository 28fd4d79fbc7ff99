use std::path::PathBuf;

use crate::SessionId;

/// Everything the log can refuse or fail with. Nothing in this crate panics on bad data.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Optimistic concurrency: the caller expected the stream to end at `expected`, it ends at `actual`.
    /// Nothing was written.
    #[error("session {session}: expected seq {expected}, but the stream is at {actual}")]
    Conflict { session: SessionId, expected: u64, actual: u64 },

    /// A stored record could not be decoded (or upcast). Names exactly which record.
    #[error("session {session}, seq {seq}: undecodable record: {reason}")]
    Corrupt { session: SessionId, seq: u64, reason: String },

    /// Another process holds the data directory open.
    #[error(
        "the data directory {} is in use by another process (is a gateway running on it? \
         stop it, or use its HTTP API)",
        dir.display()
    )]
    Locked { dir: PathBuf },

    #[error("session {0} does not exist")]
    UnknownSession(SessionId),

    #[error("session {0} already exists")]
    SessionExists(SessionId),

    #[error("invalid append: {0}")]
    InvalidAppend(String),

    /// The log is shutting down or its flusher died; the append's durability is unknown.
    #[error("the event log is closed")]
    Closed,

    #[error("storage error on {}: {source}", dir.display())]
    Io { dir: PathBuf, source: std::io::Error },

    #[error("storage engine error: {0}")]
    Engine(String),
}
