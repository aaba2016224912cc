//! Component request and response bodies.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::{
    BmcDoc, BmcInput, ComponentTypeDoc, PositionDoc, PowerStateDoc, free_text, optional_text,
    required_text,
};
use super::rack::RackDoc;
use crate::api::extract::double_option;
use crate::error::{Result, Violations};
use crate::inventory::model::{Component, ComponentPatch, NewComponent, Rack};

/// A component as given by a client: inside an expected rack, or on its own.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"rack_id": "0192f3a0-0000-7000-8000-000000000001", "type": "cdu", "name": "cdu-g10",
    "manufacturer": "Vertiv", "model": "XDU1350", "serial_number": "CDU-0001",
    "bmcs": [{"type": "host", "mac_address": "aa:bb:cc:00:00:01", "ip_address": "10.0.0.9"}]}))]
pub struct ComponentInput {
    /// Rack to put the component in (only for `POST /v1/components`; inside a rack it is implied).
    pub rack_id: Option<Uuid>,
    #[serde(rename = "type")]
    pub kind: ComponentTypeDoc,
    #[schema(example = "gpu17-nvl5-gp2-cin1-jhb01")]
    pub name: String,
    #[schema(example = "WiWynn")]
    pub manufacturer: String,
    #[schema(example = "GB200 Compute Tray")]
    pub model: Option<String>,
    #[schema(example = "B8111801000851500108Y0SA")]
    pub serial_number: String,
    #[schema(example = "FW 1.2.00GA")]
    pub firmware_version: Option<String>,
    pub description: Option<String>,
    pub position: Option<PositionDoc>,
    #[serde(default)]
    pub bmcs: Vec<BmcInput>,
}

impl ComponentInput {
    /// Validates into a domain component; problems go to `v` under `path` (empty for top level).
    pub fn to_domain(&self, path: &str, v: &mut Violations) -> Option<NewComponent> {
        let at = |field: &str| {
            if path.is_empty() {
                field.to_string()
            } else {
                format!("{path}.{field}")
            }
        };
        let name = required_text(v, &at("name"), &self.name);
        let manufacturer = required_text(v, &at("manufacturer"), &self.manufacturer);
        let serial_number = required_text(v, &at("serial_number"), &self.serial_number);
        let model = optional_text(v, &at("model"), &self.model);
        let firmware_version = optional_text(v, &at("firmware_version"), &self.firmware_version);
        let description = free_text(v, &at("description"), &self.description);
        let position = self
            .position
            .unwrap_or_default()
            .to_domain(&at("position"), v);
        if self.bmcs.len() > MAX_BMCS_PER_COMPONENT {
            v.push(
                at("bmcs"),
                format!(
                    "at most {MAX_BMCS_PER_COMPONENT} BMCs per component, not {}",
                    self.bmcs.len()
                ),
            );
            return None;
        }
        let bmcs: Vec<_> = self
            .bmcs
            .iter()
            .enumerate()
            .map(|(i, b)| b.to_domain(&at(&format!("bmcs[{i}]")), v))
            .collect();
        Some(NewComponent {
            rack_id: self.rack_id.map(Into::into),
            kind: self.kind.into(),
            name,
            manufacturer,
            model,
            serial_number,
            firmware_version,
            description,
            position,
            bmcs: bmcs.into_iter().collect::<Option<Vec<_>>>()?,
        })
    }

    /// Validates a stand-alone component (the body of `POST /v1/components`).
    pub fn into_domain(self) -> Result<NewComponent> {
        let mut v = Violations::default();
        let component = self.to_domain("", &mut v);
        v.finish()?;
        component.ok_or_else(|| crate::error::Error::Internal("validated component missing".into()))
    }
}

use crate::inventory::model::MAX_BMCS_PER_COMPONENT;

/// A stored component with its BMCs.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "0192f3a0-0000-7000-8000-000000000002", "rack_id": "0192f3a0-0000-7000-8000-000000000001",
    "type": "compute", "name": "gpu17-nvl5-gp2-cin1-jhb01", "manufacturer": "WiWynn", "model": "GB200 Compute Tray",
    "serial_number": "B8111801000851500108Y0SA", "firmware_version": "FW 1.2.00GA", "description": null,
    "position": {"slot_id": 36, "tray_idx": 16, "host_id": 0},
    "bmcs": [{"type": "host", "mac_address": "d8:19:09:00:04:af", "ip_address": null},
             {"type": "dpu", "mac_address": "e0:9d:73:80:c0:59", "ip_address": null}],
    "external_id": null, "power_state": null, "observed_firmware_version": null, "last_seen_at": null, "revision": 1,
    "created_at": "2026-11-30T14:00:00Z", "updated_at": "2026-11-30T14:00:00Z",
    "in_maintenance": false, "maintenance_task_id": null
}))]
pub struct ComponentDoc {
    pub id: Uuid,
    pub rack_id: Option<Uuid>,
    #[serde(rename = "type")]
    pub kind: ComponentTypeDoc,
    pub name: String,
    pub manufacturer: String,
    pub model: Option<String>,
    pub serial_number: String,
    pub firmware_version: Option<String>,
    pub description: Option<String>,
    pub position: PositionDoc,
    pub bmcs: Vec<BmcDoc>,
    /// The component's id in its device manager (read-only; set by inventory sync).
    pub external_id: Option<String>,
    /// Last observed power state (read-only).
    pub power_state: Option<PowerStateDoc>,
    /// Firmware version the device's manager last reported (read-only; set by inventory sync).
    pub observed_firmware_version: Option<String>,
    /// When inventory sync last saw the device in its manager (read-only).
    #[serde(serialize_with = "super::time::rfc3339_opt")]
    pub last_seen_at: Option<DateTime<Utc>>,
    /// Current version; the same value is the `ETag`.
    pub revision: i64,
    #[serde(serialize_with = "super::time::rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "super::time::rfc3339")]
    pub updated_at: DateTime<Utc>,
    /// Whether a running task operates on the component now: planned work, for which alerts
    /// may be inhibited (`flow_component_in_maintenance`). Read-only; ends with the task.
    pub in_maintenance: bool,
    /// The running task, while `in_maintenance`.
    pub maintenance_task_id: Option<Uuid>,
}

