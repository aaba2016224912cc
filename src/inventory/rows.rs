//! Conversions between stored rows and domain types, and loading of BMCs and components in bulk.

use std::collections::HashMap;

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use uuid::Uuid;

use super::model::{Bmc, BmcType, Component, ComponentType, Location, Position, PowerState, Rack};
use crate::db::entities::{bmcs, components, racks};
use crate::error::{Error, Result};
use crate::ids::RackId;

pub(crate) fn rack_from_row(row: racks::Model) -> Rack {
    Rack {
        id: row.id.into(),
        name: row.name,
        manufacturer: row.manufacturer,
        serial_number: row.serial_number,
        model: row.model,
        description: row.description,
        location: Location {
            region: row.region,
            datacenter: row.datacenter,
            room: row.room,
            position: row.position,
        },
        nvl_domain_id: row.nvl_domain_id.map(Into::into),
        revision: row.revision,
        created_at: row.created_at,
        updated_at: row.updated_at,
        deleted_at: row.deleted_at,
        components: None,
    }
}

pub(crate) fn bmc_from_row(row: bmcs::Model) -> Result<Bmc> {
    bmc_from_parts(row.id, &row.r#type, row.mac_address, row.ip_address)
}

pub(crate) fn bmc_from_parts(
    id: Uuid,
    kind: &str,
    mac_address: String,
    ip_address: Option<String>,
) -> Result<Bmc> {
    let kind = BmcType::parse(kind)
        .ok_or_else(|| Error::Internal(format!("bmc {id} has unknown type {kind:?}")))?;
    Ok(Bmc {
        kind,
        mac_address,
        ip_address,
    })
}

pub(crate) fn component_from_row(row: components::Model, bmcs: Vec<Bmc>) -> Result<Component> {
    let kind = ComponentType::parse(&row.r#type).ok_or_else(|| {
        Error::Internal(format!(
            "component {} has unknown type {:?}",
            row.id, row.r#type
        ))
    })?;
    Ok(Component {
        id: row.id.into(),
        rack_id: row.rack_id.map(Into::into),
        kind,
        name: row.name,
        manufacturer: row.manufacturer,
        model: row.model,
        serial_number: row.serial_number,
        firmware_version: row.firmware_version,
        description: row.description,
        position: Position {
            slot_id: row.slot_id,
            tray_idx: row.tray_idx,
            host_id: row.host_id,
        },
        external_id: row.external_id,
        power_state: row.power_state.as_deref().and_then(PowerState::parse),
        observed_firmware_version: row.observed_firmware_version,
        last_seen_at: row.last_seen_at,
        bmcs,
        revision: row.revision,
        created_at: row.created_at,
        updated_at: row.updated_at,
        deleted_at: row.deleted_at,
    })
}

/// The order BMCs are listed in: host BMCs first, then by MAC.
pub(crate) fn bmc_order(a: &Bmc, b: &Bmc) -> std::cmp::Ordering {
    let host_first = |x: &Bmc| x.kind != BmcType::Host;
    host_first(a)
        .cmp(&host_first(b))
        .then_with(|| a.mac_address.cmp(&b.mac_address))
}

/// The order a rack's components are listed in: by type name, tray index (unset last), name, id.
pub(crate) fn rack_order(a: &Component, b: &Component) -> std::cmp::Ordering {
    let tray = |c: &Component| (c.position.tray_idx.is_none(), c.position.tray_idx);
    a.kind
        .as_str()
        .cmp(b.kind.as_str())
        .then_with(|| tray(a).cmp(&tray(b)))
        .then_with(|| a.name.cmp(&b.name))
        .then_with(|| a.id.cmp(&b.id))
}

/// Live BMCs of the given components, grouped by component, host BMCs first.
pub(crate) async fn load_bmcs(
    db: &impl ConnectionTrait,
    component_ids: &[Uuid],
) -> Result<HashMap<Uuid, Vec<Bmc>>> {
    let mut by_component: HashMap<Uuid, Vec<Bmc>> = HashMap::new();
    // Chunked so a page of 1000 components stays under every backend's bind-parameter limit.
    for chunk in component_ids.chunks(500) {
        let rows = bmcs::Entity::find()
            .filter(bmcs::Column::ComponentId.is_in(chunk.iter().copied()))
            .filter(bmcs::Column::DeletedAt.is_null())
            .order_by_desc(bmcs::Column::Type)
            .order_by_asc(bmcs::Column::MacAddress)
            .all(db)
            .await?;
        for row in rows {
            let component_id = row.component_id;
            by_component
                .entry(component_id)
                .or_default()
                .push(bmc_from_row(row)?);
        }
    }
    for list in by_component.values_mut() {
        list.sort_by(bmc_order);
    }
    Ok(by_component)
}

/// Turns component rows into components with their BMCs, keeping the rows' order.
pub(crate) async fn with_bmcs(
    db: &impl ConnectionTrait,
    rows: Vec<components::Model>,
) -> Result<Vec<Component>> {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut bmcs = load_bmcs(db, &ids).await?;
    rows.into_iter()
        .map(|row| {
            let own = bmcs.remove(&row.id).unwrap_or_default();
            component_from_row(row, own)
        })
        .collect()
}

/// Live components of the given racks, each rack's list in slot order.
pub(crate) async fn load_rack_components(
    db: &impl ConnectionTrait,
    rack_ids: &[RackId],
) -> Result<HashMap<RackId, Vec<Component>>> {
    let mut rows = Vec::new();
    for chunk in rack_ids.chunks(500) {
        rows.extend(
            components::Entity::find()
                .filter(components::Column::RackId.is_in(chunk.iter().copied()))
                .filter(components::Column::DeletedAt.is_null())
                .order_by_asc(components::Column::Type)
                .order_by_asc(components::Column::TrayIdx)
                .order_by_asc(components::Column::Name)
                .order_by_asc(components::Column::Id)
                .all(db)
                .await?,
        );
    }
    let mut by_rack: HashMap<RackId, Vec<Component>> = HashMap::new();
    for component in with_bmcs(db, rows).await? {
        if let Some(rack_id) = component.rack_id {
            by_rack.entry(rack_id).or_default().push(component);
        }
    }
    // Sorted here, not in SQL: the backends disagree on where NULL tray indexes go.
    for list in by_rack.values_mut() {
        list.sort_by(rack_order);
    }
    Ok(by_rack)
}

/// Fills `components` on each rack.
pub(crate) async fn attach_components(db: &impl ConnectionTrait, racks: &mut [Rack]) -> Result<()> {
    let ids: Vec<RackId> = racks.iter().map(|r| r.id).collect();
    let mut by_rack = load_rack_components(db, &ids).await?;
    for rack in racks {
        rack.components = Some(by_rack.remove(&rack.id).unwrap_or_default());
    }
    Ok(())
}
