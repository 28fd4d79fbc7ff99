//! What the store crash test's child (`store-crash-child`) and parent (`tests/store_crash.rs`)
//! agree on: the sessions, the exact event at every (session, seq), and the child's stdout lines.

use vestibule_store::{Envelope, NewEvent, SessionId};

/// Sessions every child appends to (created by the first child that gets that far).
pub const SESSIONS: usize = 32;

pub fn session(i: usize) -> SessionId {
    let mut bytes = [0u8; 16];
    bytes[..4].copy_from_slice(b"crsh");
    bytes[8..].copy_from_slice(&(i as u64).to_be_bytes());
    SessionId::from_bytes(bytes)
}

/// A session created by the child of `cycle` (to check that creations are durable too).
pub fn cycle_session(cycle: u64) -> SessionId {
    let mut bytes = [0u8; 16];
    bytes[..4].copy_from_slice(b"cycl");
    bytes[8..].copy_from_slice(&cycle.to_be_bytes());
    SessionId::from_bytes(bytes)
}

/// The one event that may ever be stored at (`session`, `seq`); its payload checks itself.
pub fn expected_event(session: SessionId, seq: u64) -> NewEvent {
    let mix = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(session.as_bytes()[15]);
    NewEvent {
        time_ms: 1_700_000_000_000 + seq,
        event_type: "crash.appended".into(),
        schema_version: 1,
        correlation_id: Some(format!("{session}:{seq}")),
        checksum: None,
        payload: serde_json::json!({
            "session": session.to_string(),
            "seq": seq,
            "check": format!("{mix:016x}"),
            "pad": "p".repeat((seq % 97) as usize),
        })
        .into(),
    }
}

pub fn expected_envelope(session: SessionId, seq: u64) -> Envelope {
    Envelope::from_new(session, seq, expected_event(session, seq))
}

/// A line the child prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildLine {
    /// The log is open and the sessions exist; appending starts.
    Ready,
    /// `create_session` of this session resolved.
    Created(SessionId),
    /// An append to this session resolved: everything up to this seq is acknowledged.
    Ack(SessionId, u64),
}

impl ChildLine {
    pub fn render(&self) -> String {
        match self {
            Self::Ready => "ready".into(),
            Self::Created(s) => format!("created {s}"),
            Self::Ack(s, seq) => format!("ack {s} {seq}"),
        }
    }

    pub fn parse(line: &str) -> Option<Self> {
        let mut parts = line.split_whitespace();
        match (parts.next()?, parts.next(), parts.next(), parts.next()) {
            ("ready", None, None, None) => Some(Self::Ready),
            ("created", Some(s), None, None) => Some(Self::Created(s.parse().ok()?)),
            ("ack", Some(s), Some(seq), None) => Some(Self::Ack(s.parse().ok()?, seq.parse().ok()?)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_garbage_is_rejected() {
        for line in [ChildLine::Ready, ChildLine::Created(session(3)), ChildLine::Ack(session(1), 42)] {
            assert_eq!(ChildLine::parse(&line.render()), Some(line));
        }
        // (A line cut short by the kill is dropped by the reader: only newline-terminated lines count.)
        let full = ChildLine::Ack(session(1), 42).render();
        assert_eq!(ChildLine::parse(&full[..full.len() - 5]), None);
        assert_eq!(ChildLine::parse("ack"), None);
        assert_eq!(ChildLine::parse("ready now"), None);
        assert_ne!(session(1), session(2));
        assert_ne!(session(1), cycle_session(1));
    }
}
