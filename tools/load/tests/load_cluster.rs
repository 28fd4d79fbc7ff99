//! `vestibule-load` against a cluster: two real `vestibule serve` processes in cluster mode on one
//! real nats-server, reached with two `--url`s. Sessions are opened round-robin on both, and every
//! reconnect of the `reconnect-storm` scenario resumes on the other gateway, which does not own the
//! session and proxies it to its owner. The harness checks seq continuity and the state hash on every
//! diff, and after the run reads the shared JetStream stream (through the store crate) for every
//! accepted command. Counts, not time: `--cycles` ends the traffic.

use std::process::Command;

use serde_json::Value;
use vestibule_load::gateway_process::GatewayProcess;
use vestibule_store_jetstream::test_server::NatsServer;

#[test]
fn resumes_through_a_non_owner_are_proxied_with_no_gap_no_mismatch_and_nothing_lost() {
    let server = NatsServer::start();
    let load_bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_vestibule-load"));
    let gateway_bin = load_bin.parent().unwrap().join("vestibule");
    assert!(gateway_bin.is_file(), "build the gateway first: cargo build -p vestibule-gateway ({})", gateway_bin.display());
    let dir = tempfile::tempdir().unwrap();
    let config =
        format!("[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [{:?}]\n\n[cluster]\nenabled = true\n", server.url);
    // Started at the same time, as a deployment does (both create or check the buckets at once).
    let gateways: Vec<GatewayProcess> = std::thread::scope(|scope| {
        let starting: Vec<_> = (0..2)
            .map(|i| {
                let (bin, data, config) = (&gateway_bin, dir.path().join(format!("gw{i}")), &config);
                scope.spawn(move || GatewayProcess::start(bin, &data, "127.0.0.1:0", "error", Some(config)).unwrap())
            })
            .collect();
        starting.into_iter().map(|s| s.join().unwrap()).collect()
    });
    let report = dir.path().join("report.json");
    let mut args: Vec<String> = Vec::new();
    for g in &gateways {
        args.extend(["--url".into(), format!("ws://{}", g.addr)]);
    }
    for a in
        ["--nats", &server.url, "--sessions", "12", "--ramp", "0.5", "--scenario", "reconnect-storm", "--think-ms", "20", "--cycles", "4"]
    {
        args.push(a.into());
    }
    let output = Command::new(&load_bin).args(&args).arg("--report").arg(&report).output().expect("vestibule-load runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    if !output.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    }
    let report: Value = serde_json::from_slice(&std::fs::read(&report).unwrap_or_default()).unwrap_or(Value::Null);
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    println!("{summary}");
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert_eq!(report["sessions_connected"], 12, "{summary}");
    assert_eq!(
        (report["lost"].as_u64(), report["gaps"].as_u64(), report["hash_mismatches"].as_u64()),
        (Some(0), Some(0), Some(0)),
        "{summary}"
    );
    // The lost-command check read the shared stream: accepted commands were checked there.
    assert!(report["checked_accepted"].as_u64().unwrap() > 0, "{summary}");
    assert!(report["reconnects"].as_u64().unwrap() > 0, "{report}");
    // Resumes landed on the gateway that does not own the session: proxied, and commands through
    // those proxies got their diffs.
    // No connect attempt was refused or went unanswered (a retry would hide it from the errors).
    assert_eq!(
        report["counts"].as_object().map(|c| c.keys().filter(|k| k.starts_with("connect_retry")).count()),
        Some(0),
        "{}",
        report["counts"]
    );
    assert_eq!(report["errors"], serde_json::json!({}), "{summary}");
    let cluster = &report["cluster"];
    assert!(cluster["vestibule_cluster_proxied_total"].as_f64().unwrap_or(0.0) > 0.0, "no proxied connection: {cluster}");
    assert!(cluster["vestibule_cluster_acquisitions_total"].as_f64().unwrap_or(0.0) >= 12.0, "{cluster}");
    assert_eq!(cluster["vestibule_cluster_takeovers_total"].as_f64(), Some(0.0), "no gateway died: {cluster}");
    let by_class = &report["latency"]["command_to_diff_by_class"];
    assert!(by_class["via another gateway (proxied)"]["count"].as_u64().unwrap_or(0) > 0, "{by_class}");
    assert!(by_class["via the owner gateway"]["count"].as_u64().unwrap_or(0) > 0, "{by_class}");
}
