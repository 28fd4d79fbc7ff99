//! The `[embedded]`, `[embedded.smtp]` and `[embedded.social.<provider>]` configuration, and the two
//! key files that encrypt the shares at rest.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EmbeddedConfig {
    /// Where the gateway serves the frame origin.
    pub frame_listen: SocketAddr,
    /// The frame origin as browsers see it, e.g. `https://frame.example.com` (no trailing slash).
    /// The gateway takes `http://{frame_listen's bound address}` when this is empty (development).
    #[serde(default)]
    pub frame_origin: String,
    #[serde(default = "default_frame_assets_dir")]
    pub frame_assets_dir: PathBuf,
    /// 64 hex characters: the key encrypting server shares at rest.
    pub share_key_file: PathBuf,
    /// 64 hex characters: the key encrypting recovery shares at rest; meant to live apart.
    pub recovery_key_file: PathBuf,
    /// Where the vault's sled database lives; none = a temporary database (development only).
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    #[serde(default = "default_otp_ttl", with = "humantime_serde")]
    pub otp_ttl: Duration,
    #[serde(default = "default_otp_attempts")]
    pub otp_attempts: u32,
    /// The least time between two codes mailed to one address, and between two codes one frame
    /// (the visitor's modal) has mailed, whatever the addresses. The address's is kept in the
    /// vault's database with the lockout below, so a restart does not clear it.
    #[serde(default = "default_email_cooldown", with = "humantime_serde")]
    pub email_cooldown: Duration,
    /// Codes the frames of one client address (IPv6: its /64) may have mailed per hour, whatever
    /// the addresses: a token bucket of this many, refilled continuously (mail_limits.rs). Bounds
    /// how many mailboxes one visitor can have the gateway write to. At least 1; default 30.
    #[serde(default = "default_mails_per_ip_per_hour")]
    pub mails_per_ip_per_hour: u32,
    /// Wrong codes one address may take, across all its challenges, sessions and restarts, within
    /// `otp_lockout_window` (a rolling window); once spent, no code is mailed to that address and
    /// no outstanding code of it is checked until the oldest of those failures is older than the
    /// window. A successful login clears the count. 1 to 100; default 10.
    #[serde(default = "default_otp_lockout_failures")]
    pub otp_lockout_failures: u32,
    /// The rolling window of `otp_lockout_failures`: 1 minute to 30 days; default 24 hours.
    #[serde(default = "default_otp_lockout_window", with = "humantime_serde")]
    pub otp_lockout_window: Duration,
    #[serde(default)]
    pub smtp: Option<SmtpConfig>,
    /// Keyed by provider name: google, x, discord, github, apple, facebook.
    #[serde(default)]
    pub social: BTreeMap<String, SocialProviderConfig>,
    /// Sign In With Farcaster over a relay; none = Farcaster login fails.
    #[serde(default)]
    pub farcaster: Option<FarcasterConfig>,
    /// The project that the users of a vault written before users were kept per project belong
    /// to (their email and social logins, so their wallets). Needed once, to open such a vault on
    /// a gateway with several projects (with one project they go to it); the gateway refuses to
    /// start until it is set. Must name a configured project.
    #[serde(default)]
    pub legacy_users_project: Option<String>,
}

/// The real IdRegistry on OP mainnet.
pub const FARCASTER_ID_REGISTRY: &str = "0x00000000Fc6c5F01Fc30151999387Bb99A9f489b";

/// `[embedded.farcaster]`: the relay, the OP-mainnet-like JSON-RPC (chain 10) and the registries.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FarcasterConfig {
    /// The relay's base URL (its routes are /v1/channel and /v1/channel/status).
    pub relay_url: String,
    /// A JSON-RPC endpoint of chain 10, where the IdRegistry is read.
    pub rpc_url: String,
    #[serde(default = "default_id_registry")]
    pub id_registry: String,
    /// The KeyRegistry (on OP mainnet 0x00000000Fc1237824fb747aBDE0FF18990E59b7e): when set, an
    /// auth address of the fid (a key of type 2 in force there) may sign in besides its custody.
    #[serde(default)]
    pub key_registry: Option<String>,
    /// The domain of the sign-in message; defaults to the frame origin's host (and port).
    #[serde(default)]
    pub domain: Option<String>,
    /// The URI of the sign-in message; defaults to the frame origin.
    #[serde(default)]
    pub siwe_uri: Option<String>,
    #[serde(default = "default_farcaster_poll", with = "humantime_serde")]
    pub poll_interval: Duration,
    #[serde(default = "default_farcaster_timeout", with = "humantime_serde")]
    pub poll_timeout: Duration,
}

