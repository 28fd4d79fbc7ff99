//! The replay tools on the store a gateway's configuration names (`--config`), here a real
//! nats-server: a session made through a real gateway on the JetStream backend is listed, replayed
//! and verified, exported, imported into another stream and verified there, all through the
//! `vestibule` binary. `--data` and `--config` together (or neither) are refused. `bench store` on
//! the configured JetStream logs in as the configuration says.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::*;
use vestibule_store_jetstream::test_server::NatsServer;

fn vestibule(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vestibule")).args(args).env("VESTIBULE_LOG", "error").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn jetstream_config(server: &NatsServer, stream: &str) -> String {
    format!("{CONFIG}\n[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"{}\"]\nstream = \"{stream}\"\n", server.url)
}

#[tokio::test]
async fn sessions_list_replay_verify_export_and_import_work_on_the_configured_jetstream_log() {
    let server = tokio::task::spawn_blocking(NatsServer::start).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut gateway = Gateway::start_at(&data, &jetstream_config(&server, "VESTIBULE"), "127.0.0.1:0");
    let mut client = Client::create(&gateway, json!({})).await;
    connect_wallet(&mut client, "0x52908400098527886E0F7030069857D2E4169EE7", "0x1").await;
    // Persistent: the session's events stay put while they are counted (no auto-dismiss).
    client.command(show_persistent_toast("hello from ada@example.com")).await;
    let session = client.session_id.clone();
    let live_seq = client.seq;
    let config = gateway.config.clone();

    // Nothing holds a JetStream log: the tools read it while the gateway runs.
    let (code, out, err) = vestibule(&["sessions", "list", "--config", path(&config), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let listed: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(listed.len(), 1, "{out}");
    assert_eq!((listed[0]["session"].as_str(), listed[0]["events"].as_u64()), (Some(session.as_str()), Some(live_seq)));

    let (code, out, err) = vestibule(&["replay", "--config", path(&config), &session, "--verify"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("verify ok"), "{err}");
    assert_eq!(out.lines().count() as u64, live_seq, "one line per event");
    assert!(out.contains("connection/eip155: connecting -> connected"), "{out}");
    gateway.terminate();

    // Export from the stream, import into another stream of the same server, verify there.
    let (code, export, err) = vestibule(&["export", "--config", path(&config), &session]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(export.lines().count() as u64, live_seq + 1, "a header line and one per event");
    let file = dir.path().join("session.jsonl");
    std::fs::write(&file, &export).unwrap();
    let other = dir.path().join("other.toml");
    std::fs::write(&other, jetstream_config(&server, "OTHER")).unwrap();
    let (code, out, err) = vestibule(&["import", "--config", path(&other), path(&file)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&session), "{out}");
    let (code, _, err) = vestibule(&["replay", "--config", path(&other), &session, "--verify"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = vestibule(&["sessions", "list", "--config", path(&other)]);
    assert_eq!(code, 0);
    assert!(out.contains(&session), "{out}");

    // A config naming sled opens its `data` directory, as `--data` does.
    let sled_data = dir.path().join("sled");
    let sled_config = dir.path().join("sled.toml");
    std::fs::write(&sled_config, format!("data = {:?}\n{CONFIG}", path(&sled_data))).unwrap();
    let (code, _, err) = vestibule(&["import", "--config", path(&sled_config), path(&file)]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = vestibule(&["replay", "--data", path(&sled_data), &session, "--verify"]);
    assert_eq!(code, 0, "{err}");

    // One of --data and --config, not both, not neither.
    let (code, _, err) = vestibule(&["sessions", "list", "--config", path(&config), "--data", path(&sled_data)]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot be used with"), "{err}");
    let (code, _, err) = vestibule(&["replay", &session]);
    assert_ne!(code, 0);
    assert!(err.contains("--data") && err.contains("--config"), "{err}");
}

#[tokio::test]
async fn bench_store_on_jetstream_logs_in_as_the_configuration_says_and_removes_what_it_made() {
    let server = tokio::task::spawn_blocking(|| NatsServer::start_with_config("authorization { user: bench, password: \"pa55-bench\" }"))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("password");
    std::fs::write(&password, "pa55-bench\n").unwrap();
    let config = dir.path().join("gw.toml");
    std::fs::write(
        &config,
        format!(
            "[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"{}\"]\nuser = \"bench\"\npassword_file = \"{}\"\n",
            server.url,
            path(&password)
        ),
    )
    .unwrap();
    let tiny = ["bench", "store", "--backend", "jetstream", "--secs", "0.2", "--sessions", "1", "--replay-events", "200", "--json"];

    let (code, out, err) = vestibule(&[&tiny[..], &["--config", path(&config)]].concat());
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(report["backend"].as_str().unwrap().contains(&server.url), "{report}");
    assert_eq!(report["replay"]["events"], 200, "{report}");
    // What it made is gone: removing it logged in too.
    let client = vestibule_store_jetstream::async_nats::ConnectOptions::with_user_and_password("bench".into(), "pa55-bench".into())
        .connect(server.url.as_str())
        .await
        .unwrap();
    let js = vestibule_store_jetstream::async_nats::jetstream::new(client);
    let names: Vec<String> = futures_util::TryStreamExt::try_collect(js.stream_names()).await.unwrap();
    assert!(names.is_empty(), "streams left behind: {names:?}");

    // The same servers without the configuration's login: refused.
    let (code, _, err) = vestibule(&[&tiny[..], &["--servers", &server.url]].concat());
    assert_ne!(code, 0);
    assert!(err.contains("authorization"), "{err}");
    // A local backend takes no NATS options.
    let (code, _, err) = vestibule(&["bench", "store", "--backend", "segments", "--config", path(&config)]);
    assert_ne!(code, 0);
    assert!(err.contains("--backend jetstream"), "{err}");
}
