//! Task storage: rows, compare-and-set status changes, step records, and the task list.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use uuid::Uuid;

use super::model::{StepEvent, StepRecord, StepStatus, Task, TaskComponent, TaskStatus};
use crate::db::entities::{racks, task_steps, tasks};
use crate::error::{Error, Result};
use crate::inventory::model::ComponentType;
use crate::inventory::query::Page;
use crate::operations::model::{ConflictStrategy, Operation};
use crate::operations::plan::Plan;

/// Longest status message kept; device errors can be long.
const MAX_MESSAGE: usize = 512;

fn clip(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    first.chars().take(MAX_MESSAGE).collect()
}

fn corrupt(what: &str, id: Uuid, e: impl std::fmt::Display) -> Error {
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
        id: row.id,
        request_id: row.request_id,
        operation,
        rack_id: row.rack_id,
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
        requested_rule_id: row.requested_rule_id,
    })
}

/// Inserts a new task row.
pub async fn insert(db: &impl ConnectionTrait, task: &Task) -> Result<()> {
    let row =
        tasks::ActiveModel {
            id: Set(task.id),
            request_id: Set(task.request_id),
            operation: Set(task.operation.code().to_string()),
            task_type: Set(serde_json::to_value(task.operation.task_type())
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()),
            spec: Set(serde_json::to_value(&task.operation)
                .map_err(|e| Error::Internal(e.to_string()))?),
            description: Set(task.description.clone()),
            rack_id: Set(task.rack_id),
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
            requested_rule_id: Set(task.requested_rule_id),
            rule_id: Set(None),
            rule_version: Set(None),
        };
    tasks::Entity::insert(row)
        .exec_without_returning(db)
        .await?;
    Ok(())
}

pub async fn get(db: &impl ConnectionTrait, id: Uuid) -> Result<Task> {
    let row = tasks::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("task", id))?;
    task_from_row(row)
}

/// The stored plan of a dispatched task.
pub async fn plan(db: &impl ConnectionTrait, id: Uuid) -> Result<Option<Plan>> {
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
    rack_id: Uuid,
    statuses: &[TaskStatus],
) -> Result<Vec<Task>> {
    let rows = tasks::Entity::find()
        .filter(tasks::Column::RackId.eq(rack_id))
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
    let rows = tasks::Entity::find()
        .filter(tasks::Column::Status.is_in(statuses.iter().map(|s| s.as_str())))
        .order_by_asc(tasks::Column::CreatedAt)
        .limit(limit)
        .all(db)
        .await?;
    rows.into_iter().map(task_from_row).collect()
}

/// Serializes writers on one rack for the rest of the transaction: a no-op update takes the
/// rack's row lock on PostgreSQL and the write lock on SQLite, so two submissions cannot both
/// pass the conflict check.
pub async fn lock_rack(db: &impl ConnectionTrait, rack_id: Uuid) -> Result<()> {
    racks::Entity::update_many()
        .col_expr(racks::Column::Revision, Expr::col(racks::Column::Revision))
        .filter(racks::Column::Id.eq(rack_id))
        .exec(db)
        .await?;
    Ok(())
}

