//! Sightings: what component managers saw, written into the observed columns of components
//! (last seen, power, firmware) and external ids claimed with a compare-and-set, never taking
//! an id from another live component of the same type (that is a [`Clash`]).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use uuid::Uuid;

use super::compare::Sighting;
use super::{Diff, DiffKind};
use crate::components::DevicePower;
use crate::db::entities::components;
use crate::domain::{ComponentType, PowerState};
use crate::error::{Code, Error, Result};

/// The component's observed power for what a device reported.
pub fn power_state(power: DevicePower) -> PowerState {
    match power {
        DevicePower::On => PowerState::On,
        DevicePower::Off => PowerState::Off,
        DevicePower::Unknown => PowerState::Unknown,
    }
}

/// Firmware version and power as a manager reported them.
type ObservedValues = (Option<String>, Option<DevicePower>);

/// A component whose manager reported an external id another live component of its type holds.
/// Nothing takes the id from its holder: the clash is reported, the other observed values of the
/// sighting are recorded as usual.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    pub kind: ComponentType,
    pub component: Uuid,
    pub name: String,
    pub external_id: String,
    /// The component that holds the id.
    pub holder: Uuid,
    pub holder_name: String,
}

impl Clash {
    /// The `409` problem naming both components, as registration and the sync report it.
    pub fn error(&self) -> Error {
        let Self {
            kind,
            component,
            name,
            external_id,
            holder,
            holder_name,
        } = self;
        Error::conflict(
            Code::Duplicate,
            format!(
                "409 conflict: {kind} {name} ({component}) reports external id {external_id}, \
                 which {kind} {holder_name} ({holder}) already has"
            ),
        )
    }

    /// The clash as the drift sync records it: the component is `rejected`, naming both.
    pub fn diff(&self) -> Diff {
        Diff {
            kind: DiffKind::Rejected,
            component_type: self.kind,
            component_id: Some(self.component),
            rack_id: None,
            external_id: Some(self.external_id.clone()),
            address: None,
            fields: Vec::new(),
            message: Some(self.error().to_string()),
        }
    }
}

/// Writes what managers saw into the observed columns only: the inventory's own fields (and the
/// revision an `If-Match` checks) stay as the operator left them. An external id another live
/// component of the same type holds is not written: that sighting comes back as a [`Clash`]
/// (within one call, the first sighting to report an id gets it), and every other value is
/// still recorded.
pub async fn record_sightings(
    db: &impl ConnectionTrait,
    sightings: &[Sighting],
    now: DateTime<Utc>,
) -> Result<Vec<Clash>> {
    let reported: Vec<Uuid> = sightings
        .iter()
        .filter(|s| s.external_id.is_some())
        .map(|s| s.component_id)
        .collect();
    let held = external_ids_of(db, &reported).await?;
    let mut clashes = Vec::new();
    for s in sightings {
        let Some(id) = &s.external_id else { continue };
        if held.get(&s.component_id) == Some(&Some(id.clone())) {
            continue;
        }
        if !claim(db, s.component_id, id).await?
            && let Some(clash) = clash_of(db, s.component_id, id).await?
        {
            clashes.push(clash);
        }
    }
    write_observed(db, sightings, now).await?;
    Ok(clashes)
}

/// The external id each given (live) component holds now.
async fn external_ids_of(
    db: &impl ConnectionTrait,
    ids: &[Uuid],
) -> Result<HashMap<Uuid, Option<String>>> {
    let mut out = HashMap::new();
    for chunk in ids.chunks(500) {
        let rows: Vec<(Uuid, Option<String>)> = components::Entity::find()
            .select_only()
            .column(components::Column::Id)
            .column(components::Column::ExternalId)
            .filter(components::Column::Id.is_in(chunk.iter().copied()))
            .filter(components::Column::DeletedAt.is_null())
            .into_tuple()
            .all(db)
            .await?;
        out.extend(rows);
    }
    Ok(out)
}

