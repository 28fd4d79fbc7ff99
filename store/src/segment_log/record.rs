//! Records: what a frame holds, one per write of an operation.
//!
//! ```text
//! u8     kind
//! u32 BE length of the body
//! ...    body: the session (16 bytes), then by kind:
//!   CREATE, STATUS  a metadata record (layout::encode_meta), the whole of it
//!   EVENTS          u64 BE first seq | u32 BE count | count × (u32 BE length | event record)
//!                   | u8 0, or u8 1 | u16 BE length | command id | answer record (to the end)
//!   ANSWER          u16 BE length | command id | answer record (to the end)
//!   SNAPSHOT        a snapshot record (layout::encode_snapshot)
//!   DROP_SNAPSHOTS  nothing: every snapshot of the session written before it is gone
//!   EXPIRY          nothing: the tombstone; everything of the session before it is gone
//!   COPY            u32 BE from segment | u32 BE from offset | u32 BE released | u32 BE origin
//!                   segment | u32 BE origin offset | one record of another kind, whole (header too)
//! ```
//!
//! COPY (added with compaction; no existing kind changed) is a live record copied forward out of
//! an old segment: `from` is the place the index held for it (the carried record itself, or the
//! record inside an earlier copy), `released` the bytes it frees there (the whole record at `from`,
//! or the whole earlier copy), `origin` the place the record was first written. The index points
//! at the carried record, [`COPY_PREFIX`] bytes into the copy, so readers read it as any other.
//!
//! The inner records are exactly the sled layout's (decision 0101: a format byte first, never
//! rewritten); only the keys are replaced by the session, seq and command id written beside them.
//! An event record and its command's answer are one record, so they are atomic without a second key.

use super::segment::Pos;
use crate::SessionId;
use crate::layout::{self, MetaRecord};

pub(crate) const CREATE: u8 = b'm';
pub(crate) const EVENTS: u8 = b'e';
pub(crate) const ANSWER: u8 = b'a';
pub(crate) const STATUS: u8 = b'u';
pub(crate) const SNAPSHOT: u8 = b's';
pub(crate) const DROP_SNAPSHOTS: u8 = b'd';
pub(crate) const EXPIRY: u8 = b'x';
pub(crate) const COPY: u8 = b'c';

pub(crate) fn is_kind(kind: u8) -> bool {
    matches!(kind, CREATE | EVENTS | ANSWER | STATUS | SNAPSHOT | DROP_SNAPSHOTS | EXPIRY | COPY)
}

/// Bytes of a COPY record before the record it carries.
pub(crate) const COPY_PREFIX: usize = HEADER_LEN + ID + 5 * 4;

/// Kind byte and body length.
pub(crate) const HEADER_LEN: usize = 5;
const ID: usize = SessionId::LEN;

/// An answer to write: the command id, and its record (layout::encode_answer).
pub(crate) struct AnswerWrite {
    pub command_id: String,
    pub record: Vec<u8>,
}

