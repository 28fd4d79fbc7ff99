//! A session's budget of bytes in its event log (`RuntimeConfig::max_log_bytes`, the gateway's
//! `limits.session_log_bytes`; decision 0107), on the real runtime and a real sled directory: once
//! its events and answers reach it, a client's new command is refused with `log_full` before it is
//! decided, and that refusal writes nothing; a repeated command id still gets its first answer; the
//! runtime's own commands (a toast's deadline) still run. The count survives a restart, with the
//! snapshot and without it (the fold counts the events again), and it is exactly the bytes of the
//! records the log holds.
//!
//! No test sleeps: event times come from a manual clock, and waiting is a bounded number of turns.

mod support;

use std::sync::Arc;
use std::time::Duration;

use actix::System;
use rand::{Rng, SeedableRng};
use support::{T0, advance_timers, execute, quiet_config, registry, registry_with_metrics, settle, toast, until};
use vestibule_actors::model::options::SessionOptions;
use vestibule_actors::protocol::CommandStatus;
use vestibule_actors::runtime::{ClientWriteShares, CommandReply, Inspect, ManualClock, RuntimeConfig, WriteRefusal};
use vestibule_actors::session::upcast::SessionUpcaster;
use vestibule_actors::session::{
    CLIENT_ERROR_REPORT_WINDOW_MS, ClientCommand, ClientErrorKind, MAX_CLIENT_ERROR_REPORTS, RefusalCode, STATE_SCHEMA_VERSION,
};
use vestibule_actors::testing::random_command;
use vestibule_store::{EventLog, SessionId, SledEventLog, StoreConfig, layout};

const ORIGIN: &str = "http://localhost:3000";

/// Never in these tests: every snapshot is one the budget took (or, in the random sessions, none).
const NO_PERIODIC_SNAPSHOTS: u64 = 1_000_000;

fn open_sled(dir: &std::path::Path) -> Arc<SledEventLog> {
    Arc::new(SledEventLog::open_with_upcaster(StoreConfig::at(dir).with_lock_wait_ms(5000), Arc::new(SessionUpcaster)).unwrap())
}

fn budget_config(max_log_bytes: u64) -> RuntimeConfig {
    RuntimeConfig { max_log_bytes, snapshot_every: NO_PERIODIC_SNAPSHOTS, ..quiet_config() }
}

/// A command that writes one event of about 600 bytes and changes nothing else. A session takes
/// a few of them a minute, so the tests send one every [`REPORT_SPACING_MS`] of their clock.
fn report(i: usize) -> ClientCommand {
    ClientCommand::ReportClientError { kind: ClientErrorKind::Render, detail: format!("{i} {}", "é".repeat(290)) }
}

const REPORT_SPACING_MS: u64 = CLIENT_ERROR_REPORT_WINDOW_MS / MAX_CLIENT_ERROR_REPORTS as u64;

fn code(reply: &CommandReply) -> Option<RefusalCode> {
    reply.error.as_ref().map(|e| e.code)
}

/// Waits until the session's snapshot (which it writes in the background) counts `log_bytes`.
async fn snapshot_counting(log: &dyn EventLog, id: SessionId, log_bytes: u64) {
    for _ in 0..1000 {
        log.flush().await.unwrap();
        if log.get_snapshot(id, STATE_SCHEMA_VERSION).await.unwrap().is_some_and(|s| s.log_bytes == Some(log_bytes)) {
            return;
        }
        settle().await;
    }
    panic!("no snapshot counting {log_bytes} bytes was written");
}

/// What a session filled with `commands` left: its id, its count, its seq and its first answer.
struct Filled {
    id: SessionId,
    log_bytes: u64,
    seq: u64,
    first: CommandReply,
}

/// Given a session with a budget of `budget` bytes, when `command(i)` is sent under ids `c<i>`
/// until one is refused, then that refusal is `log_full`. Returns what the session left, once its
/// snapshot (taken when the budget was reached) is durable.
fn fill(dir: &std::path::Path, budget: u64, command: fn(usize) -> ClientCommand) -> Filled {
    let dir = dir.to_path_buf();
    System::new().block_on(async move {
        let log: Arc<dyn EventLog> = open_sled(&dir);
        let clock = Arc::new(ManualClock::at(T0));
        let registry = registry(log.clone(), clock.clone(), budget_config(budget));
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let first = session.send(execute("c0", command(0))).await.unwrap();
        let mut refused = None;
        for i in 1..1000 {
            clock.advance(REPORT_SPACING_MS);
            let reply = session.send(execute(&format!("c{i}"), command(i))).await.unwrap();
            if code(&reply) == Some(RefusalCode::LogFull) {
                refused = Some(i);
                break;
            }
        }
        assert!(refused.is_some_and(|i| i >= 3), "the budget was filled, by several commands: {refused:?}");
        let live = session.send(Inspect).await.unwrap().unwrap();
        assert!(live.log_bytes >= budget, "{} bytes counted, the budget is {budget}", live.log_bytes);
        snapshot_counting(log.as_ref(), id, live.log_bytes).await;
        Filled { id, log_bytes: live.log_bytes, seq: live.seq, first }
    })
}

