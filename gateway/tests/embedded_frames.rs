//! The embedded wallet's frame API against the real gateway process, as an outsider would use it: a
//! frame registers only for a session that is live on the gateway (made-up ids once filled the
//! registry and locked every visitor out of email and social login for 24 hours), and a session
//! takes the embedded service's notices only about the frame it announced (a frame registered by
//! whoever learnt the session id once reset the visitor's login with a made-up code).

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use vestibule_embedded::SeededEntropy;
use vestibule_embedded::seal::test_key_pair;

fn embedded_config(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("frame-assets")).unwrap();
    std::fs::create_dir_all(dir.join("mail")).unwrap();
    std::fs::write(dir.join("share.key"), "11".repeat(32)).unwrap();
    std::fs::write(dir.join("recovery.key"), "22".repeat(32)).unwrap();
    let path = |name: &str| dir.join(name).display().to_string();
    format!(
        "{CONFIG}\n[embedded]\nframe_listen = \"127.0.0.1:0\"\nframe_assets_dir = \"{}\"\nshare_key_file = \"{}\"\nrecovery_key_file = \"{}\"\n\n\
         [embedded.smtp]\nhost = \"localhost\"\nport = 25\nfrom = \"Vestibule <login@localhost>\"\nfile_dir = \"{}\"\n",
        path("frame-assets"),
        path("share.key"),
        path("recovery.key"),
        path("mail"),
    )
}

/// POSTs JSON to the frame origin's API from the frame origin: status and body.
async fn post_frame_api(frame_origin: &str, path: &str, body: Value) -> (u16, Value) {
    let addr = frame_origin.strip_prefix("http://").expect("an http frame origin");
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: {frame_origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| serde_json::from_str(b).unwrap_or(Value::Null)).unwrap_or(Value::Null);
    (status, body)
}

async fn register_frame(frame_origin: &str, session_id: &str, entropy: &SeededEntropy) -> (u16, Value) {
    let (_, public_key) = test_key_pair(entropy);
    post_frame_api(frame_origin, "/api/frames", json!({ "sessionId": session_id, "hpkePublicKey": public_key, "deviceWallets": [] })).await
}

fn code_in(dir: &Path) -> String {
    let mail = std::fs::read_dir(dir).unwrap().next().expect("a mail was written").unwrap().path();
    let text = std::fs::read_to_string(mail).unwrap();
    text.lines().map(str::trim).find(|l| l.len() == 6 && l.bytes().all(|b| b.is_ascii_digit())).expect("a code in the mail").to_string()
}

fn wrong(code: &str) -> String {
    let first = (code.as_bytes()[0] - b'0' + 1) % 10;
    format!("{first}{}", &code[1..])
}

