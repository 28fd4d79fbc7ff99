//! The Send view (spec §4 Send, §5 Send, §7 On-chain, §8 Transaction errors): the form, its
//! validation with the spec's messages in the spec's order, the transfer asked of the connected
//! wallet through the session's request queue, and what follows its answer and its receipt.

use alloy_primitives::U256;

use super::{Decision, account};
use crate::machines::balances::TokenBalance;
use crate::machines::requests::{RequestKind, WalletOutcome, WalletRequest};
use crate::machines::router::{NavigationMode, View};
use crate::machines::send::{
    AMOUNT_AND_RECEIVER_REQUIRED, INVALID_RECEIVER, PreparedSolanaTransfer, SENT, SendForm, SendStatus, SentStatus, SolanaSend,
    SolanaSendStep, SolanaSubmitFailure, TOKEN_REQUIRED, Transfer, TransferKind, UNSUPPORTED_CHAIN,
};
use crate::machines::toasts::ToastVariant;
use crate::model::caip::Namespace;
use crate::model::evm::{AmountError, erc20_transfer_data, parse_amount, parse_evm_address, quantity, transaction_error_message};
use crate::model::networks::NetworkRef;
use crate::session::state::ChainAccount;
use crate::session::{DomainError, Event, ReceiptOutcome};
use base64::Engine as _;

/// Longest text kept for an amount or receiver as typed.
const MAX_FIELD: usize = 128;

fn check_form(form: &SendForm) -> Result<(), DomainError> {
    let too_long = |field: &str| DomainError::InvalidInput { field: field.into(), message: format!("at most {MAX_FIELD} characters") };
    if form.amount.len() > MAX_FIELD {
        return Err(too_long("form.amount"));
    }
    if form.receiver.len() > MAX_FIELD {
        return Err(too_long("form.receiver"));
    }
    if form.token.as_ref().is_some_and(|t| t.len() > MAX_FIELD) {
        return Err(too_long("form.token"));
    }
    Ok(())
}

fn features(d: &Decision) -> Result<(), DomainError> {
    if d.state.options.features.send { Ok(()) } else { Err(DomainError::FeatureDisabled("send")) }
}

/// `SetSendForm`: the form as typed so far.
pub(super) fn set_form(d: &mut Decision, form: SendForm) -> Result<(), DomainError> {
    features(d)?;
    check_form(&form)?;
    if d.state.send.form != form {
        d.push(Event::SendFormChanged { form });
    }
    Ok(())
}

/// `ResetSend`.
pub(super) fn reset(d: &mut Decision) -> Result<(), DomainError> {
    features(d)?;
    if d.state.send.form != SendForm::default() || d.state.send.error.is_some() {
        d.push(Event::SendReset {});
    }
    Ok(())
}

/// `SubmitSend`: validates in the spec's order (chain supported; amount and receiver; token; then
/// the receiver is an EVM address and the amount is a positive amount of the token within its
/// balance) and asks the connected wallet to send the transfer.
pub(super) fn submit(d: &mut Decision, form: SendForm) -> Result<(), DomainError> {
    features(d)?;
    check_form(&form)?;
    if d.state.send.status == SendStatus::Sending {
        return Err(DomainError::SendPending);
    }
    let account = d.state.chain_account().ok_or(DomainError::NotConnected)?;
    if d.state.send.form != form {
        d.push(Event::SendFormChanged { form: form.clone() });
    }
    if account.namespace == Namespace::Solana {
        match validate_solana(d, &form, &account) {
            Ok((send, transfer)) => d.push(Event::SolanaSendStarted { send, transfer }),
            Err(message) => d.push(Event::SendRejected { message }),
        }
        return Ok(());
    }
    let Some(account) = d.state.evm_account() else { return Err(DomainError::NotConnected) };
    let transfer = match validate(d, &form, &account) {
        Ok(call) => call,
        Err(message) => {
            d.push(Event::SendRejected { message });
            return Ok(());
        }
    };
    let (transfer, params) = transfer;
    let request_id = d.issue_request(
        &account.connector_id,
        Namespace::Eip155,
        RequestKind::Rpc { method: "eth_sendTransaction".into(), params: serde_json::json!([params]) },
    )?;
    d.push(Event::SendSubmitted { transfer: Transfer { request_id, ..transfer } });
    Ok(())
}

/// Spec §5: a Solana address is 32 to 44 base58 characters, and (to be a receiver) names a
/// 32-byte ed25519 public key or program address.
pub fn is_solana_receiver(text: &str) -> bool {
    Namespace::Solana.is_valid_address(text) && bs58::decode(text).into_vec().is_ok_and(|bytes| bytes.len() == 32)
}

