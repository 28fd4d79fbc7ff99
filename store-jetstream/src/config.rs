use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where and how the JetStream event log lives; deserializable so the gateway can read it from its
/// config file (TOML):
///
/// ```toml
/// [store]
/// backend = "jetstream"
///
/// [store.jetstream]
/// servers = ["nats://10.0.0.1:4222", "nats://10.0.0.2:4222", "nats://10.0.0.3:4222"]
/// stream = "VESTIBULE"
/// replicas = 3
/// # how the gateway logs in to NATS (at most one way; none for a server without authorization):
/// user = "vestibule"
/// password_file = "/etc/vestibule/nats.password"
/// # TLS: the servers' roots, and a client certificate where the servers ask for one
/// tls_ca_file = "/etc/vestibule/nats-ca.pem"
/// ```
///
/// Every field has a default. Secrets are read from files, never written in the config or the server
/// URLs (which are logged); a URL with credentials in it is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JetStreamConfig {
    /// NATS server URLs; the client connects to one and learns the rest of the cluster from it.
    pub servers: Vec<String>,
    /// Name of the event stream. It also names its subjects (`<stream>.ev.…`, `<stream>.ans.…`) and
    /// the KV buckets beside it (`<stream>_snapshots`, `<stream>_status`), so several logs can share
    /// one NATS account. Letters, digits, `_` and `-` only.
    pub stream: String,
    /// Replicas of the stream and the buckets (1, or 3 for a cluster that survives a node).
    pub replicas: usize,
    /// Largest encoded event record accepted by `append`, in bytes (larger is `InvalidAppend`).
    /// Must stay under the server's `max_payload` (1 MiB by default).
    pub max_event_bytes: usize,
    /// How long one JetStream request (publish ack, lookup) may take before it fails.
    #[serde(with = "humantime_serde")]
    pub request_timeout: Duration,
    /// How long opening the log (a gateway's start, a CLI command) keeps retrying when NATS does
    /// not answer yet: servers unreachable, or a cluster still electing leaders right after a node
    /// died. Attempts are spaced by a backoff doubling from 250 ms up to 4 s; `0s` tries once.
    #[serde(with = "humantime_serde")]
    pub open_timeout: Duration,
    /// A NATS credentials file (`.creds`: a user JWT and its nkey seed), as `nsc` writes it.
    pub credentials_file: Option<PathBuf>,
    /// A file holding an nkey user's seed (`SU…`).
    pub nkey_seed_file: Option<PathBuf>,
    /// A user name, with its password in `password_file`.
    pub user: Option<String>,
    pub password_file: Option<PathBuf>,
    /// A file holding the server's authorization token.
    pub token_file: Option<PathBuf>,
    /// PEM roots to trust for the servers' certificates (instead of the system's); implies TLS.
    pub tls_ca_file: Option<PathBuf>,
    /// A PEM client certificate and its key, for servers that verify clients (mutual TLS).
    pub tls_cert_file: Option<PathBuf>,
    pub tls_key_file: Option<PathBuf>,
    /// Refuse a server that does not speak TLS (`tls://` URLs require it too).
    pub require_tls: bool,
}

impl Default for JetStreamConfig {
    fn default() -> Self {
        Self {
            servers: vec!["nats://127.0.0.1:4222".into()],
            stream: "VESTIBULE".into(),
            replicas: 1,
            max_event_bytes: 256 * 1024,
            request_timeout: Duration::from_secs(5),
            open_timeout: Duration::from_secs(30),
            credentials_file: None,
            nkey_seed_file: None,
            user: None,
            password_file: None,
            token_file: None,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            require_tls: false,
        }
    }
}

impl JetStreamConfig {
    /// The defaults, on `servers`.
    pub fn at(servers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { servers: servers.into_iter().map(Into::into).collect(), ..Self::default() }
    }

    pub fn with_stream(mut self, stream: impl Into<String>) -> Self {
        self.stream = stream.into();
        self
    }

