//! The event log: every modal session is the fold of its events, so this crate is the product's memory.
//!
//! The rest of the system talks to the [`EventLog`] trait only; the sled backend ([`SledEventLog`])
//! is the embedded default. This crate knows nothing of the modal's domain: payloads are opaque JSON,
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
mod retention;
mod sled_log;
mod upcast;

pub use config::StoreConfig;
pub use envelope::{Envelope, NewEvent, SessionId, SessionIdParseError};
pub use error::StoreError;
pub use event_log::{
    AnswerRefusal, AppendOutcome, CommandAnswer, Durability, EventLog, EventStream, ExpireReport, NewSession, RetentionPolicy,
    SessionFilter, SessionMeta, SessionPage, SessionStatus, Snapshot,
};
pub use histogram::HistogramSnapshot;
pub use retention::{RetentionHandle, RetentionTotals, run_retention_once, spawn_retention};
pub use sled_log::{SledEventLog, StoreMetrics, StoreStats};
pub use upcast::{NoUpcasting, Upcaster};
