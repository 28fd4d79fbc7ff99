//! Sign-in end to end against the real gateway: a real WebSocket client plays the widget and the
//! wallet (with a real secp256k1 key), the server builds and verifies the message, and the host's
//! backend gets a token it verifies offline with the published key set and online by introspection.

mod support;

use alloy::signers::local::PrivateKeySigner;
use serde_json::{Value, json};
use support::*;

fn wallet() -> PrivateKeySigner {
    PrivateKeySigner::from_slice(&[0x61; 32]).unwrap()
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

#[tokio::test]
async fn a_wallet_signs_in_and_the_host_backend_can_rely_on_the_token() {
    let gateway = Gateway::start(CONFIG);
    let mut client = Client::create(&gateway, json!({ "siwx": { "statement": "Sign in to the test app" } })).await;
    let address = wallet().address().to_checksum(None);
    connect_wallet(&mut client, &address, "0x1").await;
    assert_eq!(client.state["router"]["current"], "SIWXSignMessage", "connecting opens the sign-in view");

    // Before signing, there is no token to have.
    let creds = json!({ "sessionId": client.session_id, "resumeToken": client.resume_token });
    assert_eq!(gateway.http_post("/siwx/token", &creds).await.0, 404);

    let message = sign(&mut client, &wallet()).await;
    assert!(message.starts_with("http://localhost:3000 wants you to sign in with your Ethereum account:\n"), "{message}");
    let account = format!("eip155:1:{address}");
    let session = &client.state["siwx"]["sessions"][&account];
    assert_eq!(session["method"], "eip191", "{}", client.state["siwx"]);
    assert_eq!(client.state["modal"]["status"], "closed", "signing closes the modal");

    // A wrong resume token gets nothing.
    let wrong = json!({ "sessionId": client.session_id, "resumeToken": "0".repeat(64) });
    assert_eq!(gateway.http_post("/siwx/token", &wrong).await.0, 401);

    let (status, body) = gateway.http_post("/siwx/token", &creds).await;
    assert_eq!(status, 200, "{body}");
    let token = serde_json::from_str::<Value>(&body).unwrap()["token"].as_str().unwrap().to_string();

    // Offline: the published key verifies the token and the claims name the account and session.
    let (_, jwks) = gateway.http_get("/.well-known/jwks.json", None).await;
    let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_str(&jwks).unwrap();
    let key = jsonwebtoken::DecodingKey::from_jwk(&jwks.keys[0]).expect("the published key is a standard JWK");
    let claims = vestibule_gateway::siwx::token::verify_with(&key, &token, now_s()).expect("a valid token");
    assert_eq!((claims.sub.as_str(), claims.aud.as_str(), claims.sid.as_str()), (account.as_str(), "test", client.session_id.as_str()));
    assert!(claims.exp > now_s());

    // The host can list the visitor's sign-in sessions.
    let (status, listed) = gateway.http_post("/siwx/sessions", &creds).await;
    assert_eq!(status, 200, "{listed}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["sessions"][0]["account"], account.as_str());
    assert_eq!(listed["sessions"][0]["method"], "eip191");
    assert_eq!(gateway.http_post("/siwx/sessions", &wrong).await.0, 401);

    // Online: active for the project's own backend until the visitor signs out, then not.
    let (_, verdict) = gateway.http_post("/siwx/introspect", &json!({ "token": token, "audience": "test" })).await;
    assert_eq!(serde_json::from_str::<Value>(&verdict).unwrap()["active"], true, "{verdict}");
    // Never for another project's backend (a token its users got on this project's site), and a
    // backend must say which project it serves.
    let (_, verdict) = gateway.http_post("/siwx/introspect", &json!({ "token": token, "audience": "other" })).await;
    let verdict: Value = serde_json::from_str(&verdict).unwrap();
    assert_eq!((verdict["active"].as_bool(), verdict["reason"].as_str()), (Some(false), Some("wrong_audience")), "{verdict}");
    assert!(verdict.get("claims").is_none(), "{verdict}");
    let (status, body) = gateway.http_post("/siwx/introspect", &json!({ "token": token })).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("audience"), "{body}");
    assert_eq!(gateway.http_post("/siwx/signout", &creds).await.0, 204);
    let (_, verdict) = gateway.http_post("/siwx/introspect", &json!({ "token": token, "audience": "test" })).await;
    let verdict: Value = serde_json::from_str(&verdict).unwrap();
    assert_eq!((verdict["active"].as_bool(), verdict["reason"].as_str()), (Some(false), Some("signed_out")));
    // A tampered token is refused.
    let tampered = format!("{}x", &token[..token.len() - 1]);
    let (_, verdict) = gateway.http_post("/siwx/introspect", &json!({ "token": tampered, "audience": "test" })).await;
    assert_eq!(serde_json::from_str::<Value>(&verdict).unwrap()["active"], false);
}

#[tokio::test]
async fn a_signature_by_another_key_is_refused_and_its_nonce_never_works_again() {
    let gateway = Gateway::start(CONFIG);
    let mut client = Client::create(&gateway, json!({ "siwx": { "required": true } })).await;
    let address = wallet().address().to_checksum(None);
    connect_wallet(&mut client, &address, "0x1").await;
    let first_nonce = client.state["siwx"]["challenge"]["nonce"].as_str().unwrap().to_string();
    // Closing is disabled while sign-in is required and missing.
    let result = client.command(json!({ "type": "CloseModal", })).await;
    assert_eq!(result["error"]["code"], "close_disabled");

    let stranger = PrivateKeySigner::from_slice(&[0x62; 32]).unwrap();
    sign(&mut client, &stranger).await;
    // No RPC endpoint is configured, so the contract-account check fails at once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while client.state["siwx"]["status"] != "ready" && std::time::Instant::now() < deadline {
        let frame = recv_json(&mut client.ws).await;
        client.apply_diff(&frame);
    }
    let siwx = &client.state["siwx"];
    assert_eq!(siwx["error"], "The signature could not be verified", "{siwx}");
    assert!(siwx["sessions"].as_object().unwrap().is_empty());
    assert_ne!(siwx["challenge"]["nonce"].as_str().unwrap(), first_nonce, "the spent nonce is replaced");
    // The visitor cancels: sign-in is required, so the wallet is disconnected.
    client.command(json!({ "type": "SiwxCancel", })).await;
    assert_eq!(client.state["connection"]["namespaces"]["eip155"]["status"], "disconnected");
    assert_eq!(client.state["router"]["current"], "Connect");
}

