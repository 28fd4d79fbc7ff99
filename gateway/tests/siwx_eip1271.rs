//! EIP-1271 contract-account verification against a real contract on a local anvil node.
//!
//! The contract is `tests/peers/contracts/OwnedWallet.sol`, compiled by solc-js into the committed
//! artifact `OwnedWallet.json` (`tests/peers/scripts/compile-contracts.mjs`). Each test starts its
//! own anvil on a free loopback port, deploys the wallet with alloy, signs a Sign-In With Ethereum
//! message with the wallet owner's key, and verifies it through `isValidSignature`.
//!
//! anvil is found through `ANVIL_BIN`, else in `tests/peers/node_modules` (installed by
//! `ensure_peers` in `scripts/lib/peers.sh`). A missing anvil fails the tests; it never skips them.

mod support;

// The chain crate's anvil (one start at a time, so parallel tests never share a node).
#[path = "../../chain/tests/support/anvil.rs"]
#[allow(dead_code)]
mod anvil;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use anvil::{Anvil, workspace_root};

use alloy::primitives::Address;
use alloy::providers::ProviderBuilder;
use alloy::signers::SignerSync;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol;
use serde_json::json;
use sha2::Digest as _;
use time::macros::datetime;
use vestibule_actors::siwx::verify::eip191_hash;
use vestibule_actors::siwx::{MessageFields, Namespace, SignatureMethod, SiwxMessage, VerifyError, VerifyPolicy};
use vestibule_gateway::siwx::{Eip1271Checker, SiwxError, SiwxVerifyArgs, run_verify, verify_message};

sol!(
    #[sol(rpc)]
    OwnedWallet,
    "../tests/peers/contracts/OwnedWallet.json"
);

/// anvil's chain id unless told otherwise.
const ANVIL_CHAIN_ID: u64 = 31337;
/// The first of anvil's default, pre-funded development accounts (publicly known test key).
const ANVIL_DEPLOYER_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const NONCE: &str = "Fw7Tq2Yh9Kc4Xn6Bv3Jm8Rp5";

/// anvil, plus an OwnedWallet deployed on it for `owner`.
async fn deploy_wallet(anvil: &Anvil, owner: Address) -> Address {
    // reqwest is built with rustls and no provider of its own (decision 0906): ring first.
    vestibule_chain::tls::install_crypto_provider();
    let deployer: PrivateKeySigner = ANVIL_DEPLOYER_KEY.parse().unwrap();
    // reqwest is built without a TLS provider of its own (decision 0906); the gateway installs ring
    // before its first client, and so must a test that builds one first.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let provider = ProviderBuilder::new().wallet(deployer).connect_http(anvil.url.parse().unwrap());
    let wallet = OwnedWallet::deploy(&provider, owner).await.expect("deploy OwnedWallet");
    assert_eq!(wallet.owner().call().await.unwrap(), owner);
    *wallet.address()
}

fn owner() -> PrivateKeySigner {
    PrivateKeySigner::from_slice(&[0x51; 32]).unwrap()
}

fn siwe_message(address: Address, chain_id: u64) -> String {
    let f = MessageFields {
        domain: Some("app.example".into()),
        address: Some(address.to_checksum(None)),
        statement: Some("Sign in with a contract account".into()),
        uri: Some("https://app.example/login".into()),
        version: Some("1".into()),
        chain_id: Some(chain_id.to_string()),
        nonce: Some(NONCE.into()),
        issued_at: Some("2024-05-01T11:59:00Z".into()),
        ..Default::default()
    };
    SiwxMessage::from_fields(Namespace::Eip155, &f).unwrap().to_message()
}

fn policy() -> VerifyPolicy {
    VerifyPolicy::for_origin("https://app.example", NONCE, datetime!(2024-05-01 12:00:00 UTC)).unwrap()
}

fn personal_sign(signer: &PrivateKeySigner, text: &str) -> Vec<u8> {
    signer.sign_message_sync(text.as_bytes()).unwrap().as_bytes().to_vec()
}

