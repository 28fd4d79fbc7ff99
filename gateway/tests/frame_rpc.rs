//! The embedded wallet's chain calls (`ChainFrameRpc`, the frame's `/api/rpc`) fail as the host's
//! provider does: with the node's own JSON-RPC error (an `eth_estimateGas` revert keeps code 3 and its
//! words, for the page that asked), 4901 when no node of the network answers, 4901 for a chain with
//! no node here. They once all read -32000 with the chain service's wording. Against the chain
//! crate's stub node, on tokio's paused clock.

#[path = "../../chain/tests/support/stub.rs"]
#[allow(dead_code)]
mod stub;

use serde_json::json;
use stub::{Reply, StubNode, answer};
use vestibule_chain::config::NetworkConfig;
use vestibule_chain::{ChainConfig, ChainService};
use vestibule_embedded::service::{FRAME_RPC_METHODS, FrameRpc, RpcFailure};
use vestibule_gateway::embedded::ChainFrameRpc;

const ADDRESS: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

fn frame_rpc(url: &str) -> ChainFrameRpc {
    let network = NetworkConfig { rpc_urls: vec![url.to_string()], ..Default::default() };
    let config = ChainConfig { networks: [("eip155:1".to_string(), network)].into(), ..Default::default() };
    // What the gateway forwards with the embedded wallet on: the frame's methods among them.
    let chain = ChainService::builder(&config).host_reads(FRAME_RPC_METHODS).check_chain_ids(false).build().unwrap();
    ChainFrameRpc { chain }
}

fn estimate() -> serde_json::Value {
    json!([{ "from": ADDRESS, "to": "0x0000000000000000000000000000000000000001", "data": "0xdeadbeef" }])
}

#[tokio::test(start_paused = true)]
async fn given_a_node_that_reverts_when_the_frame_estimates_gas_then_it_gets_the_nodes_code_and_words() {
    let node = StubNode::start(|_, body| Reply::Json(answer(body, |_| Err((3, "execution reverted: not the owner".into()))))).await;
    let failure = frame_rpc(&node.url()).call("s1", ADDRESS, "eip155:1", "eth_estimateGas", estimate()).await;
    assert_eq!(failure, Err(RpcFailure { code: 3, message: "execution reverted: not the owner".into() }));

    // The positive side of the same path: an answer is handed on as it came.
    let ok = StubNode::start(|_, body| Reply::Json(answer(body, |_| Ok(json!("0x5208"))))).await;
    assert_eq!(frame_rpc(&ok.url()).call("s1", ADDRESS, "eip155:1", "eth_estimateGas", estimate()).await, Ok(json!("0x5208")));
}

#[tokio::test(start_paused = true)]
async fn given_no_node_that_answers_or_no_node_at_all_then_the_frame_gets_4901() {
    let node = StubNode::start(|_, _| Reply::Close).await;
    let failure = frame_rpc(&node.url()).call("s1", ADDRESS, "eip155:1", "eth_estimateGas", estimate()).await.unwrap_err();
    assert_eq!(failure.code, 4901, "{failure:?}");
    let failure = frame_rpc(&node.url()).call("s1", ADDRESS, "eip155:10", "eth_estimateGas", estimate()).await.unwrap_err();
    assert_eq!(failure.code, 4901, "{failure:?}");
}
