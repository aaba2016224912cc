//! Operation requests: the operation with its options, the targets, and how to treat a busy rack.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::code::OperationCode;
use super::device::{FirmwareRequest, PowerOp};
use super::kinds::ComponentType;
use crate::error::{Result, Violations};
use crate::ids::{RackId, RuleId};

/// What to do to the targeted components.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "snake_case")]
pub enum Operation {
    PowerOn,
    PowerOff {
        forced: bool,
    },
    PowerReset {
        forced: bool,
    },
    /// Trays reset through their BMCs without removing power.
    WarmReset,
    /// A full AC cycle of the rack, shelves included.
    ColdReset,
    /// Trays' BMCs restarted (`Manager.Reset`), host power untouched.
    BmcReset,
    FirmwareUpgrade {
        firmware: FirmwareRequest,
        /// Window in which the update may run (managers that schedule updates honour it).
        start_time: Option<DateTime<Utc>>,
        end_time: Option<DateTime<Utc>>,
        /// Which of the three firmware codes the task goes by; tasks stored before the
        /// field existed read as upgrades.
        #[serde(default)]
        direction: FirmwareDirection,
    },
    BringUp,
    Ingest,
}

/// Why a firmware task installs its version: all three run the same recipe path and rule
/// family, and differ only in the code the task is stored, listed and audited under.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FirmwareDirection {
    #[default]
    Upgrade,
    /// An older catalog version an operator named.
    Downgrade,
    /// The version each component ran before its last upgrade.
    Rollback,
}

/// Task families; conflicts between tasks are decided per family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskType {
    PowerControl,
    FirmwareControl,
    BringUp,
}

impl Operation {
    /// Stable code stored with each task (`power_on`, `force_power_off`, `upgrade`, ...).
    pub fn code(&self) -> OperationCode {
        match self {
            Self::PowerOn => OperationCode::PowerOn,
            Self::PowerOff { forced: false } => OperationCode::PowerOff,
            Self::PowerOff { forced: true } => OperationCode::ForcePowerOff,
            Self::PowerReset { forced: false } => OperationCode::Restart,
            Self::PowerReset { forced: true } => OperationCode::ForceRestart,
            Self::WarmReset => OperationCode::WarmReset,
            Self::ColdReset => OperationCode::ColdReset,
            Self::BmcReset => OperationCode::BmcReset,
            Self::FirmwareUpgrade { direction, .. } => match direction {
                FirmwareDirection::Upgrade => OperationCode::Upgrade,
                FirmwareDirection::Downgrade => OperationCode::Downgrade,
                FirmwareDirection::Rollback => OperationCode::Rollback,
            },
            Self::BringUp => OperationCode::BringUp,
            Self::Ingest => OperationCode::Ingest,
        }
    }

    pub fn task_type(&self) -> TaskType {
        match self {
            Self::PowerOn
            | Self::PowerOff { .. }
            | Self::PowerReset { .. }
            | Self::WarmReset
            | Self::ColdReset
            | Self::BmcReset => TaskType::PowerControl,
            Self::FirmwareUpgrade { .. } => TaskType::FirmwareControl,
            Self::BringUp | Self::Ingest => TaskType::BringUp,
        }
    }

    /// The single power operation of a plain power task.
    pub fn power_op(&self) -> Option<PowerOp> {
        match self {
            Self::PowerOn => Some(PowerOp::On),
            Self::PowerOff { forced: false } => Some(PowerOp::Off),
            Self::PowerOff { forced: true } => Some(PowerOp::ForceOff),
            _ => None,
        }
    }

    /// Whether the operation acts on components of `kind`: a firmware upgrade given per-type
    /// versions touches only the types it names; every other operation, every type targeted.
    pub fn touches(&self, kind: ComponentType) -> bool {
        match self {
            Self::FirmwareUpgrade { firmware, .. } => {
                listed_types(firmware).is_none_or(|types| types.contains(&kind))
            }
            _ => true,
        }
    }

    /// Bring-up and ingest take the whole rack: they always reject on conflict.
    pub fn may_queue(&self) -> bool {
        self.task_type() != TaskType::BringUp
    }
}

/// A rack named by id or name, optionally narrowed to some component types.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RackTarget {
    pub rack: RackRef,
    /// Empty means every component of the rack.
    pub component_types: Vec<ComponentType>,
}

