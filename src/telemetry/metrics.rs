//! Prometheus metrics: one process-wide registry, the metric families Flow exports, and the
//! small recording functions the rest of the code calls. Labels are closed sets (route
//! templates, operation and status names, manager and action names): never ids. The one
//! exception is `flow_component_in_maintenance`, whose series name the components under a
//! running task (few at a time, each gone when its task ends) so alerts on them can be
//! inhibited.
//!
//! Every series whose labels are known is created at zero with its family ([`known`]).
//!
//! The `prometheus` crate is the one the Temporal SDK already builds, so metrics add no crate.

pub mod known;

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

use crate::domain::code::OperationCode;

/// The content type of [`render`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Request and device-call latencies: from a cached lookup (ms) to a slow BMC (tens of seconds).
const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Task durations: a power-on takes seconds, a firmware rollout of a rack can take an hour.
const TASK_BUCKETS: &[f64] = &[
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0,
];
/// Lookups per shared lookup statement: powers of two up to the batch cap (128).
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

/// The name of every metric family Flow exports; each has series from the start.
pub const NAMES: &[&str] = &[
    "flow_http_requests_total",
    "flow_http_request_duration_seconds",
    "flow_tasks_total",
    "flow_task_duration_seconds",
    "flow_tasks_active",
    "flow_device_calls_total",
    "flow_device_call_duration_seconds",
    "flow_drift_components",
    "flow_schedule_fires_total",
    "flow_db_pool_connections",
    "flow_temporal_client_errors_total",
    "flow_lookup_batch_size",
    "flow_step_report_batch_size",
    "flow_auth_failures_total",
    "flow_event_streams_open",
    "flow_event_watch_queries_total",
    "flow_component_in_maintenance",
];

/// The families whose series exist only while what they count is so (a component under a
/// running task): a fresh process serves none of their series, so `/metrics` lists them only
/// once they have one.
pub const ON_DEMAND: &[&str] = &["flow_component_in_maintenance"];

/// Every metric family Flow exports.
pub struct Metrics {
    registry: Registry,
    pub http_requests: IntCounterVec,
    pub http_duration: HistogramVec,
    pub tasks: IntCounterVec,
    pub task_duration: HistogramVec,
    pub tasks_active: IntGaugeVec,
    pub device_calls: IntCounterVec,
    pub device_call_duration: HistogramVec,
    pub drift_components: IntGaugeVec,
    pub schedule_fires: IntCounterVec,
    pub db_pool: IntGaugeVec,
    pub temporal_errors: IntCounterVec,
    pub lookup_batch_size: prometheus::Histogram,
    pub step_report_batch_size: prometheus::Histogram,
    pub auth_failures: IntCounterVec,
    pub event_streams_open: prometheus::IntGauge,
    pub event_watch_queries: prometheus::IntCounter,
    pub component_in_maintenance: IntGaugeVec,
}

/// The process-wide metrics. Registration of fixed, valid names cannot fail; a failure would be
/// a programming error caught by the first test that renders them.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let metrics = Metrics::new();
    known::create(&metrics);
    metrics
});

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let metric =
        IntCounterVec::new(Opts::new(name, help), labels).unwrap_or_else(|e| panic!("{name}: {e}"));
    registry
        .register(Box::new(metric.clone()))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    metric
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let metric =
        IntGaugeVec::new(Opts::new(name, help), labels).unwrap_or_else(|e| panic!("{name}: {e}"));
    registry
        .register(Box::new(metric.clone()))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    metric
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> HistogramVec {
    let metric = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(buckets.to_vec()),
        labels,
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    registry
        .register(Box::new(metric.clone()))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    metric
}

