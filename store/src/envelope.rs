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
#[error("a session id is 32 lowercase hexadecimal characters, got {0:?}")]
pub struct SessionIdParseError(pub String);

impl FromStr for SessionId {
    type Err = SessionIdParseError;

    /// Only the spelling `Display` writes: an id has one text, so whatever keys, counts or compares
    /// ids as text (the embedded wallet's frames per session, say) cannot be given the same session
    /// under 2^k spellings by changing the case of its letters.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut bytes = [0u8; 16];
        let lowercase_hex = s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if s.len() != 32 || !lowercase_hex || hex::decode_to_slice(s, &mut bytes).is_err() {
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
    pub payload: Payload,
}

impl NewEvent {
    /// What appending this event writes, as a session's budget of log bytes counts it (decision
    /// 0107): the length of its event record ([`crate::layout::event_record_len`]: header, type,
    /// correlation id, checksum and payload JSON), not the key or the backend's own framing.
    pub fn log_bytes(&self) -> u64 {
        crate::layout::event_record_len(
            self.event_type.len(),
            self.correlation_id.as_ref().map(String::len),
            self.checksum.as_ref().map(String::len),
            self.payload.json().len(),
        ) as u64
    }
}

/// An event's payload as the JSON text the log stores, serialized once by whoever decided the
/// event: the log copies these bytes into its record, and the gateway sends the same text in the
/// event's diff, with no `serde_json::Value` tree in between. Always one well-formed JSON value.
/// Two payloads are equal when their JSON values are, whatever the order of their members.
#[derive(Clone)]
pub struct Payload(Box<str>);

impl Payload {
    /// The payload whose JSON text is `text`; refused unless it is one JSON value.
    pub fn from_json(text: String) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<serde::de::IgnoredAny>(&text)?;
        Ok(Self(text.into_boxed_str()))
    }

    /// A payload from text that serde_json itself wrote for one value (not checked again: the
    /// write path serializes each event once and must not parse it back). Debug builds check.
    pub fn from_serialized(text: String) -> Self {
        debug_assert!(serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(), "not one JSON value: {text}");
        Self(text.into_boxed_str())
    }

    /// `value` serialized as JSON (with `T`'s own member order).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(value).map(Self::from_serialized)
    }

    /// The JSON text.
    pub fn json(&self) -> &str {
        &self.0
    }

    /// The payload parsed (for readers; the write path never builds it).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.json()).expect("a payload is one JSON value")
    }
}

impl From<serde_json::Value> for Payload {
    fn from(value: serde_json::Value) -> Self {
        Self::of(&value).expect("a JSON value serializes")
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.json() == other.json() || self.to_value() == other.to_value()
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.json())
    }
}

/// As the JSON value it is (not as a string).
impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &serde_json::value::RawValue = serde_json::from_str(self.json()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        Ok(Self(raw.into()))
    }
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
    /// [`NewEvent::log_bytes`] of the event as read: the payload is measured as serde_json writes
    /// the value read (the stored text is not kept), which is the stored text's length for a
    /// payload serde_json wrote and that was not upcast (members in another order, same length); an
    /// upcast payload counts as its current version. Counted as a format 2 record (with the
    /// checksum field), whatever format it was stored in.
    pub fn log_bytes(&self) -> u64 {
        struct Count(usize);
        impl std::io::Write for Count {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0 += bytes.len();
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut payload = Count(0);
        serde_json::to_writer(&mut payload, &self.payload).expect("a JSON value serializes");
        crate::layout::event_record_len(
            self.event_type.len(),
            self.correlation_id.as_ref().map(String::len),
            self.checksum.as_ref().map(String::len),
            payload.0,
        ) as u64
    }

    pub fn from_new(session: SessionId, seq: u64, event: NewEvent) -> Self {
        Self {
            session,
            seq,
            time_ms: event.time_ms,
            event_type: event.event_type,
            schema_version: event.schema_version,
            correlation_id: event.correlation_id,
            checksum: event.checksum,
            payload: event.payload.to_value(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_has_one_spelling() {
        let id = SessionId::from_bytes([0xab; 16]);
        let text = id.to_string();
        assert_eq!(text.parse::<SessionId>(), Ok(id), "the spelling Display writes parses");
        for other in
            [text.to_uppercase(), format!("A{}", &text[1..]), format!("{text}0"), text[1..].to_string(), format!("g{}", &text[1..])]
        {
            assert!(other.parse::<SessionId>().is_err(), "{other:?} is not a session id");
        }
    }

    #[test]
    fn a_payload_is_one_json_value_kept_as_text() {
        let p = Payload::from_json(r#"{"b":1,"a":[true,null]}"#.to_string()).unwrap();
        assert_eq!(p.json(), r#"{"b":1,"a":[true,null]}"#, "the text is kept as written");
        assert_eq!(p.to_value(), serde_json::json!({"a": [true, null], "b": 1}));
        assert_eq!(p, Payload::from(serde_json::json!({"a": [true, null], "b": 1})), "equal as JSON values");
        assert_ne!(p, Payload::from(serde_json::json!({"a": [true], "b": 1})));
        for bad in ["", "{", "{} {}", "nul", "{\"a\":}"] {
            assert!(Payload::from_json(bad.to_string()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_new_event_serializes_its_payload_as_json_not_as_a_string() {
        let event = NewEvent {
            time_ms: 5,
            event_type: "T".into(),
            schema_version: 1,
            correlation_id: None,
            checksum: None,
            payload: serde_json::json!({"n": 1}).into(),
        };
        let text = serde_json::to_string(&event).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap()["payload"], serde_json::json!({"n": 1}));
        assert_eq!(serde_json::from_str::<NewEvent>(&text).unwrap(), event);
    }

    #[test]
    fn an_event_read_back_counts_the_bytes_it_was_written_with() {
        let event = NewEvent {
            time_ms: 5,
            event_type: "ToastShown".into(),
            schema_version: 1,
            correlation_id: Some("c-1".into()),
            checksum: Some("0123456789abcdef".into()),
            payload: Payload::of(&serde_json::json!({"z": [1.5, -2, 1e300], "a": "✗ \"q\" \u{1}", "m": {"b": null, "a": true}})).unwrap(),
        };
        let written = event.log_bytes();
        assert_eq!(written as usize, crate::layout::encode_event(&event).unwrap().len());
        let read = Envelope::from_new(SessionId::random(), 1, event);
        assert_eq!(read.log_bytes(), written);
    }

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
