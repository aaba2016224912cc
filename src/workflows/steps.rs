//! What one device goes through in one stage: the manager calls of an action, with power and
//! firmware verification polled until done or out of time. Knows nothing of Temporal: the
//! activity passes in how to report liveness and whether it was cancelled.

use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::components::registry::Registry;
use crate::components::{Device, DeviceError, DevicePower, FirmwareState};
use crate::operations::plan::Action;

/// Liveness and cancellation, as the caller (an activity) sees them.
#[async_trait]
pub trait Progress: Send + Sync {
    /// Reports progress; long polls call it so a dead worker is noticed and a cancel is heard.
    async fn beat(&self, note: &str);
    fn cancelled(&self) -> bool;
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

/// Runs `action` on `device`; on success returns a one-line account of what happened.
pub async fn run(
    registry: &Registry,
    action: &Action,
    device: &Device,
    progress: &dyn Progress,
) -> Result<String, StepFailure> {
    let managers = registry.get(device.kind);
    match action {
        Action::Power {
            op,
            verify,
            verify_timeout_secs,
            poll_interval_ms,
        } => {
            let power = managers
                .and_then(|m| m.power.clone())
                .ok_or_else(|| unsupported(device, "power control"))?;
            power
                .set_power(device, *op)
                .await
                .map_err(StepFailure::Device)?;
            let Some(wanted) = verify else {
                return Ok(format!("sent {op:?}"));
            };
            let status = managers
                .and_then(|m| m.status.clone())
                .ok_or_else(|| unsupported(device, "power status"))?;
            let deadline = Instant::now() + Duration::from_secs(*verify_timeout_secs);
            let mut last = DevicePower::Unknown;
            loop {
                match status.power_status(device).await {
                    Ok(now) if now == *wanted => {
                        return Ok(format!("sent {op:?}; power is {now:?}"));
                    }
                    Ok(now) => last = now,
                    // Errors while the device settles are expected; only the deadline decides.
                    Err(e) if e.is_retryable() => {}
                    Err(e) => return Err(StepFailure::Device(e)),
                }
                if Instant::now() >= deadline {
                    return Err(StepFailure::TimedOut(format!(
                        "power still {last:?} after {verify_timeout_secs}s, wanted {wanted:?}"
                    )));
                }
                progress
                    .beat(&format!("waiting for power {wanted:?}, now {last:?}"))
                    .await;
                pause(progress, Duration::from_millis(*poll_interval_ms)).await?;
            }
        }
        Action::Firmware {
            request,
            timeout_secs,
            poll_interval_ms,
        } => {
            let firmware = managers
                .and_then(|m| m.firmware.clone())
                .ok_or_else(|| unsupported(device, "firmware"))?;
            firmware
                .start_update(device, request)
                .await
                .map_err(StepFailure::Device)?;
            let deadline = Instant::now() + Duration::from_secs(*timeout_secs);
            loop {
                progress.beat("firmware update in progress").await;
                pause(progress, Duration::from_millis(*poll_interval_ms)).await?;
                match firmware.update_status(device).await {
                    Ok(s) if s.state == FirmwareState::Completed => {
                        return Ok(format!(
                            "firmware updated to {}",
                            s.version.unwrap_or_else(|| "the target version".into())
                        ));
                    }
                    Ok(s) if s.state == FirmwareState::Failed => {
                        return Err(StepFailure::Device(DeviceError::Rejected(format!(
                            "firmware update failed: {}",
                            s.error.unwrap_or_else(|| "no reason given".into())
                        ))));
                    }
                    Ok(_) => {}
                    Err(e) if e.is_retryable() => {}
                    Err(e) => return Err(StepFailure::Device(e)),
                }
                if Instant::now() >= deadline {
                    return Err(StepFailure::TimedOut(format!(
                        "firmware update not done after {timeout_secs}s"
                    )));
                }
            }
        }
        Action::Register => {
            let registration = managers
                .and_then(|m| m.registration.clone())
                .ok_or_else(|| unsupported(device, "registration"))?;
            registration
                .register(device)
                .await
                .map_err(StepFailure::Device)?;
            Ok(format!("registered {} with its manager", device.name))
        }
    }
}
