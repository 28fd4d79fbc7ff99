//! What the owner of a session takes from its route subjects (`VESTIBULE_route.<owner>.…`,
//! gateway/src/cluster.rs, decision 0114) when the publisher is not a gateway: an anonymous client
//! of the cluster's nats-server, as an outside review reproduced on a live cluster. Real
//! `vestibule serve` processes on a real nats-server.
//!
//! A proxied link's `cmd` and `detach` need the link's secret (link ids are sequential: guessing
//! them once ran a forged command on a visitor's session); `attach` and `exec` need the session's
//! resume token; a subject for frames cannot be guessed. Each test ends with a positive probe: the
//! victim's own traffic still works, so the refusals are not a broken route.

mod support;

use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use support::*;
use vestibule_store::EventLog as _;
use vestibule_store_jetstream::async_nats;
use vestibule_store_jetstream::test_server::NatsServer;

/// More than the connection ids the owner hands out in these tests: a link id is among them.
const LINK_IDS: u64 = 64;

/// No lease lapses here: a long `lease_ttl`, fixed gateway ids (the subjects name them).
fn config(server: &NatsServer, id: &str) -> String {
    format!(
        "{CONFIG}\n[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"{}\"]\n\n[cluster]\nenabled = true\n\
         gateway_id = \"{id}\"\nlease_ttl = \"60s\"\n\n[limits]\ncommands_per_second = 10000\ncommand_burst = 10000\n",
        server.url
    )
}

async fn start_server() -> NatsServer {
    tokio::task::spawn_blocking(NatsServer::start).await.unwrap()
}

/// Commands that arm no deadline: the state after them stays put while nobody sends anything.
fn command(i: usize) -> Value {
    match i % 3 {
        0 => json!({ "type": "OpenModal" }),
        1 => json!({ "type": "Navigate", "view": "AllWallets" }),
        _ => json!({ "type": "CloseModal" }),
    }
}

/// Two gateways, `owner` and `b`; a visitor's session created on `owner` (`on_a`) and resumed
/// through `b` (`on_b`, proxied: `owner` serves it a link); an anonymous NATS client.
struct Cluster {
    server: NatsServer,
    owner: Gateway,
    _b: Gateway,
    on_a: Client,
    on_b: Client,
    outsider: async_nats::Client,
    _dir: tempfile::TempDir,
}

async fn cluster_with_a_proxied_visitor() -> Cluster {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let owner = Gateway::start_at(&dir.path().join("owner"), &config(&server, "owner"), "127.0.0.1:0");
    let b = Gateway::start_at(&dir.path().join("b"), &config(&server, "b"), "127.0.0.1:0");
    let mut on_a = Client::create(&owner, json!({})).await;
    assert_eq!(on_a.command(command(0)).await["status"], "accepted");
    let (mut on_b, welcome) = Client::resume(&b, &on_a.session_id, &on_a.resume_token, Some(on_a.seq), on_a.state.clone()).await;
    assert_eq!(welcome["resumed"], true, "{welcome}");
    assert_eq!(b.metric("vestibule_cluster_proxied_total").await, 1.0);
    assert_eq!(owner.metric("vestibule_cluster_served_links").await, 1.0);
    // The link works before anything is forged.
    assert_eq!(on_b.command(command(1)).await["status"], "accepted");
    on_a.catch_up(on_b.seq).await;
    let outsider = async_nats::connect(&server.url).await.unwrap();
    Cluster { server, owner, _b: b, on_a, on_b, outsider, _dir: dir }
}

/// A command frame as a client sends it, which would leave "forged" in the state if applied.
fn forged_frame(id: &str) -> String {
    json!({ "type": "command", "id": id, "command": show_persistent_toast("forged") }).to_string()
}

