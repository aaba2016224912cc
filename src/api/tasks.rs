//! Task endpoints: list, read with the per-component report, cancel, and a live event stream.

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use serde::Deserialize;
use std::convert::Infallible;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Query, uuid_param};
use super::follow;
use super::openapi::TASKS;
use super::problem::{ApiResult, Problem};
use super::schema::common::{CountDoc, ListResponse, count_of};
use super::schema::task::TaskDoc;
use crate::app::AppState;
use crate::app::streams::Key;
use crate::auth::Identity;
use crate::domain::code::OperationCode;
use crate::error::{Result, Violations};
use crate::tasks::model::TaskStatus;
use crate::tasks::report;
use crate::tasks::store::{self, TaskFilter};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tasks))
        .routes(routes!(get_task))
        .routes(routes!(cancel_task))
        .routes(routes!(task_events))
        .routes(routes!(list_rack_tasks))
}

/// Query of `GET /v1/tasks`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListTasksQuery {
    pub rack_id: Option<uuid::Uuid>,
    /// Tasks that target this component.
    pub component_id: Option<uuid::Uuid>,
    /// One status or a comma-separated list.
    pub status: Option<String>,
    /// Operation code, e.g. `power_on`.
    pub operation: Option<String>,
    /// The tasks of one operation request.
    pub request_id: Option<uuid::Uuid>,
    /// Only pending, waiting and running tasks.
    #[serde(default)]
    pub active_only: bool,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    /// `exact` or `estimate` to get `total` (and `total_is_estimate`) in the answer: `exact`
    /// counts every match (as costly as the whole list), `estimate` is PostgreSQL's planner
    /// estimate (SQLite counts exactly). Absent: no `total`, so every page costs the same.
    pub count: Option<CountDoc>,
}

impl ListTasksQuery {
    fn filter(&self) -> Result<TaskFilter> {
        let mut v = Violations::default();
        let mut statuses = Vec::new();
        for raw in self
            .status
            .iter()
            .flat_map(|s| s.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            match TaskStatus::parse(&raw.to_lowercase()) {
                Some(s) => statuses.push(s),
                None => v.push("status", format!("unknown task status {raw:?}")),
            }
        }
        let operation = match self.operation.as_deref().map(str::parse::<OperationCode>) {
            Some(Err(_)) => {
                let op = self.operation.as_deref().unwrap_or_default();
                v.push(
                    "operation",
                    format!(
                        "unknown operation {op:?} (expected one of: {})",
                        OperationCode::expected()
                    ),
                );
                None
            }
            Some(Ok(code)) => Some(code),
            None => None,
        };
        if self.active_only {
            let active = [
                TaskStatus::Pending,
                TaskStatus::Waiting,
                TaskStatus::Running,
            ];
            statuses = if statuses.is_empty() {
                active.to_vec()
            } else {
                statuses
                    .into_iter()
                    .filter(|s| active.contains(s))
                    .collect()
            };
            if statuses.is_empty() {
                v.push("status", "active_only excludes every status given");
            }
        }
        v.finish()?;
        Ok(TaskFilter {
            rack_id: self.rack_id.map(Into::into),
            component_id: self.component_id.map(Into::into),
            statuses,
            operation,
            request_id: self.request_id.map(Into::into),
        })
    }
}

async fn list(
    state: &AppState,
    q: &ListTasksQuery,
) -> ApiResult<axum::Json<ListResponse<TaskDoc>>> {
    let filter = q.filter()?;
    let limit = crate::db::page::checked_limit(q.limit)?;
    let count = count_of(q.count).unwrap_or_default();
    let page = store::list(state.db(), &filter, limit, q.cursor.as_deref(), count).await?;
    let racks: Vec<_> = page.items.iter().map(|t| t.rack_id).collect();
    let names = store::rack_names(state.db(), &racks).await?;
    let mut answer: ListResponse<TaskDoc> = ListResponse::from_page(page);
    for doc in &mut answer.items {
        doc.rack_name = names.get(&doc.rack_id.into()).cloned();
    }
    Ok(axum::Json(answer))
}

/// List tasks
///
/// Tasks newest first, filtered by rack, component, status, operation or request; one page at
/// a time. Items carry no stage report: read a task for that.
#[utoipa::path(get, path = "/v1/tasks", tag = TASKS, security(("access" = ["viewer"])), params(ListTasksQuery),
    responses(
        (status = 200, description = "One page of tasks", body = ListResponse<TaskDoc>),
        (status = 400, description = "Bad filter, limit or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_tasks(
    State(state): State<AppState>,
    Query(q): Query<ListTasksQuery>,
) -> ApiResult<axum::Json<ListResponse<TaskDoc>>> {
    list(&state, &q).await
}

/// Query of `GET /v1/racks/{id}/tasks`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RackTasksQuery {
    #[serde(default)]
    pub active_only: bool,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    /// `exact` or `estimate` to get `total` (and `total_is_estimate`) in the answer: `exact`
    /// counts every match (as costly as the whole list), `estimate` is PostgreSQL's planner
    /// estimate (SQLite counts exactly). Absent: no `total`, so every page costs the same.
    pub count: Option<CountDoc>,
}

