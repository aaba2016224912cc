//! The drift table: replace a source's drift, keep it (stale) when the source is down, list and
//! count. What managers saw goes into the components' observed columns through [`super::sightings`].

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter,
    QuerySelect,
};
use uuid::Uuid;

use super::{Diff, DiffKind, FieldDiff};
use crate::db::entities::{component_drifts as drifts, components};
use crate::db::page::{Cursor, Page, PageRequest, keyset_rows};
use crate::domain::ComponentType;
use crate::error::{Error, Result};

/// A recorded difference, as the last sync of its source left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftRecord {
    pub id: Uuid,
    pub source: String,
    pub diff: Diff,
    /// The source did not answer the last sync: this is what it said before.
    pub stale: bool,
    /// When this difference was first recorded (kept while it persists).
    pub since: DateTime<Utc>,
    /// The sync that last confirmed it.
    pub checked_at: DateTime<Utc>,
}

/// Filters of the drift list; all given ones must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriftFilter {
    pub rack_id: Option<Uuid>,
    pub kind: Option<ComponentType>,
    pub diff_kind: Option<DiffKind>,
}

/// Drift counts of one rack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriftCounts {
    pub missing: u64,
    pub unexpected: u64,
    pub mismatch: u64,
    pub unreachable: u64,
    pub rejected: u64,
    /// Of those, how many come from a source that did not answer the last sync.
    pub stale: u64,
}

/// What identifies "the same difference" across syncs, to keep its `since`.
type Key = (String, Option<Uuid>, Option<String>);

fn key(kind: &str, component_id: Option<Uuid>, address: Option<&str>) -> Key {
    (kind.to_string(), component_id, address.map(String::from))
}

fn row(source: &str, diff: &Diff, since: DateTime<Utc>, now: DateTime<Utc>) -> drifts::ActiveModel {
    drifts::ActiveModel {
        id: Set(Uuid::now_v7()),
        source: Set(source.to_string()),
        component_type: Set(diff.component_type.as_str().to_string()),
        kind: Set(diff.kind.as_str().to_string()),
        component_id: Set(diff.component_id),
        external_id: Set(diff.external_id.clone()),
        address: Set(diff.address.clone()),
        fields: Set(serde_json::to_value(&diff.fields).unwrap_or_default()),
        message: Set(diff.message.clone()),
        stale: Set(false),
        since: Set(since),
        checked_at: Set(now),
    }
}

async fn previous_since(
    db: &impl ConnectionTrait,
    source: &str,
) -> Result<HashMap<Key, DateTime<Utc>>> {
    Ok(drifts::Entity::find()
        .filter(drifts::Column::Source.eq(source))
        .all(db)
        .await?
        .into_iter()
        .map(|r| (key(&r.kind, r.component_id, r.address.as_deref()), r.since))
        .collect())
}

async fn insert(db: &impl ConnectionTrait, rows: Vec<drifts::ActiveModel>) -> Result<()> {
    // Chunked to stay under every backend's bind-parameter limit.
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<_> = rows.by_ref().take(200).collect();
        drifts::Entity::insert_many(chunk)
            .exec_without_returning(db)
            .await?;
    }
    Ok(())
}

/// Replaces everything recorded for `source` with `diffs` (run inside the sync's transaction).
pub async fn replace_source(
    db: &impl ConnectionTrait,
    source: &str,
    diffs: &[Diff],
    now: DateTime<Utc>,
) -> Result<()> {
    let since = previous_since(db, source).await?;
    drifts::Entity::delete_many()
        .filter(drifts::Column::Source.eq(source))
        .exec(db)
        .await?;
    let rows = diffs
        .iter()
        .map(|d| {
            let k = key(d.kind.as_str(), d.component_id, d.address.as_deref());
            row(source, d, since.get(&k).copied().unwrap_or(now), now)
        })
        .collect();
    insert(db, rows).await
}

/// A source that did not answer: its previous drift stays, marked stale, beside one row saying
/// why it is unreachable.
pub async fn mark_unreachable(
    db: &impl ConnectionTrait,
    source: &str,
    kind: ComponentType,
    message: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let outage = Condition::all()
        .add(drifts::Column::Source.eq(source))
        .add(drifts::Column::Kind.eq(DiffKind::Unreachable.as_str()))
        .add(drifts::Column::ComponentId.is_null())
        .add(drifts::Column::Address.is_null());
    let since = drifts::Entity::find()
        .filter(outage.clone())
        .one(db)
        .await?
        .map_or(now, |r| r.since);
    drifts::Entity::delete_many()
        .filter(outage)
        .exec(db)
        .await?;
    drifts::Entity::update_many()
        .col_expr(drifts::Column::Stale, Expr::value(true))
        .filter(drifts::Column::Source.eq(source))
        .exec(db)
        .await?;
    let diff = Diff {
        kind: DiffKind::Unreachable,
        component_type: kind,
        component_id: None,
        rack_id: None,
        external_id: None,
        address: None,
        fields: Vec::new(),
        message: Some(message.to_string()),
    };
    insert(db, vec![row(source, &diff, since, now)]).await
}

/// Forgets drift of sources no longer configured.
pub async fn keep_only_sources(db: &impl ConnectionTrait, sources: &[String]) -> Result<()> {
    drifts::Entity::delete_many()
        .filter(drifts::Column::Source.is_not_in(sources.iter().cloned()))
        .exec(db)
        .await?;
    Ok(())
}

