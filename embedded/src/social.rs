//! Social login: OAuth 2.0 authorization code with PKCE (S256), state and nonce, and the identity
//! from a verified OIDC id_token (when the provider has a JWKS) or from its userinfo endpoint.
//! The pending logins are pure (time in); `identify` does the provider calls.

use std::collections::HashMap;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use url::Url;

use crate::config::SocialProviderConfig;
use crate::{Entropy, b64url};

pub const PENDING_TTL_MS: u64 = 10 * 60 * 1000;
/// Provider answers are small JSON documents; anything bigger is refused.
const MAX_PROVIDER_RESPONSE: usize = 256 * 1024;
/// OpenID Connect Core §2: `sub` is never empty and "MUST NOT exceed 255 ASCII characters". The
/// userinfo-only providers' ids (numbers) are held to the same bound.
pub const MAX_SUBJECT: usize = 255;
/// The longest address SMTP carries (RFC 5321's 256-octet path less its angle brackets).
pub const MAX_EMAIL: usize = 254;
/// The longest username (or name) shown; a longer one is dropped, not cut (a cut name could read
/// as somebody else's).
pub const MAX_USERNAME: usize = 64;
/// How far the provider's clock may run ahead of the service's for `nbf` and `iat` (seconds of
/// skew between two servers, both on NTP). `exp` has no leeway.
pub const CLOCK_SKEW_MS: u64 = 60 * 1000;

#[derive(Debug, thiserror::Error)]
pub enum SocialError {
    #[error("too many social logins are pending")]
    Full,
    #[error("the provider's authorization endpoint is not a URL")]
    BadEndpoint,
    #[error("the host origin is not an origin")]
    BadHostOrigin,
    #[error("the result URI is not the frame's OAuth callback")]
    BadResultUri,
    #[error("no pending login of this session has that state")]
    StateMismatch,
    #[error("the provider is not configured")]
    UnknownProvider,
    #[error("the provider refused: {0}")]
    Provider(String),
    #[error("the provider's answer is unusable: {0}")]
    BadAnswer(String),
    #[error("the id_token is invalid: {0}")]
    IdToken(String),
    #[error(transparent)]
    Frame(crate::service::EmbeddedError),
}

#[derive(Clone, Debug)]
pub struct PendingSocial {
    pub provider: String,
    pub session_id: String,
    pub frame_id: String,
    pub host_origin: String,
    pub code_verifier: String,
    pub nonce: String,
    expires_ms: u64,
}

pub struct PendingLogins {
    pending: HashMap<String, PendingSocial>,
    capacity: usize,
}

/// `S256` PKCE: base64url(SHA-256(verifier)).
pub fn pkce_challenge(verifier: &str) -> String {
    b64url(&Sha256::digest(verifier.as_bytes()))
}

fn is_origin(text: &str) -> bool {
    match Url::parse(text) {
        Ok(url) => matches!(url.scheme(), "http" | "https") && url.origin().ascii_serialization() == text,
        Err(_) => false,
    }
}

impl PendingLogins {
    pub fn new(capacity: usize) -> Self {
        Self { pending: HashMap::new(), capacity }
    }

