//! The chain service against a real node: anvil with the demo ERC-20 (OpenZeppelin) deployed.
//! Balances in one batch, activity after native and token transfers (newest first, paged by
//! cursor), receipts, a host's eth_call, and real node errors mapped to the spec's catalogue.

mod support;

use std::time::Duration;

use alloy::primitives::{Address, Bytes, U256, address};
use alloy::providers::{DynProvider, Provider};
use alloy::rpc::types::TransactionRequest;
use alloy::sol_types::SolCall;
use serde_json::json;
use support::anvil::{ANVIL_KEY_0, ANVIL_KEY_1, Anvil, assert_token_artifact_is_fresh, dev_wallet};
use vestibule_chain::activity::{Direction, OperationType, TransactionStatus, TransferAsset};
use vestibule_chain::config::{ActivityConfig, NetworkConfig, TokenConfig};
use vestibule_chain::erc20::IERC20;
use vestibule_chain::receipt::ReceiptOutcome;
use vestibule_chain::send::{SendAsset, SendCall, SendForm};
use vestibule_chain::{ActivityCursor, ActivityError, ChainConfig, ChainService, ExpectedTransaction, NetworkId, TransactionError};

const NET: NetworkId = NetworkId::eip155(31337);
const ANVIL_0: Address = address!("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
const ANVIL_1: Address = address!("0x70997970C51812dc3A010C7d01b50e0d17dc79C8");

fn ether(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(18))
}

fn service(anvil: &Anvil, tokens: &[Address], page_size: u32) -> ChainService {
    let network = NetworkConfig {
        rpc_urls: vec![anvil.url.clone()],
        tokens: tokens.iter().map(|t| TokenConfig { address: t.to_string(), ..Default::default() }).collect(),
        activity: ActivityConfig { page_size, ..Default::default() },
        ..Default::default()
    };
    let config = ChainConfig { networks: [(NET.to_string(), network)].into(), ..Default::default() };
    ChainService::builder(&config)
        .receipt_poll_interval(Duration::from_millis(50))
        // The host reads these tests make (the gateway gives the session's whole list).
        .host_reads(&["eth_call", "eth_chainId", "eth_estimateGas", "eth_getLogs"])
        .build()
        .unwrap()
}

async fn send(provider: &DynProvider, call: &SendCall) -> alloy::primitives::B256 {
    let tx = TransactionRequest::default().to(call.to).value(call.value).input(call.data.clone().into());
    let pending = provider.send_transaction(tx).await.expect("send");
    let hash = *pending.tx_hash();
    pending.get_receipt().await.expect("receipt");
    hash
}

#[tokio::test]
async fn balances_come_in_one_batch_and_leave_out_zero_decimal_tokens() {
    assert_token_artifact_is_fresh();
    let anvil = Anvil::start(31337);
    let (_, dev) = dev_wallet();
    anvil.set_balance(dev, ether(1000)).await;
    let vdt = anvil.deploy_token(18, dev, ether(1_000_000)).await;
    let six = anvil.deploy_token(6, dev, U256::from(1_234_567u64)).await;
    let zero = anvil.deploy_token(0, dev, U256::from(5u64)).await;
    let not_a_token = ANVIL_1;
    let service = service(&anvil, &[vdt, zero, six, not_a_token], 20);
    let metrics = service.network_metrics(NET).unwrap();

    let balances = service.balances(NET, dev).await.unwrap();
    assert_eq!(metrics.requests_sent(), 1, "one HTTP request: one JSON-RPC batch");
    assert_eq!(balances.native.symbol, "ETH");
    assert_eq!(balances.native.amount.raw, ether(1000));
    assert_eq!(balances.native.display_amount(), "1000");
    let tokens: Vec<_> = balances.tokens.iter().map(|t| (t.symbol.as_str(), t.amount.raw, t.display_amount())).collect();
    assert_eq!(
        tokens,
        [("VDT", ether(1_000_000), "1000000".to_string()), ("VDT", U256::from(1_234_567u64), "1.234".to_string())],
        "configuration order; the zero-decimal token and the account that is not a token are left out"
    );
    assert!(balances.native.usd_value.is_none(), "no price source, no fiat");

    // Within 30 s every session gets the same answer without asking the node.
    assert_eq!(service.balances(NET, dev).await.unwrap(), balances);
    assert_eq!(metrics.requests_sent(), 1);

    // Many sessions asking at once for an address not yet cached: one batch, and the token
    // metadata learnt above is not asked again.
    let asks = (0..20).map(|_| {
        let service = service.clone();
        tokio::spawn(async move { service.balances(NET, ANVIL_0).await })
    });
    for answer in futures_util::future::join_all(asks).await {
        assert!(answer.unwrap().is_ok());
    }
    assert_eq!(metrics.requests_sent(), 2);
}

