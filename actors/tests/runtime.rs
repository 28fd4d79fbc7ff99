//! The session runtime on a real sled directory: for random command sequences the live state equals
//! the fold of the persisted log and equals snapshot + tail; a passivated session comes back with its
//! timers re-armed; a hibernated session keeps its connection and wakes with the same state.
//!
//! No test sleeps: event times come from a manual clock, timers are fired by moving the runtime's
//! paused clock, and waiting for something is a bounded number of turns of the runtime.

mod support;

use std::sync::Arc;
use std::time::Duration;

use actix::System;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use support::{T0, TestConnection, advance_timers, execute, open_log, quiet_config, registry, registry_with_metrics, settle, toast, until};
use vestibule_actors::model::options::SessionOptions;
use vestibule_actors::protocol::CommandStatus;
use vestibule_actors::runtime::{Attach, Detach, Execute, HibernateNow, Inspect, ManualClock, RuntimeConfig, fold_log};
use vestibule_actors::session::{ClientCommand, Event, STATE_SCHEMA_VERSION, SessionState, wire};
use vestibule_actors::testing::random_command;
use vestibule_store::{EventLog, SessionId};

const ORIGIN: &str = "http://localhost:3000";

/// Folds the log from seq 1 to `upto`, ignoring snapshots.
async fn fold_from_scratch(log: &dyn EventLog, id: SessionId, upto: u64) -> (SessionState, u64) {
    let events = log.read(id, 1, Some(upto)).await.unwrap();
    let mut state = SessionState::default();
    for e in &events {
        state = vestibule_actors::session::evolve(state, &Event::from_parts(&e.event_type, e.payload.clone()).unwrap());
    }
    (state, events.last().map_or(0, |e| e.seq))
}

fn timer_events(events: &[vestibule_store::Envelope]) -> usize {
    events.iter().filter(|e| e.correlation_id.as_deref().is_some_and(|c| c.starts_with("timer:"))).count()
}

fn run_random_session(seed: u64, commands: usize) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let clock = Arc::new(ManualClock::at(T0));
        let config = RuntimeConfig { snapshot_every: 3, ..quiet_config() };
        let registry = registry(log.clone(), clock.clone(), config);
        let (id, _token) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        for i in 0..commands {
            clock.advance(rng.random_range(0..50));
            let live = session.send(Inspect).await.unwrap().unwrap();
            let command = random_command(&mut rng, &live.state);
            session.send(execute(&format!("c{i}"), command)).await.unwrap();
        }
        let live = session.send(Inspect).await.unwrap().unwrap();
        // Snapshots are written in the background; the log's writer is a queue, so once a flush
        // sent after the last one resolves, it is there. (Bounded: each turn lets the actor run.)
        let expected_snapshot = live.seq - live.seq % 3;
        for _ in 0..1000 {
            log.flush().await.unwrap();
            if log.get_snapshot(id, STATE_SCHEMA_VERSION).await.unwrap().is_some_and(|s| s.seq >= expected_snapshot) || live.seq < 3 {
                break;
            }
        }
        // Timers may still fall due (a real-time delay): every fold stops at the inspected seq.
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
        let mut checksums = 0;
        for e in &events {
            state = vestibule_actors::session::evolve(state, &Event::from_parts(&e.event_type, e.payload.clone()).unwrap());
            if let Some(sum) = &e.checksum {
                checksums += 1;
                if sum != &wire::state_hash(&wire::to_value(&state)) {
                    return Err(format!("checksum at seq {} does not match the fold", e.seq));
                }
            }
        }
        if checksums == 0 {
            return Err("no event carries a checksum".into());
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
        let clock = Arc::new(ManualClock::at(T0));
        let config = RuntimeConfig { passivate_after: Duration::from_millis(100), ..quiet_config() };
        let registry = registry(log.clone(), clock.clone(), config);
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let reply = registry.session(id).send(execute("c1", toast("soon gone", Some(600), false))).await.unwrap();
        assert!(reply.error.is_none());
        assert_eq!(registry.live(), 1);
        // No connection: the actor stops after 100 ms, before the toast's 600 ms deadline.
        advance_timers(Duration::from_millis(150)).await;
        until(|| registry.live() == 0, "the idle session was passivated").await;
        let before = log.read(id, 1, None).await.unwrap();
        assert_eq!(timer_events(&before), 0, "the deadline did not fire before passivation");
        // The deadline passes while nothing runs; no event is written for it.
        clock.advance(1000);
        advance_timers(Duration::from_millis(1000)).await;
        assert_eq!(log.read(id, 1, None).await.unwrap().len(), before.len());
        // Bringing the session back folds the log and re-arms the (now past) deadline, which fires.
        let back = registry.session(id).send(Inspect).await.unwrap().unwrap();
        assert_eq!(back.state.toasts.order.len(), 1, "rehydrated as it was left");
        let mut fired = false;
        for _ in 0..1000 {
            let now = registry.session(id).send(Inspect).await.unwrap().unwrap();
            if now.state.toasts.order.is_empty() {
                fired = true;
                break;
            }
        }
        assert!(fired, "the re-armed timer fired");
        let ticks: std::collections::BTreeSet<String> =
            log.read(id, 1, None).await.unwrap().into_iter().filter_map(|e| e.correlation_id.filter(|c| c.starts_with("timer:"))).collect();
        assert_eq!(ticks.len(), 1, "one deadline, one decision: {ticks:?}");
    });
}

