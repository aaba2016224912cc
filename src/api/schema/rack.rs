//! Rack request and response bodies.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::{LocationDoc, free_text, optional_text, required_text};
use super::component::{ComponentDoc, ComponentInput};
use super::drift::DriftSummaryDoc;
use crate::api::extract::double_option;
use crate::error::{Error, Result, Violations};
use crate::inventory::model::{NewRack, PatchReport, Rack, RackPatch};

/// An expected rack with everything it should contain, created in one transaction.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "name": "g10",
    "manufacturer": "Wiwynn",
    "serial_number": "B8111801000951700005Y0SA",
    "model": "GB200 NVL72",
    "description": "GB200 NVL72 rack in hall DH-02",
    "location": {"region": "MY", "datacenter": "jhb01", "room": "EW-F00-DH-02", "position": "EW-F00-DH-02-G10"},
    "components": [{
        "type": "compute",
        "name": "gpu17-nvl5-gp2-cin1-jhb01",
        "manufacturer": "WiWynn",
        "model": "GB200 Compute Tray",
        "serial_number": "B8111801000851500108Y0SA",
        "firmware_version": "FW 1.2.00GA",
        "position": {"slot_id": 36, "tray_idx": 16, "host_id": 0},
        "bmcs": [
            {"type": "host", "mac_address": "d8:19:09:00:04:af"},
            {"type": "dpu", "mac_address": "e0:9d:73:80:c0:59"},
            {"type": "dpu", "mac_address": "e0:9d:73:88:de:1b"}
        ]
    }]
}))]
pub struct CreateRackRequest {
    pub name: String,
    pub manufacturer: String,
    pub serial_number: String,
    pub model: Option<String>,
    /// Plain text, returned exactly as given.
    pub description: Option<String>,
    pub location: Option<LocationDoc>,
    #[serde(default)]
    pub components: Vec<ComponentInput>,
}

impl CreateRackRequest {
    pub fn into_domain(self) -> Result<NewRack> {
        let mut v = Violations::default();
        let name = required_text(&mut v, "name", &self.name);
        let manufacturer = required_text(&mut v, "manufacturer", &self.manufacturer);
        let serial_number = required_text(&mut v, "serial_number", &self.serial_number);
        let model = optional_text(&mut v, "model", &self.model);
        let description = free_text(&mut v, "description", &self.description);
        let location = self
            .location
            .unwrap_or_default()
            .to_domain("location", &mut v);
        let components = components_to_domain(&self.components, &mut v);
        v.finish()?;
        Ok(NewRack {
            name,
            manufacturer,
            serial_number,
            model,
            description,
            location,
            components: components?,
        })
    }
}

/// Validates the components of a rack body; a `rack_id` inside a rack is refused.
fn components_to_domain(
    inputs: &[ComponentInput],
    v: &mut Violations,
) -> Result<Vec<crate::inventory::model::NewComponent>> {
    use crate::inventory::model::MAX_COMPONENTS_PER_RACK;
    if inputs.len() > MAX_COMPONENTS_PER_RACK {
        v.push(
            "components",
            format!(
                "at most {MAX_COMPONENTS_PER_RACK} components per rack, not {}",
                inputs.len()
            ),
        );
        return Ok(Vec::new());
    }
    let mut out = Vec::with_capacity(inputs.len());
    for (i, c) in inputs.iter().enumerate() {
        let path = format!("components[{i}]");
        if c.rack_id.is_some() {
            v.push(
                format!("{path}.rack_id"),
                "not allowed inside a rack: the component goes into this rack",
            );
        }
        if let Some(component) = c.to_domain(&path, v) {
            out.push(component);
        }
    }
    if out.len() == inputs.len() {
        Ok(out)
    } else {
        Err(Error::Internal("component failed validation".into()))
    }
}

/// A stored rack.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "0192f3a0-0000-7000-8000-000000000001", "name": "g10", "manufacturer": "Wiwynn",
    "serial_number": "B8111801000951700005Y0SA", "model": "GB200 NVL72", "description": null,
    "location": {"region": "MY", "datacenter": "jhb01", "room": "EW-F00-DH-02", "position": "EW-F00-DH-02-G10"},
    "nvl_domain_id": null, "revision": 1, "created_at": "2026-11-30T14:00:00Z", "updated_at": "2026-11-30T14:00:00Z",
    "drift": {"missing": 0, "unexpected": 0, "mismatch": 1, "unreachable": 0, "rejected": 0, "stale": 0},
    "in_maintenance": false, "maintenance_task_ids": []
}))]
pub struct RackDoc {
    pub id: Uuid,
    pub name: String,
    pub manufacturer: String,
    pub serial_number: String,
    pub model: Option<String>,
    pub description: Option<String>,
    pub location: LocationDoc,
    pub nvl_domain_id: Option<Uuid>,
    /// Current version; the same value is the `ETag`.
    pub revision: i64,
    #[serde(serialize_with = "super::time::rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "super::time::rfc3339")]
    pub updated_at: DateTime<Utc>,
    /// Present when asked for (`include_components=true`, and always after create and patch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub components: Option<Vec<ComponentDoc>>,
    /// Drift the last sync recorded for the rack's components, by kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftSummaryDoc>,
    /// Whether a task runs on the rack now, its components under planned work (each listed
    /// component says whether it is one of them). Read-only.
    pub in_maintenance: bool,
    /// The tasks running on the rack, oldest first.
    pub maintenance_task_ids: Vec<Uuid>,
}

