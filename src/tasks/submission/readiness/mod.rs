//! The readiness check: whether an operation's targets are held or not ready, asked once per
//! submission (a request, each rollout wave and each schedule fire all submit) and again when a
//! queued task would start. In the way are:
//! - holds counting now on a targeted rack, component or the rack's NVLink domain (`held`);
//! - health-report alerts classified `PreventOperations` on a targeted component (`not_ready`);
//! - for firmware, a targeted tray whose BMC the sync last saw unreachable or refusing
//!   (`not_ready`; power-on stays allowed, it is how one recovers a tray);
//! - for powering off or resetting NVSwitch trays, the compute trays of their NVLink domain
//!   (this rack or another) that are on and not part of the request (`not_ready`; `nvlink`).
//!
//! `override_readiness_check` proceeds anyway: the caller (the API) checks it is an admin, and
//! [`record_override`] writes what was overridden into the audit log and beside the request,
//! so its queued tasks are not refused for the same obstacles later. What a submission does
//! with the obstacles (refuse, override, check again under the rack's lock) is in `gate`.

mod gate;
mod nvlink;

pub use gate::{admit, overridden, recheck, record_override, refusal};

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use serde::{Deserialize, Serialize};

use crate::db::entities::{component_drifts, components, racks};
use crate::domain::ComponentType;
use crate::domain::operation::Operation;
use crate::error::Result;
use crate::ids::{ComponentId, HoldId, NvlDomainId, RackId};
use crate::inventory::holds::{self, Hold, HoldTarget};
use crate::inventory::{health, targets::RackWork};
use crate::tasks::model::Task;

/// Which of the two refusals an obstacle is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadinessCode {
    Held,
    NotReady,
}

/// One thing in the way of an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obstacle {
    pub code: ReadinessCode,
    /// The targeted rack it stands in the way of.
    pub rack_id: RackId,
    pub rack_name: String,
    /// The component it is about (none for a hold on a rack or a domain).
    pub component_id: Option<ComponentId>,
    pub component_name: Option<String>,
    pub hold_id: Option<HoldId>,
    /// The health report's source (`flow` for Flow's own observations).
    pub source: Option<String>,
    pub alert_id: Option<String>,
    pub message: String,
}

/// What an operation touches: racks (with their domains) and components.
pub struct Scope {
    pub racks: Vec<(RackId, String)>,
    /// Targeted component, its type, name and rack.
    pub components: Vec<(ComponentId, ComponentType, String, RackId)>,
}

impl Scope {
    /// The scope of a submission's resolved targets.
    pub fn of(work: &[RackWork]) -> Self {
        let racks = work
            .iter()
            .map(|r| (r.rack_id, r.rack_name.clone()))
            .collect();
        let components = work
            .iter()
            .flat_map(|r| {
                r.devices.iter().map(|d| {
                    let id = ComponentId::from(d.component_id);
                    (id, d.kind, d.name.clone(), r.rack_id)
                })
            })
            .collect();
        Self { racks, components }
    }

    /// The scope of a stored task: its rack and components, with their names as stored now.
    pub async fn of_task(db: &impl ConnectionTrait, task: &Task) -> Result<Self> {
        let rack_name = racks::Entity::find_by_id(task.rack_id.uuid())
            .one(db)
            .await?
            .map_or_else(|| task.rack_id.to_string(), |r| r.name);
        let ids: Vec<uuid::Uuid> = task.components.iter().map(|c| c.id.uuid()).collect();
        let names: BTreeMap<uuid::Uuid, String> = components::Entity::find()
            .filter(components::Column::Id.is_in(ids))
            .all(db)
            .await?
            .into_iter()
            .map(|c| (c.id, c.name))
            .collect();
        let components = task
            .components
            .iter()
            .map(|c| {
                let name = names.get(&c.id.uuid()).cloned().unwrap_or_default();
                (c.id, c.kind, name, task.rack_id)
            })
            .collect();
        Ok(Self {
            racks: vec![(task.rack_id, rack_name)],
            components,
        })
    }

    fn rack_name(&self, id: RackId) -> String {
        self.racks
            .iter()
            .find(|(r, _)| *r == id)
            .map_or_else(|| id.to_string(), |(_, n)| n.clone())
    }

    fn component(&self, id: ComponentId) -> Option<&(ComponentId, ComponentType, String, RackId)> {
        self.components.iter().find(|c| c.0 == id)
    }
}

/// Everything in the way of `operation` on `scope` at `now`, holds first.
pub async fn obstacles(
    db: &impl ConnectionTrait,
    operation: &Operation,
    scope: &Scope,
    now: DateTime<Utc>,
) -> Result<Vec<Obstacle>> {
    let domains = domains_of(db, scope).await?;
    let mut out = held(db, scope, &domains, now).await?;
    out.extend(alerts(db, scope).await?);
    if matches!(operation, Operation::FirmwareUpgrade { .. }) {
        out.extend(unreachable(db, scope).await?);
    }
    if nvlink::powers_off_switches(operation) {
        out.extend(nvlink::compute_on(db, scope, &domains).await?);
    }
    Ok(out)
}

