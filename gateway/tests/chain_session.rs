//! Sessions reach real nodes: a `vestibule serve` process with `[networks."eip155:31337"]`
//! pointing at a real anvil (with the demo ERC-20 deployed), a real WebSocket client that creates a
//! session and connects the dev wallet's account, and the balances the node holds arriving as a
//! state diff, its Activity (an incoming transfer), and a native Send whose receipt is read from
//! the node and whose balances are fetched again. Then the node goes down and another account's
//! balances fail with the spec's toast, "Token Balance Unavailable", instead of a session left
//! waiting. Both sessions then replay with `--verify` from their logs alone.
//!
//! One client address has at most `receipt_waits_per_client` sends awaiting receipts at once: one
//! more waits its turn, asking nothing, while another address's send is confirmed, and is
//! confirmed once a wait of its address has ended.
//!
//! anvil is found as the chain crate's tests find it (`ANVIL_BIN`, else tests/peers/node_modules);
//! a missing anvil fails the test. Every wait is on diffs, with generous upper bounds only.

mod support;

#[path = "../../chain/tests/support/anvil.rs"]
#[allow(dead_code)]
mod anvil;

use std::time::Duration;

use alloy::primitives::{Address, U256};
use alloy::providers::{Provider, ProviderBuilder};
use anvil::{Anvil, dev_wallet};
use serde_json::{Value, json};
use support::evm::*;
use support::*;

