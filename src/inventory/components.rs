//! Component storage: add, look up (by id, serial, BMC MAC), list, soft delete, purge; merge
//! patches are in `patch`.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::batch::SerialLookups;
use super::live::{component_for_write, rack_ids_named, rack_row};
pub use super::lookup::Looked;
use super::lookup::{self, COMPONENT_BY_SERIAL, Key, lookup_component};
use super::model::{Component, ComponentType, NewComponent, Rack};
use super::query::{manufacturer_key, with_text_filters};
use super::revision::ensure_one;
use super::rows::{rack_from_row, with_bmcs};
use super::uniqueness::{Candidate, ensure_unique};
use super::writes::{
    ensure_room, ensure_soft_deleted, insert_all, record_purge, soft_delete_where,
};
use crate::db::entities::{bmcs, components};
use crate::db::page::{Cursor, Page, PageRequest, keyset_rows};
use crate::error::{Error, Result};
use crate::ids::{ComponentId, RackId};

pub use super::patch::patch;

/// Filters of the component list; all given ones must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComponentFilter {
    pub rack_id: Option<RackId>,
    pub rack_name: Option<String>,
    pub kinds: Vec<ComponentType>,
    pub name: Option<String>,
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    pub serial_number: Option<String>,
    pub external_id: Option<String>,
    pub bmc_mac: Option<String>,
}

/// Adds one component, optionally into a rack, and returns it as stored.
pub async fn add(
    db: &DatabaseConnection,
    new: &NewComponent,
    now: DateTime<Utc>,
) -> Result<Component> {
    let txn = crate::db::begin_write(db).await?;
    if let Some(rack_id) = new.rack_id {
        rack_row(&txn, rack_id.into())
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
    let ids = insert_all(&txn, new.rack_id.map(Uuid::from), &[new], now).await?;
    if let Some(rack_id) = new.rack_id {
        ensure_room(&txn, rack_id.into(), "rack_id").await?;
    }
    let id = ids
        .first()
        .copied()
        .ok_or_else(|| Error::Internal("no id for inserted component".into()))?;
    let component = get(&txn, id.into()).await?;
    crate::audit::row_changed::<components::Entity>(&txn, "component", id, None, now).await?;
    txn.commit().await?;
    Ok(component)
}

/// A live component by id.
pub async fn get(db: &impl ConnectionTrait, id: ComponentId) -> Result<Component> {
    let id = Uuid::from(id);
    lookup::component(db, id).await
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
        .map(|found| found.component)
        .ok_or_else(|| Error::not_found("component", format!("{manufacturer} {serial}")))
}

/// [`get`] outside any transaction, the API's read path.
pub async fn find(db: &DatabaseConnection, id: ComponentId) -> Result<Looked> {
    let id = Uuid::from(id);
    lookup::lookup_pooled(db, Key::Id(id))
        .await?
        .ok_or_else(|| Error::not_found("component", id))
}

/// [`get_by_serial`] outside any transaction, the API's read path.
pub async fn find_by_serial(
    lookups: &SerialLookups,
    manufacturer: &str,
    serial: &str,
) -> Result<Looked> {
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
    get(db, bmc.component_id.into()).await
}

/// A component with, when asked and when it has one, its rack (without the rack's components).
pub async fn with_rack(
    db: &impl ConnectionTrait,
    component: Component,
    want_rack: bool,
) -> Result<(Component, Option<Rack>)> {
    let rack = match (want_rack, component.rack_id) {
        (true, Some(rack_id)) => {
            let row = rack_row(db, rack_id.into())
                .await?
                .ok_or_else(|| Error::not_found("rack", rack_id))?;
            Some(rack_from_row(row))
        }
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
        let rack_ids = rack_ids_named(db, rack_name).await?;
        query = query.filter(C::RackId.is_in(rack_ids));
    }
    if !filter.kinds.is_empty() {
        query = query.filter(C::Type.is_in(filter.kinds.iter().map(|k| k.as_str())));
    }
    let texts = [
        (C::Name, &filter.name),
        (C::Model, &filter.model),
        (C::SerialNumber, &filter.serial_number),
        (C::ExternalId, &filter.external_id),
    ];
    query = with_text_filters(query, texts, (C::ManufacturerKey, &filter.manufacturer));
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
        id: c.id.into(),
    }))
}

/// Marks the component and its BMCs deleted; its serial and MACs become free for reuse.
pub async fn delete(
    db: &DatabaseConnection,
    id: ComponentId,
    expected_revision: Option<i64>,
    now: DateTime<Utc>,
) -> Result<()> {
    let id = Uuid::from(id);
    let txn = crate::db::begin_write(db).await?;
    let (row, audit_before) = component_for_write(&txn, id, expected_revision).await?;
    // Compare-and-set on the revision read above, so a concurrent patch or delete wins or loses
    // as a whole.
    let bumped = components::Entity::update_many()
        .col_expr(components::Column::Revision, Expr::value(row.revision + 1))
        .filter(components::Column::Id.eq(id))
        .filter(components::Column::Revision.eq(row.revision))
        .filter(components::Column::DeletedAt.is_null())
        .exec(&txn)
        .await?;
    ensure_one(bumped.rows_affected, "component", id, row.revision)?;
    soft_delete_where(&txn, components::Column::Id.eq(id), now).await?;
    crate::audit::row_changed::<components::Entity>(&txn, "component", id, audit_before, now)
        .await?;
    txn.commit().await?;
    Ok(())
}

/// Removes a soft-deleted component for good (its BMCs go with it).
pub async fn purge(db: &DatabaseConnection, id: ComponentId, now: DateTime<Utc>) -> Result<()> {
    let id = Uuid::from(id);
    let txn = crate::db::begin_write(db).await?;
    let row = components::Entity::find_by_id(id)
        .one(&txn)
        .await?
        .ok_or_else(|| Error::not_found("component", id))?;
    ensure_soft_deleted("component", id, row.deleted_at)?;
    bmcs::Entity::delete_many()
        .filter(bmcs::Column::ComponentId.eq(id))
        .exec(&txn)
        .await?;
    let audit_before = crate::audit::snapshot::<components::Entity>(&txn, id).await?;
    components::Entity::delete_by_id(id).exec(&txn).await?;
    record_purge(&txn, "component", id, audit_before, now).await?;
    txn.commit().await?;
    Ok(())
}
