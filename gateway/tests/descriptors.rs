//! File descriptors and the event log's health, against the real gateway process with real limits:
//! a flood of slow requests and sockets under a low open-file limit cannot take the descriptors the
//! event log needs, slow heads and bodies are cut off, and a log that fails makes `/healthz` fail
//! and the process exit (for its supervisor to restart it) instead of serving on as a zombie.

mod support;

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{Value, json};
use support::raw;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn loopback(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

/// A POST whose head is complete and whose body has just begun.
async fn slow_body(source: IpAddr, addr: &str) -> Option<TcpStream> {
    let mut stream = raw::connect_from(source, addr).await.ok()?;
    let head = format!("POST /siwx/token HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{");
    stream.write_all(head.as_bytes()).await.ok()?;
    Some(stream)
}

/// Whether the server has closed `stream` (without waiting: a socket still open reads nothing now).
async fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(tokio::time::timeout(Duration::from_millis(200), stream.read(&mut byte)).await, Ok(Ok(0) | Err(_)))
}

/// `/healthz`, retried while the server refuses sockets (each refusal is counted, not timed).
async fn healthz(gateway: &Gateway) -> (u16, Value) {
    for _ in 0..200 {
        let Ok(mut stream) = raw::connect_from(loopback(1), &gateway.addr).await else { continue };
        let request = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", gateway.addr);
        if stream.write_all(request.as_bytes()).await.is_err() {
            continue;
        }
        let mut response = String::new();
        let read = tokio::time::timeout(Duration::from_secs(15), stream.read_to_string(&mut response)).await;
        if !matches!(read, Ok(Ok(_))) || response.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        let body = response.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
        return (raw::status_of(&response), serde_json::from_str(body).unwrap_or(Value::Null));
    }
    panic!("/healthz never answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_slow_requests_and_sockets_under_a_low_open_file_limit_cannot_starve_the_event_log() {
    const OPEN_FILES: u64 = 256;
    let gateway = Gateway::start_limited(CONFIG, ProcessLimits { open_files: Some(OPEN_FILES), ..Default::default() });
    let mut client = Client::create(&gateway, json!({})).await;
    assert_eq!(client.command(show_toast("before")).await["status"], "accepted");

    // WebSockets from four addresses and slow bodies from eight more, far more than the limits
    // allow. Nothing is awaited from the gateway yet: a gateway out of descriptors answers nothing.
    let mut upgrades = Vec::new();
    for source in 2..=5 {
        for _ in 0..60 {
            if let Ok(mut stream) = raw::connect_from(loopback(source), &gateway.addr).await
                && stream.write_all(raw::upgrade_request(&gateway.addr, "test", ORIGIN, "").as_bytes()).await.is_ok()
            {
                upgrades.push(stream);
            }
        }
    }
    let mut bodies = Vec::new();
    for source in 6..=13 {
        for _ in 0..60 {
            bodies.extend(slow_body(loopback(source), &gateway.addr).await);
        }
    }

    // The event log still flushes: every command is durable and accepted.
    for i in 0..20 {
        let result = client.command(show_toast(&format!("during {i}"))).await;
        assert_eq!(result["status"], "accepted", "{result}");
    }
    // The limits held: sockets beyond them were closed at once, and the reserve stayed free.
    let switched = futures_util::future::join_all(
        upgrades.iter_mut().map(|s| async move { matches!(raw::read_head(s).await, Ok(head) if raw::status_of(&head) == 101) }),
    )
    .await;
    let closed = futures_util::future::join_all(bodies.iter_mut().map(closed_by_server)).await;
    assert!(switched.iter().any(|ok| *ok), "some WebSockets were admitted");
    assert!(closed.iter().any(|c| *c), "sockets beyond the limits are closed at once");
    let open = gateway.open_descriptors() as u64;
    assert!(open <= OPEN_FILES - 64, "{open} descriptors open: the event log's reserve was taken");
    let held = (upgrades, bodies);
    drop(held);
    let (status, health) = healthz(&gateway).await;
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")), "{health}");
    assert_eq!(client.command(show_toast("after")).await["status"], "accepted");
}

#[tokio::test]
async fn a_slow_body_is_refused_with_408_and_a_slow_head_is_dropped() {
    let config = format!("{CONFIG}\n[limits]\nbody_timeout = \"500ms\"\nheader_timeout = \"500ms\"\n");
    let gateway = Gateway::start(&config);

    let mut stream = raw::connect_from(loopback(1), &gateway.addr).await.unwrap();
    let head =
        format!("POST /siwx/token HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n", gateway.addr);
    stream.write_all(head.as_bytes()).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    // A trickle (it keeps the connection busy, which an idle timeout would not cut) that stops one
    // byte short: the body never completes, so 408 is the only answer there can be, however slow
    // the machine. The read's bound only turns a server that never answers into a failure.
    let trickle = tokio::spawn(async move {
        let mut sent = 0;
        while sent < 399 && writer.write_all(b" ").await.is_ok() {
            sent += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        writer
    });
    let mut response = String::new();
    let read = tokio::time::timeout(Duration::from_secs(60), reader.read_to_string(&mut response)).await;
    assert!(read.is_ok(), "no answer to a body that never completes");
    trickle.abort();
    assert_eq!(raw::status_of(&response), 408, "{response}");
    assert!(response.contains("body_timeout"), "{response}");

    // A head that never ends.
    let mut stream = raw::connect_from(loopback(1), &gateway.addr).await.unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\nX-Slow: ").await.unwrap();
    let mut sent = 0;
    while sent < 2000 && stream.write_all(b"a").await.is_ok() {
        sent += 1;
        if closed_by_server(&mut stream).await {
            break;
        }
    }
    assert!(sent < 2000, "the slow head was still open after {sent} bytes");

    // A keep-alive connection's second request gets the same treatment. Its first request is
    // whole at once, but a busy machine can keep the gateway from reading it within the 500 ms
    // (it then answers 408, rightly, by its clock): such an attempt is counted and made again.
    let first = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", gateway.addr);
    let mut timed_out = 0;
    let mut stream = loop {
        let mut stream = raw::connect_from(loopback(1), &gateway.addr).await.unwrap();
        stream.write_all(first.as_bytes()).await.unwrap();
        let head = raw::read_head(&mut stream).await.unwrap();
        match raw::status_of(&head) {
            200 => break stream,
            408 if timed_out < 20 => timed_out += 1,
            _ => panic!("the first request on a keep-alive connection ({timed_out} timed out before): {head}"),
        }
    };
    stream.write_all(b"GET /healthz HTTP/1.1\r\nX-Slow: ").await.unwrap();
    let mut sent = 0;
    let mut closed = false;
    while sent < 2000 && !closed {
        closed = stream.write_all(b"a").await.is_err() || closed_by_server_after_body(&mut stream).await;
        sent += 1;
    }
    assert!(closed, "the slow second head was still open after {sent} bytes");
}

#[tokio::test]
async fn a_refused_chunked_body_closes_its_connection() {
    // A chunked body is refused like one with a length (408 when it stalls, 413 when it is too
    // large), and the connection must close after the answer: left open, a client that sends a
    // chunk header and goes silent would hold a plain-HTTP slot for ever, and a few addresses would
    // hold them all. Each read is bounded only to turn a connection that never closes into a failure.
    let config = format!("{CONFIG}\n[limits]\nbody_timeout = \"500ms\"\n");
    let gateway = Gateway::start(&config);
    let head = format!("POST /siwx/token HTTP/1.1\r\nHost: {}\r\nTransfer-Encoding: chunked\r\n\r\n", gateway.addr);

    let mut stalled = raw::connect_from(loopback(1), &gateway.addr).await.unwrap();
    stalled.write_all(format!("{head}5\r\nab").as_bytes()).await.unwrap();
    let mut response = String::new();
    let read = tokio::time::timeout(Duration::from_secs(60), stalled.read_to_string(&mut response)).await;
    assert!(read.is_ok(), "the connection stayed open (an answer read whole only once it closes)");
    assert_eq!(raw::status_of(&response), 408, "{response}");

    let mut oversized = raw::connect_from(loopback(1), &gateway.addr).await.unwrap();
    let chunk = "x".repeat(70_000);
    oversized.write_all(format!("{head}{:x}\r\n{chunk}", chunk.len()).as_bytes()).await.unwrap();
    let mut response = String::new();
    let read = tokio::time::timeout(Duration::from_secs(60), oversized.read_to_string(&mut response)).await;
    assert!(read.is_ok(), "the connection stayed open (an answer read whole only once it closes)");
    assert_eq!(raw::status_of(&response), 413, "{response}");
}

/// Like [`closed_by_server`], skipping the body of the response already read by its head.
async fn closed_by_server_after_body(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

#[tokio::test]
async fn a_failed_event_log_makes_healthz_fail_and_the_process_exit() {
    let config = format!("{CONFIG}\n[limits]\ncommands_per_second = 100000\ncommand_burst = 100000\n");
    // Writes past 2 MiB in any file fail with EFBIG: the log will meet a real I/O error.
    let mut gateway = Gateway::start_limited(&config, ProcessLimits { file_size: Some(2 * 1024 * 1024), ..Default::default() });
    let (status, health) = healthz(&gateway).await;
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));
    let mut client = Client::create(&gateway, json!({})).await;
    let long = "l".repeat(250);
    let mut accepted = 0;
    let failure = loop {
        assert!(accepted < 100_000, "the log never failed");
        let command = if accepted % 2 == 0 { json!({ "type": "OpenModal" }) } else { show_toast(&format!("{long} {accepted}")) };
        let Some(_) = client.try_send_command(command).await else { break None };
        let result = client.recv_non_diff().await;
        client.ack().await;
        match result["status"].as_str() {
            Some("accepted") => accepted += 1,
            _ if result["error"]["code"] == "too_many" => {
                client.command(json!({ "type": "DismissToast", "id": client.state["toasts"]["order"][0].clone() })).await;
            }
            _ => break Some(result),
        }
    };
    let failure = failure.expect("a refusal, not a dropped connection");
    // The command's refusal, or (when the process is quicker to stop) the 1001 that precedes it.
    let refused = failure["type"] == "result" && failure["error"]["code"] == "storage_unavailable";
    let stopping = failure["type"] == "error" && failure["code"] == "shutting_down";
    assert!(refused || stopping, "{failure}");
    assert!(accepted > 0);
    // Never a healthy-looking zombie: health fails (503) while the process stops, then it is gone.
    let health = health_now(&gateway).await;
    assert!(matches!(health, Health::Failing(503) | Health::Unreachable), "{health:?}");
    let status = gateway.wait_for_exit(Duration::from_secs(30)).expect("the gateway exits");
    assert!(!status.success(), "{status:?}");
}

#[tokio::test]
async fn a_data_directory_replaced_under_the_gateway_makes_it_fail_and_exit_writing_nothing_there() {
    // An outside review: `mv data data.old; cp -a data.old data` under a running segment-log
    // gateway; events went on to data.old, the index checkpoint written at the stop landed in the
    // new data by path, a restart on data missed 999 of 1,536 acknowledged commands, and /healthz
    // said ok throughout.
    for backend in ["segments", "sled"] {
        let config = format!("{CONFIG}\n[store]\nbackend = \"{backend}\"\n");
        let mut gateway = Gateway::start(&config);
        let mut client = Client::create(&gateway, json!({})).await;
        client.command(json!({ "type": "OpenModal" })).await;
        assert_eq!(healthz(&gateway).await.0, 200, "{backend}: healthy with its directory");
        let moved = gateway.data.with_extension("old");
        std::fs::rename(&gateway.data, &moved).unwrap();
        std::fs::create_dir(&gateway.data).unwrap();
        // The disk is checked every 5 s: the bound is patience, not speed.
        let status = gateway.wait_for_exit(Duration::from_secs(60)).unwrap_or_else(|| panic!("{backend}: the gateway runs on"));
        assert!(!status.success(), "{backend}: {status:?}");
        let written: Vec<_> = std::fs::read_dir(&gateway.data).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(written.is_empty(), "{backend}: nothing written into the directory now at the path: {written:?}");
        // The session is whole in the directory the log had open.
        std::fs::remove_dir(&gateway.data).unwrap();
        std::fs::rename(&moved, &gateway.data).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vestibule"))
            .args(["sessions", "list", "--data"])
            .arg(&gateway.data)
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && listed.contains(&client.session_id),
            "{backend}: {listed} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[derive(Debug, PartialEq)]
enum Health {
    Ok,
    Failing(u16),
    /// The process no longer accepts connections (it is exiting or gone).
    Unreachable,
}

/// One `/healthz` request, now.
async fn health_now(gateway: &Gateway) -> Health {
    let Ok(mut stream) = raw::connect_from(loopback(1), &gateway.addr).await else { return Health::Unreachable };
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", gateway.addr);
    let mut response = String::new();
    if stream.write_all(request.as_bytes()).await.is_err() {
        return Health::Unreachable;
    }
    let read = tokio::time::timeout(Duration::from_secs(15), stream.read_to_string(&mut response)).await;
    if !matches!(read, Ok(Ok(_))) || response.is_empty() {
        return Health::Unreachable;
    }
    match raw::status_of(&response) {
        200 => Health::Ok,
        status => Health::Failing(status),
    }
}

/// A client that pipelines requests and never reads its answers: actix-http answers them one after
/// another into its write buffer whatever the socket takes, so such clients once grew the gateway
/// by tens of megabytes per connection (gigabytes from a few addresses) and held their HTTP slots
/// for ever. Now a stalled answer stops the reading of further requests, and an answer the client
/// takes none of for `limits.write_timeout` closes the connection.
#[tokio::test]
async fn a_client_that_pipelines_requests_and_never_reads_is_closed_without_growing_the_gateway() {
    let config = format!("{CONFIG}\n[limits]\nwrite_timeout = \"1s\"\nhttp_connections_per_ip = 2\n");
    let gateway = Gateway::start(&config);
    let (status, metrics) = gateway.http_get("/metrics", None).await;
    assert_eq!(status, 200);
    // Enough requests that answering them all would take 256 MB over the two connections.
    let per_connection = (128 << 20) / metrics.len().max(1) + 1;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {}\r\n\r\n", gateway.addr).repeat(1000);
    let rss_before = gateway.rss_bytes();
    let source = loopback(9);
    let mut clients = vec![];
    for _ in 0..2 {
        let (reader, mut writer) = raw::connect_from(source, &gateway.addr).await.unwrap().into_split();
        let request = request.clone();
        let writing = tokio::spawn(async move {
            let mut sent = 0;
            while sent < per_connection && writer.write_all(request.as_bytes()).await.is_ok() {
                sent += 1000;
            }
        });
        clients.push((reader, writing));
    }
    // Both were admitted and answered (peeked, not read: what the client does not take stays in
    // its socket, and the gateway's writes stay stalled).
    for (reader, _) in clients.iter_mut() {
        let mut first = [0u8; 16];
        let peeked = tokio::time::timeout(Duration::from_secs(60), reader.peek(&mut first)).await;
        assert!(matches!(peeked, Ok(Ok(n)) if n > 0), "the gateway never answered: {peeked:?}");
    }
    // Then the gateway closes both (its own count of plain HTTP connections comes down to the one
    // asking it), whatever the machine's speed: the loop counts probes, not time.
    let mut peak = gateway.rss_bytes();
    let mut attempts = 0;
    loop {
        attempts += 1;
        peak = peak.max(gateway.rss_bytes());
        let (status, health) = gateway.http_get("/healthz", None).await;
        let open: Value = serde_json::from_str(&health).unwrap_or(Value::Null);
        if status == 200 && open["httpConnections"] == 1 {
            break;
        }
        assert!(attempts < 600, "the stalled connections were never closed: {health}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let grown = peak.saturating_sub(rss_before);
    assert!(grown < 64 << 20, "the gateway grew by {} MB answering clients that never read", grown >> 20);
    // The gateway closed them with most of their requests unanswered: what the sockets hold ends
    // (whatever the machine's speed) far short of every answer.
    for (mut reader, writing) in clients {
        writing.abort();
        let mut answered = Vec::new();
        let ended = tokio::time::timeout(Duration::from_secs(30), reader.read_to_end(&mut answered)).await;
        assert!(ended.is_ok(), "the connection was still open");
        assert!(answered.len() < per_connection * metrics.len() / 2, "{} bytes of answers: nothing was cut short", answered.len());
    }
}
