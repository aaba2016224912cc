//! `/metrics` (Prometheus text exposition); requests are counted by [`super::edge::Count`].

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::openapi::SYSTEM;
use crate::app::AppState;
use crate::telemetry::metrics::{self, METRICS};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_metrics))
}

/// Prometheus metrics
///
/// Request rates and latencies, task outcomes and durations, tasks not yet ended, device-call
/// outcomes and latencies per component manager, drift, schedule fires, the database pool and
/// Temporal client errors, in the Prometheus text format. After the first, a scrape reads no
/// database: the task and drift gauges are refreshed by one background sampler every
/// `FLOW_METRICS_SAMPLE_SECS`.
#[utoipa::path(get, path = "/metrics", tag = SYSTEM, security(("access" = ["metrics"])), responses(
    (status = 200, description = "Prometheus text exposition", body = String,
        content_type = "text/plain; version=0.0.4; charset=utf-8",
        example = "# TYPE flow_tasks_total counter\nflow_tasks_total{operation=\"power_on\",status=\"succeeded\"} 3\n"),
))]
pub async fn get_metrics(State(state): State<AppState>) -> Response {
    state.sampler().ensure_started().await;
    // The pool's own counters, not a query: read now.
    let pool = crate::db::pool_stats(state.db());
    for (label, value) in [("open", pool.open), ("idle", pool.idle), ("max", pool.max)] {
        METRICS
            .db_pool
            .with_label_values(&[label])
            .set(i64::from(value));
    }
    ([(CONTENT_TYPE, metrics::CONTENT_TYPE)], metrics::render()).into_response()
}