/// The session's events after `seq`, as `(seq, correlation id)`, read from the shared log.
async fn events_after(server: &NatsServer, session: &str, seq: u64) -> Vec<(u64, Option<String>)> {
    let upcaster = std::sync::Arc::new(vestibule_actors::session::upcast::SessionUpcaster);
    let config = vestibule_store_jetstream::JetStreamConfig::at(vec![server.url.clone()]);
    let log = vestibule_store_jetstream::JetStreamEventLog::open_with_upcaster(config, upcaster).await.unwrap();
    let events = log.read(session.parse().unwrap(), seq + 1, None).await.unwrap();
    events.into_iter().map(|e| (e.seq, e.correlation_id)).collect()
}

/// An `attach` as gateway `b` would send it (the epochs are in the `VESTIBULE_gateways` bucket, for
/// any reader), with `resume_token` if any; the owner's answer.
async fn attach_as_b(outsider: &async_nats::Client, session: &str, resume_token: Option<&str>, frames: &str) -> Value {
    let gateways = async_nats::jetstream::new(outsider.clone()).get_key_value("VESTIBULE_gateways").await.unwrap();
    let epoch = |entry: Option<bytes::Bytes>| serde_json::from_slice::<Value>(&entry.expect("registered")).unwrap()["epoch"].clone();
    let (owner_epoch, b_epoch) = (epoch(gateways.get("owner").await.unwrap()), epoch(gateways.get("b").await.unwrap()));
    let mut request =
        json!({ "session": session, "owner_epoch": owner_epoch, "from": "b", "from_epoch": b_epoch, "frames": frames, "last_seq": null });
    if let Some(token) = resume_token {
        request["resume_token"] = json!(token);
    }
    let reply = outsider.request("VESTIBULE_route.owner.attach", request.to_string().into()).await.unwrap();
    serde_json::from_slice(&reply.payload).unwrap()
}

