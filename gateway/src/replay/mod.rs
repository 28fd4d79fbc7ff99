//! Time-travel debugging from the command line: list sessions, replay one event by event with the
//! transitions of every machine, verify a log against the states clients were sent, and move a
//! session between data directories as a JSONL file. See `docs/replay.md`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use vestibule_actors::machines;
use vestibule_actors::session::{self, Event, STATE_SCHEMA_VERSION, SessionState, wire};
use vestibule_store::{
    Envelope, EventLog, NewEvent, NewSession, SessionFilter, SessionId, SessionStatus, StoreConfig, StoreError, Upcaster,
};

mod text;
pub use text::{REDACTED, mask_emails_in, terminal_safe, terminal_safe_message};
use text::{Redactor, mask_emails};

/// Opens a data directory for reading or importing, with a clear message when a running gateway
/// holds it. A segment log is opened with the segment size it was written with (its newest segment
/// file's), not the default: opening preallocates the last segment and the next one to that size,
/// so the default (64 MiB) grew a directory of smaller segments by merely listing it.
pub fn open(data: &Path) -> anyhow::Result<Arc<dyn EventLog>> {
    let mut store = StoreConfig::at(data.to_path_buf());
    if let Some(bytes) = vestibule_store::SegmentEventLog::segment_bytes_in(data)? {
        store = store.with_segment_bytes(bytes);
    }
    open_configured(store)
}

/// [`open`] with the store settings given (`store.path` is the directory).
fn open_configured(store: StoreConfig) -> anyhow::Result<Arc<dyn EventLog>> {
    let data = store.path.clone();
    let data = data.as_path();
    if !data.exists() {
        anyhow::bail!("{} does not exist (is it the gateway's --data directory?)", data.display());
    }
    crate::store::open_at(store).map_err(|e| {
        if e.to_string().contains("in use") || e.to_string().contains("lock") {
            anyhow::anyhow!(
                "{e}\nA running gateway holds {}: stop it first, or read the session through the gateway's debug API \
                 (GET /debug/sessions and /debug/sessions/ID/events with the admin token; see docs/replay.md).",
                data.display()
            )
        } else {
            e
        }
    })
}

/// Opens the log a tool works on: the local directory `data` (sled or segments, whichever wrote
/// it), or the store the gateway configuration `config` names (`[store] backend`: a local one in its
/// `data`, or JetStream, opened as `serve` does, retries included). `create`: a directory that does
/// not exist is made (import; a new one is sled's).
pub async fn open_store(data: Option<&Path>, config: Option<&Path>, create: bool) -> anyhow::Result<Arc<dyn EventLog>> {
    // With --config, the store's settings are the configuration's (`[store.segments]` included),
    // as `serve` opens it; with --data, the directory's own (see `open`).
    let (data, configured) = match (data, config) {
        (Some(data), None) => (data.to_path_buf(), None),
        (None, Some(file)) => {
            let config = crate::config::GatewayConfig::load(Some(file), &crate::config::Overrides::default())?;
            match config.store.backend {
                crate::config::StoreBackend::Sled | crate::config::StoreBackend::Segments => {
                    (config.data.clone(), Some(crate::store::store_config(&config)))
                }
                crate::config::StoreBackend::Jetstream => return crate::store::open(&config).await,
            }
        }
        _ => anyhow::bail!("give either --data DIR or --config FILE"),
    };
    if create {
        std::fs::create_dir_all(&data)?;
    } else if data.is_dir() && vestibule_store::LocalBackend::detect(&data)?.is_none() {
        // Opening makes a log where there is none (sled's files, or a preallocated segment): a
        // tool that only reads would leave one in whatever directory it was given.
        anyhow::bail!(
            "{} holds no event log (neither sled's files nor segments): is it the gateway's --data directory?",
            terminal_safe(&data.display().to_string())
        );
    }
    match configured {
        Some(store) => open_configured(store),
        None => open(&data),
    }
}

fn rfc3339(ms: u64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// A session id an operator typed: in either case (only the gateway's own inputs insist on the
/// lowercase spelling, `SessionId::from_str`).
pub fn parse_session(text: &str) -> anyhow::Result<SessionId> {
    text.to_ascii_lowercase().parse().map_err(|_| anyhow::anyhow!("{text:?} is not a session id"))
}

pub fn parse_status(text: &str) -> anyhow::Result<SessionStatus> {
    match text {
        "active" => Ok(SessionStatus::Active),
        "ended" => Ok(SessionStatus::Ended),
        other => anyhow::bail!("unknown status {other:?} (active or ended)"),
    }
}

/// Accepts RFC 3339 or Unix milliseconds. A time before 1970-01-01T00:00:00Z is refused: the log
/// counts times in Unix milliseconds, which cannot be negative (it once wrapped around to a time
/// in the far future, so `--since 1900-01-01T00:00:00Z` listed no session).
pub fn parse_time(text: &str) -> anyhow::Result<u64> {
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(ms);
    }
    let t = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|e| anyhow::anyhow!("{text:?} is neither RFC 3339 nor Unix milliseconds: {e}"))?;
    u64::try_from(t.unix_timestamp_nanos().div_euclid(1_000_000))
        .map_err(|_| anyhow::anyhow!("{text:?} is before 1970-01-01T00:00:00Z, the earliest time the log records (Unix milliseconds 0)"))
}

