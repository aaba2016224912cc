//! Rollout storage: one row per rollout holding its spec and waves as JSON. Every update is a
//! compare-and-set on the row's revision; the rollout workflow's activities are its one writer.

use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect,
};

use super::model::{Rollout, RolloutStatus};
use crate::db::entities::rollouts;
use crate::db::page::{Cursor, Page, PageRequest, count_matches};
use crate::error::{Error, Result};
use crate::ids::RolloutId;
use crate::inventory::query::text_matches;

fn corrupt(what: &str, id: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("rollout {id}: stored {what} unreadable: {e}"))
}

fn json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value> {
    serde_json::to_value(value).map_err(|e| Error::Internal(e.to_string()))
}

fn from_row(row: rollouts::Model) -> Result<Rollout> {
    Ok(Rollout {
        id: row.id.into(),
        spec: serde_json::from_value(row.spec).map_err(|e| corrupt("spec", row.id, e))?,
        status: RolloutStatus::parse(&row.status)
            .ok_or_else(|| corrupt("status", row.id, &row.status))?,
        waves: serde_json::from_value(row.waves).map_err(|e| corrupt("waves", row.id, e))?,
        current_wave: row.current_wave.map(|w| w.max(0) as u32),
        approved: row.approved,
        message: row.message,
        revision: row.revision,
        created_at: row.created_at,
        updated_at: row.updated_at,
        started_at: row.started_at,
        finished_at: row.finished_at,
    })
}

fn to_row(r: &Rollout) -> Result<rollouts::ActiveModel> {
    Ok(rollouts::ActiveModel {
        id: Set(r.id.into()),
        name: Set(r.spec.name.clone()),
        status: Set(r.status.as_str().to_string()),
        spec: Set(json(&r.spec)?),
        waves: Set(json(&r.waves)?),
        current_wave: Set(r.current_wave.map(|w| w as i32)),
        approved: Set(r.approved),
        message: Set(r.message.clone()),
        revision: Set(r.revision),
        created_at: Set(r.created_at),
        updated_at: Set(r.updated_at),
        started_at: Set(r.started_at),
        finished_at: Set(r.finished_at),
    })
}

pub async fn insert(db: &impl ConnectionTrait, r: &Rollout) -> Result<()> {
    rollouts::Entity::insert(to_row(r)?)
        .exec_without_returning(db)
        .await?;
    Ok(())
}

pub async fn get(db: &impl ConnectionTrait, id: RolloutId) -> Result<Rollout> {
    let row = rollouts::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("rollout", id))?;
    from_row(row)
}

/// Writes `r` over the stored row if nobody changed it since `r` was read (same revision) and
/// the stored rollout has not ended; bumps the revision. Returns whether it was written.
pub async fn update(db: &impl ConnectionTrait, r: &Rollout) -> Result<bool> {
    let mut row = to_row(r)?;
    row.revision = Set(r.revision + 1);
    let ended: Vec<&str> = RolloutStatus::ALL
        .into_iter()
        .filter(|s| s.is_terminal())
        .map(RolloutStatus::as_str)
        .collect();
    let result = rollouts::Entity::update_many()
        .set(row)
        .filter(rollouts::Column::Id.eq(r.id))
        .filter(rollouts::Column::Revision.eq(r.revision))
        .filter(rollouts::Column::Status.is_not_in(ended))
        .exec(db)
        .await?;
    Ok(result.rows_affected == 1)
}

/// Which rollouts a list returns.
#[derive(Debug, Clone, Default)]
pub struct RolloutFilter {
    pub statuses: Vec<RolloutStatus>,
    /// Exact name, or a glob with `*`.
    pub name: Option<String>,
}

/// One page of rollouts, newest first (ids are time-ordered).
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &RolloutFilter,
    page: &PageRequest,
) -> Result<Page<Rollout>> {
    let mut query = rollouts::Entity::find();
    if !filter.statuses.is_empty() {
        query = query
            .filter(rollouts::Column::Status.is_in(filter.statuses.iter().map(|s| s.as_str())));
    }
    if let Some(name) = &filter.name {
        query = query.filter(text_matches(rollouts::Column::Name, name));
    }
    let total = count_matches(db, &query, page.count).await?;
    if let Some(after) = &page.after {
        query = query.filter(rollouts::Column::Id.lt(after.id));
    }
    let rows = query
        .order_by_desc(rollouts::Column::Id)
        .limit(page.limit + 1)
        .all(db)
        .await?
        .into_iter()
        .map(from_row)
        .collect::<Result<Vec<_>>>()?;
    Ok(Page::from_rows(rows, page.limit, total, |r| Cursor {
        name: String::new(),
        id: r.id.into(),
    }))
}