#[tokio::test]
async fn frames_register_only_for_live_sessions_and_a_session_hears_only_its_own_frame() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(&embedded_config(dir.path()));
    let entropy = SeededEntropy::new(7);
    let mut host = Client::create(&gateway, json!({ "features": { "email": true } })).await;
    let frame_origin = host.state["embedded"]["frameOrigin"].as_str().expect("the embedded wallet is on").to_string();

    // Given made-up session ids, well formed or not, and the live session's id in capitals (each
    // other spelling would otherwise have had frames of its own: thousands per session): nothing
    // registers.
    for made_up in [vestibule_store::SessionId::random().to_string(), "s1".to_string(), host.session_id.to_uppercase()] {
        let (status, body) = register_frame(&frame_origin, &made_up, &entropy).await;
        assert_eq!((status, body["error"]["code"].as_str()), (404, Some("unknown_session")), "{made_up}: {body}");
    }
    // The visitor's own frame registers, and the page announces it.
    let (status, frame) = register_frame(&frame_origin, &host.session_id, &entropy).await;
    assert_eq!(status, 200, "{frame}");
    let (frame_id, frame_token) = (frame["frameId"].as_str().unwrap().to_string(), frame["frameToken"].as_str().unwrap().to_string());
    host.command(json!({ "type": "EmbeddedFrameReady", "frameId": frame_id })).await;
    wait_for(&mut host, "the frame is ready", Duration::from_secs(30), |s| s["embedded"]["frame"]["status"] == "ready").await;
    host.command(json!({ "type": "ConnectEmail", "email": "visitor@example.com" })).await;
    wait_for(&mut host, "the code is mailed", Duration::from_secs(30), |s| s["embedded"]["login"]["status"] == "awaitingOtp").await;
    let challenge = host.state["embedded"]["login"]["challengeId"].as_str().expect("a challenge").to_string();

    // When someone who learnt the session id registers a frame of their own for it (the session is
    // live, so that registers) and posts a made-up code through it
    let (status, intruder) = register_frame(&frame_origin, &host.session_id, &entropy).await;
    assert_eq!(status, 200, "{intruder}");
    let (status, body) = post_frame_api(
        &frame_origin,
        "/api/email/verify",
        json!({ "frameToken": intruder["frameToken"], "challengeId": "c-0", "otp": "000000" }),
    )
    .await;
    assert_eq!(status, 400, "{body}");

    // Then the session is untouched, while a wrong code through the announced frame is heard: the
    // intruder's notice ("Code expired", back to Connect) would have ended the challenge before it.
    let code = code_in(&dir.path().join("mail"));
    let (status, body) = post_frame_api(
        &frame_origin,
        "/api/email/verify",
        json!({ "frameToken": frame_token, "challengeId": challenge, "otp": wrong(&code) }),
    )
    .await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("otp_wrong")), "{body}");
    wait_for(&mut host, "the wrong code is heard", Duration::from_secs(30), |s| s["embedded"]["login"]["attemptsLeft"] == 4).await;
    assert_eq!(host.state["embedded"]["login"]["status"], "awaitingOtp", "{:#}", host.state["embedded"]);
    assert!(!host.state["toasts"].to_string().contains("expired"), "{:#}", host.state["toasts"]);
    // And the right code logs the visitor in.
    let (status, body) =
        post_frame_api(&frame_origin, "/api/email/verify", json!({ "frameToken": frame_token, "challengeId": challenge, "otp": code }))
            .await;
    assert_eq!(status, 200, "{body}");
    wait_for(&mut host, "the login is heard", Duration::from_secs(30), |s| s["embedded"]["login"]["status"] != "awaitingOtp").await;
}

/// A session whose frame registers from the local address `from` (the gateway counts mailed codes
/// per client address) and asks for a login code for `email`; gives the session's client.
async fn ask_for_a_code_from(gateway: &Gateway, from: std::net::IpAddr, email: &str, entropy: &SeededEntropy) -> Client {
    ask_for_a_code_via(gateway, from, None, email, entropy).await
}

/// [`ask_for_a_code_from`] with the frame's registration carrying `X-Forwarded-For: forwarded_for`,
/// as a reverse proxy at `from` sends it.
async fn ask_for_a_code_via(
    gateway: &Gateway,
    from: std::net::IpAddr,
    forwarded_for: Option<&str>,
    email: &str,
    entropy: &SeededEntropy,
) -> Client {
    let mut host = Client::create(gateway, json!({ "features": { "email": true } })).await;
    let frame_origin = host.state["embedded"]["frameOrigin"].as_str().expect("the embedded wallet is on").to_string();
    let addr: std::net::SocketAddr = frame_origin.strip_prefix("http://").unwrap().parse().unwrap();
    let (_, public_key) = test_key_pair(entropy);
    let body = json!({ "sessionId": host.session_id, "hpkePublicKey": public_key, "deviceWallets": [] }).to_string();
    let request = format!(
        "POST /api/frames HTTP/1.1\r\nHost: {addr}\r\nOrigin: {frame_origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{body}",
        body.len(),
        forwarded_for.map(|f| format!("X-Forwarded-For: {f}\r\n")).unwrap_or_default()
    );
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind((from, 0).into()).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let frame: Value = serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1).unwrap();
    let frame_id = frame["frameId"].as_str().unwrap_or_else(|| panic!("a frame: {response}")).to_string();
    host.command(json!({ "type": "EmbeddedFrameReady", "frameId": frame_id })).await;
    wait_for(&mut host, "the frame is ready", Duration::from_secs(30), |s| s["embedded"]["frame"]["status"] == "ready").await;
    host.command(json!({ "type": "ConnectEmail", "email": email })).await;
    host
}

