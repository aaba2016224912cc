//! What one device goes through in one stage: the manager calls of an action, with power and
//! firmware verification polled until done or out of time. Knows nothing of Temporal: the
//! activity passes in how to report liveness and whether it was cancelled.

use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::components::registry::Registry;
use crate::components::{Device, DeviceError, DevicePower, FirmwareRequest, FirmwareState};
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
    /// A finished firmware update named the version the device now runs.
    fn firmware_reported(&self, _version: &str) {}
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

fn unsupported(device: &Device, capability: &str) -> StepFailure {
    StepFailure::Device(DeviceError::Unsupported(format!(
        "no {capability} manager is configured for {} components",
        device.kind
    )))
}

/// Waits one poll interval, unless cancelled meanwhile.
async fn pause(progress: &dyn Progress, interval: Duration) -> Result<(), StepFailure> {
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
        done.push(run(registry, action, firmware, device, progress).await?);
    }
    Ok(done.join("; "))
}

/// Polls `check` until it says done, the deadline passes, or the step is cancelled.
async fn poll_until<F, Fut>(
    progress: &dyn Progress,
    timeout: Duration,
    interval: Duration,
    waiting_for: &str,
    mut check: F,
) -> Result<String, StepFailure>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Result<String, String>, StepFailure>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match check().await? {
            Ok(done) => return Ok(done),
            Err(now) => now,
        };
        if Instant::now() >= deadline {
            return Err(StepFailure::TimedOut(format!(
                "{waiting_for}: still {last} after {}",
                crate::rules::duration::format(timeout)
            )));
        }
        progress.beat(&format!("{waiting_for}, now {last}")).await;
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

fn power_name(p: DevicePower) -> &'static str {
    match p {
        DevicePower::On => "on",
        DevicePower::Off => "off",
        DevicePower::Unknown => "unknown",
    }
}

/// Runs one action on `device`.
async fn run(
    registry: &Registry,
    action: &Action,
    firmware_request: &FirmwareRequest,
    device: &Device,
    progress: &dyn Progress,
) -> Result<String, StepFailure> {
    let managers = registry.get(device.kind);
    let status = || {
        managers
            .and_then(|m| m.status.clone())
            .ok_or_else(|| unsupported(device, "power status"))
    };
    let firmware = || {
        managers
            .and_then(|m| m.firmware.clone())
            .ok_or_else(|| unsupported(device, "firmware"))
    };
    match action {
        Action::PowerControl { operation } => {
            let code = operation.ok_or_else(|| {
                StepFailure::Device(DeviceError::Unsupported(
                    "the rule's power_control names no operation and the task has none to pass"
                        .into(),
                ))
            })?;
            let power = managers
                .and_then(|m| m.power.clone())
                .ok_or_else(|| unsupported(device, "power control"))?;
            power
                .set_power(device, code.op())
                .await
                .map_err(StepFailure::Device)?;
            Ok(format!("sent {}", action.label()))
        }
        Action::VerifyPower {
            expect,
            timeout,
            poll_interval,
        } => {
            let status = status()?;
            let wanted = power_name(*expect);
            poll_until(
                progress,
                *timeout,
                *poll_interval,
                &format!("waiting for power {wanted}"),
                || async {
                    match status.power_status(device).await {
                        Ok(now) if now == *expect => Ok(Ok(format!("power is {wanted}"))),
                        Ok(now) => Ok(Err(power_name(now).to_string())),
                        // Errors while the device settles are expected; only the deadline decides.
                        Err(e) if e.is_retryable() => Ok(Err(format!("unanswered ({e})"))),
                        Err(e) => Err(StepFailure::Device(e)),
                    }
                },
            )
            .await
        }
        Action::VerifyReachable {
            timeout,
            poll_interval,
        } => {
            let status = status()?;
            poll_until(
                progress,
                *timeout,
                *poll_interval,
                "waiting for the device to answer",
                || async {
                    match status.power_status(device).await {
                        Ok(now) => Ok(Ok(format!("answers (power {})", power_name(now)))),
                        Err(e) if e.is_retryable() => Ok(Err(format!("unreachable ({e})"))),
                        Err(e) => Err(StepFailure::Device(e)),
                    }
                },
            )
            .await
        }
        Action::Sleep { duration } => {
            progress
                .beat(&format!(
                    "sleeping {}",
                    crate::rules::duration::format(*duration)
                ))
                .await;
            pause(progress, *duration).await?;
            Ok(format!(
                "slept {}",
                crate::rules::duration::format(*duration)
            ))
        }
        Action::FirmwareStart => {
            let firmware = firmware()?;
            // A retried step follows the update its earlier attempt started instead of sending
            // the image again.
            if let Some(handle) = progress.earlier_update()
                && firmware.resume_update(device, &handle)
            {
                progress.update_started(&handle).await;
                return Ok("following the firmware update an earlier attempt started".into());
            }
            firmware
                .start_update(device, firmware_request)
                .await
                .map_err(StepFailure::Device)?;
            if let Some(handle) = firmware.update_handle(device) {
                progress.update_started(&handle).await;
            }
            Ok("firmware update started".into())
        }
        Action::FirmwareWait {
            timeout,
            poll_interval,
        } => {
            let firmware = firmware()?;
            poll_until(
                progress,
                *timeout,
                *poll_interval,
                "firmware update in progress",
                || async {
                    match firmware.update_status(device).await {
                        Ok(s) if s.state == FirmwareState::Completed => {
                            // The version the device reports, else the one it was told to run.
                            let version = s
                                .version
                                .or_else(|| firmware_request.target_version.clone());
                            if let Some(v) = &version {
                                progress.firmware_reported(v);
                            }
                            Ok(Ok(format!(
                                "firmware updated to {}",
                                version.unwrap_or_else(|| "the target version".into())
                            )))
                        }
                        Ok(s) if s.state == FirmwareState::Failed => {
                            Err(StepFailure::Device(DeviceError::Rejected(format!(
                                "firmware update failed: {}",
                                s.error.unwrap_or_else(|| "no reason given".into())
                            ))))
                        }
                        Ok(s) => Ok(Err(format!("{:?}", s.state).to_lowercase())),
                        Err(e) if e.is_retryable() => Ok(Err(format!("unanswered ({e})"))),
                        Err(e) => Err(StepFailure::Device(e)),
                    }
                },
            )
            .await
        }
        Action::Register => {
            let registration = managers
                .and_then(|m| m.registration.clone())
                .ok_or_else(|| unsupported(device, "registration"))?;
            let external = registration
                .register(device)
                .await
                .map_err(StepFailure::Device)?;
            match external {
                Some(id) => {
                    progress.registered(&id);
                    Ok(format!(
                        "registered {} with its manager as {id}",
                        device.name
                    ))
                }
                None => Ok(format!("registered {} with its manager", device.name)),
            }
        }
    }
}
