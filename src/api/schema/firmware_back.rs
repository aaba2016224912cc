//! Bodies of the firmware downgrade and rollback endpoints (the original's `downgrade` and
//! `rollback` codes), shaped like the upgrade's.

use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::operation::{Common, ConflictStrategyDoc, TargetVersionDoc, common_of};
use super::target::TargetSpecDoc;

/// Downgrade firmware: the named older catalog version installed through the same recipe
/// path as an upgrade (bundles in order, their activations, the rack's AC cycle, the parts
/// verified).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target_spec": {"racks": [{"name": "g10", "component_types": ["compute", "nvswitch"]}]}, "target_version": "gb200-r1"}))]
pub struct FirmwareDowngradeRequest {
    pub target_spec: TargetSpecDoc,
    /// The older version (one for every type, or an object keyed by type); required, and the
    /// catalog must hold a recipe of it for every targeted component (`409`
    /// `no_catalog_entry` naming each that has none).
    pub target_version: Option<TargetVersionDoc>,
    pub description: Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub queue_timeout_seconds: Option<u64>,
    /// Run this stored operation rule instead of the rack's, the default or the built-in one.
    pub rule_id: Option<Uuid>,
    /// Proceed although targets are held or not ready (`admin` only).
    #[serde(default)]
    pub override_readiness_check: bool,
    /// Go ahead even though the racks cover only part of an NVLink domain.
    #[serde(default)]
    pub allow_split_domain: bool,
}

/// Roll firmware back: every targeted component goes back to the version it ran before its
/// last successful upgrade, through the recipe path. Refused with `409` `no_firmware_history`
/// naming each component without a recorded version (or a type whose components would go
/// back to different versions), and `409` `no_catalog_entry` where the catalog has no recipe
/// of the version.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target_spec": {"racks": [{"name": "g10", "component_types": ["compute", "nvswitch"]}]}}))]
pub struct FirmwareRollbackRequest {
    pub target_spec: TargetSpecDoc,
    pub description: Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub queue_timeout_seconds: Option<u64>,
    /// Run this stored operation rule instead of the rack's, the default or the built-in one.
    pub rule_id: Option<Uuid>,
    /// Proceed although targets are held or not ready (`admin` only).
    #[serde(default)]
    pub override_readiness_check: bool,
    /// Go ahead even though the racks cover only part of an NVLink domain.
    #[serde(default)]
    pub allow_split_domain: bool,
}

common_of!(FirmwareDowngradeRequest, FirmwareRollbackRequest);
