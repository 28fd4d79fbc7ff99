use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A session's identity: 16 random bytes, written as 32 lowercase hex characters.
///
/// Fixed width keeps the log's keys fixed width (`session ++ seq`), so one session's events are one
/// contiguous, ordered key range.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId([u8; 16]);

impl SessionId {
    pub const LEN: usize = 16;

    pub fn random() -> Self {
        Self(rand::random())
    }

    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionId({self})")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a session id is 32 hexadecimal characters, got {0:?}")]
pub struct SessionIdParseError(pub String);

impl FromStr for SessionId {
    type Err = SessionIdParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut bytes = [0u8; 16];
        if s.len() != 32 || hex::decode_to_slice(s, &mut bytes).is_err() {
            return Err(SessionIdParseError(s.chars().take(64).collect()));
        }
        Ok(Self(bytes))
    }
}

impl Serialize for SessionId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// An event as the caller hands it to [`crate::EventLog::append`]: everything but its place in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewEvent {
    /// Wall-clock time the event was decided, in Unix milliseconds (an input to the decider, not read here).
    pub time_ms: u64,
    pub event_type: String,
    pub schema_version: u32,
    /// The command that caused the event (its client-generated id), if any.
    pub correlation_id: Option<String>,
    /// The caller's checksum of its state after this event, if it recorded one (the session actor
    /// records the state hash it sent to clients on the last event of each decision), so a replay
    /// can prove it reaches the same states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    pub payload: serde_json::Value,
}

/// An event as stored: the envelope of the design brief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub session: SessionId,
    /// Position in the session's stream: from 1, contiguous.
    pub seq: u64,
    pub time_ms: u64,
    pub event_type: String,
    pub schema_version: u32,
    pub correlation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    pub payload: serde_json::Value,
}

impl Envelope {
    pub fn from_new(session: SessionId, seq: u64, event: NewEvent) -> Self {
        Self {
            session,
            seq,
            time_ms: event.time_ms,
            event_type: event.event_type,
            schema_version: event.schema_version,
            correlation_id: event.correlation_id,
            checksum: event.checksum,
            payload: event.payload,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_id_text_round_trips() {
        let id = SessionId::random();
        assert_eq!(id.to_string().parse::<SessionId>().unwrap(), id);
        assert_eq!(id.to_string().len(), 32);
    }

    #[test]
    fn session_id_rejects_malformed_text() {
        assert!("xyz".parse::<SessionId>().is_err());
        assert!("0".repeat(31).parse::<SessionId>().is_err());
        assert!("g".repeat(32).parse::<SessionId>().is_err());
    }
}
