//! The `account` scenario end to end at a tiny size, as `tools/load/run-account.sh` runs it: the
//! devnet of scripts/lib/devnet.sh (two real anvils, the demo ERC-20), a real `vestibule serve`
//! configured with the devnet's `chain.toml`, and 20 visitors sharing ONE address, each connecting,
//! refreshing balances, loading activity and sending once for real (the harness sends the
//! transaction to anvil and answers the wallet request with its hash).
//!
//! The property checked is a count, not a speed: 20 sessions of the same address cause at most
//! one upstream balance fetch per 30 s cache period (`vestibule_chain_balance_cache_total
//! {kind="miss"}` read from the gateway's /metrics before and after), not 20. The run counts
//! cycles (`--cycles 1`), so a busy machine makes it longer, never different.
//!
//! Needs the `vestibule` binary beside this one (`cargo build -p vestibule-gateway`) and the test
//! peers (anvil; `start_devnet` installs them if missing).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

const SESSIONS: u64 = 20;

#[test]
fn twenty_sessions_of_one_address_make_one_balance_fetch_per_30_s_and_every_send_is_confirmed() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let output = Command::new("bash")
        .arg(root.join("tools/load/run-account.sh"))
        .args(["--sessions", &SESSIONS.to_string(), "--addresses", "1", "--cycles", "1", "--think-ms", "20", "--ramp", "0.5"])
        .arg("--report")
        .arg(&report_path)
        .env("LOAD_BIN", env!("CARGO_BIN_EXE_vestibule-load"))
        .env("VESTIBULE_LOG", "error")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "run-account.sh failed\n{stdout}\n{stderr}");
    let report: Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    println!("{stdout}");

    assert_eq!(report["sessions_connected"], SESSIONS, "{stdout}");
    assert_eq!(report["errors"], serde_json::json!({}), "{stdout}");
    // Every visitor sent once, really: the node gave a hash and the gateway recorded the receipt.
    let counts = &report["counts"];
    assert_eq!(counts["sends"], SESSIONS, "{stdout}");
    assert_eq!(counts["receipt:confirmed"], SESSIONS, "{stdout}");
    assert_eq!(report["latency"]["effects"]["receipt"]["count"], SESSIONS, "{stdout}");
    assert!(counts["activity:loaded"].as_u64().unwrap() >= SESSIONS, "{stdout}");
    for class in ["chain", "non-chain"] {
        assert!(report["latency"]["command_to_diff_by_class"][class]["count"].as_u64().unwrap() > 0, "no {class} latency: {stdout}");
    }

    // The count property: every session asked for the balances (at least once, when it
    // connected), and the cache let at most one ask per 30 s period through to the node.
    let chain = &report["chain"];
    let fetches = chain["balance_fetches"].as_u64().unwrap();
    let asks = fetches + chain["balance_hits"].as_u64().unwrap() + chain["balance_fresh_fetches"].as_u64().unwrap();
    let periods = (chain["window_s"].as_f64().unwrap() / 30.0).ceil().max(1.0) as u64;
    assert!(asks >= SESSIONS, "{SESSIONS} sessions asked for balances only {asks} times: {chain:#}");
    assert!(fetches >= 1, "{chain:#}");
    assert!(fetches <= periods, "{fetches} upstream balance fetches for one address in {periods} period(s) of 30 s: {chain:#}");
    // Past the cache only after the account's own sends (one each at most).
    assert!(chain["balance_fresh_fetches"].as_u64().unwrap() <= SESSIONS, "{chain:#}");
    assert!(chain["rpc_requests"].as_u64().unwrap() > 0 && chain["rpc_errors"] == 0, "{chain:#}");
    assert!(stdout.contains("kills=0") && stdout.contains(" lost=0 gaps=0 hash_mismatches=0"), "{stdout}");
}
