//! Firmware history: the version a component ran before its last successful upgrade, recorded
//! as the upgrade step ends, read back by a `rollback` to know where each component goes.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect, Set};
use uuid::Uuid;

use crate::db::entities::{components, firmware_history};
use crate::error::Result;

/// Records that `component` now runs `version`: when the version it was last seen running
/// differs, that one becomes the version a rollback returns to. Nothing is recorded for a
/// component never seen running anything (there is nothing to go back to).
pub async fn record_upgrade(
    db: &impl ConnectionTrait,
    component: Uuid,
    version: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let observed: Option<Option<String>> = components::Entity::find_by_id(component)
        .select_only()
        .column(components::Column::ObservedFirmwareVersion)
        .into_tuple()
        .one(db)
        .await?;
    let Some(previous) = observed.flatten() else {
        return Ok(());
    };
    if previous.trim() == version.trim() {
        return Ok(());
    }
    firmware_history::Entity::insert(firmware_history::ActiveModel {
        component_id: Set(component),
        previous_version: Set(previous),
        version: Set(version.to_string()),
        recorded_at: Set(now),
    })
    .on_conflict(
        OnConflict::column(firmware_history::Column::ComponentId)
            .update_columns([
                firmware_history::Column::PreviousVersion,
                firmware_history::Column::Version,
                firmware_history::Column::RecordedAt,
            ])
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// The version each of `ids` ran before its last upgrade; components without a record are
/// absent.
pub async fn previous_versions(
    db: &impl ConnectionTrait,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, String>> {
    let rows = firmware_history::Entity::find()
        .filter(firmware_history::Column::ComponentId.is_in(ids.iter().copied()))
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.component_id, r.previous_version))
        .collect())
}
