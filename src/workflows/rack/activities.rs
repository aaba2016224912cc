//! Activities of the rack workflow: task bookkeeping in the database, and one device's step
//! through its component manager.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use temporalio_macros::activities;
use temporalio_sdk::ApplicationFailure;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use uuid::Uuid;

use super::beat::{Heartbeat, Learnt};
use super::steps::{self, Progress, StepFailure};
use crate::clock::Clock;
use crate::components::registry::Registry;
use crate::components::{Device, DeviceError, FirmwareRequest};
use crate::domain::PowerState;
use crate::error::Error;
use crate::rules::model::Action;
use crate::tasks::model::{StepStatus, TaskStatus};
use crate::tasks::{StepUpdate, TaskService};

/// One device's step of one stage.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceStepInput {
    pub task_id: Uuid,
    pub stage: u32,
    /// The stage's actions, run in order.
    pub actions: Vec<Action>,
    /// What a `firmware_start` installs on this device (already picked for its type).
    pub firmware: FirmwareRequest,
    pub device: Device,
    /// The stage's retry budget: the last attempt records a failure instead of asking for a retry.
    pub max_attempts: u32,
}

/// How a device's step ended (failures the workflow should report, not retry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepOutcome {
    pub component_id: Uuid,
    pub name: String,
    pub error: Option<String>,
    /// The device staged firmware images that go live only with the rack's AC cycle.
    #[serde(default)]
    pub ac_cycle: bool,
}

/// A stage the workflow skipped, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageSkippedInput {
    pub task_id: Uuid,
    pub stage: u32,
    pub component_ids: Vec<Uuid>,
    pub reason: String,
}

/// A step the workflow gave up on (its activity timed out or failed for good).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepFailedInput {
    pub task_id: Uuid,
    pub stage: u32,
    pub component_id: Uuid,
    pub error: String,
}

/// The task's final status.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FinishInput {
    pub task_id: Uuid,
    pub status: TaskStatus,
    pub message: String,
    /// The run was cancelled from outside Flow (not with [`FLOW_CANCEL_REASON`]): the task's
    /// end is audited under the actor `temporal`.
    ///
    /// [`FLOW_CANCEL_REASON`]: crate::tasks::engine::FLOW_CANCEL_REASON
    #[serde(default)]
    pub cancelled_outside: bool,
}

/// Everything activities need, shared by all of them.
#[derive(Clone)]
pub struct RackActivities {
    pub tasks: Arc<TaskService>,
    pub registry: Arc<Registry>,
    pub clock: Arc<dyn Clock>,
}

/// Storage and bookkeeping failures: retry unless retrying cannot help.
pub(in crate::workflows) fn activity_error(e: Error) -> ActivityError {
    match e {
        Error::Invalid(_)
        | Error::NotFound { .. }
        | Error::Conflict { .. }
        | Error::Unprocessable { .. } => {
            ActivityError::application(ApplicationFailure::non_retryable(e.to_string()))
        }
        other => ActivityError::application(ApplicationFailure::new(other.to_string())),
    }
}

/// Where a step's status changes go: the task lifecycle, one typed update each.
struct Recorder<'a> {
    tasks: Arc<TaskService>,
    input: &'a DeviceStepInput,
    attempt: u32,
}

impl Recorder<'_> {
    async fn record(
        &self,
        status: StepStatus,
        error: Option<String>,
        event: String,
    ) -> Result<(), ActivityError> {
        self.report(status, error, event, None).await
    }

    async fn report(
        &self,
        status: StepStatus,
        error: Option<String>,
        event: String,
        power_seen: Option<PowerState>,
    ) -> Result<(), ActivityError> {
        let update = StepUpdate {
            task_id: self.input.task_id.into(),
            stage: self.input.stage,
            component_id: self.input.device.component_id.into(),
            status,
            attempts: self.attempt,
            error,
            event,
            power_seen,
        };
        self.tasks
            .record_step(&update)
            .await
            .map_err(activity_error)
    }

    /// Records how the step ended and answers the workflow: done (with the power it left the
    /// device in, if any), failed for good (an outcome with the error), or failed for a retry
    /// (an activity error, which Temporal retries).
    async fn finish(
        &self,
        (result, power_seen): (Result<String, StepFailure>, Option<PowerState>),
    ) -> Result<StepOutcome, ActivityError> {
        let outcome = |error: Option<String>| StepOutcome {
            component_id: self.input.device.component_id,
            name: self.input.device.name.clone(),
            error,
            ac_cycle: false,
        };
        match result {
            Ok(detail) => {
                self.report(StepStatus::Succeeded, None, detail, power_seen)
                    .await?;
                Ok(outcome(None))
            }
            Err(StepFailure::Cancelled) => {
                self.record(StepStatus::Cancelled, None, "cancelled".to_string())
                    .await?;
                Err(ActivityError::cancelled())
            }
            Err(failure) if failure.is_retryable() && self.attempt < self.input.max_attempts => {
                let note = format!("attempt {} failed: {failure}; will retry", self.attempt);
                self.record(StepStatus::Running, Some(failure.to_string()), note)
                    .await?;
                Err(ActivityError::application(ApplicationFailure::new(
                    failure.to_string(),
                )))
            }
            Err(failure) => {
                let error = failure.to_string();
                let note = format!("failed: {error}");
                self.record(StepStatus::Failed, Some(error.clone()), note)
                    .await?;
                Ok(outcome(Some(error)))
            }
        }
    }
}