#[tokio::test]
async fn the_frames_of_one_client_address_have_its_budget_of_codes_mailed_whatever_the_sessions_and_another_address_is_served() {
    let dir = tempfile::tempdir().unwrap();
    // (127.0.0.3 is a trusted reverse proxy, for the end of the test)
    let config = format!(
        "trusted_proxies = [\"127.0.0.3\"]\n{}",
        embedded_config(dir.path()).replace("[embedded]\n", "[embedded]\nmails_per_ip_per_hour = 2\n")
    );
    let gateway = Gateway::start(&config);
    let entropy = SeededEntropy::new(8);
    let local: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let mails = || std::fs::read_dir(dir.path().join("mail")).unwrap().count();

    // Given two sessions whose frames registered from 127.0.0.1 and each had a code mailed
    for n in 0..2 {
        let mut host = ask_for_a_code_from(&gateway, local, &format!("v{n}@example.com"), &entropy).await;
        wait_for(&mut host, "the code is mailed", Duration::from_secs(30), |s| s["embedded"]["login"]["status"] == "awaitingOtp").await;
    }
    assert_eq!(mails(), 2);

    // When a third session's frame from that address asks for a code to yet another address
    let mut third = ask_for_a_code_from(&gateway, local, "v2@example.com", &entropy).await;

    // Then the visitor reads that their network asked for too many (one code refills every 30 minutes)
    wait_for(&mut third, "the refusal", Duration::from_secs(30), |s| s["toasts"].to_string().contains("Too many codes")).await;
    let toasts = third.state["toasts"].to_string();
    assert!(toasts.contains("Too many codes were requested from your network. Please try again in 30 minutes"), "{toasts}");
    assert_ne!(third.state["embedded"]["login"]["status"], "awaitingOtp");
    assert_eq!(mails(), 2, "no third code was mailed");
    // And a session whose frame registered from another address is mailed (positive probe)
    let mut other = ask_for_a_code_from(&gateway, "127.0.0.2".parse().unwrap(), "w@example.com", &entropy).await;
    wait_for(&mut other, "the code is mailed", Duration::from_secs(30), |s| s["embedded"]["login"]["status"] == "awaitingOtp").await;
    assert_eq!(mails(), 3);

    // Through the trusted proxy, a frame is counted under the address it forwards: 127.0.0.1's
    // budget is spent, another client's is not
    let proxy: std::net::IpAddr = "127.0.0.3".parse().unwrap();
    let mut forwarded = ask_for_a_code_via(&gateway, proxy, Some("127.0.0.1"), "x@example.com", &entropy).await;
    wait_for(&mut forwarded, "the refusal", Duration::from_secs(30), |s| s["toasts"].to_string().contains("Too many codes")).await;
    let mut another = ask_for_a_code_via(&gateway, proxy, Some("203.0.113.9"), "y@example.com", &entropy).await;
    wait_for(&mut another, "the code is mailed", Duration::from_secs(30), |s| s["embedded"]["login"]["status"] == "awaitingOtp").await;
    assert_eq!(mails(), 4);
}