pub async fn list(log: &dyn EventLog, filter: SessionFilter, json_format: bool, out: &mut impl Write) -> anyhow::Result<usize> {
    let mut after = None;
    let mut n = 0;
    if !json_format {
        writeln!(out, "{:<36} {:<12} {:<7} {:>6}  {:<25} last activity", "session", "project", "status", "events", "created")?;
    }
    loop {
        let page = log.list_sessions(&filter, after, 500).await?;
        for m in &page.sessions {
            n += 1;
            let status = match m.status {
                SessionStatus::Active => "active",
                SessionStatus::Ended => "ended",
            };
            if json_format {
                // Never the resume token's hash.
                let line = json!({ "session": m.session.to_string(), "project": m.project, "status": status, "events": m.latest_seq, "createdMs": m.created_ms, "lastActivityMs": m.last_activity_ms });
                writeln!(out, "{}", terminal_safe(&line.to_string()))?;
            } else {
                writeln!(
                    out,
                    "{:<36} {:<12} {:<7} {:>6}  {:<25} {}",
                    m.session.to_string(),
                    terminal_safe(&m.project),
                    status,
                    m.latest_seq,
                    rfc3339(m.created_ms),
                    rfc3339(m.last_activity_ms)
                )?;
            }
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    Ok(n)
}

fn decode(envelope: &Envelope) -> anyhow::Result<Event> {
    Event::from_parts(&envelope.event_type, envelope.payload.clone()).map_err(|e| {
        let (kind, e) = (terminal_safe(&envelope.event_type), terminal_safe(&e.to_string()).into_owned());
        anyhow::anyhow!("session {} seq {}: {kind} does not decode: {e}", envelope.session, envelope.seq)
    })
}

/// One line of a payload for people: the fields that say what happened, shortened.
fn summary(payload: &Value) -> String {
    let text = match payload {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::Object(map) => map
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "options" | "networks" | "challenge" | "session" | "connectors"))
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                Value::Object(_) | Value::Array(_) => format!("{k}=…"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    };
    // Line breaks read as spaces; then, once shortened (so that no escape is cut in half), whatever
    // a terminal would act on is spelled out: a payload is the visitor's or an export's, not ours.
    let text = text.replace('\n', " ");
    let text = if text.chars().count() > 72 { format!("{}…", text.chars().take(71).collect::<String>()) } else { text };
    terminal_safe(&text).into_owned()
}

/// Every machine's chart, built once per replay.
fn charts() -> Vec<(&'static str, vestibule_actors::chart::Statechart)> {
    machines::ALL.iter().map(|m| (m.id, (m.chart)())).collect()
}

/// Every machine's chart regions and the state each is in: `(machine, region, state)`.
fn chart_states(charts: &[(&'static str, vestibule_actors::chart::Statechart)], state: &Value) -> Vec<(&'static str, String, String)> {
    let mut states = Vec::new();
    for (machine, chart) in charts {
        for (region, name) in chart.states_in(state) {
            states.push((*machine, region, name));
        }
    }
    states
}

/// `machine: from -> to` for every region an event moved (`before` and `after` from [`chart_states`]).
fn transitions(before: &[(&'static str, String, String)], after: &[(&'static str, String, String)]) -> Vec<String> {
    let mut moved = Vec::new();
    for ((machine, region, from), (_, _, to)) in before.iter().zip(after) {
        if from != to {
            let name = if region == machine { machine.to_string() } else { format!("{machine}/{region}") };
            moved.push(format!("{name}: {from} -> {to}"));
        }
    }
    moved
}

#[derive(Debug, Serialize)]
pub struct Divergence {
    pub seq: u64,
    pub reason: String,
}

/// A progress bar on stderr, for long runs at a terminal: `done` of `total` `unit`s.
pub(crate) struct Progress {
    total: u64,
    unit: &'static str,
    on: bool,
    last: std::time::Instant,
}

impl Progress {
    pub(crate) fn new(total: u64, what: &str) -> Self {
        Self::counting(total, what, "events")
    }

    pub(crate) fn counting(total: u64, what: &str, unit: &'static str) -> Self {
        let on = std::io::stderr().is_terminal() && total >= 1000;
        if on {
            eprint!("{what}…");
        }
        Progress { total, unit, on, last: std::time::Instant::now() }
    }

    pub(crate) fn tick(&mut self, done: u64) {
        if self.on && (self.last.elapsed().as_millis() >= 100 || done == self.total) {
            self.last = std::time::Instant::now();
            let width = 30;
            let filled = (done * width / self.total.max(1)) as usize;
            eprint!("\r[{}{}] {done}/{} {}", "#".repeat(filled), " ".repeat(width as usize - filled), self.total, self.unit);
            if done == self.total {
                eprintln!();
            }
        }
    }
}

pub struct ReplayOptions {
    pub to: Option<u64>,
    pub json: bool,
    pub verify: bool,
    pub patch: bool,
}

/// What `--verify` found: the decisions it replayed, which of them it could check, and the first
/// place the log fails.
///
/// A decision is a run of consecutive events sharing a correlation id (the command, timer or effect
/// that decided them, appended together); the gateway writes the state hash it sent to clients on
/// the last event of every decision (decision 0302), so a decision whose last event carries none
/// cannot be checked: written before record format 2 (decision 0302), exported with
/// `--mask-emails`, or edited (a hash removed, an event added).
#[derive(Debug, Default, Serialize)]
pub struct Verification {
    /// Decisions replayed to their end (one cut by `--to` is not counted).
    pub decisions: u64,
    /// Of them, those whose stored state hash matched the fold.
    pub checked: u64,
    /// Of them, those whose last event carries no state hash.
    pub unverified: u64,
    /// The first seq of the first decision without a state hash.
    pub first_unverified: Option<u64>,
    /// The last seq of the last decision without a state hash.
    pub last_unverified: Option<u64>,
    /// The seq of the stored snapshot the fold was compared with, if any.
    pub snapshot: Option<u64>,
    /// The first event whose stored state hash, or the snapshot at its seq, differs from the fold.
    pub mismatch: Option<Divergence>,
}

impl Verification {
    /// Why the log fails verification, at the first seq where it does: a mismatch, or (unless
    /// `allow_unverified`) decisions that carry no state hash, whichever comes first.
    pub fn failure(&self, session: SessionId, allow_unverified: bool) -> Option<Divergence> {
        let unverified = self.first_unverified.filter(|_| !allow_unverified).map(|first| Divergence {
            seq: first,
            reason: format!(
                "session {session}: unverified from seq {first}: {} of {} decisions (the last ending at seq {}) carry no stored \
                 state hash, which the gateway writes on every decision's last event; a log written before record format 2, \
                 an export made with --mask-emails, and a log whose hashes were removed or events added all look like this",
                self.unverified,
                self.decisions,
                self.last_unverified.unwrap_or(first),
            ),
        });
        let mismatch = self.mismatch.as_ref().map(|d| Divergence { seq: d.seq, reason: format!("session {session}: {}", d.reason) });
        match (mismatch, unverified) {
            (Some(m), Some(u)) => Some(if u.seq < m.seq { u } else { m }),
            (m, u) => m.or(u),
        }
    }

    /// One line for people: what was checked.
    pub fn summary(&self) -> String {
        let snapshot = self.snapshot.map(|seq| format!(", and the state at seq {seq} against the stored snapshot")).unwrap_or_default();
        let unverified = match self.first_unverified {
            Some(first) => format!("; {} carry no state hash (unverified from seq {first})", self.unverified),
            None => String::new(),
        };
        format!(
            "verify: {} decisions replayed, {} checked against the state hash sent to clients{snapshot}{unverified}",
            self.decisions, self.checked
        )
    }
}

/// A decision being replayed (see [`Verification`]).
struct Run {
    correlation_id: Option<String>,
    first: u64,
    last: u64,
    hashed: bool,
}

impl Verification {
    fn close(&mut self, run: Run) {
        self.decisions += 1;
        if run.hashed {
            self.checked += 1;
        } else {
            self.unverified += 1;
            self.first_unverified.get_or_insert(run.first);
            self.last_unverified = Some(run.last);
        }
    }
}

/// Prints the session's events with their transitions; with `verify`, returns the first
/// divergence from the stored checksums and snapshots, or the first decision that carries no
/// state hash (see [`Verification`]), and prints on stderr what was checked.
pub async fn replay(
    log: &dyn EventLog,
    id: SessionId,
    options: &ReplayOptions,
    out: &mut impl Write,
) -> anyhow::Result<Option<Divergence>> {
    let verification = replay_verifying(log, id, options, out).await?;
    if !options.verify {
        return Ok(None);
    }
    eprintln!("{}", verification.summary());
    Ok(verification.failure(id, false))
}

/// [`replay`], returning everything `verify` found rather than its verdict.
pub async fn replay_verifying(
    log: &dyn EventLog,
    id: SessionId,
    options: &ReplayOptions,
    out: &mut impl Write,
) -> anyhow::Result<Verification> {
    let meta = log.session_meta(id).await?.ok_or_else(|| anyhow::anyhow!("no session {id} in this data directory"))?;
    let end = options.to.unwrap_or(meta.latest_seq).min(meta.latest_seq);
    let snapshot = if options.verify { log.get_snapshot(id, STATE_SCHEMA_VERSION).await? } else { None };
    let mut state = SessionState::default();
    // The state as JSON and as canonical bytes, each event re-serializing only the regions it
    // touches (`Event::regions`, as the session actor does): serializing the whole state per event
    // made a replay cost its events times the state's size.
    let mut json_state = wire::to_value(&state);
    let mut canonical = wire::CanonicalState::of(&state);
    let charts = charts();
    let mut progress = Progress::new(end, "replaying");
    let mut verification = Verification::default();
    let mut run: Option<Run> = None;
    let mut from = 1;
    while from <= end {
        let chunk_end = (from + 4095).min(end);
        let envelopes = log.read(id, from, Some(chunk_end)).await?;
        for e in &envelopes {
            let event = decode(e)?;
            state = session::evolve(state, &event);
            let touched = event.regions();
            let before_states = chart_states(&charts, &json_state);
            let before = options.patch.then(|| json_state.clone());
            for region in touched.iter() {
                json_state[region.key()] = wire::region_value(&state, region);
            }
            let after = &json_state;
            let moved = transitions(&before_states, &chart_states(&charts, after));
            let patch = before.map(|before| json_patch::diff(&before, after));
            if options.json {
                let mut line = json!({ "seq": e.seq, "timeMs": e.time_ms, "type": e.event_type, "correlationId": e.correlation_id, "payload": e.payload, "transitions": moved });
                if let Some(p) = &patch {
                    line["patch"] = serde_json::to_value(p)?;
                }
                // serde_json escapes C0 controls only; DEL, C1 and format characters are escaped too.
                writeln!(out, "{}", terminal_safe(&line.to_string()))?;
            } else {
                let moved = if moved.is_empty() { String::new() } else { format!("  [{}]", moved.join(", ")) };
                let kind = terminal_safe(&e.event_type);
                writeln!(out, "{:>6}  {}  {:<26} {}{}", e.seq, rfc3339(e.time_ms), kind, summary(&e.payload), terminal_safe(&moved))?;
                if let Some(p) = &patch {
                    writeln!(out, "        patch {}", terminal_safe(&serde_json::to_string(p)?))?;
                }
            }
            if options.verify {
                match &mut run {
                    Some(r) if r.correlation_id == e.correlation_id => {}
                    _ => {
                        if let Some(done) = run.take() {
                            verification.close(done);
                        }
                        run = Some(Run { correlation_id: e.correlation_id.clone(), first: e.seq, last: e.seq, hashed: false });
                    }
                }
                if let Some(r) = &mut run {
                    r.last = e.seq;
                    r.hashed = e.checksum.is_some();
                }
                canonical.update(&state, touched);
                if verification.mismatch.is_none() {
                    // Events written before decision 0311 carry protocol 1's whole-state hash.
                    if let Some(sum) = &e.checksum
                        && *sum != canonical.hash()
                        && *sum != canonical.legacy_hash()
                    {
                        // The stored hash is the log's (or an edited export's): spelled out, so it
                        // cannot print a line of its own after `verify FAILED`.
                        let (hash, sum) = (canonical.hash(), terminal_safe(sum));
                        verification.mismatch =
                            Some(Divergence { seq: e.seq, reason: format!("the state hash is {hash}, but {sum} was sent to clients") });
                    }
                    if let Some(s) = snapshot.as_ref().filter(|s| s.seq == e.seq) {
                        verification.snapshot = Some(s.seq);
                        if s.state.to_value() != *after {
                            verification.mismatch =
                                Some(Divergence { seq: e.seq, reason: "the fold differs from the stored snapshot".into() });
                        }
                    }
                }
            }
            progress.tick(e.seq);
        }
        if envelopes.is_empty() {
            break;
        }
        from = chunk_end + 1;
    }
    if let Some(last) = run {
        // A decision that `--to` cut is not over: no hash was sent at its last event replayed.
        let cut = end < meta.latest_seq
            && log.read(id, end + 1, Some(end + 1)).await?.first().is_some_and(|next| next.correlation_id == last.correlation_id);
        if !cut {
            verification.close(last);
        }
    }
    Ok(verification)
}

/// The first line of an export.
#[derive(Debug, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportHeader {
    pub format: String,
    pub version: u32,
    pub session: String,
    pub project: String,
    pub created_ms: u64,
    pub events: u64,
    pub emails_masked: bool,
    /// Whether signatures were replaced with [`REDACTED`] (absent in exports made before: false).
    #[serde(default)]
    pub signatures_redacted: bool,
}

pub const EXPORT_FORMAT: &str = "vestibule-session-log";

/// What `export` leaves out.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExportOptions {
    /// Mask the local part of every email address (`--mask-emails`).
    pub mask_emails: bool,
    /// Keep signatures (`--keep-signatures`); by default they are replaced with [`REDACTED`].
    pub keep_signatures: bool,
}

/// Writes the session as JSONL: a header, then one envelope per line. Never the resume token's
/// hash (it is not an event) and no key material (events hold none). Signatures are redacted
/// unless `options.keep_signatures`: a sign-in's signed message stays a valid proof until it
/// expires, and an export is attached to bug reports.
pub async fn export(log: &dyn EventLog, id: SessionId, options: ExportOptions, out: &mut impl Write) -> anyhow::Result<u64> {
    let meta = log.session_meta(id).await?.ok_or_else(|| anyhow::anyhow!("no session {id} in this data directory"))?;
    let project = if options.mask_emails { mask_emails_in(&meta.project).into_owned() } else { meta.project.clone() };
    let header = ExportHeader {
        format: EXPORT_FORMAT.into(),
        version: 1,
        session: id.to_string(),
        project,
        created_ms: meta.created_ms,
        events: meta.latest_seq,
        emails_masked: options.mask_emails,
        signatures_redacted: !options.keep_signatures,
    };
    writeln!(out, "{}", serde_json::to_string(&header)?)?;
    let mut progress = Progress::new(meta.latest_seq, "exporting");
    let mut redactor = Redactor::default();
    let mut from = 1;
    let mut n = 0;
    let mut changed_any = false;
    while from <= meta.latest_seq {
        let envelopes = log.read(id, from, Some(from + 4095)).await?;
        if envelopes.is_empty() {
            break;
        }
        for mut e in envelopes {
            // Once a payload is masked or redacted, the states from there on no longer hash to what
            // clients were sent, so their checksums are dropped (the earlier ones still verify).
            if options.mask_emails && mask_emails(&mut e.payload) {
                changed_any = true;
            }
            if !options.keep_signatures && redactor.redact(&e.event_type, &mut e.payload) {
                changed_any = true;
            }
            if changed_any {
                e.checksum = None;
            }
            let line = json!({ "seq": e.seq, "timeMs": e.time_ms, "type": e.event_type, "schemaVersion": e.schema_version, "correlationId": e.correlation_id, "checksum": e.checksum, "payload": e.payload });
            writeln!(out, "{line}")?;
            n += 1;
            from = e.seq + 1;
            progress.tick(e.seq);
        }
    }
    Ok(n)
}

/// Reads an export into the log under its session id (or a new one with `new_id`). Atomic per
/// 1000 events, each append conditional on the expected seq; a corrupt line is named. A file whose
/// events need more log bytes than a session may write (`limits.session_log_bytes`'s default, with
/// the slack of [`import_limit`]) is refused before anything is written.
pub async fn import(log: &dyn EventLog, file: &PathBuf, new_id: bool) -> anyhow::Result<(SessionId, u64)> {
    import_within(log, file, new_id, crate::config::Limits::default().session_log_bytes).await
}

/// The most log bytes an imported session's events may take, for a budget of `budget` per session
/// (decision 0107): the budget, and an eighth of it more. A live session stops taking commands once
/// its count reaches the budget, but its last command's events, and the runtime's own (deadlines,
/// effects' outcomes) after that, may take it past; its answers, which are counted too, are not
/// exported. So an export of a session a gateway filled still imports; a file of a million events
/// (finding 6 of the 2026 store review) does not.
pub fn import_limit(budget: u64) -> u64 {
    budget.saturating_add(budget / 8)
}

/// The largest event record the store takes (`StoreConfig::max_event_bytes`'s default; a gateway
/// cannot be configured otherwise): an event over it would fail its append, after the session was
/// created.
fn max_event_bytes() -> usize {
    StoreConfig::default().max_event_bytes
}

/// The longest line an export may have: the largest event record, and room for the line's own
/// keys and the JSON escapes of its labels (up to 6 bytes each for 3 labels of
/// `layout::MAX_LABEL_BYTES`). One line of 1.6 GB was read whole before.
fn max_line_bytes() -> u64 {
    (max_event_bytes() + 6 * 3 * vestibule_store::layout::MAX_LABEL_BYTES + 4096) as u64
}

/// [`import`] with the budget of log bytes per session given (`limits.session_log_bytes`). The file
/// is read twice, one line at a time: first to check every line (each event as the store would
/// check its append: labels and size; as replay would read it: its schema version, its payload),
/// and count the events' bytes (refusing the file as soon as they pass [`import_limit`]), then,
/// only if all of it is good, the session is created and the events appended, 1000 at a time.
/// Memory stays at about one batch, whatever the file's size. A failed import leaves no session
/// behind (one left empty blocked importing the fixed file: "already exists").
pub async fn import_within(log: &dyn EventLog, file: &Path, new_id: bool, budget: u64) -> anyhow::Result<(SessionId, u64)> {
    let limit = import_limit(budget);
    let mut lines = ExportLines::open(file, max_line_bytes())?;
    let header = lines.header()?;
    let id = if new_id { SessionId::random() } else { parse_session(&header.session)? };
    if log.session_meta(id).await?.is_some() {
        anyhow::bail!("session {id} already exists in this data directory (use --new-id to import a copy)");
    }
    let shown = file.display().to_string();
    let shown = terminal_safe(&shown);
    // Validate the whole file, and count its bytes, before writing anything.
    let (mut total, mut bytes) = (0u64, 0u64);
    while let Some(event) = lines.next_event(total)? {
        total += 1;
        bytes += event.log_bytes();
        if bytes > limit {
            anyhow::bail!(
                "{shown}: refused: its events need more than {bytes} bytes of event log (at seq {total}), more than a session may \
                 write: limits.session_log_bytes is {budget} bytes, and an import may take up to {limit} (docs/decisions/0107); \
                 nothing was imported"
            );
        }
    }
    if header.events != total {
        anyhow::bail!(
            "{shown}: its header says {} events, but it holds {total} (cut short, or edited); nothing was imported",
            header.events
        );
    }
    log.create_session(id, NewSession { project: header.project.clone(), created_ms: header.created_ms, resume_token_hash: None }).await?;
    let mut progress = Progress::new(total, "importing");
    let mut lines = ExportLines::open(file, max_line_bytes())?;
    lines.header()?;
    let (mut seq, mut appended_bytes) = (0u64, 0u64);
    let mut batch = Vec::with_capacity(1000);
    loop {
        let event = lines.next_event(seq + batch.len() as u64)?;
        if let Some(event) = event {
            appended_bytes += event.log_bytes();
            batch.push(event);
            if batch.len() < 1000 {
                continue;
            }
        }
        if batch.is_empty() {
            break;
        }
        if seq + batch.len() as u64 > total || appended_bytes > limit {
            anyhow::bail!("{shown} changed during the import; session {id} holds its first {seq} events");
        }
        let n = batch.len() as u64;
        match log.append(id, seq, std::mem::take(&mut batch)).await {
            Ok(_) => {}
            Err(StoreError::Conflict { actual, .. }) => anyhow::bail!("session {id} changed during the import (seq {actual})"),
            Err(e) => return Err(e.into()),
        }
        seq += n;
        progress.tick(seq);
    }
    if seq != total {
        anyhow::bail!("{shown} changed during the import; session {id} holds its first {seq} events");
    }
    log.flush().await?;
    Ok((id, total))
}

/// The lines of an export file, read one at a time, none longer than `max_line` bytes.
struct ExportLines {
    /// The file's name as a terminal shows it.
    file: String,
    reader: std::io::BufReader<std::fs::File>,
    line: usize,
    max_line: u64,
    buf: Vec<u8>,
}

impl ExportLines {
    fn open(file: &Path, max_line: u64) -> anyhow::Result<Self> {
        let shown = terminal_safe(&file.display().to_string()).into_owned();
        let opened = std::fs::File::open(file).map_err(|e| anyhow::anyhow!("cannot open {shown}: {e}"))?;
        // The file is read twice (checked, then appended): a pipe or a device would give its data
        // to the first reading only, and the session be left empty.
        if !opened.metadata().map_err(|e| anyhow::anyhow!("cannot read {shown}: {e}"))?.is_file() {
            anyhow::bail!(
                "{shown} is not a regular file: an import reads its file twice (checked, then appended), which a pipe or a device \
                 cannot give; save the export to a file first"
            );
        }
        Ok(Self { file: shown, reader: std::io::BufReader::new(opened), line: 0, max_line, buf: Vec::new() })
    }

    /// The next line, without its end; `None` at the end of the file.
    fn next_line(&mut self) -> anyhow::Result<Option<String>> {
        self.buf.clear();
        let read = std::io::Read::take(&mut self.reader, self.max_line + 1).read_until(b'\n', &mut self.buf)?;
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        } else if read as u64 > self.max_line {
            anyhow::bail!(
                "{} line {}: longer than {} bytes, more than one event of the log may take (the store's largest event, {} \
                 bytes, and its labels); nothing was imported",
                self.file,
                self.line,
                self.max_line,
                max_event_bytes()
            );
        }
        let text = std::str::from_utf8(&self.buf).map_err(|e| anyhow::anyhow!("{} line {}: not UTF-8: {e}", self.file, self.line))?;
        Ok(Some(text.to_string()))
    }

    fn header(&mut self) -> anyhow::Result<ExportHeader> {
        let file = self.file.clone();
        let first = self.next_line()?.ok_or_else(|| anyhow::anyhow!("{file} is empty"))?;
        let header: ExportHeader = serde_json::from_str(&first)
            .map_err(|e| anyhow::anyhow!("{file} line 1: not an export header: {}", terminal_safe(&e.to_string())))?;
        if header.format != EXPORT_FORMAT || header.version != 1 {
            anyhow::bail!(
                "{file} line 1: format {} version {} is not {EXPORT_FORMAT:?} version 1",
                terminal_safe(&format!("{:?}", header.format)),
                header.version
            );
        }
        // As the store checks a session's metadata (`layout::encode_meta`), before anything is written.
        if header.project.len() > vestibule_store::layout::MAX_LABEL_BYTES {
            anyhow::bail!(
                "{file} line 1: the project is {} bytes long, longer than the {} the log takes; nothing was imported",
                header.project.len(),
                vestibule_store::layout::MAX_LABEL_BYTES
            );
        }
        Ok(header)
    }

    /// The next event, checked: its seq follows `previous`, its time and schema version are ones
    /// the log records and this build reads, the store would take it (labels, size), and its
    /// payload, upcast as replay reads it, decodes into its type with no key the type does not
    /// have. `None` at the end.
    fn next_event(&mut self, previous: u64) -> anyhow::Result<Option<NewEvent>> {
        loop {
            let file = self.file.clone();
            let Some(line) = self.next_line()? else { return Ok(None) };
            if line.trim().is_empty() {
                continue;
            }
            let i = self.line;
            let v: Value =
                serde_json::from_str(&line).map_err(|e| anyhow::anyhow!("{file} line {i}: not JSON: {}", terminal_safe(&e.to_string())))?;
            let seq = v["seq"].as_u64().ok_or_else(|| anyhow::anyhow!("{file} line {i}: no seq"))?;
            if seq != previous + 1 {
                anyhow::bail!("{file} line {i}: seq {seq} does not follow {previous}");
            }
            let shown = |v: &Value| terminal_safe(&v.to_string()).into_owned();
            let time_ms = v["timeMs"].as_u64().ok_or_else(|| {
                anyhow::anyhow!(
                    "{file} line {i}: timeMs {} is not a time the log records (Unix milliseconds, 0 or more)",
                    shown(&v["timeMs"])
                )
            })?;
            let event_type = v["type"].as_str().ok_or_else(|| anyhow::anyhow!("{file} line {i}: no type"))?.to_string();
            let kind = terminal_safe(&event_type).into_owned();
            if !Event::type_names().contains(&event_type.as_str()) {
                anyhow::bail!("{file} line {i}: {kind} is not an event type of this build");
            }
            let current = Event::schema_version(&event_type);
            let schema_version = match &v["schemaVersion"] {
                Value::Null => 1,
                version => version.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|n| (1..=current).contains(n)).ok_or_else(|| {
                    anyhow::anyhow!(
                        "{file} line {i}: schemaVersion {} of {kind} is not one this build reads (1 to {current}); nothing was imported",
                        shown(version)
                    )
                })?,
            };
            let event = NewEvent {
                time_ms,
                event_type: event_type.clone(),
                schema_version,
                correlation_id: v["correlationId"].as_str().map(str::to_string),
                checksum: v["checksum"].as_str().map(str::to_string),
                payload: v["payload"].clone().into(),
            };
            // What the store checks of an append: refused here, before the session is created.
            let record = vestibule_store::layout::encode_event(&event).map_err(|reason| anyhow::anyhow!("{file} line {i}: {reason}"))?;
            if record.len() > max_event_bytes() {
                anyhow::bail!(
                    "{file} line {i}: the event takes {} bytes of log, more than the {} one event may; nothing was imported",
                    record.len(),
                    max_event_bytes()
                );
            }
            let upcast = session::upcast::SessionUpcaster
                .upcast(&event_type, schema_version, v["payload"].clone())
                .map_err(|e: String| anyhow::anyhow!("{file} line {i}: {}", terminal_safe(&e)))?;
            let decoded = Event::from_parts(&event_type, upcast.1.clone())
                .map_err(|e| anyhow::anyhow!("{file} line {i}: {kind} does not decode: {}", terminal_safe(&e.to_string())))?;
            // serde ignores keys a type does not have; an edit could add one that replay shows but
            // nothing folds (so `--verify` cannot see it).
            if let Some(key) = extra_key(&upcast.1, &decoded.payload(), String::new()) {
                anyhow::bail!("{file} line {i}: {kind} has no {}", terminal_safe(&key));
            }
            return Ok(Some(event));
        }
    }
}