/// Appends one record to `out`; returns its length, header included.
fn put(out: &mut Vec<u8>, kind: u8, session: &SessionId, body_len: usize, body: impl FnOnce(&mut Vec<u8>)) -> usize {
    let start = out.len();
    out.push(kind);
    out.extend_from_slice(&u32::try_from(ID + body_len).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(session.as_bytes());
    body(out);
    out.len() - start
}

pub(crate) fn put_meta(out: &mut Vec<u8>, kind: u8, session: &SessionId, meta_record: &[u8]) -> usize {
    put(out, kind, session, meta_record.len(), |o| o.extend_from_slice(meta_record))
}

pub(crate) fn events_len(records: &[Vec<u8>], answer: Option<&AnswerWrite>) -> usize {
    let events: usize = records.iter().map(|r| 4 + r.len()).sum();
    HEADER_LEN + ID + 8 + 4 + events + 1 + answer.map_or(0, |a| 2 + a.command_id.len() + a.record.len())
}

pub(crate) fn put_events(
    out: &mut Vec<u8>,
    session: &SessionId,
    first_seq: u64,
    records: &[Vec<u8>],
    answer: Option<&AnswerWrite>,
) -> usize {
    let body_len = events_len(records, answer) - HEADER_LEN - ID;
    put(out, EVENTS, session, body_len, |o| {
        o.extend_from_slice(&first_seq.to_be_bytes());
        o.extend_from_slice(&(records.len() as u32).to_be_bytes());
        for r in records {
            o.extend_from_slice(&(r.len() as u32).to_be_bytes());
            o.extend_from_slice(r);
        }
        match answer {
            None => o.push(0),
            Some(a) => {
                o.push(1);
                put_answer_body(o, a);
            }
        }
    })
}

pub(crate) fn answer_len(answer: &AnswerWrite) -> usize {
    HEADER_LEN + ID + 2 + answer.command_id.len() + answer.record.len()
}

pub(crate) fn put_answer(out: &mut Vec<u8>, session: &SessionId, answer: &AnswerWrite) -> usize {
    put(out, ANSWER, session, answer_len(answer) - HEADER_LEN - ID, |o| put_answer_body(o, answer))
}

fn put_answer_body(out: &mut Vec<u8>, answer: &AnswerWrite) {
    // The command id is at most layout::MAX_LABEL_BYTES (checked by encode_answer).
    out.extend_from_slice(&(answer.command_id.len() as u16).to_be_bytes());
    out.extend_from_slice(answer.command_id.as_bytes());
    out.extend_from_slice(&answer.record);
}

pub(crate) fn put_snapshot(out: &mut Vec<u8>, session: &SessionId, snapshot_record: &[u8]) -> usize {
    put(out, SNAPSHOT, session, snapshot_record.len(), |o| o.extend_from_slice(snapshot_record))
}

/// A record that is the session alone (DROP_SNAPSHOTS, EXPIRY).
pub(crate) fn put_bare(out: &mut Vec<u8>, kind: u8, session: &SessionId) -> usize {
    put(out, kind, session, 0, |_| {})
}

/// A COPY of `inner` (a whole record of another kind of `session`); see the module's doc.
pub(crate) fn put_copy(out: &mut Vec<u8>, session: &SessionId, from: Pos, released: u32, origin: Pos, inner: &[u8]) -> usize {
    put(out, COPY, session, 5 * 4 + inner.len(), |o| {
        for v in [from.seg, from.offset, released, origin.seg, origin.offset] {
            o.extend_from_slice(&v.to_be_bytes());
        }
        o.extend_from_slice(inner);
    })
}

/// Length of a bare or metadata record, for sizing frames before writing.
pub(crate) fn bare_len(body_len: usize) -> usize {
    HEADER_LEN + ID + body_len
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

/// One record of a frame: its kind, its offset in the frame's records, its whole length, its body.
pub(crate) struct Raw<'a> {
    pub kind: u8,
    pub offset: usize,
    pub len: usize,
    pub body: &'a [u8],
}

/// The records of a frame, in order; `Err` names the offset (in the records) that does not parse.
pub(crate) fn split(records: &[u8]) -> impl Iterator<Item = Result<Raw<'_>, (usize, String)>> {
    let mut at = 0usize;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || at >= records.len() {
            return None;
        }
        let rest = &records[at..];
        let Some((kind, body_len)) = parse_header(rest) else {
            failed = true;
            return Some(Err((at, "a record header runs past the end of its frame".into())));
        };
        let Some(body) = rest.get(HEADER_LEN..HEADER_LEN + body_len) else {
            failed = true;
            return Some(Err((at, format!("a record of {body_len} bytes runs past the end of its frame"))));
        };
        let raw = Raw { kind, offset: at, len: HEADER_LEN + body_len, body };
        at += raw.len;
        Some(Ok(raw))
    })
}

/// The kind and body length of a record header.
pub(crate) fn parse_header(bytes: &[u8]) -> Option<(u8, usize)> {
    let h = bytes.get(..HEADER_LEN)?;
    Some((h[0], u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize))
}

