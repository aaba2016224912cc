//! Compute trays, NVSwitch trays (and power shelves: a PMC is a BMC) driven directly through
//! their BMC's Redfish API. A device's BMC is its host BMC's IP address; the system, chassis
//! and manager it acts on are discovered from the service root and cached per BMC.

mod actions;
pub mod catalog;
mod discover;
mod firmware;
mod observe;
mod power;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use crate::clients::redfish::{Bmc, RedfishClient, RedfishError};
use crate::components::{Device, DeviceError, FirmwareRequest, Preflight, Registration};
use crate::domain::ComponentType;

pub use catalog::Catalog;

/// The resources of one BMC that Flow acts on, by their `@odata.id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    pub system: String,
    pub chassis: Option<String>,
    pub manager: Option<String>,
    pub update_service: Option<String>,
}

impl Resources {
    /// Whether `path` is one of these resources.
    fn names(&self, path: &str) -> bool {
        self.system == path
            || [&self.chassis, &self.manager, &self.update_service]
                .iter()
                .any(|r| r.as_deref() == Some(path))
    }
}

/// The values one ActionInfo allows (`None`: it lists none).
type AllowedValues = Option<Vec<String>>;

/// The `redfish` provider.
#[derive(Debug)]
pub struct RedfishManager {
    client: Arc<RedfishClient>,
    catalog: Catalog,
    resources: Mutex<HashMap<String, Resources>>,
    /// `ResetType` values of ActionInfo resources, by BMC address and resource.
    action_infos: Mutex<HashMap<(String, String), AllowedValues>>,
    updates: Mutex<HashMap<uuid::Uuid, firmware::Update>>,
    /// Per type, the FirmwareInventory member that states the observed firmware.
    firmware_members: HashMap<ComponentType, String>,
}

impl From<RedfishError> for DeviceError {
    fn from(e: RedfishError) -> Self {
        match e {
            RedfishError::Unreachable { message, .. } => Self::Unreachable(message),
            RedfishError::Refused { message, .. } | RedfishError::Credentials { message, .. } => {
                Self::Rejected(message)
            }
        }
    }
}

/// Reads `FLOW_REDFISH_FIRMWARE_MEMBER` (`compute=FW_BMC_0,nvswitch=MGX_FW_BMC_0`).
pub fn firmware_members(text: &str) -> Result<HashMap<ComponentType, String>, String> {
    let bad = |why: String| format!("FLOW_REDFISH_FIRMWARE_MEMBER: {why}");
    let mut out = HashMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (kind, member) = entry
            .split_once('=')
            .ok_or_else(|| bad(format!("{entry:?} is not type=member")))?;
        let kind = ComponentType::parse(kind.trim())
            .ok_or_else(|| bad(format!("unknown component type {kind:?}")))?;
        let member = member.trim();
        if member.is_empty() {
            return Err(bad(format!("{entry:?} names no member")));
        }
        out.insert(kind, member.to_string());
    }
    Ok(out)
}

/// The device's BMC address, or why it has none.
fn bmc_ip(device: &Device) -> Result<&str, DeviceError> {
    device
        .bmc_ip
        .as_deref()
        .map(str::trim)
        .filter(|ip| !ip.is_empty())
        .ok_or_else(|| {
            DeviceError::Unsupported(format!(
                "{} {} has no BMC IP address for Redfish",
                device.kind, device.name
            ))
        })
}

fn odata_id(value: &Value) -> Option<String> {
    value
        .get("@odata.id")
        .and_then(Value::as_str)
        .map(String::from)
}

fn first_link(value: &Value, pointer: &str) -> Option<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(odata_id)
}

fn members(collection: &Value) -> Vec<String> {
    collection
        .get("Members")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(odata_id).collect())
        .unwrap_or_default()
}

/// Prefixes a BMC error with the device it was about, keeping its kind.
fn about(device: &Device, e: RedfishError) -> DeviceError {
    let named = |m: &str| format!("{} {}: {m}", device.kind, device.name);
    match &e {
        RedfishError::Unreachable { .. } => DeviceError::Unreachable(named(e.message())),
        RedfishError::Refused { .. } | RedfishError::Credentials { .. } => {
            DeviceError::Rejected(named(e.message()))
        }
    }
}

