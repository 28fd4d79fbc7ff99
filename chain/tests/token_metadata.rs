//! What a token contract says about itself is bounded (review finding 2): a symbol of at most 32
//! printable characters and at most 36 decimals, else the token's metadata is unknown. Against a
//! stub node that plays hostile tokens: a 300,000-byte symbol met in activity, a configured token
//! whose symbol is 1 MiB, a symbol that is not UTF-8, 255 decimals, and an address that received
//! transfers from 100 tokens nobody knows.

mod support;

use std::sync::Arc;

use alloy::primitives::{Address, B256, U256, address};
use alloy::sol_types::SolValue;
use serde_json::{Value, json};
use support::stub::{Reply, StubNode, answer};
use vestibule_chain::activity::TransferAsset;
use vestibule_chain::activity::otterscan::{MAX_TOKEN_LOOKUPS_PER_PAGE, MAX_TRANSFERS_PER_TRANSACTION, OtterscanActivity};
use vestibule_chain::balances::TokenMetadataCache;
use vestibule_chain::config::{ActivityConfig, NetworkConfig, TokenConfig};
use vestibule_chain::erc20::TRANSFER_TOPIC;
use vestibule_chain::{ActivitySource, ChainConfig, ChainService, NetworkId};

const NET: NetworkId = NetworkId::eip155(8453);
const VICTIM: Address = address!("0x1111111111111111111111111111111111111111");
const SENDER: Address = address!("0x2222222222222222222222222222222222222222");

const DECIMALS: &str = "0x313ce567";
const SYMBOL: &str = "0x95d89b41";
const BALANCE_OF: &str = "0x70a08231";

/// A token of the stub chain: its contract address, and what it answers.
#[derive(Clone)]
struct Token {
    address: Address,
    symbol: Vec<u8>,
    decimals: u64,
}

fn token(n: u16, symbol: impl Into<Vec<u8>>, decimals: u64) -> Token {
    Token { address: Address::left_padding_from(&(0x7000 + n).to_be_bytes()), symbol: symbol.into(), decimals }
}

fn hex(bytes: impl AsRef<[u8]>) -> String {
    format!("0x{}", alloy::hex::encode(bytes))
}

/// The transaction in which `index`'s token sent VICTIM 1,000,000 base units.
fn tx_hash(index: usize) -> B256 {
    B256::left_padding_from(&(0xa000 + index as u32).to_be_bytes())
}

fn transfer_log(index: usize, token: &Token) -> Value {
    json!({
        "address": token.address,
        "topics": [TRANSFER_TOPIC, SENDER.into_word(), VICTIM.into_word()],
        "data": hex(U256::from(1_000_000u64).abi_encode()),
        "transactionHash": tx_hash(index),
        "blockNumber": "0x5",
    })
}

/// A node on which VICTIM received one transfer from each of `tokens` (one transaction each, in
/// block 5), and nothing else.
fn chain(tokens: Vec<Token>) -> impl Fn(usize, &Value) -> Reply + Send + Sync + 'static {
    chain_repeating(tokens, 1)
}

/// As [`chain`], with each transaction's receipt holding its transfer log `repeat` times.
fn chain_repeating(tokens: Vec<Token>, repeat: usize) -> impl Fn(usize, &Value) -> Reply + Send + Sync + 'static {
    move |_, body| {
        Reply::Json(answer(body, |request| {
            let params = &request["params"];
            match request["method"].as_str().unwrap() {
                "eth_chainId" => Ok(json!(format!("{:#x}", NET.chain_id().unwrap()))),
                "eth_blockNumber" => Ok(json!("0x10")),
                "eth_getBalance" => Ok(json!("0x0")),
                "ots_searchTransactionsBefore" => Ok(json!({ "txs": [], "receipts": [], "lastPage": true })),
                "eth_getLogs" if params[0]["topics"][2].is_null() => Ok(json!([])),
                "eth_getLogs" => Ok(Value::Array(tokens.iter().enumerate().map(|(i, t)| transfer_log(i, t)).collect())),
                "eth_getTransactionByHash" | "eth_getTransactionReceipt" => {
                    let hash: B256 = serde_json::from_value(params[0].clone()).unwrap();
                    let index = (0..tokens.len()).find(|i| tx_hash(*i) == hash).expect("a known transaction");
                    Ok(json!({
                        "hash": hash, "transactionHash": hash, "from": SENDER, "to": tokens[index].address, "value": "0x0",
                        "input": "0x", "blockNumber": "0x5", "transactionIndex": format!("{index:#x}"),
                        "blockTimestamp": "0x665a4a00", "timestamp": "0x665a4a00", "status": "0x1",
                        "logs": vec![transfer_log(index, &tokens[index]); repeat],
                    }))
                }
                "eth_call" => {
                    let to: Address = serde_json::from_value(params[0]["to"].clone()).unwrap();
                    let token = tokens.iter().find(|t| t.address == to).ok_or((3, "execution reverted".to_string()))?;
                    let data = params[0]["data"].as_str().unwrap();
                    Ok(json!(match &data[..10] {
                        DECIMALS => hex(U256::from(token.decimals).abi_encode()),
                        // An ABI string, whatever its bytes (`bytes` encodes the same way).
                        SYMBOL => hex(alloy::primitives::Bytes::from(token.symbol.clone()).abi_encode()),
                        BALANCE_OF => hex(U256::from(5_000_000u64).abi_encode()),
                        other => panic!("unexpected call {other}"),
                    }))
                }
                other => panic!("unexpected method {other}"),
            }
        }))
    }
}

