//! The rollout workflow: one durable run per rollout. It walks the planned waves in order,
//! gating each on approval (after the canary), the pause between waves, a caller's pause and
//! the window; submits and follows the wave's racks through activities; then verifies the wave
//! and checks the canary and the failure budget. Signals steer it; the database holds the
//! rollout's progress, so a continue-as-new or a new worker picks up where it was.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use temporalio_common::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, ContinueAsNewOptions, SyncWorkflowContext, WorkflowContext, WorkflowResult,
    workflows::select,
};
use uuid::Uuid;

// The gates sit beside this file (`rollout/gates.rs`) but are this module's child: they use
// the workflow's private context and helpers.
#[path = "gates.rs"]
mod gates;

use super::activities::{RolloutActivities, StatusInput, WaveInput};
use crate::rollouts::model::{Command, RolloutStatus, Verify};
use crate::rollouts::run::{RunPlan, WaveProgress, wave_running};
use gates::{after_wave, gates};

/// Workflow input: the rollout, and where a continued run picks up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RolloutInput {
    pub rollout_id: Uuid,
    #[serde(default)]
    pub wave: u32,
    /// The wave's gates were already passed (a run continued as new mid-wave).
    #[serde(default)]
    pub wave_started: bool,
    #[serde(default)]
    pub approved: bool,
    #[serde(default)]
    pub paused: bool,
}

#[workflow]
#[derive(Default)]
pub struct RolloutWorkflow {
    paused: bool,
    approved: bool,
    /// Set by an abort: whether running tasks are cancelled too.
    abort: Option<bool>,
    /// Bumped by every command, so a wait can end on any of them.
    commands: u64,
}

type Ctx = WorkflowContext<RolloutWorkflow>;

/// A running wave is followed by long polls: each advance step waits up to this long for the
/// wave to end (or for a freed slot while racks wait to start), so the workflow hears of the
/// wave's end within ~0.1 s and the history grows by one step per wave end (or per this long).
/// A command (pause, abort) is acted on once the step returns, so within this long.
const LONG_POLL: Duration = Duration::from_secs(3);
/// Marks histories that follow a wave with [`LONG_POLL`]s: a run begun before it naps between
/// plain steps and replays so (Temporal patches: an old history must replay its own commands).
const LONG_POLL_PATCH: &str = "rollout-long-poll";
/// Marks histories whose wave's first step also records the wave as running (status,
/// message, approval) instead of a status step before it.
pub(super) const WAVE_START_PATCH: &str = "rollout-advance-starts-wave";
/// Marks histories whose last step of a wave without verification also closes it, instead of
/// an end-of-wave step after it.
const WAVE_CLOSE_PATCH: &str = "rollout-advance-closes-wave";
/// A paused or aborting wave is polled instead: often at first, less while nothing changes.
const POLL_MIN: Duration = Duration::from_secs(1);
const POLL_MAX: Duration = Duration::from_secs(10);
/// Beyond this many history events the run continues as new (the database holds the progress).
const HISTORY_LIMIT: u32 = 5_000;

/// Rollout steps are database writes and workflow starts taking well under a second, so a
/// short deadline lets a step whose replica died run again on another within ~10 s.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// Verification asks the component managers (up to 30 s each), so it has a long deadline and
/// heartbeats instead: a dead replica's verification moves on after this.
const VERIFY_HEARTBEAT: Duration = Duration::from_secs(5);
/// The longest one verification may take.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(120);

fn steps() -> ActivityOptions {
    step_options(STEP_TIMEOUT)
}

/// The verify step's options: a long deadline, with a heartbeat.
fn verify_steps() -> ActivityOptions {
    let mut options = step_options(VERIFY_TIMEOUT);
    options.heartbeat_timeout = Some(VERIFY_HEARTBEAT);
    options
}

fn step_options(timeout: Duration) -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(timeout)
        .retry_policy(
            RetryPolicy::builder()
                .initial_interval(Duration::from_secs(1))
                .maximum_interval(Duration::from_secs(30))
                .maximum_attempts(50)
                .build(),
        )
        .build()
}

fn now(ctx: &Ctx) -> DateTime<Utc> {
    ctx.workflow_time()
        .map(DateTime::<Utc>::from)
        .unwrap_or_default()
}