impl From<Rack> for RackDoc {
    fn from(r: Rack) -> Self {
        Self {
            id: r.id.into(),
            name: r.name,
            manufacturer: r.manufacturer,
            serial_number: r.serial_number,
            model: r.model,
            description: r.description,
            location: r.location.into(),
            nvl_domain_id: r.nvl_domain_id.map(Into::into),
            revision: r.revision,
            created_at: r.created_at,
            updated_at: r.updated_at,
            components: r
                .components
                .map(|cs| cs.into_iter().map(Into::into).collect()),
            drift: None,
            in_maintenance: false,
            maintenance_task_ids: Vec::new(),
        }
    }
}

/// Merge patch of a location: each key absent keeps, `null` clears, a value sets.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LocationPatch {
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub region: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub datacenter: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub room: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub position: Option<Option<String>>,
}

/// Merge patch of a rack. Listed components are matched to the rack's by manufacturer and
/// serial number: known ones are updated (firmware, description, position, model, name, BMCs
/// added or re-addressed), new ones are added. Nothing is removed.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"location": {"room": "EW-F00-DH-03"}, "components": [{"type": "compute", "name": "gpu17-nvl5-gp2-cin1-jhb01", "manufacturer": "WiWynn", "serial_number": "B8111801000851500108Y0SA", "firmware_version": "FW 1.3.00GA"}]}))]
pub struct RackPatchInput {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub model: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    pub location: Option<LocationPatch>,
    #[serde(default)]
    pub components: Vec<ComponentInput>,
}

impl RackPatchInput {
    pub fn into_domain(self) -> Result<RackPatch> {
        let mut v = Violations::default();
        let name = self
            .name
            .as_deref()
            .map(|n| required_text(&mut v, "name", n));
        let model = self
            .model
            .as_ref()
            .map(|m| optional_text(&mut v, "model", m));
        let description = self
            .description
            .as_ref()
            .map(|d| free_text(&mut v, "description", d));
        let loc = self.location.unwrap_or_default();
        let mut text = |field: &str, x: &Option<Option<String>>| {
            x.as_ref()
                .map(|inner| optional_text(&mut v, &format!("location.{field}"), inner))
        };
        let (region, datacenter, room, position) = (
            text("region", &loc.region),
            text("datacenter", &loc.datacenter),
            text("room", &loc.room),
            text("position", &loc.position),
        );
        let components = components_to_domain(&self.components, &mut v);
        v.finish()?;
        Ok(RackPatch {
            name,
            model,
            description,
            region,
            datacenter,
            room,
            position,
            components: components?,
        })
    }
}

/// What a rack patch did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PatchReportDoc {
    /// `patched` or `no_change` for the rack's own fields.
    pub rack: String,
    pub components: Vec<ComponentChangeDoc>,
}

/// What a rack patch did to one listed component.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ComponentChangeDoc {
    pub component_id: Uuid,
    pub manufacturer: String,
    pub serial_number: String,
    /// `added`, `patched` or `no_change`.
    pub result: String,
    /// Result per listed BMC MAC.
    pub bmcs: BTreeMap<String, String>,
}

impl From<PatchReport> for PatchReportDoc {
    fn from(r: PatchReport) -> Self {
        Self {
            rack: r.rack.as_str().into(),
            components: r
                .components
                .into_iter()
                .map(|c| ComponentChangeDoc {
                    component_id: c.component_id.into(),
                    manufacturer: c.manufacturer,
                    serial_number: c.serial_number,
                    result: c.change.as_str().into(),
                    bmcs: c
                        .bmcs
                        .into_iter()
                        .map(|(mac, ch)| (mac, ch.as_str().into()))
                        .collect(),
                })
                .collect(),
        }
    }
}

/// The patched rack (with components) and what changed.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RackPatchResponse {
    pub rack: RackDoc,
    pub report: PatchReportDoc,
}