#[tokio::test]
async fn an_address_named_in_many_token_logs_gets_its_activity_a_page_of_transactions_at_a_time() {
    // Review finding: anyone can send an address token transfers, and every transaction only the
    // logs found was fetched for one page (tens of thousands of node calls for a spammed address).
    let anvil = Anvil::start(31337);
    let vdt = anvil.deploy_token(18, ANVIL_0, ether(1_000)).await;
    let spammed = address!("0x000000000000000000000000000000000000dEaD");
    let service = service(&anvil, &[vdt], 2);
    let metrics = service.network_metrics(NET).unwrap();
    let token_asset = SendAsset::Erc20 { address: vdt, decimals: 18 };
    let mut sent = Vec::new();
    for _ in 0..7 {
        let form = SendForm { asset: Some(token_asset), amount: "1".into(), receiver: spammed.to_string() };
        sent.push(send(&anvil.wallet(ANVIL_KEY_0), &service.prepare_send(NET, &form).unwrap()).await);
    }

    let mut seen = Vec::new();
    let mut cursor = None;
    for page in 0.. {
        assert!(page < 7, "the pages end");
        let calls_before = metrics.calls_sent();
        let activity = service.activity(NET, Some(spammed), cursor.as_ref()).await.unwrap();
        assert!(activity.transactions.len() <= 2, "a page of two at most: {:?}", activity.transactions);
        // Search and head, two log queries, two transactions and their receipts, and on the first
        // page the token's decimals and symbol.
        assert!(metrics.calls_sent() - calls_before <= 10, "calls for one page: {}", metrics.calls_sent() - calls_before);
        seen.extend(activity.transactions.iter().map(|t| t.hash));
        match activity.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    sent.reverse();
    assert_eq!(seen, sent, "every transfer once, newest first, across the pages");
}

#[tokio::test]
async fn activity_lists_native_and_token_transfers_newest_first_by_pages() {
    let anvil = Anvil::start(31337);
    let (dev_key, dev) = dev_wallet();
    anvil.set_balance(dev, ether(10)).await;
    // block 1: the token, all of it held by anvil's first account
    let vdt = anvil.deploy_token(18, ANVIL_0, ether(1_000)).await;
    let native_asset = SendAsset::Native { decimals: 18 };
    let token_asset = SendAsset::Erc20 { address: vdt, decimals: 18 };
    let form = |asset, amount: &str, to: Address| SendForm { asset: Some(asset), amount: amount.into(), receiver: to.to_string() };
    let dev_provider = anvil.wallet_of(dev_key);
    let service = service(&anvil, &[vdt], 2);

    // block 2: tokens come in, in a transaction the dev wallet neither sent nor was called by
    let incoming = send(&anvil.wallet(ANVIL_KEY_0), &service.prepare_send(NET, &form(token_asset, "100", dev)).unwrap()).await;
    // block 3: a native send
    let native_out = send(&dev_provider, &service.prepare_send(NET, &form(native_asset, "1", ANVIL_1)).unwrap()).await;
    // block 4: a token send
    let token_out = send(&dev_provider, &service.prepare_send(NET, &form(token_asset, "5.5", ANVIL_1)).unwrap()).await;
    // block 5: a native receive
    let native_in = send(&anvil.wallet(ANVIL_KEY_1), &service.prepare_send(NET, &form(native_asset, "0.5", dev)).unwrap()).await;

    // The receipts are in, but on a busy machine anvil's Otterscan search can lag them (a run on a
    // loaded 2-core machine once lacked block 3): wait, by counting, until it finds the three
    // transactions the dev wallet sent or received directly, so the paging below reads a settled node.
    let mut indexed = 0;
    for _ in 0..600 {
        let found: serde_json::Value =
            dev_provider.raw_request("ots_searchTransactionsBefore".into(), (dev, 0, 10)).await.expect("ots_searchTransactionsBefore");
        indexed = found["txs"].as_array().map_or(0, Vec::len);
        if indexed >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(indexed, 3, "anvil's search finds the native receive and both sends");

    let first = service.activity(NET, Some(dev), None).await.unwrap();
    let hashes: Vec<_> = first.transactions.iter().map(|t| t.hash).collect();
    assert_eq!(hashes, [native_in, token_out]);
    let cursor = first.next.clone().expect("a second page");

    let second = service.activity(NET, Some(dev), Some(&cursor)).await.unwrap();
    let hashes: Vec<_> = second.transactions.iter().map(|t| t.hash).collect();
    assert_eq!(hashes, [native_out, incoming], "the incoming token transfer comes from eth_getLogs");
    assert_eq!(second.next, None);

    let all: Vec<_> = first.transactions.iter().chain(&second.transactions).collect();
    let blocks: Vec<_> = all.iter().map(|t| t.block_number).collect();
    assert_eq!(blocks, [5, 4, 3, 2], "newest first across pages");
    for t in &all {
        assert_eq!(t.status, TransactionStatus::Confirmed);
        assert_eq!(t.network, NET);
        assert!(t.mined_at > 1_600_000_000, "a mined time: {}", t.mined_at);
        assert_eq!(t.transfers.len(), 1, "{t:?}");
    }
    let summary: Vec<_> = all
        .iter()
        .map(|t| {
            let transfer = &t.transfers[0];
            let symbol = match &transfer.asset {
                TransferAsset::Native { symbol, .. } => symbol.clone(),
                TransferAsset::Erc20 { symbol, decimals, .. } => {
                    assert_eq!(*decimals, Some(18));
                    symbol.clone().unwrap()
                }
                TransferAsset::Nft { .. } => unreachable!(),
            };
            (t.operation, transfer.direction, symbol, transfer.amount)
        })
        .collect();
    assert_eq!(
        summary,
        [
            (OperationType::Receive, Direction::In, "ETH".to_string(), ether(1) / U256::from(2)),
            (OperationType::Send, Direction::Out, "VDT".to_string(), ether(11) / U256::from(2)),
            (OperationType::Send, Direction::Out, "ETH".to_string(), ether(1)),
            (OperationType::Receive, Direction::In, "VDT".to_string(), ether(100)),
        ]
    );

    assert_eq!(service.activity(NET, None, None).await, Err(ActivityError::MissingAccountAddress));
    assert_eq!(service.activity(NET, None, None).await.unwrap_err().to_string(), "Transactions can't be fetched without an accountAddress");
    let foreign = service.activity(NET, Some(dev), Some(&ActivityCursor("page=2".into()))).await.unwrap_err();
    assert_eq!(foreign.to_string(), "Failed to fetch transactions");
}

#[tokio::test]
async fn receipts_of_mined_reverted_and_unknown_transactions() {
    let anvil = Anvil::start(31337);
    let (dev_key, dev) = dev_wallet();
    let vdt = anvil.deploy_token(18, dev, ether(1)).await;
    let service = service(&anvil, &[vdt], 20);
    let anvil0 = anvil.wallet(ANVIL_KEY_0);

    let tx = TransactionRequest::default().to(ANVIL_1).value(U256::from(1));
    let hash = *anvil0.send_transaction(tx).await.unwrap().tx_hash();
    let ReceiptOutcome::Mined(mined) = service.receipt(NET, hash, Duration::from_secs(30), &ExpectedTransaction::default()).await.unwrap()
    else {
        panic!("not mined")
    };
    assert_eq!((mined.hash, mined.status, mined.gas_used), (hash, TransactionStatus::Confirmed, 21_000));

    // A token transfer of more than anvil's first account holds (none), with the gas given so it
    // is mined rather than refused at estimation: it reverts.
    let transfer = SendCall::erc20_transfer(vdt, ANVIL_1, ether(1));
    let tx = TransactionRequest::default().to(transfer.to).input(transfer.data.into()).gas_limit(100_000);
    let hash = *anvil0.send_transaction(tx).await.unwrap().tx_hash();
    let ReceiptOutcome::Mined(reverted) =
        service.receipt(NET, hash, Duration::from_secs(30), &ExpectedTransaction::default()).await.unwrap()
    else {
        panic!("not mined")
    };
    assert_eq!(reverted.status, TransactionStatus::Failed);

    let unknown = alloy::primitives::B256::repeat_byte(0x42);
    assert_eq!(
        service.receipt(NET, unknown, Duration::from_millis(120), &ExpectedTransaction::default()).await,
        Ok(ReceiptOutcome::NotYetMined)
    );

    // Review finding: the hash is the wallet's word. A mined transaction to another address than
    // the transfer was built to is not the transfer (the positive side: to its own address, it is).
    let tx = TransactionRequest::default().to(ANVIL_1).value(U256::from(2));
    let hash = *anvil0.send_transaction(tx).await.unwrap().tx_hash();
    let elsewhere =
        service.receipt(NET, hash, Duration::from_secs(30), &ExpectedTransaction { to: Some(vdt), ..Default::default() }).await.unwrap();
    assert_eq!(elsewhere, ReceiptOutcome::SentElsewhere { to: Some(ANVIL_1) });
    // Nor is one sent by another account than the transfer's (an outside attack had a stranger's
    // transaction to the same address recorded as the visitor's transfer).
    let stranger = service
        .receipt(NET, hash, Duration::from_secs(30), &ExpectedTransaction { to: Some(ANVIL_1), from: Some(ANVIL_1), call: None })
        .await
        .unwrap();
    assert_eq!(stranger, ReceiptOutcome::SentByAnother { from: Some(ANVIL_0) });
    let ReceiptOutcome::Mined(mined) = service
        .receipt(NET, hash, Duration::from_secs(30), &ExpectedTransaction { to: Some(ANVIL_1), from: Some(ANVIL_0), call: None })
        .await
        .unwrap()
    else {
        panic!("not mined")
    };
    assert_eq!((mined.to, mined.from), (Some(ANVIL_1), Some(ANVIL_0)));

    // Nor is another transaction of the same account to the same address (an outside review: an
    // earlier transfer's hash, or one of another amount, was confirmed as the visitor's): the
    // value and calldata it was built with are compared too.
    let expect =
        |value: u64, data: Bytes| ExpectedTransaction { to: Some(ANVIL_1), from: Some(ANVIL_0), call: Some((U256::from(value), data)) };
    let other_amount = service.receipt(NET, hash, Duration::from_secs(30), &expect(3, Bytes::new())).await.unwrap();
    assert_eq!(other_amount, ReceiptOutcome::OtherCall { value: U256::from(2) });
    let other_data = service.receipt(NET, hash, Duration::from_secs(30), &expect(2, Bytes::from_static(&[0xa9]))).await.unwrap();
    assert_eq!(other_data, ReceiptOutcome::OtherCall { value: U256::from(2) });
    let same = service.receipt(NET, hash, Duration::from_secs(30), &expect(2, Bytes::new())).await.unwrap();
    assert!(matches!(same, ReceiptOutcome::Mined(m) if m.hash == hash), "the transfer as built is confirmed");

    // An ERC-20 transfer: the calldata names the receiver and the amount.
    anvil.set_balance(dev, ether(1)).await;
    let vdt_sender = anvil.wallet_of(dev_key);
    let sent = SendCall::erc20_transfer(vdt, ANVIL_1, U256::from(7));
    let tx = TransactionRequest::default().to(sent.to).input(sent.data.clone().into());
    let hash = *vdt_sender.send_transaction(tx).await.unwrap().tx_hash();
    let built = |amount: u64| ExpectedTransaction {
        to: Some(vdt),
        from: Some(dev),
        call: Some((U256::ZERO, SendCall::erc20_transfer(vdt, ANVIL_1, U256::from(amount)).data)),
    };
    let ReceiptOutcome::Mined(_) = service.receipt(NET, hash, Duration::from_secs(30), &built(7)).await.unwrap() else {
        panic!("not mined")
    };
    let eight = service.receipt(NET, hash, Duration::from_secs(30), &built(8)).await.unwrap();
    assert_eq!(eight, ReceiptOutcome::OtherCall { value: U256::ZERO });
}

#[tokio::test]
async fn a_host_eth_call_is_answered_and_node_errors_map_to_the_catalogue() {
    let anvil = Anvil::start(31337);
    let (_, dev) = dev_wallet();
    let vdt = anvil.deploy_token(6, dev, U256::from(42_000_000u64)).await;
    let service = service(&anvil, &[vdt], 20);

    let data = alloy::primitives::Bytes::from(IERC20::balanceOfCall { owner: dev }.abi_encode());
    let answer = service.request(NET, "eth_call", json!([{ "to": vdt, "data": data }, "latest"])).await.unwrap();
    let bytes: alloy::primitives::Bytes = serde_json::from_value(answer).unwrap();
    assert_eq!(IERC20::balanceOfCall::abi_decode_returns(&bytes).unwrap(), U256::from(42_000_000u64));
    assert_eq!(service.request(NET, "eth_chainId", json!([])).await.unwrap(), json!("0x7a69"));
    // Logs from the `finalized` block, which the node is asked to name first: the mint is there.
    let logs = service.host_read(NET, "eth_getLogs", json!([{ "fromBlock": "finalized", "address": vdt }]), None).await.unwrap();
    assert!(logs.as_array().is_some_and(|logs| !logs.is_empty()), "the token's mint is logged: {logs}");

    // Estimating a transfer of more than the sender holds: OpenZeppelin's custom error reverts.
    let too_much = SendCall::erc20_transfer(vdt, ANVIL_1, U256::from(1u64));
    let estimate = json!([{ "from": ANVIL_0, "to": vdt, "data": too_much.data }]);
    let error = service.request(NET, "eth_estimateGas", estimate).await.unwrap_err();
    assert!(matches!(TransactionError::from_chain_error(&error), TransactionError::ExecutionReverted { .. }), "{error:?}");

    // A signed transfer from an account with no ether: the node's "insufficient funds".
    let broke = "0x0000000000000000000000000000000000000000000000000000000000000042";
    let tx = TransactionRequest::default()
        .to(ANVIL_1)
        .value(U256::from(1))
        .gas_limit(21_000)
        .max_fee_per_gas(2_000_000_000)
        .max_priority_fee_per_gas(1);
    let error = anvil.wallet(broke).send_transaction(tx).await.unwrap_err();
    let payload = error.as_error_resp().expect("a JSON-RPC error");
    assert_eq!(TransactionError::classify(Some(payload.code), &payload.message), TransactionError::InsufficientFunds, "{payload:?}");

    // Reusing a nonce: the node's "nonce too low".
    let anvil0 = anvil.wallet(ANVIL_KEY_0);
    let tx = TransactionRequest::default().to(ANVIL_1).value(U256::from(1)).nonce(0);
    let error = anvil0.send_transaction(tx).await.unwrap_err();
    let payload = error.as_error_resp().expect("a JSON-RPC error");
    assert_eq!(TransactionError::classify(Some(payload.code), &payload.message), TransactionError::NonceTooLow, "{payload:?}");
}
