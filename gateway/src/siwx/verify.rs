//! Full verification: the pure checks and EOA / ed25519 verifiers from `vestibule_actors::siwx`,
//! then EIP-1271 for contract accounts when a JSON-RPC endpoint is configured.

use vestibule_actors::siwx::verify::eip191_hash;
use vestibule_actors::siwx::{
    Account, Namespace, SignatureMethod, SiwxMessage, Verified, VerifyError, VerifyPolicy, verify_eoa, verify_solana,
};

use super::eip1271::{Eip1271Checker, RpcError};

/// Why a message was not verified. [`SiwxError::code`] gives a stable snake_case reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiwxError {
    /// Refused by the pure checks (parse, claims, EOA or ed25519 signature).
    #[error(transparent)]
    Rejected(#[from] VerifyError),
    /// The account is a contract and its `isValidSignature` did not return the magic value.
    #[error("contract account {address} did not accept the signature (EIP-1271)")]
    ContractRejected {
        /// The contract account.
        address: String,
    },
    /// The JSON-RPC endpoint serves another chain than the message's `Chain ID`, so the account
    /// cannot be resolved there (EIP-4361: contract accounts are resolved on that chain).
    #[error("the RPC endpoint serves chain {rpc_chain_id}, the message is for chain {message_chain_id}")]
    RpcChainMismatch {
        /// From the message.
        message_chain_id: u64,
        /// From `eth_chainId`.
        rpc_chain_id: u64,
    },
    /// The JSON-RPC endpoint could not answer.
    #[error(transparent)]
    Rpc(#[from] RpcError),
}

impl SiwxError {
    /// A stable snake_case reason code (the pure verifier's codes, plus `contract_rejected`,
    /// `rpc_chain_mismatch` and `rpc_error`).
    pub fn code(&self) -> &'static str {
        match self {
            SiwxError::Rejected(e) => e.code(),
            SiwxError::ContractRejected { .. } => "contract_rejected",
            SiwxError::RpcChainMismatch { .. } => "rpc_chain_mismatch",
            SiwxError::Rpc(_) => "rpc_error",
        }
    }
}

/// Verifies a signed sign-in message.
///
/// - Solana: ed25519 over the message bytes ([`verify_solana`]).
/// - Ethereum: EIP-191 recovery first ([`verify_eoa`]). If the message's claims pass but the
///   signature is not the address's EOA signature, and `eip1271` is given, and the endpoint's chain
///   is the message's chain, and the address has code: the contract's `isValidSignature` is asked
///   about the message's EIP-191 hash. Without `eip1271`, or for an address without code, the EOA
///   verdict stands.
pub async fn verify_message(
    message: &str,
    signature: &[u8],
    policy: &VerifyPolicy,
    eip1271: Option<&Eip1271Checker>,
) -> Result<Verified, SiwxError> {
    let parsed = SiwxMessage::parse(message).map_err(VerifyError::from)?;
    if parsed.namespace() == Namespace::Solana {
        return Ok(verify_solana(message, signature, policy)?);
    }
    let eoa_error = match verify_eoa(message, signature, policy) {
        Ok(v) => return Ok(v),
        Err(e @ (VerifyError::SignatureMismatch { .. } | VerifyError::MalformedSignature(_))) => e,
        Err(e) => return Err(e.into()),
    };
    let Some(checker) = eip1271 else {
        return Err(eoa_error.into());
    };
    let Account::Eip155 { chain_id, address } = parsed.account else { unreachable!("namespace checked") };
    let rpc_chain_id = checker.chain_id().await?;
    if rpc_chain_id != chain_id {
        return Err(SiwxError::RpcChainMismatch { message_chain_id: chain_id, rpc_chain_id });
    }
    if !checker.has_code(address).await? {
        return Err(eoa_error.into());
    }
    if checker.is_valid_signature(address, eip191_hash(message.as_bytes()), signature).await? {
        Ok(Verified { message: parsed, method: SignatureMethod::Eip1271, unchecked: policy.unchecked() })
    } else {
        Err(SiwxError::ContractRejected { address: address.to_checksum(None) })
    }
}
