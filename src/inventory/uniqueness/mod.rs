//! Clash checks before writes, so a 409 names the exact field that clashes: duplicate serials
//! and MACs here, rack names and serials, NVL domains and rack membership in `places`. This is
//! the only module that builds `duplicate`, `component_elsewhere` and `attached_elsewhere`.
//!
//! The partial unique indexes stay the final word (a concurrent writer can still lose the race
//! and get a plain 409), but checking first lets us tell the caller which serial or MAC it was.

mod places;
mod taken;

pub(crate) use places::{
    DomainSlot, attached_elsewhere, component_elsewhere, domain_slot, ensure_attachable,
    ensure_new_rack_unique, ensure_no_repeats, ensure_rack_name_free,
};

use std::collections::HashMap;

use sea_orm::ConnectionTrait;
use taken::{Holder, Taken};
use uuid::Uuid;

use super::model::{NewBmc, NewComponent};
use super::query::manufacturer_key;
use crate::error::{Code, Error, FieldError, Result};

/// A field's JSON path under `path` (empty for a top-level component).
fn at(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// A component about to be written, with the JSON path its fields are reported under.
pub(crate) struct Candidate<'a> {
    pub path: String,
    pub component: &'a NewComponent,
    /// The stored component this one updates, whose own serial and MACs are not clashes.
    pub existing: Option<Uuid>,
}

/// Duplicates inside one request: the same serial or MAC given twice.
fn in_request(candidates: &[Candidate<'_>]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut serials: HashMap<(String, &str), &str> = HashMap::new();
    let mut macs: HashMap<&str, String> = HashMap::new();
    for c in candidates {
        let key = (
            manufacturer_key(&c.component.manufacturer),
            c.component.serial_number.as_str(),
        );
        if let Some(first) = serials.get(&key) {
            errors.push(FieldError::new(
                at(&c.path, "serial_number"),
                format!("repeats {}", at(first, "serial_number")),
            ));
        } else {
            serials.insert(key, &c.path);
        }
        for (i, bmc) in c.component.bmcs.iter().enumerate() {
            let field = at(&c.path, &format!("bmcs[{i}].mac_address"));
            if let Some(first) = macs.get(bmc.mac_address.as_str()) {
                errors.push(FieldError::new(&field, format!("repeats {first}")));
            } else {
                macs.insert(bmc.mac_address.as_str(), field);
            }
        }
    }
    errors
}

/// The `(manufacturer key, serial)` and MACs the candidates would hold.
fn wanted<'a>(candidates: &'a [Candidate<'_>]) -> (Vec<(String, &'a str)>, Vec<&'a str>) {
    let serials = candidates
        .iter()
        .map(|c| {
            (
                manufacturer_key(&c.component.manufacturer),
                c.component.serial_number.as_str(),
            )
        })
        .collect();
    let macs = candidates
        .iter()
        .flat_map(|c| c.component.bmcs.iter().map(|b| b.mac_address.as_str()))
        .collect();
    (serials, macs)
}

/// Clashes with stored live components and BMCs, read in one statement.
async fn against_store(
    db: &impl ConnectionTrait,
    candidates: &[Candidate<'_>],
) -> Result<Vec<FieldError>> {
    let (serials, macs) = wanted(candidates);
    let taken = taken::read(db, None, &serials, &macs).await?;
    Ok(clashes_with(candidates, &taken))
}

/// The candidates' serials and MACs that `taken` shows held by another live component.
fn clashes_with(candidates: &[Candidate<'_>], taken: &Taken) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for c in candidates {
        let key = manufacturer_key(&c.component.manufacturer);
        let clash = taken.components.iter().find(|s| {
            s.value == c.component.serial_number
                && s.manufacturer_key == key
                && Some(s.id) != c.existing
        });
        if let Some(s) = clash {
            errors.push(FieldError::new(
                at(&c.path, "serial_number"),
                format!(
                    "{} {} is already component {}",
                    c.component.manufacturer, c.component.serial_number, s.id
                ),
            ));
        }
    }
    let bmcs: Vec<(String, &NewBmc, Option<Uuid>)> = candidates
        .iter()
        .flat_map(|c| {
            c.component.bmcs.iter().enumerate().map(move |(i, b)| {
                (
                    at(&c.path, &format!("bmcs[{i}].mac_address")),
                    b,
                    c.existing,
                )
            })
        })
        .collect();
    errors.extend(mac_errors(&bmcs, &taken.macs));
    errors
}

/// BMC MACs already used by a live BMC of another component.
async fn mac_clashes(
    db: &impl ConnectionTrait,
    bmcs: &[(String, &NewBmc, Option<Uuid>)],
) -> Result<Vec<FieldError>> {
    let macs: Vec<&str> = bmcs
        .iter()
        .map(|(_, b, _)| b.mac_address.as_str())
        .collect();
    let taken = taken::read(db, None, &[], &macs).await?;
    Ok(mac_errors(bmcs, &taken.macs))
}

/// The `bmcs` whose MAC a BMC in `stored` (of another component) has.
fn mac_errors(bmcs: &[(String, &NewBmc, Option<Uuid>)], stored: &[Holder]) -> Vec<FieldError> {
    bmcs.iter()
        .filter_map(|(field, bmc, owner)| {
            stored
                .iter()
                .find(|s| s.value == bmc.mac_address.as_str() && Some(s.id) != *owner)
                .map(|s| {
                    FieldError::new(
                        field,
                        format!("{} is already a BMC of component {}", bmc.mac_address, s.id),
                    )
                })
        })
        .collect()
}

/// Fails with a 409 `duplicate` listing every clash, or a 400 for duplicates inside the request.
pub(crate) async fn ensure_unique(
    db: &impl ConnectionTrait,
    candidates: &[Candidate<'_>],
) -> Result<()> {
    let repeated = in_request(candidates);
    if !repeated.is_empty() {
        return Err(Error::Invalid(repeated));
    }
    let clashes = against_store(db, candidates).await?;
    duplicate_unless_empty("already registered in the inventory", clashes)
}

/// Fails with a 409 `duplicate` when any of `bmcs` (a component's, listed under `path`) has a
/// MAC that a live BMC of another component has.
pub(crate) async fn ensure_macs_free(
    db: &impl ConnectionTrait,
    component_id: Uuid,
    bmcs: &[NewBmc],
    path: &str,
) -> Result<()> {
    let named: Vec<(String, &NewBmc, Option<Uuid>)> = bmcs
        .iter()
        .enumerate()
        .map(|(i, b)| (format!("{path}[{i}].mac_address"), b, Some(component_id)))
        .collect();
    let clashes = mac_clashes(db, &named).await?;
    duplicate_unless_empty("BMC MAC already registered", clashes)
}

/// A 409 `duplicate` listing `errors`, or `Ok` when there are none.
fn duplicate_unless_empty(message: &str, errors: Vec<FieldError>) -> Result<()> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::Conflict {
            code: Code::Duplicate,
            message: message.into(),
            errors,
        })
    }
}

/// Maps a unique-index violation that slipped past the checks (a concurrent writer) to a 409.
pub(crate) fn on_unique(err: sea_orm::DbErr, what: &str) -> Error {
    if crate::db::is_unique_violation(&err) {
        Error::conflict(
            Code::Duplicate,
            format!("{what} was registered concurrently by another request"),
        )
    } else {
        Error::Db(err)
    }
}
