//! Origin allowlists with wildcard patterns (spec: the page origin must be in the project's allowed
//! origins, matched with wildcard patterns).
//!
//! A pattern is `scheme://host[:port]`, where the host may start with `*.` (one or more labels) and
//! the port may be `*` (any port, including none). Without a port the pattern matches only the
//! scheme's default port. `*` alone matches every origin.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginPattern {
    text: String,
    kind: PatternKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PatternKind {
    Any,
    Origin { scheme: String, host: HostPattern, port: PortPattern },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Exact(String),
    /// `*.example.com`: one or more labels before `.example.com`.
    Subdomains(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PortPattern {
    Default,
    Any,
    Exact(u16),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid origin pattern {pattern:?}: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub reason: &'static str,
}

/// An origin as a browser sends it: scheme, host and optional port.
struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

fn split_origin(text: &str) -> Option<(String, String, Option<&str>)> {
    let (scheme, rest) = text.split_once("://")?;
    if scheme.is_empty() || !scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.') {
        return None;
    }
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    // Bracketed IPv6 hosts keep their colons.
    let (host, port) = if let Some(end) = rest.strip_prefix('[').and_then(|r| r.find(']')) {
        let host = &rest[..end + 2];
        match &rest[end + 2..] {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), port))
}

fn parse_origin(text: &str) -> Option<Origin> {
    let (scheme, host, port) = split_origin(text)?;
    // What a browser serializes: an ASCII host (IDNs as punycode) or a bracketed IPv6 literal.
    // Anything else (a space, a wildcard, a control character) is no origin a browser sends.
    let host_chars = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(ipv6) => ipv6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.'),
        None => host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_'),
    };
    if !host_chars {
        return None;
    }
    let port = match port {
        None => None,
        Some(p) => Some(p.parse::<u16>().ok()?),
    };
    Some(Origin { scheme, host, port })
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

impl OriginPattern {
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        let err = |reason| PatternError { pattern: text.to_string(), reason };
        if text == "*" {
            return Ok(Self { text: text.into(), kind: PatternKind::Any });
        }
        let (scheme, host, port) = split_origin(text).ok_or_else(|| err("expected scheme://host[:port] without a path"))?;
        let host = if let Some(suffix) = host.strip_prefix("*.") {
            if suffix.is_empty() || suffix.contains('*') || !suffix.contains('.') && suffix != "localhost" {
                return Err(err("a wildcard host is *.domain.tld"));
            }
            HostPattern::Subdomains(format!(".{suffix}"))
        } else if host.contains('*') {
            return Err(err("`*` may only be the first label of the host"));
        } else {
            HostPattern::Exact(host)
        };
        let port = match port {
            None => PortPattern::Default,
            Some("*") => PortPattern::Any,
            Some(p) => PortPattern::Exact(p.parse().map_err(|_| err("the port is a number or *"))?),
        };
        Ok(Self { text: text.into(), kind: PatternKind::Origin { scheme, host, port } })
    }

    pub fn matches(&self, origin: &str) -> bool {
        let (scheme, host_pattern, port_pattern) = match &self.kind {
            PatternKind::Any => return true,
            PatternKind::Origin { scheme, host, port } => (scheme, host, port),
        };
        let Some(origin) = parse_origin(origin) else { return false };
        if &origin.scheme != scheme {
            return false;
        }
        let host_ok = match host_pattern {
            HostPattern::Exact(h) => &origin.host == h,
            HostPattern::Subdomains(suffix) => origin.host.len() > suffix.len() && origin.host.ends_with(suffix.as_str()),
        };
        let effective_port = origin.port.or_else(|| default_port(&origin.scheme));
        let port_ok = match port_pattern {
            PortPattern::Any => true,
            PortPattern::Default => effective_port == default_port(scheme),
            PortPattern::Exact(p) => effective_port == Some(*p),
        };
        host_ok && port_ok
    }
}

impl fmt::Display for OriginPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Hosts under which anyone can have a site of their own for free: a wildcard over one of them
/// (`https://*.vercel.app`) lets in every site there, not only the project's.
pub const SHARED_HOSTING_SUFFIXES: &[&str] = &[
    "pages.dev",
    "vercel.app",
    "ngrok-free.app",
    "ngrok.app",
    "ngrok.io",
    "netlify.app",
    "github.io",
    "web.app",
    "firebaseapp.com",
    "herokuapp.com",
    "onrender.com",
    "fly.dev",
    "workers.dev",
];

