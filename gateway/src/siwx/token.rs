//! Sign-in tokens for the host app's backend: a JWT (RFC 7519) signed with EdDSA (Ed25519,
//! RFC 8037) by a key the gateway keeps in its data directory. The backend verifies it offline with
//! the published key set (`GET /.well-known/jwks.json`), or asks `POST /siwx/introspect`, which also
//! knows about sign-outs. See `docs/siwx.md`.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::EncodePrivateKey;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The claims of a sign-in token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInClaims {
    pub iss: String,
    /// The signed-in account, CAIP-10 (`eip155:1:0xAb…`).
    pub sub: String,
    /// The project id.
    pub aud: String,
    /// The modal session.
    pub sid: String,
    /// The sign-in session within it.
    pub sis: String,
    /// The page origin the message was bound to.
    pub origin: String,
    /// `eip191`, `eip1271` or `ed25519`.
    pub method: String,
    pub iat: u64,
    pub exp: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is not a JWT")]
    Malformed,
    #[error("the token was not signed by this gateway's key")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
}

pub struct TokenKeys {
    signing: SigningKey,
    encoding: EncodingKey,
    decoding: DecodingKey,
    kid: String,
}

impl TokenKeys {
    /// The key in `<data>/keys/siwx-ed25519.key`, created (32 random bytes, hex, mode 0600) on
    /// first use. Kept outside the event log, so exports never contain it.
    pub fn load_or_create(data_dir: &Path) -> anyhow::Result<Self> {
        Ok(Self::from_secret(Self::load_or_create_secret(data_dir)?))
    }

    /// The secret behind [`Self::load_or_create`]: in cluster mode it seeds the key the gateways
    /// share (docs/scale-out.md), so a gateway that ran alone keeps its tokens valid.
    pub fn load_or_create_secret(data_dir: &Path) -> anyhow::Result<[u8; 32]> {
        let dir = data_dir.join("keys");
        let path = dir.join("siwx-ed25519.key");
        if path.is_file() {
            let text = std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
            let bytes: [u8; 32] = hex::decode(text.trim())
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| anyhow::anyhow!("{} is not a 32-byte hex key", path.display()))?;
            return Ok(bytes);
        }
        std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        let secret: [u8; 32] = rand::random();
        write_private(&path, &hex::encode(secret)).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        tracing::info!(path = %path.display(), "created the sign-in token key");
        Ok(secret)
    }

    pub fn from_secret(secret: [u8; 32]) -> Self {
        let signing = SigningKey::from_bytes(&secret);
        let public = signing.verifying_key();
        let kid = hex::encode(&Sha256::digest(public.as_bytes())[..8]);
        // jsonwebtoken takes an Ed25519 private key as PKCS#8 DER, a public key as its 32 bytes.
        let der = signing.to_pkcs8_der().expect("an Ed25519 key encodes as PKCS#8");
        let encoding = EncodingKey::from_ed_der(der.as_bytes());
        let decoding = DecodingKey::from_ed_der(public.as_bytes());
        Self { signing, encoding, decoding, kid }
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key set (RFC 7517, OKP keys of RFC 8037).
    pub fn jwks(&self) -> serde_json::Value {
        serde_json::json!({
            "keys": [{
                "kty": "OKP",
                "crv": "Ed25519",
                "x": URL_SAFE_NO_PAD.encode(self.signing.verifying_key().as_bytes()),
                "kid": self.kid,
                "alg": "EdDSA",
                "use": "sig",
            }]
        })
    }

    pub fn issue(&self, claims: &SignInClaims) -> String {
        let header = Header { kid: Some(self.kid.clone()), ..Header::new(Algorithm::EdDSA) };
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("EdDSA signing with a valid key does not fail")
    }

    /// Checks the signature and expiry (at `now_s`, Unix seconds); returns the claims.
    pub fn verify(&self, token: &str, now_s: u64) -> Result<SignInClaims, TokenError> {
        verify_with(&self.decoding, token, now_s)
    }
}

