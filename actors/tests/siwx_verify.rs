//! Verification: signatures made here with known keys (secp256k1 via k256, ed25519 via
//! ed25519-dalek), each refusal checked for its reason.

use alloy_primitives::Address;
use ed25519_dalek::Signer as _;
use time::macros::datetime;
use time::{Duration, OffsetDateTime};
use vestibule_actors::siwx::verify::{decode_signature, eip191_hash, recover_eip191};
use vestibule_actors::siwx::{
    Account, Binding, MessageFields, Namespace, SignatureMethod, SiwxMessage, SolanaAddress, VerifyError, VerifyPolicy, generate_nonce,
    generate_nonce_with, verify, verify_eoa, verify_solana,
};

const NOW: OffsetDateTime = datetime!(2024-05-01 12:00:00 UTC);
const NONCE: &str = "k3Jd8QpZr2XvT9mW4bNc7LhA";

fn eth_key() -> k256::ecdsa::SigningKey {
    k256::ecdsa::SigningKey::from_slice(&[0x42; 32]).unwrap()
}

fn eth_address() -> Address {
    Address::from_private_key(&eth_key())
}

fn personal_sign(key: &k256::ecdsa::SigningKey, message: &str) -> Vec<u8> {
    let (sig, recid) = key.sign_prehash_recoverable(eip191_hash(message.as_bytes()).as_slice()).unwrap();
    let mut out = sig.to_bytes().to_vec();
    out.push(27 + recid.to_byte());
    out
}

fn eth_fields() -> MessageFields {
    MessageFields {
        domain: Some("app.example".into()),
        address: Some(eth_address().to_checksum(None)),
        statement: Some("Sign in to Example".into()),
        uri: Some("https://app.example/login".into()),
        version: Some("1".into()),
        chain_id: Some("1".into()),
        nonce: Some(NONCE.into()),
        issued_at: Some("2024-05-01T11:59:00Z".into()),
        expiration_time: Some("2024-05-01T12:10:00Z".into()),
        ..Default::default()
    }
}

fn eth_message(f: &MessageFields) -> String {
    SiwxMessage::from_fields(Namespace::Eip155, f).unwrap().to_message()
}

fn policy() -> VerifyPolicy {
    let mut p = VerifyPolicy::for_origin("https://app.example", NONCE, NOW).unwrap();
    p.allowed_chains = Some(vec!["eip155:1".into(), "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".into()]);
    p
}

fn code(r: Result<vestibule_actors::siwx::Verified, VerifyError>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(e) => e.code(),
    }
}

#[test]
fn a_valid_eoa_signature_verifies_with_every_binding_checked() {
    let text = eth_message(&eth_fields());
    let sig = personal_sign(&eth_key(), &text);
    let v = verify_eoa(&text, &sig, &policy()).unwrap();
    assert_eq!(v.method, SignatureMethod::Eip191);
    assert_eq!(v.message.account, Account::Eip155 { chain_id: 1, address: eth_address() });
    assert_eq!(v.unchecked, Vec::<Binding>::new());
    // v in {0, 1} is accepted as well as {27, 28}.
    let mut sig01 = sig.clone();
    sig01[64] -= 27;
    assert!(verify_eoa(&text, &sig01, &policy()).is_ok());
    assert_eq!(code(verify(&text, &sig, &policy())), "ok");
}

#[test]
fn a_tampered_signature_is_refused() {
    let text = eth_message(&eth_fields());
    let sig = personal_sign(&eth_key(), &text);
    let mut flipped = sig.clone();
    flipped[10] ^= 0x01;
    let err = verify_eoa(&text, &flipped, &policy()).unwrap_err();
    // Either no key recovers or some other key does; never the signer.
    assert!(matches!(err, VerifyError::SignatureMismatch { .. } | VerifyError::MalformedSignature(_)), "{err}");
    let mut bad_v = sig.clone();
    bad_v[64] = 29;
    assert_eq!(code(verify_eoa(&text, &bad_v, &policy())), "malformed_signature");
    assert_eq!(code(verify_eoa(&text, &sig[..64], &policy())), "malformed_signature");
    assert_eq!(code(verify_eoa(&text, &[], &policy())), "malformed_signature");
}

