//! The handshake and the connection's bounds against the real gateway process: a session only
//! resumes through its own project, a client that reads but never acknowledges is cut off, the
//! command rate limit holds per session however many sockets share it, and the check endpoint
//! tells a browser its address is at its limit.

mod support;

use std::time::Instant;

use serde_json::{Value, json};
use support::raw;
use support::*;
use vestibule_actors::protocol::PROTOCOL_VERSION;

const TWO_PROJECTS: &str = r#"
[[projects]]
id = "alpha"
allowed_origins = ["https://alpha.example"]

[[projects]]
id = "beta"
allowed_origins = ["https://beta.example"]
"#;

async fn resume_through(gateway: &Gateway, project: &str, origin: &str, session: &str, token: &str) -> (Option<u16>, Vec<Value>) {
    let mut ws = connect(&format!("ws://{}/ws?projectId={project}", gateway.addr), origin).await.expect("upgrade accepted");
    send(
        &mut ws,
        json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": project, "sessionId": session, "resumeToken": token, "lastSeq": 1 }),
    )
    .await;
    let first = recv_json(&mut ws).await;
    if first["type"] == "welcome" {
        return (None, vec![first]);
    }
    let (code, mut frames) = read_until_close(&mut ws).await;
    frames.insert(0, first);
    (code, frames)
}

#[tokio::test]
async fn a_session_resumes_only_through_its_own_project() {
    let gateway = Gateway::start(TWO_PROJECTS);
    let mut ws = connect(&format!("ws://{}/ws?projectId=alpha", gateway.addr), "https://alpha.example").await.unwrap();
    send(&mut ws, json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "alpha" })).await;
    let welcome = recv_json(&mut ws).await;
    let (session, token) = (welcome["sessionId"].as_str().unwrap(), welcome["resumeToken"].as_str().unwrap());

    // Beta's page, beta's URL, beta's hello, alpha's session and its valid token.
    let (code, frames) = resume_through(&gateway, "beta", "https://beta.example", session, token).await;
    assert_eq!((code, frames[0]["code"].as_str()), (Some(4001), Some("unauthorized")), "{frames:?}");
    // Refused exactly like a wrong token: nothing tells the other project the session exists.
    let (_, wrong_token) = resume_through(&gateway, "beta", "https://beta.example", session, &"0".repeat(64)).await;
    assert_eq!(frames[0], wrong_token[0]);

    // Through its own project the same token resumes.
    let (code, frames) = resume_through(&gateway, "alpha", "https://alpha.example", session, token).await;
    assert_eq!((code, frames[0]["type"].as_str(), frames[0]["resumed"].as_bool()), (None, Some("welcome"), Some(true)));
}

#[tokio::test]
async fn a_client_that_reads_but_never_acknowledges_gets_64_diffs_then_too_slow() {
    let config = format!("{CONFIG}\n[limits]\nack_timeout = \"300ms\"\ncommands_per_second = 1000\ncommand_burst = 1000\n");
    let gateway = Gateway::start(&config);
    let mut writer = Client::create(&gateway, json!({})).await;
    let (mut reader, _) =
        Client::resume(&gateway, &writer.session_id, &writer.resume_token.clone(), Some(writer.seq), writer.state.clone()).await;
    // The writer acknowledges every diff; 70 diffs leave it with at most one unacknowledged.
    for i in 0..70 {
        assert_eq!(writer.command(show_toast(&format!("toast {i}"))).await["status"], "accepted");
    }
    // The reader reads everything the gateway sends it and never acknowledges.
    let (code, frames) = read_until_close(&mut reader.ws).await;
    let diffs = frames.iter().filter(|f| f["type"] == "diff").count();
    assert_eq!(diffs, 64, "the window is 64 diffs");
    assert_eq!((code, frames.last().unwrap()["code"].as_str()), (Some(4004), Some("too_slow")));
    // The writer was never held back and still works.
    assert_eq!(writer.command(show_toast("after")).await["status"], "accepted");
}

