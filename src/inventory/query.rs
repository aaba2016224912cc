//! Text filters shared by the inventory lists (and the rollout list): exact or glob matches and
//! the case-free manufacturer key. Pages and cursors live in [`crate::db::page`].

use sea_orm::sea_query::{Expr, ExprTrait, Func, LikeExpr, SimpleExpr};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Select};

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
