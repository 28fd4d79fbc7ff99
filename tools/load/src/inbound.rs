//! The frames a visitor reads after its welcome, parsed into only what it uses.
//!
//! The protocol's own type ([`vestibule_actors::protocol::ServerMessage`]) is internally tagged, so
//! serde buffers each frame whole before choosing the variant, and a diff's events become typed
//! events the visitor never reads. At saturation the generator shares the two cores with the gateway
//! (`docs/performance.md`, "CPU per command"), so each frame is read once into this flat view: the
//! fields of every server frame a visitor acts on, a diff's events reduced to their correlation
//! ids, and the rest of the text skipped unparsed. The field names and the enums still come from the
//! protocol's definitions, so a renamed field fails the harness's tests rather than going unseen.

use serde::Deserialize;
use vestibule_actors::protocol::{CommandStatus, ProtocolErrorCode};
use vestibule_actors::session::RefusalCode;

/// Which server frame this is (`type`); a frame the harness does not act on is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    Diff,
    Result,
    Error,
    #[serde(other)]
    Other,
}

/// A server frame: `diff`, `result` or `error` (see `ServerMessage`); fields a kind does not carry
/// are `None`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inbound {
    #[serde(rename = "type")]
    pub kind: Kind,
    /// A diff's or a result's seq.
    pub seq: Option<u64>,
    pub prev_seq: Option<u64>,
    pub events: Option<Vec<EventHead>>,
    #[serde(default, deserialize_with = "flat_patch")]
    pub patch: Option<json_patch::Patch>,
    pub state_hash: Option<String>,
    pub command_id: Option<String>,
    pub status: Option<CommandStatus>,
    /// A refused result's reason.
    pub error: Option<Refusal>,
    /// An error frame's code, and the close code it announces.
    pub code: Option<ProtocolErrorCode>,
    pub close: Option<u16>,
}

/// One JSON Patch operation read flat. json_patch's own type is internally tagged (`op`), so serde
/// buffers each operation whole before reading it again as its variant; every diff carries
/// operations, so they are read once into this and then converted.
#[derive(Deserialize)]
struct FlatOperation {
    op: OperationName,
    path: String,
    from: Option<String>,
    /// `Some(Null)` for `"value": null`, `None` when there is no `value`.
    #[serde(default, deserialize_with = "present")]
    value: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum OperationName {
    Add,
    Remove,
    Replace,
    Move,
    Copy,
    Test,
}

fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(deserializer).map(Some)
}

fn flat_patch<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<json_patch::Patch>, D::Error> {
    use json_patch::jsonptr::PointerBuf;
    use json_patch::{AddOperation, CopyOperation, MoveOperation, PatchOperation, RemoveOperation, ReplaceOperation, TestOperation};
    use serde::de::Error;

    let Some(operations) = Option::<Vec<FlatOperation>>::deserialize(deserializer)? else { return Ok(None) };
    let pointer = |text: String| PointerBuf::parse(text).map_err(D::Error::custom);
    let mut patch = Vec::with_capacity(operations.len());
    for FlatOperation { op, path, from, value } in operations {
        let path = pointer(path)?;
        let value = || value.ok_or_else(|| D::Error::missing_field("value"));
        let from = || from.ok_or_else(|| D::Error::missing_field("from")).and_then(pointer);
        patch.push(match op {
            OperationName::Add => PatchOperation::Add(AddOperation { path, value: value()? }),
            OperationName::Remove => PatchOperation::Remove(RemoveOperation { path }),
            OperationName::Replace => PatchOperation::Replace(ReplaceOperation { path, value: value()? }),
            OperationName::Move => PatchOperation::Move(MoveOperation { from: from()?, path }),
            OperationName::Copy => PatchOperation::Copy(CopyOperation { from: from()?, path }),
            OperationName::Test => PatchOperation::Test(TestOperation { path, value: value()? }),
        });
    }
    Ok(Some(json_patch::Patch(patch)))
}

/// Of a diff's event, what the visitor reads: which command caused it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventHead {
    pub correlation_id: Option<String>,
}

/// Of a refused result's `error`, its code.
#[derive(Debug, Deserialize)]
pub struct Refusal {
    pub code: RefusalCode,
}

impl Inbound {
    pub fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// The number of events a diff carries.
    pub fn event_count(&self) -> usize {
        self.events.as_ref().map_or(0, Vec::len)
    }

