//! The NATS JetStream backend of Vestibule's [`EventLog`]: one replicated stream shared by every
//! gateway, with the same contract as the embedded sled log (checked by the same test suite,
//! `vestibule_store::contract`).
//!
//! Layout (docs/decisions/0111-jetstream-subjects-and-atomic-appends.md), for a stream named `S`:
//!
//! | subject / key                         | content                                              |
//! |---------------------------------------|------------------------------------------------------|
//! | `S.ev.<session>.0`                    | the session's creation record (metadata record)      |
//! | `S.ev.<session>.<seq>`                | event `seq` of the session (event record, as sled's) |
//! | `S.ans.<session>.<sha256(id)[..16]>`  | the answer to a command (id + answer record)         |
//! | KV `S_status`, key `<session>`        | `ended` / `active` (absent: as created, active)      |
//! | KV `S_snapshots`, key `<session>.<v>` | snapshot of state schema `v` (snapshot record), or the manifest of its parts (`<session>.<v>.p.<generation>.<i>`) when it is larger than a NATS message ([`snapshot_parts`]) |
//!
//! Record encodings are the sled backend's ([`vestibule_store::layout`]), so tools read both alike.
//! Every append is one JetStream publish or one atomic batch publish whose first message carries
//! `Nats-Expected-Last-Subject-Sequence` for the filter `S.ev.<session>.*`: the server checks
//! "nothing was appended since" and stores all of the batch or none of it.

pub mod bench;
mod config;
pub mod lease;
mod snapshot_parts;
#[cfg(feature = "test-server")]
pub mod test_server;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::header::{self, HeaderMap};
use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::consumer::pull::OrderedConfig;
use async_nats::jetstream::context::Context;
use async_nats::jetstream::kv;
use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::stream::{self, Stream as JsStream};
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use sha2::Digest as _;
use snapshot_parts::Manifest;
use vestibule_store::layout::{self, MetaRecord};
use vestibule_store::{
    AppendOutcome, CommandAnswer, Envelope, EventLog, EventStream, ExpireReport, NewEvent, NewSession, NoUpcasting, RetentionPolicy,
    SessionFilter, SessionId, SessionMeta, SessionPage, SessionStatus, Snapshot, StoreError, Upcaster,
};

/// The NATS client the leases and the gateway's routing use.
pub use async_nats;
pub use config::JetStreamConfig;

/// JetStream's error code for a failed `Nats-Expected-Last-*` check ("wrong last sequence").
const WRONG_LAST_SEQUENCE: usize = 10071;
/// Metadata records `list_sessions` looks at before it returns a (possibly short) page (as sled).
const LIST_SCAN_BUDGET: usize = 10_000;
/// A cursor that waits this long for a message it knows exists checks that the session still does.
const CURSOR_PATIENCE: Duration = Duration::from_secs(1);
/// How often a follower checks that its session was not expired while nothing arrives.
const FOLLOW_EXPIRY_CHECK: Duration = Duration::from_secs(1);

/// Where the stream's subjects and buckets are, derived from the stream's name.
#[derive(Debug, Clone)]
struct Names {
    stream: String,
    status_bucket: String,
    snapshot_bucket: String,
}

impl Names {
    fn new(stream: &str) -> Self {
        Self { stream: stream.into(), status_bucket: format!("{stream}_status"), snapshot_bucket: format!("{stream}_snapshots") }
    }
    fn event(&self, s: &SessionId, seq: u64) -> String {
        format!("{}.ev.{s}.{seq}", self.stream)
    }
    /// Every event subject of a session, the creation record (seq 0) included.
    fn events(&self, s: &SessionId) -> String {
        format!("{}.ev.{s}.*", self.stream)
    }
    fn answer(&self, s: &SessionId, command_id: &str) -> String {
        // Command ids are the client's (any UTF-8 up to 1 KiB): hashed into one subject token. The id
        // itself is stored in the message and compared on read, so a collision is a miss.
        let h = sha2::Sha256::digest(command_id.as_bytes());
        format!("{}.ans.{s}.{}", self.stream, hex::encode(&h[..16]))
    }
    fn answers(&self, s: &SessionId) -> String {
        format!("{}.ans.{s}.>", self.stream)
    }
    fn snapshot_key(s: &SessionId, version: u32) -> String {
        format!("{s}.{version}")
    }
    /// The subject of a session's snapshots inside the KV bucket's own stream.
    fn snapshot_subjects(&self, s: &SessionId) -> String {
        format!("$KV.{}.{s}.>", self.snapshot_bucket)
    }
    /// Session and seq of an event subject.
    fn parse_event(&self, subject: &str) -> Option<(SessionId, u64)> {
        let rest = subject.strip_prefix(&self.stream)?.strip_prefix(".ev.")?;
        let (s, seq) = rest.split_once('.')?;
        Some((s.parse().ok()?, seq.parse().ok()?))
    }
}

struct Inner {
    client: async_nats::Client,
    js: Context,
    stream: JsStream,
    status: kv::Store,
    snapshots: kv::Store,
    names: Names,
    upcaster: Arc<dyn Upcaster>,
    max_event_bytes: usize,
    /// The stream sequence of each session's last event as this process last wrote or read it, so
    /// an append after our own append needs no lookup. Only a hint: a stale entry makes the
    /// server refuse the append (`Conflict`), and the entry is dropped.
    tails: Mutex<HashMap<SessionId, (u64, u64)>>,
}

/// The JetStream-backed [`EventLog`]. Cheap to share behind an `Arc`; every handle of every process
/// on the same stream sees the same log.
pub struct JetStreamEventLog {
    inner: Arc<Inner>,
    expire_lock: tokio::sync::Mutex<()>,
    /// Drives the NATS connection; shut down without waiting when the log is dropped (a drop may
    /// happen inside another runtime, where blocking is not allowed).
    runtime: Option<tokio::runtime::Runtime>,
    open_attempts: u32,
}

impl Drop for JetStreamEventLog {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for JetStreamEventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamEventLog").field("stream", &self.inner.names.stream).finish_non_exhaustive()
    }
}

fn engine(context: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Engine(format!("JetStream: {context}: {e}"))
}

