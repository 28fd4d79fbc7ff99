//! The sled backend's on-disk layout: key layout and record encodings (layout version 1).
//!
//! Everything lives in one sled tree ([`TREE_NAME`]) so that one `apply_batch` (atomic and
//! crash-atomic in sled 0.34) covers events, metadata, snapshots and purge markers together.
//! Keys start with a one-byte kind so the kinds are disjoint, ordered key ranges:
//!
//! | key                                        | value                    |
//! |--------------------------------------------|--------------------------|
//! | `0x00 "layout"`                            | layout version, u32 BE   |
//! | `'a'` ++ session (16 B) ++ command id      | answer record            |
//! | `'e'` ++ session (16 B) ++ seq (u64 BE)    | event record             |
//! | `'m'` ++ session (16 B)                    | session metadata record  |
//! | `'p'` ++ session (16 B)                    | purge marker (expiry in progress), empty |
//! | `'s'` ++ session (16 B) ++ version (u32 BE)| snapshot record          |
//!
//! Big-endian seqs make one session's events one contiguous key range in seq order.
//! Every record starts with a format byte; readers reject formats they do not know as corrupt.
//! Records are never rewritten: a new format is only ever written by new code, and old formats
//! stay readable.
//!
//! This module is public so that tools, tests and the benchmark can build the exact bytes the
//! log stores; nothing outside the log should write with it.

use crate::event_log::{AnswerRefusal, CommandAnswer, SessionStatus};
use crate::{Envelope, NewEvent, Payload, SessionId, Snapshot, StoreError};

/// The layout this code writes and reads.
pub const LAYOUT_VERSION: u32 = 1;
/// The sled tree that holds the whole log.
pub const TREE_NAME: &[u8] = b"vestibule-log";
/// Key of the layout version marker.
pub const LAYOUT_KEY: &[u8] = b"\x00layout";

pub const ANSWER_KIND: u8 = b'a';
pub const EVENT_KIND: u8 = b'e';
pub const META_KIND: u8 = b'm';
pub const PURGE_KIND: u8 = b'p';
pub const SNAPSHOT_KIND: u8 = b's';

/// Format byte of event records written by this code.
pub const EVENT_FORMAT_V1: u8 = 1;
/// Format 2 adds the optional checksum after the correlation id. Written from now on; format 1
/// records stay readable (the log is never rewritten).
pub const EVENT_FORMAT_V2: u8 = 2;
/// Format byte of metadata records written by this code.
pub const META_FORMAT_V1: u8 = 1;
/// Format byte of snapshot records without a count of the session's log bytes (written by builds
/// before that count, and now for a snapshot whose count is unknown). Still read.
pub const SNAPSHOT_FORMAT_V1: u8 = 1;
/// Format 2 adds the bytes the session had written to its log when the snapshot was taken
/// ([`Snapshot::log_bytes`]; decision 0107). Written whenever the count is known.
pub const SNAPSHOT_FORMAT_V2: u8 = 2;
/// Format byte of answer records written by this code.
pub const ANSWER_FORMAT_V1: u8 = 1;

/// Size of the fixed part of an event record (format, time, schema version, type length).
pub const EVENT_HEADER_LEN: usize = 1 + 8 + 4 + 2;
/// Longest event type, correlation id, project or resume-token hash, in bytes.
pub const MAX_LABEL_BYTES: usize = 1024;

const ID: usize = SessionId::LEN;

