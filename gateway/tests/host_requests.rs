//! The host app's EIP-1193 requests through a real session on a real node (issue 13): a
//! `vestibule serve` process whose chain service points at a real anvil (the demo ERC-20 deployed),
//! and a WebSocket client that plays the widget and the wallet. Safe reads (`eth_getBalance`,
//! `eth_call`) are answered by the chain service with no wallet request; `eth_sendTransaction`
//! reaches the wallet on the transaction stack (the test's wallet sends it to the node with the dev
//! wallet's key) and its hash comes back to the host; a method in neither list is rejected with
//! 4200 and the message after its 300 ms deadline; closing the modal rejects a pending signature;
//! malformed calls are invalid params. The session then replays with `--verify` from its log alone.
//!
//! One client address holds at most its share of the host reads at the nodes at once: against the
//! chain crate's stub node, which holds every `eth_call`, a client with its share held is refused
//! -32005 while a client from another address is answered.
//!
//! anvil is found as the chain crate's tests find it (`ANVIL_BIN`, else tests/peers/node_modules).
//! Every wait is on diffs, with generous upper bounds only.

mod support;

#[path = "../../chain/tests/support/anvil.rs"]
#[allow(dead_code)]
mod anvil;

#[path = "../../chain/tests/support/stub.rs"]
#[allow(dead_code)]
mod stub;

use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use alloy::providers::{Provider, ProviderBuilder};
use anvil::{Anvil, dev_wallet};
use serde_json::{Value, json};
use support::evm::*;
use support::*;
use tokio::time::Instant;

