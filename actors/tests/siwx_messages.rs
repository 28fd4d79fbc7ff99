//! Message grammar beyond the conformance vectors: the address-case policy
//! (docs/decisions/0200-siwx-address-case.md), line structure, labels, chain ids, and the
//! Sign-In With Solana format.

use vestibule_actors::siwx::{Account, FieldError, MessageFields, Namespace, ParseErrorKind, SiwxMessage, SolanaAddress, Timestamp};

const CHECKSUMMED: &str = "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2";

fn eth_message(address: &str) -> String {
    format!(
        "service.org wants you to sign in with your Ethereum account:\n{address}\n\n\nURI: https://service.org/login\n\
         Version: 1\nChain ID: 1\nNonce: 32891757\nIssued At: 2021-09-30T16:25:24.000Z"
    )
}

fn eth_fields(address: &str) -> MessageFields {
    MessageFields {
        domain: Some("service.org".into()),
        address: Some(address.into()),
        uri: Some("https://service.org/login".into()),
        version: Some("1".into()),
        chain_id: Some("1".into()),
        nonce: Some("32891757".into()),
        issued_at: Some("2021-09-30T16:25:24.000Z".into()),
        ..Default::default()
    }
}

// ---- address policy: only the EIP-55 form is accepted, in parsing and in building ----

#[test]
fn checksummed_address_is_accepted() {
    let m = SiwxMessage::parse(&eth_message(CHECKSUMMED)).unwrap();
    assert_eq!(m.account.address_text(), CHECKSUMMED);
    assert!(SiwxMessage::from_fields(Namespace::Eip155, &eth_fields(CHECKSUMMED)).is_ok());
}

#[test]
fn all_lowercase_address_is_an_error_naming_the_checksummed_form() {
    let lower = CHECKSUMMED.to_lowercase();
    let want = FieldError::AddressNotChecksummed { expected: CHECKSUMMED.to_owned() };
    let err = SiwxMessage::parse(&eth_message(&lower)).unwrap_err();
    assert_eq!((err.line, err.kind), (2, ParseErrorKind::Field(want.clone())));
    assert_eq!(SiwxMessage::from_fields(Namespace::Eip155, &eth_fields(&lower)).unwrap_err(), want);
}

#[test]
fn all_uppercase_and_wrongly_cased_addresses_are_errors() {
    let upper = format!("0x{}", CHECKSUMMED[2..].to_uppercase());
    let mut flipped = CHECKSUMMED.to_owned();
    flipped.replace_range(2..3, "c"); // 'C' -> 'c'
    for bad in [upper, flipped] {
        let err = SiwxMessage::parse(&eth_message(&bad)).unwrap_err();
        assert!(matches!(err.kind, ParseErrorKind::Field(FieldError::AddressNotChecksummed { .. })), "{bad}");
    }
    for bad in [
        "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc",
        "C02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
        "0XC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
    ] {
        let err = SiwxMessage::parse(&eth_message(bad)).unwrap_err();
        assert!(matches!(err.kind, ParseErrorKind::Field(FieldError::Invalid { field: "address", .. })), "{bad}");
    }
}

// ---- line structure ----

#[test]
fn exactly_three_line_feeds_without_a_statement() {
    let ok = eth_message(CHECKSUMMED);
    assert!(ok.contains(&format!("{CHECKSUMMED}\n\n\nURI: ")));
    assert!(SiwxMessage::parse(&ok).is_ok());
    let two = ok.replace(&format!("{CHECKSUMMED}\n\n\n"), &format!("{CHECKSUMMED}\n\n"));
    assert!(SiwxMessage::parse(&two).is_err());
    let four = ok.replace(&format!("{CHECKSUMMED}\n\n\n"), &format!("{CHECKSUMMED}\n\n\n\n"));
    assert!(SiwxMessage::parse(&four).is_err());
}

#[test]
fn crlf_and_trailing_line_feed_are_refused() {
    let ok = eth_message(CHECKSUMMED);
    let err = SiwxMessage::parse(&ok.replace('\n', "\r\n")).unwrap_err();
    assert_eq!((err.line, err.kind), (1, ParseErrorKind::CarriageReturn));
    let err = SiwxMessage::parse(&format!("{ok}\n")).unwrap_err();
    assert_eq!((err.line, err.kind), (10, ParseErrorKind::Unexpected));
}

