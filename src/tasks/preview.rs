//! Plans without side effects: the rule and stages each rack's task would run, and what would
//! block it, for dry runs; the same planning the dispatcher uses, so a preview is what then runs.

use std::collections::HashSet;

use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::admission::{self, Outcome};
use super::capability;
use super::model::{Footprint, TaskComponent, TaskStatus};
use crate::components::Device;
use crate::components::registry::Registry;
use crate::error::Result;
use crate::inventory::targets as resolve;
use crate::operations::model::{Operation, OperationSpec};
use crate::operations::plan::{self, Plan};
use crate::rules::resolve as rules;

/// A task that would block (or queue) a rack's new task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocker {
    pub task_id: Uuid,
    pub operation: String,
    pub status: TaskStatus,
}

/// What a submission would do on one rack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RackPreview {
    pub rack_id: Uuid,
    pub rack_name: String,
    /// `start`, `queue` or `reject`.
    pub outcome: &'static str,
    /// Why it would be refused (`rack_busy`, `queue_full`, `no_components`, `unsupported`).
    pub reason: Option<String>,
    pub conflicts: Vec<Blocker>,
    /// What the plan asks that the configured managers cannot do (then `reason: unsupported`).
    pub unsupported: Vec<String>,
    pub plan: Option<Plan>,
}

/// The plan a rack's task runs: its rule resolved now, over the given devices.
pub async fn plan_for(
    db: &impl ConnectionTrait,
    requested_rule: Option<Uuid>,
    rack_id: Uuid,
    operation: &Operation,
    devices: &[Device],
) -> Result<Plan> {
    let (rule, source) = rules::resolve(db, requested_rule, rack_id, operation.code()).await?;
    Ok(plan::build(&rule, source, operation, devices))
}

/// The targeted devices of a rack as the dispatcher reads them when the task starts.
pub async fn devices(
    db: &impl ConnectionTrait,
    rack_id: Uuid,
    components: &[TaskComponent],
) -> Result<Vec<Device>> {
    let ids: HashSet<Uuid> = components.iter().map(|c| c.id).collect();
    resolve::devices_of(db, rack_id, None, &ids).await
}

/// What submitting `spec` now would do on each targeted rack; creates nothing. With
/// `managers`, a plan they cannot serve is refused as a submission would be.
pub async fn preview(
    db: &impl ConnectionTrait,
    spec: &OperationSpec,
    managers: Option<&Registry>,
) -> Result<Vec<RackPreview>> {
    spec.validate()?;
    if let Some(rule_id) = spec.rule_id {
        rules::check_requested(db, rule_id, spec.operation.code()).await?;
    }
    let mut out = Vec::new();
    for rack in resolve::resolve(db, &spec.targets).await? {
        let components = TaskComponent::of(&rack.devices);
        let mut preview = RackPreview {
            rack_id: rack.rack_id,
            rack_name: rack.rack_name.clone(),
            outcome: "start",
            reason: None,
            conflicts: Vec::new(),
            unsupported: Vec::new(),
            plan: None,
        };
        if components.is_empty() {
            preview.outcome = "reject";
            preview.reason = Some("no_components".into());
            out.push(preview);
            continue;
        }
        let footprint = Footprint {
            task_type: spec.operation.task_type(),
            components: components.clone(),
        };
        let admission =
            admission::admit(db, rack.rack_id, &footprint, spec.conflict_strategy).await?;
        preview.conflicts = admission
            .blockers
            .iter()
            .map(|t| Blocker {
                task_id: t.id,
                operation: t.operation.code().to_string(),
                status: t.status,
            })
            .collect();
        match admission.outcome {
            Outcome::Start => {}
            Outcome::Queue { .. } => preview.outcome = "queue",
            Outcome::Reject { code, .. } => {
                preview.outcome = "reject";
                preview.reason = Some(code.into());
            }
        }
        let devices = devices(db, rack.rack_id, &components).await?;
        let plan = plan_for(db, spec.rule_id, rack.rack_id, &spec.operation, &devices).await?;
        if let Some(managers) = managers {
            preview.unsupported = capability::gaps(&plan, managers);
            // Refused before the rack's tasks are even looked at, as a submission is.
            if !preview.unsupported.is_empty() {
                preview.outcome = "reject";
                preview.reason = Some("unsupported".into());
            }
        }
        preview.plan = Some(plan);
        out.push(preview);
    }
    Ok(out)
}
