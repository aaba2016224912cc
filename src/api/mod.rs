//! The HTTP layer: routes, middleware, OpenAPI document and Swagger UI. Only this module knows HTTP.

pub mod access;
pub mod answer;
pub mod audit;
pub mod bmc_address;
pub mod client;
pub mod components;
pub mod doc_pass;
pub mod edge;
pub mod extract;
pub mod follow;
pub mod health_reports;
pub mod holds;
pub mod maintenance;
pub mod metrics;
pub mod nvl_domains;
pub mod openapi;
pub mod operations;
pub mod problem;
pub mod racks;
pub mod request_id;
pub mod rollouts;
pub mod rules;
pub mod schedules;
pub mod schema;
pub mod system;
pub mod tasks;
pub mod toggle;
pub mod tokens;
pub mod validation;

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, Response, StatusCode};
use axum::response::IntoResponse;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::CorsLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{OnResponse, TraceLayer};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

use crate::app::AppState;
use crate::error::Code;
use crate::telemetry::trace;
use problem::Problem;
use toggle::Toggle;

/// Every route with its OpenAPI description, before state and middleware are attached.
pub(crate) fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(racks::routes())
        .merge(components::routes())
        .merge(nvl_domains::routes())
        .merge(operations::routes())
        .merge(rules::routes())
        .merge(tasks::routes())
        .merge(validation::routes())
        .merge(schedules::routes())
        .merge(rollouts::routes())
        .merge(holds::routes())
        .merge(health_reports::routes())
        .merge(system::routes())
        .merge(tokens::routes())
        .merge(audit::routes())
        .merge(metrics::routes())
}

/// The routes and the finished document: the routes' declared security applied first, so the
/// generic pass gives its 401/403 answers examples like every other status.
fn parts(metrics_public: bool) -> (axum::Router<AppState>, doc_pass::Document) {
    let (routes, mut doc) = api_router().split_for_parts();
    openapi::secure(&mut doc, metrics_public);
    (routes, doc_pass::finish(&doc))
}

/// The OpenAPI document, exactly as `/openapi.json` serves it with the default settings.
pub fn openapi() -> doc_pass::Document {
    parts(crate::config::Config::default().metrics.public).1
}

/// The API alone: routes, Swagger UI, and the middleware stack.
pub fn router(state: AppState) -> Router {
    build(state, Router::new(), None)
}

/// The API with a second face mounted beside it (the console): its routes sit behind the same
/// guard and middleware, and `face` is how the guard answers for it.
pub fn router_with(state: AppState, beside: Router<AppState>, face: access::ConsoleFace) -> Router {
    build(state, beside, Some(face))
}

fn build(state: AppState, beside: Router<AppState>, face: Option<access::ConsoleFace>) -> Router {
    let config = state.config().clone();
    let (routes, doc) = parts(config.metrics.public);
    // The guard's table is read from the routes' declarations once, here, not on a first request.
    access::routes();
    routes
        // The console sits behind the same guard: its pages need `viewer`, its forms `operator`.
        .merge(beside)
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            access::guard,
        ))
        .merge(SwaggerUi::new("/swagger-ui").external_url_unchecked("/openapi.json", doc.0))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(stack(&config, face))
}

/// The middleware of every route, outermost first, as one layer. The router wraps each route
/// in each layer it is given, and every wrap is a boxed service that is cloned, with all it
/// wraps, on every request: applied one by one, the dozen layers below cost a lookup more
/// allocations than its answer.
fn stack(config: &crate::config::Config, face: Option<access::ConsoleFace>) -> impl Stack {
    let on = |layer: &str| {
        !config
            .server
            .bench_skip_middleware
            .iter()
            .any(|m| m == layer)
    };
    ServiceBuilder::new()
        .layer(edge::EdgeLayer {
            trusted: trusted_proxies(config),
            request_ids: on("request_id"),
        })
        .layer(Toggle(on("trace").then(trace_layer)))
        .layer(Toggle(config.server.dev_mode.then(CorsLayer::permissive)))
        // Outside the timeout and panic layers, so 408s and 500s are counted too.
        .layer(Toggle(on("metrics").then_some(edge::CountLayer)))
        // The one place a handler's panic becomes an answer (the guard audits the attempt).
        .layer(CatchPanicLayer::custom(panic_answer as PanicAnswer))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            config.server.request_timeout,
        ))
        .layer(DefaultBodyLimit::max(config.server.max_body_bytes))
        // How the guard answers for the console's pages, when one is mounted.
        .layer(Toggle(face.map(axum::Extension)))
}

