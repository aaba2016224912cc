//! Task records, their status state machine, and the rules for which tasks may share a rack.

use crate::domain::ComponentType;
use crate::domain::operation::{ConflictStrategy, Operation, TaskType};
use crate::ids::{ComponentId, OperationRequestId, RackId, RuleId, TaskId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Created; its workflow is being started.
    Pending,
    /// Queued behind a conflicting task on the same rack.
    Waiting,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 6] = [
        Self::Pending,
        Self::Waiting,
        Self::Running,
        Self::Succeeded,
        Self::Failed,
        Self::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Waiting => "waiting",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Never left once reached.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }

    /// Holds the rack: new tasks are checked for conflicts against these.
    pub fn holds_rack(self) -> bool {
        matches!(self, Self::Pending | Self::Running)
    }

    /// Whether the state machine allows `self -> next`.
    pub fn can_become(self, next: TaskStatus) -> bool {
        use TaskStatus::*;
        matches!(
            (self, next),
            (Waiting, Pending | Cancelled)
                | (Pending, Running | Succeeded | Failed | Cancelled)
                | (Running, Succeeded | Failed | Cancelled)
        )
    }
}

/// A targeted component, as a task remembers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskComponent {
    pub id: ComponentId,
    pub kind: ComponentType,
}

impl TaskComponent {
    /// The components a task on these devices holds.
    pub fn of(devices: &[crate::components::Device]) -> Vec<Self> {
        devices
            .iter()
            .map(|d| Self {
                id: d.component_id.into(),
                kind: d.kind,
            })
            .collect()
    }
}

/// What a task holds on its rack, for conflict checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footprint {
    pub task_type: TaskType,
    pub components: Vec<TaskComponent>,
}

impl Footprint {
    fn touches(&self, kind: ComponentType) -> bool {
        self.components.iter().any(|c| c.kind == kind)
    }

    fn shares_component_with(&self, other: &Footprint) -> bool {
        self.components
            .iter()
            .any(|a| other.components.iter().any(|b| a.id == b.id))
    }

    /// Whether two tasks may not run on the same rack at the same time:
    /// a bring-up takes the whole rack; power work on power shelves excludes any other power or
    /// firmware work on the rack; otherwise power and firmware tasks conflict when they drive a
    /// common component.
    pub fn conflicts_with(&self, other: &Footprint) -> bool {
        use TaskType::*;
        if self.task_type == BringUp || other.task_type == BringUp {
            return true;
        }
        let shelf_power =
            |f: &Footprint| f.task_type == PowerControl && f.touches(ComponentType::PowerShelf);
        if shelf_power(self) || shelf_power(other) {
            return true;
        }
        self.shares_component_with(other)
    }
}

/// A stored task: one rack's share of one operation request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub id: TaskId,
    pub request_id: OperationRequestId,
    pub operation: Operation,
    pub rack_id: RackId,
    pub components: Vec<TaskComponent>,
    pub description: Option<String>,
    pub conflict_strategy: ConflictStrategy,
    pub status: TaskStatus,
    pub message: String,
    pub queue_expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The rule the request named, resolved when the task is dispatched.
    pub requested_rule_id: Option<RuleId>,
    /// Who asked for it: `user:<sub>`, `token:<name>`, `schedule:<name>`, `anonymous`.
    pub created_by: Option<String>,
}

impl Task {
    pub fn footprint(&self) -> Footprint {
        Footprint {
            task_type: self.operation.task_type(),
            components: self.components.clone(),
        }
    }
}

/// One device's step progress, as a run reports it: the only way step rows change
/// (`lifecycle` writes it; a step already finished is left alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepUpdate {
    pub task_id: TaskId,
    pub stage: u32,
    pub component_id: ComponentId,
    pub status: StepStatus,
    /// The attempt that reports (0 when the workflow reports for a step that never answered).
    pub attempts: u32,
    pub error: Option<String>,
    /// The line added to the step's event list.
    pub event: String,
    /// The power the step left the device in, recorded on the component as a sighting (its
    /// observed power and when it was last seen) in the same statement as the report.
    pub power_seen: Option<crate::domain::PowerState>,
}

/// Status of one component's step in a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Pending,
            Self::Running,
            Self::Succeeded,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// One line of a component's step log: what was sent or seen, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepEvent {
    pub at: DateTime<Utc>,
    pub message: String,
}

/// One component's progress through one stage of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    pub stage: u32,
    pub component_id: ComponentId,
    pub kind: ComponentType,
    pub name: String,
    pub action: String,
    pub status: StepStatus,
    pub attempts: u32,
    pub error: Option<String>,
    pub events: Vec<StepEvent>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(task_type: TaskType, components: &[(u8, ComponentType)]) -> Footprint {
        Footprint {
            task_type,
            components: components
                .iter()
                .map(|(n, k)| TaskComponent {
                    id: uuid::Uuid::from_bytes([*n; 16]).into(),
                    kind: *k,
                })
                .collect(),
        }
    }

    #[test]
    fn the_state_machine_only_moves_forward() {
        use TaskStatus::*;
        assert!(Waiting.can_become(Pending));
        assert!(Running.can_become(Cancelled));
        assert!(!Succeeded.can_become(Running));
        assert!(!Cancelled.can_become(Failed));
        assert!(!Waiting.can_become(Running));
        assert!(
            TaskStatus::ALL
                .iter()
                .all(|s| TaskStatus::parse(s.as_str()) == Some(*s))
        );
    }

    #[test]
    fn conflicts_follow_the_rack_rules() {
        use ComponentType::*;
        use TaskType::*;
        let shelf_power = fp(PowerControl, &[(1, PowerShelf)]);
        let compute_power = fp(PowerControl, &[(2, Compute)]);
        let other_compute_fw = fp(FirmwareControl, &[(3, Compute)]);
        let same_compute_fw = fp(FirmwareControl, &[(2, Compute)]);
        assert!(
            shelf_power.conflicts_with(&compute_power),
            "shelf power takes the rack from power work"
        );
        assert!(
            other_compute_fw.conflicts_with(&shelf_power),
            "and from firmware work"
        );
        assert!(
            !compute_power.conflicts_with(&other_compute_fw),
            "different trays may proceed"
        );
        assert!(
            compute_power.conflicts_with(&same_compute_fw),
            "the same tray may not"
        );
        assert!(
            fp(BringUp, &[]).conflicts_with(&other_compute_fw),
            "bring-up takes the whole rack"
        );
        assert!(
            !fp(FirmwareControl, &[(5, PowerShelf)])
                .conflicts_with(&fp(FirmwareControl, &[(6, PowerShelf)]))
        );
    }
}