/// Moves a task to `to` if it is in one of `from`: the only way statuses change, so concurrent
/// writers (workflow, cancel, reconciler on another process) can never move a task backwards.
/// Returns whether this call made the change.
pub async fn transition(
    db: &impl ConnectionTrait,
    id: Uuid,
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

/// Records the plan a dispatched task runs and creates a pending step per device and stage.
pub async fn record_plan(
    db: &impl ConnectionTrait,
    id: Uuid,
    plan: &Plan,
    now: DateTime<Utc>,
) -> Result<()> {
    let json = serde_json::to_value(plan).map_err(|e| Error::Internal(e.to_string()))?;
    tasks::Entity::update_many()
        .col_expr(tasks::Column::Plan, Expr::value(json))
        .col_expr(tasks::Column::RuleId, Expr::value(plan.rule.id))
        .col_expr(tasks::Column::RuleVersion, Expr::value(plan.rule.version))
        .col_expr(tasks::Column::UpdatedAt, Expr::value(now))
        .filter(tasks::Column::Id.eq(id))
        .exec(db)
        .await?;
    task_steps::Entity::delete_many()
        .filter(task_steps::Column::TaskId.eq(id))
        .exec(db)
        .await?;
    let rows: Vec<task_steps::ActiveModel> = plan
        .stages
        .iter()
        .flat_map(|stage| {
            stage.devices.iter().map(move |d| task_steps::ActiveModel {
                id: Set(Uuid::now_v7()),
                task_id: Set(id),
                stage: Set(stage.number as i32),
                component_id: Set(d.component_id),
                component_type: Set(d.kind.as_str().to_string()),
                component_name: Set(d.name.clone()),
                action: Set(stage.summary()),
                status: Set(StepStatus::Pending.as_str().to_string()),
                attempts: Set(0),
                error: Set(None),
                events: Set(serde_json::json!([])),
                started_at: Set(None),
                finished_at: Set(None),
                updated_at: Set(now),
            })
        })
        .collect();
    for chunk in rows.chunks(200) {
        task_steps::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(db)
            .await?;
    }
    Ok(())
}

/// Records the workflow run a dispatched task runs as.
pub async fn record_run(
    db: &impl ConnectionTrait,
    id: Uuid,
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

/// Writes one component's step progress. Steps already finished are left alone, so a retried
/// activity or a late writer cannot undo a final result.
#[allow(clippy::too_many_arguments)]
pub async fn update_step(
    db: &impl ConnectionTrait,
    task_id: Uuid,
    stage: u32,
    component_id: Uuid,
    status: StepStatus,
    attempts: u32,
    error: Option<&str>,
    event: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let Some(row) = task_steps::Entity::find()
        .filter(task_steps::Column::TaskId.eq(task_id))
        .filter(task_steps::Column::Stage.eq(stage as i32))
        .filter(task_steps::Column::ComponentId.eq(component_id))
        .one(db)
        .await?
    else {
        return Err(Error::not_found(
            "task step",
            format!("{task_id}/{stage}/{component_id}"),
        ));
    };
    if matches!(
        StepStatus::parse(&row.status),
        Some(StepStatus::Succeeded | StepStatus::Failed | StepStatus::Cancelled)
    ) {
        return Ok(());
    }
    let mut events: Vec<StepEvent> = serde_json::from_value(row.events.clone()).unwrap_or_default();
    events.push(StepEvent {
        at: now,
        message: event.chars().take(MAX_MESSAGE).collect(),
    });
    let mut am: task_steps::ActiveModel = row.clone().into();
    am.status = Set(status.as_str().to_string());
    am.attempts = Set(attempts as i32);
    am.error = Set(error.map(clip));
    am.events = Set(serde_json::to_value(&events).map_err(|e| Error::Internal(e.to_string()))?);
    if row.started_at.is_none() && status != StepStatus::Pending {
        am.started_at = Set(Some(now));
    }
    if matches!(
        status,
        StepStatus::Succeeded | StepStatus::Failed | StepStatus::Cancelled
    ) {
        am.finished_at = Set(Some(now));
    }
    am.updated_at = Set(now);
    task_steps::Entity::update(am).exec(db).await?;
    Ok(())
}

/// Marks every unfinished step of a task cancelled (the task was cancelled or failed early).
pub async fn close_open_steps(
    db: &impl ConnectionTrait,
    task_id: Uuid,
    status: StepStatus,
    now: DateTime<Utc>,
) -> Result<()> {
    task_steps::Entity::update_many()
        .col_expr(task_steps::Column::Status, Expr::value(status.as_str()))
        .col_expr(task_steps::Column::FinishedAt, Expr::value(now))
        .col_expr(task_steps::Column::UpdatedAt, Expr::value(now))
        .filter(task_steps::Column::TaskId.eq(task_id))
        .filter(
            task_steps::Column::Status
                .is_in([StepStatus::Pending.as_str(), StepStatus::Running.as_str()]),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// Every step of a task, by stage and component name.
pub async fn steps(db: &impl ConnectionTrait, task_id: Uuid) -> Result<Vec<StepRecord>> {
    let rows = task_steps::Entity::find()
        .filter(task_steps::Column::TaskId.eq(task_id))
        .order_by_asc(task_steps::Column::Stage)
        .order_by_asc(task_steps::Column::ComponentName)
        .all(db)
        .await?;
    rows.into_iter()
        .map(|row| {
            Ok(StepRecord {
                stage: row.stage as u32,
                component_id: row.component_id,
                kind: ComponentType::parse(&row.component_type)
                    .ok_or_else(|| corrupt("step type", task_id, &row.component_type))?,
                name: row.component_name,
                action: row.action,
                status: StepStatus::parse(&row.status)
                    .ok_or_else(|| corrupt("step status", task_id, &row.status))?,
                attempts: u32::try_from(row.attempts).unwrap_or(0),
                error: row.error,
                events: serde_json::from_value(row.events).unwrap_or_default(),
                started_at: row.started_at,
                finished_at: row.finished_at,
            })
        })
        .collect()
}

/// Latest change to a task or any of its steps, for change feeds.
pub async fn last_change(
    db: &impl ConnectionTrait,
    task_id: Uuid,
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

/// Filters of the task list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    pub rack_id: Option<Uuid>,
    pub component_id: Option<Uuid>,
    pub statuses: Vec<TaskStatus>,
    pub operation: Option<String>,
    pub request_id: Option<Uuid>,
}

/// Keyset position in the newest-first task order.
fn encode_cursor(task: &Task) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::json!([task.created_at, task.id]).to_string())
}

fn decode_cursor(token: &str) -> Result<(DateTime<Utc>, Uuid)> {
    let bad = || Error::invalid("cursor", "not a cursor returned by this API");
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    serde_json::from_slice(&bytes).map_err(|_| bad())
}

/// One page of tasks, newest first.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &TaskFilter,
    limit: u64,
    cursor: Option<&str>,
) -> Result<Page<Task>> {
    let mut query = tasks::Entity::find();
    if let Some(rack) = filter.rack_id {
        query = query.filter(tasks::Column::RackId.eq(rack));
    }
    if let Some(request) = filter.request_id {
        query = query.filter(tasks::Column::RequestId.eq(request));
    }
    if !filter.statuses.is_empty() {
        query =
            query.filter(tasks::Column::Status.is_in(filter.statuses.iter().map(|s| s.as_str())));
    }
    if let Some(op) = &filter.operation {
        query = query.filter(tasks::Column::Operation.eq(op.as_str()));
    }
    if let Some(component) = filter.component_id {
        // Steps index every component a dispatched task drives; waiting tasks have no steps yet,
        // so their component list is matched as text (a UUID cannot occur by accident).
        let by_step = sea_orm::sea_query::Query::select()
            .column(task_steps::Column::TaskId)
            .from(task_steps::Entity)
            .and_where(Expr::col(task_steps::Column::ComponentId).eq(component))
            .to_owned();
        let as_text = Expr::col(tasks::Column::Components)
            .cast_as("text")
            .like(format!("%{component}%"));
        query = query.filter(
            Condition::any()
                .add(tasks::Column::Id.in_subquery(by_step))
                .add(as_text),
        );
    }
    let total = query.clone().count(db).await?;
    if let Some((at, id)) = cursor
        .filter(|c| !c.is_empty())
        .map(decode_cursor)
        .transpose()?
    {
        // The `created_at <= cursor` bound lets the index seek to the cursor (see `after_cursor`).
        query = query.filter(
            Condition::all().add(tasks::Column::CreatedAt.lte(at)).add(
                Condition::any().add(tasks::Column::CreatedAt.lt(at)).add(
                    Condition::all()
                        .add(tasks::Column::CreatedAt.eq(at))
                        .add(tasks::Column::Id.lt(id)),
                ),
            ),
        );
    }
    let rows = query
        .order_by_desc(tasks::Column::CreatedAt)
        .order_by_desc(tasks::Column::Id)
        .limit(limit + 1)
        .all(db)
        .await?;
    // One row past the page only tells whether another page follows.
    let more = rows.len() as u64 > limit;
    let mut items: Vec<Task> = rows.into_iter().map(task_from_row).collect::<Result<_>>()?;
    items.truncate(limit as usize);
    let next_cursor = if more {
        items.last().map(encode_cursor)
    } else {
        None
    };
    Ok(Page {
        items,
        next_cursor,
        total,
    })
}
