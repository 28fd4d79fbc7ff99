//! Building diffs, and rebuilding state and diffs from the log.

use std::sync::Arc;

use vestibule_store::{Envelope, EventLog, NewEvent, SessionId, StoreError};

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

/// The diff frame's text: `ServerMessage::Diff`, with the patch written as it was computed (JSON
/// text) rather than parsed into operations and serialized again.
pub(crate) fn build_diff(prev_seq: u64, events: Vec<WireEvent>, patch: &PatchText, state_hash: String) -> DiffFrame {
    let seq = events.last().map_or(prev_seq, |e| e.seq);
    let mut text = Vec::with_capacity(256);
    text.extend_from_slice(b"{\"type\":\"diff\",\"seq\":");
    text.extend_from_slice(seq.to_string().as_bytes());
    text.extend_from_slice(b",\"prevSeq\":");
    text.extend_from_slice(prev_seq.to_string().as_bytes());
    text.extend_from_slice(b",\"events\":");
    serde_json::to_writer(&mut text, &events).expect("events serialize");
    text.extend_from_slice(b",\"patch\":");
    patch.write_to(&mut text);
    text.extend_from_slice(b",\"stateHash\":");
    serde_json::to_writer(&mut text, &state_hash).expect("a string serializes");
    text.push(b'}');
    let text: Arc<str> = String::from_utf8(text).expect("JSON text is UTF-8").into();
    DiffFrame { seq, prev_seq, state_hash, text }
}

pub(crate) fn to_new_event(event: &Event, time_ms: u64, correlation_id: &str, checksum: Option<String>) -> NewEvent {
    let event_type = event.type_name();
    NewEvent {
        time_ms,
        event_type: event_type.to_string(),
        schema_version: Event::schema_version(event_type),
        correlation_id: Some(correlation_id.to_string()),
        checksum,
        payload: event.payload(),
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
    let snapshot = log.get_snapshot(session, STATE_SCHEMA_VERSION).await?;
    let snapshot = snapshot.filter(|s| upto.is_none_or(|u| s.seq <= u));
    let (mut state, mut seq) = match snapshot {
        Some(s) => match serde_json::from_value::<SessionState>(s.state) {
            Ok(state) => (state, s.seq),
            // A snapshot is only a cache: an unreadable one is ignored and the log folded instead.
            Err(e) => {
                tracing::warn!(session = %session, seq = s.seq, error = %e, "ignoring an unreadable snapshot");
                (SessionState::default(), 0)
            }
        },
        None => (SessionState::default(), 0),
    };
    let tail = log.read(session, seq + 1, upto).await?;
    for envelope in &tail {
        if envelope.seq != seq + 1 {
            return Err(StoreError::Corrupt { session, seq: envelope.seq, reason: format!("gap after seq {seq}") });
        }
        state = session::evolve(state, &decode(envelope)?);
        seq = envelope.seq;
    }
    Ok((state, seq))
}

/// The diffs after `from_seq`, one per decision (consecutive events sharing a correlation id), as
/// they were published: each serializes, hashes and diffs only the regions its events touch.
pub(crate) async fn diffs_since(log: &dyn EventLog, session: SessionId, from_seq: u64) -> Result<Vec<DiffFrame>, StoreError> {
    let (mut state, at) = fold_log(log, session, Some(from_seq)).await?;
    if at != from_seq {
        return Err(StoreError::Corrupt { session, seq: from_seq, reason: format!("the log ends at {at}") });
    }
    let tail = log.read(session, from_seq + 1, None).await?;
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
        frames.push(build_diff(prev, events, &wire::patch_regions(&changed, &canonical), canonical.hash()));
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ServerMessage;
    use crate::session::Event;

    #[test]
    fn a_diff_frame_is_a_server_diff_message() {
        let events = vec![WireEvent { seq: 8, time_ms: 5, correlation_id: Some("c\"1".into()), event: Event::ModalOpened {} }];
        let mut patch = PatchText::new();
        patch.diff("/modal", br#"{"status":"closed"}"#, br#"{"status":"open"}"#);
        let frame = build_diff(7, events.clone(), &patch, "0123456789abcdef".into());
        let parsed: ServerMessage = serde_json::from_str(&frame.text).unwrap();
        let expected_patch: json_patch::Patch = serde_json::from_slice(&patch.to_json()).unwrap();
        let expected = ServerMessage::Diff { seq: 8, prev_seq: 7, events, patch: expected_patch, state_hash: "0123456789abcdef".into() };
        assert_eq!(parsed, expected);
        assert_eq!(serde_json::to_value(&parsed).unwrap(), serde_json::from_str::<serde_json::Value>(&frame.text).unwrap());
        assert_eq!((frame.seq, frame.prev_seq), (8, 7));
    }
}
