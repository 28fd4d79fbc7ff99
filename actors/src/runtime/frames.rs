//! Building diffs, and rebuilding state and diffs from the log.

use std::sync::Arc;

use vestibule_store::{CommandAnswer, Envelope, EventLog, NewEvent, SessionId, StoreError};

use crate::protocol::WireEvent;
use crate::session::wire::{self, CanonicalState, PatchText};
use crate::session::{self, Event, Regions, STATE_SCHEMA_VERSION, SessionState};

/// One published diff, serialized once.
#[derive(Debug, Clone)]
pub struct DiffFrame {
    pub seq: u64,
    pub prev_seq: u64,
    pub state_hash: String,
    pub text: Arc<str>,
}

/// The diff frame's text: `ServerMessage::Diff`, with its events (`events_json`, a JSON array of
/// `WireEvent`s) and its patch written as they were computed (JSON text) rather than parsed and
/// serialized again.
pub(crate) fn build_diff(prev_seq: u64, seq: u64, events_json: &[u8], patch: &PatchText, state_hash: String) -> DiffFrame {
    let mut text = Vec::with_capacity(96 + events_json.len() + patch.len());
    text.extend_from_slice(b"{\"type\":\"diff\",\"seq\":");
    text.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
    text.extend_from_slice(b",\"prevSeq\":");
    text.extend_from_slice(itoa::Buffer::new().format(prev_seq).as_bytes());
    text.extend_from_slice(b",\"events\":");
    text.extend_from_slice(events_json);
    text.extend_from_slice(b",\"patch\":");
    patch.write_to(&mut text);
    text.extend_from_slice(b",\"stateHash\":");
    serde_json::to_writer(&mut text, &state_hash).expect("a string serializes");
    text.push(b'}');
    let text: Arc<str> = String::from_utf8(text).expect("JSON text is UTF-8").into();
    DiffFrame { seq, prev_seq, state_hash, text }
}

/// A decision's events as the log stores them and as its diff carries them, each payload
/// serialized once ([`Event::payload_json`]): the `NewEvent`s to append, and the JSON array of
/// `WireEvent`s (`{seq, timeMs, correlationId, type, payload}`) they will be once stored at
/// `expected_seq + 1 ..`. The last event carries `checksum`.
pub(crate) struct DecidedEvents {
    pub new_events: Vec<NewEvent>,
    pub wire_json: Vec<u8>,
}

pub(crate) fn decided_events(events: &[Event], expected_seq: u64, time_ms: u64, correlation_id: &str, checksum: String) -> DecidedEvents {
    let mut wire_json = Vec::with_capacity(128 * events.len());
    let mut new_events = Vec::with_capacity(events.len());
    let mut checksum = Some(checksum);
    wire_json.push(b'[');
    for (i, event) in events.iter().enumerate() {
        let event_type = event.type_name();
        let payload = event.payload_json();
        if i > 0 {
            wire_json.push(b',');
        }
        let wire = WireEventText { seq: expected_seq + 1 + i as u64, time_ms, correlation_id, event_type, payload: payload.json() };
        wire.write_to(&mut wire_json);
        new_events.push(NewEvent {
            time_ms,
            event_type: event_type.to_string(),
            schema_version: Event::schema_version(event_type),
            correlation_id: Some(correlation_id.to_string()),
            checksum: if i + 1 == events.len() { checksum.take() } else { None },
            payload,
        });
    }
    wire_json.push(b']');
    DecidedEvents { new_events, wire_json }
}

/// One `WireEvent` written from its parts: the same JSON as serializing the `WireEvent` (a test
/// checks), with the payload copied as it is.
struct WireEventText<'a> {
    seq: u64,
    time_ms: u64,
    correlation_id: &'a str,
    event_type: &'a str,
    payload: &'a str,
}