fn record_from_row(r: drifts::Model, rack_id: Option<Uuid>) -> Result<DriftRecord> {
    let bad = |what: &str| Error::Internal(format!("drift {} has a bad {what}", r.id));
    Ok(DriftRecord {
        id: r.id,
        diff: Diff {
            kind: DiffKind::parse(&r.kind).ok_or_else(|| bad("kind"))?,
            component_type: ComponentType::parse(&r.component_type)
                .ok_or_else(|| bad("component type"))?,
            component_id: r.component_id,
            rack_id,
            external_id: r.external_id,
            address: r.address,
            fields: serde_json::from_value::<Vec<FieldDiff>>(r.fields)
                .map_err(|_| bad("fields"))?,
            message: r.message,
        },
        source: r.source,
        stale: r.stale,
        since: r.since,
        checked_at: r.checked_at,
    })
}

/// Rack of each given component.
async fn racks_of(db: &impl ConnectionTrait, ids: &[Uuid]) -> Result<HashMap<Uuid, Uuid>> {
    let mut out = HashMap::new();
    for chunk in ids.chunks(500) {
        let rows: Vec<(Uuid, Option<Uuid>)> = components::Entity::find()
            .select_only()
            .column(components::Column::Id)
            .column(components::Column::RackId)
            .filter(components::Column::Id.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(db)
            .await?;
        out.extend(rows.into_iter().filter_map(|(id, rack)| Some((id, rack?))));
    }
    Ok(out)
}

/// One page of recorded drift, in (source, id) order.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &DriftFilter,
    page: &PageRequest,
) -> Result<Page<DriftRecord>> {
    let mut query = drifts::Entity::find();
    if let Some(kind) = filter.kind {
        query = query.filter(drifts::Column::ComponentType.eq(kind.as_str()));
    }
    if let Some(diff_kind) = filter.diff_kind {
        query = query.filter(drifts::Column::Kind.eq(diff_kind.as_str()));
    }
    if let Some(rack_id) = filter.rack_id {
        query = query.filter(
            drifts::Column::ComponentId.in_subquery(
                sea_orm::sea_query::Query::select()
                    .column(components::Column::Id)
                    .from(components::Entity)
                    .and_where(components::Column::RackId.eq(rack_id))
                    .to_owned(),
            ),
        );
    }
    let (rows, total) =
        keyset_rows(db, query, drifts::Column::Source, drifts::Column::Id, page).await?;
    let ids: Vec<Uuid> = rows.iter().filter_map(|r| r.component_id).collect();
    let racks = racks_of(db, &ids).await?;
    let records = rows
        .into_iter()
        .map(|r| {
            let rack = r.component_id.and_then(|c| racks.get(&c).copied());
            record_from_row(r, rack)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Page::from_rows(records, page.limit, total, |r| Cursor {
        name: r.source.clone(),
        id: r.id,
    }))
}

/// Drift counts of each given rack (racks without drift get zeros).
pub async fn rack_counts(
    db: &impl ConnectionTrait,
    rack_ids: &[Uuid],
) -> Result<HashMap<Uuid, DriftCounts>> {
    let mut out: HashMap<Uuid, DriftCounts> = rack_ids
        .iter()
        .map(|id| (*id, DriftCounts::default()))
        .collect();
    let mut rack_of: HashMap<Uuid, Uuid> = HashMap::new();
    for chunk in rack_ids.chunks(500) {
        let rows: Vec<(Uuid, Option<Uuid>)> = components::Entity::find()
            .select_only()
            .column(components::Column::Id)
            .column(components::Column::RackId)
            .filter(components::Column::RackId.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(db)
            .await?;
        rack_of.extend(rows.into_iter().filter_map(|(id, rack)| Some((id, rack?))));
    }
    let component_ids: Vec<Uuid> = rack_of.keys().copied().collect();
    for chunk in component_ids.chunks(500) {
        let rows: Vec<(Option<Uuid>, String, bool)> = drifts::Entity::find()
            .select_only()
            .column(drifts::Column::ComponentId)
            .column(drifts::Column::Kind)
            .column(drifts::Column::Stale)
            .filter(drifts::Column::ComponentId.is_in(chunk.iter().copied()))
            .into_tuple()
            .all(db)
            .await?;
        for (component_id, kind, stale) in rows {
            let Some(counts) = component_id
                .and_then(|c| rack_of.get(&c))
                .and_then(|r| out.get_mut(r))
            else {
                continue;
            };
            match DiffKind::parse(&kind) {
                Some(DiffKind::Missing) => counts.missing += 1,
                Some(DiffKind::Unexpected) => counts.unexpected += 1,
                Some(DiffKind::Mismatch) => counts.mismatch += 1,
                Some(DiffKind::Unreachable) => counts.unreachable += 1,
                Some(DiffKind::Rejected) => counts.rejected += 1,
                // Domain-wide: no one component (nor rack) carries it.
                Some(DiffKind::DomainMixed) | None => continue,
            }
            counts.stale += u64::from(stale);
        }
    }
    Ok(out)
}

/// How many recorded differences there are of each kind (kinds with none are left out).
pub async fn count_by_kind(db: &impl ConnectionTrait) -> Result<Vec<(String, i64)>> {
    Ok(drifts::Entity::find()
        .select_only()
        .column(drifts::Column::Kind)
        .column_as(drifts::Column::Id.count(), "n")
        .group_by(drifts::Column::Kind)
        .into_tuple()
        .all(db)
        .await?)
}
