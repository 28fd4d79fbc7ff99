//! Snapshots larger than one NATS message.
//!
//! A KV value is one message, at most the server's `max_payload` (1 MiB by default), and a session's
//! state can be larger (16 pending signing requests of 62 KB each). Such a snapshot record is put in
//! parts under keys of their own, `<session>.<v>.p.<generation>.<i>`, and the snapshot's key holds a
//! manifest naming them: the generation (random, so a new snapshot never overwrites the parts an
//! older manifest names), the number of parts, the record's length and its SHA-256. The manifest is
//! put last, so a reader sees the old snapshot or the new one whole; a part missing or not matching
//! the manifest (replaced meanwhile) is a miss, as a snapshot is only a cache. The old generation's
//! parts are purged once the new snapshot is in place. Every part key starts with `<session>.`, so
//! purging a session's snapshots purges its parts too.

use sha2::{Digest, Sha256};

/// The first byte of a manifest; a snapshot record starts with its format (1), never this.
const MANIFEST: u8 = 0xA5;
const MANIFEST_LEN: usize = 1 + 8 + 4 + 8 + 32;

/// Room left in a NATS message for the KV's subject and headers.
const HEADROOM: usize = 1024;
/// The smallest part, whatever the server's `max_payload`.
const MIN_PART: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub generation: u64,
    pub parts: u32,
    pub len: u64,
    pub sha256: [u8; 32],
}

impl Manifest {
    /// The manifest of `record` split into parts of at most `part_size` bytes.
    pub fn of(record: &[u8], part_size: usize, generation: u64) -> Self {
        Self { generation, parts: record.len().div_ceil(part_size) as u32, len: record.len() as u64, sha256: Sha256::digest(record).into() }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MANIFEST_LEN);
        out.push(MANIFEST);
        out.extend_from_slice(&self.generation.to_be_bytes());
        out.extend_from_slice(&self.parts.to_be_bytes());
        out.extend_from_slice(&self.len.to_be_bytes());
        out.extend_from_slice(&self.sha256);
        out
    }

    /// `None` when `value` is not a manifest (a snapshot record put whole); `Some(Err)` when it
    /// starts like one but does not read as one.
    pub fn decode(value: &[u8]) -> Option<Result<Self, String>> {
        if value.first() != Some(&MANIFEST) {
            return None;
        }
        if value.len() != MANIFEST_LEN {
            return Some(Err(format!("a snapshot manifest of {} bytes", value.len())));
        }
        let u64_at = |at: usize| u64::from_be_bytes(value[at..at + 8].try_into().expect("8 bytes"));
        Some(Ok(Self {
            generation: u64_at(1),
            parts: u32::from_be_bytes(value[9..13].try_into().expect("4 bytes")),
            len: u64_at(13),
            sha256: value[21..53].try_into().expect("32 bytes"),
        }))
    }

    /// Whether `record`, joined from the parts, is the one this manifest names.
    pub fn matches(&self, record: &[u8]) -> bool {
        record.len() as u64 == self.len && Sha256::digest(record).as_slice() == self.sha256
    }
}

/// The largest part (and the largest record put whole) for a server whose `max_payload` is this.
pub(crate) fn part_size(max_payload: usize) -> usize {
    max_payload.saturating_sub(HEADROOM).max(MIN_PART)
}

/// The key of part `i` of generation `generation` of the snapshot at `snapshot_key`.
pub(crate) fn part_key(snapshot_key: &str, generation: u64, i: u32) -> String {
    format!("{snapshot_key}.p.{generation:016x}.{i}")
}

/// The KV subjects of every part of generation `generation` (for a purge).
pub(crate) fn parts_subjects(bucket: &str, snapshot_key: &str, generation: u64) -> String {
    format!("$KV.{bucket}.{snapshot_key}.p.{generation:016x}.>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_back_as_written_and_a_record_is_never_taken_for_one() {
        let record = vec![1u8; 5000];
        let manifest = Manifest::of(&record, 1024, 0x0123_4567_89ab_cdef);
        assert_eq!(manifest.parts, 5);
        assert_eq!(Manifest::decode(&manifest.encode()), Some(Ok(manifest.clone())));
        assert!(manifest.matches(&record));
        assert!(!manifest.matches(&record[1..]));
        let mut changed = record.clone();
        changed[4999] = 2;
        assert!(!manifest.matches(&changed));
        // A snapshot record starts with its format byte (vestibule_store::layout::SNAPSHOT_FORMAT_V1 or _V2).
        assert_eq!(Manifest::decode(&[vestibule_store::layout::SNAPSHOT_FORMAT_V1, 0, 0]), None);
        assert_eq!(Manifest::decode(&[vestibule_store::layout::SNAPSHOT_FORMAT_V2, 0, 0]), None);
        assert!(matches!(Manifest::decode(&[MANIFEST, 1, 2]), Some(Err(_))));
    }

    #[test]
    fn a_part_key_is_a_valid_kv_key_under_the_snapshot_key() {
        let key = part_key("0123456789abcdef0123456789abcdef.3", 42, 7);
        assert_eq!(key, "0123456789abcdef0123456789abcdef.3.p.000000000000002a.7");
        assert!(key.chars().all(|c| c.is_ascii_alphanumeric() || "-/_=.".contains(c)));
        assert_eq!(part_size(1024 * 1024), 1024 * 1024 - 1024);
        assert_eq!(part_size(10), MIN_PART);
    }
}