#[test]
fn a_retried_command_after_a_restart_gets_its_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let id = System::new().block_on(async move {
        let registry = registry(open_log(&path), Arc::new(ManualClock::at(T0)), quiet_config());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let reply = registry.session(id).send(execute("once", toast("hello", None, true))).await.unwrap();
        assert_eq!(reply.seq, 3, "queued and shown");
        id
    });
    let path = dir.path().to_path_buf();
    System::new().block_on(async move {
        let registry = registry(open_log(&path), Arc::new(ManualClock::at(T0 + 1000)), quiet_config());
        let session = registry.session(id);
        // Re-executed, this would queue a second toast; remembered in the log, it is answered as before.
        let again = session.send(execute("once", toast("hello", None, true))).await.unwrap();
        assert_eq!((again.seq, again.error), (3, None), "the first answer, from the log");
        let state = session.send(Inspect).await.unwrap().unwrap();
        assert_eq!((state.seq, state.state.toasts.order.len()), (3, 1), "nothing was appended again");
        let fresh = session.send(execute("twice", toast("hello", None, true))).await.unwrap();
        assert!(fresh.seq > 3, "a new id is a new command");
    });
}

/// A deadline falling due while a command is between its decision and its durable append must wait
/// its turn: deciding it from the same seq would make one of the two appends conflict. (Found by
/// `vestibule-load --scenario toast-storm`: conflicting commands got no result at all.) Before each
/// command the session's (manual) clock moves 150 ms, past the previous toast's 100 ms deadline, so
/// that timer falls due while the next command is being decided and appended.
#[test]
fn timers_firing_while_commands_are_in_flight_never_conflict() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let clock = Arc::new(ManualClock::at(T0));
        let registry = registry(log.clone(), clock.clone(), quiet_config());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        for i in 1..=100 {
            clock.advance(150);
            let reply = session.send(execute(&format!("c{i}"), toast(&format!("toast {i}"), Some(100), false))).await.unwrap();
            assert!(reply.error.is_none(), "command {i} was refused: {:?}", reply.error);
        }
        let events = log.read(id, 1, None).await.unwrap();
        // Timer events written between two of the client's commands: deadlines fell due mid-run.
        let first_client = events.iter().position(|e| e.correlation_id.as_deref() == Some("c1")).unwrap();
        let last_client = events.iter().rposition(|e| e.correlation_id.as_deref() == Some("c100")).unwrap();
        let interleaved = timer_events(&events[first_client..last_client]);
        assert!(interleaved >= 1, "no deadline fell due between commands");
        let live = session.send(Inspect).await.unwrap().unwrap();
        let (folded, seq) = fold_log(log.as_ref(), id, Some(live.seq)).await.unwrap();
        assert_eq!((seq, folded), (live.seq, live.state));
    });
}

#[test]
fn a_hibernated_session_keeps_its_connection_and_wakes_with_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let clock = Arc::new(ManualClock::at(T0));
        let (registry, metrics) = registry_with_metrics(log.clone(), clock.clone(), quiet_config());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let mut connection = TestConnection::new(7);
        session.send(Attach { link: connection.link.take().unwrap(), last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
        let opened = session.send(execute("c1", ClientCommand::OpenModal { view: None })).await.unwrap();
        session.send(execute("c2", toast("kept", None, true))).await.unwrap();
        let awake = session.send(Inspect).await.unwrap().unwrap();
        assert!(!awake.was_hibernated);
        let welcome_and_diffs = connection.received();
        assert_eq!(welcome_and_diffs.iter().filter(|f| f["type"] == "diff").count(), 2);

        assert!(session.send(HibernateNow).await.unwrap(), "hibernated");
        assert_eq!(metrics.hibernated_sessions.get(), 1);
        // Hibernation changes nothing a client sees: no frame, the connection stays.
        assert!(connection.received().is_empty());

        // A command wakes it: rebuilt from the log, the same state and hash, and the diff follows on.
        let reply = session.send(Execute::new("c3", ClientCommand::CloseModal {}, Some(7))).await.unwrap();
        assert!(reply.error.is_none());
        assert_eq!(metrics.hibernated_sessions.get(), 0);
        let frames = connection.received();
        let diff = frames.iter().find(|f| f["type"] == "diff").expect("the connection got the diff");
        assert_eq!(diff["prevSeq"], awake.seq);
        assert_eq!(frames[0]["type"], "result", "the result first, then the diff");
        let after = session.send(Inspect).await.unwrap().unwrap();
        assert_eq!(after.connections, 1);
        let mut expected = awake.state.clone();
        expected = vestibule_actors::session::evolve(expected, &Event::ModalClosed {});
        assert_eq!(after.state, expected);
        assert_eq!(after.state_hash, wire::state_hash(&wire::to_value(&after.state)));
        // The answers survived hibernation too (from the log).
        let repeated = session.send(execute("c1", ClientCommand::OpenModal { view: None })).await.unwrap();
        assert_eq!(repeated, opened, "c1's first answer");
        assert!(!session.send(Inspect).await.unwrap().unwrap().state.modal.is_open(), "and it did not open the modal again");
    });
}

