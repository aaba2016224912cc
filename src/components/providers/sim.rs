//! Simulated devices, in process: the `sim` provider for local runs and tests.
//!
//! State lives per component id. Faults are injected by serial number, or at a configured rate
//! decided by hashing (serial, operation, call number), so the same run fails the same way again.

mod config;
mod observe;
mod recipe;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use uuid::Uuid;

use crate::components::{
    Device, DeviceError, DevicePower, FirmwareControl, FirmwareRequest, FirmwareState,
    FirmwareStatus, PowerControl, PowerOp, PowerStatus, RecipeView, Registration,
};
use crate::domain::ComponentType;

pub use config::SimConfig;

/// One answered call, in the order the simulator answered them.
#[derive(Debug, Clone, PartialEq)]
pub struct SimEvent {
    pub component_id: Uuid,
    pub serial: String,
    pub kind: ComponentType,
    /// `power_on`, `power_off`, `force_power_on`, ..., `power_status`, `firmware_start`,
    /// `firmware_status`, `register`.
    pub op: &'static str,
    /// When the call arrived and when it was answered, on the simulator's clock.
    pub started: Instant,
    pub at: Instant,
    pub outcome: Result<(), DeviceError>,
}

#[derive(Debug)]
struct Update {
    target: String,
    completes_at: Instant,
    fails: bool,
    /// A recipe bundle: its images are staged on completion, not installed whole.
    bundle: Option<recipe::Staged>,
}

#[derive(Debug)]
struct SimDevice {
    kind: ComponentType,
    serial: String,
    model: Option<String>,
    power: DevicePower,
    firmware: String,
    update: Option<Update>,
    /// Part (FirmwareInventory member) → the version it runs.
    parts: std::collections::BTreeMap<String, String>,
    /// Bundles pushed and waiting for their activation.
    staged: Vec<recipe::Staged>,
    rack: Option<Uuid>,
    registered: bool,
    external_id: Option<String>,
    calls: u64,
}

#[derive(Debug, Default)]
struct State {
    devices: HashMap<Uuid, SimDevice>,
    events: Vec<SimEvent>,
    // Added to the real clock by `advance`, so tests can finish updates without waiting.
    skew: Duration,
}

/// The simulated devices, shared (through `Arc`) by every manager set that uses `sim`.
#[derive(Debug)]
pub struct SimDevices {
    config: SimConfig,
    state: Mutex<State>,
}

impl SimDevices {
    /// An empty simulator; devices appear on their first call.
    pub fn new(config: SimConfig) -> Self {
        Self {
            config,
            state: Mutex::default(),
        }
    }

    /// The behaviour this simulator was built with.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not hide the log from the others.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The simulator's clock: real time plus every [`advance`](Self::advance).
    pub fn now(&self) -> Instant {
        Instant::now() + self.lock().skew
    }

    /// Moves the simulator's clock forward (firmware updates complete sooner); calls still wait
    /// their real latency.
    pub fn advance(&self, by: Duration) {
        self.lock().skew += by;
    }

    /// Every call answered so far, oldest first.
    pub fn events(&self) -> Vec<SimEvent> {
        self.lock().events.clone()
    }

    /// Forgets the event log (device state stays).
    pub fn clear_events(&self) {
        self.lock().events.clear();
    }

    /// Current power of a device, `None` if it was never called.
    pub fn power_of(&self, component_id: Uuid) -> Option<DevicePower> {
        self.lock().devices.get(&component_id).map(|d| d.power)
    }

    /// Firmware version a device runs, `None` if it was never called. An update whose time has
    /// come counts as installed even before anyone asked for its status.
    pub fn firmware_of(&self, component_id: Uuid) -> Option<String> {
        let state = self.lock();
        let now = Instant::now() + state.skew;
        Some(state.devices.get(&component_id)?.running_firmware(now))
    }

    /// Sets the firmware a device runs, as test set-up (no event is logged).
    pub fn seed_firmware(&self, device: &Device, version: &str) {
        let mut state = self.lock();
        let initial = self.config.initial_power;
        device_entry(&mut state, device, initial).firmware = version.to_string();
    }

