//! Whose request is it: the client's address behind the reverse proxies the operator trusts.
//!
//! Every per-client bound of the gateway (WebSockets and new sessions per address, the host reads'
//! and receipt waits' shares, the embedded wallet's mail budget) counts a client address. Behind a
//! TLS terminator or load balancer every socket's peer is the proxy, so without this every visitor
//! would share one address's bounds. The proxies listed in `trusted_proxies` are believed about the
//! address they forward in `X-Forwarded-For`, or in RFC 7239's `Forwarded` when the operator says
//! they write that one (`forwarded_header`); nobody else is (a client can write either header too).
//!
//! Pure: [`TrustedProxies::client_of`] takes the peer, the headers and which header to read.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use actix_http::header::HeaderMap;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// The header a proxy appends its peer to (the de facto standard; nginx's `$proxy_add_x_forwarded_for`,
/// HAProxy's `option forwardfor`, every cloud load balancer).
pub const FORWARDED_FOR: &str = "x-forwarded-for";
/// RFC 7239's header: elements `for=...;proto=...`, one appended by each proxy.
pub const FORWARDED: &str = "forwarded";

/// Which header the trusted proxies append the client's address to (`forwarded_header` in the
/// configuration). Exactly one is read: a proxy that writes one passes the other through as the
/// client sent it, so reading both would let a client choose the address it is counted under.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ForwardedHeader {
    #[default]
    #[serde(rename = "x-forwarded-for")]
    XForwardedFor,
    /// RFC 7239 `Forwarded` (`for=192.0.2.60`, `for="[2001:db8::1]:4711"`).
    #[serde(rename = "forwarded")]
    Forwarded,
}

/// The address ranges of the reverse proxies whose `X-Forwarded-For` is believed (`trusted_proxies`
/// in the configuration: addresses or CIDR ranges). None by default: each socket's peer is the client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct TrustedProxies(Vec<IpNet>);

/// A `trusted_proxies` entry that is neither an address nor a CIDR range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotARange(pub String);

impl fmt::Display for NotARange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not an IP address or a CIDR range (e.g. \"10.0.0.0/8\", \"::1\")", self.0)
    }
}

impl TryFrom<Vec<String>> for TrustedProxies {
    type Error = NotARange;

    fn try_from(entries: Vec<String>) -> Result<Self, NotARange> {
        entries
            .into_iter()
            .map(|entry| {
                let text = entry.trim();
                let range =
                    IpNet::from_str(text).or_else(|_| IpAddr::from_str(text).map(IpNet::from)).map_err(|_| NotARange(entry.clone()))?;
                Ok(canonical_range(range))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(TrustedProxies)
    }
}

/// An IPv4-mapped IPv6 range (`::ffff:10.0.0.0/104`) as the IPv4 range it maps: peers are compared
/// as IPv4 addresses ([`TrustedProxies::trusts`]), so the mapped form would match none.
fn canonical_range(range: IpNet) -> IpNet {
    match range {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.network().to_ipv4_mapped() {
            Some(v4) => ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96).map_or(range, IpNet::V4),
            None => range,
        },
        _ => range,
    }
}

impl From<TrustedProxies> for Vec<String> {
    fn from(proxies: TrustedProxies) -> Self {
        proxies.0.iter().map(ToString::to_string).collect()
    }
}

impl TrustedProxies {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is one of the trusted proxies (an IPv4-mapped IPv6 address as its IPv4 one).
    pub fn trusts(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|range| range.contains(&ip))
    }

    /// The client's address of a request whose socket's peer is `peer`. From a trusted proxy, the
    /// rightmost address of `header` (all its lines, in order) that is not itself a trusted
    /// proxy: each proxy appends the peer it saw, so entries left of the first untrusted one are
    /// the client's own word. All of them trusted: the leftmost. No header, or a rightmost entry
    /// that is not an address (a proxy not set up to append; `for=unknown`, an obfuscated name):
    /// the proxy itself. From anyone else: `peer`, whatever the headers say.
    pub fn client_of(&self, peer: IpAddr, headers: &HeaderMap, header: ForwardedHeader) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let hops = match header {
            ForwardedHeader::XForwardedFor => x_forwarded_for_hops(headers),
            ForwardedHeader::Forwarded => forwarded_hops(headers),
        };
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Some(hop) = *hop else { break };
            client = hop;
            if !self.trusts(hop) {
                break;
            }
        }
        client
    }
}

