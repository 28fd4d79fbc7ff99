//! What the replay tools refuse (the 2026 store review, findings 3, 6 and 10): `--verify` on a log
//! whose state hashes were removed or that had an event added without one; an import that holds
//! more than a session may write to its log; a `--since` before 1970.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use support::*;

fn vestibule(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vestibule")).args(args).env("VESTIBULE_LOG", "error").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Imports `lines` (an export, edited) as a new session of `data`, then runs `replay --verify` on it:
/// its exit code and stderr.
fn import_and_verify(dir: &Path, name: &str, lines: &[Value]) -> (i32, String, String) {
    let file = dir.join(format!("{name}.jsonl"));
    std::fs::write(&file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let data = dir.join(name);
    let (code, out, err) = vestibule(&["import", "--data", path(&data), path(&file), "--new-id"]);
    assert_eq!(code, 0, "{name}: {err}");
    let id = out.trim().rsplit(' ').next().unwrap().to_string();
    let (code, _, err) = vestibule(&["replay", "--data", path(&data), &id, "--verify"]);
    (code, err, id)
}

/// The first seq `--verify` names: `verify FAILED at seq N: …`.
fn failed_at(err: &str) -> u64 {
    err.split("verify FAILED at seq ")
        .nth(1)
        .and_then(|s| s.split(':').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{err}"))
}

#[tokio::test]
async fn verify_fails_when_a_decision_lacks_the_state_hash_the_gateway_always_writes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut gateway = Gateway::start_at(&data, CONFIG, "127.0.0.1:0");
    let mut client = Client::create(&gateway, json!({})).await;
    connect_wallet(&mut client, "0x52908400098527886E0F7030069857D2E4169EE7", "0x1").await;
    client.command(show_persistent_toast("hello")).await;
    let session = client.session_id.clone();
    gateway.terminate();

    let (code, export, err) = vestibule(&["export", "--data", path(&data), &session]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = export.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (header, events) = lines.split_first().unwrap();
    let last_seq = events.last().unwrap()["seq"].as_u64().unwrap();
    let connected = events.iter().find(|e| e["type"] == "Connected").expect("a Connected event").clone();
    let connected_seq = connected["seq"].as_u64().unwrap();
    // The header counts the events (an import compares the count), as a forger would set it.
    let with = |events: Vec<Value>| {
        let mut header = header.clone();
        header["events"] = json!(events.len());
        std::iter::once(header).chain(events).collect::<Vec<_>>()
    };

    // As exported: every decision's last event carries its hash, and all of them verify.
    let (code, err, _) = import_and_verify(dir.path(), "as-is", &with(events.to_vec()));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("verify ok") && err.contains(" checked against the state hash") && !err.contains("unverified"), "{err}");

    // The review's t2: an address replaced from the Connected event on, and the hashes that would
    // have given it away removed from there on.
    let forged = events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if e["seq"].as_u64().unwrap() >= connected_seq {
                e = serde_json::from_str(
                    &e.to_string().replace("0x52908400098527886E0F7030069857D2E4169EE7", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"),
                )
                .unwrap();
                e["checksum"] = Value::Null;
            }
            e
        })
        .collect();
    let (code, err, id) = import_and_verify(dir.path(), "hashes-removed-from-the-edit-on", &with(forged));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&format!("session {id}: unverified from seq ")), "the message names the session: {err}");
    assert!(failed_at(&err) <= connected_seq, "the edited events are not called verified: {err}");

    // t3: every hash removed, nothing else changed.
    let stripped: Vec<Value> = events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e["checksum"] = Value::Null;
            e
        })
        .collect();
    let (code, err, id) = import_and_verify(dir.path(), "all-hashes-removed", &with(stripped));
    assert_eq!((code, failed_at(&err)), (1, 1), "{err}");
    assert!(err.contains(&format!("session {id}: unverified from seq 1:")), "{err}");

    // t5: a Connected event the machines never decided, appended without a hash.
    let mut appended = events.to_vec();
    let mut extra = connected.clone();
    extra["seq"] = json!(last_seq + 1);
    extra["correlationId"] = json!("forged");
    extra["checksum"] = Value::Null;
    appended.push(extra.clone());
    let (code, err, _) = import_and_verify(dir.path(), "event-appended", &with(appended));
    assert_eq!((code, failed_at(&err)), (1, last_seq + 1), "{err}");
    assert!(err.contains(&format!("unverified from seq {}", last_seq + 1)), "{err}");

    // The same event slipped into the last decision (its correlation id): that decision no longer
    // ends with its hash.
    let mut joined = events.to_vec();
    extra["correlationId"] = events.last().unwrap()["correlationId"].clone();
    joined.push(extra);
    let (code, err, _) = import_and_verify(dir.path(), "event-joined", &with(joined));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("unverified from seq "), "{err}");
}

