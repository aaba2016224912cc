//! Whether a new task may start on a rack now, must queue, or is refused: one decision for
//! submissions and for dry runs, so a plan's outcome is what a submission then does.

use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::model::{Footprint, Task, TaskStatus};
use super::store;
use crate::error::Result;
use crate::operations::model::{ConflictStrategy, MAX_WAITING_PER_RACK};

/// What happens to the new task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Start,
    /// Waits behind this task.
    Queue {
        behind: Uuid,
    },
    Reject {
        code: &'static str,
        reason: String,
    },
}

/// The outcome, and the pending or running tasks the new one conflicts with (oldest first).
#[derive(Debug, Clone)]
pub struct Admission {
    pub outcome: Outcome,
    pub blockers: Vec<Task>,
}

/// Decides for a task with `footprint` on `rack_id`. Submissions call it under the rack's lock.
pub async fn admit(
    db: &impl ConnectionTrait,
    rack_id: Uuid,
    footprint: &Footprint,
    strategy: ConflictStrategy,
) -> Result<Admission> {
    let blockers: Vec<Task> =
        store::on_rack(db, rack_id, &[TaskStatus::Pending, TaskStatus::Running])
            .await?
            .into_iter()
            .filter(|t| t.footprint().conflicts_with(footprint))
            .collect();
    let outcome = match (blockers.first(), strategy) {
        (None, _) => Outcome::Start,
        (Some(b), ConflictStrategy::Reject) => Outcome::Reject {
            code: "rack_busy",
            reason: format!(
                "conflicts with {} task {} ({})",
                b.operation.code(),
                b.id,
                b.status.as_str()
            ),
        },
        (Some(b), ConflictStrategy::Queue) => {
            let waiting = store::on_rack(db, rack_id, &[TaskStatus::Waiting]).await?;
            if waiting.len() >= MAX_WAITING_PER_RACK {
                Outcome::Reject {
                    code: "queue_full",
                    reason: format!("{} tasks already wait on this rack", waiting.len()),
                }
            } else {
                Outcome::Queue { behind: b.id }
            }
        }
    };
    Ok(Admission { outcome, blockers })
}
