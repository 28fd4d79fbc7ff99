//! Send (spec §3 Send state, §4 Send, §5 Send, §7 On-chain, §8 Transaction errors): the form
//! (token, amount, receiver), the transfer the connected wallet is asked to send (a native
//! transfer or an ERC-20 `transfer` in the token's decimals), and the transactions sent from this
//! session with what their receipts said (read from the node by the chain service, an effect).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{Statechart, region, t};
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
    /// An SPL token on Solana (`TransferChecked`).
    Spl,
}

/// A Solana send's steps on the server: the chain service builds the transaction (an effect),
/// the wallet signs it (a wallet request), the chain service sends it (an effect).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SolanaSend {
    #[ts(type = "number")]
    pub id: u64,
    pub network: CaipNetworkId,
    pub from: String,
    pub receiver: String,
    /// The SPL mint; absent for SOL.
    #[ts(type = "string | null")]
    pub mint: Option<String>,
    /// Base units (lamports for SOL), in decimal.
    pub amount: String,
    pub step: SolanaSendStep,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", tag = "step")]
pub enum SolanaSendStep {
    /// The chain service is building the transaction with a recent blockhash.
    Preparing,
    /// The wallet is asked to sign `transaction` (base64; `message`: its message, base64).
    Signing {
        message: String,
        transaction: String,
        blockhash: String,
        #[serde(rename = "createsReceiverAccount")]
        creates_receiver_account: bool,
    },
    /// The chain service is sending `signed` (base64), checked against `message`.
    Submitting { message: String, signed: String },
}

/// Why the chain service did not send a Solana send's signed transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SolanaSubmitFailure {
    /// The wallet's answer failed the server's check (not a transaction, another transaction than
    /// the one built, no valid signature by the sender): it never reached a node. The reason is
    /// the visitor's to read, not an RPC error to classify.
    Refused(String),
    /// A node refused the transaction or none could be reached: what it said, which the spec's
    /// catalogue of transaction errors words for the visitor.
    Node(String),
}

/// The chain service's transaction for a Solana send (all base64).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct PreparedSolanaTransfer {
    pub message: String,
    pub transaction: String,
    pub blockhash: String,
    pub creates_receiver_account: bool,
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
    /// The account that sent it (the connected account when it was submitted): an EVM transfer's
    /// receipt must name it as its sender. Empty in logs written before it was recorded.
    #[serde(default)]
    pub from: String,
    /// An EVM transfer's transaction as built: its value (a hex quantity) and its calldata (hex,
    /// `0x` for a native transfer). The mined transaction must carry both, or it is another
    /// transaction to the same address. Empty for Solana, and in logs written before they were
    /// recorded (not compared then).
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub data: String,
}

impl Transfer {
    /// The address the transaction was built to: the receiver of a native transfer, the token
    /// contract of an ERC-20 one (from its asset id, `eip155:1/erc20:0x…`).
    pub fn sent_to(&self) -> &str {
        match self.asset.split_once("/erc20:") {
            Some((_, contract)) if self.kind == TransferKind::Erc20 => contract,
            _ => &self.receiver,
        }
    }
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
    /// The Solana send under way, while the server builds and sends it.
    pub solana: Option<SolanaSend>,
    /// Ids given to Solana sends so far.
    #[ts(type = "number")]
    pub solana_sends: u64,
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
        Event::SolanaSendStarted { send, transfer } => {
            state.status = SendStatus::Sending;
            state.error = None;
            state.sending = Some(transfer.clone());
            state.solana_sends = state.solana_sends.max(send.id);
            state.solana = Some(send.clone());
        }
        Event::SolanaTransferPrepared { id, prepared, request_id } => {
            if let Some(send) = state.solana.as_mut().filter(|s| s.id == *id) {
                send.step = SolanaSendStep::Signing {
                    message: prepared.message.clone(),
                    transaction: prepared.transaction.clone(),
                    blockhash: prepared.blockhash.clone(),
                    creates_receiver_account: prepared.creates_receiver_account,
                };
                if let Some(transfer) = state.sending.as_mut() {
                    transfer.request_id = request_id.clone();
                }
            }
        }
        Event::SolanaTransferSigned { id, signed } => {
            if let Some(send) = state.solana.as_mut().filter(|s| s.id == *id)
                && let SolanaSendStep::Signing { message, .. } = &send.step
            {
                send.step = SolanaSendStep::Submitting { message: message.clone(), signed: signed.clone() };
            }
        }
        Event::SendSucceeded { hash, sent_ms } => {
            state.status = SendStatus::Idle;
            state.solana = None;
            if let Some(transfer) = state.sending.take() {
                state.sent.insert(
                    0,
                    SentTransaction { hash: hash.clone(), transfer, status: SentStatus::Pending, block_number: None, sent_ms: *sent_ms },
                );
                state.sent.truncate(MAX_SENT);
            }
        }
        Event::SendFailed { message, .. } => {
            state.status = SendStatus::Idle;
            state.sending = None;
            state.solana = None;
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
            vec![
                t("idle", "SendSubmitted", "sending"),
                t("idle", "SolanaSendStarted", "sending"),
                t("sending", "SendSucceeded", "idle"),
                t("sending", "SendFailed", "idle"),
            ],
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_is_sent_to_its_receiver_or_its_token_contract() {
        let native = Transfer {
            request_id: "r".into(),
            network: CaipNetworkId::eip155(1),
            kind: TransferKind::Native,
            asset: "eip155:1/native".into(),
            symbol: "ETH".into(),
            amount: "1".into(),
            receiver: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8".into(),
            from: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".into(),
            value: "0xde0b6b3a7640000".into(),
            data: "0x".into(),
        };
        assert_eq!(native.sent_to(), "0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
        let token =
            Transfer { kind: TransferKind::Erc20, asset: "eip155:1/erc20:0x5FbDB2315678afecb367f032d93F642f64180aa3".into(), ..native };
        assert_eq!(token.sent_to(), "0x5FbDB2315678afecb367f032d93F642f64180aa3");
    }
}
