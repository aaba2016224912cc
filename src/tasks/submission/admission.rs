//! Whether a new task may start on a rack now, must queue, or is refused, given the rack's
//! active tasks: a pure decision, part of the planner.
//!
//! The fair-queue rule: every active task counts, the waiting ones included. A newcomer that
//! conflicts with a task still waiting for the rack does not overtake it: it queues behind
//! (or, with `reject`, is refused as `rack_busy`), even when nothing running blocks it. One that
//! conflicts with nothing starts at once. Promotion then starts waiting tasks in arrival order.

use super::planner::{Refusal, RefusalCode};
use crate::domain::operation::{ConflictStrategy, MAX_WAITING_PER_RACK};
use crate::ids::TaskId;
use crate::tasks::model::{Footprint, Task, TaskStatus};

/// What happens to the new task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Start,
    /// Waits behind this task (the oldest active one it conflicts with).
    Queue {
        behind: TaskId,
    },
    Reject(Refusal),
}

impl Outcome {
    /// The name the API shows: `start`, `queue` or `reject`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Queue { .. } => "queue",
            Self::Reject(_) => "reject",
        }
    }

    /// Why the task would be refused, when it would.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Self::Reject(refusal) => Some(refusal),
            _ => None,
        }
    }
}

/// The outcome, and the active tasks the new one conflicts with (oldest first).
#[derive(Debug, Clone)]
pub struct Admission {
    pub outcome: Outcome,
    pub blockers: Vec<Task>,
}

/// Decides for a task with `footprint` among the rack's `active` tasks (pending, running and
/// waiting, oldest first). Submissions read `active` under the rack's lock.
pub fn admit(footprint: &Footprint, strategy: ConflictStrategy, active: &[Task]) -> Admission {
    let blockers: Vec<Task> = active
        .iter()
        .filter(|t| ACTIVE.contains(&t.status) && t.footprint().conflicts_with(footprint))
        .cloned()
        .collect();
    let outcome = match (blockers.first(), strategy) {
        (None, _) => Outcome::Start,
        (Some(b), ConflictStrategy::Reject) => Outcome::Reject(Refusal {
            code: RefusalCode::RackBusy,
            reason: format!(
                "conflicts with {} task {} ({})",
                b.operation.code(),
                b.id,
                b.status.as_str()
            ),
        }),
        (Some(b), ConflictStrategy::Queue) => {
            let waiting = active
                .iter()
                .filter(|t| t.status == TaskStatus::Waiting)
                .count();
            if waiting >= MAX_WAITING_PER_RACK {
                Outcome::Reject(Refusal {
                    code: RefusalCode::QueueFull,
                    reason: format!("{waiting} tasks already wait on this rack"),
                })
            } else {
                Outcome::Queue { behind: b.id }
            }
        }
    };
    Admission { outcome, blockers }
}

/// The statuses of tasks that hold or wait for a rack.
pub const ACTIVE: [TaskStatus; 3] = [
    TaskStatus::Pending,
    TaskStatus::Running,
    TaskStatus::Waiting,
];

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use uuid::Uuid;

    use super::*;
    use crate::domain::ComponentType;
    use crate::domain::operation::Operation;
    use crate::tasks::model::TaskComponent;

    fn trays(ns: &[u8]) -> Vec<TaskComponent> {
        ns.iter()
            .map(|n| TaskComponent {
                id: Uuid::from_bytes([*n; 16]).into(),
                kind: ComponentType::Compute,
            })
            .collect()
    }

    fn task(n: u8, status: TaskStatus, on: &[u8]) -> Task {
        let now = Utc::now();
        Task {
            id: Uuid::from_bytes([100 + n; 16]).into(),
            request_id: Uuid::nil().into(),
            operation: Operation::PowerOn,
            rack_id: Uuid::nil().into(),
            components: trays(on),
            description: None,
            conflict_strategy: ConflictStrategy::Queue,
            status,
            message: String::new(),
            queue_expires_at: None,
            created_at: now,
            updated_at: now,
            started_at: None,
            finished_at: None,
            requested_rule_id: None,
            created_by: None,
        }
    }

    fn power(on: &[u8]) -> Footprint {
        Footprint {
            task_type: Operation::PowerOn.task_type(),
            components: trays(on),
        }
    }

    #[test]
    fn a_newcomer_does_not_overtake_a_waiting_task_it_conflicts_with() {
        // A runs on tray 1; B waits for it on trays 1 and 2.
        let active = [
            task(1, TaskStatus::Running, &[1]),
            task(2, TaskStatus::Waiting, &[1, 2]),
        ];
        let queued = admit(&power(&[2]), ConflictStrategy::Queue, &active);
        assert_eq!(
            queued.outcome,
            Outcome::Queue {
                behind: active[1].id
            }
        );
        let refused = admit(&power(&[2]), ConflictStrategy::Reject, &active);
        assert_eq!(
            refused.outcome.refusal().map(|r| r.code),
            Some(RefusalCode::RackBusy)
        );
        let free = admit(&power(&[3]), ConflictStrategy::Queue, &active);
        assert_eq!(
            free.outcome,
            Outcome::Start,
            "conflicting with nothing, it starts"
        );
        assert!(free.blockers.is_empty());
    }

    #[test]
    fn a_full_queue_refuses_and_ended_tasks_do_not_count() {
        let mut active: Vec<Task> = (0..MAX_WAITING_PER_RACK as u8)
            .map(|n| task(n, TaskStatus::Waiting, &[1]))
            .collect();
        let full = admit(&power(&[1]), ConflictStrategy::Queue, &active);
        assert_eq!(
            full.outcome.refusal().map(|r| r.code),
            Some(RefusalCode::QueueFull)
        );
        for t in &mut active {
            t.status = TaskStatus::Succeeded;
        }
        let free = admit(&power(&[1]), ConflictStrategy::Queue, &active);
        assert_eq!(free.outcome, Outcome::Start);
    }
}