/// List a rack's tasks
///
/// The rack's tasks, newest first (also after the rack was purged). `404` for a rack that
/// neither exists nor ever had a task, as the rack's other sub-resources answer.
#[utoipa::path(get, path = "/v1/racks/{id}/tasks", tag = TASKS, security(("access" = ["viewer"])), params(("id" = uuid::Uuid, Path, description = "Rack id"), RackTasksQuery),
    responses(
        (status = 200, description = "One page of tasks", body = ListResponse<TaskDoc>),
        (status = 400, description = "Bad id, limit or cursor", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_rack_tasks(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<RackTasksQuery>,
) -> ApiResult<axum::Json<ListResponse<TaskDoc>>> {
    let rack_id = uuid_param("id", &id)?;
    let q = ListTasksQuery {
        rack_id: Some(rack_id),
        active_only: q.active_only,
        limit: q.limit,
        cursor: q.cursor,
        count: q.count,
        ..Default::default()
    };
    let page = list(&state, &q).await?;
    if page.0.items.is_empty() && q.cursor.is_none() {
        // An empty first page: a rack with no tasks yet, or no rack at all.
        crate::inventory::racks::get(state.db(), rack_id.into(), false).await?;
    }
    Ok(page)
}

/// A task with its stage report.
pub(crate) async fn load(state: &AppState, id: uuid::Uuid) -> Result<TaskDoc> {
    let task = store::get(state.db(), id.into()).await?;
    let plan = store::plan(state.db(), id.into()).await?;
    let steps = store::steps(state.db(), id.into()).await?;
    let rule = plan.as_ref().map(|p| p.rule.clone());
    let name = store::rack_names(state.db(), &[task.rack_id])
        .await?
        .remove(&task.rack_id);
    Ok(TaskDoc::new(task, report::build(plan.as_ref(), steps))
        .with_rule(rule)
        .with_rack_name(name))
}

/// Get a task
///
/// The task with its report: each stage in order and, within it, each component's status,
/// attempts, error, timings and step log.
#[utoipa::path(get, path = "/v1/tasks/{id}", tag = TASKS, security(("access" = ["viewer"])), params(("id" = uuid::Uuid, Path, description = "Task id")),
    responses(
        (status = 200, description = "The task", body = TaskDoc),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such task", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_task(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<TaskDoc>> {
    Ok(axum::Json(load(&state, uuid_param("id", &id)?).await?))
}

/// Cancel a task
///
/// A queued task is cancelled at once; a pending or running one has its workflow cancelled
/// (devices in flight finish their current call). Cancelling a cancelled task is a no-op.
#[utoipa::path(post, path = "/v1/tasks/{id}/cancel", tag = TASKS, security(("access" = ["operator"])), params(("id" = uuid::Uuid, Path, description = "Task id")),
    responses(
        (status = 200, description = "The cancelled task", body = TaskDoc),
        (status = 404, description = "No such task", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The task already succeeded or failed (`code`: `not_cancellable`)", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The workflow engine is unreachable", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn cancel_task(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<TaskDoc>> {
    let id = uuid_param("id", &id)?;
    state.tasks().cancel(id.into()).await?;
    Ok(axum::Json(load(&state, id).await?))
}

/// Follow a task
///
/// Server-Sent Events: a `task` event with the whole task (as `GET /v1/tasks/{id}` returns it)
/// now and on every status or report change, until the task ends; then the stream closes. When
/// the server shuts down, a final `shutdown` event is sent and the stream closes early. A
/// process serves at most `FLOW_MAX_EVENT_STREAMS` task and rollout streams, one identity a
/// tenth of them; the next gets `429 too_many_streams` with `Retry-After`.
#[utoipa::path(get, path = "/v1/tasks/{id}/events", tag = TASKS, security(("access" = ["viewer"])), params(("id" = uuid::Uuid, Path, description = "Task id")),
    responses(
        (status = 200, description = "A stream of `task` events", content_type = "text/event-stream", body = TaskDoc),
        (status = 404, description = "No such task", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "Too many open event streams (`too_many_streams`); retry after `Retry-After` seconds", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn task_events(
    State(state): State<AppState>,
    identity: Option<Extension<Identity>>,
    Path(id): Path<String>,
) -> ApiResult<Sse<impl Stream<Item = std::result::Result<Event, Infallible>>>> {
    let id = uuid_param("id", &id)?;
    store::get(state.db(), id.into()).await?;
    let follow = follow::open(&state, identity.as_deref(), &[Key::Task(id)])?;
    let stream = follow::task_changes(state, id, follow).map(|change| {
        Ok(match change {
            Ok(follow::TaskChange::Now(doc)) => Event::default()
                .event("task")
                .data(serde_json::to_string(&doc).unwrap_or_default()),
            Ok(follow::TaskChange::ShuttingDown) => Event::default()
                .event("shutdown")
                .data("the server is shutting down; reconnect to keep following the task"),
            Err(e) => Event::default().event("error").data(e.to_string()),
        })
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Whether a task in this state will change no more.
pub(crate) fn has_ended(doc: &TaskDoc) -> bool {
    matches!(
        doc.status,
        super::schema::task::TaskStatusDoc::Succeeded
            | super::schema::task::TaskStatusDoc::Failed
            | super::schema::task::TaskStatusDoc::Cancelled
    )
}