#[test]
fn artifact_matches_its_source() {
    let dir = workspace_root().join("tests/peers/contracts");
    let source = std::fs::read(dir.join("OwnedWallet.sol")).unwrap();
    let artifact: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("OwnedWallet.json")).unwrap()).unwrap();
    assert_eq!(
        artifact["sourceSha256"],
        json!(hex::encode(sha2::Sha256::digest(&source))),
        "OwnedWallet.json is stale: run `cd tests/peers && npm run build:contracts`"
    );
    assert!(artifact["bytecode"].as_str().unwrap().len() > 2);
}

#[tokio::test]
async fn an_owner_signature_verifies_for_the_contract_account() {
    let anvil = Anvil::start(ANVIL_CHAIN_ID);
    let wallet = deploy_wallet(&anvil, owner().address()).await;
    let checker = Eip1271Checker::new(&anvil.url).unwrap();
    assert_eq!(checker.chain_id().await.unwrap(), ANVIL_CHAIN_ID);
    assert!(checker.has_code(wallet).await.unwrap());

    let text = siwe_message(wallet, ANVIL_CHAIN_ID);
    let sig = personal_sign(&owner(), &text);

    // The contract accepts the owner's signature of the EIP-191 hash ...
    assert!(checker.is_valid_signature(wallet, eip191_hash(text.as_bytes()), &sig).await.unwrap());
    // ... and so does the full verification, by EIP-1271 after EOA recovery fails.
    let v = verify_message(&text, &sig, &policy(), Some(&checker)).await.unwrap();
    assert_eq!(v.method, SignatureMethod::Eip1271);
    assert_eq!(v.message.account.caip10(), format!("eip155:{ANVIL_CHAIN_ID}:{}", wallet.to_checksum(None)));

    // Without an RPC endpoint the same signature is only an EOA signature by someone else.
    let err = verify_message(&text, &sig, &policy(), None).await.unwrap_err();
    assert!(matches!(err, SiwxError::Rejected(VerifyError::SignatureMismatch { .. })), "{err}");
}

