//! Database leases: a named job runs in one Flow process at a time, whichever holds the lease.

use chrono::{DateTime, Duration, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter,
};

use super::entities::leases;
use crate::error::Result;

/// Takes or renews the lease `name` for `holder` until `now + ttl`. Succeeds when the lease is
/// free, expired, or already ours; two processes racing for it cannot both win, because the
/// take is a single conditional write.
pub async fn acquire(
    db: &impl ConnectionTrait,
    name: &str,
    holder: &str,
    ttl: Duration,
    now: DateTime<Utc>,
) -> Result<bool> {
    let expires = now + ttl;
    let insert = leases::Entity::insert(leases::ActiveModel {
        name: Set(name.to_string()),
        holder: Set(holder.to_string()),
        expires_at: Set(expires),
    })
    .on_conflict(
        OnConflict::column(leases::Column::Name)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    if insert == 1 {
        return Ok(true);
    }
    let taken = leases::Entity::update_many()
        .col_expr(leases::Column::Holder, Expr::value(holder))
        .col_expr(leases::Column::ExpiresAt, Expr::value(expires))
        .filter(leases::Column::Name.eq(name))
        .filter(
            Condition::any()
                .add(leases::Column::Holder.eq(holder))
                .add(leases::Column::ExpiresAt.lt(now)),
        )
        .exec(db)
        .await?;
    Ok(taken.rows_affected == 1)
}

/// Gives the lease up early (shutdown), so another process can take over at once.
pub async fn release(db: &impl ConnectionTrait, name: &str, holder: &str) -> Result<()> {
    leases::Entity::delete_many()
        .filter(leases::Column::Name.eq(name))
        .filter(leases::Column::Holder.eq(holder))
        .exec(db)
        .await?;
    Ok(())
}
