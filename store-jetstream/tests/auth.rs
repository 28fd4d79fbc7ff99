//! Logging in to NATS (review finding: the gateways had no way to, so a NATS server with
//! authorization could not be used and one without it let anyone in). A real nats-server with
//! authorization: the log and the leases open with the right secret, read from its file, each way
//! NATS offers (user and password, token, nkey, a `.creds` file on a server in operator mode); the
//! wrong secret or none is refused at once, not retried until `open_timeout`, and no message carries
//! the secret. Credentials in a server URL (which the client ignores and the logs would show) are
//! refused before connecting.

use std::path::PathBuf;
use std::time::Duration;

use vestibule_store::contract::{events, new_session};
use vestibule_store::{EventLog, SessionId};
use vestibule_store_jetstream::lease::Leases;
use vestibule_store_jetstream::test_server::NatsServer;
use vestibule_store_jetstream::{JetStreamConfig, JetStreamEventLog, async_nats};

const PASSWORD: &str = "s3cret-pa55word";
const TOKEN: &str = "t0ken-of-the-gateways";

fn config(server: &NatsServer) -> JetStreamConfig {
    // A refusal returns at once; were it retried, the test would fail after this, naming the attempts.
    JetStreamConfig {
        open_timeout: Duration::from_secs(60),
        request_timeout: Duration::from_secs(30),
        ..JetStreamConfig::at([server.url.clone()])
    }
}

/// `text` in a file of the server's directory (a secret as an operator would keep it).
fn secret_file(server: &NatsServer, name: &str, text: &str) -> PathBuf {
    let path = server.dir.path().join(name);
    std::fs::write(&path, format!("{text}\n")).unwrap();
    path
}

/// Opens the log with `config`; gives the attempts it took, or the error.
async fn open(config: JetStreamConfig) -> Result<u32, String> {
    match JetStreamEventLog::open(config).await {
        Ok(log) => {
            // The positive side: the log works, not only connects.
            let s = SessionId::random();
            log.create_session(s, new_session("p")).await.map_err(|e| e.to_string())?;
            log.append(s, 0, events(1..=2)).await.map_err(|e| e.to_string())?;
            Ok(log.open_attempts())
        }
        Err(e) => Err(e.to_string()),
    }
}

fn refused_at_once(outcome: Result<u32, String>, secret: &str) -> String {
    let error = outcome.expect_err("the log opened");
    assert!(error.contains("1 attempt ") || !error.contains("attempts"), "refused at the first attempt, not retried: {error}");
    assert!(secret.is_empty() || !error.contains(secret), "the secret is not in the message: {error}");
    error
}

#[tokio::test]
async fn given_a_server_with_a_user_and_password_when_the_log_opens_with_them_then_it_works_and_without_or_with_another_it_is_refused_at_once()
 {
    let server = NatsServer::start_with_config(&format!("authorization {{ user: vestibule, password: \"{PASSWORD}\" }}"));
    let right = secret_file(&server, "password", PASSWORD);
    let wrong = secret_file(&server, "wrong", "not-the-password");

    let with =
        |password_file: PathBuf| JetStreamConfig { user: Some("vestibule".into()), password_file: Some(password_file), ..config(&server) };
    assert_eq!(open(with(right.clone())).await, Ok(1));
    let error = refused_at_once(open(with(wrong)).await, PASSWORD);
    assert!(error.to_lowercase().contains("authorization"), "{error}");
    let error = refused_at_once(open(config(&server)).await, PASSWORD);
    assert!(error.to_lowercase().contains("authorization"), "{error}");

    // The leases' own connection logs in the same way.
    let leases = Leases::join(&with(right.clone()), "g1", Duration::from_secs(10)).await;
    assert!(leases.is_ok(), "{:?}", leases.err());
    assert!(Leases::join(&config(&server), "g2", Duration::from_secs(10)).await.is_err());
}

#[tokio::test]
async fn given_a_server_with_a_token_when_the_log_opens_with_its_file_then_it_works_and_another_token_is_refused() {
    let server = NatsServer::start_with_config(&format!("authorization {{ token: \"{TOKEN}\" }}"));
    let with = |file: PathBuf| JetStreamConfig { token_file: Some(file), ..config(&server) };
    assert_eq!(open(with(secret_file(&server, "token", TOKEN))).await, Ok(1));
    refused_at_once(open(with(secret_file(&server, "other", "another-token"))).await, TOKEN);
}

