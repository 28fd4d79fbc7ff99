use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::machines::router::View;
use crate::model::caip::Namespace;
use crate::model::options::OptionsError;

/// Why a session refused a command. Nothing is written for a refused command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    #[error("the session has not started")]
    NotStarted,
    #[error("the session has already started")]
    AlreadyStarted,
    #[error("{0}")]
    InvalidOptions(OptionsError),
    #[error("invalid `{field}`: {message}")]
    InvalidInput { field: String, message: String },
    #[error("at most {max} {what}")]
    TooMany { what: String, max: usize },
    #[error("unknown connector {0:?}")]
    UnknownConnector(String),
    #[error("already connected on {0}; disconnect first")]
    AlreadyConnected(Namespace),
    #[error("Not connected")]
    NotConnected,
    #[error("the modal cannot be closed until you sign in")]
    CloseDisabled,
    #[error("{} cannot be opened directly", .0.name())]
    ViewNotNavigable(View),
    #[error("there is no previous view")]
    NothingToGoBackTo,
    #[error("no pending wallet request {0:?}")]
    UnknownRequest(String),
    #[error("no toast {0:?}")]
    UnknownToast(String),
    #[error("the swipe was too short and too slow to dismiss")]
    SwipeBelowThreshold,
    #[error("the feature `{0}` is not enabled")]
    FeatureDisabled(&'static str),
    /// A sign-in precondition from the spec's catalogue ("SIWX is not enabled", ...).
    #[error("{0}")]
    SignInUnavailable(&'static str),
    #[error("a signature request is already pending")]
    SignInPending,
    #[error("no sign-in session for {0}")]
    NoSignInSession(String),
    /// Spec §8.
    #[error("Transactions can't be fetched without an accountAddress")]
    NoAccountAddress,
    #[error("a transfer is already being sent")]
    SendPending,
    #[error("a network switch is already pending")]
    SwitchPending,
    #[error("this session has no {0} network")]
    NamespaceNotSupported(Namespace),
    #[error("only on the {} view", .0.name())]
    NotOnView(View),
}

/// Why a command was refused, as the client reads it in `result.error.code`: one enum for every
/// layer that refuses (the domain, the session runtime, the gateway), generated into TypeScript as
/// `RefusalCode`, so no layer spells a code by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, strum::IntoStaticStr, strum::EnumIter)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RefusalCode {
    // The domain (`DomainError`).
    NotStarted,
    AlreadyStarted,
    InvalidOptions,
    InvalidInput,
    TooMany,
    UnknownConnector,
    AlreadyConnected,
    NotConnected,
    CloseDisabled,
    ViewNotNavigable,
    NothingToGoBackTo,
    UnknownRequest,
    UnknownToast,
    SwipeBelowThreshold,
    FeatureDisabled,
    SiwxNotEnabled,
    NoActiveCaipAddress,
    NoActiveCaipNetwork,
    SiwxPending,
    NoSignInSession,
    NoAccountAddress,
    SendPending,
    SwitchPending,
    NamespaceNotSupported,
    NotOnView,
    // The session runtime.
    /// Another writer moved the session; it was reloaded. Retry.
    Conflict,
    /// The event log failed. Retry.
    StorageUnavailable,
    /// The command could not be decided or the session is unavailable.
    Internal,
    /// The session has written its budget of bytes to the event log (`limits.session_log_bytes`):
    /// it takes no more commands from its clients. Not remembered; a retry is refused again.
    LogFull,
    // The gateway.
    /// More commands than the session's rate limit allows.
    RateLimited,
    /// The session's mailbox is full. Retry.
    Busy,
}

impl RefusalCode {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Transient refusals are not remembered: a retry with the same command id runs the command
    /// (for `log_full`: is refused again before deciding, as long as the log is full, which it
    /// stays).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            RefusalCode::Conflict | RefusalCode::StorageUnavailable | RefusalCode::RateLimited | RefusalCode::Busy | RefusalCode::LogFull
        )
    }
}

