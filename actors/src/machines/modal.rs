//! The modal: open or closed, and whether closing is allowed right now.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{Statechart, region, t};
use crate::session::Event;

pub const ID: &str = "modal";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ModalStatus {
    #[default]
    Closed,
    Open,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ModalState {
    pub status: ModalStatus,
    /// Derived: whether the close button and Escape work now (see `session::derive`).
    pub closable: bool,
}

impl Default for ModalState {
    fn default() -> Self {
        Self { status: ModalStatus::Closed, closable: true }
    }
}

impl ModalState {
    pub fn is_open(&self) -> bool {
        self.status == ModalStatus::Open
    }
}

pub fn evolve(mut state: ModalState, event: &Event) -> ModalState {
    match event {
        Event::ModalOpened {} => state.status = ModalStatus::Open,
        Event::ModalClosed {} => state.status = ModalStatus::Closed,
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    Statechart {
        id: ID.into(),
        description: "Whether the modal is shown.".into(),
        regions: vec![region(
            ID,
            "/modal/status",
            "closed",
            &["closed", "open"],
            vec![t("closed", "ModalOpened", "open"), t("open", "ModalClosed", "closed")],
        )],
    }
}
