//! The firmware recipe actions: a tray's bundles pushed in order, each followed to its end and
//! made live the way the catalog declares (`bmc_reset`, `power_cycle`; `ac_cycle` waits for the
//! rack's AC-cycle stages), and the parts' versions verified once the images are live.

use std::time::Duration;

use super::actions::Step;
use super::steps::{Poll, StepFailure, poll_until, unsupported};
use crate::components::{
    Activation, DeviceError, DevicePower, FirmwareControl, PowerOp, RecipeView,
};

impl Step<'_> {
    /// The recipe the task's version names on this device, when the manager has recipes.
    fn recipe_of(&self, firmware: &dyn FirmwareControl) -> Option<RecipeView> {
        firmware.recipe(self.device, self.firmware_request)
    }

    /// A bare `firmware_start` installs a whole version: refused for a recipe of several
    /// bundles, which needs `firmware_recipe` or a bundle index.
    pub(super) fn whole_recipe_only(
        &self,
        firmware: &dyn FirmwareControl,
    ) -> Result<(), StepFailure> {
        match self.recipe_of(firmware) {
            Some(recipe) if recipe.bundles.len() > 1 => {
                Err(StepFailure::Device(DeviceError::Rejected(format!(
                    "recipe {} has {} bundles: run it with firmware_recipe, or name a bundle in firmware_start",
                    recipe.version,
                    recipe.bundles.len()
                ))))
            }
            _ => Ok(()),
        }
    }

    /// `firmware_activate`: the activation bundle `index` declares, or without one the
    /// strongest tray activation of the recipe.
    pub(super) async fn firmware_activate(
        &self,
        index: Option<u32>,
        timeout: Duration,
        interval: Duration,
    ) -> Result<String, StepFailure> {
        let firmware = self.firmware()?;
        let Some(recipe) = self.recipe_of(firmware.as_ref()) else {
            return Ok("no recipe: nothing to activate".into());
        };
        let activation = match index {
            Some(i) => recipe
                .bundles
                .get(i as usize)
                .map(|b| b.activate)
                .ok_or_else(|| {
                    StepFailure::Device(DeviceError::Rejected(format!(
                        "recipe {} has {} bundle(s), no bundle {i}",
                        recipe.version,
                        recipe.bundles.len()
                    )))
                })?,
            None => {
                if recipe.needs_ac_cycle() {
                    self.progress.ac_cycle_staged();
                }
                recipe
                    .bundles
                    .iter()
                    .map(|b| b.activate)
                    .filter(|a| *a != Activation::AcCycle)
                    .max()
                    .unwrap_or_default()
            }
        };
        self.activate(activation, timeout, interval).await
    }

    /// Makes staged images live: a BMC restart waited through, a tray power cycle waited back
    /// on; an AC cycle is the rack's, so it is only noted for the AC-cycle stages.
    async fn activate(
        &self,
        activation: Activation,
        timeout: Duration,
        interval: Duration,
    ) -> Result<String, StepFailure> {
        let op = match activation {
            Activation::None => return Ok("live without activation".into()),
            Activation::AcCycle => {
                self.progress.ac_cycle_staged();
                return Ok("staged until the rack's AC cycle".into());
            }
            Activation::BmcReset => PowerOp::BmcReset,
            Activation::PowerCycle => PowerOp::ColdReset,
        };
        let power = self
            .managers
            .and_then(|m| m.power.clone())
            .ok_or_else(|| unsupported(self.device, "power control"))?;
        power
            .set_power(self.device, op)
            .await
            .map_err(StepFailure::Device)?;
        let settled = match activation {
            Activation::BmcReset => self.verify_reachable(timeout, interval).await?,
            _ => {
                self.verify_power(DevicePower::On, timeout, interval)
                    .await?
            }
        };
        Ok(format!("activated by {}: {settled}", activation.as_str()))
    }

    /// `firmware_verify`: every part of the recipe runs its expected version.
    pub(super) async fn firmware_verify(
        &self,
        timeout: Duration,
        interval: Duration,
    ) -> Result<String, StepFailure> {
        let firmware = self.firmware()?;
        let Some(recipe) = self.recipe_of(firmware.as_ref()) else {
            return Ok("no recipe: nothing to verify".into());
        };
        self.verify_parts(firmware.as_ref(), &recipe, timeout, interval)
            .await
    }

    async fn verify_parts(
        &self,
        firmware: &dyn FirmwareControl,
        recipe: &RecipeView,
        timeout: Duration,
        interval: Duration,
    ) -> Result<String, StepFailure> {
        let expected = recipe.expected();
        let parts: Vec<String> = expected.keys().cloned().collect();
        let waiting = format!("verifying recipe {}", recipe.version);
        poll_until(self.progress, timeout, interval, &waiting, || async {
            let seen = match firmware.part_versions(self.device, &parts).await {
                Ok(seen) => seen,
                Err(e) if e.is_retryable() => return Ok(Poll::Unanswered(e.to_string())),
                Err(e) => return Err(StepFailure::Device(e)),
            };
            let off: Vec<String> = expected
                .iter()
                .filter(|(part, want)| {
                    seen.get(*part).and_then(|v| v.as_deref()).map(str::trim) != Some(want.trim())
                })
                .map(|(part, want)| {
                    let now = seen.get(part).cloned().flatten();
                    format!(
                        "{part} {} (expects {want})",
                        now.unwrap_or_else(|| "nothing".into())
                    )
                })
                .collect();
            Ok(if off.is_empty() {
                Poll::Done(String::new())
            } else {
                Poll::Waiting(off.join(", "))
            })
        })
        .await?;
        Ok(self.updated(Some(recipe.version.clone())))
    }

    /// `firmware_recipe`: each bundle in order pushed, followed and activated, then verified
    /// (after the rack's AC cycle when a bundle needs one).
    pub(super) async fn firmware_recipe(
        &self,
        timeout: Duration,
        interval: Duration,
    ) -> Result<String, StepFailure> {
        let firmware = self.firmware()?;
        let Some(recipe) = self.recipe_of(firmware.as_ref()) else {
            // A manager without recipes installs the version whole.
            self.firmware_start(None).await?;
            let reported = self.wait_update(timeout, interval).await?;
            return Ok(self.updated(reported));
        };
        // A retried step (its worker died) goes on after the bundles an earlier attempt
        // finished, following the push it left in flight rather than sending it again.
        let skip = self.progress.earlier_recipe(&recipe.version);
        let mut in_flight = self.progress.earlier_update();
        let mut done = Vec::new();
        if skip > 0 {
            done.push(format!("bundles before {skip} done by an earlier attempt"));
        }
        for bundle in recipe.bundles.iter().skip(skip as usize) {
            let i = bundle.index;
            let at = |e: StepFailure| in_bundle(&recipe, i, e);
            let followed = self
                .push_bundle(firmware.as_ref(), &recipe, i, in_flight.take())
                .await
                .map_err(at)?;
            self.wait_update(timeout, interval).await.map_err(at)?;
            let activated = self
                .activate(bundle.activate, timeout, interval)
                .await
                .map_err(at)?;
            self.progress.recipe_done(&recipe.version, i + 1).await;
            let how = if followed {
                " (followed an earlier attempt's push)"
            } else {
                ""
            };
            done.push(format!("bundle {i}{how} {activated}"));
        }
        if recipe.needs_ac_cycle() {
            return Ok(format!("recipe {}: {}", recipe.version, done.join("; ")));
        }
        self.verify_parts(firmware.as_ref(), &recipe, timeout, interval)
            .await
            .map(|v| format!("{v} ({})", done.join("; ")))
    }
}