impl OriginPattern {
    /// Whether the pattern lets in every site of a host where anyone can have one: `*` or a
    /// wildcard directly over a [`SHARED_HOSTING_SUFFIXES`] host.
    pub fn admits_strangers(&self) -> bool {
        match &self.kind {
            PatternKind::Any => true,
            PatternKind::Origin { host: HostPattern::Subdomains(suffix), .. } => {
                SHARED_HOSTING_SUFFIXES.iter().any(|shared| suffix.strip_prefix('.') == Some(shared))
            }
            PatternKind::Origin { .. } => false,
        }
    }
}

/// The spec's default allowed ancestor origins: localhost on any port, pages.dev, vercel.app and
/// ngrok-free.app. (The spec also names two wallet hosts without saying which; they are not listed.)
pub const DEFAULT_ALLOWED_ORIGINS: &[&str] =
    &["http://localhost:*", "https://localhost:*", "https://*.pages.dev", "https://*.vercel.app", "https://*.ngrok-free.app"];

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(pattern: &str, origin: &str) -> bool {
        OriginPattern::parse(pattern).unwrap().matches(origin)
    }

    #[test]
    fn localhost_on_any_port() {
        assert!(allows("http://localhost:*", "http://localhost:3000"));
        assert!(allows("http://localhost:*", "http://localhost"));
        assert!(!allows("http://localhost:*", "https://localhost:3000"));
        assert!(!allows("http://localhost:*", "http://localhost.evil.com:3000"));
    }

    #[test]
    fn wildcard_subdomains_need_at_least_one_label() {
        assert!(allows("https://*.vercel.app", "https://my-app.vercel.app"));
        assert!(allows("https://*.vercel.app", "https://a.b.vercel.app"));
        assert!(!allows("https://*.vercel.app", "https://vercel.app"));
        assert!(!allows("https://*.vercel.app", "https://evilvercel.app"));
        assert!(!allows("https://*.vercel.app", "https://my-app.vercel.app.evil.com"));
        assert!(!allows("https://*.vercel.app", "https://my-app.vercel.app:8443"));
    }

    #[test]
    fn exact_origins_and_ports() {
        assert!(allows("https://app.example.com", "https://app.example.com"));
        assert!(allows("https://app.example.com", "https://APP.example.com:443"));
        assert!(!allows("https://app.example.com", "https://app.example.com:444"));
        assert!(allows("http://127.0.0.1:8080", "http://127.0.0.1:8080"));
        assert!(!allows("http://127.0.0.1:8080", "http://127.0.0.1:8081"));
    }

    #[test]
    fn malformed_origins_never_match() {
        for origin in [
            "null",
            "",
            "https://",
            "app.example.com",
            "https://a.vercel.app/path",
            "https://*.vercel.app",
            "https://evil.com x.vercel.app",
            "https://evil.com\tx.vercel.app",
            "https://[::1 x].vercel.app",
        ] {
            assert!(!allows("https://*.vercel.app", origin), "{origin}");
        }
        assert!(allows("*", "null"));
        assert!(allows("https://*.vercel.app", "https://x_y.vercel.app"), "the positive probe: the same pattern, a host a browser sends");
        assert!(allows("http://[::1]:*", "http://[::1]:5173"));
    }

    #[test]
    fn bad_patterns_are_refused_with_a_reason() {
        for bad in ["vercel.app", "https://a.*.app", "https://*", "https://x.app:port", "https://x.app/path"] {
            assert!(OriginPattern::parse(bad).is_err(), "{bad}");
        }
        for good in DEFAULT_ALLOWED_ORIGINS {
            OriginPattern::parse(good).unwrap();
        }
    }

    #[test]
    fn wildcards_over_free_hosting_admit_strangers_and_a_project_s_own_do_not() {
        let strangers = |p: &str| OriginPattern::parse(p).unwrap().admits_strangers();
        for open in ["*", "https://*.vercel.app", "https://*.pages.dev:*", "https://*.ngrok-free.app", "https://*.github.io"] {
            assert!(strangers(open), "{open}");
        }
        for own in ["https://*.myapp.com", "https://myapp.vercel.app", "http://localhost:*", "https://*.app.vercel.app.example"] {
            assert!(!strangers(own), "{own}");
        }
    }
}