#[tokio::test]
async fn a_session_shows_the_node_balances_activity_and_send_and_the_spec_failure_once_the_node_is_down() {
    let node = Anvil::start(CHAIN_ID);
    let (dev_signer, dev) = dev_wallet();
    node.set_balance(dev, ether(1000)).await;
    let token = node.deploy_token(18, dev, ether(1_000_000)).await;
    let config =
        format!("{CONFIG}\n[networks.\"eip155:{CHAIN_ID}\"]\nrpc_urls = [\"{}\"]\ntokens = [{{ address = \"{token}\" }}]\n", node.url);
    let mut gateway = Gateway::start(&config);

    // What the node says, read directly.
    vestibule_chain::tls::install_crypto_provider();
    let provider = ProviderBuilder::new().connect_http(node.url.parse().unwrap());
    let wei = provider.get_balance(dev).await.unwrap();
    assert_eq!(wei, ether(1000));

    // A native transfer from anvil's first account to the dev wallet, for the Activity tab.
    let sent = node
        .wallet(anvil::ANVIL_KEY_0)
        .send_transaction(alloy::rpc::types::TransactionRequest::default().to(dev).value(ether(2)))
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(sent.status());
    let wei = provider.get_balance(dev).await.unwrap();
    assert_eq!(wei, ether(1002));

    let mut client = Client::create(&gateway, json!({ "networks": [anvil_network()] })).await;
    connect_wallet(&mut client, &dev.to_checksum(None), &format!("0x{CHAIN_ID:x}")).await;
    // Connecting asks for the balances; the answer comes back as a later diff.
    wait_for(&mut client, "balances", Duration::from_secs(60), |s| {
        s["balances"]["status"] != "loading" && s["balances"]["status"] != "idle"
    })
    .await;
    let balances = &client.state["balances"];
    assert_eq!(balances["status"], "loaded", "{balances:#}");
    assert_eq!(balances["native"]["raw"], wei.to_string());
    assert_eq!(balances["native"]["symbol"], "ETH");
    assert_eq!(balances["native"]["display"], "1002");
    assert_eq!(balances["tokens"][0]["symbol"], "VDT", "{balances:#}");
    assert_eq!(balances["tokens"][0]["raw"], ether(1_000_000).to_string());
    assert!(balances["native"]["usdValue"].is_null(), "no price source configured: no fiat");

    // The Activity tab: the node's Otterscan API lists the incoming transfer.
    let result = client.command(json!({ "type": "LoadActivity" })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    wait_for(&mut client, "activity", Duration::from_secs(60), |s| {
        s["activity"]["status"] == "loaded" || s["activity"]["status"] == "failed"
    })
    .await;
    let activity = &client.state["activity"];
    assert_eq!(activity["status"], "loaded", "{activity:#}");
    let tx = &activity["transactions"][0];
    assert_eq!(tx["id"], format!("{:#x}", sent.transaction_hash), "{activity:#}");
    assert_eq!(tx["operationType"], "receive");
    assert_eq!(tx["transfers"][0]["quantity"], "2");
    assert_eq!(tx["transfers"][0]["sign"], "plus");

    // Send 1 ETH: the wallet request goes to the "browser" (this test signs it on the node with the
    // dev wallet's key), the receipt is observed through the chain service, and the balances are
    // fetched again past the 30 s cache.
    let receiver: Address = ANVIL_1.parse().unwrap();
    let form = json!({ "token": format!("eip155:{CHAIN_ID}/native"), "amount": "1", "receiver": ANVIL_1 });
    let result = client.command(json!({ "type": "SubmitSend", "form": form })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    let (request_id, kind) = first_request(&client.state);
    assert_eq!(kind["method"], "eth_sendTransaction", "{kind}");
    let params = &kind["params"][0];
    assert_eq!(params["to"], receiver.to_checksum(None));
    let value: U256 = params["value"].as_str().unwrap().parse().unwrap();
    assert_eq!(value, ether(1));
    let pending = node
        .wallet_of(dev_signer)
        .send_transaction(alloy::rpc::types::TransactionRequest::default().to(receiver).value(value))
        .await
        .unwrap();
    let hash = format!("{:#x}", pending.tx_hash());
    let outcome = json!({ "status": "ok", "result": hash });
    let result = client.command(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    wait_for(&mut client, "the receipt", Duration::from_secs(60), |s| s["send"]["sent"][0]["status"] != "pending").await;
    assert_eq!(client.state["send"]["sent"][0]["hash"], hash.as_str());
    assert_eq!(client.state["send"]["sent"][0]["status"], "confirmed", "{:#}", client.state["send"]);
    let after = provider.get_balance(dev).await.unwrap();
    assert!(after < ether(1001), "1 ETH and the fee left the account");
    wait_for(&mut client, "the fresh balances", Duration::from_secs(60), |s| s["balances"]["native"]["raw"] == after.to_string()).await;
    // The newest activity again: the receipt dropped the account's cached page (decision 0912), so
    // the send is listed.
    wait_for(&mut client, "the activity with the send", Duration::from_secs(60), |s| {
        s["activity"]["transactions"][0]["id"] == hash.as_str()
    })
    .await;

    // The wallet answers the next send with the hash of another mined transaction (the incoming
    // 2 ETH, sent to the dev wallet, not to the receiver): it is not taken for this transfer.
    let result = client.command(json!({ "type": "SubmitSend", "form": form })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    let (request_id, _) = first_request(&client.state);
    let other_hash = format!("{:#x}", sent.transaction_hash);
    let outcome = json!({ "status": "ok", "result": other_hash });
    let result = client.command(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    let status_of = |s: &Value, hash: &str| {
        s["send"]["sent"].as_array().and_then(|sent| sent.iter().find(|t| t["hash"] == hash)).map(|t| t["status"].clone())
    };
    wait_for(&mut client, "the other hash's receipt", Duration::from_secs(60), |s| {
        status_of(s, &other_hash).is_some_and(|status| status != "pending")
    })
    .await;
    assert_eq!(status_of(&client.state, &other_hash), Some(json!("unconfirmed")), "{:#}", client.state["send"]);
    assert_eq!(status_of(&client.state, &hash), Some(json!("confirmed")), "the positive: the real send is confirmed");

    // The chain service's metrics are on /metrics.
    let (status, metrics) = gateway.http_get("/metrics", None).await;
    assert_eq!(status, 200);
    assert!(metrics.contains("vestibule_chain_rpc_requests_total{network=\"eip155:31337\"}"), "{metrics}");
    assert!(metrics.contains("vestibule_chain_activity_cache_total{network=\"eip155:31337\",kind=\"miss\"} 2"), "{metrics}");
    assert!(metrics.contains("vestibule_chain_activity_cache_dropped_total{network=\"eip155:31337\",kind=\"invalidated\"} 1"), "{metrics}");

    // The node goes down: another account's balances fail with the spec's toast, in bounded time.
    drop(node);
    let mut other = Client::create(&gateway, json!({ "networks": [anvil_network()] })).await;
    let other_address: Address = ANVIL_1.parse().unwrap();
    connect_wallet(&mut other, &other_address.to_checksum(None), &format!("0x{CHAIN_ID:x}")).await;
    wait_for(&mut other, "the failure", Duration::from_secs(90), |s| s["balances"]["status"] == "failed").await;
    let toasts = other.state["toasts"].to_string();
    assert!(toasts.contains("Token Balance Unavailable"), "{:#}", other.state["toasts"]);
    assert!(other.state["balances"]["native"].is_null());
    assert!(metrics_errors(&gateway).await > 0.0);

    // Both sessions replay from their logs alone (the node is gone) to the states their clients
    // were sent: the chain's answers are events.
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

async fn metrics_errors(gateway: &Gateway) -> f64 {
    let (_, text) = gateway.http_get("/metrics", None).await;
    text.lines()
        .filter(|l| l.starts_with("vestibule_chain_rpc_errors_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A node that accepts connections and never answers: the session still gets its answer, the
/// spec's toast, once the configured timeouts run out (here 500 ms per attempt, 2 s per call).
#[tokio::test]
async fn a_hung_node_gives_the_toast_not_a_hung_session() {
    let hung = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", hung.local_addr().unwrap());
    let config = format!(
        "{CONFIG}\n[networks.\"eip155:{CHAIN_ID}\"]\nrpc_urls = [\"{url}\"]\n[rpc]\nattempt_timeout = \"500ms\"\ncall_timeout = \"2s\"\n"
    );
    let gateway = Gateway::start(&config);
    let mut client = Client::create(&gateway, json!({ "networks": [anvil_network()] })).await;
    let (_, dev) = dev_wallet();
    connect_wallet(&mut client, &dev.to_checksum(None), &format!("0x{CHAIN_ID:x}")).await;
    wait_for(&mut client, "the failure", Duration::from_secs(60), |s| s["balances"]["status"] == "failed").await;
    assert!(client.state["toasts"].to_string().contains("Token Balance Unavailable"), "{:#}", client.state["toasts"]);
    drop(hung);
}

/// A session connected to the dev wallet on anvil, from the loopback address `source`, with its
/// balances loaded (a send needs them).
async fn connected_from(gateway: &Gateway, source: &str) -> Client {
    let (_, dev) = dev_wallet();
    let mut client = Client::create_from(gateway, source.parse().unwrap(), json!({ "networks": [anvil_network()] })).await;
    connect_wallet(&mut client, &dev.to_checksum(None), &format!("0x{CHAIN_ID:x}")).await;
    wait_for(&mut client, "balances", Duration::from_secs(60), |s| s["balances"]["status"] == "loaded").await;
    client
}

/// Submits a send of 1 wei to `ANVIL_1` and answers its wallet request with `hash`.
async fn send_answered_with(client: &mut Client, hash: &str) {
    let form = json!({ "token": format!("eip155:{CHAIN_ID}/native"), "amount": "0.000000000000000001", "receiver": ANVIL_1 });
    let result = client.command(json!({ "type": "SubmitSend", "form": form })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    let (request_id, _) = first_request(&client.state);
    let outcome = json!({ "status": "ok", "result": hash });
    let result = client.command(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome })).await;
    assert_eq!(result["status"], "accepted", "{result}");
}

fn sent_status(state: &Value, hash: &str) -> Option<Value> {
    state["send"]["sent"].as_array().and_then(|sent| sent.iter().find(|t| t["hash"] == hash)).map(|t| t["status"].clone())
}

/// A real transfer of 1 wei from the dev wallet on the node: its hash.
async fn real_transfer(node: &Anvil, signer: &alloy::signers::local::PrivateKeySigner) -> String {
    let receiver: Address = ANVIL_1.parse().unwrap();
    let request = alloy::rpc::types::TransactionRequest::default().to(receiver).value(U256::from(1));
    let pending = node.wallet_of(signer.clone()).send_transaction(request).await.unwrap();
    format!("{:#x}", pending.tx_hash())
}

#[tokio::test]
async fn a_client_address_awaits_at_most_its_share_of_receipts_and_one_more_waits_its_turn() {
    // Given a gateway on anvil that lets one client address await 2 receipts at once, and passivates
    // a session a second after its last connection left
    let node = Anvil::start(CHAIN_ID);
    let (dev_signer, dev) = dev_wallet();
    node.set_balance(dev, ether(10)).await;
    let config = format!(
        "{CONFIG}\n[limits]\nreceipt_waits_per_client = 2\n[runtime]\npassivate_after = \"1s\"\n\
         [networks.\"eip155:{CHAIN_ID}\"]\nrpc_urls = [\"{}\"]\n",
        node.url
    );
    let gateway = Gateway::start(&config);
    let queued = || gateway.metric("vestibule_receipt_waits_queued");

    // When a client from 127.0.0.2 answers two sends with hashes that never mine, then sends a real
    // transfer from another session
    let mut spam = connected_from(&gateway, "127.0.0.2").await;
    for n in 1..=2 {
        send_answered_with(&mut spam, &format!("0x{n:064x}")).await;
    }
    let mut honest = connected_from(&gateway, "127.0.0.2").await;
    let waiting = real_transfer(&node, &dev_signer).await;
    send_answered_with(&mut honest, &waiting).await;

    // Then the real transfer's wait waits its turn (its receipt is on the node, but not asked for),
    // recorded neither confirmed nor refused
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while queued().await != 1.0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(queued().await, 1.0);
    assert_eq!(honest.command(json!({ "type": "OpenModal" })).await["status"], "accepted");
    assert_eq!(sent_status(&honest.state, &waiting), Some(json!("pending")), "{:#}", honest.state["send"]);

    // And a client from 127.0.0.3 meanwhile has its real transfer confirmed
    let mut other = connected_from(&gateway, "127.0.0.3").await;
    let hash = real_transfer(&node, &dev_signer).await;
    send_answered_with(&mut other, &hash).await;
    wait_for(&mut other, "the other address's receipt", Duration::from_secs(60), |s| {
        sent_status(s, &hash).is_some_and(|status| status != "pending")
    })
    .await;
    assert_eq!(sent_status(&other.state, &hash), Some(json!("confirmed")), "{:#}", other.state["send"]);

    // And once the made-up hashes' session is gone (its waits end), the waiting one is confirmed
    spam.close().await;
    wait_for(&mut honest, "the waiting receipt", Duration::from_secs(60), |s| {
        sent_status(s, &waiting).is_some_and(|status| status != "pending")
    })
    .await;
    assert_eq!(sent_status(&honest.state, &waiting), Some(json!("confirmed")), "{:#}", honest.state["send"]);
    assert_eq!(queued().await, 0.0);
}

/// Without `[networks]`, sessions serve no network: nothing is fetched and nothing hangs.
#[tokio::test]
async fn without_networks_a_session_serves_none() {
    let gateway = Gateway::start(CONFIG);
    let mut client = Client::create(&gateway, json!({ "networks": [anvil_network()] })).await;
    let (_, dev) = dev_wallet();
    connect_wallet(&mut client, &dev.to_checksum(None), &format!("0x{CHAIN_ID:x}")).await;
    assert_eq!(client.state["balances"]["status"], "idle", "{:#}", client.state["balances"]);
    assert!(client.state["balances"]["pending"].is_null());
    let (_, metrics) = gateway.http_get("/metrics", None).await;
    assert!(!metrics.contains("vestibule_chain_rpc_requests_total{"), "{metrics}");
}

/// A bad network is refused at start, naming the field.
#[test]
fn a_bad_network_is_refused_at_start_naming_the_field() {
    let config = format!("{CONFIG}\n[networks.\"eip155:1\"]\nrpc_urls = [\"ftp://node.example\"]\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.toml");
    std::fs::write(&path, config).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vestibule"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&path)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{text}");
    assert!(text.contains(r#"networks."eip155:1".rpc_urls[0]"#), "{text}");
}