#[test]
fn a_tampered_message_or_another_signer_is_refused() {
    let text = eth_message(&eth_fields());
    let sig = personal_sign(&eth_key(), &text);
    let tampered = text.replace("Sign in to Example", "Sign in to Examp1e");
    match verify_eoa(&tampered, &sig, &policy()).unwrap_err() {
        VerifyError::SignatureMismatch { expected, recovered } => {
            assert_eq!(expected, eth_address().to_checksum(None));
            assert_ne!(recovered, Some(expected));
        }
        e => panic!("{e}"),
    }
    let other = k256::ecdsa::SigningKey::from_slice(&[0x43; 32]).unwrap();
    let other_sig = personal_sign(&other, &text);
    let err = verify_eoa(&text, &other_sig, &policy()).unwrap_err();
    assert_eq!(
        err,
        VerifyError::SignatureMismatch {
            expected: eth_address().to_checksum(None),
            recovered: Some(Address::from_private_key(&other).to_checksum(None)),
        }
    );
    assert_eq!(recover_eip191(text.as_bytes(), &other_sig).unwrap(), Address::from_private_key(&other));
}

#[test]
fn claims_are_refused_with_their_reason() {
    let signed = |f: &MessageFields| {
        let text = eth_message(f);
        let sig = personal_sign(&eth_key(), &text);
        (text, sig)
    };
    let check = |f: MessageFields, p: VerifyPolicy, want: &str| {
        let (text, sig) = signed(&f);
        assert_eq!(code(verify_eoa(&text, &sig, &p)), want, "{text}");
    };

    // Expired: at and after the expiration time.
    let mut p = policy();
    p.now = datetime!(2024-05-01 12:10:00 UTC);
    check(eth_fields(), p.clone(), "expired");
    p.now = datetime!(2024-05-01 12:09:59.999 UTC);
    check(eth_fields(), p, "ok");

    // Not yet valid: before not-before; valid from it on.
    let mut f = eth_fields();
    f.not_before = Some("2024-05-01T12:05:00Z".into());
    check(f.clone(), policy(), "not_yet_valid");
    let mut p = policy();
    p.now = datetime!(2024-05-01 12:05:00 UTC);
    check(f, p, "ok");

    // Issued in the future beyond the skew (60 s by default), and within it.
    let mut f = eth_fields();
    f.issued_at = Some("2024-05-01T12:01:01Z".into());
    check(f.clone(), policy(), "issued_in_future");
    f.issued_at = Some("2024-05-01T12:01:00Z".into());
    check(f, policy(), "ok");

    // Too old, when a max age is set.
    let mut p = policy();
    p.max_age = Some(Duration::seconds(30));
    check(eth_fields(), p, "too_old");

    // Wrong domain, scheme, URI origin, nonce, chain.
    let mut f = eth_fields();
    f.domain = Some("evil.example".into());
    check(f, policy(), "domain_mismatch");
    let mut f = eth_fields();
    f.domain = Some("app.example:8443".into());
    check(f, policy(), "domain_mismatch");
    let mut f = eth_fields();
    f.scheme = Some("http".into());
    check(f, policy(), "scheme_mismatch");
    let mut f = eth_fields();
    f.scheme = Some("https".into());
    check(f, policy(), "ok");
    let mut f = eth_fields();
    f.uri = Some("https://evil.example/login".into());
    check(f, policy(), "uri_mismatch");
    let mut f = eth_fields();
    f.uri = Some("http://app.example/login".into());
    check(f, policy(), "uri_mismatch");
    let mut f = eth_fields();
    f.nonce = Some("k3Jd8QpZr2XvT9mW4bNc7Lh0".into());
    check(f, policy(), "nonce_mismatch");
    let mut f = eth_fields();
    f.chain_id = Some("137".into());
    check(f, policy(), "chain_not_allowed");

    // Host comparison ignores case, as RFC 3986 says hosts do.
    let mut f = eth_fields();
    f.domain = Some("App.Example".into());
    f.uri = Some("HTTPS://APP.example/login".into());
    check(f, policy(), "ok");
}

#[test]
fn unchecked_bindings_are_reported() {
    let text = eth_message(&eth_fields());
    let sig = personal_sign(&eth_key(), &text);
    let v = verify_eoa(&text, &sig, &VerifyPolicy::new(NOW)).unwrap();
    assert_eq!(v.unchecked, vec![Binding::Domain, Binding::Scheme, Binding::UriOrigin, Binding::Nonce, Binding::Chain]);
}

