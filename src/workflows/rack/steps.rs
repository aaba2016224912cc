//! What one device goes through in one stage: the manager calls of an action, with power and
//! firmware verification polled until done or out of time. Knows nothing of Temporal: the
//! activity passes in how to report liveness and whether it was cancelled.

use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::actions;
use crate::components::registry::Registry;
use crate::components::{Device, DeviceError, DevicePower, FirmwareRequest};
use crate::rules::model::Action;

/// Liveness and cancellation, as the caller (an activity) sees them.
#[async_trait]
pub trait Progress: Send + Sync {
    /// Reports progress; long polls call it so a dead worker is noticed and a cancel is heard.
    async fn beat(&self, note: &str);
    fn cancelled(&self) -> bool;
    /// Registration learnt the device's id in its manager (its `external_id`).
    fn registered(&self, _external_id: &str) {}
    /// A firmware update was started (or resumed): what follows it, kept with the progress so
    /// a later attempt of the step finds it.
    async fn update_started(&self, _handle: &str) {}
    /// The update an earlier attempt of this step started, if it left one.
    fn earlier_update(&self) -> Option<String> {
        None
    }
    /// `done` bundles of recipe `version` are pushed, followed and activated: a later attempt
    /// starts after them (and the update of the last one is no longer to be followed).
    async fn recipe_done(&self, _version: &str, _done: u32) {}
    /// How many bundles of recipe `version` an earlier attempt of this step finished.
    fn earlier_recipe(&self, _version: &str) -> u32 {
        0
    }
    /// A finished firmware update named the version the device now runs.
    fn firmware_reported(&self, _version: &str) {}
    /// The device staged firmware images that go live only with the rack's AC cycle.
    fn ac_cycle_staged(&self) {}
}

/// How a step ended, when it did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepFailure {
    Device(DeviceError),
    /// Verification ran out of time: the device never reached the wanted state.
    TimedOut(String),
    Cancelled,
}

impl StepFailure {
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Device(e) => e.is_retryable(),
            Self::TimedOut(_) => true,
            Self::Cancelled => false,
        }
    }
}

impl std::fmt::Display for StepFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Device(e) => write!(f, "{e}"),
            Self::TimedOut(what) => write!(f, "timed out: {what}"),
            Self::Cancelled => f.write_str("cancelled"),
        }
    }
}

pub(super) fn unsupported(device: &Device, capability: &str) -> StepFailure {
    StepFailure::Device(DeviceError::Unsupported(format!(
        "no {capability} manager is configured for {} components",
        device.kind
    )))
}

/// Waits one poll interval, unless cancelled meanwhile.
pub(super) async fn pause(progress: &dyn Progress, interval: Duration) -> Result<(), StepFailure> {
    let step = Duration::from_millis(200).min(interval);
    let until = Instant::now() + interval;
    while Instant::now() < until {
        if progress.cancelled() {
            return Err(StepFailure::Cancelled);
        }
        tokio::time::sleep(step.min(until - Instant::now())).await;
    }
    if progress.cancelled() {
        Err(StepFailure::Cancelled)
    } else {
        Ok(())
    }
}

/// Runs a stage's actions on `device` in order; on success returns a one-line account of each.
pub async fn run_all(
    registry: &Registry,
    actions: &[Action],
    firmware: &FirmwareRequest,
    device: &Device,
    progress: &dyn Progress,
) -> Result<String, StepFailure> {
    let mut done = Vec::with_capacity(actions.len());
    for action in actions {
        if progress.cancelled() {
            return Err(StepFailure::Cancelled);
        }
        let step = actions::Step {
            managers: registry.get(device.kind),
            firmware_request: firmware,
            device,
            progress,
        };
        done.push(step.run(action).await?);
    }
    Ok(done.join("; "))
}

/// One look at a device while polling.
pub(super) enum Poll {
    /// Done, with what to report.
    Done(String),
    /// Not there yet: the state the device is in.
    Waiting(String),
    /// The device did not answer this time (it may be restarting): only the deadline decides.
    Unanswered(String),
}

/// Polls `check` until it says done, the deadline passes, or the step is cancelled. A timeout
/// names the last state the device showed, even when the very last look went unanswered.
pub(super) async fn poll_until<F, Fut>(
    progress: &dyn Progress,
    timeout: Duration,
    interval: Duration,
    waiting_for: &str,
    mut check: F,
) -> Result<String, StepFailure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Poll, StepFailure>>,
{
    let deadline = Instant::now() + timeout;
    let mut shown: Option<String> = None;
    loop {
        let now = match check().await? {
            Poll::Done(done) => return Ok(done),
            Poll::Waiting(state) => {
                shown = Some(state.clone());
                state
            }
            Poll::Unanswered(why) => format!("unanswered ({why})"),
        };
        if Instant::now() >= deadline {
            let last = match &shown {
                Some(state) if *state != now => format!("{state}, then {now}"),
                _ => now,
            };
            return Err(StepFailure::TimedOut(format!(
                "{waiting_for}: still {last} after {}",
                crate::rules::duration::format(timeout)
            )));
        }
        progress.beat(&format!("{waiting_for}, now {now}")).await;
        pause(progress, interval).await?;
    }
}

/// The power state a device is left in once all of `actions` succeeded: the last power change
/// or power check decides; `None` when no action is about power.
pub fn power_after(actions: &[Action]) -> Option<DevicePower> {
    use crate::rules::model::PowerCode;
    actions.iter().rev().find_map(|a| match a {
        Action::VerifyPower { expect, .. } => Some(*expect),
        Action::PowerControl {
            operation: Some(PowerCode::PowerOff | PowerCode::ForcePowerOff),
        } => Some(DevicePower::Off),
        // A BMC's own restart leaves the host's power as it was.
        Action::PowerControl {
            operation: Some(PowerCode::BmcReset),
        } => None,
        Action::PowerControl { operation: Some(_) } => Some(DevicePower::On),
        _ => None,
    })
}

pub(super) fn power_name(p: DevicePower) -> &'static str {
    match p {
        DevicePower::On => "on",
        DevicePower::Off => "off",
        DevicePower::Unknown => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    struct Quiet;

    #[async_trait]
    impl Progress for Quiet {
        async fn beat(&self, _note: &str) {}
        fn cancelled(&self) -> bool {
            false
        }
    }

    #[tokio::test]
    async fn a_timeout_names_the_last_state_seen_even_when_the_last_look_went_unanswered() {
        let looks = Mutex::new(0);
        let check = || {
            let n = {
                let mut n = looks.lock().unwrap();
                *n += 1;
                *n
            };
            async move {
                Ok(match n {
                    1 => Poll::Waiting("verifying (FW_BMC_0 runs 1)".into()),
                    _ => Poll::Unanswered("connection refused".into()),
                })
            }
        };
        let quick = Duration::from_millis(20);
        let failure = poll_until(&Quiet, quick * 2, quick, "checking", check)
            .await
            .unwrap_err();
        let StepFailure::TimedOut(why) = failure else {
            panic!("{failure:?}")
        };
        assert!(
            why.starts_with(
                "checking: still verifying (FW_BMC_0 runs 1), then unanswered (connection refused)"
            ),
            "{why}"
        );
    }
}
