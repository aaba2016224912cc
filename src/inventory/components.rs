//! Component storage: add, look up (by id, serial, BMC MAC), list, patch, soft delete, purge.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
};
use uuid::Uuid;

use super::batch::SerialLookups;
use super::lookup::{self, COMPONENT_BY_ID, COMPONENT_BY_SERIAL, Key, lookup_component};
use super::model::{Bmc, Component, ComponentPatch, ComponentType, NewBmc, NewComponent, Rack};
use super::query::{
    Cursor, Page, PageRequest, keyset_rows, manufacturer_key, manufacturer_matches, text_matches,
};
use super::racks;
use super::rows::with_bmcs;
use super::uniqueness::{Candidate, ensure_unique, mac_clashes, on_unique};
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
    let id = ids
        .first()
        .copied()
        .ok_or_else(|| Error::Internal("no id for inserted component".into()))?;
    let component = get(&txn, id).await?;
    txn.commit().await?;
    Ok(component)
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

/// Applies a merge patch; `expected_revision` is the client's `If-Match`.
pub async fn patch(
    db: &DatabaseConnection,
    id: Uuid,
    patch: &ComponentPatch,
    expected_revision: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Component> {
    let txn = crate::db::begin_write(db).await?;
    let row = find_live_row(&txn, id)
        .await?
        .ok_or_else(|| Error::not_found("component", id))?;
    check_revision("component", id, row.revision, expected_revision)?;
    if let Some(Some(rack_id)) = patch.rack_id {
        racks::find_live_row(&txn, rack_id)
            .await?
            .ok_or_else(|| Error::invalid("rack_id", format!("rack {rack_id} not found")))?;
    }
    let mut update: components::ActiveModel = row.clone().into();
    let fields_changed = apply_patch_fields(&mut update, &row, patch);
    let bmcs_changed = upsert_bmcs(&txn, id, &patch.bmcs, "bmcs", now).await?;
    if fields_changed || bmcs_changed {
        update.revision = Set(row.revision + 1);
        update.updated_at = Set(now);
        components::Entity::update(update).exec(&txn).await?;
    }
    let component = get(&txn, id).await?;
    txn.commit().await?;
    Ok(component)
}

/// Fails with 412 when the client's `If-Match` revision is not the stored one.
pub(crate) fn check_revision(
    kind: &'static str,
    id: Uuid,
    current: i64,
    expected: Option<i64>,
) -> Result<()> {
    match expected {
        Some(expected) if expected != current => Err(Error::PreconditionFailed {
            kind,
            id: id.to_string(),
            expected: expected.to_string(),
            current: current.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Sets `target` to `update`'s value when it differs from `current`; reports whether it did.
fn merge<T: Clone + PartialEq + Into<sea_orm::Value>>(
    target: &mut sea_orm::ActiveValue<T>,
    current: &T,
    update: Option<T>,
) -> bool {
    match update {
        Some(v) if &v != current => {
            *target = Set(v);
            true
        }
        _ => false,
    }
}

/// Writes the patch's differing fields into `am`; reports whether any differed.
pub(crate) fn apply_patch_fields(
    am: &mut components::ActiveModel,
    row: &components::Model,
    p: &ComponentPatch,
) -> bool {
    let mut changed = merge(&mut am.name, &row.name, p.name.clone());
    changed |= merge(&mut am.model, &row.model, p.model.clone());
    changed |= merge(
        &mut am.firmware_version,
        &row.firmware_version,
        p.firmware_version.clone(),
    );
    changed |= merge(&mut am.description, &row.description, p.description.clone());
    changed |= merge(&mut am.slot_id, &row.slot_id, p.slot_id);
    changed |= merge(&mut am.tray_idx, &row.tray_idx, p.tray_idx);
    changed |= merge(&mut am.host_id, &row.host_id, p.host_id);
    changed |= merge(&mut am.rack_id, &row.rack_id, p.rack_id);
    changed
}

/// The patch a rack merge applies to a component it already has: only the fields the request
/// gives; identity (manufacturer, serial, type) never changes.
pub(crate) fn patch_from_new(c: &NewComponent) -> ComponentPatch {
    ComponentPatch {
        name: Some(c.name.clone()),
        model: c.model.clone().map(Some),
        firmware_version: c.firmware_version.clone().map(Some),
        description: c.description.clone().map(Some),
        slot_id: c.position.slot_id.map(Some),
        tray_idx: c.position.tray_idx.map(Some),
        host_id: c.position.host_id.map(Some),
        rack_id: None,
        bmcs: Vec::new(),
    }
}

/// Adds new BMCs and updates the type and IP of ones this component already has (matched by
/// MAC). A MAC that belongs to another live component is a 409 naming `{path}[i].mac_address`.
pub(crate) async fn upsert_bmcs(
    db: &impl ConnectionTrait,
    component_id: Uuid,
    new: &[NewBmc],
    path: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    if new.is_empty() {
        return Ok(false);
    }
    let named: Vec<(String, &NewBmc, Option<Uuid>)> = new
        .iter()
        .enumerate()
        .map(|(i, b)| (format!("{path}[{i}].mac_address"), b, Some(component_id)))
        .collect();
    let clashes = mac_clashes(db, &named).await?;
    if !clashes.is_empty() {
        return Err(Error::Conflict {
            code: "duplicate",
            message: "BMC MAC already registered".into(),
            errors: clashes,
        });
    }
    let own = bmcs::Entity::find()
        .filter(bmcs::Column::ComponentId.eq(component_id))
        .filter(bmcs::Column::DeletedAt.is_null())
        .all(db)
        .await?;
    let mut changed = false;
    for bmc in new {
        let ip = bmc.ip_address.map(|ip| ip.to_string());
        match own
            .iter()
            .find(|o| o.mac_address == bmc.mac_address.as_str())
        {
            Some(existing) => {
                let kind = bmc.kind.as_str().to_string();
                let ip_changed = ip.is_some() && ip != existing.ip_address;
                if existing.r#type != kind || ip_changed {
                    let mut am: bmcs::ActiveModel = existing.clone().into();
                    am.r#type = Set(kind);
                    if ip_changed {
                        am.ip_address = Set(ip);
                    }
                    bmcs::Entity::update(am).exec(db).await?;
                    changed = true;
                }
            }
            None => {
                bmcs::Entity::insert(bmc_row(component_id, bmc, now))
                    .exec_without_returning(db)
                    .await
                    .map_err(|e| on_unique(e, "a BMC"))?;
                changed = true;
            }
        }
    }
    Ok(changed)
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
    soft_delete_where(&txn, components::Column::Id.eq(id), now).await?;
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
    components::Entity::delete_by_id(id).exec(&txn).await?;
    txn.commit().await?;
    Ok(())
}