/// A Farcaster relay that opens channels and keeps every one pending: `POST /v1/channel` answers
/// 201 with a channel, `GET /v1/channel/status` 202 pending. Gives its URL and its count of polls.
async fn pending_relay() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let polls = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = polls.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let polls = counted.clone();
            tokio::spawn(async move {
                let Ok(head) = support::raw::read_head(&mut stream).await else { return };
                let length = head
                    .lines()
                    .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length:").map(|n| n.trim().parse::<usize>().unwrap()))
                    .unwrap_or(0);
                let mut request = vec![0u8; length];
                if stream.read_exact(&mut request).await.is_err() {
                    return;
                }
                let (status, body) = if head.starts_with("POST /v1/channel ") {
                    // The channel carries the service's nonce back, as a relay does.
                    let nonce = serde_json::from_slice::<Value>(&request).unwrap_or_default()["nonce"].clone();
                    (
                        "201 Created",
                        json!({ "channelToken": "c0ffee", "url": "https://warpcast.com/~/siwf?channelToken=c0ffee", "nonce": nonce }),
                    )
                } else if head.starts_with("GET /v1/channel/status ") {
                    polls.fetch_add(1, Ordering::Relaxed);
                    ("202 Accepted", json!({ "state": "pending" }))
                } else {
                    ("404 Not Found", json!({}))
                };
                let body = body.to_string();
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (url, polls)
}

#[tokio::test]
async fn a_request_that_has_arrived_may_take_longer_than_its_arrival_is_allowed() {
    // Given a gateway that gives a request 1 s to arrive (head and body), and a Farcaster relay on
    // which the visitor never approves, polled every 100 ms up to 3 s (31 polls: the bound is a
    // count, so the long poll lasts at least 3 s however fast or slow the machine)
    let dir = tempfile::tempdir().unwrap();
    let (relay_url, polls) = pending_relay().await;
    let config = format!(
        "{}\n[embedded.farcaster]\nrelay_url = \"{relay_url}\"\nrpc_url = \"http://127.0.0.1:9\"\npoll_interval = \"100ms\"\npoll_timeout = \"3s\"\n\n\
         [limits]\nheader_timeout = \"500ms\"\nbody_timeout = \"500ms\"\n",
        embedded_config(dir.path())
    );
    let gateway = Gateway::start(&config);
    let entropy = SeededEntropy::new(9);
    let mut host = Client::create(&gateway, json!({ "features": { "socials": ["farcaster"] } })).await;
    let frame_origin = host.state["embedded"]["frameOrigin"].as_str().expect("the embedded wallet is on").to_string();
    let (status, frame) = register_frame(&frame_origin, &host.session_id, &entropy).await;
    assert_eq!(status, 200, "{frame}");
    host.command(json!({ "type": "EmbeddedFrameReady", "frameId": frame["frameId"] })).await;
    wait_for(&mut host, "the frame is ready", Duration::from_secs(30), |s| s["embedded"]["frame"]["status"] == "ready").await;
    host.command(json!({ "type": "ConnectSocial", "provider": "farcaster" })).await;
    wait_for(&mut host, "the relay's URL", Duration::from_secs(30), |s| s["embedded"].to_string().contains("channelToken=c0ffee")).await;

    // When the frame waits for the visitor's approval (a request that arrives at once and is
    // answered only when the relay says so, or when the polls run out)
    let (status, body) = post_frame_api(&frame_origin, "/api/farcaster/complete", json!({ "frameToken": frame["frameToken"] })).await;

    // Then it is answered, after every poll, with the login's own failure: not cut off after 1 s
    // (which closed the connection without an answer).
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("farcaster_failed")), "{body}");
    assert!(polls.load(std::sync::atomic::Ordering::Relaxed) >= 31, "the relay was polled {polls:?} times");
}

/// A session of project `other` (its own allowed origin), mirrored as [`Client`] does.
async fn other_project_client(gateway: &Gateway, options: Value) -> Client {
    let mut ws = connect(&gateway.ws_url("other"), "https://other.example").await.expect("upgrade accepted");
    send(
        &mut ws,
        json!({ "type": "hello", "protocol": vestibule_actors::protocol::PROTOCOL_VERSION, "projectId": "other", "options": options }),
    )
    .await;
    let welcome = recv_json(&mut ws).await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    Client {
        ws,
        session_id: welcome["sessionId"].as_str().unwrap().to_string(),
        resume_token: welcome["resumeToken"].as_str().unwrap().to_string(),
        seq: welcome["seq"].as_u64().unwrap(),
        state: welcome["state"].clone(),
        diffs: vec![],
        next_command: 0,
    }
}