/// Waits until `done` holds; a cancelled workflow counts as an abort that cancels tasks.
async fn wait(ctx: &Ctx, done: impl FnMut(&RolloutWorkflow) -> bool) {
    if ctx.wait_condition(done).await.is_err() {
        ctx.state_mut(|s| {
            s.abort.get_or_insert(true);
        });
    }
}

/// Sleeps `delay`, waking early on any command.
async fn nap(ctx: &Ctx, delay: Duration) {
    let seen = ctx.state(|s| s.commands);
    select! {
        _ = ctx.timer(delay) => {},
        _ = ctx.wait_condition(move |s: &RolloutWorkflow| s.commands != seen) => {},
    }
}

async fn status(
    ctx: &Ctx,
    id: Uuid,
    status: RolloutStatus,
    wave: Option<u32>,
    message: String,
) -> WorkflowResult<()> {
    let input = StatusInput {
        rollout_id: id,
        status,
        wave,
        message,
        approved: ctx.state(|s| s.approved),
    };
    ctx.execute_activity(RolloutActivities::set_status, input, steps())
        .await?;
    Ok(())
}

async fn finish(
    ctx: &Ctx,
    id: Uuid,
    status: RolloutStatus,
    message: String,
) -> WorkflowResult<Option<RolloutStatus>> {
    let input = StatusInput {
        rollout_id: id,
        status,
        wave: None,
        message,
        approved: false,
    };
    ctx.execute_activity(RolloutActivities::end, input, steps())
        .await?;
    Ok(Some(status))
}

fn aborted(ctx: &Ctx) -> bool {
    ctx.state(|s| s.abort.is_some())
}

/// How a wave's advance steps run in this history (see the patches above).
#[derive(Clone, Copy)]
struct Following {
    long_poll: bool,
    /// No verification follows the wave, so its last step may close it.
    close: bool,
}

impl Following {
    fn of(ctx: &Ctx, plan: &RunPlan) -> Self {
        Self {
            long_poll: ctx.patched(LONG_POLL_PATCH),
            close: plan.strategy.verify == Verify::None && ctx.patched(WAVE_CLOSE_PATCH),
        }
    }
}

/// The advance step of a wave: a running one submits and long-polls, a paused or aborting
/// one only counts; unless aborting, a step that finds the wave done closes it.
fn step(ctx: &Ctx, id: Uuid, wave: u32, running: bool, how: Following) -> WaveInput {
    WaveInput {
        rollout_id: id,
        wave,
        submit: running,
        wait_ms: if running && how.long_poll {
            LONG_POLL.as_millis() as u64
        } else {
            0
        },
        approved: ctx.state(|s| s.approved),
        close: how.close && !aborted(ctx),
    }
}

/// How a wave ended: done (its last counts), or the rollout ended with it.
pub(super) enum WaveEnd {
    Done(WaveProgress),
    Ended(RolloutStatus),
}

/// Submits and follows the wave's racks until every one has ended, honouring pause and abort.
async fn run_wave(ctx: &Ctx, id: Uuid, plan: &RunPlan, wave: u32) -> WorkflowResult<WaveEnd> {
    let n = wave + 1;
    let mut delay = POLL_MIN;
    let mut last: Option<WaveProgress> = None;
    let mut cancel_sent = false;
    let mut shown_paused = false;
    let how = Following::of(ctx, plan);
    loop {
        let (paused, abort) = ctx.state(|s| (s.paused, s.abort));
        if abort == Some(true) && !cancel_sent {
            ctx.execute_activity(RolloutActivities::cancel_active, id, steps())
                .await?;
            cancel_sent = true;
        }
        let running = abort.is_none() && !paused;
        let p = ctx
            .execute_activity(
                RolloutActivities::advance,
                step(ctx, id, wave, running, how),
                steps(),
            )
            .await?;
        if abort.is_some() {
            if let Some(ended) = aborting(ctx, id, wave, &p, last.as_ref(), cancel_sent).await? {
                return Ok(WaveEnd::Ended(ended));
            }
        } else if p.done() {
            return Ok(WaveEnd::Done(p));
        } else if paused {
            if !shown_paused {
                let message =
                    format!("paused in wave {n}: running racks finish, no new rack starts");
                status(ctx, id, RolloutStatus::Paused, Some(wave), message).await?;
                shown_paused = true;
            }
            if p.wave.running == 0 {
                wait(ctx, |s| !s.paused || s.abort.is_some()).await;
                continue;
            }
        } else if shown_paused {
            let message = wave_running(wave, plan.waves);
            status(ctx, id, RolloutStatus::Running, Some(wave), message).await?;
            shown_paused = false;
        }
        continue_if_long(ctx, id, wave)?;
        if running && how.long_poll {
            // The step itself waited for a change.
            last = Some(p);
            continue;
        }
        delay = if last == Some(p) {
            (delay * 2).min(POLL_MAX)
        } else {
            POLL_MIN
        };
        last = Some(p);
        nap(ctx, delay).await;
    }
}

