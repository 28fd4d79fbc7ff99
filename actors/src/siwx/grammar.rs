//! Character classes and component grammars shared by the EIP-4361 and SIWS messages.
//!
//! The rules here are the ABNF of EIP-4361 (itself built on RFC 3986 and RFC 3339). URIs and
//! authorities are validated by `iri-string` against RFC 3986 (its `UriSpec`, so no IRI extensions:
//! non-ASCII characters are refused); timestamps by a strict RFC 3339 reader below, with calendar
//! validation delegated to the `time` crate.

use iri_string::spec::UriSpec;
use iri_string::types::UriStr;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// RFC 3986 `unreserved`.
pub(crate) fn is_unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 `sub-delims`.
pub(crate) fn is_sub_delim(c: u8) -> bool {
    matches!(c, b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=')
}

/// RFC 3986 `gen-delims`.
pub(crate) fn is_gen_delim(c: u8) -> bool {
    matches!(c, b':' | b'/' | b'?' | b'#' | b'[' | b']' | b'@')
}

/// EIP-4361 `statement = 1*( reserved / unreserved / " " )`.
pub(crate) fn is_statement_char(c: u8) -> bool {
    is_unreserved(c) || is_gen_delim(c) || is_sub_delim(c) || c == b' '
}

/// RFC 3986 `*pchar` (EIP-4361 `request-id`): `unreserved / pct-encoded / sub-delims / ":" / "@"`.
pub(crate) fn is_pchars(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%' {
            if i + 2 >= b.len() || !(b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit()) {
                return false;
            }
            i += 3;
            continue;
        }
        if !(is_unreserved(c) || is_sub_delim(c) || c == b':' || c == b'@') {
            return false;
        }
        i += 1;
    }
    true
}

/// RFC 3986 `scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
pub(crate) fn is_scheme(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && b[0].is_ascii_alphabetic() && b[1..].iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
}

/// The parts of an RFC 3986 `authority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthorityParts<'a> {
    /// `userinfo`, without the `@`.
    pub userinfo: Option<&'a str>,
    /// `host` (an IP literal keeps its brackets).
    pub host: &'a str,
    /// `port`, without the `:` (may be empty: RFC 3986 allows `host:`).
    pub port: Option<&'a str>,
}

/// Validates an RFC 3986 `authority` with a non-empty host and splits it.
pub(crate) fn authority_parts(s: &str) -> Option<AuthorityParts<'_>> {
    iri_string::validate::authority::<UriSpec>(s).ok()?;
    // A valid authority holds no '/', '?' or '#', and '@' only as the userinfo separator.
    let (userinfo, host_port) = match s.split_once('@') {
        Some((u, rest)) => (Some(u), rest),
        None => (None, s),
    };
    let (host, port) = if host_port.starts_with('[') {
        let close = host_port.find(']')?;
        let (host, rest) = host_port.split_at(close + 1);
        match rest.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if rest.is_empty() => (host, None),
            None => return None,
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    Some(AuthorityParts { userinfo, host, port })
}

/// Validates an RFC 3986 `URI` (`scheme ":" hier-part [ "?" query ] [ "#" fragment ]`): an absolute
/// URI, fragment allowed, relative references refused.
pub(crate) fn is_uri(s: &str) -> bool {
    UriStr::new(s).is_ok()
}

/// The origin of an RFC 3986 URI: its scheme (lowercased), host (lowercased) and port, as
/// `scheme://host[:port]`. `None` for a URI without an authority (`urn:`, `did:` ...).
pub(crate) fn uri_origin(s: &str) -> Option<String> {
    let uri = UriStr::new(s).ok()?;
    let auth = uri.authority_components()?;
    let mut origin = uri.scheme_str().to_ascii_lowercase();
    origin.push_str("://");
    origin.push_str(&auth.host().to_ascii_lowercase());
    if let Some(port) = auth.port() {
        origin.push(':');
        origin.push_str(port);
    }
    Some(origin)
}

