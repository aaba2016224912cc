//! Structured logging set-up.

use tracing_subscriber::EnvFilter;

/// Installs the global `tracing` subscriber: human-readable text or one JSON object per line.
pub fn init(filter: &str, format: &str) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(true);
    // A second init (tests, embedding) keeps the first subscriber.
    let _ = if format == "json" {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
}
