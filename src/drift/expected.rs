//! The expected side: live components of the types managers drive, as the devices to observe.

use std::collections::{HashMap, HashSet};

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use uuid::Uuid;

use crate::components::Device;
use crate::db::entities::{components, racks};
use crate::domain::ComponentType;
use crate::domain::operation::TargetSpec;
use crate::error::{Error, Result};
use crate::ids::{ComponentId, RackId};
use crate::inventory::rows::load_bmcs;
use crate::inventory::targets::{self as resolve, DRIVEN_TYPES};

/// One page of the live components of driven types, in a rack or not, in id order after
/// `after`: the sync and a whole-site validation walk the inventory this way, so their memory
/// does not grow with the site.
pub async fn devices_page(
    db: &impl ConnectionTrait,
    after: Option<Uuid>,
    limit: u64,
) -> Result<Vec<Device>> {
    let mut query = components::Entity::find()
        .filter(components::Column::DeletedAt.is_null())
        .filter(components::Column::Type.is_in(DRIVEN_TYPES.iter().map(|k| k.as_str())));
    if let Some(after) = after {
        query = query.filter(components::Column::Id.gt(after));
    }
    let rows = query
        .order_by_asc(components::Column::Id)
        .limit(limit)
        .all(db)
        .await?;
    let rack_ids: HashSet<Uuid> = rows.iter().filter_map(|r| r.rack_id).collect();
    let names: HashMap<Uuid, String> = racks::Entity::find()
        .filter(racks::Column::Id.is_in(rack_ids))
        .all(db)
        .await?
        .into_iter()
        .map(|rack| (rack.id, rack.name))
        .collect();
    let component_ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut bmcs = load_bmcs(db, &component_ids).await?;
    let mut devices = Vec::with_capacity(rows.len());
    for row in rows {
        let Some(kind) = ComponentType::parse(&row.r#type) else {
            continue;
        };
        let own = bmcs.remove(&row.id).unwrap_or_default();
        let rack_name = row.rack_id.and_then(|id| names.get(&id).cloned());
        devices.push(resolve::device(row, kind, &own, rack_name));
    }
    Ok(devices)
}

/// The devices a target spec names (400 naming the target that matches nothing).
pub async fn target_devices(
    db: &impl ConnectionTrait,
    targets: &TargetSpec,
) -> Result<Vec<Device>> {
    Ok(resolve::resolve(db, targets)
        .await?
        .into_iter()
        .flat_map(|work| work.devices)
        .collect())
}

/// The devices of one live rack (404 when there is no such rack).
pub async fn rack_devices(db: &impl ConnectionTrait, rack_id: RackId) -> Result<Vec<Device>> {
    let rack = racks::Entity::find_by_id(rack_id)
        .filter(racks::Column::DeletedAt.is_null())
        .one(db)
        .await?
        .ok_or_else(|| Error::NotFound {
            kind: "rack",
            id: rack_id.to_string(),
        })?;
    let ids: HashSet<ComponentId> = components::Entity::find()
        .filter(components::Column::RackId.eq(rack_id))
        .filter(components::Column::DeletedAt.is_null())
        .all(db)
        .await?
        .into_iter()
        .map(|c| ComponentId::from(c.id))
        .collect();
    resolve::devices_of(db, rack_id, Some(&rack.name), &ids).await
}

/// A live rack by id or name (404 when there is none).
pub async fn rack_id(db: &impl ConnectionTrait, reference: &str) -> Result<Uuid> {
    let query = racks::Entity::find().filter(racks::Column::DeletedAt.is_null());
    let query = match Uuid::parse_str(reference) {
        Ok(id) => query.filter(racks::Column::Id.eq(id)),
        Err(_) => query.filter(racks::Column::Name.eq(reference)),
    };
    query
        .one(db)
        .await?
        .map(|r| r.id)
        .ok_or_else(|| Error::NotFound {
            kind: "rack",
            id: reference.to_string(),
        })
}
