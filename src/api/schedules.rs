//! Task schedule endpoints: create and manage schedules, their scope of racks, manual fires,
//! run history, and advice on schedules that would clash.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Json, Query, uuid_param, with_location};
use super::openapi::SCHEDULES;
use super::problem::{ApiResult, Problem};
use super::schema::common::{CountDoc, ListResponse, count_of, required_text};
use super::schema::schedule::{
    ConflictCheckRequest, CreateScheduleRequest, ScopeRequest, UpdateScheduleRequest,
    schedule_targets,
};
use super::schema::schedule_view::{
    ConflictsDoc, RunDoc, RunListDoc, ScheduleDoc, ScopeDoc, ScopeListDoc,
};
use crate::app::AppState;
use crate::db::page::PageRequest;
use crate::domain::operation::RackRef;
use crate::error::{Error, Violations};
use crate::ids::ScheduleId;
use crate::schedules::ScheduleService;
use crate::schedules::service::SchedulePatch;
use crate::schedules::store::{self, ScheduleFilter};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_schedule, list_schedules))
        .routes(routes!(get_schedule, update_schedule, delete_schedule))
        .routes(routes!(pause_schedule))
        .routes(routes!(resume_schedule))
        .routes(routes!(trigger_schedule))
        .routes(routes!(list_schedule_runs))
        .routes(routes!(list_schedule_scope, add_schedule_scope))
        .routes(routes!(remove_schedule_scope))
        .routes(routes!(check_schedule_conflicts))
}

/// The schedule as answered on its own: with its latest run.
async fn answer(
    service: &ScheduleService,
    schedule: crate::schedules::Schedule,
) -> ApiResult<axum::Json<ScheduleDoc>> {
    let last = service.runs(schedule.id, 1).await?.pop();
    Ok(axum::Json(ScheduleDoc::new(schedule, last)))
}

fn id_of(raw: &str) -> Result<ScheduleId, Problem> {
    uuid_param("id", raw).map(ScheduleId::from)
}

