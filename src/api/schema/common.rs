//! Shared schemas: enumerations, location, position, BMC, list envelope, and input checks.

use std::net::IpAddr;

use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::db::page::{Count, Page, Total};
use crate::error::Violations;
use crate::inventory::model::{
    Bmc, BmcType, ComponentType, Location, MacAddress, NewBmc, Position, PowerState,
};

/// Component type. Input also accepts any case, the original proto names
/// (`COMPONENT_TYPE_COMPUTE`) and aliases such as `power-shelf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ComponentTypeDoc {
    Compute,
    Nvswitch,
    Powershelf,
    Torswitch,
    Ums,
    Cdu,
}

impl From<ComponentType> for ComponentTypeDoc {
    fn from(t: ComponentType) -> Self {
        match t {
            ComponentType::Compute => Self::Compute,
            ComponentType::NvSwitch => Self::Nvswitch,
            ComponentType::PowerShelf => Self::Powershelf,
            ComponentType::TorSwitch => Self::Torswitch,
            ComponentType::Ums => Self::Ums,
            ComponentType::Cdu => Self::Cdu,
        }
    }
}

impl From<ComponentTypeDoc> for ComponentType {
    fn from(t: ComponentTypeDoc) -> Self {
        match t {
            ComponentTypeDoc::Compute => Self::Compute,
            ComponentTypeDoc::Nvswitch => Self::NvSwitch,
            ComponentTypeDoc::Powershelf => Self::PowerShelf,
            ComponentTypeDoc::Torswitch => Self::TorSwitch,
            ComponentTypeDoc::Ums => Self::Ums,
            ComponentTypeDoc::Cdu => Self::Cdu,
        }
    }
}

impl<'de> Deserialize<'de> for ComponentTypeDoc {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(de)?;
        ComponentType::parse(&raw).map(Into::into).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown component type {raw:?}; expected one of compute, nvswitch, powershelf, torswitch, ums, cdu"
            ))
        })
    }
}

/// BMC type: `host` (for a power shelf, its PMC) or `dpu`. Input also accepts `BMC_TYPE_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BmcTypeDoc {
    Host,
    Dpu,
}

impl<'de> Deserialize<'de> for BmcTypeDoc {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(de)?;
        match BmcType::parse(&raw) {
            Some(BmcType::Host) => Ok(Self::Host),
            Some(BmcType::Dpu) => Ok(Self::Dpu),
            None => Err(serde::de::Error::custom(format!(
                "unknown BMC type {raw:?}; expected host or dpu"
            ))),
        }
    }
}

impl From<BmcTypeDoc> for BmcType {
    fn from(t: BmcTypeDoc) -> Self {
        match t {
            BmcTypeDoc::Host => Self::Host,
            BmcTypeDoc::Dpu => Self::Dpu,
        }
    }
}

impl From<BmcType> for BmcTypeDoc {
    fn from(t: BmcType) -> Self {
        match t {
            BmcType::Host => Self::Host,
            BmcType::Dpu => Self::Dpu,
        }
    }
}

/// Last observed power state (read-only; written by device sync).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PowerStateDoc {
    Unknown,
    Off,
    On,
    Disabled,
}

impl From<PowerState> for PowerStateDoc {
    fn from(p: PowerState) -> Self {
        match p {
            PowerState::Unknown => Self::Unknown,
            PowerState::Off => Self::Off,
            PowerState::On => Self::On,
            PowerState::Disabled => Self::Disabled,
        }
    }
}

/// Where a rack stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LocationDoc {
    pub region: Option<String>,
    pub datacenter: Option<String>,
    pub room: Option<String>,
    /// Position of the rack in the room, e.g. `EW-F00-DH-02-G10`.
    pub position: Option<String>,
}

impl LocationDoc {
    pub fn to_domain(&self, path: &str, v: &mut Violations) -> Location {
        Location {
            region: optional_text(v, &format!("{path}.region"), &self.region),
            datacenter: optional_text(v, &format!("{path}.datacenter"), &self.datacenter),
            room: optional_text(v, &format!("{path}.room"), &self.room),
            position: optional_text(v, &format!("{path}.position"), &self.position),
        }
    }
}

impl From<Location> for LocationDoc {
    fn from(l: Location) -> Self {
        Self {
            region: l.region,
            datacenter: l.datacenter,
            room: l.room,
            position: l.position,
        }
    }
}

/// Where a component sits in its rack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PositionDoc {
    /// Physical rack slot (U position).
    pub slot_id: Option<i64>,
    /// 0-based index among trays of the same type, bottom to top.
    pub tray_idx: Option<i64>,
    /// Host index inside the tray.
    pub host_id: Option<i64>,
}

impl PositionDoc {
    pub fn to_domain(self, path: &str, v: &mut Violations) -> Position {
        for (name, value) in [
            ("slot_id", self.slot_id),
            ("tray_idx", self.tray_idx),
            ("host_id", self.host_id),
        ] {
            if value.is_some_and(|n| n < 0) {
                v.push(format!("{path}.{name}"), "must not be negative");
            }
        }
        Position {
            slot_id: self.slot_id,
            tray_idx: self.tray_idx,
            host_id: self.host_id,
        }
    }
}