    /// Records a pending login and gives the authorization URL. A frame has one pending login at
    /// a time (a new one replaces the frame's last), so no number of clicks on a social button
    /// can fill the map that every visitor's social logins share.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &mut self,
        provider_name: &str,
        provider: &SocialProviderConfig,
        redirect_uri: &str,
        session_id: &str,
        frame_id: &str,
        host_origin: &str,
        now_ms: u64,
        entropy: &dyn Entropy,
    ) -> Result<String, SocialError> {
        if !is_origin(host_origin) {
            return Err(SocialError::BadHostOrigin);
        }
        let mut url = Url::parse(&provider.authorization_endpoint).map_err(|_| SocialError::BadEndpoint)?;
        self.pending.retain(|_, pending| pending.expires_ms > now_ms && pending.frame_id != frame_id);
        if self.pending.len() >= self.capacity {
            return Err(SocialError::Full);
        }
        let state = crate::random_b64url(entropy, 32);
        let code_verifier = crate::random_b64url(entropy, 32);
        let nonce = crate::random_b64url(entropy, 16);
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &provider.client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &pkce_challenge(&code_verifier))
                .append_pair("code_challenge_method", "S256");
            if !provider.scopes.is_empty() {
                query.append_pair("scope", &provider.scopes.join(" "));
            }
            if provider.jwks_uri.is_some() {
                query.append_pair("nonce", &nonce);
            }
        }
        self.pending.insert(
            state,
            PendingSocial {
                provider: provider_name.to_owned(),
                session_id: session_id.to_owned(),
                frame_id: frame_id.to_owned(),
                host_origin: host_origin.to_owned(),
                code_verifier,
                nonce,
                expires_ms: now_ms.saturating_add(PENDING_TTL_MS),
            },
        );
        Ok(url.into())
    }

    /// Drops the pending login of a frame that is gone or signed out.
    pub fn forget_frame(&mut self, frame_id: &str) {
        self.pending.retain(|_, pending| pending.frame_id != frame_id);
    }

    pub fn host_origin(&self, state: &str, now_ms: u64) -> Option<String> {
        self.pending.get(state).filter(|pending| pending.expires_ms > now_ms).map(|pending| pending.host_origin.clone())
    }

    /// Takes the pending login `state` if the frame `frame_id` of `session_id` started it and it is
    /// alive (once only): another frame of the session cannot finish it.
    pub fn take(&mut self, state: &str, session_id: &str, frame_id: &str, now_ms: u64) -> Result<PendingSocial, SocialError> {
        match self.pending.get(state) {
            Some(pending) if pending.session_id == session_id && pending.frame_id == frame_id && pending.expires_ms > now_ms => {
                Ok(self.pending.remove(state).expect("present above"))
            }
            _ => Err(SocialError::StateMismatch),
        }
    }
}

#[derive(Debug)]
pub struct CallbackResult {
    pub state: String,
    pub code: Option<String>,
    pub error: Option<String>,
}

/// The provider's redirect as the frame saw it: must be `{frame_origin}/oauth/callback?…`.
pub fn parse_result_uri(frame_origin: &str, result_uri: &str) -> Result<CallbackResult, SocialError> {
    let prefix = format!("{frame_origin}/oauth/callback?");
    if !result_uri.starts_with(&prefix) || result_uri.len() > 8 * 1024 {
        return Err(SocialError::BadResultUri);
    }
    let url = Url::parse(result_uri).map_err(|_| SocialError::BadResultUri)?;
    let mut result = CallbackResult { state: String::new(), code: None, error: None };
    for (key, value) in url.query_pairs() {
        match key.as_ref() {
            "state" => result.state = value.into_owned(),
            "code" => result.code = Some(value.into_owned()),
            // Whoever holds the page writes this (RFC 6749's codes are printable ASCII): no line
            // breaks or escape sequences reach the log.
            "error" => result.error = Some(value.chars().filter(|c| !c.is_control()).take(128).collect()),
            _ => {}
        }
    }
    if result.state.is_empty() {
        return Err(SocialError::BadResultUri);
    }
    Ok(result)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocialIdentity {
    pub subject: String,
    pub email: Option<String>,
    pub username: Option<String>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: Option<String>,
    id_token: Option<String>,
}

async fn read_capped(response: reqwest::Response) -> Result<Vec<u8>, SocialError> {
    let status = response.status();
    let mut response = response;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| SocialError::Provider(error.to_string()))? {
        if body.len() + chunk.len() > MAX_PROVIDER_RESPONSE {
            return Err(SocialError::BadAnswer("response too large".into()));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        return Err(SocialError::Provider(format!("HTTP {status}")));
    }
    Ok(body)
}

/// Exchanges the code and finds who logged in.
pub async fn identify(
    http: &reqwest::Client,
    provider_name: &str,
    provider: &SocialProviderConfig,
    redirect_uri: &str,
    code: &str,
    pending: &PendingSocial,
    now_ms: u64,
) -> Result<SocialIdentity, SocialError> {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("client_id", provider.client_id.as_str()),
        ("code_verifier", pending.code_verifier.as_str()),
    ];
    if let Some(secret) = &provider.client_secret {
        form.push(("client_secret", secret.as_str()));
    }
    let response = http
        .post(&provider.token_endpoint)
        .header("accept", "application/json")
        .form(&form)
        .send()
        .await
        .map_err(|error| SocialError::Provider(error.to_string()))?;
    let tokens: TokenResponse =
        serde_json::from_slice(&read_capped(response).await?).map_err(|error| SocialError::BadAnswer(error.to_string()))?;

    if let Some(jwks_uri) = &provider.jwks_uri {
        let id_token = tokens.id_token.ok_or_else(|| SocialError::BadAnswer("no id_token".into()))?;
        let response = http.get(jwks_uri).send().await.map_err(|error| SocialError::Provider(error.to_string()))?;
        let jwks: JwkSet =
            serde_json::from_slice(&read_capped(response).await?).map_err(|error| SocialError::BadAnswer(error.to_string()))?;
        return verify_id_token(&id_token, &jwks, provider, &pending.nonce, now_ms);
    }
    let userinfo = provider.userinfo_endpoint.as_ref().ok_or_else(|| SocialError::BadAnswer("no jwks_uri nor userinfo_endpoint".into()))?;
    let access_token = tokens.access_token.ok_or_else(|| SocialError::BadAnswer("no access_token".into()))?;
    let response = http
        .get(userinfo)
        .bearer_auth(access_token)
        .header("accept", "application/json")
        .header("user-agent", "vestibule-embedded")
        .send()
        .await
        .map_err(|error| SocialError::Provider(error.to_string()))?;
    let body: serde_json::Value =
        serde_json::from_slice(&read_capped(response).await?).map_err(|error| SocialError::BadAnswer(error.to_string()))?;
    identity_from_userinfo(provider_name, &body)
}

