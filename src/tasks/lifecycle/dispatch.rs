//! Starting a task's run: record its plan and steps, ask the engine to start it, and fail the
//! task when the engine refuses. A task that starts at submission brings the plan the planner
//! made; a promoted (or reconciled) one is planned again here, from what holds now.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::ids::ComponentId;
use crate::inventory::targets as resolve;
use crate::operations::plan::{self, Plan};
use crate::tasks::engine::EngineError;
use crate::tasks::model::{Task, TaskStatus};
use crate::tasks::{TaskService, store};

impl TaskService {
    /// Plans a pending task from the rack's current inventory and starts its run. A task whose
    /// run cannot be started fails with the reason, so it never sits pending unnoticed.
    pub(in crate::tasks) async fn dispatch(&self, task: &Task) -> Result<()> {
        let Some(plan) = self.replan(task).await? else {
            return Ok(());
        };
        match self.start_run(task, &plan).await? {
            Ok(()) => Ok(()),
            Err(e) => self.fail_start(task, &e).await,
        }
    }

    /// The plan of a task that starts later than it was submitted: its rule resolved now, over
    /// its components as they are now. `None` when it cannot be planned (the named rule was
    /// deleted while it waited): the task is failed then, never left pending.
    async fn replan(&self, task: &Task) -> Result<Option<Plan>> {
        let ids: HashSet<ComponentId> = task.components.iter().map(|c| c.id).collect();
        let devices = resolve::devices_of(&self.db, task.rack_id, None, &ids).await?;
        let resolved = crate::rules::resolve::resolve(
            &self.db,
            task.requested_rule_id,
            task.rack_id,
            task.operation.code(),
        )
        .await;
        match resolved {
            Ok((rule, source)) => Ok(Some(plan::build(&rule, source, &task.operation, &devices))),
            Err(e @ (Error::Unprocessable { .. } | Error::Invalid(_) | Error::NotFound { .. })) => {
                self.finish(task.id, TaskStatus::Failed, &format!("could not plan: {e}"))
                    .await?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    pub(in crate::tasks) async fn fail_start(&self, task: &Task, e: &EngineError) -> Result<()> {
        tracing::warn!(task = %task.id, error = %e, "could not start the task's workflow");
        self.finish(
            task.id,
            TaskStatus::Failed,
            &format!("could not start: {e}"),
        )
        .await
    }

    /// Records the plan and asks the engine to start the run; `Ok(Err(_))` when the engine
    /// refused, left to the caller (a submission withdraws the task, a promotion fails it).
    /// Both paths to a run (submission and promotion) go through here: the `dispatch` span.
    #[tracing::instrument(name = "dispatch", skip_all, fields(task = %task.id, rack = %task.rack_id))]
    pub(in crate::tasks) async fn start_run(
        &self,
        task: &Task,
        plan: &Plan,
    ) -> Result<std::result::Result<(), EngineError>> {
        let now = self.clock.now();
        if plan.stages.is_empty() {
            store::transition(
                &self.db,
                task.id,
                &[TaskStatus::Pending],
                TaskStatus::Succeeded,
                "nothing to do: no targeted component remains",
                now,
            )
            .await?;
            self.promote(task.rack_id).await?;
            return Ok(Ok(()));
        }
        store::record_plan(&self.db, task.id, plan, now).await?;
        match self
            .engine
            .start(task.id, plan, plan.workflow_timeout())
            .await
        {
            Ok(run_id) => {
                store::record_run(&self.db, task.id, &run_id, self.clock.now()).await?;
                Ok(Ok(()))
            }
            Err(EngineError::AlreadyStarted) => Ok(Ok(())),
            Err(e) => Ok(Err(e)),
        }
    }
}
