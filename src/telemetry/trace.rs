//! OpenTelemetry traces: the `tracing` spans of a request, its submission, the Temporal
//! workflow and activities and each device call become one trace, exported over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set. The exporter
//! reads the standard `OTEL_*` variables itself (headers, timeout, compression); the service
//! name is `OTEL_SERVICE_NAME`, `flow` by default.
//!
//! Context crosses processes as W3C `traceparent`: read from incoming HTTP requests, written
//! into outgoing calls ([`inject`]), and carried through Temporal in its `_tracer-data` header
//! by the SDK's OpenTelemetry plugin ([`temporal_plugin`]).

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The variables that turn the export on; the others are read by the exporter.
pub const ENDPOINT_VARS: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// Whether these variables ask for trace export.
pub fn export_requested(env: &std::collections::HashMap<String, String>) -> bool {
    ENDPOINT_VARS
        .iter()
        .any(|k| env.get(*k).is_some_and(|v| !v.trim().is_empty()))
}

/// Checks the endpoint variables, naming the one at fault (used by the configuration check).
pub fn check_env(env: &std::collections::HashMap<String, String>) -> Result<(), String> {
    for key in ENDPOINT_VARS {
        if let Some(value) = env.get(*key).filter(|v| !v.trim().is_empty()) {
            let url = reqwest::Url::parse(value)
                .map_err(|e| format!("{key} is not a URL ({value:?}): {e}"))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(format!(
                    "{key} must be an http:// or https:// URL, not {value:?}"
                ));
            }
        }
    }
    if let Some(protocol) = env
        .get("OTEL_EXPORTER_OTLP_PROTOCOL")
        .filter(|v| !v.trim().is_empty())
        && protocol != "http/protobuf"
    {
        return Err(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL: flow exports http/protobuf only, not {protocol:?}"
        ));
    }
    Ok(())
}

/// Builds the exporter when these variables ask for export (the configuration check): what
/// `flow serve` would build at start, so a setting that cannot work fails the check.
pub fn check_exporter(env: &std::collections::HashMap<String, String>) -> Result<(), String> {
    if export_requested(env) {
        super::export::build()?;
    }
    Ok(())
}

/// A tracer provider exporting over OTLP/HTTP as the `OTEL_*` variables say, with the span ids
/// Temporal's plugin needs to replay workflows without duplicating their spans.
pub fn otlp_provider() -> Result<SdkTracerProvider, String> {
    let exporter = super::export::build()?;
    let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "flow".into());
    Ok(provider_builder(&service)
        .with_batch_exporter(exporter)
        .build())
}

/// The provider settings every Flow provider shares (tests add their own exporter).
pub fn provider_builder(service: &str) -> opentelemetry_sdk::trace::TracerProviderBuilder {
    SdkTracerProvider::builder()
        .with_id_generator(temporalio_sdk::opentelemetry::WorkflowIdGenerator::default())
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service.to_string())
                .build(),
        )
}

/// Makes `provider` the global one (Temporal's plugin uses it) with the W3C propagator, and
/// returns the `tracing` layer that turns spans into its spans.
pub fn install<S>(
    provider: &SdkTracerProvider,
) -> tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::SdkTracer>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    opentelemetry::global::set_tracer_provider(provider.clone());
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("flow"))
        // Each of these runs at every poll (enter and exit) or every span of every request: the
        // busy/idle timings, the thread and source-location attributes cost the request path
        // more than they tell.
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_location(false)
}

/// The Temporal client plugin that carries the trace through workflows and activities.
pub fn temporal_plugin() -> temporalio_sdk::SimplePlugin {
    temporalio_sdk::opentelemetry::OpenTelemetryPlugin::builder()
        .global_propagator()
        .build()
}

struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::header::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Writes the current span's W3C `traceparent` (and `tracestate`) into outgoing headers, for
/// any HTTP or gRPC client (the PSM client writes its call's span with [`inject_from`]; the
/// Redfish client sends none). Nothing is written when no trace is being recorded.
pub fn inject(headers: &mut http::HeaderMap) {
    inject_from(&tracing::Span::current(), headers);
}

/// [`inject`] for a given span.
pub fn inject_from(span: &tracing::Span, headers: &mut http::HeaderMap) {
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return;
    }
    TraceContextPropagator::new().inject_context(&context, &mut HeaderInjector(headers));
}

/// Makes the trace an incoming request's `traceparent` names the parent of `span`.
pub fn continue_from(span: &tracing::Span, headers: &http::HeaderMap) {
    if headers.contains_key("traceparent") {
        let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
        let _ = span.set_parent(parent);
    }
}

/// The trace id of `span`, when it is part of a recorded trace (for log lines).
pub fn trace_id(span: &tracing::Span) -> Option<TraceIdText> {
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context
        .is_valid()
        .then(|| TraceIdText::of(span_context.trace_id()))
}

/// A trace id as its 32 lower-case hex digits, written from a stack buffer. Recorded as a
/// `Display` value on every request span: `to_string()` and the quoted `Debug` of the string
/// cost about 2,000 instructions per request (callgrind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceIdText([u8; 32]);

impl TraceIdText {
    pub fn of(id: opentelemetry::trace::TraceId) -> Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; 32];
        for (i, byte) in id.to_bytes().iter().enumerate() {
            text[2 * i] = HEX[usize::from(byte >> 4)];
            text[2 * i + 1] = HEX[usize::from(byte & 0x0f)];
        }
        Self(text)
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII hex digits are written.
        std::str::from_utf8(&self.0).unwrap_or("-")
    }
}

impl std::fmt::Display for TraceIdText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Runs `future` with `span`'s trace as the OpenTelemetry context, so code that reads the
/// OpenTelemetry context (Temporal's client plugin) continues it.
pub async fn with_span_context<F: Future>(span: &tracing::Span, future: F) -> F::Output {
    use opentelemetry::trace::FutureExt as _;
    future.with_context(span.context()).await
}

#[cfg(test)]
mod tests {
    use super::TraceIdText;
    use opentelemetry::trace::TraceId;

    #[test]
    fn trace_id_text_is_what_opentelemetry_writes() {
        let mut x: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        for _ in 0..10_000 {
            let id = TraceId::from(x);
            assert_eq!(TraceIdText::of(id).to_string(), id.to_string());
            x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834) ^ (x >> 17);
        }
        assert_eq!(
            TraceIdText::of(TraceId::from(1)).to_string(),
            format!("{:032x}", 1)
        );
    }
}