/// `aud`: one audience or several (RFC 7519 §4.1.3). That the client id is among them is
/// jsonwebtoken's check; how many there are is read here (for `azp`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(#[allow(dead_code)] String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct IdClaims {
    sub: String,
    aud: Audience,
    exp: u64,
    iat: u64,
    #[serde(default)]
    nbf: Option<u64>,
    #[serde(default)]
    azp: Option<String>,
    nonce: Option<String>,
    email: Option<String>,
    #[serde(default)]
    email_verified: Option<serde_json::Value>,
    preferred_username: Option<String>,
    name: Option<String>,
}

/// Checks the id_token as OpenID Connect Core 1.0 §3.1.3.7 asks: the signature (a key of the
/// JWKS, an asymmetric algorithm), `iss` = the configured issuer (required: without one the
/// token is refused), `aud` holding the client id, `azp` = the client id when present and present
/// when `aud` has several values, `exp` after `now_ms`, `nbf` and `iat` not after `now_ms` (give
/// or take [`CLOCK_SKEW_MS`]), the login's nonce, and a `sub` of 1 to 255 ASCII characters. The
/// email is taken only when `email_verified` is true, and the email and name only when they can be
/// shown ([`display_email`], [`display_text`]).
pub fn verify_id_token(
    id_token: &str,
    jwks: &JwkSet,
    provider: &SocialProviderConfig,
    nonce: &str,
    now_ms: u64,
) -> Result<SocialIdentity, SocialError> {
    let bad = |why: &str| SocialError::IdToken(why.to_owned());
    let issuer = provider.issuer.as_deref().filter(|issuer| !issuer.is_empty()).ok_or_else(|| bad("no issuer is configured"))?;
    let header = jsonwebtoken::decode_header(id_token).map_err(|error| SocialError::IdToken(error.to_string()))?;
    if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256 | Algorithm::PS256 | Algorithm::EdDSA) {
        return Err(bad("unexpected algorithm"));
    }
    let jwk = match &header.kid {
        Some(kid) => jwks.find(kid),
        None if jwks.keys.len() == 1 => jwks.keys.first(),
        None => None,
    }
    .ok_or_else(|| bad("no key of the provider's JWKS signed it"))?;
    let key = DecodingKey::from_jwk(jwk).map_err(|error| SocialError::IdToken(error.to_string()))?;
    let mut validation = Validation::new(header.alg);
    validation.set_audience(&[&provider.client_id]);
    validation.set_issuer(&[issuer]);
    // The times are checked below against the service's clock.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.set_required_spec_claims(&["exp", "sub", "aud", "iss"]);
    let claims =
        jsonwebtoken::decode::<IdClaims>(id_token, &key, &validation).map_err(|error| SocialError::IdToken(error.to_string()))?.claims;
    if claims.exp.saturating_mul(1000) <= now_ms {
        return Err(bad("expired"));
    }
    if claims.nbf.is_some_and(|nbf| nbf.saturating_mul(1000) > now_ms.saturating_add(CLOCK_SKEW_MS)) {
        return Err(bad("not valid yet (nbf)"));
    }
    if claims.iat.saturating_mul(1000) > now_ms.saturating_add(CLOCK_SKEW_MS) {
        return Err(bad("issued in the future (iat)"));
    }
    let several_audiences = matches!(&claims.aud, Audience::Many(audiences) if audiences.len() > 1);
    match claims.azp.as_deref() {
        Some(azp) if azp != provider.client_id => return Err(bad("azp is another client")),
        None if several_audiences => return Err(bad("several audiences and no azp")),
        _ => {}
    }
    let nonce_matches = claims.nonce.as_deref().is_some_and(|got| subtle::ConstantTimeEq::ct_eq(got.as_bytes(), nonce.as_bytes()).into());
    if !nonce_matches {
        return Err(bad("nonce mismatch"));
    }
    if !valid_subject(&claims.sub) {
        return Err(bad("sub is empty, longer than 255 characters or not printable ASCII"));
    }
    let email = claims.email.filter(|_| stated_verified(claims.email_verified.as_ref())).and_then(|email| display_email(&email));
    let username = claims.preferred_username.or(claims.name).and_then(|name| display_text(&name, MAX_USERNAME));
    Ok(SocialIdentity { subject: claims.sub, email, username })
}