impl From<Position> for PositionDoc {
    fn from(p: Position) -> Self {
        Self {
            slot_id: p.slot_id,
            tray_idx: p.tray_idx,
            host_id: p.host_id,
        }
    }
}

/// A BMC as given by a client.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BmcInput {
    #[serde(rename = "type")]
    pub kind: BmcTypeDoc,
    /// Colon, hyphen, dotted or bare hex; stored as `aa:bb:cc:dd:ee:ff`.
    #[schema(example = "d8:19:09:00:04:af")]
    pub mac_address: String,
    #[schema(example = "10.0.0.17")]
    pub ip_address: Option<String>,
}

impl BmcInput {
    pub fn to_domain(&self, path: &str, v: &mut Violations) -> Option<NewBmc> {
        let mac = MacAddress::parse(&self.mac_address);
        if mac.is_none() {
            v.push(
                format!("{path}.mac_address"),
                format!("{:?} is not a MAC address", self.mac_address),
            );
        }
        let ip = match self
            .ip_address
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            None => None,
            Some(raw) => match raw.parse::<IpAddr>() {
                Ok(ip) => Some(ip),
                Err(_) => {
                    v.push(
                        format!("{path}.ip_address"),
                        format!("{raw:?} is not an IP address"),
                    );
                    None
                }
            },
        };
        Some(NewBmc {
            kind: self.kind.into(),
            mac_address: mac?,
            ip_address: ip,
        })
    }
}

/// A stored BMC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct BmcDoc {
    #[serde(rename = "type")]
    pub kind: BmcTypeDoc,
    pub mac_address: String,
    pub ip_address: Option<String>,
}

impl From<Bmc> for BmcDoc {
    fn from(b: Bmc) -> Self {
        Self {
            kind: b.kind.into(),
            mac_address: b.mac_address,
            ip_address: b.ip_address,
        }
    }
}

/// One page of a list. Pass `next_cursor` as `cursor` to get the next page; it is absent on
/// the last page. `total` and `total_is_estimate` are present only when the request asked for
/// them with `count`: a page without a count costs the same at any list size.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ListResponse<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
    /// How many items match the list (every page, not just this one). Only with `count=exact`
    /// (a count of every match) or `count=estimate` (PostgreSQL's planner estimate; SQLite
    /// counts exactly instead); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Present with `total`: `true` when it is the planner's estimate, `false` when counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_is_estimate: Option<bool>,
}

impl<T> ListResponse<T> {
    pub fn from_page<D>(page: Page<D>) -> Self
    where
        T: From<D>,
    {
        let page = page.map(T::from);
        Self::new(page.items, page.next_cursor, page.total)
    }

    /// A page of already converted items.
    pub fn new(items: Vec<T>, next_cursor: Option<String>, total: Option<Total>) -> Self {
        Self {
            items,
            next_cursor,
            total: total.map(|t| t.value),
            total_is_estimate: total.map(|t| t.estimate),
        }
    }

    /// The total as a person reads it (`"about 10000"` for an estimate), when there is one.
    pub fn total_text(&self) -> Option<String> {
        let total = self.total?;
        Some(match self.total_is_estimate {
            Some(true) => format!("about {total}"),
            _ => total.to_string(),
        })
    }
}

/// The `count` query parameter of every list: whether the answer carries `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CountDoc {
    /// Count every matching row (as costly as the whole list).
    Exact,
    /// PostgreSQL's planner estimate (cheap; flagged `total_is_estimate: true`); SQLite counts
    /// exactly and flags `total_is_estimate: false`.
    Estimate,
}

impl From<CountDoc> for Count {
    fn from(c: CountDoc) -> Self {
        match c {
            CountDoc::Exact => Count::Exact,
            CountDoc::Estimate => Count::Estimate,
        }
    }
}

/// [`CountDoc`] of a list query, as the page request's [`Count`].
pub fn count_of(count: Option<CountDoc>) -> Option<Count> {
    count.map(Count::from)
}

/// Longest accepted text field.
const MAX_TEXT: usize = 255;

/// A required text field: trimmed, non-empty, at most 255 characters.
pub fn required_text(v: &mut Violations, field: &str, value: &str) -> String {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        v.push(field, "must not be empty");
    } else if trimmed.chars().count() > MAX_TEXT {
        v.push(field, format!("must be at most {MAX_TEXT} characters"));
    }
    trimmed.to_string()
}

/// An optional text field: empty means absent.
pub fn optional_text(v: &mut Violations, field: &str, value: &Option<String>) -> Option<String> {
    let trimmed = value.as_deref().map(str::trim).filter(|s| !s.is_empty())?;
    if trimmed.chars().count() > MAX_TEXT {
        v.push(field, format!("must be at most {MAX_TEXT} characters"));
    }
    Some(trimmed.to_string())
}

/// Free text (descriptions): kept exactly as given, up to 4096 characters.
pub fn free_text(v: &mut Violations, field: &str, value: &Option<String>) -> Option<String> {
    let text = value.as_ref().filter(|s| !s.is_empty())?;
    if text.chars().count() > 4096 {
        v.push(field, "must be at most 4096 characters");
    }
    Some(text.clone())
}
