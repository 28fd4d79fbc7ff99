//! The configured chain id checked against each EVM endpoint (review finding 5, decision 0914):
//! an endpoint answering `eth_chainId` with another chain is not used until it serves the
//! network's chain; one that has not answered yet is used as usual. Against stub nodes, on tokio's
//! paused clock (the waits are virtual, and counted).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use support::stub::{Reply, StubNode, answer};
use vestibule_chain::config::NetworkConfig;
use vestibule_chain::rpc::RpcFailure;
use vestibule_chain::rpc::chain_id::RECHECK_EVERY;
use vestibule_chain::{ChainConfig, ChainError, ChainService, NetworkId};

const NET: NetworkId = NetworkId::eip155(5);

/// A node of chain `chain_id` (read at each request), whose head is `head`.
fn node(chain_id: Arc<AtomicU64>, head: u64) -> impl Fn(usize, &Value) -> Reply + Send + Sync + 'static {
    move |_, body| {
        Reply::Json(answer(body, |request| match request["method"].as_str().unwrap() {
            "eth_chainId" => Ok(json!(format!("{:#x}", chain_id.load(Ordering::SeqCst)))),
            "eth_blockNumber" => Ok(json!(format!("{head:#x}"))),
            other => panic!("unexpected {other}"),
        }))
    }
}

fn service(urls: &[String]) -> ChainService {
    let network = NetworkConfig { rpc_urls: urls.to_vec(), ..Default::default() };
    let config = ChainConfig { networks: [(NET.to_string(), network)].into(), ..Default::default() };
    ChainService::builder(&config).host_reads(&["eth_blockNumber"]).build().unwrap()
}

fn methods(node: &StubNode) -> Vec<String> {
    node.received().iter().flat_map(|r| r.methods()).collect()
}

/// Waits (1 ms of virtual time at a time, at most 1000 times) until `done`.
async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("never happened");
}

#[tokio::test(start_paused = true)]
async fn an_endpoint_of_another_chain_is_not_used_until_it_serves_the_networks() {
    let wrong_chain = Arc::new(AtomicU64::new(1));
    let wrong = StubNode::start(node(wrong_chain.clone(), 100)).await;
    let right = StubNode::start(node(Arc::new(AtomicU64::new(5)), 200)).await;
    // A path, as a provider's API key would be: never shown.
    let service = service(&[format!("{}/v3/SECRET", wrong.url()), right.url()]);

    until(|| !service.endpoints_serving_another_chain(NET).is_empty()).await;
    assert_eq!(
        service.endpoints_serving_another_chain(NET),
        [(wrong.url(), "the endpoint serves chain 1, not 5".to_string())],
        "scheme, host and port only"
    );
    // Calls go to the next endpoint at once, and the wrong one is asked nothing but its chain id.
    for _ in 0..3 {
        assert_eq!(service.request(NET, "eth_blockNumber", json!([])).await, Ok(json!("0xc8")));
        assert_eq!(service.host_read(NET, "eth_blockNumber", json!([]), None).await, Ok(json!("0xc8")));
    }
    assert_eq!(methods(&wrong), ["eth_chainId"]);
    assert_eq!(service.network_metrics(NET).unwrap().retries_made(), 0, "moved on, not retried");

    // Fixed: once it answers the network's chain id (asked again every minute), it is used again.
    wrong_chain.store(5, Ordering::SeqCst);
    tokio::time::advance(RECHECK_EVERY).await;
    until(|| service.endpoints_serving_another_chain(NET).is_empty()).await;
    assert_eq!(service.request(NET, "eth_blockNumber", json!([])).await, Ok(json!("0x64")));
    assert_eq!(methods(&wrong), ["eth_chainId", "eth_chainId", "eth_blockNumber"]);
    // And it is not asked again.
    tokio::time::advance(RECHECK_EVERY * 3).await;
    assert_eq!(methods(&wrong).iter().filter(|m| *m == "eth_chainId").count(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_network_whose_only_endpoint_serves_another_chain_fails_its_calls_without_asking_it() {
    let wrong = StubNode::start(node(Arc::new(AtomicU64::new(1)), 100)).await;
    let service = service(&[wrong.url()]);
    until(|| !service.endpoints_serving_another_chain(NET).is_empty()).await;
    let error = service.request(NET, "eth_blockNumber", json!([])).await.unwrap_err();
    assert_eq!(error, ChainError::Transport(RpcFailure::Network("the endpoint serves chain 1, not 5".into())));
    assert_eq!(error.to_string(), "HTTP request failed: the endpoint serves chain 1, not 5");
    assert_eq!(methods(&wrong), ["eth_chainId"]);
}

#[tokio::test(start_paused = true)]
async fn an_endpoint_that_has_not_answered_its_chain_id_is_used() {
    // The chain id comes after 5 s; the call does not wait for it.
    let slow = StubNode::start(|_, body: &Value| {
        if body["method"] == "eth_chainId" {
            Reply::Delayed(Duration::from_secs(5), Box::new(Reply::Json(answer(body, |_| Ok(json!("0x1"))))))
        } else {
            Reply::Json(answer(body, |_| Ok(json!("0x7"))))
        }
    })
    .await;
    let service = service(&[slow.url()]);
    let started = tokio::time::Instant::now();
    assert_eq!(service.request(NET, "eth_blockNumber", json!([])).await, Ok(json!("0x7")));
    assert!(started.elapsed() < Duration::from_secs(5));
    // Then it answers another chain: no longer used.
    tokio::time::advance(Duration::from_secs(5)).await;
    until(|| !service.endpoints_serving_another_chain(NET).is_empty()).await;
    assert!(service.request(NET, "eth_blockNumber", json!([])).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn without_the_check_nothing_is_asked() {
    let wrong = StubNode::start(node(Arc::new(AtomicU64::new(1)), 100)).await;
    let network = NetworkConfig { rpc_urls: vec![wrong.url()], ..Default::default() };
    let config = ChainConfig { networks: [(NET.to_string(), network)].into(), ..Default::default() };
    let service = ChainService::builder(&config).host_reads(&["eth_blockNumber"]).check_chain_ids(false).build().unwrap();
    assert_eq!(service.request(NET, "eth_blockNumber", json!([])).await, Ok(json!("0x64")));
    tokio::time::advance(RECHECK_EVERY).await;
    assert_eq!(methods(&wrong), ["eth_blockNumber"]);
}
