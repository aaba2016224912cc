//! NVL domain request and response bodies.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use std::collections::BTreeMap;

use super::common::ComponentTypeDoc;
use crate::drift::domains::DomainMix;
use crate::inventory::nvl::NvlDomain;

/// A new NVL domain. `id` is generated when absent.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"name": "nvl5-jhb01"}))]
pub struct CreateNvlDomainRequest {
    pub id: Option<Uuid>,
    pub name: String,
}

/// An NVLink domain.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"id": "0192f3a0-0000-7000-8000-0000000000d1", "name": "nvl5-jhb01", "created_at": "2026-11-30T14:00:00Z"}))]
pub struct NvlDomainDoc {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
    /// `GET /v1/nvl-domains/{id_or_name}` only: each tray type whose racks run different
    /// (observed) firmware versions, the `domain_mixed` drift; empty when the domain is
    /// consistent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_mixed: Option<Vec<DomainMixedDoc>>,
}

/// Trays of one type whose firmware differs across the racks of a domain.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"type": "compute", "versions_by_rack": {"g10": ["2.1.0"], "g11": ["2.0.4"]}}))]
pub struct DomainMixedDoc {
    #[serde(rename = "type")]
    pub component_type: ComponentTypeDoc,
    /// Rack name -> the versions its trays of this type run, as last observed.
    pub versions_by_rack: BTreeMap<String, Vec<String>>,
}

impl From<DomainMix> for DomainMixedDoc {
    fn from(m: DomainMix) -> Self {
        Self {
            component_type: m.component_type.into(),
            versions_by_rack: m
                .versions
                .into_iter()
                .map(|(rack, v)| (rack, v.into_iter().collect()))
                .collect(),
        }
    }
}

impl From<NvlDomain> for NvlDomainDoc {
    fn from(d: NvlDomain) -> Self {
        Self {
            id: d.id.into(),
            name: d.name,
            created_at: d.created_at,
            domain_mixed: None,
        }
    }
}

/// Racks to attach, each by id or by name.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"racks": [{"name": "g10"}, {"id": "0192f3a0-0000-7000-8000-000000000001"}]}))]
pub struct AttachRacksRequest {
    pub racks: Vec<RackRef>,
}

/// A rack named by id or by name (exactly one of them).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RackRef {
    pub id: Option<Uuid>,
    pub name: Option<String>,
}
