//! The chain service on a real Solana runtime: the local LiteSVM peer (tests/peers/solana), funded
//! with SOL and an SPL mint for a test key. Balances (SOL and the SPL mint, decimals read from the
//! mint), a SOL transfer and an SPL TransferChecked built by the service with a recent blockhash,
//! signed here with a real ed25519 key, sent through the service, confirmed by
//! `getSignatureStatuses`, and the balances moved; the receiver's token account is created by the
//! first SPL send only; a transaction other than the one built, and a bad signature, never reach
//! the node; a send the runtime refuses comes back as the node's error.

mod support;

use std::time::Duration;

use base64::Engine as _;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::json;
use support::solana::{DEVNET, SolanaPeer, test_key};
use vestibule_chain::solana::rpc::{PreparedTransaction, SignatureOutcome, TransferRequest};
use vestibule_chain::solana::tx::WireTransaction;
use vestibule_chain::solana::{SolAddress, parse_solana_address};
use vestibule_chain::{AccountAddress, ChainConfig, ChainError, ChainService, NetworkId, SolanaSendError};

fn service(peer: &SolanaPeer, decimals: Option<u8>) -> ChainService {
    let mut token = json!({ "address": peer.mint(), "symbol": "DEMO", "name": "Demo" });
    if let Some(d) = decimals {
        token["decimals"] = json!(d);
    }
    let config: ChainConfig = serde_json::from_value(json!({
        "networks": { DEVNET: { "rpc_urls": [peer.url()], "tokens": [token] } },
        "rpc": { "attempt_timeout": "3s", "base_delay": "10ms", "call_timeout": "8s" }
    }))
    .unwrap();
    ChainService::builder(&config).receipt_poll_interval(Duration::from_millis(50)).build().unwrap()
}

fn network() -> NetworkId {
    DEVNET.parse().unwrap()
}

fn sol(text: &str) -> SolAddress {
    parse_solana_address(text).unwrap()
}

/// Signs the prepared transaction as a wallet would: the first signature slot.
fn sign(key: &SigningKey, prepared: &PreparedTransaction) -> Vec<u8> {
    let mut wire = prepared.transaction.clone();
    let parsed = WireTransaction::parse(&wire).unwrap();
    assert_eq!(parsed.signatures.len(), 1, "only the sender signs");
    assert_eq!(parsed.message, prepared.message);
    wire[1..65].copy_from_slice(&key.sign(&prepared.message).to_bytes());
    wire
}

async fn send(
    chain: &ChainService,
    key: &SigningKey,
    from: SolAddress,
    to: SolAddress,
    request: TransferRequest,
) -> (PreparedTransaction, String) {
    let prepared = chain.prepare_solana_transfer(network(), from, to, request).await.expect("prepared");
    let signed = sign(key, &prepared);
    let signature = chain.send_solana_transaction(network(), &prepared.message, &signed, from).await.expect("sent");
    let outcome = chain.signature_status(network(), &signature, Duration::from_secs(20)).await.unwrap();
    assert!(matches!(outcome, SignatureOutcome::Confirmed { error: None, .. }), "{outcome:?}");
    (prepared, signature)
}

async fn balances(chain: &ChainService, owner: SolAddress) -> (String, Vec<(String, String)>) {
    let b = chain.account_balances(network(), AccountAddress::Solana(owner), true).await.expect("balances");
    (b.native.amount.to_exact_string(), b.tokens.iter().map(|t| (t.symbol.clone(), t.amount.to_exact_string())).collect())
}

#[tokio::test]
async fn balances_of_sol_and_an_spl_mint_with_decimals_read_from_the_mint() {
    let (_, owner) = test_key(1);
    let peer = SolanaPeer::start(&owner, 10, 6, 1000);
    let chain = service(&peer, None);
    let b = chain.account_balances(network(), AccountAddress::Solana(sol(&owner)), false).await.unwrap();
    assert_eq!((b.native.symbol.as_str(), b.native.amount.decimals), ("SOL", 9));
    assert_eq!(b.native.amount.to_exact_string(), "10");
    assert_eq!(b.native.asset.to_string(), format!("{DEVNET}/native"));
    assert_eq!(b.tokens.len(), 1);
    let token = &b.tokens[0];
    assert_eq!((token.symbol.as_str(), token.amount.decimals, token.amount.to_exact_string()), ("DEMO", 6, "1000".to_string()));
    assert_eq!(token.asset.to_string(), format!("{DEVNET}/token:{}", peer.mint()));
    assert_eq!(token.display_amount(), "1000");

    // An account with nothing: zero SOL, zero tokens (the mint is still listed).
    let (_, empty) = test_key(2);
    assert_eq!(balances(&chain, sol(&empty)).await, ("0".into(), vec![("DEMO".into(), "0".into())]));
    // An EVM address is not an account of a Solana network.
    let evm = AccountAddress::Evm("0x70997970C51812dc3A010C7d01b50e0d17dc79C8".parse().unwrap());
    assert!(chain.account_balances(network(), evm, false).await.is_err());
}

