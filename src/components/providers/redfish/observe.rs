//! What BMCs report: serial number, model, power state, firmware version and MACs, one BMC at a
//! time (a bounded number at once), for validation and the drift sync. A BMC that does not
//! answer makes its device unreachable, never missing.

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::Value;

use super::power::power_state;
use super::{RedfishManager, Resources};
use crate::clients::redfish::normal_mac;
use crate::components::{Device, DeviceError, Inventory, InventoryReport, Observation};
use crate::domain::ComponentType;

/// BMCs asked at once during one report (each also bounded per BMC by the client).
const CONCURRENT_BMCS: usize = 16;

fn text(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

/// Prefixes of external ids that are not a system UUID, so they can never equal one.
const CHASSIS_SERIAL: &str = "chassis-serial:";
const BMC_MAC: &str = "bmc-mac:";

impl RedfishManager {
    /// A tray's id that stays unique across a fleet: the host system's UUID; without one, the
    /// serial number of the system's chassis, else the MAC of its BMC, each prefixed. Never a
    /// bare resource Id (`System_0` is the Id of every tray of a model).
    pub(super) async fn tray_id(
        &self,
        device: &Device,
        resources: &Resources,
        system: &Value,
    ) -> Result<String, DeviceError> {
        if let Some(uuid) = text(system, "UUID") {
            return Ok(uuid);
        }
        if let Some(path) = &resources.chassis
            && let Some(serial) = text(&self.get(device, path).await?, "SerialNumber")
        {
            return Ok(format!("{CHASSIS_SERIAL}{serial}"));
        }
        if let Some(path) = &resources.manager {
            let manager = self.get(device, path).await?;
            if let Some(mac) = self.macs(device, &manager).await?.first() {
                return Ok(format!("{BMC_MAC}{mac}"));
            }
        }
        Err(DeviceError::Rejected(format!(
            "{} {}: the BMC reports no system UUID, chassis serial number or BMC MAC to \
             identify the tray by",
            device.kind, device.name
        )))
    }

    /// The firmware a tray runs, as validation compares it with the inventory's: when the
    /// catalog's entry for the inventory's version has `expect` members, that version if every
    /// member runs it, else what the first differing member runs; else the member configured
    /// for the type (`FLOW_REDFISH_FIRMWARE_MEMBER`); else the system's BIOS or the manager's
    /// firmware version. So a version no part runs is never a match.
    async fn observed_firmware(&self, device: &Device) -> Result<Option<String>, DeviceError> {
        let model = device.model.as_deref();
        if let Some(want) = &device.firmware_version
            && let Some(image) = self.catalog.find(device.kind, model, want)
            && !image.expect_all().is_empty()
        {
            for (member, version) in &image.expect_all() {
                let seen = self.member_version(device, member).await?;
                if seen.as_deref().map(str::trim) != Some(version.trim()) {
                    let seen = seen.unwrap_or_else(|| "no version".into());
                    return Ok(Some(format!("{member} {seen}")));
                }
            }
            return Ok(Some(want.clone()));
        }
        if let Some(member) = self.firmware_members.get(&device.kind) {
            return self.member_version(device, member).await;
        }
        self.whole_version(device).await
    }

    async fn observe_one(&self, device: &Device) -> Result<Observation, DeviceError> {
        let resources = self.resources(device).await?;
        let system = self.get(device, &resources.system).await?;
        let mut serial = text(&system, "SerialNumber");
        let mut model = text(&system, "Model");
        if (serial.is_none() || model.is_none())
            && let Some(path) = &resources.chassis
            && let Ok(chassis) = self.get(device, path).await
        {
            serial = serial.or_else(|| text(&chassis, "SerialNumber"));
            model = model.or_else(|| text(&chassis, "Model"));
        }
        let mut macs = Vec::new();
        if let Some(path) = &resources.manager
            && let Ok(manager) = self.get(device, path).await
        {
            macs.extend(self.macs(device, &manager).await.unwrap_or_default());
        }
        for mac in self.macs(device, &system).await.unwrap_or_default() {
            if !macs.contains(&mac) {
                macs.push(mac);
            }
        }
        let external_id = self.tray_id(device, &resources, &system).await.ok();
        Ok(Observation {
            address: super::bmc_ip(device)?.to_string(),
            external_id,
            serial_number: serial,
            model,
            firmware_version: self.observed_firmware(device).await?,
            power: Some(power_state(&system)),
            macs: macs.into_iter().map(|m| normal_mac(&m)).collect(),
        })
    }
}

#[async_trait]
impl Inventory for RedfishManager {
    /// Each device's own BMC is asked; BMCs cannot list devices Flow does not know, so
    /// `everything` adds nothing.
    async fn observe(
        &self,
        _kind: ComponentType,
        devices: &[Device],
        _everything: bool,
    ) -> Result<InventoryReport, DeviceError> {
        type One<'a> = std::pin::Pin<
            Box<dyn Future<Output = (uuid::Uuid, Result<Observation, DeviceError>)> + Send + 'a>,
        >;
        // Boxed so the stream's item type names no closure lifetime (async-trait needs Send).
        let calls: Vec<One<'_>> = devices
            .iter()
            .map(|d| -> One<'_> {
                Box::pin(async move { (d.component_id, self.observe_one(d).await) })
            })
            .collect();
        let results: Vec<(uuid::Uuid, Result<Observation, DeviceError>)> =
            futures::stream::iter(calls)
                .buffer_unordered(CONCURRENT_BMCS)
                .collect()
                .await;
        let mut report = InventoryReport::default();
        for (id, result) in results {
            match result {
                Ok(seen) => {
                    report.seen.insert(id, seen);
                }
                // A BMC that refused (credentials, no such system) is not "missing" either.
                Err(e) => {
                    report.failed.insert(id, e);
                }
            }
        }
        Ok(report)
    }

    fn address(&self, device: &Device) -> Option<String> {
        super::bmc_ip(device).ok().map(String::from)
    }
}
