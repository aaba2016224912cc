//! New component and BMC rows, and the writes racks and components share: batched inserts,
//! the per-rack component limit, and soft deletes.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter,
};
use uuid::Uuid;

use super::model::{Bmc, Component, NewBmc, NewComponent, NewRack, Rack};
use super::query::manufacturer_key;
use super::uniqueness::on_unique;
use crate::db::entities::{bmcs, components, racks};
use crate::error::{Code, Error, Result};

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

pub(crate) fn rack_row(id: Uuid, new: &NewRack, now: DateTime<Utc>) -> racks::ActiveModel {
    racks::ActiveModel {
        id: Set(id),
        name: Set(new.name.clone()),
        manufacturer: Set(new.manufacturer.clone()),
        manufacturer_key: Set(manufacturer_key(&new.manufacturer)),
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
        id: id.into(),
        rack_id: rack_id.map(Into::into),
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

/// The rack `create` stores for `new` (with the components stored under `ids`), as a read
/// would return it.
pub(crate) fn rack_as_stored(id: Uuid, new: &NewRack, ids: &[Uuid], now: DateTime<Utc>) -> Rack {
    let mut components: Vec<Component> = ids
        .iter()
        .zip(&new.components)
        .map(|(cid, c)| as_stored(*cid, Some(id), c, now))
        .collect();
    components.sort_by(super::rows::rack_order);
    Rack {
        id: id.into(),
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
    let rows: Vec<_> = ids
        .iter()
        .zip(new)
        .map(|(id, c)| component_row(*id, rack_id, c, now))
        .collect();
    insert_batched(db, rows, "a component").await?;
    let bmc_rows: Vec<_> = ids
        .iter()
        .zip(new)
        .flat_map(|(id, c)| c.bmcs.iter().map(|b| bmc_row(*id, b, now)))
        .collect();
    insert_batched(db, bmc_rows, "a BMC").await?;
    Ok(ids)
}

/// Inserts rows in batches of 200, which stay below SQLite's bind-parameter limit; a unique
/// value (serial, MAC) taken meanwhile by another request is a 409 naming `what`.
pub(crate) async fn insert_batched<A>(
    db: &impl ConnectionTrait,
    rows: Vec<A>,
    what: &str,
) -> Result<()>
where
    A: ActiveModelTrait + Clone + Send,
{
    for chunk in rows.chunks(200) {
        A::Entity::insert_many(chunk.to_vec())
            .exec_without_returning(db)
            .await
            .map_err(|e| on_unique(e, what))?;
    }
    Ok(())
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

/// Fails with a 409 `not_deleted` unless the row was soft-deleted: only deleted things purge.
pub(crate) fn ensure_soft_deleted(
    kind: &'static str,
    id: Uuid,
    deleted_at: Option<DateTime<Utc>>,
) -> Result<()> {
    match deleted_at {
        Some(_) => Ok(()),
        None => Err(Error::conflict(
            Code::NotDeleted,
            format!("{kind} {id} is not deleted; delete it first"),
        )),
    }
}

/// Records in the audit log that a row whose last state was `before` is gone for good.
pub(crate) async fn record_purge(
    db: &impl ConnectionTrait,
    kind: &'static str,
    id: Uuid,
    before: Option<serde_json::Value>,
    now: DateTime<Utc>,
) -> Result<()> {
    let change = crate::audit::Change::new(kind, id).before(before);
    crate::audit::record(db, change, now).await
}
