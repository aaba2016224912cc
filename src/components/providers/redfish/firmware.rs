//! Firmware through `UpdateService.SimpleUpdate`: the image comes from the catalog, the targets
//! from the discovered system; the returned task (monitor or TaskService task) is followed,
//! then the running version is confirmed from `FirmwareInventory` or the system itself.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{RedfishManager, Update, members};
use crate::components::{
    Device, DeviceError, FirmwareControl, FirmwareRequest, FirmwareState, FirmwareStatus,
};

/// `TaskState` as a firmware state (`Completed` still needs the version confirmed).
fn task_state(task: &Value) -> FirmwareState {
    match task.get("TaskState").and_then(Value::as_str) {
        Some("New" | "Pending" | "Starting") => FirmwareState::Queued,
        Some("Completed") => FirmwareState::Completed,
        Some("Exception" | "Killed" | "Cancelled") => FirmwareState::Failed,
        Some(_) => FirmwareState::InProgress,
        None => FirmwareState::Unknown,
    }
}

/// What a failed task says, from its `Messages`.
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

impl RedfishManager {
    fn tracked(&self, device: &Device) -> Option<Update> {
        self.updates
            .lock()
            .ok()
            .and_then(|u| u.get(&device.component_id).cloned())
    }

    /// The versions the BMC reports running: the system's BIOS version and every firmware
    /// inventory entry's.
    async fn running_versions(&self, device: &Device) -> Result<Vec<String>, DeviceError> {
        let resources = self.resources(device).await?;
        let system = self.get(device, &resources.system).await?;
        let mut versions: Vec<String> = system
            .get("BiosVersion")
            .and_then(Value::as_str)
            .map(String::from)
            .into_iter()
            .collect();
        if let Some(path) = &resources.update_service {
            let service = self.get(device, path).await?;
            if let Some(inventory) = service
                .pointer("/FirmwareInventory/@odata.id")
                .and_then(Value::as_str)
            {
                // A BMC may list no inventory (or refuse it): the system's version still counts.
                if let Ok(list) = self.get(device, inventory).await {
                    for item in members(&list).iter().take(64) {
                        if let Ok(entry) = self.get(device, item).await
                            && let Some(v) = entry.get("Version").and_then(Value::as_str)
                        {
                            versions.push(v.to_string());
                        }
                    }
                }
            }
        }
        Ok(versions)
    }

    /// Once the task completed: done when the target version runs, still verifying otherwise.
    async fn confirm(&self, device: &Device, want: &str) -> Result<FirmwareStatus, DeviceError> {
        let running = self.running_versions(device).await?;
        if running.iter().any(|v| v.trim() == want.trim()) {
            Ok(status(
                FirmwareState::Completed,
                Some(want.to_string()),
                None,
            ))
        } else {
            Ok(status(
                FirmwareState::Verifying,
                running.first().cloned(),
                None,
            ))
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
        use crate::components::Preflight;
        if let Some(gap) = self.firmware_gap(device, request) {
            return Err(DeviceError::Unsupported(gap));
        }
        let version = request.target_version.clone().unwrap_or_default();
        let image = self
            .catalog
            .find(device.kind, device.model.as_deref(), &version)
            .cloned()
            .ok_or_else(|| DeviceError::Unsupported(format!("version {version} not in catalog")))?;
        let resources = self.resources(device).await?;
        let no_update = || {
            DeviceError::Unsupported(format!(
                "{} {}: the BMC offers no UpdateService.SimpleUpdate",
                device.kind, device.name
            ))
        };
        let service_path = resources.update_service.clone().ok_or_else(no_update)?;
        let service = self.get(device, &service_path).await?;
        let target = service
            .pointer("/Actions/#UpdateService.SimpleUpdate/target")
            .and_then(Value::as_str)
            .ok_or_else(no_update)?
            .to_string();
        let mut body = json!({"ImageURI": image.image_uri, "Targets": [resources.system]});
        if let Some(protocol) = image.image_uri.split("://").next()
            && image.image_uri.contains("://")
        {
            body["TransferProtocol"] = json!(protocol.to_ascii_uppercase());
        }
        let reply = self.post(device, &target, &body).await?;
        // The task: a `Location` task monitor, else the Task resource the body names.
        let task = reply
            .location
            .clone()
            .or_else(|| super::odata_id(&reply.body).filter(|id| id.contains("Task")));
        if let Ok(mut updates) = self.updates.lock() {
            updates.insert(device.component_id, Update { task, version });
        }
        Ok(())
    }

    async fn update_status(&self, device: &Device) -> Result<FirmwareStatus, DeviceError> {
        let Some(update) = self.tracked(device) else {
            // Nothing in flight here (another worker started it, or this one restarted): the
            // running version is all that can be known.
            let running = self.running_versions(device).await?;
            return Ok(status(
                FirmwareState::Unknown,
                running.first().cloned(),
                None,
            ));
        };
        let Some(task_path) = &update.task else {
            return self.confirm(device, &update.version).await;
        };
        let reply = self
            .client
            .request(Self::bmc(device)?, reqwest::Method::GET, task_path, None)
            .await
            .map_err(|e| super::about(device, e))?;
        // A task monitor answers 202 while the task runs; the Task itself says its state.
        if reply.status == 202 && reply.body.get("TaskState").is_none() {
            return Ok(status(FirmwareState::InProgress, None, None));
        }
        match task_state(&reply.body) {
            FirmwareState::Completed => self.confirm(device, &update.version).await,
            FirmwareState::Failed => Ok(status(
                FirmwareState::Failed,
                None,
                Some(format!(
                    "BMC task {} ended {}: {}",
                    task_path,
                    reply.body["TaskState"].as_str().unwrap_or("failed"),
                    task_messages(&reply.body).unwrap_or_else(|| "no message".into())
                )),
            )),
            // A monitor that answers 200 with the operation's result and no task: done.
            FirmwareState::Unknown if reply.status == 200 || reply.status == 204 => {
                self.confirm(device, &update.version).await
            }
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
