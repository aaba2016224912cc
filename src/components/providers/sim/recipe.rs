//! Firmware recipes on simulated devices: each bundle's parts are staged when its push ends
//! and go live on the activation the catalog declares for it — a BMC reset, a power cycle of
//! the tray (a cycle, or off then on), or the rack's AC cycle (every shelf of the rack off);
//! `FLOW_SIM_FAIL_BUNDLE` makes one bundle's install fail.

use std::collections::BTreeMap;

use super::{SimDevice, SimDevices, Update};
use crate::components::{Activation, Device, DeviceError, FirmwareRequest, PowerOp, RecipeView};
use crate::domain::ComponentType;

/// A bundle's images, pushed and waiting for their activation.
#[derive(Debug, Clone)]
pub(super) struct Staged {
    pub activate: Activation,
    pub parts: BTreeMap<String, String>,
    /// The recipe the bundle belongs to: the device runs it once nothing is left staged.
    pub version: String,
}

/// The push ended: the bundle's parts are live now (`none`) or staged for their activation.
pub(super) fn bundle_done(d: &mut SimDevice) {
    let Some(bundle) = d.update.take().and_then(|u| u.bundle) else {
        return;
    };
    if bundle.activate == Activation::None {
        live(d, bundle);
    } else {
        d.staged.push(bundle);
    }
}

fn live(d: &mut SimDevice, bundle: Staged) {
    d.parts.extend(bundle.parts);
    if d.staged.is_empty() {
        d.firmware = bundle.version;
    }
}

/// Makes live every staged bundle `reaches` activates.
fn activate(d: &mut SimDevice, reaches: impl Fn(Activation) -> bool) {
    let (now, later): (Vec<Staged>, Vec<Staged>) =
        d.staged.drain(..).partition(|s| reaches(s.activate));
    d.staged = later;
    for bundle in now {
        live(d, bundle);
    }
}

/// What a power operation on a tray activates: a BMC reset its BMC's images, a power cycle
/// (or power back on after off) the tray's.
pub(super) fn on_power(d: &mut SimDevice, op: PowerOp) {
    match op {
        PowerOp::BmcReset => activate(d, |a| a == Activation::BmcReset),
        PowerOp::ColdReset | PowerOp::Restart | PowerOp::ForceRestart => {
            activate(d, |a| a == Activation::PowerCycle)
        }
        PowerOp::On | PowerOp::ForceOn if d.power == crate::components::DevicePower::Off => {
            activate(d, |a| a == Activation::PowerCycle)
        }
        _ => {}
    }
}

impl SimDevices {
    /// A shelf of a rack going off cuts the AC of the rack's trays: they go off, and everything
    /// they staged is live when they come back.
    pub(super) fn shelf_power(&self, shelf: &Device, op: PowerOp) {
        if !matches!(op, PowerOp::Off | PowerOp::ForceOff) || shelf.rack_id.is_none() {
            return;
        }
        let mut state = self.lock();
        for d in state.devices.values_mut() {
            if d.rack == shelf.rack_id && d.kind != ComponentType::PowerShelf {
                activate(d, |_| true);
                d.power = crate::components::DevicePower::Off;
            }
        }
    }

    /// The recipe of the requested version, or without one of the desired version (what a
    /// bring-up installs).
    pub(super) fn recipe_for(
        &self,
        device: &Device,
        request: &FirmwareRequest,
    ) -> Option<RecipeView> {
        let version = request
            .target_version
            .as_deref()
            .unwrap_or(&self.config.desired_firmware);
        self.config
            .catalog
            .find(device.kind, device.model.as_deref(), version)
            .map(|image| image.view())
    }

    /// Starts bundle `index` of the version's recipe.
    pub(super) async fn start_recipe_bundle(
        &self,
        device: &Device,
        request: &FirmwareRequest,
        index: u32,
    ) -> Result<(), DeviceError> {
        let recipe = self.recipe_for(device, request);
        self.call(device, "firmware_start", |d, config, now| {
            let Some(recipe) = recipe else {
                return Err(DeviceError::Unsupported(format!(
                    "simulated device {}: no recipe for {:?} in FLOW_FIRMWARE_CATALOG",
                    d.serial, request.target_version
                )));
            };
            let bundle = recipe.bundles.get(index as usize).ok_or_else(|| {
                DeviceError::Rejected(format!("recipe {} has no bundle {index}", recipe.version))
            })?;
            if d.update.as_ref().is_some_and(|u| now < u.completes_at) {
                return Err(DeviceError::Rejected(format!(
                    "simulated device {}: an update is already in progress",
                    d.serial
                )));
            }
            d.update = Some(Update {
                target: recipe.version.clone(),
                completes_at: now + config.firmware_duration,
                fails: config.fail_bundle == Some(index),
                bundle: Some(Staged {
                    activate: bundle.activate,
                    parts: bundle.expect.clone(),
                    version: recipe.version.clone(),
                }),
            });
            Ok(())
        })
        .await
    }

    /// The versions the named parts run now.
    pub(super) async fn parts_of(
        &self,
        device: &Device,
        parts: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, DeviceError> {
        self.call(device, "firmware_parts", |d, _, _| {
            Ok(parts
                .iter()
                .map(|p| (p.clone(), d.parts.get(p).cloned()))
                .collect())
        })
        .await
    }
}
