//! Problems the widget reports about itself (`ClientCommand::ReportClientError`): recorded in the log
//! as `ClientErrorReported`, so a developer replaying a session sees them where they happened. They
//! change no machine's state.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::session::{DomainError, Event};

/// What went wrong in the widget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ClientErrorKind {
    /// After a diff, a chart the widget mirrors was not in the state the server's state names; the
    /// widget asked for the whole state again.
    ChartDisagreement,
    /// A view failed to render.
    Render,
}

/// Details longer than this are cut (in characters).
pub const MAX_DETAIL_CHARS: usize = 512;

/// The event for a report; an empty detail is refused, a long one is cut.
pub fn report(kind: ClientErrorKind, detail: &str) -> Result<Event, DomainError> {
    let detail = detail.trim();
    if detail.is_empty() {
        return Err(DomainError::InvalidInput { field: "detail".into(), message: "must not be empty".into() });
    }
    Ok(Event::ClientErrorReported { kind, detail: detail.chars().take(MAX_DETAIL_CHARS).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::ClientCommand;
    use crate::testing::{given, started};

    #[test]
    fn given_a_session_when_the_widget_reports_an_error_then_it_is_recorded_and_nothing_else_changes() {
        let g = given(started());
        let then = g.when(ClientCommand::ReportClientError {
            kind: ClientErrorKind::ChartDisagreement,
            detail: "router: Connect, state says Account".into(),
        });
        assert_eq!(then.event_types(), ["ClientErrorReported"]);
        assert_eq!(then.state(), g.state, "a report moves no machine");
    }

    #[test]
    fn given_a_report_when_its_detail_is_empty_or_long_then_it_is_refused_or_cut() {
        let g = given(started());
        let empty = g.when(ClientCommand::ReportClientError { kind: ClientErrorKind::Render, detail: "  ".into() });
        assert_eq!(empty.error().code(), crate::session::RefusalCode::InvalidInput);
        let long = g.when(ClientCommand::ReportClientError { kind: ClientErrorKind::Render, detail: "é".repeat(2000) });
        match &long.events()[0] {
            Event::ClientErrorReported { detail, .. } => assert_eq!(detail.chars().count(), MAX_DETAIL_CHARS),
            other => panic!("unexpected {other:?}"),
        }
    }
}
