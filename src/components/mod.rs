//! Component managers: how Flow drives the devices of each component type.
//!
//! Each capability is a small trait (power control, power status, firmware, registration,
//! inventory observation). A
//! [`registry::Registry`] maps every component type to the providers configured for it
//! (`FLOW_COMPONENT_MANAGERS`, e.g. `powershelf=psm,nvswitch=sim,compute=sim`). Providers live in
//! [`providers`]; each reports failures per device, as a [`DeviceError`] that says whether a retry
//! may help.

pub mod metered;
pub mod providers;
pub mod recipe;
pub mod registry;

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::ComponentType;
pub use crate::domain::device::{Device, DevicePower, FirmwareRequest, PowerOp};
pub use recipe::{Activation, BundleView, RecipeView};

/// Progress of a firmware update on one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FirmwareState {
    Unknown,
    Queued,
    InProgress,
    Verifying,
    Completed,
    Failed,
}

/// A firmware status report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirmwareStatus {
    pub state: FirmwareState,
    /// Version the device runs now, when the manager says; while `Verifying`, what runs
    /// against what is expected (`FW_BMC_0 runs 25.06-1, expected 25.06-2`), for the operator.
    pub version: Option<String>,
    /// The manager's error text for a failed update.
    pub error: Option<String>,
}

/// Why a device call failed, and whether trying again can help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum DeviceError {
    /// The manager or device did not answer (timeout, connection refused, 5xx): retryable.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The manager answered and refused (bad argument, device fault): not retryable.
    #[error("rejected: {0}")]
    Rejected(String),
    /// The configured manager cannot do this for this component type: not retryable.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl DeviceError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unreachable(_))
    }
}

/// Turns power on or off, or resets.
#[async_trait]
pub trait PowerControl: Send + Sync {
    async fn set_power(&self, device: &Device, op: PowerOp) -> Result<(), DeviceError>;

    /// Whether this manager can send `op` at all (checked before a task is created).
    fn supports(&self, _op: PowerOp) -> bool {
        true
    }
}

/// Reads a device's power state.
#[async_trait]
pub trait PowerStatus: Send + Sync {
    async fn power_status(&self, device: &Device) -> Result<DevicePower, DeviceError>;
}

/// Starts a firmware update (returning as soon as the manager accepted it) and reports progress.
#[async_trait]
pub trait FirmwareControl: Send + Sync {
    async fn start_update(
        &self,
        device: &Device,
        request: &FirmwareRequest,
    ) -> Result<(), DeviceError>;
    async fn update_status(&self, device: &Device) -> Result<FirmwareStatus, DeviceError>;

    /// What another process needs to follow the update last started on `device` (opaque to the
    /// caller, who keeps it with the step's progress); `None` when there is nothing to follow.
    fn update_handle(&self, _device: &Device) -> Option<String> {
        None
    }

    /// Follows the update `handle` (from [`Self::update_handle`], maybe of another process)
    /// names instead of starting one; `false` when the handle means nothing here.
    fn resume_update(&self, _device: &Device, _handle: &str) -> bool {
        false
    }

    /// The recipe `request` installs on `device`, when this manager's catalog has one; `None`
    /// when the manager installs versions whole (one update, no bundles).
    fn recipe(&self, _device: &Device, _request: &FirmwareRequest) -> Option<RecipeView> {
        None
    }

    /// Starts bundle `index` (from 0) of the recipe; a manager without recipes knows only the
    /// whole update, bundle 0.
    async fn start_bundle(
        &self,
        device: &Device,
        request: &FirmwareRequest,
        index: u32,
    ) -> Result<(), DeviceError> {
        if index == 0 {
            return self.start_update(device, request).await;
        }
        Err(DeviceError::Unsupported(format!(
            "{} {}: its manager has no firmware recipes, so no bundle {index}",
            device.kind, device.name
        )))
    }