/// Sends the host's request and waits for its answer in the mirrored state.
async fn host_request(client: &mut Client, id: &str, method: &str, params: Value) -> Value {
    let result = client.command(json!({ "type": "HostRequest", "requestId": id, "method": method, "params": params })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    answer(client, id).await
}

async fn answer(client: &mut Client, id: &str) -> Value {
    wait_for(client, id, Duration::from_secs(60), |s| !s["hostRequests"]["items"][id]["outcome"].is_null()).await;
    client.state["hostRequests"]["items"][id]["outcome"].clone()
}

fn wallet_requests_issued(state: &Value) -> u64 {
    state["requests"]["nextId"].as_u64().unwrap()
}

#[tokio::test]
async fn host_requests_are_answered_by_the_node_the_wallet_or_refused_and_the_session_replays() {
    let node = Anvil::start(CHAIN_ID);
    let (dev_signer, dev) = dev_wallet();
    node.set_balance(dev, ether(1000)).await;
    let token = node.deploy_token(18, dev, ether(1_000_000)).await;
    let config = format!("{CONFIG}\n[networks.\"eip155:{CHAIN_ID}\"]\nrpc_urls = [\"{}\"]\n", node.url);
    let mut gateway = Gateway::start(&config);
    vestibule_chain::tls::install_crypto_provider();
    let provider = ProviderBuilder::new().connect_http(node.url.parse().unwrap());

    let mut client = Client::create(&gateway, json!({ "networks": [anvil_network()] })).await;
    connect_wallet(&mut client, &dev.to_checksum(None), &format!("0x{CHAIN_ID:x}")).await;
    let issued = wallet_requests_issued(&client.state);

    // Safe reads: the chain service answers what the node says; the wallet is never asked.
    let balance = host_request(&mut client, "read-balance", "eth_getBalance", json!([dev, "latest"])).await;
    assert_eq!(balance["status"], "ok", "{balance}");
    let wei: U256 = balance["result"].as_str().unwrap().parse().unwrap();
    assert_eq!(wei, provider.get_balance(dev).await.unwrap());
    assert_eq!(wei, ether(1000));
    let data = format!("0x70a08231{:0>64}", hex::encode(dev.as_slice()));
    let call = host_request(&mut client, "read-call", "eth_call", json!([{ "to": token, "data": data }, "latest"])).await;
    assert_eq!(call["status"], "ok", "{call}");
    let held: U256 = call["result"].as_str().unwrap().parse().unwrap();
    assert_eq!(held, ether(1_000_000), "the token's balanceOf, read from the node");
    assert_eq!(wallet_requests_issued(&client.state), issued, "no wallet request for a safe read");
    assert_eq!(client.state["modal"]["status"], "closed");
    // The node's own error comes back as it answered (a call to a missing method of the token).
    let reverted = host_request(&mut client, "read-revert", "eth_call", json!([{ "to": token, "data": "0xdeadbeef" }])).await;
    assert_eq!(reverted["status"], "error", "{reverted}");

    // eth_sendTransaction: to the wallet, on the transaction stack, with the modal open.
    let tx = json!({ "from": dev, "to": ANVIL_1, "value": format!("{:#x}", ether(1)) });
    let result =
        client.command(json!({ "type": "HostRequest", "requestId": "send-1", "method": "eth_sendTransaction", "params": [tx] })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    let (request_id, kind) = first_request(&client.state);
    assert_eq!(kind["method"], "eth_sendTransaction", "{kind}");
    assert_eq!(kind["params"], json!([tx]));
    assert_eq!(client.state["hostRequests"]["stack"], json!(["send-1"]));
    assert_eq!(client.state["modal"]["status"], "open");
    assert_eq!(client.state["router"]["stack"].as_array().unwrap().last().unwrap()["view"], "ApproveTransaction");
    // The wallet sends exactly what it was asked, signed with the account's key.
    let request: alloy::rpc::types::TransactionRequest = serde_json::from_value(kind["params"][0].clone()).unwrap();
    let pending = node.wallet_of(dev_signer).send_transaction(request).await.unwrap();
    let hash = format!("{:#x}", pending.tx_hash());
    let outcome = json!({ "status": "ok", "result": hash });
    let result = client.command(json!({ "type": "ResolveWalletRequest", "requestId": request_id, "outcome": outcome })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    assert_eq!(answer(&mut client, "send-1").await, json!({ "status": "ok", "result": hash }));
    assert_eq!(client.state["hostRequests"]["stack"], json!([]));
    assert_eq!(client.state["modal"]["status"], "closed", "the stack emptied: the modal closes");
    let receipt_hash: B256 = hash.parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let receipt = loop {
        if let Some(r) = provider.get_transaction_receipt(receipt_hash).await.unwrap() {
            break r;
        }
        assert!(Instant::now() < deadline, "the node mined no receipt for {hash}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(receipt.status());
    assert_eq!(provider.get_balance(ANVIL_1.parse::<Address>().unwrap()).await.unwrap(), ether(10_001));

    // 'to' without 0x: invalid params, and nothing reaches the wallet.
    let issued = wallet_requests_issued(&client.state);
    let bad =
        host_request(&mut client, "bad-to", "eth_sendTransaction", json!([{ "from": dev, "to": &ANVIL_1[2..], "value": "0x1" }])).await;
    assert_eq!(bad["code"], -32602, "{bad}");
    assert_eq!(wallet_requests_issued(&client.state), issued);

    // A method in neither list: the modal opens, and after the 300 ms deadline the message shows
    // and the host gets 4200. The node was never asked.
    let result =
        client.command(json!({ "type": "HostRequest", "requestId": "nope", "method": "anvil_setBalance", "params": [dev, "0x0"] })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    assert_eq!(client.state["modal"]["status"], "open");
    assert!(client.state["hostRequests"]["items"]["nope"]["outcome"].is_null(), "not before the deadline");
    let refused = answer(&mut client, "nope").await;
    assert_eq!(refused, json!({ "status": "error", "code": 4200, "message": "Requested RPC call is not allowed" }));
    assert!(client.state["toasts"].to_string().contains("Requested RPC call is not allowed"), "{:#}", client.state["toasts"]);
    assert!(provider.get_balance(dev).await.unwrap() > U256::ZERO, "the node's state is untouched");

    // A signature a browser wallet was asked for waits for the wallet's answer when the visitor
    // closes the modal: the wallet's prompt is its own, and the visitor may still approve it.
    let result = client
        .command(json!({ "type": "HostRequest", "requestId": "sign-1", "method": "personal_sign", "params": ["0x68656c6c6f", dev] }))
        .await;
    assert_eq!(result["status"], "accepted", "{result}");
    let (sign_request, kind) = first_request(&client.state);
    assert_eq!(kind["method"], "personal_sign");
    let result = client.command(json!({ "type": "CloseModal" })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    assert!(client.state["hostRequests"]["items"]["sign-1"]["outcome"].is_null(), "not settled by the close");
    assert!(!client.state["requests"]["items"][&sign_request].is_null(), "its wallet request stays");
    let declined = json!({ "status": "error", "code": 4001, "message": "User rejected the request." });
    let result = client.command(json!({ "type": "ResolveWalletRequest", "requestId": sign_request, "outcome": declined })).await;
    assert_eq!(result["status"], "accepted", "{result}");
    assert_eq!(answer(&mut client, "sign-1").await["code"], 4001);

    // The session replays from its log alone (the node is gone): the node's answers are events.
    drop(node);
    gateway.terminate();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vestibule"))
        .args(["replay", "--data"])
        .arg(&gateway.data)
        .args([client.session_id.as_str(), "--verify"])
        .env("VESTIBULE_LOG", "error")
        .output()
        .unwrap();
    assert!(out.status.success(), "replay --verify: {}", String::from_utf8_lossy(&out.stderr));
    let (replayed, _) = fold_from_disk(&gateway.data, &client.session_id).await;
    assert_eq!(replayed["hostRequests"]["items"]["read-call"]["outcome"], call);
}

/// The error a read refused for the client's share (or the gateway's total) comes back with.
fn limit_exceeded() -> Value {
    json!({ "status": "error", "code": -32005, "message": "limit exceeded" })
}

#[tokio::test]
async fn a_client_holding_its_share_of_the_host_reads_at_the_node_is_refused_while_another_client_is_answered() {
    // Given a gateway that allows 4 host reads at the node at once, 2 per client address, whose
    // node holds every `eth_call` (for 10 minutes per attempt: longer than the test) and answers
    // the rest
    let node = stub::StubNode::start(|_, body| match body["method"].as_str() {
        Some("eth_call") => stub::Reply::Hang,
        Some("eth_chainId") => stub::Reply::Json(stub::answer(body, |_| Ok(json!("0x1")))),
        _ => stub::Reply::Json(stub::answer(body, |_| Ok(json!("0x10")))),
    })
    .await;
    let config = format!(
        "{CONFIG}\n[limits]\nhost_chain_calls = 4\nhost_chain_calls_per_client = 2\n\
         [rpc]\nattempt_timeout = \"10m\"\ncall_timeout = \"20m\"\n\
         [networks.\"eip155:1\"]\nrpc_urls = [\"{}\"]\n",
        node.url()
    );
    let gateway = Gateway::start(&config);
    let (slow, other): (std::net::IpAddr, std::net::IpAddr) = ("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap());
    let options = json!({ "networks": ["eip155:1"] });
    let mut slow_client = Client::create_from(&gateway, slow, options.clone()).await;
    let calls_at_node = || node.received().iter().filter(|r| r.methods() == ["eth_call"]).count();

    // When that client's session asks three slow reads (each its own: identical calls in flight
    // would be one call at the node)
    for n in 0..3 {
        let (id, call) =
            (format!("slow-{n}"), json!([{ "to": "0x0000000000000000000000000000000000000001", "data": format!("0x{n:02x}") }, "latest"]));
        let result = slow_client.command(json!({ "type": "HostRequest", "requestId": id, "method": "eth_call", "params": call })).await;
        assert_eq!(result["status"], "accepted", "{result}");
    }

    // Then two reach the node and the third is refused without reaching it
    wait_for(&mut slow_client, "one slow read refused", Duration::from_secs(60), |s| {
        (0..3).any(|n| !s["hostRequests"]["items"][format!("slow-{n}")]["outcome"].is_null())
    })
    .await;
    let outcomes: Vec<Value> = (0..3).map(|n| slow_client.state["hostRequests"]["items"][format!("slow-{n}")]["outcome"].clone()).collect();
    assert_eq!(outcomes.iter().filter(|o| **o == limit_exceeded()).count(), 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| o.is_null()).count(), 2, "{outcomes:?}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while calls_at_node() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(calls_at_node(), 2);

    // And a read the node answers at once is answered for a client from another address, the
    // same read is refused for the client holding its share, and nothing more reached the node
    let mut other_client = Client::create_from(&gateway, other, options).await;
    assert_eq!(host_request(&mut other_client, "fast", "eth_blockNumber", json!([])).await, json!({ "status": "ok", "result": "0x10" }));
    assert_eq!(host_request(&mut slow_client, "fast", "eth_blockNumber", json!([])).await, limit_exceeded());
    assert_eq!(calls_at_node(), 2);
    let refused = gateway.metric("vestibule_chain_forwarded_refused_total{network=\"eip155:1\",kind=\"client\"}").await;
    assert_eq!(refused, 2.0);
}
