//! The host app's EIP-1193 requests, routed through the session (spec §4 Wallet request outcome,
//! §5 Wallet calls, §6, §9). Each is answered by the session itself (accounts, chain id), by the
//! chain service (safe reads: an effect whose answer comes back as `Command::HostReadAnswered`), by
//! the connected wallet (reads without a prompt; signing and sending on the transaction stack), or
//! refused: a method in neither list opens the modal and, 300 ms later (a deadline in the state),
//! shows "Requested RPC call is not allowed" and is rejected with 4200. The host's provider reads
//! each answer from the mirrored state, by the id it chose (decision 0909).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{Statechart, region, t};
use crate::machines::requests::WalletOutcome;
use crate::model::caip::CaipNetworkId;
use crate::session::Event;

pub const ID: &str = "hostRequests";

/// Spec §6 and §8: what a disallowed method shows, and its rejection's message.
pub const NOT_ALLOWED: &str = "Requested RPC call is not allowed";
/// Spec §5 and §9: the message shows this long after the modal opens.
pub const NOT_ALLOWED_DELAY_MS: u64 = 300;
/// At most this many host requests wait at once; more are refused.
pub const MAX_PENDING: usize = 16;
/// Answered requests kept for the host's provider to read (oldest dropped first).
pub const MAX_SETTLED: usize = 16;
/// A request's params, or an answer, larger than this (as JSON) is refused.
pub const MAX_JSON_BYTES: usize = 64 * 1024;
/// The params of all pending requests together (as JSON): a request that would take them over is
/// refused, so that one session's waiting requests hold at most this much (twice: the wallet's
/// request carries them too), not 16 × 64 KiB.
pub const MAX_PENDING_JSON_BYTES: usize = 128 * 1024;
/// The answers kept together (as JSON): when a new answer would take them over, the oldest are
/// forgotten first (never the new one), so that one session holds at most about this much of
/// answers, not 16 × 64 KiB.
pub const MAX_SETTLED_JSON_BYTES: usize = 128 * 1024;
/// The most gas a host's `eth_call` or `eth_estimateGas` may ask the gateway's node for: a block's
/// worth and more. A node that runs calls without a cap of its own (anvil) would otherwise execute
/// a looping call for good.
pub const MAX_CALL_GAS: u64 = 50_000_000;
/// The longest request id and method name taken.
pub const MAX_ID_LEN: usize = 64;
pub const MAX_METHOD_LEN: usize = 64;

/// EIP-1193 and JSON-RPC codes a host's request is rejected with.
pub mod codes {
    /// The visitor said no (or closed the modal).
    pub const USER_REJECTED: i64 = 4001;
    /// No connected account may do this.
    pub const UNAUTHORIZED: i64 = 4100;
    /// The method is not supported.
    pub const UNSUPPORTED_METHOD: i64 = 4200;
    /// The provider is disconnected (the page that asked is gone).
    pub const DISCONNECTED: i64 = 4900;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
}

/// Answered from the session's own state.
pub const SESSION_METHODS: &[&str] = &["eth_accounts", "eth_chainId", "eth_requestAccounts"];

/// Spec §6 safe methods answered by the chain service without a prompt: EIP-1474 reads that only
/// describe the chain (no filters or subscriptions, which keep per-caller state on a node the
/// sessions share). The gateway gives this list to the chain service as the only methods it
/// forwards.
pub const CHAIN_READ_METHODS: &[&str] = &[
    "eth_blockNumber",
    "eth_call",
    "eth_estimateGas",
    "eth_feeHistory",
    "eth_gasPrice",
    "eth_getBalance",
    "eth_getBlockByHash",
    "eth_getBlockByNumber",
    "eth_getBlockReceipts",
    "eth_getBlockTransactionCountByHash",
    "eth_getBlockTransactionCountByNumber",
    "eth_getCode",
    "eth_getLogs",
    "eth_getProof",
    "eth_getStorageAt",
    "eth_getTransactionByBlockHashAndIndex",
    "eth_getTransactionByBlockNumberAndIndex",
    "eth_getTransactionByHash",
    "eth_getTransactionCount",
    "eth_getTransactionReceipt",
    "eth_getUncleCountByBlockHash",
    "eth_getUncleCountByBlockNumber",
    "eth_maxPriorityFeePerGas",
    "eth_blobBaseFee",
    "eth_syncing",
    "net_version",
    "web3_clientVersion",
];

/// Spec §6 safe methods only the connected wallet can answer (no prompt, not on the stack).
pub const WALLET_READ_METHODS: &[&str] = &[
    "wallet_getAssets",
    "wallet_getCapabilities",
    "wallet_getCallsStatus",
    "wallet_getPermissions",
    "wallet_switchEthereumChain",
    "wallet_addEthereumChain",
    "wallet_watchAsset",
    "eth_sendRawTransaction",
];