pub fn event_key(session: &SessionId, seq: u64) -> [u8; 1 + ID + 8] {
    let mut k = [0u8; 1 + ID + 8];
    k[0] = EVENT_KIND;
    k[1..1 + ID].copy_from_slice(session.as_bytes());
    k[1 + ID..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// The common prefix of all of one session's event keys.
pub fn event_prefix(session: &SessionId) -> [u8; 1 + ID] {
    prefixed(EVENT_KIND, session)
}

/// The session and seq of an event key, or `None` if it is not one.
pub fn parse_event_key(key: &[u8]) -> Option<(SessionId, u64)> {
    if key.len() != 1 + ID + 8 || key[0] != EVENT_KIND {
        return None;
    }
    let mut id = [0u8; ID];
    id.copy_from_slice(&key[1..1 + ID]);
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&key[1 + ID..]);
    Some((SessionId::from_bytes(id), u64::from_be_bytes(seq)))
}

pub fn meta_key(session: &SessionId) -> [u8; 1 + ID] {
    prefixed(META_KIND, session)
}

/// The session of a metadata key, or `None` if it is not one.
pub fn parse_meta_key(key: &[u8]) -> Option<SessionId> {
    parse_prefixed(META_KIND, key)
}

pub fn purge_key(session: &SessionId) -> [u8; 1 + ID] {
    prefixed(PURGE_KIND, session)
}

pub fn parse_purge_key(key: &[u8]) -> Option<SessionId> {
    parse_prefixed(PURGE_KIND, key)
}

pub fn snapshot_key(session: &SessionId, schema_version: u32) -> [u8; 1 + ID + 4] {
    let mut k = [0u8; 1 + ID + 4];
    k[0] = SNAPSHOT_KIND;
    k[1..1 + ID].copy_from_slice(session.as_bytes());
    k[1 + ID..].copy_from_slice(&schema_version.to_be_bytes());
    k
}

/// The common prefix of all of one session's snapshot keys.
pub fn snapshot_prefix(session: &SessionId) -> [u8; 1 + ID] {
    prefixed(SNAPSHOT_KIND, session)
}

/// The key of the answer to `command_id` in `session`. The id is stored as it is (UTF-8), so one
/// session's answers are one contiguous key range.
pub fn answer_key(session: &SessionId, command_id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + ID + command_id.len());
    k.extend_from_slice(&prefixed(ANSWER_KIND, session));
    k.extend_from_slice(command_id.as_bytes());
    k
}

/// The common prefix of all of one session's answer keys.
pub fn answer_prefix(session: &SessionId) -> [u8; 1 + ID] {
    prefixed(ANSWER_KIND, session)
}

/// The session and command id of an answer key, or `None` if it is not one.
pub fn parse_answer_key(key: &[u8]) -> Option<(SessionId, String)> {
    if key.len() <= 1 + ID || key[0] != ANSWER_KIND {
        return None;
    }
    let mut id = [0u8; ID];
    id.copy_from_slice(&key[1..1 + ID]);
    let command_id = std::str::from_utf8(&key[1 + ID..]).ok()?.to_string();
    Some((SessionId::from_bytes(id), command_id))
}

fn prefixed(kind: u8, session: &SessionId) -> [u8; 1 + ID] {
    let mut k = [0u8; 1 + ID];
    k[0] = kind;
    k[1..].copy_from_slice(session.as_bytes());
    k
}

fn parse_prefixed(kind: u8, key: &[u8]) -> Option<SessionId> {
    if key.len() != 1 + ID || key[0] != kind {
        return None;
    }
    let mut id = [0u8; ID];
    id.copy_from_slice(&key[1..]);
    Some(SessionId::from_bytes(id))
}

// ---------------------------------------------------------------------------------------------
// Event records
// ---------------------------------------------------------------------------------------------

