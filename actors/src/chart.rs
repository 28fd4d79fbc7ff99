//! Statecharts as data: each machine exports its states, events and transitions so the browser can
//! mirror it (the client's XState machines are generated from these) and a viewer can draw it.
//!
//! Transitions are deterministic: the target is a function of the source state, the event type and
//! at most one guard on the event's payload. Events therefore carry the facts that decide the target
//! (e.g. `WentBack { to }`, `ToastPauseEnded { resumed }`); `tests/charts.rs` proves every machine's
//! `evolve` agrees with its chart.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A machine's chart: one region for a simple machine, several for a parallel one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Statechart {
    pub id: String,
    pub description: String,
    pub regions: Vec<Region>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Region {
    pub id: String,
    /// JSON pointer into the serialized session state where this region's current state name is.
    /// The server, the replay tool and the browser's mirror all read state names from here.
    pub state_path: String,
    pub initial: String,
    pub states: Vec<String>,
    pub transitions: Vec<Transition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    /// Source state, or [`ANY_STATE`] for every state of the region.
    pub from: String,
    /// Event type, as in the event log.
    pub event: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub guard: Option<Guard>,
}

/// The transition applies only when the event's payload has `equals` at the JSON pointer `path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Guard {
    pub path: String,
    #[ts(type = "unknown")]
    pub equals: serde_json::Value,
}

pub const ANY_STATE: &str = "*";

impl Statechart {
    /// The target of `event` from `from` in `region`, or `None` if the chart does not move.
    /// Specific-source transitions win over [`ANY_STATE`] ones.
    pub fn target(&self, region: &str, from: &str, event_type: &str, payload: &serde_json::Value) -> Option<&str> {
        let region = self.regions.iter().find(|r| r.id == region)?;
        let matches =
            |t: &&Transition| t.event == event_type && t.guard.as_ref().is_none_or(|g| payload.pointer(&g.path) == Some(&g.equals));
        region
            .transitions
            .iter()
            .filter(|t| t.from == from)
            .find(matches)
            .or_else(|| region.transitions.iter().filter(|t| t.from == ANY_STATE).find(matches))
            .map(|t| t.to.as_str())
    }

    /// `(region, state)` for every region, read from a serialized session state.
    pub fn states_in(&self, state: &serde_json::Value) -> Vec<(String, String)> {
        self.regions
            .iter()
            .map(|r| {
                let name = state.pointer(&r.state_path).and_then(|v| v.as_str()).unwrap_or("").to_string();
                (r.id.clone(), name)
            })
            .collect()
    }

    /// Every event type this chart reacts to.
    pub fn event_types(&self) -> impl Iterator<Item = &str> {
        self.regions.iter().flat_map(|r| r.transitions.iter().map(|t| t.event.as_str()))
    }
}

/// Builder shorthand used by the machines' `chart()` functions.
pub fn t(from: &str, event: &str, to: &str) -> Transition {
    Transition { from: from.into(), event: event.into(), to: to.into(), guard: None }
}

/// A guarded transition: applies when the payload at `path` equals `equals`.
pub fn tg(from: &str, event: &str, to: &str, path: &str, equals: impl Into<serde_json::Value>) -> Transition {
    Transition { from: from.into(), event: event.into(), to: to.into(), guard: Some(Guard { path: path.into(), equals: equals.into() }) }
}

pub fn region(id: &str, state_path: &str, initial: &str, states: &[&str], transitions: Vec<Transition>) -> Region {
    Region {
        id: id.into(),
        state_path: state_path.into(),
        initial: initial.into(),
        states: states.iter().map(|s| s.to_string()).collect(),
        transitions,
    }
}
