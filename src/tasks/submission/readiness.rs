//! The readiness check: whether an operation's targets are held or not ready, asked once per
//! submission (a request, each rollout wave and each schedule fire all submit) and again when a
//! queued task would start. In the way are:
//! - holds counting now on a targeted rack, component or the rack's NVLink domain (`held`);
//! - health-report alerts classified `PreventOperations` on a targeted component (`not_ready`);
//! - for firmware, a targeted tray whose BMC the sync last saw unreachable or refusing
//!   (`not_ready`; power-on stays allowed, it is how one recovers a tray);
//! - for powering off or resetting NVSwitch trays, the compute trays of their NVLink domain
//!   (this rack or another) that are on and not part of the request (`not_ready`).
//!
//! `override_readiness_check` proceeds anyway: the caller (the API) checks it is an admin, and
//! [`record_override`] writes what was overridden into the audit log and beside the request,
//! so its queued tasks are not refused for the same obstacles later.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use serde::{Deserialize, Serialize};

use crate::audit::{self, Change};
use crate::db::entities::{component_drifts, components, racks, readiness_overrides};
use crate::domain::ComponentType;
use crate::domain::operation::{Operation, OperationSpec};
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{ComponentId, HoldId, NvlDomainId, OperationRequestId, RackId};
use crate::inventory::holds::{self, Hold, HoldTarget};
use crate::inventory::{health, targets::RackWork};
use crate::tasks::model::Task;
use crate::tasks::submission::{RefusalCode, Rejection};

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
    if powers_off_switches(operation) {
        out.extend(nvlink_compute_on(db, scope, &domains).await?);
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

/// Whether the operation removes power from (or resets) NVSwitch trays, which takes NVLink
/// away from every compute tray of their domain. A BMC reset leaves the host alone.
fn powers_off_switches(operation: &Operation) -> bool {
    matches!(
        operation,
        Operation::PowerOff { .. }
            | Operation::PowerReset { .. }
            | Operation::WarmReset
            | Operation::ColdReset
    )
}

/// Compute trays that are on in the domains of targeted NVSwitch trays, outside the request.
async fn nvlink_compute_on(
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
            out.push(nvlink_obstacle(scope, *rack, &tray, &tray_rack.name));
        }
    }
    Ok(out)
}

fn nvlink_obstacle(
    scope: &Scope,
    rack: RackId,
    tray: &components::Model,
    tray_rack: &str,
) -> Obstacle {
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

/// The `409` for obstacles: `held` when any hold is in the way, else `not_ready`; `errors`
/// names each hold and alert.
pub fn refusal(obstacles: &[Obstacle]) -> Error {
    let any_hold = obstacles.iter().any(|o| o.code == ReadinessCode::Held);
    let code = if any_hold { Code::Held } else { Code::NotReady };
    let errors = obstacles
        .iter()
        .map(|o| {
            let field = match &o.component_name {
                Some(c) => format!("racks.{}.components.{c}", o.rack_name),
                None => format!("racks.{}", o.rack_name),
            };
            FieldError::new(field, o.message.clone())
        })
        .collect();
    let what = if any_hold { "held" } else { "not ready" };
    Error::Conflict {
        code,
        message: format!(
            "targets are {what}; no task was created (an admin may set override_readiness_check)"
        ),
        errors,
    }
}

/// Records that `request` went past `overridden`: one audit entry naming each hold and alert,
/// and the row a queued task of the request is checked against when it starts. Nothing when
/// nothing was overridden.
pub async fn record_override(
    db: &sea_orm::DatabaseConnection,
    request: OperationRequestId,
    overridden: &[Obstacle],
    now: DateTime<Utc>,
) -> Result<()> {
    if overridden.is_empty() {
        return Ok(());
    }
    let doc = serde_json::to_value(overridden).map_err(|e| Error::Internal(e.to_string()))?;
    let txn = crate::db::begin_write(db).await?;
    readiness_overrides::Entity::insert(readiness_overrides::ActiveModel {
        request_id: Set(request.uuid()),
        overridden: Set(doc.clone()),
        created_by: Set(audit::actor()),
        created_at: Set(now),
    })
    .exec_without_returning(&txn)
    .await?;
    let after = serde_json::json!({"override_readiness_check": true, "overridden": doc});
    let change = Change::new("readiness_override", request).after(Some(after));
    audit::record(&txn, change, now).await?;
    txn.commit().await?;
    Ok(())
}

/// The check again for one rack, inside the transaction that holds its lock (holds and health
/// reports are written under the same lock): a hold or alert committed since [`admit`] ran
/// refuses the rack instead of letting its task through. Nothing with an override.
pub async fn recheck(
    db: &impl ConnectionTrait,
    spec: &OperationSpec,
    rack: &RackWork,
    now: DateTime<Utc>,
) -> Result<Option<Rejection>> {
    if spec.override_readiness_check {
        return Ok(None);
    }
    let scope = Scope::of(std::slice::from_ref(rack));
    let found = obstacles(db, &spec.operation, &scope, now).await?;
    if found.is_empty() {
        return Ok(None);
    }
    let held = found.iter().any(|o| o.code == ReadinessCode::Held);
    let reasons: Vec<&str> = found.iter().map(|o| o.message.as_str()).collect();
    Ok(Some(Rejection {
        rack_id: rack.rack_id,
        rack_name: rack.rack_name.clone(),
        code: if held {
            RefusalCode::Held
        } else {
            RefusalCode::NotReady
        },
        reason: reasons.join("; "),
    }))
}

/// Whether `request` was submitted with an override.
pub async fn overridden(db: &impl ConnectionTrait, request: OperationRequestId) -> Result<bool> {
    Ok(readiness_overrides::Entity::find_by_id(request.uuid())
        .one(db)
        .await?
        .is_some())
}

/// The check a submission makes: the obstacles an override goes past (recorded by the caller),
/// or the `409` when there is no override.
pub async fn admit(
    db: &impl ConnectionTrait,
    spec: &OperationSpec,
    work: &[RackWork],
    now: DateTime<Utc>,
) -> Result<Vec<Obstacle>> {
    let found = obstacles(db, &spec.operation, &Scope::of(work), now).await?;
    if found.is_empty() || spec.override_readiness_check {
        return Ok(found);
    }
    Err(refusal(&found))
}
