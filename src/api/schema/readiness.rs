//! Documents of the safety interlocks: holds, health reports and the readiness blockers a dry
//! run lists.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::inventory::health::{Alert, HealthReport};
use crate::inventory::holds::{Hold, HoldTarget};
use crate::tasks::submission::readiness::{Obstacle, ReadinessCode};

/// Which refusal a blocker causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadinessCodeDoc {
    Held,
    NotReady,
}

/// One hold or not-ready component in the way of an operation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReadinessBlockerDoc {
    /// `held` (a hold) or `not_ready` (an alert, an unreachable BMC, NVLink compute trays on).
    pub code: ReadinessCodeDoc,
    pub rack_id: Uuid,
    pub rack_name: String,
    pub component_id: Option<Uuid>,
    pub component_name: Option<String>,
    pub hold_id: Option<Uuid>,
    /// The health report's source; `flow` for Flow's own observations.
    pub source: Option<String>,
    pub alert_id: Option<String>,
    pub message: String,
}

impl From<Obstacle> for ReadinessBlockerDoc {
    fn from(o: Obstacle) -> Self {
        Self {
            code: match o.code {
                ReadinessCode::Held => ReadinessCodeDoc::Held,
                ReadinessCode::NotReady => ReadinessCodeDoc::NotReady,
            },
            rack_id: o.rack_id.into(),
            rack_name: o.rack_name,
            component_id: o.component_id.map(Into::into),
            component_name: o.component_name,
            hold_id: o.hold_id.map(Into::into),
            source: o.source,
            alert_id: o.alert_id,
            message: o.message,
        }
    }
}

/// A rack by id or name.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldRackRefDoc {
    pub id: Option<Uuid>,
    pub name: Option<String>,
}

/// A component by id.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldComponentRefDoc {
    pub id: Uuid,
}

/// What a hold names: exactly one of `rack`, `component`, `nvl_domain`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldTargetRequest {
    pub rack: Option<HoldRackRefDoc>,
    pub component: Option<HoldComponentRefDoc>,
    pub nvl_domain: Option<HoldRackRefDoc>,
}

/// A new hold.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target": {"rack": {"name": "g10"}}, "owner": "slurm", "reason": "job 4711", "expires_at": "2026-12-11T08:00:00Z"}))]
pub struct CreateHoldRequest {
    pub target: HoldTargetRequest,
    /// Who holds it (`slurm`, `k8s-controller`); the `owner` filter of the list.
    pub owner: String,
    pub reason: String,
    /// When the hold stops counting by itself; must be in the future. Absent: until deleted.
    pub expires_at: Option<DateTime<Utc>>,
}

/// What a hold names, as stored (ids).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HoldTargetDoc {
    Rack(HeldId),
    Component(HeldId),
    NvlDomain(HeldId),
}

/// The id of what a hold names. One named schema for the three kinds of target: SDK
/// generators would otherwise make three same-named models of the inline object.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HeldId {
    pub id: Uuid,
}

/// A hold.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"id": "0192f3a0-0000-7000-8000-0000000000d1", "target": {"rack": {"id": "0192f3a0-0000-7000-8000-0000000000a1"}},
    "owner": "slurm", "reason": "job 4711", "created_by": "token:slurm", "created_at": "2026-12-10T08:00:00Z",
    "expires_at": null, "active": true}))]
pub struct HoldDoc {
    pub id: Uuid,
    pub target: HoldTargetDoc,
    pub owner: String,
    pub reason: String,
    /// The actor that created it; an `operator` may delete only its own.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    /// Whether it counts now (not expired).
    pub active: bool,
}

impl HoldDoc {
    pub fn new(hold: Hold, now: DateTime<Utc>) -> Self {
        Self {
            id: hold.id.into(),
            active: hold.is_active(now),
            target: match hold.target {
                HoldTarget::Rack(id) => HoldTargetDoc::Rack(HeldId { id: id.into() }),
                HoldTarget::Component(id) => HoldTargetDoc::Component(HeldId { id: id.into() }),
                HoldTarget::NvlDomain(id) => HoldTargetDoc::NvlDomain(HeldId { id: id.into() }),
            },
            owner: hold.owner,
            reason: hold.reason,
            created_by: hold.created_by,
            created_at: hold.created_at,
            expires_at: hold.expires_at,
        }
    }
}

/// One alert of a health report.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AlertDoc {
    pub id: String,
    pub message: String,
    /// Kept as given; only `PreventOperations` makes the component not ready.
    #[serde(default)]
    pub classifications: Vec<String>,
}

/// A source's whole report: replaces what it said before.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"alerts": [{"id": "gpu-xid-79", "message": "GPU 3 fell off the bus", "classifications": ["PreventOperations"]}]}))]
pub struct PutHealthReportRequest {
    pub alerts: Vec<AlertDoc>,
}

/// One source's report on a component.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HealthReportDoc {
    pub component_id: Uuid,
    pub source: String,
    pub alerts: Vec<AlertDoc>,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
    /// Whether an alert is classified `PreventOperations`.
    pub prevents_operations: bool,
}

impl From<HealthReport> for HealthReportDoc {
    fn from(r: HealthReport) -> Self {
        Self {
            component_id: r.component_id.into(),
            prevents_operations: r.alerts.iter().any(Alert::prevents_operations),
            source: r.source,
            alerts: r
                .alerts
                .into_iter()
                .map(|a| AlertDoc {
                    id: a.id,
                    message: a.message,
                    classifications: a.classifications,
                })
                .collect(),
            updated_by: r.updated_by,
            updated_at: r.updated_at,
        }
    }
}

/// A component's reports, by source.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HealthReportListDoc {
    pub items: Vec<HealthReportDoc>,
}