    /// Whether the device was registered.
    pub fn is_registered(&self, component_id: Uuid) -> bool {
        self.lock()
            .devices
            .get(&component_id)
            .is_some_and(|d| d.registered)
    }

    /// The id registration gave the device (`sim-<serial>`).
    pub fn external_id_of(&self, component_id: Uuid) -> Option<String> {
        self.lock()
            .devices
            .get(&component_id)
            .and_then(|d| d.external_id.clone())
    }

    /// Sets a device's power directly, as test set-up (no event is logged).
    pub fn seed_power(&self, device: &Device, power: DevicePower) {
        let mut state = self.lock();
        let initial = self.config.initial_power;
        device_entry(&mut state, device, initial).power = power;
    }

    /// Waits the device's latency, applies the fault rules, then `effect`, and logs the call.
    async fn call<T>(
        &self,
        device: &Device,
        op: &'static str,
        effect: impl FnOnce(&mut SimDevice, &SimConfig, Instant) -> Result<T, DeviceError>,
    ) -> Result<T, DeviceError> {
        let started = self.now();
        let serial = device.serial_number.as_str();
        let mut delay = self.config.latency;
        if self.config.slow_serials.contains(serial) {
            delay += self.config.slow_latency;
        }
        let timed_out = delay > self.config.call_timeout;
        tokio::time::sleep(delay.min(self.config.call_timeout)).await;

        let mut state = self.lock();
        let now = Instant::now() + state.skew;
        let entry = device_entry(&mut state, device, self.config.initial_power);
        entry.calls += 1;
        let call = entry.calls;
        let result = if timed_out {
            Err(DeviceError::Unreachable(format!(
                "simulated device {serial}: no answer within {:?}",
                self.config.call_timeout
            )))
        } else if self.config.fail_serials.contains(serial) {
            Err(DeviceError::Rejected(format!(
                "simulated device {serial} refuses {op}"
            )))
        } else if config::dropped(self.config.failure_rate, serial, op, call) {
            Err(DeviceError::Unreachable(format!(
                "simulated device {serial} dropped {op} (call {call})"
            )))
        } else {
            effect(entry, &self.config, now)
        };
        state.events.push(SimEvent {
            component_id: device.component_id,
            serial: serial.to_string(),
            kind: device.kind,
            op,
            started,
            at: now,
            outcome: result.as_ref().map(|_| ()).map_err(Clone::clone),
        });
        result
    }
}

impl SimDevice {
    /// The version installed now: an update whose time has come counts even before anyone
    /// asked for its status.
    fn running_firmware(&self, now: Instant) -> String {
        match &self.update {
            Some(u) if u.bundle.is_none() && !u.fails && now >= u.completes_at => u.target.clone(),
            _ => self.firmware.clone(),
        }
    }
}

/// A device as the simulated world has it before anything drove it.
fn pristine(device: &Device, power: DevicePower) -> SimDevice {
    SimDevice {
        kind: device.kind,
        serial: device.serial_number.clone(),
        model: device.model.clone(),
        power,
        firmware: device
            .firmware_version
            .clone()
            .unwrap_or_else(|| "1.0.0".into()),
        update: None,
        parts: Default::default(),
        staged: Vec::new(),
        rack: device.rack_id,
        registered: false,
        external_id: None,
        calls: 0,
    }
}

fn device_entry<'a>(
    state: &'a mut State,
    device: &Device,
    power: DevicePower,
) -> &'a mut SimDevice {
    state
        .devices
        .entry(device.component_id)
        .or_insert_with(|| pristine(device, power))
}

fn power_op_name(op: PowerOp) -> &'static str {
    match op {
        PowerOp::On => "power_on",
        PowerOp::ForceOn => "force_power_on",
        PowerOp::Off => "power_off",
        PowerOp::ForceOff => "force_power_off",
        PowerOp::Restart => "restart",
        PowerOp::ForceRestart => "force_restart",
        PowerOp::WarmReset => "warm_reset",
        PowerOp::ColdReset => "cold_reset",
        PowerOp::BmcReset => "bmc_reset",
    }
}

