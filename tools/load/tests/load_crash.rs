//! `vestibule-load` as a user runs it: simulated visitors against a gateway it starts (the
//! `vestibule` binary cargo built beside it), then the same under SIGKILLs. The harness itself checks seq continuity and state hashes on every diff and,
//! after the run, that every accepted command that wrote events is in the log.

use std::process::Command;

use serde_json::Value;

fn load(args: &[&str]) -> (i32, Value, String) {
    let (code, report, stdout, _chart) = load_with_chart(args);
    (code, report, stdout)
}

fn load_with_chart(args: &[&str]) -> (i32, Value, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let chart = dir.path().join("chart.html");
    let output = Command::new(env!("CARGO_BIN_EXE_vestibule-load"))
        .args(args)
        .arg("--report")
        .arg(&report)
        .arg("--chart")
        .arg(&chart)
        .env("VESTIBULE_LOG", "error")
        .output()
        .expect("vestibule-load runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    if !output.status.success() {
        // The progress lines and the reason (e.g. no `vestibule` binary beside this one).
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    }
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap_or_default()).unwrap_or(Value::Null);
    let html = std::fs::read_to_string(&chart).unwrap_or_default();
    assert!(html.starts_with("<!doctype html>") && html.contains("<svg") && !html.contains("<script"), "a self-contained chart");
    (output.status.code().unwrap_or(-1), report, stdout, html)
}

#[test]
fn a_mixed_run_reports_every_figure_with_no_gap_and_no_hash_mismatch() {
    let (code, report, stdout) = load(&["--sessions", "24", "--ramp", "1", "--duration", "3", "--scenario", "mixed", "--think-ms", "50"]);
    assert_eq!(code, 0, "{stdout}");
    for key in ["sessions", "commands", "errors", "gaps", "hash_mismatches", "rss_bytes_per_session"] {
        assert!(!report[key].is_null(), "report lacks {key}: {report}");
    }
    for which in ["command_to_result", "command_to_diff"] {
        for p in ["p50_us", "p90_us", "p99_us", "p999_us", "max_us"] {
            assert!(report["latency"][which][p].as_u64().is_some(), "latency.{which}.{p} missing");
        }
        assert!(report["latency"][which]["count"].as_u64().unwrap() > 0, "{which} measured nothing");
    }
    assert_eq!(report["sessions"], 24);
    assert!(report["commands"].as_u64().unwrap() > 100, "{report}");
    assert_eq!((report["gaps"].as_u64(), report["hash_mismatches"].as_u64()), (Some(0), Some(0)));
    assert!(report["events_per_s"].as_f64().unwrap() > 0.0);
    // The machine's hiccups were measured through the run, and each second carries its longest.
    assert!(report["hiccups"]["count"].as_u64().unwrap_or(0) > 0, "no hiccup measured: {}", report["hiccups"]);
    let timeline = report["timeline"].as_array().expect("a timeline");
    assert!(!timeline.is_empty() && timeline.iter().all(|s| s["hiccup_max_us"].as_u64().is_some()), "{timeline:?}");
    assert!(stdout.contains("hiccup (1 ms sleep)"), "{stdout}");
}

/// `--no-hiccups` leaves the meter's threads off: the run still measures every command, and the
/// report says the hiccups were not measured (null, not zeros).
#[test]
fn without_the_hiccup_meter_the_report_has_latencies_and_no_hiccup_figures() {
    let (code, report, stdout, chart) = load_with_chart(&[
        "--sessions",
        "8",
        "--ramp",
        "1",
        "--duration",
        "2",
        "--scenario",
        "connect",
        "--think-ms",
        "50",
        "--no-hiccups",
    ]);
    assert_eq!(code, 0, "{stdout}");
    // The positive side: the run measured its commands, second by second.
    assert!(report["latency"]["command_to_diff"]["count"].as_u64().unwrap_or(0) > 0, "{report}");
    let timeline = report["timeline"].as_array().expect("a timeline");
    assert!(timeline.iter().any(|s| s["commands"].as_u64().unwrap_or(0) > 0), "{timeline:?}");
    // And no hiccup figure, anywhere.
    assert!(report["hiccups"].is_null(), "{}", report["hiccups"]);
    assert!(timeline.iter().all(|s| s["hiccup_max_us"].is_null()), "{timeline:?}");
    assert!(!stdout.contains("hiccup (1 ms sleep)") && stdout.contains("hiccup meter off"), "{stdout}");
    assert!(chart.contains("hiccup meter was off") && !chart.contains("Longest hiccup"), "{chart}");
}

/// Counts kills, not seconds: the run ends after two kills, each made only once every visitor has
/// had five commands answered by the gateway of the moment, and after every visitor has had five
/// answered by the last restart (so at least 16 × 15 commands, most of which write). A busy machine
/// makes the run longer, never different.
#[test]
fn sigkill_under_load_loses_no_accepted_command_and_no_client_sees_a_gap() {
    sigkill_under_load(&[]);
}

/// The same with the gateway's log in segments of its own (decision 0105): after each SIGKILL the
/// restarted gateway recovers the log (a torn last frame is cut) and rehydrates from it.
#[test]
fn sigkill_under_load_on_the_segment_log_loses_no_accepted_command_and_no_client_sees_a_gap() {
    sigkill_under_load(&["--store-backend", "segments"]);
}

/// The same with the gateway's log on NATS JetStream (a nats-server of the test's own, which the
/// kills do not touch): after each SIGKILL the restarted gateway rehydrates from the stream.
#[test]
fn sigkill_under_load_on_jetstream_loses_no_accepted_command_and_no_client_sees_a_gap() {
    let server = vestibule_store_jetstream::test_server::NatsServer::start();
    sigkill_under_load(&["--nats", &server.url]);
}

fn sigkill_under_load(extra: &[&str]) {
    let mut args =
        vec!["--sessions", "16", "--ramp", "0.5", "--scenario", "toast-storm", "--think-ms", "20", "--kill-every", "1", "--kills", "2"];
    args.extend_from_slice(extra);
    let (code, report, stdout) = load(&args);
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    println!("{summary}");
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(report["kills"].as_u64(), Some(2), "{summary}");
    assert!(report["checked_accepted"].as_u64().unwrap() > 100, "{summary}");
    assert_eq!((report["lost"].as_u64(), report["gaps"].as_u64()), (Some(0), Some(0)), "{summary}");
    assert!(summary.starts_with("kills=") && summary.contains(" lost=0 gaps=0"), "{summary}");
    assert!(report["reconnects"].as_u64().unwrap() >= 2 * 16, "every visitor resumed after each kill: {summary}");
}
