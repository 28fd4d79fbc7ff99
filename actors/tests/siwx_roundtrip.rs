//! Property: every message the project builds parses back to the same fields, for random valid
//! fields, in both namespaces (EIP-4361 and Sign-In With Solana).

use alloy_primitives::Address;
use proptest::prelude::*;
use vestibule_actors::siwx::{FieldError, MessageFields, Namespace, ParseErrorKind, SiwxMessage, SolanaAddress};

const PCHAR: &str = "([a-zA-Z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";

fn pchars(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("{PCHAR}{{0,{max}}}")).unwrap()
}

fn scheme() -> impl Strategy<Value = String> {
    "[a-zA-Z][a-zA-Z0-9+.-]{0,8}"
}

fn host() -> impl Strategy<Value = String> {
    prop_oneof![
        // reg-name: unreserved / pct-encoded / sub-delims, non-empty.
        "([a-zA-Z0-9._~!$&'()*+,;=-]|%[0-9A-F]{2}){1,20}",
        "[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?){0,3}",
        any::<[u8; 4]>().prop_map(|b| std::net::Ipv4Addr::from(b).to_string()),
        any::<[u16; 8]>().prop_map(|b| format!("[{}]", std::net::Ipv6Addr::from(b))),
    ]
}

fn authority() -> impl Strategy<Value = String> {
    (
        proptest::option::of("([a-zA-Z0-9._~!$&'()*+,;=:-]|%[0-9A-F]{2}){0,10}"),
        host(),
        proptest::option::of(prop_oneof![Just(String::new()), any::<u16>().prop_map(|p| p.to_string())]),
    )
        .prop_map(|(userinfo, host, port)| {
            let mut s = String::new();
            if let Some(u) = userinfo {
                s.push_str(&u);
                s.push('@');
            }
            s.push_str(&host);
            if let Some(p) = port {
                s.push(':');
                s.push_str(&p);
            }
            s
        })
}

fn uri() -> impl Strategy<Value = String> {
    let hierarchical = (
        scheme(),
        authority(),
        proptest::collection::vec(pchars(8), 0..4),
        proptest::option::of(pchars(12)),
        proptest::option::of(pchars(12)),
    )
        .prop_map(|(scheme, authority, segments, query, fragment)| {
            let mut s = format!("{scheme}://{authority}");
            for seg in segments {
                s.push('/');
                s.push_str(&seg);
            }
            if let Some(q) = query {
                s.push('?');
                s.push_str(&q);
            }
            if let Some(f) = fragment {
                s.push('#');
                s.push_str(&f);
            }
            s
        });
    // No authority: `urn:...`, `did:...` style (path-rootless).
    let opaque = (scheme(), "([a-zA-Z0-9._~!$&'()*+,;=@-]|%[0-9A-F]{2})", pchars(20))
        .prop_map(|(scheme, first, rest)| format!("{scheme}:{first}{rest}"));
    prop_oneof![3 => hierarchical, 1 => opaque]
}

fn timestamp() -> impl Strategy<Value = String> {
    (
        0u16..=9998,
        1u8..=12,
        1u8..=31,
        0u8..24,
        0u8..60,
        0u8..60,
        proptest::option::of("[0-9]{1,12}"),
        prop_oneof![Just(None), (any::<bool>(), 0u8..24, 0u8..60).prop_map(Some)],
    )
        .prop_map(|(year, month, day, h, mi, s, frac, offset)| {
            let month_t = time::Month::try_from(month).unwrap();
            let day = day.min(month_t.length(i32::from(year)));
            let mut t = format!("{year:04}-{month:02}-{day:02}T{h:02}:{mi:02}:{s:02}");
            if let Some(f) = frac {
                t.push('.');
                t.push_str(&f);
            }
            match offset {
                None => t.push('Z'),
                Some((neg, oh, om)) => t.push_str(&format!("{}{oh:02}:{om:02}", if neg { '-' } else { '+' })),
            }
            t
        })
}

