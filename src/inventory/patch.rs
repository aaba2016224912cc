//! Merge patches of components (and the BMC upserts they carry), checked against `If-Match`.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
};
use uuid::Uuid;

use super::components::{bmc_row, ensure_room, find_live_row, get};
use super::model::{Component, ComponentPatch, NewBmc, NewComponent};
use super::racks;
use super::uniqueness::{mac_clashes, on_unique};
use crate::db::entities::{bmcs, components};
use crate::error::{Error, Result};

/// Applies a merge patch; `expected_revision` is the client's `If-Match`.
pub async fn patch(
    db: &DatabaseConnection,
    id: Uuid,
    patch: &ComponentPatch,
    expected_revision: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Component> {
    let txn = crate::db::begin_write(db).await?;
    let row = find_live_row(&txn, id)
        .await?
        .ok_or_else(|| Error::not_found("component", id))?;
    check_revision("component", id, row.revision, expected_revision)?;
    let audit_before = crate::audit::snapshot::<components::Entity>(&txn, id).await?;
    if let Some(Some(rack_id)) = patch.rack_id {
        racks::find_live_row(&txn, rack_id)
            .await?
            .ok_or_else(|| Error::invalid("rack_id", format!("rack {rack_id} not found")))?;
    }
    let mut update: components::ActiveModel = row.clone().into();
    let fields_changed = apply_patch_fields(&mut update, &row, patch);
    let bmcs_changed = upsert_bmcs(&txn, id, &patch.bmcs, "bmcs", now).await?;
    if fields_changed || bmcs_changed {
        update.revision = Set(row.revision + 1);
        update.updated_at = Set(now);
        // Compare-and-set: a writer that committed since our read makes this touch no row.
        components::Entity::update(update)
            .validate()?
            .filter(components::Column::Revision.eq(row.revision))
            .filter(components::Column::DeletedAt.is_null())
            .exec(&txn)
            .await
            .map_err(|e| cas_failed(e, "component", id, row.revision))?;
    }
    if let Some(Some(rack_id)) = patch.rack_id {
        ensure_room(&txn, rack_id, "rack_id").await?;
    }
    let component = get(&txn, id).await?;
    crate::audit::row_changed::<components::Entity>(&txn, "component", id, audit_before, now)
        .await?;
    txn.commit().await?;
    Ok(component)
}

/// Fails with 412 when the client's `If-Match` revision is not the stored one.
pub(crate) fn check_revision(
    kind: &'static str,
    id: Uuid,
    current: i64,
    expected: Option<i64>,
) -> Result<()> {
    match expected {
        Some(expected) if expected != current => Err(Error::PreconditionFailed {
            kind,
            id: id.to_string(),
            expected: expected.to_string(),
            current: current.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Maps a compare-and-set that touched no row to 412: the stored revision moved on since
/// `read` was read (a concurrent writer won). Other errors pass through.
pub(crate) fn cas_failed(err: sea_orm::DbErr, kind: &'static str, id: Uuid, read: i64) -> Error {
    match err {
        sea_orm::DbErr::RecordNotUpdated => Error::PreconditionFailed {
            kind,
            id: id.to_string(),
            expected: read.to_string(),
            current: "newer".into(),
        },
        other => other.into(),
    }
}

/// Sets `target` to `update`'s value when it differs from `current`; reports whether it did.
fn merge<T: Clone + PartialEq + Into<sea_orm::Value>>(
    target: &mut sea_orm::ActiveValue<T>,
    current: &T,
    update: Option<T>,
) -> bool {
    match update {
        Some(v) if &v != current => {
            *target = Set(v);
            true
        }
        _ => false,
    }
}

/// Writes the patch's differing fields into `am`; reports whether any differed.
pub(crate) fn apply_patch_fields(
    am: &mut components::ActiveModel,
    row: &components::Model,
    p: &ComponentPatch,
) -> bool {
    let mut changed = merge(&mut am.name, &row.name, p.name.clone());
    changed |= merge(&mut am.model, &row.model, p.model.clone());
    changed |= merge(
        &mut am.firmware_version,
        &row.firmware_version,
        p.firmware_version.clone(),
    );
    changed |= merge(&mut am.description, &row.description, p.description.clone());
    changed |= merge(&mut am.slot_id, &row.slot_id, p.slot_id);
    changed |= merge(&mut am.tray_idx, &row.tray_idx, p.tray_idx);
    changed |= merge(&mut am.host_id, &row.host_id, p.host_id);
    changed |= merge(&mut am.rack_id, &row.rack_id, p.rack_id);
    changed
}

/// The patch a rack merge applies to a component it already has: only the fields the request
/// gives; identity (manufacturer, serial, type) never changes.
pub(crate) fn patch_from_new(c: &NewComponent) -> ComponentPatch {
    ComponentPatch {
        name: Some(c.name.clone()),
        model: c.model.clone().map(Some),
        firmware_version: c.firmware_version.clone().map(Some),
        description: c.description.clone().map(Some),
        slot_id: c.position.slot_id.map(Some),
        tray_idx: c.position.tray_idx.map(Some),
        host_id: c.position.host_id.map(Some),
        rack_id: None,
        bmcs: Vec::new(),
    }
}

/// Adds new BMCs and updates the type and IP of ones this component already has (matched by
/// MAC). A MAC that belongs to another live component is a 409 naming `{path}[i].mac_address`.
pub(crate) async fn upsert_bmcs(
    db: &impl ConnectionTrait,
    component_id: Uuid,
    new: &[NewBmc],
    path: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    if new.is_empty() {
        return Ok(false);
    }
    let named: Vec<(String, &NewBmc, Option<Uuid>)> = new
        .iter()
        .enumerate()
        .map(|(i, b)| (format!("{path}[{i}].mac_address"), b, Some(component_id)))
        .collect();
    let clashes = mac_clashes(db, &named).await?;
    if !clashes.is_empty() {
        return Err(Error::Conflict {
            code: "duplicate",
            message: "BMC MAC already registered".into(),
            errors: clashes,
        });
    }
    let own = bmcs::Entity::find()
        .filter(bmcs::Column::ComponentId.eq(component_id))
        .filter(bmcs::Column::DeletedAt.is_null())
        .all(db)
        .await?;
    let mut changed = false;
    for bmc in new {
        let ip = bmc.ip_address.map(|ip| ip.to_string());
        match own
            .iter()
            .find(|o| o.mac_address == bmc.mac_address.as_str())
        {
            Some(existing) => {
                let kind = bmc.kind.as_str().to_string();
                let ip_changed = ip.is_some() && ip != existing.ip_address;
                if existing.r#type != kind || ip_changed {
                    let mut am: bmcs::ActiveModel = existing.clone().into();
                    am.r#type = Set(kind);
                    if ip_changed {
                        am.ip_address = Set(ip);
                    }
                    bmcs::Entity::update(am).exec(db).await?;
                    changed = true;
                }
            }
            None => {
                bmcs::Entity::insert(bmc_row(component_id, bmc, now))
                    .exec_without_returning(db)
                    .await
                    .map_err(|e| on_unique(e, "a BMC"))?;
                changed = true;
            }
        }
    }
    Ok(changed)
}