impl Step<'_> {
    /// Starts bundle `i`, or follows `earlier` (the push a killed attempt left running) when
    /// the manager still knows it (then `true`); either way the update's handle goes into the
    /// heartbeats.
    async fn push_bundle(
        &self,
        firmware: &dyn FirmwareControl,
        recipe: &RecipeView,
        i: u32,
        earlier: Option<String>,
    ) -> Result<bool, StepFailure> {
        if let Some(handle) = earlier.filter(|h| firmware.resume_update(self.device, h)) {
            self.progress.update_started(&handle).await;
            let note = format!("recipe {}: following bundle {i}'s push", recipe.version);
            self.progress.beat(&note).await;
            return Ok(true);
        }
        self.progress
            .beat(&format!("recipe {}: pushing bundle {i}", recipe.version))
            .await;
        firmware
            .start_bundle(self.device, self.firmware_request, i)
            .await
            .map_err(StepFailure::Device)?;
        if let Some(handle) = firmware.update_handle(self.device) {
            self.progress.update_started(&handle).await;
        }
        Ok(false)
    }
}

/// A failure inside a recipe names the bundle it happened in.
fn in_bundle(recipe: &RecipeView, index: u32, failure: StepFailure) -> StepFailure {
    let at = format!("recipe {} bundle {index}", recipe.version);
    match failure {
        StepFailure::Device(DeviceError::Rejected(why)) => {
            StepFailure::Device(DeviceError::Rejected(format!("{at}: {why}")))
        }
        StepFailure::Device(DeviceError::Unsupported(why)) => {
            StepFailure::Device(DeviceError::Unsupported(format!("{at}: {why}")))
        }
        StepFailure::Device(DeviceError::Unreachable(why)) => {
            StepFailure::Device(DeviceError::Unreachable(format!("{at}: {why}")))
        }
        StepFailure::TimedOut(why) => StepFailure::TimedOut(format!("{at}: {why}")),
        StepFailure::Cancelled => StepFailure::Cancelled,
    }
}
