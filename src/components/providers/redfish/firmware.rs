//! Firmware: a catalog `file` pushed to `MultipartHttpPushUri` (else `HttpPushUri`), or an
//! `image_uri` through `SimpleUpdate` where the BMC offers it. The task is followed to its end —
//! its monitor answers 202 while it runs, 204 once, then 404, so the Task resource itself is read
//! for the outcome — and the install is proven by the catalog's `expect` FirmwareInventory
//! members, read one by one.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::RedfishManager;
use super::catalog::Bundle;
use crate::clients::redfish::{Upload, sha256_file};
use crate::components::{
    Device, DeviceError, FirmwareControl, FirmwareRequest, FirmwareState, FirmwareStatus,
};

/// A firmware update in flight on one device: what to follow and what proves it. It is also
/// the handle a retried step resumes from, so it serialises.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Update {
    monitor: Option<String>,
    task: Option<String>,
    /// The monitor already said the task ended (204 or 404): only the Task is read now.
    monitor_done: bool,
    version: String,
    expect: BTreeMap<String, String>,
    /// The bundle's images wait for an activation: the task's end is the push's end, and
    /// `expect` is proven only after the activation.
    #[serde(default)]
    staged: bool,
}

/// Where an image goes: pushed whole as multipart or bare, or fetched by the BMC.
#[derive(Debug, Clone)]
pub(super) enum Route {
    Multipart(String),
    Raw(String),
    Simple(String),
}

/// `TaskState` as a firmware state (`Completed` still needs the install proven).
fn task_state(task: &Value) -> FirmwareState {
    match task.get("TaskState").and_then(Value::as_str) {
        Some("New" | "Pending" | "Starting") => FirmwareState::Queued,
        Some("Completed") => FirmwareState::Completed,
        Some("Exception" | "Killed" | "Cancelled") => FirmwareState::Failed,
        Some(_) => FirmwareState::InProgress,
        None => FirmwareState::Unknown,
    }
}

/// What a task says, from its `Messages`.
fn task_messages(task: &Value) -> Option<String> {
    let messages: Vec<&str> = task
        .get("Messages")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|m| m.get("Message").and_then(Value::as_str))
        .collect();
    (!messages.is_empty()).then(|| messages.join("; "))
}

fn status(state: FirmwareState, version: Option<String>, error: Option<String>) -> FirmwareStatus {
    FirmwareStatus {
        state,
        version,
        error,
    }
}

fn named(device: &Device, why: String) -> String {
    format!("{} {}: {why}", device.kind, device.name)
}

impl RedfishManager {
    fn tracked(&self, device: &Device) -> Option<Update> {
        self.updates
            .lock()
            .ok()
            .and_then(|u| u.get(&device.component_id).cloned())
    }

    fn track(&self, device: &Device, update: Update) {
        if let Ok(mut updates) = self.updates.lock() {
            updates.insert(device.component_id, update);
        }
    }

    /// The FirmwareInventory collection's path, from the update service.
    async fn inventory_path(&self, device: &Device) -> Result<Option<String>, DeviceError> {
        let Some(path) = self.resources(device).await?.update_service else {
            return Ok(None);
        };
        let service = self.get(device, &path).await?;
        Ok(service
            .pointer("/FirmwareInventory/@odata.id")
            .and_then(Value::as_str)
            .map(String::from))
    }

    /// The version one FirmwareInventory member runs.
    pub(super) async fn member_version(
        &self,
        device: &Device,
        member: &str,
    ) -> Result<Option<String>, DeviceError> {
        let Some(inventory) = self.inventory_path(device).await? else {
            return Ok(None);
        };
        let entry = self
            .get(
                device,
                &format!("{}/{member}", inventory.trim_end_matches('/')),
            )
            .await?;
        Ok(entry
            .get("Version")
            .and_then(Value::as_str)
            .map(String::from))
    }

    /// Done when every `expect` member runs its version; without `expect`, when the system's
    /// BIOS or the manager's firmware version is the target.
    async fn confirm(
        &self,
        device: &Device,
        update: &Update,
    ) -> Result<FirmwareStatus, DeviceError> {
        if update.staged {
            return Ok(status(FirmwareState::Completed, None, None));
        }
        for (member, want) in &update.expect {
            let seen = self.member_version(device, member).await?;
            if seen.as_deref().map(str::trim) != Some(want.trim()) {
                let seen = seen.unwrap_or_else(|| "nothing".into());
                return Ok(status(
                    FirmwareState::Verifying,
                    Some(format!("{member} runs {seen}, expected {want}")),
                    None,
                ));
            }
        }
        if update.expect.is_empty() {
            let running = self.whole_version(device).await?;
            if running.as_deref().map(str::trim) != Some(update.version.trim()) {
                return Ok(status(FirmwareState::Verifying, running, None));
            }
        }
        Ok(status(
            FirmwareState::Completed,
            Some(update.version.clone()),
            None,
        ))
    }

