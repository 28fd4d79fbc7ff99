//! The event log benchmark runs on JetStream (what `vestibule bench store --backend jetstream`
//! does), reports every level and the replay, and deletes the streams and buckets it made.

use vestibule_store::bench::{BenchOptions, run_on};
use vestibule_store_jetstream::JetStreamConfig;
use vestibule_store_jetstream::bench::JetStreamBench;
use vestibule_store_jetstream::test_server::NatsServer;

#[test]
fn a_tiny_run_on_jetstream_reports_and_cleans_up() {
    let server = NatsServer::start();
    let options = BenchOptions {
        concurrency: vec![1, 4],
        secs_per_level: 0.2,
        rounds: 2,
        warmup_secs: 0.05,
        payload_bytes: 64,
        replay_events: 1_200,
        ..Default::default()
    };
    let report = run_on(&JetStreamBench::new(JetStreamConfig::at([server.url.clone()])), options).unwrap();
    assert!(report.backend.contains("JetStream") && report.fsync_ms.is_none(), "{report:?}");
    assert_eq!(report.levels.len(), 2);
    for l in &report.levels {
        assert!(l.appends > 0 && l.appends_per_sec > 0.0 && l.ceiling_per_sec.is_none(), "{l:?}");
        assert!(l.p50_ms <= l.p99_ms && l.p99_ms <= l.max_ms, "{l:?}");
    }
    assert_eq!(report.replay.events, 1_200);
    assert!(report.to_string().contains("JetStream"), "{report}");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let left: Vec<String> = rt.block_on(async {
        use futures_util::StreamExt;
        let js = async_nats::jetstream::new(async_nats::connect(&server.url).await.unwrap());
        js.stream_names().map(|n| n.unwrap()).collect().await
    });
    assert!(left.is_empty(), "streams left behind: {left:?}");
}
