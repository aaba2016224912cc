//! Paging for every list: the `limit` bounds, opaque keyset cursors (base64url of the JSON
//! array of the order's key, e.g. `["rack-01","<uuid>"]`), the page shape, and the `(name, id)`
//! keyset query the inventory-like lists share. Lists in another order (tasks, newest first)
//! use [`encode_key`]/[`decode_key`] with their own key.
//!
//! A page counts its matches only when asked ([`Count`]): counting every matching row costs
//! what the whole list costs, while a keyset page costs the same at any size.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, QueryTrait, Select, Statement,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::error::{Error, Result};

/// Default and largest page sizes.
pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 1000;

/// A `limit` query parameter, defaulted and checked against [`MAX_LIMIT`] (a 400 on `limit`).
pub fn checked_limit(limit: Option<u64>) -> Result<u64> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Error::invalid(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        ));
    }
    Ok(limit)
}

/// The opaque cursor for a list position: its order key as a JSON array, base64url.
pub fn encode_key(key: &impl Serialize) -> String {
    let raw = serde_json::to_string(key).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(raw)
}

/// Reads a cursor made by [`encode_key`]; anything else is a 400 on `cursor`.
pub fn decode_key<K: DeserializeOwned>(token: &str) -> Result<K> {
    let bad = || Error::invalid("cursor", "not a cursor returned by this API");
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    serde_json::from_slice(&bytes).map_err(|_| bad())
}

/// Position after the last item of a page, in the list's `(name, id)` order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub name: String,
    pub id: Uuid,
}

impl Cursor {
    /// Opaque form handed to clients.
    pub fn encode(&self) -> String {
        encode_key(&(&self.name, self.id))
    }

    /// Parses a cursor produced by [`Cursor::encode`]; anything else is a 400 on `cursor`.
    pub fn decode(token: &str) -> Result<Self> {
        let (name, id) = decode_key(token)?;
        Ok(Self { name, id })
    }
}

/// Whether a page says how many rows match its list (the `count` query parameter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Count {
    /// No total: the default, so a page costs the same at any size.
    #[default]
    Skip,
    /// `COUNT(*)` over every matching row: exact, and as costly as the whole list.
    Exact,
    /// PostgreSQL's planner estimate for the list's query (from its table statistics); on
    /// SQLite, which keeps no such statistics, an exact count flagged as exact.
    Estimate,
}

/// How many rows match a list, and whether the figure is the planner's estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Total {
    pub value: u64,
    pub estimate: bool,
}

impl Total {
    pub fn exact(value: u64) -> Self {
        Self {
            value,
            estimate: false,
        }
    }
}

/// Which page of a list to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: u64,
    pub after: Option<Cursor>,
    pub count: Count,
}

impl Default for PageRequest {
    fn default() -> Self {
        Self {
            limit: DEFAULT_LIMIT,
            after: None,
            count: Count::Skip,
        }
    }
}

impl PageRequest {
    /// Validates the raw `limit` and `cursor` query parameters.
    pub fn parse(limit: Option<u64>, cursor: Option<&str>) -> Result<Self> {
        let limit = checked_limit(limit)?;
        let after = cursor
            .filter(|c| !c.is_empty())
            .map(Cursor::decode)
            .transpose()?;
        Ok(Self {
            limit,
            after,
            count: Count::Skip,
        })
    }

    /// The same page, counting its matches as asked (`None`: not at all).
    pub fn counting(self, count: Option<Count>) -> Self {
        Self {
            count: count.unwrap_or_default(),
            ..self
        }
    }
}

/// One page of a list plus the cursor for the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
    /// Present only when the request asked for a count.
    pub total: Option<Total>,
}

impl<T> Page<T> {
    /// Builds a page from `limit + 1` fetched rows: the extra row only proves there is a next page.
    pub fn from_rows(
        rows: Vec<T>,
        limit: u64,
        total: Option<Total>,
        key: impl Fn(&T) -> Cursor,
    ) -> Self {
        Self::from_rows_by(rows, limit, total, |row| key(row).encode())
    }

    /// [`Page::from_rows`] for a list in another order: `cursor` gives the opaque position
    /// after a row (made with [`encode_key`]).
    pub fn from_rows_by(
        mut rows: Vec<T>,
        limit: u64,
        total: Option<Total>,
        cursor: impl Fn(&T) -> String,
    ) -> Self {
        let more = rows.len() as u64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = if more { rows.last().map(cursor) } else { None };
        Self {
            items: rows,
            next_cursor,
            total,
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
            total: self.total,
        }
    }
}

