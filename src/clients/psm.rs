//! gRPC client for the Powershelf Manager (PSM), with a deadline on every call.
//!
//! The channel is created on first use and connects lazily, so a PSM that is down never blocks
//! start-up: each call then fails on its own, as [`ClientError::Unreachable`].

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Request, Response, Status};
use tracing::Instrument;

use super::ClientError;

/// PEM files for TLS toward PSM: the CA that verifies it and, for mutual TLS, Flow's client
/// certificate and key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PsmTls {
    pub ca_file: Option<std::path::PathBuf>,
    pub client_cert_file: Option<std::path::PathBuf>,
    pub client_key_file: Option<std::path::PathBuf>,
}

/// The CA that verifies PSM and, for mutual TLS, the identity Flow presents; a file that cannot
/// be read names its setting.
fn tls_config(tls: &PsmTls) -> Result<ClientTlsConfig, ClientError> {
    let read = |setting: &str, path: &std::path::Path| {
        std::fs::read(path)
            .map_err(|e| ClientError::Refused(format!("{setting} {}: {e}", path.display())))
    };
    let ca = tls.ca_file.as_deref().ok_or_else(|| {
        ClientError::Refused("an https:// PSM address needs FLOW_PSM_CA_FILE".into())
    })?;
    let mut config =
        ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read("FLOW_PSM_CA_FILE", ca)?));
    match (&tls.client_cert_file, &tls.client_key_file) {
        (Some(cert), Some(key)) => {
            config = config.identity(Identity::from_pem(
                read("FLOW_PSM_CLIENT_CERT_FILE", cert)?,
                read("FLOW_PSM_CLIENT_KEY_FILE", key)?,
            ));
        }
        (None, None) => {}
        _ => {
            return Err(ClientError::Refused(
                "FLOW_PSM_CLIENT_CERT_FILE and FLOW_PSM_CLIENT_KEY_FILE go together".into(),
            ));
        }
    }
    Ok(config)
}

/// Types and stubs generated from `proto/psm/v1/powershelf-manager.proto` (package `v1`).
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod pb {
    tonic::include_proto!("v1");
}

use pb::powershelf_manager_client::PowershelfManagerClient;

/// A PSM endpoint and the deadline each call gets.
pub struct PsmClient {
    url: String,
    timeout: Duration,
    endpoint: Endpoint,
    // Creating a channel spawns its worker on the current runtime, so it waits for the first call.
    channel: OnceLock<Channel>,
}

