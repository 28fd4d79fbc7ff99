//! The session's state machines. Each module owns one slice of [`crate::session::SessionState`]: its
//! types, its `evolve`, the decisions for its commands, its statechart and its state names.
//!
//! Decisions that span machines (closing the modal rejects a pending connect, a connect result routes
//! the view) are made in [`crate::session::decide`], which calls into these modules.

pub mod activity;
pub mod balances;
pub mod connect_view;
pub mod connection;
pub mod embedded_wallet;
pub mod host_requests;
pub mod modal;
pub mod network_switch;
pub mod requests;
pub mod router;
pub mod send;
pub mod siwx;
pub mod toasts;

use crate::chart::Statechart;

/// A machine as the outside world sees it: its chart. Where a session is in it is read from the
/// serialized state through each region's `state_path`.
pub struct MachineInfo {
    pub id: &'static str,
    pub chart: fn() -> Statechart,
}

/// Every machine of a session, in the order views and tools show them.
pub const ALL: &[MachineInfo] = &[
    MachineInfo { id: modal::ID, chart: modal::chart },
    MachineInfo { id: router::ID, chart: router::chart },
    MachineInfo { id: connection::ID, chart: connection::chart },
    MachineInfo { id: toasts::ID, chart: toasts::chart },
    MachineInfo { id: requests::ID, chart: requests::chart },
    MachineInfo { id: siwx::ID, chart: siwx::chart },
    MachineInfo { id: balances::ID, chart: balances::chart },
    MachineInfo { id: activity::ID, chart: activity::chart },
    MachineInfo { id: send::ID, chart: send::chart },
    MachineInfo { id: network_switch::ID, chart: network_switch::chart },
    MachineInfo { id: host_requests::ID, chart: host_requests::chart },
    MachineInfo { id: embedded_wallet::ID, chart: embedded_wallet::chart },
];

/// Every machine's chart.
pub fn charts() -> Vec<Statechart> {
    ALL.iter().map(|m| (m.chart)()).collect()
}
