//! The fake's gRPC side: the generated `PowershelfManager` trait over the shared [`State`].

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use flow::clients::psm::pb;
use flow::clients::psm::pb::powershelf_manager_server::PowershelfManager;
use tokio::sync::watch;
use tonic::{Request, Response, Status};

use super::{FakeUpdate, PSUS_PER_SHELF, PsmCall, Shelf, State};

/// The service the tonic server runs; clones share one state.
#[derive(Clone)]
pub(super) struct Fake {
    state: Arc<Mutex<State>>,
    stalled: watch::Receiver<bool>,
}

/// Status queries after which an update reports completed: queued, verifying, completed.
const POLLS_TO_COMPLETE: u32 = 3;

fn code(status: pb::StatusCode) -> i32 {
    status as i32
}

impl Fake {
    pub(super) fn new(state: Arc<Mutex<State>>, stalled: watch::Receiver<bool>) -> Self {
        Self { state, stalled }
    }

    /// Logs the call, then waits while the server is stalled.
    async fn arrive(&self, rpc: &'static str, macs: impl IntoIterator<Item = String>) {
        let macs = macs.into_iter().map(|m| m.to_ascii_lowercase()).collect();
        self.state.lock().unwrap().calls.push(PsmCall {
            rpc,
            macs,
            at: Instant::now(),
        });
        let mut stalled = self.stalled.clone();
        let _ = stalled.wait_for(|s| !*s).await;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Status and error for a shelf-level answer: failing, unknown, or fine.
    fn verdict(state: &State, mac: &str) -> (i32, String) {
        if state.failing.contains(mac) {
            (
                code(pb::StatusCode::InternalError),
                format!("PMC {mac} did not respond"),
            )
        } else if !state.shelves.contains_key(mac) {
            (
                code(pb::StatusCode::InvalidArgument),
                format!("unknown power shelf {mac}"),
            )
        } else {
            (code(pb::StatusCode::Success), String::new())
        }
    }

    async fn set_power(
        &self,
        rpc: &'static str,
        request: pb::PowershelfRequest,
        on: bool,
    ) -> pb::PowerControlResponse {
        self.arrive(rpc, request.pmc_macs.clone()).await;
        let mut state = self.lock();
        let mut responses = Vec::new();
        for mac in request.pmc_macs.iter().map(|m| m.to_ascii_lowercase()) {
            let (status, error) = Self::verdict(&state, &mac);
            if status == code(pb::StatusCode::Success)
                && let Some(shelf) = state.shelves.get_mut(&mac)
            {
                shelf.psus.iter_mut().for_each(|p| *p = on);
            }
            responses.push(pb::PowershelfResponse {
                pmc_mac_address: mac,
                status,
                error,
            });
        }
        pb::PowerControlResponse { responses }
    }
}

#[tonic::async_trait]
impl PowershelfManager for Fake {
    async fn register_powershelves(
        &self,
        request: Request<pb::RegisterPowershelvesRequest>,
    ) -> Result<Response<pb::RegisterPowershelvesResponse>, Status> {
        let request = request.into_inner();
        let macs = request
            .registration_requests
            .iter()
            .map(|r| r.pmc_mac_address.clone());
        self.arrive("RegisterPowershelves", macs).await;
        let mut state = self.lock();
        let mut responses = Vec::new();
        for registration in request.registration_requests {
            let mac = registration.pmc_mac_address.to_ascii_lowercase();
            state.registrations.push(registration);
            let failing = state.failing.contains(&mac);
            let is_new = !failing && !state.shelves.contains_key(&mac);
            if is_new {
                state.shelves.insert(
                    mac.clone(),
                    Shelf {
                        psus: vec![false; PSUS_PER_SHELF],
                        ..Shelf::default()
                    },
                );
            }
            let (status, error) = if failing {
                (
                    code(pb::StatusCode::InternalError),
                    format!("PMC {mac} did not respond"),
                )
            } else {
                (code(pb::StatusCode::Success), String::new())
            };
            responses.push(pb::RegisterPowershelfResponse {
                pmc_mac_address: mac,
                is_new,
                created: None,
                status,
                error,
            });
        }
        Ok(Response::new(pb::RegisterPowershelvesResponse {
            responses,
        }))
    }

    async fn get_powershelves(
        &self,
        request: Request<pb::PowershelfRequest>,
    ) -> Result<Response<pb::GetPowershelvesResponse>, Status> {
        let request = request.into_inner();
        self.arrive("GetPowershelves", request.pmc_macs.clone())
            .await;
        let state = self.lock();
        let wanted: BTreeSet<String> = request
            .pmc_macs
            .iter()
            .map(|m| m.to_ascii_lowercase())
            .collect();
        let powershelves = state
            .shelves
            .iter()
            .filter(|(mac, _)| wanted.is_empty() || wanted.contains(*mac))
            .map(|(mac, shelf)| pb::PowerShelf {
                pmc: Some(pb::PowerManagementController {
                    mac_address: mac.clone(),
                    vendor: pb::PmcVendor::PmcTypeLiteon as i32,
                    firmware_version: shelf.firmware.clone(),
                    ..Default::default()
                }),
                chassis: None,
                psus: shelf
                    .psus
                    .iter()
                    .enumerate()
                    .map(|(i, on)| pb::PowerSupplyUnit {
                        id: format!("PSU{i}"),
                        power_state: *on,
                        ..Default::default()
                    })
                    .collect(),
            })
            .collect();
        Ok(Response::new(pb::GetPowershelvesResponse { powershelves }))
    }

