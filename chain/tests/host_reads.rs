//! A session host's reads (`ChainService::host_read`, review finding 3): an answer larger than the
//! session takes (64 KiB of JSON) is refused while it arrives, not after reading up to
//! `[rpc] max_response_bytes`; an `eth_getLogs` over more than 10,000 blocks is refused with
//! -32602 without reaching a node (or after asking only for the head); beyond the calls allowed at
//! the nodes at once across every session, one more is refused with -32005 without reaching one;
//! and one client address holding its share of them is refused the same way while others are served.
//! Against a stub node, on tokio's paused clock.

mod support;

use std::net::IpAddr;

use serde_json::{Value, json};
use support::stub::{Reply, StubNode, answer};
use vestibule_chain::config::NetworkConfig;
use vestibule_chain::rpc::RpcFailure;
use vestibule_chain::service::{DEFAULT_HOST_READ_MAX_RESPONSE_BYTES, MAX_HOST_LOGS_BLOCK_RANGE};
use vestibule_chain::{ChainConfig, ChainError, ChainService, NetworkId};

const NET: NetworkId = NetworkId::eip155(1);

fn service(url: &str) -> ChainService {
    let network = NetworkConfig { rpc_urls: vec![url.to_string()], ..Default::default() };
    let config = ChainConfig { networks: [(NET.to_string(), network)].into(), ..Default::default() };
    // No chain id check: these tests count the stub's requests.
    ChainService::builder(&config).host_reads(&["eth_call", "eth_getLogs", "eth_blockNumber"]).check_chain_ids(false).build().unwrap()
}

fn too_large() -> Result<Value, ChainError> {
    Err(ChainError::Transport(RpcFailure::BadResponse(format!("the answer is larger than {DEFAULT_HOST_READ_MAX_RESPONSE_BYTES} bytes"))))
}

fn call() -> Value {
    json!([{ "to": "0x0000000000000000000000000000000000000001", "data": "0x" }, "latest"])
}

/// An `eth_call` result of `bytes` hex digits.
fn result_of(bytes: usize) -> Value {
    json!(format!("0x{}", "ab".repeat(bytes / 2)))
}

#[tokio::test(start_paused = true)]
async fn a_host_reads_answer_over_the_host_bound_is_refused_as_it_arrives() {
    // 100 KB: under `[rpc] max_response_bytes` (16 MiB), over what a session takes.
    let node = StubNode::start(|_, body| Reply::Json(answer(body, |_| Ok(result_of(100_000))))).await;
    let service = service(&node.url());
    assert_eq!(service.host_read(NET, "eth_call", call(), None).await, too_large());
    assert_eq!(node.received().len(), 1, "not asked again");
    // Other callers keep the general bound.
    assert_eq!(service.request(NET, "eth_call", call()).await, Ok(result_of(100_000)));
    // An answer the session takes (60 KB) is read.
    let fits = StubNode::start(|_, body| Reply::Json(answer(body, |_| Ok(result_of(60_000))))).await;
    assert_eq!(service_of(&fits).host_read(NET, "eth_call", call(), None).await, Ok(result_of(60_000)));
}

fn service_of(node: &StubNode) -> ChainService {
    service(&node.url())
}

#[tokio::test(start_paused = true)]
async fn a_host_reads_answer_announced_over_the_host_bound_is_refused_before_its_body() {
    // 1 MiB announced, then nothing: only a refusal at the header ends the call at once.
    let node = StubNode::start(|_, _| Reply::Announced { bytes: 1 << 20 }).await;
    let started = tokio::time::Instant::now();
    assert_eq!(service_of(&node).host_read(NET, "eth_call", call(), None).await, too_large());
    assert_eq!(started.elapsed(), std::time::Duration::ZERO, "no attempt timed out");
}

/// A node whose head is `head` and whose logs are none.
fn logs_node(head: u64) -> impl Fn(usize, &Value) -> Reply + Send + Sync + 'static {
    move |_, body| {
        Reply::Json(answer(body, |request| match request["method"].as_str().unwrap() {
            "eth_blockNumber" => Ok(json!(format!("{head:#x}"))),
            "eth_getLogs" => Ok(json!([])),
            // `finalized` 20,000 blocks behind the head (as on chains whose finality lags hours),
            // `safe` 5,000; each block with 1,000 transactions, more than a host read's answer
            // may be (the range check is the gateway's own read).
            "eth_getBlockByNumber" => {
                let behind = match request["params"][0].as_str().unwrap() {
                    "finalized" => 20_000,
                    "safe" => 5_000,
                    other => panic!("unexpected block {other}"),
                };
                let transactions = vec![format!("0x{}", "33".repeat(32)); 1_000];
                Ok(json!({ "number": format!("{:#x}", head.saturating_sub(behind)), "transactions": transactions }))
            }
            other => panic!("unexpected {other}"),
        }))
    }
}

