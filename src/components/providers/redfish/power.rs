//! Power through the host system's `ComputerSystem.Reset`, `Chassis.Reset` for a cold reset
//! and `Manager.Reset` for a BMC reset, each sending only a `ResetType` the BMC lists.
//!
//! As the original maps them: `power_on` → `On` (`ForceOn` only when `On` is not listed),
//! `power_off` → `GracefulShutdown` (forced: `ForceOff`), `restart` → `GracefulRestart`
//! (forced: `ForceRestart`), warm reset → the host's `GracefulRestart`, cold reset →
//! `PowerCycle` of the chassis where it offers one, else of the system, and BMC reset →
//! `Manager.Reset`, done once the BMC has gone away and answers again.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::RedfishManager;
use super::actions::Action;
use crate::components::{Device, DeviceError, DevicePower, PowerControl, PowerOp, PowerStatus};

/// How long a BMC may take to go down after accepting `Manager.Reset`, and to come back.
const BMC_GONE_WITHIN: Duration = Duration::from_secs(120);
const BMC_BACK_WITHIN: Duration = Duration::from_secs(600);
const BMC_POLL: Duration = Duration::from_secs(1);

/// The system `ResetType`s an operation may send, the preferred first.
pub(super) fn system_reset_types(op: PowerOp) -> &'static [&'static str] {
    match op {
        PowerOp::On => &["On", "ForceOn"],
        PowerOp::ForceOn => &["ForceOn", "On"],
        PowerOp::Off => &["GracefulShutdown"],
        PowerOp::ForceOff => &["ForceOff"],
        PowerOp::Restart | PowerOp::WarmReset => &["GracefulRestart"],
        PowerOp::ForceRestart => &["ForceRestart"],
        PowerOp::ColdReset => &["PowerCycle"],
        PowerOp::BmcReset => &[],
    }
}

/// The manager `ResetType`s a BMC reset may send.
const MANAGER_RESET_TYPES: &[&str] = &["GracefulRestart", "ForceRestart"];

/// `PowerState` as Flow reads it: a transition counts as where it started.
pub(super) fn power_state(system: &Value) -> DevicePower {
    match system.get("PowerState").and_then(Value::as_str) {
        Some("On" | "PoweringOff") => DevicePower::On,
        Some("Off" | "PoweringOn") => DevicePower::Off,
        _ => DevicePower::Unknown,
    }
}

/// What one power operation will post, decided before anything is sent.
pub(super) struct Plan {
    pub action: Action,
    pub kind: &'static str,
}

impl RedfishManager {
    /// Where `op` would be posted and with which type; `unsupported` when the BMC offers no
    /// fitting action or type (nothing is sent then).
    pub(super) async fn plan(&self, device: &Device, op: PowerOp) -> Result<Plan, DeviceError> {
        let resources = self.resources(device).await?;
        if op == PowerOp::BmcReset {
            let path = resources
                .manager
                .clone()
                .ok_or_else(|| no_action(device, "Manager.Reset"))?;
            let manager = self.get(device, &path).await?;
            return self
                .planned(device, &manager, "Manager.Reset", MANAGER_RESET_TYPES)
                .await;
        }
        if op == PowerOp::ColdReset
            && let Some(path) = &resources.chassis
        {
            let chassis = self.get(device, path).await?;
            match self
                .planned(device, &chassis, "Chassis.Reset", &["PowerCycle"])
                .await
            {
                Err(DeviceError::Unsupported(_)) => {}
                done => return done,
            }
        }
        let system = self.get(device, &resources.system).await?;
        self.planned(
            device,
            &system,
            "ComputerSystem.Reset",
            system_reset_types(op),
        )
        .await
    }

    async fn planned(
        &self,
        device: &Device,
        resource: &Value,
        name: &str,
        wanted: &[&'static str],
    ) -> Result<Plan, DeviceError> {
        let action = self
            .action(device, resource, name)
            .await?
            .ok_or_else(|| no_action(device, name))?;
        let kind = action
            .first_allowed(wanted)
            .ok_or_else(|| Self::not_offered(device, name, wanted, &action))?;
        Ok(Plan { action, kind })
    }

    /// After `Manager.Reset` was accepted: waits for the BMC to stop answering, then to answer
    /// again, each within a bound.
    async fn wait_for_bmc_restart(&self, device: &Device) -> Result<(), DeviceError> {
        let bmc = Self::bmc(device)?;
        let ask = || self.client.get(bmc, "/redfish/v1/");
        let started = tokio::time::Instant::now();
        loop {
            match ask().await {
                Err(e) if e.is_silence() => break,
                _ if started.elapsed() > BMC_GONE_WITHIN => {
                    return Err(DeviceError::Rejected(format!(
                        "{} {}: the BMC accepted Manager.Reset but kept answering for {:?}",
                        device.kind, device.name, BMC_GONE_WITHIN
                    )));
                }
                _ => tokio::time::sleep(BMC_POLL).await,
            }
        }
        let gone = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(BMC_POLL).await;
            match ask().await {
                Ok(_) => return Ok(()),
                Err(e) if gone.elapsed() > BMC_BACK_WITHIN => {
                    return Err(super::about(device, e));
                }
                Err(_) => {}
            }
        }
    }
}

fn no_action(device: &Device, name: &str) -> DeviceError {
    DeviceError::Unsupported(format!(
        "{} {}: the BMC offers no {name}",
        device.kind, device.name
    ))
}

#[async_trait]
impl PowerControl for RedfishManager {
    async fn set_power(&self, device: &Device, op: PowerOp) -> Result<(), DeviceError> {
        let plan = self.plan(device, op).await?;
        self.post(
            device,
            &plan.action.target,
            &json!({"ResetType": plan.kind}),
        )
        .await?;
        if op == PowerOp::BmcReset {
            self.wait_for_bmc_restart(device).await?;
        }
        Ok(())
    }
}

#[async_trait]
impl PowerStatus for RedfishManager {
    async fn power_status(&self, device: &Device) -> Result<DevicePower, DeviceError> {
        let resources = self.resources(device).await?;
        let system = self.get(device, &resources.system).await?;
        Ok(power_state(&system))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_maps_to_its_reset_types() {
        assert_eq!(system_reset_types(PowerOp::On), ["On", "ForceOn"]);
        assert_eq!(system_reset_types(PowerOp::Off), ["GracefulShutdown"]);
        assert_eq!(system_reset_types(PowerOp::ForceOff), ["ForceOff"]);
        assert_eq!(system_reset_types(PowerOp::Restart), ["GracefulRestart"]);
        assert_eq!(system_reset_types(PowerOp::WarmReset), ["GracefulRestart"]);
        assert_eq!(system_reset_types(PowerOp::ForceRestart), ["ForceRestart"]);
        assert_eq!(system_reset_types(PowerOp::ColdReset), ["PowerCycle"]);
    }

    #[test]
    fn power_state_reads_transitions_as_where_they_started() {
        assert_eq!(power_state(&json!({"PowerState": "On"})), DevicePower::On);
        assert_eq!(
            power_state(&json!({"PowerState": "PoweringOn"})),
            DevicePower::Off
        );
        assert_eq!(power_state(&json!({})), DevicePower::Unknown);
        assert_eq!(power_state(&json!({"PowerState": 7})), DevicePower::Unknown);
    }
}