#[tokio::test]
async fn last_seq_zero_gets_the_whole_state_not_diffs_from_an_empty_one() {
    let gateway = Gateway::start(CONFIG);
    let mut a = Client::create(&gateway, json!({})).await;
    a.command(json!({ "type": "OpenModal" })).await;
    let (b, welcome) = Client::resume(&gateway, &a.session_id, &a.resume_token.clone(), Some(0), Value::Null).await;
    assert_eq!(welcome["resumed"], false, "{welcome}");
    assert_eq!(b.state, a.state);
    assert_eq!(welcome["seq"].as_u64(), Some(a.seq));
}

#[tokio::test]
async fn ten_sockets_on_one_session_share_its_command_rate_limit() {
    let config = format!("{CONFIG}\n[limits]\ncommands_per_second = 1\ncommand_burst = 10\n");
    let gateway = Gateway::start(&config);
    let first = Client::create(&gateway, json!({})).await;
    let mut clients = vec![];
    for _ in 0..10 {
        let (c, _) = Client::resume(&gateway, &first.session_id, &first.resume_token.clone(), Some(first.seq), first.state.clone()).await;
        clients.push(c);
    }
    let started = Instant::now();
    for (i, c) in clients.iter_mut().enumerate() {
        for j in 0..10 {
            c.send_command(json!({ "type": "SetToastHover", "hovered": (i + j) % 2 == 0 })).await;
        }
    }
    let (mut accepted, mut refused) = (0u64, 0u64);
    for c in clients.iter_mut() {
        for _ in 0..10 {
            let result = c.recv_non_diff().await;
            match result["status"].as_str() {
                Some("accepted") => accepted += 1,
                _ => {
                    assert_eq!(result["error"]["code"], "rate_limited", "{result}");
                    refused += 1;
                }
            }
        }
    }
    // The bucket refills at 1 per second: whatever the machine's speed, no more than the burst plus
    // what the elapsed time refilled can pass.
    let refilled = started.elapsed().as_secs() + 1;
    assert_eq!(accepted + refused, 100);
    assert!(accepted >= 10, "the burst passes ({accepted})");
    assert!(accepted <= 10 + refilled, "{accepted} accepted in {refilled} s: the sockets multiplied the limit");
}

#[tokio::test]
async fn the_check_endpoint_says_rate_limited_when_the_address_is_at_its_websocket_limit() {
    let config = format!("{CONFIG}\n[limits]\nconnections_per_ip = 2\n");
    let gateway = Gateway::start(&config);
    let (status, body) = gateway.http_get("/ws/check?projectId=test", Some(ORIGIN)).await;
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()["ok"].clone()), (200, json!(true)));
    let _a = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    let _b = raw::upgrade(&gateway.addr, "test", ORIGIN).await;
    let (status, body) = gateway.http_get("/ws/check?projectId=test", Some(ORIGIN)).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["code"], "rate_limited");
    // An upgrade agrees with the check.
    let (_, head) = raw::try_upgrade_from([127, 0, 0, 1].into(), &gateway.addr, "test", ORIGIN, "").await.unwrap();
    assert_eq!(raw::status_of(&head), 429, "{head}");
    // Another address is not affected.
    let (_, head) = raw::try_upgrade_from([127, 0, 0, 2].into(), &gateway.addr, "test", ORIGIN, "").await.unwrap();
    assert_eq!(raw::status_of(&head), 101, "{head}");
}

