//! Sessions on a real Solana runtime: a `vestibule serve` process with
//! `[networks."solana:EtWT…"]` pointing at the local LiteSVM peer (tests/peers/solana, devnet's
//! genesis, a test key funded with SOL and a demo SPL mint), and a WebSocket client playing the
//! Solana wallet: it connects the account, the SOL and SPL balances arrive as diffs, a SOL send and
//! an SPL send are built by the gateway, signed here with the real ed25519 key (as
//! `solana:signTransaction` would), sent and confirmed by the node, and the balances refresh with
//! the view back on Account. Then the peer is killed and another account's balances end in "Token
//! Balance Unavailable". Both sessions replay with `--verify` from their logs alone.

mod support;

#[path = "../../chain/tests/support/solana.rs"]
#[allow(dead_code)]
mod solana_peer;

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::json;
use solana_peer::{DEVNET, SolanaPeer, test_key};
use support::*;

async fn connect_solana(client: &mut Client, address: &str) {
    let wallet = json!({ "name": "Dev Solana Wallet", "kind": "ANNOUNCED", "namespace": "solana" });
    client.command(json!({ "type": "ReportWallets", "wallets": [wallet] })).await;
    let result = client.command(json!({ "type": "SelectConnector", "connectorId": "solana:Dev Solana Wallet" })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    let (request_id, kind) = first_request(&client.state);
    assert_eq!(kind["type"], "connect");
    let outcome = json!({ "status": "ok", "result": { "accounts": [address], "chains": ["solana:devnet"] } });
    let result = client.command(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome })).await;
    assert_eq!(result["status"], "accepted", "{result}");
}

