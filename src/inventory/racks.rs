//! Rack storage: create an expected rack with its components, look up, list, patch, delete, purge.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    QuerySelect,
};
use uuid::Uuid;

use super::components::{self as component_store, cas_failed, check_revision, upsert_bmcs};
use super::model::{
    Change, Component, ComponentChange, NewComponent, NewRack, PatchReport, Rack, RackPatch,
};
use super::nvl;
use super::query::{
    Cursor, Page, PageRequest, keyset_rows, manufacturer_key, manufacturer_matches, text_matches,
};
use super::rows::{attach_components, rack_from_row};
use super::uniqueness::{Candidate, ensure_unique, on_unique};
use crate::db::entities::{components, racks};
use crate::error::{Error, FieldError, Result};

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

pub(crate) async fn find_live_row(
    db: &impl ConnectionTrait,
    id: Uuid,
) -> Result<Option<racks::Model>> {
    Ok(racks::Entity::find_by_id(id)
        .filter(racks::Column::DeletedAt.is_null())
        .one(db)
        .await?)
}

/// Ids of live racks matching a name (exact, or a `*` glob).
pub(crate) async fn live_ids_named(db: &impl ConnectionTrait, name: &str) -> Result<Vec<Uuid>> {
    Ok(racks::Entity::find()
        .select_only()
        .column(racks::Column::Id)
        .filter(text_matches(racks::Column::Name, name))
        .filter(racks::Column::DeletedAt.is_null())
        .into_tuple()
        .all(db)
        .await?)
}

/// Live rack by id or by exact name.
pub async fn resolve(db: &impl ConnectionTrait, id_or_name: &str) -> Result<racks::Model> {
    let mut query = racks::Entity::find().filter(racks::Column::DeletedAt.is_null());
    query = match Uuid::parse_str(id_or_name) {
        Ok(id) => query.filter(racks::Column::Id.eq(id)),
        Err(_) => query.filter(racks::Column::Name.eq(id_or_name)),
    };
    query
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("rack", id_or_name))
}

/// Creates a rack with all its components and BMCs in one transaction: all or nothing.
pub async fn create(db: &DatabaseConnection, new: &NewRack, now: DateTime<Utc>) -> Result<Rack> {
    let txn = crate::db::begin_write(db).await?;
    let mut clashes = Vec::new();
    let key = manufacturer_key(&new.manufacturer);
    if let Some(r) = racks::Entity::find()
        .filter(racks::Column::Name.eq(&new.name))
        .filter(racks::Column::DeletedAt.is_null())
        .one(&txn)
        .await?
    {
        clashes.push(FieldError::new(
            "name",
            format!("rack {} already has this name", r.id),
        ));
    }
    if let Some(r) = racks::Entity::find()
        .filter(racks::Column::ManufacturerKey.eq(&key))
        .filter(racks::Column::SerialNumber.eq(&new.serial_number))
        .filter(racks::Column::DeletedAt.is_null())
        .one(&txn)
        .await?
    {
        clashes.push(FieldError::new(
            "serial_number",
            format!(
                "{} {} is already rack {}",
                new.manufacturer, new.serial_number, r.id
            ),
        ));
    }
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
    match ensure_unique(&txn, &candidates).await {
        Ok(()) => {}
        Err(Error::Conflict { errors, .. }) => clashes.extend(errors),
        Err(other) => return Err(other),
    }
    if !clashes.is_empty() {
        return Err(Error::Conflict {
            code: "duplicate",
            message: "already registered in the inventory".into(),
            errors: clashes,
        });
    }
    let id = Uuid::now_v7();
    racks::Entity::insert(racks::ActiveModel {
        id: Set(id),
        name: Set(new.name.clone()),
        manufacturer: Set(new.manufacturer.clone()),
        manufacturer_key: Set(key),
        serial_number: Set(new.serial_number.clone()),
        model: Set(new.model.clone()),
        description: Set(new.description.clone()),
        region: Set(new.location.region.clone()),
        datacenter: Set(new.location.datacenter.clone()),
        room: Set(new.location.room.clone()),
        position: Set(new.location.position.clone()),
        nvl_domain_id: Set(None),
        revision: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        deleted_at: Set(None),
    })
    .exec_without_returning(&txn)
    .await
    .map_err(|e| on_unique(e, "the rack"))?;
    let all: Vec<&NewComponent> = new.components.iter().collect();
    let ids = component_store::insert_all(&txn, Some(id), &all, now).await?;
    crate::audit::row_changed::<racks::Entity>(&txn, "rack", id, None, now).await?;
    txn.commit().await?;
    // Everything stored is known here, so the answer is built rather than read back: reading
    // the rack, its components and their BMCs again tripled the round trips of an import.
    let mut components: Vec<Component> = ids
        .into_iter()
        .zip(&new.components)
        .map(|(cid, c)| component_store::as_stored(cid, Some(id), c, now))
        .collect();
    components.sort_by(super::rows::rack_order);
    Ok(Rack {
        id,
        name: new.name.clone(),
        manufacturer: new.manufacturer.clone(),
        serial_number: new.serial_number.clone(),
        model: new.model.clone(),
        description: new.description.clone(),
        location: new.location.clone(),
        nvl_domain_id: None,
        revision: 1,
        created_at: now,
        updated_at: now,
        deleted_at: None,
        components: Some(components),
    })
}

