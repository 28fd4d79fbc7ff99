//! The session's state machines. Each module owns one slice of [`crate::session::SessionState`]: its
//! types, its `evolve`, the decisions for its commands, its statechart and its state names.
//!
//! Decisions that span machines (closing the modal rejects a pending connect, a connect result routes
//! the view) are made in [`crate::session::decide`], which calls into these modules.

pub mod connect_view;
pub mod connection;
pub mod modal;
pub mod requests;
pub mod router;
pub mod toasts;

use crate::chart::Statechart;
use crate::session::SessionState;

/// A machine as the outside world sees it: its chart, and where a state currently is in it.
pub struct MachineInfo {
    pub id: &'static str,
    pub chart: fn() -> Statechart,
    /// `(region, state)` for every region of the chart.
    pub state_names: fn(&SessionState) -> Vec<(String, String)>,
}

/// Every machine of a session, in the order views and tools show them.
pub const ALL: &[MachineInfo] = &[
    MachineInfo { id: modal::ID, chart: modal::chart, state_names: modal::state_names },
    MachineInfo { id: router::ID, chart: router::chart, state_names: router::state_names },
    MachineInfo { id: connection::ID, chart: connection::chart, state_names: connection::state_names },
    MachineInfo { id: toasts::ID, chart: toasts::chart, state_names: toasts::state_names },
    MachineInfo { id: requests::ID, chart: requests::chart, state_names: requests::state_names },
];

/// Every machine's chart.
pub fn charts() -> Vec<Statechart> {
    ALL.iter().map(|m| (m.chart)()).collect()
}
