//! Moving a rack's queue: waiting tasks start in arrival order (strict FIFO) as the rack frees
//! up; expired ones are cancelled.

use super::record_end;
use crate::error::Result;
use crate::ids::RackId;
use crate::tasks::model::TaskStatus;
use crate::tasks::{TaskService, store};

impl TaskService {
    /// Starts queued tasks of a rack in arrival order while they do not conflict with what runs;
    /// expired ones are cancelled. Stops at the first one that must keep waiting (strict FIFO).
    pub async fn promote(&self, rack_id: RackId) -> Result<()> {
        let now = self.clock.now();
        let txn = crate::db::begin_write(&self.db).await?;
        store::lock_rack(&txn, rack_id).await?;
        let waiting = store::on_rack(&txn, rack_id, &[TaskStatus::Waiting]).await?;
        if waiting.is_empty() {
            return Ok(());
        }
        let mut active =
            store::on_rack(&txn, rack_id, &[TaskStatus::Pending, TaskStatus::Running]).await?;
        let mut promoted = Vec::new();
        for task in waiting {
            if task.queue_expires_at.is_some_and(|at| at <= now) {
                if store::transition(
                    &txn,
                    task.id,
                    &[TaskStatus::Waiting],
                    TaskStatus::Cancelled,
                    "expired: queue timeout reached",
                    now,
                )
                .await?
                {
                    record_end(&task, TaskStatus::Cancelled, now);
                }
                continue;
            }
            if active
                .iter()
                .any(|a| a.footprint().conflicts_with(&task.footprint()))
            {
                break;
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
