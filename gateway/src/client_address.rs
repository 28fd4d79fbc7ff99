//! Whose request is it: the client's address behind the reverse proxies the operator trusts.
//!
//! Every per-client bound of the gateway (WebSockets and new sessions per address, the host reads'
//! and receipt waits' shares, the embedded wallet's mail budget) counts a client address. Behind a
//! TLS terminator or load balancer every socket's peer is the proxy, so without this every visitor
//! would share one address's bounds. The proxies listed in `trusted_proxies` are believed about the
//! address they forward in `X-Forwarded-For`; nobody else is (a client can write the header too).
//!
//! Pure: [`TrustedProxies::client_of`] takes the peer and the headers.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use actix_http::header::HeaderMap;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// The header a proxy appends its peer to (the de facto standard; nginx's `$proxy_add_x_forwarded_for`,
/// HAProxy's `option forwardfor`, every cloud load balancer).
pub const FORWARDED_FOR: &str = "x-forwarded-for";

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
    /// rightmost address of `X-Forwarded-For` (all its lines, in order) that is not itself a
    /// trusted proxy: each proxy appends the peer it saw, so entries left of the first untrusted
    /// one are the client's own word. All of them trusted: the leftmost. No header, or a
    /// rightmost entry that is not an address (a proxy not set up to append): the proxy itself.
    /// From anyone else: `peer`, whatever the header says.
    pub fn client_of(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        // Split as bytes: a proxy may join the client's own header, which can hold anything, and
        // its appended entry into one line; a line that is not text must not hide that entry.
        let entries: Vec<&[u8]> = headers.get_all(FORWARDED_FOR).flat_map(|value| value.as_bytes().split(|byte| *byte == b',')).collect();
        let mut client = peer;
        for entry in entries.iter().rev() {
            let Some(hop) = std::str::from_utf8(entry).ok().map(str::trim).and_then(parse_hop) else { break };
            client = hop;
            if !self.trusts(hop) {
                break;
            }
        }
        client
    }
}

/// Puts the request's client address in its extensions as [`vestibule_embedded::routes::ClientAddress`],
/// for the secure frame's routes (its mail budget is per client address).
pub async fn mark_client_address(
    req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody>,
) -> Result<actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>, actix_web::Error> {
    use actix_web::HttpMessage as _;
    if let (Some(state), Some(peer)) = (req.app_data::<actix_web::web::Data<crate::state::AppState>>(), req.peer_addr()) {
        let client = state.config.trusted_proxies.client_of(peer.ip(), req.headers());
        req.extensions_mut().insert(vestibule_embedded::routes::ClientAddress(client));
    }
    next.call(req).await
}

/// One `X-Forwarded-For` entry: an address, or an address with a port (`1.2.3.4:5678`,
/// `[2001:db8::1]:5678`).
fn parse_hop(entry: &str) -> Option<IpAddr> {
    IpAddr::from_str(entry).or_else(|_| std::net::SocketAddr::from_str(entry).map(|s| s.ip())).ok().map(|ip| ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use actix_http::header::{HeaderName, HeaderValue};

    use super::*;

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

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn given_no_trusted_proxies_the_peer_is_the_client_whatever_the_header_says() {
        let none = TrustedProxies::default();
        assert_eq!(none.client_of(ip("198.51.100.1"), &forwarded(&["203.0.113.7"])), ip("198.51.100.1"));
    }

    #[test]
    fn given_a_peer_that_is_not_a_trusted_proxy_its_header_is_ignored() {
        let trusted = proxies(&["10.0.0.0/8"]);
        assert_eq!(trusted.client_of(ip("198.51.100.1"), &forwarded(&["203.0.113.7"])), ip("198.51.100.1"));
    }

    #[test]
    fn given_a_trusted_proxy_the_rightmost_untrusted_entry_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8", "127.0.0.1"]);
        let proxy = ip("10.0.0.1");
        assert_eq!(trusted.client_of(proxy, &forwarded(&["203.0.113.7"])), ip("203.0.113.7"));
        // What the client wrote itself stays left of what the proxy appended.
        assert_eq!(trusted.client_of(proxy, &forwarded(&["6.6.6.6, 203.0.113.7"])), ip("203.0.113.7"));
        // Through two trusted proxies; and over several header lines, in order.
        assert_eq!(trusted.client_of(proxy, &forwarded(&["6.6.6.6, 203.0.113.7, 10.0.0.2"])), ip("203.0.113.7"));
        assert_eq!(trusted.client_of(proxy, &forwarded(&["6.6.6.6", "203.0.113.7", "10.0.0.2"])), ip("203.0.113.7"));
        // With ports, and IPv6.
        assert_eq!(trusted.client_of(proxy, &forwarded(&["203.0.113.7:4711"])), ip("203.0.113.7"));
        assert_eq!(trusted.client_of(proxy, &forwarded(&["[2001:db8::1]:4711"])), ip("2001:db8::1"));
        assert_eq!(trusted.client_of(ip("127.0.0.1"), &forwarded(&["2001:db8::1"])), ip("2001:db8::1"));
    }

    #[test]
    fn given_a_trusted_proxy_without_a_usable_header_the_proxy_or_the_last_good_hop_is_the_client() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let proxy = ip("10.0.0.1");
        assert_eq!(trusted.client_of(proxy, &HeaderMap::new()), proxy, "no header");
        assert_eq!(trusted.client_of(proxy, &forwarded(&["203.0.113.7, unknown"])), proxy, "the proxy's own entry is not an address");
        assert_eq!(trusted.client_of(proxy, &forwarded(&["garbage, 10.0.0.3"])), ip("10.0.0.3"), "left of it, the client's word");
        assert_eq!(trusted.client_of(proxy, &forwarded(&["10.0.0.3, 10.0.0.2"])), ip("10.0.0.3"), "all trusted: the leftmost");
    }

    #[test]
    fn an_ipv4_mapped_peer_is_its_ipv4_address_and_so_is_a_mapped_range() {
        let trusted = proxies(&["127.0.0.1"]);
        assert_eq!(trusted.client_of(ip("::ffff:127.0.0.1"), &forwarded(&["203.0.113.7"])), ip("203.0.113.7"));
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
        assert_eq!(trusted.client_of(ip("10.0.0.1"), &headers), ip("203.0.113.9"));
        let mut headers = HeaderMap::new();
        headers.append(HeaderName::from_static(FORWARDED_FOR), HeaderValue::from_bytes(b"203.0.113.9, \xff").unwrap());
        assert_eq!(trusted.client_of(ip("10.0.0.1"), &headers), ip("10.0.0.1"), "the rightmost entry is not an address");
    }

    #[test]
    fn entries_are_addresses_or_ranges_and_anything_else_is_refused_by_name() {
        assert_eq!(Vec::<String>::from(proxies(&["10.0.0.0/8", "::1", " 127.0.0.1 "])), ["10.0.0.0/8", "::1/128", "127.0.0.1/32"]);
        let refused = TrustedProxies::try_from(vec!["10.0.0.0/33".to_string()]).unwrap_err();
        assert!(refused.to_string().contains("\"10.0.0.0/33\" is not an IP address or a CIDR range"), "{refused}");
    }
}
