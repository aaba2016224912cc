//! Operation request and response bodies, and their translation into an operation spec.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::target::TargetSpecDoc;
use crate::components::FirmwareRequest;
use crate::domain::ComponentType;
use crate::domain::operation::{
    ConflictStrategy, DEFAULT_QUEUE_TIMEOUT_SECS, Operation, OperationSpec,
};
use crate::error::{Error, Result, Violations};
use crate::tasks::submission::Submission;

/// `reject` (default) refuses a rack busy with a conflicting task; `queue` waits for it. Waiting
/// tasks count: a request that conflicts with one queues behind it (or is refused) rather than
/// overtaking it, and waiting tasks start in arrival order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConflictStrategyDoc {
    #[default]
    Reject,
    Queue,
}

/// Options every operation shares.
pub struct Common<'a> {
    pub target_spec: &'a TargetSpecDoc,
    pub description: &'a Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub queue_timeout_seconds: Option<u64>,
    pub rule_id: Option<Uuid>,
    pub override_readiness_check: bool,
}

/// The shared options of a request body, for [`build_spec`].
macro_rules! common_of {
    ($($request:ty),*) => {$(
        impl $request {
            pub fn common(&self) -> Common<'_> {
                Common {
                    target_spec: &self.target_spec,
                    description: &self.description,
                    conflict_strategy: self.conflict_strategy,
                    queue_timeout_seconds: self.queue_timeout_seconds,
                    rule_id: self.rule_id,
                    override_readiness_check: self.override_readiness_check,
                }
            }
        }
    )*};
}

// The firmware downgrade and rollback bodies (`firmware_back`) share it.
pub(crate) use common_of;

common_of!(
    PowerOnRequest,
    PowerOffRequest,
    PowerResetRequest,
    FirmwareUpgradeRequest
);

/// Builds and validates the spec; every problem is reported at once.
pub fn build_spec(
    operation: Operation,
    common: Common<'_>,
    mut v: Violations,
) -> Result<OperationSpec> {
    let targets = common.target_spec.to_domain(&mut v);
    let spec = OperationSpec {
        operation,
        targets,
        description: common
            .description
            .as_ref()
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty()),
        conflict_strategy: match common.conflict_strategy.unwrap_or_default() {
            ConflictStrategyDoc::Reject => ConflictStrategy::Reject,
            ConflictStrategyDoc::Queue => ConflictStrategy::Queue,
        },
        queue_timeout_secs: common
            .queue_timeout_seconds
            .unwrap_or(DEFAULT_QUEUE_TIMEOUT_SECS),
        rule_id: common.rule_id.map(Into::into),
        override_readiness_check: common.override_readiness_check,
        allow_split_domain: false,
    };
    match spec.validate() {
        Err(Error::Invalid(errors)) => {
            for e in errors {
                v.push(e.field, e.message);
            }
        }
        Err(other) => return Err(other),
        Ok(()) => {}
    }
    v.finish()?;
    Ok(spec)
}

/// Power on racks or components: power shelves first, then NVSwitch trays, then compute trays,
/// each stage verified before the next.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target_spec": {"racks": [{"name": "g10"}]}, "description": "after maintenance", "conflict_strategy": "queue"}))]
pub struct PowerOnRequest {
    pub target_spec: TargetSpecDoc,
    pub description: Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    /// How long a queued task may wait (default 3600).
    pub queue_timeout_seconds: Option<u64>,
    /// Run this stored operation rule instead of the rack's, the default or the built-in one.
    pub rule_id: Option<Uuid>,
    /// Proceed although targets are held or not ready (`admin` only; the audit entry of the
    /// submission records every hold and alert overridden). Without it such a request is a
    /// `409` `held` / `not_ready`.
    #[serde(default)]
    pub override_readiness_check: bool,
}

/// Power off (compute, then NVSwitch, then power shelves) or, with `forced`, force it off.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target_spec": {"racks": [{"name": "g10"}]}, "forced": false}))]
pub struct PowerOffRequest {
    pub target_spec: TargetSpecDoc,
    #[serde(default)]
    pub forced: bool,
    pub description: Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub queue_timeout_seconds: Option<u64>,
    /// Run this stored operation rule instead of the rack's, the default or the built-in one.
    pub rule_id: Option<Uuid>,
    /// Proceed although targets are held or not ready (`admin` only; the audit entry of the
    /// submission records every hold and alert overridden). Without it such a request is a
    /// `409` `held` / `not_ready`.
    #[serde(default)]
    pub override_readiness_check: bool,
}

/// How a reset is done: `restart` (default) powers everything off in safe order and on again
/// (`forced` skips graceful shutdown); `warm` resets trays through their BMCs without removing
/// power; `cold` is a full AC cycle with the shelves off long enough for power to drain; `bmc`
/// restarts the trays' BMCs themselves (`Manager.Reset`), each done once its BMC has gone away
/// and answers again, host power untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResetModeDoc {
    #[default]
    Restart,
    Warm,
    Cold,
    Bmc,
}

/// Power reset of racks or components.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target_spec": {"racks": [{"name": "g10"}]}, "mode": "warm"}))]
pub struct PowerResetRequest {
    pub target_spec: TargetSpecDoc,
    #[serde(default)]
    pub mode: ResetModeDoc,
    /// Only with `mode: restart`.
    #[serde(default)]
    pub forced: bool,
    pub description: Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub queue_timeout_seconds: Option<u64>,
    /// Run this stored operation rule instead of the rack's, the default or the built-in one.
    pub rule_id: Option<Uuid>,
    /// Proceed although targets are held or not ready (`admin` only; the audit entry of the
    /// submission records every hold and alert overridden). Without it such a request is a
    /// `409` `held` / `not_ready`.
    #[serde(default)]
    pub override_readiness_check: bool,
}

