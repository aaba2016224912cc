//! The one writer of task state: every change to a task row or a step row goes through here
//! (creation, start, step updates, finish, cancel, withdrawal, promotion, reconciliation).
//! Submissions decide and call it to create; the workflow's activities send it a typed
//! `StepUpdate` (written by `step_batch`, coalesced on PostgreSQL) and the start and end of the
//! run. The storage writers (`store::transition`,
//! `store::record_plan`, …) are called from this module only.
//!
//! A queued task is planned again when it is promoted (`dispatch`): it runs what its rule and
//! the rack's inventory say when it starts, not what they said when it was submitted.

mod dispatch;
mod promote;
mod reconcile;

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;

use super::engine::engine_error;
use super::model::{StepStatus, Task, TaskStatus};
use super::{TaskService, store};
use crate::error::{Code, Error, Result};
use crate::ids::TaskId;

pub use super::model::StepUpdate;

/// Counts a task that this process moved to a terminal status, with its duration from start
/// (or from creation, for one that never started).
/// Rung whenever a task of this process ends (after its status is written).
static ENDED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Resolves at the next end of a task in this process: what a rollout's wave waits on instead
/// of its next poll. It hears ends from the moment it is created, polled or not. Tasks that
/// end on another replica are not heard: a waiter also polls the database.
pub fn next_task_end() -> tokio::sync::futures::Notified<'static> {
    ENDED.notified()
}

fn record_end(task: &Task, status: TaskStatus, now: DateTime<Utc>) {
    ENDED.notify_waiters();
    let from = task.started_at.unwrap_or(task.created_at);
    crate::telemetry::metrics::task_ended(
        task.operation.code(),
        status.as_str(),
        (now - from).to_std().ok(),
    );
}

impl TaskService {
    /// Cancels a task: a queued one at once; a pending or running one by stopping its run.
    pub async fn cancel(&self, id: TaskId) -> Result<Task> {
        let task = store::get(&self.db, id).await?;
        match task.status {
            TaskStatus::Cancelled => return Ok(task),
            TaskStatus::Succeeded | TaskStatus::Failed => {
                return Err(Error::conflict(
                    Code::NotCancellable,
                    format!("task {id} already ended ({})", task.status.as_str()),
                ));
            }
            TaskStatus::Waiting => {}
            TaskStatus::Pending | TaskStatus::Running => self
                .engine
                .cancel(id, crate::tasks::engine::FLOW_CANCEL_REASON)
                .await
                .map_err(engine_error)?,
        }
        let from = [
            TaskStatus::Waiting,
            TaskStatus::Pending,
            TaskStatus::Running,
        ];
        // The cancel and its audit entry commit together.
        let txn = crate::db::begin_write(&self.db).await?;
        let cancelled = store::transition(
            &txn,
            id,
            &from,
            TaskStatus::Cancelled,
            "cancelled by user",
            self.clock.now(),
        )
        .await?;
        if cancelled {
            let change = crate::audit::Change::new("task", id)
                .before(Some(serde_json::json!({"status": task.status.as_str()})))
                .after(Some(serde_json::json!({"status": "cancelled"})));
            crate::audit::record(&txn, change, self.clock.now()).await?;
        }
        txn.commit().await?;
        if cancelled {
            record_end(&task, TaskStatus::Cancelled, self.clock.now());
            store::close_open_steps(&self.db, id, StepStatus::Cancelled, self.clock.now()).await?;
            self.promote(task.rack_id).await?;
        }
        store::get(&self.db, id).await
    }

    /// Stores a task a submission admitted, with its audit entry, in the submission's
    /// transaction (which holds the rack's lock).
    pub(in crate::tasks) async fn record_created(
        &self,
        txn: &impl ConnectionTrait,
        task: &Task,
    ) -> Result<()> {
        store::insert(txn, task).await?;
        crate::audit::record(txn, audit_change(task), task.created_at).await
    }

    /// Deletes tasks of a submission whose runs never started (see `submission::withdraw`).
    pub(in crate::tasks) async fn discard_unstarted(&self, ids: &[TaskId]) -> Result<()> {
        store::discard_unstarted(&self.db, ids).await
    }

    /// Records one device's step progress reported by the run.
    pub async fn record_step(&self, update: &StepUpdate) -> Result<()> {
        self.step_reports.record(update, self.clock.now()).await
    }

    /// The run started working: pending -> running.
    pub async fn mark_running(&self, id: TaskId) -> Result<bool> {
        store::transition(
            &self.db,
            id,
            &[TaskStatus::Pending],
            TaskStatus::Running,
            "running",
            self.clock.now(),
        )
        .await
    }

    /// The run ended: records the outcome (unless the task already ended, e.g. cancelled), closes
    /// steps that never ran, and lets the rack's queue move.
    pub async fn finish(&self, id: TaskId, status: TaskStatus, message: &str) -> Result<()> {
        let now = self.clock.now();
        let changed = store::transition(
            &self.db,
            id,
            &[TaskStatus::Pending, TaskStatus::Running],
            status,
            message,
            now,
        )
        .await?;
        if changed {
            store::close_open_steps(&self.db, id, StepStatus::Cancelled, now).await?;
            let task = store::get(&self.db, id).await?;
            record_end(&task, status, now);
            self.promote(task.rack_id).await?;
        }
        Ok(())
    }
}

/// The audit entry of a submitted task: what was asked, on which rack, and how it was admitted.
fn audit_change(task: &Task) -> crate::audit::Change {
    crate::audit::Change::new("task", task.id).after(Some(serde_json::json!({
        "request_id": task.request_id,
        "operation": task.operation.code(),
        "rack_id": task.rack_id,
        "status": task.status.as_str(),
        "description": task.description,
    })))
}
