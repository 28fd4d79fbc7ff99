//! The log lines a test produces, recorded by a minimal `tracing` subscriber installed for the
//! current thread (a `#[tokio::test]` runs every task on it): each event's level and fields, the
//! message under "message". Only `tracing` itself, which the chain crate already uses.
//!
//! tracing decides once, when a log line's call site is first reached, whether it is on, from the
//! subscribers alive then (only the reaching thread's, while one is registered): a test thread
//! without a recorder reaching a call site first turns it off for the whole test binary. So every
//! test of a binary that reads the lines starts with [`Logs::capture`].

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::{DefaultGuard, Interest};
use tracing::{Event, Level, Metadata, Subscriber};

/// One recorded event.
#[derive(Debug, Clone)]
pub struct Line {
    pub level: Level,
    pub fields: BTreeMap<String, String>,
}

impl Line {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// Every field's text, for "nothing shows X" checks.
    pub fn text(&self) -> String {
        format!("{:?}", self.fields)
    }
}

/// The recorded lines; recording lasts while the guard lives.
pub struct Logs {
    lines: Arc<Mutex<Vec<Line>>>,
    _guard: DefaultGuard,
}

impl Logs {
    /// Records this thread's events from now on.
    pub fn capture() -> Self {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let guard = tracing::subscriber::set_default(Recorder { lines: lines.clone() });
        Logs { lines, _guard: guard }
    }

    pub fn lines(&self) -> Vec<Line> {
        self.lines.lock().unwrap().clone()
    }

    pub fn at(&self, level: Level) -> Vec<Line> {
        self.lines().into_iter().filter(|l| l.level == level).collect()
    }
}

struct Recorder {
    lines: Arc<Mutex<Vec<Line>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
}

impl Subscriber for Recorder {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.lines.lock().unwrap().push(Line { level: *event.metadata().level(), fields });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