fn is_not_found(e: &async_nats::jetstream::stream::RawMessageError) -> bool {
    matches!(e.kind(), async_nats::jetstream::stream::RawMessageErrorKind::NoMessageFound)
}

impl JetStreamEventLog {
    /// Connect, and create the stream and buckets if they do not exist. See [`Self::open_with_upcaster`].
    pub async fn open(config: JetStreamConfig) -> Result<Self, StoreError> {
        Self::open_with_upcaster(config, Arc::new(NoUpcasting)).await
    }

    /// Connect to `config.servers`, create (or check) the event stream and the KV buckets; events
    /// of older schema versions are converted by `upcaster` on every read. An existing stream whose
    /// configuration could lose events (a per-subject message limit, an age or size limit, no
    /// atomic publish) is refused rather than used.
    ///
    /// NATS not answering (no server reachable, a request timing out while a cluster elects its
    /// leaders after a node died) is retried with a backoff doubling from 250 ms to 4 s, each retry
    /// logged, for up to `config.open_timeout`; the final error names the servers and the attempts.
    /// A refused stream configuration is not retried.
    pub async fn open_with_upcaster(config: JetStreamConfig, upcaster: Arc<dyn Upcaster>) -> Result<Self, StoreError> {
        Self::open_counting(config, upcaster, Arc::new(AtomicU32::new(0))).await
    }

    /// As [`Self::open_with_upcaster`], counting attempts in `attempts` as they start (for tests
    /// that act between two attempts).
    #[doc(hidden)]
    pub async fn open_counting(config: JetStreamConfig, upcaster: Arc<dyn Upcaster>, attempts: Arc<AtomicU32>) -> Result<Self, StoreError> {
        config.validate().map_err(StoreError::Engine)?;
        // The client's connection task runs on a runtime of the log's own: callers come from many
        // runtimes (actix's per-worker ones, the retention thread's), and a connection driven by
        // one of them would stall whenever that runtime is busy or stops.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("vestibule-nats")
            .enable_all()
            .build()
            .map_err(|e| engine("cannot start the NATS runtime", e))?;
        let counter = attempts.clone();
        let inner = match runtime.spawn(connect_with_retries(config, upcaster, counter)).await {
            Ok(Ok(inner)) => inner,
            failed => {
                // Dropping a runtime inside another one panics; let it go in the background.
                runtime.shutdown_background();
                return Err(failed.map_err(|e| engine("connect", e)).and_then(|r| r).err().expect("failed"));
            }
        };
        Ok(Self {
            inner: Arc::new(inner),
            expire_lock: tokio::sync::Mutex::new(()),
            runtime: Some(runtime),
            open_attempts: attempts.load(Ordering::SeqCst),
        })
    }

    /// How many attempts opening took (1 when NATS answered at once).
    pub fn open_attempts(&self) -> u32 {
        self.open_attempts
    }

    /// The stored bytes of one event record, as published (for tools and tests).
    pub async fn raw_event(&self, session: SessionId, seq: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.inner.get_last(&self.inner.names.event(&session, seq)).await?.map(|m| m.payload.to_vec()))
    }

    /// Publish raw bytes as event `seq` of `session`, bypassing every check (tests of corruption
    /// detection only: nothing else may write with it).
    #[doc(hidden)]
    pub async fn inject_raw_event(&self, session: SessionId, seq: u64, record: Vec<u8>) -> Result<(), StoreError> {
        self.inner
            .js
            .publish(self.inner.names.event(&session, seq), record.into())
            .await
            .map_err(|e| engine("publish", e))?
            .await
            .map_err(|e| engine("publish ack", e))?;
        Ok(())
    }
}

/// Why one attempt to open failed.
enum OpenError {
    /// NATS did not answer (yet): worth another attempt.
    Unavailable(StoreError),
    /// The stream exists with a configuration the log refuses: retrying cannot help.
    Refused(StoreError),
}

impl From<StoreError> for OpenError {
    fn from(e: StoreError) -> Self {
        OpenError::Unavailable(e)
    }
}

/// First pause between attempts to open; doubled after each, up to [`OPEN_BACKOFF_MAX`].
const OPEN_BACKOFF_FIRST: Duration = Duration::from_millis(250);
const OPEN_BACKOFF_MAX: Duration = Duration::from_secs(4);

/// [`connect`] until it succeeds, it is refused, or `config.open_timeout` is spent.
async fn connect_with_retries(config: JetStreamConfig, upcaster: Arc<dyn Upcaster>, attempts: Arc<AtomicU32>) -> Result<Inner, StoreError> {
    let started = tokio::time::Instant::now();
    let deadline = started + config.open_timeout;
    let mut pause = OPEN_BACKOFF_FIRST;
    loop {
        let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
        let error = match connect(config.clone(), upcaster.clone()).await {
            Ok(inner) => {
                if attempt > 1 {
                    tracing::info!(attempt, servers = ?config.servers, "event log on NATS JetStream opened after retries");
                }
                return Ok(inner);
            }
            Err(OpenError::Refused(e)) => return Err(e),
            Err(OpenError::Unavailable(e)) => e,
        };
        let now = tokio::time::Instant::now();
        if now + pause > deadline {
            return Err(StoreError::Engine(format!(
                "cannot open the event log on NATS JetStream at {} (stream {}): {attempt} attempt{} over {:.1} s \
                 (open_timeout {}), the last failed with: {}",
                config.servers.join(", "),
                config.stream,
                if attempt == 1 { "" } else { "s" },
                (now - started).as_secs_f64(),
                humantime_serde::re::humantime::format_duration(config.open_timeout),
                match &error {
                    StoreError::Engine(message) => message.clone(),
                    other => other.to_string(),
                },
            )));
        }
        tracing::warn!(
            attempt,
            retry_in = ?pause,
            servers = ?config.servers,
            error = %error,
            "cannot open the event log on NATS JetStream yet (servers down, or a cluster electing leaders); retrying"
        );
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(OPEN_BACKOFF_MAX);
    }
}

