//! Power shelves through the Powershelf Manager (PSM), addressed by their PMC MAC.
//!
//! PSM answers per shelf; a shelf-level `status != SUCCESS` becomes [`DeviceError::Rejected`]
//! naming the shelf, while transport failures and deadlines stay [`DeviceError::Unreachable`].

mod observe;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::clients::ClientError;
pub use crate::clients::psm::PsmTls;
use crate::clients::psm::{PsmClient, pb};
use crate::clients::redfish::Credentials;
use crate::components::{
    Device, DeviceError, DevicePower, FirmwareControl, FirmwareRequest, FirmwareState,
    FirmwareStatus, PowerControl, PowerOp, PowerStatus, Registration,
};
use crate::domain::ManagementNetworks;

/// PMC login PSM should use for a shelf it registers.
#[derive(Clone, PartialEq, Eq)]
pub struct PmcCredentials {
    pub username: String,
    pub password: String,
}

impl fmt::Debug for PmcCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PmcCredentials")
            .field("username", &self.username)
            .field("password", &"***")
            .finish()
    }
}

/// Where PSM is and how long each call may take.
#[derive(Debug, Clone, Default)]
pub struct PsmSettings {
    pub url: String,
    pub timeout: Duration,
    /// Sent with registrations; `None` leaves them empty, for PSM's own defaults.
    pub pmc_credentials: Option<PmcCredentials>,
    /// PMC logins per PMC MAC / manufacturer / default; wins over `pmc_credentials`.
    pub logins: Option<Arc<Credentials>>,
    /// TLS toward an `https://` PSM: CA bundle, and client certificate + key for mutual TLS.
    pub tls: PsmTls,
    /// The management network: a shelf whose PMC address is outside it is not registered
    /// (PSM would log in there with the login sent along). Empty: none is.
    pub allowed_networks: ManagementNetworks,
}

/// The `psm` provider: power, power status, firmware and registration for power shelves.
#[derive(Debug)]
pub struct PsmManager {
    client: PsmClient,
    pmc_credentials: Option<PmcCredentials>,
    logins: Option<Arc<Credentials>>,
    allowed_networks: ManagementNetworks,
}

impl PsmManager {
    /// Builds the manager without connecting; a bad URL is the only error.
    pub fn new(settings: &PsmSettings) -> Result<Arc<Self>, String> {
        let client = PsmClient::new(&settings.url, settings.timeout, &settings.tls)
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(Self {
            client,
            pmc_credentials: settings.pmc_credentials.clone(),
            logins: settings.logins.clone(),
            allowed_networks: settings.allowed_networks.clone(),
        }))
    }
}

impl From<ClientError> for DeviceError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Unreachable(m) => Self::Unreachable(m),
            ClientError::Refused(m) => Self::Rejected(m),
        }
    }
}

/// The shelf's PMC MAC in the form PSM keys shelves by.
fn pmc_mac(device: &Device) -> Result<String, DeviceError> {
    device
        .bmc_mac
        .as_deref()
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty())
        .ok_or_else(|| DeviceError::Rejected("power shelf has no PMC MAC".into()))
}

