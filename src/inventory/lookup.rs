//! Single-component lookups (by id, by manufacturer and serial): the API's hottest read, as one
//! fixed joined statement read by column position.

use std::collections::HashMap;

use sea_orm::sqlx::postgres::{PgExecutor, PgRow, Postgres};
use sea_orm::sqlx::{Decode, Row};
use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, QueryResult, Statement, TryGetable, Value,
};
use uuid::Uuid;

use super::model::Component;
use super::rows::{bmc_from_parts, bmc_order, component_from_row};
use crate::db::entities::components;
use crate::db::sqlx_error;
use crate::error::Result;

/// A live component joined with its live BMCs: one row per BMC, or one row with NULL BMC
/// columns when it has none; the last column says whether a task is running on its rack. The text is fixed rather than built: lookups are the API's hottest
/// path, and a constant statement costs no query building per request, is prepared once per
/// pooled connection, and is read by column position instead of by (allocated) prefixed name.
/// `$n` placeholders work on both backends.
macro_rules! lookup_sql {
    ($condition:literal) => {
        concat!(
            "SELECT c.id, c.rack_id, c.type, c.name, c.manufacturer, c.manufacturer_key, c.model, ",
            "c.serial_number, c.firmware_version, c.description, c.slot_id, c.tray_idx, c.host_id, ",
            "c.external_id, c.power_state, c.revision, c.created_at, c.updated_at, c.deleted_at, ",
            "c.observed_firmware_version, c.last_seen_at, ",
            "b.id, b.type, b.mac_address, b.ip_address, ",
            "EXISTS (SELECT 1 FROM tasks t WHERE t.rack_id = c.rack_id AND t.status = 'running') ",
            "FROM components c LEFT JOIN bmcs b ON b.component_id = c.id AND b.deleted_at IS NULL ",
            "WHERE ",
            $condition,
            " AND c.deleted_at IS NULL"
        )
    };
}

/// A component as a lookup read it, with whether a task was running on its rack in the same
/// snapshot. A lookup on an idle rack (the common case) needs no maintenance-mark query after it:
/// that second round trip, which the batcher cannot share, halved lookup throughput.
#[derive(Debug, Clone)]
pub struct Looked {
    pub component: Component,
    pub rack_busy: bool,
}

/// [`lookup_sql`] for a component id.
pub(crate) const COMPONENT_BY_ID: &str = lookup_sql!("c.id = $1");
/// [`lookup_sql`] for a manufacturer key and serial number (unique among live components).
pub(crate) const COMPONENT_BY_SERIAL: &str =
    lookup_sql!("c.manufacturer_key = $1 AND c.serial_number = $2");

/// [`lookup_sql`] for many (manufacturer key, serial number) pairs, given as two arrays
/// (PostgreSQL only): the statement coalesced lookups share.
pub(crate) const COMPONENTS_BY_SERIALS: &str = lookup_sql!(
    "(c.manufacturer_key, c.serial_number) IN (SELECT * FROM UNNEST($1::text[], $2::text[]))"
);

/// A live component by id, or a 404.
pub(crate) async fn component(db: &impl ConnectionTrait, id: Uuid) -> Result<Component> {
    lookup_component(db, COMPONENT_BY_ID, [id.into()])
        .await?
        .map(|found| found.component)
        .ok_or_else(|| crate::error::Error::not_found("component", id))
}

/// Runs a [`lookup_sql`] statement: the one live component it finds, with its BMCs in
/// [`bmc_order`].
pub(crate) async fn lookup_component(
    db: &impl ConnectionTrait,
    sql: &'static str,
    values: impl IntoIterator<Item = Value>,
) -> Result<Option<Looked>> {
    let statement = Statement::from_sql_and_values(db.get_database_backend(), sql, values);
    let rows = db.query_all_raw(statement).await?;
    assemble(&rows.iter().collect::<Vec<_>>())
}

/// The key of a pooled lookup.
pub(crate) enum Key<'a> {
    Id(Uuid),
    Serial {
        manufacturer_key: &'a str,
        serial: &'a str,
    },
}

/// A lookup outside any transaction. On PostgreSQL it runs straight on the connection pool:
/// SeaORM's statement wrapper costs about a quarter of a lookup's CPU (measured with callgrind),
/// and the statement is the same fixed text, prepared once per pooled connection either way.
pub(crate) async fn lookup_pooled(db: &DatabaseConnection, key: Key<'_>) -> Result<Option<Looked>> {
    if db.get_database_backend() != DbBackend::Postgres {
        // SeaORM's values only here: the PostgreSQL path binds straight into sqlx.
        let (sql, values): (_, Vec<Value>) = match key {
            Key::Id(id) => (COMPONENT_BY_ID, vec![id.into()]),
            Key::Serial {
                manufacturer_key,
                serial,
            } => (
                COMPONENT_BY_SERIAL,
                vec![manufacturer_key.into(), serial.into()],
            ),
        };
        return lookup_component(db, sql, values).await;
    }
    lookup_on(db.get_postgres_connection_pool(), key).await
}

