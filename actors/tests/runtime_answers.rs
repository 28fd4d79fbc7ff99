//! A repeated command id gets the first answer and changes nothing, across restarts and
//! passivation, refusals and no-ops included (issue 12, bug 5), on the real runtime and a real sled
//! directory. Transient refusals are not remembered: a retry runs the command. An answer that
//! cannot be made durable is not sent.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::System;
use async_trait::async_trait;
use support::{T0, TestConnection, advance_timers, execute, open_log, quiet_config, registry, toast, until};
use vestibule_actors::model::options::SessionOptions;
use vestibule_actors::protocol::CommandStatus;
use vestibule_actors::runtime::{Attach, Detach, Inspect, ManualClock, RuntimeConfig};
use vestibule_actors::session::{ClientCommand, RefusalCode};
use vestibule_store::{
    AppendOutcome, CommandAnswer, EventLog, EventStream, ExpireReport, NewEvent, NewSession, RetentionPolicy, SessionFilter, SessionId,
    SessionMeta, SessionPage, SessionStatus, Snapshot, StoreError,
};

const ORIGIN: &str = "http://localhost:3000";

#[test]
fn an_open_modal_repeated_after_300_other_commands_gets_its_first_answer_and_does_not_open_again() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let registry = registry(log.clone(), Arc::new(ManualClock::at(T0)), quiet_config());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let first = session.send(execute("open", ClientCommand::OpenModal { view: None })).await.unwrap();
        assert_eq!(first.status, CommandStatus::Accepted);
        for i in 0..300 {
            // Each one changes the state (a pause reason toggles), so each is a fresh answer.
            let command = ClientCommand::SetToastHover { hovered: i % 2 == 0 };
            assert!(session.send(execute(&format!("hover-{i}"), command)).await.unwrap().error.is_none());
        }
        let closed = session.send(execute("close", ClientCommand::CloseModal {})).await.unwrap();
        assert!(closed.error.is_none());
        let before = session.send(Inspect).await.unwrap().unwrap();
        assert!(!before.state.modal.is_open(), "the probe: the modal is closed, so re-running `open` would show");

        let again = session.send(execute("open", ClientCommand::OpenModal { view: None })).await.unwrap();
        assert_eq!(again, first, "the first answer");
        let after = session.send(Inspect).await.unwrap().unwrap();
        assert_eq!((after.seq, after.state.modal.is_open()), (before.seq, false), "nothing ran again");
        // A new id with the same command does run: the state was not merely stuck.
        let fresh = session.send(execute("open-2", ClientCommand::OpenModal { view: None })).await.unwrap();
        assert!(fresh.seq > before.seq);
        assert!(session.send(Inspect).await.unwrap().unwrap().state.modal.is_open());
    });
}

#[test]
fn a_refused_command_repeated_after_a_restart_is_refused_again_and_does_not_act() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let (id, refused) = System::new().block_on(async move {
        let registry = registry(open_log(&path), Arc::new(ManualClock::at(T0)), quiet_config());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        // No toast t1 yet: refused.
        let refused = session.send(execute("dismiss", ClientCommand::DismissToast { id: "t1".into() })).await.unwrap();
        assert_eq!(refused.error.as_ref().map(|e| e.code), Some(RefusalCode::UnknownToast));
        // Now there is one, so running `dismiss` again would dismiss it.
        session.send(execute("show", toast("stays", None, true))).await.unwrap();
        let state = session.send(Inspect).await.unwrap().unwrap().state;
        assert_eq!(state.toasts.order, vec!["t1".to_string()], "the probe: t1 exists");
        (id, refused)
    });
    let path = dir.path().to_path_buf();
    System::new().block_on(async move {
        let registry = registry(open_log(&path), Arc::new(ManualClock::at(T0 + 1000)), quiet_config());
        let session = registry.session(id);
        let before = session.send(Inspect).await.unwrap().unwrap();
        let again = session.send(execute("dismiss", ClientCommand::DismissToast { id: "t1".into() })).await.unwrap();
        assert_eq!(again, refused, "the first answer, refusal and all");
        let after = session.send(Inspect).await.unwrap().unwrap();
        assert_eq!((after.seq, after.state.toasts.order.clone()), (before.seq, vec!["t1".to_string()]), "t1 was not dismissed");
    });
}

