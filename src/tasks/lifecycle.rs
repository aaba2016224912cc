//! A task after submission: cancel it, record its start and end, promote the task queued
//! behind it, and reconcile tasks with the workflow engine.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;

use super::engine::RunState;
use super::model::{StepStatus, Task, TaskStatus};
use super::service::{TaskService, engine_error};
use super::store;
use crate::db::lease;
use crate::error::{Error, Result};

/// Counts a task that this process moved to a terminal status, with its duration from start
/// (or from creation, for one that never started).
fn record_end(task: &Task, status: TaskStatus, now: DateTime<Utc>) {
    let from = task.started_at.unwrap_or(task.created_at);
    crate::telemetry::metrics::task_ended(
        task.operation.code(),
        status.as_str(),
        (now - from).to_std().ok(),
    );
}

/// The lease the reconciler runs under, one process at a time.
const RECONCILER_LEASE: &str = "task-reconciler";

impl TaskService {
    /// Cancels a task: a queued one at once; a pending or running one by stopping its run.
    pub async fn cancel(&self, id: Uuid) -> Result<Task> {
        let task = store::get(&self.db, id).await?;
        match task.status {
            TaskStatus::Cancelled => return Ok(task),
            TaskStatus::Succeeded | TaskStatus::Failed => {
                return Err(Error::conflict(
                    "not_cancellable",
                    format!("task {id} already ended ({})", task.status.as_str()),
                ));
            }
            TaskStatus::Waiting => {}
            TaskStatus::Pending | TaskStatus::Running => self
                .engine
                .cancel(id, "cancelled by user")
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

    /// The run started working: pending -> running.
    pub async fn mark_running(&self, id: Uuid) -> Result<bool> {
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
    pub async fn finish(&self, id: Uuid, status: TaskStatus, message: &str) -> Result<()> {
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

    /// Starts queued tasks of a rack in arrival order while they do not conflict with what runs;
    /// expired ones are cancelled. Stops at the first one that must keep waiting (strict FIFO).
    pub async fn promote(&self, rack_id: Uuid) -> Result<()> {
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

    /// One reconciliation pass, if this process holds the reconciler lease: tasks whose run has
    /// ended (or never started) while the row still says otherwise are set straight, and queues
    /// are moved. Returns how many tasks it corrected.
    pub async fn reconcile(&self, holder: &str, stale_after: std::time::Duration) -> Result<usize> {
        let now = self.clock.now();
        if !lease::acquire(
            &self.db,
            RECONCILER_LEASE,
            holder,
            Duration::seconds(60),
            now,
        )
        .await?
        {
            return Ok(0);
        }
        let mut fixed = 0;
        let stale = now - Duration::from_std(stale_after).unwrap_or_else(|_| Duration::seconds(60));
        for task in
            store::with_status(&self.db, &[TaskStatus::Pending, TaskStatus::Running], 500).await?
        {
            let state = self.engine.state(task.id).await.map_err(engine_error)?;
            let outcome = match state {
                Some(RunState::Running) => None,
                Some(RunState::Completed) => Some((
                    TaskStatus::Succeeded,
                    "succeeded (reconciled: the run completed)",
                )),
                Some(RunState::Failed) => {
                    Some((TaskStatus::Failed, "failed (reconciled: the run failed)"))
                }
                Some(RunState::TimedOut) => {
                    Some((TaskStatus::Failed, "failed (reconciled: the run timed out)"))
                }
                Some(RunState::Terminated) => Some((
                    TaskStatus::Failed,
                    "failed (reconciled: the run was terminated)",
                )),
                Some(RunState::Cancelled) => {
                    Some((TaskStatus::Cancelled, "cancelled (reconciled)"))
                }
                None if task.updated_at < stale && task.status == TaskStatus::Pending => {
                    // Created, but the process died before the run started: start it now.
                    self.dispatch(&task).await?;
                    fixed += 1;
                    None
                }
                None if task.updated_at < stale => {
                    Some((TaskStatus::Failed, "failed (reconciled: no run exists)"))
                }
                None => None,
            };
            if let Some((status, message)) = outcome {
                self.finish(task.id, status, message).await?;
                fixed += 1;
            }
        }
        let racks: HashSet<Uuid> = store::with_status(&self.db, &[TaskStatus::Waiting], 1000)
            .await?
            .into_iter()
            .map(|t| t.rack_id)
            .collect();
        for rack in racks {
            self.promote(rack).await?;
        }
        Ok(fixed)
    }

    /// Gives up the reconciler lease (on shutdown).
    pub async fn release(&self, holder: &str) -> Result<()> {
        lease::release(&self.db, RECONCILER_LEASE, holder).await
    }
}
