//! Inventory domain types: racks, components, BMCs and the value objects they are made of.

use std::fmt;
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Most live components one rack may hold: a GB200 NVL72 rack has about 40, the largest racks a
/// few hundred; thousands are a mistake (or an attack) that would hold a transaction long.
pub const MAX_COMPONENTS_PER_RACK: usize = 1024;
/// Most BMCs one component may list (a tray has a host BMC and a DPU BMC or two).
pub const MAX_BMCS_PER_COMPONENT: usize = 8;
/// What kind of device a component is. Only compute, NVSwitch and power shelves are driven by
/// operations; the others are kept for inventory.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ComponentType {
    Compute,
    NvSwitch,
    PowerShelf,
    TorSwitch,
    Ums,
    Cdu,
}

impl ComponentType {
    pub const ALL: [ComponentType; 6] = [
        Self::Compute,
        Self::NvSwitch,
        Self::PowerShelf,
        Self::TorSwitch,
        Self::Ums,
        Self::Cdu,
    ];

    /// The canonical lower-case name used in JSON and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Compute => "compute",
            Self::NvSwitch => "nvswitch",
            Self::PowerShelf => "powershelf",
            Self::TorSwitch => "torswitch",
            Self::Ums => "ums",
            Self::Cdu => "cdu",
        }
    }

    /// Parses any spelling operators use: canonical names in any case, the original proto names
    /// (`COMPONENT_TYPE_COMPUTE`), and the hyphenated or gateway aliases (`power-shelf`, `switch`).
    pub fn parse(input: &str) -> Option<Self> {
        let lower = input.trim().to_ascii_lowercase();
        let key = lower
            .strip_prefix("component_type_")
            .unwrap_or(&lower)
            .replace(['-', '_'], "");
        match key.as_str() {
            "compute" => Some(Self::Compute),
            "nvswitch" | "nvlswitch" | "switch" => Some(Self::NvSwitch),
            "powershelf" => Some(Self::PowerShelf),
            "torswitch" => Some(Self::TorSwitch),
            "ums" => Some(Self::Ums),
            "cdu" => Some(Self::Cdu),
            _ => None,
        }
    }
}

impl fmt::Display for ComponentType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which controller a BMC is: the tray's host BMC (for a power shelf, its PMC) or a DPU's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BmcType {
    Host,
    Dpu,
}

impl BmcType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Dpu => "dpu",
        }
    }

    /// Accepts `host`/`dpu` in any case and the proto names `BMC_TYPE_HOST`/`BMC_TYPE_DPU`.
    pub fn parse(input: &str) -> Option<Self> {
        let lower = input.trim().to_ascii_lowercase();
        match lower.strip_prefix("bmc_type_").unwrap_or(&lower) {
            "host" => Some(Self::Host),
            "dpu" => Some(Self::Dpu),
            _ => None,
        }
    }
}

/// Last observed power state of a component (written by device sync, never by clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PowerState {
    Unknown,
    Off,
    On,
    Disabled,
}

impl PowerState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Off => "off",
            Self::On => "on",
            Self::Disabled => "disabled",
        }
    }

    pub fn parse(input: &str) -> Option<Self> {
        match input {
            "unknown" => Some(Self::Unknown),
            "off" => Some(Self::Off),
            "on" => Some(Self::On),
            "disabled" => Some(Self::Disabled),
            _ => None,
        }
    }
}

/// A MAC address in canonical lower-case colon form (`aa:bb:cc:dd:ee:ff`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddress(String);

impl MacAddress {
    /// Accepts colon, hyphen, Cisco dotted (`aabb.ccdd.eeff`) and bare 12-digit forms.
    pub fn parse(input: &str) -> Option<Self> {
        let trimmed = input.trim();
        let digits: String = match trimmed.len() {
            17 => {
                let sep = trimmed.as_bytes()[2];
                if sep != b':' && sep != b'-' {
                    return None;
                }
                let groups: Vec<&str> = trimmed.split(sep as char).collect();
                if groups.len() != 6 || groups.iter().any(|g| g.len() != 2) {
                    return None;
                }
                groups.concat()
            }
            14 => {
                let groups: Vec<&str> = trimmed.split('.').collect();
                if groups.len() != 3 || groups.iter().any(|g| g.len() != 4) {
                    return None;
                }
                groups.concat()
            }
            12 => trimmed.to_string(),
            _ => return None,
        };
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let lower = digits.to_ascii_lowercase();
        let pairs: Vec<&str> = (0..6).map(|i| &lower[i * 2..i * 2 + 2]).collect();
        Some(Self(pairs.join(":")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MacAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a rack stands. Every part is optional; empty strings are treated as absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    pub region: Option<String>,
    pub datacenter: Option<String>,
    pub room: Option<String>,
    pub position: Option<String>,
}

/// Where a component sits in its rack: U slot, index among trays of its type, host in the tray.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Position {
    pub slot_id: Option<i64>,
    pub tray_idx: Option<i64>,
    pub host_id: Option<i64>,
}

/// A BMC as given by a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBmc {
    pub kind: BmcType,
    pub mac_address: MacAddress,
    pub ip_address: Option<IpAddr>,
}

/// A component as given by a client (inside a rack, or on its own with `rack_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewComponent {
    pub rack_id: Option<Uuid>,
    pub kind: ComponentType,
    pub name: String,
    pub manufacturer: String,
    pub model: Option<String>,
    pub serial_number: String,
    pub firmware_version: Option<String>,
    pub description: Option<String>,
    pub position: Position,
    pub bmcs: Vec<NewBmc>,
}

