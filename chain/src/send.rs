//! The calls a send needs (spec §4 Send, §5 Send, §7 On-chain): a native transfer or an ERC-20
//! `transfer(receiver, amount)` in the token's decimals, validated with the spec's messages. What
//! comes out is the transaction the session asks the connected wallet to send.

use alloy::primitives::{Address, Bytes, U256};
use alloy::sol_types::SolCall;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::amount::{AmountError, parse_amount};
use crate::erc20::IERC20;

/// A transaction to send: `value` wei to `to`, with `data`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendCall {
    pub to: Address,
    pub value: U256,
    pub data: Bytes,
}

impl SendCall {
    /// `value` wei of the native currency to `to`.
    pub fn native_transfer(to: Address, value: U256) -> Self {
        Self { to, value, data: Bytes::new() }
    }

    /// `amount` base units of the ERC-20 at `token` to `receiver`: a zero-value call of
    /// `transfer(receiver, amount)` on the token contract.
    pub fn erc20_transfer(token: Address, receiver: Address, amount: U256) -> Self {
        let data = IERC20::transferCall { to: receiver, amount }.abi_encode();
        Self { to: token, value: U256::ZERO, data: data.into() }
    }

    /// The single parameter of `eth_sendTransaction` from `from` (EIP-1474 hex quantities; no
    /// `data` for a plain transfer).
    pub fn to_send_transaction_params(&self, from: Address) -> serde_json::Value {
        let mut tx = json!({ "from": from, "to": self.to, "value": format!("{:#x}", self.value) });
        if !self.data.is_empty() {
            tx["data"] = json!(self.data);
        }
        tx
    }
}

/// What a send is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SendAsset {
    Native { decimals: u8 },
    Erc20 { address: Address, decimals: u8 },
}

/// The Send view's fields as typed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendForm {
    pub asset: Option<SendAsset>,
    pub amount: String,
    pub receiver: String,
}

/// Why a send cannot be built. `Display` is the spec's message where it has one (§5 Send).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("An amount and receiver address are required")]
    AmountAndReceiverRequired,
    #[error("A token is required")]
    TokenRequired,
    #[error("Unsupported chain")]
    UnsupportedChain,
    #[error("Invalid receiver address")]
    InvalidReceiver,
    #[error("Invalid amount: {0}")]
    InvalidAmount(AmountError),
    #[error("The amount must be more than zero")]
    ZeroAmount,
}

/// Spec §5: an EVM address is an optional `0x` prefix and 40 hex digits (any case: the checksum
/// is the wallet's to show, and a wrongly cased address still names the same account).
pub fn parse_evm_address(text: &str) -> Option<Address> {
    let text = text.trim();
    let hex = text.strip_prefix("0x").unwrap_or(text);
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    alloy::hex::decode(hex).ok().map(|bytes| Address::from_slice(&bytes))
}

/// Validates the form in the spec's order (amount and receiver, then token) and builds the call.
/// `chain_supported`: whether the connected network has a chain service.
pub fn build_send(form: &SendForm, chain_supported: bool) -> Result<SendCall, SendError> {
    if !chain_supported {
        return Err(SendError::UnsupportedChain);
    }
    if form.amount.trim().is_empty() || form.receiver.trim().is_empty() {
        return Err(SendError::AmountAndReceiverRequired);
    }
    let asset = form.asset.ok_or(SendError::TokenRequired)?;
    let receiver = parse_evm_address(&form.receiver).ok_or(SendError::InvalidReceiver)?;
    let decimals = match asset {
        SendAsset::Native { decimals } | SendAsset::Erc20 { decimals, .. } => decimals,
    };
    let amount = parse_amount(&form.amount, decimals).map_err(SendError::InvalidAmount)?;
    if amount.is_zero() {
        return Err(SendError::ZeroAmount);
    }
    Ok(match asset {
        SendAsset::Native { .. } => SendCall::native_transfer(receiver, amount),
        SendAsset::Erc20 { address, .. } => SendCall::erc20_transfer(address, receiver, amount),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::address;

    const TOKEN: Address = address!("0x5FbDB2315678afecb367f032d93F642f64180aa3");
    const BOB: Address = address!("0x70997970C51812dc3A010C7d01b50e0d17dc79C8");

    fn form(asset: Option<SendAsset>, amount: &str, receiver: &str) -> SendForm {
        SendForm { asset, amount: amount.into(), receiver: receiver.into() }
    }

    #[test]
    fn a_native_send_is_a_plain_value_transfer() {
        let call = build_send(&form(Some(SendAsset::Native { decimals: 18 }), "0.5", &BOB.to_string()), true).unwrap();
        assert_eq!(call, SendCall { to: BOB, value: U256::from(500_000_000_000_000_000u64), data: Bytes::new() });
        let params = call.to_send_transaction_params(TOKEN);
        assert_eq!(params["value"], "0x6f05b59d3b20000");
        assert!(params.get("data").is_none());
    }

    #[test]
    fn an_erc20_send_calls_transfer_in_the_tokens_decimals() {
        let asset = SendAsset::Erc20 { address: TOKEN, decimals: 6 };
        let call = build_send(&form(Some(asset), "12.5", &BOB.to_string().to_lowercase()), true).unwrap();
        assert_eq!(call.to, TOKEN);
        assert_eq!(call.value, U256::ZERO);
        let decoded = IERC20::transferCall::abi_decode(&call.data).unwrap();
        assert_eq!((decoded.to, decoded.amount), (BOB, U256::from(12_500_000u64)));
        // transfer(address,uint256)
        assert_eq!(&call.data[..4], &[0xa9, 0x05, 0x9c, 0xbb]);
    }

    #[test]
    fn validation_messages_are_the_specs() {
        let native = Some(SendAsset::Native { decimals: 18 });
        let bob = BOB.to_string();
        assert_eq!(build_send(&form(native, "1", &bob), false).unwrap_err().to_string(), "Unsupported chain");
        assert_eq!(build_send(&form(native, "", &bob), true).unwrap_err().to_string(), "An amount and receiver address are required");
        assert_eq!(build_send(&form(native, "1", " "), true).unwrap_err().to_string(), "An amount and receiver address are required");
        assert_eq!(build_send(&form(None, "1", &bob), true).unwrap_err().to_string(), "A token is required");
        assert_eq!(build_send(&form(native, "1", "0x1234"), true), Err(SendError::InvalidReceiver));
        assert_eq!(build_send(&form(native, "0", &bob), true), Err(SendError::ZeroAmount));
        assert_eq!(
            build_send(&form(Some(SendAsset::Native { decimals: 2 }), "0.001", &bob), true),
            Err(SendError::InvalidAmount(AmountError::TooManyDecimals { decimals: 2 }))
        );
    }

    #[test]
    fn evm_addresses_take_an_optional_prefix_and_any_case() {
        assert_eq!(parse_evm_address("70997970c51812dc3a010c7d01b50e0d17dc79c8"), Some(BOB));
        assert_eq!(parse_evm_address("0x70997970C51812DC3A010C7D01B50E0D17DC79C8"), Some(BOB));
        assert_eq!(parse_evm_address("0x70997970c51812dc3a010c7d01b50e0d17dc79c"), None);
        assert_eq!(parse_evm_address("0x70997970c51812dc3a010c7d01b50e0d17dc79cg"), None);
        assert_eq!(parse_evm_address("0X70997970c51812dc3a010c7d01b50e0d17dc79c8"), None);
    }
}
