//! Property: for random command sequences driven through real session actors on a real sled
//! directory, the exported file, imported into another directory and folded, equals the live state
//! at every seq the visitor saw, and every recorded state hash verifies.

use std::sync::Arc;

use actix::System;
use rand::SeedableRng;
use vestibule_actors::model::options::SessionOptions;
use vestibule_actors::runtime::{Execute, Inspect, Registry, RuntimeConfig, RuntimeMetrics, SystemClock, fold_log};
use vestibule_actors::session::SessionState;
use vestibule_actors::testing::{random_command, sign_in_options};
use vestibule_gateway::replay;
use vestibule_store::StoreConfig;

fn run(seed: u64, commands: usize) {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = vestibule_gateway::store::open_at(StoreConfig::at(dir.path().join("live"))).unwrap();
        let registry = Registry::new(
            log.clone(),
            Arc::new(SystemClock),
            RuntimeConfig { snapshot_every: 5, ..Default::default() },
            Arc::new(RuntimeMetrics::default()),
        );
        let options = if seed % 2 == 0 { SessionOptions::default() } else { sign_in_options(seed % 4 == 1) };
        let (id, _) = registry.create("test", "http://localhost:3000", options).await.unwrap();
        let session = registry.session(id);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        // The live state after each command, by seq.
        let mut seen: Vec<(u64, SessionState)> = Vec::new();
        for i in 0..commands {
            let live = session.send(Inspect).await.unwrap().unwrap();
            seen.push((live.seq, live.state.clone()));
            let command = random_command(&mut rng, &live.state);
            session.send(Execute::new(format!("c{i}"), command, None)).await.unwrap();
        }
        let live = session.send(Inspect).await.unwrap().unwrap();
        seen.push((live.seq, live.state.clone()));

        let mut exported = Vec::new();
        // Signatures kept: the imported log is compared with the live states, which hold them.
        let options = replay::ExportOptions { mask_emails: false, keep_signatures: true };
        replay::export(log.as_ref(), id, options, &mut exported).await.unwrap();
        let file = dir.path().join("session.jsonl");
        std::fs::write(&file, &exported).unwrap();
        let other = vestibule_gateway::store::open_at(StoreConfig::at(dir.path().join("imported"))).unwrap();
        let (imported_id, _) = replay::import(other.as_ref(), &file, false).await.unwrap();
        assert_eq!(imported_id, id);
        for (seq, state) in &seen {
            let (folded, at) = fold_log(other.as_ref(), id, Some(*seq)).await.unwrap();
            assert_eq!(at, *seq, "seed {seed}");
            assert_eq!(&folded, state, "seed {seed}: the imported log differs from the live state at seq {seq}");
        }
        let options = replay::ReplayOptions { to: Some(live.seq), json: false, verify: true, patch: false };
        let divergence = replay::replay(other.as_ref(), id, &options, &mut std::io::sink()).await.unwrap();
        assert!(divergence.is_none(), "seed {seed}: {divergence:?}");
    });
}

#[test]
fn replaying_an_exported_file_equals_the_live_state_at_every_seq() {
    for seed in 0..12 {
        run(seed, 40);
    }
}
