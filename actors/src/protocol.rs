//! The wire protocol between the widget and the gateway: JSON text frames over one WebSocket.
//! Defined once here; the TypeScript definitions in `client/src/generated/` are generated from these
//! types (`cargo run -p vestibule-codegen`), and a test fails when they are stale.
//! `docs/protocol.md` shows every message.
//!
//! Client to server: `hello`, `command`, `ack`, `ping`. Server to client: `welcome`, `diff`, `result`,
//! `error`, `pong`.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::model::options::SessionOptions;
use crate::session::{ClientCommand, CommandError, Event, SessionState};

/// 2: the state hash is two-level (decision 0311); 1 hashed the whole state's canonical JSON.
pub const PROTOCOL_VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ClientMessage {
    /// First message on every connection. Without `sessionId` a new session is created with
    /// `options`; with it, the client re-attaches (its `resumeToken` is required) and receives every
    /// diff after `lastSeq`.
    Hello {
        protocol: u32,
        project_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        session_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        resume_token: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional, type = "number")]
        last_seq: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        options: Option<SessionOptions>,
    },
    /// `id` is chosen by the client and makes a retried command idempotent within the session.
    Command { id: String, command: ClientCommand },
    /// The highest seq the client has applied.
    Ack {
        #[ts(type = "number")]
        seq: u64,
    },
    Ping {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        nonce: Option<String>,
    },
}

/// An event as the client receives it: the event and its place in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct WireEvent {
    #[ts(type = "number")]
    pub seq: u64,
    #[ts(type = "number")]
    pub time_ms: u64,
    /// The command that caused the event: a client's command id, `timer:<seq>`, `effect:<seq>` or
    /// `session:start`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub correlation_id: Option<String>,
    #[serde(flatten)]
    pub event: Event,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum CommandStatus {
    Accepted,
    Refused,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ServerMessage {
    Welcome {
        protocol: u32,
        session_id: String,
        /// Only when the session was just created: keep it to re-attach. Never sent again.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        resume_token: Option<String>,
        #[ts(type = "number")]
        seq: u64,
        /// True when the client's `lastSeq` is served by the diffs that follow; false when `state`
        /// is the whole state (new session, or the client was too far behind).
        resumed: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        state: Option<Box<SessionState>>,
        state_hash: String,
    },
    /// The effect of one decision: its events, the JSON Patch (RFC 6902) from the state at
    /// `prevSeq` to the state at `seq`, and the hash of the state at `seq`.
    Diff {
        #[ts(type = "number")]
        seq: u64,
        #[ts(type = "number")]
        prev_seq: u64,
        events: Vec<WireEvent>,
        #[ts(
            type = "Array<{ op: \"add\" | \"remove\" | \"replace\" | \"move\" | \"copy\" | \"test\", path: string, value?: unknown, from?: string }>"
        )]
        patch: json_patch::Patch,
        state_hash: String,
    },
    /// The answer to a command. An accepted command's diff (if it changed anything) follows.
    Result {
        command_id: String,
        status: CommandStatus,
        /// The session's seq after the command.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional, type = "number")]
        seq: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        error: Option<CommandError>,
    },
    /// A protocol-level problem. When `close` is set, the server closes the connection with that code.
    Error {
        code: ProtocolErrorCode,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        close: Option<u16>,
    },
    Pong {
        #[serde(skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        nonce: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, strum::IntoStaticStr, strum::VariantNames)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ProtocolErrorCode {
    /// The first message was not a valid `hello`.
    BadHello,
    UnsupportedProtocol,
    /// Spec alert: no project id was given.
    ProjectIdNotConfigured,
    /// Spec alert: the project id is unknown.
    InvalidProjectId,
    /// Spec alert: the page's origin is not on the project's allowlist.
    InvalidAppConfiguration,
    InvalidOptions,
    /// Missing or wrong resume token, or no such session (indistinguishable on purpose).
    Unauthorized,
    MalformedMessage,
    UnknownMessageType,
    FrameTooLarge,
    RateLimited,
    /// The client did not read or acknowledge diffs fast enough.
    TooSlow,
    HeartbeatTimeout,
    /// The session's mailbox is full; retry the command.
    Busy,
    ShuttingDown,
    Internal,
}

impl ProtocolErrorCode {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// WebSocket close codes the server uses (1000-1011 from RFC 6455; 4000-4999 application codes).
pub mod close {
    pub const GOING_AWAY: u16 = 1001;
    /// A frame that breaks the WebSocket protocol itself (RFC 6455 7.4.1).
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// A text frame that is not UTF-8 (RFC 6455 8.1).
    pub const INVALID_PAYLOAD: u16 = 1007;
    pub const TOO_BIG: u16 = 1009;
    pub const INTERNAL: u16 = 1011;
    /// Too many new sessions from the client's address: the client may try again later.
    pub const TRY_AGAIN_LATER: u16 = 1013;
    pub const BAD_HELLO: u16 = 4000;
    pub const UNAUTHORIZED: u16 = 4001;
    pub const UNSUPPORTED_PROTOCOL: u16 = 4002;
    pub const TOO_SLOW: u16 = 4004;
    pub const HEARTBEAT_TIMEOUT: u16 = 4005;
    pub const SESSION_ENDED: u16 = 4006;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_events_flatten_the_event() {
        let e = WireEvent { seq: 3, time_ms: 10, correlation_id: None, event: Event::ModalClosed {} };
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json, serde_json::json!({ "seq": 3, "timeMs": 10, "type": "ModalClosed", "payload": {} }));
        assert_eq!(serde_json::from_value::<WireEvent>(json).unwrap(), e);
    }

    #[test]
    fn hello_parses_with_only_the_required_fields() {
        let m: ClientMessage = serde_json::from_str(r#"{"type":"hello","protocol":1,"projectId":"demo"}"#).unwrap();
        assert!(matches!(m, ClientMessage::Hello { session_id: None, .. }));
    }
}