#[test]
fn a_no_op_repeated_after_passivation_gets_its_answer_and_does_not_act() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let config = RuntimeConfig { passivate_after: Duration::from_secs(60), ..quiet_config() };
        let registry = registry(log.clone(), Arc::new(ManualClock::at(T0)), config);
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        // A connection keeps the session from passivating while the test works.
        let mut connection = TestConnection::new(1);
        session.send(Attach { link: connection.link.take().unwrap(), last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
        // The modal is closed: closing it is accepted and changes nothing.
        let noop = session.send(execute("close", ClientCommand::CloseModal {})).await.unwrap();
        let seq = session.send(Inspect).await.unwrap().unwrap().seq;
        assert_eq!((noop.status, noop.seq), (CommandStatus::Accepted, seq), "a no-op");
        session.send(execute("open", ClientCommand::OpenModal { view: None })).await.unwrap();
        session.send(Detach { connection: 1 }).await.unwrap();
        advance_timers(Duration::from_secs(61)).await;
        until(|| registry.live() == 0, "the session passivated").await;

        let session = registry.session(id);
        let before = session.send(Inspect).await.unwrap().unwrap();
        assert!(before.state.modal.is_open(), "the probe: the modal is open, so re-running `close` would close it");
        let again = session.send(execute("close", ClientCommand::CloseModal {})).await.unwrap();
        assert_eq!(again, noop, "the first answer");
        let after = session.send(Inspect).await.unwrap().unwrap();
        assert_eq!((after.seq, after.state.modal.is_open()), (before.seq, true), "the modal stayed open");
        drop(connection);
    });
}

#[test]
fn a_transient_refusal_is_not_remembered_and_the_retry_runs() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = open_log(dir.path());
        let registry = registry(log.clone(), Arc::new(ManualClock::at(T0)), quiet_config());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let seq = session.send(Inspect).await.unwrap().unwrap().seq;
        // Another writer moves the stream under the session: its next append conflicts.
        let stray = NewEvent {
            time_ms: T0,
            event_type: "ModalOpened".into(),
            schema_version: 1,
            correlation_id: Some("other-writer".into()),
            checksum: None,
            payload: serde_json::json!({}).into(),
        };
        log.append(id, seq, vec![stray]).await.unwrap();
        let conflict = session.send(execute("show", toast("hi", None, true))).await.unwrap();
        assert_eq!(conflict.error.map(|e| e.code), Some(RefusalCode::Conflict));
        let retry = session.send(execute("show", toast("hi", None, true))).await.unwrap();
        assert_eq!((retry.status, retry.error), (CommandStatus::Accepted, None), "the retry ran");
        assert!(retry.seq > seq + 1);
        assert_eq!(session.send(Inspect).await.unwrap().unwrap().state.toasts.order.len(), 1);
    });
}

/// The sled log, except that answers without events can be made to fail, and appends can be made
/// to fail ambiguously (stored, then reported failed: a publish whose ack timed out).
struct FailingAnswers {
    inner: Arc<dyn EventLog>,
    fail: AtomicBool,
    ambiguous: AtomicBool,
}

#[async_trait]
impl EventLog for FailingAnswers {
    async fn create_session(&self, s: SessionId, n: NewSession) -> Result<SessionMeta, StoreError> {
        self.inner.create_session(s, n).await
    }
    async fn append(&self, s: SessionId, e: u64, ev: Vec<NewEvent>) -> Result<AppendOutcome, StoreError> {
        self.inner.append(s, e, ev).await
    }
    async fn append_answered(&self, s: SessionId, e: u64, ev: Vec<NewEvent>, a: CommandAnswer) -> Result<AppendOutcome, StoreError> {
        let outcome = self.inner.append_answered(s, e, ev, a).await?;
        if self.ambiguous.swap(false, Ordering::SeqCst) {
            return Err(StoreError::Engine("publish ack: timed out: didn't receive ack in time".into()));
        }
        Ok(outcome)
    }
    async fn remember_answer(&self, s: SessionId, a: CommandAnswer) -> Result<(), StoreError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StoreError::Closed);
        }
        self.inner.remember_answer(s, a).await
    }
    async fn answer(&self, s: SessionId, id: &str) -> Result<Option<CommandAnswer>, StoreError> {
        self.inner.answer(s, id).await
    }
    async fn read(&self, s: SessionId, f: u64, t: Option<u64>) -> Result<Vec<vestibule_store::Envelope>, StoreError> {
        self.inner.read(s, f, t).await
    }
    fn stream(&self, s: SessionId, f: u64) -> EventStream {
        self.inner.stream(s, f)
    }
    fn follow(&self, s: SessionId, f: u64) -> EventStream {
        self.inner.follow(s, f)
    }
    async fn latest_seq(&self, s: SessionId) -> Result<u64, StoreError> {
        self.inner.latest_seq(s).await
    }
    async fn session_meta(&self, s: SessionId) -> Result<Option<SessionMeta>, StoreError> {
        self.inner.session_meta(s).await
    }
    async fn set_status(&self, s: SessionId, st: SessionStatus) -> Result<(), StoreError> {
        self.inner.set_status(s, st).await
    }
    async fn list_sessions(&self, f: &SessionFilter, a: Option<SessionId>, l: usize) -> Result<SessionPage, StoreError> {
        self.inner.list_sessions(f, a, l).await
    }
    async fn put_snapshot(&self, s: SessionId, sn: Snapshot) -> Result<(), StoreError> {
        self.inner.put_snapshot(s, sn).await
    }
    async fn get_snapshot(&self, s: SessionId, v: u32) -> Result<Option<Snapshot>, StoreError> {
        self.inner.get_snapshot(s, v).await
    }
    async fn delete_snapshots(&self, s: Option<SessionId>) -> Result<(), StoreError> {
        self.inner.delete_snapshots(s).await
    }
    async fn expire(&self, p: &RetentionPolicy, n: u64) -> Result<ExpireReport, StoreError> {
        self.inner.expire(p, n).await
    }
    async fn disk_usage(&self) -> Result<u64, StoreError> {
        self.inner.disk_usage().await
    }
    async fn flush(&self) -> Result<(), StoreError> {
        self.inner.flush().await
    }
}

