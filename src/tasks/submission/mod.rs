//! Submitting work, along the path: validate → check the requested rule → resolve the targets →
//! check readiness (holds, health alerts: `readiness`) → decide each rack with the one
//! planner (rule, plan, capability, admission — and readiness again — under the rack's lock) →
//! create the tasks and start the runs of those that start at once (both through `lifecycle`,
//! the one writer). The dry run (`preview`) is the same planner without the writes;
//! `idempotency` makes a retried request return the first answer.
//!
//! A task that starts at once runs the plan decided here; a queued one is planned again when it
//! is promoted (see `planner`).

mod admission;
pub mod blast;
mod capability;
pub mod domain_split;
mod idempotency;
pub mod planner;
pub mod preview;
pub mod readiness;
pub mod recipes;
mod refusal;
pub mod rollback;
mod withdraw;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use self::admission::ACTIVE;
use crate::domain::operation::OperationSpec;
use crate::error::Result;
use crate::ids::{OperationRequestId, RackId, TaskId};
use crate::inventory::targets::{self as resolve, RackWork};
use crate::operations::plan::Plan;
use crate::tasks::engine::{EngineError, engine_error};
use crate::tasks::model::{Task, TaskComponent, TaskStatus};
use crate::tasks::{TaskService, store};

pub use admission::Outcome;
pub use planner::{Blocker, Decision, Refusal, RefusalCode};
pub use preview::RackPreview;

/// Why one rack got no task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub rack_id: RackId,
    pub rack_name: String,
    pub code: RefusalCode,
    pub reason: String,
}

/// What a submission created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    pub request_id: OperationRequestId,
    pub task_ids: Vec<TaskId>,
    pub rejected: Vec<Rejection>,
}

/// A task this request created, with the plan it starts with (`None` for a queued one).
pub(super) struct Created {
    pub task: Task,
    pub rack_name: String,
    pub plan: Option<Plan>,
}

/// How many task runs one submission starts at a time.
const DISPATCH_CONCURRENCY: usize = 16;

impl TaskService {
    /// Turns one operation request into one task per targeted rack and starts their runs.
    /// With an idempotency key, a repeated request returns the first one's answer.
    #[tracing::instrument(name = "submit", skip_all, fields(operation = spec.operation.code().as_str()))]
    pub async fn submit(
        &self,
        spec: &OperationSpec,
        idempotency_key: Option<&str>,
    ) -> Result<Submission> {
        preview::check(&self.db, spec).await?;
        let fingerprint = serde_json::to_string(spec)
            .map_err(|e| crate::error::Error::Internal(e.to_string()))?;
        let request_id = OperationRequestId::new();
        if let Some(key) = idempotency_key
            && let Some(previous) =
                idempotency::claim(&self.db, key, &fingerprint, request_id, self.clock.now())
                    .await?
        {
            return Ok(previous);
        }
        let outcome = self.submit_new(spec, request_id).await;
        if let Some(key) = idempotency_key {
            match &outcome {
                Ok(submission) => idempotency::complete(&self.db, key, submission).await?,
                // A request that created nothing may be retried with the same key.
                Err(_) => idempotency::forget(&self.db, key).await?,
            }
        }
        outcome
    }

    async fn submit_new(
        &self,
        spec: &OperationSpec,
        request_id: OperationRequestId,
    ) -> Result<Submission> {
        let work = planner::narrow(
            spec,
            resolve::resolve(&self.db, &spec.targets).await?,
            self.managers.as_deref(),
        );
        self.check_radius(work.len(), "this request", "target_spec")?;
        // Held or not-ready targets, or an engine known to be down, refuse before any write: a
        // task that cannot start must never be created (and answered 202). Bad targets: 4xx.
        let overridden = readiness::admit(&self.db, spec, &work, self.clock.now()).await?;
        let split = domain_split::check_work(&self.db, spec, &work).await?;
        if !self.engine.available() {
            return Err(engine_error(EngineError::Unavailable(
                "the workflow engine is not connected".into(),
            )));
        }
        readiness::record_override(&self.db, request_id, &overridden, self.clock.now()).await?;
        let mut submission = Submission {
            request_id,
            task_ids: Vec::new(),
            rejected: Vec::new(),
        };
        let mut created = Vec::new();
        for rack in work {
            match self.create_task(spec, request_id, &rack).await? {
                Ok(new) => {
                    submission.task_ids.push(new.task.id);
                    created.push(new);
                }
                Err(rejection) => submission.rejected.push(rejection),
            }
        }
        self.start_created(&mut submission, &created).await?;
        if submission.task_ids.is_empty() {
            return Err(refusal::refusal(&submission.rejected));
        }
        domain_split::audit_override(&self.db, request_id, &split, self.clock.now()).await?;
        Ok(submission)
    }

