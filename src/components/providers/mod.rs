//! Backends behind the component-manager traits: one module per provider.
//!
//! - [`sim`]: simulated devices in process (`flow dev`, tests).
//! - [`psm`]: power shelves through the Powershelf Manager over gRPC.
//! - [`redfish`]: any tray (or shelf) through its own BMC's Redfish API over HTTPS.

pub mod psm;
pub mod redfish;
pub mod sim;

use std::sync::Arc;

pub use psm::{PmcCredentials, PsmManager, PsmSettings, PsmTls};
pub use redfish::{Catalog, RedfishManager};
pub use sim::{SimConfig, SimDevices, SimEvent};

/// What building providers needs from outside: the one simulator every `sim` entry shares,
/// where PSM is, and how BMCs are reached.
#[derive(Debug, Clone)]
pub struct Providers {
    pub sim: Arc<SimDevices>,
    pub psm: PsmSettings,
    pub redfish: RedfishSetup,
}

/// Everything a `redfish` entry needs; files are read only when some type uses it.
#[derive(Debug, Clone)]
pub struct RedfishSetup {
    pub client: crate::clients::redfish::RedfishSettings,
    pub default_login: Option<crate::clients::redfish::Login>,
    pub credentials_file: Option<std::path::PathBuf>,
    pub catalog_file: Option<std::path::PathBuf>,
    /// `FLOW_REDFISH_FIRMWARE_MEMBER`: `type=member,…`.
    pub firmware_members: Option<String>,
}

impl Default for RedfishSetup {
    fn default() -> Self {
        Self {
            client: crate::clients::redfish::RedfishSettings {
                scheme: "https".into(),
                port: 443,
                timeout: std::time::Duration::from_secs(30),
                max_inflight_per_bmc: 2,
                ca_file: None,
                insecure: false,
                allowed_networks: Default::default(),
            },
            default_login: None,
            credentials_file: None,
            catalog_file: None,
            firmware_members: None,
        }
    }
}

impl RedfishSetup {
    /// The logins (default pair + file) every manager that needs BMC credentials shares.
    pub fn credentials(&self) -> Result<Arc<crate::clients::redfish::Credentials>, String> {
        crate::clients::redfish::Credentials::new(
            self.default_login.clone(),
            self.credentials_file.clone(),
        )
        .map(Arc::new)
    }

    /// The client and catalog: an unreadable CA, credentials or catalog file names its setting.
    pub fn manager(&self) -> Result<Arc<RedfishManager>, String> {
        let client =
            crate::clients::redfish::RedfishClient::new(self.client.clone(), self.credentials()?)?;
        let catalog = match &self.catalog_file {
            Some(path) => Catalog::load(path)?,
            None => Catalog::default(),
        };
        let members = match &self.firmware_members {
            Some(text) => redfish::firmware_members(text)?,
            None => Default::default(),
        };
        Ok(RedfishManager::new(Arc::new(client), catalog, members))
    }
}