/// How many rows `query` selects, as `how` asks: nothing, `COUNT(*)`, or (PostgreSQL) the
/// planner's row estimate for the query, read from `EXPLAIN` without running it.
pub async fn count_matches<E>(
    db: &impl ConnectionTrait,
    query: &Select<E>,
    how: Count,
) -> Result<Option<Total>>
where
    E: EntityTrait,
    E::Model: Send + Sync,
{
    match (how, db.get_database_backend()) {
        (Count::Skip, _) => Ok(None),
        (Count::Estimate, DbBackend::Postgres) => estimate(db, query).await.map(Some),
        // SQLite keeps no planner statistics to estimate from: it counts, and says so.
        (Count::Exact | Count::Estimate, _) => {
            Ok(Some(Total::exact(query.clone().count(db).await?)))
        }
    }
}

/// The planner's estimate of the rows `query` returns: `Plan Rows` of the top plan node, which
/// PostgreSQL derives from `pg_class.reltuples` and the columns' statistics (kept fresh by
/// autovacuum's ANALYZE), so it costs a plan, not a scan.
async fn estimate<E>(db: &impl ConnectionTrait, query: &Select<E>) -> Result<Total>
where
    E: EntityTrait,
{
    let built = query.build(DbBackend::Postgres);
    let explain = Statement::from_sql_and_values(
        DbBackend::Postgres,
        format!("EXPLAIN (FORMAT JSON) {}", built.sql),
        built.values.map(|v| v.0).unwrap_or_default(),
    );
    let plan: serde_json::Value = match db.query_one_raw(explain).await? {
        Some(row) => row.try_get_by_index(0)?,
        None => serde_json::Value::Null,
    };
    let rows = plan[0]["Plan"]["Plan Rows"].as_f64().unwrap_or(0.0);
    Ok(Total {
        value: rows.max(0.0).round() as u64,
        estimate: true,
    })
}

/// Fetches one page of `query` in `(name, id)` order: the count of matches if the page asks for
/// one, and up to `limit + 1` rows after the cursor (the extra row tells [`Page::from_rows`]
/// there is more).
pub async fn keyset_rows<E, C>(
    db: &impl ConnectionTrait,
    query: Select<E>,
    name: C,
    id: C,
    page: &PageRequest,
) -> Result<(Vec<E::Model>, Option<Total>)>
where
    E: EntityTrait,
    E::Model: Send + Sync,
    C: ColumnTrait,
{
    let total = count_matches(db, &query, page.count).await?;
    let query = match &page.after {
        Some(after) => query.filter(after_cursor(name, id, after)),
        None => query,
    };
    let rows = query
        .order_by_asc(name)
        .order_by_asc(id)
        .limit(page.limit + 1)
        .all(db)
        .await?;
    Ok((rows, total))
}

/// Rows strictly after the cursor in `(name, id)` order. The leading `name >= cursor` bound is
/// implied by the rest, but only it lets the database seek the `(name, id)` index to the cursor
/// instead of scanning from the first row, so deep pages cost what the first one does.
fn after_cursor<C: ColumnTrait>(name: C, id: C, cursor: &Cursor) -> Condition {
    Condition::all().add(name.gte(cursor.name.clone())).add(
        Condition::any().add(name.gt(cursor.name.clone())).add(
            Condition::all()
                .add(name.eq(cursor.name.clone()))
                .add(id.gt(cursor.id)),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = Cursor {
            name: "rack-01".into(),
            id: Uuid::nil(),
        };
        assert_eq!(Cursor::decode(&c.encode()).ok(), Some(c));
        assert!(Cursor::decode("not-a-cursor").is_err());
    }

    #[test]
    fn limits_outside_the_allowed_range_are_rejected() {
        assert!(PageRequest::parse(Some(0), None).is_err());
        assert!(PageRequest::parse(Some(MAX_LIMIT + 1), None).is_err());
        assert_eq!(
            PageRequest::parse(None, Some("")).ok(),
            Some(PageRequest::default())
        );
    }

    #[test]
    fn a_page_with_an_extra_row_points_at_its_last_item() {
        let page = Page::from_rows(vec![1, 2, 3], 2, None, |n| Cursor {
            name: n.to_string(),
            id: Uuid::nil(),
        });
        assert_eq!(page.items, vec![1, 2]);
        assert_eq!(
            page.next_cursor
                .as_deref()
                .map(Cursor::decode)
                .and_then(Result::ok)
                .map(|c| c.name),
            Some("2".into())
        );
        let last = Page::from_rows(vec![1], 2, None, |n| Cursor {
            name: n.to_string(),
            id: Uuid::nil(),
        });
        assert_eq!(last.next_cursor, None);
    }
}