/// Given a session whose log is full, rehydrated by a new runtime on the same directory (after
/// deleting its snapshots when `keep_snapshot` is false): its first new command is refused with
/// `log_full` and appends nothing, and a repeated id still gets its first answer. Returns the count
/// the new runtime recovered.
fn restart_and_expect_full(dir: &std::path::Path, filled: &Filled, budget: u64, keep_snapshot: bool) -> u64 {
    let (dir, id, seq, first) = (dir.to_path_buf(), filled.id, filled.seq, filled.first.clone());
    System::new().block_on(async move {
        let log: Arc<dyn EventLog> = open_sled(&dir);
        if !keep_snapshot {
            log.delete_snapshots(Some(id)).await.unwrap();
            assert_eq!(log.get_snapshot(id, STATE_SCHEMA_VERSION).await.unwrap(), None);
        }
        let registry = registry(log.clone(), Arc::new(ManualClock::at(T0 + 60_000)), budget_config(budget));
        let session = registry.session(id);
        let refused = session.send(execute("after-restart", ClientCommand::OpenModal { view: None })).await.unwrap();
        assert_eq!((refused.status, code(&refused)), (CommandStatus::Refused, Some(RefusalCode::LogFull)), "still full: {refused:?}");
        assert_eq!(log.latest_seq(id).await.unwrap(), seq, "nothing appended");
        assert_eq!(log.answer(id, "after-restart").await.unwrap(), None, "the refusal is not remembered");
        assert_eq!(session.send(execute("c0", ClientCommand::OpenModal { view: None })).await.unwrap(), first, "c0's first answer");
        session.send(Inspect).await.unwrap().unwrap().log_bytes
    })
}

#[test]
fn given_a_small_budget_when_commands_fill_it_then_new_ones_are_refused_with_log_full_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log: Arc<dyn EventLog> = open_sled(dir.path());
        let clock = Arc::new(ManualClock::at(T0));
        let (registry, metrics) = registry_with_metrics(log.clone(), clock.clone(), budget_config(4096));
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        // A toast that goes by itself in a minute (after the fill): its deadline is the runtime's
        // own command.
        const TOAST_MS: u64 = 60_000;
        let shown = session.send(execute("toast", toast("going", Some(TOAST_MS), false))).await.unwrap();
        assert_eq!(shown.status, CommandStatus::Accepted);

        // When commands that write events are sent until one is refused.
        let mut answers = Vec::new();
        let refused = loop {
            let id = format!("r{}", answers.len());
            if answers.len() >= MAX_CLIENT_ERROR_REPORTS {
                clock.advance(REPORT_SPACING_MS);
            }
            let reply = session.send(execute(&id, report(answers.len()))).await.unwrap();
            if reply.status == CommandStatus::Refused {
                break reply;
            }
            answers.push((id, reply));
            assert!(answers.len() < 100, "never refused");
        };

        // Then the refusal is log_full, before anything was decided or written.
        assert_eq!(code(&refused), Some(RefusalCode::LogFull), "{refused:?}");
        assert!(answers.len() >= 3, "several commands fit first: {}", answers.len());
        let full = session.send(Inspect).await.unwrap().unwrap();
        assert!(full.log_bytes >= 4096);
        assert_eq!(refused.seq, full.seq);
        let seq = log.latest_seq(id).await.unwrap();
        assert_eq!(seq, full.seq);
        let r_next = format!("r{}", answers.len());
        assert_eq!(log.answer(id, &r_next).await.unwrap(), None, "the refusal is not remembered");
        // Every new command, of any kind, and the refused one again: refused, nothing appended.
        for (i, command) in [ClientCommand::OpenModal { view: None }, toast("more", None, true), report(99)].into_iter().enumerate() {
            let reply = session.send(execute(&format!("n{i}"), command)).await.unwrap();
            assert_eq!(code(&reply), Some(RefusalCode::LogFull));
        }
        assert_eq!(code(&session.send(execute(&r_next, report(0))).await.unwrap()), Some(RefusalCode::LogFull));
        assert_eq!(log.latest_seq(id).await.unwrap(), seq, "nothing more was appended");
        assert_eq!(session.send(Inspect).await.unwrap().unwrap().log_bytes, full.log_bytes, "nothing more was written");
        // A repeated earlier id still gets its first answer.
        let (first_id, first) = &answers[0];
        assert_eq!(&session.send(execute(first_id, report(0))).await.unwrap(), first);
        assert_eq!(session.send(execute("toast", toast("going", Some(TOAST_MS), false))).await.unwrap(), shown);

        // The runtime's own commands still run: the toast's deadline dismisses it.
        assert!(!session.send(Inspect).await.unwrap().unwrap().state.toasts.order.is_empty(), "the toast is still shown");
        clock.advance(TOAST_MS);
        let mut dismissed = false;
        for _ in 0..1000 {
            if session.send(Inspect).await.unwrap().unwrap().state.toasts.order.is_empty() {
                dismissed = true;
                break;
            }
            settle().await;
        }
        assert!(dismissed, "the toast's deadline ran");
        let ticks = log.read(id, seq + 1, None).await.unwrap();
        assert!(!ticks.is_empty() && ticks.iter().all(|e| e.correlation_id.as_deref().is_some_and(|c| c.starts_with("timer:"))));

        // Counted as an outcome of its own.
        let mut metrics_registry = prometheus_client::registry::Registry::default();
        metrics.register(&mut metrics_registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &metrics_registry).unwrap();
        assert!(text.contains("vestibule_commands_total{outcome=\"log_full\"} 5"), "{text}");
    });
}

