//! Component storage: add, look up (by id, serial, BMC MAC), list, soft delete, purge; merge
//! patches are in `patch`.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
};
use uuid::Uuid;

use super::batch::SerialLookups;
use super::lookup::{self, COMPONENT_BY_ID, COMPONENT_BY_SERIAL, Key, lookup_component};
use super::model::{Bmc, Component, ComponentType, NewBmc, NewComponent, Rack};
use super::query::{
    Cursor, Page, PageRequest, keyset_rows, manufacturer_key, manufacturer_matches, text_matches,
};
use super::racks;
use super::rows::with_bmcs;
use super::uniqueness::{Candidate, ensure_unique, on_unique};
use crate::db::entities::{bmcs, components};
use crate::error::{Error, Result};

/// Filters of the component list; all given ones must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComponentFilter {
    pub rack_id: Option<Uuid>,
    pub rack_name: Option<String>,
    pub kinds: Vec<ComponentType>,
    pub name: Option<String>,
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    pub serial_number: Option<String>,
    pub external_id: Option<String>,
    pub bmc_mac: Option<String>,
}

pub(crate) fn component_row(
    id: Uuid,
    rack_id: Option<Uuid>,
    c: &NewComponent,
    now: DateTime<Utc>,
) -> components::ActiveModel {
    components::ActiveModel {
        id: Set(id),
        rack_id: Set(rack_id),
        r#type: Set(c.kind.as_str().to_string()),
        name: Set(c.name.clone()),
        manufacturer: Set(c.manufacturer.clone()),
        manufacturer_key: Set(manufacturer_key(&c.manufacturer)),
        model: Set(c.model.clone()),
        serial_number: Set(c.serial_number.clone()),
        firmware_version: Set(c.firmware_version.clone()),
        description: Set(c.description.clone()),
        slot_id: Set(c.position.slot_id),
        tray_idx: Set(c.position.tray_idx),
        host_id: Set(c.position.host_id),
        external_id: Set(None),
        power_state: Set(None),
        observed_firmware_version: Set(None),
        last_seen_at: Set(None),
        revision: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
        deleted_at: Set(None),
    }
}

pub(crate) fn bmc_row(component_id: Uuid, b: &NewBmc, now: DateTime<Utc>) -> bmcs::ActiveModel {
    bmcs::ActiveModel {
        id: Set(Uuid::now_v7()),
        component_id: Set(component_id),
        r#type: Set(b.kind.as_str().to_string()),
        mac_address: Set(b.mac_address.to_string()),
        ip_address: Set(b.ip_address.map(|ip| ip.to_string())),
        created_at: Set(now),
        deleted_at: Set(None),
    }
}

/// The component `insert_all` stores for `c`, as a read would return it.
pub(crate) fn as_stored(
    id: Uuid,
    rack_id: Option<Uuid>,
    c: &NewComponent,
    now: DateTime<Utc>,
) -> Component {
    let mut bmcs: Vec<Bmc> = c
        .bmcs
        .iter()
        .map(|b| Bmc {
            kind: b.kind,
            mac_address: b.mac_address.to_string(),
            ip_address: b.ip_address.map(|ip| ip.to_string()),
        })
        .collect();
    bmcs.sort_by(super::rows::bmc_order);
    Component {
        id,
        rack_id,
        kind: c.kind,
        name: c.name.clone(),
        manufacturer: c.manufacturer.clone(),
        model: c.model.clone(),
        serial_number: c.serial_number.clone(),
        firmware_version: c.firmware_version.clone(),
        description: c.description.clone(),
        position: c.position,
        external_id: None,
        power_state: None,
        observed_firmware_version: None,
        last_seen_at: None,
        bmcs,
        revision: 1,
        created_at: now,
        updated_at: now,
        deleted_at: None,
    }
}

