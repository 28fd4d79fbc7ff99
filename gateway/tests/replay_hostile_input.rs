//! The replay tools given hostile input (the 2026 outside review of the developer tooling): strings
//! a visitor or an export file controls never reach the terminal as controls; an export redacts
//! signatures and masks every address; an import checks everything before it creates the session,
//! so a refused file leaves nothing behind; `bench store --secs` takes only a sane duration.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn vestibule(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vestibule")).args(args).env("VESTIBULE_LOG", "error").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

const SESSION: &str = "0123456789abcdef0123456789abcdef";

fn header(project: &str, events: usize) -> Value {
    json!({ "format": "vestibule-session-log", "version": 1, "session": SESSION, "project": project, "createdMs": 1,
        "events": events, "emailsMasked": false })
}

fn event(seq: u64, event_type: &str, payload: Value) -> Value {
    json!({ "seq": seq, "timeMs": 1000 + seq, "type": event_type, "schemaVersion": 1, "correlationId": format!("c{seq}"),
        "checksum": null, "payload": payload })
}

fn toast(seq: u64, message: &str) -> Value {
    event(seq, "ToastQueued", json!({ "id": format!("t{seq}"), "message": message, "variant": "error", "autoCloseMs": null, "atMs": 1 }))
}

/// An export of `events` (seqs from 1), its header counting them.
fn export_file(dir: &Path, name: &str, project: &str, events: &[Value]) -> std::path::PathBuf {
    let file = dir.join(format!("{name}.jsonl"));
    let text: String = std::iter::once(header(project, events.len())).chain(events.iter().cloned()).map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    file
}