impl std::fmt::Display for RefusalCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl DomainError {
    /// A stable, machine-readable code for the wire.
    pub fn code(&self) -> RefusalCode {
        match self {
            DomainError::NotStarted => RefusalCode::NotStarted,
            DomainError::AlreadyStarted => RefusalCode::AlreadyStarted,
            DomainError::InvalidOptions(_) => RefusalCode::InvalidOptions,
            DomainError::InvalidInput { .. } => RefusalCode::InvalidInput,
            DomainError::TooMany { .. } => RefusalCode::TooMany,
            DomainError::UnknownConnector(_) => RefusalCode::UnknownConnector,
            DomainError::AlreadyConnected(_) => RefusalCode::AlreadyConnected,
            DomainError::NotConnected => RefusalCode::NotConnected,
            DomainError::CloseDisabled => RefusalCode::CloseDisabled,
            DomainError::ViewNotNavigable(_) => RefusalCode::ViewNotNavigable,
            DomainError::NothingToGoBackTo => RefusalCode::NothingToGoBackTo,
            DomainError::UnknownRequest(_) => RefusalCode::UnknownRequest,
            DomainError::UnknownToast(_) => RefusalCode::UnknownToast,
            DomainError::SwipeBelowThreshold => RefusalCode::SwipeBelowThreshold,
            DomainError::FeatureDisabled(_) => RefusalCode::FeatureDisabled,
            DomainError::SignInUnavailable(m) if *m == crate::machines::siwx::NOT_ENABLED => RefusalCode::SiwxNotEnabled,
            DomainError::SignInUnavailable(m) if *m == crate::machines::siwx::NO_ACTIVE_ADDRESS => RefusalCode::NoActiveCaipAddress,
            DomainError::SignInUnavailable(_) => RefusalCode::NoActiveCaipNetwork,
            DomainError::SignInPending => RefusalCode::SiwxPending,
            DomainError::NoSignInSession(_) => RefusalCode::NoSignInSession,
            DomainError::NoAccountAddress => RefusalCode::NoAccountAddress,
            DomainError::SendPending => RefusalCode::SendPending,
            DomainError::SwitchPending => RefusalCode::SwitchPending,
            DomainError::NamespaceNotSupported(_) => RefusalCode::NamespaceNotSupported,
            DomainError::NotOnView(_) => RefusalCode::NotOnView,
        }
    }

    /// The refusal as the client receives it. Its message is cut at `MAX_REFUSAL_MESSAGE_CHARS`:
    /// several refusals repeat what the command named (a connector's, a toast's or a request's id,
    /// an account), and a refusal is remembered (in the log and in the session's answer cache), so
    /// an unbounded echo let a client park about 64 KiB per remembered answer in every session it held.
    pub fn to_wire(&self) -> CommandError {
        CommandError::new(self.code(), bounded_message(self.to_string()))
    }
}

/// The longest refusal message a client receives, in characters (then "…").
pub const MAX_REFUSAL_MESSAGE_CHARS: usize = 200;

/// `message` cut at `MAX_REFUSAL_MESSAGE_CHARS` characters, with "…" when it was longer: for any
/// message that may repeat what a client sent (or, as serde's "unknown variant" does, list every
/// command type in answer to a few bytes).
pub fn bounded_message(mut message: String) -> String {
    if let Some((cut, _)) = message.char_indices().nth(MAX_REFUSAL_MESSAGE_CHARS) {
        message.truncate(cut);
        message.push('…');
    }
    message
}

/// A refusal as the client receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CommandError {
    pub code: RefusalCode,
    pub message: String,
}

impl CommandError {
    pub fn new(code: RefusalCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::{DomainError, MAX_REFUSAL_MESSAGE_CHARS, RefusalCode};

    #[test]
    fn a_refusal_that_repeats_what_the_command_named_is_cut_short() {
        // Given a command naming a 65,000-character toast id (well within a 64 KiB frame)
        let long = DomainError::UnknownToast("é".repeat(65_000)).to_wire();
        // Then its refusal keeps the code and at most MAX_REFUSAL_MESSAGE_CHARS characters and "…"
        assert_eq!(long.code, RefusalCode::UnknownToast);
        assert_eq!(long.message.chars().count(), MAX_REFUSAL_MESSAGE_CHARS + 1, "{}", long.message);
        assert!(long.message.starts_with("no toast \"éé") && long.message.ends_with('…'), "{}", long.message);
        // And a short one is as it was
        assert_eq!(DomainError::UnknownToast("t1".into()).to_wire().message, "no toast \"t1\"");
    }

    /// docs/protocol.md and docs/siwx.md list every refusal code a client can receive.
    #[test]
    fn every_refusal_code_is_documented() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/");
        let docs = ["protocol.md", "siwx.md"].map(|f| std::fs::read_to_string(format!("{root}{f}")).expect("docs are readable")).concat();
        let missing: Vec<&str> = RefusalCode::iter().map(RefusalCode::as_str).filter(|c| !docs.contains(&format!("`{c}`"))).collect();
        assert!(missing.is_empty(), "refusal codes missing from docs/protocol.md and docs/siwx.md: {missing:?}");
    }
}