/// The NVLink domain of each targeted rack that has one.
async fn domains_of(
    db: &impl ConnectionTrait,
    scope: &Scope,
) -> Result<BTreeMap<RackId, NvlDomainId>> {
    let rows = racks::Entity::find()
        .filter(racks::Column::Id.is_in(scope.racks.iter().map(|(r, _)| r.uuid())))
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| r.nvl_domain_id.map(|d| (r.id.into(), d.into())))
        .collect())
}

async fn held(
    db: &impl ConnectionTrait,
    scope: &Scope,
    domains: &BTreeMap<RackId, NvlDomainId>,
    now: DateTime<Utc>,
) -> Result<Vec<Obstacle>> {
    let rack_ids: Vec<RackId> = scope.racks.iter().map(|(r, _)| *r).collect();
    let component_ids: Vec<ComponentId> = scope.components.iter().map(|c| c.0).collect();
    let domain_ids: Vec<NvlDomainId> = domains.values().copied().collect();
    let found = holds::active_on(db, &rack_ids, &component_ids, &domain_ids, now).await?;
    let mut out = Vec::new();
    for hold in &found {
        for rack in held_racks(hold, scope, domains) {
            out.push(hold_obstacle(hold, rack, scope));
        }
    }
    Ok(out)
}

/// The targeted racks a hold stands in the way of (a domain's hold: each of its racks).
fn held_racks(hold: &Hold, scope: &Scope, domains: &BTreeMap<RackId, NvlDomainId>) -> Vec<RackId> {
    match hold.target {
        HoldTarget::Rack(r) => vec![r],
        HoldTarget::Component(c) => scope.component(c).map(|c| c.3).into_iter().collect(),
        HoldTarget::NvlDomain(d) => domains
            .iter()
            .filter(|(_, dom)| **dom == d)
            .map(|(r, _)| *r)
            .collect(),
    }
}

fn hold_obstacle(hold: &Hold, rack: RackId, scope: &Scope) -> Obstacle {
    let component = match hold.target {
        HoldTarget::Component(c) => scope.component(c),
        _ => None,
    };
    let on = match hold.target {
        HoldTarget::Rack(_) => "the rack".to_string(),
        HoldTarget::Component(_) => format!("component {}", component.map_or("", |c| &c.2)),
        HoldTarget::NvlDomain(d) => format!("NVLink domain {d}"),
    };
    let until = hold
        .expires_at
        .map_or_else(String::new, |at| format!(" until {}", at.to_rfc3339()));
    Obstacle {
        code: ReadinessCode::Held,
        rack_id: rack,
        rack_name: scope.rack_name(rack),
        component_id: component.map(|c| c.0),
        component_name: component.map(|c| c.2.clone()),
        hold_id: Some(hold.id),
        source: None,
        alert_id: None,
        message: format!(
            "hold {} by {} on {on}{until}: {}",
            hold.id, hold.owner, hold.reason
        ),
    }
}

fn component_obstacle(
    scope: &Scope,
    id: ComponentId,
    source: &str,
    alert: Option<&str>,
    message: String,
) -> Option<Obstacle> {
    let (id, _, name, rack) = scope.component(id)?;
    Some(Obstacle {
        code: ReadinessCode::NotReady,
        rack_id: *rack,
        rack_name: scope.rack_name(*rack),
        component_id: Some(*id),
        component_name: Some(name.clone()),
        hold_id: None,
        source: Some(source.to_string()),
        alert_id: alert.map(String::from),
        message,
    })
}

/// `PreventOperations` alerts of the targeted components' health reports.
async fn alerts(db: &impl ConnectionTrait, scope: &Scope) -> Result<Vec<Obstacle>> {
    let ids: Vec<ComponentId> = scope.components.iter().map(|c| c.0).collect();
    let mut out = Vec::new();
    for report in health::of(db, &ids).await? {
        for alert in report.alerts.iter().filter(|a| a.prevents_operations()) {
            let message = format!(
                "alert {} from {}: {}",
                alert.id, report.source, alert.message
            );
            out.extend(component_obstacle(
                scope,
                report.component_id,
                &report.source,
                Some(&alert.id),
                message,
            ));
        }
    }
    Ok(out)
}

/// Targeted trays whose BMC the drift sync last saw unreachable or refusing.
async fn unreachable(db: &impl ConnectionTrait, scope: &Scope) -> Result<Vec<Obstacle>> {
    let ids = scope.components.iter().map(|c| c.0.uuid());
    let rows = component_drifts::Entity::find()
        .filter(component_drifts::Column::ComponentId.is_in(ids))
        .filter(component_drifts::Column::Kind.is_in(["unreachable", "rejected"]))
        .all(db)
        .await?;
    let mut out = Vec::new();
    for row in rows {
        let Some(id) = row.component_id else { continue };
        let seen = if row.kind == "rejected" {
            "refusing"
        } else {
            "unreachable"
        };
        let why = row.message.unwrap_or_default();
        let message = format!(
            "its BMC was last seen {seen} by {} at {}: {why}; not ready for firmware",
            row.source,
            row.checked_at.to_rfc3339()
        );
        out.extend(component_obstacle(scope, id.into(), "flow", None, message));
    }
    Ok(out)
}
