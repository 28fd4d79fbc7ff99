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
}

impl DomainError {
    /// A stable, machine-readable code for the wire.
    pub fn code(&self) -> &'static str {
        match self {
            DomainError::NotStarted => "not_started",
            DomainError::AlreadyStarted => "already_started",
            DomainError::InvalidOptions(_) => "invalid_options",
            DomainError::InvalidInput { .. } => "invalid_input",
            DomainError::TooMany { .. } => "too_many",
            DomainError::UnknownConnector(_) => "unknown_connector",
            DomainError::AlreadyConnected(_) => "already_connected",
            DomainError::NotConnected => "not_connected",
            DomainError::CloseDisabled => "close_disabled",
            DomainError::ViewNotNavigable(_) => "view_not_navigable",
            DomainError::NothingToGoBackTo => "nothing_to_go_back_to",
            DomainError::UnknownRequest(_) => "unknown_request",
            DomainError::UnknownToast(_) => "unknown_toast",
            DomainError::SwipeBelowThreshold => "swipe_below_threshold",
            DomainError::FeatureDisabled(_) => "feature_disabled",
            DomainError::SignInUnavailable(m) if *m == crate::machines::siwx::NOT_ENABLED => "siwx_not_enabled",
            DomainError::SignInUnavailable(m) if *m == crate::machines::siwx::NO_ACTIVE_ADDRESS => "no_active_caip_address",
            DomainError::SignInUnavailable(_) => "no_active_caip_network",
            DomainError::SignInPending => "siwx_pending",
            DomainError::NoSignInSession(_) => "no_sign_in_session",
        }
    }

    pub fn to_wire(&self) -> CommandError {
        CommandError { code: self.code().into(), message: self.to_string() }
    }
}

/// A refusal as the client receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CommandError {
    pub code: String,
    pub message: String,
}
