//! What a write's rack name, serials and MACs already belong to, read in one statement: the
//! live racks with the rack's name or serial, the live components with a wanted serial and the
//! live BMCs with a wanted MAC, as a `UNION ALL` of three indexed reads. A rack import so pays
//! one round trip for all its clash checks instead of one per table.

use sea_orm::sea_query::{Condition, Expr, ExprTrait, Query, SelectStatement, UnionType};
use sea_orm::{ColumnTrait, ConnectionTrait};
use uuid::Uuid;

use crate::db::entities::{bmcs, components, racks};
use crate::error::Result;

/// Serials, and MACs, per statement: a rack holds at most 1024 components, and each statement
/// stays far below SQLite's bind-parameter limit. A GB200 rack (37 components, 71 BMCs) fits in
/// one.
const SERIALS_PER_STATEMENT: usize = 400;
const MACS_PER_STATEMENT: usize = 800;

/// The rack about to be created: its name, manufacturer key and serial.
pub(crate) struct RackKey<'a> {
    pub name: &'a str,
    pub manufacturer_key: &'a str,
    pub serial: &'a str,
}

/// A live row that holds one of the wanted values.
#[derive(Debug, Clone)]
pub(crate) struct Holder {
    /// The rack's or component's id; for a BMC, its component's.
    pub id: Uuid,
    /// Rack or component name; for a BMC, its MAC.
    pub name: String,
    /// Manufacturer key; for a BMC, its MAC.
    pub manufacturer_key: String,
    /// Serial number; for a BMC, its MAC.
    pub value: String,
}

/// The live racks, components and BMCs holding any wanted value.
#[derive(Debug, Default)]
pub(crate) struct Taken {
    pub racks: Vec<Holder>,
    pub components: Vec<Holder>,
    pub macs: Vec<Holder>,
}

/// Reads, in one statement per [`SERIALS_PER_STATEMENT`] serials, which live rows hold the
/// rack's name or serial, a `(manufacturer key, serial)` of `serials` (matched by key and serial
/// separately: the caller compares the pairs) or a MAC of `macs`.
pub(crate) async fn read(
    db: &impl ConnectionTrait,
    rack: Option<RackKey<'_>>,
    serials: &[(String, &str)],
    macs: &[&str],
) -> Result<Taken> {
    let mut keys: Vec<&str> = serials.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    let serial_chunks: Vec<Vec<&str>> = serials
        .chunks(SERIALS_PER_STATEMENT)
        .map(|c| c.iter().map(|(_, s)| *s).collect())
        .collect();
    let mac_chunks: Vec<&[&str]> = macs.chunks(MACS_PER_STATEMENT).collect();
    let statements = serial_chunks.len().max(mac_chunks.len()).max(1);
    let mut taken = Taken::default();
    for i in 0..statements {
        let mut parts = Vec::new();
        if i == 0
            && let Some(rack) = &rack
        {
            parts.push(racks_holding(rack));
        }
        if let Some(chunk) = serial_chunks.get(i) {
            parts.push(components_holding(&keys, chunk));
        }
        if let Some(chunk) = mac_chunks.get(i) {
            parts.push(bmcs_holding(chunk));
        }
        let Some(statement) = union_all(parts) else {
            continue;
        };
        for row in db.query_all(&statement).await? {
            let kind: String = row.try_get_by_index(0)?;
            let holder = Holder {
                id: row.try_get_by_index(1)?,
                name: row.try_get_by_index(2)?,
                manufacturer_key: row.try_get_by_index(3)?,
                value: row.try_get_by_index(4)?,
            };
            match kind.as_str() {
                "rack" => taken.racks.push(holder),
                "component" => taken.components.push(holder),
                _ => taken.macs.push(holder),
            }
        }
    }
    Ok(taken)
}

/// The parts as one `UNION ALL`. Each branch selects (kind, id, name, key, value) by position;
/// the kind is a literal, not a bound value, so PostgreSQL types it as text in every branch.
fn union_all(parts: Vec<SelectStatement>) -> Option<SelectStatement> {
    let mut parts = parts.into_iter();
    let mut first = parts.next()?;
    for part in parts {
        first.union(UnionType::All, part);
    }
    Some(first)
}

fn tagged(kind: &str) -> SelectStatement {
    Query::select()
        .expr(Expr::cust(format!("'{kind}'")))
        .to_owned()
}

fn racks_holding(rack: &RackKey<'_>) -> SelectStatement {
    let mut select = tagged("rack");
    select
        .columns([
            racks::Column::Id,
            racks::Column::Name,
            racks::Column::ManufacturerKey,
            racks::Column::SerialNumber,
        ])
        .from(racks::Entity)
        .and_where(racks::Column::DeletedAt.is_null())
        .cond_where(
            Condition::any().add(racks::Column::Name.eq(rack.name)).add(
                Condition::all()
                    .add(racks::Column::ManufacturerKey.eq(rack.manufacturer_key))
                    .add(racks::Column::SerialNumber.eq(rack.serial)),
            ),
        );
    select
}

fn components_holding(keys: &[&str], serials: &[&str]) -> SelectStatement {
    let mut select = tagged("component");
    // The unique index leads with the manufacturer key: naming the keys lets it serve this.
    select
        .columns([
            components::Column::Id,
            components::Column::Name,
            components::Column::ManufacturerKey,
            components::Column::SerialNumber,
        ])
        .from(components::Entity)
        .and_where(components::Column::ManufacturerKey.is_in(keys.iter().copied()))
        .and_where(components::Column::SerialNumber.is_in(serials.iter().copied()))
        .and_where(components::Column::DeletedAt.is_null());
    select
}

fn bmcs_holding(macs: &[&str]) -> SelectStatement {
    let mut select = tagged("bmc");
    select
        .column(bmcs::Column::ComponentId)
        .expr(Expr::col(bmcs::Column::MacAddress))
        .expr(Expr::col(bmcs::Column::MacAddress))
        .expr(Expr::col(bmcs::Column::MacAddress))
        .from(bmcs::Entity)
        .and_where(bmcs::Column::MacAddress.is_in(macs.iter().copied()))
        .and_where(Expr::col(bmcs::Column::DeletedAt).is_null());
    select
}
