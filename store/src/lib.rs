//! The event log: every modal session is the fold of its events, so this crate is the product's memory.
//!
//! The rest of the system talks to the [`EventLog`] trait only; the sled backend ([`SledEventLog`])
//! is the embedded default, the segment log ([`SegmentEventLog`], decision 0105) the other local one
//! ([`open_local`] picks between them and refuses a directory the other wrote). This crate knows nothing of the modal's domain: payloads are opaque JSON,
//! and schema upgrades are supplied by the caller as an [`Upcaster`].

pub mod bench;
mod config;
#[cfg(feature = "contract")]
pub mod contract;
mod envelope;
mod error;
mod event_log;
mod histogram;
pub mod layout;
mod local;
pub mod migrate;
mod retention;
mod segment_log;
mod sled_log;
mod upcast;

pub use config::StoreConfig;
pub use envelope::{Envelope, NewEvent, Payload, SessionId, SessionIdParseError};
pub use error::StoreError;
pub use event_log::{
    AnswerRefusal, AppendOutcome, CommandAnswer, Durability, EventLog, EventStream, ExpireReport, NewSession, RetentionPolicy,
    SessionFilter, SessionMeta, SessionPage, SessionStatus, Snapshot,
};
pub use histogram::HistogramSnapshot;
pub use local::{LocalBackend, open_existing, open_local};
pub use retention::{RetentionHandle, RetentionTotals, run_retention_once, spawn_retention};
pub use segment_log::{CompactionStats, SegmentEventLog};
pub use sled_log::{SledEventLog, StoreMetrics, StoreStats};
pub use upcast::{NoUpcasting, Upcaster};

/// A segment-log frame around `records`, its length and checksum filled in as the writer fills them:
/// for the fuzz target of recovery (`tools/fuzz`), whose frames hold arbitrary records but pass the
/// checksum, so that what it explores is the records' decoding, not the checksum's refusal.
#[doc(hidden)]
pub fn segment_frame(records: &[u8]) -> Vec<u8> {
    segment_log::sealed_frame(records)
}