    /// Checks what the server would refuse later, with a message that names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.servers.is_empty() {
            return Err("`servers`: at least one NATS server URL is needed".into());
        }
        if self.stream.is_empty() || !self.stream.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(format!("`stream`: {:?} must be letters, digits, `_` or `-` (it names subjects and KV buckets)", self.stream));
        }
        if !(1..=5).contains(&self.replicas) {
            return Err(format!("`replicas`: {} is not between 1 and 5", self.replicas));
        }
        if let Some(url) = self.servers.iter().find(|url| has_credentials(url)) {
            // The client ignores them, and server URLs are logged: a secret there would only leak.
            return Err(format!(
                "`servers`: {:?} has credentials in it; give them as `user` and `password_file` (or `token_file`, \
                 `nkey_seed_file`, `credentials_file`)",
                redacted(url)
            ));
        }
        let ways = [
            ("credentials_file", self.credentials_file.is_some()),
            ("nkey_seed_file", self.nkey_seed_file.is_some()),
            ("user", self.user.is_some()),
            ("token_file", self.token_file.is_some()),
        ];
        let chosen: Vec<&str> = ways.iter().filter(|(_, set)| *set).map(|(name, _)| *name).collect();
        if chosen.len() > 1 {
            return Err(format!("`{}`: give one way to log in to NATS, not several", chosen.join("`, `")));
        }
        if self.user.as_deref().is_some_and(str::is_empty) {
            return Err("`user`: empty".into());
        }
        if self.user.is_some() != self.password_file.is_some() {
            return Err("`user` and `password_file` go together".into());
        }
        if self.tls_cert_file.is_some() != self.tls_key_file.is_some() {
            return Err("`tls_cert_file` and `tls_key_file` go together".into());
        }
        Ok(())
    }

    /// The client's options: how it logs in (secrets read from their files now) and its TLS.
    /// An error names the field and the file, never what the file holds.
    pub(crate) async fn connect_options(&self, name: String) -> Result<async_nats::ConnectOptions, String> {
        let mut options = match (&self.credentials_file, &self.nkey_seed_file, &self.user, &self.token_file) {
            (Some(path), ..) => async_nats::ConnectOptions::with_credentials_file(path)
                .await
                .map_err(|e| format!("`credentials_file` {}: {e}", path.display()))?,
            (_, Some(path), ..) => async_nats::ConnectOptions::with_nkey(secret_in("nkey_seed_file", path)?),
            (_, _, Some(user), _) => {
                let path = self.password_file.as_ref().ok_or("`user` needs `password_file`")?;
                async_nats::ConnectOptions::with_user_and_password(user.clone(), secret_in("password_file", path)?)
            }
            (.., Some(path)) => async_nats::ConnectOptions::with_token(secret_in("token_file", path)?),
            _ => async_nats::ConnectOptions::new(),
        };
        if let Some(ca) = &self.tls_ca_file {
            options = options.add_root_certificates(ca.clone()).require_tls(true);
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert_file, &self.tls_key_file) {
            options = options.add_client_certificate(cert.clone(), key.clone());
        }
        if self.require_tls {
            options = options.require_tls(true);
        }
        Ok(options.name(name).request_timeout(Some(self.request_timeout)))
    }
}

/// A secret's file, its text without the line end; never empty.
fn secret_in(field: &str, path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("`{field}` {}: {e}", path.display()))?;
    let secret = text.trim_end_matches(['\r', '\n']).to_owned();
    if secret.is_empty() {
        return Err(format!("`{field}` {}: the file is empty", path.display()));
    }
    Ok(secret)
}

/// Whether a server URL has user information (`user:password@host`).
fn has_credentials(url: &str) -> bool {
    let authority = url.split_once("://").map_or(url, |(_, rest)| rest);
    authority.split(['/', '?', '#']).next().is_some_and(|host| host.contains('@'))
}

/// `url` without its user information, for messages and logs.
pub fn redacted(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").map_or(("", url), |(scheme, rest)| (scheme, rest));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let prefix = if scheme.is_empty() { String::new() } else { format!("{scheme}://") };
    let shown = if host.len() == authority.len() { host.to_owned() } else { format!("***@{host}") };
    format!("{prefix}{shown}{tail}")
}