impl WireEventText<'_> {
    fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"seq\":");
        out.extend_from_slice(itoa::Buffer::new().format(self.seq).as_bytes());
        out.extend_from_slice(b",\"timeMs\":");
        out.extend_from_slice(itoa::Buffer::new().format(self.time_ms).as_bytes());
        out.extend_from_slice(b",\"correlationId\":");
        serde_json::to_writer(&mut *out, self.correlation_id).expect("a string serializes");
        // Event type names are Rust identifiers: nothing to escape.
        out.extend_from_slice(b",\"type\":\"");
        out.extend_from_slice(self.event_type.as_bytes());
        out.extend_from_slice(b"\",\"payload\":");
        out.extend_from_slice(self.payload.as_bytes());
        out.push(b'}');
    }
}

/// The domain event stored in an envelope (already upcast by the log).
pub(crate) fn decode(envelope: &Envelope) -> Result<Event, StoreError> {
    Event::from_parts(&envelope.event_type, envelope.payload.clone()).map_err(|e| StoreError::Corrupt {
        session: envelope.session,
        seq: envelope.seq,
        reason: format!("{} payload does not decode: {e}", envelope.event_type),
    })
}

/// The state of `session` at `upto` (or at the end of its log): the newest usable snapshot plus the
/// events after it. Returns the state and its seq.
pub async fn fold_log(log: &dyn EventLog, session: SessionId, upto: Option<u64>) -> Result<(SessionState, u64), StoreError> {
    fold(log, session, upto, false).await.map(|f| (f.state, f.seq))
}

/// What a session rebuilds from its log when it wakes: its state and seq, and the bytes it had
/// written to its log (decision 0107).
pub struct Folded {
    pub state: SessionState,
    pub seq: u64,
    /// The snapshot's count (0 if it has none: written before the count existed, or no snapshot),
    /// plus, for each event after it, [`vestibule_store::Envelope::log_bytes`] and, for each
    /// decision of a client's command among them, its accepted answer (written with its events).
    /// Answers written without events after the snapshot (refusals, no-ops) are not in the events,
    /// so they are not counted here.
    pub log_bytes: u64,
}

/// [`fold_log`] to the end, counting the bytes the session wrote to its log.
pub async fn fold_log_counting(log: &dyn EventLog, session: SessionId) -> Result<Folded, StoreError> {
    fold(log, session, None, true).await
}

/// Whether events with this correlation id were decided from a client's command, whose accepted
/// answer was written with them (see `Source::correlation`: the runtime's own are `timer:<seq>`,
/// `effect:<seq>` and `session:start`; a client's command id never holds a `:`).
fn answered(correlation_id: &str) -> bool {
    !correlation_id.contains(':')
}

async fn fold(log: &dyn EventLog, session: SessionId, upto: Option<u64>, count: bool) -> Result<Folded, StoreError> {
    let snapshot = log.get_snapshot(session, STATE_SCHEMA_VERSION).await?;
    let snapshot = snapshot.filter(|s| upto.is_none_or(|u| s.seq <= u));
    let (mut state, mut seq, mut log_bytes) = match snapshot {
        Some(s) => match serde_json::from_str::<SessionState>(s.state.json()) {
            // A snapshot taken before the count existed counts as 0 (docs/decisions/0107).
            Ok(state) => (state, s.seq, s.log_bytes.unwrap_or(0)),
            // A snapshot is only a cache: an unreadable one is ignored and the log folded instead.
            Err(e) => {
                tracing::warn!(session = %session, seq = s.seq, error = %e, "ignoring an unreadable snapshot");
                (SessionState::default(), 0, 0)
            }
        },
        None => (SessionState::default(), 0, 0),
    };
    // A snapshot is taken between two decisions, so the tail starts with one.
    let mut decision: Option<String> = None;
    // The tail is read `FOLD_CHUNK` events at a time, so that a long one (an imported session of a
    // million events) is never held in memory at once.
    let end = upto.unwrap_or(u64::MAX - 1);
    while seq < end {
        let chunk_end = end.min(seq.saturating_add(FOLD_CHUNK));
        let chunk = log.read(session, seq + 1, Some(chunk_end)).await?;
        let complete = chunk.len() as u64 == chunk_end - seq;
        for envelope in &chunk {
            if envelope.seq != seq + 1 {
                return Err(StoreError::Corrupt { session, seq: envelope.seq, reason: format!("gap after seq {seq}") });
            }
            state = session::evolve(state, &decode(envelope)?);
            seq = envelope.seq;
            if count {
                log_bytes += envelope.log_bytes();
                let correlation = envelope.correlation_id.as_deref();
                if correlation != decision.as_deref() {
                    decision = correlation.map(str::to_string);
                    if let Some(id) = correlation.filter(|id| answered(id)) {
                        log_bytes += CommandAnswer { command_id: id.to_string(), seq, refusal: None }.log_bytes();
                    }
                }
            }
        }
        if !complete {
            // The end of the log, unless events follow a hole at the chunk's end (a gap a single
            // read would have met as the next event's seq).
            let latest = log.latest_seq(session).await?;
            if seq < latest.min(end) {
                return Err(StoreError::Corrupt { session, seq: seq + 1, reason: format!("gap after seq {seq}") });
            }
            break;
        }
    }
    Ok(Folded { state, seq, log_bytes })
}

