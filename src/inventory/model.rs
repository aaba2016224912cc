//! Inventory domain types: racks, components, BMCs, and the patches and reports of their writes.
//!
//! The value kinds they are made of live in [`crate::domain::kinds`] and are re-exported here.

use std::net::IpAddr;

use crate::ids::{ComponentId, NvlDomainId, RackId};
use chrono::{DateTime, Utc};

pub use crate::domain::kinds::{BmcType, ComponentType, MacAddress, PowerState};

/// Most live components one rack may hold: a GB200 NVL72 rack has about 40, the largest racks a
/// few hundred; thousands are a mistake (or an attack) that would hold a transaction long.
pub const MAX_COMPONENTS_PER_RACK: usize = 1024;
/// Most BMCs one component may list (a tray has a host BMC and a DPU BMC or two).
pub const MAX_BMCS_PER_COMPONENT: usize = 8;

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
    pub rack_id: Option<RackId>,
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
    pub id: ComponentId,
    pub rack_id: Option<RackId>,
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
    pub id: RackId,
    pub name: String,
    pub manufacturer: String,
    pub serial_number: String,
    pub model: Option<String>,
    pub description: Option<String>,
    pub location: Location,
    pub nvl_domain_id: Option<NvlDomainId>,
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
    pub rack_id: Update<RackId>,
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
    pub component_id: ComponentId,
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
