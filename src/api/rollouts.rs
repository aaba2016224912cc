//! Rollout endpoints: create (or plan with `dry_run`), list, read, steer (pause, resume,
//! approve, abort) and follow a rollout as Server-Sent Events.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use serde::Deserialize;
use std::convert::Infallible;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Json, MaybeJson, Query, uuid_param, with_location};
use super::follow::{self, RolloutChange};
use super::openapi::ROLLOUTS;
use super::problem::{ApiResult, Problem};
use super::schema::common::{CountDoc, ListResponse, count_of};
use super::schema::rollout::CreateRolloutRequest;
use super::schema::rollout_view::{RolloutDoc, RolloutPlanDoc};
use crate::app::AppState;
use crate::app::streams::Key;
use crate::auth::Identity;
use crate::db::page::PageRequest;
use crate::error::{Result, Violations};
use crate::rollouts::model::{Command, RolloutStatus};
use crate::rollouts::progress::rollout_task_statuses;
use crate::rollouts::service::Created;
use crate::rollouts::store::{self, RolloutFilter};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_rollout, list_rollouts))
        .routes(routes!(get_rollout))
        .routes(routes!(pause_rollout))
        .routes(routes!(resume_rollout))
        .routes(routes!(approve_rollout))
        .routes(routes!(abort_rollout))
        .routes(routes!(rollout_events))
}

/// The rollout with its tasks' live statuses.
async fn load(state: &AppState, id: uuid::Uuid) -> Result<RolloutDoc> {
    let rollout = store::get(state.db(), id.into()).await?;
    let statuses = rollout_task_statuses(state.db(), &rollout).await?;
    Ok(RolloutDoc::new(rollout, &statuses))
}

/// Query of `POST /v1/rollouts`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CreateRolloutQuery {
    /// Answer the wave plan (each rack's outcome) instead of creating the rollout.
    #[serde(default)]
    pub dry_run: bool,
}

/// Create a rollout
///
/// Resolves the targeted racks, cuts them into waves (a canary, then batches, keeping groups
/// spread), stores the rollout and starts its one durable workflow, which submits each wave's
/// racks through the normal operation path. With `dry_run=true` answers 200 with the exact
/// wave plan and creates nothing.
#[utoipa::path(post, path = "/v1/rollouts", tag = ROLLOUTS, security(("access" = ["runs"])), params(CreateRolloutQuery), request_body = CreateRolloutRequest,
    responses(
        (status = 201, description = "The rollout, started", body = RolloutDoc, headers(("Location" = String, description = "The rollout"))),
        (status = 200, description = "Dry run: the wave plan", body = RolloutPlanDoc),
        (status = 400, description = "Bad body or no rack selected; `errors` names each field", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The caller lacks the role (`forbidden`), or a wave has more racks than the caller's role may touch in one request (`blast_radius`, naming the wave, the cap and the count; a dry run hears the same)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The operation names a rule that does not exist (`rule_not_found`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The workflow engine is unreachable", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_rollout(
    State(state): State<AppState>,
    Query(q): Query<CreateRolloutQuery>,
    Json(body): Json<CreateRolloutRequest>,
) -> ApiResult<Response> {
    let spec = body.to_domain()?;
    let canary = spec.strategy.canary > 0;
    match state.rollouts().create(spec, q.dry_run).await? {
        Created::Plan(waves) => Ok(axum::Json(RolloutPlanDoc::new(waves, canary)).into_response()),
        Created::Rollout(rollout) => {
            let doc = load(&state, rollout.id.into()).await?;
            let location = format!("/v1/rollouts/{}", rollout.id);
            Ok(with_location(
                (StatusCode::CREATED, axum::Json(doc)),
                &location,
            ))
        }
    }
}

/// Query of `GET /v1/rollouts`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListRolloutsQuery {
    /// One status or a comma-separated list.
    pub status: Option<String>,
    /// Exact name, or a case-insensitive glob with `*`.
    pub name: Option<String>,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    /// `exact` or `estimate` to get `total` (and `total_is_estimate`) in the answer: `exact`
    /// counts every match (as costly as the whole list), `estimate` is PostgreSQL's planner
    /// estimate (SQLite counts exactly). Absent: no `total`, so every page costs the same.
    pub count: Option<CountDoc>,
}