/// The first key of `given` (a payload as read) that `canonical` (the same payload decoded and
/// written again) lacks, as a JSON pointer: a key the event's type does not have. A key given as
/// `null` that the type leaves out when empty is not one.
fn extra_key(given: &Value, canonical: &Value, at: String) -> Option<String> {
    match (given, canonical) {
        (Value::Object(g), Value::Object(c)) => g.iter().find_map(|(k, v)| {
            let here = format!("{at}/{k}");
            match c.get(k) {
                Some(cv) => extra_key(v, cv, here),
                None if v.is_null() => None,
                None => Some(here),
            }
        }),
        (Value::Array(g), Value::Array(c)) => g.iter().zip(c).enumerate().find_map(|(n, (g, c))| extra_key(g, c, format!("{at}/{n}"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_masked_anywhere_in_a_payload() {
        let mut v = json!({ "email": "ada@example.com", "nested": ["write to bob@mail.example.org now", 3], "at": "@handle" });
        assert!(mask_emails(&mut v));
        assert_eq!(v, json!({ "email": "***@example.com", "nested": ["write to ***@mail.example.org now", 3], "at": "@handle" }));
    }

    /// `--verify` checks each decision's recorded state hash: today's two-level hash, or protocol
    /// 1's whole-state hash in logs written before decision 0311; any other value diverges.
    #[tokio::test]
    async fn verify_accepts_the_state_hash_of_either_protocol_and_nothing_else() {
        async fn first_divergence(third_checksum: fn(&Value) -> String) -> Option<u64> {
            let dir = tempfile::tempdir().unwrap();
            let log = vestibule_store::SegmentEventLog::open(StoreConfig::at(dir.path())).unwrap();
            let id = SessionId::random();
            log.create_session(id, NewSession { project: "p".into(), created_ms: 1, resume_token_hash: None }).await.unwrap();
            let mut state = SessionState::default();
            let mut events = Vec::new();
            for (i, event) in [Event::ModalOpened {}, Event::ModalClosed {}, Event::ModalOpened {}].into_iter().enumerate() {
                state = session::evolve(state, &event);
                let value = wire::to_value(&state);
                let checksum = match i {
                    0 => wire::state_hash(&value),
                    1 => wire::legacy_state_hash(&value),
                    _ => third_checksum(&value),
                };
                let event_type = event.type_name();
                events.push(NewEvent {
                    time_ms: 1,
                    event_type: event_type.into(),
                    schema_version: Event::schema_version(event_type),
                    correlation_id: Some(format!("c{i}")),
                    checksum: Some(checksum),
                    payload: event.payload_json(),
                });
            }
            log.append(id, 0, events).await.unwrap();
            let options = ReplayOptions { to: None, json: true, verify: true, patch: false };
            replay(&log, id, &options, &mut Vec::new()).await.unwrap().map(|d| d.seq)
        }
        assert_eq!(first_divergence(wire::state_hash).await, None);
        assert_eq!(first_divergence(wire::legacy_state_hash).await, None);
        assert_eq!(first_divergence(|_| "0123456789abcdef".into()).await, Some(3));
        assert_eq!(first_divergence(|_| wire::state_hash(&json!({}))).await, Some(3), "the hash of another state");
    }

    /// A decision's hash is on its last event: one whose last event has none is unverified, but
    /// `--to` stopping inside a decision is not.
    #[tokio::test]
    async fn a_decision_without_its_state_hash_is_unverified_unless_to_cuts_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = vestibule_store::SegmentEventLog::open(StoreConfig::at(dir.path())).unwrap();
        let id = SessionId::random();
        log.create_session(id, NewSession { project: "p".into(), created_ms: 1, resume_token_hash: None }).await.unwrap();
        let mut state = SessionState::default();
        let mut events = Vec::new();
        // c0: two events, the hash on the second; c1: one event without its hash.
        for (i, (event, correlation, hashed)) in
            [(Event::ModalOpened {}, "c0", false), (Event::ModalClosed {}, "c0", true), (Event::ModalOpened {}, "c1", false)]
                .into_iter()
                .enumerate()
        {
            state = session::evolve(state, &event);
            let event_type = event.type_name();
            events.push(NewEvent {
                time_ms: i as u64,
                event_type: event_type.into(),
                schema_version: Event::schema_version(event_type),
                correlation_id: Some(correlation.into()),
                checksum: hashed.then(|| wire::state_hash(&wire::to_value(&state))),
                payload: event.payload_json(),
            });
        }
        log.append(id, 0, events).await.unwrap();
        let run = |to| {
            let log = &log;
            async move {
                let options = ReplayOptions { to, json: true, verify: true, patch: false };
                replay_verifying(log, id, &options, &mut Vec::new()).await.unwrap()
            }
        };
        let all = run(None).await;
        assert_eq!((all.decisions, all.checked, all.unverified, all.first_unverified), (2, 1, 1, Some(3)));
        let failure = all.failure(id, false).unwrap();
        assert_eq!(failure.seq, 3);
        assert!(failure.reason.starts_with(&format!("session {id}: unverified from seq 3: 1 of 2 decisions")), "{}", failure.reason);
        assert!(all.failure(id, true).is_none(), "allowed, nothing else fails");
        let cut = run(Some(1)).await;
        assert_eq!((cut.decisions, cut.unverified), (0, 0), "--to 1 stops inside c0");
        assert!(cut.failure(id, false).is_none());
        let first = run(Some(2)).await;
        assert_eq!((first.decisions, first.checked), (1, 1));
        assert!(first.failure(id, false).is_none());
    }

    /// Replay re-serializes only the regions each event touches: given events of several regions,
    /// each its own decision with the state hash the gateway would write, when replayed with
    /// `--patch --verify`, then every hash checks and the patches rebuild the whole folded state.
    #[tokio::test]
    async fn the_regions_replay_keeps_are_the_whole_state_at_every_event() {
        let dir = tempfile::tempdir().unwrap();
        let log = vestibule_store::SegmentEventLog::open(StoreConfig::at(dir.path())).unwrap();
        let id = SessionId::random();
        log.create_session(id, NewSession { project: "p".into(), created_ms: 1, resume_token_hash: None }).await.unwrap();
        let toast = json!({ "id": "t1", "message": "hi", "variant": "success", "autoCloseMs": null, "atMs": 1 });
        let events = [
            Event::ModalOpened {},
            Event::from_parts("ToastQueued", toast).unwrap(),
            Event::from_parts("ToastShown", json!({ "id": "t1", "deadlineMs": 9 })).unwrap(),
            Event::ModalClosed {},
        ];
        let mut state = SessionState::default();
        let mut new = Vec::new();
        for (i, event) in events.iter().enumerate() {
            state = session::evolve(state, event);
            let event_type = event.type_name();
            new.push(NewEvent {
                time_ms: 1,
                event_type: event_type.into(),
                schema_version: Event::schema_version(event_type),
                correlation_id: Some(format!("c{i}")),
                checksum: Some(wire::state_hash(&wire::to_value(&state))),
                payload: event.payload_json(),
            });
        }
        log.append(id, 0, new).await.unwrap();
        let options = ReplayOptions { to: None, json: true, verify: true, patch: true };
        let mut out = Vec::new();
        let verification = replay_verifying(&log, id, &options, &mut out).await.unwrap();
        assert_eq!((verification.checked, verification.failure(id, false).map(|d| d.seq)), (4, None));
        let mut rebuilt = wire::to_value(&SessionState::default());
        for line in String::from_utf8(out).unwrap().lines() {
            let line: Value = serde_json::from_str(line).unwrap();
            json_patch::patch(&mut rebuilt, &serde_json::from_value::<json_patch::Patch>(line["patch"].clone()).unwrap()).unwrap();
        }
        assert_eq!(rebuilt, wire::to_value(&state));
    }

    #[test]
    fn times_before_1970_are_refused() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(parse_time("1970-01-01T00:00:00.001Z").unwrap(), 1);
        assert_eq!(parse_time("12").unwrap(), 12);
        for before in ["1969-12-31T23:59:59.999Z", "1900-01-01T00:00:00Z", "0000-01-01T00:00:00Z"] {
            assert!(parse_time(before).unwrap_err().to_string().contains("before 1970-01-01T00:00:00Z"), "{before}");
        }
        assert!(parse_time("-5").is_err());
    }

    #[test]
    fn summaries_are_one_short_line() {
        assert_eq!(summary(&json!({ "id": "t1", "message": "hello\nworld" })), "id=t1 message=hello world");
        assert!(summary(&json!({ "message": "x".repeat(200) })).chars().count() <= 72);
    }
}
