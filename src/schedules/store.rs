//! Schedule storage: schedules with compare-and-set updates, their scopes, and their runs.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};
use uuid::Uuid;

use super::model::{
    OperationTemplate, OverlapPolicy, RackResult, Run, RunTrigger, Schedule, Scope, SpecKind,
    TimerSpec,
};
use crate::db::entities::task_schedules as schedules;
use crate::db::entities::{task_schedule_runs as runs, task_schedule_scopes as scopes};
use crate::db::page::{Cursor, Page, PageRequest, count_matches};
use crate::error::{Code, Error, Result};
use crate::ids::{RackId, ScheduleId, TaskId};

fn corrupt(what: &str, id: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("schedule {id}: stored {what} unreadable: {e}"))
}

fn json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value> {
    serde_json::to_value(value).map_err(|e| Error::Internal(e.to_string()))
}

fn from_row(row: schedules::Model) -> Result<Schedule> {
    let kind = SpecKind::parse(&row.spec_type)
        .ok_or_else(|| corrupt("spec type", row.id, &row.spec_type))?;
    let template: OperationTemplate =
        serde_json::from_value(row.operation).map_err(|e| corrupt("operation", row.id, e))?;
    let overlap = OverlapPolicy::parse(&row.overlap_policy)
        .ok_or_else(|| corrupt("overlap policy", row.id, &row.overlap_policy))?;
    Ok(Schedule {
        id: row.id.into(),
        name: row.name,
        timer: TimerSpec {
            kind,
            spec: row.spec,
            timezone: row.timezone,
        },
        template,
        overlap,
        enabled: row.enabled,
        next_run_at: row.next_run_at,
        last_run_at: row.last_run_at,
        revision: row.revision,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

fn to_row(s: &Schedule) -> Result<schedules::ActiveModel> {
    Ok(schedules::ActiveModel {
        id: Set(s.id.into()),
        name: Set(s.name.clone()),
        spec_type: Set(s.timer.kind.as_str().to_string()),
        spec: Set(s.timer.spec.clone()),
        timezone: Set(s.timer.timezone.clone()),
        operation: Set(json(&s.template)?),
        overlap_policy: Set(s.overlap.as_str().to_string()),
        enabled: Set(s.enabled),
        next_run_at: Set(s.next_run_at),
        last_run_at: Set(s.last_run_at),
        revision: Set(s.revision),
        created_at: Set(s.created_at),
        updated_at: Set(s.updated_at),
    })
}

fn name_taken(e: sea_orm::DbErr, name: &str) -> Error {
    if crate::db::is_unique_violation(&e) {
        Error::Conflict {
            code: Code::NameExists,
            message: format!("a schedule named {name:?} already exists"),
            errors: vec![crate::error::FieldError::new("name", "already taken")],
        }
    } else {
        e.into()
    }
}

/// Inserts a schedule with its scopes (call inside a transaction).
pub async fn insert(db: &impl ConnectionTrait, s: &Schedule, scope: &[Scope]) -> Result<()> {
    schedules::Entity::insert(to_row(s)?)
        .exec_without_returning(db)
        .await
        .map_err(|e| name_taken(e, &s.name))?;
    for row in scope {
        insert_scope(db, row).await?;
    }
    Ok(())
}

pub async fn get(db: &impl ConnectionTrait, id: ScheduleId) -> Result<Schedule> {
    schedules::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("schedule", id))
        .and_then(from_row)
}

/// Writes every field of `s` and bumps its revision, if nobody changed the row since `s` was
/// read. Returns whether it did: `false` means another writer (or process) won.
pub async fn update(db: &impl ConnectionTrait, s: &Schedule) -> Result<bool> {
    let mut row = to_row(s)?;
    row.revision = Set(s.revision + 1);
    let result = schedules::Entity::update_many()
        .set(row)
        .filter(schedules::Column::Id.eq(s.id))
        .filter(schedules::Column::Revision.eq(s.revision))
        .exec(db)
        .await
        .map_err(|e| name_taken(e, &s.name))?;
    Ok(result.rows_affected == 1)
}

pub async fn delete(db: &impl ConnectionTrait, id: ScheduleId) -> Result<bool> {
    let result = schedules::Entity::delete_by_id(id).exec(db).await?;
    Ok(result.rows_affected == 1)
}

/// Which schedules a list returns.
#[derive(Debug, Clone, Default)]
pub struct ScheduleFilter {
    pub enabled: Option<bool>,
    /// Schedules with this rack in scope.
    pub rack_id: Option<RackId>,
}

/// One page of schedules in name order.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &ScheduleFilter,
    page: &PageRequest,
) -> Result<Page<Schedule>> {
    let mut query = schedules::Entity::find();
    if let Some(enabled) = filter.enabled {
        query = query.filter(schedules::Column::Enabled.eq(enabled));
    }
    if let Some(rack) = filter.rack_id {
        let ids: Vec<Uuid> = scopes::Entity::find()
            .select_only()
            .column(scopes::Column::ScheduleId)
            .filter(scopes::Column::RackId.eq(rack))
            .into_tuple()
            .all(db)
            .await?;
        query = query.filter(schedules::Column::Id.is_in(ids));
    }
    let total = count_matches(db, &query, page.count).await?;
    if let Some(after) = &page.after {
        query = query.filter(
            sea_orm::Condition::any()
                .add(schedules::Column::Name.gt(after.name.as_str()))
                .add(
                    sea_orm::Condition::all()
                        .add(schedules::Column::Name.eq(after.name.as_str()))
                        .add(schedules::Column::Id.gt(after.id)),
                ),
        );
    }
    let rows = query
        .order_by_asc(schedules::Column::Name)
        .order_by_asc(schedules::Column::Id)
        .limit(page.limit + 1)
        .all(db)
        .await?
        .into_iter()
        .map(from_row)
        .collect::<Result<Vec<_>>>()?;
    Ok(Page::from_rows(rows, page.limit, total, |s| Cursor {
        name: s.name.clone(),
        id: s.id.into(),
    }))
}

/// Enabled schedules whose next fire is at or before `now`, most overdue first.
pub async fn due(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<Schedule>> {
    schedules::Entity::find()
        .filter(schedules::Column::Enabled.eq(true))
        .filter(schedules::Column::NextRunAt.lte(now))
        .order_by_asc(schedules::Column::NextRunAt)
        .limit(limit)
        .all(db)
        .await?
        .into_iter()
        .map(from_row)
        .collect()
}

/// Every schedule with a scope on one of `racks`, with its scopes on them.
pub async fn on_racks(
    db: &impl ConnectionTrait,
    racks: &[RackId],
) -> Result<Vec<(Schedule, Vec<Scope>)>> {
    let rows = scopes::Entity::find()
        .filter(scopes::Column::RackId.is_in(racks.iter().copied()))
        .order_by_asc(scopes::Column::CreatedAt)
        .all(db)
        .await?;
    let mut out: Vec<(Schedule, Vec<Scope>)> = Vec::new();
    for row in rows {
        let scope = scope_from_row(row)?;
        match out.iter_mut().find(|(s, _)| s.id == scope.schedule_id) {
            Some((_, list)) => list.push(scope),
            None => out.push((get(db, scope.schedule_id).await?, vec![scope])),
        }
    }
    Ok(out)
}

fn scope_from_row(row: scopes::Model) -> Result<Scope> {
    Ok(Scope {
        component_types: serde_json::from_value(row.component_types)
            .map_err(|e| corrupt("scope", row.schedule_id, e))?,
        id: row.id,
        schedule_id: row.schedule_id.into(),
        rack_id: row.rack_id.into(),
        last_task_id: row.last_task_id.map(Into::into),
        nvl_domain_id: row.nvl_domain_id.map(Into::into),
        created_at: row.created_at,
    })
}

/// A schedule's scopes, oldest first.
pub async fn scopes(db: &impl ConnectionTrait, schedule_id: ScheduleId) -> Result<Vec<Scope>> {
    scopes::Entity::find()
        .filter(scopes::Column::ScheduleId.eq(schedule_id))
        .order_by_asc(scopes::Column::CreatedAt)
        .order_by_asc(scopes::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .map(scope_from_row)
        .collect()
}

pub async fn insert_scope(db: &impl ConnectionTrait, s: &Scope) -> Result<()> {
    scopes::Entity::insert(scopes::ActiveModel {
        id: Set(s.id),
        schedule_id: Set(s.schedule_id.into()),
        rack_id: Set(s.rack_id.into()),
        component_types: Set(json(&s.component_types)?),
        last_task_id: Set(s.last_task_id.map(Into::into)),
        nvl_domain_id: Set(s.nvl_domain_id.map(|d| d.uuid())),
        created_at: Set(s.created_at),
    })
    .exec_without_returning(db)
    .await?;
    Ok(())
}

pub async fn set_scope_types(db: &impl ConnectionTrait, s: &Scope) -> Result<()> {
    scopes::Entity::update_many()
        .col_expr(
            scopes::Column::ComponentTypes,
            Expr::value(json(&s.component_types)?),
        )
        .filter(scopes::Column::Id.eq(s.id))
        .exec(db)
        .await?;
    Ok(())
}

pub async fn delete_scope(db: &impl ConnectionTrait, id: Uuid) -> Result<()> {
    scopes::Entity::delete_by_id(id).exec(db).await?;
    Ok(())
}

/// Remembers the task a fire created on a scope's rack, for the next overlap check.
pub async fn set_last_task(
    db: &impl ConnectionTrait,
    schedule_id: ScheduleId,
    rack_id: RackId,
    task: TaskId,
) -> Result<()> {
    scopes::Entity::update_many()
        .col_expr(scopes::Column::LastTaskId, Expr::value(task))
        .filter(scopes::Column::ScheduleId.eq(schedule_id))
        .filter(scopes::Column::RackId.eq(rack_id))
        .exec(db)
        .await?;
    Ok(())
}

fn run_from_row(row: runs::Model) -> Result<Run> {
    let results: Vec<RackResult> =
        serde_json::from_value(row.results).map_err(|e| corrupt("run", row.schedule_id, e))?;
    Ok(Run {
        id: row.id,
        schedule_id: row.schedule_id.into(),
        trigger: if row.trigger == "manual" {
            RunTrigger::Manual
        } else {
            RunTrigger::Schedule
        },
        fired_at: row.fired_at,
        done: row.status == "done",
        results,
        finished_at: row.finished_at,
    })
}

fn run_row(r: &Run) -> Result<runs::ActiveModel> {
    Ok(runs::ActiveModel {
        id: Set(r.id),
        schedule_id: Set(r.schedule_id.into()),
        trigger: Set(r.trigger.as_str().to_string()),
        fired_at: Set(r.fired_at),
        status: Set(if r.done { "done" } else { "submitting" }.to_string()),
        results: Set(json(&r.results)?),
        finished_at: Set(r.finished_at),
    })
}

pub async fn insert_run(db: &impl ConnectionTrait, r: &Run) -> Result<()> {
    runs::Entity::insert(run_row(r)?)
        .exec_without_returning(db)
        .await?;
    Ok(())
}

pub async fn save_run(db: &impl ConnectionTrait, r: &Run) -> Result<()> {
    runs::Entity::update(run_row(r)?).exec(db).await?;
    Ok(())
}

/// A schedule's latest runs, newest first.
pub async fn runs(
    db: &impl ConnectionTrait,
    schedule_id: ScheduleId,
    limit: u64,
) -> Result<Vec<Run>> {
    runs::Entity::find()
        .filter(runs::Column::ScheduleId.eq(schedule_id))
        .order_by_desc(runs::Column::FiredAt)
        .order_by_desc(runs::Column::Id)
        .limit(limit)
        .all(db)
        .await?
        .into_iter()
        .map(run_from_row)
        .collect()
}

/// Runs still submitting whose fire is older than `before`: their process died mid-fire.
pub async fn stalled_runs(db: &impl ConnectionTrait, before: DateTime<Utc>) -> Result<Vec<Run>> {
    runs::Entity::find()
        .filter(runs::Column::Status.eq("submitting"))
        .filter(runs::Column::FiredAt.lt(before))
        .limit(10)
        .all(db)
        .await?
        .into_iter()
        .map(run_from_row)
        .collect()
}
