//! Task schedule request bodies and their translation to the schedule domain; what the
//! endpoints answer is in `schedule_view`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::required_text;
use super::operation::{FirmwareUpgradeRequest, TargetVersionDoc};
use super::target::TargetSpecDoc;
use crate::domain::operation::{DEFAULT_QUEUE_TIMEOUT_SECS, Operation, TargetSpec};
use crate::error::{Result, Violations};
use crate::schedules::model::{
    OperationTemplate, OverlapPolicy, ScheduleTargets, SpecKind, TimerSpec,
};

/// How fire times are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpecKindDoc {
    Interval,
    Cron,
    OneTime,
}

/// When a schedule fires. `interval`: a duration such as `30s`, `15m`, `1h30m` (at least 2 s);
/// `cron`: five fields `min hour day-of-month month day-of-week` (or `@daily`, `@hourly`, …)
/// read in `timezone`; `one_time`: an RFC 3339 time in the future.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"type": "cron", "spec": "30 2 * * 1-5", "timezone": "Europe/Berlin"}))]
pub struct TimerSpecDoc {
    #[serde(rename = "type")]
    pub kind: SpecKindDoc,
    pub spec: String,
    /// IANA time zone name (default `UTC`); only cron expressions are read in it.
    pub timezone: Option<String>,
}

impl TimerSpecDoc {
    pub fn to_domain(&self) -> TimerSpec {
        TimerSpec {
            kind: match self.kind {
                SpecKindDoc::Interval => SpecKind::Interval,
                SpecKindDoc::Cron => SpecKind::Cron,
                SpecKindDoc::OneTime => SpecKind::OneTime,
            },
            spec: self.spec.trim().to_string(),
            timezone: self
                .timezone
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .unwrap_or("UTC")
                .to_string(),
        }
    }
}

/// `skip` (default): a rack whose previous task from this schedule, or any conflicting task,
/// is still active gets no task this time. `queue`: the task waits in the rack's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OverlapPolicyDoc {
    #[default]
    Skip,
    Queue,
}

impl From<OverlapPolicyDoc> for OverlapPolicy {
    fn from(p: OverlapPolicyDoc) -> Self {
        match p {
            OverlapPolicyDoc::Skip => Self::Skip,
            OverlapPolicyDoc::Queue => Self::Queue,
        }
    }
}

impl From<OverlapPolicy> for OverlapPolicyDoc {
    fn from(p: OverlapPolicy) -> Self {
        match p {
            OverlapPolicy::Skip => Self::Skip,
            OverlapPolicy::Queue => Self::Queue,
        }
    }
}

/// The operation each fire runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OperationKindDoc {
    PowerOn,
    PowerOff,
    PowerReset,
    /// Trays reset through their BMCs without removing power.
    WarmReset,
    /// A full AC cycle, shelves included.
    ColdReset,
    /// Trays' BMCs restarted, host power untouched.
    BmcReset,
    FirmwareUpgrade,
    BringUp,
    Ingest,
}

/// The operation template: the operation and its options, without targets (the schedule's
/// scope names the racks). `forced` is for power_off and power_reset; `target_version`,
/// `sub_targets`, `start_time` and `end_time` for firmware_upgrade.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"kind": "power_reset", "forced": true}))]
pub struct ScheduledOperationDoc {
    pub kind: OperationKindDoc,
    #[serde(default)]
    pub forced: bool,
    pub target_version: Option<TargetVersionDoc>,
    #[serde(default)]
    pub sub_targets: Vec<String>,
    pub start_time: Option<DateTime<Utc>>,
    pub end_time: Option<DateTime<Utc>>,
    /// A stored operation rule to run instead of the one resolution would pick.
    pub rule_id: Option<Uuid>,
    /// How long a queued task may wait (overlap policy `queue`; default 3600).
    pub queue_timeout_seconds: Option<u64>,
}