/// A widget caught in a loop (or a client that is not the widget) must not spend the session's log
/// on reports: past a few a minute they are refused `rate_limited`, write nothing, and are not
/// remembered, so the same report is taken once the window has room.
#[test]
fn given_a_minute_of_reports_when_one_more_comes_then_it_is_refused_until_the_window_has_room() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log: Arc<dyn EventLog> = open_sled(dir.path());
        let clock = Arc::new(ManualClock::at(T0));
        let registry = registry(log.clone(), clock.clone(), quiet_config());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        // Given as many reports as a minute takes, the probe of the positive path: each accepted.
        for i in 0..MAX_CLIENT_ERROR_REPORTS {
            let reply = session.send(execute(&format!("r{i}"), report(i))).await.unwrap();
            assert_eq!(reply.status, CommandStatus::Accepted, "report {i}: {reply:?}");
            clock.advance(1000);
        }
        let seq = log.latest_seq(id).await.unwrap();

        // When one more comes within the minute, then it is refused and nothing is written.
        let refused = session.send(execute("one-more", report(99))).await.unwrap();
        assert_eq!(code(&refused), Some(RefusalCode::RateLimited), "{refused:?}");
        assert_eq!(log.latest_seq(id).await.unwrap(), seq, "nothing appended");
        assert_eq!(log.answer(id, "one-more").await.unwrap(), None, "the refusal is not remembered");
        // Other commands still run.
        let opened = session.send(execute("open", ClientCommand::OpenModal { view: None })).await.unwrap();
        assert_eq!(opened.status, CommandStatus::Accepted);

        // Once the first report is a minute old, the same report is taken.
        clock.advance(CLIENT_ERROR_REPORT_WINDOW_MS - MAX_CLIENT_ERROR_REPORTS as u64 * 1000);
        let taken = session.send(execute("one-more", report(99))).await.unwrap();
        assert_eq!(taken.status, CommandStatus::Accepted, "{taken:?}");
    });
}

#[test]
fn a_full_log_stays_full_after_a_restart_with_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let filled = fill(dir.path(), 4096, report);
    let recovered = restart_and_expect_full(dir.path(), &filled, 4096, true);
    assert_eq!(recovered, filled.log_bytes, "the snapshot's count, and no tail after it");
}

#[test]
fn a_full_log_stays_full_after_a_restart_without_any_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let filled = fill(dir.path(), 4096, report);
    let recovered = restart_and_expect_full(dir.path(), &filled, 4096, false);
    // Every byte written was an event or an answer written with events: the fold counts them all.
    assert_eq!(recovered, filled.log_bytes, "folded from seq 1, the count is the same");
}