impl RedfishManager {
    pub fn new(
        client: Arc<RedfishClient>,
        catalog: Catalog,
        firmware_members: HashMap<ComponentType, String>,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            catalog,
            resources: Mutex::new(HashMap::new()),
            action_infos: Mutex::new(HashMap::new()),
            updates: Mutex::new(HashMap::new()),
            firmware_members,
        })
    }

    /// The login source, to re-read on SIGHUP.
    pub fn credentials(&self) -> &Arc<crate::clients::redfish::Credentials> {
        self.client.credentials()
    }

    fn bmc<'a>(device: &'a Device) -> Result<Bmc<'a>, DeviceError> {
        Ok(Bmc {
            ip: bmc_ip(device)?,
            mac: device.bmc_mac.as_deref(),
            manufacturer: &device.manufacturer,
        })
    }

    async fn get(&self, device: &Device, path: &str) -> Result<Value, DeviceError> {
        let bmc = Self::bmc(device)?;
        self.client.get(bmc, path).await.map_err(|e| {
            // A resource that vanished (the BMC was replaced or re-flashed) is looked up afresh
            // next time instead of being asked for forever.
            if e.status() == Some(404)
                && let Ok(mut cache) = self.resources.lock()
                && cache.get(bmc.ip).is_some_and(|r| r.names(path))
            {
                cache.remove(bmc.ip);
            }
            about(device, e)
        })
    }

    async fn post(
        &self,
        device: &Device,
        path: &str,
        body: &Value,
    ) -> Result<crate::clients::redfish::Reply, DeviceError> {
        self.client
            .post(Self::bmc(device)?, path, body)
            .await
            .map_err(|e| about(device, e))
    }
}

#[async_trait]
impl Preflight for RedfishManager {
    fn device_gap(&self, device: &Device) -> Option<String> {
        bmc_ip(device).err().map(|_| {
            format!(
                "{} {} has no BMC IP address (redfish needs its host BMC's ip_address)",
                device.kind, device.name
            )
        })
    }

    /// Asks the BMC (discovery and ActionInfo, both cached) whether it lists a reset type for
    /// `op`; a BMC that does not answer now is left to the run.
    async fn power_gap(&self, device: &Device, op: crate::components::PowerOp) -> Option<String> {
        match self.plan(device, op).await {
            Err(DeviceError::Unsupported(why)) => Some(why),
            _ => None,
        }
    }

    /// Asks the BMC's UpdateService whether it offers the path the catalog image needs; a
    /// version the catalog lacks is `firmware_gap`'s to report.
    async fn update_gap(&self, device: &Device, request: &FirmwareRequest) -> Option<String> {
        let version = request.target_version.as_deref()?;
        let image = self
            .catalog
            .find(device.kind, device.model.as_deref(), version)?;
        for bundle in image.recipe() {
            if let Err(DeviceError::Unsupported(why)) = self.route(device, &bundle).await {
                return Some(why);
            }
        }
        None
    }

    fn firmware_gap(&self, device: &Device, request: &FirmwareRequest) -> Option<String> {
        match request.target_version.as_deref() {
            None => Some(format!(
                "{} {}: redfish firmware updates need a target version",
                device.kind, device.name
            )),
            Some(version) => self
                .catalog
                .find(device.kind, device.model.as_deref(), version)
                .is_none()
                .then(|| {
                    format!(
                        "{} {}: version {version} is not in FLOW_FIRMWARE_CATALOG for {}{}",
                        device.kind,
                        device.name,
                        device.kind,
                        device
                            .model
                            .as_deref()
                            .map(|m| format!(" model {m}"))
                            .unwrap_or_default()
                    )
                }),
        }
    }
}

#[async_trait]
impl Registration for RedfishManager {
    /// Ingest: reach the BMC and hand back the tray's stable id as the component's external id:
    /// the host system's UUID, else `chassis-serial:…`, else `bmc-mac:…`.
    async fn register(&self, device: &Device) -> Result<Option<String>, DeviceError> {
        let resources = self.resources(device).await?;
        let system = self.get(device, &resources.system).await?;
        self.tray_id(device, &resources, &system).await.map(Some)
    }
}
