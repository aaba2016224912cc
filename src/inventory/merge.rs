//! Merging into stored components: the field and BMC updates a component patch makes, and the
//! set-based merge of a rack patch's component list (look-ups, inserts and BMC writes per set,
//! not per component).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::live::components_by_serial;
use super::model::{Change, ComponentChange, ComponentPatch, NewBmc, NewComponent};
use super::query::manufacturer_key;
use super::revision::cas_failed;
use super::uniqueness::{Candidate, component_elsewhere, ensure_unique};
use super::writes::{bmc_row, insert_all, insert_batched};
use crate::db::entities::{bmcs, components};
use crate::error::Result;

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
fn apply_patch_fields(
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
    changed |= merge(
        &mut am.rack_id,
        &row.rack_id,
        p.rack_id.map(|r| r.map(Uuid::from)),
    );
    changed
}

/// The patch a rack merge applies to a component it already has: only the fields the request
/// gives; identity (manufacturer, serial, type) never changes.
fn patch_from_new(c: &NewComponent) -> ComponentPatch {
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

/// Writes the patch's differing fields into `row` and bumps its revision when they or its BMCs
/// (`bmcs_changed`) changed, as a compare-and-set on the revision read; reports whether it wrote.
pub(crate) async fn update_component(
    db: &impl ConnectionTrait,
    row: &components::Model,
    patch: &ComponentPatch,
    bmcs_changed: bool,
    now: DateTime<Utc>,
) -> Result<bool> {
    let mut am: components::ActiveModel = row.clone().into();
    let fields_changed = apply_patch_fields(&mut am, row, patch);
    if !fields_changed && !bmcs_changed {
        return Ok(false);
    }
    am.revision = Set(row.revision + 1);
    am.updated_at = Set(now);
    // Compare-and-set: a writer that committed since our read makes this touch no row.
    components::Entity::update(am)
        .validate()?
        .filter(components::Column::Revision.eq(row.revision))
        .filter(components::Column::DeletedAt.is_null())
        .exec(db)
        .await
        .map_err(|e| cas_failed(e, "component", row.id, row.revision))?;
    Ok(true)
}

/// Adds new BMCs and updates the type and IP of ones each component already has (matched by
/// MAC), for many components at once: one read of their BMCs and one batched insert; only BMCs
/// that differ are updated. MAC clashes are checked before, in `uniqueness`. Returns the
/// components whose BMCs changed.
pub(crate) async fn upsert_bmcs(
    db: &impl ConnectionTrait,
    wanted: &[(Uuid, &[NewBmc])],
    now: DateTime<Utc>,
) -> Result<HashSet<Uuid>> {
    let owners: Vec<Uuid> = wanted
        .iter()
        .filter(|(_, b)| !b.is_empty())
        .map(|(id, _)| *id)
        .collect();
    let mut changed = HashSet::new();
    if owners.is_empty() {
        return Ok(changed);
    }
    let mut own: HashMap<(Uuid, String), bmcs::Model> = HashMap::new();
    for chunk in owners.chunks(500) {
        let rows = bmcs::Entity::find()
            .filter(bmcs::Column::ComponentId.is_in(chunk.iter().copied()))
            .filter(bmcs::Column::DeletedAt.is_null())
            .all(db)
            .await?;
        own.extend(
            rows.into_iter()
                .map(|r| ((r.component_id, r.mac_address.clone()), r)),
        );
    }
    let mut inserts = Vec::new();
    for (component_id, list) in wanted {
        for bmc in *list {
            let key = (*component_id, bmc.mac_address.to_string());
            let Some(existing) = own.get(&key) else {
                inserts.push(bmc_row(*component_id, bmc, now));
                changed.insert(*component_id);
                continue;
            };
            let kind = bmc.kind.as_str().to_string();
            let ip = bmc.ip_address.map(|ip| ip.to_string());
            let ip_changed = ip.is_some() && ip != existing.ip_address;
            if existing.r#type != kind || ip_changed {
                let mut am: bmcs::ActiveModel = existing.clone().into();
                am.r#type = Set(kind);
                if ip_changed {
                    am.ip_address = Set(ip);
                }
                bmcs::Entity::update(am).exec(db).await?;
                changed.insert(*component_id);
            }
        }
    }
    insert_batched(db, inserts, "a BMC").await?;
    Ok(changed)
}

/// Adds components new to the rack and patches the ones it has (matched by manufacturer +
/// serial): one look-up for the whole list, one batched insert of the new ones with their BMCs,
/// one read and insert of the BMCs of the ones it has, and a compare-and-set only for each
/// component that changed.
pub(crate) async fn merge_components(
    db: &impl ConnectionTrait,
    rack_id: Uuid,
    wanted: &[NewComponent],
    now: DateTime<Utc>,
) -> Result<Vec<ComponentChange>> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let stored: HashMap<(String, String), components::Model> = components_by_serial(db, wanted)
        .await?
        .into_iter()
        .map(|r| ((r.manufacturer_key.clone(), r.serial_number.clone()), r))
        .collect();
    let existing: Vec<Option<&components::Model>> = wanted
        .iter()
        .map(|c| stored.get(&(manufacturer_key(&c.manufacturer), c.serial_number.clone())))
        .collect();
    let elsewhere = existing.iter().enumerate().find_map(|(i, e)| {
        e.filter(|row| row.rack_id != Some(rack_id))
            .map(|row| (i, row))
    });
    if let Some((i, row)) = elsewhere {
        return Err(component_elsewhere(i, row));
    }
    let candidates: Vec<Candidate<'_>> = wanted
        .iter()
        .zip(&existing)
        .enumerate()
        .map(|(i, (c, e))| Candidate {
            path: format!("components[{i}]"),
            component: c,
            existing: e.map(|r| r.id),
        })
        .collect();
    ensure_unique(db, &candidates).await?;
    let added: Vec<&NewComponent> = wanted
        .iter()
        .zip(&existing)
        .filter(|(_, e)| e.is_none())
        .map(|(c, _)| c)
        .collect();
    let mut added_ids = insert_all(db, Some(rack_id), &added, now)
        .await?
        .into_iter();
    let upserts: Vec<(Uuid, &[NewBmc])> = wanted
        .iter()
        .zip(&existing)
        .filter_map(|(c, e)| e.map(|row| (row.id, c.bmcs.as_slice())))
        .collect();
    let bmcs_changed = upsert_bmcs(db, &upserts, now).await?;
    let mut report = Vec::with_capacity(wanted.len());
    for (c, existing) in wanted.iter().zip(existing) {
        let (component_id, change) = match existing {
            None => (added_ids.next().unwrap_or_default(), Change::Added),
            Some(row) => {
                let bmcs = bmcs_changed.contains(&row.id);
                let wrote = update_component(db, row, &patch_from_new(c), bmcs, now).await?;
                let change = if wrote {
                    Change::Patched
                } else {
                    Change::NoChange
                };
                (row.id, change)
            }
        };
        report.push(ComponentChange {
            component_id: component_id.into(),
            manufacturer: c.manufacturer.clone(),
            serial_number: c.serial_number.clone(),
            change,
            bmcs: c
                .bmcs
                .iter()
                .map(|b| (b.mac_address.to_string(), change))
                .collect(),
        });
    }
    Ok(report)
}
