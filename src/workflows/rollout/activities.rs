//! Activities of the rollout workflow: each one step of [`RolloutService`]'s run, so the
//! rollout's row has one writer and every step is recorded in the workflow's history.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use uuid::Uuid;

use crate::drift::observe::Observer;
use crate::rollouts::RolloutService;
use crate::rollouts::model::RolloutStatus;
use crate::rollouts::run::{RunPlan, WaveProgress, WaveStep};
use crate::workflows::rack::activities::{RackActivities, activity_error};

/// A status the run records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusInput {
    pub rollout_id: Uuid,
    pub status: RolloutStatus,
    pub wave: Option<u32>,
    pub message: String,
    pub approved: bool,
}

/// One wave of one rollout; `submit` lets the step start new racks (and, the first time,
/// record the wave as running, with `approved` from the run); `wait_ms` lets it wait (a long
/// poll) until the wave's counts change.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaveInput {
    pub rollout_id: Uuid,
    pub wave: u32,
    pub submit: bool,
    #[serde(default)]
    pub wait_ms: u64,
    #[serde(default)]
    pub approved: bool,
    /// Close the wave in the same step once it is done (no verification follows).
    #[serde(default)]
    pub close: bool,
}

/// Everything the rollout activities need.
pub struct RolloutActivities {
    pub rollouts: Arc<RolloutService>,
    /// Asks the component managers what they see, for the verify step.
    pub observer: Observer,
}

/// How long one verification waits for a component manager.
const VERIFY_OBSERVE_TIMEOUT: Duration = Duration::from_secs(30);

impl RolloutActivities {
    /// Shares the rack activities' task service, managers and clock.
    pub fn from_rack(rack: &RackActivities) -> Self {
        let rollouts = RolloutService::new(
            rack.tasks.db().clone(),
            rack.tasks.clone(),
            None,
            rack.clock.clone(),
        );
        Self {
            rollouts: Arc::new(rollouts),
            observer: Observer::new(rack.registry.clone(), VERIFY_OBSERVE_TIMEOUT),
        }
    }
}

#[activities]
impl RolloutActivities {
    /// The run has begun: reads what it needs and marks the rollout running.
    #[activity(name = "RolloutBegin")]
    pub async fn begin(
        self: Arc<Self>,
        _ctx: ActivityContext,
        rollout_id: Uuid,
    ) -> Result<RunPlan, ActivityError> {
        self.rollouts
            .begin(rollout_id.into())
            .await
            .map_err(activity_error)
    }

    /// Records a gate or progress status.
    #[activity(name = "RolloutSetStatus")]
    pub async fn set_status(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StatusInput,
    ) -> Result<(), ActivityError> {
        self.rollouts
            .set_status(
                input.rollout_id.into(),
                input.status,
                input.wave,
                &input.message,
                input.approved,
            )
            .await
            .map_err(activity_error)
    }

    /// Submits what the wave may start now and counts its racks; with `wait_ms`, then waits
    /// up to that long for the counts to change; with `close`, closes a wave found done.
    #[activity(name = "RolloutAdvance")]
    pub async fn advance(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: WaveInput,
    ) -> Result<WaveProgress, ActivityError> {
        let step = WaveStep {
            wave: input.wave,
            submit: input.submit,
            wait: Duration::from_millis(input.wait_ms),
            approved: input.approved,
            close: input.close,
        };
        self.rollouts
            .advance_waiting(input.rollout_id.into(), step)
            .await
            .map_err(activity_error)
    }

    /// Validates the wave's racks; answers how many are not clean.
    #[activity(name = "RolloutVerify")]
    pub async fn verify(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: WaveInput,
    ) -> Result<u32, ActivityError> {
        let work = self
            .rollouts
            .verify(input.rollout_id.into(), input.wave, &self.observer);
        beating(&ctx, work).await.map_err(activity_error)
    }

    /// Closes the wave and answers the counts the gates check.
    #[activity(name = "RolloutEndWave")]
    pub async fn end_wave(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: WaveInput,
    ) -> Result<WaveProgress, ActivityError> {
        self.rollouts
            .end_wave(input.rollout_id.into(), input.wave)
            .await
            .map_err(activity_error)
    }

    /// Records the rollout's final status.
    #[activity(name = "RolloutEnd")]
    pub async fn end(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StatusInput,
    ) -> Result<(), ActivityError> {
        self.rollouts
            .end(input.rollout_id.into(), input.status, &input.message)
            .await
            .map_err(activity_error)
    }

    /// Cancels the rollout's tasks that have not ended (abort with `cancel_running`).
    #[activity(name = "RolloutCancelActive")]
    pub async fn cancel_active(
        self: Arc<Self>,
        _ctx: ActivityContext,
        rollout_id: Uuid,
    ) -> Result<u32, ActivityError> {
        self.rollouts
            .cancel_active(rollout_id.into())
            .await
            .map_err(activity_error)
    }
}

/// How often a long step tells Temporal it is alive (its heartbeat timeout is a few of these).
const BEAT_EVERY: Duration = Duration::from_secs(1);

/// Runs `work`, heartbeating meanwhile, so Temporal notices a dead replica within the step's
/// heartbeat timeout instead of its whole deadline.
async fn beating<T>(ctx: &ActivityContext, work: impl Future<Output = T>) -> T {
    let mut work = std::pin::pin!(work);
    let mut ticker = tokio::time::interval(BEAT_EVERY);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = ticker.tick() => {
                // A lost beat only delays noticing a dead worker; the step goes on.
                let _ = ctx.record_heartbeat("verifying".to_string()).await;
            }
        }
    }
}