/// Whether a provider's subject can key an identity: 1 to [`MAX_SUBJECT`] ASCII characters, none
/// of them a control character (OpenID Connect Core §2; ids of the other providers too).
pub fn valid_subject(subject: &str) -> bool {
    (1..=MAX_SUBJECT).contains(&subject.len()) && subject.bytes().all(|b| b.is_ascii() && !b.is_ascii_control())
}

/// Whether a verification flag says "verified": JSON `true`, or the string `"true"` (Apple's ID
/// tokens have carried `email_verified` as a string). Absent, false or anything else is not.
fn stated_verified(flag: Option<&serde_json::Value>) -> bool {
    match flag {
        Some(serde_json::Value::Bool(verified)) => *verified,
        Some(serde_json::Value::String(text)) => text == "true",
        _ => false,
    }
}

/// Characters a shown name or address may not hold: control characters, line and paragraph
/// separators, the byte-order mark, invisible operators, and the bidirectional marks, embeddings,
/// overrides and isolates that make text read in another order than it is stored (a name that
/// renders as another name).
fn unshowable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

/// `text` if it can be shown as a name: not blank, at most `max_chars` characters, none of them
/// [`unshowable`]. A name that cannot is dropped (the login stands; nothing is shown for it).
pub fn display_text(text: &str, max_chars: usize) -> Option<String> {
    let fits = !text.trim().is_empty() && text.chars().count() <= max_chars && !text.chars().any(unshowable);
    fits.then(|| text.to_owned())
}

/// `email` if it can be shown as an address: at most [`MAX_EMAIL`] bytes, one `@` with something
/// on each side and a dot inside the domain, no white space, no `<`, `>` or `,`, nothing
/// [`unshowable`]. Else none is shown (the login stands).
pub fn display_email(email: &str) -> Option<String> {
    let (local, domain) = email.split_once('@')?;
    let fits = email.len() <= MAX_EMAIL
        && !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.chars().any(|c| c.is_whitespace() || unshowable(c) || matches!(c, '<' | '>' | ','));
    fits.then(|| email.to_owned())
}

