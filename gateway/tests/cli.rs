//! The `vestibule` binary's commands as a user runs them: exit codes, messages and output.

mod support;

use std::process::Command;

use alloy::signers::SignerSync;
use alloy::signers::local::PrivateKeySigner;
use vestibule_actors::siwx::message::{MessageFields, Namespace, SiwxMessage};

fn vestibule(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_vestibule")).args(args).env("VESTIBULE_LOG", "error").output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn signed_message() -> (String, String) {
    let signer = PrivateKeySigner::from_slice(&[0x42; 32]).unwrap();
    let fields = MessageFields {
        domain: Some("app.example".into()),
        address: Some(signer.address().to_checksum(None)),
        uri: Some("https://app.example/login".into()),
        version: Some("1".into()),
        chain_id: Some("1".into()),
        nonce: Some("abcdefgh12345678".into()),
        issued_at: Some("2024-05-01T11:59:00Z".into()),
        ..Default::default()
    };
    let text = SiwxMessage::from_fields(Namespace::Eip155, &fields).unwrap().to_message();
    let signature = format!("0x{}", hex::encode(signer.sign_message_sync(text.as_bytes()).unwrap().as_bytes()));
    (text, signature)
}

#[test]
fn siwx_verify_exits_0_for_a_valid_signature_and_1_for_a_tampered_one() {
    let dir = tempfile::tempdir().unwrap();
    let (text, signature) = signed_message();
    let file = dir.path().join("message.txt");
    std::fs::write(&file, &text).unwrap();
    let file = file.to_str().unwrap();
    let common =
        ["siwx", "verify", "--message", file, "--domain", "app.example", "--nonce", "abcdefgh12345678", "--at", "2024-05-01T12:00:00Z"];

    let (code, stdout, _) = vestibule(&[&common[..], &["--signature", &signature]].concat());
    let verdict: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!((code, verdict["valid"].as_bool()), (0, Some(true)), "{stdout}");

    let mut tampered = signature.clone();
    tampered.replace_range(10..12, if &signature[10..12] == "00" { "11" } else { "00" });
    let (code, stdout, _) = vestibule(&[&common[..], &["--signature", &tampered]].concat());
    let verdict: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!((code, verdict["valid"].as_bool()), (1, Some(false)), "{stdout}");
    assert!(verdict["reason"]["code"].is_string());

    let (code, stdout, _) = vestibule(&["siwx", "verify", "--message", file, "--signature", &signature, "--nonce", "wrongnonce123"]);
    let verdict: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!((code, verdict["reason"]["code"].as_str()), (1, Some("nonce_mismatch")), "{stdout}");
}

#[test]
fn serve_refuses_a_bad_configuration_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("v.toml");
    std::fs::write(&config, "[limits]\nunacked_diffs = 100\noutbound_queue = 10\n").unwrap();
    let (code, _, stderr) = vestibule(&["serve", "--config", config.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("limits.outbound_queue"), "{stderr}");

    let (code, _, stderr) = vestibule(&["serve", "--config", "/nonexistent/v.toml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("/nonexistent/v.toml"), "{stderr}");
}

#[test]
fn a_data_directory_held_by_a_running_gateway_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut first = Command::new(env!("CARGO_BIN_EXE_vestibule"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data", data.to_str().unwrap()])
        .env("VESTIBULE_LOG", "error")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(first.stdout.take().unwrap()), &mut line).unwrap();
    assert!(line.starts_with("vestibule listening on"), "{line}");
    let (code, _, stderr) = vestibule(&["serve", "--listen", "127.0.0.1:0", "--data", data.to_str().unwrap()]);
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(code, 2);
    assert!(stderr.contains(data.to_str().unwrap()) && stderr.contains("in use"), "{stderr}");
}

#[tokio::test]
async fn store_migrate_moves_a_sled_directory_that_a_segments_gateway_then_serves() {
    use serde_json::json;
    use support::{CONFIG, Client, Gateway, connect_wallet, show_persistent_toast, show_toast};

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_arg = data.to_str().unwrap();
    let mut gateway = Gateway::start_at(&data, CONFIG, "127.0.0.1:0");
    let mut client = Client::create(&gateway, json!({})).await;
    connect_wallet(&mut client, "0x52908400098527886E0F7030069857D2E4169EE7", "0x1").await;
    // Persistent: the session's event count (`seq`, compared with what the migration moved) stays
    // put while the gateway runs (no auto-dismiss).
    let toast = client.command(show_persistent_toast("before the move")).await;
    let toast_id = toast["commandId"].as_str().unwrap().to_string();
    let (session, token, seq, state) = (client.session_id.clone(), client.resume_token.clone(), client.seq, client.state.clone());

    let (code, _, err) = vestibule(&["store", "migrate", "--data", data_arg, "--to", "segments"]);
    assert_eq!(code, 2, "a running gateway holds the directory: {err}");
    assert!(err.contains("in use") && err.contains("Stop it"), "{err}");
    gateway.terminate();

    let (code, _, err) = vestibule(&["store", "migrate", "--data", data_arg, "--to", "rocksdb"]);
    assert_eq!(code, 2, "an unknown backend: {err}");
    assert!(err.contains("rocksdb"), "{err}");

    let (code, out, err) = vestibule(&["store", "migrate", "--data", data_arg, "--to", "segments"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 sessions") && out.contains(&format!("{seq} events")), "{out}");
    assert!(out.contains("also copied from the data directory: keys"), "the sign-in token key goes along: {out}");
    assert!(out.contains("the old sled log is kept in") && out.contains("data.sled-"), "{out}");

    let (code, _, err) = vestibule(&["replay", "--data", data_arg, &session, "--verify"]);
    assert_eq!(code, 0, "the migrated log verifies against the hashes clients were sent: {err}");
    let (code, _, err) = vestibule(&["store", "migrate", "--data", data_arg, "--to", "segments"]);
    assert_eq!(code, 2);
    assert!(err.contains("already holds a segment log"), "{err}");

    // The gateway on the segment log resumes the visitor with the same token, answers the same
    // command id as before without doing it again, and goes on.
    let gateway = Gateway::start_at(&data, &format!("[store]\nbackend = \"segments\"\n{CONFIG}"), "127.0.0.1:0");
    let (mut client, welcome) = Client::resume(&gateway, &session, &token, Some(seq), state).await;
    assert_eq!(welcome["resumed"], json!(true), "{welcome}");
    support::send(&mut client.ws, json!({ "type": "command", "id": toast_id, "command": show_persistent_toast("before the move") })).await;
    let again = client.recv_non_diff().await;
    assert_eq!((&again["status"], &again["seq"]), (&toast["status"], &toast["seq"]), "{again}");
    assert_eq!(client.command(show_toast("after the move")).await["status"], "accepted");
    assert!(client.seq > seq);
}
