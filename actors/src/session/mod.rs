//! A modal session: the composition of every machine into one decider.

mod client_error;
mod command;
mod decide;
mod error;
mod event;
mod state;
pub mod upcast;
pub mod wire;

pub use client_error::{
    ClientErrorKind, MAX_DETAIL_CHARS as MAX_CLIENT_ERROR_DETAIL_CHARS, MAX_REPORTS_PER_WINDOW as MAX_CLIENT_ERROR_REPORTS,
    REPORT_WINDOW_MS as CLIENT_ERROR_REPORT_WINDOW_MS, ReportWindow as ClientErrorReportWindow,
};
pub use command::{ClientCommand, Command, ReceiptOutcome};
pub use decide::{CONNECTION_REJECTED, Evolved, FAILED_TO_CONNECT, MODAL_CLOSED, UNKNOWN_ERROR, decide, decide_evolved};
pub use error::{CommandError, DomainError, MAX_REFUSAL_MESSAGE_CHARS, RefusalCode, bounded_message};
pub use event::Event;
pub use state::{
    Region, Regions, STATE_SCHEMA_VERSION, SessionState, evolve, evolve_every_machine, evolve_in_place, has_sign_in_session,
    regions_touched_by,
};

use crate::decider::{Ctx, Decider};

/// The whole session as one decider.
pub struct Session;

impl Decider for Session {
    type State = SessionState;
    type Command = Command;
    type Event = Event;
    type Error = DomainError;

    fn decide(state: &SessionState, command: Command, ctx: &Ctx) -> Result<Vec<Event>, DomainError> {
        decide(state, command, ctx)
    }

    fn evolve(state: SessionState, event: &Event) -> SessionState {
        evolve(state, event)
    }
}