/// The same checks in the same order as EVM's (chain; amount and receiver; token; receiver;
/// amount), for a Solana account: the send the chain service is asked to build, or the message.
fn validate_solana(d: &Decision, form: &SendForm, account: &ChainAccount) -> Result<(SolanaSend, Transfer), String> {
    let token = form_token(d, form, &account.network, &account.address)?;
    let receiver = form.receiver.trim();
    if !is_solana_receiver(receiver) {
        return Err(INVALID_RECEIVER.into());
    }
    let amount = held_amount(form, token)?;
    // A Solana transfer carries its amount as a u64.
    if amount > U256::from(u64::MAX) {
        return Err(transaction_error_message(None, "insufficient funds").into());
    }
    let kind = if token.address.is_some() { TransferKind::Spl } else { TransferKind::Native };
    let send = SolanaSend {
        id: d.state.send.solana_sends + 1,
        network: account.network.caip_network_id.clone(),
        from: account.address.clone(),
        receiver: receiver.to_string(),
        mint: token.address.clone(),
        amount: amount.to_string(),
        step: SolanaSendStep::Preparing,
    };
    let transfer = Transfer {
        request_id: String::new(),
        network: account.network.caip_network_id.clone(),
        kind,
        asset: token.asset.clone(),
        symbol: token.symbol.clone(),
        amount: crate::model::evm::format_units(amount, token.decimals),
        receiver: receiver.to_string(),
        from: account.address.clone(),
        value: String::new(),
        data: String::new(),
    };
    Ok((send, transfer))
}

/// The chain service's transaction for Solana send `id`: the wallet is asked to sign it; or the
/// send fails with the service's message.
pub(super) fn solana_prepared(d: &mut Decision, id: u64, outcome: Result<PreparedSolanaTransfer, String>) -> Result<(), DomainError> {
    let Some(send) = d.state.send.solana.clone().filter(|s| s.id == id && s.step == SolanaSendStep::Preparing) else { return Ok(()) };
    match outcome {
        Ok(prepared) => {
            let Some(account) = d.state.chain_account().filter(|a| a.namespace == Namespace::Solana && a.address == send.from) else {
                d.push(Event::SendFailed { code: None, message: "The transfer was not sent: the account changed".into() });
                return Ok(());
            };
            let kind = RequestKind::SignTransaction {
                transaction: prepared.transaction.clone(),
                address: send.from.clone(),
                network: send.network.clone(),
            };
            match d.issue_request(&account.connector_id, Namespace::Solana, kind) {
                Ok(request_id) => d.push(Event::SolanaTransferPrepared { id, prepared, request_id }),
                Err(e) => failed(d, None, &e.to_string()),
            }
        }
        Err(message) => failed(d, None, &message),
    }
    Ok(())
}

/// The wallet's answer to the signing request: the signed transaction (base64) goes to the chain
/// service; a refusal ends the send with the catalogue's message.
pub(super) fn solana_signed(d: &mut Decision, outcome: WalletOutcome) {
    let Some(send) = d.state.send.solana.clone() else { return };
    match outcome {
        WalletOutcome::Ok { result } => {
            let signed = result.as_str().or_else(|| result.get("signedTransaction").and_then(|v| v.as_str()));
            let valid = signed.filter(|t| t.len() <= 4096 && base64::engine::general_purpose::STANDARD.decode(t).is_ok());
            match valid {
                Some(signed) => d.push(Event::SolanaTransferSigned { id: send.id, signed: signed.to_string() }),
                None => failed(d, None, "the wallet's answer is not a signed transaction"),
            }
        }
        WalletOutcome::Error { code, message } => failed(d, Some(code), &message),
    }
}

/// The chain service sent the signed transaction (its signature) or not: as a wallet's answer to
/// an EVM send. Spec §4: after a Solana send, the view returns to Account.
pub(super) fn solana_submitted(d: &mut Decision, id: u64, outcome: Result<String, SolanaSubmitFailure>) {
    let submitting = d.state.send.solana.as_ref().is_some_and(|s| s.id == id && matches!(s.step, SolanaSendStep::Submitting { .. }));
    if !submitting {
        return;
    }
    match outcome {
        Ok(signature) => {
            d.push(Event::SendSucceeded { hash: signature, sent_ms: d.now_ms });
            d.toast(SENT, ToastVariant::Success);
            d.push(Event::SendReset {});
            d.navigate(View::Account, None, NavigationMode::Reset);
        }
        Err(SolanaSubmitFailure::Node(message)) => failed(d, None, &message),
        Err(SolanaSubmitFailure::Refused(reason)) => {
            let message = format!("The transfer was not sent: {reason}");
            d.push(Event::SendFailed { code: None, message: message.clone() });
            d.toast(&message, ToastVariant::Error);
        }
    }
}

/// The checks both namespaces make first, in the catalogue's order: the chain is served, an amount
/// and a receiver are given, the token is one of this account's balances on this network.
fn form_token<'a>(d: &'a Decision, form: &SendForm, network: &NetworkRef, address: &str) -> Result<&'a TokenBalance, String> {
    if !d.state.chain_supported(network) {
        return Err(UNSUPPORTED_CHAIN.into());
    }
    if form.amount.trim().is_empty() || form.receiver.trim().is_empty() {
        return Err(AMOUNT_AND_RECEIVER_REQUIRED.into());
    }
    let balances = &d.state.balances;
    form.token
        .as_deref()
        .filter(|_| balances.belongs_to(&network.caip_network_id, address))
        .and_then(|asset| balances.find(asset))
        .ok_or_else(|| TOKEN_REQUIRED.to_string())
}