#[tokio::test]
async fn a_request_the_api_cannot_take_is_refused_in_the_api_shape_naming_the_fault() {
    let gateway = Gateway::start(CONFIG);
    let refused = |(status, body): (u16, String)| {
        let body: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
        (status, body["code"].as_str().unwrap_or_default().to_string(), body["message"].as_str().unwrap_or_default().to_string())
    };
    // A well-formed body with unknown credentials is the positive probe: the endpoint reads JSON.
    let creds = json!({ "sessionId": "00000000000000000000000000000000", "resumeToken": "x" });
    assert_eq!(refused(gateway.http_post("/siwx/token", &creds).await).0, 401);

    let (status, code, message) = refused(gateway.http_post_raw("/siwx/token", "application/json", "{x").await);
    assert_eq!((status, code.as_str()), (400, "bad_request"), "{message}");
    assert!(message.contains("line 1 column 2"), "where the JSON breaks: {message}");
    let (status, code, message) =
        refused(gateway.http_post_raw("/siwx/sessions", "application/json", r#"{"sessionId":"a","token":"b"}"#).await);
    assert_eq!((status, code.as_str()), (400, "bad_request"), "{message}");
    assert!(message.contains("unknown field `token`"), "names the field: {message}");
    let (status, code, message) = refused(gateway.http_post_raw("/siwx/introspect", "text/plain", r#"{"token":"t"}"#).await);
    assert_eq!((status, code.as_str()), (415, "unsupported_media_type"), "{message}");
    let (status, code, _) = refused(gateway.http_post_raw("/siwx/signout", "application/json", "").await);
    assert_eq!((status, code.as_str()), (400, "bad_request"));
    // Another method than the endpoint's: 405 in the same shape, not the static files' answer.
    let (status, code, message) = refused(gateway.http_get("/siwx/token", None).await);
    assert_eq!((status, code.as_str(), message.as_str()), (405, "method_not_allowed", "this endpoint takes POST"));
    let (status, code, message) = refused(gateway.http_post_raw("/healthz", "application/json", "{}").await);
    assert_eq!((status, code.as_str(), message.as_str()), (405, "method_not_allowed", "this endpoint takes GET, HEAD"));
}

/// POSTs `body` to `path` and returns the status, the head (lowercased, for header lookups) and the body.
async fn post_with_head(gateway: &Gateway, path: &str, body: &Value) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (addr, body) = (&gateway.addr, body.to_string());
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").map(|(h, b)| (h.to_string(), b.to_string())).unwrap_or_default();
    (raw::status_of(&head), head.to_ascii_lowercase(), body)
}

#[tokio::test]
async fn http_sign_outs_take_from_the_sessions_command_budget_and_are_refused_429_when_it_is_spent() {
    // One token a second refills nothing worth counting while the requests go out: the bucket holds
    // `BURST` and no more, whatever the machine's speed.
    const BURST: usize = 3;
    let config = format!("{CONFIG}\n[limits]\ncommands_per_second = 1\ncommand_burst = {BURST}\n");
    let gateway = Gateway::start(&config);
    let client = Client::create(&gateway, json!({})).await;
    let creds = json!({ "sessionId": client.session_id, "resumeToken": client.resume_token });

    let mut answers = Vec::new();
    for _ in 0..BURST + 5 {
        answers.push(post_with_head(&gateway, "/siwx/signout", &creds).await);
    }
    // The positive fence: the burst is answered as the command's own answer (204, or 409 with the
    // command's refusal), not refused by the limit.
    for (i, (status, _, body)) in answers.iter().take(BURST).enumerate() {
        assert!(matches!(status, 204 | 409), "sign-out {i} within the burst: {status} {body}");
    }
    let limited: Vec<_> = answers.iter().filter(|(status, _, _)| *status == 429).collect();
    assert!(!limited.is_empty(), "none of {} sign-outs was rate limited: {:?}", BURST + 5, answers.iter().map(|a| a.0).collect::<Vec<_>>());
    for (_, head, body) in limited {
        let body: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
        assert_eq!(body["code"], "rate_limited", "the code the WebSocket path refuses with: {body}");
        assert!(head.contains("\r\nretry-after: 1"), "{head}");
    }
    // Wrong credentials are refused before the budget is looked at (and so cannot spend it).
    let wrong = json!({ "sessionId": client.session_id, "resumeToken": "0".repeat(64) });
    assert_eq!(gateway.http_post("/siwx/signout", &wrong).await.0, 401);
}
