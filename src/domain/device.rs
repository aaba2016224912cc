//! Devices as managers address them, and the power and firmware words every layer uses of them:
//! the inventory resolves targets into [`Device`]s, rules name [`PowerOp`]s and [`DevicePower`],
//! operations carry a [`FirmwareRequest`], and the component managers act on all four.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::kinds::ComponentType;

/// A device as a manager addresses it: the inventory facts a provider needs to find and drive it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub component_id: Uuid,
    pub kind: ComponentType,
    pub name: String,
    pub manufacturer: String,
    pub model: Option<String>,
    pub serial_number: String,
    /// The device's id in its manager (NICo machine id, PMC MAC, ...), when known.
    pub external_id: Option<String>,
    /// MAC of the host BMC; for a power shelf this is its PMC, the address PSM knows it by.
    pub bmc_mac: Option<String>,
    pub bmc_ip: Option<String>,
    /// Expected firmware version from the inventory.
    pub firmware_version: Option<String>,
    pub rack_id: Option<Uuid>,
    pub rack_name: Option<String>,
}

/// Power operations, named as operators and the original API name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerOp {
    On,
    ForceOn,
    Off,
    ForceOff,
    Restart,
    ForceRestart,
    WarmReset,
    ColdReset,
    /// Restarts the tray's BMC itself (`Manager.Reset`); host power is untouched.
    BmcReset,
}

impl PowerOp {
    /// The power state a device settles in after this operation.
    pub fn settles_to(self) -> DevicePower {
        match self {
            Self::Off | Self::ForceOff => DevicePower::Off,
            _ => DevicePower::On,
        }
    }
}

/// A device's power as its manager reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DevicePower {
    On,
    Off,
    Unknown,
}

/// What to install in a firmware update.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmwareRequest {
    /// Version to install; `None` lets the manager pick the site's desired version.
    pub target_version: Option<String>,
    /// Lower-case firmware parts (`pmc`, `psu`, `bmc`, `cpld`, `bios`, `nvos`); empty = the
    /// manager's default set.
    pub sub_targets: Vec<String>,
}
