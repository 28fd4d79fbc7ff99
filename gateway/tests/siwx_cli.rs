//! `vestibule siwx verify` logic ([`run_verify`]), called directly: verdicts and exit codes.
//! (The EIP-1271 path with `--rpc` is in `siwx_eip1271.rs`, against anvil.)

use alloy::signers::SignerSync;
use alloy::signers::local::PrivateKeySigner;
use clap::Parser;
use ed25519_dalek::Signer as _;
use serde_json::{Value, json};
use vestibule_actors::siwx::{MessageFields, Namespace, SiwxMessage, SolanaAddress};
use vestibule_gateway::siwx::{SiwxVerifyArgs, run_verify};

const NONCE: &str = "Zq8Rk2Lm5Np7Wx3Vb9Ct4Hd6";

fn signer() -> PrivateKeySigner {
    PrivateKeySigner::from_slice(&[0x24; 32]).unwrap()
}

fn message(address: &str, chain: &str, ns: Namespace) -> String {
    let f = MessageFields {
        domain: Some("app.example".into()),
        address: Some(address.into()),
        statement: Some("Sign in to Example".into()),
        uri: Some("https://app.example/login".into()),
        version: Some("1".into()),
        chain_id: Some(chain.into()),
        nonce: Some(NONCE.into()),
        issued_at: Some("2024-05-01T11:59:00Z".into()),
        expiration_time: Some("2024-05-01T12:10:00Z".into()),
        ..Default::default()
    };
    SiwxMessage::from_fields(ns, &f).unwrap().to_message()
}

fn eth_message() -> String {
    message(&signer().address().to_checksum(None), "1", Namespace::Eip155)
}

fn sign_hex(text: &str) -> String {
    format!("0x{}", hex::encode(signer().sign_message_sync(text.as_bytes()).unwrap().as_bytes()))
}

struct Case {
    _dir: tempfile::TempDir,
    args: SiwxVerifyArgs,
}

fn case(text: &str, signature: &str) -> Case {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("message.txt");
    std::fs::write(&path, text).unwrap();
    let mut args = SiwxVerifyArgs::new(path, signature);
    args.at = Some("2024-05-01T12:00:00Z".into());
    args.domain = Some("app.example".into());
    args.nonce = Some(NONCE.into());
    Case { _dir: dir, args }
}

async fn run(args: &SiwxVerifyArgs) -> (Value, i32) {
    run_verify(args).await.unwrap()
}

fn reason(v: &Value) -> &str {
    v["reason"]["code"].as_str().unwrap_or("none")
}

#[tokio::test]
async fn a_valid_signature_gives_a_valid_verdict_and_exit_0() {
    let text = eth_message();
    let c = case(&text, &sign_hex(&text));
    let (v, code) = run(&c.args).await;
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["valid"], json!(true));
    assert_eq!(v["reason"], Value::Null);
    assert_eq!(v["method"], json!("eip191"));
    assert_eq!(v["account"], json!(format!("eip155:1:{}", signer().address().to_checksum(None))));
    assert_eq!(v["at"], json!("2024-05-01T12:00:00Z"));
    assert_eq!(v["fields"]["nonce"], json!(NONCE));
    assert_eq!(v["fields"]["chainId"], json!("1"));
    assert_eq!(v["unchecked"], json!(["scheme", "uri_origin", "chain"]));
}

#[tokio::test]
async fn a_tampered_signature_is_refused_with_exit_1() {
    let text = eth_message();
    let mut sig = signer().sign_message_sync(text.as_bytes()).unwrap().as_bytes();
    sig[5] ^= 0x80;
    let c = case(&text, &hex::encode(sig));
    let (v, code) = run(&c.args).await;
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["valid"], json!(false));
    assert!(matches!(reason(&v), "signature_mismatch" | "malformed_signature"), "{v:#}");
    assert_eq!(v["fields"]["domain"], json!("app.example"));
}

#[tokio::test]
async fn a_tampered_message_is_refused_naming_the_recovered_address() {
    let text = eth_message();
    let sig = sign_hex(&text);
    let c = case(&text.replace("Sign in to Example", "Sign in to Evil"), &sig);
    let (v, code) = run(&c.args).await;
    assert_eq!((code, reason(&v)), (1, "signature_mismatch"), "{v:#}");
    assert!(v["reason"]["recovered"].is_string());
    assert_ne!(v["reason"]["recovered"], json!(signer().address().to_checksum(None)));
}