/// List rollouts
///
/// Newest first, one page at a time, optionally by status or name.
#[utoipa::path(get, path = "/v1/rollouts", tag = ROLLOUTS, security(("access" = ["viewer"])), params(ListRolloutsQuery),
    responses(
        (status = 200, description = "One page of rollouts", body = ListResponse<RolloutDoc>),
        (status = 400, description = "Bad filter, limit or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_rollouts(
    State(state): State<AppState>,
    Query(q): Query<ListRolloutsQuery>,
) -> ApiResult<axum::Json<ListResponse<RolloutDoc>>> {
    let page = PageRequest::parse(q.limit, q.cursor.as_deref())?.counting(count_of(q.count));
    let mut v = Violations::default();
    let mut statuses = Vec::new();
    for raw in q
        .status
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match RolloutStatus::parse(&raw.to_lowercase()) {
            Some(s) => statuses.push(s),
            None => v.push("status", format!("unknown rollout status {raw:?}")),
        }
    }
    v.finish()?;
    let filter = RolloutFilter {
        statuses,
        name: q.name.clone().filter(|n| !n.trim().is_empty()),
    };
    let page = store::list(state.db(), &filter, &page).await?;
    let mut items = Vec::with_capacity(page.items.len());
    for rollout in page.items {
        let statuses = rollout_task_statuses(state.db(), &rollout).await?;
        items.push(RolloutDoc::new(rollout, &statuses));
    }
    Ok(axum::Json(ListResponse::new(
        items,
        page.next_cursor,
        page.total,
    )))
}

/// Get a rollout
///
/// Status, waves with their racks, each rack's task and live task status, counts and the
/// failure budget used.
#[utoipa::path(get, path = "/v1/rollouts/{id}", tag = ROLLOUTS, security(("access" = ["viewer"])), params(("id" = uuid::Uuid, Path, description = "Rollout id")),
    responses(
        (status = 200, description = "The rollout", body = RolloutDoc),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rollout", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_rollout(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<RolloutDoc>> {
    Ok(axum::Json(load(&state, uuid_param("id", &id)?).await?))
}

async fn steer(state: &AppState, id: &str, command: Command) -> ApiResult<Response> {
    let id = uuid_param("id", id)?;
    state.rollouts().command(id.into(), command).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(load(state, id).await?)).into_response())
}

