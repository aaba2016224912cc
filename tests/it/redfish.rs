//! The `redfish` provider: against `sushy-emulator` BMCs (through the API and the Temporal
//! worker, on both databases), against an in-test Redfish stand-in for what the emulator cannot
//! show (sessions, task monitors, 503 + Retry-After, ExtendedInfo), and PSM over mutual TLS.

mod bmcweb;
mod confine;
mod emulator;
mod psm_tls;
mod standin;
mod tls;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use flow::clients::redfish::{Login, RedfishSettings};
use flow::components::providers::{RedfishManager, RedfishSetup};
use flow::components::{Device, ManagerSet};
use flow::domain::ComponentType;
use uuid::Uuid;

use crate::support::redfish::{PASSWORD, USER};

/// How a test reaches its BMCs.
pub struct Setup {
    pub scheme: &'static str,
    pub port: u16,
    pub timeout: Duration,
    pub ca_file: Option<PathBuf>,
    pub insecure: bool,
    pub credentials_file: Option<PathBuf>,
    pub catalog_file: Option<PathBuf>,
    pub firmware_members: Option<String>,
    pub max_inflight: usize,
    /// `FLOW_BMC_ALLOWED_NETWORKS`: loopback, where every in-test BMC listens.
    pub allowed_networks: flow::domain::ManagementNetworks,
}

impl Setup {
    pub fn http(port: u16) -> Self {
        Self {
            scheme: "http",
            port,
            timeout: Duration::from_secs(10),
            ca_file: None,
            insecure: false,
            credentials_file: None,
            catalog_file: None,
            firmware_members: None,
            max_inflight: 2,
            allowed_networks: crate::support::bmc_networks(),
        }
    }

    pub fn redfish_setup(&self) -> RedfishSetup {
        RedfishSetup {
            client: RedfishSettings {
                scheme: self.scheme.into(),
                port: self.port,
                timeout: self.timeout,
                max_inflight_per_bmc: self.max_inflight,
                ca_file: self.ca_file.clone(),
                insecure: self.insecure,
                allowed_networks: self.allowed_networks.clone(),
            },
            default_login: Some(Login {
                username: USER.into(),
                password: PASSWORD.into(),
            }),
            credentials_file: self.credentials_file.clone(),
            catalog_file: self.catalog_file.clone(),
            firmware_members: self.firmware_members.clone(),
        }
    }

    pub fn manager(&self) -> Arc<RedfishManager> {
        self.redfish_setup().manager().unwrap()
    }

    pub fn managers(&self) -> ManagerSet {
        flow::components::registry::redfish_set(self.manager())
    }
}

/// A tray as the operation layer hands it to a manager.
pub fn tray(kind: ComponentType, ip: Option<&str>, serial: &str) -> Device {
    Device {
        component_id: Uuid::new_v4(),
        kind,
        name: format!("{kind}-{serial}"),
        manufacturer: "NVIDIA".into(),
        model: Some("GB200".into()),
        serial_number: serial.into(),
        external_id: None,
        bmc_mac: Some("02:00:00:00:aa:01".into()),
        bmc_ip: ip.map(String::from),
        firmware_version: None,
        rack_id: None,
        rack_name: None,
    }
}
