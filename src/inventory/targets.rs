//! Target resolution: an operation's targets resolved against the inventory into the driven
//! devices of each rack (used by task submission, previews and drift).

use std::collections::{BTreeMap, HashSet};

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use uuid::Uuid;

use super::model::{Bmc, BmcType, ComponentType};
use super::rows::load_bmcs;
use crate::db::entities::{components, racks};
use crate::domain::Device;
use crate::domain::operation::{ComponentTarget, DomainRef, RackRef, TargetSpec};
use crate::error::{Error, FieldError, Result};
use crate::ids::{ComponentId, NvlDomainId, RackId};

/// Component types that operations drive; the others are inventory only.
pub const DRIVEN_TYPES: [ComponentType; 3] = [
    ComponentType::PowerShelf,
    ComponentType::NvSwitch,
    ComponentType::Compute,
];

/// One rack's share of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RackWork {
    pub rack_id: RackId,
    pub rack_name: String,
    /// Targeted devices of driven types, in the rack's slot order.
    pub devices: Vec<Device>,
}

/// Resolves every target; any target that names nothing fails the whole request with a 400
/// naming it, so no task is created for a typo. An NVLink domain that does not exist is a 404
/// naming it; one is resolved to every live rack attached to it (whole racks).
pub async fn resolve(db: &impl ConnectionTrait, targets: &TargetSpec) -> Result<Vec<RackWork>> {
    let mut errors = Vec::new();
    // Rack id -> (rack row, selected component ids or None for "filter by types").
    let mut wanted: BTreeMap<RackId, (racks::Model, HashSet<ComponentId>)> = BTreeMap::new();
    match targets {
        TargetSpec::Racks(list) => {
            for (i, target) in list.iter().enumerate() {
                let Some(rack) = find_rack(db, &target.rack).await? else {
                    errors.push(FieldError::new(
                        format!("target_spec.racks[{i}]"),
                        format!("rack {} not found", target.rack),
                    ));
                    continue;
                };
                let rows = live_components(db, components::Column::RackId.eq(rack.id)).await?;
                let entry = wanted
                    .entry(rack.id.into())
                    .or_insert_with(|| (rack, HashSet::new()));
                for row in rows {
                    let kind = ComponentType::parse(&row.r#type);
                    if kind.is_some_and(|k| {
                        target.component_types.is_empty() || target.component_types.contains(&k)
                    }) {
                        entry.1.insert(row.id.into());
                    }
                }
            }
        }
        TargetSpec::Components(list) => {
            for (i, target) in list.iter().enumerate() {
                let field = format!("target_spec.components[{i}]");
                let found = match target {
                    ComponentTarget::Id(id) => live_components(db, components::Column::Id.eq(*id))
                        .await?
                        .pop(),
                    ComponentTarget::External { kind, id } => live_components(
                        db,
                        sea_orm::Condition::all()
                            .add(components::Column::ExternalId.eq(id.as_str()))
                            .add(components::Column::Type.eq(kind.as_str())),
                    )
                    .await?
                    .pop(),
                };
                let Some(row) = found else {
                    errors.push(FieldError::new(field, "no such component"));
                    continue;
                };
                let Some(rack_id) = row.rack_id else {
                    errors.push(FieldError::new(
                        field,
                        format!("component {} is in no rack", row.id),
                    ));
                    continue;
                };
                let Some(rack) = super::live::rack_row(db, rack_id).await? else {
                    errors.push(FieldError::new(
                        field,
                        format!("rack {rack_id} of component {} not found", row.id),
                    ));
                    continue;
                };
                wanted
                    .entry(rack.id.into())
                    .or_insert_with(|| (rack, HashSet::new()))
                    .1
                    .insert(row.id.into());
            }
        }
        TargetSpec::NvlDomains(list) => {
            for (i, domain) in list.iter().enumerate() {
                let racks = domain_racks(db, domain).await?;
                if racks.is_empty() {
                    errors.push(FieldError::new(
                        format!("target_spec.nvl_domains[{i}]"),
                        format!("nvl domain {domain} has no live racks"),
                    ));
                }
                for rack in racks {
                    let rows = live_components(db, components::Column::RackId.eq(rack.id)).await?;
                    let entry = wanted
                        .entry(rack.id.into())
                        .or_insert_with(|| (rack, HashSet::new()));
                    entry
                        .1
                        .extend(rows.into_iter().map(|r| ComponentId::from(r.id)));
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(Error::Invalid(errors));
    }
    let mut work = Vec::with_capacity(wanted.len());
    for (rack_id, (rack, ids)) in wanted {
        let devices = devices_of(db, rack_id, Some(&rack.name), &ids).await?;
        work.push(RackWork {
            rack_id,
            rack_name: rack.name,
            devices,
        });
    }
    Ok(work)
}

/// The live racks of a domain, in name order; a domain that does not exist is a 404 naming it.
pub async fn domain_racks(
    db: &impl ConnectionTrait,
    domain: &DomainRef,
) -> Result<Vec<racks::Model>> {
    let found = super::live::domain_row(db, &domain.to_string()).await?;
    let found = match (domain, found) {
        // A name that reads as a UUID must still match by id only when asked by id.
        (DomainRef::Id(id), Some(d)) if d.id == *id => d,
        (DomainRef::Name(name), Some(d)) if d.name == *name => d,
        _ => return Err(Error::not_found("nvl domain", domain)),
    };
    live_racks_of(db, found.id.into()).await
}

/// The live racks attached to domain `id`, in name order (none for a domain that is gone).
pub async fn live_racks_of(
    db: &impl ConnectionTrait,
    id: NvlDomainId,
) -> Result<Vec<racks::Model>> {
    Ok(racks::Entity::find()
        .filter(racks::Column::DeletedAt.is_null())
        .filter(racks::Column::NvlDomainId.eq(id.uuid()))
        .order_by_asc(racks::Column::Name)
        .all(db)
        .await?)
}

async fn find_rack(db: &impl ConnectionTrait, rack: &RackRef) -> Result<Option<racks::Model>> {
    let query = racks::Entity::find().filter(racks::Column::DeletedAt.is_null());
    let query = match rack {
        RackRef::Id(id) => query.filter(racks::Column::Id.eq(*id)),
        RackRef::Name(name) => query.filter(racks::Column::Name.eq(name.as_str())),
    };
    Ok(query.one(db).await?)
}

async fn live_components(
    db: &impl ConnectionTrait,
    cond: impl sea_orm::sea_query::IntoCondition,
) -> Result<Vec<components::Model>> {
    Ok(components::Entity::find()
        .filter(cond)
        .filter(components::Column::DeletedAt.is_null())
        .order_by_asc(components::Column::Type)
        .order_by_asc(components::Column::SlotId)
        .order_by_asc(components::Column::Name)
        .all(db)
        .await?)
}

/// The live, driven devices of a rack among `ids` (components deleted meanwhile drop out).
pub async fn devices_of(
    db: &impl ConnectionTrait,
    rack_id: RackId,
    rack_name: Option<&str>,
    ids: &HashSet<ComponentId>,
) -> Result<Vec<Device>> {
    let rows: Vec<components::Model> = live_components(db, components::Column::RackId.eq(rack_id))
        .await?
        .into_iter()
        .filter(|r| ids.contains(&ComponentId::from(r.id)))
        .collect();
    let row_ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut bmcs = load_bmcs(db, &row_ids).await?;
    let mut devices = Vec::with_capacity(rows.len());
    for row in rows {
        let Some(kind) = ComponentType::parse(&row.r#type).filter(|k| DRIVEN_TYPES.contains(k))
        else {
            continue;
        };
        let own = bmcs.remove(&row.id).unwrap_or_default();
        devices.push(device(row, kind, &own, rack_name.map(String::from)));
    }
    Ok(devices)
}

/// A component row as the managers see it, addressed through its host BMC (or its first one).
pub(crate) fn device(
    row: components::Model,
    kind: ComponentType,
    bmcs: &[Bmc],
    rack_name: Option<String>,
) -> Device {
    let host = bmcs
        .iter()
        .find(|b| b.kind == BmcType::Host)
        .or(bmcs.first());
    Device {
        component_id: row.id,
        kind,
        name: row.name,
        manufacturer: row.manufacturer,
        model: row.model,
        serial_number: row.serial_number,
        external_id: row.external_id,
        bmc_mac: host.map(|b| b.mac_address.clone()),
        bmc_ip: host.and_then(|b| b.ip_address.clone()),
        firmware_version: row.firmware_version,
        rack_id: row.rack_id,
        rack_name,
    }
}