/// Characters a terminal acts on (controls but the line feeds ending lines, bidirectional and
/// zero-width format characters).
fn acted_on(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n') || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

fn sessions_listed(data: &Path) -> String {
    let (code, out, err) = vestibule(&["sessions", "list", "--data", path(data), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    out
}

const HOSTILE: &str =
    "\u{1b}]0;PWNED\u{7}\u{1b}[2J\r\nverify ok: the fold matches every stored state hash and snapshot\n\u{9b}31m\u{202e}kcatta\u{7f}";

#[test]
fn given_a_log_holding_terminal_controls_when_listed_replayed_and_verified_then_none_reaches_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut events = vec![toast(1, HOSTILE), event(2, "ModalOpened", json!({}))];
    // A stored hash that is not the fold's: `verify FAILED` quotes it, and it must not print a line.
    events[1]["checksum"] = json!(format!("0000\nverify ok: forged"));
    let file = export_file(dir.path(), "hostile", &format!("demo{HOSTILE}"), &events);
    let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
    assert_eq!(code, 0, "{err}");

    for format in ["text", "json"] {
        let (code, out, _) = vestibule(&["sessions", "list", "--data", path(&data), "--format", format]);
        assert_eq!(code, 0);
        assert_eq!(acted_on(&out), vec![], "sessions list --format {format}: {out:?}");
        assert!(out.contains("\\u001b[2J"), "spelled out, not dropped: {out}");
        let (code, out, _) = vestibule(&["replay", "--data", path(&data), SESSION, "--format", format, "--patch"]);
        assert_eq!(code, 0);
        assert_eq!(acted_on(&out), vec![], "replay --format {format}: {out:?}");
        assert_eq!(out.lines().count(), if format == "text" { 4 } else { 2 }, "a line per event (and its patch): {out}");
    }
    // Seq 1 carries no hash: allowed, so that the verdict is the forged hash's mismatch.
    let (code, _, err) = vestibule(&["replay", "--data", path(&data), SESSION, "--verify", "--allow-unverified"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(acted_on(&err), vec![], "{err:?}");
    assert!(err.lines().all(|line| !line.starts_with("verify ok")), "no forged verdict: {err}");
    assert!(err.contains("verify FAILED at seq 2") && err.contains("but 0000\\u000averify ok: forged was sent"), "{err}");
}

#[test]
fn given_an_export_with_terminal_controls_in_what_serde_quotes_when_imported_then_the_error_spells_them_out() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut bad_variant = toast(1, "x");
    bad_variant["payload"]["variant"] = json!("\u{1b}[31mred\nverify ok");
    let bad_type = event(1, "\u{1b}[2JToastQueued\r", json!({}));
    for (name, line) in [("variant", bad_variant), ("type", bad_type)] {
        let file = export_file(dir.path(), name, "demo", &[line]);
        let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains("\\u001b"), "{name}: spelled out: {err}");
        assert_eq!(acted_on(&err), vec![], "{name}: {err:?}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: one line: {err}");
    }
}

/// A sign-in as the gateway records it: its message and signature are a proof of the visitor's
/// sign-in until it expires.
fn signed_in(seq: u64) -> Value {
    event(
        seq,
        "SiwxSignedIn",
        json!({ "session": { "id": "si1", "account": "eip155:1:0x0fDf4908f88dF812bB8D2aC4D9af19C6D8A8B4f2", "chain": "eip155:1",
            "message": "localhost wants you to sign in", "signature": "0xed926f55aa", "method": "eip191", "issuedMs": 1,
            "expiresMs": 4102444800000u64, "cacao": { "s": { "t": "eip191", "s": "0xcacaosig" } } } }),
    )
}

#[test]
fn given_a_session_with_signatures_when_exported_then_they_are_redacted_unless_kept_and_the_export_imports_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let request = json!({ "id": "r1", "connectorId": "injected", "namespace": "eip155", "issuedMs": 1,
        "kind": { "type": "rpc", "method": "eth_signTypedData_v4", "params": [] } });
    let events = vec![
        signed_in(1),
        event(2, "SiwxContractCheckStarted", json!({ "signature": "0xcontractsig" })),
        event(3, "WalletRequestIssued", json!({ "request": request })),
        event(4, "WalletRequestSettled", json!({ "id": "r1", "outcome": { "status": "ok", "result": "0xtypedsig" } })),
    ];
    let file = export_file(dir.path(), "signed", "demo", &events);
    let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
    assert_eq!(code, 0, "{err}");

    let (code, export, err) = vestibule(&["export", "--data", path(&data), SESSION]);
    assert_eq!(code, 0, "{err}");
    for signature in ["0xed926f55aa", "0xcacaosig", "0xcontractsig", "0xtypedsig"] {
        assert!(!export.contains(signature), "{signature} redacted: {export}");
    }
    assert!(export.contains("[redacted by vestibule export]"), "{export}");
    assert!(export.contains("localhost wants you to sign in"), "the message is kept, its signature is not");
    let header: Value = serde_json::from_str(export.lines().next().unwrap()).unwrap();
    assert_eq!(header["signaturesRedacted"], json!(true));

    // The redacted export imports, and replays.
    let redacted = dir.path().join("redacted.jsonl");
    std::fs::write(&redacted, &export).unwrap();
    let other = dir.path().join("other");
    let (code, _, err) = vestibule(&["import", "--data", path(&other), path(&redacted)]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = vestibule(&["replay", "--data", path(&other), SESSION]);
    assert_eq!((code, out.lines().count()), (0, 4), "{err}");

    let (code, kept, _) = vestibule(&["export", "--data", path(&data), SESSION, "--keep-signatures"]);
    assert_eq!(code, 0);
    assert!(kept.contains("0xed926f55aa") && kept.contains("0xtypedsig"), "{kept}");
    assert!(kept.lines().next().unwrap().contains("\"signaturesRedacted\":false"), "{kept}");
}

#[test]
fn given_addresses_in_any_separator_when_exported_with_mask_emails_then_every_local_part_is_masked_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let message = "ada@example.com,bob@example.org\ncarol@example.com\tdave@example.com <erin@example.com> (frank@example.com).";
    let file = export_file(dir.path(), "mask", "proj-of-grace@example.com", &[toast(1, message)]);
    let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
    assert_eq!(code, 0, "{err}");
    let (code, export, _) = vestibule(&["export", "--data", path(&data), SESSION, "--mask-emails"]);
    assert_eq!(code, 0);
    let lines: Vec<Value> = export.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines[1]["payload"]["message"],
        json!("***@example.com,***@example.org\n***@example.com\t***@example.com <***@example.com> (***@example.com).")
    );
    assert_eq!(lines[0]["project"], json!("***@example.com"), "the header's project too");
    for local in ["ada@", "bob@", "carol@", "dave@", "erin@", "frank@", "grace@"] {
        assert!(!export.contains(local), "{local} masked: {export}");
    }
}