/// A record's body, decoded as far as the index needs it (the events themselves stay bytes).
pub(crate) enum Body<'a> {
    Create(MetaRecord),
    Status(MetaRecord),
    Events(Events<'a>),
    Answer { command_id: &'a str, record: &'a [u8] },
    Snapshot(&'a [u8]),
    DropSnapshots,
    Expiry,
    Copy(Copied<'a>),
}

/// A COPY record's body: where the record was, and the record it carries (decode it with
/// [`decode`]`(kind, body)`).
pub(crate) struct Copied<'a> {
    pub from: Pos,
    pub released: u32,
    pub origin: Pos,
    pub kind: u8,
    /// The carried record's body (its session first).
    pub body: &'a [u8],
    /// The carried record, whole.
    pub whole: &'a [u8],
}

pub(crate) struct Events<'a> {
    pub first_seq: u64,
    /// The event records, in seq order.
    pub records: Vec<&'a [u8]>,
    /// The command id and answer record written with the events, if any.
    pub answer: Option<(&'a str, &'a [u8])>,
}

/// Decodes a record's body; `Err` says what is wrong with it.
pub(crate) fn decode(kind: u8, body: &[u8]) -> Result<(SessionId, Body<'_>), String> {
    let mut r = Cursor { bytes: body };
    let session = SessionId::from_bytes(r.take(ID).and_then(|b| b.try_into().ok()).ok_or("no session id")?);
    let meta = |bytes: &[u8]| layout::decode_meta(session, bytes).map_err(|e| e.to_string());
    let body = match kind {
        CREATE => Body::Create(meta(r.rest())?),
        STATUS => Body::Status(meta(r.rest())?),
        EVENTS => Body::Events(decode_events(&mut r)?),
        ANSWER => {
            let (command_id, record) = decode_answer(&mut r)?;
            Body::Answer { command_id, record }
        }
        SNAPSHOT => Body::Snapshot(r.rest()),
        DROP_SNAPSHOTS | EXPIRY if !r.rest().is_empty() => return Err("trailing bytes".into()),
        DROP_SNAPSHOTS => Body::DropSnapshots,
        EXPIRY => Body::Expiry,
        COPY => Body::Copy(decode_copy(session, &mut r)?),
        other => return Err(format!("unknown record kind {other:#04x}")),
    };
    Ok((session, body))
}

fn decode_copy<'a>(session: SessionId, r: &mut Cursor<'a>) -> Result<Copied<'a>, String> {
    let mut v = [0u32; 5];
    for x in &mut v {
        *x = r.u32().ok_or("truncated copy header")?;
    }
    let whole = r.rest();
    let (kind, len) = parse_header(whole).ok_or("a copy without its record")?;
    if kind == COPY || !is_kind(kind) {
        return Err(format!("a copy of a record of kind {kind:#04x}"));
    }
    if HEADER_LEN + len != whole.len() {
        return Err("a copy whose record's length is not the rest of it".into());
    }
    let body = &whole[HEADER_LEN..];
    if body.get(..ID) != Some(session.as_bytes().as_slice()) {
        return Err("a copy of another session's record".into());
    }
    Ok(Copied { from: Pos { seg: v[0], offset: v[1] }, released: v[2], origin: Pos { seg: v[3], offset: v[4] }, kind, body, whole })
}

fn decode_events<'a>(r: &mut Cursor<'a>) -> Result<Events<'a>, String> {
    let first_seq = r.u64().ok_or("truncated events header")?;
    let count = r.u32().ok_or("truncated events header")? as usize;
    if count == 0 || first_seq == 0 {
        return Err(format!("an events record of {count} events from seq {first_seq}"));
    }
    let mut records = Vec::with_capacity(count.min(r.bytes.len() / 4));
    for i in 0..count {
        let len = r.u32().ok_or_else(|| format!("event {i} of {count}: truncated"))? as usize;
        records.push(r.take(len).ok_or_else(|| format!("event {i} of {count}: truncated"))?);
    }
    let answer = match r.take(1) {
        Some([0]) if r.bytes.is_empty() => None,
        Some([1]) => Some(decode_answer(r)?),
        _ => return Err("bad answer marker after the events".into()),
    };
    Ok(Events { first_seq, records, answer })
}