/// Inserts components (with their BMCs) in two batched statements; returns their new ids.
pub(crate) async fn insert_all(
    db: &impl ConnectionTrait,
    rack_id: Option<Uuid>,
    new: &[&NewComponent],
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>> {
    if new.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = new.iter().map(|_| Uuid::now_v7()).collect();
    // Batches of 200 rows stay below SQLite's bind-parameter limit.
    let rows: Vec<_> = ids
        .iter()
        .zip(new)
        .map(|(id, c)| component_row(*id, rack_id, c, now))
        .collect();
    for chunk in rows.chunks(200) {
        components::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(db)
            .await
            .map_err(|e| on_unique(e, "a component"))?;
    }
    let bmc_rows: Vec<_> = ids
        .iter()
        .zip(new)
        .flat_map(|(id, c)| c.bmcs.iter().map(|b| bmc_row(*id, b, now)))
        .collect();
    for chunk in bmc_rows.chunks(200) {
        bmcs::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(db)
            .await
            .map_err(|e| on_unique(e, "a BMC"))?;
    }
    Ok(ids)
}

/// Adds one component, optionally into a rack, and returns it as stored.
pub async fn add(
    db: &DatabaseConnection,
    new: &NewComponent,
    now: DateTime<Utc>,
) -> Result<Component> {
    let txn = crate::db::begin_write(db).await?;
    if let Some(rack_id) = new.rack_id {
        racks::find_live_row(&txn, rack_id)
            .await?
            .ok_or_else(|| Error::not_found("rack", rack_id))?;
    }
    ensure_unique(
        &txn,
        &[Candidate {
            path: String::new(),
            component: new,
            existing: None,
        }],
    )
    .await?;
    let ids = insert_all(&txn, new.rack_id, &[new], now).await?;
    if let Some(rack_id) = new.rack_id {
        ensure_room(&txn, rack_id, "rack_id").await?;
    }
    let id = ids
        .first()
        .copied()
        .ok_or_else(|| Error::Internal("no id for inserted component".into()))?;
    let component = get(&txn, id).await?;
    crate::audit::row_changed::<components::Entity>(&txn, "component", id, None, now).await?;
    txn.commit().await?;
    Ok(component)
}

/// Fails (and so rolls the caller's transaction back) when the rack now holds more live
/// components than [`MAX_COMPONENTS_PER_RACK`](super::model::MAX_COMPONENTS_PER_RACK).
pub(crate) async fn ensure_room(
    db: &impl ConnectionTrait,
    rack_id: Uuid,
    field: &str,
) -> Result<()> {
    use sea_orm::PaginatorTrait;
    let max = super::model::MAX_COMPONENTS_PER_RACK;
    let held = components::Entity::find()
        .filter(components::Column::RackId.eq(rack_id))
        .filter(components::Column::DeletedAt.is_null())
        .count(db)
        .await?;
    if held > max as u64 {
        return Err(Error::invalid(
            field,
            format!("a rack holds at most {max} components; this would make {held}"),
        ));
    }
    Ok(())
}

pub(crate) async fn find_live_row(
    db: &impl ConnectionTrait,
    id: Uuid,
) -> Result<Option<components::Model>> {
    Ok(components::Entity::find_by_id(id)
        .filter(components::Column::DeletedAt.is_null())
        .one(db)
        .await?)
}

/// A live component by id.
pub async fn get(db: &impl ConnectionTrait, id: Uuid) -> Result<Component> {
    lookup_component(db, COMPONENT_BY_ID, [id.into()])
        .await?
        .ok_or_else(|| Error::not_found("component", id))
}

/// A live component by manufacturer (any case) and serial number.
pub async fn get_by_serial(
    db: &impl ConnectionTrait,
    manufacturer: &str,
    serial: &str,
) -> Result<Component> {
    let values = [manufacturer_key(manufacturer).into(), serial.into()];
    lookup_component(db, COMPONENT_BY_SERIAL, values)
        .await?
        .ok_or_else(|| Error::not_found("component", format!("{manufacturer} {serial}")))
}

/// [`get`] outside any transaction, the API's read path.
pub async fn find(db: &DatabaseConnection, id: Uuid) -> Result<Component> {
    lookup::lookup_pooled(db, Key::Id(id))
        .await?
        .ok_or_else(|| Error::not_found("component", id))
}

/// [`get_by_serial`] outside any transaction, the API's read path.
pub async fn find_by_serial(
    lookups: &SerialLookups,
    manufacturer: &str,
    serial: &str,
) -> Result<Component> {
    let found = lookups
        .find(&manufacturer_key(manufacturer), serial)
        .await?;
    found.ok_or_else(|| Error::not_found("component", format!("{manufacturer} {serial}")))
}

/// The live component that owns a BMC with this MAC.
pub async fn get_by_mac(db: &impl ConnectionTrait, mac: &str) -> Result<Component> {
    let bmc = bmcs::Entity::find()
        .filter(bmcs::Column::MacAddress.eq(mac))
        .filter(bmcs::Column::DeletedAt.is_null())
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("component with BMC", mac))?;
    get(db, bmc.component_id).await
}

/// A component with, when asked and when it has one, its rack (without the rack's components).
pub async fn with_rack(
    db: &impl ConnectionTrait,
    component: Component,
    want_rack: bool,
) -> Result<(Component, Option<Rack>)> {
    let rack = match (want_rack, component.rack_id) {
        (true, Some(rack_id)) => Some(racks::get(db, rack_id, false).await?),
        _ => None,
    };
    Ok((component, rack))
}