fn same_mac(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

fn shelf_error(device: &Device, mac: &str, rpc: &str, status: i32, error: &str) -> DeviceError {
    let code = pb::StatusCode::try_from(status)
        .map(|c| c.as_str_name().to_string())
        .unwrap_or_else(|_| format!("status {status}"));
    DeviceError::Rejected(format!(
        "PSM {rpc} failed for power shelf {} ({mac}): {code}: {error}",
        device.name
    ))
}

fn is_success(status: i32) -> bool {
    status == pb::StatusCode::Success as i32
}

fn vendor(manufacturer: &str) -> pb::PmcVendor {
    let letters: String = manufacturer
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    if letters.contains("liteon") {
        pb::PmcVendor::PmcTypeLiteon
    } else if letters.contains("delta") {
        pb::PmcVendor::PmcTypeDelta
    } else {
        pb::PmcVendor::PmcTypeUnknown
    }
}

fn firmware_part(name: &str) -> Result<pb::PowershelfComponent, DeviceError> {
    match name.trim().to_ascii_lowercase().as_str() {
        "pmc" => Ok(pb::PowershelfComponent::Pmc),
        "psu" => Ok(pb::PowershelfComponent::Psu),
        other => Err(DeviceError::Rejected(format!(
            "power-shelf firmware part {other:?} is not one of pmc, psu"
        ))),
    }
}

fn firmware_state(state: i32) -> FirmwareState {
    match pb::FirmwareUpdateState::try_from(state) {
        Ok(pb::FirmwareUpdateState::Queued) => FirmwareState::Queued,
        Ok(pb::FirmwareUpdateState::Verifying) => FirmwareState::Verifying,
        Ok(pb::FirmwareUpdateState::Completed) => FirmwareState::Completed,
        Ok(pb::FirmwareUpdateState::Failed) => FirmwareState::Failed,
        Ok(pb::FirmwareUpdateState::Unknown) | Err(_) => FirmwareState::Unknown,
    }
}

#[async_trait]
impl PowerControl for PsmManager {
    async fn set_power(&self, device: &Device, op: PowerOp) -> Result<(), DeviceError> {
        let mac = pmc_mac(device)?;
        let (rpc, response) = match op {
            PowerOp::On | PowerOp::ForceOn => {
                ("PowerOn", self.client.power_on(vec![mac.clone()]).await?)
            }
            PowerOp::Off | PowerOp::ForceOff => {
                ("PowerOff", self.client.power_off(vec![mac.clone()]).await?)
            }
            // PSM has no reset; the operation layer composes one from off and on.
            _ => {
                return Err(DeviceError::Unsupported(format!(
                    "PSM cannot {op:?} a power shelf; only on and off"
                )));
            }
        };
        match response
            .responses
            .iter()
            .find(|r| same_mac(&r.pmc_mac_address, &mac) && !is_success(r.status))
        {
            Some(r) => Err(shelf_error(device, &mac, rpc, r.status, &r.error)),
            None => Ok(()),
        }
    }

    fn supports(&self, op: PowerOp) -> bool {
        matches!(
            op,
            PowerOp::On | PowerOp::ForceOn | PowerOp::Off | PowerOp::ForceOff
        )
    }
}

#[async_trait]
impl PowerStatus for PsmManager {
    async fn power_status(&self, device: &Device) -> Result<DevicePower, DeviceError> {
        let mac = pmc_mac(device)?;
        let response = self.client.get_powershelves(vec![mac.clone()]).await?;
        let shelf = response
            .powershelves
            .iter()
            .find(|s| {
                s.pmc
                    .as_ref()
                    .is_some_and(|p| same_mac(&p.mac_address, &mac))
            })
            .ok_or_else(|| {
                DeviceError::Rejected(format!(
                    "power shelf {} ({mac}) is not registered with PSM",
                    device.name
                ))
            })?;
        Ok(shelf_power(shelf))
    }
}

/// On when every PSU is on, off when every one is off, unknown when mixed or none.
fn shelf_power(shelf: &pb::PowerShelf) -> DevicePower {
    let on = shelf.psus.iter().filter(|p| p.power_state).count();
    match on {
        _ if shelf.psus.is_empty() => DevicePower::Unknown,
        0 => DevicePower::Off,
        n if n == shelf.psus.len() => DevicePower::On,
        _ => DevicePower::Unknown,
    }
}

#[async_trait]
impl FirmwareControl for PsmManager {
    async fn start_update(
        &self,
        device: &Device,
        request: &FirmwareRequest,
    ) -> Result<(), DeviceError> {
        let mac = pmc_mac(device)?;
        let version = request.target_version.clone().ok_or_else(|| {
            DeviceError::Rejected("PSM firmware updates need a target version".into())
        })?;
        let mut parts = Vec::new();
        for name in &request.sub_targets {
            let part = firmware_part(name)?;
            if !parts.contains(&part) {
                parts.push(part);
            }
        }
        if parts.is_empty() {
            parts.push(pb::PowershelfComponent::Pmc);
        }
        let upgrade = pb::UpdatePowershelfFirmwareRequest {
            pmc_mac_address: mac.clone(),
            components: parts
                .iter()
                .map(|&part| pb::UpdateComponentFirmwareRequest {
                    component: part as i32,
                    upgrade_to: Some(pb::FirmwareVersion {
                        version: version.clone(),
                    }),
                })
                .collect(),
        };
        let response = self
            .client
            .update_firmware(pb::UpdateFirmwareRequest {
                upgrades: vec![upgrade],
            })
            .await?;
        let failed = response
            .responses
            .iter()
            .filter(|r| same_mac(&r.pmc_mac_address, &mac))
            .flat_map(|r| &r.components)
            .find(|c| !is_success(c.status));
        match failed {
            Some(c) => Err(shelf_error(
                device,
                &mac,
                "UpdateFirmware",
                c.status,
                &c.error,
            )),
            None => Ok(()),
        }
    }

    async fn update_status(&self, device: &Device) -> Result<FirmwareStatus, DeviceError> {
        let mac = pmc_mac(device)?;
        // Only the PMC is asked about, as the original does, even when PSUs were updated too.
        let query = pb::FirmwareUpdateQuery {
            pmc_mac_address: mac.clone(),
            component: pb::PowershelfComponent::Pmc as i32,
        };
        let response = self
            .client
            .get_firmware_update_status(pb::GetFirmwareUpdateStatusRequest {
                queries: vec![query],
            })
            .await?;
        let Some(status) = response
            .statuses
            .iter()
            .find(|s| same_mac(&s.pmc_mac_address, &mac))
        else {
            return Ok(FirmwareStatus {
                state: FirmwareState::Unknown,
                version: None,
                error: None,
            });
        };
        if !is_success(status.status) {
            return Err(shelf_error(
                device,
                &mac,
                "GetFirmwareUpdateStatus",
                status.status,
                &status.error,
            ));
        }
        let state = firmware_state(status.state);
        Ok(FirmwareStatus {
            state,
            version: None,
            error: (state == FirmwareState::Failed).then(|| status.error.clone()),
        })
    }
}

#[async_trait]
impl Registration for PsmManager {
    async fn register(&self, device: &Device) -> Result<Option<String>, DeviceError> {
        let mac = pmc_mac(device)?;
        let ip = device.bmc_ip.as_deref().map(str::trim).unwrap_or_default();
        // PSM logs in to the address it is given with the login sent along: only addresses
        // inside the management network (and the login's own networks) are handed over.
        if !ip.is_empty()
            && let Err(why) = self.allowed_networks.allows(ip)
        {
            return Err(DeviceError::Rejected(format!(
                "power shelf {} ({mac}) not registered: {why}",
                device.name
            )));
        }
        // The PMC login PSM will use: from the credentials source (per PMC MAC, manufacturer,
        // default), else the fixed pair, else none (PSM's own defaults).
        let found = match &self.logins {
            Some(logins) if !ip.is_empty() => logins
                .login_for(Some(&mac), &device.manufacturer, ip)
                .map_err(|why| {
                    DeviceError::Rejected(format!(
                        "power shelf {} ({mac}) not registered: {why}",
                        device.name
                    ))
                })?,
            Some(logins) => logins.lookup(Some(&mac), &device.manufacturer),
            None => None,
        };
        let login = found
            .map(|l| PmcCredentials {
                username: l.username,
                password: l.password,
            })
            .or_else(|| self.pmc_credentials.clone());
        let request = pb::RegisterPowershelfRequest {
            pmc_mac_address: mac.clone(),
            pmc_ip_address: device.bmc_ip.clone().unwrap_or_default(),
            pmc_vendor: vendor(&device.manufacturer) as i32,
            pmc_credentials: login.as_ref().map(|c| pb::Credentials {
                username: c.username.clone(),
                password: c.password.clone(),
            }),
        };
        let response = self
            .client
            .register_powershelves(pb::RegisterPowershelvesRequest {
                registration_requests: vec![request],
            })
            .await?;
        match response
            .responses
            .iter()
            .find(|r| same_mac(&r.pmc_mac_address, &mac) && !is_success(r.status))
        {
            Some(r) => Err(shelf_error(
                device,
                &mac,
                "RegisterPowershelves",
                r.status,
                &r.error,
            )),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_is_liteon_however_the_manufacturer_is_spelled() {
        for name in ["LITEON", "Lite-On Technology", "liteon"] {
            assert_eq!(vendor(name), pb::PmcVendor::PmcTypeLiteon, "{name}");
        }
        assert_eq!(vendor("Delta Electronics"), pb::PmcVendor::PmcTypeDelta);
        assert_eq!(vendor("Acme"), pb::PmcVendor::PmcTypeUnknown);
    }

    #[test]
    fn firmware_parts_are_pmc_or_psu() {
        assert_eq!(firmware_part("PMC"), Ok(pb::PowershelfComponent::Pmc));
        assert_eq!(firmware_part("psu"), Ok(pb::PowershelfComponent::Psu));
        assert!(matches!(
            firmware_part("bios"),
            Err(DeviceError::Rejected(_))
        ));
    }

    #[test]
    fn firmware_states_map_one_to_one() {
        assert_eq!(firmware_state(1), FirmwareState::Queued);
        assert_eq!(firmware_state(2), FirmwareState::Verifying);
        assert_eq!(firmware_state(3), FirmwareState::Completed);
        assert_eq!(firmware_state(4), FirmwareState::Failed);
        assert_eq!(firmware_state(0), FirmwareState::Unknown);
        assert_eq!(firmware_state(99), FirmwareState::Unknown);
    }
}