/// Parses a strict RFC 3339 `date-time`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)` with an
/// upper-case `T` and `Z`, at least one fraction digit after a `.`, and a calendar-valid date and
/// time (2022-02-31 is refused; a leap second is accepted only where `time` can place it).
pub(crate) fn parse_rfc3339(s: &str) -> Option<OffsetDateTime> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r.clone()).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    // full-date "T" partial-time up to the seconds: 19 bytes.
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || b[10] != b'T'
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return None;
    }
    let mut i = 19;
    if b[i] == b'.' {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    let offset = &b[i..];
    let offset_ok = offset == b"Z"
        || (offset.len() == 6
            && matches!(offset[0], b'+' | b'-')
            && offset[1..3].iter().all(u8::is_ascii_digit)
            && offset[3] == b':'
            && offset[4..6].iter().all(u8::is_ascii_digit));
    if !offset_ok {
        return None;
    }
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_is_strict_and_calendar_aware() {
        for ok in [
            "2021-09-30T16:25:24Z",
            "2021-09-30T16:25:24.000Z",
            "2021-09-30T16:25:24-02:00",
            "2024-02-29T00:00:00+14:00",
            "2016-12-31T23:59:60Z",
            "0001-01-01T00:00:00.123456789Z",
        ] {
            assert!(parse_rfc3339(ok).is_some(), "{ok}");
        }
        for bad in [
            "2022-02-31T17:09:38.578Z",
            "2023-02-29T00:00:00Z",
            "2021-09-30t16:25:24Z",
            "2021-09-30T16:25:24z",
            "2021-09-30 16:25:24Z",
            "2021-09-30T16:25:24",
            "2021-09-30T16:25:24.Z",
            "2021-09-30T24:00:00Z",
            "2021-09-30T16:25:24+0200",
            "2021-9-30T16:25:24Z",
            "2021-09-30T16:25:24Z ",
            "2021-09-30T16:60:00Z",
            "2021-09-30T16:25:24+24:00",
            "Wed Oct 05 2011 16:48:00 GMT+0200 (CEST)",
            "",
        ] {
            assert!(parse_rfc3339(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn authority_splits() {
        let p = authority_parts("test@127.0.0.1:8080").unwrap();
        assert_eq!((p.userinfo, p.host, p.port), (Some("test"), "127.0.0.1", Some("8080")));
        let p = authority_parts("[::cafe]").unwrap();
        assert_eq!((p.userinfo, p.host, p.port), (None, "[::cafe]", None));
        let p = authority_parts("[::1]:443").unwrap();
        assert_eq!((p.host, p.port), ("[::1]", Some("443")));
        for bad in ["", "#notrfc4501", "a b", "example.com/path", "@", ":80", "ex ample.com", "é.com"] {
            assert!(authority_parts(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn pchars() {
        assert!(is_pchars(""));
        assert!(is_pchars("some_id:@!$&'()*+,;=%41"));
        for bad in ["%", "%4", "%4G", "a b", "a/b", "a?b", "a#b"] {
            assert!(!is_pchars(bad), "{bad}");
        }
    }

    #[test]
    fn uris_and_origins() {
        assert!(is_uri("https://service.org/login"));
        assert!(is_uri("ipfs://Qme7ss3ARVgxv6rXqVPiikMJ8u2NLgmgszg13pYrDKEoiu"));
        assert!(is_uri("urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"));
        assert!(!is_uri(":not_a_rfc3986_valid_uri_"));
        assert!(!is_uri("/relative/path"));
        assert!(!is_uri("https://service.org/login - https://service.org/login/2"));
        assert_eq!(uri_origin("HTTPS://Example.COM:8443/a?b#c").as_deref(), Some("https://example.com:8443"));
        assert_eq!(uri_origin("https://u@[::1]/").as_deref(), Some("https://[::1]"));
        assert_eq!(uri_origin("did:key:z6Mk"), None);
    }
}
