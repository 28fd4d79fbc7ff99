//! The flows simulated visitors drive. Each is a cycle of steps; a step is a command, an answer
//! to the session's wallet request, or a deliberate drop of the connection.

use serde_json::{Value, json};

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
    /// The EVM account on the devnet (`--devnet`): connect with one of `--addresses` shared
    /// addresses, balances, activity and a native send really sent to the node, between non-chain
    /// commands (navigation, toasts) whose latency is measured apart while the chain effects run.
    Account,
}

/// What a command asks of the gateway, for latencies measured apart: `chain` commands start a
/// chain effect (a balance or activity fetch, a receipt to wait for); `non-chain` ones do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    NonChain,
    Chain,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::NonChain => "non-chain",
            Class::Chain => "chain",
        }
    }
}

/// A visitor's scenario (for `mixed`, the one picked for it).
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub kind: ScenarioKind,
    seed: u64,
}

pub enum Step {
    /// `always_writes`: an accepted result means events were made durable.
    Command {
        command: Value,
        always_writes: bool,
        class: Class,
    },
    AnswerConnect,
    AnswerSign,
    /// Send the session's pending `eth_sendTransaction` to the node and answer with its hash.
    AnswerSend,
    Reconnect,
}

/// The `account` scenario's steps before its cycle: report the wallet, select it, answer connect.
const ACCOUNT_PRELUDE: usize = 3;
/// The `account` scenario's cycle (see [`Scenario::step`]).
const ACCOUNT_CYCLE: usize = 8;
/// What each send moves: small, so that thousands fit in an address's funds.
const SEND_AMOUNT: &str = "0.001";
/// Where sends go (no one's key).
const SEND_RECEIVER: &str = "0x000000000000000000000000000000000000dead";

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

    /// The session options in the visitor's hello (`networks`: the devnet's, for `account`).
    pub fn options(&self, networks: Option<&Value>) -> Value {
        match self.kind {
            ScenarioKind::ConnectSiwx => json!({ "siwx": { "statement": "Load test sign-in" } }),
            ScenarioKind::Account => json!({ "networks": networks.cloned().unwrap_or(json!([])) }),
            _ => json!({}),
        }
    }

    /// How many steps make `cycles` of this scenario (`--cycles`): whole flows, so that a run that
    /// counts cycles ends with every flow finished.
    pub fn steps_for(&self, cycles: u64) -> usize {
        let cycles = cycles as usize;
        match self.kind {
            ScenarioKind::Connect | ScenarioKind::ReconnectStorm => 4 * cycles,
            ScenarioKind::ConnectSiwx => 6 * cycles,
            ScenarioKind::ToastStorm => 8 * cycles,
            ScenarioKind::Account => ACCOUNT_PRELUDE + ACCOUNT_CYCLE * cycles,
            ScenarioKind::Mixed => unreachable!("mixed picks a scenario per visitor"),
        }
    }

    /// Whether step `n` needs the session's balances: a visitor waits for a fetch in flight
    /// before it, as a person waits for the Send view's token list (and so every cycle sends,
    /// however slow the node or the machine).
    pub fn needs_balances(&self, n: usize) -> bool {
        self.kind == ScenarioKind::Account && n >= ACCOUNT_PRELUDE && (n - ACCOUNT_PRELUDE) % ACCOUNT_CYCLE == 5
    }

    /// Whether the visitor keeps reading (and applying) diffs while it thinks: the `account`
    /// scenario's chain effects end in diffs nobody is waiting for, whose arrival is measured.
    pub fn reads_while_thinking(&self) -> bool {
        self.kind == ScenarioKind::Account
    }

    /// How much of `--think-ms` the visitor waits after step `step`: exponentially distributed
    /// with mean 1, drawn afresh for every step (deterministically from the visitor and the step).
    /// A factor fixed per visitor (0.5 to 1.5) made 10,000 visitors periodic with related periods:
    /// their commands bunched into bursts of twice the mean rate in 10 ms windows, which the
    /// latency figures then measured. With memoryless pauses (and a memoryless start,
    /// [`Self::start_factor`]) every visitor is a Poisson stream and so is their sum, at a steady
    /// rate of `sessions * 1000 / think-ms` steps per second from the first second on.
    pub fn think_factor(&self, step: usize) -> f64 {
        // Its own stream: `random(step)` already decides the steps themselves.
        self.exponential(usize::MAX - step)
    }

    /// How much of `--think-ms` the visitor waits before its first step (exponential, mean 1): a
    /// start spread evenly over one think period would add to the arrivals of those already
    /// started and offer up to twice the rate at the end of that period.
    pub fn start_factor(&self) -> f64 {
        self.exponential(usize::MAX / 2)
    }

    fn exponential(&self, stream: usize) -> f64 {
        // A uniform draw in (0, 1] from the top 53 bits, then the inverse of the CDF.
        let uniform = ((self.random(stream) >> 11) + 1) as f64 / (1u64 << 53) as f64;
        -uniform.ln()
    }

    fn random(&self, step: usize) -> u64 {
        // splitmix64: a cheap deterministic stream per visitor.
        let mut z = self.seed.wrapping_add((step as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn step(&self, n: usize, state: &Value) -> Step {
        let cmd = |command: Value, always_writes: bool| Step::Command { command, always_writes, class: Class::NonChain };
        let chain = |command: Value, always_writes: bool| Step::Command { command, always_writes, class: Class::Chain };
        // Built only for the step that sends it (a step builds one command).
        let wallets = || json!({ "type": "ReportWallets", "wallets": [{ "name": "Load Wallet", "rdns": WALLET, "kind": "ANNOUNCED" }] });
        let connected = state["connection"]["namespaces"]["eip155"]["status"] == "connected";
        match self.kind {
            ScenarioKind::Connect | ScenarioKind::ReconnectStorm => {
                // Drops come after the wallets are reported, so every flow step stays meaningful.
                if self.kind == ScenarioKind::ReconnectStorm && n % 4 != 0 && self.random(n) % 4 == 0 {
                    return Step::Reconnect;
                }
                match n % 4 {
                    0 => cmd(wallets(), false),
                    1 if connected => cmd(json!({ "type": "Disconnect" }), true),
                    1 => cmd(json!({ "type": "SelectConnector", "connectorId": WALLET }), true),
                    2 => Step::AnswerConnect,
                    _ if connected => cmd(json!({ "type": "Disconnect" }), true),
                    _ => cmd(json!({ "type": "OpenModal" }), false),
                }
            }
            ScenarioKind::ConnectSiwx => match n % 6 {
                0 => cmd(wallets(), false),
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
            ScenarioKind::Account => match n {
                0 => cmd(wallets(), false),
                1 => cmd(json!({ "type": "SelectConnector", "connectorId": WALLET }), true),
                // The connect answer starts the first balance fetch.
                2 => Step::AnswerConnect,
                _ => match (n - ACCOUNT_PRELUDE) % ACCOUNT_CYCLE {
                    0 => cmd(json!({ "type": "Navigate", "view": "Account" }), false),
                    // A no-op (no diff, no fetch) while the session's balances are under 30 s old.
                    1 => chain(json!({ "type": "RefreshBalances" }), false),
                    2 => cmd(json!({ "type": "ShowToast", "message": format!("toast {n}"), "variant": "success" }), true),
                    3 => {
                        let activity = &state["activity"];
                        let more = activity["status"] == "loaded" && !activity["next"].is_null();
                        chain(json!({ "type": "LoadActivity", "more": more }), false)
                    }
                    4 => cmd(json!({ "type": "Navigate", "view": "Send" }), false),
                    5 => {
                        let native = state["balances"]["native"]["asset"].as_str();
                        match native {
                            Some(asset) if state["balances"]["status"] == "loaded" && state["send"]["status"] != "sending" => {
                                let form = json!({ "token": asset, "amount": SEND_AMOUNT, "receiver": SEND_RECEIVER });
                                chain(json!({ "type": "SubmitSend", "form": form }), true)
                            }
                            // Balances not loaded yet (or failed): nothing to send from.
                            _ => cmd(json!({ "type": "SetToastHover", "hovered": n.is_multiple_of(2) }), false),
                        }
                    }
                    6 => Step::AnswerSend,
                    _ => cmd(json!({ "type": "Navigate", "view": "Receive" }), false),
                },
            },
            ScenarioKind::Mixed => unreachable!("mixed picks a scenario per visitor"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_factors_are_drawn_per_step_from_an_exponential_of_mean_one() {
        // Given two visitors
        let (a, b) = (Scenario::for_visitor(ScenarioKind::Connect, 0), Scenario::for_visitor(ScenarioKind::Connect, 1));
        // When each draws the factors of 20,000 steps
        let fa: Vec<f64> = (0..20_000).map(|n| a.think_factor(n)).collect();
        let fb: Vec<f64> = (0..20_000).map(|n| b.think_factor(n)).collect();
        // Then every factor is finite and not negative, mean and variance are about 1 (an
        // exponential's; the offered rate is `sessions * 1000 / think-ms`), about e^-1 of them
        // exceed 1, a visitor's factors differ from step to step, the two visitors' streams
        // differ, and the same visitor draws the same factor for the same step (a run repeats).
        assert!(fa.iter().chain(&fb).all(|f| f.is_finite() && *f >= 0.0));
        let mean = fa.iter().sum::<f64>() / fa.len() as f64;
        let variance = fa.iter().map(|f| (f - mean).powi(2)).sum::<f64>() / fa.len() as f64;
        assert!((mean - 1.0).abs() < 0.05, "mean {mean}");
        assert!((variance - 1.0).abs() < 0.15, "variance {variance}");
        let above_one = fa.iter().filter(|f| **f > 1.0).count() as f64 / fa.len() as f64;
        assert!((above_one - (-1f64).exp()).abs() < 0.02, "share above 1: {above_one}");
        assert_eq!(fa.windows(2).filter(|w| w[0] == w[1]).count(), 0);
        assert_ne!(fa, fb);
        assert_eq!(a.think_factor(7), fa[7]);
        // and the start's factor is a draw of its own, not one of the steps'.
        assert!(a.start_factor().is_finite() && !fa.contains(&a.start_factor()));
    }
}