/// Verifies a token with a public key, as a host backend would with the published key set (e.g.
/// `DecodingKey::from_jwk`). Only EdDSA is accepted: a token claiming `none` or an HMAC algorithm
/// is refused. Time is an input: expiry is checked against `now_s`, not the clock.
pub fn verify_with(key: &DecodingKey, token: &str, now_s: u64) -> Result<SignInClaims, TokenError> {
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.validate_exp = false;
    // The audience (the project) is checked by the caller against its own project id (introspection
    // takes the one the backend serves: `http::IntrospectRequest::audience`).
    validation.validate_aud = false;
    validation.required_spec_claims = ["exp", "aud", "sub"].map(String::from).into();
    let claims = jsonwebtoken::decode::<SignInClaims>(token, key, &validation)
        .map_err(|e| match e.kind() {
            ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm | ErrorKind::InvalidEddsaKey | ErrorKind::InvalidKeyFormat => {
                TokenError::BadSignature
            }
            _ => TokenError::Malformed,
        })?
        .claims;
    if claims.exp <= now_s {
        return Err(TokenError::Expired);
    }
    Ok(claims)
}

fn write_private(path: &PathBuf, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: u64) -> SignInClaims {
        SignInClaims {
            iss: "vestibule".into(),
            sub: "eip155:1:0x52908400098527886E0F7030069857D2E4169EE7".into(),
            aud: "demo".into(),
            sid: "s".into(),
            sis: "si1".into(),
            origin: "http://localhost:3000".into(),
            method: "eip191".into(),
            iat: 100,
            exp,
        }
    }

    #[test]
    fn a_token_verifies_with_the_published_key_until_it_expires() {
        let keys = TokenKeys::from_secret([9; 32]);
        let token = keys.issue(&claims(200));
        let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_value(keys.jwks()).unwrap();
        let public = DecodingKey::from_jwk(&jwks.keys[0]).unwrap();
        assert_eq!(verify_with(&public, &token, 150).unwrap(), claims(200));
        assert_eq!(verify_with(&public, &token, 200), Err(TokenError::Expired));
    }

    #[test]
    fn tampered_tokens_and_other_keys_are_refused() {
        let keys = TokenKeys::from_secret([9; 32]);
        let token = keys.issue(&claims(200));
        let mut forged = claims(200);
        forged.sub = "eip155:1:0x0000000000000000000000000000000000000001".into();
        let (h, _, s) = {
            let mut p = token.split('.');
            (p.next().unwrap().to_string(), p.next().unwrap(), p.next().unwrap().to_string())
        };
        let tampered = format!("{h}.{}.{s}", URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap()));
        assert_eq!(keys.verify(&tampered, 150), Err(TokenError::BadSignature));
        assert_eq!(TokenKeys::from_secret([8; 32]).verify(&token, 150), Err(TokenError::BadSignature));
        assert_eq!(keys.verify("not.a.jwt.at-all", 150), Err(TokenError::Malformed));
    }

    #[test]
    fn tokens_that_name_another_algorithm_are_refused() {
        let keys = TokenKeys::from_secret([9; 32]);
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims(200)).unwrap());
        for alg in ["none", "HS256"] {
            let header = URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{alg}","typ":"JWT"}}"#));
            let forged = format!("{header}.{body}.");
            assert!(keys.verify(&forged, 150).is_err(), "{alg} accepted");
        }
        // An HMAC token keyed with the public key (the classic confusion attack).
        let public = keys.jwks()["keys"][0]["x"].as_str().unwrap().to_string();
        let hmac =
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims(200), &EncodingKey::from_secret(public.as_bytes())).unwrap();
        assert_eq!(keys.verify(&hmac, 150), Err(TokenError::BadSignature));
        // The positive probe: the same claims signed by the key verify.
        assert!(keys.verify(&keys.issue(&claims(200)), 150).is_ok());
    }

    #[test]
    fn the_key_is_created_once_and_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let first = TokenKeys::load_or_create(dir.path()).unwrap();
        let again = TokenKeys::load_or_create(dir.path()).unwrap();
        assert_eq!(first.kid(), again.kid());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("keys/siwx-ed25519.key")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