/// Spec §6 not-safe methods (signing and sending): the connected wallet asks the visitor, and the
/// request waits on the transaction stack.
pub const SIGN_METHODS: &[&str] = &[
    "personal_sign",
    "eth_signTypedData_v4",
    "eth_sendTransaction",
    "wallet_sendCalls",
    "wallet_grantPermissions",
    "wallet_revokePermissions",
];

/// Who answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum HostRoute {
    /// From the session's state (`eth_accounts`, `eth_chainId`).
    Session,
    /// A safe read, by the chain service (no wallet prompt).
    Chain,
    /// The connected wallet, without a prompt.
    Wallet,
    /// The connected wallet, which asks the visitor (signing and sending): the transaction stack.
    WalletPrompt,
    /// `wallet_switchEthereumChain` to one of the session's networks: the session's network switch
    /// (SwitchNetwork view, 4902 → add → switch), on the transaction stack; settled when the switch
    /// finishes (null) or fails (the wallet's error). `network` is the target.
    NetworkSwitch,
    /// In neither list: refused after the message shows.
    Disallowed,
}

/// Which list `method` is in (spec §6); `Disallowed` when in none.
pub fn classify(method: &str) -> HostRoute {
    if SESSION_METHODS.contains(&method) {
        HostRoute::Session
    } else if CHAIN_READ_METHODS.contains(&method) {
        HostRoute::Chain
    } else if WALLET_READ_METHODS.contains(&method) {
        HostRoute::Wallet
    } else if SIGN_METHODS.contains(&method) {
        HostRoute::WalletPrompt
    } else {
        HostRoute::Disallowed
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct HostRequest {
    /// Chosen by the host's provider.
    pub id: String,
    pub method: String,
    /// Cleared once answered.
    #[ts(type = "unknown")]
    pub params: serde_json::Value,
    pub route: HostRoute,
    /// The network a chain read goes to.
    pub network: Option<CaipNetworkId>,
    /// The session's wallet request performing it.
    #[ts(type = "string | null")]
    pub wallet_request: Option<String>,
    /// When a disallowed request's message shows and it is rejected.
    #[ts(type = "number | null")]
    pub deadline_ms: Option<u64>,
    #[ts(type = "number")]
    pub received_ms: u64,
    /// The answer, once there is one.
    pub outcome: Option<WalletOutcome>,
}

impl HostRequest {
    pub fn is_pending(&self) -> bool {
        self.outcome.is_none()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum HostRequestsStatus {
    #[default]
    Idle,
    Pending,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct HostRequestsState {
    pub status: HostRequestsStatus,
    pub items: BTreeMap<String, HostRequest>,
    /// Oldest first, pending and answered.
    pub order: Vec<String>,
    /// Spec §4: the transaction stack, the signing requests the visitor is asked to approve
    /// (oldest first). Popped on success or error; the modal closes when it empties.
    pub stack: Vec<String>,
    /// Whether the modal was opened for the stack (so it closes when the stack empties).
    pub opened_modal: bool,
}

impl HostRequestsState {
    pub fn get(&self, id: &str) -> Option<&HostRequest> {
        self.items.get(id)
    }

    pub fn pending(&self) -> impl Iterator<Item = &HostRequest> {
        self.order.iter().filter_map(|id| self.items.get(id)).filter(|r| r.is_pending())
    }

    pub fn pending_count(&self) -> usize {
        self.pending().count()
    }

    /// The bytes (as JSON) of the pending requests' params.
    pub fn pending_json_bytes(&self) -> usize {
        self.pending().map(|r| json_len(&r.params)).sum()
    }

    /// The answered requests to forget, oldest first, so that with `id`'s new answer of `bytes`
    /// the answers kept take at most [`MAX_SETTLED_JSON_BYTES`]. Never `id` itself.
    pub fn answers_to_forget(&self, id: &str, bytes: usize) -> Vec<String> {
        let answered: Vec<(&str, usize)> = self
            .order
            .iter()
            .filter_map(|o| self.items.get(o))
            .filter(|r| r.id != id)
            .filter_map(|r| Some((r.id.as_str(), json_len(r.outcome.as_ref()?))))
            .collect();
        let mut total = bytes + answered.iter().map(|(_, b)| b).sum::<usize>();
        let mut forget = Vec::new();
        for (old, old_bytes) in answered {
            if total <= MAX_SETTLED_JSON_BYTES {
                break;
            }
            total -= old_bytes;
            forget.push(old.to_string());
        }
        forget
    }

    /// The pending host request a wallet request performs.
    pub fn for_wallet_request(&self, request_id: &str) -> Option<&HostRequest> {
        self.pending().find(|r| r.wallet_request.as_deref() == Some(request_id))
    }

    /// The chain reads waiting for the chain service (the runtime's effects).
    pub fn chain_reads(&self) -> impl Iterator<Item = &HostRequest> {
        self.pending().filter(|r| r.route == HostRoute::Chain)
    }

    /// The earliest deadline of a disallowed request.
    pub fn next_deadline(&self) -> Option<u64> {
        self.pending().filter_map(|r| r.deadline_ms).min()
    }
}

/// The bytes of `value` as JSON, counted without building the text.
pub fn json_len(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}

/// `HostRequestsDrained` when settling `id` leaves nothing pending.
pub fn drained_after(state: &HostRequestsState, settling: &str) -> Option<Event> {
    let left = state.pending().filter(|r| r.id != settling).count();
    (left == 0 && state.status == HostRequestsStatus::Pending).then_some(Event::HostRequestsDrained {})
}

pub fn evolve(mut state: HostRequestsState, event: &Event) -> HostRequestsState {
    match event {
        Event::HostRequestReceived { request } => {
            state.status = HostRequestsStatus::Pending;
            state.order.push(request.id.clone());
            state.items.insert(request.id.clone(), request.clone());
        }
        Event::HostRequestSettled { id, outcome } => {
            if let Some(request) = state.items.get_mut(id) {
                request.outcome = Some(outcome.clone());
                request.params = serde_json::Value::Null;
                request.deadline_ms = None;
            }
            // Keep the newest answers only.
            let settled: Vec<String> =
                state.order.iter().filter(|id| state.items.get(*id).is_some_and(|r| !r.is_pending())).cloned().collect();
            for old in settled.iter().take(settled.len().saturating_sub(MAX_SETTLED)) {
                state.items.remove(old);
                state.order.retain(|o| o != old);
            }
        }
        Event::HostAnswersForgotten { ids } => {
            for id in ids {
                if state.items.get(id).is_some_and(|r| !r.is_pending()) {
                    state.items.remove(id);
                    state.order.retain(|o| o != id);
                }
            }
        }
        Event::HostRequestsDrained {} => state.status = HostRequestsStatus::Idle,
        Event::TransactionStackPushed { id, opened_modal } => {
            if state.stack.is_empty() {
                state.opened_modal = *opened_modal;
            }
            state.stack.push(id.clone());
        }
        Event::TransactionStackPopped { id } => {
            state.stack.retain(|s| s != id);
            if state.stack.is_empty() {
                state.opened_modal = false;
            }
        }
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    Statechart {
        id: ID.into(),
        description: "The host app's EIP-1193 requests the session is answering.".into(),
        regions: vec![region(
            ID,
            "/hostRequests/status",
            "idle",
            &["idle", "pending"],
            vec![t("idle", "HostRequestReceived", "pending"), t("pending", "HostRequestsDrained", "idle")],
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_are_disjoint_and_classify_as_spec_6_says() {
        let lists = [SESSION_METHODS, CHAIN_READ_METHODS, WALLET_READ_METHODS, SIGN_METHODS];
        for (i, a) in lists.iter().enumerate() {
            for b in &lists[i + 1..] {
                assert!(a.iter().all(|m| !b.contains(m)), "{a:?} and {b:?} overlap");
            }
        }
        // Nothing that signs, sends, changes a node's state or keeps per-caller state on it is a
        // chain read (the chain service forwards exactly this list).
        for m in [
            "eth_sendTransaction",
            "eth_sendRawTransaction",
            "personal_sign",
            "eth_sign",
            "eth_signTypedData_v4",
            "eth_accounts",
            "eth_newFilter",
            "eth_subscribe",
            "wallet_sendCalls",
            "anvil_setBalance",
            "evm_mine",
            "debug_traceTransaction",
            "ots_searchTransactionsBefore",
        ] {
            assert!(!CHAIN_READ_METHODS.contains(&m), "{m}");
        }
        assert_eq!(classify("eth_call"), HostRoute::Chain);
        assert_eq!(classify("eth_getBalance"), HostRoute::Chain);
        assert_eq!(classify("wallet_getAssets"), HostRoute::Wallet);
        assert_eq!(classify("personal_sign"), HostRoute::WalletPrompt);
        assert_eq!(classify("eth_sendTransaction"), HostRoute::WalletPrompt);
        assert_eq!(classify("wallet_sendCalls"), HostRoute::WalletPrompt);
        assert_eq!(classify("eth_accounts"), HostRoute::Session);
        for m in ["eth_sign", "anvil_setBalance", "eth_subscribe", "debug_traceTransaction", ""] {
            assert_eq!(classify(m), HostRoute::Disallowed, "{m}");
        }
    }
}