/// Refusals are remembered (decision 0104) without events, so only a snapshot keeps their bytes:
/// the write that fills the budget takes one.
#[test]
fn a_log_filled_by_remembered_refusals_stays_full_after_a_restart() {
    let dismiss = |i: usize| ClientCommand::DismissToast { id: format!("no-such-toast-{i}") };
    let dir = tempfile::tempdir().unwrap();
    let filled = fill(dir.path(), 2048, dismiss);
    assert_eq!(code(&filled.first), Some(RefusalCode::UnknownToast), "answers without events filled it");
    let recovered = restart_and_expect_full(dir.path(), &filled, 2048, true);
    assert_eq!(recovered, filled.log_bytes);
}

/// What a session counts is exactly the bytes of the event records and answer records it wrote
/// (each answer with its command id, its key); folded again without a snapshot, exactly the bytes
/// of the event records and of the answers written with events.
#[test]
fn the_count_is_the_bytes_of_the_records_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let (id, ids, all_answers) = System::new().block_on(async move {
        let sled = open_sled(&path);
        let log: Arc<dyn EventLog> = sled.clone();
        let clock = Arc::new(ManualClock::at(T0));
        let registry = registry(log.clone(), clock.clone(), RuntimeConfig { snapshot_every: 7, ..quiet_config() });
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x1075);
        let mut ids = Vec::new();
        for i in 0..120 {
            clock.advance(rng.random_range(0..50));
            let state = session.send(Inspect).await.unwrap().unwrap().state;
            let command_id = format!("c{i}");
            session.send(execute(&command_id, random_command(&mut rng, &state))).await.unwrap();
            ids.push(command_id);
        }
        settle().await;
        let live = session.send(Inspect).await.unwrap().unwrap();
        let events = record_bytes(&sled, id, live.seq);
        let mut answers = 0;
        for command_id in &ids {
            let answer = log.answer(id, command_id).await.unwrap().expect("every answer is remembered");
            answers += (layout::encode_answer(&answer).unwrap().len() + command_id.len()) as u64;
        }
        assert_eq!(live.log_bytes, events + answers, "{} event bytes, {answers} answer bytes", events);
        (id, ids, answers)
    });
    let path = dir.path().to_path_buf();
    System::new().block_on(async move {
        let sled = open_sled(&path);
        let log: Arc<dyn EventLog> = sled.clone();
        log.delete_snapshots(Some(id)).await.unwrap();
        let registry = registry(log.clone(), Arc::new(ManualClock::at(T0 + 60_000)), quiet_config());
        let folded = registry.session(id).send(Inspect).await.unwrap().unwrap();
        let events = log.read(id, 1, Some(folded.seq)).await.unwrap();
        let mut answers = 0;
        for command_id in &ids {
            if events.iter().any(|e| e.correlation_id.as_deref() == Some(command_id.as_str())) {
                let answer = log.answer(id, command_id).await.unwrap().unwrap();
                answers += (layout::encode_answer(&answer).unwrap().len() + command_id.len()) as u64;
            }
        }
        // Some commands were refused or changed nothing: their answers, alone, are not folded.
        assert!(answers > 0 && answers < all_answers, "{answers} of {all_answers} answer bytes written with events");
        assert_eq!(folded.log_bytes, record_bytes(&sled, id, folded.seq) + answers);
    });
}

/// The stored event records of seqs 1 to `upto`, their bytes as on disk.
fn record_bytes(sled: &SledEventLog, id: SessionId, upto: u64) -> u64 {
    (1..=upto).map(|seq| sled.raw_event(id, seq).unwrap().expect("every event is stored").len() as u64).sum()
}