/// Encode an event as a format-2 record:
///
/// ```text
/// u8     format = 2
/// u64 BE time_ms
/// u32 BE schema_version
/// u16 BE length of event_type, then event_type (UTF-8)
/// u16 BE 0 for no correlation id, else 1 + its length, then the correlation id (UTF-8)
/// u16 BE 0 for no checksum, else 1 + its length, then the checksum (UTF-8)
/// ...    payload as JSON text, to the end of the record
/// ```
///
/// Format 1 is the same without the checksum field.
///
/// The session and seq are the key, so they are not repeated. Fails (with a reason) on labels
/// that are empty or too long.
pub fn encode_event(event: &NewEvent) -> Result<Vec<u8>, String> {
    let kind = event.event_type.as_bytes();
    if kind.is_empty() {
        return Err("an event needs a type".into());
    }
    if kind.len() > MAX_LABEL_BYTES {
        return Err(format!("event type longer than {MAX_LABEL_BYTES} bytes"));
    }
    let corr = event.correlation_id.as_deref().map(str::as_bytes);
    if corr.is_some_and(|c| c.len() > MAX_LABEL_BYTES) {
        return Err(format!("correlation id longer than {MAX_LABEL_BYTES} bytes"));
    }
    let checksum = event.checksum.as_deref().map(str::as_bytes);
    if checksum.is_some_and(|c| c.len() > MAX_LABEL_BYTES) {
        return Err(format!("checksum longer than {MAX_LABEL_BYTES} bytes"));
    }
    let mut out =
        Vec::with_capacity(event_record_len(kind.len(), corr.map(<[u8]>::len), checksum.map(<[u8]>::len), event.payload.json().len()));
    out.push(EVENT_FORMAT_V2);
    out.extend_from_slice(&event.time_ms.to_be_bytes());
    out.extend_from_slice(&event.schema_version.to_be_bytes());
    out.extend_from_slice(&(kind.len() as u16).to_be_bytes());
    out.extend_from_slice(kind);
    match corr {
        None => out.extend_from_slice(&0u16.to_be_bytes()),
        Some(c) => {
            out.extend_from_slice(&(c.len() as u16 + 1).to_be_bytes());
            out.extend_from_slice(c);
        }
    }
    match checksum {
        None => out.extend_from_slice(&0u16.to_be_bytes()),
        Some(c) => {
            out.extend_from_slice(&(c.len() as u16 + 1).to_be_bytes());
            out.extend_from_slice(c);
        }
    }
    // Already JSON text: copied, not serialized again.
    out.extend_from_slice(event.payload.json().as_bytes());
    Ok(out)
}

/// The length of the record [`encode_event`] writes for an event whose type, correlation id,
/// checksum and payload JSON text are this many bytes long. What a session's budget of log bytes
/// counts for each event it appends (decision 0107).
pub const fn event_record_len(event_type: usize, correlation_id: Option<usize>, checksum: Option<usize>, payload: usize) -> usize {
    let correlation_id = match correlation_id {
        Some(n) => n,
        None => 0,
    };
    let checksum = match checksum {
        Some(n) => n,
        None => 0,
    };
    EVENT_HEADER_LEN + event_type + 2 + correlation_id + 2 + checksum + payload
}

/// The event time of a record, read from its fixed header only.
pub fn event_record_time(record: &[u8]) -> Option<u64> {
    if record.len() < EVENT_HEADER_LEN || !matches!(record[0], EVENT_FORMAT_V1 | EVENT_FORMAT_V2) {
        return None;
    }
    Some(u64::from_be_bytes(record[1..9].try_into().ok()?))
}

/// Decode a stored event record (not upcast). Any defect is [`StoreError::Corrupt`] naming the record.
pub fn decode_event(session: SessionId, seq: u64, record: &[u8]) -> Result<Envelope, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt { session, seq, reason };
    let mut r = Reader::new(record);
    let format = r.u8().ok_or_else(|| corrupt("empty record".into()))?;
    if !matches!(format, EVENT_FORMAT_V1 | EVENT_FORMAT_V2) {
        return Err(corrupt(format!("unknown event record format {format}")));
    }
    let time_ms = r.u64().ok_or_else(|| corrupt("truncated header".into()))?;
    let schema_version = r.u32().ok_or_else(|| corrupt("truncated header".into()))?;
    let kind_len = r.u16().ok_or_else(|| corrupt("truncated header".into()))? as usize;
    let event_type = r.str(kind_len).map_err(|e| corrupt(format!("event type: {e}")))?;
    let corr_len = r.u16().ok_or_else(|| corrupt("truncated correlation id".into()))? as usize;
    let correlation_id = match corr_len {
        0 => None,
        n => Some(r.str(n - 1).map_err(|e| corrupt(format!("correlation id: {e}")))?),
    };
    let checksum = if format == EVENT_FORMAT_V2 {
        match r.u16().ok_or_else(|| corrupt("truncated checksum".into()))? as usize {
            0 => None,
            n => Some(r.str(n - 1).map_err(|e| corrupt(format!("checksum: {e}")))?),
        }
    } else {
        None
    };
    let payload = serde_json::from_slice(r.rest()).map_err(|e| corrupt(format!("payload: {e}")))?;
    Ok(Envelope { session, seq, time_ms, event_type, schema_version, correlation_id, checksum, payload })
}

