//! Time-travel debugging from the command line: list sessions, replay one event by event with the
//! transitions of every machine, verify a log against the states clients were sent, and move a
//! session between data directories as a JSONL file. See `docs/replay.md`.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use vestibule_actors::machines;
use vestibule_actors::session::{self, Event, STATE_SCHEMA_VERSION, SessionState, wire};
use vestibule_store::{Envelope, EventLog, NewEvent, NewSession, SessionFilter, SessionId, SessionStatus, StoreConfig, StoreError};

/// Opens a data directory for reading or importing, with a clear message when a running gateway
/// holds it.
pub fn open(data: &Path) -> anyhow::Result<Arc<dyn EventLog>> {
    if !data.exists() {
        anyhow::bail!("{} does not exist (is it the gateway's --data directory?)", data.display());
    }
    crate::store::open_at(StoreConfig::at(data.to_path_buf())).map_err(|e| {
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
    let data = match (data, config) {
        (Some(data), None) => data.to_path_buf(),
        (None, Some(file)) => {
            let config = crate::config::GatewayConfig::load(Some(file), &crate::config::Overrides::default())?;
            match config.store.backend {
                crate::config::StoreBackend::Sled | crate::config::StoreBackend::Segments => config.data.clone(),
                crate::config::StoreBackend::Jetstream => return crate::store::open(&config).await,
            }
        }
        _ => anyhow::bail!("give either --data DIR or --config FILE"),
    };
    if create {
        std::fs::create_dir_all(&data)?;
    }
    open(&data)
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

/// Accepts RFC 3339 or Unix milliseconds.
pub fn parse_time(text: &str) -> anyhow::Result<u64> {
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(ms);
    }
    let t = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|e| anyhow::anyhow!("{text:?} is neither RFC 3339 nor Unix milliseconds: {e}"))?;
    Ok((t.unix_timestamp_nanos() / 1_000_000) as u64)
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
                writeln!(out, "{line}")?;
            } else {
                writeln!(
                    out,
                    "{:<36} {:<12} {:<7} {:>6}  {:<25} {}",
                    m.session.to_string(),
                    m.project,
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
    Event::from_parts(&envelope.event_type, envelope.payload.clone())
        .map_err(|e| anyhow::anyhow!("session {} seq {}: {} does not decode: {e}", envelope.session, envelope.seq, envelope.event_type))
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
    let text = text.replace('\n', " ");
    if text.chars().count() > 72 { format!("{}…", text.chars().take(71).collect::<String>()) } else { text }
}

/// `machine: from -> to` for every region an event moved.
fn transitions(before: &Value, after: &Value) -> Vec<String> {
    let mut moved = Vec::new();
    for m in machines::ALL {
        let chart = (m.chart)();
        for ((region, from), (_, to)) in chart.states_in(before).into_iter().zip(chart.states_in(after)) {
            if from != to {
                let name = if region == m.id { m.id.to_string() } else { format!("{}/{region}", m.id) };
                moved.push(format!("{name}: {from} -> {to}"));
            }
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

/// Prints the session's events with their transitions; with `verify`, returns the first
/// divergence from the stored checksums and snapshots.
pub async fn replay(
    log: &dyn EventLog,
    id: SessionId,
    options: &ReplayOptions,
    out: &mut impl Write,
) -> anyhow::Result<Option<Divergence>> {
    let meta = log.session_meta(id).await?.ok_or_else(|| anyhow::anyhow!("no session {id} in this data directory"))?;
    let end = options.to.unwrap_or(meta.latest_seq).min(meta.latest_seq);
    let snapshot = if options.verify { log.get_snapshot(id, STATE_SCHEMA_VERSION).await? } else { None };
    let mut state = SessionState::default();
    let mut json_state = wire::to_value(&state);
    let mut progress = Progress::new(end, "replaying");
    let mut divergence = None;
    let mut from = 1;
    while from <= end {
        let chunk_end = (from + 4095).min(end);
        let envelopes = log.read(id, from, Some(chunk_end)).await?;
        for e in &envelopes {
            let event = decode(e)?;
            state = session::evolve(state, &event);
            let after = wire::to_value(&state);
            let moved = transitions(&json_state, &after);
            let patch = options.patch.then(|| json_patch::diff(&json_state, &after));
            if options.json {
                let mut line = json!({ "seq": e.seq, "timeMs": e.time_ms, "type": e.event_type, "correlationId": e.correlation_id, "payload": e.payload, "transitions": moved });
                if let Some(p) = &patch {
                    line["patch"] = serde_json::to_value(p)?;
                }
                writeln!(out, "{line}")?;
            } else {
                let moved = if moved.is_empty() { String::new() } else { format!("  [{}]", moved.join(", ")) };
                writeln!(out, "{:>6}  {}  {:<26} {}{moved}", e.seq, rfc3339(e.time_ms), e.event_type, summary(&e.payload))?;
                if let Some(p) = &patch {
                    writeln!(out, "        patch {}", serde_json::to_string(p)?)?;
                }
            }
            if options.verify && divergence.is_none() {
                // Events written before decision 0311 carry protocol 1's whole-state hash.
                if let Some(sum) = &e.checksum
                    && *sum != wire::state_hash(&after)
                    && *sum != wire::legacy_state_hash(&after)
                {
                    let hash = wire::state_hash(&after);
                    divergence =
                        Some(Divergence { seq: e.seq, reason: format!("the state hash is {hash}, but {sum} was sent to clients") });
                }
                if let Some(s) = snapshot.as_ref().filter(|s| s.seq == e.seq)
                    && s.state.to_value() != after
                {
                    divergence = Some(Divergence { seq: e.seq, reason: "the fold differs from the stored snapshot".into() });
                }
            }
            json_state = after;
            progress.tick(e.seq);
        }
        if envelopes.is_empty() {
            break;
        }
        from = chunk_end + 1;
    }
    Ok(divergence)
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
}

pub const EXPORT_FORMAT: &str = "vestibule-session-log";

/// Replaces the local part of anything shaped like an email address.
fn mask_emails(value: &mut Value) -> bool {
    match value {
        Value::String(s) => {
            let masked: Vec<String> = s
                .split(' ')
                .map(|word| match word.split_once('@') {
                    Some((local, domain)) if !local.is_empty() && domain.contains('.') && !domain.starts_with('.') => {
                        format!("***@{domain}")
                    }
                    _ => word.to_string(),
                })
                .collect();
            let masked = masked.join(" ");
            let changed = masked != *s;
            *s = masked;
            changed
        }
        Value::Array(items) => items.iter_mut().fold(false, |c, v| mask_emails(v) || c),
        Value::Object(map) => map.values_mut().fold(false, |c, v| mask_emails(v) || c),
        _ => false,
    }
}

/// Writes the session as JSONL: a header, then one envelope per line. Never the resume token's
/// hash (it is not an event) and no key material (events hold none).
pub async fn export(log: &dyn EventLog, id: SessionId, emails: bool, out: &mut impl Write) -> anyhow::Result<u64> {
    let meta = log.session_meta(id).await?.ok_or_else(|| anyhow::anyhow!("no session {id} in this data directory"))?;
    let header = ExportHeader {
        format: EXPORT_FORMAT.into(),
        version: 1,
        session: id.to_string(),
        project: meta.project.clone(),
        created_ms: meta.created_ms,
        events: meta.latest_seq,
        emails_masked: emails,
    };
    writeln!(out, "{}", serde_json::to_string(&header)?)?;
    let mut progress = Progress::new(meta.latest_seq, "exporting");
    let mut from = 1;
    let mut n = 0;
    let mut masked_any = false;
    while from <= meta.latest_seq {
        let envelopes = log.read(id, from, Some(from + 4095)).await?;
        if envelopes.is_empty() {
            break;
        }
        for mut e in envelopes {
            // Once a payload is masked, the states from there on no longer hash to what clients
            // were sent, so their checksums are dropped (the earlier ones still verify).
            if emails && mask_emails(&mut e.payload) {
                masked_any = true;
            }
            if masked_any {
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
/// 1000 events, each append conditional on the expected seq; a corrupt line is named.
pub async fn import(log: &dyn EventLog, file: &PathBuf, new_id: bool) -> anyhow::Result<(SessionId, u64)> {
    let reader = std::io::BufReader::new(std::fs::File::open(file).map_err(|e| anyhow::anyhow!("cannot open {}: {e}", file.display()))?);
    let mut lines = reader.lines().enumerate();
    let (_, first) = lines.next().ok_or_else(|| anyhow::anyhow!("{} is empty", file.display()))?;
    let header: ExportHeader =
        serde_json::from_str(&first?).map_err(|e| anyhow::anyhow!("{} line 1: not an export header: {e}", file.display()))?;
    if header.format != EXPORT_FORMAT || header.version != 1 {
        anyhow::bail!(
            "{} line 1: format {:?} version {} is not {EXPORT_FORMAT:?} version 1",
            file.display(),
            header.format,
            header.version
        );
    }
    let id = if new_id { SessionId::random() } else { parse_session(&header.session)? };
    if log.session_meta(id).await?.is_some() {
        anyhow::bail!("session {id} already exists in this data directory (use --new-id to import a copy)");
    }
    // Validate the whole file before writing anything.
    let mut events = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, line) in lines {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| anyhow::anyhow!("{} line {}: not JSON: {e}", file.display(), i + 1))?;
        let seq = v["seq"].as_u64().ok_or_else(|| anyhow::anyhow!("{} line {}: no seq", file.display(), i + 1))?;
        if seq != events.len() as u64 + 1 || !seen.insert(seq) {
            anyhow::bail!("{} line {}: seq {seq} does not follow {}", file.display(), i + 1, events.len());
        }
        let event = NewEvent {
            time_ms: v["timeMs"].as_u64().unwrap_or(0),
            event_type: v["type"].as_str().ok_or_else(|| anyhow::anyhow!("{} line {}: no type", file.display(), i + 1))?.to_string(),
            schema_version: v["schemaVersion"].as_u64().unwrap_or(1) as u32,
            correlation_id: v["correlationId"].as_str().map(str::to_string),
            checksum: v["checksum"].as_str().map(str::to_string),
            payload: v["payload"].clone().into(),
        };
        Event::from_parts(&event.event_type, v["payload"].clone())
            .map_err(|e| anyhow::anyhow!("{} line {}: {} does not decode: {e}", file.display(), i + 1, event.event_type))?;
        events.push(event);
    }
    log.create_session(id, NewSession { project: header.project.clone(), created_ms: header.created_ms, resume_token_hash: None }).await?;
    let total = events.len() as u64;
    let mut progress = Progress::new(total, "importing");
    let mut seq = 0;
    for chunk in events.chunks(1000) {
        match log.append(id, seq, chunk.to_vec()).await {
            Ok(_) => {}
            Err(StoreError::Conflict { actual, .. }) => anyhow::bail!("session {id} changed during the import (seq {actual})"),
            Err(e) => return Err(e.into()),
        }
        seq += chunk.len() as u64;
        progress.tick(seq);
    }
    log.flush().await?;
    Ok((id, total))
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

    #[test]
    fn summaries_are_one_short_line() {
        assert_eq!(summary(&json!({ "id": "t1", "message": "hello\nworld" })), "id=t1 message=hello world");
        assert!(summary(&json!({ "message": "x".repeat(200) })).chars().count() <= 72);
    }
}
