//! Spec §6: the read-only JSON-RPC methods a host's request may have answered by the chain
//! service directly (no wallet prompt). Everything that signs, sends or changes a node's state is
//! the wallet's, and anything else is refused.

/// EIP-1474 reads that only describe the chain. Filters and subscriptions are left out: they keep
/// state on the node per caller, which a service shared by every session must not.
pub const SAFE_READ_METHODS: &[&str] = &[
    "eth_blockNumber",
    "eth_call",
    "eth_chainId",
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

pub fn is_safe_read_method(method: &str) -> bool {
    SAFE_READ_METHODS.contains(&method)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_safe_and_signing_or_state_changes_are_not() {
        for m in ["eth_call", "eth_getBalance", "eth_blockNumber", "eth_getLogs", "eth_chainId"] {
            assert!(is_safe_read_method(m), "{m}");
        }
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
            assert!(!is_safe_read_method(m), "{m}");
        }
    }
}
