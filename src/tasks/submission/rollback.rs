//! Firmware downgrade and rollback (the original's `downgrade` and `rollback` codes): both run
//! the upgrade's recipe path to an older version. A rollback's versions come from the firmware
//! history (the version each component ran before its last successful upgrade), one per
//! component type; both are refused where the catalog has no recipe of the version asked.

use std::collections::BTreeMap;

use super::recipes::RecipeStatus;
use super::{planner, preview};
use crate::domain::ComponentType;
use crate::domain::device::FirmwareRequest;
use crate::domain::operation::OperationSpec;
use crate::error::{Code, Error, FieldError, Result};
use crate::inventory::firmware_history;
use crate::inventory::targets as resolve;
use crate::tasks::TaskService;

impl TaskService {
    /// The per-type versions a rollback of `spec`'s targets returns to. `409`
    /// `no_firmware_history` naming each component without a recorded version, or each type
    /// whose components would go back to different versions (one task runs one version per
    /// type: roll those back in separate requests).
    pub async fn rollback_versions(&self, spec: &OperationSpec) -> Result<FirmwareRequest> {
        preview::check(&self.db, spec).await?;
        let work = planner::narrow(
            spec,
            resolve::resolve(&self.db, &spec.targets).await?,
            self.managers.as_deref(),
        );
        let devices: Vec<_> = work.iter().flat_map(|r| &r.devices).collect();
        let ids: Vec<_> = devices.iter().map(|d| d.component_id).collect();
        let history = firmware_history::previous_versions(&self.db, &ids).await?;
        let mut errors = Vec::new();
        let mut per_type: BTreeMap<ComponentType, String> = BTreeMap::new();
        for device in &devices {
            let field = format!("components.{}", device.name);
            let Some(previous) = history.get(&device.component_id) else {
                errors.push(FieldError::new(
                    field,
                    "no version recorded before its last upgrade: nothing to roll back to",
                ));
                continue;
            };
            match per_type.get(&device.kind) {
                Some(other) if other != previous => errors.push(FieldError::new(
                    field,
                    format!(
                        "would go back to {previous}, other {} components to {other}: roll them back separately",
                        device.kind.as_str()
                    ),
                )),
                Some(_) => {}
                None => {
                    per_type.insert(device.kind, previous.clone());
                }
            }
        }
        if !errors.is_empty() {
            let names: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
            return Err(Error::Conflict {
                code: Code::NoFirmwareHistory,
                message: format!("cannot roll back {}", names.join(", ")),
                errors,
            });
        }
        let versions: serde_json::Map<String, serde_json::Value> = per_type
            .into_iter()
            .map(|(kind, v)| (kind.as_str().to_string(), serde_json::Value::String(v)))
            .collect();
        Ok(FirmwareRequest {
            target_version: Some(serde_json::Value::Object(versions).to_string()),
            sub_targets: Vec::new(),
        })
    }

    /// `409` `no_catalog_entry` naming every targeted component whose manager has no recipe
    /// of the version `spec` asks for it (a downgrade or rollback goes through recipes only).
    pub async fn require_recipes(&self, spec: &OperationSpec) -> Result<()> {
        let mut errors = Vec::new();
        for rack in self.preview(spec).await? {
            let Some(plan) = rack.firmware else { continue };
            for c in plan
                .components
                .iter()
                .filter(|c| c.status != RecipeStatus::Recipe)
            {
                let version = c.version.as_deref().unwrap_or("(none)");
                errors.push(FieldError::new(
                    format!("components.{}", c.name),
                    format!(
                        "the firmware catalog has no {} recipe of version {version}",
                        c.kind.as_str()
                    ),
                ));
            }
        }
        if errors.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        Err(Error::Conflict {
            code: Code::NoCatalogEntry,
            message: format!("no catalog entry for {}", names.join(", ")),
            errors,
        })
    }
}
