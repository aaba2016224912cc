//! Step records: one per device and stage of a dispatched task, and their progress.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, Statement, Value,
};
use uuid::Uuid;

use super::model::{StepEvent, StepRecord, StepStatus, StepUpdate};
use super::store::{MAX_MESSAGE, clip, corrupt};
use crate::db::entities::{components, task_steps, tasks};
use crate::domain::ComponentType;
use crate::error::{Error, Result};
use crate::ids::TaskId;
use crate::operations::plan::Plan;

/// Records the plan a dispatched task runs and creates a pending step per device and stage.
pub(in crate::tasks) async fn record_plan(
    db: &impl ConnectionTrait,
    id: TaskId,
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
                task_id: Set(id.into()),
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

/// One step report as the database writes it: the clipped event as a JSON object and the
/// times it sets.
pub(in crate::tasks) struct StepRow {
    pub status: &'static str,
    pub attempts: i32,
    pub error: Option<String>,
    pub event: String,
    pub now: DateTime<Utc>,
    /// The start time, if the step has begun (kept when it already has one).
    pub started: Option<DateTime<Utc>>,
    /// The end time, if the step ended.
    pub finished: Option<DateTime<Utc>>,
    pub task_id: Uuid,
    pub stage: i32,
    pub component_id: Uuid,
    /// The power to record on the component (see [`StepUpdate::power_seen`]).
    pub power: Option<&'static str>,
}

impl StepRow {
    pub fn of(update: &StepUpdate, now: DateTime<Utc>) -> Result<Self> {
        let event = StepEvent {
            at: now,
            message: update.event.chars().take(MAX_MESSAGE).collect(),
        };
        let event = serde_json::to_string(&event).map_err(|e| Error::Internal(e.to_string()))?;
        let ended = matches!(
            update.status,
            StepStatus::Succeeded | StepStatus::Failed | StepStatus::Cancelled
        );
        Ok(Self {
            status: update.status.as_str(),
            attempts: update.attempts as i32,
            error: update.error.as_deref().map(clip),
            event,
            now,
            started: (update.status != StepStatus::Pending).then_some(now),
            finished: ended.then_some(now),
            task_id: update.task_id.into(),
            stage: update.stage as i32,
            component_id: update.component_id.into(),
            power: update.power_seen.map(|p| p.as_str()),
        })
    }
}

/// Writes one component's step progress on SQLite (PostgreSQL writes them through
/// `step_batch`, the same compare-and-set for many rows): the row changes only while the step is
/// unfinished, so a retried activity or a late writer cannot undo a final result, and the event
/// is appended by the database rather than read and written back (two concurrent reports each
/// keep their line).
pub(in crate::tasks) async fn update_step(db: &impl ConnectionTrait, row: &StepRow) -> Result<()> {
    let values: [Value; 10] = [
        row.status.into(),
        row.attempts.into(),
        row.error.clone().into(),
        row.event.clone().into(),
        row.now.into(),
        row.started.into(),
        row.finished.into(),
        row.task_id.into(),
        row.stage.into(),
        row.component_id.into(),
    ];
    let statement =
        Statement::from_sql_and_values(db.get_database_backend(), UPDATE_STEP_SQLITE, values);
    let changed = db.execute_raw(statement).await?.rows_affected() > 0;
    if let Some(power) = row.power {
        // What a sighting writes (`drift::store`): the observed power and the last sighting.
        components::Entity::update_many()
            .col_expr(components::Column::PowerState, Expr::value(power))
            .col_expr(components::Column::LastSeenAt, Expr::value(row.now))
            .filter(components::Column::Id.eq(row.component_id))
            .filter(components::Column::DeletedAt.is_null())
            .exec(db)
            .await?;
    }
    if changed {
        return Ok(());
    }
    unchanged(db, row).await
}

/// A report that changed nothing: fine when its step has ended (it is left alone), `NotFound`
/// when there is no such step.
pub(in crate::tasks) async fn unchanged(db: &impl ConnectionTrait, row: &StepRow) -> Result<()> {
    let exists = task_steps::Entity::find()
        .filter(task_steps::Column::TaskId.eq(row.task_id))
        .filter(task_steps::Column::Stage.eq(row.stage))
        .filter(task_steps::Column::ComponentId.eq(row.component_id))
        .count(db)
        .await?;
    if exists == 0 {
        return Err(Error::not_found(
            "task step",
            format!("{}/{}/{}", row.task_id, row.stage, row.component_id),
        ));
    }
    Ok(())
}

/// [`update_step`]'s statement: `$1` status, `$2` attempts, `$3` error, `$4` the event as a
/// JSON object, `$5` now, `$6` the start time if the step has begun, `$7` the end time if it
/// ended; `$8`–`$10` the step's task, stage and component.
const UPDATE_STEP_SQLITE: &str = "UPDATE task_steps SET status = $1, attempts = $2, error = $3, \
events = json_insert(events, '$[#]', json($4)), started_at = COALESCE(started_at, $6), \
finished_at = COALESCE($7, finished_at), updated_at = $5 \
WHERE task_id = $8 AND stage = $9 AND component_id = $10 \
AND status NOT IN ('succeeded', 'failed', 'cancelled')";

/// Marks every unfinished step of a task cancelled (the task was cancelled or failed early).
pub(in crate::tasks) async fn close_open_steps(
    db: &impl ConnectionTrait,
    task_id: TaskId,
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
pub async fn steps(db: &impl ConnectionTrait, task_id: TaskId) -> Result<Vec<StepRecord>> {
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
                component_id: row.component_id.into(),
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
