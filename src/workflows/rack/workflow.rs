//! The rack workflow: walks a task's plan stage by stage; inside a stage, one activity per
//! device with at most `max_parallel` in flight; stops at the first failed stage.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use temporalio_common::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityCancellationType, ActivityExecutionError, ActivityOptions, ApplicationFailure,
    WorkflowCancellationToken, WorkflowContext, WorkflowContextView, WorkflowResult,
    WorkflowTermination, workflows::join_all,
};
use uuid::Uuid;

use super::activities::{
    DeviceStepInput, FinishInput, RackActivities, StageSkippedInput, StepFailedInput, StepOutcome,
};
use crate::operations::plan::{Plan, Stage};
use crate::rules::model::{OnFailure, StageWhen};
use crate::tasks::model::TaskStatus;

/// Workflow input: the task and the plan it runs (fixed at dispatch, so replays are stable).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RackOperationInput {
    pub task_id: Uuid,
    pub plan: Plan,
}

/// Where the run is, for queries.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RackOperationProgress {
    pub stage: u32,
    pub in_flight: usize,
}

#[workflow]
#[derive(Default)]
pub struct RackOperationWorkflow {
    stage: u32,
    in_flight: usize,
    max_parallel: usize,
}

/// Bookkeeping activities are short and must outlive a cancelled run, so they get their own
/// cancellation token. They are single database writes: a deadline of seconds lets one whose
/// replica died run again on another within ~10 s.
fn bookkeeping() -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(Duration::from_secs(8))
        .retry_policy(
            RetryPolicy::builder()
                .initial_interval(Duration::from_secs(1))
                .maximum_interval(Duration::from_secs(30))
                .maximum_attempts(10)
                .build(),
        )
        .cancellation_token(WorkflowCancellationToken::new())
        .build()
}

/// Device steps beat every two seconds; the SDK sends at most one beat per 0.8 × this, which is
/// also the longest a cancel waits to reach a step.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(10);

fn device_options(stage: &Stage) -> ActivityOptions {
    let retry = stage.retry;
    ActivityOptions::with_start_to_close_timeout(Duration::from_millis(stage.timeout_ms))
        .heartbeat_timeout(HEARTBEAT_TIMEOUT)
        .retry_policy(
            RetryPolicy::builder()
                .initial_interval(retry.initial_interval)
                .backoff_coefficient(retry.backoff_coefficient)
                .maximum_interval(retry.max_interval)
                .maximum_attempts(retry.max_attempts)
                .build(),
        )
        // The workflow hears of a cancel only once the device step has really stopped.
        .cancellation_type(ActivityCancellationType::WaitCancellationCompleted)
        .build()
}

fn describe(err: &ActivityExecutionError) -> String {
    match err {
        ActivityExecutionError::Failed(f) => match f.cause() {
            Some(cause) => format!("{cause}"),
            None => format!("{f}"),
        },
        other => format!("{other}"),
    }
}

/// Records the cancel on the task and ends the run as cancelled.
async fn end_cancelled(
    ctx: &WorkflowContext<RackOperationWorkflow>,
    task_id: Uuid,
) -> WorkflowResult<TaskStatus> {
    // Flow's own cancel says so in its reason; any other came from outside (the `temporal` CLI
    // or UI) and is audited as such.
    let reason = ctx.cancellation_token().reason();
    let finish = FinishInput {
        task_id,
        status: TaskStatus::Cancelled,
        message: "cancelled by user".into(),
        cancelled_outside: reason.as_deref() != Some(crate::tasks::engine::FLOW_CANCEL_REASON),
    };
    ctx.execute_activity(RackActivities::task_finished, finish, bookkeeping())
        .await?;
    Err(WorkflowTermination::cancelled())
}

/// Records the failure on the task and ends the run failed, without a workflow retry.
async fn end_failed(
    ctx: &WorkflowContext<RackOperationWorkflow>,
    task_id: Uuid,
    kind: &str,
    message: String,
) -> WorkflowResult<TaskStatus> {
    let finish = FinishInput {
        task_id,
        status: TaskStatus::Failed,
        message: message.clone(),
        cancelled_outside: false,
    };
    ctx.execute_activity(RackActivities::task_finished, finish, bookkeeping())
        .await?;
    Err(ApplicationFailure::builder(message)
        .type_name(kind.to_owned())
        .non_retryable(true)
        .build()
        .into())
}

/// One device step of a stage and how it ended (`None`: never started, the run was cancelled).
type StepRun = (
    DeviceStepInput,
    Option<Result<StepOutcome, ActivityExecutionError>>,
);