#[test]
fn labels_are_case_sensitive() {
    let ok = eth_message(CHECKSUMMED);
    for (from, to) in [
        ("URI: ", "Uri: "),
        ("Version: ", "version: "),
        ("Chain ID: ", "Chain Id: "),
        ("Nonce: ", "nonce: "),
        ("Issued At: ", "Issued at: "),
        ("Ethereum account:", "ethereum account:"),
        ("URI: ", "URI:  "),
    ] {
        assert!(SiwxMessage::parse(&ok.replacen(from, to, 1)).is_err(), "{to}");
    }
}

#[test]
fn chain_id_is_decimal_only() {
    let ok = eth_message(CHECKSUMMED);
    for bad in ["eip155:1", "0x1", "01", "", " 1", "1 ", "18446744073709551616", "-1"] {
        let err = SiwxMessage::parse(&ok.replace("Chain ID: 1", &format!("Chain ID: {bad}"))).unwrap_err();
        assert!(matches!(err.kind, ParseErrorKind::Field(FieldError::Invalid { field: "chainId", .. })), "{bad:?}");
    }
    let max = SiwxMessage::parse(&ok.replace("Chain ID: 1", "Chain ID: 18446744073709551615")).unwrap();
    assert!(matches!(max.account, Account::Eip155 { chain_id: u64::MAX, .. }));
}

#[test]
fn optional_fields_keep_their_order_and_empty_resources_round_trip() {
    let base = eth_message(CHECKSUMMED);
    let full = format!("{base}\nExpiration Time: 2021-10-30T16:25:24Z\nNot Before: 2021-09-30T16:25:24+02:00\nRequest ID: \nResources:");
    let m = SiwxMessage::parse(&full).unwrap();
    assert_eq!(m.request_id.as_ref().map(|r| r.as_str()), Some(""));
    assert_eq!(m.resources, Some(vec![]));
    assert_eq!(m.to_message(), full);
    assert!(SiwxMessage::parse(&format!("{base}\nResources:\n- https://a.example\n-https://b.example")).is_err());
    assert!(SiwxMessage::parse(&format!("{base}\nResources:\n- https://a.example\n")).is_err());
}

#[test]
fn statement_charset_is_the_grammar_one() {
    let with = |s: &str| eth_message(CHECKSUMMED).replace(&format!("{CHECKSUMMED}\n\n\n"), &format!("{CHECKSUMMED}\n\n{s}\n\n"));
    assert!(SiwxMessage::parse(&with("I accept: https://x.example/tos?a=1&b=[2] (ok) ~!$'*+,;=@#")).is_ok());
    for bad in ["caf\u{e9}", "a\tb", "100%", "\"quoted\"", "<tag>", "back\\slash", "a^b", "`tick`", "{x}", "a|b"] {
        let err = SiwxMessage::parse(&with(bad)).unwrap_err();
        assert!(matches!(err.kind, ParseErrorKind::Field(FieldError::Invalid { field: "statement", .. })), "{bad:?}");
    }
}

#[test]
fn serde_uses_the_message_text() {
    let m = SiwxMessage::parse(&eth_message(CHECKSUMMED)).unwrap();
    let json = serde_json::to_string(&m).unwrap();
    assert_eq!(json, serde_json::to_string(&eth_message(CHECKSUMMED)).unwrap());
    assert_eq!(serde_json::from_str::<SiwxMessage>(&json).unwrap(), m);
    assert!(serde_json::from_str::<SiwxMessage>("\"not a message\"").is_err());
}

#[test]
fn timestamps_keep_their_spelling() {
    for t in ["2021-09-30T16:25:24Z", "2021-09-30T16:25:24.000Z", "2021-09-30T18:25:24+02:00"] {
        let ts = Timestamp::parse(t).unwrap();
        assert_eq!(ts.as_str(), t);
        assert_eq!(ts.at().unix_timestamp(), 1633019124);
    }
}

// ---- Sign-In With Solana ----

const SOL_KEY: [u8; 32] = [7; 32];

fn sol_address() -> String {
    SolanaAddress(SOL_KEY).to_string()
}