/// Gives `component` the external id `id` unless another live component of its type holds it,
/// in one compare-and-set statement; whether it was written.
async fn claim(db: &impl ConnectionTrait, component: Uuid, id: &str) -> Result<bool> {
    let other = Alias::new("other");
    let holder = Query::select()
        .expr(Expr::value(1))
        .from_as(components::Entity, other.clone())
        .and_where(Expr::col((other.clone(), components::Column::ExternalId)).eq(id))
        .and_where(
            Expr::col((other.clone(), components::Column::Type))
                .equals((components::Entity, components::Column::Type)),
        )
        .and_where(Expr::col((other.clone(), components::Column::DeletedAt)).is_null())
        .and_where(Expr::col((other, components::Column::Id)).ne(component))
        .to_owned();
    let written = components::Entity::update_many()
        .col_expr(components::Column::ExternalId, Expr::value(id))
        .filter(components::Column::Id.eq(component))
        .filter(components::Column::DeletedAt.is_null())
        .filter(Expr::exists(holder).not())
        .exec(db)
        .await;
    match written {
        Ok(r) => Ok(r.rows_affected == 1),
        // Another writer took the id between this statement's check and its write; on
        // PostgreSQL the transaction is spent, so the caller hears a 409, not the driver's text.
        Err(e) if crate::db::is_unique_violation(&e) => Err(Error::conflict(
            Code::Duplicate,
            format!(
                "409 conflict: component {component} reports external id {id}, which another \
                 component took at the same moment; the next sync retries"
            ),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Who holds `id` against `component` (of the same type, live), if anyone.
async fn clash_of(db: &impl ConnectionTrait, component: Uuid, id: &str) -> Result<Option<Clash>> {
    let Some(me) = components::Entity::find_by_id(component)
        .filter(components::Column::DeletedAt.is_null())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let holder = components::Entity::find()
        .filter(components::Column::Type.eq(me.r#type.as_str()))
        .filter(components::Column::ExternalId.eq(id))
        .filter(components::Column::DeletedAt.is_null())
        .filter(components::Column::Id.ne(component))
        .one(db)
        .await?;
    let (Some(holder), Some(kind)) = (holder, ComponentType::parse(&me.r#type)) else {
        return Ok(None);
    };
    Ok(Some(Clash {
        kind,
        component,
        name: me.name,
        external_id: id.to_string(),
        holder: holder.id,
        holder_name: holder.name,
    }))
}

/// Last seen, power and firmware of every sighting.
async fn write_observed(
    db: &impl ConnectionTrait,
    sightings: &[Sighting],
    now: DateTime<Utc>,
) -> Result<()> {
    // Sightings with the same observed values are written by one statement per thousand ids:
    // a rack's trays mostly report alike, so a site's sync is a few hundred statements rather
    // than one per component.
    let mut groups: HashMap<ObservedValues, Vec<Uuid>> = HashMap::new();
    for s in sightings {
        groups
            .entry((s.firmware_version.clone(), s.power))
            .or_default()
            .push(s.component_id);
    }
    for ((firmware_version, power), ids) in groups {
        for chunk in ids.chunks(1000) {
            let mut update = components::Entity::update_many()
                .col_expr(components::Column::LastSeenAt, Expr::value(now))
                .filter(components::Column::Id.is_in(chunk.iter().copied()))
                .filter(components::Column::DeletedAt.is_null());
            if let Some(power) = power {
                update = update.col_expr(
                    components::Column::PowerState,
                    Expr::value(power_state(power).as_str()),
                );
            }
            if let Some(version) = &firmware_version {
                update = update.col_expr(
                    components::Column::ObservedFirmwareVersion,
                    Expr::value(version.clone()),
                );
            }
            update.exec(db).await?;
        }
    }
    Ok(())
}

/// Records `external_id` as what registration learnt for `component`, unless another live
/// component of the same type already holds it: then the clash comes back and nothing is written.
pub async fn claim_external_id(
    db: &impl ConnectionTrait,
    component: Uuid,
    external_id: &str,
    now: DateTime<Utc>,
) -> Result<Option<Clash>> {
    let sighting = Sighting {
        component_id: component,
        external_id: Some(external_id.to_string()),
        firmware_version: None,
        power: None,
        tray: None,
    };
    match record_sightings(db, &[sighting], now).await {
        Ok(clashes) => Ok(clashes.into_iter().next()),
        // Another registration won the race between the check and the write: outside a
        // transaction the holder can be read back and named.
        Err(e @ Error::Conflict { .. }) => match clash_of(db, component, external_id).await? {
            Some(clash) => Ok(Some(clash)),
            None => Err(e),
        },
        Err(e) => Err(e),
    }
}
