//! Task schedule request and response bodies, and their translation to the schedule domain.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::{ComponentTypeDoc, required_text};
use super::operation::{FirmwareUpgradeRequest, TargetSpecDoc, TargetVersionDoc};
use crate::error::{Result, Violations};
use crate::operations::model::{DEFAULT_QUEUE_TIMEOUT_SECS, Operation, RackTarget, TargetSpec};
use crate::schedules::conflicts::ScheduleConflict;
use crate::schedules::model::{
    OperationTemplate, OverlapPolicy, RackOutcome, Run, RunTrigger, Schedule, Scope, SpecKind,
    TimerSpec,
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
                }
            }
        };
        OperationTemplate {
            operation,
            queue_timeout_secs: self
                .queue_timeout_seconds
                .unwrap_or(DEFAULT_QUEUE_TIMEOUT_SECS),
            rule_id: self.rule_id,
        }
    }
}

/// Rack targets of a schedule: `racks` only (by id or name, optionally narrowed by
/// `component_types`).
pub fn rack_targets(spec: &TargetSpecDoc, v: &mut Violations) -> Vec<RackTarget> {
    if spec.components.is_some() {
        v.push(
            "target_spec.components",
            "schedules target whole racks: name racks, narrowed by component_types if needed",
        );
        return Vec::new();
    }
    match spec.to_domain(v) {
        TargetSpec::Racks(racks) => racks,
        TargetSpec::Components(_) => Vec::new(),
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
        let scope = rack_targets(&self.target_spec, &mut v);
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

/// The stored operation template.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OperationTemplateDoc {
    pub kind: OperationKindDoc,
    /// Stored operation code (`power_on`, `force_restart`, `upgrade`, …).
    pub code: String,
    pub forced: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_version: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sub_targets: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<DateTime<Utc>>,
    pub rule_id: Option<Uuid>,
    pub queue_timeout_seconds: u64,
}

impl From<&OperationTemplate> for OperationTemplateDoc {
    fn from(t: &OperationTemplate) -> Self {
        let mut doc = Self {
            kind: OperationKindDoc::PowerOn,
            code: t.operation.code().to_string(),
            forced: false,
            target_version: None,
            sub_targets: Vec::new(),
            start_time: None,
            end_time: None,
            rule_id: t.rule_id,
            queue_timeout_seconds: t.queue_timeout_secs,
        };
        match &t.operation {
            Operation::PowerOn => {}
            Operation::PowerOff { forced } => {
                (doc.kind, doc.forced) = (OperationKindDoc::PowerOff, *forced)
            }
            Operation::PowerReset { forced } => {
                (doc.kind, doc.forced) = (OperationKindDoc::PowerReset, *forced)
            }
            Operation::WarmReset => doc.kind = OperationKindDoc::WarmReset,
            Operation::ColdReset => doc.kind = OperationKindDoc::ColdReset,
            Operation::BringUp => doc.kind = OperationKindDoc::BringUp,
            Operation::Ingest => doc.kind = OperationKindDoc::Ingest,
            Operation::FirmwareUpgrade {
                firmware,
                start_time,
                end_time,
            } => {
                doc.kind = OperationKindDoc::FirmwareUpgrade;
                doc.target_version = firmware.target_version.clone();
                doc.sub_targets = firmware.sub_targets.clone();
                doc.start_time = *start_time;
                doc.end_time = *end_time;
            }
        }
        doc
    }
}

/// A task schedule.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "0192f3a0-0000-7000-8000-000000000001", "name": "nightly-compute-cycle",
    "spec": {"type": "cron", "spec": "30 2 * * *", "timezone": "Europe/Berlin"},
    "overlap_policy": "skip", "enabled": true,
    "next_run_at": "2026-03-02T01:30:00Z", "last_run_at": null,
    "operation": {"kind": "power_reset", "code": "restart", "forced": false, "rule_id": null, "queue_timeout_seconds": 3600},
    "created_at": "2026-03-01T10:00:00Z", "updated_at": "2026-03-01T10:00:00Z"
}))]
pub struct ScheduleDoc {
    pub id: Uuid,
    pub name: String,
    pub spec: TimerSpecDoc,
    pub overlap_policy: OverlapPolicyDoc,
    /// `false` while paused, and once a one-time schedule has fired.
    pub enabled: bool,
    /// The next fire; absent once a one-time schedule has fired.
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_run_at: Option<DateTime<Utc>>,
    pub operation: OperationTemplateDoc,
    /// The latest run with the tasks it created (on single-schedule answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run: Option<RunDoc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl ScheduleDoc {
    pub fn new(s: Schedule, last_run: Option<Run>) -> Self {
        Self {
            id: s.id,
            spec: TimerSpecDoc {
                kind: match s.timer.kind {
                    SpecKind::Interval => SpecKindDoc::Interval,
                    SpecKind::Cron => SpecKindDoc::Cron,
                    SpecKind::OneTime => SpecKindDoc::OneTime,
                },
                spec: s.timer.spec.clone(),
                timezone: Some(s.timer.timezone.clone()),
            },
            overlap_policy: s.overlap.into(),
            enabled: s.enabled,
            next_run_at: s.next_run_at,
            last_run_at: s.last_run_at,
            operation: (&s.template).into(),
            last_run: last_run.map(RunDoc::from),
            created_at: s.created_at,
            updated_at: s.updated_at,
            name: s.name,
        }
    }
}

