//! The local Solana peer (LiteSVM behind JSON-RPC, tests/peers/solana/server.mjs) per test, started
//! with node as tests/peers/solana.mjs starts it: `scripts/solana-peer.mjs` funds a key in SOL and
//! creates an SPL mint with a token account for it, then prints one JSON line. The peer exits when
//! its standard input closes (so it never outlives the test process) and is killed by its pid when
//! dropped. node and the peer's packages come from `ensure_peers` (scripts/lib/peers.sh); a missing
//! one fails the test, never skips it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use ed25519_dalek::SigningKey;
use serde_json::Value;

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The CAIP-2 id of the peer's default cluster (devnet's genesis hash prefix).
pub const DEVNET: &str = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

/// A test key from a seed byte, and its base58 address.
pub fn test_key(seed: u8) -> (SigningKey, String) {
    let key = SigningKey::from_bytes(&[seed; 32]);
    let address = bs58_address(&key.verifying_key().to_bytes());
    (key, address)
}

pub fn bs58_address(bytes: &[u8; 32]) -> String {
    vestibule_chain::solana::SolAddress::new_from_array(*bytes).to_string()
}

pub struct SolanaPeer {
    child: Child,
    pub info: Value,
}

impl SolanaPeer {
    /// A peer funding `owner` with `sol` SOL and `tokens` whole tokens of a new `decimals` mint.
    pub fn start(owner: &str, sol: u32, decimals: u8, tokens: u64) -> SolanaPeer {
        Self::start_as("devnet", owner, sol, decimals, tokens)
    }

    /// As [`SolanaPeer::start`], answering as `cluster` (devnet, mainnet or testnet: its genesis
    /// hash).
    pub fn start_as(cluster: &str, owner: &str, sol: u32, decimals: u8, tokens: u64) -> SolanaPeer {
        let script = workspace_root().join("tests/peers/scripts/solana-peer.mjs");
        assert!(
            workspace_root().join("tests/peers/node_modules/litesvm-linux-x64-gnu").is_dir(),
            "the Solana peer's packages are not installed: `bash -c '. scripts/lib/peers.sh && ensure_peers'`"
        );
        let mut child = Command::new(std::env::var_os("NODE").unwrap_or_else(|| "node".into()))
            .arg(script)
            .args(["--exit-with-stdin", "--cluster", cluster, "--fund", owner, "--sol", &sol.to_string()])
            .args(["--decimals", &decimals.to_string(), "--tokens", &tokens.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node runs the Solana peer");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("the peer's first line");
        let info: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("the peer printed {line:?}: {e}"));
        SolanaPeer { child, info }
    }

    pub fn url(&self) -> &str {
        self.info["url"].as_str().unwrap()
    }

    /// The genesis hash the peer answers `getGenesisHash` with.
    pub fn genesis_hash(&self) -> &str {
        self.info["genesisHash"].as_str().unwrap()
    }

    pub fn mint(&self) -> &str {
        self.info["mint"].as_str().unwrap()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// One JSON-RPC call straight to the peer (for checks beside the service under test).
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        vestibule_chain::tls::install_crypto_provider();
        let text = alloy::transports::http::reqwest::Client::new()
            .post(self.url())
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("the peer answers")
            .text()
            .await
            .unwrap();
        let answer: Value = serde_json::from_str(&text).unwrap();
        answer.get("result").cloned().unwrap_or_else(|| panic!("{method}: {answer}"))
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for SolanaPeer {
    fn drop(&mut self) {
        self.stop();
    }
}
