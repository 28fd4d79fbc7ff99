//! The chain side of the `account` scenario: the devnet that `scripts/lib/devnet.sh`
//! (`start_devnet DIR`) started, read from its `devnet.json` and `chain.toml`, and the accounts the
//! visitors connect with. The harness plays the visitors' wallet: it really sends their transfers
//! to the node (anvil's `eth_sendTransaction` from an impersonated account, so anvil fills in the
//! nonce, gas and fees) and answers the session's wallet request with the node's hash.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use alloy::primitives::{Address, U256, keccak256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::transports::RpcError;
use serde_json::{Value, json};

/// What a visitor's wallet needs of the devnet.
pub struct Devnet {
    pub dir: PathBuf,
    /// The network the visitors' accounts are on (CAIP-2), the first of `devnet.json`.
    pub network: String,
    pub chain_id: u64,
    pub rpc_url: String,
    /// `chain.toml`: the gateway's `[networks]` for the devnet, added to the started gateway's
    /// configuration as it is.
    pub chain_config: String,
    /// Every devnet network as a session option (`networks` in the hello).
    pub networks_option: Value,
    provider: DynProvider,
}

/// One address shared by the visitors connected with it.
pub struct AccountWallet {
    pub address: Address,
    /// anvil takes an impersonated account's nonce from its pool; sends of one address go one at a
    /// time so that two in the same instant cannot be given the same nonce.
    send_turn: tokio::sync::Mutex<()>,
}

/// Each funded address gets this much ether (1000 ETH): far more than a run's sends and fees.
const FUNDS_WEI: u128 = 1_000_000_000_000_000_000_000;

impl Devnet {
    /// Reads `DIR/devnet.json` and `DIR/chain.toml`, as `start_devnet DIR` wrote them.
    pub fn read(dir: &Path) -> anyhow::Result<Self> {
        let file = dir.join("devnet.json");
        let devnet: Value = serde_json::from_str(
            &std::fs::read_to_string(&file)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e} (start the devnet with `start_devnet DIR`)", file.display()))?,
        )?;
        let networks =
            devnet["networks"].as_object().filter(|n| !n.is_empty()).ok_or_else(|| anyhow::anyhow!("{}: no networks", file.display()))?;
        let mut ids: Vec<&String> = networks.keys().collect();
        ids.sort();
        let network = ids[0].clone();
        let chain_id = networks[&network]["chainId"].as_u64().ok_or_else(|| anyhow::anyhow!("{network}: no chainId"))?;
        let rpc_url = networks[&network]["rpcUrl"].as_str().ok_or_else(|| anyhow::anyhow!("{network}: no rpcUrl"))?.to_string();
        let networks_option = Value::Array(
            ids.iter()
                .map(|id| {
                    json!({
                        "caipNetworkId": id,
                        "name": format!("Devnet {}", networks[*id]["chainId"]),
                        "nativeCurrency": { "name": "Ether", "symbol": "ETH", "decimals": 18 },
                        "testnet": true
                    })
                })
                .collect(),
        );
        let chain_config = std::fs::read_to_string(dir.join("chain.toml"))?;
        // reqwest is built without a default TLS provider (decision 0906); the devnet is plain
        // HTTP, but the client refuses to build without one.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let provider = ProviderBuilder::new().connect_http(rpc_url.parse()?).erased();
        Ok(Devnet { dir: dir.to_path_buf(), network, chain_id, rpc_url, chain_config, networks_option, provider })
    }

    /// `count` addresses of the harness's own (not anvil's dev accounts, which the devnet's setup
    /// uses), each funded and impersonated on the node so that it can send.
    pub async fn fund(&self, count: usize) -> anyhow::Result<Vec<Arc<AccountWallet>>> {
        let mut wallets = Vec::with_capacity(count);
        for k in 0..count {
            let address = Address::from_slice(&keccak256(format!("vestibule-load account {k}"))[12..]);
            let _: Value = self.provider.raw_request("anvil_setBalance".into(), (address, U256::from(FUNDS_WEI))).await?;
            let _: Value = self.provider.raw_request("anvil_impersonateAccount".into(), (address,)).await?;
            wallets.push(Arc::new(AccountWallet { address, send_turn: tokio::sync::Mutex::new(()) }));
        }
        Ok(wallets)
    }

    /// Mines a block every `seconds` instead of one per transaction, as a real chain does: sent
    /// transactions then wait for their block, and their receipts are chain effects in flight for
    /// that long.
    pub async fn set_block_time(&self, seconds: u64) -> anyhow::Result<()> {
        let _: Value = self.provider.raw_request("evm_setAutomine".into(), (false,)).await?;
        let _: Value = self.provider.raw_request("evm_setIntervalMining".into(), (seconds,)).await?;
        Ok(())
    }

    /// Sends the session's `eth_sendTransaction` parameter as the wallet would; the node's hash, or
    /// the JSON-RPC error (code, message) the wallet would pass on.
    pub async fn send(&self, wallet: &AccountWallet, params: &Value) -> Result<String, (i64, String)> {
        let _turn = wallet.send_turn.lock().await;
        match self.provider.raw_request::<_, String>("eth_sendTransaction".into(), (params,)).await {
            Ok(hash) => Ok(hash),
            Err(RpcError::ErrorResp(e)) => Err((e.code, e.message.to_string())),
            Err(e) => Err((-32603, e.to_string())),
        }
    }
}
