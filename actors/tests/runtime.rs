//! The session runtime on a real sled directory: for random command sequences the live state equals
//! the fold of the persisted log and equals snapshot + tail; a passivated session comes back with its
//! timers re-armed.

use std::sync::Arc;
use std::time::Duration;

use actix::System;
use proptest::prelude::*;
use rand::SeedableRng;
use vestibule_actors::model::options::SessionOptions;
use vestibule_actors::runtime::{fold_log, Execute, Inspect, Registry, RuntimeConfig, RuntimeMetrics, SystemClock};
use vestibule_actors::session::upcast::SessionUpcaster;
use vestibule_actors::session::{wire, ClientCommand, SessionState, STATE_SCHEMA_VERSION};
use vestibule_actors::testing::random_command;
use vestibule_store::{EventLog, SledEventLog, StoreConfig};

fn open_log(dir: &std::path::Path) -> Arc<dyn EventLog> {
    Arc::new(SledEventLog::open_with_upcaster(StoreConfig::at(dir).with_lock_wait_ms(5000), Arc::new(SessionUpcaster)).unwrap())
}

fn registry(log: Arc<dyn EventLog>, config: RuntimeConfig) -> Registry {
    Registry::new(log, Arc::new(SystemClock), config, Arc::new(RuntimeMetrics::default()))
}

/// Folds the log from seq 1 to `upto`, ignoring snapshots.
async fn fold_from_scratch(log: &dyn EventLog, id: vestibule_store::SessionId, upto: u64) -> (SessionState, u64) {
    let events = log.read(id, 1, Some(upto)).await.unwrap();
    let mut state = SessionState::default();
    for e in &events {
        state = vestibule_actors::session::evolve(state, &vestibule_actors::session::Event::from_parts(&e.event_type, e.payload.clone()).unwrap());
    }
    (state, events.last().map_or(0, |e| e.seq))
}

fn toast() -> ClientCommand {
    ClientCommand::ShowToast { message: "hello".into(), variant: vestibule_actors::machines::toasts::ToastVariant::Success, duration_ms: None, persistent: Some(true) }
}

fn run_random_session(seed: u64, commands: usize) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let config = RuntimeConfig { snapshot_every: 3, ..RuntimeConfig::default() };
        let registry = registry(log.clone(), config);
        let (id, _token) = registry.create("test", "http://localhost:3000", SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for i in 0..commands {
            let live = session.send(Inspect).await.unwrap().unwrap();
            let command = random_command(&mut rng, &live.state);
            session.send(Execute { command_id: format!("c{i}"), command, reply_to: None }).await.unwrap();
        }
        let live = session.send(Inspect).await.unwrap().unwrap();
        // Let the fire-and-forget snapshot writes land. Timers keep running meanwhile (a toast's
        // re-show or auto-dismiss appends events), so every fold below stops at the inspected seq.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (scratch, scratch_seq) = fold_from_scratch(log.as_ref(), id, live.seq).await;
        let (folded, folded_seq) = fold_log(log.as_ref(), id, Some(live.seq)).await.unwrap();
        let snapshot = log.get_snapshot(id, STATE_SCHEMA_VERSION).await.unwrap();
        if live.seq != scratch_seq || live.seq != folded_seq {
            return Err(format!("seqs differ: live {} scratch {scratch_seq} snapshot+tail {folded_seq}", live.seq));
        }
        if live.state != scratch {
            return Err("the live state differs from the fold of the log".into());
        }
        if live.state != folded {
            return Err("the live state differs from snapshot + tail".into());
        }
        if live.state_hash != wire::state_hash(&wire::to_value(&scratch)) {
            return Err("the live hash differs from the fold's".into());
        }
        if live.seq >= 3 && snapshot.is_none() {
            return Err("no snapshot was written".into());
        }
        // Snapshots are a cache: without any, the fold is the same.
        log.delete_snapshots(None).await.unwrap();
        let (without, _) = fold_log(log.as_ref(), id, Some(live.seq)).await.unwrap();
        if without != live.state {
            return Err("deleting the snapshots changed the state".into());
        }
        // Every recorded checksum is the hash of the fold at that event.
        let events = log.read(id, 1, Some(live.seq)).await.unwrap();
        let mut state = SessionState::default();
        for e in &events {
            state = vestibule_actors::session::evolve(state, &vestibule_actors::session::Event::from_parts(&e.event_type, e.payload.clone()).unwrap());
            if let Some(sum) = &e.checksum {
                if sum != &wire::state_hash(&wire::to_value(&state)) {
                    return Err(format!("checksum at seq {} does not match the fold", e.seq));
                }
            }
        }
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn live_state_equals_the_fold_of_the_log_and_snapshot_plus_tail(seed in any::<u64>(), commands in 1usize..60) {
        if let Err(e) = run_random_session(seed, commands) {
            prop_assert!(false, "seed {}: {}", seed, e);
        }
    }
}

