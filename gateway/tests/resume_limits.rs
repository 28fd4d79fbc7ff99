//! Resumes are rate limited per client address and per session (`[limits] resumes_per_minute`,
//! `resume_burst`, `session_resumes_per_minute`, `session_resume_burst`): a resume's welcome may
//! carry the whole state, and an outside review overloaded a cluster's owner gateway with one
//! client resuming its own large session ~40 times a second. One `vestibule serve` on sled, real
//! WebSocket clients from loopback addresses of their own. The refusal is the protocol's
//! `rate_limited` with close 1013 (try again later), as for new sessions.
//!
//! Counted in events, not seconds: the rates are one a minute, so the test can only be wrong if it
//! takes more than a minute between two resumes; the checks allow for that.

mod support;

use std::net::IpAddr;
use std::time::Instant;

use serde_json::{Value, json};
use support::*;
use vestibule_actors::protocol::PROTOCOL_VERSION;

const SESSION_BURST: u64 = 3;
const ADDRESS_BURST: u64 = 6;

fn config() -> String {
    format!(
        "{CONFIG}\n[limits]\nresumes_per_minute = 1\nresume_burst = {ADDRESS_BURST}\n\
         session_resumes_per_minute = 1\nsession_resume_burst = {SESSION_BURST}\n"
    )
}

fn ip(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

/// A resume of `session` from `source`: `Ok(welcome)`, or `Err((error frame, close code))`.
async fn resume(gateway: &Gateway, source: IpAddr, session: &str, token: &str) -> Result<Value, (Value, Option<u16>)> {
    let mut ws = connect_from(gateway, source).await;
    let hello = json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "sessionId": session, "resumeToken": token });
    send(&mut ws, hello).await;
    let first = recv_json(&mut ws).await;
    if first["type"] == "welcome" {
        return Ok(first);
    }
    let (code, _) = read_until_close(&mut ws).await;
    Err((first, code))
}

fn assert_rate_limited(refusal: &(Value, Option<u16>), what: &str) {
    let (frame, code) = refusal;
    assert_eq!((frame["code"].as_str(), frame["close"].as_u64(), *code), (Some("rate_limited"), Some(1013), Some(1013)), "{frame}");
    assert!(frame["message"].as_str().unwrap().contains(what), "{frame}");
}

/// Tokens refilled since `start` at one a minute (a bound for a test slower than a minute).
fn refilled(start: Instant) -> u64 {
    start.elapsed().as_secs() / 60 + 1
}

#[tokio::test]
async fn resumes_of_one_session_beyond_its_burst_are_refused_with_1013_and_other_sessions_resume() {
    let gateway = Gateway::start(&config());
    let owner = Client::create_from(&gateway, ip(2), json!({})).await;
    let (session, token) = (owner.session_id.clone(), owner.resume_token.clone());
    owner.close().await;

    // Given the session's burst spent (each resume from an address of its own: the per-address
    // limit is not what refuses)
    let start = Instant::now();
    let mut accepted = 0;
    let refusal = loop {
        match resume(&gateway, ip(10 + accepted as u8), &session, &token).await {
            Ok(welcome) => assert_eq!(welcome["sessionId"], session.as_str()),
            Err(refusal) => break refusal,
        }
        accepted += 1;
        assert!(accepted <= SESSION_BURST + refilled(start), "no resume of the session was refused");
    };
    // Then the next is refused as "try again later", and not before the burst
    assert!(accepted >= SESSION_BURST, "{accepted} resumes before the first refusal");
    assert_rate_limited(&refusal, "resumes of this session");

    // A wrong token spends nothing of the session's: it is refused as unauthorized, not limited
    let wrong = resume(&gateway, ip(30), &session, "not-the-token").await.unwrap_err();
    assert_eq!(wrong.0["code"], "unauthorized", "{}", wrong.0);

    // And another session, from the same addresses, resumes (the probe: the refusal was the
    // session's limit, not a broken gateway)
    let other = Client::create_from(&gateway, ip(2), json!({})).await;
    let (other_session, other_token) = (other.session_id.clone(), other.resume_token.clone());
    other.close().await;
    let welcome = resume(&gateway, ip(10), &other_session, &other_token).await.expect("another session resumes");
    assert_eq!(welcome["sessionId"], other_session.as_str());
}

#[tokio::test]
async fn resumes_from_one_address_beyond_its_burst_are_refused_with_1013_and_other_addresses_resume() {
    let gateway = Gateway::start(&config());
    // Sessions enough that no session's own limit is reached: at most 2 resumes each
    let mut sessions = Vec::new();
    for _ in 0..ADDRESS_BURST {
        let client = Client::create_from(&gateway, ip(2), json!({})).await;
        sessions.push((client.session_id.clone(), client.resume_token.clone()));
        client.close().await;
    }

    // Given one address's burst spent, a resume with a wrong token counted too (before the check)
    let attacker = ip(3);
    let start = Instant::now();
    let wrong = resume(&gateway, attacker, &sessions[0].0, "not-the-token").await.unwrap_err();
    assert_eq!(wrong.0["code"], "unauthorized", "{}", wrong.0);
    let mut accepted = 1; // the unauthorized one
    let refusal = loop {
        let (session, token) = &sessions[(accepted as usize) % sessions.len()];
        match resume(&gateway, attacker, session, token).await {
            Ok(_) => accepted += 1,
            Err(refusal) => break refusal,
        }
        assert!(accepted <= ADDRESS_BURST + refilled(start), "no resume from the address was refused");
    };
    // Then the next is refused, and not before the burst
    assert!(accepted >= ADDRESS_BURST, "{accepted} resumes before the first refusal");
    assert_rate_limited(&refusal, "resumes from this address");

    // And the same session resumes from another address (the probe), and the refused address may
    // still create a session (new sessions are counted apart)
    let (session, token) = &sessions[(accepted as usize) % sessions.len()];
    resume(&gateway, ip(4), session, token).await.expect("another address resumes");
    Client::create_from(&gateway, attacker, json!({})).await.close().await;
}
