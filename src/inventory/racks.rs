//! Rack storage: create an expected rack with its components, look up, list, patch, delete, purge.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
};
use uuid::Uuid;

use super::live::{domain_row, rack_for_write, rack_row};
use super::merge::merge_components;
use super::model::{Change, NewComponent, NewRack, PatchReport, Rack, RackPatch};
use super::query::{manufacturer_key, with_text_filters};
use super::revision::cas_failed;
use super::rows::{attach_components, rack_from_row};
use super::uniqueness::{
    Candidate, ensure_new_rack_unique, ensure_no_repeats, ensure_rack_name_free, on_unique,
};
use super::writes::{
    ensure_room, ensure_soft_deleted, insert_all, rack_as_stored, record_purge, soft_delete_where,
};
use crate::db::entities::{components, racks};
use crate::db::page::{Cursor, Page, PageRequest, keyset_rows};
use crate::error::{Code, Error, Result};
use crate::ids::RackId;

pub use super::live::resolve_rack as resolve;

/// Filters of the rack list; all given ones must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RackFilter {
    pub name: Option<String>,
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    /// NVL domain id or name.
    pub nvl_domain: Option<String>,
    pub region: Option<String>,
    pub datacenter: Option<String>,
    pub room: Option<String>,
    pub position: Option<String>,
}

/// Creates a rack with all its components and BMCs in one transaction: all or nothing.
///
/// The partial unique indexes decide whether a name, serial or MAC is free, so the rows are
/// written without asking first; only when an index refuses one does a fresh read name every
/// clash (the refused transaction is gone by then). Asking first cost every import one more
/// statement, for the rare request that clashes.
pub async fn create(db: &DatabaseConnection, new: &NewRack, now: DateTime<Utc>) -> Result<Rack> {
    let candidates: Vec<Candidate<'_>> = new
        .components
        .iter()
        .enumerate()
        .map(|(i, c)| Candidate {
            path: format!("components[{i}]"),
            component: c,
            existing: None,
        })
        .collect();
    ensure_no_repeats(&candidates)?;
    match write_new(db, new, now).await {
        Err(
            refused @ Error::Conflict {
                code: Code::Duplicate,
                ..
            },
        ) => {
            ensure_new_rack_unique(db, new, &candidates).await?;
            // Whatever clashed has gone again since: the index's word stands.
            Err(refused)
        }
        written => written,
    }
}

async fn write_new(db: &DatabaseConnection, new: &NewRack, now: DateTime<Utc>) -> Result<Rack> {
    let txn = crate::db::begin_write(db).await?;
    let id = Uuid::now_v7();
    let row = super::writes::rack_row(id, new, now);
    racks::Entity::insert(row.clone())
        .exec_without_returning(&txn)
        .await
        .map_err(|e| on_unique(e, "the rack"))?;
    let all: Vec<&NewComponent> = new.components.iter().collect();
    let ids = insert_all(&txn, Some(id), &all, now).await?;
    // The audit's after document is the row as written, not read back.
    crate::audit::row_created(&txn, "rack", id, &row, now).await?;
    txn.commit().await?;
    // Everything stored is known here, so the answer is built rather than read back: reading
    // the rack, its components and their BMCs again tripled the round trips of an import.
    Ok(rack_as_stored(id, new, &ids, now))
}

/// A live rack by id, optionally with its live components.
pub async fn get(db: &impl ConnectionTrait, id: RackId, with_components: bool) -> Result<Rack> {
    let id = Uuid::from(id);
    let row = rack_row(db, id)
        .await?
        .ok_or_else(|| Error::not_found("rack", id))?;
    finish(db, row, with_components).await
}

/// A live rack by manufacturer (any case) and serial number.
pub async fn get_by_serial(
    db: &impl ConnectionTrait,
    manufacturer: &str,
    serial: &str,
    with_components: bool,
) -> Result<Rack> {
    let row = racks::Entity::find()
        .filter(racks::Column::ManufacturerKey.eq(manufacturer_key(manufacturer)))
        .filter(racks::Column::SerialNumber.eq(serial))
        .filter(racks::Column::DeletedAt.is_null())
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("rack", format!("{manufacturer} {serial}")))?;
    finish(db, row, with_components).await
}

async fn finish(
    db: &impl ConnectionTrait,
    row: racks::Model,
    with_components: bool,
) -> Result<Rack> {
    let mut rack = [rack_from_row(row)];
    if with_components {
        attach_components(db, &mut rack).await?;
    }
    let [rack] = rack;
    Ok(rack)
}

/// One page of live racks in `(name, id)` order.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &RackFilter,
    page: &PageRequest,
    with_components: bool,
) -> Result<Page<Rack>> {
    use racks::Column as C;
    let texts = [
        (C::Name, &filter.name),
        (C::Model, &filter.model),
        (C::Region, &filter.region),
        (C::Datacenter, &filter.datacenter),
        (C::Room, &filter.room),
        (C::Position, &filter.position),
    ];
    let mut query = with_text_filters(
        racks::Entity::find().filter(C::DeletedAt.is_null()),
        texts,
        (C::ManufacturerKey, &filter.manufacturer),
    );
    if let Some(domain) = &filter.nvl_domain {
        // An unknown domain matches no rack rather than failing the list.
        let domain_id = domain_row(db, domain)
            .await?
            .map(|d| d.id)
            .unwrap_or_else(Uuid::nil);
        query = query.filter(C::NvlDomainId.eq(domain_id));
    }
    let (rows, total) = keyset_rows(db, query, C::Name, C::Id, page).await?;
    let mut items: Vec<Rack> = rows.into_iter().map(rack_from_row).collect();
    if with_components {
        // Only the page's racks are loaded; the look-ahead row is harmless.
        attach_components(db, &mut items).await?;
    }
    Ok(Page::from_rows(items, page.limit, total, |r| Cursor {
        name: r.name.clone(),
        id: r.id.into(),
    }))
}