/// An aborted wave: ends the rollout once no rack of the wave runs any more, and meanwhile
/// says how many it waits for (when that changed and no cancel was sent).
async fn aborting(
    ctx: &Ctx,
    id: Uuid,
    wave: u32,
    p: &WaveProgress,
    last: Option<&WaveProgress>,
    cancel_sent: bool,
) -> WorkflowResult<Option<RolloutStatus>> {
    let n = wave + 1;
    if p.wave.running == 0 {
        let how = if cancel_sent {
            "running tasks cancelled"
        } else {
            "running tasks finished"
        };
        return finish(
            ctx,
            id,
            RolloutStatus::Aborted,
            format!("aborted in wave {n}; {how}"),
        )
        .await;
    }
    if !cancel_sent && last.is_none_or(|l| l.wave.running != p.wave.running) {
        let message = format!(
            "aborting: waiting for {} running rack(s) of wave {n}",
            p.wave.running
        );
        status(ctx, id, RolloutStatus::Running, Some(wave), message).await?;
    }
    Ok(None)
}

/// Continues as a new run of the same wave once the history grows past [`HISTORY_LIMIT`],
/// carrying the approval and pause.
fn continue_if_long(ctx: &Ctx, id: Uuid, wave: u32) -> WorkflowResult<()> {
    if ctx.history_length() > HISTORY_LIMIT {
        let (approved, paused) = ctx.state(|s| (s.approved, s.paused));
        let next = RolloutInput {
            rollout_id: id,
            wave,
            wave_started: true,
            approved,
            paused,
        };
        ctx.continue_as_new(next, ContinueAsNewOptions::default())?;
    }
    Ok(())
}

#[workflow_methods]
impl RolloutWorkflow {
    #[run(name = "Rollout")]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: RolloutInput,
    ) -> WorkflowResult<RolloutStatus> {
        ctx.state_mut(|s| {
            s.approved |= input.approved;
            s.paused |= input.paused;
        });
        let id = input.rollout_id;
        let plan = ctx
            .execute_activity(RolloutActivities::begin, id, steps())
            .await?;
        if plan.status.is_terminal() {
            return Ok(plan.status);
        }
        let mut started = input.wave_started;
        let mut failed = 0;
        for wave in input.wave..plan.waves {
            if !started && let Some(end) = gates(ctx, id, &plan, wave).await? {
                return Ok(end);
            }
            started = false;
            let last = match run_wave(ctx, id, &plan, wave).await? {
                WaveEnd::Ended(end) => return Ok(end),
                WaveEnd::Done(last) => last,
            };
            let (end, p) = after_wave(ctx, id, &plan, wave, last).await?;
            if let Some(end) = end {
                return Ok(end);
            }
            failed = p.overall.failed;
        }
        let message = if failed > 0 {
            format!("every wave ran; {failed} rack(s) failed, within the failure budget")
        } else {
            "every wave ran".to_string()
        };
        finish(ctx, id, RolloutStatus::Succeeded, message).await?;
        Ok(RolloutStatus::Succeeded)
    }

    /// Steers the run: pause, resume, approve or abort.
    #[signal(name = "control")]
    pub fn control(&mut self, _ctx: &mut SyncWorkflowContext<Self>, command: Command) {
        match command {
            Command::Pause => self.paused = true,
            Command::Resume => self.paused = false,
            Command::Approve => self.approved = true,
            Command::Abort { cancel_running } => {
                self.abort = Some(self.abort.unwrap_or(false) || cancel_running);
            }
        }
        self.commands += 1;
    }
}
