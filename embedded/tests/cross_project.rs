//! One gateway, several projects: a visitor's users and wallets are kept per project. The outside
//! review's take-over (2026-12-08): project beta's backend registered a frame of its own for a
//! beta session, had a code mailed to the address of a visitor who made a wallet on project
//! alpha's site, and, with the code the visitor typed into beta's modal, received alpha's wallet's
//! server and recovery shares sealed to its key, the whole seed. A login through beta now finds
//! beta's user of that address, which reaches no wallet of alpha's.

mod support;

use actix_web::http::StatusCode;
use actix_web::{App, test};
use serde_json::{Value, json};
use support::{FRAME_ORIGIN, harness};
use vestibule_embedded::binding::test_keys::WalletKeys;
use vestibule_embedded::mail::MailPurpose;
use vestibule_embedded::seal::{open_as_frame, test_key_pair};
use vestibule_embedded::{EmbeddedService, OtpStep, Sealed, SeededEntropy, ShareKeys, configure_frame_routes};

macro_rules! app {
    ($service:expr) => {{
        let service = $service.clone();
        test::init_service(App::new().configure(move |cfg| configure_frame_routes(cfg, service))).await
    }};
}

async fn post(
    app: &impl actix_web::dev::Service<actix_http::Request, Response = actix_web::dev::ServiceResponse, Error = actix_web::Error>,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    let request = test::TestRequest::post().uri(path).insert_header(("origin", FRAME_ORIGIN)).set_json(body).to_request();
    let response = test::call_service(app, request).await;
    let status = response.status();
    let body: Value = serde_json::from_slice(&test::read_body(response).await).unwrap_or(Value::Null);
    (status, body)
}

const SERVER_SHARE: [u8; 33] = [0x11; 33];
const RECOVERY_SHARE: [u8; 33] = [0x33; 33];
const VICTIM: &str = "victim@example.test";

/// A frame of `session` (no device share), logged in by email through `service`: (frame key,
/// frameId, frameToken, the login's answer).
async fn log_in(
    service: &actix_web::web::Data<EmbeddedService>,
    mailer: &support::RecordingMailer,
    app: &impl actix_web::dev::Service<actix_http::Request, Response = actix_web::dev::ServiceResponse, Error = actix_web::Error>,
    session: &str,
    seed: u64,
) -> ((), String, String, OtpStep, Value) {
    // The frame's key pair is test_key_pair(SeededEntropy::new(seed)): the caller makes it again.
    let (_, public) = test_key_pair(&SeededEntropy::new(seed));
    let (status, frame) = post(app, "/api/frames", json!({ "sessionId": session, "hpkePublicKey": public, "deviceWallets": [] })).await;
    assert_eq!(status, StatusCode::OK, "{frame}");
    let (frame_id, token) = (frame["frameId"].as_str().unwrap().to_owned(), frame["frameToken"].as_str().unwrap().to_owned());
    let sent = service.send_login_otp(session, &frame_id, VICTIM).await.unwrap();
    let code = mailer.last_code(VICTIM);
    let (status, login) =
        post(app, "/api/email/verify", json!({ "frameToken": token, "challengeId": sent.challenge_id, "otp": code })).await;
    assert_eq!(status, StatusCode::OK, "{login}");
    ((), frame_id, token, sent.step, login)
}