#[test]
fn a_passivated_session_comes_back_from_the_log_with_its_timers_rearmed() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let config = RuntimeConfig { passivate_after: Duration::from_millis(100), ..RuntimeConfig::default() };
        let registry = registry(log.clone(), config);
        let (id, _) = registry.create("test", "http://localhost:3000", SessionOptions::default()).await.unwrap();
        let show = ClientCommand::ShowToast { message: "soon gone".into(), variant: vestibule_actors::machines::toasts::ToastVariant::Success, duration_ms: Some(600), persistent: None };
        registry.session(id).send(Execute { command_id: "c1".into(), command: show, reply_to: None }).await.unwrap();
        assert_eq!(registry.live(), 1);
        // No connection: the actor stops after 100 ms, before the toast's 600 ms deadline.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(registry.live(), 0, "the idle session was passivated");
        let before = log.read(id, 1, None).await.unwrap().len();
        // The deadline passes while nothing runs; no event is written for it.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(log.read(id, 1, None).await.unwrap().len(), before);
        // Bringing the session back folds the log and re-arms the (now past) deadline, which fires.
        let back = registry.session(id).send(Inspect).await.unwrap().unwrap();
        assert_eq!(back.state.toasts.order.len(), 1, "rehydrated as it was left");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let later = registry.session(id).send(Inspect).await.unwrap().unwrap();
        assert!(later.state.toasts.order.is_empty(), "the re-armed timer fired");
        let timer_events = log.read(id, 1, None).await.unwrap().into_iter().filter(|e| e.correlation_id.as_deref().is_some_and(|c| c.starts_with("timer:"))).count();
        assert!(timer_events >= 1);
    });
}

#[test]
fn a_retried_command_after_a_restart_gets_its_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let id = System::new().block_on(async move {
        let registry = registry(open_log(&path), RuntimeConfig::default());
        let (id, _) = registry.create("test", "http://localhost:3000", SessionOptions::default()).await.unwrap();
        let reply = registry.session(id).send(Execute { command_id: "once".into(), command: toast(), reply_to: None }).await.unwrap();
        assert_eq!(reply.seq, 3, "queued and shown");
        id
    });
    let path = dir.path().to_path_buf();
    System::new().block_on(async move {
        let registry = registry(open_log(&path), RuntimeConfig::default());
        let session = registry.session(id);
        // Re-executed, this would queue a second toast; remembered from the log, it is answered as before.
        let again = session.send(Execute { command_id: "once".into(), command: toast(), reply_to: None }).await.unwrap();
        assert_eq!((again.seq, again.error), (3, None), "the first answer, from the log");
        let state = session.send(Inspect).await.unwrap().unwrap();
        assert_eq!((state.seq, state.state.toasts.order.len()), (3, 1), "nothing was appended again");
        let fresh = session.send(Execute { command_id: "twice".into(), command: toast(), reply_to: None }).await.unwrap();
        assert!(fresh.seq > 3, "a new id is a new command");
    });
}

/// A deadline falling due while a command is between its decision and its durable append must wait
/// its turn: deciding it from the same seq would make one of the two appends conflict. (Found by
/// `vestibule-load --scenario toast-storm`: conflicting commands got no result at all.)
#[test]
fn timers_firing_while_commands_are_in_flight_never_conflict() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let registry = registry(log.clone(), RuntimeConfig::default());
        let (id, _) = registry.create("test", "http://localhost:3000", SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let started = std::time::Instant::now();
        let mut i = 0;
        // Back-to-back commands for 1.5 s while 100 ms toast deadlines keep falling due.
        while started.elapsed() < Duration::from_millis(1500) {
            i += 1;
            let show = ClientCommand::ShowToast {
                message: format!("toast {i}"),
                variant: vestibule_actors::machines::toasts::ToastVariant::Success,
                duration_ms: Some(100),
                persistent: None,
            };
            let reply = session.send(Execute { command_id: format!("c{i}"), command: show, reply_to: None }).await.unwrap();
            assert!(reply.error.is_none(), "command {i} was refused: {:?}", reply.error);
        }
        let timer_events = log.read(id, 1, None).await.unwrap().into_iter().filter(|e| e.correlation_id.as_deref().is_some_and(|c| c.starts_with("timer:"))).count();
        assert!(timer_events > 5, "deadlines fell due during the run ({timer_events} timer events)");
        let live = session.send(Inspect).await.unwrap().unwrap();
        let (folded, seq) = fold_log(log.as_ref(), id, Some(live.seq)).await.unwrap();
        assert_eq!((seq, folded), (live.seq, live.state));
    });
}
