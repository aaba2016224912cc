//! Shared query building for inventory lists: text matching, keyset cursors, pages.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sea_orm::sea_query::{Expr, ExprTrait, Func, LikeExpr, SimpleExpr};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, Select,
};
use uuid::Uuid;

use crate::error::{Error, Result};

/// Default and largest page sizes.
pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 1000;

/// Position after the last item of a page, in the list's `(name, id)` order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub name: String,
    pub id: Uuid,
}

impl Cursor {
    /// Opaque form handed to clients.
    pub fn encode(&self) -> String {
        let raw = serde_json::json!([self.name, self.id]).to_string();
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// Parses a cursor produced by [`Cursor::encode`]; anything else is a 400 on `cursor`.
    pub fn decode(token: &str) -> Result<Self> {
        let bad = || Error::invalid("cursor", "not a cursor returned by this API");
        let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
        let (name, id): (String, Uuid) = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        Ok(Self { name, id })
    }
}

/// Which page of a list to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: u64,
    pub after: Option<Cursor>,
}

impl Default for PageRequest {
    fn default() -> Self {
        Self {
            limit: DEFAULT_LIMIT,
            after: None,
        }
    }
}

impl PageRequest {
    /// Validates the raw `limit` and `cursor` query parameters.
    pub fn parse(limit: Option<u64>, cursor: Option<&str>) -> Result<Self> {
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(Error::invalid(
                "limit",
                format!("must be between 1 and {MAX_LIMIT}"),
            ));
        }
        let after = cursor
            .filter(|c| !c.is_empty())
            .map(Cursor::decode)
            .transpose()?;
        Ok(Self { limit, after })
    }
}

/// One page of a list plus the cursor for the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
    pub total: u64,
}

impl<T> Page<T> {
    /// Builds a page from `limit + 1` fetched rows: the extra row only proves there is a next page.
    pub fn from_rows(mut rows: Vec<T>, limit: u64, total: u64, key: impl Fn(&T) -> Cursor) -> Self {
        let more = rows.len() as u64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = if more {
            rows.last().map(|r| key(r).encode())
        } else {
            None
        };
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

/// Fetches one page of `query` in `(name, id)` order: the total count of matches, and up to
/// `limit + 1` rows after the cursor (the extra row tells [`Page::from_rows`] there is more).
pub async fn keyset_rows<E, C>(
    db: &impl ConnectionTrait,
    query: Select<E>,
    name: C,
    id: C,
    page: &PageRequest,
) -> Result<(Vec<E::Model>, u64)>
where
    E: EntityTrait,
    E::Model: Send + Sync,
    C: ColumnTrait,
{
    let total = query.clone().count(db).await?;
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

/// A text filter: exact match, or a case-insensitive glob when the value contains `*`.
pub fn text_matches<C: ColumnTrait>(col: C, value: &str) -> SimpleExpr {
    if value.contains('*') {
        let escaped = value
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        let pattern = escaped.replace('*', "%").to_lowercase();
        Expr::expr(Func::lower(Expr::col(col))).like(LikeExpr::new(pattern).escape('\\'))
    } else {
        col.eq(value)
    }
}

/// Manufacturer filter against the lower-cased key column: names match whatever their case.
pub fn manufacturer_matches<C: ColumnTrait>(key_col: C, value: &str) -> SimpleExpr {
    text_matches(key_col, &value.to_lowercase())
}

/// Narrows a list query by each given text filter ([`text_matches`] on its column) and by the
/// manufacturer ([`manufacturer_matches`] on the key column) when one is given.
pub(crate) fn with_text_filters<'a, E: EntityTrait, C: ColumnTrait>(
    mut query: Select<E>,
    texts: impl IntoIterator<Item = (C, &'a Option<String>)>,
    (key_col, manufacturer): (C, &Option<String>),
) -> Select<E> {
    for (col, value) in texts {
        if let Some(v) = value {
            query = query.filter(text_matches(col, v));
        }
    }
    if let Some(m) = manufacturer {
        query = query.filter(manufacturer_matches(key_col, m));
    }
    query
}

/// The key stored beside every manufacturer so lookups and uniqueness ignore case.
pub fn manufacturer_key(manufacturer: &str) -> String {
    manufacturer.trim().to_lowercase()
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
        let page = Page::from_rows(vec![1, 2, 3], 2, 3, |n| Cursor {
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
        let last = Page::from_rows(vec![1], 2, 1, |n| Cursor {
            name: n.to_string(),
            id: Uuid::nil(),
        });
        assert_eq!(last.next_cursor, None);
    }
}