fn decode_answer<'a>(r: &mut Cursor<'a>) -> Result<(&'a str, &'a [u8]), String> {
    let len = r.u16().ok_or("truncated command id")? as usize;
    let id = std::str::from_utf8(r.take(len).ok_or("truncated command id")?).map_err(|_| "command id: not UTF-8")?;
    Ok((id, r.rest()))
}

/// The schema version of a snapshot record, from its fixed header (format, seq, version), without
/// decoding its state; `None` for a record this code cannot read (a snapshot is only a cache).
/// Formats 1 and 2 share that header.
pub(crate) fn snapshot_version(record: &[u8]) -> Option<u32> {
    if !matches!(record.first(), Some(&(layout::SNAPSHOT_FORMAT_V1 | layout::SNAPSHOT_FORMAT_V2))) {
        return None;
    }
    record.get(9..13).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes)
}

struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Some(head)
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2).and_then(|b| b.try_into().ok()).map(u16::from_be_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes)
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionStatus;

    #[test]
    fn a_snapshots_version_is_read_from_either_format() {
        let snapshot = crate::Snapshot { seq: 3, schema_version: 7, time_ms: 1, state: serde_json::json!({}).into(), log_bytes: None };
        assert_eq!(snapshot_version(&layout::encode_snapshot(&snapshot).unwrap()), Some(7));
        let counted = crate::Snapshot { log_bytes: Some(42), ..snapshot };
        assert_eq!(snapshot_version(&layout::encode_snapshot(&counted).unwrap()), Some(7));
        assert_eq!(snapshot_version(&[3, 0, 0]), None);
    }

    #[test]
    fn records_round_trip_and_split() {
        let s = SessionId::from_bytes([7; 16]);
        let meta = MetaRecord { status: SessionStatus::Active, created_ms: 5, project: "p".into(), resume_token_hash: None };
        let meta_bytes = layout::encode_meta(&meta).unwrap();
        let answer = AnswerWrite { command_id: "c1".into(), record: vec![1, 2, 3] };
        let events = vec![vec![9u8; 3], vec![8u8; 5]];
        let mut out = Vec::new();
        let n1 = put_meta(&mut out, CREATE, &s, &meta_bytes);
        assert_eq!(n1, bare_len(meta_bytes.len()));
        let n2 = put_events(&mut out, &s, 4, &events, Some(&answer));
        assert_eq!(n2, events_len(&events, Some(&answer)));
        let n3 = put_answer(&mut out, &s, &answer);
        assert_eq!(n3, answer_len(&answer));
        put_bare(&mut out, EXPIRY, &s);
        let raws: Vec<_> = split(&out).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            raws.iter().map(|r| (r.kind, r.offset)).collect::<Vec<_>>(),
            vec![(CREATE, 0), (EVENTS, n1), (ANSWER, n1 + n2), (EXPIRY, n1 + n2 + n3)]
        );
        match decode(raws[1].kind, raws[1].body).unwrap() {
            (id, Body::Events(e)) => {
                assert_eq!(id, s);
                assert_eq!((e.first_seq, e.records.len(), e.answer), (4, 2, Some(("c1", &[1u8, 2, 3][..]))));
            }
            _ => panic!("not events"),
        }
        assert!(matches!(decode(raws[0].kind, raws[0].body), Ok((_, Body::Create(m))) if m == meta));
        // Any cut is an error, never a panic.
        for cut in 0..out.len() {
            for raw in split(&out[..cut]).flatten() {
                let _ = decode(raw.kind, raw.body);
            }
        }
        // (The answer record runs to the end of the body, so cuts inside it are the frame CRC's job.)
        for cut in 0..raws[1].body.len() - answer.record.len() {
            assert!(decode(EVENTS, &raws[1].body[..cut]).is_err(), "cut at {cut}");
        }
    }
}
