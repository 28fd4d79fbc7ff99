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

/// A session takes at most this many reports in any [`REPORT_WINDOW_MS`] (spec section 7: 5 per
/// 60 s). The widget keeps to it
/// by itself; the session enforces it, because a widget caught in a loop (or a client that is not
/// the widget) would otherwise spend the session's log budget on reports, after which the
/// visitor's own commands are refused (`log_full`).
pub const MAX_REPORTS_PER_WINDOW: usize = 5;
pub const REPORT_WINDOW_MS: u64 = 60_000;

/// The times of the reports a session took within the last [`REPORT_WINDOW_MS`]: the runtime's
/// (it is no state a client mirrors, and a refusal for it writes nothing), with time an input.
#[derive(Debug, Default)]
pub struct ReportWindow {
    taken_at_ms: Vec<u64>,
}

impl ReportWindow {
    /// Takes a report at `now_ms` if fewer than [`MAX_REPORTS_PER_WINDOW`] were taken in the
    /// window that ends now; `false` (and nothing noted) if not.
    pub fn take(&mut self, now_ms: u64) -> bool {
        self.taken_at_ms.retain(|&at| now_ms.saturating_sub(at) < REPORT_WINDOW_MS);
        if self.taken_at_ms.len() >= MAX_REPORTS_PER_WINDOW {
            return false;
        }
        self.taken_at_ms.push(now_ms);
        true
    }
}

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
    fn given_five_reports_within_a_minute_when_a_sixth_comes_then_it_is_refused_until_the_first_is_a_minute_old() {
        // given
        let mut window = ReportWindow::default();
        for at in [0, 10_000, 20_000, 30_000, 40_000] {
            assert!(window.take(at), "report at {at} ms");
        }
        // when / then
        assert!(!window.take(59_999), "a sixth within the minute");
        assert!(window.take(60_000), "the first is a minute old: one more fits");
        assert!(!window.take(60_001), "and then the window is full again");
        assert!(window.take(70_000), "the second is a minute old");
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