#[test]
fn siws_without_statement_has_one_empty_line() {
    let addr = sol_address();
    let text = format!(
        "example.com wants you to sign in with your Solana account:\n{addr}\n\nURI: https://example.com/login\n\
         Version: 1\nChain ID: mainnet\nNonce: abcdEFGH1234\nIssued At: 2024-01-02T03:04:05Z"
    );
    let m = SiwxMessage::parse(&text).unwrap();
    assert_eq!(m.namespace(), Namespace::Solana);
    assert_eq!(m.statement, None);
    // `mainnet` denotes Solana mainnet's CAIP-2 id, the genesis-hash reference (CAIP-30).
    assert_eq!(m.account.caip10(), format!("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:{addr}"));
    assert_eq!(m.to_message(), text);
    // The EIP-4361 spelling (two empty lines) is not SIWS.
    assert!(SiwxMessage::parse(&text.replace("\n\nURI: ", "\n\n\nURI: ")).is_err());
}

#[test]
fn siws_with_statement_and_all_fields_round_trips() {
    let addr = sol_address();
    let text = format!(
        "example.com:8443 wants you to sign in with your Solana account:\n{addr}\n\nSign in to Example\n\n\
         URI: https://example.com:8443/login\nVersion: 1\nChain ID: solana:devnet\n\
         Nonce: abcdEFGH1234\nIssued At: 2024-01-02T03:04:05.678Z\nExpiration Time: 2024-01-02T03:14:05Z\n\
         Not Before: 2024-01-02T03:04:05Z\nRequest ID: r-1\nResources:\n- https://example.com/tos"
    );
    let m = SiwxMessage::parse(&text).unwrap();
    assert_eq!(m.statement.as_ref().unwrap().as_str(), "Sign in to Example");
    assert_eq!(m.account.caip2(), "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1");
    assert_eq!(m.to_message(), text);
    let fields = m.to_fields();
    assert_eq!(fields.chain_id.as_deref(), Some("solana:devnet"), "kept as written");
    assert_eq!(SiwxMessage::from_fields(Namespace::Solana, &fields).unwrap(), m);
}

#[test]
fn solana_addresses_and_chains_are_checked() {
    let good = sol_address();
    let short = bs58::encode([7u8; 31]).into_string();
    let template = |addr: &str, chain: &str| {
        format!(
            "example.com wants you to sign in with your Solana account:\n{addr}\n\nURI: https://example.com\n\
             Version: 1\nChain ID: {chain}\nNonce: abcdEFGH1234\nIssued At: 2024-01-02T03:04:05Z"
        )
    };
    assert!(SiwxMessage::parse(&template(&good, "devnet")).is_ok());
    for bad in [short.as_str(), "0OIl", "", CHECKSUMMED, &format!("{good}1")] {
        assert!(SiwxMessage::parse(&template(bad, "mainnet")).is_err(), "{bad}");
    }
    // Phantom's grammar: mainnet, testnet, devnet, localnet, solana:mainnet, solana:testnet,
    // solana:devnet, and nothing else (not a genesis-hash reference, not solana:localnet).
    for ok in ["mainnet", "testnet", "localnet", "solana:mainnet", "solana:testnet", "solana:devnet"] {
        assert!(SiwxMessage::parse(&template(&good, ok)).is_ok(), "{ok:?}");
    }
    for bad in [
        "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
        "solana:localnet",
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
        "Mainnet",
        "main net",
        "",
        "a23456789012345678901234567890123",
    ] {
        assert!(SiwxMessage::parse(&template(&good, bad)).is_err(), "{bad:?}");
    }
    // An Ethereum address in a Solana message and the reverse.
    let eth_header_sol_addr = eth_message(CHECKSUMMED).replace(CHECKSUMMED, &good);
    assert!(SiwxMessage::parse(&eth_header_sol_addr).is_err());
}

#[test]
fn header_is_exact() {
    let ok = eth_message(CHECKSUMMED);
    for bad in [
        ok.replacen("service.org wants", "service.org  wants", 1),
        ok.replacen("service.org wants", " service.org wants", 1),
        ok.replacen("Ethereum account:", "Bitcoin account:", 1),
        ok.replacen("account:", "account", 1),
        ok.replacen("service.org", "://service.org", 1),
        ok.replacen("service.org", "1https://service.org", 1),
    ] {
        assert!(SiwxMessage::parse(&bad).is_err(), "{bad}");
    }
    let with_scheme = SiwxMessage::parse(&ok.replacen("service.org", "https://service.org", 1)).unwrap();
    assert_eq!(with_scheme.scheme.as_ref().unwrap().as_str(), "https");
    assert_eq!(with_scheme.domain.as_str(), "service.org");
}
