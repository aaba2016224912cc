//! What the task-schedule endpoints answer: schedules, their scope, runs and conflicts.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::ComponentTypeDoc;
use super::schedule::{OperationKindDoc, OverlapPolicyDoc, SpecKindDoc, TimerSpecDoc};
use crate::domain::operation::Operation;
use crate::schedules::conflicts::ScheduleConflict;
use crate::schedules::model::{
    OperationTemplate, RackOutcome, Run, RunTrigger, Schedule, Scope, SpecKind,
};

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
            rule_id: t.rule_id.map(Into::into),
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
            Operation::BmcReset => doc.kind = OperationKindDoc::BmcReset,
            Operation::BringUp => doc.kind = OperationKindDoc::BringUp,
            Operation::Ingest => doc.kind = OperationKindDoc::Ingest,
            Operation::FirmwareUpgrade {
                firmware,
                start_time,
                end_time,
                ..
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
            id: s.id.into(),
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
    /// The NVLink domain that brought this rack in (`target_spec.nvl_domains`); such a rack
    /// follows the domain: each fire adds the domain's new racks and drops those that left.
    pub nvl_domain_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
}

impl From<Scope> for ScopeDoc {
    fn from(s: Scope) -> Self {
        Self {
            id: s.id,
            schedule_id: s.schedule_id.into(),
            rack_id: s.rack_id.into(),
            component_types: s.component_types.into_iter().map(Into::into).collect(),
            last_task_id: s.last_task_id.map(Into::into),
            nvl_domain_id: s.nvl_domain_id.map(|d| d.uuid()),
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
            task_ids: r.task_ids().into_iter().map(Into::into).collect(),
            id: r.id,
            schedule_id: r.schedule_id.into(),
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
                        rack_id: x.rack_id.into(),
                        outcome: outcome.into(),
                        task_id: task_id.map(Into::into),
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
            rack_ids: c.rack_ids.into_iter().map(Into::into).collect(),
        }
    }
}
