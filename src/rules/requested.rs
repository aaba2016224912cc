//! A rule named in a request (or an association): it must exist, and be written for the
//! operation asked for. Both [`super::resolve`] and [`super::associations`] check it here, so
//! neither depends on the other for it.

use sea_orm::ConnectionTrait;

use super::model::Rule;
use super::store;
use crate::domain::code::OperationCode;
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::RuleId;

/// A rule named by a caller: a missing one is the caller's `rule_id` at fault (422), not a 404
/// of the resource asked for.
pub(super) async fn named(db: &impl ConnectionTrait, id: RuleId, missing: String) -> Result<Rule> {
    store::get(db, id).await.map_err(|e| match e {
        Error::NotFound { .. } => Error::Unprocessable {
            code: Code::RuleNotFound,
            message: missing,
            errors: vec![FieldError::new("rule_id", "no such operation rule")],
        },
        other => other,
    })
}

/// Checks a rule named in a request before any task is created: it must exist and be written
/// for the requested operation, or for the code it runs the rules of (an `upgrade` rule serves
/// a downgrade or a rollback).
pub async fn check_requested(
    db: &impl ConnectionTrait,
    rule_id: RuleId,
    operation: OperationCode,
) -> Result<()> {
    let rule = named(
        db,
        rule_id,
        format!("operation rule {rule_id} does not exist"),
    )
    .await?;
    if rule.operation != operation && rule.operation != operation.rule_code() {
        return Err(Error::invalid(
            "rule_id",
            format!("rule {rule_id} is for {}, not {operation}", rule.operation),
        ));
    }
    Ok(())
}
