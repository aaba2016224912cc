//! The gates around each wave of the rollout workflow: approval after the canary, the pause
//! between waves, a caller's pause and the window before it; verification, the canary and the
//! failure budget after it.

use std::time::Duration;

use temporalio_sdk::WorkflowResult;
use temporalio_sdk::workflows::select;
use uuid::Uuid;

use super::{
    Ctx, RolloutWorkflow, WAVE_START_PATCH, aborted, finish, nap, now, status, steps, verify_steps,
    wait,
};
use crate::rollouts::model::{RolloutStatus, Verify};
use crate::rollouts::plan::{WindowState, window_state};
use crate::rollouts::run::{RunPlan, WaveProgress, wave_running};
use crate::workflows::rollout::activities::{RolloutActivities, WaveInput};

/// Approval after the canary, the pause between waves, a caller's pause and the window.
pub(super) async fn gates(
    ctx: &Ctx,
    id: Uuid,
    plan: &RunPlan,
    wave: u32,
) -> WorkflowResult<Option<RolloutStatus>> {
    approval(ctx, id, plan, wave).await?;
    pause_between(ctx, id, plan, wave).await?;
    if let Some(ended) = held(ctx, id, plan, wave).await? {
        return Ok(Some(ended));
    }
    // The wave's first step records it as running, one activity fewer between waves.
    if !ctx.patched(WAVE_START_PATCH) {
        let message = wave_running(wave, plan.waves);
        status(ctx, id, RolloutStatus::Running, Some(wave), message).await?;
    }
    Ok(None)
}

/// After the canary wave, when the strategy asks for it: waits for approval (or an abort). A
/// pause at the gate shows `paused`; a resume before the approval returns to
/// `awaiting_approval`, and an approval while paused leaves the pause to [`held`].
async fn approval(ctx: &Ctx, id: Uuid, plan: &RunPlan, wave: u32) -> WorkflowResult<()> {
    if wave != 1 || !plan.canary || !plan.strategy.approval_after_canary {
        return Ok(());
    }
    loop {
        let (approved, paused) = ctx.state(|s| (s.approved, s.paused));
        if approved || aborted(ctx) {
            return Ok(());
        }
        let (now, message) = if paused {
            let message = "paused at the approval gate after the canary wave; resume to wait \
                           for approval again";
            (RolloutStatus::Paused, message)
        } else {
            let message = "the canary wave passed; waiting for approval";
            (RolloutStatus::AwaitingApproval, message)
        };
        status(ctx, id, now, Some(wave), message.to_string()).await?;
        wait(ctx, move |s| {
            s.approved || s.abort.is_some() || s.paused != paused
        })
        .await;
    }
}

/// The strategy's pause between waves (cut short by an abort).
async fn pause_between(ctx: &Ctx, id: Uuid, plan: &RunPlan, wave: u32) -> WorkflowResult<()> {
    if wave > 0 && plan.strategy.pause_between_secs > 0 && !aborted(ctx) {
        let secs = plan.strategy.pause_between_secs;
        let message = format!("pausing {secs}s before wave {n}", n = wave + 1);
        status(ctx, id, RolloutStatus::Running, Some(wave), message).await?;
        select! {
            _ = ctx.timer(Duration::from_secs(secs)) => {},
            _ = ctx.wait_condition(|s: &RolloutWorkflow| s.abort.is_some()) => {},
        }
    }
    Ok(())
}

/// Holds the wave while the rollout is paused or outside its window; the rollout's end when
/// it is aborted or the window is over.
async fn held(
    ctx: &Ctx,
    id: Uuid,
    plan: &RunPlan,
    wave: u32,
) -> WorkflowResult<Option<RolloutStatus>> {
    let n = wave + 1;
    loop {
        if aborted(ctx) {
            return finish(
                ctx,
                id,
                RolloutStatus::Aborted,
                format!("aborted before wave {n}"),
            )
            .await;
        }
        if ctx.state(|s| s.paused) {
            status(
                ctx,
                id,
                RolloutStatus::Paused,
                Some(wave),
                format!("paused before wave {n}"),
            )
            .await?;
            wait(ctx, |s| !s.paused || s.abort.is_some()).await;
            continue;
        }
        let Some(window) = plan.window else {
            return Ok(None);
        };
        let at = now(ctx);
        match window_state(&window, at) {
            WindowState::Open => return Ok(None),
            WindowState::OpensAt(opens) => {
                let message = format!(
                    "wave {n} waits for the window opening at {}",
                    opens.to_rfc3339()
                );
                status(
                    ctx,
                    id,
                    RolloutStatus::WaitingForWindow,
                    Some(wave),
                    message,
                )
                .await?;
                nap(ctx, (opens - at).to_std().unwrap_or_default()).await;
            }
            WindowState::Over => {
                let message = format!("the window ended before wave {n} could start");
                return finish(ctx, id, RolloutStatus::Failed, message).await;
            }
        }
    }
}

/// Verifies the wave, closes it (unless its `last` step did), and halts on a failed canary or
/// a spent failure budget.
pub(super) async fn after_wave(
    ctx: &Ctx,
    id: Uuid,
    plan: &RunPlan,
    wave: u32,
    last: WaveProgress,
) -> WorkflowResult<(Option<RolloutStatus>, WaveProgress)> {
    let n = wave + 1;
    let input = WaveInput {
        rollout_id: id,
        wave,
        submit: false,
        wait_ms: 0,
        approved: false,
        close: false,
    };
    if plan.strategy.verify == Verify::Validation {
        status(
            ctx,
            id,
            RolloutStatus::Running,
            Some(wave),
            format!("verifying wave {n}"),
        )
        .await?;
        ctx.execute_activity(RolloutActivities::verify, input.clone(), verify_steps())
            .await?;
    }
    let p = if last.closed {
        last
    } else {
        ctx.execute_activity(RolloutActivities::end_wave, input, steps())
            .await?
    };
    if wave == 0 && plan.canary && p.wave.failed > 0 {
        let message = format!(
            "the canary failed ({} of {} racks); later waves not started",
            p.wave.failed, p.wave.total
        );
        return Ok((finish(ctx, id, RolloutStatus::Halted, message).await?, p));
    }
    if plan
        .strategy
        .failure_budget
        .exceeded(p.overall.failed, plan.total)
    {
        let message = format!(
            "failure budget exceeded after wave {n}: {} of {} racks failed; later waves not started",
            p.overall.failed, plan.total
        );
        return Ok((finish(ctx, id, RolloutStatus::Halted, message).await?, p));
    }
    Ok((None, p))
}
