//! Submitting work: an operation becomes one task per rack (conflict-checked in the insert's
//! transaction), and a task's run is dispatched to the engine; what follows is in `lifecycle`.

use std::sync::Arc;

use chrono::Duration;
use futures::StreamExt;
use sea_orm::DatabaseConnection;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::admission::{self, Outcome};
use super::engine::{EngineError, WorkflowEngine};
use super::model::{Footprint, Task, TaskComponent, TaskStatus};
use super::refusal::refusal;
use super::{capability, preview, store};
use crate::clock::Clock;
use crate::components::registry::Registry;
use crate::error::{Error, Result};
use crate::inventory::targets::{self as resolve, RackWork};
use crate::operations::model::OperationSpec;

/// Why one rack got no task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub rack_id: Uuid,
    pub rack_name: String,
    /// `rack_busy`, `queue_full` or `no_components`.
    pub code: String,
    pub reason: String,
}

/// What a submission created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    pub request_id: Uuid,
    pub task_ids: Vec<Uuid>,
    pub rejected: Vec<Rejection>,
}

/// Owns every task status change outside the workflow's own progress reports.
pub struct TaskService {
    pub(super) db: DatabaseConnection,
    pub(super) engine: Arc<dyn WorkflowEngine>,
    pub(super) clock: Arc<dyn Clock>,
    /// The component managers plans are checked against before a task is created; `None` in
    /// a process configured with none (it cannot know what the workers offer).
    managers: Option<Arc<Registry>>,
}

impl std::fmt::Debug for TaskService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskService").finish_non_exhaustive()
    }
}

/// How many task runs one submission starts at a time.
const DISPATCH_CONCURRENCY: usize = 16;

pub fn engine_error(e: EngineError) -> Error {
    match e {
        EngineError::Unavailable(message) => Error::Unavailable {
            service: "temporal",
            message,
        },
        other => Error::Internal(other.to_string()),
    }
}