fn asked(node: &StubNode) -> Vec<String> {
    node.received().iter().flat_map(|r| r.methods()).collect()
}

fn logs(filter: Value) -> Value {
    json!([filter])
}

#[tokio::test(start_paused = true)]
async fn a_host_get_logs_over_10000_blocks_is_refused_with_invalid_params() {
    let node = StubNode::start(logs_node(5_000_000)).await;
    let service = service_of(&node);
    let read = |filter: Value| service.host_read(NET, "eth_getLogs", logs(filter), None);
    assert_eq!(MAX_HOST_LOGS_BLOCK_RANGE, 10_000);

    // Both ends numbers: refused without a word to the node.
    let refused = read(json!({ "fromBlock": "0x0", "toBlock": "0x2710" })).await.unwrap_err();
    let ChainError::Rpc { code, message, .. } = &refused else { panic!("{refused:?}") };
    assert_eq!(*code, -32602);
    assert_eq!(message, "eth_getLogs from block 0 to 10000 spans 10001 blocks; at most 10000 at once");
    assert!(asked(&node).is_empty());
    assert_eq!(read(json!({ "fromBlock": "0x0", "toBlock": "0x270f" })).await, Ok(json!([])), "10,000 blocks");
    assert_eq!(asked(&node), ["eth_getLogs"]);

    // "earliest" (or a number) to "latest": the head decides.
    let refused = read(json!({ "fromBlock": "earliest", "toBlock": "latest" })).await.unwrap_err();
    assert!(matches!(&refused, ChainError::Rpc { code: -32602, .. }), "{refused:?}");
    let refused = read(json!({ "fromBlock": "0x0" })).await.unwrap_err();
    assert!(matches!(&refused, ChainError::Rpc { code: -32602, .. }), "{refused:?}");
    assert_eq!(asked(&node), ["eth_getLogs", "eth_blockNumber", "eth_blockNumber"], "only the head was asked");
    assert_eq!(read(json!({ "fromBlock": format!("{:#x}", 5_000_000 - 9_999), "toBlock": "latest" })).await, Ok(json!([])));

    // Near the head, or one block: forwarded as they are.
    assert_eq!(read(json!({})).await, Ok(json!([])));
    assert_eq!(read(json!({ "fromBlock": "latest" })).await, Ok(json!([])));
    assert_eq!(read(json!({ "blockHash": format!("0x{}", "11".repeat(32)) })).await, Ok(json!([])));
    // An end that is neither a number nor a tag.
    let refused = read(json!({ "fromBlock": 0, "toBlock": "latest" })).await.unwrap_err();
    assert!(matches!(&refused, ChainError::Rpc { code: -32602, .. }), "{refused:?}");
}

#[tokio::test(start_paused = true)]
async fn a_host_get_logs_from_a_finalized_block_far_below_the_head_is_refused() {
    let node = StubNode::start(logs_node(5_000_000)).await;
    let service = service_of(&node);
    let read = |filter: Value| service.host_read(NET, "eth_getLogs", logs(filter), None);

    // From `finalized` (20,000 behind) to the head: the node is asked which block it is, and the
    // range refused.
    let refused = read(json!({ "fromBlock": "finalized" })).await.unwrap_err();
    let ChainError::Rpc { code, message, .. } = &refused else { panic!("{refused:?}") };
    assert_eq!(*code, -32602);
    assert_eq!(message, "eth_getLogs from the finalized block (4980000) to the head spans 20001 blocks; at most 10000 at once");
    assert_eq!(asked(&node), ["eth_getBlockByNumber", "eth_blockNumber"], "the logs were not asked");

    // To a number instead of the head: only the tag's block is asked.
    let refused = read(json!({ "fromBlock": "finalized", "toBlock": format!("{:#x}", 4_990_000) })).await.unwrap_err();
    assert!(matches!(&refused, ChainError::Rpc { code: -32602, .. }), "{refused:?}");
    assert_eq!(asked(&node)[2..], ["eth_getBlockByNumber"]);

    // From `safe` (5,000 behind) to `latest`: within the bound, forwarded.
    assert_eq!(read(json!({ "fromBlock": "safe", "toBlock": "latest" })).await, Ok(json!([])));
    assert_eq!(asked(&node)[3..], ["eth_getBlockByNumber", "eth_blockNumber", "eth_getLogs"]);
}