#[tokio::test]
async fn contract_refusals_and_rpc_problems_have_their_reasons() {
    let anvil = Anvil::start(ANVIL_CHAIN_ID);
    let wallet = deploy_wallet(&anvil, owner().address()).await;
    let checker = Eip1271Checker::new(&anvil.url).unwrap();
    let text = siwe_message(wallet, ANVIL_CHAIN_ID);

    // Signed by a key that is not the owner: the contract says no.
    let stranger = PrivateKeySigner::from_slice(&[0x52; 32]).unwrap();
    let err = verify_message(&text, &personal_sign(&stranger, &text), &policy(), Some(&checker)).await.unwrap_err();
    assert_eq!(err.code(), "contract_rejected", "{err}");

    // A tampered owner signature, and one of the wrong length.
    let mut sig = personal_sign(&owner(), &text);
    sig[7] ^= 0x01;
    let err = verify_message(&text, &sig, &policy(), Some(&checker)).await.unwrap_err();
    assert_eq!(err.code(), "contract_rejected", "{err}");
    let err = verify_message(&text, &sig[..64], &policy(), Some(&checker)).await.unwrap_err();
    assert_eq!(err.code(), "contract_rejected", "{err}");

    // The owner's signature of a different message.
    let other = text.replace("contract account", "contract acc0unt");
    let err = verify_message(&other, &personal_sign(&owner(), &text), &policy(), Some(&checker)).await.unwrap_err();
    assert_eq!(err.code(), "contract_rejected", "{err}");

    // Claims are checked before any RPC call: an expired message never reaches the contract.
    let mut expired = policy();
    expired.expected_nonce = Some("notTheNonce1".into());
    let err = verify_message(&text, &personal_sign(&owner(), &text), &expired, Some(&checker)).await.unwrap_err();
    assert_eq!(err.code(), "nonce_mismatch");

    // A message for another chain than the endpoint's.
    let mainnet = siwe_message(wallet, 1);
    let err = verify_message(&mainnet, &personal_sign(&owner(), &mainnet), &policy(), Some(&checker)).await.unwrap_err();
    assert_eq!(err, SiwxError::RpcChainMismatch { message_chain_id: 1, rpc_chain_id: ANVIL_CHAIN_ID });

    // An address without code keeps the EOA verdict.
    let eoa_text = siwe_message(stranger.address(), ANVIL_CHAIN_ID);
    let err = verify_message(&eoa_text, &personal_sign(&owner(), &eoa_text), &policy(), Some(&checker)).await.unwrap_err();
    assert_eq!(err.code(), "signature_mismatch", "{err}");
    // ... and a real EOA signature never needs the endpoint.
    let ok = verify_message(&eoa_text, &personal_sign(&stranger, &eoa_text), &policy(), Some(&checker)).await.unwrap();
    assert_eq!(ok.method, SignatureMethod::Eip191);

    // An outside review: the identity precompile (0x…04) echoes its input, which starts with the
    // selector that is also the magic value; read as a lenient `bytes4` it said yes to any
    // signature. Its answer is no ABI word of the magic value, and it has no code anyway.
    let identity = Address::with_last_byte(4);
    let hash = eip191_hash(text.as_bytes());
    let stranger_sig = personal_sign(&stranger, &text);
    assert!(!checker.is_valid_signature(identity, hash, &stranger_sig).await.unwrap());
    assert!(!checker.has_code(identity).await.unwrap());
    assert!(!checker.contract_accepts(identity, hash, &stranger_sig).await.unwrap());
    // The positive side: the contract account with its owner's signature.
    assert!(checker.contract_accepts(wallet, hash, &personal_sign(&owner(), &text)).await.unwrap());

    // An endpoint that does not answer.
    let dead_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dead = Eip1271Checker::new(&format!("http://127.0.0.1:{dead_port}")).unwrap();
    let err = verify_message(&text, &personal_sign(&owner(), &text), &policy(), Some(&dead)).await.unwrap_err();
    assert_eq!(err.code(), "rpc_error", "{err}");
}

#[tokio::test]
async fn the_cli_verifies_a_contract_account_with_rpc() {
    let anvil = Anvil::start(ANVIL_CHAIN_ID);
    let wallet = deploy_wallet(&anvil, owner().address()).await;
    let text = siwe_message(wallet, ANVIL_CHAIN_ID);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("message.txt");
    std::fs::write(&path, &text).unwrap();

    let mut args = SiwxVerifyArgs::new(&path, format!("0x{}", hex::encode(personal_sign(&owner(), &text))));
    args.domain = Some("app.example".into());
    args.nonce = Some(NONCE.into());
    args.at = Some("2024-05-01T12:00:00Z".into());
    args.rpc = Some(anvil.url.clone());
    let (v, code) = run_verify(&args).await.unwrap();
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["method"], json!("eip1271"));

    args.rpc = None;
    let (v, code) = run_verify(&args).await.unwrap();
    assert_eq!((code, v["reason"]["code"].as_str()), (1, Some("signature_mismatch")), "{v:#}");

    let stranger = PrivateKeySigner::from_slice(&[0x53; 32]).unwrap();
    args.rpc = Some(anvil.url.clone());
    args.signature = hex::encode(personal_sign(&stranger, &text));
    let (v, code) = run_verify(&args).await.unwrap();
    assert_eq!((code, v["reason"]["code"].as_str()), (1, Some("contract_rejected")), "{v:#}");
}