impl TaskService {
    pub fn new(
        db: DatabaseConnection,
        engine: Arc<dyn WorkflowEngine>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            db,
            engine,
            clock,
            managers: None,
        }
    }

    /// Checks plans against these managers before creating tasks (skipped when there are none).
    pub fn with_managers(mut self, managers: Arc<Registry>) -> Self {
        self.managers = (!managers.is_empty()).then_some(managers);
        self
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// Turns one operation request into one task per targeted rack and starts their runs.
    /// With an idempotency key, a repeated request returns the first one's answer.
    #[tracing::instrument(name = "submit", skip_all, fields(operation = spec.operation.code()))]
    pub async fn submit(
        &self,
        spec: &OperationSpec,
        idempotency_key: Option<&str>,
    ) -> Result<Submission> {
        spec.validate()?;
        if let Some(rule_id) = spec.rule_id {
            crate::rules::resolve::check_requested(&self.db, rule_id, spec.operation.code())
                .await?;
        }
        let fingerprint =
            serde_json::to_string(spec).map_err(|e| Error::Internal(e.to_string()))?;
        let request_id = Uuid::now_v7();
        if let Some(key) = idempotency_key
            && let Some(previous) =
                super::idempotency::claim(&self.db, key, &fingerprint, request_id, self.clock.now())
                    .await?
        {
            return Ok(previous);
        }
        let outcome = self.submit_new(spec, request_id).await;
        if let Some(key) = idempotency_key {
            match &outcome {
                Ok(submission) => super::idempotency::complete(&self.db, key, submission).await?,
                // A request that created nothing may be retried with the same key.
                Err(_) => super::idempotency::forget(&self.db, key).await?,
            }
        }
        outcome
    }

    async fn submit_new(&self, spec: &OperationSpec, request_id: Uuid) -> Result<Submission> {
        let work = resolve::resolve(&self.db, &spec.targets).await?;
        // Refuse before writing anything when the engine is known to be down: a task that
        // cannot start must never be created (and answered 202). Bad targets still hear 4xx.
        if !self.engine.available() {
            return Err(engine_error(EngineError::Unavailable(
                "the workflow engine is not connected".into(),
            )));
        }
        let mut submission = Submission {
            request_id,
            task_ids: Vec::new(),
            rejected: Vec::new(),
        };
        let mut created = Vec::new();
        for rack in work {
            match self.create_task(spec, request_id, &rack).await? {
                Ok(task) => {
                    submission.task_ids.push(task.id);
                    created.push((task, rack.rack_name.clone()));
                }
                Err(rejection) => submission.rejected.push(rejection),
            }
        }
        // Racks are independent: start their runs side by side, so a request for a hundred
        // racks does not wait for a hundred sequential workflow starts.
        let mut starts = Vec::new();
        for (task, _) in &created {
            if task.status == TaskStatus::Pending {
                starts.push(async move { (task, self.start_run(task).await) });
            }
        }
        let outcomes: Vec<_> = futures::stream::iter(starts)
            .buffer_unordered(DISPATCH_CONCURRENCY)
            .collect()
            .await;
        let mut unreachable = Vec::new();
        for (task, outcome) in outcomes {
            match outcome? {
                Ok(()) => {}
                Err(EngineError::Unavailable(e)) => unreachable.push((task.id, e)),
                Err(e) => self.fail_start(task, &e).await?,
            }
        }
        if !unreachable.is_empty() {
            self.withdraw(&mut submission, &created, &unreachable)
                .await?;
        }
        if submission.task_ids.is_empty() {
            return Err(refusal(&submission.rejected));
        }
        Ok(submission)
    }

    /// The engine stopped answering while this request's runs were being started: the tasks
    /// whose run did not start are deleted (never left behind as failed). When none started, so
    /// is every task of the request (queued ones included) and the caller hears 503; otherwise
    /// the withdrawn racks are listed as rejected with `engine_unavailable`.
    async fn withdraw(
        &self,
        submission: &mut Submission,
        created: &[(Task, String)],
        unreachable: &[(Uuid, String)],
    ) -> Result<()> {
        let started = created.iter().any(|(t, _)| {
            t.status == TaskStatus::Pending && !unreachable.iter().any(|(id, _)| *id == t.id)
        });
        let withdrawn: Vec<&(Task, String)> = created
            .iter()
            .filter(|(t, _)| !started || unreachable.iter().any(|(id, _)| *id == t.id))
            .collect();
        let ids: Vec<Uuid> = withdrawn.iter().map(|(t, _)| t.id).collect();
        store::discard_unstarted(&self.db, &ids).await?;
        let reason = unreachable
            .first()
            .map(|(_, e)| e.clone())
            .unwrap_or_default();
        if !started {
            return Err(engine_error(EngineError::Unavailable(reason)));
        }
        tracing::warn!(withdrawn = ids.len(), error = %reason, "some runs could not start; their tasks were withdrawn");
        submission.task_ids.retain(|id| !ids.contains(id));
        for (task, rack_name) in withdrawn {
            submission.rejected.push(Rejection {
                rack_id: task.rack_id,
                rack_name: rack_name.clone(),
                code: "engine_unavailable".into(),
                reason: format!("the workflow engine is unavailable: {reason}"),
            });
        }
        Ok(())
    }

    /// Inserts one rack's task after the conflict check, both under the rack's lock.
    async fn create_task(
        &self,
        spec: &OperationSpec,
        request_id: Uuid,
        rack: &RackWork,
    ) -> Result<Result<Task, Rejection>> {
        let reject = |code: &str, reason: String| Rejection {
            rack_id: rack.rack_id,
            rack_name: rack.rack_name.clone(),
            code: code.into(),
            reason,
        };
        if rack.devices.is_empty() {
            return Ok(Err(reject(
                "no_components",
                "no compute, NVSwitch or power-shelf component is targeted".into(),
            )));
        }
        if let Some(managers) = &self.managers {
            let plan = preview::plan_for(
                &self.db,
                spec.rule_id,
                rack.rack_id,
                &spec.operation,
                &rack.devices,
            )
            .await?;
            let gaps = capability::gaps(&plan, managers);
            if !gaps.is_empty() {
                return Ok(Err(reject("unsupported", gaps.join("; "))));
            }
        }
        let now = self.clock.now();
        let components = TaskComponent::of(&rack.devices);
        let footprint = Footprint {
            task_type: spec.operation.task_type(),
            components: components.clone(),
        };
        let txn = crate::db::begin_write(&self.db).await?;
        store::lock_rack(&txn, rack.rack_id).await?;
        let admission =
            admission::admit(&txn, rack.rack_id, &footprint, spec.conflict_strategy).await?;
        let (status, message, expires) = match admission.outcome {
            Outcome::Start => (TaskStatus::Pending, "pending".to_string(), None),
            Outcome::Reject { code, reason } => return Ok(Err(reject(code, reason))),
            Outcome::Queue { behind } => {
                let expires = now + Duration::seconds(spec.queue_timeout_secs as i64);
                (
                    TaskStatus::Waiting,
                    format!("queued behind task {behind}"),
                    Some(expires),
                )
            }
        };
        let task = Task {
            id: Uuid::now_v7(),
            request_id,
            operation: spec.operation.clone(),
            rack_id: rack.rack_id,
            components,
            description: spec.description.clone(),
            conflict_strategy: spec.conflict_strategy,
            status,
            message,
            queue_expires_at: expires,
            created_at: now,
            updated_at: now,
            started_at: None,
            finished_at: None,
            requested_rule_id: spec.rule_id,
            created_by: Some(crate::auth::audit_actor()),
        };
        store::insert(&txn, &task).await?;
        crate::audit::record(&txn, audit_change(&task), now).await?;
        txn.commit().await?;
        Ok(Ok(task))
    }

    /// Plans a pending task from the rack's current inventory and starts its run. A task whose
    /// run cannot be started fails with the reason, so it never sits pending unnoticed.
    pub(super) async fn dispatch(&self, task: &Task) -> Result<()> {
        match self.start_run(task).await? {
            Ok(()) => Ok(()),
            Err(e) => self.fail_start(task, &e).await,
        }
    }

    async fn fail_start(&self, task: &Task, e: &EngineError) -> Result<()> {
        tracing::warn!(task = %task.id, error = %e, "could not start the task's workflow");
        self.finish(
            task.id,
            TaskStatus::Failed,
            &format!("could not start: {e}"),
        )
        .await
    }

    /// Plans the task and asks the engine to start its run; `Ok(Err(_))` when the engine
    /// refused, left to the caller (a submission withdraws the task, a promotion fails it).
    /// Both paths to a run (submission and promotion) go through here: the `dispatch` span.
    #[tracing::instrument(name = "dispatch", skip_all, fields(task = %task.id, rack = %task.rack_id))]
    async fn start_run(&self, task: &Task) -> Result<Result<(), EngineError>> {
        let devices = preview::devices(&self.db, task.rack_id, &task.components).await?;
        let plan = match preview::plan_for(
            &self.db,
            task.requested_rule_id,
            task.rack_id,
            &task.operation,
            &devices,
        )
        .await
        {
            Ok(plan) => plan,
            // The named rule was deleted while the task waited: fail it, never leave it pending.
            Err(e @ (Error::Unprocessable { .. } | Error::Invalid(_) | Error::NotFound { .. })) => {
                self.finish(task.id, TaskStatus::Failed, &format!("could not plan: {e}"))
                    .await?;
                return Ok(Ok(()));
            }
            Err(e) => return Err(e),
        };
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
        store::record_plan(&self.db, task.id, &plan, now).await?;
        match self
            .engine
            .start(task.id, &plan, plan.workflow_timeout())
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

    /// What submitting `spec` would do on each rack, without doing it.
    pub async fn preview(&self, spec: &OperationSpec) -> Result<Vec<preview::RackPreview>> {
        preview::preview(&self.db, spec, self.managers.as_deref()).await
    }

    /// Whether the workflow engine answers: `Ok(false)` when this process has none.
    pub async fn engine_ready(&self) -> Result<bool> {
        self.engine.ping().await.map_err(engine_error)
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
