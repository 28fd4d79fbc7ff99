//! Opening the log says which durability mode it runs in, at info level.
//!
//! Its own test binary: tracing caches per-callsite interest process-wide, so a capture through a
//! scoped subscriber is only reliable when no other test thread logs through the same callsites.

mod common;

use std::sync::{Arc, Mutex};

use common::config;
use vestibule_store::{Durability, SledEventLog};

#[test]
fn opening_logs_the_durability_mode() {
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber =
        tracing_subscriber::fmt().with_max_level(tracing::Level::INFO).with_ansi(false).with_writer(move || writer.clone()).finish();
    let dir = tempfile::tempdir().unwrap();
    tracing::subscriber::with_default(subscriber, || {
        drop(SledEventLog::open(config(&dir.path().join("a"), Durability::Durable)).unwrap());
        drop(SledEventLog::open(config(&dir.path().join("b"), Durability::Buffered { interval_ms: 25 })).unwrap());
    });
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("INFO") && text.contains("durability=\"durable\""), "{text}");
    assert!(text.contains("durability=\"buffered\"") && text.contains("interval_ms=25"), "{text}");
}