#[test]
fn given_an_event_the_store_would_refuse_when_imported_then_nothing_is_created_and_the_fixed_file_imports() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // The store takes correlation ids of at most 1024 bytes: the append would fail after the
    // session was created, and the empty session blocked importing the fixed file.
    let mut events = vec![toast(1, "one"), toast(2, "two")];
    events[1]["correlationId"] = json!("c".repeat(2000));
    let file = export_file(dir.path(), "long-label", "demo", &events);
    let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 3") && err.contains("correlation id longer than 1024 bytes"), "{err}");
    assert_eq!(sessions_listed(&data), "", "no session was created");

    events[1]["correlationId"] = json!("c2");
    let file = export_file(dir.path(), "fixed", "demo", &events);
    let (code, out, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
    assert_eq!(code, 0, "the fixed file imports: {err}");
    assert!(out.contains("imported 2 events"), "{out}");
}

#[test]
fn given_a_line_longer_than_any_event_when_imported_then_it_is_refused_before_the_session_exists() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // 300 KiB: under the session's budget, over the store's largest event (256 KiB).
    let file = export_file(dir.path(), "long-line", "demo", &[toast(1, &"x".repeat(300 * 1024))]);
    let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 2: longer than") && err.contains("nothing was imported"), "{err}");
    assert_eq!(sessions_listed(&data), "");
}

#[test]
fn given_an_export_on_a_pipe_when_imported_then_it_is_refused_as_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = export_file(dir.path(), "piped", "demo", &[toast(1, "one")]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_vestibule"))
        .args(["import", "--data", path(&data), "/dev/stdin"])
        .env("VESTIBULE_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Written from another thread: the import may refuse before it reads, closing the pipe.
    let mut stdin = child.stdin.take().unwrap();
    let text = std::fs::read(&file).unwrap();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &text));
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a regular file") && err.contains("save the export to a file"), "{err}");
    assert_eq!(sessions_listed(&data), "");
}

#[test]
fn given_numbers_the_log_cannot_hold_or_read_back_when_imported_then_each_is_refused_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let base = vec![toast(1, "one"), toast(2, "two")];
    let edit = |f: &dyn Fn(&mut Vec<Value>)| {
        let mut events = base.clone();
        f(&mut events);
        events
    };
    let cases: Vec<(&str, Vec<Value>, &str)> = vec![
        ("schema-999", edit(&|e| e[1]["schemaVersion"] = json!(999)), "schemaVersion 999 of ToastQueued is not one this build reads"),
        ("schema-wraps", edit(&|e| e[1]["schemaVersion"] = json!(4294967297u64)), "schemaVersion 4294967297"),
        ("negative-time", edit(&|e| e[1]["timeMs"] = json!(-5)), "timeMs -5 is not a time the log records"),
        ("extra-key", edit(&|e| e[1]["payload"]["note"] = json!("not folded")), "ToastQueued has no /note"),
    ];
    for (name, events, reason) in cases {
        let file = export_file(dir.path(), name, "demo", &events);
        let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains("line 3") && err.contains(reason), "{name}: {err}");
    }
    // The header's event count is checked too: a file cut short or grown is not the export.
    let file = dir.path().join("count.jsonl");
    let mut lying = header("demo", 5);
    lying["events"] = json!(5);
    std::fs::write(&file, format!("{lying}\n{}\n{}\n", base[0], base[1])).unwrap();
    let (code, _, err) = vestibule(&["import", "--data", path(&data), path(&file)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("its header says 5 events, but it holds 2"), "{err}");
    assert_eq!(sessions_listed(&data), "", "none of them created a session");
}

#[test]
fn given_a_duration_that_is_not_one_when_bench_store_runs_then_clap_refuses_it_and_nothing_is_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    for secs in ["NaN", "inf", "-1", "0", "1e300"] {
        let secs_arg = format!("--secs={secs}");
        let (code, _, err) = vestibule(&["bench", "store", &secs_arg, "--dir", path(dir.path()), "--replay-events", "10"]);
        assert_eq!(code, 2, "--secs {secs}: {err}");
        assert!(err.contains("--secs") && !err.contains("panicked"), "--secs {secs}: {err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no temporary log left in --dir");
}

#[test]
fn given_a_directory_holding_no_log_when_a_reading_tool_opens_it_then_it_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("todo.txt"), b"mine").unwrap();
    for args in [vec!["sessions", "list"], vec!["replay", SESSION], vec!["export", SESSION]] {
        let mut args = args.clone();
        args.extend(["--data", path(&notes)]);
        let (code, _, err) = vestibule(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("holds no event log"), "{args:?}: {err}");
    }
    let left: Vec<_> = std::fs::read_dir(&notes).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("todo.txt")], "no log was made in it");
}
