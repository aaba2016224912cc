//! The per-rack write lock. A submission decides each rack (its active tasks, holds and
//! `PreventOperations` alerts) under it, and the writers of what that decision reads — holds and
//! health reports — take it too. So a hold committed while a submission runs is either seen by
//! the submission's check inside the lock, or written after the task exists: one waits for the
//! other, never both pass.

use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use crate::db::entities::{components, racks};
use crate::error::Result;
use crate::ids::{ComponentId, NvlDomainId, RackId};

/// Serializes writers on one rack for the rest of the transaction: a no-op update takes the
/// rack's row lock on PostgreSQL and the write lock on SQLite.
pub async fn lock(db: &impl ConnectionTrait, rack: RackId) -> Result<()> {
    no_op_update(db, racks::Column::Id.eq(rack)).await
}

/// Locks every rack of an NVLink domain, in one statement.
pub async fn lock_domain(db: &impl ConnectionTrait, domain: NvlDomainId) -> Result<()> {
    no_op_update(db, racks::Column::NvlDomainId.eq(domain.uuid())).await
}

/// Locks the rack a component is in (nothing for a component in no rack).
pub async fn lock_rack_of(db: &impl ConnectionTrait, component: ComponentId) -> Result<()> {
    let row = components::Entity::find_by_id(component.uuid())
        .one(db)
        .await?;
    match row.and_then(|c| c.rack_id) {
        Some(rack) => lock(db, rack.into()).await,
        None => Ok(()),
    }
}

async fn no_op_update(
    db: &impl ConnectionTrait,
    which: sea_orm::sea_query::SimpleExpr,
) -> Result<()> {
    racks::Entity::update_many()
        .col_expr(racks::Column::Revision, Expr::col(racks::Column::Revision))
        .filter(which)
        .exec(db)
        .await?;
    Ok(())
}
