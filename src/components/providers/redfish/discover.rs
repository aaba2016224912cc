//! Which of a BMC's systems is the tray's host, and the chassis and manager that go with it.
//!
//! GB200 compute tray BMCs list the host (`System_0`, which has the Reset action and the UUID)
//! beside the GPU baseboard (`HGX_Baseboard_0`, no Reset), and the host carries neither a serial
//! number nor NICs. So the host is chosen, in this order: the only member; the system named by
//! the manager that provides the service (`ServiceRoot.Links.ManagerProvidingService` →
//! `ManagerForServers`); the one member offering `ComputerSystem.Reset` that is not an
//! `HGX_Baseboard_*`; the member whose serial number or a NIC MAC matches the inventory; the
//! per-BMC `system = "…"` of the credentials file. The chosen system's links give the chassis
//! and manager.

use serde_json::Value;

use super::{RedfishManager, Resources, first_link, members, odata_id};
use crate::clients::redfish::normal_mac;
use crate::components::{Device, DeviceError};

/// The Ids of GPU baseboards, which look like systems but are never the tray's host.
fn is_baseboard(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|id| id.starts_with("HGX_Baseboard"))
}

fn offers_reset(system: &Value) -> bool {
    system.pointer("/Actions/#ComputerSystem.Reset").is_some()
}

impl RedfishManager {
    /// The device's resources: cached per BMC, else discovered from the service root.
    pub(super) async fn resources(&self, device: &Device) -> Result<Resources, DeviceError> {
        let ip = super::bmc_ip(device)?.to_string();
        if let Some(found) = self.resources.lock().ok().and_then(|r| r.get(&ip).cloned()) {
            return Ok(found);
        }
        let found = self.discover(device).await?;
        if let Ok(mut cache) = self.resources.lock() {
            cache.insert(ip, found.clone());
        }
        Ok(found)
    }

    fn refused(device: &Device, why: String) -> DeviceError {
        DeviceError::Rejected(format!("{} {}: {why}", device.kind, device.name))
    }

    /// Walks root → Systems and picks the host system (see the module's order).
    async fn discover(&self, device: &Device) -> Result<Resources, DeviceError> {
        let root = self.get(device, "/redfish/v1/").await?;
        let systems_path = root
            .pointer("/Systems/@odata.id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Self::refused(device, "the BMC's service root lists no Systems".into())
            })?;
        let candidates = members(&self.get(device, systems_path).await?);
        let (system_path, system) = match candidates.as_slice() {
            [] => return Err(Self::refused(device, "the BMC has no system".into())),
            [only] => (only.clone(), self.get(device, only).await?),
            many => self.host_among(device, &root, many).await?,
        };
        Ok(Resources {
            chassis: first_link(&system, "/Links/Chassis"),
            manager: first_link(&system, "/Links/ManagedBy"),
            update_service: root
                .pointer("/UpdateService/@odata.id")
                .and_then(Value::as_str)
                .map(String::from),
            system: system_path,
        })
    }

    async fn host_among(
        &self,
        device: &Device,
        root: &Value,
        candidates: &[String],
    ) -> Result<(String, Value), DeviceError> {
        if let Some(path) = self.served_system(device, root, candidates).await? {
            let system = self.get(device, &path).await?;
            return Ok((path, system));
        }
        let mut systems = Vec::with_capacity(candidates.len());
        for path in candidates {
            systems.push((path.clone(), self.get(device, path).await?));
        }
        let resettable: Vec<&(String, Value)> = systems
            .iter()
            .filter(|(p, s)| offers_reset(s) && !is_baseboard(p))
            .collect();
        if let [only] = resettable.as_slice() {
            return Ok((*only).clone());
        }
        if let Some(found) = self.matching_system(device, &systems).await {
            return Ok(found);
        }
        let bmc = Self::bmc(device)?;
        if let Some(wanted) = self.client.options(bmc).system {
            let named = |(p, s): &&(String, Value)| {
                p == &wanted || s.get("Id").and_then(Value::as_str) == Some(wanted.as_str())
            };
            return systems.iter().find(named).cloned().ok_or_else(|| {
                Self::refused(
                    device,
                    format!(
                        "the credentials file names system {wanted}, which the BMC does not list"
                    ),
                )
            });
        }
        Err(Self::refused(
            device,
            format!(
                "none of the BMC's {} systems is its host: no ManagerProvidingService names one, \
                 {} offer ComputerSystem.Reset, none has serial number {} or its MAC; name it \
                 with system = \"…\" in the credentials file",
                candidates.len(),
                resettable.len(),
                device.serial_number
            ),
        ))
    }

    /// The member the service's own manager says it manages, when it names exactly one.
    async fn served_system(
        &self,
        device: &Device,
        root: &Value,
        candidates: &[String],
    ) -> Result<Option<String>, DeviceError> {
        let Some(manager) = root
            .pointer("/Links/ManagerProvidingService")
            .and_then(odata_id)
        else {
            return Ok(None);
        };
        let manager = self.get(device, &manager).await?;
        let served: Vec<String> = manager
            .pointer("/Links/ManagerForServers")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(odata_id).collect())
            .unwrap_or_default();
        let listed: Vec<&String> = served.iter().filter(|s| candidates.contains(s)).collect();
        Ok(match listed.as_slice() {
            [only] => Some((*only).clone()),
            _ => None,
        })
    }

    async fn matching_system(
        &self,
        device: &Device,
        systems: &[(String, Value)],
    ) -> Option<(String, Value)> {
        let want_mac = device.bmc_mac.as_deref().map(normal_mac);
        for (path, system) in systems {
            let serial = system.get("SerialNumber").and_then(Value::as_str);
            if serial.is_some_and(|s| s.trim().eq_ignore_ascii_case(device.serial_number.trim())) {
                return Some((path.clone(), system.clone()));
            }
            if let Some(want) = &want_mac
                && self
                    .macs(device, system)
                    .await
                    .unwrap_or_default()
                    .contains(want)
            {
                return Some((path.clone(), system.clone()));
            }
        }
        None
    }

    /// The MACs of a resource's Ethernet interfaces (a system's or a manager's), normalised.
    pub(super) async fn macs(
        &self,
        device: &Device,
        resource: &Value,
    ) -> Result<Vec<String>, DeviceError> {
        let Some(path) = resource
            .pointer("/EthernetInterfaces/@odata.id")
            .and_then(Value::as_str)
        else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for nic in members(&self.get(device, path).await?) {
            let nic = self.get(device, &nic).await?;
            for key in ["MACAddress", "PermanentMACAddress"] {
                if let Some(mac) = nic.get(key).and_then(Value::as_str) {
                    let mac = normal_mac(mac);
                    if !mac.is_empty() && !out.contains(&mac) {
                        out.push(mac);
                    }
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_baseboards_are_never_hosts() {
        assert!(is_baseboard("/redfish/v1/Systems/HGX_Baseboard_0"));
        assert!(!is_baseboard("/redfish/v1/Systems/System_0"));
        assert!(offers_reset(
            &serde_json::json!({"Actions": {"#ComputerSystem.Reset": {"target": "t"}}})
        ));
        assert!(!offers_reset(&serde_json::json!({"Actions": {}})));
    }
}
