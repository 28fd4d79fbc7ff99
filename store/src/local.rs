//! The two backends that keep the log in a local directory, and which of them a directory holds.
//!
//! A directory belongs to one backend for its life. Opening it with the other would start an empty
//! log beside the real one and serve every session as unknown, so [`open_local`] refuses that and
//! says which backend wrote the directory. Tools that only read a directory (replay, export, the
//! load harness's loss check) open it with whichever backend wrote it ([`LocalBackend::detect`]).

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{EventLog, SegmentEventLog, SledEventLog, StoreConfig, StoreError, Upcaster};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalBackend {
    /// sled's B-tree (the default).
    Sled,
    /// The segment log of decision 0105.
    Segments,
}

impl LocalBackend {
    pub fn name(self) -> &'static str {
        match self {
            LocalBackend::Sled => "sled",
            LocalBackend::Segments => "segments",
        }
    }

    /// Which backend wrote `dir`; `None` when it holds neither's files (missing, or empty).
    pub fn detect(dir: &Path) -> Result<Option<LocalBackend>, StoreError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StoreError::Io { dir: dir.to_path_buf(), source }),
        };
        let mut found = None;
        for entry in entries {
            let entry = entry.map_err(|source| StoreError::Io { dir: dir.to_path_buf(), source })?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // sled's files (`conf`, `db`, `blobs/`); the segment log's numbered `.seg` files.
            let this = if name == "conf" || name == "db" {
                LocalBackend::Sled
            } else if name.ends_with(".seg") {
                LocalBackend::Segments
            } else {
                continue;
            };
            match found {
                Some(other) if other != this => {
                    return Err(StoreError::Engine(format!(
                        "{} holds files of both the sled and the segments backend; it is not a log either can open",
                        dir.display()
                    )));
                }
                _ => found = Some(this),
            }
        }
        Ok(found)
    }
}

/// Opens the log in `config.path` with `backend`, refusing a directory another backend wrote.
pub fn open_local(config: StoreConfig, backend: LocalBackend, upcaster: Arc<dyn Upcaster>) -> Result<Arc<dyn EventLog>, StoreError> {
    if let Some(found) = LocalBackend::detect(&config.path)?
        && found != backend
    {
        return Err(StoreError::Engine(format!(
            "{} holds a log of the {} backend, not {}: set `[store] backend = \"{}\"`, or give another data directory",
            config.path.display(),
            found.name(),
            backend.name(),
            found.name()
        )));
    }
    Ok(match backend {
        LocalBackend::Sled => Arc::new(SledEventLog::open_with_upcaster(config, upcaster)?),
        LocalBackend::Segments => Arc::new(SegmentEventLog::open_with_upcaster(config, upcaster)?),
    })
}

/// Opens the log in `config.path` with whichever backend wrote it (sled for a new directory).
pub fn open_existing(config: StoreConfig, upcaster: Arc<dyn Upcaster>) -> Result<Arc<dyn EventLog>, StoreError> {
    let backend = LocalBackend::detect(&config.path)?.unwrap_or(LocalBackend::Sled);
    open_local(config, backend, upcaster)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewSession, NoUpcasting, SessionId};

    fn config(dir: &Path) -> StoreConfig {
        StoreConfig::at(dir.to_path_buf()).with_segment_bytes(64 * 1024)
    }

    async fn one_session(log: &Arc<dyn EventLog>) -> SessionId {
        let id = SessionId::random();
        log.create_session(id, NewSession { project: "p".into(), created_ms: 1, resume_token_hash: None }).await.unwrap();
        id
    }

    #[tokio::test]
    async fn a_directory_opens_with_the_backend_that_wrote_it_and_refuses_the_other() {
        for (backend, other) in [(LocalBackend::Sled, LocalBackend::Segments), (LocalBackend::Segments, LocalBackend::Sled)] {
            let dir = tempfile::tempdir().unwrap();
            assert_eq!(LocalBackend::detect(dir.path()).unwrap(), None, "an empty directory is neither's");
            let log = open_local(config(dir.path()), backend, Arc::new(NoUpcasting)).unwrap();
            let id = one_session(&log).await;
            log.flush().await.unwrap();
            drop(log);
            assert_eq!(LocalBackend::detect(dir.path()).unwrap(), Some(backend));

            let refused = open_local(config(dir.path()).with_lock_wait_ms(5000), other, Arc::new(NoUpcasting)).err().expect("refused");
            let message = refused.to_string();
            assert!(message.contains(&format!("holds a log of the {} backend", backend.name())), "{message}");

            let reopened = open_existing(config(dir.path()).with_lock_wait_ms(5000), Arc::new(NoUpcasting)).unwrap();
            assert!(reopened.session_meta(id).await.unwrap().is_some(), "{backend:?}: the session is there");
        }
    }
}
