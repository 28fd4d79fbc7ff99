//! The free space of the disk the event log is on. Below `[limits] min_free_disk_bytes` the gateway
//! takes no more writes from clients: new sessions and clients' commands are refused (retry later)
//! and `/healthz` says `disk_low`, before a full disk fails the store (which decision 0102 answers
//! with a restart). Sessions' own deadlines and effects' outcomes are still written: they follow
//! from what visitors already did, and the margin is for them.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use vestibule_actors::runtime::{ClientWriteShares, WriteRefusal};

use crate::limits::ClientLogShares;

/// How often the free space is read.
pub const CHECK_EVERY: Duration = Duration::from_secs(5);

pub struct DiskWatch {
    dir: PathBuf,
    min_free: u64,
    low: AtomicBool,
}

impl DiskWatch {
    /// Watches the disk of `dir`; `min_free` 0 watches nothing.
    pub fn new(dir: PathBuf, min_free: u64) -> Self {
        Self { dir, min_free, low: AtomicBool::new(false) }
    }

    /// Whether the disk had less than the minimum free at the last check.
    pub fn is_low(&self) -> bool {
        self.low.load(Ordering::Relaxed)
    }

    /// Reads the free space (what an unprivileged writer may use) and returns whether it is low.
    /// A failed read keeps the last verdict: the store reports its own failures.
    pub fn check(&self) -> bool {
        if self.min_free == 0 {
            return false;
        }
        match rustix::fs::statvfs(&self.dir) {
            Ok(stat) => {
                let free = stat.f_bavail.saturating_mul(stat.f_frsize);
                let low = free < self.min_free;
                if low != self.low.swap(low, Ordering::Relaxed) {
                    if low {
                        tracing::error!(
                            free,
                            min_free = self.min_free,
                            "the event log's disk is nearly full: new sessions and clients' commands are refused"
                        );
                    } else {
                        tracing::warn!(free, min_free = self.min_free, "the event log's disk has room again");
                    }
                }
                low
            }
            Err(error) => {
                tracing::warn!(%error, dir = %self.dir.display(), "the free space of the event log's disk could not be read");
                self.is_low()
            }
        }
    }
}

/// What the gateway lets clients write: their address's share, and the disk's room.
pub struct ClientWrites {
    pub shares: ClientLogShares,
    pub disk: Arc<DiskWatch>,
}

impl ClientWriteShares for ClientWrites {
    fn refusal(&self, client: Option<IpAddr>) -> Option<WriteRefusal> {
        if self.disk.is_low() {
            return Some(WriteRefusal::DiskLow);
        }
        client.filter(|c| !self.shares.may_write_at(*c, Instant::now())).map(|_| WriteRefusal::ClientShare)
    }

    fn wrote(&self, client: IpAddr, bytes: u64) {
        self.shares.wrote_at(client, bytes, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_minimum_above_what_the_disk_has_then_it_is_low_and_below_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let watch = DiskWatch::new(dir.path().to_path_buf(), u64::MAX);
        assert!(watch.check() && watch.is_low());
        let watch = DiskWatch::new(dir.path().to_path_buf(), 1);
        assert!(!watch.check() && !watch.is_low(), "a disk with a byte free");
        let off = DiskWatch::new(dir.path().to_path_buf(), 0);
        assert!(!off.check(), "0 watches nothing");
    }
}
