//! Power through `ComputerSystem.Reset` (and `Chassis.Reset` / `Manager.Reset` for cold and
//! warm resets), each `ResetType` checked against what the BMC lists as allowable.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::RedfishManager;
use crate::components::{Device, DeviceError, DevicePower, PowerControl, PowerOp, PowerStatus};

/// A reset action of one resource: where to post it and the types the BMC allows (`None`: it
/// lists none, which Redfish reads as "any").
struct ResetAction {
    target: String,
    allowed: Option<Vec<String>>,
}

fn reset_action(resource: &Value, action: &str) -> Option<ResetAction> {
    let a = resource.pointer(&format!("/Actions/#{action}"))?;
    Some(ResetAction {
        target: a.get("target")?.as_str()?.to_string(),
        allowed: a
            .get("ResetType@Redfish.AllowableValues")
            .and_then(Value::as_array)
            .map(|v| {
                v.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            }),
    })
}

impl ResetAction {
    fn allows(&self, kind: &str) -> bool {
        self.allowed
            .as_ref()
            .is_none_or(|a| a.iter().any(|t| t == kind))
    }
}

/// The system `ResetType` each operation sends.
fn system_reset_type(op: PowerOp) -> &'static str {
    match op {
        PowerOp::On => "On",
        PowerOp::ForceOn => "ForceOn",
        PowerOp::Off => "GracefulShutdown",
        PowerOp::ForceOff => "ForceOff",
        PowerOp::Restart => "GracefulRestart",
        PowerOp::ForceRestart => "ForceRestart",
        PowerOp::ColdReset => "PowerCycle",
        PowerOp::WarmReset => "GracefulRestart",
    }
}

/// `PowerState` as Flow reads it: a transition counts as where it started.
pub(super) fn power_state(system: &Value) -> DevicePower {
    match system.get("PowerState").and_then(Value::as_str) {
        Some("On" | "PoweringOff") => DevicePower::On,
        Some("Off" | "PoweringOn") => DevicePower::Off,
        _ => DevicePower::Unknown,
    }
}

impl RedfishManager {
    fn unsupported(device: &Device, what: &str, kind: &str, action: &ResetAction) -> DeviceError {
        DeviceError::Unsupported(format!(
            "{} {}: the BMC does not offer {what} ResetType {kind} (it allows {})",
            device.kind,
            device.name,
            action.allowed.as_deref().unwrap_or_default().join(", ")
        ))
    }

    async fn post_reset(
        &self,
        device: &Device,
        action: &ResetAction,
        kind: Option<&str>,
    ) -> Result<(), DeviceError> {
        let body = kind.map_or_else(|| json!({}), |k| json!({"ResetType": k}));
        self.post(device, &action.target, &body).await.map(|_| ())
    }

    /// Cold reset: the chassis' AC cycle when the chassis offers one, else the system's
    /// `PowerCycle`.
    async fn cold_reset(&self, device: &Device, system: &Value) -> Result<(), DeviceError> {
        let resources = self.resources(device).await?;
        if let Some(path) = &resources.chassis {
            let chassis = self.get(device, path).await?;
            if let Some(action) = reset_action(&chassis, "Chassis.Reset")
                && action
                    .allowed
                    .as_ref()
                    .is_some_and(|a| a.iter().any(|t| t == "PowerCycle"))
            {
                return self.post_reset(device, &action, Some("PowerCycle")).await;
            }
        }
        self.system_reset(device, system, "PowerCycle").await
    }

    /// Warm reset: the BMC (manager) restarts; host power stays as it is.
    async fn warm_reset(&self, device: &Device) -> Result<(), DeviceError> {
        let resources = self.resources(device).await?;
        let no_manager = || {
            DeviceError::Unsupported(format!(
                "{} {}: the BMC offers no Manager.Reset for a warm reset",
                device.kind, device.name
            ))
        };
        let path = resources.manager.ok_or_else(no_manager)?;
        let manager = self.get(device, &path).await?;
        let action = reset_action(&manager, "Manager.Reset").ok_or_else(no_manager)?;
        let kind = match &action.allowed {
            None => None,
            Some(allowed) => Some(
                ["GracefulRestart", "ForceRestart"]
                    .into_iter()
                    .find(|k| allowed.iter().any(|a| a == k))
                    .ok_or_else(|| {
                        Self::unsupported(device, "manager", "GracefulRestart", &action)
                    })?,
            ),
        };
        self.post_reset(device, &action, kind).await
    }

    async fn system_reset(
        &self,
        device: &Device,
        system: &Value,
        kind: &str,
    ) -> Result<(), DeviceError> {
        let action = reset_action(system, "ComputerSystem.Reset").ok_or_else(|| {
            DeviceError::Unsupported(format!(
                "{} {}: the BMC's system offers no ComputerSystem.Reset",
                device.kind, device.name
            ))
        })?;
        if !action.allows(kind) {
            return Err(Self::unsupported(device, "system", kind, &action));
        }
        self.post_reset(device, &action, Some(kind)).await
    }
}

#[async_trait]
impl PowerControl for RedfishManager {
    async fn set_power(&self, device: &Device, op: PowerOp) -> Result<(), DeviceError> {
        let resources = self.resources(device).await?;
        let system = self.get(device, &resources.system).await?;
        match op {
            PowerOp::ColdReset => self.cold_reset(device, &system).await,
            PowerOp::WarmReset => self.warm_reset(device).await,
            // A force-on on a BMC without ForceOn is a plain On: both end powered.
            PowerOp::ForceOn
                if reset_action(&system, "ComputerSystem.Reset")
                    .is_some_and(|a| !a.allows("ForceOn")) =>
            {
                self.system_reset(device, &system, "On").await
            }
            _ => {
                self.system_reset(device, &system, system_reset_type(op))
                    .await
            }
        }
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
    fn each_operation_maps_to_its_reset_type() {
        assert_eq!(system_reset_type(PowerOp::On), "On");
        assert_eq!(system_reset_type(PowerOp::Off), "GracefulShutdown");
        assert_eq!(system_reset_type(PowerOp::ForceOff), "ForceOff");
        assert_eq!(system_reset_type(PowerOp::Restart), "GracefulRestart");
        assert_eq!(system_reset_type(PowerOp::ForceRestart), "ForceRestart");
        assert_eq!(system_reset_type(PowerOp::ColdReset), "PowerCycle");
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
