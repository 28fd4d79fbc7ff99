//! Balances against a stub node on tokio's paused clock: the 30 s cache shared by sessions, one
//! upstream batch for many concurrent asks, failures not kept, fiat only with a price source.

mod support;

use std::time::Duration;

use alloy::primitives::{Address, U256, address};
use alloy::sol_types::SolValue;
use serde_json::{Value, json};
use support::stub::{Reply, StubNode, answer};
use vestibule_chain::config::{NetworkConfig, PriceSourceConfig, TokenConfig};
use vestibule_chain::{ChainConfig, ChainService, NetworkId};

const NET: NetworkId = NetworkId::eip155(10);
const TOKEN: Address = address!("0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85");
const HOLDER: Address = address!("0x70997970C51812dc3A010C7d01b50e0d17dc79C8");

fn word(value: impl SolValue) -> String {
    format!("0x{}", alloy::hex::encode(value.abi_encode()))
}

/// A node where HOLDER has 2.5 ETH and 1234.5678 of a 6-decimal token "USDC".
fn node_answer(body: &Value) -> Value {
    answer(body, |request| match request["method"].as_str().unwrap() {
        "eth_getBalance" => Ok(json!("0x22b1c8c1227a0000")),
        "eth_call" => {
            let data = request["params"][0]["data"].as_str().unwrap();
            Ok(json!(match &data[..10] {
                "0x70a08231" => word(U256::from(1_234_567_800u64)),
                "0x313ce567" => word(U256::from(6u8)),
                "0x95d89b41" => word("USDC".to_string()),
                other => panic!("unexpected call {other}"),
            }))
        }
        other => panic!("unexpected method {other}"),
    })
}

fn config(url: &str) -> ChainConfig {
    let network = NetworkConfig {
        rpc_urls: vec![url.to_string()],
        tokens: vec![TokenConfig { address: TOKEN.to_string(), ..Default::default() }],
        ..Default::default()
    };
    ChainConfig { networks: [(NET.to_string(), network)].into(), ..Default::default() }
}

/// The service, without the chain id check: these tests count the stub's requests.
fn service(config: &ChainConfig) -> ChainService {
    ChainService::builder(config).check_chain_ids(false).build().unwrap()
}

#[tokio::test(start_paused = true)]
async fn balances_are_kept_30_seconds_for_every_session() {
    let node = StubNode::start(|_, body| Reply::Json(node_answer(body))).await;
    let service = service(&config(&node.url()));

    let first = service.balances(NET, HOLDER).await.unwrap();
    assert_eq!(first.native.display_amount(), "2.5");
    assert_eq!((first.tokens[0].symbol.as_str(), first.tokens[0].display_amount().as_str()), ("USDC", "1234.567"));
    let received = node.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].methods(), ["eth_getBalance", "eth_call", "eth_call", "eth_call"], "one batch");

    // Another session, just under 30 s later: the same answer, nothing asked.
    tokio::time::advance(Duration::from_millis(29_999)).await;
    assert_eq!(service.clone().balances(NET, HOLDER).await.unwrap(), first);
    assert_eq!(node.received().len(), 1);

    // At 30 s the balances are asked again; the token's decimals and symbol are not.
    tokio::time::advance(Duration::from_millis(1)).await;
    service.balances(NET, HOLDER).await.unwrap();
    let received = node.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[1].methods(), ["eth_getBalance", "eth_call"]);
}