/// An expected rack with everything it should contain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRack {
    pub name: String,
    pub manufacturer: String,
    pub serial_number: String,
    pub model: Option<String>,
    pub description: Option<String>,
    pub location: Location,
    pub components: Vec<NewComponent>,
}

/// A stored BMC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bmc {
    pub kind: BmcType,
    pub mac_address: String,
    pub ip_address: Option<String>,
}

/// A stored component with its BMCs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    pub id: Uuid,
    pub rack_id: Option<Uuid>,
    pub kind: ComponentType,
    pub name: String,
    pub manufacturer: String,
    pub model: Option<String>,
    pub serial_number: String,
    pub firmware_version: Option<String>,
    pub description: Option<String>,
    pub position: Position,
    pub external_id: Option<String>,
    pub power_state: Option<PowerState>,
    /// Firmware the device's manager last reported (the expected version is `firmware_version`).
    pub observed_firmware_version: Option<String>,
    /// When inventory sync last saw the device in its manager.
    pub last_seen_at: Option<DateTime<Utc>>,
    pub bmcs: Vec<Bmc>,
    pub revision: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deleted_at: Option<DateTime<Utc>>,
}

/// A stored rack; `components` is filled only when asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rack {
    pub id: Uuid,
    pub name: String,
    pub manufacturer: String,
    pub serial_number: String,
    pub model: Option<String>,
    pub description: Option<String>,
    pub location: Location,
    pub nvl_domain_id: Option<Uuid>,
    pub revision: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub components: Option<Vec<Component>>,
}

/// A field update: `None` keeps the stored value, `Some(None)` clears it, `Some(Some(v))` sets it.
pub type Update<T> = Option<Option<T>>;

/// Merge-style changes to a rack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RackPatch {
    pub name: Option<String>,
    pub model: Update<String>,
    pub description: Update<String>,
    pub region: Update<String>,
    pub datacenter: Update<String>,
    pub room: Update<String>,
    pub position: Update<String>,
    /// Components to add or update, matched to the rack's components by manufacturer + serial.
    pub components: Vec<NewComponent>,
}

/// Merge-style changes to a component.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComponentPatch {
    pub name: Option<String>,
    pub model: Update<String>,
    pub firmware_version: Update<String>,
    pub description: Update<String>,
    pub slot_id: Update<i64>,
    pub tray_idx: Update<i64>,
    pub host_id: Update<i64>,
    /// Move to another rack, or detach with `Some(None)`.
    pub rack_id: Update<Uuid>,
    /// BMCs to add, or to update (type and IP) when the MAC is already this component's.
    pub bmcs: Vec<NewBmc>,
}

/// What a rack patch did to each thing it touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Added,
    Patched,
    NoChange,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Patched => "patched",
            Self::NoChange => "no_change",
        }
    }
}

/// Per-component outcome of a rack patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentChange {
    pub component_id: Uuid,
    pub manufacturer: String,
    pub serial_number: String,
    pub change: Change,
    pub bmcs: Vec<(String, Change)>,
}

/// Everything a rack patch changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchReport {
    pub rack: Change,
    pub components: Vec<ComponentChange>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_addresses_in_every_common_notation_become_canonical() {
        for input in [
            "D8:19:09:00:04:AF",
            "d8-19-09-00-04-af",
            "d819.0900.04af",
            "D819090004AF",
        ] {
            assert_eq!(
                MacAddress::parse(input).map(|m| m.0),
                Some("d8:19:09:00:04:af".into()),
                "{input}"
            );
        }
        for bad in [
            "",
            "d8:19:09:00:04",
            "d8:19:09:00:04:ag",
            "d8:19-09:00:04:af",
            "d81.909.0004af",
        ] {
            assert_eq!(MacAddress::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn component_types_accept_proto_names_and_aliases() {
        assert_eq!(
            ComponentType::parse("COMPONENT_TYPE_COMPUTE"),
            Some(ComponentType::Compute)
        );
        assert_eq!(
            ComponentType::parse("NVSwitch"),
            Some(ComponentType::NvSwitch)
        );
        assert_eq!(
            ComponentType::parse("power-shelf"),
            Some(ComponentType::PowerShelf)
        );
        assert_eq!(
            ComponentType::parse("ToRSwitch"),
            Some(ComponentType::TorSwitch)
        );
        assert_eq!(ComponentType::parse("gpu"), None);
        for t in ComponentType::ALL {
            assert_eq!(ComponentType::parse(t.as_str()), Some(t));
        }
    }

    #[test]
    fn bmc_types_accept_proto_names() {
        assert_eq!(BmcType::parse("BMC_TYPE_DPU"), Some(BmcType::Dpu));
        assert_eq!(BmcType::parse("Host"), Some(BmcType::Host));
        assert_eq!(BmcType::parse("bmc"), None);
    }
}