/// Merges a patch into a rack: its own fields (location per key) and the listed components.
pub async fn patch(
    db: &DatabaseConnection,
    id: RackId,
    patch: &RackPatch,
    expected_revision: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(Rack, PatchReport)> {
    let id = Uuid::from(id);
    let txn = crate::db::begin_write(db).await?;
    let (row, audit_before) = rack_for_write(&txn, id, expected_revision).await?;
    let mut am: racks::ActiveModel = row.clone().into();
    let mut changed = false;
    if let Some(name) = patch.name.as_ref().filter(|n| **n != row.name) {
        ensure_rack_name_free(&txn, name).await?;
        am.name = Set(name.clone());
        changed = true;
    }
    let mut set = |target: &mut sea_orm::ActiveValue<Option<String>>,
                   current: &Option<String>,
                   update: &Option<Option<String>>| {
        if let Some(v) = update.as_ref().filter(|v| *v != current) {
            *target = Set(v.clone());
            changed = true;
        }
    };
    set(&mut am.model, &row.model, &patch.model);
    set(&mut am.description, &row.description, &patch.description);
    set(&mut am.region, &row.region, &patch.region);
    set(&mut am.datacenter, &row.datacenter, &patch.datacenter);
    set(&mut am.room, &row.room, &patch.room);
    set(&mut am.position, &row.position, &patch.position);
    let components = merge_components(&txn, id, &patch.components, now).await?;
    if components.iter().any(|c| c.change == Change::Added) {
        ensure_room(&txn, id, "components").await?;
    }
    let rack_change = if changed {
        Change::Patched
    } else {
        Change::NoChange
    };
    if changed || components.iter().any(|c| c.change != Change::NoChange) {
        am.revision = Set(row.revision + 1);
        am.updated_at = Set(now);
        // Compare-and-set: a writer that committed since our read makes this touch no row.
        let cas = racks::Entity::update(am)
            .validate()?
            .filter(racks::Column::Revision.eq(row.revision))
            .filter(racks::Column::DeletedAt.is_null());
        cas.exec(&txn)
            .await
            .map_err(|e| cas_failed(e, "rack", id, row.revision))
            .map_err(|e| match e {
                Error::Db(db) => on_unique(db, "the rack name"),
                other => other,
            })?;
    }
    let rack = get(&txn, id.into(), true).await?;
    crate::audit::row_changed::<racks::Entity>(&txn, "rack", id, audit_before, now).await?;
    txn.commit().await?;
    Ok((
        rack,
        PatchReport {
            rack: rack_change,
            components,
        },
    ))
}

/// Marks the rack and all its live components (and their BMCs) deleted.
pub async fn delete(
    db: &DatabaseConnection,
    id: RackId,
    expected_revision: Option<i64>,
    now: DateTime<Utc>,
) -> Result<()> {
    let id = Uuid::from(id);
    let txn = crate::db::begin_write(db).await?;
    let (row, audit_before) = rack_for_write(&txn, id, expected_revision).await?;
    let revision = row.revision;
    let mut am: racks::ActiveModel = row.into();
    am.deleted_at = Set(Some(now));
    am.updated_at = Set(now);
    am.revision = Set(revision + 1);
    racks::Entity::update(am)
        .validate()?
        .filter(racks::Column::Revision.eq(revision))
        .filter(racks::Column::DeletedAt.is_null())
        .exec(&txn)
        .await
        .map_err(|e| cas_failed(e, "rack", id, revision))?;
    soft_delete_where(&txn, components::Column::RackId.eq(id), now).await?;
    crate::audit::row_changed::<racks::Entity>(&txn, "rack", id, audit_before, now).await?;
    txn.commit().await?;
    Ok(())
}

/// Removes a soft-deleted rack and every component that was in it, for good.
pub async fn purge(db: &DatabaseConnection, id: RackId, now: DateTime<Utc>) -> Result<()> {
    let id = Uuid::from(id);
    let txn = crate::db::begin_write(db).await?;
    let row = racks::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| Error::not_found("rack", id))?;
    ensure_soft_deleted("rack", id, row.deleted_at)?;
    let audit_before = crate::audit::snapshot::<racks::Entity>(&txn, id).await?;
    // BMC rows go with their components through the cascading foreign key.
    components::Entity::delete_many()
        .filter(components::Column::RackId.eq(id))
        .exec(&txn)
        .await?;
    racks::Entity::delete_by_id(id).exec(&txn).await?;
    record_purge(&txn, "rack", id, audit_before, now).await?;
    txn.commit().await?;
    Ok(())
}