/// A [`lookup_sql`] statement straight through `sqlx` on PostgreSQL: on the pool, or on one
/// connection (the lookup batcher's, which it keeps while lookups keep coming).
pub(crate) async fn lookup_on<'e>(
    executor: impl PgExecutor<'e>,
    key: Key<'_>,
) -> Result<Option<Looked>> {
    let query = match key {
        Key::Id(id) => sea_orm::sqlx::query(COMPONENT_BY_ID).bind(id),
        Key::Serial {
            manufacturer_key,
            serial,
        } => sea_orm::sqlx::query(COMPONENT_BY_SERIAL)
            .bind(manufacturer_key)
            .bind(serial),
    };
    let rows = query.fetch_all(executor).await.map_err(sqlx_error)?;
    assemble(&rows.iter().collect::<Vec<_>>())
}

/// A [`lookup_sql`] row's columns, read by position: through SeaORM on either backend, or
/// straight off a PostgreSQL row on the pooled paths.
pub(crate) trait Columns {
    fn at<T>(&self, index: usize) -> Result<T>
    where
        T: TryGetable + for<'r> Decode<'r, Postgres>;
}

impl Columns for QueryResult {
    fn at<T>(&self, index: usize) -> Result<T>
    where
        T: TryGetable + for<'r> Decode<'r, Postgres>,
    {
        Ok(self.try_get_by_index(index)?)
    }
}

/// Unchecked: the statement is one of the fixed texts above, whose column types the
/// migrations fix, so the per-column check of the reported type against the Rust type (a
/// tenth of a lookup's instructions, measured with callgrind) would only ever agree. A
/// migration that changes one of these columns' types must change [`component_model_at`]'s
/// Rust types with it: the decoders still refuse bytes of the wrong length or encoding, but
/// a compatible width (an `int4` read as `i64`) would pass unnoticed.
impl Columns for PgRow {
    fn at<T>(&self, index: usize) -> Result<T>
    where
        T: TryGetable + for<'r> Decode<'r, Postgres>,
    {
        Ok(self.try_get_unchecked(index).map_err(sqlx_error)?)
    }
}

/// The components of a [`COMPONENTS_BY_SERIALS`] answer, each with its manufacturer key.
/// Rows are grouped by component id (a copied `Uuid`, not the two key strings of every row).
pub(crate) fn assemble_many<R: Columns>(rows: &[R]) -> Result<Vec<(String, Looked)>> {
    let mut grouped: HashMap<Uuid, Vec<&R>> = HashMap::new();
    for row in rows {
        let id: Uuid = row.at(0)?;
        grouped.entry(id).or_default().push(row);
    }
    let mut out = Vec::with_capacity(grouped.len());
    for rows in grouped.into_values() {
        let key: String = rows[0].at(5)?;
        if let Some(component) = assemble(&rows)? {
            out.push((key, component));
        }
    }
    Ok(out)
}

/// One component from its [`lookup_sql`] rows (one per BMC), its BMCs in [`bmc_order`].
fn assemble<R: Columns>(rows: &[&R]) -> Result<Option<Looked>> {
    let Some(first) = rows.first().copied() else {
        return Ok(None);
    };
    let row = component_model_at(first)?;
    let mut bmcs = Vec::with_capacity(rows.len());
    for r in rows {
        // Only NULL when the component has no BMC (the LEFT JOIN's lone row).
        if let Some(id) = r.at::<Option<Uuid>>(21)? {
            let kind: String = r.at(22)?;
            bmcs.push(bmc_from_parts(id, &kind, r.at(23)?, r.at(24)?)?);
        }
    }
    bmcs.sort_by(bmc_order);
    let rack_busy = first.at(25)?;
    Ok(Some(Looked {
        component: component_from_row(row, bmcs)?,
        rack_busy,
    }))
}

/// The component columns of a [`lookup_sql`] row, by position.
fn component_model_at(r: &impl Columns) -> Result<components::Model> {
    Ok(components::Model {
        id: r.at(0)?,
        rack_id: r.at(1)?,
        r#type: r.at(2)?,
        name: r.at(3)?,
        manufacturer: r.at(4)?,
        manufacturer_key: r.at(5)?,
        model: r.at(6)?,
        serial_number: r.at(7)?,
        firmware_version: r.at(8)?,
        description: r.at(9)?,
        slot_id: r.at(10)?,
        tray_idx: r.at(11)?,
        host_id: r.at(12)?,
        external_id: r.at(13)?,
        power_state: r.at(14)?,
        revision: r.at(15)?,
        created_at: r.at(16)?,
        updated_at: r.at(17)?,
        deleted_at: r.at(18)?,
        observed_firmware_version: r.at(19)?,
        last_seen_at: r.at(20)?,
    })
}