/// `X-Forwarded-For`'s entries, in order (`None`: one that is not an address).
fn x_forwarded_for_hops(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    // Split as bytes: a proxy may join the client's own header, which can hold anything, and its
    // appended entry into one line; a line that is not text must not hide that entry.
    headers
        .get_all(FORWARDED_FOR)
        .flat_map(|value| value.as_bytes().split(|byte| *byte == b','))
        .map(|entry| std::str::from_utf8(entry).ok().map(str::trim).and_then(parse_hop))
        .collect()
}

/// `Forwarded`'s elements, in order, each as its `for` node's address (`None`: an element with no
/// `for`, or one that is not an address). Commas and semicolons inside quoted strings do not
/// split; as for `X-Forwarded-For`, bytes that are not text spoil only their own element.
fn forwarded_hops(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let mut hops = Vec::new();
    for line in headers.get_all(FORWARDED) {
        for element in split_unquoted(line.as_bytes(), b',') {
            let node = split_unquoted(element, b';').into_iter().find_map(|pair| {
                let text = std::str::from_utf8(pair).ok()?.trim();
                let (name, value) = text.split_once('=')?;
                name.trim().eq_ignore_ascii_case("for").then(|| value.trim().trim_matches('"').to_owned())
            });
            hops.push(node.as_deref().and_then(parse_hop));
        }
    }
    hops
}

