//! Rack associations: the rule a rack runs for an operation, at most one per operation.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::model::Rule;
use super::store;
use crate::db::entities::{rack_rule_associations, racks};
use crate::domain::code::OperationCode;
use crate::error::{Error, Result};
use crate::ids::{RackId, RuleId};

/// The rule a rack runs for one operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Association {
    pub rack_id: RackId,
    pub operation: OperationCode,
    pub rule_id: RuleId,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

async fn live_rack(db: &impl ConnectionTrait, rack_id: RackId) -> Result<()> {
    racks::Entity::find_by_id(rack_id)
        .filter(racks::Column::DeletedAt.is_null())
        .one(db)
        .await?
        .map(|_| ())
        .ok_or_else(|| Error::not_found("rack", rack_id))
}

fn association(row: rack_rule_associations::Model) -> Result<Association> {
    let kind = format!("rack {} rule association", row.rack_id);
    Ok(Association {
        rack_id: row.rack_id.into(),
        operation: store::operation_of(&kind, &row.operation)?,
        rule_id: row.rule_id.into(),
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

/// Sets the rule a rack runs for `operation`; `true` when the association is new.
pub async fn associate(
    db: &DatabaseConnection,
    rack_id: RackId,
    operation: OperationCode,
    rule_id: RuleId,
    now: DateTime<Utc>,
) -> Result<(Association, bool)> {
    let txn = crate::db::begin_write(db).await?;
    live_rack(&txn, rack_id).await?;
    super::requested::check_requested(&txn, rule_id, operation).await?;
    let existing = rack_rule_associations::Entity::find_by_id((
        Uuid::from(rack_id),
        operation.as_str().to_string(),
    ))
    .one(&txn)
    .await?;
    let created = existing.is_none();
    let audit_before = existing.as_ref().map(
        |e| serde_json::json!({"rack_id": rack_id, "operation": operation, "rule_id": e.rule_id}),
    );
    let row = match existing {
        Some(found) => {
            let mut am: rack_rule_associations::ActiveModel = found.into();
            am.rule_id = Set(rule_id.into());
            am.updated_at = Set(now);
            am.update(&txn).await?
        }
        None => {
            rack_rule_associations::ActiveModel {
                rack_id: Set(rack_id.into()),
                operation: Set(operation.as_str().to_string()),
                rule_id: Set(rule_id.into()),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(&txn)
            .await?
        }
    };
    let doc = serde_json::json!({"rack_id": rack_id, "operation": operation, "rule_id": rule_id});
    let change = crate::audit::Change::new("rack_rule", format!("{rack_id}/{operation}"))
        .before(audit_before)
        .after(Some(doc));
    crate::audit::record(&txn, change, now).await?;
    txn.commit().await?;
    Ok((association(row)?, created))
}

/// Removes a rack's rule for `operation`; removing one that is not there is not an error.
pub async fn dissociate(
    db: &DatabaseConnection,
    rack_id: RackId,
    operation: OperationCode,
    now: DateTime<Utc>,
) -> Result<()> {
    let txn = crate::db::begin_write(db).await?;
    live_rack(&txn, rack_id).await?;
    let removed = rack_rule_associations::Entity::delete_many()
        .filter(rack_rule_associations::Column::RackId.eq(rack_id))
        .filter(rack_rule_associations::Column::Operation.eq(operation.as_str()))
        .exec(&txn)
        .await?;
    if removed.rows_affected > 0 {
        let doc = serde_json::json!({"rack_id": rack_id, "operation": operation});
        let change = crate::audit::Change::new("rack_rule", format!("{rack_id}/{operation}"))
            .before(Some(doc));
        crate::audit::record(&txn, change, now).await?;
    }
    txn.commit().await?;
    Ok(())
}

/// A rack's associations, by operation.
pub async fn associations(db: &impl ConnectionTrait, rack_id: RackId) -> Result<Vec<Association>> {
    live_rack(db, rack_id).await?;
    rack_rule_associations::Entity::find()
        .filter(rack_rule_associations::Column::RackId.eq(rack_id))
        .order_by_asc(rack_rule_associations::Column::Operation)
        .all(db)
        .await?
        .into_iter()
        .map(association)
        .collect()
}

/// The rule associated with a rack for an operation, if any.
pub async fn for_rack(
    db: &impl ConnectionTrait,
    rack_id: RackId,
    operation: OperationCode,
) -> Result<Option<Rule>> {
    let Some(link) = rack_rule_associations::Entity::find_by_id((
        Uuid::from(rack_id),
        operation.as_str().to_string(),
    ))
    .one(db)
    .await?
    else {
        return Ok(None);
    };
    Ok(Some(store::get(db, link.rule_id.into()).await?))
}