/// A live rack by id, optionally with its live components.
pub async fn get(db: &impl ConnectionTrait, id: Uuid, with_components: bool) -> Result<Rack> {
    let row = find_live_row(db, id)
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
    let mut query = racks::Entity::find().filter(C::DeletedAt.is_null());
    for (col, value) in [
        (C::Name, &filter.name),
        (C::Model, &filter.model),
        (C::Region, &filter.region),
        (C::Datacenter, &filter.datacenter),
        (C::Room, &filter.room),
        (C::Position, &filter.position),
    ] {
        if let Some(v) = value {
            query = query.filter(text_matches(col, v));
        }
    }
    if let Some(m) = &filter.manufacturer {
        query = query.filter(manufacturer_matches(C::ManufacturerKey, m));
    }
    if let Some(domain) = &filter.nvl_domain {
        // An unknown domain matches no rack rather than failing the list.
        let domain_id = nvl::find(db, domain)
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
        id: r.id,
    }))
}

/// Merges a patch into a rack: its own fields (location per key) and the listed components.
pub async fn patch(
    db: &DatabaseConnection,
    id: Uuid,
    patch: &RackPatch,
    expected_revision: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(Rack, PatchReport)> {
    let txn = crate::db::begin_write(db).await?;
    let row = find_live_row(&txn, id)
        .await?
        .ok_or_else(|| Error::not_found("rack", id))?;
    check_revision("rack", id, row.revision, expected_revision)?;
    let audit_before = crate::audit::snapshot::<racks::Entity>(&txn, id).await?;
    if let Some(name) = patch.name.as_ref().filter(|n| **n != row.name) {
        let taken = racks::Entity::find()
            .filter(racks::Column::Name.eq(name))
            .filter(racks::Column::DeletedAt.is_null())
            .one(&txn)
            .await?;
        if let Some(other) = taken {
            return Err(Error::Conflict {
                code: "duplicate",
                message: "rack name already in use".into(),
                errors: vec![FieldError::new(
                    "name",
                    format!("rack {} already has this name", other.id),
                )],
            });
        }
    }
    let mut am: racks::ActiveModel = row.clone().into();
    let mut changed = false;
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
    if let Some(name) = patch.name.as_ref().filter(|n| **n != row.name) {
        am.name = Set(name.clone());
        changed = true;
    }
    let components = merge_components(&txn, id, &patch.components, now).await?;
    if components.iter().any(|c| c.change == Change::Added) {
        component_store::ensure_room(&txn, id, "components").await?;
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
    let rack = get(&txn, id, true).await?;
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

/// Adds components new to the rack and patches the ones it has (matched by manufacturer + serial).
async fn merge_components(
    db: &impl ConnectionTrait,
    rack_id: Uuid,
    wanted: &[NewComponent],
    now: DateTime<Utc>,
) -> Result<Vec<ComponentChange>> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut existing_ids = Vec::with_capacity(wanted.len());
    for (i, c) in wanted.iter().enumerate() {
        let found = components::Entity::find()
            .filter(components::Column::ManufacturerKey.eq(manufacturer_key(&c.manufacturer)))
            .filter(components::Column::SerialNumber.eq(&c.serial_number))
            .filter(components::Column::DeletedAt.is_null())
            .one(db)
            .await?;
        match found {
            Some(row) if row.rack_id != Some(rack_id) => {
                let place = row
                    .rack_id
                    .map_or("no rack".to_string(), |r| format!("rack {r}"));
                return Err(Error::Conflict {
                    code: "component_elsewhere",
                    message: "a listed component belongs elsewhere; move it with PATCH /v1/components/{id}".into(),
                    errors: vec![FieldError::new(format!("components[{i}].serial_number"), format!("component {} is in {place}", row.id))],
                });
            }
            found => existing_ids.push(found),
        }
    }
    let candidates: Vec<Candidate<'_>> = wanted
        .iter()
        .zip(&existing_ids)
        .enumerate()
        .map(|(i, (c, e))| Candidate {
            path: format!("components[{i}]"),
            component: c,
            existing: e.as_ref().map(|r| r.id),
        })
        .collect();
    ensure_unique(db, &candidates).await?;
    let mut report = Vec::with_capacity(wanted.len());
    for (i, (c, existing)) in wanted.iter().zip(existing_ids).enumerate() {
        let (component_id, change) = match existing {
            None => {
                let ids = component_store::insert_all(db, Some(rack_id), &[c], now).await?;
                (ids.first().copied().unwrap_or_default(), Change::Added)
            }
            Some(row) => {
                let p = component_store::patch_from_new(c);
                let mut am: components::ActiveModel = row.clone().into();
                let fields = component_store::apply_patch_fields(&mut am, &row, &p);
                let bmcs =
                    upsert_bmcs(db, row.id, &c.bmcs, &format!("components[{i}].bmcs"), now).await?;
                if fields || bmcs {
                    am.revision = Set(row.revision + 1);
                    am.updated_at = Set(now);
                    components::Entity::update(am)
                        .validate()?
                        .filter(components::Column::Revision.eq(row.revision))
                        .exec(db)
                        .await
                        .map_err(|e| cas_failed(e, "component", row.id, row.revision))?;
                }
                (
                    row.id,
                    if fields || bmcs {
                        Change::Patched
                    } else {
                        Change::NoChange
                    },
                )
            }
        };
        let bmcs = c
            .bmcs
            .iter()
            .map(|b| (b.mac_address.to_string(), change))
            .collect();
        report.push(ComponentChange {
            component_id,
            manufacturer: c.manufacturer.clone(),
            serial_number: c.serial_number.clone(),
            change,
            bmcs,
        });
    }
    Ok(report)
}

/// Marks the rack and all its live components (and their BMCs) deleted.
pub async fn delete(
    db: &DatabaseConnection,
    id: Uuid,
    expected_revision: Option<i64>,
    now: DateTime<Utc>,
) -> Result<()> {
    let txn = crate::db::begin_write(db).await?;
    let row = find_live_row(&txn, id)
        .await?
        .ok_or_else(|| Error::not_found("rack", id))?;
    check_revision("rack", id, row.revision, expected_revision)?;
    let audit_before = crate::audit::snapshot::<racks::Entity>(&txn, id).await?;
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
    component_store::soft_delete_where(&txn, components::Column::RackId.eq(id), now).await?;
    crate::audit::row_changed::<racks::Entity>(&txn, "rack", id, audit_before, now).await?;
    txn.commit().await?;
    Ok(())
}

/// Removes a soft-deleted rack and every component that was in it, for good.
pub async fn purge(db: &DatabaseConnection, id: Uuid) -> Result<()> {
    let txn = crate::db::begin_write(db).await?;
    let row = racks::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| Error::not_found("rack", id))?;
    if row.deleted_at.is_none() {
        return Err(Error::conflict(
            "not_deleted",
            format!("rack {id} is not deleted; DELETE it first"),
        ));
    }
    let audit_before = crate::audit::snapshot::<racks::Entity>(&txn, id).await?;
    // BMC rows go with their components through the cascading foreign key.
    components::Entity::delete_many()
        .filter(components::Column::RackId.eq(id))
        .exec(&txn)
        .await?;
    racks::Entity::delete_by_id(id).exec(&txn).await?;
    let change = crate::audit::Change::new("rack", id).before(audit_before);
    crate::audit::record(&txn, change, chrono::Utc::now()).await?;
    txn.commit().await?;
    Ok(())
}
