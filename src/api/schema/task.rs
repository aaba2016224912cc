//! Task response bodies: the task and its per-stage, per-component report.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::ComponentTypeDoc;
use crate::tasks::model::{StepRecord, Task, TaskStatus};
use crate::tasks::report::StageReport;

/// Task status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatusDoc {
    Pending,
    Waiting,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl From<TaskStatus> for TaskStatusDoc {
    fn from(s: TaskStatus) -> Self {
        match s {
            TaskStatus::Pending => Self::Pending,
            TaskStatus::Waiting => Self::Waiting,
            TaskStatus::Running => Self::Running,
            TaskStatus::Succeeded => Self::Succeeded,
            TaskStatus::Failed => Self::Failed,
            TaskStatus::Cancelled => Self::Cancelled,
        }
    }
}

/// One line of a component's step log.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StepEventDoc {
    pub at: DateTime<Utc>,
    pub message: String,
}

/// One component's step in a stage.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ComponentStepDoc {
    pub component_id: Uuid,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ComponentTypeDoc,
    /// `pending`, `running`, `succeeded`, `failed` or `cancelled`.
    pub status: String,
    pub attempts: u32,
    pub error: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub events: Vec<StepEventDoc>,
}

impl From<StepRecord> for ComponentStepDoc {
    fn from(s: StepRecord) -> Self {
        Self {
            component_id: s.component_id.into(),
            name: s.name,
            kind: s.kind.into(),
            status: s.status.as_str().into(),
            attempts: s.attempts,
            error: s.error,
            started_at: s.started_at,
            finished_at: s.finished_at,
            events: s
                .events
                .into_iter()
                .map(|e| StepEventDoc {
                    at: e.at,
                    message: e.message,
                })
                .collect(),
        }
    }
}

/// One stage of a task: its component types, each component taken through the actions in order.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StageDoc {
    pub number: u32,
    pub name: String,
    pub component_types: Vec<ComponentTypeDoc>,
    /// The action that characterises the stage (`power_on`, `firmware_start`, ...).
    pub action: String,
    /// Every action, in the order each component goes through them.
    pub actions: Vec<String>,
    pub max_parallel: u32,
    /// `pending`, `running`, `succeeded`, `failed` or `cancelled`, from its components.
    pub status: String,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub components: Vec<ComponentStepDoc>,
}

impl From<StageReport> for StageDoc {
    fn from(s: StageReport) -> Self {
        Self {
            number: s.number,
            name: s.name,
            component_types: s.component_types.into_iter().map(Into::into).collect(),
            action: s.action,
            actions: s.actions,
            max_parallel: s.max_parallel,
            status: s.status.as_str().into(),
            started_at: s.started_at,
            finished_at: s.finished_at,
            components: s.steps.into_iter().map(Into::into).collect(),
        }
    }
}

/// A task: one rack's share of an operation request.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "0192f3a0-0000-7000-8000-0000000000ab", "request_id": "0192f3a0-0000-7000-8000-0000000000aa",
    "operation": "power_on", "rack_id": "0192f3a0-0000-7000-8000-000000000001", "rack_name": "g10",
    "component_ids": ["0192f3a0-0000-7000-8000-000000000002"], "description": null,
    "status": "succeeded", "message": "succeeded", "queue_expires_at": null,
    "created_at": "2026-11-30T14:00:00Z", "updated_at": "2026-11-30T14:00:02Z",
    "started_at": "2026-11-30T14:00:00Z", "finished_at": "2026-11-30T14:00:02Z",
    "requested_rule_id": null,
    "rule": {"id": null, "name": "built-in power on", "version": null, "source": "builtin"},
    "stages": [{"number": 1, "name": "power on compute trays", "component_types": ["compute"], "action": "power_on",
        "actions": ["power_on", "verify_power_on"],
        "max_parallel": 6, "status": "succeeded", "started_at": "2026-11-30T14:00:00Z", "finished_at": "2026-11-30T14:00:02Z",
        "components": [{"component_id": "0192f3a0-0000-7000-8000-000000000002", "name": "gpu17-nvl5-gp2-cin1-jhb01",
            "type": "compute", "status": "succeeded", "attempts": 1, "error": null,
            "started_at": "2026-11-30T14:00:00Z", "finished_at": "2026-11-30T14:00:02Z",
            "events": [{"at": "2026-11-30T14:00:00Z", "message": "attempt 1: power_on on gpu17-nvl5-gp2-cin1-jhb01"},
                       {"at": "2026-11-30T14:00:02Z", "message": "sent power_on; power is on"}]}]}]
}))]
pub struct TaskDoc {
    pub id: Uuid,
    pub request_id: Uuid,
    /// `power_on`, `power_off`, `force_power_off`, `restart`, `force_restart`, `upgrade`,
    /// `bring_up` or `ingest`.
    pub operation: String,
    pub rack_id: Uuid,
    /// The rack's name; `null` once the rack is purged.
    pub rack_name: Option<String>,
    pub component_ids: Vec<Uuid>,
    pub description: Option<String>,
    pub status: TaskStatusDoc,
    pub message: String,
    pub queue_expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The rule the request named, if any.
    pub requested_rule_id: Option<Uuid>,
    /// Who asked for it: `user:<sub>`, `token:<name>`, `schedule:<name>`, `anonymous`.
    pub created_by: Option<String>,
    /// The rule (and version) the task runs and where it came from; absent until planned and in
    /// lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<super::rule::AppliedRuleDoc>,
    /// Stages in order with each component's step; absent until the task is planned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<StageDoc>>,
}

impl TaskDoc {
    pub fn new(task: Task, stages: Option<Vec<StageReport>>) -> Self {
        Self {
            id: task.id.into(),
            request_id: task.request_id.into(),
            operation: task.operation.code().to_string(),
            rack_id: task.rack_id.into(),
            rack_name: None,
            component_ids: task.components.iter().map(|c| c.id.into()).collect(),
            description: task.description,
            status: task.status.into(),
            message: task.message,
            queue_expires_at: task.queue_expires_at,
            created_at: task.created_at,
            updated_at: task.updated_at,
            started_at: task.started_at,
            finished_at: task.finished_at,
            requested_rule_id: task.requested_rule_id.map(Into::into),
            created_by: task.created_by,
            rule: None,
            stages: stages.map(|s| s.into_iter().map(Into::into).collect()),
        }
    }

    /// Names the task's rack, when it still exists.
    pub fn with_rack_name(mut self, name: Option<String>) -> Self {
        self.rack_name = name;
        self
    }

    /// Adds the rule the task's plan resolved.
    pub fn with_rule(mut self, rule: Option<crate::rules::model::AppliedRule>) -> Self {
        self.rule = rule.map(Into::into);
        self
    }
}

impl From<Task> for TaskDoc {
    fn from(task: Task) -> Self {
        Self::new(task, None)
    }
}
