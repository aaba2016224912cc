//! Which rule a rack's task runs: the one the request named, else the rack's, else the
//! operation's default, else the built-in one.

use sea_orm::ConnectionTrait;

use super::model::{Rule, RuleSource};
use super::requested::named;
use super::{associations, builtin, store};
use crate::domain::code::OperationCode;
use crate::error::{Error, Result};
use crate::ids::{RackId, RuleId};

// Callers across the crate check a requested rule through here, beside resolving one.
pub use super::requested::check_requested;

/// Resolves the rule for one rack's task, in priority order.
pub async fn resolve(
    db: &impl ConnectionTrait,
    requested: Option<RuleId>,
    rack_id: RackId,
    operation: OperationCode,
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
