//! Service endpoints: version, liveness and readiness.

use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::openapi::SYSTEM;
use super::problem::{ApiResult, Problem};
use crate::app::AppState;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_version))
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

/// Build information.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"version": "0.1.0", "git_commit": "3f2c1ab", "build_time": "2026-11-30T14:00:00Z"}))]
pub struct VersionDoc {
    pub version: String,
    pub git_commit: String,
    pub build_time: String,
}

impl VersionDoc {
    pub fn current() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: option_env!("FLOW_GIT_COMMIT").unwrap_or("unknown").into(),
            build_time: option_env!("FLOW_BUILD_TIME").unwrap_or("unknown").into(),
        }
    }
}

/// Service status.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"status": "ok"}))]
pub struct StatusDoc {
    pub status: String,
}

/// Build version
///
/// The running binary's version, git commit and build time.
#[utoipa::path(get, path = "/v1/version", tag = SYSTEM, responses((status = 200, description = "Build information", body = VersionDoc)))]
pub async fn get_version() -> axum::Json<VersionDoc> {
    axum::Json(VersionDoc::current())
}

/// Liveness
///
/// `200` while the process serves requests; checks no dependency.
#[utoipa::path(get, path = "/healthz", tag = SYSTEM, responses((status = 200, description = "Alive", body = StatusDoc)))]
pub async fn healthz() -> axum::Json<StatusDoc> {
    axum::Json(StatusDoc {
        status: "ok".into(),
    })
}

/// Readiness
///
/// `200` when the database and Temporal answer (or Temporal is not configured, for an
/// inventory-only process); `503` otherwise, so load balancers stop sending traffic.
#[utoipa::path(get, path = "/readyz", tag = SYSTEM, responses(
    (status = 200, description = "Ready", body = StatusDoc),
    (status = 503, description = "A dependency is down", body = Problem, content_type = "application/problem+json"),
))]
pub async fn readyz(
    State(state): State<AppState>,
) -> ApiResult<(StatusCode, axum::Json<StatusDoc>)> {
    crate::db::ping(state.db()).await?;
    Ok((
        StatusCode::OK,
        axum::Json(StatusDoc {
            status: "ready".into(),
        }),
    ))
}
