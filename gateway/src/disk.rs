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
    /// The directory the event log was opened in (device and inode), when watched.
    opened: Option<(u64, u64)>,
    /// Why the directory at the data path is no longer the one the log writes in, once it was found.
    replaced: tokio::sync::watch::Sender<Option<String>>,
}

impl DiskWatch {
    /// Watches the disk of `dir`; `min_free` 0 watches no free space.
    pub fn new(dir: PathBuf, min_free: u64) -> Self {
        Self { dir, min_free, low: AtomicBool::new(false), opened: None, replaced: tokio::sync::watch::Sender::new(None) }
    }

    /// Also watches that `dir` stays the directory the event log has open (call it once the log is
    /// open): a local log writes through the files it opened, but some of its writes go by path (the
    /// segment log's index checkpoint, sled's snapshots). A data directory moved away and another
    /// put at its path while the gateway ran (an outside review: `mv data data.old; cp -a data.old
    /// data`) had events go on to the moved one, a checkpoint land in the new one beside segments
    /// without those events, and a restart on the path miss 999 of 1,536 acknowledged commands,
    /// while `/healthz` said ok throughout. Now the gateway fails as for a failed log, and exits
    /// without writing anything more by path.
    pub fn watching_the_directory(mut self) -> std::io::Result<Self> {
        let stat = rustix::fs::stat(&self.dir)?;
        self.opened = Some((stat.st_dev, stat.st_ino));
        Ok(self)
    }

    /// Why the data path is not the directory the log writes in, if it was found not to be.
    pub fn replaced(&self) -> Option<String> {
        self.replaced.borrow().clone()
    }

    /// Resolves once the data path is found not to be the log's directory, with why.
    pub async fn until_replaced(&self) -> String {
        let mut replaced = self.replaced.subscribe();
        match replaced.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_default(),
            Err(_) => std::future::pending().await,
        }
    }

    /// Compares the directory at the data path with the one the log opened.
    fn check_directory(&self) {
        let Some(opened) = self.opened else { return };
        if self.replaced.borrow().is_some() {
            return;
        }
        let now = match rustix::fs::stat(&self.dir) {
            Ok(stat) if (stat.st_dev, stat.st_ino) == opened => return,
            Ok(_) => "another directory is at its path".to_string(),
            Err(rustix::io::Errno::NOENT) => "nothing is at its path".to_string(),
            // Unreadable for a moment (permissions): the store reports its own failures.
            Err(_) => return,
        };
        let reason = format!(
            "the data directory {} was replaced while the gateway ran ({now}): the events written since are in the directory \
             the log opened, wherever it was moved",
            self.dir.display()
        );
        tracing::error!(%reason, "the data directory was replaced");
        self.replaced.send_replace(Some(reason));
    }

    /// Whether the disk had less than the minimum free at the last check.
    pub fn is_low(&self) -> bool {
        self.low.load(Ordering::Relaxed)
    }

    /// Reads the free space (what an unprivileged writer may use) and returns whether it is low.
    /// A failed read keeps the last verdict: the store reports its own failures.
    pub fn check(&self) -> bool {
        self.check_directory();
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

    #[test]
    fn given_the_data_directory_moved_away_and_another_at_its_path_then_it_is_found_replaced() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let watch = DiskWatch::new(data.clone(), 0).watching_the_directory().unwrap();
        watch.check();
        assert_eq!(watch.replaced(), None, "the directory it opened");
        std::fs::rename(&data, root.path().join("data.old")).unwrap();
        std::fs::create_dir(&data).unwrap();
        watch.check();
        assert!(watch.replaced().is_some_and(|why| why.contains("another directory")), "{:?}", watch.replaced());

        let gone = DiskWatch::new(root.path().join("data.old"), 0).watching_the_directory().unwrap();
        std::fs::remove_dir(root.path().join("data.old")).unwrap();
        gone.check();
        assert!(gone.replaced().is_some_and(|why| why.contains("nothing is at its path")));
    }
}