    /// The versions the named parts (FirmwareInventory members) run now; `None` for a part the
    /// device does not list.
    async fn part_versions(
        &self,
        device: &Device,
        _parts: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, DeviceError> {
        Err(DeviceError::Unsupported(format!(
            "{} {}: its manager cannot read part versions",
            device.kind, device.name
        )))
    }
}

/// Registers a device with its manager (ingest), built from the inventory record.
#[async_trait]
pub trait Registration: Send + Sync {
    /// Returns the device's id in its manager when registering learnt it (Flow records it as
    /// the component's `external_id`).
    async fn register(&self, device: &Device) -> Result<Option<String>, DeviceError>;
}

/// What a manager can tell about a device before the task runs: checked at submission and in a
/// dry run, so a device it can never drive refuses the rack instead of failing at run time.
#[async_trait]
pub trait Preflight: Send + Sync {
    /// Why this manager cannot address `device` at all (no BMC address, say).
    fn device_gap(&self, _device: &Device) -> Option<String> {
        None
    }

    /// Why this manager cannot install `request` on `device` (a version it has no image for).
    fn firmware_gap(&self, _device: &Device, _request: &FirmwareRequest) -> Option<String> {
        None
    }

    /// Why the device cannot do `op`, asked of the device itself (a BMC that lists no fitting
    /// reset type); `None` when it can or cannot be asked now.
    async fn power_gap(&self, _device: &Device, _op: PowerOp) -> Option<String> {
        None
    }

    /// Why the device cannot take `request` the way it would be sent, asked of the device (a
    /// BMC without the push URI or the SimpleUpdate the image needs); `None` when it can or
    /// cannot be asked now.
    async fn update_gap(&self, _device: &Device, _request: &FirmwareRequest) -> Option<String> {
        None
    }
}

/// What a manager sees of one device: the observed side of expected-vs-actual.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// The address the manager knows the device by (PMC MAC, simulator id), for messages.
    pub address: String,
    /// The device's id in its manager, when it has one.
    pub external_id: Option<String>,
    pub serial_number: Option<String>,
    pub model: Option<String>,
    pub firmware_version: Option<String>,
    pub power: Option<DevicePower>,
    /// MAC addresses the device reports (normalised, lower case with colons); empty when the
    /// manager does not say.
    pub macs: Vec<String>,
}

/// A manager's answer for a batch of devices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InventoryReport {
    /// Requested devices the manager sees, by component id; a requested device absent from
    /// both maps is one the manager does not have.
    pub seen: std::collections::HashMap<Uuid, Observation>,
    /// Requested devices the manager could not report on (device fault, no address).
    pub failed: std::collections::HashMap<Uuid, DeviceError>,
    /// Devices the manager has that were not requested (only when asked for everything).
    pub unlisted: Vec<Observation>,
}

/// Reports what a manager sees, for a batch of devices in one round trip. A manager that does
/// not answer fails the whole call ([`DeviceError::Unreachable`]); the caller must not read
/// that as "every device is missing".
#[async_trait]
pub trait Inventory: Send + Sync {
    /// Observes `devices` (all of type `kind`); with `everything`, also lists the devices of
    /// that type the manager has beyond them.
    async fn observe(
        &self,
        kind: ComponentType,
        devices: &[Device],
        everything: bool,
    ) -> Result<InventoryReport, DeviceError>;

    /// The [`Observation::address`] this manager reports `device` under, `None` when it cannot
    /// know the device (no PMC MAC, say): what tells a listed device from an unexpected one
    /// without holding every expected device at once.
    fn address(&self, device: &Device) -> Option<String>;
}

/// The providers configured for one component type; a missing capability is `None`.
#[derive(Clone, Default)]
pub struct ManagerSet {
    /// Provider name (`sim`, `psm`), for messages.
    pub name: String,
    pub power: Option<std::sync::Arc<dyn PowerControl>>,
    pub status: Option<std::sync::Arc<dyn PowerStatus>>,
    pub firmware: Option<std::sync::Arc<dyn FirmwareControl>>,
    pub registration: Option<std::sync::Arc<dyn Registration>>,
    pub inventory: Option<std::sync::Arc<dyn Inventory>>,
    pub preflight: Option<std::sync::Arc<dyn Preflight>>,
}

impl fmt::Debug for ManagerSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagerSet")
            .field("name", &self.name)
            .field("power", &self.power.is_some())
            .field("status", &self.status.is_some())
            .field("firmware", &self.firmware.is_some())
            .field("registration", &self.registration.is_some())
            .field("inventory", &self.inventory.is_some())
            .field("preflight", &self.preflight.is_some())
            .finish()
    }
}