/// The visitor's wallet, made on alpha's site: (the alpha user's id, the wallet's id).
async fn alpha_wallet(
    service: &actix_web::web::Data<EmbeddedService>,
    mailer: &support::RecordingMailer,
    app: &impl actix_web::dev::Service<actix_http::Request, Response = actix_web::dev::ServiceResponse, Error = actix_web::Error>,
) -> (String, String) {
    let (_, frame_id, token, _, login) = log_in(service, mailer, app, "alpha-session", 1).await;
    let user_id = login["userId"].as_str().unwrap().to_owned();
    let keys = WalletKeys::from_seed(7);
    let (evm, sol) = keys.sign_binding(&frame_id, &user_id);
    let (status, bound) = post(
        app,
        "/api/wallet",
        json!({
            "frameToken": token, "eip155Address": keys.eip155_address(), "solanaAddress": keys.solana_address(),
            "serverShare": vestibule_embedded::b64url(&SERVER_SHARE), "recoveryShare": vestibule_embedded::b64url(&RECOVERY_SHARE),
            "eip155Signature": evm, "solanaSignature": sol }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{bound}");
    (user_id, bound["walletId"].as_str().unwrap().to_owned())
}

fn two_projects(h: &support::Harness) {
    let mut projects = h.sink.projects.lock().unwrap();
    projects.insert("alpha-session".into(), "alpha".into());
    projects.insert("alpha-session-2".into(), "alpha".into());
    projects.insert("beta-session".into(), "beta".into());
}

#[actix_web::test]
async fn given_a_wallet_made_through_alpha_when_beta_registers_a_frame_and_the_visitor_types_betas_code_then_beta_gets_another_user_and_no_share()
 {
    let h = harness(vec![]);
    two_projects(&h);
    let app = app!(h.service);
    let (alpha_user, alpha_wallet_id) = alpha_wallet(&h.service, &h.mailer, &app).await;
    h.clock.advance_ms(31_000);

    // Project beta's backend: a frame of its own for a beta session, with no device share, and a
    // code for the visitor's address, which the visitor types into beta's modal.
    let (_, _, beta_token, step, login) = log_in(&h.service, &h.mailer, &app, "beta-session", 2).await;
    // The mail named the project that asked.
    assert_eq!(h.mailer.projects.lock().unwrap().last().map(String::as_str), Some("beta"));
    // Beta's user of that address is another user, with no wallet: no device step, no share.
    assert_eq!(step, OtpStep::VerifyOtp);
    let beta_user = login["userId"].as_str().unwrap().to_owned();
    assert_ne!(beta_user, alpha_user);
    assert_eq!(login["wallet"], Value::Null, "{login}");
    let (status, body) = post(&app, "/api/wallet/share", json!({ "frameToken": beta_token })).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("no_wallet")), "{body}");
    assert!(body.get("serverShare").is_none());
    assert_eq!(h.service.vault_user_id_by_email("beta", VICTIM).as_deref(), Some(beta_user.as_str()));
    assert_eq!(h.service.vault_user_id_by_email("alpha", VICTIM).as_deref(), Some(alpha_user.as_str()));

    // A frame of beta's session is not usable by a session of alpha (nor the reverse).
    h.clock.advance_ms(31_000);
    let (_, public) = test_key_pair(&SeededEntropy::new(3));
    let (_, frame) = post(&app, "/api/frames", json!({ "sessionId": "beta-session", "hpkePublicKey": public })).await;
    let beta_frame = frame["frameId"].as_str().unwrap();
    let error = h.service.send_login_otp("alpha-session", beta_frame, VICTIM).await.unwrap_err();
    assert_eq!(error.code(), "unauthorized");

    // The visitor on a new device of alpha's site still gets alpha's wallet (server + recovery).
    let (_, alpha_frame, _, step, login) = log_in(&h.service, &h.mailer, &app, "alpha-session-2", 4).await;
    let (alpha_key, _) = test_key_pair(&SeededEntropy::new(4));
    assert_eq!(step, OtpStep::VerifyDevice);
    assert_eq!(login["userId"], alpha_user.as_str());
    assert_eq!(login["wallet"]["walletId"], alpha_wallet_id.as_str());
    let open = |value: &Value| {
        let sealed: Sealed = serde_json::from_value(value.clone()).unwrap();
        open_as_frame(&alpha_key, &alpha_frame, &sealed).unwrap()
    };
    assert_eq!(open(&login["wallet"]["serverShare"]), SERVER_SHARE);
    assert_eq!(open(&login["wallet"]["recoveryShare"]), RECOVERY_SHARE);
    assert_eq!(h.mailer.projects.lock().unwrap().last().map(String::as_str), Some("alpha"));
    assert_eq!(h.mailer.sent.lock().unwrap().last().unwrap().2, MailPurpose::Login);
}

// ---- a vault written before users were kept per project (layout 1) ----

/// Turns the vault in `db` back into layout 1: emails and identities keyed without their
/// project, user records without it, no layout key.
fn to_layout_1(db: &sled::Db, project: &str) {
    let prefix = format!("{project}\0");
    for name in ["embedded/emails", "embedded/identities"] {
        let tree = db.open_tree(name).unwrap();
        for (key, value) in tree.iter().map(Result::unwrap) {
            tree.remove(&key).unwrap();
            tree.insert(&key[prefix.len()..], value).unwrap();
        }
    }
    let users = db.open_tree("embedded/users").unwrap();
    for (key, value) in users.iter().map(Result::unwrap) {
        let mut record: Value = serde_json::from_slice(&value).unwrap();
        assert_eq!(record.as_object_mut().unwrap().remove("project"), Some(json!(project)));
        users.insert(key, serde_json::to_vec(&record).unwrap()).unwrap();
    }
    db.open_tree("embedded/vault-meta").unwrap().remove("layout").unwrap();
    db.flush().unwrap();
}

