//! What PSM sees: one `GetPowershelves` per batch (all shelves when asked for everything),
//! matched to the expected shelves by PMC MAC.

use std::collections::HashMap;

use async_trait::async_trait;

use super::{PsmManager, pmc_mac, shelf_power};
use crate::clients::psm::pb;
use crate::components::{Device, DeviceError, Inventory, InventoryReport, Observation};
use crate::domain::ComponentType;

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// A shelf as PSM reports it; its external id is the normalised PMC MAC, as the original's sync
/// writes it.
fn observation(mac: &str, shelf: &pb::PowerShelf) -> Observation {
    let pmc = shelf.pmc.clone().unwrap_or_default();
    let chassis = shelf.chassis.clone().unwrap_or_default();
    Observation {
        address: mac.to_string(),
        external_id: Some(mac.to_string()),
        serial_number: non_empty(&chassis.serial_number).or_else(|| non_empty(&pmc.serial_number)),
        model: non_empty(&chassis.model).or_else(|| non_empty(&pmc.model)),
        firmware_version: non_empty(&pmc.firmware_version),
        power: Some(shelf_power(shelf)),
        macs: Vec::new(),
    }
}

#[async_trait]
impl Inventory for PsmManager {
    async fn observe(
        &self,
        _kind: ComponentType,
        devices: &[Device],
        everything: bool,
    ) -> Result<InventoryReport, DeviceError> {
        let mut report = InventoryReport::default();
        let mut wanted: HashMap<String, uuid::Uuid> = HashMap::new();
        for device in devices {
            match pmc_mac(device) {
                Ok(mac) => {
                    wanted.insert(mac, device.component_id);
                }
                Err(e) => {
                    report.failed.insert(device.component_id, e);
                }
            }
        }
        if wanted.is_empty() && !everything {
            return Ok(report);
        }
        // An empty list asks PSM for every shelf it manages.
        let macs = if everything {
            Vec::new()
        } else {
            let mut macs: Vec<String> = wanted.keys().cloned().collect();
            macs.sort();
            macs
        };
        let response = self.client.get_powershelves(macs).await?;
        for shelf in &response.powershelves {
            let Some(mac) = shelf
                .pmc
                .as_ref()
                .map(|p| p.mac_address.trim().to_ascii_lowercase())
                .filter(|m| !m.is_empty())
            else {
                continue;
            };
            match wanted.get(&mac) {
                Some(id) => {
                    report.seen.insert(*id, observation(&mac, shelf));
                }
                None if everything => report.unlisted.push(observation(&mac, shelf)),
                None => {}
            }
        }
        report.unlisted.sort_by(|a, b| a.address.cmp(&b.address));
        Ok(report)
    }

    fn address(&self, device: &Device) -> Option<String> {
        pmc_mac(device).ok()
    }
}