/// A rack reference as the caller gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RackRef {
    Id(Uuid),
    Name(String),
}

impl std::fmt::Display for RackRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Id(id) => write!(f, "{id}"),
            Self::Name(name) => f.write_str(name),
        }
    }
}

/// A component named by Flow id or by its id in its manager.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentTarget {
    Id(Uuid),
    External { kind: ComponentType, id: String },
}

/// An NVLink domain named by id or name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainRef {
    Id(Uuid),
    Name(String),
}

impl std::fmt::Display for DomainRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Id(id) => write!(f, "{id}"),
            Self::Name(name) => f.write_str(name),
        }
    }
}

/// Which components an operation touches: whole racks (optionally by type), single components,
/// or every live rack of some NVLink domains (resolved when the request is submitted, so a
/// stored spec follows the domain's membership).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetSpec {
    Racks(Vec<RackTarget>),
    Components(Vec<ComponentTarget>),
    NvlDomains(Vec<DomainRef>),
}

/// What happens when a targeted rack is busy with a conflicting task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConflictStrategy {
    #[default]
    Reject,
    Queue,
}

/// Longest a queued task may wait, and the default.
pub const MAX_QUEUE_TIMEOUT_SECS: u64 = 7 * 24 * 3600;
pub const DEFAULT_QUEUE_TIMEOUT_SECS: u64 = 3600;
/// Most tasks that may wait on one rack at a time.
pub const MAX_WAITING_PER_RACK: usize = 5;

/// One operation request, as validated: the unit the API turns into one task per rack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationSpec {
    pub operation: Operation,
    pub targets: TargetSpec,
    pub description: Option<String>,
    pub conflict_strategy: ConflictStrategy,
    pub queue_timeout_secs: u64,
    /// A stored operation rule to run instead of the one resolution would pick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<crate::ids::RuleId>,
    /// Proceed past holds and not-ready components (admin only; the API checks the role).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub override_readiness_check: bool,
    /// A firmware operation may cover only part of an NVLink domain (audited when it does).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_split_domain: bool,
}

impl OperationSpec {
    /// Checks everything that needs no database: non-empty targets, option consistency.
    pub fn validate(&self) -> Result<()> {
        let mut v = Violations::default();
        match &self.targets {
            TargetSpec::Racks(racks) if racks.is_empty() => {
                v.push("target_spec.racks", "must name at least one rack")
            }
            TargetSpec::Components(cs) if cs.is_empty() => {
                v.push("target_spec.components", "must name at least one component")
            }
            TargetSpec::Components(cs) => {
                for (i, c) in cs.iter().enumerate() {
                    if let ComponentTarget::External { id, .. } = c
                        && id.trim().is_empty()
                    {
                        v.push(
                            format!("target_spec.components[{i}].external.id"),
                            "must not be empty",
                        );
                    }
                }
            }
            TargetSpec::Racks(racks) => {
                for (i, r) in racks.iter().enumerate() {
                    if let RackRef::Name(name) = &r.rack
                        && name.trim().is_empty()
                    {
                        v.push(format!("target_spec.racks[{i}].name"), "must not be empty");
                    }
                }
            }
            TargetSpec::NvlDomains(ds) if ds.is_empty() => {
                v.push("target_spec.nvl_domains", "must name at least one domain")
            }
            TargetSpec::NvlDomains(ds) => {
                for (i, d) in ds.iter().enumerate() {
                    if let DomainRef::Name(name) = d
                        && name.trim().is_empty()
                    {
                        v.push(
                            format!("target_spec.nvl_domains[{i}].name"),
                            "must not be empty",
                        );
                    }
                }
            }
        }
        if let Operation::FirmwareUpgrade {
            start_time,
            end_time,
            ..
        } = &self.operation
        {
            match (start_time, end_time) {
                (Some(s), Some(e)) if s >= e => v.push("end_time", "must be after start_time"),
                (Some(_), None) => {
                    v.push("end_time", "give both start_time and end_time, or neither")
                }
                (None, Some(_)) => v.push(
                    "start_time",
                    "give both start_time and end_time, or neither",
                ),
                _ => {}
            }
        }
        if self.conflict_strategy == ConflictStrategy::Queue && !self.operation.may_queue() {
            v.push(
                "conflict_strategy",
                format!("{} always rejects on conflict", self.operation.code()),
            );
        }
        if self.queue_timeout_secs == 0 || self.queue_timeout_secs > MAX_QUEUE_TIMEOUT_SECS {
            v.push(
                "queue_timeout_seconds",
                format!("must be between 1 and {MAX_QUEUE_TIMEOUT_SECS}"),
            );
        }
        v.finish()
    }
}