/// The one mail in `dir` (taken away): its text.
fn take_mail(dir: &Path) -> String {
    let path = std::fs::read_dir(dir).unwrap().next().expect("a mail was written").unwrap().path();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(path).unwrap();
    text
}

/// A frame the page of `client` registers and announces (no device share), logged in by email
/// with the code the visitor types: the login's answer and the mail.
async fn email_login(client: &mut Client, frame_origin: &str, mail_dir: &Path, seed: u64, email: &str) -> (Value, Value, String) {
    let (status, frame) = register_frame(frame_origin, &client.session_id, &SeededEntropy::new(seed)).await;
    assert_eq!(status, 200, "{frame}");
    client.command(json!({ "type": "EmbeddedFrameReady", "frameId": frame["frameId"] })).await;
    wait_for(client, "the frame is ready", Duration::from_secs(30), |s| s["embedded"]["frame"]["status"] == "ready").await;
    client.command(json!({ "type": "ConnectEmail", "email": email })).await;
    wait_for(client, "the code is mailed", Duration::from_secs(30), |s| s["embedded"]["login"]["challengeId"].is_string()).await;
    let challenge = client.state["embedded"]["login"]["challengeId"].as_str().unwrap().to_string();
    let mail = take_mail(mail_dir);
    let code = mail.lines().map(str::trim).find(|l| l.len() == 6 && l.bytes().all(|b| b.is_ascii_digit())).expect("a code").to_string();
    let (status, login) = post_frame_api(
        frame_origin,
        "/api/email/verify",
        json!({ "frameToken": frame["frameToken"], "challengeId": challenge, "otp": code }),
    )
    .await;
    assert_eq!(status, 200, "{login}");
    (frame, login, mail)
}

/// The outside review's take-over (2026-12-08), against the real gateway: a visitor's wallet made
/// through project `test`; project `other` opens a session of its own, registers a frame from its
/// backend and has the visitor type its code. The frame is `other`'s (its session's project, as the
/// event log recorded it), so the login finds `other`'s user of the address: no wallet, no share.
#[tokio::test]
async fn a_login_through_another_project_reaches_another_user_and_none_of_the_first_projects_wallet() {
    let dir = tempfile::tempdir().unwrap();
    let mail_dir = dir.path().join("mail");
    let gateway = Gateway::start(&embedded_config(dir.path()));
    let options = json!({ "features": { "email": true } });
    let mut visitor = Client::create(&gateway, options.clone()).await;
    let frame_origin = visitor.state["embedded"]["frameOrigin"].as_str().expect("the embedded wallet is on").to_string();

    let (frame, login, mail) = email_login(&mut visitor, &frame_origin, &mail_dir, 1, "victim@example.com").await;
    assert!(mail.contains("sign-in code for test"), "the mail names the project: {mail}");
    let user = login["userId"].as_str().unwrap().to_string();
    let keys = vestibule_embedded::binding::test_keys::WalletKeys::from_seed(9);
    let frame_id = frame["frameId"].as_str().unwrap();
    let (evm, sol) = keys.sign_binding(frame_id, &user);
    let (status, bound) = post_frame_api(
        &frame_origin,
        "/api/wallet",
        json!({
            "frameToken": frame["frameToken"], "eip155Address": keys.eip155_address(), "solanaAddress": keys.solana_address(),
            "serverShare": vestibule_embedded::b64url(&[1u8; 33]), "recoveryShare": vestibule_embedded::b64url(&[2u8; 33]),
            "eip155Signature": evm, "solanaSignature": sol }),
    )
    .await;
    assert_eq!(status, 200, "{bound}");
    tokio::time::sleep(Duration::from_secs(31)).await; // the address's cooldown between mails

    let mut other = other_project_client(&gateway, options).await;
    let (_, login, mail) = email_login(&mut other, &frame_origin, &mail_dir, 2, "victim@example.com").await;
    assert!(mail.contains("sign-in code for other"), "the mail names the project: {mail}");
    assert_ne!(login["userId"].as_str().unwrap(), user);
    assert_eq!(login["wallet"], Value::Null, "no share of the first project's wallet: {login}");
}