// ---------------------------------------------------------------------------------------------
// Metadata records
// ---------------------------------------------------------------------------------------------

/// The stored part of a session's metadata. The latest seq and last activity are not stored:
/// they are read from the session's newest event, so they can never disagree with the events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaRecord {
    pub status: SessionStatus,
    pub created_ms: u64,
    pub project: String,
    pub resume_token_hash: Option<String>,
}

/// ```text
/// u8     format = 1
/// u8     status: 1 active, 2 ended
/// u64 BE created_ms
/// u16 BE length of project, then project (UTF-8)
/// u16 BE 0 for no resume-token hash, else 1 + its length, then the hash (UTF-8)
/// ```
pub fn encode_meta(meta: &MetaRecord) -> Result<Vec<u8>, String> {
    let project = meta.project.as_bytes();
    if project.len() > MAX_LABEL_BYTES {
        return Err(format!("project longer than {MAX_LABEL_BYTES} bytes"));
    }
    let hash = meta.resume_token_hash.as_deref().map(str::as_bytes);
    if hash.is_some_and(|h| h.len() > MAX_LABEL_BYTES) {
        return Err(format!("resume token hash longer than {MAX_LABEL_BYTES} bytes"));
    }
    let mut out = Vec::with_capacity(14 + project.len() + hash.map_or(0, <[u8]>::len));
    out.push(META_FORMAT_V1);
    out.push(match meta.status {
        SessionStatus::Active => 1,
        SessionStatus::Ended => 2,
    });
    out.extend_from_slice(&meta.created_ms.to_be_bytes());
    out.extend_from_slice(&(project.len() as u16).to_be_bytes());
    out.extend_from_slice(project);
    match hash {
        None => out.extend_from_slice(&0u16.to_be_bytes()),
        Some(h) => {
            out.extend_from_slice(&(h.len() as u16 + 1).to_be_bytes());
            out.extend_from_slice(h);
        }
    }
    Ok(out)
}

pub fn decode_meta(session: SessionId, record: &[u8]) -> Result<MetaRecord, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt { session, seq: 0, reason: format!("metadata: {reason}") };
    let mut r = Reader::new(record);
    let format = r.u8().ok_or_else(|| corrupt("empty record".into()))?;
    if format != META_FORMAT_V1 {
        return Err(corrupt(format!("unknown format {format}")));
    }
    let status = match r.u8() {
        Some(1) => SessionStatus::Active,
        Some(2) => SessionStatus::Ended,
        other => return Err(corrupt(format!("bad status {other:?}"))),
    };
    let created_ms = r.u64().ok_or_else(|| corrupt("truncated".into()))?;
    let project_len = r.u16().ok_or_else(|| corrupt("truncated".into()))? as usize;
    let project = r.str(project_len).map_err(|e| corrupt(format!("project: {e}")))?;
    let hash_len = r.u16().ok_or_else(|| corrupt("truncated".into()))? as usize;
    let resume_token_hash = match hash_len {
        0 => None,
        n => Some(r.str(n - 1).map_err(|e| corrupt(format!("resume token hash: {e}")))?),
    };
    if !r.rest().is_empty() {
        return Err(corrupt("trailing bytes".into()));
    }
    Ok(MetaRecord { status, created_ms, project, resume_token_hash })
}

// ---------------------------------------------------------------------------------------------
// Snapshot records
// ---------------------------------------------------------------------------------------------