/// The identity in a provider's userinfo answer. The subject must be [`valid_subject`]; the
/// username is kept when [`display_text`] allows it. The email is kept only when the provider
/// says it is verified:
///
/// * OIDC userinfo (every provider but x, discord and github): `email_verified` true.
/// * discord: the user's `verified` flag (Discord's "whether the email on this account has been
///   verified").
/// * github: never. `/user` gives the profile's public email with no verification flag; proving
///   it would take `/user/emails` and the `user:email` scope. An address nobody vouches for is
///   not shown as the visitor's: whoever set it could be anyone, and the host page may take it as
///   proven.
/// * x: never (its `/2/users/me` has no email).
pub fn identity_from_userinfo(provider: &str, body: &serde_json::Value) -> Result<SocialIdentity, SocialError> {
    let text = |value: &serde_json::Value| match value {
        serde_json::Value::String(text) if !text.is_empty() => Some(text.clone()),
        serde_json::Value::Number(number) => Some(number.to_string()),
        _ => None,
    };
    let field = |name: &str| body.get(name).and_then(text);
    let verified_email = |flag: &str| field("email").filter(|_| stated_verified(body.get(flag)));
    let identity = match provider {
        "x" => {
            let data = body.get("data").unwrap_or(&serde_json::Value::Null);
            SocialIdentity {
                subject: data.get("id").and_then(text).unwrap_or_default(),
                email: None,
                username: data.get("username").and_then(text),
            }
        }
        "discord" => {
            SocialIdentity { subject: field("id").unwrap_or_default(), email: verified_email("verified"), username: field("username") }
        }
        "github" => SocialIdentity { subject: field("id").unwrap_or_default(), email: None, username: field("login") },
        _ => SocialIdentity {
            subject: field("sub").or_else(|| field("id")).unwrap_or_default(),
            email: verified_email("email_verified"),
            username: field("preferred_username").or_else(|| field("name")),
        },
    };
    if !valid_subject(&identity.subject) {
        return Err(SocialError::BadAnswer("no usable subject in userinfo (empty, too long or not printable ASCII)".into()));
    }
    Ok(SocialIdentity {
        subject: identity.subject,
        email: identity.email.and_then(|email| display_email(&email)),
        username: identity.username.and_then(|name| display_text(&name, MAX_USERNAME)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededEntropy;

    fn provider() -> SocialProviderConfig {
        SocialProviderConfig {
            client_id: "client".into(),
            client_secret: None,
            authorization_endpoint: "https://idp.example/authorize?prompt=login".into(),
            token_endpoint: "https://idp.example/token".into(),
            userinfo_endpoint: None,
            jwks_uri: Some("https://idp.example/jwks".into()),
            issuer: Some("https://idp.example".into()),
            scopes: vec!["openid".into(), "email".into()],
        }
    }

    #[test]
    fn given_a_start_when_the_url_is_built_then_it_carries_pkce_state_nonce_and_the_callback() {
        let entropy = SeededEntropy::new(1);
        let mut pending = PendingLogins::new(4);
        let url = pending
            .start("google", &provider(), "https://frame.example/oauth/callback", "s1", "f1", "https://host.example", 0, &entropy)
            .unwrap();
        let url = Url::parse(&url).unwrap();
        let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(query["prompt"], "login");
        assert_eq!(query["redirect_uri"], "https://frame.example/oauth/callback");
        assert_eq!(query["code_challenge_method"], "S256");
        assert_eq!(query["scope"], "openid email");
        let state = &query["state"];
        assert_eq!(crate::b64url_decode(state).unwrap().len(), 32);
        assert_eq!(pending.host_origin(state, 1).as_deref(), Some("https://host.example"));
        let taken = pending.take(state, "s1", "f1", 1).unwrap();
        assert_eq!(query["code_challenge"], pkce_challenge(&taken.code_verifier));
        assert_eq!(query["nonce"], taken.nonce);
        assert!(pending.take(state, "s1", "f1", 1).is_err(), "a state is spent once");
    }

    #[test]
    fn given_a_pending_login_when_another_session_or_a_late_one_takes_it_then_it_is_refused() {
        let entropy = SeededEntropy::new(2);
        let mut pending = PendingLogins::new(4);
        let url =
            pending.start("google", &provider(), "https://f/oauth/callback", "s1", "f1", "https://host.example", 0, &entropy).unwrap();
        let state = Url::parse(&url).unwrap().query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
        assert!(matches!(pending.take(&state, "s2", "f1", 1), Err(SocialError::StateMismatch)));
        assert!(matches!(pending.take(&state, "s1", "f2", 1), Err(SocialError::StateMismatch)), "another frame of the session");
        assert!(matches!(pending.take(&state, "s1", "f1", PENDING_TTL_MS), Err(SocialError::StateMismatch)));
        assert!(pending.take(&state, "s1", "f1", 1).is_ok(), "the refusals above left it to its own frame");
        assert!(matches!(
            pending.start("google", &provider(), "https://f/oauth/callback", "s1", "f1", "https://host.example/path", 0, &entropy),
            Err(SocialError::BadHostOrigin)
        ));
    }

    fn state_of(url: &str) -> String {
        Url::parse(url).unwrap().query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned()
    }

    #[test]
    fn given_a_frame_that_starts_login_after_login_when_the_map_is_small_then_each_start_replaces_its_last_and_other_frames_still_start() {
        let entropy = SeededEntropy::new(3);
        let mut pending = PendingLogins::new(2);
        let start = |pending: &mut PendingLogins, frame: &str| {
            pending.start("google", &provider(), "https://f/oauth/callback", "s1", frame, "https://host.example", 0, &entropy)
        };
        // Given one frame that clicks a social button a thousand times
        let mut last = String::new();
        for _ in 0..1000 {
            last = state_of(&start(&mut pending, "f1").unwrap());
        }
        // Then it holds one pending login, its last, and another frame still starts one
        let other = state_of(&start(&mut pending, "f2").unwrap());
        assert!(pending.take(&other, "s1", "f2", 1).is_ok());
        assert!(pending.take(&last, "s1", "f1", 1).is_ok(), "the last start of f1 is the one that stands");
        // And a frame that is gone leaves none behind
        let gone = state_of(&start(&mut pending, "f3").unwrap());
        pending.forget_frame("f3");
        assert!(pending.take(&gone, "s1", "f3", 1).is_err());
    }

    #[test]
    fn given_result_uris_when_parsed_then_only_the_frame_callback_is_accepted() {
        let ok = parse_result_uri("https://frame.example", "https://frame.example/oauth/callback?code=c&state=s").unwrap();
        assert_eq!((ok.code.as_deref(), ok.state.as_str()), (Some("c"), "s"));
        for bad in [
            "https://frame.example.evil/oauth/callback?code=c&state=s",
            "https://frame.example/oauth/callbackx?code=c&state=s",
            "https://evil.example/oauth/callback?code=c&state=s",
            "https://frame.example/oauth/callback?code=c",
        ] {
            assert!(parse_result_uri("https://frame.example", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn given_a_result_uri_whose_error_carries_control_characters_when_parsed_then_they_are_dropped() {
        let uri = "https://frame.example/oauth/callback?state=s&error=access_denied%0A2026-12-07%20INFO%20forged%1B%5B31m";
        let parsed = parse_result_uri("https://frame.example", uri).unwrap();
        assert_eq!(parsed.error.as_deref(), Some("access_denied2026-12-07 INFO forged[31m"));
    }

    #[test]
    fn given_userinfo_answers_when_read_then_each_provider_gives_its_subject_and_name() {
        let x = serde_json::json!({ "data": { "id": "123", "username": "xuser" } });
        assert_eq!(
            identity_from_userinfo("x", &x).unwrap(),
            SocialIdentity { subject: "123".into(), email: None, username: Some("xuser".into()) }
        );
        let github = serde_json::json!({ "id": 42, "login": "octo", "email": "o@example.com" });
        assert_eq!(
            identity_from_userinfo("github", &github).unwrap(),
            SocialIdentity { subject: "42".into(), email: None, username: Some("octo".into()) }
        );
        let discord = serde_json::json!({ "id": "7", "username": "disc" });
        assert_eq!(identity_from_userinfo("discord", &discord).unwrap().username.as_deref(), Some("disc"));
        let oidc = serde_json::json!({ "sub": "abc", "email": "a@example.com", "preferred_username": "al" });
        assert_eq!(identity_from_userinfo("google", &oidc).unwrap().subject, "abc");
        assert!(identity_from_userinfo("github", &serde_json::json!({ "login": "x" })).is_err());
    }

    #[test]
    fn given_userinfo_emails_when_read_then_only_those_the_provider_says_are_verified_are_kept() {
        // Given OIDC userinfo answers with an email verified, unverified, or with no flag
        let oidc = |verified: serde_json::Value| serde_json::json!({ "sub": "abc", "email": "a@example.com", "email_verified": verified });
        let email = |provider: &str, body: &serde_json::Value| identity_from_userinfo(provider, body).unwrap().email;
        // When read, then only `email_verified: true` (or Apple's "true") gives the email
        assert_eq!(email("google", &oidc(serde_json::json!(true))).as_deref(), Some("a@example.com"));
        assert_eq!(email("apple", &oidc(serde_json::json!("true"))).as_deref(), Some("a@example.com"));
        for unverified in [serde_json::json!(false), serde_json::json!("false"), serde_json::json!(1), serde_json::Value::Null] {
            assert_eq!(email("google", &oidc(unverified.clone())), None, "{unverified}");
        }
        assert_eq!(email("google", &serde_json::json!({ "sub": "abc", "email": "a@example.com" })), None, "no flag");
        // And Discord's is kept only when its `verified` is true; GitHub's (no flag) never
        let discord = |verified: bool| serde_json::json!({ "id": "7", "username": "disc", "email": "d@example.com", "verified": verified });
        assert_eq!(email("discord", &discord(true)).as_deref(), Some("d@example.com"));
        assert_eq!(email("discord", &discord(false)), None);
        assert_eq!(email("discord", &serde_json::json!({ "id": "7", "email": "d@example.com" })), None);
        let github = serde_json::json!({ "id": 42, "login": "octo", "email": "o@example.com", "verified": true, "email_verified": true });
        assert_eq!(email("github", &github), None);
    }

    #[test]
    fn given_userinfo_subjects_when_read_then_empty_overlong_or_unprintable_ones_are_refused() {
        // Given a subject that is empty (the default of a missing id), too long, or has a control character
        let long = "1".repeat(MAX_SUBJECT + 1);
        for (provider, body) in [
            ("discord", serde_json::json!({ "id": "", "username": "disc" })),
            ("discord", serde_json::json!({ "username": "disc" })),
            ("x", serde_json::json!({ "data": { "id": "", "username": "xuser" } })),
            ("x", serde_json::json!({ "data": { "username": "xuser" } })),
            ("google", serde_json::json!({ "sub": "", "email": "a@example.com" })),
            ("google", serde_json::json!({ "sub": long })),
            ("github", serde_json::json!({ "id": "4\n2", "login": "octo" })),
            ("google", serde_json::json!({ "sub": "caf\u{e9}" })),
        ] {
            // When read, then there is no identity
            assert!(matches!(identity_from_userinfo(provider, &body), Err(SocialError::BadAnswer(_))), "{provider} {body}");
        }
        // And 255 ASCII characters are a subject
        let longest = "1".repeat(MAX_SUBJECT);
        assert_eq!(identity_from_userinfo("google", &serde_json::json!({ "sub": longest })).unwrap().subject.len(), MAX_SUBJECT);
    }

    #[test]
    fn given_names_and_emails_that_cannot_be_shown_when_read_then_they_are_dropped_and_the_identity_stands() {
        // Given names and addresses with control or bidirectional characters, or too long
        for name in ["al\u{202E}ice", "al\nice", "al\u{0}", "\u{2066}x", "   ", &"n".repeat(MAX_USERNAME + 1)] {
            let body = serde_json::json!({ "sub": "abc", "preferred_username": name });
            // When read, then the identity has no username
            assert_eq!(identity_from_userinfo("google", &body).unwrap().username, None, "{name:?}");
        }
        assert_eq!(display_text(&"n".repeat(MAX_USERNAME), MAX_USERNAME).map(|n| n.len()), Some(MAX_USERNAME));
        assert_eq!(display_text("Zoë 👩\u{200D}💻", MAX_USERNAME).as_deref(), Some("Zoë 👩\u{200D}💻"));
        let long = format!("{}@example.com", "a".repeat(MAX_EMAIL));
        for email in
            ["a@example.com\r\nBcc: b@example.com", "a b@example.com", "<a@example.com>", "a@b@example.com", "a@localhost", "@x.com", &long]
        {
            let body = serde_json::json!({ "sub": "abc", "email": email, "email_verified": true });
            assert_eq!(identity_from_userinfo("google", &body).unwrap().email, None, "{email:?}");
        }
    }
}