fn default_id_registry() -> String {
    FARCASTER_ID_REGISTRY.to_owned()
}
fn default_farcaster_poll() -> Duration {
    Duration::from_secs(1)
}
fn default_farcaster_timeout() -> Duration {
    Duration::from_secs(120)
}

impl FarcasterConfig {
    /// The message's domain: the configured one, else the frame origin's authority.
    pub fn domain(&self, frame_origin: &str) -> String {
        match &self.domain {
            Some(domain) if !domain.is_empty() => domain.clone(),
            _ => url::Url::parse(frame_origin)
                .ok()
                .and_then(|url| {
                    let host = url.host_str()?.to_owned();
                    Some(match url.port() {
                        Some(port) => format!("{host}:{port}"),
                        None => host,
                    })
                })
                .unwrap_or_default(),
        }
    }

    pub fn siwe_uri(&self, frame_origin: &str) -> String {
        match &self.siwe_uri {
            Some(uri) if !uri.is_empty() => uri.clone(),
            _ => frame_origin.to_owned(),
        }
    }

    /// How many times the relay is polled before the login gives up.
    pub fn max_polls(&self) -> u32 {
        let interval = self.poll_interval.as_millis().max(1);
        (self.poll_timeout.as_millis() / interval).clamp(1, 10_000) as u32 + 1
    }
}

fn default_frame_assets_dir() -> PathBuf {
    PathBuf::from("client/dist-frame")
}
fn default_otp_ttl() -> Duration {
    Duration::from_secs(600)
}
fn default_otp_attempts() -> u32 {
    5
}
fn default_email_cooldown() -> Duration {
    Duration::from_secs(30)
}
fn default_mails_per_ip_per_hour() -> u32 {
    30
}
fn default_otp_lockout_failures() -> u32 {
    10
}
fn default_otp_lockout_window() -> Duration {
    Duration::from_secs(24 * 3600)
}

/// The bounds `validate` holds `otp_lockout_failures` and `otp_lockout_window` to.
pub const OTP_LOCKOUT_FAILURES_MAX: u32 = 100;
pub const OTP_LOCKOUT_WINDOW_MIN: Duration = Duration::from_secs(60);
pub const OTP_LOCKOUT_WINDOW_MAX: Duration = Duration::from_secs(30 * 24 * 3600);

impl EmbeddedConfig {
    /// The frame origin without a trailing slash, as compared with `Origin` headers.
    pub fn frame_origin(&self) -> &str {
        self.frame_origin.trim_end_matches('/')
    }

    /// The provider's redirect target: `{frame_origin}/oauth/callback`.
    pub fn oauth_redirect_uri(&self) -> String {
        format!("{}/oauth/callback", self.frame_origin())
    }

    /// Refuses values that would switch the per-address lockout or the per-client mail budget
    /// off, or make the lockout's records unbounded; the message names the field (the service's
    /// builder calls it).
    pub fn validate(&self) -> Result<(), String> {
        if self.mails_per_ip_per_hour == 0 {
            return Err("mails_per_ip_per_hour must be at least 1, not 0 (0 would refuse every code)".into());
        }
        if !(1..=OTP_LOCKOUT_FAILURES_MAX).contains(&self.otp_lockout_failures) {
            return Err(format!(
                "otp_lockout_failures must be between 1 and {OTP_LOCKOUT_FAILURES_MAX}, not {}",
                self.otp_lockout_failures
            ));
        }
        if !(OTP_LOCKOUT_WINDOW_MIN..=OTP_LOCKOUT_WINDOW_MAX).contains(&self.otp_lockout_window) {
            return Err(format!(
                "otp_lockout_window must be between 1m and 30days, not {}",
                humantime_serde::re::humantime::format_duration(self.otp_lockout_window)
            ));
        }
        for (name, provider) in &self.social {
            provider.validate().map_err(|message| format!("social.{name}.{message}"))?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    /// Plain SMTP (a local relay or a test sink).
    None,
    /// SMTP upgraded with STARTTLS (port 587).
    #[default]
    Starttls,
    /// SMTP inside TLS from the first byte (port 465).
    Tls,
}

#[derive(Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    /// The sender, e.g. `Vestibule <login@example.com>`.
    pub from: String,
    #[serde(default)]
    pub tls: SmtpTls,
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
    /// Development only: write each mail as an .eml file here instead of sending it.
    #[serde(default)]
    pub file_dir: Option<PathBuf>,
}

// The password never reaches a log.
impl std::fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("from", &self.from)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("file_dir", &self.file_dir)
            .finish()
    }
}

