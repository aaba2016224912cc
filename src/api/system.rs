//! Service endpoints: version, liveness and readiness.

use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::openapi::SYSTEM;
use crate::app::{AppState, WorkerState};
use crate::auth::Identity;
use crate::auth::jwks::KeyHealth;

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
#[utoipa::path(get, path = "/v1/version", tag = SYSTEM, security(("access" = ["viewer"])), responses((status = 200, description = "Build information", body = VersionDoc)))]
pub async fn get_version() -> axum::Json<VersionDoc> {
    axum::Json(VersionDoc::current())
}

/// Liveness
///
/// `200` while the process serves requests; checks no dependency.
#[utoipa::path(get, path = "/healthz", tag = SYSTEM, security(("access" = ["public"])), responses((status = 200, description = "Alive", body = StatusDoc)))]
pub async fn healthz() -> axum::Json<StatusDoc> {
    axum::Json(StatusDoc {
        status: "ok".into(),
    })
}

/// One dependency's state in a readiness answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckDoc {
    /// `up`, `down`, `disabled` (Temporal in an inventory-only process), or `stale` (the
    /// identity provider's keys: the last fetch failed, the keys fetched before are used).
    pub status: String,
    /// Why it is down or stale; shown only to callers with valid credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CheckDoc {
    fn up() -> Self {
        Self {
            status: "up".into(),
            error: None,
        }
    }

    fn down(error: impl Into<String>) -> Self {
        Self {
            status: "down".into(),
            error: Some(error.into()),
        }
    }
}

/// Readiness per dependency.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"status": "not_ready", "checks": {
    "database": {"status": "up"},
    "temporal": {"status": "down", "error": "workflow engine unavailable: no answer within 1.5s"},
    "worker": {"status": "down", "error": "waiting for Temporal"}
}}))]
pub struct ReadinessDoc {
    /// `ready` or `not_ready`.
    pub status: String,
    /// `database`, `temporal`, `worker` in a process that runs one, and `jwks` when JWTs are
    /// checked against a key set (reported only: API tokens work without it, so it never makes
    /// the process not ready).
    pub checks: std::collections::BTreeMap<String, CheckDoc>,
}

/// Bound on the database probe: with the engine's 1.5 s, run side by side, `/readyz` answers
/// within 2 s even when both hang.
const DB_PING_TIMEOUT: Duration = Duration::from_millis(1500);

/// Readiness
///
/// Checks the database and Temporal (and, in a process running a worker, that the worker polls
/// its task queue), each within 1.5 s, side by side: the answer comes within 2 s. `200` when
/// every dependency is up (Temporal `disabled` in an inventory-only process counts as up),
/// `503` otherwise, so load balancers stop sending traffic; the body names each dependency's
/// state either way. Anyone may ask; why a dependency is down (which names internal addresses)
/// is told only to a caller presenting valid credentials (any role).
#[utoipa::path(get, path = "/readyz", tag = SYSTEM, security(("access" = ["probe"])), responses(
    (status = 200, description = "Ready", body = ReadinessDoc),
    (status = 503, description = "A dependency is down", body = ReadinessDoc),
))]
pub async fn readyz(
    State(state): State<AppState>,
    caller: Option<Extension<Identity>>,
) -> (StatusCode, axum::Json<ReadinessDoc>) {
    let database = async {
        match tokio::time::timeout(DB_PING_TIMEOUT, crate::db::ping(state.db())).await {
            Ok(Ok(())) => CheckDoc::up(),
            Ok(Err(e)) => CheckDoc::down(e.to_string()),
            Err(_) => CheckDoc::down(format!("no answer within {DB_PING_TIMEOUT:?}")),
        }
    };
    let temporal = async {
        match state.tasks().engine_ready().await {
            Ok(true) => CheckDoc::up(),
            Ok(false) => CheckDoc {
                status: "disabled".into(),
                error: None,
            },
            Err(e) => CheckDoc::down(e.to_string()),
        }
    };
    let (database, temporal) = tokio::join!(database, temporal);
    let mut checks = std::collections::BTreeMap::new();
    checks.insert("database".to_string(), database);
    checks.insert("temporal".to_string(), temporal);
    let worker = match state.worker().get() {
        WorkerState::Absent => None,
        WorkerState::Polling => Some(CheckDoc::up()),
        WorkerState::Connecting => Some(CheckDoc::down("waiting for Temporal")),
        WorkerState::Stopped => Some(CheckDoc::down("the worker is not running")),
    };
    if let Some(worker) = worker {
        checks.insert("worker".to_string(), worker);
    }
    let ready = checks.values().all(|c| c.status != "down");
    if let Some(keys) = state.authenticator().key_health().await {
        checks.insert("jwks".to_string(), key_check(keys));
    }
    if caller.is_none() {
        for check in checks.values_mut() {
            check.error = None;
        }
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let doc = ReadinessDoc {
        status: if ready { "ready" } else { "not_ready" }.into(),
        checks,
    };
    (status, axum::Json(doc))
}

fn key_check(health: KeyHealth) -> CheckDoc {
    match health {
        KeyHealth::Fresh => CheckDoc::up(),
        KeyHealth::Stale(why) => CheckDoc {
            status: "stale".into(),
            error: Some(why),
        },
        KeyHealth::Unavailable(why) => CheckDoc::down(why),
    }
}