#[tokio::test]
async fn claims_are_refused_with_their_reason() {
    let text = eth_message();
    let sig = sign_hex(&text);

    let mut c = case(&text, &sig);
    c.args.at = Some("2024-05-01T12:10:00Z".into());
    assert_eq!(reason(&run(&c.args).await.0), "expired");

    let mut c = case(&text, &sig);
    c.args.at = Some("2024-05-01T11:57:59Z".into());
    assert_eq!(reason(&run(&c.args).await.0), "issued_in_future");

    let mut c = case(&text, &sig);
    c.args.domain = Some("evil.example".into());
    assert_eq!(reason(&run(&c.args).await.0), "domain_mismatch");

    let mut c = case(&text, &sig);
    c.args.nonce = Some("someOtherNonce1".into());
    assert_eq!(reason(&run(&c.args).await.0), "nonce_mismatch");

    let mut c = case(&text, &sig);
    c.args.uri_origin = Some("https://evil.example".into());
    assert_eq!(reason(&run(&c.args).await.0), "uri_mismatch");

    let mut c = case(&text, &sig);
    c.args.chains = vec!["eip155:10".into()];
    assert_eq!(reason(&run(&c.args).await.0), "chain_not_allowed");

    let mut c = case(&text, &sig);
    c.args.max_age_secs = Some(30);
    assert_eq!(reason(&run(&c.args).await.0), "too_old");

    // Not yet valid.
    let nbf =
        text.replace("Expiration Time: 2024-05-01T12:10:00Z", "Expiration Time: 2024-05-01T12:10:00Z\nNot Before: 2024-05-01T12:05:00Z");
    let c = case(&nbf, &sign_hex(&nbf));
    assert_eq!(reason(&run(&c.args).await.0), "not_yet_valid");
}

#[tokio::test]
async fn malformed_inputs_are_verdicts_and_usage_errors_are_errors() {
    let text = eth_message();
    let sig = sign_hex(&text);

    let c = case(&format!("{text}\n"), &sig);
    let (v, code) = run(&c.args).await;
    assert_eq!((code, reason(&v)), (1, "malformed_message"));
    assert!(v["reason"]["message"].as_str().unwrap().contains("ends with a line feed"), "{v:#}");
    assert_eq!(v["fields"], Value::Null);

    let c = case(&text, "not hex");
    assert_eq!(reason(&run(&c.args).await.0), "malformed_signature");

    let mut c = case(&text, &sig);
    c.args.at = Some("2024-02-31T00:00:00Z".into());
    assert!(run_verify(&c.args).await.is_err());

    let mut c = case(&text, &sig);
    c.args.rpc = Some("ftp://example".into());
    assert!(run_verify(&c.args).await.is_err());

    let missing = SiwxVerifyArgs::new("/nonexistent/message.txt", sig);
    assert!(run_verify(&missing).await.is_err());
}

#[tokio::test]
async fn solana_messages_verify_with_base58_or_hex_signatures() {
    let key = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
    let address = SolanaAddress(key.verifying_key().to_bytes()).to_string();
    let text = message(&address, "mainnet", Namespace::Solana);
    let sig = key.sign(text.as_bytes()).to_bytes();
    for spelled in [bs58::encode(sig).into_string(), hex::encode(sig)] {
        let c = case(&text, &spelled);
        let (v, code) = run(&c.args).await;
        assert_eq!(code, 0, "{v:#}");
        assert_eq!(v["method"], json!("ed25519"));
        // `Chain ID: mainnet` denotes Solana mainnet's CAIP-2 id (the genesis-hash reference).
        assert_eq!(v["account"], json!(format!("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:{address}")));
    }
    let mut bad = sig;
    bad[3] ^= 1;
    let c = case(&text, &hex::encode(bad));
    assert_eq!(reason(&run(&c.args).await.0), "signature_mismatch");
}

#[derive(Parser)]
struct TestCli {
    #[command(flatten)]
    verify: SiwxVerifyArgs,
}

#[test]
fn clap_args_parse_with_the_documented_flags_and_defaults() {
    let cli = TestCli::try_parse_from([
        "vestibule",
        "--message",
        "m.txt",
        "--signature",
        "0xabc",
        "--domain",
        "app.example",
        "--nonce",
        "abcdefgh",
        "--at",
        "2024-05-01T12:00:00Z",
        "--rpc",
        "http://127.0.0.1:8545",
        "--chain",
        "eip155:1",
        "--chain",
        "eip155:10",
    ])
    .unwrap();
    let a = cli.verify;
    assert_eq!(a.message, std::path::PathBuf::from("m.txt"));
    assert_eq!(a.signature, "0xabc");
    assert_eq!(a.domain.as_deref(), Some("app.example"));
    assert_eq!(a.nonce.as_deref(), Some("abcdefgh"));
    assert_eq!(a.at.as_deref(), Some("2024-05-01T12:00:00Z"));
    assert_eq!(a.rpc.as_deref(), Some("http://127.0.0.1:8545"));
    assert_eq!(a.chains, vec!["eip155:1".to_owned(), "eip155:10".to_owned()]);
    assert_eq!(a.skew_secs, SiwxVerifyArgs::new("m.txt", "0xabc").skew_secs);
    assert!(TestCli::try_parse_from(["vestibule", "--signature", "0xabc"]).is_err());
}
