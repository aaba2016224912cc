//! NVL domain request and response bodies.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

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
}

impl From<NvlDomain> for NvlDomainDoc {
    fn from(d: NvlDomain) -> Self {
        Self {
            id: d.id.into(),
            name: d.name,
            created_at: d.created_at,
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