impl PowerResetRequest {
    /// The reset operation asked for; `forced` with a warm, cold or BMC reset is refused.
    pub fn operation(&self, v: &mut Violations) -> Operation {
        let operation = match self.mode {
            ResetModeDoc::Restart => {
                return Operation::PowerReset {
                    forced: self.forced,
                };
            }
            ResetModeDoc::Warm => Operation::WarmReset,
            ResetModeDoc::Cold => Operation::ColdReset,
            ResetModeDoc::Bmc => Operation::BmcReset,
        };
        if self.forced {
            v.push(
                "forced",
                "applies to mode restart only (warm, cold and BMC resets have their own sequence)",
            );
        }
        operation
    }
}

/// Firmware versions: one string for every component type, or an object keyed by type.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum TargetVersionDoc {
    One(String),
    PerType(std::collections::BTreeMap<String, String>),
}

/// Upgrade firmware: compute trays, then NVSwitch trays, then power shelves; each device's
/// update is started and polled until done.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target_spec": {"racks": [{"name": "g10", "component_types": ["powershelf"]}]}, "target_version": {"powershelf": "1.4.2"}, "sub_targets": ["pmc"]}))]
pub struct FirmwareUpgradeRequest {
    pub target_spec: TargetSpecDoc,
    /// Absent: each manager installs the site's desired version.
    pub target_version: Option<TargetVersionDoc>,
    /// Firmware parts to update (`pmc`, `psu`, `bmc`, `cpld`, `bios`, `nvos`); empty = default.
    #[serde(default)]
    pub sub_targets: Vec<String>,
    pub start_time: Option<DateTime<Utc>>,
    pub end_time: Option<DateTime<Utc>>,
    pub description: Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub queue_timeout_seconds: Option<u64>,
    /// Run this stored operation rule instead of the rack's, the default or the built-in one.
    pub rule_id: Option<Uuid>,
    /// Proceed although targets are held or not ready (`admin` only; the audit entry of the
    /// submission records every hold and alert overridden). Without it such a request is a
    /// `409` `held` / `not_ready`.
    #[serde(default)]
    pub override_readiness_check: bool,
    /// Upgrade even though the racks cover only part of an NVLink domain (default `false`:
    /// refused with `409` `domain_split`). The submission's audit entry records it.
    #[serde(default)]
    pub allow_split_domain: bool,
}

impl FirmwareUpgradeRequest {
    /// The firmware part of the operation, with the version normalised to text.
    pub fn firmware(&self, v: &mut Violations) -> FirmwareRequest {
        let target_version = match &self.target_version {
            None => None,
            Some(TargetVersionDoc::One(s)) if s.trim().is_empty() => None,
            Some(TargetVersionDoc::One(s)) => Some(s.trim().to_string()),
            Some(TargetVersionDoc::PerType(map)) => {
                let mut normalised = serde_json::Map::new();
                for (key, version) in map {
                    match ComponentType::parse(key) {
                        Some(kind) => {
                            normalised.insert(
                                kind.as_str().to_string(),
                                serde_json::Value::String(version.clone()),
                            );
                        }
                        None => v.push(format!("target_version.{key}"), "not a component type"),
                    }
                }
                Some(serde_json::Value::Object(normalised).to_string())
            }
        };
        let mut sub_targets = Vec::new();
        for (i, part) in self.sub_targets.iter().enumerate() {
            let part = part.trim().to_lowercase();
            if ["pmc", "psu", "bmc", "cpld", "bios", "nvos"].contains(&part.as_str()) {
                sub_targets.push(part);
            } else {
                v.push(
                    format!("sub_targets[{i}]"),
                    "expected one of pmc, psu, bmc, cpld, bios, nvos",
                );
            }
        }
        FirmwareRequest {
            target_version,
            sub_targets,
        }
    }
}

/// Bring-up or ingest of racks: always refused while a conflicting task runs.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target_spec": {"racks": [{"name": "g10"}]}, "description": "new rack"}))]
pub struct RackJobRequest {
    pub target_spec: TargetSpecDoc,
    pub description: Option<String>,
    /// Run this stored operation rule instead of the rack's, the default or the built-in one.
    pub rule_id: Option<Uuid>,
    /// Proceed although targets are held or not ready (`admin` only; the audit entry of the
    /// submission records every hold and alert overridden). Without it such a request is a
    /// `409` `held` / `not_ready`.
    #[serde(default)]
    pub override_readiness_check: bool,
}

/// A rack refused by a submission.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RejectionDoc {
    pub rack_id: Uuid,
    pub rack_name: String,
    /// `rack_busy`, `queue_full` or `no_components`.
    pub code: String,
    pub reason: String,
}

/// The tasks an operation request created (one per rack) and the racks it refused.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"request_id": "0192f3a0-0000-7000-8000-0000000000aa", "task_ids": ["0192f3a0-0000-7000-8000-0000000000ab"], "rejected": []}))]
pub struct SubmissionDoc {
    pub request_id: Uuid,
    pub task_ids: Vec<Uuid>,
    pub rejected: Vec<RejectionDoc>,
}

impl From<Submission> for SubmissionDoc {
    fn from(s: Submission) -> Self {
        Self {
            request_id: s.request_id.into(),
            task_ids: s.task_ids.into_iter().map(Into::into).collect(),
            rejected: s
                .rejected
                .into_iter()
                .map(|r| RejectionDoc {
                    rack_id: r.rack_id.into(),
                    rack_name: r.rack_name,
                    code: r.code.as_str().into(),
                    reason: r.reason,
                })
                .collect(),
        }
    }
}