fn config(url: &str, tokens: &[Token]) -> ChainConfig {
    let network = NetworkConfig {
        rpc_urls: vec![url.to_string()],
        tokens: tokens.iter().map(|t| TokenConfig { address: t.address.to_string(), ..Default::default() }).collect(),
        // Pages of 100, so that the stub's block (up to 100 transactions the logs found) is one page.
        activity: ActivityConfig { page_size: 100, ..Default::default() },
        ..Default::default()
    };
    ChainConfig { networks: [(NET.to_string(), network)].into(), ..Default::default() }
}

/// The Otterscan source over the stub, with a metadata cache the test can look into.
fn activity_source(node: &StubNode) -> (OtterscanActivity, Arc<TokenMetadataCache>) {
    let service = ChainService::new(&config(&node.url(), &[])).unwrap();
    let metadata = Arc::new(TokenMetadataCache::default());
    let source = OtterscanActivity::new(service.client(NET).unwrap(), service.settings(NET).unwrap().clone(), metadata.clone());
    (source, metadata)
}

/// The ERC-20 transfers of a page, by contract: (symbol, decimals).
fn erc20_transfers(page: &vestibule_chain::ActivityPage) -> Vec<(Address, Option<String>, Option<u8>)> {
    let mut found: Vec<_> = page
        .transactions
        .iter()
        .flat_map(|t| &t.transfers)
        .filter_map(|t| match &t.asset {
            // At most 40 characters of a symbol, so that a failure does not print 300,000.
            TransferAsset::Erc20 { contract, symbol, decimals } => {
                Some((*contract, symbol.as_ref().map(|s| s.chars().take(40).collect()), *decimals))
            }
            _ => None,
        })
        .collect();
    found.sort();
    found
}

#[tokio::test]
async fn activity_shows_a_token_with_a_huge_or_unprintable_symbol_or_255_decimals_as_unknown_and_keeps_nothing_of_it() {
    let good = token(1, "GOOD", 6);
    let huge = token(2, vec![b'A'; 300_000], 18);
    let not_utf8 = token(3, b"\xff\xfe(BAD".to_vec(), 18);
    let too_many_decimals = token(4, "WIDE", 255);
    let control = token(5, "EV\nIL", 18);
    let node = StubNode::start(chain(vec![good.clone(), huge.clone(), not_utf8.clone(), too_many_decimals.clone(), control.clone()])).await;
    let (source, metadata) = activity_source(&node);

    let page = source.page(VICTIM, None).await.unwrap();
    assert_eq!(
        erc20_transfers(&page),
        [
            (good.address, Some("GOOD".into()), Some(6)),
            (huge.address, None, None),
            (not_utf8.address, None, None),
            (too_many_decimals.address, None, None),
            (control.address, None, None),
        ],
        "only the token within the bounds has a symbol and decimals"
    );
    assert!(metadata.get(NET, good.address).is_some());
    for refused in [&huge, &not_utf8, &too_many_decimals, &control] {
        assert_eq!(metadata.get(NET, refused.address), None, "refused metadata is not kept");
    }
    assert_eq!(metadata.len(), 1);
}

#[tokio::test]
async fn a_configured_token_with_a_one_mebibyte_symbol_or_255_decimals_is_left_out_of_balances() {
    let good = token(1, "GOOD", 6);
    let huge = token(2, vec![b'S'; 1024 * 1024], 18);
    let wide = token(3, "WIDE", 255);
    let node = StubNode::start(chain(vec![good.clone(), huge.clone(), wide.clone()])).await;
    let service = ChainService::new(&config(&node.url(), &[good.clone(), huge, wide])).unwrap();

    let balances = service.balances(NET, VICTIM).await.unwrap();
    let tokens: Vec<_> = balances.tokens.iter().map(|t| (t.symbol.as_str(), t.display_amount())).collect();
    assert_eq!(tokens, [("GOOD", "5".to_string())], "the tokens whose metadata is out of bounds are left out");
}

#[tokio::test]
async fn one_page_looks_up_at_most_32_unknown_tokens() {
    let tokens: Vec<Token> = (0..100).map(|n| token(n, format!("J{n}"), 18)).collect();
    let node = StubNode::start(chain(tokens.clone())).await;
    let (source, metadata) = activity_source(&node);

    let page = source.page(VICTIM, None).await.unwrap();
    let calls: usize = node.received().iter().map(|r| r.methods().iter().filter(|m| *m == "eth_call").count()).sum();
    assert_eq!(calls, 2 * MAX_TOKEN_LOOKUPS_PER_PAGE, "decimals and symbol of 32 tokens, not of 100");
    let transfers = erc20_transfers(&page);
    assert_eq!(transfers.len(), 100, "every transfer is listed");
    assert_eq!(transfers.iter().filter(|t| t.1.is_some()).count(), MAX_TOKEN_LOOKUPS_PER_PAGE);
    assert_eq!(metadata.len(), MAX_TOKEN_LOOKUPS_PER_PAGE);
}

#[tokio::test]
async fn a_transaction_that_emits_thousands_of_transfers_to_the_account_shows_a_bounded_number() {
    // Anyone can send an address one transaction whose contract emits a Transfer to it 5,000
    // times: kept whole, the page's event would be too large for the session's log.
    let node = StubNode::start(chain_repeating(vec![token(1, "SPAM", 6)], 5_000)).await;
    let (source, _) = activity_source(&node);
    let page = source.page(VICTIM, None).await.unwrap();
    assert_eq!(page.transactions.len(), 1);
    assert_eq!(page.transactions[0].transfers.len(), MAX_TRANSFERS_PER_TRANSACTION);
    // The positive probe: a transaction with a few transfers keeps them all.
    let node = StubNode::start(chain_repeating(vec![token(1, "SPAM", 6)], 3)).await;
    let (source, _) = activity_source(&node);
    assert_eq!(source.page(VICTIM, None).await.unwrap().transactions[0].transfers.len(), 3);
}