#[test]
fn an_idle_session_hibernates_by_itself_and_a_detached_one_then_passivates() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let clock = Arc::new(ManualClock::at(T0));
        let config = RuntimeConfig { hibernate_after: Duration::from_secs(10), passivate_after: Duration::from_secs(60), ..quiet_config() };
        let (registry, metrics) = registry_with_metrics(log.clone(), clock.clone(), config);
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let mut connection = TestConnection::new(1);
        session.send(Attach { link: connection.link.take().unwrap(), last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
        advance_timers(Duration::from_secs(5)).await;
        settle().await;
        assert_eq!(metrics.hibernated_sessions.get(), 0, "not idle long enough yet");
        advance_timers(Duration::from_secs(6)).await;
        until(|| metrics.hibernated_sessions.get() == 1, "the idle session hibernated").await;
        assert_eq!(registry.live(), 1, "hibernated, not stopped: it has a connection");
        session.send(Detach { connection: 1 }).await.unwrap();
        advance_timers(Duration::from_secs(61)).await;
        until(|| registry.live() == 0, "the detached session passivated").await;
        assert_eq!(metrics.hibernated_sessions.get(), 0, "a stopped session is not counted as hibernated");
        drop(connection);
    });
}

/// Given a session that hibernates after 10 s idle, when commands come 5 s and 9 s in, then the
/// countdown starts again from the last one: still awake 18 s in, asleep once 10 s have passed
/// since it (the one timer, firing early, waits out the rest instead of being re-armed per command).
#[test]
fn activity_moves_the_hibernation_countdown_on() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let clock = Arc::new(ManualClock::at(T0));
        let config = RuntimeConfig { hibernate_after: Duration::from_secs(10), ..quiet_config() };
        let (registry, metrics) = registry_with_metrics(log.clone(), clock.clone(), config);
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let mut connection = TestConnection::new(1);
        session.send(Attach { link: connection.link.take().unwrap(), last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
        for (at, id, command) in [(5, "c1", ClientCommand::OpenModal { view: None }), (4, "c2", ClientCommand::CloseModal {})] {
            advance_timers(Duration::from_secs(at)).await;
            let reply = session.send(execute(id, command)).await.unwrap();
            assert_eq!(reply.status, CommandStatus::Accepted, "the command ran: {reply:?}");
        }
        advance_timers(Duration::from_secs(9)).await;
        // A timer due by now has had its turns to fire (the positive check below proves one does).
        settle().await;
        assert_eq!(metrics.hibernated_sessions.get(), 0, "18 s after attaching but 9 s after the last command: awake");
        advance_timers(Duration::from_secs(2)).await;
        until(|| metrics.hibernated_sessions.get() == 1, "10 s after the last command, the session hibernated").await;
        drop(connection);
    });
}

/// Another writer appends under an attached session (with a shared log: a killed gateway's late
/// append). The session's next append conflicts; its connection must then get the other writer's
/// diff, so its mirror follows on with no gap, before the retried command's diff.
#[test]
fn after_a_conflict_the_connections_get_the_other_writers_diffs_with_no_gap() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let registry = registry(log.clone(), Arc::new(ManualClock::at(T0)), quiet_config());
        let (id, _) = registry.create("test", "http://localhost:3000", SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let mut connection = TestConnection::new(3);
        session.send(Attach { link: connection.link.take().unwrap(), last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
        let seq = session.send(Inspect).await.unwrap().unwrap().seq;
        let stray = vestibule_store::NewEvent {
            time_ms: T0,
            event_type: "ModalOpened".into(),
            schema_version: 1,
            correlation_id: Some("other-writer".into()),
            checksum: None,
            payload: serde_json::json!({}).into(),
        };
        log.append(id, seq, vec![stray]).await.unwrap();
        let conflict = session.send(execute("show", toast("hi", None, true))).await.unwrap();
        assert!(conflict.error.is_some(), "the stale append is refused");
        let retry = session.send(execute("show", toast("hi", None, true))).await.unwrap();
        assert!(retry.error.is_none(), "{retry:?}");
        let diffs: Vec<_> = connection.received().into_iter().filter(|f| f["type"] == "diff").collect();
        let seqs: Vec<(u64, u64)> = diffs.iter().map(|d| (d["prevSeq"].as_u64().unwrap(), d["seq"].as_u64().unwrap())).collect();
        assert_eq!(seqs.first().map(|s| s.0), Some(seq), "{seqs:?}");
        assert!(seqs.windows(2).all(|w| w[0].1 == w[1].0), "no gap: {seqs:?}");
        assert_eq!(seqs.last().map(|s| s.1), Some(retry.seq), "{seqs:?}");
        assert_eq!(diffs[0]["events"][0]["correlationId"], "other-writer");
    });
}