/// ```text
/// u8     format = 2 (1 when `log_bytes` is unknown)
/// u64 BE seq
/// u32 BE schema_version (of the state)
/// u64 BE time_ms
/// u64 BE log_bytes (format 2 only)
/// ...    state as JSON text, to the end of the record
/// ```
///
/// Format 1 is the same without `log_bytes`; it is still read (as `log_bytes: None`). A build
/// that knows only format 1 reads a format 2 snapshot as unreadable, which for a cache is a miss.
pub fn encode_snapshot(snapshot: &Snapshot) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(29 + snapshot.state.json().len());
    out.push(if snapshot.log_bytes.is_some() { SNAPSHOT_FORMAT_V2 } else { SNAPSHOT_FORMAT_V1 });
    out.extend_from_slice(&snapshot.seq.to_be_bytes());
    out.extend_from_slice(&snapshot.schema_version.to_be_bytes());
    out.extend_from_slice(&snapshot.time_ms.to_be_bytes());
    if let Some(log_bytes) = snapshot.log_bytes {
        out.extend_from_slice(&log_bytes.to_be_bytes());
    }
    out.extend_from_slice(snapshot.state.json().as_bytes());
    Ok(out)
}

/// Decode a snapshot record (format 1 or 2); `Err` carries the reason it is unreadable.
pub fn decode_snapshot(record: &[u8]) -> Result<Snapshot, String> {
    let mut r = Reader::new(record);
    let format = match r.u8() {
        Some(format @ (SNAPSHOT_FORMAT_V1 | SNAPSHOT_FORMAT_V2)) => format,
        other => return Err(format!("unknown snapshot format {other:?}")),
    };
    let seq = r.u64().ok_or("truncated")?;
    let schema_version = r.u32().ok_or("truncated")?;
    let time_ms = r.u64().ok_or("truncated")?;
    let log_bytes = match format {
        SNAPSHOT_FORMAT_V2 => Some(r.u64().ok_or("truncated")?),
        _ => None,
    };
    let text = std::str::from_utf8(r.rest()).map_err(|e| format!("state: {e}"))?;
    let state = Payload::from_json(text.to_string()).map_err(|e| format!("state: {e}"))?;
    Ok(Snapshot { seq, schema_version, time_ms, state, log_bytes })
}

// ---------------------------------------------------------------------------------------------
// Answer records
// ---------------------------------------------------------------------------------------------

/// Checks that `command_id` can be an answer's key: 1 to [`MAX_LABEL_BYTES`] bytes.
pub fn check_command_id(command_id: &str) -> Result<(), String> {
    match command_id.len() {
        0 => Err("an answer needs a command id".into()),
        n if n > MAX_LABEL_BYTES => Err(format!("command id longer than {MAX_LABEL_BYTES} bytes")),
        _ => Ok(()),
    }
}

/// ```text
/// u8     format = 1
/// u64 BE seq
/// u8     outcome: 1 accepted, 2 refused
/// (refused only:)
/// u16 BE length of code, then code (UTF-8)
/// ...    message (UTF-8), to the end of the record
/// ```
///
/// The command id is the key, so it is not repeated. An accepted answer is 10 bytes.
/// [`answer_record_len`] is its length.
pub fn encode_answer(answer: &CommandAnswer) -> Result<Vec<u8>, String> {
    check_command_id(&answer.command_id)?;
    let mut out = Vec::with_capacity(10 + answer.refusal.as_ref().map_or(0, |r| 2 + r.code.len() + r.message.len()));
    out.push(ANSWER_FORMAT_V1);
    out.extend_from_slice(&answer.seq.to_be_bytes());
    match &answer.refusal {
        None => out.push(1),
        Some(refusal) => {
            let code = refusal.code.as_bytes();
            if code.len() > MAX_LABEL_BYTES {
                return Err(format!("refusal code longer than {MAX_LABEL_BYTES} bytes"));
            }
            out.push(2);
            out.extend_from_slice(&(code.len() as u16).to_be_bytes());
            out.extend_from_slice(code);
            out.extend_from_slice(refusal.message.as_bytes());
        }
    }
    Ok(out)
}

/// The length of the record [`encode_answer`] writes for `answer` (its command id, the key, not
/// included).
pub fn answer_record_len(answer: &CommandAnswer) -> usize {
    match &answer.refusal {
        None => 10,
        Some(refusal) => 10 + 2 + refusal.code.len() + refusal.message.len(),
    }
}