#[test]
fn for_origin_refuses_what_is_not_an_origin() {
    assert!(VerifyPolicy::for_origin("app.example", NONCE, NOW).is_none());
    assert!(VerifyPolicy::for_origin("https://", NONCE, NOW).is_none());
    let p = VerifyPolicy::for_origin("http://localhost:8080", NONCE, NOW).unwrap();
    assert_eq!(p.expected_domain.as_deref(), Some("localhost:8080"));
    assert_eq!(p.expected_scheme.as_deref(), Some("http"));
    assert_eq!(p.expected_uri_origin.as_deref(), Some("http://localhost:8080"));
}

// ---- Solana ----

fn sol_key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[9; 32])
}

fn sol_message(statement: Option<&str>) -> String {
    let f = MessageFields {
        domain: Some("app.example".into()),
        address: Some(SolanaAddress(sol_key().verifying_key().to_bytes()).to_string()),
        statement: statement.map(Into::into),
        uri: Some("https://app.example/login".into()),
        version: Some("1".into()),
        chain_id: Some("mainnet".into()),
        nonce: Some(NONCE.into()),
        issued_at: Some("2024-05-01T11:59:00Z".into()),
        ..Default::default()
    };
    SiwxMessage::from_fields(Namespace::Solana, &f).unwrap().to_message()
}

#[test]
fn a_valid_solana_signature_verifies() {
    for statement in [None, Some("Sign in to Example")] {
        let text = sol_message(statement);
        let sig = sol_key().sign(text.as_bytes()).to_bytes();
        let v = verify_solana(&text, &sig, &policy()).unwrap();
        assert_eq!(v.method, SignatureMethod::Ed25519);
        assert_eq!(v.message.account.caip2(), "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp");
        assert_eq!(code(verify(&text, &sig, &policy())), "ok");
        // Base58 and hex spellings of the signature decode to the same bytes.
        let b58 = bs58::encode(sig).into_string();
        assert_eq!(decode_signature(&b58, Namespace::Solana).unwrap(), sig.to_vec());
        assert_eq!(decode_signature(&hex::encode(sig), Namespace::Solana).unwrap(), sig.to_vec());
        assert_eq!(decode_signature(&format!("0x{}", hex::encode(sig)), Namespace::Solana).unwrap(), sig.to_vec());
    }
}

#[test]
fn solana_tampering_and_wrong_keys_are_refused() {
    let text = sol_message(Some("Sign in to Example"));
    let sig = sol_key().sign(text.as_bytes()).to_bytes();
    let mut flipped = sig;
    flipped[0] ^= 1;
    assert_eq!(code(verify_solana(&text, &flipped, &policy())), "signature_mismatch");
    let tampered = text.replace("Sign in to Example", "Sign in to Examp1e");
    assert_eq!(code(verify_solana(&tampered, &sig, &policy())), "signature_mismatch");
    let other = ed25519_dalek::SigningKey::from_bytes(&[10; 32]).sign(text.as_bytes()).to_bytes();
    assert_eq!(code(verify_solana(&text, &other, &policy())), "signature_mismatch");
    assert_eq!(code(verify_solana(&text, &sig[..63], &policy())), "malformed_signature");
    let mut p = policy();
    p.expected_nonce = Some("someOtherNonce123".into());
    assert_eq!(code(verify_solana(&text, &sig, &p)), "nonce_mismatch");
    let mut p = policy();
    p.expected_domain = Some("evil.example".into());
    assert_eq!(code(verify_solana(&text, &sig, &p)), "domain_mismatch");
}

#[test]
fn verifiers_refuse_the_other_namespace() {
    let sol = sol_message(None);
    let sig = sol_key().sign(sol.as_bytes()).to_bytes();
    assert_eq!(code(verify_eoa(&sol, &sig, &policy())), "wrong_namespace");
    let eth = eth_message(&eth_fields());
    let esig = personal_sign(&eth_key(), &eth);
    assert_eq!(code(verify_solana(&eth, &esig, &policy())), "wrong_namespace");
    assert_eq!(code(verify_eoa("not a message", &esig, &policy())), "malformed_message");
}

#[test]
fn nonces_are_fresh_and_usable() {
    use rand::SeedableRng;
    let mut seeded = rand::rngs::StdRng::seed_from_u64(7);
    let a = generate_nonce_with(&mut seeded);
    let b = generate_nonce_with(&mut seeded);
    assert_ne!(a, b);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..1000 {
        let n = generate_nonce();
        assert_eq!(n.as_str().len(), 24);
        assert!(seen.insert(n));
    }
    let mut f = eth_fields();
    f.nonce = Some(seen.iter().next().unwrap().to_string());
    assert!(SiwxMessage::from_fields(Namespace::Eip155, &f).is_ok());
}
