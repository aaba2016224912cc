//! OTLP export as users run it: the real `flow dev` binary with `OTEL_EXPORTER_OTLP_ENDPOINT`
//! pointing at an OTLP/HTTP receiver in this test (an HTTP server decoding the protobuf export
//! requests), so the exporter, its HTTP client and TLS set-up are the shipped ones. A collector
//! that is down costs one warning, not the process or the operation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use serde_json::Value;

use crate::dev::{FlowDev, free_port, http, http_with};
use crate::support::ops::temporal_address;

/// One received span, ids in hex as W3C writes them.
#[derive(Debug, Clone)]
struct Received {
    trace: String,
    id: String,
    parent: String,
    name: String,
    service: String,
}

/// The receiver's store, filled by the export requests it decodes.
type Store = Arc<Mutex<Vec<Received>>>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode(body: &[u8]) -> Vec<Received> {
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP trace export");
    let mut spans = Vec::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|a| a.key == "service.name")
            .and_then(|a| a.value.as_ref())
            .map(|v| format!("{:?}", v.value))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                spans.push(Received {
                    trace: hex(&span.trace_id),
                    id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    name: span.name,
                    service: service.clone(),
                });
            }
        }
    }
    spans
}

/// An OTLP/HTTP receiver on its own thread and runtime: `POST /v1/traces` only.
fn receiver() -> (u16, Store) {
    let store = Store::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let kept = store.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let app = axum::Router::new().route(
                "/v1/traces",
                axum::routing::post(move |body: axum::body::Bytes| {
                    let kept = kept.clone();
                    async move {
                        kept.lock().unwrap().extend(decode(&body));
                        (
                            [("content-type", "application/x-protobuf")],
                            ExportTraceServiceResponse::default().encode_to_vec(),
                        )
                    }
                }),
            );
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    (port, store)
}

fn start_dev(otlp_endpoint: String) -> (FlowDev, u16) {
    let port = free_port();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dev = FlowDev::start(
        &path,
        &[
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            (
                "FLOW_TEMPORAL_TASK_QUEUE",
                format!("flow-otlp-{}", uuid::Uuid::new_v4()),
            ),
            ("FLOW_SIM_LATENCY_MS", "5".into()),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_endpoint),
            // Batches leave every 100 ms instead of every 5 s.
            ("OTEL_BSP_SCHEDULE_DELAY", "100".into()),
        ],
    );
    (dev, port)
}

fn wait_ready(dev: &mut FlowDev, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !matches!(http(port, "GET", "/readyz", ""), Ok((200, _))) {
        let exited = dev.child.try_wait().unwrap();
        assert!(
            exited.is_none() && Instant::now() < deadline,
            "flow dev not ready ({exited:?}):\n{}",
            dev.output()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Creates the example rack and powers it on (under `traceparent`); the finished task.
fn power_on(dev: &FlowDev, port: u16, traceparent: &str) -> Value {
    let rack = include_str!("../../../examples/rack-g10.json");
    let (status, created) = http(port, "POST", "/v1/expected-racks", rack).unwrap();
    assert_eq!(status, 201, "{created}\n{}", dev.output());
    let body = r#"{"target_spec":{"racks":[{"name":"g10"}]}}"#;
    let headers = [("traceparent", traceparent)];
    let (status, submitted) =
        http_with(port, "POST", "/v1/operations/power-on", body, &headers).unwrap();
    assert_eq!(status, 202, "{submitted}");
    let task = submitted["task_ids"][0].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, doc) = http(port, "GET", &format!("/v1/tasks/{task}"), "").unwrap();
        if ["succeeded", "failed", "cancelled"].contains(&doc["status"].as_str().unwrap_or("")) {
            return doc;
        }
        assert!(Instant::now() < deadline, "task still {}", doc["status"]);
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn new_trace() -> (String, String) {
    let trace = format!("{:032x}", uuid::Uuid::new_v4().as_u128());
    let caller = format!("{:016x}", uuid::Uuid::new_v4().as_u128() as u64);
    (trace, caller)
}

#[test]
fn flow_dev_exports_one_trace_from_the_request_to_the_device_calls_over_otlp_http() {
    let (otlp_port, store) = receiver();
    let (mut dev, port) = start_dev(format!("http://127.0.0.1:{otlp_port}"));
    wait_ready(&mut dev, port);
    let (trace, caller) = new_trace();
    let task = power_on(&dev, port, &format!("00-{trace}-{caller}-01"));
    assert_eq!(task["status"], "succeeded", "{task:#}");

    // The workflow's span ends when its run does, just after the task's status is written.
    let deadline = Instant::now() + Duration::from_secs(30);
    let spans: Vec<Received> = loop {
        let spans: Vec<Received> = store
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.trace == trace)
            .cloned()
            .collect();
        if spans.iter().any(|s| s.name == "RunWorkflow:RackOperation") {
            break spans;
        }
        assert!(
            Instant::now() < deadline,
            "no workflow span received: {:?}\n{}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>(),
            dev.output()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let names: HashMap<&str, &str> = spans
        .iter()
        .map(|s| (s.id.as_str(), s.name.as_str()))
        .collect();
    let parent = |s: &Received| names.get(s.parent.as_str()).copied().unwrap_or("?");
    let request = spans
        .iter()
        .find(|s| s.name == "request")
        .expect("a request span");
    assert_eq!(
        request.parent, caller,
        "the request continues the caller's trace"
    );
    assert!(request.service.contains("flow"), "{}", request.service);
    assert!(spans.iter().any(|s| s.name.starts_with("RunActivity:")));
    let calls: Vec<&Received> = spans.iter().filter(|s| s.name == "device_call").collect();
    assert!(
        calls.len() >= 3,
        "a device call per tray at least: {spans:#?}"
    );
    for call in calls {
        assert!(parent(call).starts_with("RunActivity:"), "{}", parent(call));
    }
    let status = dev.terminate().expect("flow dev stops on SIGTERM");
    assert!(status.success(), "{status}:\n{}", dev.output());
}

#[test]
fn a_collector_that_is_down_costs_flow_dev_one_warning_and_no_operation() {
    let started = Instant::now();
    // Nothing listens there: every export fails.
    let (mut dev, port) = start_dev(format!("http://127.0.0.1:{}", free_port()));
    wait_ready(&mut dev, port);
    let (trace, caller) = new_trace();
    let task = power_on(&dev, port, &format!("00-{trace}-{caller}-01"));
    assert_eq!(task["status"], "succeeded", "{task:#}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dev.output().contains("exporting traces failed") {
        assert!(Instant::now() < deadline, "no warning:\n{}", dev.output());
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = dev.terminate().expect("flow dev stops on SIGTERM");
    assert!(status.success(), "{status}:\n{}", dev.output());
    // Rate-limited: batches went out every 100 ms, warnings at most once a minute.
    let warnings = dev.output().matches("exporting traces failed").count() as u64;
    assert!(
        warnings <= 1 + started.elapsed().as_secs() / 60,
        "{warnings} warnings:\n{}",
        dev.output()
    );
}