/// Runs a stage's device steps, one activity per device, at most `max_parallel` in flight.
async fn run_stage(
    ctx: &WorkflowContext<RackOperationWorkflow>,
    input: &RackOperationInput,
    stage: &Stage,
) -> Vec<StepRun> {
    ctx.state_mut(|s| {
        s.stage = stage.number;
        s.max_parallel = stage.max_parallel.max(1) as usize;
    });
    let runs: Vec<_> = stage
        .devices
        .iter()
        .map(|device| {
            let ctx = ctx.clone();
            let step = DeviceStepInput {
                task_id: input.task_id,
                stage: stage.number,
                actions: stage.actions.clone(),
                firmware: input.plan.firmware_for(device.kind),
                device: device.clone(),
                max_attempts: stage.retry.max_attempts,
            };
            let options = device_options(stage);
            async move {
                // A deterministic semaphore: each run waits for a free slot in workflow state.
                if ctx
                    .wait_condition(|s| s.in_flight < s.max_parallel)
                    .await
                    .is_err()
                {
                    return (step, None);
                }
                ctx.state_mut(|s| s.in_flight += 1);
                let result = ctx
                    .execute_activity(RackActivities::device_step, step.clone(), options)
                    .await;
                ctx.state_mut(|s| s.in_flight -= 1);
                (step, Some(result))
            }
        })
        .collect();
    join_all(runs).await
}

/// A stage's failures, one line per device. A step whose activity could not record its own
/// failure (it timed out or died) is recorded here.
async fn stage_failures(
    ctx: &WorkflowContext<RackOperationWorkflow>,
    task_id: Uuid,
    results: Vec<StepRun>,
) -> WorkflowResult<Vec<String>> {
    let mut failures = Vec::new();
    for (step, result) in results {
        let failed = match result {
            Some(Ok(StepOutcome { error: None, .. })) => continue,
            Some(Ok(StepOutcome {
                error: Some(error),
                name,
                ..
            })) => format!("{name}: {error}"),
            Some(Err(err)) => {
                let error = describe(&err);
                let record = StepFailedInput {
                    task_id,
                    stage: step.stage,
                    component_id: step.device.component_id,
                    error: error.clone(),
                };
                ctx.execute_activity(RackActivities::step_failed, record, bookkeeping())
                    .await?;
                format!("{}: {error}", step.device.name)
            }
            None => format!("{}: not started", step.device.name),
        };
        failures.push(failed);
    }
    Ok(failures)
}

/// Records a stage as not needed: no tray staged an image for the rack's AC cycle.
async fn skip_stage(
    ctx: &WorkflowContext<RackOperationWorkflow>,
    task_id: Uuid,
    stage: &Stage,
) -> WorkflowResult<()> {
    let skipped = StageSkippedInput {
        task_id,
        stage: stage.number,
        component_ids: stage.devices.iter().map(|d| d.component_id).collect(),
        reason: "skipped: no tray staged an image that needs the rack's AC cycle".into(),
    };
    ctx.execute_activity(RackActivities::stage_skipped, skipped, bookkeeping())
        .await?;
    Ok(())
}

#[workflow_methods]
impl RackOperationWorkflow {
    #[run(name = "RackOperation")]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: RackOperationInput,
    ) -> WorkflowResult<TaskStatus> {
        let task_id = input.task_id;
        ctx.execute_activity(RackActivities::task_started, task_id, bookkeeping())
            .await?;
        // Failures of stages that let the run continue; reported when the run ends.
        let mut carried: Vec<String> = Vec::new();
        // Whether a tray staged images that only the rack's AC cycle makes live.
        let mut ac_cycle = false;
        for stage in &input.plan.stages {
            if stage.when == Some(StageWhen::AcCycle) && !ac_cycle {
                skip_stage(ctx, task_id, stage).await?;
                continue;
            }
            let results = run_stage(ctx, &input, stage).await;
            ac_cycle |= results
                .iter()
                .any(|(_, r)| matches!(r, Some(Ok(StepOutcome { ac_cycle: true, .. }))));
            if ctx.cancellation_token().is_cancelled() {
                return end_cancelled(ctx, task_id).await;
            }
            let failures = stage_failures(ctx, task_id, results).await?;
            if !failures.is_empty() {
                let (number, name) = (stage.number, &stage.name);
                let failures = failures.join("; ");
                if stage.on_failure != OnFailure::Continue {
                    let message = format!("stage {number} ({name}) failed: {failures}");
                    return end_failed(ctx, task_id, "StageFailed", message).await;
                }
                carried.push(format!("stage {number} ({name}): {failures}"));
            }
            if stage.delay_after_ms > 0 {
                // A durable timer: a worker restart during the pause resumes it, not restarts it.
                ctx.timer(Duration::from_millis(stage.delay_after_ms)).await;
                if ctx.cancellation_token().is_cancelled() {
                    return end_cancelled(ctx, task_id).await;
                }
            }
        }
        if !carried.is_empty() {
            let message = format!(
                "every stage ran; components failed in {}",
                carried.join(" | ")
            );
            return end_failed(ctx, task_id, "StagesFailed", message).await;
        }
        let finish = FinishInput {
            task_id,
            status: TaskStatus::Succeeded,
            message: "succeeded".into(),
            cancelled_outside: false,
        };
        ctx.execute_activity(RackActivities::task_finished, finish, bookkeeping())
            .await?;
        Ok(TaskStatus::Succeeded)
    }

    /// Current stage and devices in flight.
    #[query]
    pub fn progress(&self, _ctx: &WorkflowContextView) -> RackOperationProgress {
        RackOperationProgress {
            stage: self.stage,
            in_flight: self.in_flight,
        }
    }
}