    /// Starts the runs of the tasks just created that start now; a run the engine could not
    /// take is withdrawn, one it refused fails its task.
    async fn start_created(&self, submission: &mut Submission, created: &[Created]) -> Result<()> {
        // Racks are independent: start their runs side by side, so a request for a hundred
        // racks does not wait for a hundred sequential workflow starts.
        let mut starts = Vec::new();
        for new in created {
            if let Some(plan) = &new.plan {
                let task = &new.task;
                starts.push(async move { (task, self.start_run(task, plan).await) });
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
            self.withdraw(submission, created, &unreachable).await?;
        }
        Ok(())
    }

    /// Decides one rack under its lock and, unless refused, creates its task in the same
    /// transaction, so two submissions cannot both pass the conflict check.
    async fn create_task(
        &self,
        spec: &OperationSpec,
        request_id: OperationRequestId,
        rack: &RackWork,
    ) -> Result<std::result::Result<Created, Rejection>> {
        let rule = planner::rule_for(&self.db, spec, rack).await?;
        // Devices are asked before the rack is locked: no transaction waits on a BMC.
        let asked =
            capability::power_gaps(spec, rack, rule.as_ref(), self.managers.as_deref()).await;
        let txn = crate::db::begin_write(&self.db).await?;
        crate::inventory::rack_lock::lock(&txn, rack.rack_id).await?;
        if let Some(refused) = readiness::recheck(&txn, spec, rack, self.clock.now()).await? {
            return Ok(Err(refused));
        }
        let active = store::on_rack(&txn, rack.rack_id, &ACTIVE).await?;
        let decision = planner::decide(
            spec,
            rack,
            rule.as_ref(),
            self.managers.as_deref(),
            &active,
            &asked,
        );
        let now = self.clock.now();
        let (status, message, expires) = match decision.outcome {
            Outcome::Start => (TaskStatus::Pending, "pending".to_string(), None),
            Outcome::Reject(refusal) => {
                return Ok(Err(Rejection {
                    rack_id: rack.rack_id,
                    rack_name: rack.rack_name.clone(),
                    code: refusal.code,
                    reason: refusal.reason,
                }));
            }
            Outcome::Queue { behind } => {
                let expires = now + chrono::Duration::seconds(spec.queue_timeout_secs as i64);
                let message = format!("queued behind task {behind}");
                (TaskStatus::Waiting, message, Some(expires))
            }
        };
        let task = new_task(spec, request_id, rack, (status, message, expires), now);
        self.record_created(&txn, &task).await?;
        txn.commit().await?;
        if status == TaskStatus::Waiting {
            self.recheck_queue(rack.rack_id).await;
        }
        // Only a task that starts now keeps its plan: a queued one is planned when promoted.
        let plan = decision.plan.filter(|_| status == TaskStatus::Pending);
        Ok(Ok(Created {
            task,
            rack_name: rack.rack_name.clone(),
            plan,
        }))
    }

    /// Moves the rack's queue once a task queued on it is committed: the task it queued behind
    /// may have ended between the decision and the commit, its end seeing no waiting task yet
    /// (`promote` reads without the lock). A failure here only delays the start: the
    /// reconciler moves every waiting queue on its next pass.
    async fn recheck_queue(&self, rack_id: RackId) {
        if let Err(e) = self.promote(rack_id).await {
            tracing::warn!(error = %e, rack = %rack_id, "moving the queue after queueing failed");
        }
    }

    /// The blast radius of a request touching `count` racks, for the running caller.
    pub fn radius(&self, count: usize) -> blast::Radius {
        blast::current(&self.limits, count)
    }

    /// The blast radius of `count` racks for a caller holding `roles` (a schedule acting as
    /// `operator`), whoever runs now.
    pub fn radius_as(&self, roles: &[crate::domain::Role], count: usize) -> blast::Radius {
        blast::radius(&self.limits, Some(roles), count)
    }

    /// `403 blast_radius` when `count` racks are more than the running caller may touch at once:
    /// `what` is what was counted, `field` the input at fault.
    pub fn check_radius(&self, count: usize, what: &str, field: &str) -> Result<()> {
        blast::check(self.radius(count), what, field)
    }

    /// Every hold and not-ready component in the way of `spec` (the dry run's blockers).
    pub async fn readiness_blockers(
        &self,
        spec: &OperationSpec,
    ) -> Result<Vec<readiness::Obstacle>> {
        preview::check(&self.db, spec).await?;
        let work = planner::narrow(
            spec,
            resolve::resolve(&self.db, &spec.targets).await?,
            self.managers.as_deref(),
        );
        let scope = readiness::Scope::of(&work);
        readiness::obstacles(&self.db, &spec.operation, &scope, self.clock.now()).await
    }

    /// What submitting `spec` would do on each rack, without doing it.
    pub async fn preview(&self, spec: &OperationSpec) -> Result<Vec<RackPreview>> {
        preview::preview(&self.db, spec, self.managers.as_deref()).await
    }
}

/// The row of a task the submission creates: `state` is its first status, message and queue
/// expiry.
fn new_task(
    spec: &OperationSpec,
    request_id: OperationRequestId,
    rack: &RackWork,
    (status, message, expires): (TaskStatus, String, Option<DateTime<Utc>>),
    now: DateTime<Utc>,
) -> Task {
    Task {
        id: TaskId::new(),
        request_id,
        operation: spec.operation.clone(),
        rack_id: rack.rack_id,
        components: TaskComponent::of(&rack.devices),
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
        created_by: Some(crate::audit::actor()),
    }
}
