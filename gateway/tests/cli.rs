//! The `vestibule` binary's commands as a user runs them: exit codes, messages and output.

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