#[tokio::test]
async fn given_a_server_with_an_nkey_user_when_the_log_opens_with_its_seed_then_it_works_and_another_seed_is_refused() {
    let user = nkeys::KeyPair::new_user();
    let server = NatsServer::start_with_config(&format!("authorization {{ users = [ {{ nkey: \"{}\" }} ] }}", user.public_key()));
    let seed = user.seed().unwrap();
    let with = |file: PathBuf| JetStreamConfig { nkey_seed_file: Some(file), ..config(&server) };
    assert_eq!(open(with(secret_file(&server, "seed", &seed))).await, Ok(1));
    let other = nkeys::KeyPair::new_user().seed().unwrap();
    refused_at_once(open(with(secret_file(&server, "other-seed", &other))).await, &seed);
}

#[tokio::test]
async fn given_a_missing_or_empty_secret_file_then_opening_says_which_field_and_file() {
    let server = NatsServer::start();
    let missing = server.dir.path().join("no-such-file");
    let error = open(JetStreamConfig { token_file: Some(missing.clone()), ..config(&server) }).await.unwrap_err();
    assert!(error.contains("`token_file`") && error.contains(&missing.display().to_string()), "{error}");
    let empty = server.dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let error = open(JetStreamConfig { user: Some("u".into()), password_file: Some(empty), ..config(&server) }).await.unwrap_err();
    assert!(error.contains("`password_file`") && error.contains("empty"), "{error}");
}

#[test]
fn credentials_in_a_server_url_or_several_ways_to_log_in_are_refused_before_connecting() {
    let at = |url: &str| JetStreamConfig::at([url]);
    let error = at("nats://vestibule:hunter2@10.0.0.1:4222").validate().unwrap_err();
    assert!(error.contains("`servers`") && !error.contains("hunter2") && error.contains("***@10.0.0.1:4222"), "{error}");
    assert!(at("tls://token@nats.example:4222").validate().is_err());
    assert_eq!(at("nats://10.0.0.1:4222").validate(), Ok(()));
    assert_eq!(at("nats.example:4222").validate(), Ok(()));

    let both = JetStreamConfig { token_file: Some("t".into()), nkey_seed_file: Some("n".into()), ..JetStreamConfig::default() };
    assert!(both.validate().unwrap_err().contains("one way"));
    let alone = JetStreamConfig { user: Some("u".into()), ..JetStreamConfig::default() };
    assert!(alone.validate().unwrap_err().contains("password_file"));
    let half = JetStreamConfig { tls_cert_file: Some("c".into()), ..JetStreamConfig::default() };
    assert!(half.validate().unwrap_err().contains("tls_key_file"));
}

/// A CA, a certificate of it for 127.0.0.1 (the server's) and one for a client, as PEM files in
/// `dir`: (ca, server cert, server key, client cert, client key).
fn certificates(dir: &std::path::Path) -> [PathBuf; 5] {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "Vestibule test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let issue = |name: &str, purpose: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![purpose];
        (params.signed_by(&key, &ca, &ca_key).unwrap(), key)
    };
    let (server, server_key) = issue("nats", ExtendedKeyUsagePurpose::ServerAuth);
    let (client, client_key) = issue("vestibule", ExtendedKeyUsagePurpose::ClientAuth);
    let files = [
        ("ca.pem", ca.pem()),
        ("server.pem", server.pem()),
        ("server-key.pem", server_key.serialize_pem()),
        ("client.pem", client.pem()),
        ("client-key.pem", client_key.serialize_pem()),
    ];
    files.map(|(name, pem)| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path
    })
}