/// Wrong credentials, or a TLS handshake refused (a certificate not trusted, none where the server
/// asks for one): not worth another attempt, so the error is said at once.
fn is_refusal(e: &async_nats::ConnectError) -> bool {
    use async_nats::ConnectErrorKind::{Authentication, AuthorizationViolation, Io, Tls};
    match e.kind() {
        AuthorizationViolation | Authentication | Tls => true,
        // The handshake's own failures come as I/O errors wrapping the TLS library's.
        Io => std::error::Error::source(e)
            .and_then(|source| source.downcast_ref::<std::io::Error>())
            .and_then(|io| io.get_ref())
            .is_some_and(|inner| inner.is::<async_nats::rustls::Error>()),
        _ => false,
    }
}

/// Connect, and create (or check) the stream and the buckets.
async fn connect(config: JetStreamConfig, upcaster: Arc<dyn Upcaster>) -> Result<Inner, OpenError> {
    let options = config
        .connect_options("vestibule".to_string())
        .await
        .map_err(|e| OpenError::Refused(StoreError::Engine(format!("JetStream: {e}"))))?;
    let client = options.connect(config.servers.clone()).await.map_err(|e| {
        let error = engine(&format!("cannot connect to {:?}", config.servers), &e);
        if is_refusal(&e) { OpenError::Refused(error) } else { OpenError::Unavailable(error) }
    })?;
    let js = async_nats::jetstream::new(client.clone());
    let names = Names::new(&config.stream);
    let wanted = stream::Config {
        name: names.stream.clone(),
        subjects: vec![format!("{}.>", names.stream)],
        storage: stream::StorageType::File,
        num_replicas: config.replicas,
        // Never a per-subject limit, an age or a size limit: each would drop events silently.
        // Events leave the stream only through retention's purges.
        max_messages_per_subject: -1,
        allow_atomic_publish: true,
        // Reads go to the stream leader: a direct get may be served by a replica that lags, and
        // a read must see every append that resolved before it (the runtime reloads from the log
        // after a conflict).
        allow_direct: false,
        // Expected-sequence headers are the conflict check; duplicate ids are not used.
        duplicate_window: Duration::from_secs(0),
        description: Some("Vestibule event log".into()),
        ..Default::default()
    };
    let mut stream = match js.get_stream(&names.stream).await {
        Ok(s) => s,
        Err(_) => js.create_stream(wanted.clone()).await.map_err(|e| engine(&format!("cannot create the stream {}", names.stream), e))?,
    };
    let info = stream.info().await.map_err(|e| engine("stream info", e))?;
    let c = &info.config;
    if c.max_messages_per_subject > 0 || c.max_messages > 0 || c.max_bytes > 0 || !c.max_age.is_zero() {
        return Err(OpenError::Refused(StoreError::Engine(format!(
            "the stream {} has a message, size or age limit; it would drop events silently (remove the limits: \
             Vestibule expires sessions itself)",
            names.stream
        ))));
    }
    if !c.allow_atomic_publish {
        return Err(OpenError::Refused(StoreError::Engine(format!(
            "the stream {} does not allow atomic publish (allow_atomic); multi-event appends need it (nats-server 2.12+)",
            names.stream
        ))));
    }
    let bucket = |name: &str, description: &str| kv::Config {
        bucket: name.to_string(),
        description: description.to_string(),
        history: 1,
        num_replicas: config.replicas,
        storage: stream::StorageType::File,
        ..Default::default()
    };
    let status = js
        .create_or_update_key_value(bucket(&names.status_bucket, "Vestibule session status"))
        .await
        .map_err(|e| engine("status bucket", e))?;
    let snapshots = js
        .create_or_update_key_value(bucket(&names.snapshot_bucket, "Vestibule snapshots (a cache)"))
        .await
        .map_err(|e| engine("snapshot bucket", e))?;
    // Every server binds a new stream's subjects a moment after the stream exists, and a publish
    // before then has no responders ("no stream found for given subject"): the log is open once
    // each of its streams takes publishes at the server this client is on.
    for subject in [
        format!("{}.open-probe", names.stream),
        format!("$KV.{}.open-probe", names.status_bucket),
        format!("$KV.{}.open-probe", names.snapshot_bucket),
    ] {
        probe_publish(&js, subject).await?;
    }
    tracing::info!(stream = %names.stream, replicas = config.replicas, servers = ?config.servers, "event log on NATS JetStream");
    Ok(Inner {
        client,
        js,
        stream,
        status,
        snapshots,
        names,
        upcaster,
        max_event_bytes: config.max_event_bytes,
        tails: Mutex::new(HashMap::new()),
    })
}

/// Whether a stream takes publishes on `subject` at the server this client is on, without storing
/// anything: the probe expects a last sequence no subject can have, so a stream that hears it
/// refuses it; no responders means no stream has the subject there (yet).
#[doc(hidden)]
pub async fn probe_publish(js: &Context, subject: String) -> Result<(), StoreError> {
    let mut h = HeaderMap::new();
    h.insert(header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, u64::MAX.to_string().as_str());
    let ack = js.publish_with_headers(subject.clone(), h, Bytes::new()).await.map_err(|e| engine(&format!("probe {subject}"), e))?;
    match ack.await {
        Err(e) if e.kind() == async_nats::jetstream::context::PublishErrorKind::WrongLastSequence => Ok(()),
        Ok(stored) => Err(StoreError::Engine(format!(
            "probe {subject}: stored at {} although it expected an impossible last sequence",
            stored.sequence
        ))),
        Err(e) => Err(engine(&format!("the stream does not take publishes on {subject} yet"), e)),
    }
}

/// What a publish's acknowledgement said.
enum Published {
    Stored(u64),
    WrongLastSequence,
}

/// What one publish's acknowledgement said.
enum PublishedOnce {
    Done(Published),
    /// Error 10164 ("wrong last sequence", without a sequence): a clustered stream's leader could
    /// not check the expected sequence while other proposals were in flight, and stored nothing.
    Unverified,
}

/// JetStream's error code for an expected-sequence check a clustered stream's leader could not make
/// (other proposals in flight); nothing was stored.
const WRONG_LAST_SEQUENCE_CONSTANT: usize = 10164;
/// How many times a publish refused with [`WRONG_LAST_SEQUENCE_CONSTANT`] is tried again while the
/// subject's last sequence is still the expected one.
const UNVERIFIED_RETRIES: u32 = 50;

