//! The NVLink interlock: powering off or resetting NVSwitch trays takes NVLink away from every
//! compute tray of their domain, in this rack or another, so compute trays of the domain that
//! are on and not part of the request are in the way (`not_ready`).

use std::collections::{BTreeMap, HashSet};

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use super::{Obstacle, ReadinessCode, Scope};
use crate::db::entities::{components, racks};
use crate::domain::ComponentType;
use crate::domain::operation::Operation;
use crate::error::Result;
use crate::ids::{ComponentId, NvlDomainId, RackId};

/// Whether the operation removes power from (or resets) NVSwitch trays, which takes NVLink
/// away from every compute tray of their domain. A BMC reset leaves the host alone.
pub(super) fn powers_off_switches(operation: &Operation) -> bool {
    matches!(
        operation,
        Operation::PowerOff { .. }
            | Operation::PowerReset { .. }
            | Operation::WarmReset
            | Operation::ColdReset
    )
}

/// Compute trays that are on in the domains of targeted NVSwitch trays, outside the request.
pub(super) async fn compute_on(
    db: &impl ConnectionTrait,
    scope: &Scope,
    domains: &BTreeMap<RackId, NvlDomainId>,
) -> Result<Vec<Obstacle>> {
    let switched: BTreeMap<RackId, NvlDomainId> = scope
        .components
        .iter()
        .filter(|c| c.1 == ComponentType::NvSwitch)
        .filter_map(|c| domains.get(&c.3).map(|d| (c.3, *d)))
        .collect();
    if switched.is_empty() {
        return Ok(Vec::new());
    }
    let wanted: HashSet<NvlDomainId> = switched.values().copied().collect();
    let domain_racks = racks::Entity::find()
        .filter(racks::Column::NvlDomainId.is_in(wanted.iter().map(|d| d.uuid())))
        .filter(racks::Column::DeletedAt.is_null())
        .all(db)
        .await?;
    let targeted: HashSet<ComponentId> = scope.components.iter().map(|c| c.0).collect();
    let trays = components::Entity::find()
        .filter(components::Column::RackId.is_in(domain_racks.iter().map(|r| r.id)))
        .filter(components::Column::Type.eq(ComponentType::Compute.as_str()))
        .filter(components::Column::PowerState.eq("on"))
        .filter(components::Column::DeletedAt.is_null())
        .all(db)
        .await?;
    let mut out = Vec::new();
    for tray in trays
        .into_iter()
        .filter(|t| !targeted.contains(&t.id.into()))
    {
        let tray_rack = domain_racks.iter().find(|r| Some(r.id) == tray.rack_id);
        let Some(tray_rack) = tray_rack else { continue };
        let domain = tray_rack.nvl_domain_id.map(NvlDomainId::from);
        for (rack, _) in switched.iter().filter(|(_, d)| Some(**d) == domain) {
            out.push(obstacle(scope, *rack, &tray, &tray_rack.name));
        }
    }
    Ok(out)
}

fn obstacle(scope: &Scope, rack: RackId, tray: &components::Model, tray_rack: &str) -> Obstacle {
    Obstacle {
        code: ReadinessCode::NotReady,
        rack_id: rack,
        rack_name: scope.rack_name(rack),
        component_id: Some(tray.id.into()),
        component_name: Some(tray.name.clone()),
        hold_id: None,
        source: Some("flow".into()),
        alert_id: None,
        message: format!(
            "compute tray {} (rack {tray_rack}) of the same NVLink domain is on: include it in \
             the request (compute powers off first) or override",
            tray.name
        ),
    }
}