#[derive(Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SocialProviderConfig {
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub userinfo_endpoint: Option<String>,
    /// When set, the identity comes from the id_token verified against these keys.
    #[serde(default)]
    pub jwks_uri: Option<String>,
    #[serde(default)]
    pub issuer: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl SocialProviderConfig {
    /// A provider verified by its id_token (`jwks_uri`) needs the `issuer` its tokens must name
    /// (OpenID Connect Core §3.1.3.7: `iss` must match it exactly); no provider has a built-in
    /// issuer. The message starts with the field (the caller puts `social.<provider>.` before it).
    pub fn validate(&self) -> Result<(), String> {
        if self.jwks_uri.is_some() && self.issuer.as_deref().is_none_or(|issuer| issuer.trim().is_empty()) {
            return Err("issuer must be set when jwks_uri is: the id_token's `iss` is checked against it (the provider's \
                        discovery document names it, e.g. \"https://accounts.google.com\")"
                .into());
        }
        Ok(())
    }
}

impl std::fmt::Debug for SocialProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocialProviderConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("authorization_endpoint", &self.authorization_endpoint)
            .field("token_endpoint", &self.token_endpoint)
            .field("userinfo_endpoint", &self.userinfo_endpoint)
            .field("jwks_uri", &self.jwks_uri)
            .field("issuer", &self.issuer)
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// The two key-encryption keys: one for server shares, one for recovery shares.
#[derive(Clone)]
pub struct ShareKeys {
    pub server: [u8; 32],
    pub recovery: [u8; 32],
}

impl std::fmt::Debug for ShareKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShareKeys(<redacted>)")
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyFileError {
    #[error("cannot read the key file {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("the key file {path} must hold exactly 64 hex characters (32 bytes); generate one with `openssl rand -hex 32`")]
    Malformed { path: String },
    #[error(
        "share_key_file {share} and recovery_key_file {recovery} hold the same key; they must differ so that one leaked file opens only one kind of share"
    )]
    SameKey { share: String, recovery: String },
}

impl ShareKeys {
    /// Reads both key files (named in the configuration) and refuses equal keys.
    pub fn load(config: &EmbeddedConfig) -> Result<Self, KeyFileError> {
        let server = read_key_file(&config.share_key_file)?;
        let recovery = read_key_file(&config.recovery_key_file)?;
        Self::from_keys(server, recovery, &config.share_key_file, &config.recovery_key_file)
    }

    fn from_keys(server: [u8; 32], recovery: [u8; 32], share: &Path, recovery_path: &Path) -> Result<Self, KeyFileError> {
        if subtle::ConstantTimeEq::ct_eq(&server[..], &recovery[..]).into() {
            return Err(KeyFileError::SameKey { share: share.display().to_string(), recovery: recovery_path.display().to_string() });
        }
        Ok(Self { server, recovery })
    }
}