    /// The one version a BMC states for the whole device: the system's BIOS version, else its
    /// manager's firmware version.
    pub(super) async fn whole_version(
        &self,
        device: &Device,
    ) -> Result<Option<String>, DeviceError> {
        let resources = self.resources(device).await?;
        let system = self.get(device, &resources.system).await?;
        if let Some(v) = system.get("BiosVersion").and_then(Value::as_str) {
            return Ok(Some(v.to_string()));
        }
        let Some(path) = &resources.manager else {
            return Ok(None);
        };
        let manager = self.get(device, path).await?;
        Ok(manager
            .get("FirmwareVersion")
            .and_then(Value::as_str)
            .map(String::from))
    }

    /// How the BMC takes `image`, read from its UpdateService before anything is sent:
    /// `unsupported` when it offers no path for it.
    pub(super) async fn route(
        &self,
        device: &Device,
        image: &Bundle,
    ) -> Result<Route, DeviceError> {
        let resources = self.resources(device).await?;
        let unsupported = |why: &str| DeviceError::Unsupported(named(device, why.into()));
        let service_path = resources
            .update_service
            .clone()
            .ok_or_else(|| unsupported("the BMC has no UpdateService"))?;
        let service = self.get(device, &service_path).await?;
        let uri = |k: &str| service.get(k).and_then(Value::as_str).map(String::from);
        if image.file.is_some() {
            return match (uri("MultipartHttpPushUri"), uri("HttpPushUri")) {
                (Some(target), _) => Ok(Route::Multipart(target)),
                (None, Some(target)) => Ok(Route::Raw(target)),
                (None, None) => Err(unsupported(
                    "the BMC offers neither MultipartHttpPushUri nor HttpPushUri",
                )),
            };
        }
        service
            .pointer("/Actions/#UpdateService.SimpleUpdate/target")
            .and_then(Value::as_str)
            .map(|t| Route::Simple(t.to_string()))
            .ok_or_else(|| {
                unsupported(
                    "the BMC offers no UpdateService.SimpleUpdate for an image_uri (give the \
                     catalog entry a file to push)",
                )
            })
    }

    /// Sends the image the way the BMC takes it; the answer names the task.
    async fn send_image(
        &self,
        device: &Device,
        image: &Bundle,
    ) -> Result<crate::clients::redfish::Reply, DeviceError> {
        let route = self.route(device, image).await?;
        if let Some(file) = &image.file {
            if let Some(want) = &image.sha256 {
                let got = sha256_file(file.clone()).await.map_err(|e| {
                    DeviceError::Rejected(named(device, format!("{}: {e}", file.display())))
                })?;
                if !got.eq_ignore_ascii_case(want.trim()) {
                    return Err(DeviceError::Rejected(named(
                        device,
                        format!(
                            "{} has SHA-256 {got}, the catalog says {want}: not sent",
                            file.display()
                        ),
                    )));
                }
            }
            let (target, upload) = match route {
                Route::Multipart(target) => {
                    let mut parameters = json!({"@Redfish.OperationApplyTime": "Immediate"});
                    if !image.targets.is_empty() {
                        parameters["Targets"] = json!(image.targets);
                    }
                    (
                        target,
                        Upload::Multipart {
                            parameters,
                            file: file.clone(),
                        },
                    )
                }
                Route::Raw(target) | Route::Simple(target) => {
                    (target, Upload::Raw { file: file.clone() })
                }
            };
            let bmc = Self::bmc(device)?;
            return self
                .client
                .push(bmc, &target, &upload)
                .await
                .map_err(|e| super::about(device, e));
        }
        let (Route::Simple(target) | Route::Raw(target) | Route::Multipart(target)) = route;
        let image_uri = image.image_uri.clone().unwrap_or_default();
        let targets = if image.targets.is_empty() {
            vec![self.resources(device).await?.system.clone()]
        } else {
            image.targets.clone()
        };
        let mut body = json!({"ImageURI": image_uri, "Targets": targets});
        if let Some((protocol, _)) = image_uri.split_once("://") {
            body["TransferProtocol"] = json!(protocol.to_ascii_uppercase());
        }
        self.post(device, &target, &body).await
    }

    /// Where the task stands: `Ok(None)` while its monitor says it runs, else the Task.
    async fn task_body(
        &self,
        device: &Device,
        update: &mut Update,
    ) -> Result<Option<Value>, DeviceError> {
        if let Some(monitor) = update.monitor.clone().filter(|_| !update.monitor_done) {
            let bmc = Self::bmc(device)?;
            match self
                .client
                .request(bmc, reqwest::Method::GET, &monitor, None)
                .await
            {
                Ok(reply) if reply.body.get("TaskState").is_some() => return Ok(Some(reply.body)),
                Ok(reply) if reply.status == 202 => return Ok(None),
                // 204: the task just ended; the Task says how.
                Ok(_) => update.monitor_done = true,
                // The monitor is gone once the end was reported: the Task stays.
                Err(e) if e.status() == Some(404) => update.monitor_done = true,
                Err(e) => return Err(super::about(device, e)),
            }
        }
        let task = update.task.clone().or_else(|| {
            update
                .monitor
                .as_deref()
                .and_then(|m| m.strip_suffix("/Monitor"))
                .map(String::from)
        });
        match task {
            Some(task) => self.get(device, &task).await.map(Some),
            None => Ok(Some(json!({"TaskState": "Completed"}))),
        }
    }
}