impl From<Schedule> for ScheduleDoc {
    fn from(s: Schedule) -> Self {
        Self::new(s, None)
    }
}

/// One rack in a schedule's scope.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScopeDoc {
    pub id: Uuid,
    pub schedule_id: Uuid,
    pub rack_id: Uuid,
    /// Empty: every component of the rack.
    pub component_types: Vec<ComponentTypeDoc>,
    /// The task the latest fire created on this rack.
    pub last_task_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
}

impl From<Scope> for ScopeDoc {
    fn from(s: Scope) -> Self {
        Self {
            id: s.id,
            schedule_id: s.schedule_id,
            rack_id: s.rack_id,
            component_types: s.component_types.into_iter().map(Into::into).collect(),
            last_task_id: s.last_task_id,
            created_at: s.created_at,
        }
    }
}

/// A schedule's scope.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScopeListDoc {
    pub items: Vec<ScopeDoc>,
}

/// What a run did on one rack: `created` (with `task_id`), `skipped` (busy, with `reason`),
/// `failed` (with `reason`), or `pending` while the run is still submitting.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RackRunDoc {
    pub rack_id: Uuid,
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One fire of a schedule.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "0192f3a0-0000-7000-8000-0000000000a1", "schedule_id": "0192f3a0-0000-7000-8000-000000000001",
    "trigger": "schedule", "fired_at": "2026-03-02T01:30:00Z", "status": "done", "finished_at": "2026-03-02T01:30:01Z",
    "task_ids": ["0192f3a0-0000-7000-8000-0000000000b1"],
    "racks": [{"rack_id": "0192f3a0-0000-7000-8000-0000000000c1", "outcome": "created", "task_id": "0192f3a0-0000-7000-8000-0000000000b1"},
              {"rack_id": "0192f3a0-0000-7000-8000-0000000000c2", "outcome": "skipped", "reason": "the previous task 0192f3a0-0000-7000-8000-0000000000b0 is still running"}]
}))]
pub struct RunDoc {
    pub id: Uuid,
    pub schedule_id: Uuid,
    /// `schedule` (the timer) or `manual` (`POST …/trigger`).
    pub trigger: String,
    pub fired_at: DateTime<Utc>,
    /// `submitting` or `done`.
    pub status: String,
    pub finished_at: Option<DateTime<Utc>>,
    /// The tasks this run created.
    pub task_ids: Vec<Uuid>,
    pub racks: Vec<RackRunDoc>,
}

impl From<Run> for RunDoc {
    fn from(r: Run) -> Self {
        Self {
            task_ids: r.task_ids(),
            id: r.id,
            schedule_id: r.schedule_id,
            trigger: match r.trigger {
                RunTrigger::Schedule => "schedule",
                RunTrigger::Manual => "manual",
            }
            .into(),
            fired_at: r.fired_at,
            status: if r.done { "done" } else { "submitting" }.into(),
            finished_at: r.finished_at,
            racks: r
                .results
                .into_iter()
                .map(|x| {
                    let (outcome, task_id, reason) = match x.outcome {
                        RackOutcome::Pending => ("pending", None, None),
                        RackOutcome::Created { task_id } => ("created", Some(task_id), None),
                        RackOutcome::Skipped { reason } => ("skipped", None, Some(reason)),
                        RackOutcome::Failed { error } => ("failed", None, Some(error)),
                    };
                    RackRunDoc {
                        rack_id: x.rack_id,
                        outcome: outcome.into(),
                        task_id,
                        reason,
                    }
                })
                .collect(),
        }
    }
}

/// A schedule's latest runs, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RunListDoc {
    pub items: Vec<RunDoc>,
}

/// An existing schedule that would clash with the proposal, and on which racks.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScheduleConflictDoc {
    pub schedule: ScheduleDoc,
    pub rack_ids: Vec<Uuid>,
}

/// Enabled schedules whose tasks would conflict with the proposed operation on a shared rack.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConflictsDoc {
    pub conflicts: Vec<ScheduleConflictDoc>,
}

impl From<ScheduleConflict> for ScheduleConflictDoc {
    fn from(c: ScheduleConflict) -> Self {
        Self {
            schedule: c.schedule.into(),
            rack_ids: c.rack_ids,
        }
    }
}
