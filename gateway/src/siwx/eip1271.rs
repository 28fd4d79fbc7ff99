//! EIP-1271 (`isValidSignature(bytes32,bytes)`) through a JSON-RPC provider.

use alloy::primitives::{Address, B256, Bytes};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::sol;
use alloy::transports::http::reqwest::Url;

sol! {
    /// EIP-1271: the standard signature validation method for contracts.
    #[sol(rpc)]
    interface IERC1271 {
        function isValidSignature(bytes32 hash, bytes signature) external view returns (bytes4 magicValue);
    }
}

/// `bytes4(keccak256("isValidSignature(bytes32,bytes)"))`: what a contract returns for a valid
/// signature.
pub const MAGIC_VALUE: [u8; 4] = [0x16, 0x26, 0xba, 0x7e];

/// Why a JSON-RPC question could not be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JSON-RPC error: {0}")]
pub struct RpcError(pub String);

/// Asks contracts about signatures over one JSON-RPC HTTP endpoint, or over a network of the
/// chain service (its endpoints, in order, with the RPC policy).
#[derive(Clone)]
pub struct Eip1271Checker {
    provider: DynProvider,
    /// What it asks, for logs: `scheme://host:port` of the endpoint, or the network's id.
    endpoint: String,
}

impl std::fmt::Debug for Eip1271Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eip1271Checker").field("endpoint", &self.endpoint).finish()
    }
}

impl Eip1271Checker {
    /// A checker for the JSON-RPC endpoint at `rpc_url` (`http://` or `https://`). Connects lazily.
    pub fn new(rpc_url: &str) -> Result<Self, RpcError> {
        let url: Url = rpc_url.parse().map_err(|e| RpcError(format!("bad RPC URL {rpc_url:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(RpcError(format!("RPC URL must be http or https: {rpc_url}")));
        }
        // reqwest is built with rustls and no provider of its own (decision 0906): install ring
        // before the first client is made, or building it panics.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let provider = ProviderBuilder::new().connect_http(url.clone()).erased();
        Ok(Self { provider, endpoint: vestibule_chain::rpc::http::redact(&url) })
    }

    /// A checker over an alloy client: the chain service's for a network
    /// ([`vestibule_chain::ChainService::client`]), whose endpoints, fallback, retries and
    /// timeouts are the network's. `endpoint` names it in logs.
    pub fn over_client(client: alloy::rpc::client::RpcClient, endpoint: impl Into<String>) -> Self {
        let provider = ProviderBuilder::new().connect_client(client).erased();
        Self { provider, endpoint: endpoint.into() }
    }

    /// What it asks (an endpoint without its path and query, or a network's id).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The chain id the endpoint serves (`eth_chainId`).
    pub async fn chain_id(&self) -> Result<u64, RpcError> {
        self.provider.get_chain_id().await.map_err(|e| RpcError(e.to_string()))
    }

    /// Whether `address` has code at the latest block (`eth_getCode`).
    pub async fn has_code(&self, address: Address) -> Result<bool, RpcError> {
        let code = self.provider.get_code_at(address).await.map_err(|e| RpcError(e.to_string()))?;
        Ok(!code.is_empty())
    }

    /// Whether the contract at `address` says `signature` is its signature of `hash`: `true` only
    /// when its answer is exactly the ABI word of the magic value (the selector and 28 zero bytes).
    /// A revert, no return data or any other return data is `false`; only a failure to get an
    /// answer is an error. The answer is read as raw bytes because a lenient `bytes4` decode
    /// takes any answer that starts with the selector: the identity precompile (`0x…04`) echoes
    /// the call's input, whose first four bytes are the selector (an outside review signed in as
    /// it with any signature). An address without code is for the caller to refuse
    /// ([`Self::has_code`]): precompiles have none.
    pub async fn is_valid_signature(&self, address: Address, hash: B256, signature: &[u8]) -> Result<bool, RpcError> {
        let contract = IERC1271::new(address, &self.provider);
        match contract.isValidSignature(hash, Bytes::copy_from_slice(signature)).call_raw().await {
            Ok(answer) => Ok(is_magic_word(&answer)),
            Err(alloy::contract::Error::AbiError(_) | alloy::contract::Error::ZeroData(..)) => Ok(false),
            Err(alloy::contract::Error::TransportError(e)) => match e.as_error_resp() {
                Some(resp) if resp.code == 3 || resp.message.to_ascii_lowercase().contains("revert") => Ok(false),
                _ => Err(RpcError(e.to_string())),
            },
            Err(e) => Err(RpcError(e.to_string())),
        }
    }

    /// [`Self::is_valid_signature`] for an address that has code: an account without any (an
    /// EOA, a precompile) is no contract account, whatever a call to it returns.
    pub async fn contract_accepts(&self, address: Address, hash: B256, signature: &[u8]) -> Result<bool, RpcError> {
        Ok(self.has_code(address).await? && self.is_valid_signature(address, hash, signature).await?)
    }
}

/// `bytes4` returned by the ABI: one 32-byte word, the value left-aligned, the rest zero.
fn is_magic_word(answer: &[u8]) -> bool {
    answer.len() == 32 && answer[..4] == MAGIC_VALUE && answer[4..].iter().all(|b| *b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_abi_word_of_the_magic_value_is_a_yes() {
        let mut word = [0u8; 32];
        word[..4].copy_from_slice(&MAGIC_VALUE);
        assert!(is_magic_word(&word));
        // What the identity precompile echoes: the selector, then the call's arguments.
        let echoed = [&MAGIC_VALUE[..], &[0x11; 28][..], &[0u8; 64][..]].concat();
        assert!(!is_magic_word(&echoed));
        assert!(!is_magic_word(&echoed[..32]), "dirty low-order bytes");
        assert!(!is_magic_word(&MAGIC_VALUE), "four bytes alone are no ABI word");
        assert!(!is_magic_word(&[]));
    }
}