fn common_fields() -> impl Strategy<Value = MessageFields> {
    (
        (
            proptest::option::of(scheme()),
            authority(),
            proptest::option::of("[a-zA-Z0-9 :/?#\\[\\]@!$&'()*+,;=._~-]{1,60}"),
            uri(),
            "[a-zA-Z0-9]{8,40}",
        ),
        (
            timestamp(),
            proptest::option::of(timestamp()),
            proptest::option::of(timestamp()),
            proptest::option::of(pchars(16)),
            proptest::option::of(proptest::collection::vec(uri(), 0..4)),
        ),
    )
        .prop_map(|((scheme, domain, statement, uri, nonce), (issued_at, expiration_time, not_before, request_id, resources))| {
            MessageFields {
                scheme,
                domain: Some(domain),
                address: None,
                statement,
                uri: Some(uri),
                version: Some("1".into()),
                chain_id: None,
                nonce: Some(nonce),
                issued_at: Some(issued_at),
                expiration_time,
                not_before,
                request_id,
                resources,
            }
        })
}

fn eip155_fields() -> impl Strategy<Value = MessageFields> {
    (common_fields(), any::<[u8; 20]>(), any::<u64>()).prop_map(|(mut f, addr, chain)| {
        f.address = Some(Address::from(addr).to_checksum(None));
        f.chain_id = Some(chain.to_string());
        f
    })
}

fn solana_fields() -> impl Strategy<Value = MessageFields> {
    let chains =
        prop::sample::select(vec!["mainnet", "testnet", "devnet", "localnet", "solana:mainnet", "solana:testnet", "solana:devnet"]);
    (common_fields(), any::<[u8; 32]>(), chains.prop_map(String::from)).prop_map(|(mut f, key, chain)| {
        f.address = Some(SolanaAddress(key).to_string());
        f.chain_id = Some(chain);
        f
    })
}

fn round_trip(ns: Namespace, fields: &MessageFields) -> Result<(), TestCaseError> {
    let built = SiwxMessage::from_fields(ns, fields).map_err(|e| TestCaseError::fail(format!("build: {e}")))?;
    let text = built.to_message();
    let parsed = SiwxMessage::parse(&text).map_err(|e| TestCaseError::fail(format!("parse: {e}\n{text}")))?;
    prop_assert_eq!(parsed.namespace(), ns);
    prop_assert_eq!(&parsed.to_fields(), fields, "fields differ for\n{}", text);
    prop_assert_eq!(&parsed, &built);
    prop_assert_eq!(parsed.to_message(), text);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn eip4361_build_parses_to_fields(fields in eip155_fields()) {
        round_trip(Namespace::Eip155, &fields)?;
    }

    #[test]
    fn siws_build_parses_to_fields(fields in solana_fields()) {
        round_trip(Namespace::Solana, &fields)?;
    }

    /// The address-case policy holds for every message: a lower-cased address parses only when
    /// it has no letters (then it *is* its EIP-55 form).
    #[test]
    fn lowercased_address_is_refused_unless_it_is_the_checksum(fields in eip155_fields()) {
        let text = SiwxMessage::from_fields(Namespace::Eip155, &fields).unwrap().to_message();
        let address = fields.address.clone().unwrap();
        let lower = address.to_lowercase();
        let mut lines: Vec<&str> = text.split('\n').collect();
        lines[1] = &lower;
        let result = SiwxMessage::parse(&lines.join("\n"));
        if lower == address {
            prop_assert!(result.is_ok());
        } else {
            let err = result.unwrap_err();
            prop_assert_eq!(err.line, 2);
            prop_assert_eq!(err.kind, ParseErrorKind::Field(FieldError::AddressNotChecksummed { expected: address }));
        }
    }

    /// A CR anywhere makes the message invalid.
    #[test]
    fn a_carriage_return_anywhere_is_refused(fields in eip155_fields(), at in any::<prop::sample::Index>()) {
        let text = SiwxMessage::from_fields(Namespace::Eip155, &fields).unwrap().to_message();
        let mut pos = at.index(text.len() + 1);
        while !text.is_char_boundary(pos) { pos -= 1; }
        let mut bad = text.clone();
        bad.insert(pos, '\r');
        prop_assert!(SiwxMessage::parse(&bad).is_err());
    }
}
