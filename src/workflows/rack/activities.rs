//! Activities of the rack workflow: task bookkeeping in the database, and one device's step
//! through its component manager.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use temporalio_macros::activities;
use temporalio_sdk::ApplicationFailure;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use uuid::Uuid;

use super::steps::{self, Progress, StepFailure};
use crate::clock::Clock;
use crate::components::registry::Registry;
use crate::components::{Device, DeviceError, FirmwareRequest};
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

/// What a step learnt of its device on the way: an external id from registration, a firmware
/// version from a finished update.
#[derive(Default)]
struct Learnt {
    external_id: Option<String>,
    firmware_version: Option<String>,
}

/// What a step's heartbeats carry (as JSON text): a note for people, and the firmware update
/// the step follows with when it was started. Temporal keeps the last one and hands it to the
/// next attempt, so a retried or re-scheduled step resumes that update instead of pushing again.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Beat {
    note: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    update: Option<FollowedUpdate>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct FollowedUpdate {
    /// The manager's handle ([`crate::components::FirmwareControl::update_handle`]).
    handle: String,
    started_at: chrono::DateTime<chrono::Utc>,
}

struct Heartbeat<'a> {
    ctx: &'a ActivityContext,
    clock: &'a dyn Clock,
    learnt: std::sync::Mutex<Learnt>,
    update: std::sync::Mutex<Option<FollowedUpdate>>,
    /// The update the previous attempt's last heartbeat named.
    earlier: Option<FollowedUpdate>,
}

impl<'a> Heartbeat<'a> {
    fn new(ctx: &'a ActivityContext, clock: &'a dyn Clock) -> Self {
        let earlier = ctx
            .heartbeat_details()
            .deserialize::<String>()
            .ok()
            .flatten()
            .and_then(|text| serde_json::from_str::<Beat>(&text).ok())
            .and_then(|beat| beat.update);
        Self {
            ctx,
            clock,
            learnt: std::sync::Mutex::new(Learnt::default()),
            update: std::sync::Mutex::new(None),
            earlier,
        }
    }

    async fn record(&self, note: &str) {
        let beat = Beat {
            note: note.to_string(),
            update: self.update.lock().ok().and_then(|u| u.clone()),
        };
        let text = serde_json::to_string(&beat).unwrap_or_default();
        // A lost heartbeat only delays noticing a dead worker; the step goes on.
        let _ = self.ctx.record_heartbeat(text).await;
    }
}

#[async_trait]
impl Progress for Heartbeat<'_> {
    fn registered(&self, external_id: &str) {
        if let Ok(mut learnt) = self.learnt.lock() {
            learnt.external_id = Some(external_id.to_string());
        }
    }

    fn firmware_reported(&self, version: &str) {
        if let Ok(mut learnt) = self.learnt.lock() {
            learnt.firmware_version = Some(version.to_string());
        }
    }

    async fn beat(&self, note: &str) {
        self.record(note).await;
    }

    fn cancelled(&self) -> bool {
        self.ctx.is_cancelled()
    }

    async fn update_started(&self, handle: &str) {
        // A resumed update keeps the time it was first started.
        let started_at = self
            .earlier
            .as_ref()
            .filter(|e| e.handle == handle)
            .map_or_else(|| self.clock.now(), |e| e.started_at);
        if let Ok(mut slot) = self.update.lock() {
            *slot = Some(FollowedUpdate {
                handle: handle.to_string(),
                started_at,
            });
        }
        self.record("firmware update started").await;
    }

    fn earlier_update(&self) -> Option<String> {
        self.earlier.as_ref().map(|e| e.handle.clone())
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
        let db = self.tasks.db();
        let (task, stage, component) = (input.task_id, input.stage, input.device.component_id);
        // Every step change goes to the task lifecycle as one typed update.
        let record = |status: StepStatus, error: Option<String>, event: String| {
            let update = StepUpdate {
                task_id: task.into(),
                stage,
                component_id: component.into(),
                status,
                attempts: attempt,
                error,
                event,
            };
            let tasks = Arc::clone(&self.tasks);
            async move { tasks.record_step(&update).await.map_err(activity_error) }
        };
        let labels: Vec<String> = input.actions.iter().map(Action::label).collect();
        let start_note = format!(
            "attempt {attempt}: {} on {}",
            labels.join(", "),
            input.device.name
        );
        record(StepStatus::Running, None, start_note).await?;
        let progress = Heartbeat::new(&ctx, self.clock.as_ref());
        let result = {
            let work = steps::run_all(
                &self.registry,
                &input.actions,
                &input.firmware,
                &input.device,
                &progress,
            );
            // A device call can take long; beating meanwhile lets a cancel (delivered only with a
            // heartbeat's answer) and a dead worker be noticed during the call, not after it.
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
        };
        let now = self.clock.now();
        let outcome = |error: Option<String>| StepOutcome {
            component_id: component,
            name: input.device.name.clone(),
            error,
        };
        let learnt = progress
            .learnt
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        let mut result = result;
        if let (Ok(_), Some(external_id)) = (&result, learnt.external_id) {
            // What registration learnt is the component's external id, as the drift sync
            // records it: in the observed fields, never the operator's.
            let kind = input.device.kind;
            let owner =
                crate::drift::store::claim_external_id(db, kind, component, &external_id, now)
                    .await
                    .map_err(activity_error)?;
            if let Some((other, other_name)) = owner {
                result = Err(StepFailure::Device(DeviceError::Rejected(format!(
                    "409 conflict: {kind} {} ({component}) reports external id {external_id}, \
                     which {kind} {other_name} ({other}) already has",
                    input.device.name
                ))));
            }
        }
        let power = steps::power_after(&input.actions);
        if result.is_ok() && (power.is_some() || learnt.firmware_version.is_some()) {
            // The power state the step left the device in, and the firmware an update reported,
            // are recorded as the drift sync records what it sees (observed fields, never the
            // operator's), so badges are right as the step ends.
            let sighting = crate::drift::compare::Sighting {
                component_id: component,
                external_id: None,
                firmware_version: learnt.firmware_version,
                power,
            };
            crate::drift::store::record_sightings(db, &[sighting], now)
                .await
                .map_err(activity_error)?;
        }
        match result {
            Ok(detail) => {
                record(StepStatus::Succeeded, None, detail).await?;
                Ok(outcome(None))
            }
            Err(StepFailure::Cancelled) => {
                record(StepStatus::Cancelled, None, "cancelled".to_string()).await?;
                Err(ActivityError::cancelled())
            }
            Err(failure) if failure.is_retryable() && attempt < input.max_attempts => {
                let note = format!("attempt {attempt} failed: {failure}; will retry");
                record(StepStatus::Running, Some(failure.to_string()), note).await?;
                Err(ActivityError::application(ApplicationFailure::new(
                    failure.to_string(),
                )))
            }
            Err(failure) => {
                let error = failure.to_string();
                record(
                    StepStatus::Failed,
                    Some(error.clone()),
                    format!("failed: {error}"),
                )
                .await?;
                Ok(outcome(Some(error)))
            }
        }
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
        self.tasks
            .finish(input.task_id.into(), input.status, &input.message)
            .await
            .map_err(activity_error)
    }
}
