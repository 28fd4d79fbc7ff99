//! Logging: tracing to stderr, text or JSON, filtered by `VESTIBULE_LOG` (default `info`).
//! Spans carry the session id, seq and command id; secrets (resume tokens, OTPs, keys) are never
//! recorded.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_env("VESTIBULE_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
