//! Merge patches of components (and the BMC upserts they carry), checked against `If-Match`.

use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;
use uuid::Uuid;

use super::live::{component_for_write, rack_row};
use super::lookup;
use super::merge::{update_component, upsert_bmcs};
use super::model::{Component, ComponentPatch};
use super::uniqueness::ensure_macs_free;
use super::writes::ensure_room;
use crate::db::entities::components;
use crate::error::{Error, Result};
use crate::ids::ComponentId;

/// Applies a merge patch; `expected_revision` is the client's `If-Match`.
pub async fn patch(
    db: &DatabaseConnection,
    id: ComponentId,
    patch: &ComponentPatch,
    expected_revision: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Component> {
    let id = Uuid::from(id);
    let txn = crate::db::begin_write(db).await?;
    let (row, audit_before) = component_for_write(&txn, id, expected_revision).await?;
    if let Some(Some(rack_id)) = patch.rack_id {
        rack_row(&txn, rack_id.into())
            .await?
            .ok_or_else(|| Error::invalid("rack_id", format!("rack {rack_id} not found")))?;
    }
    ensure_macs_free(&txn, id, &patch.bmcs, "bmcs").await?;
    let bmcs_changed = !upsert_bmcs(&txn, &[(id, patch.bmcs.as_slice())], now)
        .await?
        .is_empty();
    update_component(&txn, &row, patch, bmcs_changed, now).await?;
    if let Some(Some(rack_id)) = patch.rack_id {
        ensure_room(&txn, rack_id.into(), "rack_id").await?;
    }
    let component = lookup::component(&txn, id).await?;
    crate::audit::row_changed::<components::Entity>(&txn, "component", id, audit_before, now)
        .await?;
    txn.commit().await?;
    Ok(component)
}
