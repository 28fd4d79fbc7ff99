use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::Durability;

/// Configuration of [`crate::SledEventLog`] and [`crate::SegmentEventLog`] for a program that uses
/// this crate as a library; deserializable, e.g. (JSON):
///
/// ```json
/// { "path": "data/events", "durability": { "mode": "buffered", "interval_ms": 100 } }
/// ```
///
/// Every field but `path` has a default. The gateway's `[store]` section is not this type: it has
/// its own keys (`durability = "buffered"`, `flush_interval = "100ms"`, `[store.segments]`), shown in
/// `gateway/vestibule.example.toml`, and builds this from them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// The data directory (created if missing). One process at a time may hold it open.
    pub path: PathBuf,
    /// `Durable` (the default): appends resolve after the fsync that covers them.
    pub durability: Durability,
    /// Memory sled may use for its page cache, in bytes.
    pub cache_capacity_bytes: u64,
    /// Largest encoded event record accepted by `append`, in bytes (larger is `InvalidAppend`).
    pub max_event_bytes: usize,
    /// Most queued operations folded into one group commit (one write batch, one flush).
    pub max_batch_ops: usize,
    /// Operations that may wait for the writer before callers of `append` wait to enqueue.
    pub queue_capacity: usize,
    /// Commit notifications kept for followers; a follower further behind re-reads from the log.
    pub follow_buffer: usize,
    /// How long `open` waits for another holder of the directory to let go before it returns
    /// `StoreError::Locked`. 0 fails at once. (sled releases its file lock shortly after the last
    /// handle is dropped, not at the drop itself, so tests that reopen in-process set this.)
    pub lock_wait_ms: u64,
    /// Size of each segment file of the segment log ([`crate::SegmentEventLog`]), preallocated
    /// when it is created; 64 KiB to 1 GiB. The sled backend ignores it.
    pub segment_bytes: u64,
    /// The segment log writes an index checkpoint every this many bytes of log (and when it is
    /// closed), so that opening scans only what came after it. 0: only when closed. The sled
    /// backend ignores it.
    pub checkpoint_bytes: u64,
    /// The segment log compacts its oldest segment (copies its live records to the head of the
    /// log, then deletes it) once at most this percentage of it is live. 0: never. The sled
    /// backend ignores it.
    pub compact_below_percent: u32,
    /// Bytes of a segment one compaction step reads between two group commits (whole frames,
    /// at least one). The sled backend ignores it.
    pub compact_step_bytes: u64,
    /// The sled backend opens a directory only with at least this much free on its disk, plus
    /// 1/32 of its `db` file: sled recovers its log in place when it opens, and a recovery cut short
    /// by a full disk left the directory unreadable for good (an outside review). The segment log
    /// ignores it (its recovery fails cleanly on a full disk).
    pub min_free_bytes_to_open: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            path: PathBuf::from("data/events"),
            durability: Durability::Durable,
            cache_capacity_bytes: 256 * 1024 * 1024,
            max_event_bytes: 256 * 1024,
            max_batch_ops: 4096,
            queue_capacity: 65_536,
            follow_buffer: 1024,
            lock_wait_ms: 0,
            segment_bytes: 64 * 1024 * 1024,
            checkpoint_bytes: 64 * 1024 * 1024,
            compact_below_percent: 25,
            compact_step_bytes: 1024 * 1024,
            min_free_bytes_to_open: 64 * 1024 * 1024,
        }
    }
}

impl StoreConfig {
    /// The defaults, at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), ..Self::default() }
    }

    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    pub fn with_cache_capacity_bytes(mut self, bytes: u64) -> Self {
        self.cache_capacity_bytes = bytes;
        self
    }

    pub fn with_lock_wait_ms(mut self, ms: u64) -> Self {
        self.lock_wait_ms = ms;
        self
    }

    pub fn with_segment_bytes(mut self, bytes: u64) -> Self {
        self.segment_bytes = bytes;
        self
    }

    pub fn with_compaction(mut self, below_percent: u32, step_bytes: u64) -> Self {
        self.compact_below_percent = below_percent;
        self.compact_step_bytes = step_bytes;
        self
    }

    pub fn with_checkpoint_bytes(mut self, bytes: u64) -> Self {
        self.checkpoint_bytes = bytes;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deserializes_from_partial_json_with_defaults() {
        let c: StoreConfig =
            serde_json::from_str(r#"{"path": "/var/lib/vestibule", "durability": {"mode": "buffered", "interval_ms": 50}}"#).unwrap();
        assert_eq!(c.path, PathBuf::from("/var/lib/vestibule"));
        assert_eq!(c.durability, Durability::Buffered { interval_ms: 50 });
        assert_eq!(c.max_batch_ops, StoreConfig::default().max_batch_ops);
        let d: StoreConfig = serde_json::from_str(r#"{"path": "x"}"#).unwrap();
        assert_eq!(d.durability, Durability::Durable);
        assert!(serde_json::from_str::<StoreConfig>(r#"{"pathh": "x"}"#).is_err());
    }
}
