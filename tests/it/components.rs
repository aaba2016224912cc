//! Component managers against their backends, without a database: the `psm` provider against
//! the in-test PSM server, and the `sim` provider's state, faults and event log.

mod psm;
mod sim;

use flow::components::Device;
use flow::domain::ComponentType;
use uuid::Uuid;

/// A power shelf's PMC MAC, as the inventory stores it.
pub const MAC: &str = "0c:42:a1:00:00:01";

/// A device as the operation layer would hand it to a manager.
pub fn device(kind: ComponentType, serial: &str, mac: Option<&str>) -> Device {
    Device {
        component_id: Uuid::new_v4(),
        kind,
        name: format!("{kind}-{serial}"),
        manufacturer: "LITEON".into(),
        model: None,
        serial_number: serial.into(),
        external_id: None,
        bmc_mac: mac.map(String::from),
        bmc_ip: Some("10.0.0.7".into()),
        firmware_version: None,
        rack_id: None,
        rack_name: None,
    }
}

pub fn shelf() -> Device {
    device(ComponentType::PowerShelf, "PS-1", Some(MAC))
}
