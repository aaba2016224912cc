//! The OTLP/HTTP span exporter as Flow runs it: built with a TLS provider installed (the
//! exporter's HTTP client is reqwest on rustls without a built-in provider, which panics
//! without one), and wrapped so that a collector that is down or refusing costs one warning
//! a minute, never a failed request or a log line per batch.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// How often a failing export is reported.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Builds the exporter the `OTEL_*` variables describe; the configuration check calls this
/// too, so a setting that cannot work fails there rather than at start.
pub fn build() -> Result<Exporter, String> {
    // Idempotent: the first caller installs ring, later calls find it installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let inner = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| format!("OTLP exporter: {e}"))?;
    Ok(Exporter {
        inner,
        last_warning: Mutex::new(None),
    })
}

/// The OTLP exporter with its failures rate-limited into warnings.
#[derive(Debug)]
pub struct Exporter {
    inner: opentelemetry_otlp::SpanExporter,
    last_warning: Mutex<Option<Instant>>,
}

impl Exporter {
    /// Whether a failure now is reported (the first one, then one per [`WARN_EVERY`]).
    fn should_warn(&self) -> bool {
        let mut last = self
            .last_warning
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < WARN_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }
}

impl SpanExporter for Exporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        if let Err(e) = &result
            && self.should_warn()
        {
            tracing::warn!(error = %e, spans, "exporting traces failed (reported once a minute)");
        }
        // The batch is dropped either way: the processor has nothing better to do with it.
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