/// Create a task schedule
///
/// Stores a schedule: when it fires (interval, cron in a time zone, or one time), the operation
/// each fire runs, the racks it runs on (one task per rack per fire) and what to do when a
/// rack is still busy. It first fires at its next time, not at once.
#[utoipa::path(post, path = "/v1/task-schedules", tag = SCHEDULES, security(("access" = ["admin"])), request_body = CreateScheduleRequest,
    responses(
        (status = 201, description = "The schedule", body = ScheduleDoc, headers(("Location" = String, description = "The schedule"))),
        (status = 400, description = "Bad spec, time zone, interval, operation or racks; `errors` names each field", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The caller lacks the role (`forbidden`), or the scope has more racks than a schedule (acting as `operator`) may touch in one fire (`blast_radius`, naming the cap and the count)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The name is taken (`code`: `name_exists`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_schedule(
    State(state): State<AppState>,
    Json(body): Json<CreateScheduleRequest>,
) -> ApiResult<Response> {
    let new = body.to_domain()?;
    let (schedule, _) = state.schedules().create(new).await?;
    let location = format!("/v1/task-schedules/{}", schedule.id);
    Ok(with_location(
        (StatusCode::CREATED, axum::Json(ScheduleDoc::from(schedule))),
        &location,
    ))
}

/// Query of `GET /v1/task-schedules`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListSchedulesQuery {
    /// Only enabled (`true`) or only paused and consumed (`false`) schedules.
    pub enabled: Option<bool>,
    /// Schedules with this rack in scope.
    pub rack_id: Option<uuid::Uuid>,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    /// `exact` or `estimate` to get `total` (and `total_is_estimate`) in the answer: `exact`
    /// counts every match (as costly as the whole list), `estimate` is PostgreSQL's planner
    /// estimate (SQLite counts exactly). Absent: no `total`, so every page costs the same.
    pub count: Option<CountDoc>,
}

/// List task schedules
///
/// Schedules in name order, one page at a time, optionally only enabled ones or only those
/// with a given rack in scope.
#[utoipa::path(get, path = "/v1/task-schedules", tag = SCHEDULES, security(("access" = ["viewer"])), params(ListSchedulesQuery),
    responses(
        (status = 200, description = "One page of schedules", body = ListResponse<ScheduleDoc>),
        (status = 400, description = "Bad filter, limit or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_schedules(
    State(state): State<AppState>,
    Query(q): Query<ListSchedulesQuery>,
) -> ApiResult<axum::Json<ListResponse<ScheduleDoc>>> {
    let page = PageRequest::parse(q.limit, q.cursor.as_deref())?.counting(count_of(q.count));
    let filter = ScheduleFilter {
        enabled: q.enabled,
        rack_id: q.rack_id.map(Into::into),
    };
    let page = store::list(state.db(), &filter, &page).await?;
    Ok(axum::Json(ListResponse::from_page(page)))
}

/// Get a task schedule
///
/// The schedule with its next and last fire times and its latest run (the tasks it created and
/// the racks it skipped or failed on).
#[utoipa::path(get, path = "/v1/task-schedules/{id}", tag = SCHEDULES, security(("access" = ["viewer"])), params(("id" = uuid::Uuid, Path, description = "Schedule id")),
    responses(
        (status = 200, description = "The schedule", body = ScheduleDoc),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_schedule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ScheduleDoc>> {
    let service = state.schedules();
    let schedule = service.get(id_of(&id)?).await?;
    answer(service, schedule).await
}

/// Change a task schedule
///
/// Renames it, changes when it fires (the next fire is recomputed from now) or its overlap
/// policy. The operation and a paused or enabled state are kept; the scope has its own
/// endpoints.
#[utoipa::path(patch, path = "/v1/task-schedules/{id}", tag = SCHEDULES, security(("access" = ["admin"])), request_body = UpdateScheduleRequest,
    params(("id" = uuid::Uuid, Path, description = "Schedule id")),
    responses(
        (status = 200, description = "The changed schedule", body = ScheduleDoc),
        (status = 400, description = "Empty patch or bad field", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Name taken (`name_exists`) or a fired one-time schedule (`one_time_consumed`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn update_schedule(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<UpdateScheduleRequest>,
) -> ApiResult<axum::Json<ScheduleDoc>> {
    let id = id_of(&id)?;
    let mut v = Violations::default();
    if body.name.is_none() && body.spec.is_none() && body.overlap_policy.is_none() {
        v.push("body", "give at least one of name, spec, overlap_policy");
    }
    let name = body
        .name
        .as_deref()
        .map(|n| required_text(&mut v, "name", n));
    v.finish()?;
    let patch = SchedulePatch {
        name,
        timer: body.spec.as_ref().map(|s| s.to_domain()),
        overlap: body.overlap_policy.map(Into::into),
    };
    let service = state.schedules();
    let schedule = service.update(id, patch).await?;
    answer(service, schedule).await
}

/// Delete a task schedule
///
/// Deletes the schedule with its scope and run history. Tasks it created are kept and keep
/// running.
#[utoipa::path(delete, path = "/v1/task-schedules/{id}", tag = SCHEDULES, security(("access" = ["admin"])), params(("id" = uuid::Uuid, Path, description = "Schedule id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_schedule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.schedules().delete(id_of(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Pause a task schedule
///
/// Stops firing until resumed. Pausing a paused schedule changes nothing.
#[utoipa::path(post, path = "/v1/task-schedules/{id}/pause", tag = SCHEDULES, security(("access" = ["operator"])), params(("id" = uuid::Uuid, Path, description = "Schedule id")),
    responses(
        (status = 200, description = "The paused schedule", body = ScheduleDoc),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A one-time schedule that has fired (`one_time_consumed`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn pause_schedule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ScheduleDoc>> {
    let service = state.schedules();
    let schedule = service.pause(id_of(&id)?).await?;
    answer(service, schedule).await
}

/// Resume a task schedule
///
/// Fires again: a recurring schedule from its next time after now (resuming never fires at
/// once), a one-time schedule at its time. Resuming an enabled schedule changes nothing.
#[utoipa::path(post, path = "/v1/task-schedules/{id}/resume", tag = SCHEDULES, security(("access" = ["operator"])), params(("id" = uuid::Uuid, Path, description = "Schedule id")),
    responses(
        (status = 200, description = "The enabled schedule", body = ScheduleDoc),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A one-time schedule that has fired (`one_time_consumed`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn resume_schedule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ScheduleDoc>> {
    let service = state.schedules();
    let schedule = service.resume(id_of(&id)?).await?;
    answer(service, schedule).await
}

/// Fire a task schedule now
///
/// Runs the schedule's operation on its racks at once, also when paused, with its overlap
/// policy. A recurring schedule keeps its next time; a one-time schedule is used up.
#[utoipa::path(post, path = "/v1/task-schedules/{id}/trigger", tag = SCHEDULES, security(("access" = ["operator"])), params(("id" = uuid::Uuid, Path, description = "Schedule id")),
    responses(
        (status = 202, description = "The run: tasks created, racks skipped or failed", body = RunDoc),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A one-time schedule that has fired (`one_time_consumed`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn trigger_schedule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, axum::Json<RunDoc>)> {
    let run = state.schedules().trigger(id_of(&id)?).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(run.into())))
}

/// Query of `GET /v1/task-schedules/{id}/runs`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RunsQuery {
    /// How many runs (1–1000, default 20).
    pub limit: Option<u64>,
}

/// List a schedule's runs
///
/// The latest fires, newest first, each with the tasks it created and the racks it skipped
/// (busy) or failed on.
#[utoipa::path(get, path = "/v1/task-schedules/{id}/runs", tag = SCHEDULES, security(("access" = ["viewer"])), params(("id" = uuid::Uuid, Path, description = "Schedule id"), RunsQuery),
    responses(
        (status = 200, description = "Runs, newest first", body = RunListDoc),
        (status = 400, description = "Bad id or limit", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_schedule_runs(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<RunsQuery>,
) -> ApiResult<axum::Json<RunListDoc>> {
    let limit = q.limit.unwrap_or(20);
    if !(1..=1000).contains(&limit) {
        return Err(Error::invalid("limit", "must be between 1 and 1000").into());
    }
    let runs = state.schedules().runs(id_of(&id)?, limit).await?;
    Ok(axum::Json(RunListDoc {
        items: runs.into_iter().map(Into::into).collect(),
    }))
}

/// List a schedule's racks
///
/// The racks each fire targets, with their component type filters and the task the latest
/// fire created on each.
#[utoipa::path(get, path = "/v1/task-schedules/{id}/scope", tag = SCHEDULES, security(("access" = ["viewer"])), params(("id" = uuid::Uuid, Path, description = "Schedule id")),
    responses(
        (status = 200, description = "The scope", body = ScopeListDoc),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_schedule_scope(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ScopeListDoc>> {
    let scopes = state.schedules().scopes(id_of(&id)?).await?;
    Ok(axum::Json(ScopeListDoc {
        items: scopes.into_iter().map(ScopeDoc::from).collect(),
    }))
}

/// Add racks to a schedule
///
/// Adds racks to the scope. A rack already in it has its component type filter widened (the
/// union of both; no filter on either side means every type). Answers the added or changed
/// entries.
#[utoipa::path(post, path = "/v1/task-schedules/{id}/scope", tag = SCHEDULES, security(("access" = ["admin"])), request_body = ScopeRequest,
    params(("id" = uuid::Uuid, Path, description = "Schedule id")),
    responses(
        (status = 200, description = "Added or widened scope entries", body = ScopeListDoc),
        (status = 400, description = "Unknown or repeated racks, or component targets", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The caller lacks the role (`forbidden`), or the scope would exceed a schedule's blast-radius cap (`blast_radius`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn add_schedule_scope(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Json(body): Json<ScopeRequest>,
) -> ApiResult<axum::Json<ScopeListDoc>> {
    let id = id_of(&id)?;
    let mut v = Violations::default();
    let targets = schedule_targets(&body.target_spec, &mut v);
    v.finish()?;
    let scopes = state.schedules().add_scope(id, &targets).await?;
    Ok(axum::Json(ScopeListDoc {
        items: scopes.into_iter().map(ScopeDoc::from).collect(),
    }))
}

/// Remove a rack from a schedule
///
/// The rack (by id or name) leaves the scope; its running tasks are not touched. A schedule
/// keeps at least one rack: delete the schedule instead.
#[utoipa::path(delete, path = "/v1/task-schedules/{id}/scope/{rack}", tag = SCHEDULES, security(("access" = ["admin"])),
    params(("id" = uuid::Uuid, Path, description = "Schedule id"), ("rack" = String, Path, description = "Rack id or name")),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule, or the rack is not in its scope", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The schedule's last rack (`last_scope`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn remove_schedule_scope(
    State(state): State<AppState>,
    Path((id, rack)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let rack = match uuid::Uuid::parse_str(&rack) {
        Ok(rack_id) => RackRef::Id(rack_id),
        Err(_) => RackRef::Name(rack),
    };
    state.schedules().remove_scope(id_of(&id)?, &rack).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Check a proposed schedule for conflicts
///
/// Lists the enabled schedules that share a rack with the proposed operation and racks and
/// whose tasks would conflict with it there (bring-up and ingest take the whole rack, power-shelf
/// power work excludes other power and firmware work, other work clashes on shared component
/// types). Advisory: creating a conflicting schedule is allowed.
#[utoipa::path(post, path = "/v1/task-schedules/conflicts", tag = SCHEDULES, security(("access" = ["viewer"])), request_body = ConflictCheckRequest,
    responses(
        (status = 200, description = "Conflicting schedules and the racks they share", body = ConflictsDoc),
        (status = 400, description = "Bad operation or racks", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn check_schedule_conflicts(
    State(state): State<AppState>,
    Json(body): Json<ConflictCheckRequest>,
) -> ApiResult<axum::Json<ConflictsDoc>> {
    let mut v = Violations::default();
    let template = body.operation.to_domain(&mut v);
    let targets = schedule_targets(&body.target_spec, &mut v);
    v.finish()?;
    let conflicts = state
        .schedules()
        .conflicts(
            &template.operation,
            &targets,
            body.exclude_schedule_id.map(Into::into),
        )
        .await?;
    Ok(axum::Json(ConflictsDoc {
        conflicts: conflicts.into_iter().map(Into::into).collect(),
    }))
}
