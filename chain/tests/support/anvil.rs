//! A real local EVM node (anvil, from the npm package in tests/peers) per test, the demo ERC-20,
//! and the dev wallet's key from its one source, tests/peers/dev-wallet.json.
//!
//! anvil is found through `ANVIL_BIN`, else in tests/peers/node_modules (installed by `ensure_peers`
//! in scripts/lib/peers.sh). A missing anvil fails the tests; it never skips them.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alloy::primitives::{Address, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol;
use sha2::Digest as _;

sol!(
    #[sol(rpc)]
    DemoToken,
    "../tests/peers/contracts/DemoToken.json"
);

/// anvil's first development account (funded, publicly known key).
pub const ANVIL_KEY_0: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
/// anvil's second development account.
pub const ANVIL_KEY_1: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub fn anvil_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("ANVIL_BIN") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "ANVIL_BIN={} is not a file", p.display());
        return p;
    }
    let p = workspace_root().join("tests/peers/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
    assert!(
        p.is_file(),
        "anvil is not installed (looked for ANVIL_BIN, then {}).\n\
         Install the test peers: `./scripts/test` does it, or by hand \
         `bash -c '. scripts/lib/peers.sh && ensure_peers'`.",
        p.display()
    );
    p
}

/// The dev wallet of tests/peers/dev-wallet.json.
pub fn dev_wallet() -> (PrivateKeySigner, Address) {
    let text = std::fs::read_to_string(workspace_root().join("tests/peers/dev-wallet.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let signer: PrivateKeySigner = json["privateKey"].as_str().unwrap().parse().unwrap();
    let address: Address = json["address"].as_str().unwrap().parse().unwrap();
    assert_eq!(signer.address(), address, "dev-wallet.json: the address is not the key's");
    (signer, address)
}

/// Fails when DemoToken.sol changed after its artifact was compiled.
pub fn assert_token_artifact_is_fresh() {
    let peers = workspace_root().join("tests/peers/contracts");
    let source = std::fs::read(peers.join("DemoToken.sol")).unwrap();
    let artifact: serde_json::Value = serde_json::from_slice(&std::fs::read(peers.join("DemoToken.json")).unwrap()).unwrap();
    assert_eq!(
        artifact["sourceSha256"].as_str().unwrap(),
        hex(&sha2::Sha256::digest(&source)),
        "DemoToken.json is stale: run `node tests/peers/scripts/compile-contracts.mjs`"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A running anvil, killed (by its pid) when dropped.
pub struct Anvil {
    child: Child,
    pub url: String,
}

impl Anvil {
    pub fn start(chain_id: u64) -> Anvil {
        // Tests start anvils in parallel. A port is free only until our anvil binds it, so two
        // starts at once could be handed the same port: one anvil exits, and its test, finding
        // the port open, would talk to the other test's node. Starts are taken one at a time, and
        // a start only counts once our own child is listening and still alive.
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let bin = anvil_binary();
        let mut last_error = String::new();
        for _attempt in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut child = Command::new(&bin)
                .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--chain-id", &chain_id.to_string(), "--silent"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    last_error = format!("anvil exited with {status} (port {port} taken?)");
                    break;
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() && child.try_wait().unwrap().is_none() {
                    return Anvil { child, url: format!("http://{addr}") };
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    last_error = "anvil did not listen within 30 s".into();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("could not start anvil: {last_error}");
    }

    /// A provider that signs with `key` (nonce, gas and chain id filled in).
    pub fn wallet(&self, key: &str) -> DynProvider {
        self.wallet_of(key.parse().unwrap())
    }

    pub fn wallet_of(&self, signer: PrivateKeySigner) -> DynProvider {
        vestibule_chain::tls::install_crypto_provider();
        ProviderBuilder::new().wallet(signer).connect_http(self.url.parse().unwrap()).erased()
    }

    pub async fn set_balance(&self, address: Address, wei: U256) {
        vestibule_chain::tls::install_crypto_provider();
        let provider = ProviderBuilder::new().connect_http(self.url.parse().unwrap());
        let _: serde_json::Value = provider.raw_request("anvil_setBalance".into(), (address, wei)).await.unwrap();
    }

    /// Deploys DemoToken with `decimals`, minting `supply` to `holder`; returns its address.
    pub async fn deploy_token(&self, decimals: u8, holder: Address, supply: U256) -> Address {
        let token = DemoToken::deploy(self.wallet(ANVIL_KEY_0), decimals, holder, supply).await.expect("deploy DemoToken");
        *token.address()
    }
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
