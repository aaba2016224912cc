//! Task storage: rows and compare-and-set status changes; step records are in `steps`, the
//! task list in `list`. The writers are visible inside `tasks` only and called from `lifecycle`
//! alone, the one writer of task state.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, Iterable, QueryFilter, QueryOrder,
    QuerySelect, Select,
};

use super::model::{Task, TaskComponent, TaskStatus};
use crate::db::entities::{task_steps, tasks};
use crate::domain::operation::{ConflictStrategy, Operation};
use crate::error::{Error, Result};
use crate::ids::{RackId, TaskId};
use crate::operations::plan::Plan;

/// Longest status message kept; device errors can be long.
pub(super) const MAX_MESSAGE: usize = 512;

pub(super) fn clip(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    first.chars().take(MAX_MESSAGE).collect()
}

pub(super) fn corrupt(what: &str, id: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("task {id}: stored {what} unreadable: {e}"))
}

pub(crate) fn task_from_row(row: tasks::Model) -> Result<Task> {
    let operation: Operation =
        serde_json::from_value(row.spec.clone()).map_err(|e| corrupt("spec", row.id, e))?;
    let components: Vec<TaskComponent> = serde_json::from_value(row.components.clone())
        .map_err(|e| corrupt("components", row.id, e))?;
    let status =
        TaskStatus::parse(&row.status).ok_or_else(|| corrupt("status", row.id, &row.status))?;
    let conflict_strategy = if row.conflict_strategy == "queue" {
        ConflictStrategy::Queue
    } else {
        ConflictStrategy::Reject
    };
    Ok(Task {
        id: row.id.into(),
        request_id: row.request_id.into(),
        operation,
        rack_id: row.rack_id.into(),
        components,
        description: row.description,
        conflict_strategy,
        status,
        message: row.message,
        queue_expires_at: row.queue_expires_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
        started_at: row.started_at,
        finished_at: row.finished_at,
        requested_rule_id: row.requested_rule_id.map(Into::into),
        created_by: row.created_by,
    })
}

/// Task rows as a [`Task`] reads them: every column but the plan, read as NULL. A GB200 rack's
/// plan is ~15 KB of JSON that the driver would parse into a value for each row only for
/// [`task_from_row`] to drop it; [`plan`] reads it where it is needed.
pub(in crate::tasks) fn find() -> Select<tasks::Entity> {
    tasks::Entity::find()
        .select_only()
        .columns(tasks::Column::iter().filter(|c| !matches!(c, tasks::Column::Plan)))
        .expr_as(Expr::val(sea_orm::Value::Json(None)), "plan")
}

/// Inserts a new task row.
pub(in crate::tasks) async fn insert(db: &impl ConnectionTrait, task: &Task) -> Result<()> {
    let row =
        tasks::ActiveModel {
            id: Set(task.id.into()),
            request_id: Set(task.request_id.into()),
            operation: Set(task.operation.code().to_string()),
            task_type: Set(serde_json::to_value(task.operation.task_type())
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()),
            spec: Set(serde_json::to_value(&task.operation)
                .map_err(|e| Error::Internal(e.to_string()))?),
            description: Set(task.description.clone()),
            rack_id: Set(task.rack_id.into()),
            components: Set(serde_json::to_value(&task.components)
                .map_err(|e| Error::Internal(e.to_string()))?),
            status: Set(task.status.as_str().to_string()),
            message: Set(clip(&task.message)),
            plan: Set(None),
            conflict_strategy: Set(match task.conflict_strategy {
                ConflictStrategy::Queue => "queue",
                ConflictStrategy::Reject => "reject",
            }
            .to_string()),
            queue_expires_at: Set(task.queue_expires_at),
            workflow_run_id: Set(None),
            created_at: Set(task.created_at),
            updated_at: Set(task.updated_at),
            started_at: Set(None),
            finished_at: Set(None),
            requested_rule_id: Set(task.requested_rule_id.map(Into::into)),
            rule_id: Set(None),
            rule_version: Set(None),
            created_by: Set(task.created_by.clone()),
        };
    tasks::Entity::insert(row)
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// Deletes tasks whose run never started (still pending or waiting), with their steps: a
/// submission that could not start its runs leaves nothing behind.
pub(in crate::tasks) async fn discard_unstarted(
    db: &impl ConnectionTrait,
    ids: &[TaskId],
) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    task_steps::Entity::delete_many()
        .filter(task_steps::Column::TaskId.is_in(ids.iter().copied()))
        .exec(db)
        .await?;
    tasks::Entity::delete_many()
        .filter(tasks::Column::Id.is_in(ids.iter().copied()))
        .filter(
            tasks::Column::Status
                .is_in([TaskStatus::Pending.as_str(), TaskStatus::Waiting.as_str()]),
        )
        .exec(db)
        .await?;
    Ok(())
}

pub async fn get(db: &impl ConnectionTrait, id: TaskId) -> Result<Task> {
    let row = find()
        .filter(tasks::Column::Id.eq(id))
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("task", id))?;
    task_from_row(row)
}

/// The stored plan of a dispatched task.
pub async fn plan(db: &impl ConnectionTrait, id: TaskId) -> Result<Option<Plan>> {
    let row = tasks::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("task", id))?;
    row.plan
        .map(|p| serde_json::from_value(p).map_err(|e| corrupt("plan", id, e)))
        .transpose()
}