/// Pause a rollout
///
/// No new rack starts; racks already running finish. The rollout shows `paused` once its run
/// has taken the command, also when it was `awaiting_approval`: an approval sent while paused
/// is kept, and the rollout stays paused until resumed.
#[utoipa::path(post, path = "/v1/rollouts/{id}/pause", tag = ROLLOUTS, security(("access" = ["operator"])), params(("id" = uuid::Uuid, Path, description = "Rollout id")),
    responses(
        (status = 202, description = "Command delivered; the rollout as it was", body = RolloutDoc),
        (status = 404, description = "No such rollout", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The rollout has ended (`rollout_finished`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The workflow engine is unreachable", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn pause_rollout(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    steer(&state, &id, Command::Pause).await
}

/// Resume a paused rollout
///
/// Racks start again where the pause stopped them (or the next wave starts, when the pause
/// came between waves). A rollout paused at its approval gate returns to `awaiting_approval`
/// (unless it was approved meanwhile: then it runs on). Resuming a rollout that is not paused
/// changes nothing.
#[utoipa::path(post, path = "/v1/rollouts/{id}/resume", tag = ROLLOUTS, security(("access" = ["operator"])), params(("id" = uuid::Uuid, Path, description = "Rollout id")),
    responses(
        (status = 202, description = "Command delivered; the rollout as it was", body = RolloutDoc),
        (status = 404, description = "No such rollout", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The rollout has ended (`rollout_finished`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The workflow engine is unreachable", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn resume_rollout(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    steer(&state, &id, Command::Resume).await
}

/// Approve the waves after the canary
///
/// For a rollout created with `approval_after_canary`: lets the waves after the canary start
/// (at once when it is `awaiting_approval`, or as soon as the canary passes when sent earlier).
#[utoipa::path(post, path = "/v1/rollouts/{id}/approve", tag = ROLLOUTS, security(("access" = ["operator"])), params(("id" = uuid::Uuid, Path, description = "Rollout id")),
    responses(
        (status = 202, description = "Command delivered; the rollout as it was", body = RolloutDoc),
        (status = 404, description = "No such rollout", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The rollout has ended (`rollout_finished`) or has no approval gate (`no_approval_gate`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The workflow engine is unreachable", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn approve_rollout(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    steer(&state, &id, Command::Approve).await
}

/// Body of `POST /v1/rollouts/{id}/abort`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AbortRolloutRequest {
    /// `true`: cancel the tasks still running; `false` (default): let them finish.
    #[serde(default)]
    pub cancel_running: bool,
}

/// Abort a rollout
///
/// No new rack starts. With `cancel_running` the tasks still running are cancelled;
/// without, they finish. The rollout ends `aborted` once nothing of it runs.
#[utoipa::path(post, path = "/v1/rollouts/{id}/abort", tag = ROLLOUTS, security(("access" = ["operator"])), params(("id" = uuid::Uuid, Path, description = "Rollout id")),
    request_body(content = AbortRolloutRequest, description = "Optional; default lets running tasks finish"),
    responses(
        (status = 202, description = "Command delivered; the rollout as it was", body = RolloutDoc),
        (status = 404, description = "No such rollout", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The rollout has ended (`rollout_finished`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The workflow engine is unreachable", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn abort_rollout(
    State(state): State<AppState>,
    Path(id): Path<String>,
    MaybeJson(body): MaybeJson<AbortRolloutRequest>,
) -> ApiResult<Response> {
    let cancel_running = body.is_some_and(|b| b.cancel_running);
    steer(&state, &id, Command::Abort { cancel_running }).await
}

/// Follow a rollout
///
/// Server-Sent Events: a `rollout` event with the whole rollout (as `GET /v1/rollouts/{id}`
/// returns it) now and on every change, until the rollout ends; then the stream closes. When
/// the server shuts down, a final `shutdown` event is sent and the stream closes early. Counted
/// with task streams against `FLOW_MAX_EVENT_STREAMS` (`429 too_many_streams` beyond).
#[utoipa::path(get, path = "/v1/rollouts/{id}/events", tag = ROLLOUTS, security(("access" = ["viewer"])), params(("id" = uuid::Uuid, Path, description = "Rollout id")),
    responses(
        (status = 200, description = "A stream of `rollout` events", content_type = "text/event-stream", body = RolloutDoc),
        (status = 404, description = "No such rollout", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many open event streams (`too_many_streams`); retry after `Retry-After` seconds", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn rollout_events(
    State(state): State<AppState>,
    identity: Option<Extension<Identity>>,
    Path(id): Path<String>,
) -> ApiResult<Sse<impl Stream<Item = std::result::Result<Event, Infallible>>>> {
    let id = uuid_param("id", &id)?;
    store::get(state.db(), id.into()).await?;
    let follow = follow::open(&state, identity.as_deref(), &[Key::Rollout(id)])?;
    let stream = follow::rollout_changes(state, id, follow).map(|change| {
        Ok(match change {
            Ok(RolloutChange::Now(doc)) => Event::default()
                .event("rollout")
                .data(serde_json::to_string(&doc).unwrap_or_default()),
            Ok(RolloutChange::ShuttingDown) => Event::default()
                .event("shutdown")
                .data("the server is shutting down; reconnect to keep following the rollout"),
            Err(e) => Event::default().event("error").data(e.to_string()),
        })
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