/// The owner of `wallet` signs in with it through `gateway`: the session's runtime asks the
/// contract on anvil (EIP-1271), and the sign-in is recorded with method `eip1271`.
async fn owner_signs_in(gateway: &support::Gateway, wallet: Address) {
    use support::*;
    let anvil_network = json!({
        "caipNetworkId": format!("eip155:{ANVIL_CHAIN_ID}"),
        "name": "Anvil",
        "nativeCurrency": { "name": "Ether", "symbol": "ETH", "decimals": 18 },
        "testnet": true
    });
    let mut client = Client::create(gateway, json!({ "networks": [anvil_network], "siwx": {} })).await;
    connect_wallet(&mut client, &wallet.to_checksum(None), &format!("0x{ANVIL_CHAIN_ID:x}")).await;
    assert_eq!(client.state["router"]["current"], "SIWXSignMessage");
    sign(&mut client, &owner()).await;
    let account = format!("eip155:{ANVIL_CHAIN_ID}:{}", wallet.to_checksum(None));
    // The check runs after the signature's diff; its verdict arrives as another diff.
    let deadline = Instant::now() + Duration::from_secs(20);
    while client.state["siwx"]["sessions"][&account].is_null() && client.state["siwx"]["error"].is_null() && Instant::now() < deadline {
        let frame = recv_json(&mut client.ws).await;
        client.apply_diff(&frame);
    }
    assert_eq!(client.state["siwx"]["sessions"][&account]["method"], "eip1271", "{}", client.state["siwx"]);
}

/// The whole flow through the real gateway: a contract account connects, its owner signs the
/// server's message, and the session's runtime asks the contract on anvil (EIP-1271).
#[tokio::test]
async fn a_contract_account_signs_in_through_the_gateway() {
    use support::*;
    let anvil = Anvil::start(ANVIL_CHAIN_ID);
    let wallet = deploy_wallet(&anvil, owner().address()).await;
    let config = format!("{CONFIG}\n[siwx]\nrpc_urls = {{ \"eip155:{ANVIL_CHAIN_ID}\" = \"{}\" }}\n", anvil.url);
    let gateway = Gateway::start(&config);
    owner_signs_in(&gateway, wallet).await;

    // A stranger's signature for the same contract account is refused by the contract.
    let mut other = Client::create(
        &gateway,
        json!({ "networks": [json!({
        "caipNetworkId": format!("eip155:{ANVIL_CHAIN_ID}"),
        "name": "Anvil",
        "nativeCurrency": { "name": "Ether", "symbol": "ETH", "decimals": 18 }
    })], "siwx": {} }),
    )
    .await;
    connect_wallet(&mut other, &wallet.to_checksum(None), &format!("0x{ANVIL_CHAIN_ID:x}")).await;
    sign(&mut other, &PrivateKeySigner::from_slice(&[0x52; 32]).unwrap()).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while other.state["siwx"]["error"].is_null() && Instant::now() < deadline {
        let frame = recv_json(&mut other.ws).await;
        other.apply_diff(&frame);
    }
    assert_eq!(other.state["siwx"]["error"], "The signature could not be verified");
    assert!(other.state["siwx"]["sessions"].as_object().unwrap().is_empty());

    // Nor can anyone sign in as the identity precompile (0x…04), which echoed the magic value to
    // any signature (an outside review signed in as it and got a token).
    let mut precompile = Client::create(&gateway, json!({ "networks": [anvil_network()], "siwx": {} })).await;
    connect_wallet(&mut precompile, &Address::with_last_byte(4).to_checksum(None), &format!("0x{ANVIL_CHAIN_ID:x}")).await;
    sign(&mut precompile, &PrivateKeySigner::from_slice(&[0x52; 32]).unwrap()).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while precompile.state["siwx"]["error"].is_null()
        && precompile.state["siwx"]["sessions"].as_object().is_none_or(|s| s.is_empty())
        && Instant::now() < deadline
    {
        let frame = recv_json(&mut precompile.ws).await;
        precompile.apply_diff(&frame);
    }
    assert_eq!(precompile.state["siwx"]["error"], "The signature could not be verified", "{}", precompile.state["siwx"]);
    assert!(precompile.state["siwx"]["sessions"].as_object().unwrap().is_empty());
}