/// Tasks of a rack in the given states, oldest first.
pub async fn on_rack(
    db: &impl ConnectionTrait,
    rack_id: RackId,
    statuses: &[TaskStatus],
) -> Result<Vec<Task>> {
    on_racks(db, &[rack_id], statuses).await
}

/// Whether a task in `status` is on the rack: one indexed read, no row decoded.
pub async fn any_on_rack(
    db: &impl ConnectionTrait,
    rack_id: RackId,
    status: TaskStatus,
) -> Result<bool> {
    let found = tasks::Entity::find()
        .select_only()
        .column(tasks::Column::Id)
        .filter(tasks::Column::RackId.eq(rack_id))
        .filter(tasks::Column::Status.eq(status.as_str()))
        .limit(1)
        .into_tuple::<uuid::Uuid>()
        .one(db)
        .await?;
    Ok(found.is_some())
}

/// Tasks in the given states on any of the given racks, oldest first: one query for a page
/// of racks (the console's active-task column).
pub async fn on_racks(
    db: &impl ConnectionTrait,
    rack_ids: &[RackId],
    statuses: &[TaskStatus],
) -> Result<Vec<Task>> {
    if rack_ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = find()
        .filter(tasks::Column::RackId.is_in(rack_ids.iter().copied()))
        .filter(tasks::Column::Status.is_in(statuses.iter().map(|s| s.as_str())))
        .order_by_asc(tasks::Column::CreatedAt)
        .order_by_asc(tasks::Column::Id)
        .all(db)
        .await?;
    rows.into_iter().map(task_from_row).collect()
}

/// Tasks in the given states, oldest first (for sweeps).
pub async fn with_status(
    db: &impl ConnectionTrait,
    statuses: &[TaskStatus],
    limit: u64,
) -> Result<Vec<Task>> {
    let rows = find()
        .filter(tasks::Column::Status.is_in(statuses.iter().map(|s| s.as_str())))
        .order_by_asc(tasks::Column::CreatedAt)
        .limit(limit)
        .all(db)
        .await?;
    rows.into_iter().map(task_from_row).collect()
}

/// Moves a task to `to` if it is in one of `from`: the only way statuses change, so concurrent
/// writers (workflow, cancel, reconciler on another process) can never move a task backwards.
/// Returns whether this call made the change.
pub(in crate::tasks) async fn transition(
    db: &impl ConnectionTrait,
    id: TaskId,
    from: &[TaskStatus],
    to: TaskStatus,
    message: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let allowed: Vec<&str> = from
        .iter()
        .filter(|f| f.can_become(to))
        .map(|f| f.as_str())
        .collect();
    if allowed.is_empty() {
        return Ok(false);
    }
    let mut update = tasks::Entity::update_many()
        .col_expr(tasks::Column::Status, Expr::value(to.as_str()))
        .col_expr(tasks::Column::Message, Expr::value(clip(message)))
        .col_expr(tasks::Column::UpdatedAt, Expr::value(now));
    if to == TaskStatus::Running {
        update = update.col_expr(tasks::Column::StartedAt, Expr::value(now));
    }
    if to.is_terminal() {
        update = update.col_expr(tasks::Column::FinishedAt, Expr::value(now));
    }
    let result = update
        .filter(tasks::Column::Id.eq(id))
        .filter(tasks::Column::Status.is_in(allowed))
        .exec(db)
        .await?;
    Ok(result.rows_affected == 1)
}

/// Records the workflow run a dispatched task runs as.
pub(in crate::tasks) async fn record_run(
    db: &impl ConnectionTrait,
    id: TaskId,
    run_id: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    tasks::Entity::update_many()
        .col_expr(tasks::Column::WorkflowRunId, Expr::value(run_id))
        .col_expr(tasks::Column::UpdatedAt, Expr::value(now))
        .filter(tasks::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Latest change to a task or any of its steps, for change feeds.
pub async fn last_change(
    db: &impl ConnectionTrait,
    task_id: TaskId,
) -> Result<Option<DateTime<Utc>>> {
    let task: Option<DateTime<Utc>> = tasks::Entity::find_by_id(task_id)
        .select_only()
        .column(tasks::Column::UpdatedAt)
        .into_tuple()
        .one(db)
        .await?;
    let step: Option<Option<DateTime<Utc>>> = task_steps::Entity::find()
        .select_only()
        .column_as(task_steps::Column::UpdatedAt.max(), "m")
        .filter(task_steps::Column::TaskId.eq(task_id))
        .into_tuple()
        .one(db)
        .await?;
    Ok(task.map(|t| step.flatten().map_or(t, |s| Ord::max(s, t))))
}

pub use super::list::{TaskFilter, list, rack_names};
pub use super::steps::steps;
pub(in crate::tasks) use super::steps::{close_open_steps, record_plan};

/// How many tasks are in each of `statuses` right now (statuses with none are left out).
pub async fn count_by_status(
    db: &impl ConnectionTrait,
    statuses: &[TaskStatus],
) -> Result<Vec<(String, i64)>> {
    let names: Vec<&str> = statuses.iter().map(|s| s.as_str()).collect();
    Ok(tasks::Entity::find()
        .select_only()
        .column(tasks::Column::Status)
        .column_as(tasks::Column::Id.count(), "n")
        .filter(tasks::Column::Status.is_in(names))
        .group_by(tasks::Column::Status)
        .into_tuple()
        .all(db)
        .await?)
}
