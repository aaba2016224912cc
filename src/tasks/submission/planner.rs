//! The one planner: what a submission does on one rack, decided once from its inputs (the spec,
//! the rack's resolved targets, the resolved rule, the configured managers and the rack's active
//! tasks). A dry run shows its decisions and a submission acts on them, so a preview is the
//! submission by construction.
//!
//! A task that starts at once runs the plan decided here (it is planned once). A queued task is
//! planned again when it is promoted (`lifecycle`): the rack's inventory and rules may have
//! changed while it waited, and it runs what holds when it starts.

use sea_orm::ConnectionTrait;
use serde::{Deserialize, Serialize};

use super::admission::{self, Outcome};
use super::capability;
use crate::components::registry::Registry;
use crate::domain::code::OperationCode;
use crate::domain::operation::OperationSpec;
use crate::error::{Code, Result};
use crate::ids::{RackId, TaskId};
use crate::inventory::targets::RackWork;
use crate::operations::plan::{self, Plan};
use crate::rules::model::{Rule, RuleSource};
use crate::tasks::model::{Footprint, Task, TaskComponent, TaskStatus};

/// Why a rack gets no task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalCode {
    /// A conflicting task is active on the rack and the request does not queue.
    RackBusy,
    /// The rack's queue holds as many waiting tasks as allowed.
    QueueFull,
    /// No compute, NVSwitch or power-shelf component is targeted.
    NoComponents,
    /// The configured managers cannot do what the plan asks.
    Unsupported,
    /// The run could not be started; the task was withdrawn.
    EngineUnavailable,
    /// A hold written while the request was being decided stands on the rack.
    Held,
    /// A `PreventOperations` alert (or Flow's own observation) written while the request was
    /// being decided makes a targeted component not ready.
    NotReady,
}

impl RefusalCode {
    /// Every refusal reason.
    pub const ALL: [RefusalCode; 7] = [
        Self::RackBusy,
        Self::QueueFull,
        Self::NoComponents,
        Self::Unsupported,
        Self::EngineUnavailable,
        Self::Held,
        Self::NotReady,
    ];

    /// The wire form, the same as the problem code it maps to.
    pub fn as_str(self) -> &'static str {
        Code::from(self).as_str()
    }
}

/// Every refusal reason is also a problem code: a refused submission answers with one of them.
impl From<RefusalCode> for Code {
    fn from(code: RefusalCode) -> Self {
        match code {
            RefusalCode::RackBusy => Code::RackBusy,
            RefusalCode::QueueFull => Code::QueueFull,
            RefusalCode::NoComponents => Code::NoComponents,
            RefusalCode::Unsupported => Code::Unsupported,
            RefusalCode::EngineUnavailable => Code::EngineUnavailable,
            RefusalCode::Held => Code::Held,
            RefusalCode::NotReady => Code::NotReady,
        }
    }
}

/// A refusal with its human reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: RefusalCode,
    pub reason: String,
}

/// A task that blocks (or queues) a rack's new task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocker {
    pub task_id: TaskId,
    pub operation: OperationCode,
    pub status: TaskStatus,
}

/// What a submission does on one rack.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub rack_id: RackId,
    pub rack_name: String,
    pub outcome: Outcome,
    /// The active tasks the new one conflicts with, oldest first.
    pub conflicts: Vec<Blocker>,
    /// What the plan asks that the configured managers cannot do (then `unsupported`).
    pub unsupported: Vec<String>,
    /// The plan the task runs; `None` when there is nothing to plan (no components).
    pub plan: Option<Plan>,
    /// A firmware upgrade's recipes per component (dry runs only).
    pub firmware: Option<super::recipes::FirmwarePlan>,
}

/// A rule as resolved for one rack, with where it came from.
pub type ResolvedRule = (Rule, RuleSource);

/// The racks' devices the operation acts on: a firmware upgrade with per-type versions leaves
/// the other types out of the task (its components, its plan, its maintenance marks) entirely —
/// unless a tray's recipe needs the rack's AC cycle: then the whole targeted rack takes part,
/// since its shelves cut the power and every tray loses it (they run only the AC-cycle stages).
pub fn narrow(
    spec: &OperationSpec,
    mut work: Vec<RackWork>,
    managers: Option<&Registry>,
) -> Vec<RackWork> {
    for rack in &mut work {
        let whole = managers.is_some_and(|m| needs_ac_cycle(spec, rack, m));
        if !whole {
            rack.devices.retain(|d| spec.operation.touches(d.kind));
        }
    }
    work
}

/// Whether a device the upgrade installs on runs a recipe with an `ac_cycle` bundle.
fn needs_ac_cycle(spec: &OperationSpec, rack: &RackWork, managers: &Registry) -> bool {
    let crate::domain::operation::Operation::FirmwareUpgrade { firmware, .. } = &spec.operation
    else {
        return false;
    };
    rack.devices
        .iter()
        .filter(|d| spec.operation.touches(d.kind))
        .any(|d| {
            let request = crate::operations::plan::for_type(firmware, d.kind);
            managers
                .get(d.kind)
                .and_then(|s| s.firmware.as_ref())
                .and_then(|f| f.recipe(d, &request))
                .is_some_and(|r| r.needs_ac_cycle())
        })
}

/// The rule the rack's task would run, resolved now; `None` when the rack has nothing to run.
pub async fn rule_for(
    db: &impl ConnectionTrait,
    spec: &OperationSpec,
    rack: &RackWork,
) -> Result<Option<ResolvedRule>> {
    if rack.devices.is_empty() {
        return Ok(None);
    }
    let resolved =
        crate::rules::resolve::resolve(db, spec.rule_id, rack.rack_id, spec.operation.code())
            .await?;
    Ok(Some(resolved))
}

/// Decides one rack: no components, then what the managers cannot do, then the rack's active
/// tasks (pending, running and waiting, oldest first). Pure: the callers load the inputs.
pub fn decide(
    spec: &OperationSpec,
    rack: &RackWork,
    rule: Option<&ResolvedRule>,
    managers: Option<&Registry>,
    active: &[Task],
    asked: &[String],
) -> Decision {
    let mut decision = Decision {
        rack_id: rack.rack_id,
        rack_name: rack.rack_name.clone(),
        outcome: Outcome::Start,
        conflicts: Vec::new(),
        unsupported: Vec::new(),
        plan: None,
        firmware: None,
    };
    let Some((rule, source)) = rule.filter(|_| !rack.devices.is_empty()) else {
        decision.outcome = Outcome::Reject(Refusal {
            code: RefusalCode::NoComponents,
            reason: "no compute, NVSwitch or power-shelf component is targeted".into(),
        });
        return decision;
    };
    let plan = plan::build(rule, *source, &spec.operation, &rack.devices);
    let footprint = Footprint {
        task_type: spec.operation.task_type(),
        components: TaskComponent::of(&rack.devices),
    };
    let admission = admission::admit(&footprint, spec.conflict_strategy, active);
    decision.conflicts = admission
        .blockers
        .iter()
        .map(|t| Blocker {
            task_id: t.id,
            operation: t.operation.code(),
            status: t.status,
        })
        .collect();
    decision.unsupported = managers.map_or_else(Vec::new, |m| capability::gaps(&plan, m));
    decision.unsupported.extend(asked.iter().cloned());
    // What the managers cannot do refuses the rack whatever its tasks.
    decision.outcome = if decision.unsupported.is_empty() {
        admission.outcome
    } else {
        Outcome::Reject(Refusal {
            code: RefusalCode::Unsupported,
            reason: decision.unsupported.join("; "),
        })
    };
    decision.plan = Some(plan);
    decision
}