#[tokio::test]
async fn given_a_server_that_verifies_clients_over_tls_when_the_log_opens_with_the_ca_and_a_client_certificate_then_it_works_and_without_them_it_is_refused_at_once()
 {
    let dir = tempfile::tempdir().unwrap();
    let [ca, cert, key, client_cert, client_key] = certificates(dir.path());
    let server = NatsServer::start_with_config(&format!(
        "tls {{ cert_file: {:?}, key_file: {:?}, ca_file: {:?}, verify: true }}",
        cert.display().to_string(),
        key.display().to_string(),
        ca.display().to_string()
    ));
    let tls = JetStreamConfig {
        tls_ca_file: Some(ca.clone()),
        tls_cert_file: Some(client_cert),
        tls_key_file: Some(client_key),
        ..config(&server)
    };
    assert_eq!(open(tls.clone()).await, Ok(1));
    // No client certificate: the server refuses the handshake.
    let error = refused_at_once(open(JetStreamConfig { tls_cert_file: None, tls_key_file: None, ..tls.clone() }).await, "");
    assert!(error.contains("CertificateRequired"), "{error}");
    // The system's roots do not know the test CA: the server's certificate is refused.
    let error = refused_at_once(open(JetStreamConfig { tls_ca_file: None, require_tls: true, ..tls }).await, "");
    assert!(error.contains("UnknownIssuer"), "{error}");
}

#[tokio::test]
async fn given_the_gateways_in_a_nats_account_of_their_own_then_a_user_of_another_account_cannot_read_the_signing_key_nor_the_log() {
    let server = NatsServer::start_with_config(&format!(
        "accounts {{\n  GATEWAYS {{ jetstream: enabled, users: [ {{ user: vestibule, password: \"{PASSWORD}\" }} ] }}\n  \
         OTHERS {{ jetstream: enabled, users: [ {{ user: other, password: other }} ] }}\n}}"
    ));
    let gateways = JetStreamConfig {
        user: Some("vestibule".into()),
        password_file: Some(secret_file(&server, "password", PASSWORD)),
        ..config(&server)
    };
    assert_eq!(open(gateways.clone()).await, Ok(1));
    let leases = Leases::join(&gateways, "g1", Duration::from_secs(10)).await.unwrap();
    let key = leases.shared_secret("siwx", [7; 32]).await.unwrap();
    assert_eq!(key, [7; 32]);
    // The positive probe: a gateway's own client reads the bucket.
    let client = |user: &str, password: &str| {
        async_nats::ConnectOptions::with_user_and_password(user.into(), password.into()).connect(server.url.clone())
    };
    let read = |client: async_nats::Client| async move {
        let kv = async_nats::jetstream::new(client).get_key_value("VESTIBULE_secrets").await.map_err(|e| e.to_string())?;
        kv.get("siwx").await.map_err(|e| e.to_string())
    };
    let own = read(client("vestibule", PASSWORD).await.unwrap()).await;
    assert!(matches!(&own, Ok(Some(value)) if !value.is_empty()), "{own:?}");
    // Another account sees neither the bucket nor the stream.
    let other = client("other", "other").await.unwrap();
    assert!(read(other.clone()).await.is_err(), "another account read the signing key");
    assert!(async_nats::jetstream::new(other).get_stream("VESTIBULE").await.is_err(), "another account sees the log");
}