/// `bytes` split at each `separator` outside a quoted string (RFC 7230 quoted-string, `\` escapes).
fn split_unquoted(bytes: &[u8], separator: u8) -> Vec<&[u8]> {
    let (mut parts, mut start, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
    for (at, &byte) in bytes.iter().enumerate() {
        match byte {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            _ if byte == separator && !quoted => {
                parts.push(&bytes[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&bytes[start..]);
    parts
}

/// Puts the request's client address in its extensions as [`vestibule_embedded::routes::ClientAddress`],
/// for the secure frame's routes (its mail budget is per client address).
pub async fn mark_client_address(
    req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody>,
) -> Result<actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>, actix_web::Error> {
    use actix_web::HttpMessage as _;
    if let (Some(state), Some(peer)) = (req.app_data::<actix_web::web::Data<crate::state::AppState>>(), req.peer_addr()) {
        let client = state.config.trusted_proxies.client_of(peer.ip(), req.headers(), state.config.forwarded_header);
        req.extensions_mut().insert(vestibule_embedded::routes::ClientAddress(client));
    }
    next.call(req).await
}

/// One `X-Forwarded-For` entry or `Forwarded` node: an address, or an address with a port
/// (`1.2.3.4:5678`, `[2001:db8::1]:5678`), or a bracketed IPv6 address alone (`[2001:db8::1]`).
fn parse_hop(entry: &str) -> Option<IpAddr> {
    let bracketed =
        || entry.strip_prefix('[')?.strip_suffix(']').and_then(|inner| std::net::Ipv6Addr::from_str(inner).ok()).map(IpAddr::V6);
    IpAddr::from_str(entry)
        .ok()
        .or_else(|| std::net::SocketAddr::from_str(entry).ok().map(|s| s.ip()))
        .or_else(bracketed)
        .map(|ip| ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use actix_http::header::{HeaderName, HeaderValue};

    use super::*;

    const XFF: ForwardedHeader = ForwardedHeader::XForwardedFor;
    const RFC7239: ForwardedHeader = ForwardedHeader::Forwarded;

    fn proxies(entries: &[&str]) -> TrustedProxies {
        TrustedProxies::try_from(entries.iter().map(ToString::to_string).collect::<Vec<_>>()).unwrap()
    }

    fn forwarded(lines: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(HeaderName::from_static(FORWARDED_FOR), HeaderValue::from_str(line).unwrap());
        }
        headers
    }

    fn rfc7239(lines: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(HeaderName::from_static(FORWARDED), HeaderValue::from_str(line).unwrap());
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn given_proxies_that_write_forwarded_the_rightmost_untrusted_for_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let proxy = ip("10.0.0.1");
        assert_eq!(trusted.client_of(proxy, &rfc7239(&["for=203.0.113.7"]), RFC7239), ip("203.0.113.7"));
        // Other parameters, any case, a port, quoted IPv6 (with and without a port).
        assert_eq!(trusted.client_of(proxy, &rfc7239(&["proto=https;For=203.0.113.7:4711;by=10.0.0.1"]), RFC7239), ip("203.0.113.7"));
        assert_eq!(trusted.client_of(proxy, &rfc7239(&["for=\"[2001:db8::1]:4711\""]), RFC7239), ip("2001:db8::1"));
        assert_eq!(trusted.client_of(proxy, &rfc7239(&["for=\"[2001:db8::1]\""]), RFC7239), ip("2001:db8::1"));
        // What the client wrote stays left of what the proxies appended, over elements and lines.
        assert_eq!(trusted.client_of(proxy, &rfc7239(&["for=6.6.6.6, for=203.0.113.7"]), RFC7239), ip("203.0.113.7"));
        assert_eq!(trusted.client_of(proxy, &rfc7239(&["for=6.6.6.6", "for=203.0.113.7, for=10.0.0.2"]), RFC7239), ip("203.0.113.7"));
        // A comma or semicolon inside the client's quoted string does not split what follows.
        assert_eq!(trusted.client_of(proxy, &rfc7239(&["for=\"x, for=6.6.6.6;\", for=203.0.113.7"]), RFC7239), ip("203.0.113.7"));
        // The proxy's own element names no address (unknown, obfuscated, no `for`): the proxy.
        for last in ["for=unknown", "for=_hidden", "proto=https"] {
            assert_eq!(trusted.client_of(proxy, &rfc7239(&[&format!("for=203.0.113.7, {last}")]), RFC7239), proxy, "{last}");
        }
    }

    #[test]
    fn only_the_header_the_proxies_write_is_read() {
        // A proxy passes the other header through as the client sent it: the client's own word.
        let trusted = proxies(&["10.0.0.0/8"]);
        let proxy = ip("10.0.0.1");
        let mut both = rfc7239(&["for=203.0.113.7"]);
        both.append(HeaderName::from_static(FORWARDED_FOR), HeaderValue::from_static("6.6.6.6"));
        assert_eq!(trusted.client_of(proxy, &both, RFC7239), ip("203.0.113.7"));
        assert_eq!(trusted.client_of(proxy, &both, XFF), ip("6.6.6.6"), "the probe: read as X-Forwarded-For it names the other");
        assert_eq!(trusted.client_of(proxy, &rfc7239(&["for=203.0.113.7"]), XFF), proxy, "Forwarded is not read for X-Forwarded-For");
        assert_eq!(trusted.client_of(proxy, &forwarded(&["203.0.113.7"]), RFC7239), proxy, "nor X-Forwarded-For for Forwarded");
    }

    #[test]
    fn the_header_is_named_as_the_configuration_writes_it() {
        let read = |text: &str| serde_json::from_str::<ForwardedHeader>(text);
        assert_eq!(read("\"forwarded\"").unwrap(), RFC7239);
        assert_eq!(read("\"x-forwarded-for\"").unwrap(), XFF);
        assert!(read("\"x-real-ip\"").is_err());
        assert_eq!(ForwardedHeader::default(), XFF);
    }

    #[test]
    fn given_no_trusted_proxies_the_peer_is_the_client_whatever_the_header_says() {
        let none = TrustedProxies::default();
        assert_eq!(none.client_of(ip("198.51.100.1"), &forwarded(&["203.0.113.7"]), XFF), ip("198.51.100.1"));
    }

    #[test]
    fn given_a_peer_that_is_not_a_trusted_proxy_its_header_is_ignored() {
        let trusted = proxies(&["10.0.0.0/8"]);
        assert_eq!(trusted.client_of(ip("198.51.100.1"), &forwarded(&["203.0.113.7"]), XFF), ip("198.51.100.1"));
    }

    #[test]
    fn given_a_trusted_proxy_the_rightmost_untrusted_entry_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8", "127.0.0.1"]);
        let proxy = ip("10.0.0.1");
        assert_eq!(trusted.client_of(proxy, &forwarded(&["203.0.113.7"]), XFF), ip("203.0.113.7"));
        // What the client wrote itself stays left of what the proxy appended.
        assert_eq!(trusted.client_of(proxy, &forwarded(&["6.6.6.6, 203.0.113.7"]), XFF), ip("203.0.113.7"));
        // Through two trusted proxies; and over several header lines, in order.
        assert_eq!(trusted.client_of(proxy, &forwarded(&["6.6.6.6, 203.0.113.7, 10.0.0.2"]), XFF), ip("203.0.113.7"));
        assert_eq!(trusted.client_of(proxy, &forwarded(&["6.6.6.6", "203.0.113.7", "10.0.0.2"]), XFF), ip("203.0.113.7"));
        // With ports, and IPv6.
        assert_eq!(trusted.client_of(proxy, &forwarded(&["203.0.113.7:4711"]), XFF), ip("203.0.113.7"));
        assert_eq!(trusted.client_of(proxy, &forwarded(&["[2001:db8::1]:4711"]), XFF), ip("2001:db8::1"));
        assert_eq!(trusted.client_of(ip("127.0.0.1"), &forwarded(&["2001:db8::1"]), XFF), ip("2001:db8::1"));
    }

    #[test]
    fn given_a_trusted_proxy_without_a_usable_header_the_proxy_or_the_last_good_hop_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let proxy = ip("10.0.0.1");
        assert_eq!(trusted.client_of(proxy, &HeaderMap::new(), XFF), proxy, "no header");
        assert_eq!(trusted.client_of(proxy, &forwarded(&["203.0.113.7, unknown"]), XFF), proxy, "the proxy's own entry is not an address");
        assert_eq!(trusted.client_of(proxy, &forwarded(&["garbage, 10.0.0.3"]), XFF), ip("10.0.0.3"), "left of it, the client's word");
        assert_eq!(trusted.client_of(proxy, &forwarded(&["10.0.0.3, 10.0.0.2"]), XFF), ip("10.0.0.3"), "all trusted: the leftmost");
    }

    #[test]
    fn an_ipv4_mapped_peer_is_its_ipv4_address_and_so_is_a_mapped_range() {
        let trusted = proxies(&["127.0.0.1"]);
        assert_eq!(trusted.client_of(ip("::ffff:127.0.0.1"), &forwarded(&["203.0.113.7"]), XFF), ip("203.0.113.7"));
        let mapped = proxies(&["::ffff:10.0.0.1", "::ffff:10.1.0.0/112"]);
        assert_eq!(Vec::<String>::from(mapped.clone()), ["10.0.0.1/32", "10.1.0.0/16"]);
        assert!(mapped.trusts(ip("10.0.0.1")) && mapped.trusts(ip("::ffff:10.1.2.3")));
    }

    #[test]
    fn a_client_line_that_is_not_text_does_not_hide_what_the_proxy_appended_to_it() {
        // nginx joins the client's own header and the peer it saw into one line.
        let trusted = proxies(&["10.0.0.0/8"]);
        let mut headers = HeaderMap::new();
        headers.append(HeaderName::from_static(FORWARDED_FOR), HeaderValue::from_bytes(b"\xff, 203.0.113.9").unwrap());
        assert_eq!(trusted.client_of(ip("10.0.0.1"), &headers, XFF), ip("203.0.113.9"));
        let mut headers = HeaderMap::new();
        headers.append(HeaderName::from_static(FORWARDED_FOR), HeaderValue::from_bytes(b"203.0.113.9, \xff").unwrap());
        assert_eq!(trusted.client_of(ip("10.0.0.1"), &headers, XFF), ip("10.0.0.1"), "the rightmost entry is not an address");
    }

    #[test]
    fn entries_are_addresses_or_ranges_and_anything_else_is_refused_by_name() {
        assert_eq!(Vec::<String>::from(proxies(&["10.0.0.0/8", "::1", " 127.0.0.1 "])), ["10.0.0.0/8", "::1/128", "127.0.0.1/32"]);
        let refused = TrustedProxies::try_from(vec!["10.0.0.0/33".to_string()]).unwrap_err();
        assert!(refused.to_string().contains("\"10.0.0.0/33\" is not an IP address or a CIDR range"), "{refused}");
    }
}
