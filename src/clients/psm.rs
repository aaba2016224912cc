//! gRPC client for the Powershelf Manager (PSM), with a deadline on every call.
//!
//! The channel is created on first use and connects lazily, so a PSM that is down never blocks
//! start-up: each call then fails on its own, as [`ClientError::Unreachable`].

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};
use tracing::Instrument;

use super::ClientError;

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
    /// Validates the address without connecting; `host:port` is taken as plain HTTP/2.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, ClientError> {
        let url = if url.contains("://") {
            url.to_string()
        } else {
            format!("http://{url}")
        };
        let endpoint = Endpoint::from_shared(url.clone())
            .map_err(|e| ClientError::Refused(format!("PSM address {url:?}: {e}")))?
            .connect_timeout(timeout)
            .timeout(timeout);
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
