//! Send (spec §3 Send state, §4 Send, §5 Send, §7 On-chain, §8 Transaction errors): the form
//! (token, amount, receiver), the transfer the connected wallet is asked to send (a native
//! transfer or an ERC-20 `transfer` in the token's decimals), and the transactions sent from this
//! session with what their receipts said (read from the node by the chain service, an effect).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{region, t, Statechart};
use crate::model::caip::CaipNetworkId;
use crate::session::Event;

pub const ID: &str = "send";

/// Spec §5 and §8.
pub const AMOUNT_AND_RECEIVER_REQUIRED: &str = "An amount and receiver address are required";
pub const TOKEN_REQUIRED: &str = "A token is required";
pub const UNSUPPORTED_CHAIN: &str = "Unsupported chain";
/// Not in the spec's catalogue: the receiver is not an EVM address (spec §5's rule).
pub const INVALID_RECEIVER: &str = "Invalid receiver address";
pub const SENT: &str = "Transaction sent";
/// Transactions remembered per session (newest first).
pub const MAX_SENT: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum SendStatus {
    /// The form is being filled in.
    #[default]
    Idle,
    /// The connected wallet was asked to send; spec: loading.
    Sending,
}

/// The token of the form, one of the balances: `eip155:1/native` or `eip155:1/erc20:0x…`.
pub type AssetId = String;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SendForm {
    #[ts(type = "string | null")]
    pub token: Option<AssetId>,
    /// As typed (spec: sendTokenAmount).
    pub amount: String,
    /// As typed (spec: receiverAddress).
    pub receiver: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum TransferKind {
    Native,
    Erc20,
}

/// A transfer the wallet was asked to send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Transfer {
    pub request_id: String,
    pub network: CaipNetworkId,
    pub kind: TransferKind,
    pub asset: AssetId,
    pub symbol: String,
    /// The amount as validated (every digit).
    pub amount: String,
    pub receiver: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum SentStatus {
    /// Waiting for its receipt.
    Pending,
    Confirmed,
    /// Mined but reverted.
    Reverted,
    /// No receipt when the wait ended (or the node could not be asked).
    Unconfirmed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SentTransaction {
    pub hash: String,
    pub transfer: Transfer,
    pub status: SentStatus,
    #[ts(type = "number | null")]
    pub block_number: Option<u64>,
    #[ts(type = "number")]
    pub sent_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SendState {
    pub status: SendStatus,
    pub form: SendForm,
    /// Bumped when the form is reset, so a view holding its own inputs starts again.
    #[ts(type = "number")]
    pub form_version: u64,
    /// The validation or transaction error, as the catalogue words it.
    #[ts(type = "string | null")]
    pub error: Option<String>,
    /// The transfer the wallet is being asked for.
    pub sending: Option<Transfer>,
    /// Newest first.
    pub sent: Vec<SentTransaction>,
}

impl SendState {
    /// Transactions waiting for their receipt (the runtime asks the chain service).
    pub fn awaiting_receipts(&self) -> impl Iterator<Item = &SentTransaction> {
        self.sent.iter().filter(|s| s.status == SentStatus::Pending)
    }
}

pub fn evolve(mut state: SendState, event: &Event) -> SendState {
    match event {
        Event::SendFormChanged { form } => {
            state.form = form.clone();
            state.error = None;
        }
        Event::SendRejected { message } => state.error = Some(message.clone()),
        Event::SendSubmitted { transfer } => {
            state.status = SendStatus::Sending;
            state.error = None;
            state.sending = Some(transfer.clone());
        }
        Event::SendSucceeded { hash, sent_ms } => {
            state.status = SendStatus::Idle;
            if let Some(transfer) = state.sending.take() {
                state.sent.insert(0, SentTransaction { hash: hash.clone(), transfer, status: SentStatus::Pending, block_number: None, sent_ms: *sent_ms });
                state.sent.truncate(MAX_SENT);
            }
        }
        Event::SendFailed { message, .. } => {
            state.status = SendStatus::Idle;
            state.sending = None;
            state.error = Some(message.clone());
        }
        Event::SendReset {} => {
            // Spec: resetSend clears every send field (the transactions sent stay listed).
            state.form = SendForm::default();
            state.form_version += 1;
            state.error = None;
        }
        Event::ReceiptRecorded { hash, status, block_number } => {
            if let Some(sent) = state.sent.iter_mut().find(|s| &s.hash == hash) {
                sent.status = *status;
                sent.block_number = *block_number;
            }
        }
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    Statechart {
        id: ID.into(),
        description: "The Send view: idle while the form is filled in, sending while the wallet is asked.".into(),
        regions: vec![region(
            ID,
            "/send/status",
            "idle",
            &["idle", "sending"],
            vec![t("idle", "SendSubmitted", "sending"), t("sending", "SendSucceeded", "idle"), t("sending", "SendFailed", "idle")],
        )],
    }
}
