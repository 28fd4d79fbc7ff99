//! Conformance of Solana identifiers and sign-in messages with the public formats:
//! - `vectors/siws/`: Sign-In With Solana messages built by Phantom's construction algorithm, its
//!   chain-id grammar, and ed25519 signatures by an independent implementation (see the README);
//! - `vectors/caip10/`: CAIP-10 account ids, the CAIP-10 and Solana-namespace test cases.

use std::collections::BTreeMap;

use serde_json::Value;
use vestibule_actors::model::caip::{CaipAddress, Namespace as CaipNamespace};
use vestibule_actors::siwx::{MessageFields, Namespace, ParseErrorKind, SiwxMessage, VerifyPolicy, verify};

fn load(path: &str) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(format!("{}/tests/vectors/{path}", env!("CARGO_MANIFEST_DIR"))).expect("vectors are readable");
    serde_json::from_str(&text).expect("vectors are JSON")
}

fn fields_of(v: &Value) -> MessageFields {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
    MessageFields {
        scheme: None,
        domain: s("domain"),
        address: s("address"),
        statement: s("statement"),
        uri: s("uri"),
        version: s("version"),
        chain_id: s("chainId"),
        nonce: s("nonce"),
        issued_at: s("issuedAt"),
        expiration_time: s("expirationTime"),
        not_before: s("notBefore"),
        request_id: s("requestId"),
        resources: v.get("resources").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).map(String::from).collect()),
    }
}

#[test]
fn siws_positive_vectors_parse_to_their_fields_and_build_to_the_same_bytes() {
    let vectors = load("siws/parsing_positive.json");
    assert!(vectors.len() >= 10);
    for (name, v) in vectors {
        let text = v["message"].as_str().unwrap();
        let parsed = SiwxMessage::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = fields_of(&v["fields"]);
        assert_eq!(parsed.to_fields(), expected, "{name}: fields");
        assert_eq!(parsed.namespace(), Namespace::Solana);
        assert_eq!(parsed.account.caip10(), v["caip10"].as_str().unwrap(), "{name}: CAIP-10");
        // Vestibule's builder writes exactly what Phantom's construction writes.
        let built = SiwxMessage::from_fields(Namespace::Solana, &expected).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(built.to_message(), text, "{name}: built bytes");
        // The account id the message denotes is a valid CAIP-10 id.
        let caip: CaipAddress = parsed.account.caip10().parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(caip.network.namespace, CaipNamespace::Solana);
    }
}

#[test]
fn siws_negative_vectors_are_refused_for_their_reason() {
    let vectors = load("siws/parsing_negative.json");
    assert!(vectors.len() >= 20);
    for (name, v) in vectors {
        let text = v["message"].as_str().unwrap();
        let error = match SiwxMessage::parse(text) {
            Ok(m) => panic!("{name}: parsed as {m:?}"),
            Err(e) => e,
        };
        if let Some(field) = v["field"].as_str() {
            match &error.kind {
                ParseErrorKind::Field(f) => assert!(f.to_string().contains(&format!("`{field}`")), "{name}: refused for {f}, not {field}"),
                other => panic!("{name}: refused for {other}, not the field {field}"),
            }
        }
    }
}

#[test]
fn siws_verification_vectors_give_their_verdicts() {
    let vectors = load("siws/verification.json");
    for (name, v) in vectors {
        let text = v["message"].as_str().unwrap();
        let signature = hex::decode(v["signature"].as_str().unwrap()).unwrap();
        let at = time::OffsetDateTime::parse(v["time"].as_str().unwrap(), &time::format_description::well_known::Rfc3339).unwrap();
        let domain = v.get("domain").and_then(Value::as_str).unwrap_or("app.example.com");
        let mut policy = VerifyPolicy::for_origin(&format!("https://{domain}"), "oBbLoEldZs91", at).unwrap();
        policy.allowed_chains =
            Some(vec!["solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".into(), "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1".into()]);
        policy.max_issued_at_skew = None;
        match (verify(text, &signature, &policy), v.get("reason").and_then(Value::as_str)) {
            (Ok(verified), None) => assert_eq!(verified.message.to_message(), text, "{name}"),
            (Err(e), Some(reason)) => assert_eq!(e.code(), reason, "{name}: {e}"),
            (Ok(_), Some(reason)) => panic!("{name}: verified, expected {reason}"),
            (Err(e), None) => panic!("{name}: refused with {e}"),
        }
    }
}

#[test]
fn a_devnet_message_is_refused_where_only_mainnet_is_allowed() {
    let vectors = load("siws/parsing_positive.json");
    let devnet = vectors["chain id solana:devnet"]["message"].as_str().unwrap();
    let parsed = SiwxMessage::parse(devnet).unwrap();
    let mut policy = VerifyPolicy::new(time::OffsetDateTime::now_utc());
    policy.allowed_chains = Some(vec!["solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".into()]);
    assert_eq!(vestibule_actors::siwx::check_message(&parsed, &policy).unwrap_err().code(), "chain_not_allowed");
}

#[test]
fn caip10_vectors() {
    let vectors = load("caip10/caip10.json");
    let group = |k: &str| vectors[k].as_object().unwrap().clone();
    for (name, id) in group("positive") {
        let id = id.as_str().unwrap();
        let parsed: CaipAddress = id.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(parsed.to_string(), id, "{name}: printed back unchanged");
    }
    for (name, id) in group("unknown_namespace") {
        let e = id.as_str().unwrap().parse::<CaipAddress>().unwrap_err();
        assert!(e.to_string().contains("unknown chain namespace"), "{name}: {e}");
    }
    for (name, id) in group("negative") {
        assert!(id.as_str().unwrap().parse::<CaipAddress>().is_err(), "{name} should be refused");
    }
}
