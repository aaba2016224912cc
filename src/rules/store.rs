//! Stored rules: create, replace (a new version each time), delete, defaults, every version kept.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction,
    EntityTrait, QueryFilter, QueryOrder, Set,
};
use serde::{Deserialize, Serialize};

use super::model::{Rule, RuleDefinition};
use super::parse::RuleInput;
use crate::db::entities::{operation_rule_versions, operation_rules, rack_rule_associations};
use crate::domain::code::OperationCode;
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::RuleId;

/// One stored version of a rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleVersion {
    pub version: i32,
    pub name: String,
    pub description: Option<String>,
    pub definition: RuleDefinition,
    pub created_at: DateTime<Utc>,
}

/// Filters of the rule list.
#[derive(Debug, Clone, Default)]
pub struct RuleFilter {
    pub operation: Option<OperationCode>,
    pub is_default: Option<bool>,
}

fn definition_of(id: RuleId, json: serde_json::Value) -> Result<RuleDefinition> {
    serde_json::from_value(json)
        .map_err(|e| Error::Internal(format!("rule {id}: stored definition unreadable: {e}")))
}

fn to_json(definition: &RuleDefinition) -> Result<serde_json::Value> {
    serde_json::to_value(definition).map_err(|e| Error::Internal(e.to_string()))
}

/// A stored operation code; one Flow does not know is a corrupt row, not the caller's fault.
pub(super) fn operation_of(kind: &str, stored: &str) -> Result<OperationCode> {
    stored
        .parse()
        .map_err(|e| Error::Internal(format!("{kind}: stored operation unreadable: {e}")))
}

fn rule_from_row(row: operation_rules::Model) -> Result<Rule> {
    Ok(Rule {
        operation: operation_of(&format!("rule {}", row.id), &row.operation)?,
        id: Some(row.id.into()),
        definition: definition_of(row.id.into(), row.definition)?,
        name: row.name,
        description: row.description,
        is_default: row.is_default,
        builtin: false,
        version: Some(row.version),
        created_at: Some(row.created_at),
        updated_at: Some(row.updated_at),
    })
}

async fn row(db: &impl ConnectionTrait, id: RuleId) -> Result<operation_rules::Model> {
    operation_rules::Entity::find_by_id(id)
        .one(db)
        .await?
        .ok_or_else(|| Error::not_found("operation rule", id))
}

pub async fn get(db: &impl ConnectionTrait, id: RuleId) -> Result<Rule> {
    rule_from_row(row(db, id).await?)
}

/// The current default rule for an operation, if one is set.
pub async fn default_for(
    db: &impl ConnectionTrait,
    operation: OperationCode,
) -> Result<Option<Rule>> {
    operation_rules::Entity::find()
        .filter(operation_rules::Column::Operation.eq(operation.as_str()))
        .filter(operation_rules::Column::IsDefault.eq(true))
        .one(db)
        .await?
        .map(rule_from_row)
        .transpose()
}

/// Refuses a second default for an operation: switching defaults is an explicit act.
async fn check_no_other_default(
    db: &impl ConnectionTrait,
    operation: OperationCode,
    except: Option<RuleId>,
) -> Result<()> {
    if let Some(existing) = default_for(db, operation).await?
        && existing.id != except
    {
        let id = existing.id.map(|i| i.to_string()).unwrap_or_default();
        return Err(Error::Conflict {
            code: Code::DefaultExists,
            message: format!(
                "rule {id} ({}) is already the default for {operation}; to switch, make this rule the default explicitly",
                existing.name
            ),
            errors: vec![FieldError::new(
                "is_default",
                format!("{operation} already has default rule {id}"),
            )],
        });
    }
    Ok(())
}

async fn insert_version(
    db: &impl ConnectionTrait,
    id: RuleId,
    version: i32,
    input: &RuleInput,
    now: DateTime<Utc>,
) -> Result<()> {
    operation_rule_versions::ActiveModel {
        rule_id: Set(id.into()),
        version: Set(version),
        name: Set(input.name.clone()),
        description: Set(input.description.clone()),
        definition: Set(to_json(&input.definition)?),
        created_at: Set(now),
    }
    .insert(db)
    .await?;
    Ok(())
}

