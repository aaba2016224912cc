//! Reconciliation with the workflow engine: tasks whose run ended (or never started) while
//! the row says otherwise are set straight, and queues are moved; one process at a time.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::audit::{self, Change, Context};
use crate::db::lease;
use crate::error::Result;
use crate::ids::{RackId, TaskId};
use crate::tasks::engine::{RunState, engine_error};
use crate::tasks::model::{StepStatus, Task, TaskStatus};
use crate::tasks::{TaskService, store};

/// The lease the reconciler runs under, one process at a time.
const RECONCILER_LEASE: &str = "task-reconciler";

impl TaskService {
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
            match verdict(state, &task, stale) {
                Verdict::Keep => {}
                Verdict::Dispatch => {
                    // Created, but the process died before the run started: start it now.
                    self.dispatch(&task).await?;
                    fixed += 1;
                }
                Verdict::Finish(status, message) => {
                    self.finish(task.id, status, message).await?;
                    fixed += 1;
                }
                Verdict::External(status, found) => {
                    let message = format!(
                        "{} (reconciled: the workflow run was {found} outside Flow)",
                        status.as_str()
                    );
                    self.finish_external(&task, status, found, &message).await?;
                    fixed += 1;
                }
            }
        }
        let racks: HashSet<RackId> = store::with_status(&self.db, &[TaskStatus::Waiting], 1000)
            .await?
            .into_iter()
            .map(|t| t.rack_id)
            .collect();
        for rack in racks {
            self.promote(rack).await?;
        }
        Ok(fixed)
    }

    /// Ends a task whose run was `found` (terminated, cancelled) by someone else than Flow's own
    /// bookkeeping (the `temporal` CLI, the Temporal UI): the row changes with an audit entry
    /// under the actor `temporal`, in one transaction, so the audit log says who ended it.
    async fn finish_external(
        &self,
        task: &Task,
        status: TaskStatus,
        found: &str,
        message: &str,
    ) -> Result<()> {
        let context = Context::new("temporal", None, "RECONCILE", "temporal", None);
        let now = self.clock.now();
        let changed = audit::scope(Arc::new(context), async {
            let txn = crate::db::begin_write(&self.db).await?;
            let from = [TaskStatus::Pending, TaskStatus::Running];
            let changed = store::transition(&txn, task.id, &from, status, message, now).await?;
            if changed {
                let change = Change::new("task", task.id)
                    .before(Some(json!({"status": task.status.as_str()})))
                    .after(Some(json!({
                        "status": status.as_str(),
                        "message": message,
                        "found": format!("workflow run {found}"),
                    })));
                audit::record(&txn, change, now).await?;
            }
            txn.commit().await?;
            Ok::<bool, crate::error::Error>(changed)
        })
        .await?;
        if changed {
            store::close_open_steps(&self.db, task.id, StepStatus::Cancelled, now).await?;
            let ended = store::get(&self.db, task.id).await?;
            super::record_end(&ended, status, now);
            self.promote(ended.rack_id).await?;
        }
        Ok(())
    }

    /// The run itself heard it was cancelled by someone else than Flow (`temporal workflow
    /// cancel`, the Temporal UI): the task ends `cancelled` with an audit row under the actor
    /// `temporal`, as a terminated run does once reconciled. A task Flow already cancelled
    /// (its own cancel raced the run) keeps its row and its user's audit entry.
    pub async fn finish_cancelled_outside(&self, id: TaskId) -> Result<()> {
        let task = store::get(&self.db, id).await?;
        let message = "cancelled (the workflow run was cancelled outside Flow)";
        self.finish_external(&task, TaskStatus::Cancelled, "cancelled", message)
            .await
    }

    /// Gives up the reconciler lease (on shutdown).
    pub async fn release(&self, holder: &str) -> Result<()> {
        lease::release(&self.db, RECONCILER_LEASE, holder).await
    }
}

/// What reconciling does with one pending or running task.
enum Verdict {
    /// Its row and its run agree (or it is too young to judge).
    Keep,
    /// No run exists for a pending task: start one.
    Dispatch,
    /// The run ended: record how.
    Finish(TaskStatus, &'static str),
    /// The run was ended outside Flow (terminated, cancelled): record it with an audit row.
    External(TaskStatus, &'static str),
}

/// The task's row against its run's state; a task without a run is judged only once it has
/// been unchanged since `stale`.
fn verdict(state: Option<RunState>, task: &Task, stale: DateTime<Utc>) -> Verdict {
    use Verdict::{Dispatch, External, Finish, Keep};
    match state {
        Some(RunState::Running) => Keep,
        Some(RunState::Completed) => Finish(
            TaskStatus::Succeeded,
            "succeeded (reconciled: the run completed)",
        ),
        Some(RunState::Failed) => Finish(TaskStatus::Failed, "failed (reconciled: the run failed)"),
        Some(RunState::TimedOut) => {
            Finish(TaskStatus::Failed, "failed (reconciled: the run timed out)")
        }
        Some(RunState::Terminated) => External(TaskStatus::Failed, "terminated"),
        Some(RunState::Cancelled) => External(TaskStatus::Cancelled, "cancelled"),
        None if task.updated_at < stale && task.status == TaskStatus::Pending => Dispatch,
        None if task.updated_at < stale => {
            Finish(TaskStatus::Failed, "failed (reconciled: no run exists)")
        }
        None => Keep,
    }
}
