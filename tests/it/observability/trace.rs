//! One trace from the HTTP request to the device: the request continues the caller's
//! `traceparent`, the submission starts the workflow inside it, Temporal carries it to the
//! workflow and its activities, every device call is a span below its activity, and PSM receives
//! the trace as W3C `traceparent`. Spans are captured by an in-memory exporter behind the same
//! provider settings and `tracing` layer the binary installs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use opentelemetry::trace::{SpanId, TraceId};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::ops_on_both_backends;
use crate::support::fixtures::{gb200_rack, mac};
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    a_power_on_is_one_trace_from_the_request_through_the_workflow_to_psm: |b: OpsBuilder| b.with_psm(),
);

/// The in-test collector: keeps every finished span.
#[derive(Debug, Clone, Default)]
struct Collector(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collector {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

/// The process-wide collector: the global subscriber and tracer provider can be set once.
fn exporter() -> &'static (Collector, SdkTracerProvider) {
    static EXPORTER: OnceLock<(Collector, SdkTracerProvider)> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = Collector::default();
        let provider = flow::telemetry::trace::provider_builder("flow-test")
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = flow::telemetry::trace::install(&provider);
        tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new("info"))
            .with(layer)
            .try_init()
            .expect("no other test installs a global subscriber");
        (exporter, provider)
    })
}

/// The spans of one trace, by name (several spans may share a name).
fn spans_of(trace: TraceId) -> Vec<SpanData> {
    let (exporter, provider) = exporter();
    let _ = provider.force_flush();
    exporter
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .cloned()
        .collect()
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

async fn a_power_on_is_one_trace_from_the_request_through_the_workflow_to_psm(ops: Ops) {
    exporter();
    let psm = ops.psm.as_ref().unwrap();
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    // The fixture's power shelves are its 5th and 6th components.
    for idx in [5, 6] {
        psm.add_shelf(&mac(1, idx, 0));
    }
    let trace = TraceId::from(uuid::Uuid::new_v4().as_u128());
    let caller = SpanId::from(u64::from_be_bytes(
        uuid::Uuid::new_v4().as_bytes()[..8].try_into().unwrap(),
    ));
    let traceparent = format!("00-{trace}-{caller}-01");
    let body = json!({"target_spec": {"racks": [{"name": "rack-0001"}]}});
    let r = ops
        .app
        .call(
            axum::http::Method::POST,
            "/v1/operations/power-on",
            Some(&body),
            &[("traceparent", traceparent.as_str())],
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = r.body["task_ids"][0].as_str().unwrap().to_string();
    let end = ops.wait_end(&task).await;
    assert_eq!(end["status"], "succeeded", "{end}");

    // Workflow spans end when the run ends, a moment after the task's status is recorded.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let spans = loop {
        let spans = spans_of(trace);
        if !named(&spans, "RunWorkflow:RackOperation").is_empty() {
            break spans;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no workflow span in the trace: {:?}",
            spans.iter().map(|s| s.name.to_string()).collect::<Vec<_>>()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let by_id: HashMap<SpanId, &SpanData> = spans
        .iter()
        .map(|s| (s.span_context.span_id(), s))
        .collect();
    let parent_name = |span: &SpanData| {
        by_id
            .get(&span.parent_span_id)
            .map(|p| p.name.to_string())
            .unwrap_or_else(|| format!("remote {}", span.parent_span_id))
    };
    let one = |name: &str| {
        let found = named(&spans, name);
        assert!(
            !found.is_empty(),
            "no {name} span: {:?}",
            spans.iter().map(|s| s.name.to_string()).collect::<Vec<_>>()
        );
        found[0]
    };

    let request = one("request");
    assert_eq!(
        request.parent_span_id, caller,
        "the request continues the caller's trace"
    );
    assert_eq!(parent_name(one("submit")), "request");
    assert_eq!(parent_name(one("dispatch")), "submit");
    assert_eq!(parent_name(one("StartWorkflow:RackOperation")), "dispatch");
    assert_eq!(
        parent_name(one("RunWorkflow:RackOperation")),
        "StartWorkflow:RackOperation"
    );
    let activities: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name.starts_with("RunActivity:"))
        .collect();
    assert!(!activities.is_empty());
    let calls = named(&spans, "device_call");
    assert!(calls.len() >= 4, "{} device calls", calls.len());
    for call in &calls {
        assert!(
            parent_name(call).starts_with("RunActivity:"),
            "a device call under {}",
            parent_name(call)
        );
    }
    let psm_spans = named(&spans, "psm");
    assert!(!psm_spans.is_empty());
    for span in &psm_spans {
        assert_eq!(parent_name(span), "device_call");
    }
    // PSM saw the trace in W3C form, with a PSM call span as the parent.
    let sent: Vec<String> = psm
        .traceparents()
        .into_iter()
        .filter(|t| t.contains(&trace.to_string()))
        .collect();
    assert!(
        !sent.is_empty(),
        "PSM received no traceparent of this trace: {:?}",
        psm.traceparents()
    );
    for t in &sent {
        let parent = t.split('-').nth(2).unwrap();
        assert!(
            psm_spans
                .iter()
                .any(|s| s.span_context.span_id().to_string() == parent),
            "{t} does not name a psm span"
        );
    }
}