    async fn update_firmware(
        &self,
        request: Request<pb::UpdateFirmwareRequest>,
    ) -> Result<Response<pb::UpdateFirmwareResponse>, Status> {
        let request = request.into_inner();
        let macs = request.upgrades.iter().map(|u| u.pmc_mac_address.clone());
        self.arrive("UpdateFirmware", macs).await;
        let mut state = self.lock();
        let mut responses = Vec::new();
        for upgrade in request.upgrades {
            let mac = upgrade.pmc_mac_address.to_ascii_lowercase();
            state.upgrades.push(upgrade.clone());
            let (status, error) = Self::verdict(&state, &mac);
            if status == code(pb::StatusCode::Success)
                && let Some(shelf) = state.shelves.get_mut(&mac)
            {
                shelf.update = Some(FakeUpdate {
                    components: upgrade
                        .components
                        .iter()
                        .filter_map(|c| pb::PowershelfComponent::try_from(c.component).ok())
                        .collect(),
                    version: upgrade
                        .components
                        .iter()
                        .find_map(|c| c.upgrade_to.as_ref().map(|v| v.version.clone()))
                        .unwrap_or_default(),
                    polls: 0,
                });
            }
            let components = upgrade
                .components
                .iter()
                .map(|c| pb::UpdateComponentFirmwareResponse {
                    component: c.component,
                    status,
                    error: error.clone(),
                })
                .collect();
            responses.push(pb::UpdatePowershelfFirmwareResponse {
                pmc_mac_address: mac,
                components,
            });
        }
        Ok(Response::new(pb::UpdateFirmwareResponse { responses }))
    }

    async fn get_firmware_update_status(
        &self,
        request: Request<pb::GetFirmwareUpdateStatusRequest>,
    ) -> Result<Response<pb::GetFirmwareUpdateStatusResponse>, Status> {
        let request = request.into_inner();
        let macs = request.queries.iter().map(|q| q.pmc_mac_address.clone());
        self.arrive("GetFirmwareUpdateStatus", macs).await;
        let mut state = self.lock();
        let mut statuses = Vec::new();
        for query in request.queries {
            let mac = query.pmc_mac_address.to_ascii_lowercase();
            let (status, mut error) = Self::verdict(&state, &mac);
            let mut progress = pb::FirmwareUpdateState::Unknown;
            if status == code(pb::StatusCode::Success)
                && let Some(update) = state.shelves.get_mut(&mac).and_then(|s| s.update.as_mut())
            {
                update.polls += 1;
                progress = match update.polls {
                    1 => pb::FirmwareUpdateState::Queued,
                    n if n < POLLS_TO_COMPLETE => pb::FirmwareUpdateState::Verifying,
                    _ if update.version == "fail" => {
                        error = format!("image {} rejected by PMC", update.version);
                        pb::FirmwareUpdateState::Failed
                    }
                    _ => pb::FirmwareUpdateState::Completed,
                };
            }
            statuses.push(pb::FirmwareUpdateStatus {
                pmc_mac_address: mac,
                component: query.component,
                state: progress as i32,
                status,
                error,
            });
        }
        Ok(Response::new(pb::GetFirmwareUpdateStatusResponse {
            statuses,
        }))
    }

    async fn list_available_firmware(
        &self,
        request: Request<pb::PowershelfRequest>,
    ) -> Result<Response<pb::ListAvailableFirmwareResponse>, Status> {
        let request = request.into_inner();
        self.arrive("ListAvailableFirmware", request.pmc_macs.clone())
            .await;
        Ok(Response::new(pb::ListAvailableFirmwareResponse::default()))
    }

    async fn set_dry_run(
        &self,
        request: Request<pb::SetDryRunRequest>,
    ) -> Result<Response<()>, Status> {
        self.arrive("SetDryRun", []).await;
        self.lock().dry_run = request.into_inner().dry_run;
        Ok(Response::new(()))
    }

    async fn power_off(
        &self,
        request: Request<pb::PowershelfRequest>,
    ) -> Result<Response<pb::PowerControlResponse>, Status> {
        Ok(Response::new(
            self.set_power("PowerOff", request.into_inner(), false)
                .await,
        ))
    }

    async fn power_on(
        &self,
        request: Request<pb::PowershelfRequest>,
    ) -> Result<Response<pb::PowerControlResponse>, Status> {
        Ok(Response::new(
            self.set_power("PowerOn", request.into_inner(), true).await,
        ))
    }
}