impl RackActivities {
    /// Runs the step's actions, beating meanwhile: a device call can take long, and beating lets
    /// a cancel (delivered only with a heartbeat's answer) and a dead worker be noticed during
    /// the call, not after it.
    async fn run_beating(
        &self,
        ctx: &ActivityContext,
        input: &DeviceStepInput,
        progress: &Heartbeat<'_>,
    ) -> Result<String, StepFailure> {
        let work = steps::run_all(
            &self.registry,
            &input.actions,
            &input.firmware,
            &input.device,
            progress,
        );
        let beat = async {
            loop {
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                progress.beat("in progress").await;
            }
        };
        tokio::select! {
            result = work => result,
            () = ctx.cancelled() => Err(StepFailure::Cancelled),
            () = beat => Err(StepFailure::Cancelled),
        }
    }

    /// Records what a successful step learnt, as the drift sync records what it sees (observed
    /// fields, never the operator's): the external id registration reported (a clash with
    /// another component fails the step), and the power and firmware the device was left with,
    /// so badges are right as the step ends. The power alone (a power step) is handed back, to
    /// be written with the step's final report in one statement.
    async fn record_effects(
        &self,
        input: &DeviceStepInput,
        learnt: Learnt,
        result: Result<String, StepFailure>,
    ) -> Result<(Result<String, StepFailure>, Option<PowerState>), ActivityError> {
        if result.is_err() {
            return Ok((result, None));
        }
        let (db, now) = (self.tasks.db(), self.clock.now());
        let component = input.device.component_id;
        if let Some(external_id) = learnt.external_id {
            let clash =
                crate::drift::sightings::claim_external_id(db, component, &external_id, now)
                    .await
                    .map_err(activity_error)?;
            if let Some(clash) = clash {
                return Ok((
                    Err(StepFailure::Device(DeviceError::Rejected(
                        clash.error().to_string(),
                    ))),
                    None,
                ));
            }
        }
        if let Some(version) = &learnt.firmware_version {
            // Read before the sighting overwrites it: the version the device ran until now is
            // what a rollback returns to.
            crate::inventory::firmware_history::record_upgrade(db, component, version, now)
                .await
                .map_err(activity_error)?;
        }
        let power = steps::power_after(&input.actions);
        if learnt.firmware_version.is_none() {
            return Ok((result, power.map(crate::drift::sightings::power_state)));
        }
        let sighting = crate::drift::compare::Sighting {
            component_id: component,
            external_id: None,
            firmware_version: learnt.firmware_version,
            power,
            tray: None,
        };
        crate::drift::sightings::record_sightings(db, &[sighting], now)
            .await
            .map_err(activity_error)?;
        Ok((result, None))
    }
}

#[activities]
impl RackActivities {
    /// The run has begun: pending -> running.
    #[activity(name = "TaskStarted")]
    pub async fn task_started(
        self: Arc<Self>,
        _ctx: ActivityContext,
        task_id: Uuid,
    ) -> Result<bool, ActivityError> {
        self.tasks
            .mark_running(task_id.into())
            .await
            .map_err(activity_error)
    }

    /// Drives one device through its action and records the result on the task.
    #[activity(name = "DeviceStep")]
    pub async fn device_step(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: DeviceStepInput,
    ) -> Result<StepOutcome, ActivityError> {
        let attempt = ctx.info().attempt;
        let recorder = Recorder {
            tasks: Arc::clone(&self.tasks),
            input: &input,
            attempt,
        };
        let labels: Vec<String> = input.actions.iter().map(Action::label).collect();
        let start_note = format!(
            "attempt {attempt}: {} on {}",
            labels.join(", "),
            input.device.name
        );
        recorder
            .record(StepStatus::Running, None, start_note)
            .await?;
        let progress = Heartbeat::new(&ctx, self.clock.as_ref());
        let result = self.run_beating(&ctx, &input, &progress).await;
        let learnt = progress
            .learnt
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        let ac_cycle = learnt.ac_cycle;
        let result = self.record_effects(&input, learnt, result).await?;
        let mut outcome = recorder.finish(result).await?;
        outcome.ac_cycle = ac_cycle;
        Ok(outcome)
    }

    /// Records a stage the workflow did not run (an AC-cycle stage no tray needed): its steps
    /// end succeeded, with the reason as their event.
    #[activity(name = "StageSkipped")]
    pub async fn stage_skipped(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StageSkippedInput,
    ) -> Result<(), ActivityError> {
        for component_id in input.component_ids {
            self.tasks
                .record_step(&StepUpdate {
                    task_id: input.task_id.into(),
                    stage: input.stage,
                    component_id: component_id.into(),
                    status: StepStatus::Succeeded,
                    attempts: 0,
                    error: None,
                    event: input.reason.clone(),
                    power_seen: None,
                })
                .await
                .map_err(activity_error)?;
        }
        Ok(())
    }

    /// Records a step the workflow gave up on without hearing from the activity.
    #[activity(name = "StepFailed")]
    pub async fn step_failed(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StepFailedInput,
    ) -> Result<(), ActivityError> {
        let note = format!("failed: {}", input.error);
        self.tasks
            .record_step(&StepUpdate {
                task_id: input.task_id.into(),
                stage: input.stage,
                component_id: input.component_id.into(),
                status: StepStatus::Failed,
                attempts: 0,
                error: Some(input.error.clone()),
                event: note,
                power_seen: None,
            })
            .await
            .map_err(activity_error)
    }

    /// Writes the task's final status and lets queued tasks on the rack go.
    #[activity(name = "TaskFinished")]
    pub async fn task_finished(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: FinishInput,
    ) -> Result<(), ActivityError> {
        let finished = if input.cancelled_outside {
            self.tasks
                .finish_cancelled_outside(input.task_id.into())
                .await
        } else {
            self.tasks
                .finish(input.task_id.into(), input.status, &input.message)
                .await
        };
        finished.map_err(activity_error)
    }
}