/// One page of live components in `(name, id)` order.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &ComponentFilter,
    page: &PageRequest,
) -> Result<Page<Component>> {
    use components::Column as C;
    let mut query = components::Entity::find().filter(C::DeletedAt.is_null());
    if let Some(rack_id) = filter.rack_id {
        query = query.filter(C::RackId.eq(rack_id));
    }
    if let Some(rack_name) = &filter.rack_name {
        let rack_ids = racks::live_ids_named(db, rack_name).await?;
        query = query.filter(C::RackId.is_in(rack_ids));
    }
    if !filter.kinds.is_empty() {
        query = query.filter(C::Type.is_in(filter.kinds.iter().map(|k| k.as_str())));
    }
    for (col, value) in [
        (C::Name, &filter.name),
        (C::Model, &filter.model),
        (C::SerialNumber, &filter.serial_number),
        (C::ExternalId, &filter.external_id),
    ] {
        if let Some(v) = value {
            query = query.filter(text_matches(col, v));
        }
    }
    if let Some(m) = &filter.manufacturer {
        query = query.filter(manufacturer_matches(C::ManufacturerKey, m));
    }
    if let Some(mac) = &filter.bmc_mac {
        let owners = Query::select()
            .column(bmcs::Column::ComponentId)
            .from(bmcs::Entity)
            .and_where(Expr::col(bmcs::Column::MacAddress).eq(mac.as_str()))
            .and_where(Expr::col(bmcs::Column::DeletedAt).is_null())
            .to_owned();
        query = query.filter(C::Id.in_subquery(owners));
    }
    let (rows, total) = keyset_rows(db, query, C::Name, C::Id, page).await?;
    let items = with_bmcs(db, rows).await?;
    Ok(Page::from_rows(items, page.limit, total, |c| Cursor {
        name: c.name.clone(),
        id: c.id,
    }))
}

/// Marks the component and its BMCs deleted; its serial and MACs become free for reuse.
pub async fn delete(
    db: &DatabaseConnection,
    id: Uuid,
    expected_revision: Option<i64>,
    now: DateTime<Utc>,
) -> Result<()> {
    let txn = crate::db::begin_write(db).await?;
    let row = find_live_row(&txn, id)
        .await?
        .ok_or_else(|| Error::not_found("component", id))?;
    check_revision("component", id, row.revision, expected_revision)?;
    let audit_before = crate::audit::snapshot::<components::Entity>(&txn, id).await?;
    // Compare-and-set on the revision read above, so a concurrent patch or delete wins or loses
    // as a whole.
    let bumped = components::Entity::update_many()
        .col_expr(components::Column::Revision, Expr::value(row.revision + 1))
        .filter(components::Column::Id.eq(id))
        .filter(components::Column::Revision.eq(row.revision))
        .filter(components::Column::DeletedAt.is_null())
        .exec(&txn)
        .await?;
    if bumped.rows_affected != 1 {
        return Err(cas_failed(
            sea_orm::DbErr::RecordNotUpdated,
            "component",
            id,
            row.revision,
        ));
    }
    soft_delete_where(&txn, components::Column::Id.eq(id), now).await?;
    crate::audit::row_changed::<components::Entity>(&txn, "component", id, audit_before, now)
        .await?;
    txn.commit().await?;
    Ok(())
}

/// Soft-deletes the live components matching `cond`, with their BMCs.
pub(crate) async fn soft_delete_where(
    db: &impl ConnectionTrait,
    cond: sea_orm::sea_query::SimpleExpr,
    now: DateTime<Utc>,
) -> Result<()> {
    let owners = Query::select()
        .column(components::Column::Id)
        .from(components::Entity)
        .and_where(cond.clone())
        .and_where(Expr::col(components::Column::DeletedAt).is_null())
        .to_owned();
    bmcs::Entity::update_many()
        .col_expr(bmcs::Column::DeletedAt, Expr::value(now))
        .filter(bmcs::Column::DeletedAt.is_null())
        .filter(bmcs::Column::ComponentId.in_subquery(owners))
        .exec(db)
        .await?;
    components::Entity::update_many()
        .col_expr(components::Column::DeletedAt, Expr::value(now))
        .col_expr(components::Column::UpdatedAt, Expr::value(now))
        .filter(components::Column::DeletedAt.is_null())
        .filter(cond)
        .exec(db)
        .await?;
    Ok(())
}

/// Removes a soft-deleted component for good (its BMCs go with it).
pub async fn purge(db: &DatabaseConnection, id: Uuid) -> Result<()> {
    let txn = crate::db::begin_write(db).await?;
    let row = components::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| Error::not_found("component", id))?;
    if row.deleted_at.is_none() {
        return Err(Error::conflict(
            "not_deleted",
            format!("component {id} is not deleted; DELETE it first"),
        ));
    }
    bmcs::Entity::delete_many()
        .filter(bmcs::Column::ComponentId.eq(id))
        .exec(&txn)
        .await?;
    let audit_before = crate::audit::snapshot::<components::Entity>(&txn, id).await?;
    components::Entity::delete_by_id(id).exec(&txn).await?;
    let change = crate::audit::Change::new("component", id).before(audit_before);
    crate::audit::record(&txn, change, chrono::Utc::now()).await?;
    txn.commit().await?;
    Ok(())
}

pub use super::patch::patch;
pub(crate) use super::patch::{
    apply_patch_fields, cas_failed, check_revision, patch_from_new, upsert_bmcs,
};