#[async_trait]
impl PowerControl for SimDevices {
    async fn set_power(&self, device: &Device, op: PowerOp) -> Result<(), DeviceError> {
        let result = self
            .call(device, power_op_name(op), |d, _, _| {
                recipe::on_power(d, op);
                // A BMC's own restart leaves the host's power as it was.
                if op != PowerOp::BmcReset {
                    d.power = op.settles_to();
                }
                Ok(())
            })
            .await;
        if result.is_ok() && device.kind == ComponentType::PowerShelf {
            self.shelf_power(device, op);
        }
        result
    }
}

#[async_trait]
impl PowerStatus for SimDevices {
    async fn power_status(&self, device: &Device) -> Result<DevicePower, DeviceError> {
        self.call(device, "power_status", |d, _, _| Ok(d.power))
            .await
    }
}

#[async_trait]
impl FirmwareControl for SimDevices {
    async fn start_update(
        &self,
        device: &Device,
        request: &FirmwareRequest,
    ) -> Result<(), DeviceError> {
        self.call(device, "firmware_start", |d, config, now| {
            let target = request
                .target_version
                .clone()
                .unwrap_or_else(|| config.desired_firmware.clone());
            if let Some(update) = d.update.as_ref().filter(|u| now < u.completes_at) {
                // A retried start for the same version is the same request, not a conflict.
                return if update.target == target {
                    Ok(())
                } else {
                    Err(DeviceError::Rejected(format!(
                        "update to {} already in progress",
                        update.target
                    )))
                };
            }
            d.update = Some(Update {
                fails: target == "fail" || config.bad_versions.contains(&target),
                target,
                completes_at: now + config.firmware_duration,
                bundle: None,
            });
            Ok(())
        })
        .await
    }

    async fn update_status(&self, device: &Device) -> Result<FirmwareStatus, DeviceError> {
        self.call(device, "firmware_status", |d, _, now| {
            let (state, error) = match &d.update {
                None => (FirmwareState::Unknown, None),
                Some(u) if now < u.completes_at => (FirmwareState::InProgress, None),
                Some(u) if u.fails => (
                    FirmwareState::Failed,
                    Some(format!("simulated failure installing {}", u.target)),
                ),
                Some(u) if u.bundle.is_some() => {
                    recipe::bundle_done(d);
                    (FirmwareState::Completed, None)
                }
                Some(u) => {
                    d.firmware = u.target.clone();
                    (FirmwareState::Completed, None)
                }
            };
            Ok(FirmwareStatus {
                state,
                version: Some(d.firmware.clone()),
                error,
            })
        })
        .await
    }

    fn recipe(&self, device: &Device, request: &FirmwareRequest) -> Option<RecipeView> {
        self.recipe_for(device, request)
    }

    async fn start_bundle(
        &self,
        device: &Device,
        request: &FirmwareRequest,
        index: u32,
    ) -> Result<(), DeviceError> {
        if self.recipe_for(device, request).is_none() && index == 0 {
            return self.start_update(device, request).await;
        }
        self.start_recipe_bundle(device, request, index).await
    }

    async fn part_versions(
        &self,
        device: &Device,
        parts: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, DeviceError> {
        self.parts_of(device, parts).await
    }
}

#[async_trait]
impl Registration for SimDevices {
    async fn register(&self, device: &Device) -> Result<Option<String>, DeviceError> {
        // The simulator reports its id through observation, as the drift sync records it.
        self.call(device, "register", |d, _, _| {
            d.registered = true;
            d.external_id = Some(format!("sim-{}", device.serial_number));
            Ok(())
        })
        .await
        .map(|()| None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_names_match_the_original_codes() {
        assert_eq!(power_op_name(PowerOp::ForceOn), "force_power_on");
        assert_eq!(power_op_name(PowerOp::ColdReset), "cold_reset");
    }
}