impl std::fmt::Debug for PsmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PsmClient")
            .field("url", &self.url)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl PsmClient {
    /// Validates the address and reads the TLS files without connecting; `host:port` is taken
    /// as plain HTTP/2, `https://` needs `FLOW_PSM_CA_FILE` (and mutual TLS adds the client
    /// certificate and key).
    pub fn new(url: &str, timeout: Duration, tls: &PsmTls) -> Result<Self, ClientError> {
        let url = if url.contains("://") {
            url.to_string()
        } else {
            format!("http://{url}")
        };
        let mut endpoint = Endpoint::from_shared(url.clone())
            .map_err(|e| ClientError::Refused(format!("PSM address {url:?}: {e}")))?
            .connect_timeout(timeout)
            .timeout(timeout);
        if url.starts_with("https://") {
            endpoint = endpoint
                .tls_config(tls_config(tls)?)
                .map_err(|e| ClientError::Refused(format!("PSM TLS for {url:?}: {e}")))?;
        } else if tls.client_cert_file.is_some() {
            return Err(ClientError::Refused(format!(
                "FLOW_PSM_CLIENT_CERT_FILE is set but the PSM address {url:?} is not https://"
            )));
        }
        Ok(Self {
            url,
            timeout,
            endpoint,
            channel: OnceLock::new(),
        })
    }

    /// The endpoint address, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The deadline every call gets.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn stub(&self) -> PowershelfManagerClient<Channel> {
        let channel = self
            .channel
            .get_or_init(|| self.endpoint.connect_lazy())
            .clone();
        PowershelfManagerClient::new(channel)
    }

    /// Runs one RPC with the deadline sent to the server (`grpc-timeout`) and enforced here too,
    /// so neither a slow connect nor a server that ignores deadlines can hold a caller longer.
    async fn call<Req, Resp, Fut>(
        &self,
        rpc: &'static str,
        message: Req,
        send: impl FnOnce(PowershelfManagerClient<Channel>, Request<Req>) -> Fut,
    ) -> Result<Resp, ClientError>
    where
        Fut: Future<Output = Result<Response<Resp>, Status>>,
    {
        let mut request = Request::new(message);
        request.set_timeout(self.timeout);
        let span = tracing::info_span!("psm", rpc, url = %self.url);
        // W3C trace context to PSM, so its spans join the operation's trace.
        let mut headers = http::HeaderMap::new();
        crate::telemetry::trace::inject_from(&span, &mut headers);
        for (name, value) in headers.iter() {
            if let (Ok(key), Ok(value)) = (
                MetadataKey::from_bytes(name.as_str().as_bytes()),
                MetadataValue::try_from(value.as_bytes()),
            ) {
                request.metadata_mut().insert(key, value);
            }
        }
        let call = tokio::time::timeout(self.timeout, send(self.stub(), request));
        match call.instrument(span).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(ClientError::from_status(
                &format!("PSM at {}", self.url),
                rpc,
                &status,
            )),
            Err(_) => Err(ClientError::Unreachable(format!(
                "PSM at {} {rpc}: no answer within {:?}",
                self.url, self.timeout
            ))),
        }
    }

    /// `RegisterPowershelves`: tells PSM which PMCs to manage.
    pub async fn register_powershelves(
        &self,
        request: pb::RegisterPowershelvesRequest,
    ) -> Result<pb::RegisterPowershelvesResponse, ClientError> {
        self.call("RegisterPowershelves", request, |mut c, r| async move {
            c.register_powershelves(r).await
        })
        .await
    }

    /// `GetPowershelves`: inventory and PSU power of the given shelves (empty = all).
    pub async fn get_powershelves(
        &self,
        pmc_macs: Vec<String>,
    ) -> Result<pb::GetPowershelvesResponse, ClientError> {
        let request = pb::PowershelfRequest { pmc_macs };
        self.call("GetPowershelves", request, |mut c, r| async move {
            c.get_powershelves(r).await
        })
        .await
    }

    /// `UpdateFirmware`: queues firmware updates; returns once PSM accepted them.
    pub async fn update_firmware(
        &self,
        request: pb::UpdateFirmwareRequest,
    ) -> Result<pb::UpdateFirmwareResponse, ClientError> {
        self.call("UpdateFirmware", request, |mut c, r| async move {
            c.update_firmware(r).await
        })
        .await
    }

    /// `GetFirmwareUpdateStatus`: progress of updates per shelf and part.
    pub async fn get_firmware_update_status(
        &self,
        request: pb::GetFirmwareUpdateStatusRequest,
    ) -> Result<pb::GetFirmwareUpdateStatusResponse, ClientError> {
        self.call("GetFirmwareUpdateStatus", request, |mut c, r| async move {
            c.get_firmware_update_status(r).await
        })
        .await
    }

    /// `ListAvailableFirmware`: versions PSM could install on the given shelves.
    pub async fn list_available_firmware(
        &self,
        pmc_macs: Vec<String>,
    ) -> Result<pb::ListAvailableFirmwareResponse, ClientError> {
        let request = pb::PowershelfRequest { pmc_macs };
        self.call("ListAvailableFirmware", request, |mut c, r| async move {
            c.list_available_firmware(r).await
        })
        .await
    }

    /// `SetDryRun`: makes PSM log instead of acting (or act again).
    pub async fn set_dry_run(&self, dry_run: bool) -> Result<(), ClientError> {
        let request = pb::SetDryRunRequest { dry_run };
        self.call("SetDryRun", request, |mut c, r| async move {
            c.set_dry_run(r).await
        })
        .await
    }

    /// `PowerOn` for the given shelves.
    pub async fn power_on(
        &self,
        pmc_macs: Vec<String>,
    ) -> Result<pb::PowerControlResponse, ClientError> {
        let request = pb::PowershelfRequest { pmc_macs };
        self.call(
            "PowerOn",
            request,
            |mut c, r| async move { c.power_on(r).await },
        )
        .await
    }

    /// `PowerOff` for the given shelves.
    pub async fn power_off(
        &self,
        pmc_macs: Vec<String>,
    ) -> Result<pb::PowerControlResponse, ClientError> {
        let request = pb::PowershelfRequest { pmc_macs };
        self.call("PowerOff", request, |mut c, r| async move {
            c.power_off(r).await
        })
        .await
    }
}