/// The operation a schedule fire or a rollout wave submits, without targets: the scope supplies
/// one rack per task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationTemplate {
    pub operation: Operation,
    pub queue_timeout_secs: u64,
    /// Carried into every submitted spec; resolution happens at submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<RuleId>,
}

impl OperationTemplate {
    /// The spec one rack's task is submitted with.
    pub fn spec_for(
        &self,
        description: String,
        conflict_strategy: ConflictStrategy,
        rack_id: RackId,
        component_types: &[ComponentType],
    ) -> OperationSpec {
        OperationSpec {
            operation: self.operation.clone(),
            targets: TargetSpec::Racks(vec![RackTarget {
                rack: RackRef::Id(rack_id.into()),
                component_types: component_types.to_vec(),
            }]),
            description: Some(description),
            conflict_strategy,
            queue_timeout_secs: self.queue_timeout_secs,
            rule_id: self.rule_id,
            override_readiness_check: false,
            allow_split_domain: false,
        }
    }
}

/// A per-type version object (`{"compute": "2.1.0", ...}`), keys parsed as component types
/// (proto names accepted); `None` for a single version for every type.
pub fn per_type(request: &FirmwareRequest) -> Option<Vec<(ComponentType, Option<String>)>> {
    let text = request.target_version.as_deref()?;
    let object = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text).ok()?;
    Some(
        object
            .iter()
            .filter_map(|(k, v)| Some((ComponentType::parse(k)?, v.as_str().map(String::from))))
            .collect(),
    )
}

/// The types a per-type version object names: a firmware upgrade touches only those (a type
/// left out is not upgraded to anything). `None` when one version is given for every type.
pub fn listed_types(request: &FirmwareRequest) -> Option<Vec<ComponentType>> {
    per_type(request).map(|v| v.into_iter().map(|(kind, _)| kind).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(operation: Operation, targets: TargetSpec) -> OperationSpec {
        OperationSpec {
            operation,
            targets,
            description: None,
            conflict_strategy: ConflictStrategy::Reject,
            queue_timeout_secs: DEFAULT_QUEUE_TIMEOUT_SECS,
            rule_id: None,
            override_readiness_check: false,
            allow_split_domain: false,
        }
    }

    fn one_rack() -> TargetSpec {
        TargetSpec::Racks(vec![RackTarget {
            rack: RackRef::Name("r1".into()),
            component_types: vec![],
        }])
    }

    #[test]
    fn codes_follow_the_forced_flag() {
        assert_eq!(
            Operation::PowerOff { forced: true }.code().as_str(),
            "force_power_off"
        );
        assert_eq!(
            Operation::PowerReset { forced: false }.code().as_str(),
            "restart"
        );
        assert_eq!(Operation::Ingest.task_type(), TaskType::BringUp);
    }

    #[test]
    fn empty_targets_and_bad_windows_are_rejected() {
        assert!(
            spec(Operation::PowerOn, TargetSpec::Racks(vec![]))
                .validate()
                .is_err()
        );
        assert!(
            spec(Operation::PowerOn, TargetSpec::Components(vec![]))
                .validate()
                .is_err()
        );
        let now = Utc::now();
        let fw = |s, e| Operation::FirmwareUpgrade {
            firmware: FirmwareRequest::default(),
            start_time: s,
            end_time: e,
            direction: Default::default(),
        };
        assert!(
            spec(fw(Some(now), Some(now)), one_rack())
                .validate()
                .is_err()
        );
        assert!(spec(fw(Some(now), None), one_rack()).validate().is_err());
        assert!(
            spec(
                fw(Some(now), Some(now + chrono::Duration::hours(1))),
                one_rack()
            )
            .validate()
            .is_ok()
        );
    }

    #[test]
    fn bring_up_cannot_queue() {
        let mut s = spec(Operation::BringUp, one_rack());
        s.conflict_strategy = ConflictStrategy::Queue;
        assert!(s.validate().is_err());
    }
}