pub async fn create(
    db: &DatabaseConnection,
    input: &RuleInput,
    now: DateTime<Utc>,
) -> Result<Rule> {
    let txn = crate::db::begin_write(db).await?;
    if input.is_default {
        check_no_other_default(&txn, input.operation, None).await?;
    }
    let id = RuleId::new();
    let row = operation_rules::ActiveModel {
        id: Set(id.into()),
        name: Set(input.name.clone()),
        description: Set(input.description.clone()),
        operation: Set(input.operation.as_str().to_string()),
        is_default: Set(input.is_default),
        version: Set(1),
        definition: Set(to_json(&input.definition)?),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    insert_version(&txn, id, 1, input, now).await?;
    audit_and_commit(txn, id, None, row, now).await
}

/// Records the rule's change in the audit log (`before` is its snapshot, `None` when new) and
/// commits: the last step of every write that leaves a rule behind.
async fn audit_and_commit(
    txn: DatabaseTransaction,
    id: RuleId,
    before: Option<serde_json::Value>,
    row: operation_rules::Model,
    now: DateTime<Utc>,
) -> Result<Rule> {
    crate::audit::row_changed::<operation_rules::Entity>(&txn, "rule", id.into(), before, now)
        .await?;
    txn.commit().await?;
    rule_from_row(row)
}

/// Replaces a rule's name, description, definition and default flag; the previous definition
/// stays readable as an older version. The operation cannot change.
pub async fn replace(
    db: &DatabaseConnection,
    id: RuleId,
    input: &RuleInput,
    now: DateTime<Utc>,
) -> Result<Rule> {
    let txn = crate::db::begin_write(db).await?;
    let current = row(&txn, id).await?;
    let audit_before = crate::audit::snapshot::<operation_rules::Entity>(&txn, id.into()).await?;
    if current.operation != input.operation.as_str() {
        return Err(Error::invalid(
            "operation",
            format!(
                "a rule's operation cannot change (this rule is for {}); create a new rule instead",
                current.operation
            ),
        ));
    }
    if input.is_default {
        check_no_other_default(&txn, input.operation, Some(id)).await?;
    }
    let version = current.version + 1;
    let mut am: operation_rules::ActiveModel = current.into();
    am.name = Set(input.name.clone());
    am.description = Set(input.description.clone());
    am.is_default = Set(input.is_default);
    am.version = Set(version);
    am.definition = Set(to_json(&input.definition)?);
    am.updated_at = Set(now);
    // Compare-and-set on the version read above: of two concurrent replacements one wins and
    // the other hears about it, instead of both claiming the same version number.
    let row = operation_rules::Entity::update(am)
        .validate()?
        .filter(operation_rules::Column::Version.eq(version - 1))
        .exec(&txn)
        .await
        .map_err(|e| match e {
            sea_orm::DbErr::RecordNotUpdated => Error::conflict(
                Code::ConcurrentUpdate,
                format!("rule {id} was changed by another request; read it again and retry"),
            ),
            other => other.into(),
        })?;
    insert_version(&txn, id, version, input, now).await?;
    audit_and_commit(txn, id, audit_before, row, now).await
}

/// Deletes a rule, its versions and its rack associations. Tasks keep the rule's id and version
/// in their plan.
pub async fn delete(db: &DatabaseConnection, id: RuleId, now: DateTime<Utc>) -> Result<()> {
    let txn = crate::db::begin_write(db).await?;
    row(&txn, id).await?;
    let audit_before = crate::audit::snapshot::<operation_rules::Entity>(&txn, id.into()).await?;
    rack_rule_associations::Entity::delete_many()
        .filter(rack_rule_associations::Column::RuleId.eq(id))
        .exec(&txn)
        .await?;
    operation_rule_versions::Entity::delete_many()
        .filter(operation_rule_versions::Column::RuleId.eq(id))
        .exec(&txn)
        .await?;
    operation_rules::Entity::delete_by_id(id).exec(&txn).await?;
    let change = crate::audit::Change::new("rule", id).before(audit_before);
    crate::audit::record(&txn, change, now).await?;
    txn.commit().await?;
    Ok(())
}

/// Stored rules, newest first.
pub async fn list(db: &impl ConnectionTrait, filter: &RuleFilter) -> Result<Vec<Rule>> {
    let mut query = operation_rules::Entity::find();
    if let Some(op) = filter.operation {
        query = query.filter(operation_rules::Column::Operation.eq(op.as_str()));
    }
    if let Some(d) = filter.is_default {
        query = query.filter(operation_rules::Column::IsDefault.eq(d));
    }
    query
        .order_by_desc(operation_rules::Column::CreatedAt)
        .order_by_desc(operation_rules::Column::Id)
        .all(db)
        .await?
        .into_iter()
        .map(rule_from_row)
        .collect()
}

/// Every version of a rule, newest first.
pub async fn versions(db: &impl ConnectionTrait, id: RuleId) -> Result<Vec<RuleVersion>> {
    row(db, id).await?;
    operation_rule_versions::Entity::find()
        .filter(operation_rule_versions::Column::RuleId.eq(id))
        .order_by_desc(operation_rule_versions::Column::Version)
        .all(db)
        .await?
        .into_iter()
        .map(|v| {
            Ok(RuleVersion {
                version: v.version,
                definition: definition_of(id, v.definition)?,
                name: v.name,
                description: v.description,
                created_at: v.created_at,
            })
        })
        .collect()
}

/// Makes a rule the default for its operation (or stops it being one), in one transaction so
/// there is never a moment with two defaults.
pub async fn set_default(
    db: &DatabaseConnection,
    id: RuleId,
    on: bool,
    now: DateTime<Utc>,
) -> Result<Rule> {
    let txn = crate::db::begin_write(db).await?;
    let current = row(&txn, id).await?;
    let audit_before = crate::audit::snapshot::<operation_rules::Entity>(&txn, id.into()).await?;
    if on {
        operation_rules::Entity::update_many()
            .col_expr(operation_rules::Column::IsDefault, Expr::value(false))
            .col_expr(operation_rules::Column::UpdatedAt, Expr::value(now))
            .filter(operation_rules::Column::Operation.eq(current.operation.as_str()))
            .filter(operation_rules::Column::IsDefault.eq(true))
            .filter(operation_rules::Column::Id.ne(id))
            .exec(&txn)
            .await?;
    }
    let changed = current.is_default != on;
    let mut am: operation_rules::ActiveModel = current.into();
    if changed {
        am.is_default = Set(on);
        am.updated_at = Set(now);
    }
    let row = if changed {
        am.update(&txn).await?
    } else {
        row(&txn, id).await?
    };
    audit_and_commit(txn, id, audit_before, row, now).await
}
