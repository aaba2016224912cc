//! The HTTP layer: routes, middleware, OpenAPI document and Swagger UI. Only this module knows HTTP.

pub mod components;
pub mod extract;
pub mod nvl_domains;
pub mod openapi;
pub mod operations;
pub mod problem;
pub mod racks;
pub mod rules;
pub mod schedules;
pub mod schema;
pub mod system;
pub mod tasks;
pub mod validation;

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, Response, StatusCode};
use axum::response::IntoResponse;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::CorsLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{OnResponse, TraceLayer};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

use crate::app::AppState;
use problem::Problem;

/// Every route with its OpenAPI description, before state and middleware are attached.
fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(racks::routes())
        .merge(components::routes())
        .merge(nvl_domains::routes())
        .merge(operations::routes())
        .merge(rules::routes())
        .merge(tasks::routes())
        .merge(validation::routes())
        .merge(schedules::routes())
        .merge(system::routes())
}

/// The OpenAPI document, exactly as `/openapi.json` serves it.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api_router().split_for_parts().1
}

/// The complete HTTP application: routes, Swagger UI, and the middleware stack.
pub fn router(state: AppState) -> Router {
    let config = state.config().clone();
    let (routes, doc) = api_router().split_for_parts();
    let request_id = axum::http::HeaderName::from_static("x-request-id");
    let mut app = routes
        .merge(SwaggerUi::new("/swagger-ui").url("/openapi.json", doc))
        .merge(crate::ui::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(config.request_timeout_secs),
        ))
        .layer(CatchPanicLayer::custom(|_| {
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "internal error; see the server log",
            )
            .into_response()
        }));
    if config.dev_mode {
        app = app.layer(CorsLayer::permissive());
    }
    app.layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
            let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
            tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
        })
        .on_response(LogResponse))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
}

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
        "not_found",
        format!("no route for {}", uri.path()),
    )
}

async fn method_not_allowed() -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this method is not allowed on this path",
    )
}