impl ScheduledOperationDoc {
    /// The template; problems are added to `v` under `operation.*`.
    pub fn to_domain(&self, v: &mut Violations) -> OperationTemplate {
        let firmware_only = self.target_version.is_some()
            || !self.sub_targets.is_empty()
            || self.start_time.is_some()
            || self.end_time.is_some();
        if firmware_only && self.kind != OperationKindDoc::FirmwareUpgrade {
            v.push(
                "operation",
                "target_version, sub_targets, start_time and end_time are for firmware_upgrade",
            );
        }
        if self.forced
            && !matches!(
                self.kind,
                OperationKindDoc::PowerOff | OperationKindDoc::PowerReset
            )
        {
            v.push("operation.forced", "only power_off and power_reset take it");
        }
        let operation = match self.kind {
            OperationKindDoc::PowerOn => Operation::PowerOn,
            OperationKindDoc::PowerOff => Operation::PowerOff {
                forced: self.forced,
            },
            OperationKindDoc::PowerReset => Operation::PowerReset {
                forced: self.forced,
            },
            OperationKindDoc::WarmReset => Operation::WarmReset,
            OperationKindDoc::ColdReset => Operation::ColdReset,
            OperationKindDoc::BmcReset => Operation::BmcReset,
            OperationKindDoc::BringUp => Operation::BringUp,
            OperationKindDoc::Ingest => Operation::Ingest,
            OperationKindDoc::FirmwareUpgrade => {
                let request = FirmwareUpgradeRequest {
                    target_spec: TargetSpecDoc::default(),
                    target_version: self.target_version.clone(),
                    sub_targets: self.sub_targets.clone(),
                    start_time: self.start_time,
                    end_time: self.end_time,
                    description: None,
                    conflict_strategy: None,
                    queue_timeout_seconds: None,
                    rule_id: None,
                    override_readiness_check: false,
                    allow_split_domain: false,
                };
                let mut inner = Violations::default();
                let firmware = request.firmware(&mut inner);
                if let Err(crate::error::Error::Invalid(errors)) = inner.finish() {
                    for e in errors {
                        v.push(format!("operation.{}", e.field), e.message);
                    }
                }
                Operation::FirmwareUpgrade {
                    firmware,
                    start_time: self.start_time,
                    end_time: self.end_time,
                    direction: Default::default(),
                }
            }
        };
        OperationTemplate {
            operation,
            queue_timeout_secs: self
                .queue_timeout_seconds
                .unwrap_or(DEFAULT_QUEUE_TIMEOUT_SECS),
            rule_id: self.rule_id.map(Into::into),
        }
    }
}

/// Targets of a schedule: `racks` (by id or name, optionally narrowed by `component_types`) or
/// `nvl_domains` (every live rack of each, followed at every fire).
pub fn schedule_targets(spec: &TargetSpecDoc, v: &mut Violations) -> ScheduleTargets {
    if spec.components.is_some() {
        v.push(
            "target_spec.components",
            "schedules target whole racks: name racks or NVLink domains, narrowed by component_types if needed",
        );
        return ScheduleTargets::default();
    }
    match spec.to_domain(v) {
        TargetSpec::Racks(racks) => ScheduleTargets {
            racks,
            domains: Vec::new(),
        },
        TargetSpec::Components(_) => ScheduleTargets::default(),
        TargetSpec::NvlDomains(domains) => ScheduleTargets {
            racks: Vec::new(),
            domains,
        },
    }
}

/// Body of `POST /v1/task-schedules`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "name": "nightly-compute-cycle",
    "spec": {"type": "cron", "spec": "30 2 * * *", "timezone": "Europe/Berlin"},
    "overlap_policy": "skip",
    "operation": {"kind": "power_reset", "forced": false},
    "target_spec": {"racks": [{"name": "g10", "component_types": ["compute"]}, {"name": "g11"}]}
}))]
pub struct CreateScheduleRequest {
    pub name: String,
    pub spec: TimerSpecDoc,
    pub overlap_policy: Option<OverlapPolicyDoc>,
    /// Create it paused with `false` (default `true`).
    pub enabled: Option<bool>,
    pub operation: ScheduledOperationDoc,
    pub target_spec: TargetSpecDoc,
}

impl CreateScheduleRequest {
    pub fn to_domain(&self) -> Result<crate::schedules::service::NewSchedule> {
        let mut v = Violations::default();
        let name = required_text(&mut v, "name", &self.name);
        let template = self.operation.to_domain(&mut v);
        let scope = schedule_targets(&self.target_spec, &mut v);
        v.finish()?;
        Ok(crate::schedules::service::NewSchedule {
            name,
            timer: self.spec.to_domain(),
            template,
            overlap: self.overlap_policy.unwrap_or_default().into(),
            enabled: self.enabled.unwrap_or(true),
            scope,
        })
    }
}

/// Body of `PATCH /v1/task-schedules/{id}`: any of the fields; the others keep their values.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"spec": {"type": "interval", "spec": "6h"}, "overlap_policy": "queue"}))]
pub struct UpdateScheduleRequest {
    pub name: Option<String>,
    pub spec: Option<TimerSpecDoc>,
    pub overlap_policy: Option<OverlapPolicyDoc>,
}

/// Body of `POST /v1/task-schedules/{id}/scope`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target_spec": {"racks": [{"name": "g12"}]}}))]
pub struct ScopeRequest {
    pub target_spec: TargetSpecDoc,
}

/// Body of `POST /v1/task-schedules/conflicts`: a proposed operation and racks.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"operation": {"kind": "firmware_upgrade"}, "target_spec": {"racks": [{"name": "g10"}]}}))]
pub struct ConflictCheckRequest {
    pub operation: ScheduledOperationDoc,
    pub target_spec: TargetSpecDoc,
    /// Leave this schedule out (when checking a change to it).
    pub exclude_schedule_id: Option<Uuid>,
}