impl From<Component> for ComponentDoc {
    fn from(c: Component) -> Self {
        Self {
            id: c.id.into(),
            rack_id: c.rack_id.map(Into::into),
            kind: c.kind.into(),
            name: c.name,
            manufacturer: c.manufacturer,
            model: c.model,
            serial_number: c.serial_number,
            firmware_version: c.firmware_version,
            description: c.description,
            position: c.position.into(),
            bmcs: c.bmcs.into_iter().map(Into::into).collect(),
            external_id: c.external_id,
            power_state: c.power_state.map(Into::into),
            observed_firmware_version: c.observed_firmware_version,
            last_seen_at: c.last_seen_at,
            revision: c.revision,
            created_at: c.created_at,
            updated_at: c.updated_at,
            in_maintenance: false,
            maintenance_task_id: None,
        }
    }
}

/// A component and, when asked for with `with_rack=true`, the rack it is in.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ComponentWithRackDoc {
    pub component: ComponentDoc,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rack: Option<RackDoc>,
}

impl From<(Component, Option<Rack>)> for ComponentWithRackDoc {
    fn from((component, rack): (Component, Option<Rack>)) -> Self {
        Self {
            component: component.into(),
            rack: rack.map(Into::into),
        }
    }
}

/// Merge patch of a position: absent keeps, `null` clears, a number sets.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PositionPatch {
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i64>)]
    pub slot_id: Option<Option<i64>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i64>)]
    pub tray_idx: Option<Option<i64>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i64>)]
    pub host_id: Option<Option<i64>>,
}

/// Merge patch of a component: absent fields are kept, `null` clears an optional field.
/// Identity (type, manufacturer, serial) cannot change; `external_id` and `power_state` are
/// owned by device sync.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"firmware_version": "FW 1.3.00GA", "position": {"slot_id": 37},
    "bmcs": [{"type": "host", "mac_address": "d8:19:09:00:04:af", "ip_address": "10.0.0.17"}]}))]
pub struct ComponentPatchInput {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub model: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub firmware_version: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    pub position: Option<PositionPatch>,
    /// Move the component to this rack; `null` detaches it from its rack.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Uuid>)]
    pub rack_id: Option<Option<Uuid>>,
    /// BMCs to add; a MAC the component already has updates that BMC's type and IP.
    #[serde(default)]
    pub bmcs: Vec<BmcInput>,
}

impl ComponentPatchInput {
    pub fn into_domain(self) -> Result<ComponentPatch> {
        let mut v = Violations::default();
        let name = self
            .name
            .as_deref()
            .map(|n| required_text(&mut v, "name", n));
        let opt = |v: &mut Violations, f: &str, x: &Option<Option<String>>| {
            x.as_ref().map(|inner| optional_text(v, f, inner))
        };
        let model = opt(&mut v, "model", &self.model);
        let firmware_version = opt(&mut v, "firmware_version", &self.firmware_version);
        let description = self
            .description
            .as_ref()
            .map(|d| free_text(&mut v, "description", d));
        let position = self.position.unwrap_or_default();
        for (field, value) in [
            ("slot_id", position.slot_id),
            ("tray_idx", position.tray_idx),
            ("host_id", position.host_id),
        ] {
            if value.flatten().is_some_and(|n| n < 0) {
                v.push(format!("position.{field}"), "must not be negative");
            }
        }
        if self.bmcs.len() > MAX_BMCS_PER_COMPONENT {
            return Err(crate::error::Error::invalid(
                "bmcs",
                format!(
                    "at most {MAX_BMCS_PER_COMPONENT} BMCs per component, not {}",
                    self.bmcs.len()
                ),
            ));
        }
        let bmcs: Vec<_> = self
            .bmcs
            .iter()
            .enumerate()
            .map(|(i, b)| b.to_domain(&format!("bmcs[{i}]"), &mut v))
            .collect();
        v.finish()?;
        Ok(ComponentPatch {
            name,
            model,
            firmware_version,
            description,
            slot_id: position.slot_id,
            tray_idx: position.tray_idx,
            host_id: position.host_id,
            rack_id: self.rack_id.map(|r| r.map(Into::into)),
            bmcs: bmcs.into_iter().flatten().collect(),
        })
    }
}