/// How many requests one coalesced statement carried (no labels).
fn batch_histogram(registry: &Registry, name: &str, help: &str) -> prometheus::Histogram {
    let opts = HistogramOpts::new(name, help).buckets(BATCH_BUCKETS.to_vec());
    let metric = prometheus::Histogram::with_opts(opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    registry
        .register(Box::new(metric.clone()))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    metric
}

impl Metrics {
    #[allow(clippy::too_many_lines)]
    fn new() -> Self {
        let r = Registry::new();
        Self {
            http_requests: counter(
                &r,
                "flow_http_requests_total",
                "HTTP requests answered, by method, matched route template and status code",
                &["method", "route", "status"],
            ),
            http_duration: histogram(
                &r,
                "flow_http_request_duration_seconds",
                "Time to answer an HTTP request, by method and matched route template",
                &["method", "route"],
                LATENCY_BUCKETS,
            ),
            tasks: counter(
                &r,
                "flow_tasks_total",
                "Tasks that reached a terminal status, by operation and status",
                &["operation", "status"],
            ),
            task_duration: histogram(
                &r,
                "flow_task_duration_seconds",
                "Time from a task's start (or creation, if it never started) to its end",
                &["operation"],
                TASK_BUCKETS,
            ),
            tasks_active: gauge(
                &r,
                "flow_tasks_active",
                "Tasks not yet ended, by status (waiting, pending, running), read from the database",
                &["status"],
            ),
            device_calls: counter(
                &r,
                "flow_device_calls_total",
                "Calls to component managers, by manager, action and outcome",
                &["manager", "action", "outcome"],
            ),
            device_call_duration: histogram(
                &r,
                "flow_device_call_duration_seconds",
                "Duration of calls to component managers, by manager and action",
                &["manager", "action"],
                LATENCY_BUCKETS,
            ),
            drift_components: gauge(
                &r,
                "flow_drift_components",
                "Components the last drift sync found differing from the inventory, by drift kind",
                &["kind"],
            ),
            schedule_fires: counter(
                &r,
                "flow_schedule_fires_total",
                "Schedule fires, by outcome",
                &["outcome"],
            ),
            db_pool: gauge(
                &r,
                "flow_db_pool_connections",
                "Database pool connections, by state (open, idle, max)",
                &["state"],
            ),
            temporal_errors: counter(
                &r,
                "flow_temporal_client_errors_total",
                "Failed calls to Temporal, by call (start, cancel, state, ping)",
                &["call"],
            ),
            lookup_batch_size: batch_histogram(
                &r,
                "flow_lookup_batch_size",
                "Lookups by serial answered by one statement (coalesced lookups on PostgreSQL)",
            ),
            step_report_batch_size: batch_histogram(
                &r,
                "flow_step_report_batch_size",
                "Task step reports written by one statement (coalesced on PostgreSQL)",
            ),
            auth_failures: counter(
                &r,
                "flow_auth_failures_total",
                "Requests answered 401 and console sign-ins refused, by reason (missing, invalid, \
                 expired, sign_in)",
                &["reason"],
            ),
            event_streams_open: {
                let metric = prometheus::IntGauge::new(
                    "flow_event_streams_open",
                    "Task and rollout event streams open in this process (API and console)",
                )
                .unwrap_or_else(|e| panic!("flow_event_streams_open: {e}"));
                r.register(Box::new(metric.clone()))
                    .unwrap_or_else(|e| panic!("flow_event_streams_open: {e}"));
                metric
            },
            event_watch_queries: {
                let metric = prometheus::IntCounter::new(
                    "flow_event_watch_queries_total",
                    "Statements the shared change watcher ran for all open event streams together",
                )
                .unwrap_or_else(|e| panic!("flow_event_watch_queries_total: {e}"));
                r.register(Box::new(metric.clone()))
                    .unwrap_or_else(|e| panic!("flow_event_watch_queries_total: {e}"));
                metric
            },
            component_in_maintenance: gauge(
                &r,
                "flow_component_in_maintenance",
                "1 for each component a running task operates on (planned work, for alert \
                 inhibition), by rack, component name, type and serial; gone when the task ends",
                &["rack", "component", "type", "serial"],
            ),
            registry: r,
        }
    }
}

/// The text exposition of every metric.
pub fn render() -> String {
    let families = METRICS.registry.gather();
    let mut out = Vec::new();
    // Encoding into a Vec fails only on invalid metric names, which registration rejected.
    let _ = TextEncoder::new().encode(&families, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// One answered HTTP request.
pub fn http_request(method: &str, route: &str, status: &str, elapsed: Duration) {
    METRICS
        .http_requests
        .with_label_values(&[method, route, status])
        .inc();
    METRICS
        .http_duration
        .with_label_values(&[method, route])
        .observe(elapsed.as_secs_f64());
}

/// One call to a component manager; `outcome` is `ok` or the failure kind.
pub fn device_call(manager: &str, action: &str, outcome: &str, elapsed: Duration) {
    METRICS
        .device_calls
        .with_label_values(&[manager, action, outcome])
        .inc();
    METRICS
        .device_call_duration
        .with_label_values(&[manager, action])
        .observe(elapsed.as_secs_f64());
}

/// A task reached a terminal status after `elapsed`.
pub fn task_ended(operation: OperationCode, status: &str, elapsed: Option<Duration>) {
    let operation = operation.as_str();
    METRICS.tasks.with_label_values(&[operation, status]).inc();
    if let Some(elapsed) = elapsed {
        METRICS
            .task_duration
            .with_label_values(&[operation])
            .observe(elapsed.as_secs_f64());
    }
}

/// One schedule fire and how it went (`submitted`, `skipped`, `failed`, ...).
pub fn schedule_fired(outcome: &str) {
    METRICS.schedule_fires.with_label_values(&[outcome]).inc();
}

/// One statement answered `size` coalesced lookups by serial: `scripts/bench` reads the mean
/// (`_sum / _count`) to run the database-side baseline at the batch size Flow actually used.
#[allow(clippy::cast_precision_loss)]
pub fn lookup_batch(size: usize) {
    METRICS.lookup_batch_size.observe(size as f64);
}

/// Step reports one statement wrote (see `tasks::step_batch`).
pub fn step_report_batch(size: usize) {
    METRICS.step_report_batch_size.observe(size as f64);
}

/// A credential refused (`missing`, `invalid`, `expired`) or a console sign-in refused
/// (`sign_in`).
pub fn auth_failure(reason: &str) {
    METRICS.auth_failures.with_label_values(&[reason]).inc();
}

/// A failed call to Temporal.
pub fn temporal_error(call: &str) {
    METRICS.temporal_errors.with_label_values(&[call]).inc();
}

/// Sets a gauge family from a full snapshot: labels absent from it drop to 0.
pub fn set_gauges(family: &IntGaugeVec, known: &[&str], values: &[(String, i64)]) {
    for label in known {
        let value = values
            .iter()
            .find(|(l, _)| l == label)
            .map_or(0, |(_, v)| *v);
        family.with_label_values(&[*label]).set(value);
    }
    for (label, value) in values {
        if !known.contains(&label.as_str()) {
            family.with_label_values(&[label.as_str()]).set(*value);
        }
    }
}
