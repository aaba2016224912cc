//! The HTTP clients: the shared one (the process's trust roots, or `FLOW_REDFISH_CA_FILE`'s
//! only) and one per certificate check a BMC's credentials-file entry asks for. None follows
//! a redirect, and every one has the configured deadline.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;

use super::error::chain;
use super::{
    Bmc, CertCheck, Credentials, MAX_INFLIGHT_TOTAL, RedfishClient, RedfishError, RedfishSettings,
    tls,
};

impl RedfishClient {
    /// Builds the client; an unreadable CA file is an error naming `FLOW_REDFISH_CA_FILE`.
    pub fn new(settings: RedfishSettings, credentials: Arc<Credentials>) -> Result<Self, String> {
        // rustls is built with ring only; reqwest needs it installed as the process default.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = base_builder(&settings);
        let mut ca_pem = None;
        if let Some(path) = &settings.ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| format!("FLOW_REDFISH_CA_FILE {}: {e}", path.display()))?;
            ca_pem = Some(pem.clone());
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| format!("FLOW_REDFISH_CA_FILE {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "FLOW_REDFISH_CA_FILE {}: no PEM certificate in it",
                    path.display()
                ));
            }
            builder = builder.tls_certs_only(certs);
        }
        if settings.insecure {
            tracing::warn!(
                "FLOW_REDFISH_INSECURE=true: BMC certificates are NOT verified; anyone on the \
                 path can impersonate a BMC and read its login"
            );
            builder = builder.tls_danger_accept_invalid_certs(true);
        }
        let http = builder
            .build()
            .map_err(|e| format!("Redfish HTTP client: {}", chain(&e)))?;
        Ok(Self {
            http,
            checked: Mutex::new(HashMap::new()),
            ca_pem,
            total: Semaphore::new(MAX_INFLIGHT_TOTAL),
            bmcs: Mutex::new(HashMap::new()),
            settings,
            credentials,
        })
    }

    /// The HTTP client for this BMC: the shared one, or one that checks the certificate as
    /// the BMC's credentials-file entry says (`pin_sha256` wins over `server_name`).
    pub(super) fn http_for(&self, bmc: Bmc<'_>) -> Result<reqwest::Client, RedfishError> {
        let options = self.credentials.options(bmc.mac);
        let check = match (options.pin_sha256, options.server_name) {
            (Some(pin), _) => CertCheck::Pin(pin),
            (None, Some(name)) => CertCheck::Name(name),
            (None, None) => return Ok(self.http.clone()),
        };
        let mut checked = self.checked.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = checked.get(&check) {
            return Ok(client.clone());
        }
        let refused = |why: String| RedfishError::Credentials {
            status: None,
            message: format!("BMC {}: {why}", bmc.ip),
        };
        let config = tls::client_config(&check, self.ca_pem.as_deref()).map_err(refused)?;
        let client = base_builder(&self.settings)
            .tls_backend_preconfigured(config)
            .build()
            .map_err(|e| refused(chain(&e)))?;
        checked.insert(check, client.clone());
        Ok(client)
    }
}

/// What every BMC client shares: deadlines, a small idle pool, and no redirects (a redirect
/// would carry the login to wherever the BMC points).
fn base_builder(settings: &RedfishSettings) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout)
        .pool_max_idle_per_host(settings.max_inflight_per_bmc)
        .pool_idle_timeout(Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none())
}