/// What [`Router::layer`] takes.
trait Stack:
    tower::Layer<
        axum::routing::Route,
        Service: tower::Service<
            axum::extract::Request,
            Response: IntoResponse + 'static,
            Error: Into<std::convert::Infallible> + 'static,
            Future: Send + 'static,
        > + Clone
                     + Send
                     + Sync
                     + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<L> Stack for L where
    L: tower::Layer<
            axum::routing::Route,
            Service: tower::Service<
                axum::extract::Request,
                Response: IntoResponse + 'static,
                Error: Into<std::convert::Infallible> + 'static,
                Future: Send + 'static,
            > + Clone
                         + Send
                         + Sync
                         + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// How a request's span is made.
type MakeSpan = fn(&Request<axum::body::Body>) -> tracing::Span;
/// The classifier of `TraceLayer::new_for_http`.
type HttpClassifier =
    tower_http::classify::SharedClassifier<tower_http::classify::ServerErrorsAsFailures>;

/// The request span (method, route path, request id, client, trace id) and its response log.
fn trace_layer()
-> TraceLayer<HttpClassifier, MakeSpan, tower_http::trace::DefaultOnRequest, LogResponse> {
    TraceLayer::new_for_http()
        .make_span_with(request_span as MakeSpan)
        .on_response(LogResponse)
}

fn request_span(req: &Request<axum::body::Body>) -> tracing::Span {
    let id = req
        .headers()
        .get(request_id::X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    // Recorded as `Display` values: a disabled span formats (and allocates) nothing.
    let client = OrDash(req.extensions().get::<client::ClientAddr>().copied());
    let span = tracing::info_span!("request", method = %req.method(), path = %req.uri().path(),
        request_id = %id, client = %client, trace_id = tracing::field::Empty);
    // A caller's `traceparent` makes this request part of its trace; log lines carry the id.
    trace::continue_from(&span, req.headers());
    if let Some(trace_id) = trace::trace_id(&span) {
        span.record("trace_id", tracing::field::display(trace_id));
    }
    span
}

/// A value, or `-` when there is none.
struct OrDash<T>(Option<T>);

impl<T: std::fmt::Display> std::fmt::Display for OrDash<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}

/// `FLOW_TRUSTED_PROXIES`, checked when the configuration was loaded.
fn trusted_proxies(config: &crate::config::Config) -> client::TrustedProxies {
    let networks = crate::config::parse_networks(&config.server.trusted_proxies);
    client::TrustedProxies::new(networks.unwrap_or_default())
}

type PanicAnswer = fn(Box<dyn std::any::Any + Send>) -> axum::response::Response;

/// A handler's panic as a 500 problem, logged in the request's span (so with its request id
/// and client) with the panic's message; the answer says only "internal error".
pub fn panic_answer(panic: Box<dyn std::any::Any + Send>) -> axum::response::Response {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = %message, "a handler panicked; answered 500");
    Problem::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        Code::Internal,
        "internal error; see the server log",
    )
    .into_response()
}

pub use request_id::MAX_REQUEST_ID_LEN;

/// Logs each response in the request's span: errors at INFO, successes at DEBUG. A formatted
/// and written line per request cost the lookup path more CPU than its own query; enable
/// `FLOW_LOG=info,flow::api=debug` to see every request.
#[derive(Debug, Clone, Copy)]
struct LogResponse;

impl<B> OnResponse<B> for LogResponse {
    fn on_response(self, response: &Response<B>, latency: Duration, _span: &tracing::Span) {
        let status = response.status().as_u16();
        let latency_ms = latency.as_secs_f64() * 1000.0;
        if status >= 400 {
            tracing::info!(status, latency_ms, "finished processing request");
        } else {
            tracing::debug!(status, latency_ms, "finished processing request");
        }
    }
}

async fn not_found(uri: axum::http::Uri) -> Problem {
    Problem::new(
        StatusCode::NOT_FOUND,
        Code::NotFound,
        format!("no route for {}", uri.path()),
    )
}

async fn method_not_allowed() -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        Code::MethodNotAllowed,
        "this method is not allowed on this path",
    )
}

/// The timeout layer answers 408 with an empty body; give it the problem body every error has
/// (done by [`edge::Edge`] on the way out).
pub(crate) fn timeout_problem(response: axum::response::Response) -> axum::response::Response {
    let bare = !response
        .headers()
        .contains_key(axum::http::header::CONTENT_TYPE);
    if response.status() == StatusCode::REQUEST_TIMEOUT && bare {
        return Problem::new(
            StatusCode::REQUEST_TIMEOUT,
            Code::RequestTimeout,
            "the request took longer than this server allows",
        )
        .into_response();
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bare_timeout_becomes_a_request_timeout_problem() {
        let bare = (StatusCode::REQUEST_TIMEOUT, ()).into_response();
        let answered = timeout_problem(bare);
        assert_eq!(answered.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(
            answered.headers()[axum::http::header::CONTENT_TYPE],
            "application/problem+json"
        );
        let body = axum::body::to_bytes(answered.into_body(), usize::MAX)
            .await
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["code"], "request_timeout");
    }
}