/// The form's amount in the token's base units: more than zero and at most what the account holds.
fn held_amount(form: &SendForm, token: &TokenBalance) -> Result<U256, String> {
    let amount = parse_amount(&form.amount, token.decimals).map_err(|e| match e {
        AmountError::TooManyDecimals { decimals } => format!("Invalid amount: {} has {decimals} decimals", token.symbol),
        e => format!("Invalid amount: {e}"),
    })?;
    if amount.is_zero() {
        return Err("The amount must be more than zero".into());
    }
    let held: U256 = token.raw.parse().unwrap_or(U256::ZERO);
    if amount > held {
        return Err(transaction_error_message(None, "insufficient funds").into());
    }
    Ok(amount)
}

/// The transfer and the `eth_sendTransaction` parameter, or the message to show.
fn validate(d: &Decision, form: &SendForm, account: &crate::session::state::EvmAccount) -> Result<(Transfer, serde_json::Value), String> {
    let token = form_token(d, form, &account.network, &account.address)?;
    let receiver = parse_evm_address(&form.receiver).ok_or_else(|| INVALID_RECEIVER.to_string())?;
    let amount = held_amount(form, token)?;
    let from = account.address.clone();
    let (kind, value, data, params) = match &token.address {
        None => {
            let value = quantity(amount);
            let params = serde_json::json!({ "from": &from, "to": receiver.to_checksum(None), "value": &value });
            (TransferKind::Native, value, "0x".to_string(), params)
        }
        Some(contract) => {
            let data = erc20_transfer_data(receiver, amount);
            let params = serde_json::json!({ "from": &from, "to": contract, "value": "0x0", "data": &data });
            (TransferKind::Erc20, "0x0".to_string(), data, params)
        }
    };
    let transfer = Transfer {
        request_id: String::new(),
        network: account.network.caip_network_id.clone(),
        kind,
        asset: token.asset.clone(),
        symbol: token.symbol.clone(),
        amount: crate::model::evm::format_units(amount, token.decimals),
        receiver: receiver.to_checksum(None),
        from,
        value,
        data,
    };
    Ok((transfer, params))
}

/// Whether `request` is the transfer being sent.
pub(super) fn owns(d: &Decision, request: &WalletRequest) -> bool {
    d.state.send.sending.as_ref().is_some_and(|t| t.request_id == request.id)
}

fn is_tx_hash(value: &serde_json::Value) -> Option<String> {
    let hash = value.as_str()?;
    let hex = hash.strip_prefix("0x")?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| hash.to_ascii_lowercase())
}

/// The wallet's answer to the transfer. Spec §4: after a native send, success is tracked, the
/// balance refreshed (once its receipt says it was mined) and the send state reset; after an ERC-20
/// transfer, the view returns to Account.
pub(super) fn answered(d: &mut Decision, outcome: WalletOutcome) {
    let Some(transfer) = d.state.send.sending.clone() else { return };
    match outcome {
        WalletOutcome::Ok { result } => match is_tx_hash(&result) {
            Some(hash) => {
                d.push(Event::SendSucceeded { hash, sent_ms: d.now_ms });
                d.toast(SENT, ToastVariant::Success);
                d.push(Event::SendReset {});
                if transfer.kind == TransferKind::Erc20 {
                    d.navigate(View::Account, None, NavigationMode::Reset);
                }
            }
            None => failed(d, None, "the wallet's answer is not a transaction hash"),
        },
        WalletOutcome::Error { code, message } => failed(d, Some(code), &message),
    }
}

fn failed(d: &mut Decision, code: Option<i64>, message: &str) {
    let message = transaction_error_message(code, message).to_string();
    d.push(Event::SendFailed { code, message: message.clone() });
    d.toast(&message, ToastVariant::Error);
}

/// The transfer's wallet request was cancelled (page reload, disconnect, modal closed).
pub(super) fn cancelled(d: &mut Decision, request_id: &str, reason: &str) {
    if d.state.send.sending.as_ref().is_some_and(|t| t.request_id == request_id) {
        d.push(Event::SendFailed { code: None, message: format!("The transfer was not sent: {reason}") });
    }
}

/// What the node's receipt says (an effect's outcome).
pub(super) fn receipt_observed(d: &mut Decision, hash: &str, outcome: ReceiptOutcome) {
    let pending = d.state.send.sent.iter().any(|s| s.hash == hash && s.status == SentStatus::Pending);
    if !pending {
        return;
    }
    let (status, block_number) = match outcome {
        ReceiptOutcome::Mined { success: true, block_number } => (SentStatus::Confirmed, Some(block_number)),
        ReceiptOutcome::Mined { success: false, block_number } => (SentStatus::Reverted, Some(block_number)),
        ReceiptOutcome::NotMined(_) => (SentStatus::Unconfirmed, None),
    };
    d.push(Event::ReceiptRecorded { hash: hash.to_string(), status, block_number });
    if status == SentStatus::Reverted {
        d.toast(transaction_error_message(Some(3), "execution reverted"), ToastVariant::Error);
    }
    if block_number.is_some() {
        account::after_transaction(d);
    }
}