#[async_trait]
impl FirmwareControl for RedfishManager {
    async fn start_update(
        &self,
        device: &Device,
        request: &FirmwareRequest,
    ) -> Result<(), DeviceError> {
        self.start_bundle(device, request, 0).await
    }

    fn recipe(
        &self,
        device: &Device,
        request: &FirmwareRequest,
    ) -> Option<crate::components::RecipeView> {
        let version = request.target_version.as_deref()?;
        self.catalog
            .find(device.kind, device.model.as_deref(), version)
            .map(|image| image.view())
    }

    async fn start_bundle(
        &self,
        device: &Device,
        request: &FirmwareRequest,
        index: u32,
    ) -> Result<(), DeviceError> {
        use crate::components::Preflight;
        if let Some(gap) = self.firmware_gap(device, request) {
            return Err(DeviceError::Unsupported(gap));
        }
        let version = request.target_version.clone().unwrap_or_default();
        let recipe = self
            .catalog
            .find(device.kind, device.model.as_deref(), &version)
            .map(|image| image.recipe())
            .ok_or_else(|| DeviceError::Unsupported(format!("version {version} not in catalog")))?;
        let bundle = recipe.get(index as usize).cloned().ok_or_else(|| {
            DeviceError::Unsupported(named(
                device,
                format!(
                    "recipe {version} has {} bundle(s), no bundle {index}",
                    recipe.len()
                ),
            ))
        })?;
        let reply = self.send_image(device, &bundle).await?;
        // The task: a `Location` task monitor, and the Task resource the body names.
        let task = super::odata_id(&reply.body).filter(|id| id.contains("Task"));
        self.track(
            device,
            Update {
                monitor: reply.location.clone(),
                task,
                monitor_done: false,
                version,
                expect: bundle.expect.clone(),
                staged: bundle.activate != crate::components::Activation::None,
            },
        );
        Ok(())
    }

    async fn part_versions(
        &self,
        device: &Device,
        parts: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, DeviceError> {
        let mut seen = BTreeMap::new();
        for part in parts {
            seen.insert(part.clone(), self.member_version(device, part).await?);
        }
        Ok(seen)
    }

    fn update_handle(&self, device: &Device) -> Option<String> {
        serde_json::to_string(&self.tracked(device)?).ok()
    }

    fn resume_update(&self, device: &Device, handle: &str) -> bool {
        match serde_json::from_str::<Update>(handle) {
            Ok(update) => {
                self.track(device, update);
                true
            }
            Err(_) => false,
        }
    }

    async fn update_status(&self, device: &Device) -> Result<FirmwareStatus, DeviceError> {
        let Some(mut update) = self.tracked(device) else {
            // Nothing in flight here (another worker started it, or this one restarted): the
            // running version is all that can be known.
            let running = self.whole_version(device).await?;
            return Ok(status(FirmwareState::Unknown, running, None));
        };
        let body = self.task_body(device, &mut update).await;
        self.track(device, update.clone());
        let Some(task) = body? else {
            return Ok(status(FirmwareState::InProgress, None, None));
        };
        match task_state(&task) {
            FirmwareState::Completed | FirmwareState::Unknown => {
                self.confirm(device, &update).await
            }
            FirmwareState::Failed => Ok(status(
                FirmwareState::Failed,
                None,
                Some(named(
                    device,
                    format!(
                        "the BMC's task ended {}: {}",
                        task["TaskState"].as_str().unwrap_or("failed"),
                        task_messages(&task).unwrap_or_else(|| "no message".into())
                    ),
                )),
            )),
            other => Ok(status(other, None, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_states_map_to_firmware_states() {
        assert_eq!(
            task_state(&json!({"TaskState": "Running"})),
            FirmwareState::InProgress
        );
        assert_eq!(
            task_state(&json!({"TaskState": "Pending"})),
            FirmwareState::Queued
        );
        assert_eq!(
            task_state(&json!({"TaskState": "Completed"})),
            FirmwareState::Completed
        );
        assert_eq!(
            task_state(&json!({"TaskState": "Exception"})),
            FirmwareState::Failed
        );
        assert_eq!(task_state(&json!({})), FirmwareState::Unknown);
        let failed = json!({"Messages": [{"Message": "Image corrupt"}]});
        assert_eq!(task_messages(&failed).as_deref(), Some("Image corrupt"));
    }
}