/// Events a fold reads from the log at once.
pub(crate) const FOLD_CHUNK: u64 = 4096;

/// The diffs after `from_seq`, one per decision (consecutive events sharing a correlation id), as
/// they were published: each serializes, hashes and diffs only the regions its events touch.
///
/// `None` when `from_seq` is inside a decision's events (the event after it has the same
/// correlation id): no diff ended there, so no client holds that state, and diffs from it would
/// start from a state nobody was sent.
pub(crate) async fn diffs_since(log: &dyn EventLog, session: SessionId, from_seq: u64) -> Result<Option<Vec<DiffFrame>>, StoreError> {
    let (mut state, at) = fold_log(log, session, Some(from_seq)).await?;
    if at != from_seq {
        return Err(StoreError::Corrupt { session, seq: from_seq, reason: format!("the log ends at {at}") });
    }
    // From the event at `from_seq` itself (if any), to tell whether a decision ended there.
    let mut tail = log.read(session, from_seq.max(1), None).await?;
    if from_seq > 0 {
        match tail.first() {
            Some(last_held) if last_held.seq == from_seq => {
                if tail.get(1).is_some_and(|next| next.correlation_id == last_held.correlation_id) {
                    return Ok(None);
                }
                tail.remove(0);
            }
            _ => return Err(StoreError::Corrupt { session, seq: from_seq, reason: "the event folded to is not in the log".into() }),
        }
    }
    let mut frames = Vec::new();
    let mut canonical = CanonicalState::of(&state);
    let mut i = 0;
    while i < tail.len() {
        let correlation = tail[i].correlation_id.clone();
        let mut events = Vec::new();
        let mut touched = Regions::NONE;
        while i < tail.len() && tail[i].correlation_id == correlation {
            let event = decode(&tail[i])?;
            touched = touched.union(event.regions());
            state = session::evolve(state, &event);
            events.push(WireEvent { seq: tail[i].seq, time_ms: tail[i].time_ms, correlation_id: tail[i].correlation_id.clone(), event });
            i += 1;
        }
        let changed = canonical.update(&state, touched);
        let prev = frames.last().map_or(from_seq, |f: &DiffFrame| f.seq);
        let seq = events.last().map_or(prev, |e| e.seq);
        let events_json = serde_json::to_vec(&events).expect("events serialize");
        frames.push(build_diff(prev, seq, &events_json, &wire::patch_regions(&changed, &canonical), canonical.hash()));
    }
    Ok(Some(frames))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ServerMessage;
    use crate::session::Event;

    #[test]
    fn a_diff_frame_is_a_server_diff_message() {
        let events = vec![
            Event::ModalOpened {},
            Event::ConnectFailed {
                namespace: crate::model::caip::Namespace::Eip155,
                connector_id: "io.\"x\"".into(),
                code: None,
                message: "✗ \\ \u{1}".into(),
            },
        ];
        let decided = decided_events(&events, 6, 5, "c\"1", "0123456789abcdef".into());
        let mut patch = PatchText::new();
        patch.diff("/modal", br#"{"status":"closed"}"#, br#"{"status":"open"}"#);
        let frame = build_diff(6, 8, &decided.wire_json, &patch, "0123456789abcdef".into());
        let parsed: ServerMessage = serde_json::from_str(&frame.text).unwrap();
        let expected_patch: json_patch::Patch = serde_json::from_slice(&patch.to_json()).unwrap();
        let wire: Vec<WireEvent> = events
            .iter()
            .enumerate()
            .map(|(i, event)| WireEvent { seq: 7 + i as u64, time_ms: 5, correlation_id: Some("c\"1".into()), event: event.clone() })
            .collect();
        // The events written from their parts are exactly what serializing them writes.
        assert_eq!(decided.wire_json, serde_json::to_vec(&wire).unwrap());
        let expected =
            ServerMessage::Diff { seq: 8, prev_seq: 6, events: wire, patch: expected_patch, state_hash: "0123456789abcdef".into() };
        assert_eq!(parsed, expected);
        assert_eq!(serde_json::to_value(&parsed).unwrap(), serde_json::from_str::<serde_json::Value>(&frame.text).unwrap());
        assert_eq!((frame.seq, frame.prev_seq), (8, 6));
    }

    /// A fold reads the log `FOLD_CHUNK` events at a time (a session imported with a million
    /// events took 175 MB to rebuild when it was read at once), and still folds every event, to the
    /// end or to the seq asked for.
    #[tokio::test]
    async fn a_fold_reads_the_log_in_chunks() {
        use std::sync::Mutex;
        use vestibule_store::*;

        struct Counting {
            inner: SegmentEventLog,
            reads: Mutex<Vec<(u64, Option<u64>, usize)>>,
        }
        #[async_trait::async_trait]
        impl EventLog for Counting {
            async fn create_session(&self, s: SessionId, n: NewSession) -> Result<SessionMeta, StoreError> {
                self.inner.create_session(s, n).await
            }
            async fn append(&self, s: SessionId, e: u64, ev: Vec<NewEvent>) -> Result<AppendOutcome, StoreError> {
                self.inner.append(s, e, ev).await
            }
            async fn append_answered(
                &self,
                s: SessionId,
                e: u64,
                ev: Vec<NewEvent>,
                a: CommandAnswer,
            ) -> Result<AppendOutcome, StoreError> {
                self.inner.append_answered(s, e, ev, a).await
            }
            async fn remember_answer(&self, s: SessionId, a: CommandAnswer) -> Result<(), StoreError> {
                self.inner.remember_answer(s, a).await
            }
            async fn answer(&self, s: SessionId, id: &str) -> Result<Option<CommandAnswer>, StoreError> {
                self.inner.answer(s, id).await
            }
            async fn read(&self, s: SessionId, f: u64, t: Option<u64>) -> Result<Vec<Envelope>, StoreError> {
                let events = self.inner.read(s, f, t).await?;
                self.reads.lock().unwrap().push((f, t, events.len()));
                Ok(events)
            }
            fn stream(&self, s: SessionId, f: u64) -> EventStream {
                self.inner.stream(s, f)
            }
            fn follow(&self, s: SessionId, f: u64) -> EventStream {
                self.inner.follow(s, f)
            }
            async fn latest_seq(&self, s: SessionId) -> Result<u64, StoreError> {
                self.inner.latest_seq(s).await
            }
            async fn session_meta(&self, s: SessionId) -> Result<Option<SessionMeta>, StoreError> {
                self.inner.session_meta(s).await
            }
            async fn set_status(&self, s: SessionId, st: SessionStatus) -> Result<(), StoreError> {
                self.inner.set_status(s, st).await
            }
            async fn list_sessions(&self, f: &SessionFilter, a: Option<SessionId>, l: usize) -> Result<SessionPage, StoreError> {
                self.inner.list_sessions(f, a, l).await
            }
            async fn put_snapshot(&self, s: SessionId, sn: Snapshot) -> Result<(), StoreError> {
                self.inner.put_snapshot(s, sn).await
            }
            async fn get_snapshot(&self, s: SessionId, v: u32) -> Result<Option<Snapshot>, StoreError> {
                self.inner.get_snapshot(s, v).await
            }
            async fn delete_snapshots(&self, s: Option<SessionId>) -> Result<(), StoreError> {
                self.inner.delete_snapshots(s).await
            }
            async fn expire(&self, p: &RetentionPolicy, n: u64) -> Result<ExpireReport, StoreError> {
                self.inner.expire(p, n).await
            }
            async fn disk_usage(&self) -> Result<u64, StoreError> {
                self.inner.disk_usage().await
            }
            async fn flush(&self) -> Result<(), StoreError> {
                self.inner.flush().await
            }
        }

        let dir = tempfile::tempdir().unwrap();
        let log = Counting { inner: SegmentEventLog::open(StoreConfig::at(dir.path())).unwrap(), reads: Mutex::default() };
        let id = SessionId::random();
        log.create_session(id, NewSession { project: "p".into(), created_ms: 1, resume_token_hash: None }).await.unwrap();
        let n = 2 * FOLD_CHUNK + 5;
        let events = (0..n).map(|i| if i % 2 == 0 { Event::ModalOpened {} } else { Event::ModalClosed {} }).collect::<Vec<_>>();
        let mut seq = 0;
        for batch in events.chunks(1000) {
            log.append(id, seq, decided_events(batch, seq, 1, &format!("c{seq}"), "0123456789abcdef".into()).new_events).await.unwrap();
            seq += batch.len() as u64;
        }
        let expected = events.iter().fold(SessionState::default(), session::evolve);

        let (state, at) = fold_log(&log, id, None).await.unwrap();
        assert_eq!((at, wire::to_value(&state)), (n, wire::to_value(&expected)));
        let reads = std::mem::take(&mut *log.reads.lock().unwrap());
        assert!(reads.iter().all(|&(_, _, len)| len as u64 <= FOLD_CHUNK), "{reads:?}");
        assert_eq!(reads.iter().map(|r| r.2 as u64).sum::<u64>(), n, "{reads:?}");

        let (_, at) = fold_log(&log, id, Some(FOLD_CHUNK + 7)).await.unwrap();
        assert_eq!(at, FOLD_CHUNK + 7);
        let reads = std::mem::take(&mut *log.reads.lock().unwrap());
        assert_eq!(reads, [(1, Some(FOLD_CHUNK), FOLD_CHUNK as usize), (FOLD_CHUNK + 1, Some(FOLD_CHUNK + 7), 7)]);
    }

    #[test]
    fn decided_events_are_what_the_log_stores_with_the_checksum_on_the_last() {
        let events = vec![Event::ModalOpened {}, Event::ModalClosed {}];
        let decided = decided_events(&events, 0, 42, "cmd-1", "feedface00000000".into());
        let stored: Vec<_> = decided
            .new_events
            .iter()
            .map(|e| (e.event_type.as_str(), e.time_ms, e.correlation_id.as_deref(), e.checksum.as_deref()))
            .collect();
        assert_eq!(stored, vec![("ModalOpened", 42, Some("cmd-1"), None), ("ModalClosed", 42, Some("cmd-1"), Some("feedface00000000"))]);
        for (new, event) in decided.new_events.iter().zip(&events) {
            assert_eq!(Event::from_parts(&new.event_type, new.payload.to_value()).unwrap(), *event);
            assert_eq!(new.schema_version, Event::schema_version(&new.event_type));
        }
    }
}
