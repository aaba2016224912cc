//! Logs, traces and metrics. Logs are `tracing` events (text or one JSON object per line) that
//! carry the request id and the trace id of the span they happen in; traces are the same spans
//! exported over OTLP ([`trace`], [`export`]); metrics are Prometheus counters and histograms ([`metrics`]).

pub mod export;
pub mod metrics;
pub mod trace;

use std::io::IsTerminal;

use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// What to flush and stop when the process ends.
#[derive(Debug, Default)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Exports the spans still buffered; bounded by the exporter's own timeout.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!(error = %e, "flushing traces failed");
        }
    }
}

/// Installs the global `tracing` subscriber: human-readable text or one JSON object per line,
/// plus the OpenTelemetry layer. Spans always get trace ids (so logs can be matched with the
/// traces of callers); they are exported only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set. The
/// filter was validated with the configuration; an invalid one here falls back to `info`.
pub fn init(filter: &str, format: &str) -> Telemetry {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let env: std::collections::HashMap<String, String> = std::env::vars().collect();
    let mut export_error = None;
    let provider = if trace::export_requested(&env) {
        match trace::otlp_provider() {
            Ok(p) => p,
            Err(e) => {
                export_error = Some(e);
                trace::provider_builder("flow").build()
            }
        }
    } else {
        trace::provider_builder("flow").build()
    };
    let registry = tracing_subscriber::registry()
        .with(filter)
        .with(trace::install(&provider));
    // A second init (tests, embedding) keeps the first subscriber.
    let _ = if format == "json" {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_target(true),
            )
            .try_init()
    } else {
        registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_target(true)
                    // Colours only on a terminal: a log file or collector gets plain text (and
                    // each request span's fields are not wrapped in escape codes for nothing).
                    .with_ansi(std::io::stdout().is_terminal()),
            )
            .try_init()
    };
    if let Some(e) = export_error {
        tracing::warn!(error = %e, "traces are not exported");
    }
    Telemetry {
        provider: Some(provider),
    }
}
