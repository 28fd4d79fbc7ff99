//! The flows simulated visitors drive. Each is a cycle of steps; a step is a command, an answer
//! to the session's wallet request, or a deliberate drop of the connection.

use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScenarioKind {
    /// Open, connect an injected wallet, disconnect.
    Connect,
    /// Connect, sign in with a real EIP-4361 signature, sign out, disconnect.
    ConnectSiwx,
    /// Toasts: show (each is durable events), hover, dismiss; auto-dismiss timers fire meanwhile.
    ToastStorm,
    /// The connect flow with connections dropped and resumed at random.
    ReconnectStorm,
    /// A weighted blend: connect 40 %, connect-siwx 20 %, toast-storm 20 %, reconnect-storm 20 %.
    Mixed,
}

/// A visitor's scenario (for `mixed`, the one picked for it).
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub kind: ScenarioKind,
    seed: u64,
}

pub enum Step {
    /// `always_writes`: an accepted result means events were made durable.
    Command { command: Value, always_writes: bool },
    AnswerConnect,
    AnswerSign,
    Reconnect,
}

const WALLET: &str = "load.vestibule.wallet";

impl Scenario {
    pub fn for_visitor(kind: ScenarioKind, index: usize) -> Self {
        let kind = match kind {
            ScenarioKind::Mixed => match index % 5 {
                0 | 1 => ScenarioKind::Connect,
                2 => ScenarioKind::ConnectSiwx,
                3 => ScenarioKind::ToastStorm,
                _ => ScenarioKind::ReconnectStorm,
            },
            k => k,
        };
        Scenario { kind, seed: (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1) }
    }

    /// The session options in the visitor's hello.
    pub fn options(&self) -> Value {
        match self.kind {
            ScenarioKind::ConnectSiwx => json!({ "siwx": { "statement": "Load test sign-in" } }),
            _ => json!({}),
        }
    }

    fn random(&self, step: usize) -> u64 {
        // splitmix64: a cheap deterministic stream per visitor.
        let mut z = self.seed.wrapping_add((step as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn step(&self, n: usize, state: &Value) -> Step {
        let cmd = |command: Value, always_writes: bool| Step::Command { command, always_writes };
        let wallets = json!({ "type": "ReportWallets", "wallets": [{ "name": "Load Wallet", "rdns": WALLET, "kind": "ANNOUNCED" }] });
        let connected = state["connection"]["namespaces"]["eip155"]["status"] == "connected";
        match self.kind {
            ScenarioKind::Connect | ScenarioKind::ReconnectStorm => {
                // Drops come after the wallets are reported, so every flow step stays meaningful.
                if self.kind == ScenarioKind::ReconnectStorm && n % 4 != 0 && self.random(n) % 4 == 0 {
                    return Step::Reconnect;
                }
                match n % 4 {
                    0 => cmd(wallets, false),
                    1 if connected => cmd(json!({ "type": "Disconnect" }), true),
                    1 => cmd(json!({ "type": "SelectConnector", "connectorId": WALLET }), true),
                    2 => Step::AnswerConnect,
                    _ if connected => cmd(json!({ "type": "Disconnect" }), true),
                    _ => cmd(json!({ "type": "OpenModal" }), false),
                }
            }
            ScenarioKind::ConnectSiwx => match n % 6 {
                0 => cmd(wallets, false),
                1 if connected => cmd(json!({ "type": "Disconnect" }), true),
                1 => cmd(json!({ "type": "SelectConnector", "connectorId": WALLET }), true),
                2 => Step::AnswerConnect,
                3 => cmd(json!({ "type": "SiwxSign" }), true),
                4 => Step::AnswerSign,
                _ => cmd(json!({ "type": "Disconnect" }), true),
            },
            ScenarioKind::ToastStorm => match self.random(n) % 8 {
                0..=4 => cmd(json!({ "type": "ShowToast", "message": format!("toast {n}"), "variant": "success" }), true),
                5 => cmd(json!({ "type": "SetToastHover", "hovered": n % 2 == 0 }), false),
                6 => match state["toasts"]["order"].as_array().and_then(|o| o.first()).and_then(|t| t.as_str()) {
                    Some(id) => cmd(json!({ "type": "DismissToast", "id": id }), true),
                    None => cmd(json!({ "type": "ShowToast", "message": format!("toast {n}"), "variant": "error" }), true),
                },
                _ => cmd(json!({ "type": "SetPageVisibility", "hidden": false }), false),
            },
            ScenarioKind::Mixed => unreachable!("mixed picks a scenario per visitor"),
        }
    }
}