/// NATS JWTs (nats-io/jwt v2: a JWS with header `{"typ":"JWT","alg":"ed25519-nkey"}`, signed with
/// the issuer's nkey), minted here as `nsc` would for a server in operator mode. No maintained crate
/// writes operator JWTs (nats-jwt has accounts and users only; nats-io-jwt calls itself a work in
/// progress), and the format is three lines of JSON.
mod nats_jwt {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    pub fn sign(issuer: &nkeys::KeyPair, subject: &str, name: &str, nats: serde_json::Value) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
        // The server checks the signature, the issuer and the claims, not how the id was made.
        let id = hex::encode(rand::random::<[u8; 16]>());
        let claims = serde_json::json!({
            "jti": id, "iat": 1_700_000_000u64, "iss": issuer.public_key(), "name": name, "sub": subject, "nats": nats,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signature = URL_SAFE_NO_PAD.encode(issuer.sign(format!("{header}.{claims}").as_bytes()).unwrap());
        format!("{header}.{claims}.{signature}")
    }

    pub fn operator(operator: &nkeys::KeyPair) -> String {
        sign(operator, &operator.public_key(), "test operator", serde_json::json!({ "type": "operator", "version": 2 }))
    }

    /// An account with nothing limited, and JetStream if `jetstream` (storage limits other than 0
    /// enable it; the system account may not have it).
    pub fn account(operator: &nkeys::KeyPair, account: &nkeys::KeyPair, name: &str, jetstream: bool) -> String {
        let storage = if jetstream { -1 } else { 0 };
        let limits = serde_json::json!({
            "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": true, "conn": -1,
            "leaf": -1, "mem_storage": storage, "disk_storage": storage, "streams": -1, "consumer": -1,
        });
        sign(operator, &account.public_key(), name, serde_json::json!({ "limits": limits, "type": "account", "version": 2 }))
    }

    pub fn user(account: &nkeys::KeyPair, user: &nkeys::KeyPair) -> String {
        let nats = serde_json::json!({ "subs": -1, "data": -1, "payload": -1, "type": "user", "version": 2 });
        sign(account, &user.public_key(), "gateway", nats)
    }

    /// A `.creds` file's text, laid out as `nsc generate creds` writes it.
    pub fn creds(jwt: &str, seed: &str) -> String {
        format!(
            "-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n\
             ************************* IMPORTANT *************************\n\
             NKEY Seed printed below can be used to sign and prove identity.\n\
             NKEYs are sensitive and should be treated as secrets.\n\n\
             -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n\n\
             *************************************************************\n"
        )
    }
}

#[tokio::test]
async fn given_a_server_in_operator_mode_when_the_log_opens_with_a_creds_file_of_a_user_of_its_account_then_it_works_and_a_user_the_server_does_not_trust_is_refused_at_once()
 {
    let operator = nkeys::KeyPair::new_operator();
    let (gateways, system) = (nkeys::KeyPair::new_account(), nkeys::KeyPair::new_account());
    let server = NatsServer::start_with_config(&format!(
        "operator: \"{}\"\nsystem_account: {}\nresolver: MEMORY\nresolver_preload: {{\n  {}: \"{}\"\n  {}: \"{}\"\n}}\n",
        nats_jwt::operator(&operator),
        system.public_key(),
        gateways.public_key(),
        nats_jwt::account(&operator, &gateways, "GATEWAYS", true),
        system.public_key(),
        nats_jwt::account(&operator, &system, "SYS", false),
    ));
    let user = nkeys::KeyPair::new_user();
    let seed = user.seed().unwrap();
    let with = |file: PathBuf| JetStreamConfig { credentials_file: Some(file), ..config(&server) };
    let creds = secret_file(&server, "gateway.creds", &nats_jwt::creds(&nats_jwt::user(&gateways, &user), &seed));
    assert_eq!(open(with(creds.clone())).await, Ok(1));
    let leases = Leases::join(&with(creds), "g1", Duration::from_secs(10)).await;
    assert!(leases.is_ok(), "{:?}", leases.err());

    // A user signed by an account the operator never signed: the server does not know it.
    let stranger = nkeys::KeyPair::new_user();
    let stranger_seed = stranger.seed().unwrap();
    let untrusted = nats_jwt::user(&nkeys::KeyPair::new_account(), &stranger);
    let error = refused_at_once(
        open(with(secret_file(&server, "untrusted.creds", &nats_jwt::creds(&untrusted, &stranger_seed)))).await,
        &stranger_seed,
    );
    assert!(error.to_lowercase().contains("authorization"), "{error}");
    // The right JWT with another user's seed: it cannot sign the server's nonce as that user.
    let other_seed = nkeys::KeyPair::new_user().seed().unwrap();
    let mismatched = nats_jwt::creds(&nats_jwt::user(&gateways, &user), &other_seed);
    let error = refused_at_once(open(with(secret_file(&server, "mismatched.creds", &mismatched))).await, &other_seed);
    assert!(error.to_lowercase().contains("authorization"), "{error}");
    // No credentials at all.
    refused_at_once(open(config(&server)).await, "");
}

#[tokio::test]
async fn given_a_missing_or_malformed_creds_file_then_opening_says_credentials_file() {
    let server = NatsServer::start();
    let missing = server.dir.path().join("no-such.creds");
    let error = open(JetStreamConfig { credentials_file: Some(missing.clone()), ..config(&server) }).await.unwrap_err();
    assert!(error.contains("`credentials_file`") && error.contains(&missing.display().to_string()), "{error}");
    let garbled = secret_file(&server, "garbled.creds", "not a creds file");
    let error = open(JetStreamConfig { credentials_file: Some(garbled), ..config(&server) }).await.unwrap_err();
    assert!(error.contains("`credentials_file`") && error.contains("cannot parse"), "{error}");
}