static START: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A service (a gateway start) on `db` with the gateway's `projects` and `legacy_users_project`.
fn start(
    h: &support::Harness,
    db: &sled::Db,
    projects: &[&str],
    legacy: Option<&str>,
) -> Result<actix_web::web::Data<EmbeddedService>, String> {
    let mut config = support::config(h.dir.path());
    config.legacy_users_project = legacy.map(str::to_owned);
    EmbeddedService::builder(config, ShareKeys { server: [1; 32], recovery: [2; 32] }, h.mailer.clone(), h.sink.clone())
        .clock(h.clock.clone())
        // Another seed per start: a seed used again would draw the same user ids.
        .entropy(std::sync::Arc::new(SeededEntropy::new(11 + START.fetch_add(1, std::sync::atomic::Ordering::Relaxed))))
        .db(db.clone())
        .projects(projects.iter().map(|p| p.to_string()))
        .build()
        .map(actix_web::web::Data::new)
}

/// A layout-1 vault whose one user (the visitor, with a wallet) was made through alpha.
async fn legacy_db(h: &support::Harness) -> (sled::Db, String, String) {
    let db = sled::Config::new().temporary(true).open().unwrap();
    let service = start(h, &db, &["alpha", "beta"], None).unwrap();
    let app = app!(service);
    let (user, wallet) = alpha_wallet(&service, &h.mailer, &app).await;
    to_layout_1(&db, "alpha");
    (db, user, wallet)
}

#[actix_web::test]
async fn given_a_layout_1_vault_when_the_gateway_starts_with_several_projects_then_it_refuses_until_legacy_users_project_names_one() {
    let h = harness(vec![]);
    two_projects(&h);
    let (db, alpha_user, alpha_wallet_id) = legacy_db(&h).await;

    let error = start(&h, &db, &["alpha", "beta"], None).err().expect("refused");
    assert!(error.contains("legacy_users_project") && error.contains("alpha, beta"), "{error}");
    let error = start(&h, &db, &["alpha", "beta"], Some("gamma")).err().expect("refused");
    assert!(error.contains("legacy_users_project") && error.contains("gamma"), "{error}");

    let service = start(&h, &db, &["alpha", "beta"], Some("alpha")).unwrap();
    let app = app!(service);
    h.clock.advance_ms(31_000);
    let (_, _, _, _, login) = log_in(&service, &h.mailer, &app, "beta-session", 2).await;
    assert_ne!(login["userId"], alpha_user.as_str());
    assert_eq!(login["wallet"], Value::Null, "the legacy wallet is alpha's, not beta's");
    h.clock.advance_ms(31_000);
    let (_, _, _, step, login) = log_in(&service, &h.mailer, &app, "alpha-session-2", 3).await;
    assert_eq!(step, OtpStep::VerifyDevice);
    assert_eq!(
        (login["userId"].as_str(), login["wallet"]["walletId"].as_str()),
        (Some(alpha_user.as_str()), Some(alpha_wallet_id.as_str()))
    );
    assert!(login["wallet"]["recoveryShare"].is_object());
    drop((app, service));
    // Migrated once: a later start needs no key, whatever the projects.
    assert!(start(&h, &db, &["beta", "alpha", "gamma"], None).is_ok());
}

#[actix_web::test]
async fn given_a_layout_1_vault_when_the_gateway_has_one_project_then_its_users_go_to_that_project() {
    let h = harness(vec![]);
    two_projects(&h);
    let (db, alpha_user, alpha_wallet_id) = legacy_db(&h).await;
    let service = start(&h, &db, &["alpha"], None).unwrap();
    let app = app!(service);
    h.clock.advance_ms(31_000);
    let (_, _, _, _, login) = log_in(&service, &h.mailer, &app, "alpha-session-2", 3).await;
    assert_eq!(
        (login["userId"].as_str(), login["wallet"]["walletId"].as_str()),
        (Some(alpha_user.as_str()), Some(alpha_wallet_id.as_str()))
    );
}