/// Submits the form, waits for the gateway's transaction, signs it as the wallet, and waits for
/// the confirmation; returns the signature.
async fn send(client: &mut Client, key: &SigningKey, token: &str, amount: &str, receiver: &str) -> String {
    let result = client.command(json!({ "type": "Navigate", "view": "Send" })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    assert_eq!(client.state["router"]["current"], "Send");
    let form = json!({ "token": token, "amount": amount, "receiver": receiver });
    let result = client.command(json!({ "type": "SubmitSend", "form": form })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    wait_for(client, "the transaction to sign", Duration::from_secs(60), |s| {
        s["requests"]["order"].as_array().is_some_and(|o| !o.is_empty()) || !s["send"]["error"].is_null()
    })
    .await;
    assert!(client.state["send"]["error"].is_null(), "{:#}", client.state["send"]);
    let (request_id, kind) = first_request(&client.state);
    assert_eq!(kind["type"], "signTransaction", "{kind}");
    assert_eq!(kind["network"], DEVNET);
    let mut wire = BASE64.decode(kind["transaction"].as_str().unwrap()).unwrap();
    assert_eq!(wire[0], 1, "one signer: the sender");
    let message = wire[65..].to_vec();
    wire[1..65].copy_from_slice(&key.sign(&message).to_bytes());
    let outcome = json!({ "status": "ok", "result": { "signedTransaction": BASE64.encode(&wire) } });
    let result = client.command(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    wait_for(client, "the confirmation", Duration::from_secs(60), |s| {
        s["send"]["sent"][0]["status"].as_str().is_some_and(|st| st != "pending") || !s["send"]["error"].is_null()
    })
    .await;
    assert!(client.state["send"]["error"].is_null(), "{:#}", client.state["send"]);
    assert_eq!(client.state["send"]["sent"][0]["status"], "confirmed", "{:#}", client.state["send"]);
    client.state["send"]["sent"][0]["hash"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_solana_session_shows_balances_sends_sol_and_spl_and_the_spec_failure_once_the_peer_is_down() {
    let (key, owner) = test_key(11);
    let (_, receiver) = test_key(12);
    let mut peer = SolanaPeer::start(&owner, 10, 6, 1000);
    let mint = peer.mint().to_string();
    let config = format!(
        "{CONFIG}\n[networks.\"{DEVNET}\"]\nrpc_urls = [\"{}\"]\ntokens = [{{ address = \"{mint}\", symbol = \"DEMO\" }}]\n",
        peer.url()
    );
    let mut gateway = Gateway::start(&config);
    let options = json!({ "networks": [DEVNET] });

    let mut client = Client::create(&gateway, options.clone()).await;
    connect_solana(&mut client, &owner).await;
    wait_for(&mut client, "balances", Duration::from_secs(60), |s| {
        s["balances"]["status"] == "loaded" || s["balances"]["status"] == "failed"
    })
    .await;
    let balances = &client.state["balances"];
    assert_eq!(balances["status"], "loaded", "{balances:#}");
    assert_eq!((balances["native"]["symbol"].as_str(), balances["native"]["display"].as_str()), (Some("SOL"), Some("10")));
    assert_eq!(balances["native"]["raw"], "10000000000");
    assert_eq!(balances["tokens"][0]["symbol"], "DEMO", "{balances:#}");
    assert_eq!(balances["tokens"][0]["decimals"], 6, "read from the mint");
    assert_eq!(balances["tokens"][0]["display"], "1000");
    assert_eq!(balances["tokens"][0]["address"], mint.as_str());

    // SOL: 1.5 to the receiver, confirmed; the view returns to Account and the balances refresh.
    let native = format!("{DEVNET}/native");
    let signature = send(&mut client, &key, &native, "1.5", &receiver).await;
    assert_eq!(client.state["router"]["current"], "Account", "spec §4: after a Solana send, the view returns to Account");
    wait_for(&mut client, "the fresh balances", Duration::from_secs(60), |s| s["balances"]["native"]["raw"] == "8499995000").await;
    let status = peer.rpc("getSignatureStatuses", json!([[signature]])).await;
    assert!(status["value"][0]["err"].is_null(), "{status}");
    let got = peer.rpc("getBalance", json!([receiver])).await;
    assert_eq!(got["value"], 1_500_000_000u64);

    // SPL: 12.5 DEMO; the receiver's token account is created by the transaction.
    let demo = format!("{DEVNET}/token:{mint}");
    send(&mut client, &key, &demo, "12.5", &receiver).await;
    wait_for(&mut client, "the fresh token balance", Duration::from_secs(60), |s| s["balances"]["tokens"][0]["quantity"] == "987.5").await;
    let held = peer.rpc("getTokenAccountsByOwner", json!([receiver, { "mint": mint }, { "encoding": "jsonParsed" }])).await;
    assert_eq!(held["value"][0]["account"]["data"]["parsed"]["info"]["tokenAmount"]["uiAmountString"], "12.5", "{held}");

    // A wallet that signs with another key than the sender's: the check refuses the transaction
    // before any node sees it, and the visitor reads why (not an RPC error no node gave).
    let (stranger, _) = test_key(13);
    let result = client.command(json!({ "type": "Navigate", "view": "Send" })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    let form = json!({ "token": native, "amount": "0.5", "receiver": receiver });
    client.command(json!({ "type": "SubmitSend", "form": form })).await;
    wait_for(&mut client, "the transaction to sign", Duration::from_secs(60), |s| {
        s["requests"]["order"].as_array().is_some_and(|o| !o.is_empty()) || !s["send"]["error"].is_null()
    })
    .await;
    let (request_id, kind) = first_request(&client.state);
    assert_eq!(kind["type"], "signTransaction", "{kind}");
    let mut wire = BASE64.decode(kind["transaction"].as_str().unwrap()).unwrap();
    let message = wire[65..].to_vec();
    wire[1..65].copy_from_slice(&stranger.sign(&message).to_bytes());
    let outcome = json!({ "status": "ok", "result": { "signedTransaction": BASE64.encode(&wire) } });
    client.command(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome })).await;
    wait_for(&mut client, "the refusal", Duration::from_secs(60), |s| !s["send"]["error"].is_null()).await;
    assert_eq!(client.state["send"]["error"], "The transfer was not sent: the fee payer's signature is missing or invalid");
    let got = peer.rpc("getBalance", json!([receiver])).await;
    assert_eq!(got["value"], 1_500_000_000u64, "nothing more was sent");

    // The peer goes down: another account's balances fail with the spec's toast.
    peer.stop();
    let mut other = Client::create(&gateway, options).await;
    connect_solana(&mut other, &receiver).await;
    wait_for(&mut other, "the failure", Duration::from_secs(90), |s| s["balances"]["status"] == "failed").await;
    assert!(other.state["toasts"].to_string().contains("Token Balance Unavailable"), "{:#}", other.state["toasts"]);

    gateway.terminate();
    for session in [&client.session_id, &other.session_id] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vestibule"))
            .args(["replay", "--data"])
            .arg(&gateway.data)
            .args([session.as_str(), "--verify"])
            .env("VESTIBULE_LOG", "error")
            .output()
            .unwrap();
        assert!(out.status.success(), "replay --verify of {session}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
