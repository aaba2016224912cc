//! Clashes of racks and NVL domains: names and serials already taken, a component listed for a
//! rack while it is in another, a rack in another domain.

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::taken::{self, Holder, RackKey};
use super::{Candidate, clashes_with, duplicate_unless_empty, in_request, wanted};
use crate::db::entities::{components, nvl_domains, racks};
use crate::error::{Code, Error, FieldError, Result};
use crate::inventory::model::NewRack;
use crate::inventory::query::manufacturer_key;

/// Fails with a 400 naming each serial or MAC the request gives twice: a check of the request
/// alone, so it runs before anything is written.
pub(crate) fn ensure_no_repeats(candidates: &[Candidate<'_>]) -> Result<()> {
    let repeated = in_request(candidates);
    if repeated.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(repeated))
    }
}

/// Fails unless a new rack, its components and their BMCs are all unknown: a 400 for a serial
/// or MAC given twice in the request, else one 409 `duplicate` listing every clash.
pub(crate) async fn ensure_new_rack_unique(
    db: &impl ConnectionTrait,
    new: &NewRack,
    candidates: &[Candidate<'_>],
) -> Result<()> {
    let key = manufacturer_key(&new.manufacturer);
    ensure_no_repeats(candidates)?;
    // One statement for every check: the rack's name and serial, its components' serials and
    // their BMCs' MACs.
    let (serials, macs) = wanted(candidates);
    let rack = RackKey {
        name: &new.name,
        manufacturer_key: &key,
        serial: &new.serial_number,
    };
    let taken = taken::read(db, Some(rack), &serials, &macs).await?;
    let mut clashes = Vec::new();
    if let Some(r) = taken.racks.iter().find(|r| r.name == new.name) {
        clashes.push(name_taken(r.id));
    }
    let same_serial = |r: &&Holder| r.manufacturer_key == key && r.value == new.serial_number;
    if let Some(r) = taken.racks.iter().find(same_serial) {
        clashes.push(FieldError::new(
            "serial_number",
            format!(
                "{} {} is already rack {}",
                new.manufacturer, new.serial_number, r.id
            ),
        ));
    }
    clashes.extend(clashes_with(candidates, &taken));
    duplicate_unless_empty("already registered in the inventory", clashes)
}

/// Fails with a 409 `duplicate` when another live rack has this name.
pub(crate) async fn ensure_rack_name_free(db: &impl ConnectionTrait, name: &str) -> Result<()> {
    let taken = racks::Entity::find()
        .filter(racks::Column::Name.eq(name))
        .filter(racks::Column::DeletedAt.is_null())
        .one(db)
        .await?;
    let clashes = taken
        .map(|other| name_taken(other.id))
        .into_iter()
        .collect();
    duplicate_unless_empty("rack name already in use", clashes)
}

fn name_taken(rack: Uuid) -> FieldError {
    FieldError::new("name", format!("rack {rack} already has this name"))
}

/// The 409 for a rack patch listing (at `components[i]`) a component that is in another rack or
/// in none: a merge never moves components, a component patch does.
pub(crate) fn component_elsewhere(i: usize, row: &components::Model) -> Error {
    let place = row
        .rack_id
        .map_or("no rack".to_string(), |r| format!("rack {r}"));
    Error::Conflict {
        code: Code::ComponentElsewhere,
        message:
            "a listed component belongs elsewhere; move it by patching the component's rack_id"
                .into(),
        errors: vec![FieldError::new(
            format!("components[{i}].serial_number"),
            format!("component {} is in {place}", row.id),
        )],
    }
}

/// Where a domain about to be created stands.
pub(crate) enum DomainSlot {
    /// Nothing has its name or id: create it under this id.
    Free(Uuid),
    /// It exists already with this name (and the id asked for, if any).
    Same(nvl_domains::Model),
}

/// Checks a new domain's name and id: the same domain again is [`DomainSlot::Same`] (so
/// provisioning can be re-run), a name or id taken by another domain a 409 `duplicate`.
pub(crate) async fn domain_slot(
    db: &impl ConnectionTrait,
    id: Option<Uuid>,
    name: &str,
) -> Result<DomainSlot> {
    let by_name = nvl_domains::Entity::find()
        .filter(nvl_domains::Column::Name.eq(name))
        .one(db)
        .await?;
    if let Some(existing) = by_name {
        if id.is_some_and(|id| id != existing.id) {
            let clash = FieldError::new(
                "name",
                format!("domain {} already has this name", existing.id),
            );
            duplicate_unless_empty("nvl domain name already in use", vec![clash])?;
        }
        return Ok(DomainSlot::Same(existing));
    }
    let id = id.unwrap_or_else(Uuid::now_v7);
    if let Some(existing) = nvl_domains::Entity::find_by_id(id).one(db).await? {
        let clash = FieldError::new("id", format!("domain {id} is named {:?}", existing.name));
        duplicate_unless_empty("nvl domain id already in use", vec![clash])?;
    }
    Ok(DomainSlot::Free(id))
}

/// The racks (listed at `racks[i]`) to attach to `domain`, leaving out those already in it; a
/// rack in another domain is a 409 `attached_elsewhere` naming every such rack.
pub(crate) fn ensure_attachable(
    found: Vec<(usize, racks::Model)>,
    domain: Uuid,
) -> Result<Vec<racks::Model>> {
    let mut elsewhere = Vec::new();
    let mut to_attach = Vec::new();
    for (i, rack) in found {
        match rack.nvl_domain_id {
            Some(d) if d == domain => {}
            Some(other) => elsewhere.push(FieldError::new(
                format!("racks[{i}]"),
                format!("rack {} is attached to domain {other}", rack.name),
            )),
            None => to_attach.push(rack),
        }
    }
    if elsewhere.is_empty() {
        Ok(to_attach)
    } else {
        Err(Error::Conflict {
            code: Code::AttachedElsewhere,
            message: "rack already in another nvl domain".into(),
            errors: elsewhere,
        })
    }
}

/// The 409 for detaching a rack from a domain it is not in (it is in `other`).
pub(crate) fn attached_elsewhere(rack: &racks::Model, other: Uuid, domain_name: &str) -> Error {
    Error::conflict(
        Code::AttachedElsewhere,
        format!(
            "rack {} is attached to domain {other}, not {domain_name}",
            rack.name
        ),
    )
}