/// The positive probe: the visitor's own command through its proxied link is applied once (the
/// only events since `before` are its own), both of its connections see it, and a command on the
/// owner reaches the proxied connection (the link still carries frames). Nothing forged is in the
/// state or the log.
async fn the_visitor_is_untouched(c: &mut Cluster, before: u64) {
    let result = c.on_b.command(show_persistent_toast("the visitor's own")).await;
    assert_eq!(result["status"], "accepted", "{result}");
    let own = result["commandId"].as_str().unwrap().to_string();
    c.on_a.catch_up(c.on_b.seq).await;
    let events = events_after(&c.server, &c.on_b.session_id, before).await;
    assert!(!events.is_empty(), "the visitor's command was stored");
    assert!(events.iter().all(|(_, by)| by.as_deref() == Some(own.as_str())), "only the visitor's own command since {before}: {events:?}");
    assert_eq!(events.last().unwrap().0, c.on_b.seq);
    assert!(!c.on_b.state.to_string().contains("forged"), "{}", c.on_b.state);
    assert_eq!(c.on_a.state, c.on_b.state);
    assert_eq!(c.on_a.command(command(2)).await["status"], "accepted");
    c.on_b.catch_up(c.on_a.seq).await;
    assert_eq!(c.owner.metric("vestibule_cluster_served_links").await, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_a_proxied_link_when_an_outsider_sends_commands_to_its_id_without_its_secret_then_none_is_applied() {
    let mut c = cluster_with_a_proxied_visitor().await;
    let before = c.on_b.seq;

    // Every link id the owner may have handed out, with no secret, a wrong one, and one not hex.
    let wrong = "5a".repeat(16);
    let secrets = [None, Some(wrong.as_str()), Some("not a secret")];
    for (sweep, secret) in secrets.iter().enumerate() {
        for link in 0..LINK_IDS {
            let mut request = json!({ "link": link, "frame": forged_frame(&format!("forged-{sweep}-{link}")) });
            if let Some(secret) = secret {
                request["secret"] = json!(secret);
            }
            let reply = c.outsider.request("VESTIBULE_route.owner.cmd", request.to_string().into()).await.unwrap();
            assert_eq!(serde_json::from_slice::<Value>(&reply.payload).unwrap(), "gone", "link {link}: answered as for an unknown link");
        }
    }
    // Each sweep reached the visitor's link (the owner serves no other) and was refused.
    assert_eq!(c.owner.metric("vestibule_cluster_route_refused_total").await, secrets.len() as f64);
    // No result and no diff reached the visitor's connections: the next frame on each is the probe's.
    the_visitor_is_untouched(&mut c, before).await;
    c.on_a.close().await;
    c.on_b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_a_proxied_link_when_an_outsider_detaches_it_without_its_secret_then_the_link_lives() {
    let mut c = cluster_with_a_proxied_visitor().await;
    let before = c.on_b.seq;
    let detach = |payload: String| {
        let outsider = c.outsider.clone();
        async move { outsider.publish("VESTIBULE_route.owner.detach", payload.into()).await.unwrap() }
    };
    // A second link, attached with the session's token as a gateway would: detached with its
    // secret after the forgeries, it tells when the owner has handled them all (it handles
    // detaches in the order they were published).
    let sentinel = attach_as_b(&c.outsider, &c.on_a.session_id, Some(&c.on_a.resume_token), "VESTIBULE_route.b.c.sentinel.0.n").await;
    assert_eq!(sentinel["status"], "attached", "{sentinel}");
    assert_eq!(c.owner.metric("vestibule_cluster_served_links").await, 2.0);

    // Every link id, with no secret and with a wrong one; the link id alone, as detaches once were;
    // and "given up on" attaches by subjects for frames as they once were (`<connection>.<attempt>`,
    // now followed by a random nonce).
    let wrong = "5a".repeat(16);
    for link in 0..LINK_IDS {
        detach(json!({ "link": link }).to_string()).await;
        detach(json!({ "link": link, "secret": wrong }).to_string()).await;
        detach(link.to_string()).await;
        for attempt in 0..4 {
            detach(json!({ "frames": format!("VESTIBULE_route.b.c.{link}.{attempt}") }).to_string()).await;
        }
    }
    detach(json!({ "link": sentinel["link"], "secret": sentinel["secret"] }).to_string()).await;
    c.outsider.flush().await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while c.owner.metric("vestibule_cluster_served_links").await > 1.0 {
        assert!(tokio::time::Instant::now() < deadline, "the owner never handled the sentinel's detach");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(c.owner.metric("vestibule_cluster_served_links").await, 1.0, "the visitor's link is still served");
    // Two forgeries with a secret field or none reached each of the two links, and were refused.
    assert_eq!(c.owner.metric("vestibule_cluster_route_refused_total").await, 4.0);
    the_visitor_is_untouched(&mut c, before).await;
    c.on_a.close().await;
    c.on_b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_a_session_when_an_outsider_attaches_to_it_or_runs_a_command_on_it_without_its_resume_token_then_it_is_refused() {
    let mut c = cluster_with_a_proxied_visitor().await;
    let before = c.on_b.seq;
    let (session, token) = (c.on_a.session_id.clone(), c.on_a.resume_token.clone());
    let outsider = c.outsider.clone();
    // Whatever the owner would publish to the forged attaches' subjects for frames, the outsider
    // would read. (Not all of `VESTIBULE_route.b.c.>`: an anonymous client reads the visitor's real
    // frames there; NATS permissions are what keep it out, decision 0114.)
    let mut forged_frames = outsider.subscribe("VESTIBULE_route.*.c.*.*.forged").await.unwrap();
    let mut probe_frames = outsider.subscribe("VESTIBULE_route.b.c.probe.0.n").await.unwrap();

    // Posing as gateway `b`, with the owner's epoch: what a reader of the KV buckets knows.
    let wrong_token = "0".repeat(64);
    for resume_token in [None, Some(wrong_token.as_str()), Some("")] {
        let reply = attach_as_b(&outsider, &session, resume_token, "VESTIBULE_route.b.c.0.0.forged").await;
        assert_eq!(reply["status"], "failed", "{reply}");
    }
    // With the token, frames only under the requesting gateway's own `R.<gateway>.c.` subjects.
    for elsewhere in
        ["VESTIBULE_route.owner.c.0.0.forged", "VESTIBULE_route.b.cmd", "$JS.API.INFO", "VESTIBULE_route.b.c.*", "VESTIBULE_route.b.c.>"]
    {
        let reply = attach_as_b(&outsider, &session, Some(&token), elsewhere).await;
        assert_eq!(reply["status"], "failed", "{elsewhere}: {reply}");
    }
    // An `exec` (the sign-in HTTP API's commands for the owner) without the token is not run.
    let exec = |resume_token: Option<&str>, command_id: &str| {
        let mut request = json!({ "session": session, "command_id": command_id, "command": show_persistent_toast(command_id) });
        if let Some(token) = resume_token {
            request["resume_token"] = json!(token);
        }
        let outsider = outsider.clone();
        async move {
            let reply = outsider.request("VESTIBULE_route.owner.exec", request.to_string().into()).await.unwrap();
            serde_json::from_slice::<Value>(&reply.payload).unwrap()
        }
    };
    for resume_token in [None, Some(wrong_token.as_str())] {
        assert_eq!(exec(resume_token, "forged-exec").await["status"], "moved");
    }
    assert_eq!(c.owner.metric("vestibule_cluster_route_refused_total").await, 10.0, "3 + 5 attaches, 2 execs");
    assert_eq!(c.owner.metric("vestibule_cluster_served_links").await, 1.0, "the visitor's link only");
    let leaked = tokio::time::timeout(Duration::from_secs(1), forged_frames.next()).await;
    assert!(leaked.is_err(), "no frame of the session was published: {:?}", leaked.map(|m| m.map(|m| m.subject)));
    the_visitor_is_untouched(&mut c, before).await;

    // The positive probe, with the token: an attach is served (its welcome comes, and its secret),
    // and an exec is run.
    let probe = attach_as_b(&outsider, &session, Some(&token), "VESTIBULE_route.b.c.probe.0.n").await;
    assert_eq!(probe["status"], "attached", "{probe}");
    assert!(probe["secret"].as_str().is_some_and(|s| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())), "{probe}");
    let welcome = tokio::time::timeout(Duration::from_secs(10), probe_frames.next()).await.expect("the probe's welcome").unwrap();
    assert!(String::from_utf8_lossy(&welcome.payload).contains("\"welcome\""), "{welcome:?}");
    let probe_detach = json!({ "link": probe["link"], "secret": probe["secret"] }).to_string();
    outsider.publish("VESTIBULE_route.owner.detach", probe_detach.into()).await.unwrap();
    let seq = c.on_b.seq;
    assert_eq!(exec(Some(&token), "probe-exec").await, json!({ "status": "done", "error": null }));
    let events = events_after(&c.server, &session, seq).await;
    assert!(!events.is_empty() && events.iter().all(|(_, by)| by.as_deref() == Some("probe-exec")), "{events:?}");
    c.on_a.close().await;
    c.on_b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_a_frame_limit_larger_than_a_nats_message_carries_then_a_cluster_gateway_refuses_to_start_and_says_why() {
    let server = start_server().await;
    let dir = tempfile::tempdir().unwrap();
    let with_frames = |bytes: usize| {
        format!(
            "{CONFIG}\n[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"{}\"]\n\n[cluster]\nenabled = true\n\n\
             [limits]\nmax_frame_bytes = {bytes}\n",
            server.url
        )
    };
    // 2 MiB frames, a server of 1 MiB messages (nats-server's default).
    let path = dir.path().join("large.toml");
    std::fs::write(&path, with_frames(2 * 1024 * 1024)).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_vestibule"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data"])
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&path)
        .env("VESTIBULE_LOG", "error")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "started: {stderr}");
    assert!(stderr.contains("`limits.max_frame_bytes` = 2097152") && stderr.contains("max_payload of 1048576"), "{stderr}");
    // The positive side: the default frame limit starts.
    let _gateway = Gateway::start_at(&dir.path().join("ok"), &with_frames(64 * 1024), "127.0.0.1:0");
}
