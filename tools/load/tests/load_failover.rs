//! Failover under load (issue 16's proof list): `vestibule-load --cluster 3 --failover` starts a real
//! 3-node NATS cluster (`replicas = 3`) and three real `vestibule serve` in cluster mode on it, runs
//! `mixed` visitors round-robin over them, and, counted in answers, never in seconds: once every
//! visitor has had 5 commands answered, SIGKILLs the gateway owning the most sessions; once every
//! visitor has had 5 answered after that, SIGKILLs the NATS node leading the event stream; once
//! every visitor has had 5 answered after that, ends the traffic and reads the log from the two
//! surviving nodes. A busy machine makes the run longer, never different.

use std::process::Command;

use serde_json::Value;

#[test]
fn killing_the_busiest_gateway_then_the_stream_leaders_nats_node_under_load_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let output = Command::new(env!("CARGO_BIN_EXE_vestibule-load"))
        .args(["--cluster", "3", "--failover", "--sessions", "24", "--ramp", "1", "--scenario", "mixed", "--think-ms", "50"])
        .arg("--report")
        .arg(&report)
        .env("VESTIBULE_LOG", "error")
        .output()
        .expect("vestibule-load runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    if !output.status.success() {
        // The progress lines and the reason (e.g. no `vestibule` binary beside this one, no nats-server).
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    }
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap_or_default()).unwrap_or(Value::Null);
    let summary = stdout.lines().rev().take(2).collect::<Vec<_>>().join("\n");
    println!("{summary}");
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert_eq!(report["sessions_connected"], 24, "{summary}");
    assert_eq!(
        (report["lost"].as_u64(), report["gaps"].as_u64(), report["hash_mismatches"].as_u64()),
        (Some(0), Some(0), Some(0)),
        "{summary}"
    );
    let f = &report["failover"];
    assert_eq!((f["gateway_kills"].as_u64(), f["nats_kills"].as_u64()), (Some(1), Some(1)), "{f}");
    assert_eq!(report["kills"], 2);
    // Before the kill the sessions had one owner each, spread round-robin.
    let owned: Vec<u64> = f["owned_before_kill"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(owned.iter().sum::<u64>(), 24, "{f}");
    let victim_sessions = f["victim_sessions"].as_u64().unwrap();
    assert!(victim_sessions >= 8, "the busiest gateway owned at least a third: {f}");
    // Every session the dead gateway owned was resumed through a live gateway, which took it over
    // (a takeover happens only on a resume; more if a gateway lost its lease while the NATS node
    // was down, and its sessions were taken over too).
    assert!(f["takeovers"].as_u64().unwrap() >= victim_sessions, "{f}");
    // Visitors lost their socket (on the dead gateway, or proxied to it and closed 1011; a
    // `reconnect-storm` visitor may have left it on purpose first), and every visitor that lost one
    // resumed, through a live gateway; nobody gave up.
    let dropped = f["dropped_after_gateway_kill"].as_u64().unwrap();
    assert!(dropped > 0, "{f}");
    assert_eq!(f["resumed_after_gateway_kill"].as_u64(), Some(dropped), "{f}");
    assert_eq!(f["resumed_after_nats_kill"], f["dropped_after_nats_kill"], "{f}");
    assert_eq!(f["gave_up"], 0, "{f}");
    // Every acknowledged command is in the log read from the surviving nodes, decided once.
    assert!(report["checked_accepted"].as_u64().unwrap() >= 24 * 15, "at least 5 per visitor per phase: {summary}");
    assert_eq!(f["decided_twice"], 0, "{f}");
    // Only transient refusals were retried (their counts are in the report), and no command
    // timed out: every command got its answer, after a kill too.
    let retried: u64 = f["transient_refusals"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    println!("transient refusals retried: {retried}");
    let errors = report["errors"].as_object().unwrap();
    assert!(!errors.keys().any(|k| k.starts_with("reconnect_failed") || k.starts_with("connect:")), "{errors:?}");
}
