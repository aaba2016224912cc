//! Moving a rack's queue: waiting tasks start in arrival order (strict FIFO) as the rack frees
//! up; expired ones are cancelled, and one whose targets became held or not ready while it
//! waited is refused (cancelled, saying why) instead of started.

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;

use super::record_end;
use crate::error::Result;
use crate::ids::RackId;
use crate::tasks::model::{Task, TaskStatus};
use crate::tasks::submission::readiness;
use crate::tasks::{TaskService, store};

impl TaskService {
    /// Starts queued tasks of a rack in arrival order while they do not conflict with what runs;
    /// expired ones are cancelled. Stops at the first one that must keep waiting (strict FIFO).
    pub async fn promote(&self, rack_id: RackId) -> Result<()> {
        // Most task ends free a rack nothing waits on: a plain read says so without taking the
        // rack's lock. It cannot miss a task queued meanwhile: every caller has committed the
        // change that frees the rack before asking, and a submission that queues a task asks
        // again once its own commit is done (`create_task`), so of two such reads at least one
        // sees the other side's write.
        if !store::any_on_rack(&self.db, rack_id, TaskStatus::Waiting).await? {
            return Ok(());
        }
        let now = self.clock.now();
        let txn = crate::db::begin_write(&self.db).await?;
        crate::inventory::rack_lock::lock(&txn, rack_id).await?;
        let waiting = store::on_rack(&txn, rack_id, &[TaskStatus::Waiting]).await?;
        if waiting.is_empty() {
            return Ok(());
        }
        let mut active =
            store::on_rack(&txn, rack_id, &[TaskStatus::Pending, TaskStatus::Running]).await?;
        let mut promoted = Vec::new();
        for task in waiting {
            if task.queue_expires_at.is_some_and(|at| at <= now) {
                cancel_waiting(&txn, &task, "expired: queue timeout reached", now).await?;
                continue;
            }
            if active
                .iter()
                .any(|a| a.footprint().conflicts_with(&task.footprint()))
            {
                break;
            }
            // A hold or alert that appeared while it waited refuses it now, as a submission
            // would have been refused (unless its request overrode the check).
            if refuse_unready(&txn, &task, now).await? {
                continue;
            }
            store::transition(
                &txn,
                task.id,
                &[TaskStatus::Waiting],
                TaskStatus::Pending,
                "promoted: the rack is free",
                now,
            )
            .await?;
            active.push(task.clone());
            promoted.push(task);
        }
        txn.commit().await?;
        for task in promoted {
            Box::pin(self.dispatch(&task)).await?;
        }
        Ok(())
    }
}

/// Cancels a task still waiting, saying why (an expired queue timeout, a refusal), and counts
/// its end if this call made it.
async fn cancel_waiting(
    db: &impl ConnectionTrait,
    task: &Task,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let from = [TaskStatus::Waiting];
    if store::transition(db, task.id, &from, TaskStatus::Cancelled, reason, now).await? {
        record_end(task, TaskStatus::Cancelled, now);
    }
    Ok(())
}

/// Refuses (cancels, the end a waiting task may take) a waiting task whose targets are now
/// held or not ready; answers whether it did.
async fn refuse_unready(
    db: &impl ConnectionTrait,
    task: &Task,
    now: DateTime<Utc>,
) -> Result<bool> {
    let scope = readiness::Scope::of_task(db, task).await?;
    let found = readiness::obstacles(db, &task.operation, &scope, now).await?;
    if found.is_empty() || readiness::overridden(db, task.request_id).await? {
        return Ok(false);
    }
    let code = if found
        .iter()
        .any(|o| o.code == readiness::ReadinessCode::Held)
    {
        "held"
    } else {
        "not_ready"
    };
    let why: Vec<&str> = found.iter().map(|o| o.message.as_str()).collect();
    let message = format!("refused when it would start ({code}): {}", why.join("; "));
    cancel_waiting(db, task, &message, now).await?;
    Ok(true)
}
