//! The expected side: live components of the types managers drive, as the devices to observe.

use std::collections::{HashMap, HashSet};

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use uuid::Uuid;

use crate::components::Device;
use crate::db::entities::{components, racks};
use crate::error::{Error, Result};
use crate::inventory::model::ComponentType;
use crate::inventory::rows::load_bmcs;
use crate::operations::model::TargetSpec;
use crate::tasks::resolve::{self, DRIVEN_TYPES};

/// Every live component of a driven type, in a rack or not.
pub async fn all_devices(db: &impl ConnectionTrait) -> Result<Vec<Device>> {
    let rows = components::Entity::find()
        .filter(components::Column::DeletedAt.is_null())
        .filter(components::Column::Type.is_in(DRIVEN_TYPES.iter().map(|k| k.as_str())))
        .order_by_asc(components::Column::Type)
        .order_by_asc(components::Column::Id)
        .all(db)
        .await?;
    let rack_ids: HashSet<Uuid> = rows.iter().filter_map(|r| r.rack_id).collect();
    let mut names: HashMap<Uuid, String> = HashMap::new();
    let ids: Vec<Uuid> = rack_ids.into_iter().collect();
    for chunk in ids.chunks(500) {
        for rack in racks::Entity::find()
            .filter(racks::Column::Id.is_in(chunk.iter().copied()))
            .all(db)
            .await?
        {
            names.insert(rack.id, rack.name);
        }
    }
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
pub async fn rack_devices(db: &impl ConnectionTrait, rack_id: Uuid) -> Result<Vec<Device>> {
    let rack = racks::Entity::find_by_id(rack_id)
        .filter(racks::Column::DeletedAt.is_null())
        .one(db)
        .await?
        .ok_or_else(|| Error::NotFound {
            kind: "rack",
            id: rack_id.to_string(),
        })?;
    let ids: HashSet<Uuid> = components::Entity::find()
        .filter(components::Column::RackId.eq(rack_id))
        .filter(components::Column::DeletedAt.is_null())
        .all(db)
        .await?
        .into_iter()
        .map(|c| c.id)
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