/// Decode an answer record stored under `command_id`. Any defect is [`StoreError::Corrupt`]
/// (with seq 0: an answer is not an event).
pub fn decode_answer(session: SessionId, command_id: &str, record: &[u8]) -> Result<CommandAnswer, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt { session, seq: 0, reason: format!("answer to {command_id:?}: {reason}") };
    let mut r = Reader::new(record);
    match r.u8() {
        Some(ANSWER_FORMAT_V1) => {}
        other => return Err(corrupt(format!("unknown format {other:?}"))),
    }
    let seq = r.u64().ok_or_else(|| corrupt("truncated".into()))?;
    let refusal = match r.u8() {
        Some(1) if r.rest().is_empty() => None,
        Some(2) => {
            let code_len = r.u16().ok_or_else(|| corrupt("truncated".into()))? as usize;
            let code = r.str(code_len).map_err(|e| corrupt(format!("code: {e}")))?;
            let message = String::from_utf8(r.rest().to_vec()).map_err(|_| corrupt("message: not UTF-8".into()))?;
            Some(AnswerRefusal { code, message })
        }
        other => return Err(corrupt(format!("bad outcome {other:?}"))),
    };
    Ok(CommandAnswer { command_id: command_id.to_string(), seq, refusal })
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes)
    }

    fn str(&mut self, n: usize) -> Result<String, String> {
        let bytes = self.take(n).ok_or_else(|| "truncated".to_string())?;
        String::from_utf8(bytes.to_vec()).map_err(|_| "not UTF-8".to_string())
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(corr: Option<&str>) -> NewEvent {
        NewEvent {
            time_ms: 1_700_000_000_123,
            event_type: "wallet.connected".into(),
            schema_version: 3,
            correlation_id: corr.map(Into::into),
            checksum: corr.map(|c| format!("sum-{c}")),
            payload: json!({"address": "0xabc", "chain": 1}).into(),
        }
    }

    #[test]
    fn event_records_round_trip() {
        let s = SessionId::random();
        for corr in [None, Some(""), Some("cmd-1")] {
            let e = event(corr);
            let bytes = encode_event(&e).unwrap();
            assert_eq!(bytes[0], EVENT_FORMAT_V2);
            assert_eq!(event_record_time(&bytes), Some(e.time_ms));
            let env = decode_event(s, 7, &bytes).unwrap();
            assert_eq!(env, Envelope::from_new(s, 7, e));
        }
    }

    #[test]
    fn event_keys_sort_by_session_then_seq() {
        let a = SessionId::from_bytes([1; 16]);
        let b = SessionId::from_bytes([2; 16]);
        assert!(event_key(&a, 2) < event_key(&a, 256));
        assert!(event_key(&a, u64::MAX - 1) < event_key(&b, 1));
        assert_eq!(parse_event_key(&event_key(&b, 99)), Some((b, 99)));
        assert!(event_key(&a, 5).starts_with(&event_prefix(&a)));
        assert_eq!(parse_meta_key(&meta_key(&a)), Some(a));
        assert_eq!(parse_event_key(&meta_key(&a)), None);
    }

    #[test]
    fn defective_event_records_are_corrupt_not_panics() {
        let s = SessionId::random();
        let good = encode_event(&event(Some("c"))).unwrap();
        for cut in 0..good.len() {
            match decode_event(s, 3, &good[..cut]) {
                Err(StoreError::Corrupt { session, seq: 3, .. }) => assert_eq!(session, s),
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
        let mut unknown = good.clone();
        unknown[0] = 9;
        assert!(matches!(decode_event(s, 3, &unknown), Err(StoreError::Corrupt { .. })));
    }

    #[test]
    fn meta_and_snapshot_records_round_trip() {
        let s = SessionId::random();
        let m =
            MetaRecord { status: SessionStatus::Ended, created_ms: 42, project: "demo".into(), resume_token_hash: Some("ab".repeat(32)) };
        assert_eq!(decode_meta(s, &encode_meta(&m).unwrap()).unwrap(), m);
        let snap = Snapshot { seq: 9, schema_version: 2, time_ms: 5, state: json!({"n": 1}).into(), log_bytes: None };
        assert_eq!(decode_snapshot(&encode_snapshot(&snap).unwrap()).unwrap(), snap);
        assert!(decode_snapshot(&[7]).is_err());
        let counted = Snapshot { log_bytes: Some(0x0102_0304_0506_0708), ..snap.clone() };
        let record = encode_snapshot(&counted).unwrap();
        assert_eq!(record[0], SNAPSHOT_FORMAT_V2);
        assert_eq!(decode_snapshot(&record).unwrap(), counted);
        for cut in 1..29 {
            assert!(decode_snapshot(&record[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// A snapshot written before the count of log bytes (format 1) reads as it did, its count
    /// unknown; and a snapshot whose count is unknown is still written as format 1, byte for byte.
    #[test]
    fn a_format_1_snapshot_reads_with_an_unknown_count_of_log_bytes() {
        let mut old = vec![SNAPSHOT_FORMAT_V1];
        old.extend_from_slice(&9u64.to_be_bytes());
        old.extend_from_slice(&2u32.to_be_bytes());
        old.extend_from_slice(&5u64.to_be_bytes());
        old.extend_from_slice(br#"{"n":1}"#);
        let read = decode_snapshot(&old).unwrap();
        assert_eq!(read, Snapshot { seq: 9, schema_version: 2, time_ms: 5, state: json!({"n": 1}).into(), log_bytes: None });
        assert_eq!(encode_snapshot(&read).unwrap(), old);
    }

    #[test]
    fn the_counted_lengths_are_the_records_lengths() {
        for (corr, checksum, payload) in [(None, None, json!({})), (Some("c-1"), Some("0123456789abcdef"), json!({"n": "✗".repeat(9)}))] {
            let e = NewEvent {
                time_ms: 1,
                event_type: "ModalOpened".into(),
                schema_version: 1,
                correlation_id: corr.map(str::to_string),
                checksum: checksum.map(str::to_string),
                payload: payload.into(),
            };
            let len = event_record_len(e.event_type.len(), corr.map(str::len), checksum.map(str::len), e.payload.json().len());
            assert_eq!(len, encode_event(&e).unwrap().len());
        }
        let accepted = CommandAnswer { command_id: "c-1".into(), seq: 7, refusal: None };
        let refused = CommandAnswer {
            refusal: Some(AnswerRefusal { code: "not_connected".into(), message: "Not connected ✗".into() }),
            ..accepted.clone()
        };
        for answer in [accepted, refused] {
            assert_eq!(answer_record_len(&answer), encode_answer(&answer).unwrap().len());
        }
    }

    #[test]
    fn answer_records_round_trip_and_keys_sort_per_session() {
        let s = SessionId::from_bytes([3; 16]);
        let accepted = CommandAnswer { command_id: "c-1".into(), seq: 7, refusal: None };
        let bytes = encode_answer(&accepted).unwrap();
        assert_eq!(bytes.len(), 10);
        assert_eq!(decode_answer(s, "c-1", &bytes).unwrap(), accepted);
        let refused = CommandAnswer {
            command_id: "c-2".into(),
            seq: 9,
            refusal: Some(AnswerRefusal { code: "not_connected".into(), message: "Not connected ✗".into() }),
        };
        assert_eq!(decode_answer(s, "c-2", &encode_answer(&refused).unwrap()).unwrap(), refused);
        for cut in 0..9 {
            assert!(matches!(decode_answer(s, "c-1", &bytes[..cut]), Err(StoreError::Corrupt { .. })), "cut at {cut}");
        }
        assert!(encode_answer(&CommandAnswer { command_id: String::new(), ..accepted.clone() }).is_err());
        let key = answer_key(&s, "c-1");
        assert!(key.starts_with(&answer_prefix(&s)));
        assert_eq!(parse_answer_key(&key), Some((s, "c-1".to_string())));
        assert_eq!(parse_answer_key(&answer_prefix(&s)), None);
        // Disjoint from the session's other kinds.
        assert!(key.as_slice() < event_prefix(&s).as_slice());
    }

    #[test]
    fn labels_are_limited() {
        let mut e = event(None);
        e.event_type = String::new();
        assert!(encode_event(&e).is_err());
        e.event_type = "x".repeat(MAX_LABEL_BYTES + 1);
        assert!(encode_event(&e).is_err());
    }
}
