//! The manager calls behind each rule action, one function per action: what a step sends to
//! a device, and how it waits for the device to show the result.

use std::sync::Arc;
use std::time::Duration;

use super::steps::{Poll, Progress, StepFailure, pause, poll_until, power_name, unsupported};
use crate::components::{
    Device, DeviceError, DevicePower, FirmwareControl, FirmwareRequest, FirmwareState, ManagerSet,
    PowerStatus,
};
use crate::rules::model::{Action, PowerCode};

/// One device in one step: its managers, the firmware the task asks for, and how to report.
pub(super) struct Step<'a> {
    pub managers: Option<&'a ManagerSet>,
    pub firmware_request: &'a FirmwareRequest,
    pub device: &'a Device,
    pub progress: &'a dyn Progress,
}

impl Step<'_> {
    /// Runs one action on the device; on success a one-line account of it.
    pub async fn run(&self, action: &Action) -> Result<String, StepFailure> {
        match action {
            Action::PowerControl { operation } => self.power_control(action, *operation).await,
            Action::VerifyPower {
                expect,
                timeout,
                poll_interval,
            } => self.verify_power(*expect, *timeout, *poll_interval).await,
            Action::VerifyReachable {
                timeout,
                poll_interval,
            } => self.verify_reachable(*timeout, *poll_interval).await,
            Action::Sleep { duration } => self.sleep(*duration).await,
            Action::FirmwareStart { bundle } => self.firmware_start(*bundle).await,
            Action::FirmwareWait {
                timeout,
                poll_interval,
            } => self.firmware_wait(*timeout, *poll_interval).await,
            Action::Register => self.register().await,
            Action::FirmwareActivate {
                bundle,
                timeout,
                poll_interval,
            } => {
                self.firmware_activate(*bundle, *timeout, *poll_interval)
                    .await
            }
            Action::FirmwareVerify {
                timeout,
                poll_interval,
            } => self.firmware_verify(*timeout, *poll_interval).await,
            Action::FirmwareRecipe {
                timeout,
                poll_interval,
            } => self.firmware_recipe(*timeout, *poll_interval).await,
        }
    }

    async fn power_control(
        &self,
        action: &Action,
        operation: Option<PowerCode>,
    ) -> Result<String, StepFailure> {
        let code = operation.ok_or_else(|| {
            StepFailure::Device(DeviceError::Unsupported(
                "the rule's power_control names no operation and the task has none to pass".into(),
            ))
        })?;
        let power = self
            .managers
            .and_then(|m| m.power.clone())
            .ok_or_else(|| unsupported(self.device, "power control"))?;
        power
            .set_power(self.device, code.op())
            .await
            .map_err(StepFailure::Device)?;
        Ok(format!("sent {}", action.label()))
    }

    pub(super) async fn verify_power(
        &self,
        expect: DevicePower,
        timeout: Duration,
        interval: Duration,
    ) -> Result<String, StepFailure> {
        let status = self.status()?;
        let wanted = power_name(expect);
        let waiting = format!("waiting for power {wanted}");
        poll_until(self.progress, timeout, interval, &waiting, || async {
            match status.power_status(self.device).await {
                Ok(now) if now == expect => Ok(Poll::Done(format!("power is {wanted}"))),
                Ok(now) => Ok(Poll::Waiting(power_name(now).to_string())),
                // Errors while the device settles are expected; only the deadline decides.
                Err(e) if e.is_retryable() => Ok(Poll::Unanswered(e.to_string())),
                Err(e) => Err(StepFailure::Device(e)),
            }
        })
        .await
    }

    pub(super) async fn verify_reachable(
        &self,
        timeout: Duration,
        interval: Duration,
    ) -> Result<String, StepFailure> {
        let status = self.status()?;
        let waiting = "waiting for the device to answer";
        poll_until(self.progress, timeout, interval, waiting, || async {
            match status.power_status(self.device).await {
                Ok(now) => Ok(Poll::Done(format!("answers (power {})", power_name(now)))),
                Err(e) if e.is_retryable() => Ok(Poll::Waiting(format!("unreachable ({e})"))),
                Err(e) => Err(StepFailure::Device(e)),
            }
        })
        .await
    }

    async fn sleep(&self, duration: Duration) -> Result<String, StepFailure> {
        let text = crate::rules::duration::format(duration);
        self.progress.beat(&format!("sleeping {text}")).await;
        pause(self.progress, duration).await?;
        Ok(format!("slept {text}"))
    }

    pub(super) async fn firmware_start(&self, bundle: Option<u32>) -> Result<String, StepFailure> {
        let firmware = self.firmware()?;
        // A retried step follows the update its earlier attempt started instead of sending the
        // image again.
        if let Some(handle) = self.progress.earlier_update()
            && firmware.resume_update(self.device, &handle)
        {
            self.progress.update_started(&handle).await;
            return Ok("following the firmware update an earlier attempt started".into());
        }
        let started = match bundle {
            None => {
                self.whole_recipe_only(firmware.as_ref())?;
                firmware
                    .start_update(self.device, self.firmware_request)
                    .await
            }
            Some(i) => {
                firmware
                    .start_bundle(self.device, self.firmware_request, i)
                    .await
            }
        };
        started.map_err(StepFailure::Device)?;
        if let Some(handle) = firmware.update_handle(self.device) {
            self.progress.update_started(&handle).await;
        }
        Ok(match bundle {
            None => "firmware update started".into(),
            Some(i) => format!("firmware bundle {i} started"),
        })
    }

    async fn firmware_wait(
        &self,
        timeout: Duration,
        interval: Duration,
    ) -> Result<String, StepFailure> {
        let reported = self.wait_update(timeout, interval).await?;
        Ok(self.updated(reported))
    }

    /// Follows the update last started to its end: the version the device reports then.
    pub(super) async fn wait_update(
        &self,
        timeout: Duration,
        interval: Duration,
    ) -> Result<Option<String>, StepFailure> {
        let firmware = self.firmware()?;
        let waiting = "firmware update in progress";
        // The reported version is the poll's answer; empty when the device names none.
        let version = poll_until(self.progress, timeout, interval, waiting, || async {
            match firmware.update_status(self.device).await {
                Ok(s) if s.state == FirmwareState::Completed => {
                    Ok(Poll::Done(s.version.unwrap_or_default()))
                }
                Ok(s) if s.state == FirmwareState::Failed => {
                    Err(StepFailure::Device(DeviceError::Rejected(format!(
                        "firmware update failed: {}",
                        s.error.unwrap_or_else(|| "no reason given".into())
                    ))))
                }
                // Not done yet: the state, with what the device says it runs meanwhile (a
                // part on another version than expected is what a timeout must name).
                Ok(s) => {
                    let state = format!("{:?}", s.state).to_lowercase();
                    Ok(Poll::Waiting(match s.version {
                        Some(v) => format!("{state} ({v})"),
                        None => state,
                    }))
                }
                Err(e) if e.is_retryable() => Ok(Poll::Unanswered(e.to_string())),
                Err(e) => Err(StepFailure::Device(e)),
            }
        })
        .await?;
        Ok(Some(version).filter(|v| !v.is_empty()))
    }

    /// A finished update: the version the device reports, else the one it was told to run,
    /// reported to the progress so the component's record follows.
    pub(super) fn updated(&self, reported: Option<String>) -> String {
        let version = reported.or_else(|| self.firmware_request.target_version.clone());
        if let Some(v) = &version {
            self.progress.firmware_reported(v);
        }
        format!(
            "firmware updated to {}",
            version.unwrap_or_else(|| "the target version".into())
        )
    }

    async fn register(&self) -> Result<String, StepFailure> {
        let registration = self
            .managers
            .and_then(|m| m.registration.clone())
            .ok_or_else(|| unsupported(self.device, "registration"))?;
        let external = registration
            .register(self.device)
            .await
            .map_err(StepFailure::Device)?;
        let name = &self.device.name;
        Ok(match external {
            Some(id) => {
                self.progress.registered(&id);
                format!("registered {name} with its manager as {id}")
            }
            None => format!("registered {name} with its manager"),
        })
    }

    pub(super) fn status(&self) -> Result<Arc<dyn PowerStatus>, StepFailure> {
        self.managers
            .and_then(|m| m.status.clone())
            .ok_or_else(|| unsupported(self.device, "power status"))
    }

    pub(super) fn firmware(&self) -> Result<Arc<dyn FirmwareControl>, StepFailure> {
        self.managers
            .and_then(|m| m.firmware.clone())
            .ok_or_else(|| unsupported(self.device, "firmware"))
    }
}
