//! The configured Solana cluster checked against each endpoint (decision 0915, the Solana side of
//! 0914's chain id check): an endpoint answering `getGenesisHash` with another cluster's genesis
//! hash (its first 32 characters are not the network's CAIP-2 reference) is not used until it
//! serves the network's cluster; one that has not answered, or cannot answer, is used as usual and
//! asked again. Against stub nodes on loopback, on tokio's paused clock (the waits are virtual).
//! Every test records its log lines ([`Logs`]): a test thread without a recorder reaching the
//! check's log lines first would turn them off for every thread of this binary.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::logs::Logs;
use support::stub::{Reply, StubNode, answer};
use tracing::Level;
use vestibule_chain::config::NetworkConfig;
use vestibule_chain::rpc::RpcFailure;
use vestibule_chain::rpc::chain_id::RECHECK_EVERY;
use vestibule_chain::solana::SolAddress;
use vestibule_chain::solana::rpc::TransferRequest;
use vestibule_chain::{AccountAddress, ChainConfig, ChainError, ChainService, NetworkId};

/// Solana Devnet: the network configured here.
const DEVNET_GENESIS: &str = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG";
/// Mainnet Beta: what a misconfigured endpoint serves.
const MAINNET_GENESIS: &str = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d";

const REFUSAL: &str = "the endpoint serves cluster 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp, not EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

fn net() -> NetworkId {
    NetworkId::solana(&DEVNET_GENESIS[..32]).unwrap()
}

const OWNER: SolAddress = SolAddress::new_from_array([7; 32]);
const RECEIVER: SolAddress = SolAddress::new_from_array([8; 32]);

/// What a stub answers to `getGenesisHash`: a hash, or a JSON-RPC error (a node or proxy without
/// the method).
type Genesis = Arc<Mutex<Result<&'static str, (i64, String)>>>;

fn genesis(hash: &'static str) -> Genesis {
    Arc::new(Mutex::new(Ok(hash)))
}