impl Inner {
    async fn get_last(&self, subject: &str) -> Result<Option<StreamMessage>, StoreError> {
        match self.stream.get_last_raw_message_by_subject(subject).await {
            Ok(m) => Ok(Some(m)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(engine(&format!("get {subject}"), e)),
        }
    }

    /// The session's newest message on its event subjects: (seq, stream sequence, record), seq 0
    /// being the creation record. `None`: no such session.
    async fn tail(&self, s: &SessionId) -> Result<Option<(u64, u64, Bytes)>, StoreError> {
        let Some(m) = self.get_last(&self.names.events(s)).await? else { return Ok(None) };
        let (_, seq) = self.names.parse_event(&m.subject).ok_or_else(|| StoreError::Corrupt {
            session: *s,
            seq: 0,
            reason: format!("malformed subject {}", m.subject),
        })?;
        Ok(Some((seq, m.sequence, m.payload)))
    }

    async fn exists(&self, s: &SessionId) -> Result<bool, StoreError> {
        Ok(self.get_last(&self.names.event(s, 0)).await?.is_some())
    }

    async fn latest_seq(&self, s: &SessionId) -> Result<u64, StoreError> {
        match self.tail(s).await? {
            Some((seq, _, _)) => Ok(seq),
            None => Err(StoreError::UnknownSession(*s)),
        }
    }

    fn remember_tail(&self, s: SessionId, seq: u64, stream_seq: u64) {
        self.tails.lock().unwrap_or_else(|p| p.into_inner()).insert(s, (seq, stream_seq));
    }

    fn forget_tail(&self, s: &SessionId) {
        self.tails.lock().unwrap_or_else(|p| p.into_inner()).remove(s);
    }

    /// The stream sequence of event `expected` (0: the creation record), which must be the session's
    /// last for an append after it to succeed. A miss is the `Conflict` or `UnknownSession` an append
    /// would get.
    async fn stream_seq_of(&self, s: SessionId, expected: u64) -> Result<u64, StoreError> {
        if let Some(&(seq, stream_seq)) = self.tails.lock().unwrap_or_else(|p| p.into_inner()).get(&s) {
            if seq == expected {
                return Ok(stream_seq);
            }
        }
        match self.tail(&s).await? {
            None => Err(StoreError::UnknownSession(s)),
            Some((seq, stream_seq, _)) if seq == expected => Ok(stream_seq),
            Some((actual, _, _)) => Err(StoreError::Conflict { session: s, expected, actual }),
        }
    }

    /// Publish `messages` (subject, headers, payload) as one atomic batch (one plain publish when
    /// there is one message); the first carries `expect` = the filter and stream sequence its
    /// last message must have. Resolves with the stream sequence of the last message once stored.
    async fn publish_all(&self, expect: Option<(String, u64)>, messages: Vec<(String, Bytes)>) -> Result<Published, StoreError> {
        let mut tries = 0;
        loop {
            match self.publish_once(expect.clone(), messages.clone()).await? {
                PublishedOnce::Done(p) => return Ok(p),
                PublishedOnce::Unverified => {
                    tries += 1;
                    // Only a clustered stream says so, and only with an expectation; nothing was
                    // stored. Still the expected last message → try again; else it is a real miss.
                    let Some((filter, expected)) = &expect else { return Err(engine("publish ack", "error 10164 without a check")) };
                    let last = self.get_last(filter).await?.map_or(0, |m| m.sequence);
                    if last != *expected {
                        return Ok(Published::WrongLastSequence);
                    }
                    if tries > UNVERIFIED_RETRIES {
                        return Err(engine(
                            "publish ack",
                            format!("the stream's leader could not check the expected sequence {tries} times (error 10164)"),
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(u64::from(tries.min(20)))).await;
                }
            }
        }
    }

    async fn publish_once(&self, expect: Option<(String, u64)>, messages: Vec<(String, Bytes)>) -> Result<PublishedOnce, StoreError> {
        let n = messages.len();
        let batch_id = (n > 1).then(|| SessionId::random().to_string());
        let mut ack = None;
        for (i, (subject, payload)) in messages.into_iter().enumerate() {
            let mut h = HeaderMap::new();
            if i == 0 {
                if let Some((filter, seq)) = &expect {
                    h.insert(header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, seq.to_string().as_str());
                    h.insert("Nats-Expected-Last-Subject-Sequence-Subject", filter.as_str());
                }
            }
            if let Some(id) = &batch_id {
                h.insert(header::NATS_BATCH_ID, id.as_str());
                h.insert(header::NATS_BATCH_SEQUENCE, (i + 1).to_string().as_str());
                if i + 1 == n {
                    h.insert(header::NATS_BATCH_COMMIT, "1");
                }
            }
            if i + 1 < n {
                // Messages before the commit need no reply: the commit's acknowledgement covers the
                // batch, and the connection keeps their order.
                self.client.publish_with_headers(subject, h, payload).await.map_err(|e| engine("publish", e))?;
            } else {
                ack = Some(self.js.publish_with_headers(subject, h, payload).await.map_err(|e| engine("publish", e))?);
            }
        }
        let Some(ack) = ack else { return Err(StoreError::InvalidAppend("nothing to publish".into())) };
        match ack.await {
            Ok(a) => Ok(PublishedOnce::Done(Published::Stored(a.sequence))),
            Err(e) if e.to_string().contains(&format!("error code {WRONG_LAST_SEQUENCE_CONSTANT}")) => Ok(PublishedOnce::Unverified),
            Err(e) if e.kind() == async_nats::jetstream::context::PublishErrorKind::WrongLastSequence => {
                Ok(PublishedOnce::Done(Published::WrongLastSequence))
            }
            // A batch refused as a whole reports the check that failed in its text (error 10071).
            Err(e) if e.to_string().contains(&WRONG_LAST_SEQUENCE.to_string()) => Ok(PublishedOnce::Done(Published::WrongLastSequence)),
            Err(e) => Err(engine("publish ack", e)),
        }
    }

    fn encode_events(&self, session: SessionId, events: &[NewEvent]) -> Result<Vec<Bytes>, StoreError> {
        if events.is_empty() {
            return Err(StoreError::InvalidAppend(format!("append to session {session} with no events")));
        }
        events
            .iter()
            .map(|e| {
                let record = layout::encode_event(e).map_err(StoreError::InvalidAppend)?;
                if record.len() > self.max_event_bytes {
                    return Err(StoreError::InvalidAppend(format!(
                        "an event record of {} bytes is over the limit of {} bytes",
                        record.len(),
                        self.max_event_bytes
                    )));
                }
                Ok(Bytes::from(record))
            })
            .collect()
    }

    fn encode_answer(&self, answer: &CommandAnswer) -> Result<Bytes, StoreError> {
        // u16 BE length + command id, then the answer record (layout's, whose key holds the id in sled).
        let record = layout::encode_answer(answer).map_err(StoreError::InvalidAppend)?;
        let id = answer.command_id.as_bytes();
        let mut out = Vec::with_capacity(2 + id.len() + record.len());
        out.extend_from_slice(&(id.len() as u16).to_be_bytes());
        out.extend_from_slice(id);
        out.extend_from_slice(&record);
        Ok(out.into())
    }

    async fn append_with(
        &self,
        session: SessionId,
        expected_seq: u64,
        events: Vec<NewEvent>,
        answer: Option<CommandAnswer>,
    ) -> Result<AppendOutcome, StoreError> {
        let records = self.encode_events(session, &events)?;
        let answer =
            answer.map(|a| Ok::<_, StoreError>((self.names.answer(&session, &a.command_id), self.encode_answer(&a)?))).transpose()?;
        let expected_stream_seq = self.stream_seq_of(session, expected_seq).await?;
        let n = records.len() as u64;
        // The answer goes first so that the batch's last message, whose stream sequence the
        // acknowledgement gives, is the last event (a batch is stored at consecutive sequences).
        let mut messages = Vec::with_capacity(records.len() + 1);
        messages.extend(answer);
        messages.extend(records.into_iter().enumerate().map(|(i, r)| (self.names.event(&session, expected_seq + 1 + i as u64), r)));
        match self.publish_all(Some((self.names.events(&session), expected_stream_seq)), messages).await? {
            Published::Stored(last) => {
                self.remember_tail(session, expected_seq + n, last);
                Ok(AppendOutcome::after(expected_seq, events.len()))
            }
            Published::WrongLastSequence => {
                self.forget_tail(&session);
                match self.tail(&session).await? {
                    None => Err(StoreError::UnknownSession(session)),
                    Some((actual, _, _)) => Err(StoreError::Conflict { session, expected: expected_seq, actual }),
                }
            }
        }
    }

    fn upcast(&self, mut env: Envelope) -> Result<Envelope, StoreError> {
        let payload = std::mem::take(&mut env.payload);
        match self.upcaster.upcast(&env.event_type, env.schema_version, payload) {
            Ok((version, payload)) => {
                env.schema_version = version;
                env.payload = payload;
                Ok(env)
            }
            Err(reason) => Err(StoreError::Corrupt {
                session: env.session,
                seq: env.seq,
                reason: format!("cannot upcast {} from schema version {}: {reason}", env.event_type, env.schema_version),
            }),
        }
    }

    async fn meta_record(&self, s: &SessionId) -> Result<Option<MetaRecord>, StoreError> {
        let Some(m) = self.get_last(&self.names.event(s, 0)).await? else { return Ok(None) };
        let mut meta = layout::decode_meta(*s, &m.payload)?;
        if let Some(entry) = self.status.get(s.to_string()).await.map_err(|e| engine("status", e))? {
            meta.status = match entry.as_ref() {
                b"ended" => SessionStatus::Ended,
                b"active" => SessionStatus::Active,
                other => {
                    return Err(StoreError::Corrupt {
                        session: *s,
                        seq: 0,
                        reason: format!("status {:?}", String::from_utf8_lossy(other)),
                    });
                }
            };
        }
        Ok(Some(meta))
    }

    async fn session_meta(&self, s: SessionId) -> Result<Option<SessionMeta>, StoreError> {
        let Some(meta) = self.meta_record(&s).await? else { return Ok(None) };
        let Some((latest_seq, _, record)) = self.tail(&s).await? else { return Ok(None) };
        let last_time = if latest_seq > 0 { layout::event_record_time(&record) } else { None };
        Ok(Some(SessionMeta {
            session: s,
            project: meta.project,
            status: meta.status,
            created_ms: meta.created_ms,
            last_activity_ms: last_time.map_or(meta.created_ms, |t| t.max(meta.created_ms)),
            latest_seq,
            resume_token_hash: meta.resume_token_hash,
        }))
    }

    /// Every session id, in id order (from the stream's per-subject index of creation records).
    async fn all_sessions(&self) -> Result<Vec<SessionId>, StoreError> {
        let filter = format!("{}.ev.*.0", self.names.stream);
        let subjects = self.stream.info_with_subjects(&filter).await.map_err(|e| engine("stream subjects", e))?;
        let mut ids: Vec<SessionId> = subjects
            .map_err(|e| engine("stream subjects", e))
            .try_filter_map(|(subject, _)| {
                let id = self.names.parse_event(&subject).map(|(s, _)| s);
                async move { Ok(id) }
            })
            .try_collect()
            .await?;
        ids.sort();
        Ok(ids)
    }

    /// Remove what a session leaves besides its events: answers, snapshots, status.
    async fn purge_leftovers(&self, s: &SessionId) -> Result<(), StoreError> {
        self.stream.purge().filter(self.names.answers(s)).await.map_err(|e| engine("purge answers", e))?;
        self.purge_snapshots(Some(s)).await?;
        self.status.purge(s.to_string()).await.map_err(|e| engine("status", e))?;
        Ok(())
    }

    /// The record a snapshot manifest names, joined from its parts; `None` if a part is missing or
    /// the parts are not the record the manifest names.
    async fn snapshot_parts(&self, key: &str, manifest: &Manifest) -> Result<Option<Vec<u8>>, StoreError> {
        // The manifest's length, believed only up to what a session's state can be.
        let mut record = Vec::with_capacity(usize::try_from(manifest.len).unwrap_or(0).min(64 << 20));
        for i in 0..manifest.parts {
            let part_key = snapshot_parts::part_key(key, manifest.generation, i);
            match self.snapshots.get(part_key).await.map_err(|e| engine("snapshot part", e))? {
                Some(part) if record.len() + part.len() <= usize::try_from(manifest.len).unwrap_or(usize::MAX) => {
                    record.extend_from_slice(&part)
                }
                _ => return Ok(None),
            }
        }
        Ok(manifest.matches(&record).then_some(record))
    }

    async fn purge_snapshot_subjects(&self, subjects: String) -> Result<(), StoreError> {
        let kv_stream = self.js.get_stream(format!("KV_{}", self.names.snapshot_bucket)).await.map_err(|e| engine("snapshot bucket", e))?;
        kv_stream.purge().filter(subjects).await.map_err(|e| engine("purge snapshot parts", e))?;
        Ok(())
    }

    async fn purge_snapshots(&self, s: Option<&SessionId>) -> Result<(), StoreError> {
        let kv_stream = self.js.get_stream(format!("KV_{}", self.names.snapshot_bucket)).await.map_err(|e| engine("snapshot bucket", e))?;
        let purge = kv_stream.purge();
        match s {
            Some(s) => purge.filter(self.names.snapshot_subjects(s)).await,
            None => purge.await,
        }
        .map_err(|e| engine("purge snapshots", e))?;
        Ok(())
    }
}

/// Reads one session's events in order from `from` through an ordered consumer, checking that
/// seqs are contiguous. `end`: stop after that seq (`None`: follow forever).
struct Cursor {
    inner: Arc<Inner>,
    session: SessionId,
    next: u64,
    end: Option<u64>,
    messages: Option<async_nats::jetstream::consumer::pull::Ordered>,
}

impl Cursor {
    fn new(inner: Arc<Inner>, session: SessionId, from: u64, end: Option<u64>) -> Self {
        Self { inner, session, next: from.max(1), end, messages: None }
    }

    fn done(&self) -> bool {
        self.end.is_some_and(|end| self.next > end)
    }

    async fn start(&mut self) -> Result<(), StoreError> {
        let inner = &self.inner;
        // Start at event `next` if it exists (so a long stream is not read from its beginning);
        // otherwise at the creation record, skipping what comes before `next`.
        let start = match inner.get_last(&inner.names.event(&self.session, self.next)).await? {
            Some(m) => m.sequence,
            None => match inner.get_last(&inner.names.event(&self.session, 0)).await? {
                Some(m) => m.sequence,
                None => return Err(StoreError::UnknownSession(self.session)),
            },
        };
        let consumer = inner
            .stream
            .create_consumer(OrderedConfig {
                filter_subject: inner.names.events(&self.session),
                deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: start },
                ..Default::default()
            })
            .await
            .map_err(|e| engine("ordered consumer", e))?;
        self.messages = Some(consumer.messages().await.map_err(|e| engine("ordered consumer", e))?);
        Ok(())
    }

    /// The next event; `Ok(None)` at `end`, or when the session was expired meanwhile (a
    /// follower's end).
    async fn next(&mut self) -> Result<Option<Envelope>, StoreError> {
        loop {
            if self.done() {
                return Ok(None);
            }
            if self.messages.is_none() {
                self.start().await?;
            }
            let patience = if self.end.is_some() { CURSOR_PATIENCE } else { FOLLOW_EXPIRY_CHECK };
            let messages = self.messages.as_mut().expect("started");
            let item = match tokio::time::timeout(patience, messages.next()).await {
                Ok(item) => item,
                Err(_) => {
                    // Nothing came: an expired session never will.
                    if !self.inner.exists(&self.session).await? {
                        return if self.end.is_some() { Err(StoreError::UnknownSession(self.session)) } else { Ok(None) };
                    }
                    continue;
                }
            };
            let message = match item {
                None => return Ok(None),
                Some(Err(e)) => return Err(engine("ordered consumer", e)),
                Some(Ok(m)) => m,
            };
            let session = self.session;
            let Some((s, seq)) = self.inner.names.parse_event(&message.subject) else {
                return Err(StoreError::Corrupt { session, seq: self.next, reason: format!("malformed subject {}", message.subject) });
            };
            if s != session || seq < self.next {
                continue; // the creation record, or what precedes `from`
            }
            if seq != self.next {
                return Err(StoreError::Corrupt {
                    session,
                    seq: self.next,
                    reason: format!("missing from the log (the next stored seq is {seq})"),
                });
            }
            self.next += 1;
            let env = layout::decode_event(session, seq, &message.payload)?;
            return self.inner.upcast(env).map(Some);
        }
    }

    fn into_stream(self) -> EventStream {
        futures_util::stream::unfold(Some(self), |cursor| async move {
            let mut cursor = cursor?;
            match cursor.next().await {
                Ok(Some(e)) => Some((Ok(e), Some(cursor))),
                Ok(None) => None,
                Err(e) => Some((Err(e), None)),
            }
        })
        .boxed()
    }
}

#[async_trait]
impl EventLog for JetStreamEventLog {
    /// JetStream is a peer, not a file: while the client is not connected to it no append can be
    /// acknowledged, so the log says it is unavailable and `/healthz` fails (a load balancer sends
    /// visitors elsewhere). Unlike sled's failure this one heals: the client reconnects by itself.
    fn failure(&self) -> Option<String> {
        match self.inner.client.connection_state() {
            async_nats::connection::State::Connected => None,
            state => Some(format!("the NATS connection is {state}")),
        }
    }

    async fn create_session(&self, session: SessionId, new: NewSession) -> Result<SessionMeta, StoreError> {
        let inner = &self.inner;
        let meta = MetaRecord {
            status: SessionStatus::Active,
            created_ms: new.created_ms,
            project: new.project,
            resume_token_hash: new.resume_token_hash,
        };
        let record = layout::encode_meta(&meta).map_err(StoreError::InvalidAppend)?;
        if inner.tail(&session).await?.is_some() {
            return Err(StoreError::SessionExists(session));
        }
        // An id re-created after an expiry interrupted before its answers, snapshots or status
        // went (or an import under the same id) inherits nothing.
        inner.purge_leftovers(&session).await?;
        // "No event subject of this session exists yet", checked by the server.
        match inner.publish_all(Some((inner.names.events(&session), 0)), vec![(inner.names.event(&session, 0), record.into())]).await? {
            Published::Stored(stream_seq) => inner.remember_tail(session, 0, stream_seq),
            Published::WrongLastSequence => return Err(StoreError::SessionExists(session)),
        }
        Ok(SessionMeta {
            session,
            project: meta.project,
            status: meta.status,
            created_ms: meta.created_ms,
            last_activity_ms: meta.created_ms,
            latest_seq: 0,
            resume_token_hash: meta.resume_token_hash,
        })
    }

    async fn append(&self, session: SessionId, expected_seq: u64, events: Vec<NewEvent>) -> Result<AppendOutcome, StoreError> {
        self.inner.append_with(session, expected_seq, events, None).await
    }

    async fn append_answered(
        &self,
        session: SessionId,
        expected_seq: u64,
        events: Vec<NewEvent>,
        answer: CommandAnswer,
    ) -> Result<AppendOutcome, StoreError> {
        self.inner.append_with(session, expected_seq, events, Some(answer)).await
    }

    async fn remember_answer(&self, session: SessionId, answer: CommandAnswer) -> Result<(), StoreError> {
        let inner = &self.inner;
        let payload = inner.encode_answer(&answer)?;
        if !inner.exists(&session).await? {
            return Err(StoreError::UnknownSession(session));
        }
        match inner.publish_all(None, vec![(inner.names.answer(&session, &answer.command_id), payload)]).await? {
            Published::Stored(_) => Ok(()),
            Published::WrongLastSequence => Err(engine("remember answer", "unexpected sequence check")),
        }
    }

    async fn answer(&self, session: SessionId, command_id: &str) -> Result<Option<CommandAnswer>, StoreError> {
        if layout::check_command_id(command_id).is_err() {
            return Ok(None); // could never have been remembered
        }
        let inner = &self.inner;
        let Some(m) = inner.get_last(&inner.names.answer(&session, command_id)).await? else { return Ok(None) };
        let corrupt = |reason: &str| StoreError::Corrupt { session, seq: 0, reason: format!("answer to {command_id:?}: {reason}") };
        let p = &m.payload;
        if p.len() < 2 {
            return Err(corrupt("truncated"));
        }
        let len = u16::from_be_bytes([p[0], p[1]]) as usize;
        let Some(id) = p.get(2..2 + len) else { return Err(corrupt("truncated")) };
        if id != command_id.as_bytes() {
            return Ok(None); // another id with the same hash prefix
        }
        // An expired session's answers go with its events; until then they are not its answers.
        if !inner.exists(&session).await? {
            return Ok(None);
        }
        layout::decode_answer(session, command_id, &p[2 + len..]).map(Some)
    }

    async fn read(&self, session: SessionId, from_seq: u64, to_seq: Option<u64>) -> Result<Vec<Envelope>, StoreError> {
        let latest = self.inner.latest_seq(&session).await?;
        let end = to_seq.map_or(latest, |t| t.min(latest));
        let mut cursor = Cursor::new(self.inner.clone(), session, from_seq, Some(end));
        let mut out = Vec::new();
        while let Some(e) = cursor.next().await? {
            out.push(e);
        }
        Ok(out)
    }

    fn stream(&self, session: SessionId, from_seq: u64) -> EventStream {
        let inner = self.inner.clone();
        // "The end as it is now" is read when the stream is first polled.
        futures_util::stream::once(async move {
            let end = inner.latest_seq(&session).await?;
            Ok::<_, StoreError>(Cursor::new(inner, session, from_seq, Some(end)).into_stream())
        })
        .map(|r| match r {
            Ok(s) => s,
            Err(e) => futures_util::stream::once(async move { Err(e) }).boxed(),
        })
        .flatten()
        .boxed()
    }

    fn follow(&self, session: SessionId, from_seq: u64) -> EventStream {
        // The ordered consumer delivers only what the stream stored (never a publish it refused),
        // first what is there, then each append as it is stored.
        Cursor::new(self.inner.clone(), session, from_seq, None).into_stream()
    }

    async fn latest_seq(&self, session: SessionId) -> Result<u64, StoreError> {
        self.inner.latest_seq(&session).await
    }

    async fn session_meta(&self, session: SessionId) -> Result<Option<SessionMeta>, StoreError> {
        self.inner.session_meta(session).await
    }

    async fn set_status(&self, session: SessionId, status: SessionStatus) -> Result<(), StoreError> {
        let inner = &self.inner;
        if !inner.exists(&session).await? {
            return Err(StoreError::UnknownSession(session));
        }
        let value: &'static [u8] = match status {
            SessionStatus::Active => b"active",
            SessionStatus::Ended => b"ended",
        };
        inner.status.put(session.to_string(), Bytes::from_static(value)).await.map_err(|e| engine("status", e))?;
        Ok(())
    }

    async fn list_sessions(&self, filter: &SessionFilter, after: Option<SessionId>, limit: usize) -> Result<SessionPage, StoreError> {
        if limit == 0 {
            return Ok(SessionPage { sessions: Vec::new(), next: None });
        }
        let ids = self.inner.all_sessions().await?;
        let start = after.map_or(0, |a| ids.partition_point(|id| *id <= a));
        let mut sessions = Vec::new();
        let mut scanned = 0;
        let mut last_scanned = None;
        let mut stopped_at = None;
        for (i, id) in ids.iter().enumerate().skip(start) {
            scanned += 1;
            last_scanned = Some(*id);
            if let Some(meta) = self.inner.session_meta(*id).await? {
                let keep = filter.project.as_ref().is_none_or(|p| *p == meta.project)
                    && filter.status.is_none_or(|s| s == meta.status)
                    && filter.active_since_ms.is_none_or(|t| meta.last_activity_ms >= t);
                if keep {
                    sessions.push(meta);
                }
            }
            if sessions.len() >= limit || scanned >= LIST_SCAN_BUDGET {
                stopped_at = Some(i);
                break;
            }
        }
        let next = match stopped_at {
            Some(i) if i + 1 < ids.len() => last_scanned,
            _ => None,
        };
        Ok(SessionPage { sessions, next })
    }

    async fn put_snapshot(&self, session: SessionId, snapshot: Snapshot) -> Result<(), StoreError> {
        let inner = &self.inner;
        let record = layout::encode_snapshot(&snapshot).map_err(StoreError::InvalidAppend)?;
        let latest = inner.latest_seq(&session).await?;
        if snapshot.seq > latest {
            return Err(StoreError::InvalidAppend(format!(
                "snapshot of session {session} at seq {} is past the end of its stream (seq {latest})",
                snapshot.seq
            )));
        }
        let key = Names::snapshot_key(&session, snapshot.schema_version);
        // The parts of the snapshot this one replaces, to purge once it is in place.
        let replaced = match inner.snapshots.get(key.as_str()).await.map_err(|e| engine("snapshot", e))? {
            Some(old) => Manifest::decode(&old).and_then(Result::ok).map(|m| m.generation),
            None => None,
        };
        let part_size = snapshot_parts::part_size(inner.client.server_info().max_payload);
        let value = if record.len() <= part_size {
            record
        } else {
            let manifest = Manifest::of(&record, part_size, rand::random());
            let record = Bytes::from(record);
            for (i, start) in (0..record.len()).step_by(part_size).enumerate() {
                let part_key = snapshot_parts::part_key(&key, manifest.generation, i as u32);
                let part = record.slice(start..(start + part_size).min(record.len()));
                inner.snapshots.put(part_key, part).await.map_err(|e| engine("snapshot part", e))?;
            }
            manifest.encode()
        };
        inner.snapshots.put(key.as_str(), value.into()).await.map_err(|e| engine("snapshot", e))?;
        if let Some(generation) = replaced {
            inner.purge_snapshot_subjects(snapshot_parts::parts_subjects(&inner.names.snapshot_bucket, &key, generation)).await?;
        }
        Ok(())
    }

    async fn get_snapshot(&self, session: SessionId, schema_version: u32) -> Result<Option<Snapshot>, StoreError> {
        let key = Names::snapshot_key(&session, schema_version);
        let found = self.inner.snapshots.get(key.as_str()).await.map_err(|e| engine("snapshot", e))?;
        let Some(value) = found else { return Ok(None) };
        let record = match Manifest::decode(&value) {
            None => value,
            Some(Ok(manifest)) => match self.inner.snapshot_parts(&key, &manifest).await? {
                Some(record) => record.into(),
                // Replaced while it was read: a miss, as for any snapshot it cannot use.
                None => return Ok(None),
            },
            Some(Err(reason)) => {
                tracing::warn!(%session, schema_version, %reason, "ignoring unreadable snapshot");
                return Ok(None);
            }
        };
        match layout::decode_snapshot(&record) {
            Ok(s) if s.schema_version == schema_version => Ok(Some(s)),
            Ok(_) => Ok(None),
            Err(reason) => {
                // A snapshot is only a cache: an unreadable one is a miss, never a failure.
                tracing::warn!(%session, schema_version, %reason, "ignoring unreadable snapshot");
                Ok(None)
            }
        }
    }

    async fn delete_snapshots(&self, session: Option<SessionId>) -> Result<(), StoreError> {
        self.inner.purge_snapshots(session.as_ref()).await
    }

    async fn expire(&self, policy: &RetentionPolicy, now_ms: u64) -> Result<ExpireReport, StoreError> {
        let _one_at_a_time = self.expire_lock.lock().await;
        let inner = &self.inner;
        let mut report = ExpireReport::default();
        let batch = policy.batch_size.max(1);
        let is_due = |m: &SessionMeta| {
            let idle = now_ms.saturating_sub(m.last_activity_ms);
            (m.status == SessionStatus::Ended && idle >= policy.ended_after.as_millis() as u64)
                || idle >= policy.idle_after.as_millis() as u64
        };
        let mut due = Vec::new();
        for id in inner.all_sessions().await? {
            if let Some(m) = inner.session_meta(id).await? {
                if is_due(&m) {
                    due.push(id);
                    if due.len() > batch {
                        break;
                    }
                }
            }
        }
        report.more_due = due.len() > batch;
        due.truncate(batch);
        for id in due {
            // Re-checked just before the purge. An append landing between this check and the purge
            // would be purged with the session (a session idle for the whole policy period that
            // wakes at that instant); docs/scale-out.md says so.
            match inner.session_meta(id).await? {
                Some(m) if is_due(&m) => {}
                _ => continue,
            }
            // One purge removes the creation record and every event at once: from then on the
            // session is unknown to readers, and appenders are fenced by their expected sequence.
            let purged =
                inner.stream.purge().filter(format!("{}.ev.{id}.>", inner.names.stream)).await.map_err(|e| engine("purge events", e))?;
            inner.forget_tail(&id);
            inner.purge_leftovers(&id).await?;
            report.sessions_expired += 1;
            report.expired.push(id);
            report.events_deleted += purged.purged.saturating_sub(1);
        }
        Ok(report)
    }

    async fn disk_usage(&self) -> Result<u64, StoreError> {
        let mut total = 0;
        for name in [
            self.inner.names.stream.clone(),
            format!("KV_{}", self.inner.names.status_bucket),
            format!("KV_{}", self.inner.names.snapshot_bucket),
        ] {
            let info = self.inner.js.get_stream(&name).await.map_err(|e| engine("stream info", e))?;
            total += info.cached_info().state.bytes;
        }
        Ok(total)
    }

    async fn flush(&self) -> Result<(), StoreError> {
        // Every write resolved only once JetStream acknowledged it as stored (and, with replicas,
        // replicated to a quorum): there is nothing buffered here.
        Ok(())
    }
}
