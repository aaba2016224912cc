//! Step records: one per device and stage of a dispatched task, and their progress.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
};
use uuid::Uuid;

use super::model::{StepEvent, StepRecord, StepStatus, StepUpdate};
use super::store::{MAX_MESSAGE, clip, corrupt};
use crate::db::entities::{task_steps, tasks};
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

/// Writes one component's step progress. Steps already finished are left alone, so a retried
/// activity or a late writer cannot undo a final result.
pub(in crate::tasks) async fn update_step(
    db: &impl ConnectionTrait,
    update: &StepUpdate,
    now: DateTime<Utc>,
) -> Result<()> {
    let StepUpdate {
        task_id,
        stage,
        component_id,
        status,
        attempts,
        ref error,
        ref event,
    } = *update;
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
    am.error = Set(error.as_deref().map(clip));
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
