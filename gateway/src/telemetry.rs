//! Logging: tracing to stderr, text or JSON, filtered by `VESTIBULE_LOG` (default `info`).
//! Spans carry the session id, seq and command id; secrets (resume tokens, OTPs, keys) are never
//! recorded.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// actix-http's HTTP/1 dispatcher logs every request head it cannot parse at ERROR ("stream
/// error: request parse error"): anyone can write such lines at will (an outside review did, one per
/// malformed request), flooding the log and an operator's alerts with what is the client's fault,
/// answered 400 anyway. Off unless `VESTIBULE_LOG` names actix_http itself.
const QUIET_PEER_ERRORS: &str = "actix_http::h1::dispatcher=off";

/// The WebSocket library logs every frame it reads or writes at TRACE, whole: hellos with their
/// resume tokens, commands with visitors' email addresses (an outside review found the tokens in a
/// `VESTIBULE_LOG=trace` log). Never logged, whatever the setting: the operator's directives for
/// these targets (or any of their modules) are dropped and these put in their place. Its DEBUG
/// lines (close frames) stay.
const NEVER_FRAMES: [&str; 2] = ["tungstenite=debug", "tokio_tungstenite=debug"];

/// Whether a directive of `VESTIBULE_LOG` names a target of `NEVER_FRAMES` (or a module of one).
fn names_a_frame_logger(directive: &str) -> bool {
    ["tungstenite", "tokio_tungstenite"]
        .iter()
        .any(|target| directive.strip_prefix(target).is_some_and(|rest| rest.is_empty() || rest.starts_with(['=', ':', '['])))
}

pub fn init(format: LogFormat) {
    let builder = tracing_subscriber::fmt().with_env_filter(filter(std::env::var("VESTIBULE_LOG").ok())).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// The filter for `VESTIBULE_LOG`'s value (`info` when unset or invalid).
fn filter(setting: Option<String>) -> EnvFilter {
    let setting = setting.filter(|s| EnvFilter::try_new(s).is_ok()).unwrap_or_else(|| "info".to_owned());
    let setting = setting.split(',').filter(|directive| !names_a_frame_logger(directive.trim())).collect::<Vec<_>>().join(",");
    let quiet = !setting.contains("actix_http");
    let filter = EnvFilter::new(&setting);
    let filter = if quiet { filter.add_directive(QUIET_PEER_ERRORS.parse().expect("a valid directive")) } else { filter };
    NEVER_FRAMES.iter().fold(filter, |filter, directive| filter.add_directive(directive.parse().expect("a valid directive")))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::filter;

    /// What a subscriber with `VESTIBULE_LOG=setting` writes of one peer's parse error and one line of ours.
    fn logged(setting: Option<&str>) -> String {
        let out = Arc::new(Mutex::new(Vec::new()));
        let writer = {
            let out = out.clone();
            move || Capture(out.clone())
        };
        let subscriber = tracing_subscriber::fmt().with_env_filter(filter(setting.map(str::to_owned))).with_writer(writer).finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "actix_http::h1::dispatcher", "stream error: request parse error");
            tracing::info!(target: "vestibule_gateway::server", "listening");
            tracing::trace!(target: "tungstenite::protocol", "Received message {{\"type\":\"hello\",\"resumeToken\":\"SECRET\"}}");
            tracing::debug!(target: "tungstenite::protocol", "Received close frame");
        });
        String::from_utf8(out.lock().unwrap().clone()).unwrap()
    }

    struct Capture(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_peers_unparsable_request_writes_no_error_line_unless_asked_for() {
        for setting in [None, Some("info"), Some("debug"), Some("not a filter ===")] {
            let out = logged(setting);
            assert!(out.contains("listening"), "{setting:?}: our own lines are written: {out}");
            assert!(!out.contains("stream error"), "{setting:?}: {out}");
        }
        assert!(logged(Some("info,actix_http=error")).contains("stream error"), "whoever asks for actix_http's lines gets them");
    }

    #[test]
    fn websocket_frames_are_never_logged_whatever_the_setting() {
        for setting in [
            "trace",
            "tungstenite=trace",
            "trace,tungstenite=trace,tokio_tungstenite=trace",
            "tungstenite::protocol=trace",
            "tokio_tungstenite[x]=trace,tungstenite::protocol::frame=trace",
        ] {
            let out = logged(Some(setting));
            assert!(out.contains("Received close frame"), "{setting}: the library's debug lines are written: {out}");
            assert!(!out.contains("SECRET"), "{setting}: a frame was logged: {out}");
        }
    }
}