#[test]
fn an_import_larger_than_a_sessions_log_budget_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let header = json!({ "format": "vestibule-session-log", "version": 1, "session": "0123456789abcdef0123456789abcdef",
        "project": "test", "createdMs": 1, "events": 0, "emailsMasked": false });
    let mut text = format!("{header}\n");
    // 300 toasts of 64 KiB: about 19.7 MB of event log, over the 16 MiB budget and its eighth more.
    let message = "x".repeat(64 * 1024);
    for seq in 1..=300u64 {
        let payload = json!({ "id": format!("t{seq}"), "message": message, "variant": "success", "autoCloseMs": null, "atMs": 1 });
        let line = json!({ "seq": seq, "timeMs": 1, "type": "ToastQueued", "schemaVersion": 1, "correlationId": format!("c{seq}"), "checksum": null, "payload": payload });
        text.push_str(&format!("{line}\n"));
    }
    // Past the budget the file is not read on: this line is never reached.
    text.push_str("{not json\n");
    let file = dir.path().join("big.jsonl");
    std::fs::write(&file, &text).unwrap();
    let data = dir.path().join("data");
    let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
    assert_ne!(code, 0);
    assert!(err.contains("refused") && err.contains("session_log_bytes") && err.contains("nothing was imported"), "{err}");
    assert!(!err.contains("not JSON"), "refused as soon as the budget is passed: {err}");
    let (code, out, err) = vestibule(&["sessions", "list", "--data", path(&data), "--format", "json"]);
    assert_eq!((code, out.as_str()), (0, ""), "no session was created: {err}");
}

#[test]
fn a_since_before_1970_is_refused_and_not_wrapped_around() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A log to list (a directory without one is refused): an import of one event makes it.
    let header = json!({ "format": "vestibule-session-log", "version": 1, "session": "0123456789abcdef0123456789abcdef",
        "project": "test", "createdMs": 1, "events": 1, "emailsMasked": false });
    let event =
        json!({ "seq": 1, "timeMs": 1, "type": "ModalOpened", "schemaVersion": 1, "correlationId": "c1", "checksum": null, "payload": {} });
    let file = dir.path().join("one.jsonl");
    std::fs::write(&file, format!("{header}\n{event}\n")).unwrap();
    let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = vestibule(&["sessions", "list", "--data", path(&data), "--since", "1900-01-01T00:00:00Z"]);
    assert_ne!(code, 0);
    assert!(err.contains("before 1970-01-01T00:00:00Z"), "{err}");
    let (code, _, err) = vestibule(&["sessions", "list", "--data", path(&data), "--since", "1969-12-31T23:59:59.999Z"]);
    assert!(code != 0 && err.contains("before 1970"), "one millisecond before is refused too: {err}");
    let (code, _, err) = vestibule(&["sessions", "list", "--data", path(&data), "--since", "1970-01-01T00:00:00Z"]);
    assert_eq!(code, 0, "{err}");
}