/// Answers written without events (refusals) are in no event a fold could count again, so a
/// session that leaves memory records them first: passivating (the session stops) and hibernating
/// (its state is dropped, and passivation follows) each write a snapshot that counts them. Before,
/// a client could go idle after each 64 KiB of refusals and have the count start over, so the log
/// grew without bound.
#[test]
fn answers_written_without_events_are_still_counted_after_the_session_passivates_or_hibernates() {
    let refuse = |i: usize| ClientCommand::DismissToast { id: format!("no-such-toast-{i}") };
    for (what, config) in [
        ("passivation", RuntimeConfig { passivate_after: Duration::from_secs(60), ..budget_config(1 << 20) }),
        ("hibernation", RuntimeConfig { hibernate_after: Duration::from_secs(10), ..budget_config(1 << 20) }),
    ] {
        let dir = tempfile::tempdir().unwrap();
        System::new().block_on(async move {
            let log: Arc<dyn EventLog> = open_sled(dir.path());
            let registry = registry(log.clone(), Arc::new(ManualClock::at(T0)), config.clone());
            let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
            let session = registry.session(id);
            let opened = session.send(Inspect).await.unwrap().unwrap();
            // Given a session that wrote some refusals (well under the 64 KiB that take a snapshot anyway)
            for i in 0..20 {
                let reply = session.send(execute(&format!("r{i}"), refuse(i))).await.unwrap();
                assert_eq!(code(&reply), Some(RefusalCode::UnknownToast), "{what}");
            }
            let counted = session.send(Inspect).await.unwrap().unwrap();
            assert!(
                counted.log_bytes > opened.log_bytes + 20 * 40,
                "{what}: the refusals were counted ({} -> {})",
                opened.log_bytes,
                counted.log_bytes
            );
            assert_eq!(counted.seq, opened.seq, "{what}: answers only, no events");
            // When it goes idle long enough to leave memory
            advance_timers(Duration::from_secs(61)).await;
            if what == "passivation" {
                until(|| registry.live() == 0, "the session passivated").await;
            }
            // Then its snapshot counts the refusals, and a new runtime on the directory starts from that count
            snapshot_counting(log.as_ref(), id, counted.log_bytes).await;
            drop(registry);
            let fresh = support::registry(log.clone(), Arc::new(ManualClock::at(T0 + 120_000)), config);
            let woken = fresh.session(id).send(Inspect).await.unwrap().unwrap();
            assert_eq!(woken.log_bytes, counted.log_bytes, "{what}: the count survived");
        });
    }
}

/// The gateway's verdict on clients' writes (`[limits] client_log_bytes_per_hour`,
/// `min_free_disk_bytes`), set by the test.
struct Verdict(std::sync::Mutex<Option<WriteRefusal>>);

impl ClientWriteShares for Verdict {
    fn refusal(&self, _: Option<std::net::IpAddr>) -> Option<WriteRefusal> {
        *self.0.lock().unwrap()
    }
    fn wrote(&self, _: std::net::IpAddr, _: u64) {}
}

/// While the gateway says a client may not write (its address spent its share, or the disk is
/// nearly full), its commands are refused before they are decided, with the reason's code, write
/// nothing and are not remembered; the runtime's own commands still run; once the gateway says
/// yes again, the same command is taken.
#[test]
fn given_the_gateway_refuses_clients_writes_when_a_command_comes_then_refused_with_the_reason_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log: Arc<dyn EventLog> = open_sled(dir.path());
        let clock = Arc::new(ManualClock::at(T0));
        let verdict = Arc::new(Verdict(std::sync::Mutex::new(None)));
        let registry = registry(log.clone(), clock.clone(), quiet_config()).with_client_write_shares(verdict.clone());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        // A toast with a deadline: the runtime's own command (its dismissal) comes later.
        let shown = session.send(execute("toast", toast("hello", Some(1000), false))).await.unwrap();
        assert!(!session.send(Inspect).await.unwrap().unwrap().state.toasts.order.is_empty(), "the toast is shown");
        assert_eq!(shown.status, CommandStatus::Accepted, "the positive path: {shown:?}");
        for (refusal, expected) in
            [(WriteRefusal::ClientShare, RefusalCode::RateLimited), (WriteRefusal::DiskLow, RefusalCode::StorageUnavailable)]
        {
            *verdict.0.lock().unwrap() = Some(refusal);
            let seq = log.latest_seq(id).await.unwrap();
            let refused = session.send(execute("open", ClientCommand::OpenModal { view: None })).await.unwrap();
            assert_eq!(code(&refused), Some(expected), "{refused:?}");
            assert_eq!(log.latest_seq(id).await.unwrap(), seq, "nothing appended");
            assert_eq!(log.answer(id, "open").await.unwrap(), None, "the refusal is not remembered");
        }
        // The toast's deadline still runs (the runtime's command, not a client's).
        clock.advance(1500);
        let mut dismissed = false;
        for _ in 0..1000 {
            if session.send(Inspect).await.unwrap().unwrap().state.toasts.order.is_empty() {
                dismissed = true;
                break;
            }
            settle().await;
        }
        assert!(dismissed, "the toast's deadline ran");
        // And once the gateway says yes, the same command is taken.
        *verdict.0.lock().unwrap() = None;
        let taken = session.send(execute("open", ClientCommand::OpenModal { view: None })).await.unwrap();
        assert_eq!(taken.status, CommandStatus::Accepted, "{taken:?}");
    });
}