#[tokio::test(start_paused = true)]
async fn on_a_short_chain_earliest_to_latest_is_forwarded() {
    let node = StubNode::start(logs_node(50)).await;
    let service = service_of(&node);
    assert_eq!(
        service.host_read(NET, "eth_getLogs", logs(json!({ "fromBlock": "earliest", "toBlock": "latest" })), None).await,
        Ok(json!([]))
    );
    assert_eq!(asked(&node), ["eth_blockNumber", "eth_getLogs"]);
}

#[tokio::test(start_paused = true)]
async fn beyond_the_forwarded_calls_allowed_at_once_one_more_is_refused_without_reaching_a_node() {
    // Given a service that allows two forwarded calls at the nodes at once, and a node that holds
    // the first two calls it gets (it never answers them) and answers the rest
    let node = StubNode::start(|n, body| if n < 2 { Reply::Hang } else { Reply::Json(answer(body, |_| Ok(json!("0x1")))) }).await;
    let network = NetworkConfig { rpc_urls: vec![node.url()], ..Default::default() };
    let config = ChainConfig { networks: [(NET.to_string(), network)].into(), ..Default::default() };
    let service = ChainService::builder(&config)
        .host_reads(&["eth_call", "eth_blockNumber"])
        .check_chain_ids(false)
        .max_forwarded_in_flight(2)
        .build()
        .unwrap();
    // (a session's host read and a frame's call count alike)
    let held = [
        tokio::spawn({
            let service = service.clone();
            async move { service.host_read(NET, "eth_call", call(), None).await }
        }),
        tokio::spawn({
            let service = service.clone();
            async move { service.request(NET, "eth_blockNumber", json!([])).await }
        }),
    ];
    while node.received().len() < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }

    // When a third call comes while both are at the node
    let third = service.host_read(NET, "eth_blockNumber", json!([]), None).await;

    // Then it is refused at once as a node over its limit would, and never reaches the node
    assert_eq!(third, Err(ChainError::Rpc { code: -32005, message: "limit exceeded".into(), data: None }));
    assert_eq!(service.request(NET, "eth_blockNumber", json!([])).await, third, "a frame's call alike");
    assert_eq!(node.received().len(), 2);
    assert_eq!(service.network_metrics(NET).unwrap().forwarded_refusals("all"), 2);

    // And once the held calls are gone, the next one is forwarded and answered
    for call in held {
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled());
    }
    assert_eq!(service.host_read(NET, "eth_blockNumber", json!([]), None).await, Ok(json!("0x1")));
    assert_eq!(node.received().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_client_holding_its_share_of_the_forwarded_calls_is_refused_while_another_client_is_served() {
    // Given a service that allows four forwarded calls at once, two per client address, and a node
    // that holds every `eth_call` (it never answers them) and answers the rest
    let node =
        StubNode::start(|_, body| if body["method"] == "eth_call" { Reply::Hang } else { Reply::Json(answer(body, |_| Ok(json!("0x1")))) })
            .await;
    let network = NetworkConfig { rpc_urls: vec![node.url()], ..Default::default() };
    let config = ChainConfig { networks: [(NET.to_string(), network)].into(), ..Default::default() };
    let service = ChainService::builder(&config)
        .host_reads(&["eth_call", "eth_blockNumber"])
        .check_chain_ids(false)
        .max_forwarded_in_flight(4)
        .max_forwarded_per_client(2)
        .build()
        .unwrap();
    let (slow_client, other_client) = (Some(IpAddr::from([192, 0, 2, 1])), Some(IpAddr::from([192, 0, 2, 2])));
    let held: Vec<_> = (0..2)
        .map(|_| {
            let service = service.clone();
            tokio::spawn(async move { service.host_read(NET, "eth_call", call(), slow_client).await })
        })
        .collect();
    while node.received().len() < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }

    // When that client reads once more, and another client reads
    let third = service.host_read(NET, "eth_blockNumber", json!([]), slow_client).await;
    let others = service.host_read(NET, "eth_blockNumber", json!([]), other_client).await;

    // Then the client holding its share is refused without reaching the node, the other is answered
    assert_eq!(third, Err(ChainError::Rpc { code: -32005, message: "limit exceeded".into(), data: None }));
    assert_eq!(others, Ok(json!("0x1")));
    assert_eq!(node.received().len(), 3);
    let metrics = service.network_metrics(NET).unwrap();
    assert_eq!((metrics.forwarded_refusals("client"), metrics.forwarded_refusals("all")), (1, 0));

    // And once its calls are gone, the client is served again
    for call in held {
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled());
    }
    assert_eq!(service.host_read(NET, "eth_blockNumber", json!([]), slow_client).await, Ok(json!("0x1")));
}