#[test]
fn a_refusal_that_cannot_be_made_durable_is_not_sent_and_a_retry_decides_again() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = Arc::new(FailingAnswers { inner: open_log(dir.path()), fail: AtomicBool::new(true), ambiguous: AtomicBool::new(false) });
        let registry = registry(log.clone(), Arc::new(ManualClock::at(T0)), quiet_config());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let mut connection = TestConnection::new(3);
        session.send(Attach { link: connection.link.take().unwrap(), last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
        connection.received();
        let dismiss = || vestibule_actors::runtime::Execute::new("d", ClientCommand::DismissToast { id: "t1".into() }, Some(3));
        let first = session.send(dismiss()).await.unwrap();
        assert_eq!(first.error.map(|e| e.code), Some(RefusalCode::StorageUnavailable), "told to retry, not refused");
        let frames = connection.received();
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0]["error"]["code"], "storage_unavailable");
        assert_eq!(log.answer(id, "d").await.unwrap(), None, "nothing remembered");
        // The store is back: the retry is decided again, and this time the refusal is remembered.
        log.fail.store(false, Ordering::SeqCst);
        let retry = session.send(dismiss()).await.unwrap();
        assert_eq!(retry.error.as_ref().map(|e| e.code), Some(RefusalCode::UnknownToast));
        assert_eq!(connection.received()[0]["error"]["code"], "unknown_toast");
        assert!(log.answer(id, "d").await.unwrap().is_some_and(|a| a.refusal.is_some_and(|r| r.code == "unknown_toast")));
    });
}

/// Found by the failover load run (`vestibule-load --cluster 3 --failover`): while a NATS node dies,
/// an append can be stored and still reported failed (its ack timed out). The client is told to
/// retry; the retry finds the command's answer in the log, past the session's seq. The session
/// catches up with the log first: the client gets the command's diff (no gap, nothing missing),
/// then its first answer, and the next command is decided on the state that includes it.
#[test]
fn a_retry_of_a_command_stored_by_an_append_reported_failed_gets_its_diff_and_its_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let log = Arc::new(FailingAnswers { inner: open_log(dir.path()), fail: AtomicBool::new(false), ambiguous: AtomicBool::new(true) });
        let registry = registry(log.clone(), Arc::new(ManualClock::at(T0)), quiet_config());
        let (id, _) = registry.create("test", ORIGIN, SessionOptions::default()).await.unwrap();
        let session = registry.session(id);
        let mut connection = TestConnection::new(3);
        session.send(Attach { link: connection.link.take().unwrap(), last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
        connection.received();
        let seq = session.send(Inspect).await.unwrap().unwrap().seq;
        let show = |id: &str| vestibule_actors::runtime::Execute::new(id, toast("hi", None, true), Some(3));
        let first = session.send(show("s")).await.unwrap();
        assert_eq!(first.error.map(|e| e.code), Some(RefusalCode::StorageUnavailable), "told to retry");
        let frames = connection.received();
        assert_eq!((frames.len(), frames[0]["error"]["code"].as_str()), (1, Some("storage_unavailable")), "{frames:?}");
        // The retry: the first answer (stored with the events), after the diff it had not had.
        let retry = session.send(show("s")).await.unwrap();
        assert_eq!(retry.status, CommandStatus::Accepted);
        let after = retry.seq;
        assert!(after > seq);
        let frames = connection.received();
        assert_eq!(frames.len(), 2, "{frames:?}");
        assert_eq!(
            (frames[0]["type"].as_str(), frames[0]["prevSeq"].as_u64(), frames[0]["seq"].as_u64()),
            (Some("diff"), Some(seq), Some(after))
        );
        assert_eq!(frames[0]["events"][0]["correlationId"], "s");
        assert_eq!(
            (frames[1]["type"].as_str(), frames[1]["status"].as_str(), frames[1]["seq"].as_u64()),
            (Some("result"), Some("accepted"), Some(after))
        );
        let state = session.send(Inspect).await.unwrap().unwrap();
        assert_eq!((state.seq, state.state.toasts.order.len()), (after, 1));
        // The next command follows on: no conflict, its diff's prevSeq is the caught-up seq.
        let next = session.send(show("t")).await.unwrap();
        assert_eq!(next.status, CommandStatus::Accepted, "{next:?}");
        let frames = connection.received();
        let diff = frames.iter().find(|f| f["type"] == "diff").unwrap();
        assert_eq!(diff["prevSeq"].as_u64(), Some(after));
    });
}