fn anvil_network() -> serde_json::Value {
    json!({
        "caipNetworkId": format!("eip155:{ANVIL_CHAIN_ID}"),
        "name": "Anvil",
        "nativeCurrency": { "name": "Ether", "symbol": "ETH", "decimals": 18 }
    })
}

/// Decision 0913: a chain under `[networks]` needs no `[siwx] rpc_urls`; the contract is asked
/// through the chain service (the network's endpoints and RPC policy).
#[tokio::test]
async fn a_contract_account_signs_in_with_only_networks_configured() {
    use support::*;
    let anvil = Anvil::start(ANVIL_CHAIN_ID);
    let wallet = deploy_wallet(&anvil, owner().address()).await;
    let config = format!("{CONFIG}\n[networks.\"eip155:{ANVIL_CHAIN_ID}\"]\nrpc_urls = [\"{}\"]\n", anvil.url);
    assert!(!config.contains("[siwx]"));
    let gateway = Gateway::start(&config);
    owner_signs_in(&gateway, wallet).await;
    // The check went through the chain service: its request counter moved.
    assert!(gateway.metric(&format!("vestibule_chain_rpc_requests_total{{network=\"eip155:{ANVIL_CHAIN_ID}\"}}")).await >= 1.0);
}

/// When `[siwx] rpc_urls` and `[networks]` name the same chain with different endpoints, the
/// network's are used (here the `[siwx]` one is dead, and the sign-in still succeeds), and the
/// gateway warns at startup without logging the URL's path (it may hold an API key).
#[tokio::test]
async fn networks_win_over_a_different_siwx_url_with_a_warning() {
    use support::*;
    let anvil = Anvil::start(ANVIL_CHAIN_ID);
    let wallet = deploy_wallet(&anvil, owner().address()).await;
    let dead_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = format!(
        "{CONFIG}\n[networks.\"eip155:{ANVIL_CHAIN_ID}\"]\nrpc_urls = [\"{}\"]\n\
         [siwx]\nrpc_urls = {{ \"eip155:{ANVIL_CHAIN_ID}\" = \"http://127.0.0.1:{dead_port}/secret-key\" }}\n",
        anvil.url
    );
    let gateway = Gateway::start(&config);
    owner_signs_in(&gateway, wallet).await;

    // The startup log of the same configuration, at warn.
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("gateway.toml");
    std::fs::write(&config_path, &config).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vestibule"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config_path)
        .arg("--static-dir")
        .arg(dir.path().join("no-static"))
        .env("VESTIBULE_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    assert!(line.starts_with("vestibule listening on"), "{line:?}");
    child.kill().unwrap();
    let output = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    let warning = log
        .lines()
        .find(|l| l.contains("[siwx] rpc_urls and [networks] name this chain with different endpoints"))
        .unwrap_or_else(|| panic!("no warning in {log}"));
    assert!(warning.contains(&format!("eip155:{ANVIL_CHAIN_ID}")), "{warning}");
    assert!(warning.contains(&format!("http://127.0.0.1:{dead_port}")), "{warning}");
    assert!(!log.contains("secret-key"), "{log}");

    // The same URL in both: no warning.
    let same = format!(
        "{CONFIG}\n[networks.\"eip155:{ANVIL_CHAIN_ID}\"]\nrpc_urls = [\"{0}\"]\n[siwx]\nrpc_urls = {{ \"eip155:{ANVIL_CHAIN_ID}\" = \"{0}\" }}\n",
        anvil.url
    );
    std::fs::write(&config_path, &same).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vestibule"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(dir.path().join("data2"))
        .arg("--config")
        .arg(&config_path)
        .arg("--static-dir")
        .arg(dir.path().join("no-static"))
        .env("VESTIBULE_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    child.kill().unwrap();
    let log = String::from_utf8_lossy(&child.wait_with_output().unwrap().stderr).to_string();
    assert!(!log.contains("different endpoints"), "{log}");
}
