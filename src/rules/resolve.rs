//! Which rule a rack's task runs: the one the request named, else the rack's, else the
//! operation's default, else the built-in one.

use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::model::{Rule, RuleSource};
use super::{associations, builtin, store};
use crate::error::{Error, FieldError, Result};

/// A rule named by a caller: a missing one is the caller's `rule_id` at fault (422), not a 404
/// of the resource asked for.
async fn named(db: &impl ConnectionTrait, id: Uuid, missing: String) -> Result<Rule> {
    store::get(db, id).await.map_err(|e| match e {
        Error::NotFound { .. } => Error::Unprocessable {
            code: "rule_not_found",
            message: missing,
            errors: vec![FieldError::new("rule_id", "no such operation rule")],
        },
        other => other,
    })
}

/// Checks a rule named in a request before any task is created: it must exist and be written
/// for the requested operation.
pub async fn check_requested(
    db: &impl ConnectionTrait,
    rule_id: Uuid,
    operation: &str,
) -> Result<()> {
    let rule = named(
        db,
        rule_id,
        format!("operation rule {rule_id} does not exist"),
    )
    .await?;
    if rule.operation != operation {
        return Err(Error::invalid(
            "rule_id",
            format!("rule {rule_id} is for {}, not {operation}", rule.operation),
        ));
    }
    Ok(())
}

/// Resolves the rule for one rack's task, in priority order.
pub async fn resolve(
    db: &impl ConnectionTrait,
    requested: Option<Uuid>,
    rack_id: Uuid,
    operation: &str,
) -> Result<(Rule, RuleSource)> {
    if let Some(id) = requested {
        let message = format!("the requested operation rule {id} no longer exists");
        let rule = named(db, id, message).await?;
        return Ok((rule, RuleSource::Request));
    }
    if let Some(rule) = associations::for_rack(db, rack_id, operation).await? {
        return Ok((rule, RuleSource::Rack));
    }
    if let Some(rule) = store::default_for(db, operation).await? {
        return Ok((rule, RuleSource::Default));
    }
    let rule = builtin::for_operation(operation)
        .ok_or_else(|| Error::Internal(format!("no built-in rule for operation {operation}")))?;
    Ok((rule.clone(), RuleSource::Builtin))
}
