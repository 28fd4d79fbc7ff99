//! Reading records written by an older version: upcasting on read, corrupt records reported
//! precisely, and the stored bytes never rewritten.
//!
//! `fixtures/layout1-schema1.records` is frozen: records in layout 1 / event format 1, mostly at
//! event schema version 1, as an older build wrote them.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::config;
use futures_util::StreamExt;
use serde_json::{Value, json};
use vestibule_store::{Durability, EventLog, SessionId, SledEventLog, StoreError, Upcaster, layout};

const FIXTURE: &str = include_str!("fixtures/layout1-schema1.records");

fn fixture_records() -> Vec<(Vec<u8>, Vec<u8>)> {
    FIXTURE
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once(' ').expect("<key hex> <value hex>");
            (hex::decode(k).unwrap(), hex::decode(v.trim()).unwrap())
        })
        .collect()
}

fn id(suffix: &str) -> SessionId {
    format!("5e5510000000000000000000000000{suffix}").parse().unwrap()
}

/// Opens the database with sled itself, waiting (boundedly) for a just-dropped log to let go of it.
fn open_raw(dir: &Path) -> sled::Db {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match sled::Config::new().path(dir).open() {
            Ok(db) => return db,
            Err(e) if std::time::Instant::now() < deadline && e.to_string().contains("could not acquire lock") => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("opening {}: {e}", dir.display()),
        }
    }
}

/// Writes the fixture's records into a fresh sled database at `dir`, as an older build left them.
fn install_fixture(dir: &Path) {
    let db = open_raw(dir);
    let tree = db.open_tree(layout::TREE_NAME).unwrap();
    for (k, v) in fixture_records() {
        tree.insert(k, v).unwrap();
    }
    db.flush().unwrap();
}

/// Every stored record, byte for byte.
fn raw_contents(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = open_raw(dir);
    let tree = db.open_tree(layout::TREE_NAME).unwrap();
    tree.iter().map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap()).collect()
}

/// The domain's (toy) schema history: version 2 renamed and restructured two events.
struct V1ToV2;

impl Upcaster for V1ToV2 {
    fn upcast(&self, event_type: &str, schema_version: u32, payload: Value) -> Result<(u32, Value), String> {
        match (event_type, schema_version) {
            (_, 2) => Ok((2, payload)),
            ("wallet.connected", 1) => Ok((2, json!({ "account": { "address": payload["address"], "chain_id": payload["chain"] } }))),
            ("toast.shown", 1) => Ok((2, json!({ "message": payload["text"], "level": "info" }))),
            (t, v) => Err(format!("no upcast for {t} v{v}")),
        }
    }
}

fn open_with(dir: &Path, upcaster: Arc<dyn Upcaster>) -> SledEventLog {
    SledEventLog::open_with_upcaster(config(dir, Durability::Durable), upcaster).unwrap()
}

#[tokio::test]
async fn old_events_are_upcast_on_read_and_never_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    install_fixture(dir.path());
    let before = raw_contents(dir.path());

    let s = id("a1");
    {
        let log = open_with(dir.path(), Arc::new(V1ToV2));
        let events = log.read(s, 1, None).await.unwrap();
        let summary: Vec<(u64, &str, u32, Option<&str>, Value)> = events
            .iter()
            .map(|e| (e.seq, e.event_type.as_str(), e.schema_version, e.correlation_id.as_deref(), e.payload.clone()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    1,
                    "wallet.connected",
                    2,
                    Some("cmd-1"),
                    json!({"account": {"address": "0x52908400098527886E0F7030069857D2E4169EE7", "chain_id": 1}})
                ),
                (2, "toast.shown", 2, None, json!({"message": "Connected", "level": "info"})),
                (
                    3,
                    "wallet.connected",
                    2,
                    Some("cmd-2"),
                    json!({"account": {"address": "0x8617E340B3D01FA5F11F306F4090FD50E238070D", "chain_id": 137}})
                ),
                (4, "session.ended", 2, Some(""), json!({"reason": "closed"})),
            ]
        );
        assert_eq!(events[0].time_ms, 1_700_000_000_100);
        // The other read paths upcast too.
        let streamed: Vec<_> = log.stream(s, 1).map(Result::unwrap).collect().await;
        assert_eq!(streamed, events);
        let mut follow = log.follow(s, 1);
        assert_eq!(follow.next().await.unwrap().unwrap(), events[0]);

        let meta = log.session_meta(s).await.unwrap().unwrap();
        assert_eq!((meta.latest_seq, meta.last_activity_ms, meta.project.as_str()), (4, 1_700_000_000_400, "fixture"));
        for (seq, (_, bytes)) in
            (1..=4).zip(fixture_records().into_iter().filter(|(k, _)| layout::parse_event_key(k).is_some_and(|(sid, _)| sid == s)))
        {
            assert_eq!(log.raw_event(s, seq).unwrap().unwrap(), bytes, "seq {seq} stored bytes changed");
        }
    }
    assert_eq!(raw_contents(dir.path()), before, "reading must never rewrite the log");

    // Without an upcaster the stored version comes back as it is.
    let log = open_with(dir.path(), Arc::new(vestibule_store::NoUpcasting));
    let raw = log.read(s, 2, Some(2)).await.unwrap();
    assert_eq!((raw[0].schema_version, raw[0].payload.clone()), (1, json!({"text": "Connected"})));
}

#[tokio::test]
async fn records_that_cannot_be_decoded_or_upcast_are_corrupt_with_their_place() {
    let dir = tempfile::tempdir().unwrap();
    install_fixture(dir.path());
    let log = open_with(dir.path(), Arc::new(V1ToV2));

    let (a2, a3) = (id("a2"), id("a3"));
    match log.read(a2, 1, None).await {
        Err(StoreError::Corrupt { session, seq: 2, reason }) => {
            assert_eq!(session, a2);
            assert!(reason.contains("mystery.event") && reason.contains("no upcast"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // The readable prefix is still readable.
    assert_eq!(log.read(a2, 1, Some(1)).await.unwrap()[0].payload, json!({"message": "hi", "level": "info"}));
    match log.read(a3, 1, None).await {
        Err(e @ StoreError::Corrupt { seq: 1, .. }) => assert!(e.to_string().contains(&a3.to_string()), "{e}"),
        other => panic!("{other:?}"),
    }
    let streamed: Vec<_> = log.stream(a3, 1).collect().await;
    assert!(matches!(streamed.as_slice(), [Err(StoreError::Corrupt { seq: 1, .. })]), "{streamed:?}");
    // A corrupt stream does not stop new appends from being checked against its end.
    assert!(matches!(log.append(a3, 0, vec![common::event(2)]).await, Err(StoreError::Conflict { actual: 1, .. })));
}
