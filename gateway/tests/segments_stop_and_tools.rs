//! The segment log's directory as the gateway leaves it and as the tools find it: a graceful stop
//! (SIGTERM) writes the index checkpoint a close writes, even with `checkpoint_bytes = 0` ("only
//! when closed"); and `vestibule sessions list` opens a directory of small segments with their own
//! size (from the directory, or from `--config`'s `[store.segments]`), so that listing never grows
//! it.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::json;
use support::{CONFIG, Client, Gateway};

const SEGMENTS: &str = "[store]\nbackend = \"segments\"\n\n[store.segments]\nsegment_bytes = 1048576\ncheckpoint_bytes = 0\n";

fn files(dir: &Path, suffix: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        .map(|e| (e.file_name().into_string().unwrap(), e.metadata().unwrap().len()))
        .collect();
    out.sort();
    out
}

/// Given a segments gateway with 1 MiB segments and checkpoints only at close, that took one
/// session and was stopped with SIGTERM.
async fn given_a_stopped_gateway(data: &Path) -> String {
    let mut gateway = Gateway::start_at(data, &format!("{SEGMENTS}{CONFIG}"), "127.0.0.1:0");
    let client = Client::create(&gateway, json!({})).await;
    let session = client.session_id.clone();
    drop(client);
    let status = gateway.terminate();
    assert!(status.success(), "a graceful stop exits 0: {status:?}");
    session
}

#[tokio::test]
async fn a_graceful_stop_writes_the_index_checkpoint_of_a_close() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    given_a_stopped_gateway(&data).await;
    let checkpoints = files(&data, ".ckpt");
    assert_eq!(checkpoints.len(), 1, "the stop wrote the close's checkpoint (checkpoint_bytes = 0): {:?}", files(&data, ""));
}

fn vestibule(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_vestibule")).args(args).env("VESTIBULE_LOG", "error").output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn listing_a_directory_of_small_segments_keeps_their_size() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let session = given_a_stopped_gateway(&data).await;
    let before = files(&data, ".seg");
    assert!(!before.is_empty() && before.iter().all(|(_, len)| *len == 1 << 20), "1 MiB segments: {before:?}");
    // When the sessions are listed from the directory alone, then with a configuration that names it.
    let config = dir.path().join("tools.toml");
    std::fs::write(&config, format!("data = {:?}\n{SEGMENTS}{CONFIG}", data.display().to_string())).unwrap();
    let data_arg = data.to_str().unwrap();
    let config_arg = config.to_str().unwrap();
    for args in [["sessions", "list", "--data", data_arg], ["sessions", "list", "--config", config_arg]] {
        let (code, out, err) = vestibule(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains(&session), "{args:?} lists the session: {out}");
        // Then the segment files are as the gateway left them: none larger, none more.
        assert_eq!(files(&data, ".seg"), before, "{args:?} changed the segments");
    }
}
