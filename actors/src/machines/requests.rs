//! Wallet requests: browser effects the session asks the client to perform (a connect prompt, a
//! silent account sync, an RPC call). Each is pending in the state under an id until the client
//! answers with `ResolveWalletRequest` carrying the result or an EIP-1193 / EIP-5792 error code.
//! Recorded outcomes are what make a replay exact.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{Statechart, region, t};
use crate::model::caip::{CaipNetworkId, Namespace};
use crate::session::Event;

pub const ID: &str = "requests";

/// At most this many requests are pending at once; further requests are refused.
pub const MAX_PENDING: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum RequestKind {
    /// Ask the wallet for accounts (`eth_requestAccounts`, then `eth_chainId`). May prompt.
    Connect,
    /// Read the accounts the wallet already granted (`eth_accounts`, `eth_chainId`). Never prompts.
    Sync,
    /// Sign `message` with `address` (`personal_sign` on eip155, `signMessage` on Solana). The
    /// result is the signature as a string, or `{ signature, cacao? }`.
    SignMessage { message: String, address: String },
    /// Solana: sign (not send) `transaction`, the unsigned wire transaction in base64 the server
    /// built for `address` on `network` (Wallet Standard `solana:signTransaction`, with the
    /// cluster's chain, `solana:devnet` for `solana:EtWT…`). The result is the signed wire
    /// transaction in base64, as a string or `{ signedTransaction }`; the server sends it.
    SignTransaction { transaction: String, address: String, network: CaipNetworkId },
    /// A JSON-RPC request to the wallet.
    Rpc {
        method: String,
        #[ts(type = "unknown")]
        params: serde_json::Value,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct WalletRequest {
    pub id: String,
    pub connector_id: String,
    pub namespace: Namespace,
    pub kind: RequestKind,
    #[ts(type = "number")]
    pub issued_ms: u64,
}

/// How the browser answered a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", tag = "status")]
pub enum WalletOutcome {
    Ok {
        #[ts(type = "unknown")]
        result: serde_json::Value,
    },
    /// An EIP-1193 (4001, 4100, 4200, 4900, 4901, 4902), EIP-5792 (5700-5760) or JSON-RPC error.
    Error {
        #[ts(type = "number")]
        code: i64,
        message: String,
    },
}

impl WalletOutcome {
    /// The provider codes that mean the person said no (4001, and 5000 which the spec treats as a
    /// user rejection).
    pub fn is_user_rejection(&self) -> bool {
        matches!(self, WalletOutcome::Error { code: 4001 | 5000, .. })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum RequestsStatus {
    #[default]
    Idle,
    Pending,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct WalletRequests {
    pub status: RequestsStatus,
    pub items: BTreeMap<String, WalletRequest>,
    /// Oldest first.
    pub order: Vec<String>,
    #[ts(type = "number")]
    pub next_id: u64,
}

impl WalletRequests {
    pub fn next_request_id(&self) -> String {
        format!("r{}", self.next_id + 1)
    }

    pub fn get(&self, id: &str) -> Option<&WalletRequest> {
        self.items.get(id)
    }

    pub fn pending_for(&self, connector_id: &str) -> impl Iterator<Item = &WalletRequest> {
        let connector_id = connector_id.to_string();
        self.order.iter().filter_map(|id| self.items.get(id)).filter(move |r| r.connector_id == connector_id)
    }
}

/// Events that end requests `ids` (settled or cancelled by the caller's events) and, when nothing is
/// left pending, mark the machine idle.
pub fn drained_after(requests: &WalletRequests, ending: &[&str]) -> Option<Event> {
    let left = requests.order.iter().filter(|id| !ending.contains(&id.as_str())).count();
    (left == 0 && requests.status == RequestsStatus::Pending).then_some(Event::WalletRequestsDrained {})
}

pub fn evolve(mut state: WalletRequests, event: &Event) -> WalletRequests {
    match event {
        Event::WalletRequestIssued { request } => {
            state.next_id += 1;
            state.status = RequestsStatus::Pending;
            state.order.push(request.id.clone());
            state.items.insert(request.id.clone(), request.clone());
        }
        Event::WalletRequestSettled { id, .. } | Event::WalletRequestCancelled { id, .. } => {
            state.items.remove(id);
            state.order.retain(|o| o != id);
        }
        Event::WalletRequestsDrained {} => state.status = RequestsStatus::Idle,
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    Statechart {
        id: ID.into(),
        description: "Browser effects the session is waiting for.".into(),
        regions: vec![region(
            ID,
            "/requests/status",
            "idle",
            &["idle", "pending"],
            vec![t("idle", "WalletRequestIssued", "pending"), t("pending", "WalletRequestsDrained", "idle")],
        )],
    }
}