#[tokio::test(start_paused = true)]
async fn many_sessions_asking_at_once_make_one_upstream_call() {
    let node = StubNode::start(|_, body| Reply::Delayed(Duration::from_millis(200), Box::new(Reply::Json(node_answer(body))))).await;
    let service = service(&config(&node.url()));
    let asks = (0..500).map(|_| {
        let service = service.clone();
        tokio::spawn(async move { service.balances(NET, HOLDER).await })
    });
    let answers: Vec<_> = futures_util::future::join_all(asks).await.into_iter().map(|a| a.unwrap().unwrap()).collect();
    assert!(answers.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(node.received().len(), 1);
}

/// `vestibule_chain_balance_cache_total` tells apart what the cache saved (`hit`), what it could
/// not (`miss`) and the fetches past it after a transaction (`fresh`): a load run counts upstream
/// balance calls per 30 s from `miss` alone.
#[tokio::test(start_paused = true)]
async fn the_cache_metric_tells_hits_misses_and_fresh_fetches_apart() {
    let node = StubNode::start(|_, body| Reply::Json(node_answer(body))).await;
    let service = service(&config(&node.url()));
    service.balances(NET, HOLDER).await.unwrap();
    service.balances(NET, HOLDER).await.unwrap();
    service.fresh_balances(NET, HOLDER).await.unwrap();
    service.balances(NET, HOLDER).await.unwrap();
    assert_eq!(node.received().len(), 2, "the first ask and the fresh one went upstream");
    let mut registry = prometheus_client::registry::Registry::default();
    service.metrics().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for (kind, n) in [("hit", 2), ("miss", 1), ("fresh", 1)] {
        let line = format!("vestibule_chain_balance_cache_total{{network=\"{NET}\",kind=\"{kind}\"}} {n}");
        assert!(text.contains(&line), "missing {line} in\n{text}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_refresh_says_token_balance_unavailable_and_is_not_kept() {
    let node =
        StubNode::start(|n, body| if n < 4 { Reply::Status { status: 503, retry_after: None } } else { Reply::Json(node_answer(body)) })
            .await;
    let service = service(&config(&node.url()));
    let error = service.balances(NET, HOLDER).await.unwrap_err();
    assert_eq!(error.to_string(), "Token Balance Unavailable");
    assert_eq!(std::error::Error::source(&error).unwrap().to_string(), "HTTP request failed: status 503");
    // The session waits 30 s before it asks again (spec §8); the service keeps no failure.
    assert!(service.balances(NET, HOLDER).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn fiat_only_with_a_price_source() {
    let node = StubNode::start(|_, body| Reply::Json(node_answer(body))).await;
    let without = service(&config(&node.url())).balances(NET, HOLDER).await.unwrap();
    assert_eq!(without.native.display_usd_value(), None);
    assert_eq!(without.tokens[0].display_usd_value(), None);

    let mut priced = config(&node.url());
    priced.prices = Some(PriceSourceConfig::Static {
        usd: [(format!("{NET}/native"), "3001.999".to_string()), (format!("{NET}/erc20:{TOKEN}"), "1".to_string())].into(),
    });
    let with = service(&priced).balances(NET, HOLDER).await.unwrap();
    assert_eq!(with.native.display_usd_value().as_deref(), Some("7504.99"), "2.5 × 3001.999, floored to the cent");
    assert_eq!(with.tokens[0].display_usd_value().as_deref(), Some("1234.56"));
}

#[tokio::test(start_paused = true)]
async fn an_unconfigured_network_is_an_unsupported_chain() {
    let service = service(&ChainConfig::default());
    let error = service.balances(NetworkId::eip155(1), HOLDER).await.unwrap_err();
    assert_eq!(std::error::Error::source(&error).unwrap().to_string(), "Unsupported chain");
}

/// Polls `done` until it holds (on a paused clock: each poll advances it by 1 ms).
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..30_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("{what} never happened");
}

#[tokio::test(start_paused = true)]
async fn a_fetch_that_no_session_waits_for_any_more_is_stopped_at_the_node() {
    // An outside review: 50 sessions naming new accounts kept ~2,000 balance fetches at a slow
    // node, still running after every socket had closed.
    let node = StubNode::start(|_, _| Reply::Hang).await;
    let service = service(&config(&node.url()));
    let asking = tokio::spawn({
        let service = service.clone();
        async move { service.balances(NET, HOLDER).await }
    });
    until("the fetch at the node", || node.received().len() == 1).await;
    assert_eq!(node.given_up(), 0, "asked, and waited for");
    let aborted = tokio::time::Instant::now();
    asking.abort();
    until("the node's request given up", || node.given_up() == 1).await;
    // On tokio's paused clock: at once, not when the request's own timeout would have ended it.
    assert!(aborted.elapsed() < Duration::from_secs(1), "given up {:?} after the session stopped waiting", aborted.elapsed());
    assert_eq!(node.received().len(), 1, "and not asked again");
}