#[tokio::test]
async fn wrong_types_inside_the_options_are_invalid_options_naming_the_field() {
    let gateway = Gateway::start(CONFIG);
    for (options, field) in [
        (json!({ "networks": [1] }), "networks[0]"),
        (json!({ "siwx": { "required": "yes" } }), "siwx.required"),
        (json!({ "netwroks": [] }), "netwroks"),
    ] {
        let mut ws = connect(&gateway.ws_url("test"), ORIGIN).await.unwrap();
        send(&mut ws, json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test", "options": options })).await;
        let (code, frames) = read_until_close(&mut ws).await;
        assert_eq!((code, frames[0]["code"].as_str()), (Some(4000), Some("invalid_options")), "{frames:?}");
        assert!(frames[0]["message"].as_str().unwrap().contains(field), "{}", frames[0]);
    }
    // Well-typed options open a session.
    let client = Client::create(&gateway, json!({ "networks": ["eip155:1"] })).await;
    assert_eq!(client.state["started"], true);
}

#[tokio::test]
async fn a_100_kb_header_is_refused_with_431_on_plain_requests_and_upgrades() {
    let gateway = Gateway::start(CONFIG);
    let big = format!("X-Big: {}\r\n", "b".repeat(100 * 1024));
    let (status, _) = gateway.http_get_with("/healthz", &big).await;
    assert_eq!(status, 431);
    let (_, head) = raw::try_upgrade_from([127, 0, 0, 1].into(), &gateway.addr, "test", ORIGIN, &big).await.unwrap();
    assert_eq!(raw::status_of(&head), 431, "{head}");
    // Headers of a sane size pass.
    let (status, _) = gateway.http_get_with("/healthz", &format!("X-Small: {}\r\n", "s".repeat(1024))).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_client_address_writes_at_most_its_share_of_the_log_across_its_sessions() {
    // The smallest share there is: 1 MiB per hour, all of it at once.
    let gateway = Gateway::start(&format!("{CONFIG}\n[limits]\nclient_log_bytes_per_hour = 1048576\n"));
    // Reports of seven wallets with 8 KB icons, each different (so each is written): about 56 KB.
    let report = |n: usize| {
        let wallets: Vec<Value> = (0..7)
            .map(|w| {
                let icon = format!("data:image/png;base64,{}{}", "A".repeat(8_000), format!("{n:08}{w}"));
                json!({ "name": format!("Wallet {w}"), "rdns": format!("example.wallet{w}"), "icon": icon, "kind": "ANNOUNCED" })
            })
            .collect();
        json!({ "type": "ReportWallets", "wallets": wallets })
    };
    // An outside review filled session after session from one address at 15 MB/s: each session's
    // own 16 MiB budget was the only bound. Here sessions of 127.0.0.1 write until refused.
    let source: std::net::IpAddr = [127, 0, 0, 1].into();
    let (mut written, mut refused) = (0usize, None);
    'sessions: for _ in 0..4 {
        let mut client = Client::create_from(&gateway, source, json!({})).await;
        for _ in 0..8 {
            let result = client.command(report(written)).await;
            if result["status"] != "accepted" {
                refused = Some(result);
                break 'sessions;
            }
            written += 1;
        }
    }
    let refused = refused.expect("refused before 32 reports of 56 KB");
    assert_eq!(refused["error"]["code"], "rate_limited", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("client_log_bytes_per_hour"), "{refused}");
    assert!((16..=19).contains(&written), "about 1 MiB of 56 KB reports was written first: {written}");
    // Another address is not held back (the positive probe).
    let mut other = Client::create_from(&gateway, [127, 0, 0, 2].into(), json!({})).await;
    assert_eq!(other.command(report(0)).await["status"], "accepted");
}

#[tokio::test]
async fn a_disk_below_its_minimum_takes_no_new_sessions_and_healthz_says_so() {
    // A minimum no disk has: the disk is low from the start.
    let gateway = Gateway::start(&format!("{CONFIG}\n[limits]\nmin_free_disk_bytes = 9223372036854775807\n"));
    let (status, body) = gateway.http_get("/healthz", None).await;
    assert_eq!((status, body.contains("disk_low")), (503, true), "{body}");
    let (frame, close) = hello_from(&gateway, [127, 0, 0, 1].into(), None).await;
    assert_eq!((frame["type"].as_str(), close), (Some("error"), Some(1013)), "{frame}");
    assert!(frame["message"].as_str().unwrap().contains("disk is nearly full"), "{frame}");

    // The positive side: with the default minimum (1 GiB) on this disk, both are fine.
    let healthy = Gateway::start(CONFIG);
    let (status, body) = healthy.http_get("/healthz", None).await;
    assert_eq!(status, 200, "{body}");
    let (frame, _) = hello_from(&healthy, [127, 0, 0, 1].into(), None).await;
    assert_eq!(frame["type"], "welcome", "{frame}");
}

#[tokio::test]
async fn the_replay_page_loads_nothing_from_elsewhere_and_no_answer_is_sniffed() {
    // The built client's pages, where the gateway serves its static files from.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("no-static")).unwrap();
    std::fs::write(data.join("no-static/replay.html"), "<!doctype html><title>replay</title>").unwrap();
    std::fs::write(data.join("no-static/index.html"), "<!doctype html><title>demo</title>").unwrap();
    let gateway = Gateway::start_at(&data, CONFIG, "127.0.0.1:0");

    // An outside review: a visitor's recorded image URL was fetched by the operator's browser on
    // the timeline (which holds the admin token), and the page could be framed.
    let (status, head, body) = gateway.http_get_head("/replay.html").await;
    assert_eq!((status, body.as_str()), (200, "<!doctype html><title>replay</title>"));
    let policy = head.lines().find_map(|l| l.strip_prefix("content-security-policy: ")).expect("a policy");
    for directive in ["default-src 'self'", "img-src 'self' data:", "connect-src 'self'", "frame-ancestors 'none'"] {
        assert!(policy.split(';').any(|d| d.trim() == directive), "{directive} in {policy}");
    }
    assert!(head.contains("x-frame-options: deny") && head.contains("referrer-policy: no-referrer"), "{head}");
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
    // Nor under another spelling of its path, which the static files would serve bare (an outside
    // review): there the page is refused or comes with its policy.
    for path in ["/replay.html/", "//replay.html", "/./replay.html", "/%72eplay.html", "/static/../replay.html"] {
        let (status, head, body) = gateway.http_get_head(path).await;
        let bare = body.contains("<title>replay</title>") && !head.contains("content-security-policy");
        assert!(!bare, "{path}: {status} {head}");
    }
    // Other pages are served as before, without the timeline's policy, and nothing is sniffed.
    let (status, head, body) = gateway.http_get_head("/").await;
    assert_eq!((status, body.as_str()), (200, "<!doctype html><title>demo</title>"));
    assert!(!head.contains("content-security-policy") && head.contains("x-content-type-options: nosniff"), "{head}");
    let (status, head, _) = gateway.http_get_head("/healthz").await;
    assert_eq!(status, 200);
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
}

/// The first frame after a hello from `source` (with `session`: a resume).
async fn hello_from(gateway: &Gateway, source: std::net::IpAddr, session: Option<(&str, &str)>) -> (Value, Option<u16>) {
    hello_forwarded(gateway, source, None, session).await
}

/// [`hello_from`] with `X-Forwarded-For: forwarded_for`, as a reverse proxy at `source` sends it.
async fn hello_forwarded(
    gateway: &Gateway,
    source: std::net::IpAddr,
    forwarded_for: Option<&str>,
    session: Option<(&str, &str)>,
) -> (Value, Option<u16>) {
    let headers: Vec<(&'static str, &str)> = forwarded_for.map(|f| ("X-Forwarded-For", f)).into_iter().collect();
    hello_with_headers(gateway, source, &headers, session).await
}

/// A hello for a new session (or to resume `session`) from `source` with `headers` on the upgrade:
/// the welcome, or the error frame and the close code.
async fn hello_with_headers(
    gateway: &Gateway,
    source: std::net::IpAddr,
    headers: &[(&'static str, &str)],
    session: Option<(&str, &str)>,
) -> (Value, Option<u16>) {
    let mut ws = connect_from_with(gateway, source, headers).await;
    let mut hello = json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test" });
    if let Some((id, token)) = session {
        hello["sessionId"] = json!(id);
        hello["resumeToken"] = json!(token);
    }
    send(&mut ws, hello).await;
    let first = recv_json(&mut ws).await;
    if first["type"] == "welcome" {
        return (first, None);
    }
    let (code, _) = read_until_close(&mut ws).await;
    (first, code)
}

#[tokio::test]
async fn an_address_creates_new_sessions_at_its_rate_and_resumes_are_not_counted() {
    // One a minute after a burst of 3: the refill cannot matter within the test, however slow.
    let config = format!("{CONFIG}\n[limits]\nsessions_per_minute = 1\nsession_burst = 3\n");
    let gateway = Gateway::start(&config);
    let (a, b): (std::net::IpAddr, std::net::IpAddr) = ("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap());
    let mut created = vec![];
    for _ in 0..3 {
        let (welcome, _) = hello_from(&gateway, a, None).await;
        assert_eq!(welcome["type"], "welcome", "within the burst: {welcome}");
        created.push(welcome);
    }
    let (refusal, code) = hello_from(&gateway, a, None).await;
    assert_eq!((refusal["type"].as_str(), refusal["code"].as_str(), code), (Some("error"), Some("rate_limited"), Some(1013)), "{refusal}");
    // The address may still resume its sessions, and another address may still create one.
    let (id, token) = (created[0]["sessionId"].as_str().unwrap(), created[0]["resumeToken"].as_str().unwrap());
    let (resumed, _) = hello_from(&gateway, a, Some((id, token))).await;
    assert_eq!((resumed["type"].as_str(), resumed["sessionId"].as_str()), (Some("welcome"), Some(id)), "{resumed}");
    let (other, _) = hello_from(&gateway, b, None).await;
    assert_eq!(other["type"], "welcome", "{other}");
    assert_eq!(gateway.metric("vestibule_refusals_total{kind=\"new_sessions_rate_limited\"}").await, 1.0);
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_bounds_and_nobody_else_can_forge_one() {
    // Given a gateway whose trusted proxy is 127.0.0.1, where one address may create 2 sessions in
    // a burst (then one a minute) and hold 2 plain HTTP sockets
    let config = format!(
        "trusted_proxies = [\"127.0.0.1\"]\n{CONFIG}\n[limits]\nsessions_per_minute = 1\nsession_burst = 2\nhttp_connections_per_ip = 2\n"
    );
    let gateway = Gateway::start(&config);
    let ip = |text: &str| -> std::net::IpAddr { text.parse().unwrap() };
    let (proxy, stranger) = (ip("127.0.0.1"), ip("127.0.0.2"));
    // The proxy holds two idle sockets: all its address may, were it a client.
    let _idle = [raw::connect_from(proxy, &gateway.addr).await.unwrap(), raw::connect_from(proxy, &gateway.addr).await.unwrap()];

    // When the proxy forwards three new sessions of one client and one of another
    let welcomed = |(frame, _): &(Value, Option<u16>)| frame["type"] == "welcome";
    for _ in 0..2 {
        let first = hello_forwarded(&gateway, proxy, Some("203.0.113.7"), None).await;
        assert!(welcomed(&first), "{first:?}");
    }
    let (refused, code) = hello_forwarded(&gateway, proxy, Some("6.6.6.6, 203.0.113.7"), None).await;
    let other = hello_forwarded(&gateway, proxy, Some("203.0.113.8"), None).await;

    // Then the first client's third is refused at its rate, the other client's welcomed, and the
    // proxy's own sockets were not refused at its address's bound
    assert_eq!((refused["code"].as_str(), code), (Some("rate_limited"), Some(1013)), "{refused}");
    assert!(welcomed(&other), "{other:?}");

    // And a client that is not a trusted proxy is counted under its own address, whatever it writes
    for forwarded in ["198.51.100.1", "198.51.100.2"] {
        let (frame, _) = hello_forwarded(&gateway, stranger, Some(forwarded), None).await;
        assert_eq!(frame["type"], "welcome", "{frame}");
    }
    let (refused, code) = hello_forwarded(&gateway, stranger, Some("198.51.100.3"), None).await;
    assert_eq!((refused["code"].as_str(), code), (Some("rate_limited"), Some(1013)), "{refused}");
    assert_eq!(gateway.metric("vestibule_refusals_total{kind=\"new_sessions_rate_limited\"}").await, 2.0);
}

#[tokio::test]
async fn behind_proxies_that_write_forwarded_each_client_is_counted_by_its_for_and_x_forwarded_for_is_not_read() {
    // Given a gateway whose trusted proxy (127.0.0.1) writes RFC 7239 `Forwarded`, where one address
    // may create 2 sessions in a burst (then one a minute)
    let config = format!(
        "trusted_proxies = [\"127.0.0.1\"]\nforwarded_header = \"forwarded\"\n{CONFIG}\n[limits]\nsessions_per_minute = 1\nsession_burst = 2\n"
    );
    let gateway = Gateway::start(&config);
    let proxy: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    let welcomed = |(frame, _): &(Value, Option<u16>)| frame["type"] == "welcome";
    // When the proxy forwards three new sessions of one client (the last behind the client's own
    // element) and one of another
    for _ in 0..2 {
        let first = hello_with_headers(&gateway, proxy, &[("Forwarded", "for=203.0.113.7;proto=https")], None).await;
        assert!(welcomed(&first), "{first:?}");
    }
    let (refused, code) = hello_with_headers(&gateway, proxy, &[("Forwarded", "for=6.6.6.6, for=203.0.113.7")], None).await;
    let other = hello_with_headers(&gateway, proxy, &[("Forwarded", "for=\"[2001:db8::7]:4711\"")], None).await;
    // Then the first client's third is refused at its rate, the other client's welcomed
    assert_eq!((refused["code"].as_str(), code), (Some("rate_limited"), Some(1013)), "{refused}");
    assert!(welcomed(&other), "{other:?}");
    // And an `X-Forwarded-For` (the client's own, passed through) is not read: these hellos count
    // under the proxy's own address, whose burst of 2 the third exceeds
    for forged in ["198.51.100.1", "198.51.100.2"] {
        let (frame, _) = hello_with_headers(&gateway, proxy, &[("X-Forwarded-For", forged)], None).await;
        assert_eq!(frame["type"], "welcome", "{frame}");
    }
    let (refused, code) = hello_with_headers(&gateway, proxy, &[("X-Forwarded-For", "198.51.100.3")], None).await;
    assert_eq!((refused["code"].as_str(), code), (Some("rate_limited"), Some(1013)), "{refused}");
}

/// A WebSocket to the `test` project whose receive buffer is small, so that what the client does
/// not read stays on the gateway's side; returns it after the welcome.
async fn small_window_session(gateway: &Gateway) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(gateway.addr.parse().unwrap()).await.unwrap();
    stream.set_nodelay(true).unwrap();
    stream.write_all(raw::upgrade_request(&gateway.addr, "test", ORIGIN, "").as_bytes()).await.unwrap();
    let head = raw::read_head(&mut stream).await.unwrap();
    assert_eq!(raw::status_of(&head), 101, "{head}");
    let hello = json!({ "type": "hello", "protocol": PROTOCOL_VERSION, "projectId": "test" });
    stream.write_all(&raw::text_frame(&hello.to_string())).await.unwrap();
    let (opcode, welcome) = raw::read_frame(&mut stream).await.unwrap();
    assert_eq!((opcode, serde_json::from_slice::<Value>(&welcome).unwrap()["type"].clone()), (raw::TEXT, json!("welcome")));
    stream
}

#[tokio::test]
async fn a_client_that_pings_without_reading_does_not_pile_up_pongs_on_the_gateway() {
    use tokio::io::AsyncWriteExt;
    // The heartbeat stays out of the way: the test is about the pongs alone.
    let config = format!("{CONFIG}\n[limits]\nheartbeat_interval = \"10m\"\nheartbeat_timeout = \"20m\"\n");
    let gateway = Gateway::start(&config);
    let mut stream = small_window_session(&gateway).await;
    // 200,000 pings of 125 bytes (26 MB), none of whose pongs is read while they are sent.
    const PINGS: u64 = 200_000;
    let received_before = gateway.metric("vestibule_frames_received_total").await;
    let ping = raw::client_frame(true, raw::PING, &[b'p'; 125]);
    let burst: Vec<u8> = ping.iter().copied().cycle().take(ping.len() * 10_000).collect();
    for _ in 0..PINGS / 10_000 {
        stream.write_all(&burst).await.unwrap();
    }
    // Every ping has been read by the gateway before the client reads anything (counted, not timed:
    // it fails only if the gateway reads none of them for a thousand polls in a row).
    let (mut read, mut polls_without_progress) = (received_before, 0);
    while read < received_before + PINGS as f64 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let now = gateway.metric("vestibule_frames_received_total").await;
        polls_without_progress = if now > read { 0 } else { polls_without_progress + 1 };
        assert!(polls_without_progress < 1000, "the gateway stopped reading the pings at {now}");
        read = now;
    }
    // The connection still answers, and everything the gateway kept for the client comes before
    // that answer.
    stream.write_all(&raw::text_frame(&json!({ "type": "ping", "nonce": "fence" }).to_string())).await.unwrap();
    let mut reader = tokio::io::BufReader::new(stream);
    let mut pongs = 0u64;
    loop {
        let (opcode, payload) = raw::read_frame(&mut reader).await.expect("the connection stays open");
        match opcode {
            raw::PONG => pongs += 1,
            raw::TEXT => {
                assert_eq!(serde_json::from_slice::<Value>(&payload).unwrap(), json!({ "type": "pong", "nonce": "fence" }));
                break;
            }
            other => panic!("unexpected opcode {other}"),
        }
    }
    // The kernel's socket buffers hold a few MB of pongs (at most 33,000 of them on Linux's default
    // 4 MB send buffer); the gateway itself keeps only the latest one. Before, it buffered one pong
    // per ping without bound: 26 MB here, a gigabyte in 8 s of a loopback flood.
    assert!(pongs < PINGS / 2, "{pongs} pongs for {PINGS} pings: the gateway kept a pong for every ping the client did not read");
}

#[tokio::test]
async fn an_upgrade_with_two_origins_is_refused_whichever_comes_first() {
    use tokio::io::AsyncWriteExt;
    let gateway = Gateway::start(CONFIG);
    let upgrade = |origin: &'static str, extra: &'static str| {
        let addr = gateway.addr.clone();
        async move {
            let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
            stream.write_all(raw::upgrade_request(&addr, "test", origin, extra).as_bytes()).await.unwrap();
            raw::status_of(&raw::read_head(&mut stream).await.unwrap())
        }
    };
    // The positive probe: the allowed origin alone is upgraded.
    assert_eq!(upgrade(ORIGIN, "").await, 101);
    assert_eq!(upgrade(ORIGIN, "Origin: https://evil.example\r\n").await, 403, "allowed, then another");
    assert_eq!(upgrade("https://evil.example", "Origin: http://localhost:3000\r\n").await, 403, "another, then allowed");
    assert_eq!(gateway.metric("vestibule_refusals_total{kind=\"invalid_app_configuration\"}").await, 2.0);
}

#[tokio::test]
async fn a_session_takes_at_most_connections_per_session_and_a_closed_one_makes_room() {
    let gateway = Gateway::start(&format!("{CONFIG}\n[limits]\nconnections_per_session = 3\n"));
    let mut first = Client::create(&gateway, json!({})).await;
    let (session, token) = (first.session_id.clone(), first.resume_token.clone());
    let mut others = vec![];
    for _ in 0..2 {
        others.push(Client::resume(&gateway, &session, &token, Some(first.seq), first.state.clone()).await.0);
    }

    // A fourth, with the same valid token: refused, to be retried later, like an address over its
    // rate (the widget backs off and resumes again).
    let (code, frames) = resume_through(&gateway, "test", ORIGIN, &session, &token).await;
    assert_eq!((code, frames[0]["code"].as_str()), (Some(1013), Some("rate_limited")), "{frames:?}");
    assert!(frames[0]["message"].as_str().unwrap().contains("3 connections"), "{frames:?}");
    assert_eq!(gateway.metric("vestibule_connections_refused_by_session_total").await, 1.0);

    // The three attached are untouched: each gets the next diff.
    first.command(show_toast("still here")).await;
    for other in others.iter_mut() {
        other.catch_up(first.seq).await;
    }

    // One closes; once its socket is gone the session has room again (the detach is asynchronous,
    // so resume until welcomed; every refusal on the way must be this one).
    others.pop().unwrap().close().await;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let (code, frames) = resume_through(&gateway, "test", ORIGIN, &session, &token).await;
        if frames[0]["type"] == "welcome" {
            assert_eq!(code, None);
            break;
        }
        assert_eq!((code, frames[0]["code"].as_str()), (Some(1013), Some("rate_limited")), "{frames:?}");
        assert!(attempts < 200, "the closed connection never made room");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