/// A Solana node answering `getGenesisHash` with `genesis` (read at each request), whose accounts
/// all hold `lamports` and whose latest blockhash is `blockhash`.
fn node(genesis: Genesis, lamports: u64, blockhash: &'static str) -> impl Fn(usize, &Value) -> Reply + Send + Sync + 'static {
    move |_, body| {
        Reply::Json(answer(body, |request| {
            let context = json!({ "slot": 1 });
            match request["method"].as_str().unwrap() {
                "getGenesisHash" => genesis.lock().unwrap().clone().map(|hash| json!(hash)),
                "getBalance" => Ok(json!({ "context": context, "value": lamports })),
                "getTokenAccountsByOwner" => Ok(json!({ "context": context, "value": [] })),
                "getLatestBlockhash" => Ok(json!({ "context": context, "value": { "blockhash": blockhash, "lastValidBlockHeight": 150 } })),
                other => panic!("unexpected {other}"),
            }
        }))
    }
}

fn config(urls: &[String]) -> ChainConfig {
    let network = NetworkConfig { rpc_urls: urls.to_vec(), ..Default::default() };
    ChainConfig { networks: [(net().to_string(), network)].into(), ..Default::default() }
}

fn service(urls: &[String]) -> ChainService {
    ChainService::builder(&config(urls)).build().unwrap()
}

fn methods(node: &StubNode) -> Vec<String> {
    node.received().iter().flat_map(|r| r.methods()).collect()
}

fn asked_genesis(node: &StubNode) -> usize {
    methods(node).iter().filter(|m| *m == "getGenesisHash").count()
}

/// The lamports the service reads for `OWNER`, past the balance cache.
async fn lamports(service: &ChainService) -> Result<u64, ChainError> {
    let balances = service.account_balances(net(), AccountAddress::Solana(OWNER), true).await.map_err(|e| e.cause)?;
    Ok(balances.native.amount.raw.to())
}

async fn blockhash(service: &ChainService) -> Result<String, ChainError> {
    let prepared = service.prepare_solana_transfer(net(), OWNER, RECEIVER, TransferRequest::Native { lamports: 1 }).await?;
    Ok(prepared.blockhash)
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
async fn an_endpoint_of_another_cluster_is_not_used_and_the_right_one_is() {
    let logs = Logs::capture();
    let wrong_genesis = genesis(MAINNET_GENESIS);
    let wrong = StubNode::start(node(wrong_genesis.clone(), 1_000_000_000, MAINNET_GENESIS)).await;
    let right = StubNode::start(node(genesis(DEVNET_GENESIS), 2_000_000_000, DEVNET_GENESIS)).await;
    // A path and a query, as a provider's API key would be: never shown.
    let service = service(&[format!("{}/v1/SECRET?api-key=SECRET", wrong.url()), right.url()]);

    until(|| !service.endpoints_serving_another_chain(net()).is_empty()).await;
    assert_eq!(service.endpoints_serving_another_chain(net()), [(wrong.url(), REFUSAL.to_string())], "scheme, host and port only");
    // One ERROR line naming the network, the endpoint (without its path), and both references.
    let errors = logs.at(Level::ERROR);
    assert_eq!(errors.len(), 1, "{errors:?}");
    let line = &errors[0];
    assert_eq!(line.field("network"), Some(net().to_string().as_str()));
    assert_eq!(line.field("endpoint"), Some(wrong.url().as_str()));
    assert_eq!(line.field("serves"), Some("5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"));
    assert_eq!(line.field("expected"), Some("EtWTRABZaYq6iMfeYKouRu166VU2xqa1"));
    assert!(line.field("message").unwrap().contains("not used until it serves cluster EtWTRABZaYq6iMfeYKouRu166VU2xqa1"), "{line:?}");
    assert!(!logs.lines().iter().any(|l| l.text().contains("SECRET")), "no line shows the URL's path or query");

    // Balances and sends go to the next endpoint at once; the wrong one is asked nothing else.
    for _ in 0..3 {
        assert_eq!(lamports(&service).await, Ok(2_000_000_000));
        assert_eq!(blockhash(&service).await, Ok(DEVNET_GENESIS.into()));
    }
    assert_eq!(methods(&wrong), ["getGenesisHash"]);
    assert_eq!(asked_genesis(&right), 1, "the right one was asked once, and is used");
    assert_eq!(service.network_metrics(net()).unwrap().retries_made(), 0, "moved on, not retried");

    // Still wrong a minute later: asked again, still not used, not logged again.
    tokio::time::advance(RECHECK_EVERY).await;
    until(|| asked_genesis(&wrong) == 2).await;
    assert_eq!(lamports(&service).await, Ok(2_000_000_000));
    assert_eq!(logs.at(Level::ERROR).len(), 1);

    // Fixed: once it answers the network's genesis hash, it is used again (it is first).
    *wrong_genesis.lock().unwrap() = Ok(DEVNET_GENESIS);
    tokio::time::advance(RECHECK_EVERY).await;
    until(|| service.endpoints_serving_another_chain(net()).is_empty()).await;
    assert_eq!(lamports(&service).await, Ok(1_000_000_000));
    // No SPL token is configured here, so no token accounts are asked for.
    assert_eq!(methods(&wrong), ["getGenesisHash", "getGenesisHash", "getGenesisHash", "getBalance"]);
    assert!(logs.at(Level::INFO).iter().any(|l| l.field("message").is_some_and(|m| m.contains("it is used again"))));
    // And it is not asked again.
    tokio::time::advance(RECHECK_EVERY * 3).await;
    assert_eq!(asked_genesis(&wrong), 3);
}

#[tokio::test(start_paused = true)]
async fn a_cluster_whose_only_endpoint_serves_another_fails_with_what_it_serves() {
    let logs = Logs::capture();
    let wrong = StubNode::start(node(genesis(MAINNET_GENESIS), 1, MAINNET_GENESIS)).await;
    let service = service(&[wrong.url()]);
    until(|| !service.endpoints_serving_another_chain(net()).is_empty()).await;
    // What the visitor is shown (the gateway shows a failed send's preparation and signature
    // status as the error's text): why, not only "HTTP request failed".
    let error = blockhash(&service).await.unwrap_err();
    assert_eq!(error, ChainError::Transport(RpcFailure::Network(REFUSAL.into())));
    assert_eq!(error.to_string(), format!("HTTP request failed: {REFUSAL}"));
    let status = service.signature_status(net(), "1111111111111111111111111111111111111111111111111111111111111111", Duration::ZERO).await;
    assert_eq!(status.unwrap_err().to_string(), format!("HTTP request failed: {REFUSAL}"));
    // Balances: the spec's "Token Balance Unavailable", with this cause (logged by the gateway).
    let balances = service.account_balances(net(), AccountAddress::Solana(OWNER), true).await.unwrap_err();
    assert_eq!(balances.to_string(), "Token Balance Unavailable");
    assert_eq!(balances.cause, ChainError::Transport(RpcFailure::Network(REFUSAL.into())));
    assert_eq!(methods(&wrong), ["getGenesisHash"], "nothing sent to it but the question");
    assert_eq!(logs.at(Level::ERROR).len(), 1, "logged once, not per call");
}

#[tokio::test(start_paused = true)]
async fn an_endpoint_that_cannot_answer_its_genesis_hash_is_used_and_asked_again() {
    let logs = Logs::capture();
    // A node (or a proxy in front of one) without the method: no answer, as eth_chainId's error
    // is none on EVM. Used as usual, asked again every minute.
    let unknown = Arc::new(Mutex::new(Err((-32601, "Method not found".to_string()))));
    let mute = StubNode::start(node(unknown.clone(), 3_000_000_000, DEVNET_GENESIS)).await;
    let service = service(&[mute.url()]);
    until(|| asked_genesis(&mute) == 1).await;
    assert_eq!(lamports(&service).await, Ok(3_000_000_000));
    assert!(service.endpoints_serving_another_chain(net()).is_empty());
    assert!(logs.at(Level::ERROR).is_empty(), "not answering is not serving another cluster");
    tokio::time::advance(RECHECK_EVERY).await;
    until(|| asked_genesis(&mute) == 2).await;
    assert_eq!(lamports(&service).await, Ok(3_000_000_000));
    // Once it answers another cluster's hash, it is set aside.
    *unknown.lock().unwrap() = Ok(MAINNET_GENESIS);
    tokio::time::advance(RECHECK_EVERY).await;
    until(|| !service.endpoints_serving_another_chain(net()).is_empty()).await;
    assert_eq!(lamports(&service).await, Err(ChainError::Transport(RpcFailure::Network(REFUSAL.into()))));
}

#[tokio::test(start_paused = true)]
async fn an_endpoint_that_has_not_answered_its_genesis_hash_is_used() {
    let logs = Logs::capture();
    // The genesis hash comes after 5 s; calls do not wait for it.
    let slow = StubNode::start(|_, body: &Value| {
        let reply = node(genesis(MAINNET_GENESIS), 4_000_000_000, DEVNET_GENESIS)(0, body);
        if body["method"] == "getGenesisHash" { Reply::Delayed(Duration::from_secs(5), Box::new(reply)) } else { reply }
    })
    .await;
    let service = service(&[slow.url()]);
    let started = tokio::time::Instant::now();
    assert_eq!(lamports(&service).await, Ok(4_000_000_000));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(slow.received()[0].methods(), ["getGenesisHash"], "asked at start");
    assert!(logs.at(Level::ERROR).is_empty());
    // Then it answers another cluster: no longer used.
    tokio::time::advance(Duration::from_secs(5)).await;
    until(|| !service.endpoints_serving_another_chain(net()).is_empty()).await;
    assert_eq!(lamports(&service).await, Err(ChainError::Transport(RpcFailure::Network(REFUSAL.into()))));
    assert_eq!(logs.at(Level::ERROR).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_switch_that_turns_the_chain_id_check_off_turns_the_genesis_hash_check_off() {
    let logs = Logs::capture();
    let wrong = StubNode::start(node(genesis(MAINNET_GENESIS), 5, MAINNET_GENESIS)).await;
    let checked = service(&[wrong.url()]);
    let unchecked = ChainService::builder(&config(&[wrong.url()])).check_chain_ids(false).build().unwrap();
    until(|| !checked.endpoints_serving_another_chain(net()).is_empty()).await;
    // Off: used without being asked (the one question came from the checked service).
    assert_eq!(lamports(&unchecked).await, Ok(5));
    tokio::time::advance(RECHECK_EVERY).await;
    until(|| asked_genesis(&wrong) == 2).await;
    assert!(unchecked.endpoints_serving_another_chain(net()).is_empty());
    assert_eq!(lamports(&unchecked).await, Ok(5));
    assert_eq!(asked_genesis(&wrong), 2, "only the checked service asks, once a minute");
    assert_eq!(logs.at(Level::ERROR).len(), 1, "only the checked service sets it aside");
}
