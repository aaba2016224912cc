//! What the simulator reports of its devices: one answer per batch, faults per device.

use async_trait::async_trait;

use super::{SimDevice, SimDevices, pristine};
use crate::components::{Device, DeviceError, Inventory, InventoryReport, Observation};
use crate::domain::ComponentType;

#[async_trait]
impl Inventory for SimDevices {
    async fn observe(
        &self,
        kind: ComponentType,
        devices: &[Device],
        everything: bool,
    ) -> Result<InventoryReport, DeviceError> {
        // One round trip for the batch, as a real manager would answer it.
        tokio::time::sleep(self.config.latency.min(self.config.call_timeout)).await;
        let config = &self.config;
        let state = self.lock();
        let now = std::time::Instant::now() + state.skew;
        let mut report = InventoryReport::default();
        for device in devices {
            let serial = device.serial_number.as_str();
            if config.slow_serials.contains(serial)
                && config.latency + config.slow_latency > config.call_timeout
            {
                report.failed.insert(
                    device.component_id,
                    DeviceError::Unreachable(format!(
                        "simulated device {serial}: no answer within {:?}",
                        config.call_timeout
                    )),
                );
                continue;
            }
            if config.fail_serials.contains(serial) {
                report.failed.insert(
                    device.component_id,
                    DeviceError::Rejected(format!("simulated device {serial} refuses observe")),
                );
                continue;
            }
            // The simulated world holds every expected device; one never driven is reported as
            // it would be found, without being stored, so observing a site costs no memory.
            let seen = match state.devices.get(&device.component_id) {
                Some(d) => observation(device.component_id, d, now),
                None => observation(
                    device.component_id,
                    &pristine(device, config.initial_power),
                    now,
                ),
            };
            report.seen.insert(device.component_id, seen);
        }
        if everything {
            let listed: std::collections::HashSet<_> =
                devices.iter().map(|d| d.component_id).collect();
            let mut unlisted: Vec<Observation> = state
                .devices
                .iter()
                .filter(|(id, d)| d.kind == kind && !listed.contains(*id))
                .map(|(id, d)| observation(*id, d, now))
                .collect();
            unlisted.sort_by(|a, b| a.address.cmp(&b.address));
            report.unlisted = unlisted;
        }
        Ok(report)
    }

    fn address(&self, device: &Device) -> Option<String> {
        Some(device.component_id.to_string())
    }
}

fn observation(id: uuid::Uuid, d: &SimDevice, now: std::time::Instant) -> Observation {
    Observation {
        address: id.to_string(),
        external_id: d.external_id.clone(),
        serial_number: Some(d.serial.clone()),
        model: d.model.clone(),
        firmware_version: Some(d.running_firmware(now)),
        power: Some(d.power),
        macs: Vec::new(),
    }
}