/// A key file: 64 hex characters, surrounding whitespace allowed.
pub fn read_key_file(path: &Path) -> Result<[u8; 32], KeyFileError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| KeyFileError::Unreadable { path: path.display().to_string(), reason: error.to_string() })?;
    let malformed = || KeyFileError::Malformed { path: path.display().to_string() };
    let trimmed = text.trim();
    if trimmed.len() != 64 {
        return Err(malformed());
    }
    let mut key = [0u8; 32];
    hex::decode_to_slice(trimmed, &mut key).map_err(|_| malformed())?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_toml(dir: &Path) -> String {
        format!(
            r#"
            frame_listen = "127.0.0.1:8090"
            frame_origin = "http://127.0.0.1:8090"
            share_key_file = "{0}/share.key"
            recovery_key_file = "{0}/recovery.key"
            otp_ttl = "5m"
            [smtp]
            host = "127.0.0.1"
            port = 2525
            from = "Vestibule <login@example.com>"
            tls = "none"
            [social.google]
            client_id = "id"
            authorization_endpoint = "https://accounts.example/auth"
            token_endpoint = "https://accounts.example/token"
            scopes = ["openid", "email"]
            "#,
            dir.display()
        )
    }

    fn parse(text: &str) -> Result<EmbeddedConfig, String> {
        toml::from_str(text).map_err(|error| error.to_string())
    }

    #[test]
    fn given_a_minimal_config_when_parsed_then_defaults_fill_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let config = parse(&config_toml(dir.path())).unwrap();
        assert_eq!(config.otp_ttl, Duration::from_secs(300));
        assert_eq!(config.otp_attempts, 5);
        assert_eq!(config.email_cooldown, Duration::from_secs(30));
        assert_eq!(config.mails_per_ip_per_hour, 30);
        assert_eq!(config.otp_lockout_failures, 10);
        assert_eq!(config.otp_lockout_window, Duration::from_secs(24 * 3600));
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.frame_assets_dir, PathBuf::from("client/dist-frame"));
        assert_eq!(config.smtp.as_ref().unwrap().tls, SmtpTls::None);
        assert_eq!(config.social["google"].scopes, vec!["openid", "email"]);
        assert_eq!(config.oauth_redirect_uri(), "http://127.0.0.1:8090/oauth/callback");
    }

    #[test]
    fn given_lockout_settings_when_validated_then_values_that_switch_it_off_or_unbound_it_are_refused_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let with = |line: &str| parse(&config_toml(dir.path()).replace("otp_ttl = \"5m\"", &format!("otp_ttl = \"5m\"\n{line}"))).unwrap();
        let config = with("otp_lockout_failures = 20\notp_lockout_window = \"1h\"");
        assert_eq!((config.otp_lockout_failures, config.otp_lockout_window), (20, Duration::from_secs(3600)));
        assert_eq!(config.validate(), Ok(()));
        for (line, field) in [
            ("otp_lockout_failures = 0", "otp_lockout_failures"),
            ("otp_lockout_failures = 101", "otp_lockout_failures"),
            ("otp_lockout_window = \"59s\"", "otp_lockout_window"),
            ("otp_lockout_window = \"31days\"", "otp_lockout_window"),
        ] {
            let error = with(line).validate().unwrap_err();
            assert!(error.starts_with(field), "{line}: {error}");
        }
    }

    #[test]
    fn given_a_mail_budget_when_validated_then_zero_is_refused_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let with = |line: &str| parse(&config_toml(dir.path()).replace("otp_ttl = \"5m\"", &format!("otp_ttl = \"5m\"\n{line}"))).unwrap();
        let config = with("mails_per_ip_per_hour = 5");
        assert_eq!(config.mails_per_ip_per_hour, 5);
        assert_eq!(config.validate(), Ok(()));
        let error = with("mails_per_ip_per_hour = 0").validate().unwrap_err();
        assert!(error.starts_with("mails_per_ip_per_hour must be at least 1"), "{error}");
        assert!(parse(&config_toml(dir.path()).replace("otp_ttl = \"5m\"", "otp_ttl = \"5m\"\nmails_per_ip_per_hour = -1")).is_err());
    }

    #[test]
    fn given_a_provider_with_a_jwks_uri_when_validated_then_a_missing_or_empty_issuer_is_refused_naming_the_provider_and_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let with = |lines: &str| parse(&config_toml(dir.path()).replace("scopes = [", &format!("{lines}\nscopes = ["))).unwrap();
        // Given a provider verified by its id_token, with its issuer
        let config = with("jwks_uri = \"https://accounts.example/jwks\"\nissuer = \"https://accounts.example\"");
        assert_eq!(config.validate(), Ok(()));
        // When the issuer is missing or empty, then the configuration is refused naming social.google.issuer
        for lines in ["jwks_uri = \"https://accounts.example/jwks\"", "jwks_uri = \"https://accounts.example/jwks\"\nissuer = \" \""] {
            let error = with(lines).validate().unwrap_err();
            assert!(error.starts_with("social.google.issuer must be set when jwks_uri is"), "{lines}: {error}");
        }
        // And a userinfo provider (no jwks_uri) needs none
        assert_eq!(with("userinfo_endpoint = \"https://accounts.example/me\"").validate(), Ok(()));
    }

    #[test]
    fn given_an_unknown_field_when_parsed_then_it_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = config_toml(dir.path()).replace("otp_ttl", "otp_tll");
        assert!(parse(&text).unwrap_err().contains("unknown field"));
    }

    #[test]
    fn given_key_files_when_loaded_then_equal_or_malformed_keys_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = parse(&config_toml(dir.path())).unwrap();
        std::fs::write(&config.share_key_file, "11".repeat(32)).unwrap();
        std::fs::write(&config.recovery_key_file, format!("{}\n", "22".repeat(32))).unwrap();
        let keys = ShareKeys::load(&config).unwrap();
        assert_eq!(keys.server, [0x11; 32]);
        assert_eq!(keys.recovery, [0x22; 32]);
        assert_eq!(format!("{keys:?}"), "ShareKeys(<redacted>)");

        std::fs::write(&config.recovery_key_file, "11".repeat(32)).unwrap();
        assert!(matches!(ShareKeys::load(&config), Err(KeyFileError::SameKey { .. })));

        std::fs::write(&config.recovery_key_file, "zz".repeat(32)).unwrap();
        let error = ShareKeys::load(&config).unwrap_err().to_string();
        assert!(error.contains("recovery.key") && error.contains("64 hex"), "{error}");

        std::fs::remove_file(&config.share_key_file).unwrap();
        let error = ShareKeys::load(&config).unwrap_err().to_string();
        assert!(error.contains("share.key"), "{error}");
    }
}
