//! Network switching (spec §2, §4 Network switch paths, §8 Network Not Found): the connected
//! wallet is asked `wallet_switchEthereumChain`; a wallet that does not know the chain (4902) is
//! asked `wallet_addEthereumChain` with the session's chain definition, then to switch. The
//! SwitchNetwork view shows while it is pending, with the wallet's error and a retry.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{ANY_STATE, Statechart, region, t, tg};
use crate::model::caip::CaipNetworkId;
use crate::session::Event;

pub const ID: &str = "networkSwitch";

/// EIP-3326: the wallet does not know the chain.
pub const UNRECOGNIZED_CHAIN: i64 = 4902;
pub const SWITCH_DECLINED: &str = "Switch declined";
/// Catalogue, alerts (spec §8 "Network Not Found (also on a switch)"): a switch to a chain that is
/// not one of the session's, asked of the embedded wallet, which holds no other.
pub const NETWORK_NOT_FOUND: &str = "Network Not Found";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum SwitchStatus {
    #[default]
    Idle,
    /// `wallet_switchEthereumChain` is pending.
    Switching,
    /// `wallet_addEthereumChain` is pending (the wallet did not know the chain).
    Adding,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum SwitchStep {
    Switch,
    Add,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSwitchState {
    pub status: SwitchStatus,
    pub target: Option<CaipNetworkId>,
    #[ts(type = "string | null")]
    pub request_id: Option<String>,
    #[ts(type = "number | null")]
    pub code: Option<i64>,
    #[ts(type = "string | null")]
    pub error: Option<String>,
}

impl NetworkSwitchState {
    pub fn in_progress(&self) -> bool {
        matches!(self.status, SwitchStatus::Switching | SwitchStatus::Adding)
    }
}

pub fn evolve(mut state: NetworkSwitchState, event: &Event) -> NetworkSwitchState {
    match event {
        Event::NetworkSwitchStarted { target, request_id, step } => {
            state.status = match step {
                SwitchStep::Switch => SwitchStatus::Switching,
                SwitchStep::Add => SwitchStatus::Adding,
            };
            state.target = Some(target.clone());
            state.request_id = Some(request_id.clone());
            state.code = None;
            state.error = None;
        }
        Event::NetworkSwitchFailed { code, message } => {
            state.status = SwitchStatus::Failed;
            state.request_id = None;
            state.code = *code;
            state.error = Some(message.clone());
        }
        Event::NetworkSwitchFinished {} | Event::NetworkSwitchCancelled {} => state = NetworkSwitchState::default(),
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    let started = |from: &str, step: &str, to: &str| tg(from, "NetworkSwitchStarted", to, "/step", step);
    Statechart {
        id: ID.into(),
        description: "Asking the connected wallet to switch chains (and to add one it does not know, on 4902).".into(),
        regions: vec![region(
            ID,
            "/networkSwitch/status",
            "idle",
            &["idle", "switching", "adding", "failed"],
            vec![
                started("idle", "switch", "switching"),
                started("failed", "switch", "switching"),
                started("switching", "add", "adding"),
                started("adding", "switch", "switching"),
                t("switching", "NetworkSwitchFinished", "idle"),
                // The wallet's chainChanged can arrive while adding, or after a failed attempt.
                t("adding", "NetworkSwitchFinished", "idle"),
                t("failed", "NetworkSwitchFinished", "idle"),
                t("switching", "NetworkSwitchFailed", "failed"),
                t("adding", "NetworkSwitchFailed", "failed"),
                t(ANY_STATE, "NetworkSwitchCancelled", "idle"),
            ],
        )],
    }
}