    /// The command that caused a diff's first event.
    pub fn first_correlation(&self) -> Option<&str> {
        self.events.as_ref()?.first()?.correlation_id.as_deref()
    }

    /// A refused result's code.
    pub fn refusal(&self) -> Option<RefusalCode> {
        self.error.as_ref().map(|e| e.code)
    }

    /// A refused result's code, or an error frame's, for counters.
    pub fn code_name(&self) -> &'static str {
        match (&self.error, self.code) {
            (Some(refusal), _) => refusal.code.as_str(),
            (None, Some(code)) => code.as_str(),
            (None, None) => "unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use vestibule_actors::protocol::ServerMessage;

    use super::*;

    /// Frames as the gateway writes them (serialized from the protocol's own type), read back.
    fn read(message: &ServerMessage) -> Inbound {
        Inbound::parse(&serde_json::to_string(message).unwrap()).unwrap()
    }

    #[test]
    fn a_result_reads_its_command_status_seq_and_refusal() {
        let accepted =
            read(&ServerMessage::Result { command_id: "v1c2".into(), status: CommandStatus::Accepted, seq: Some(7), error: None });
        assert_eq!(
            (accepted.kind, accepted.command_id.as_deref(), accepted.status, accepted.seq),
            (Kind::Result, Some("v1c2"), Some(CommandStatus::Accepted), Some(7))
        );
        let refused: Inbound =
            Inbound::parse(r#"{"type":"result","commandId":"v1c3","status":"refused","seq":7,"error":{"code":"busy","message":"retry"}}"#)
                .unwrap();
        assert_eq!((refused.status, refused.code_name()), (Some(CommandStatus::Refused), "busy"));
    }

    #[test]
    fn a_diff_reads_its_seqs_patch_hash_and_the_events_correlations() {
        let text = r#"{"type":"diff","seq":5,"prevSeq":3,"events":[
            {"seq":4,"timeMs":1,"correlationId":"v0c9","type":"ModalOpened","payload":{"view":"Connect","nested":[1,{"a":"b"}]}},
            {"seq":5,"timeMs":1,"correlationId":"v0c9","type":"ModalClosed","payload":{}}],
            "patch":[{"op":"replace","path":"/modal/open","value":true}],"stateHash":"abc"}"#;
        let diff = Inbound::parse(text).unwrap();
        assert_eq!((diff.kind, diff.seq, diff.prev_seq), (Kind::Diff, Some(5), Some(3)));
        assert_eq!((diff.event_count(), diff.first_correlation()), (2, Some("v0c9")));
        assert_eq!(diff.patch.unwrap().0.len(), 1);
        assert_eq!(diff.state_hash.as_deref(), Some("abc"));
    }

    /// Every kind of operation, `null` values included, reads as json_patch reads it.
    #[test]
    fn a_patch_reads_as_json_patch_reads_it() {
        let operations = serde_json::json!([
            {"op": "add", "path": "/modal/a~1b", "value": null},
            {"op": "remove", "path": "/toasts/x"},
            {"op": "replace", "path": "/router/current", "value": {"view": "Connect"}},
            {"op": "move", "from": "/a", "path": "/b"},
            {"op": "copy", "from": "/a", "path": "/c"},
            {"op": "test", "path": "/a", "value": [1]},
        ]);
        let diff = Inbound::parse(&format!(r#"{{"type":"diff","patch":{operations}}}"#)).unwrap();
        assert_eq!(diff.patch.unwrap(), serde_json::from_value::<json_patch::Patch>(operations).unwrap());
        for broken in [r#"[{"op":"add","path":"/a"}]"#, r#"[{"op":"move","path":"/a"}]"#, r#"[{"op":"add","path":"a","value":1}]"#] {
            assert!(Inbound::parse(&format!(r#"{{"type":"diff","patch":{broken}}}"#)).is_err(), "{broken}");
        }
        assert!(Inbound::parse(r#"{"type":"result"}"#).unwrap().patch.is_none());
    }

    #[test]
    fn an_error_frame_reads_its_code_and_close() {
        let error = read(&ServerMessage::Error { code: ProtocolErrorCode::TooSlow, message: "slow".into(), close: Some(4004) });
        assert_eq!((error.kind, error.code_name(), error.close), (Kind::Error, "too_slow", Some(4004)));
    }

    #[test]
    fn frames_the_harness_does_not_act_on_are_other() {
        assert_eq!(read(&ServerMessage::Pong { nonce: None }).kind, Kind::Other);
    }
}
