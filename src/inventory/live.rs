//! Live (not soft-deleted) rows by id, name or serial: the small reads that racks, components
//! and NVL domains all need, kept below them so that those modules never call each other.

use std::collections::HashSet;

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde_json::Value;
use uuid::Uuid;

use super::model::NewComponent;
use super::query::{manufacturer_key, text_matches};
use super::revision::check_revision;
use crate::db::entities::{components, nvl_domains, racks};
use crate::error::{Error, Result};

pub(crate) async fn rack_row(db: &impl ConnectionTrait, id: Uuid) -> Result<Option<racks::Model>> {
    Ok(racks::Entity::find_by_id(id)
        .filter(racks::Column::DeletedAt.is_null())
        .one(db)
        .await?)
}

pub(crate) async fn component_row(
    db: &impl ConnectionTrait,
    id: Uuid,
) -> Result<Option<components::Model>> {
    Ok(components::Entity::find_by_id(id)
        .filter(components::Column::DeletedAt.is_null())
        .one(db)
        .await?)
}

/// The live rack a write is about, checked against the client's `If-Match`, with the audit
/// snapshot taken before the write.
pub(crate) async fn rack_for_write(
    db: &impl ConnectionTrait,
    id: Uuid,
    expected_revision: Option<i64>,
) -> Result<(racks::Model, Option<Value>)> {
    let row = rack_row(db, id)
        .await?
        .ok_or_else(|| Error::not_found("rack", id))?;
    check_revision("rack", id, row.revision, expected_revision)?;
    let before = crate::audit::snapshot::<racks::Entity>(db, id).await?;
    Ok((row, before))
}

/// [`rack_for_write`] for a component.
pub(crate) async fn component_for_write(
    db: &impl ConnectionTrait,
    id: Uuid,
    expected_revision: Option<i64>,
) -> Result<(components::Model, Option<Value>)> {
    let row = component_row(db, id)
        .await?
        .ok_or_else(|| Error::not_found("component", id))?;
    check_revision("component", id, row.revision, expected_revision)?;
    let before = crate::audit::snapshot::<components::Entity>(db, id).await?;
    Ok((row, before))
}

/// Ids of live racks matching a name (exact, or a `*` glob).
pub(crate) async fn rack_ids_named(db: &impl ConnectionTrait, name: &str) -> Result<Vec<Uuid>> {
    Ok(racks::Entity::find()
        .select_only()
        .column(racks::Column::Id)
        .filter(text_matches(racks::Column::Name, name))
        .filter(racks::Column::DeletedAt.is_null())
        .into_tuple()
        .all(db)
        .await?)
}

/// Live rack by id or by exact name.
pub async fn resolve_rack(db: &impl ConnectionTrait, id_or_name: &str) -> Result<racks::Model> {
    let mut query = racks::Entity::find().filter(racks::Column::DeletedAt.is_null());
    query = match Uuid::parse_str(id_or_name) {
        Ok(id) => query.filter(racks::Column::Id.eq(id)),
        Err(_) => query.filter(racks::Column::Name.eq(id_or_name)),
    };
    query
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("rack", id_or_name))
}

/// An NVL domain by id (when the text is a UUID) or by name.
pub(crate) async fn domain_row(
    db: &impl ConnectionTrait,
    id_or_name: &str,
) -> Result<Option<nvl_domains::Model>> {
    let by_id = match Uuid::parse_str(id_or_name) {
        Ok(id) => nvl_domains::Entity::find_by_id(id).one(db).await?,
        Err(_) => None,
    };
    if by_id.is_some() {
        return Ok(by_id);
    }
    Ok(nvl_domains::Entity::find()
        .filter(nvl_domains::Column::Name.eq(id_or_name))
        .one(db)
        .await?)
}

/// The live components that have the serial number and manufacturer of any of `wanted`, in one
/// query per 500 serials (a rack's worth is one).
pub(crate) async fn components_by_serial<'a>(
    db: &impl ConnectionTrait,
    wanted: impl IntoIterator<Item = &'a NewComponent>,
) -> Result<Vec<components::Model>> {
    let wanted: Vec<&NewComponent> = wanted.into_iter().collect();
    // The unique index leads with the manufacturer key: naming the keys lets it serve this look-up.
    let mut keys: Vec<String> = wanted
        .iter()
        .map(|c| manufacturer_key(&c.manufacturer))
        .collect();
    keys.sort();
    keys.dedup();
    let mut stored = Vec::new();
    for chunk in wanted.chunks(500) {
        let serials = chunk.iter().map(|c| c.serial_number.as_str());
        stored.extend(
            components::Entity::find()
                .filter(components::Column::ManufacturerKey.is_in(keys.iter().map(String::as_str)))
                .filter(components::Column::SerialNumber.is_in(serials))
                .filter(components::Column::DeletedAt.is_null())
                .all(db)
                .await?,
        );
    }
    // Serials and keys match separately above; only rows matching a wanted pair count.
    let pairs: HashSet<(String, &str)> = wanted
        .iter()
        .map(|c| (manufacturer_key(&c.manufacturer), c.serial_number.as_str()))
        .collect();
    stored.retain(|s| pairs.contains(&(s.manufacturer_key.clone(), s.serial_number.as_str())));
    Ok(stored)
}