#[tokio::test]
async fn a_sol_transfer_and_spl_transfers_are_built_signed_sent_and_confirmed() {
    let (key, owner) = test_key(3);
    let (_, receiver) = test_key(4);
    let peer = SolanaPeer::start(&owner, 10, 6, 1000);
    let chain = service(&peer, Some(6));
    let (from, to) = (sol(&owner), sol(&receiver));

    // SOL: 1.5 SOL; the sender also pays the 5000-lamport fee.
    let (prepared, signature) = send(&chain, &key, from, to, TransferRequest::Native { lamports: 1_500_000_000 }).await;
    assert!(!prepared.creates_receiver_account);
    assert_eq!(signature.len() >= 86, true, "a base58 signature: {signature}");
    assert_eq!(balances(&chain, to).await.0, "1.5");
    assert_eq!(balances(&chain, from).await.0, "8.499995");

    // SPL: 12.5 DEMO to a receiver with no token account: the send creates it.
    let mint = sol(peer.mint());
    let (prepared, _) = send(&chain, &key, from, to, TransferRequest::Spl { mint, amount: 12_500_000 }).await;
    assert!(prepared.creates_receiver_account);
    assert_eq!(balances(&chain, to).await.1, vec![("DEMO".to_string(), "12.5".to_string())]);
    assert_eq!(balances(&chain, from).await.1, vec![("DEMO".to_string(), "987.5".to_string())]);
    // Again: the account exists now, so only TransferChecked.
    let (prepared, _) = send(&chain, &key, from, to, TransferRequest::Spl { mint, amount: 500_000 }).await;
    assert!(!prepared.creates_receiver_account);
    assert_eq!(balances(&chain, to).await.1, vec![("DEMO".to_string(), "13".to_string())]);
    let held = peer.rpc("getTokenAccountsByOwner", json!([receiver, { "mint": peer.mint() }, { "encoding": "jsonParsed" }])).await;
    assert_eq!(held["value"].as_array().unwrap().len(), 1, "one associated token account");
}

#[tokio::test]
async fn what_the_wallet_did_not_sign_as_asked_never_reaches_the_node_and_node_errors_come_back() {
    let (key, owner) = test_key(5);
    let (other_key, receiver) = test_key(6);
    let peer = SolanaPeer::start(&owner, 1, 6, 1);
    let chain = service(&peer, Some(6));
    let (from, to) = (sol(&owner), sol(&receiver));
    let prepared = chain.prepare_solana_transfer(network(), from, to, TransferRequest::Native { lamports: 1_000 }).await.unwrap();

    // Signed by another key.
    let wrong = sign(&other_key, &prepared);
    let e = chain.send_solana_transaction(network(), &prepared.message, &wrong, from).await.unwrap_err();
    assert!(matches!(e, SolanaSendError::Signed(_)), "{e}");
    // Another transaction (more lamports), correctly signed.
    let bigger = chain.prepare_solana_transfer(network(), from, to, TransferRequest::Native { lamports: 2_000 }).await.unwrap();
    let e = chain.send_solana_transaction(network(), &prepared.message, &sign(&key, &bigger), from).await.unwrap_err();
    assert!(e.to_string().contains("another transaction"), "{e}");
    assert_eq!(balances(&chain, to).await.0, "0", "nothing was sent");

    // More SOL than the account holds: the node's preflight refuses it.
    let prepared = chain.prepare_solana_transfer(network(), from, to, TransferRequest::Native { lamports: 5_000_000_000 }).await.unwrap();
    let e = chain.send_solana_transaction(network(), &prepared.message, &sign(&key, &prepared), from).await.unwrap_err();
    let SolanaSendError::Chain(ChainError::Rpc { code, message, .. }) = &e else { panic!("{e:?}") };
    assert_eq!(*code, -32002, "{message}");

    // The signed wire the wallet returns is base64 in the session; it decodes to the same bytes.
    let b64 = prepared.transaction_base64();
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(b64).unwrap(), prepared.transaction);
}

#[tokio::test]
async fn an_unknown_signature_is_not_confirmed_within_the_wait_and_a_dead_peer_is_unavailable() {
    let (_, owner) = test_key(7);
    let mut peer = SolanaPeer::start(&owner, 1, 6, 1);
    let chain = service(&peer, Some(6));
    let unknown = "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW";
    let outcome = chain.signature_status(network(), unknown, Duration::from_millis(300)).await.unwrap();
    assert_eq!(outcome, SignatureOutcome::NotYetConfirmed);
    peer.stop();
    let e = chain.account_balances(network(), AccountAddress::Solana(sol(&owner)), true).await.unwrap_err();
    assert_eq!(e.to_string(), "Token Balance Unavailable");
}

#[tokio::test]
async fn a_peer_of_another_cluster_is_set_aside_and_the_devnet_peer_serves() {
    let (_, owner) = test_key(9);
    let mainnet = SolanaPeer::start_as("mainnet", &owner, 1, 6, 0);
    let devnet = SolanaPeer::start(&owner, 2, 6, 0);
    // Each answers the genesis hash of the cluster it plays, whose first 32 characters are its
    // CAIP-2 reference.
    assert_eq!(devnet.rpc("getGenesisHash", json!([])).await, json!(devnet.genesis_hash()));
    assert_eq!(format!("solana:{}", &devnet.genesis_hash()[..32]), DEVNET);
    assert_eq!(&mainnet.genesis_hash()[..32], "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp");
    let config: ChainConfig =
        serde_json::from_value(json!({ "networks": { DEVNET: { "rpc_urls": [mainnet.url(), devnet.url()] } } })).unwrap();
    let chain = ChainService::new(&config).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while chain.endpoints_serving_another_chain(network()).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the mainnet peer was never set aside");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        chain.endpoints_serving_another_chain(network()),
        [(
            mainnet.url().to_string(),
            "the endpoint serves cluster 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp, not EtWTRABZaYq6iMfeYKouRu166VU2xqa1".into()
        )]
    );
    // The first endpoint is skipped: the balance is the devnet peer's.
    assert_eq!(balances(&chain, sol(&owner)).await.0, "2");
}
