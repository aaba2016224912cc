//! Which rule a rack's task runs: the one the request named, else the rack's, else the
//! operation's default, else the built-in one. A downgrade or rollback looks for a rule of its
//! own code at each level first, then for `upgrade`'s at that level, so a rack's upgrade rule
//! governs its downgrades and rollbacks unless the rack has a rule for that very code.

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
    let codes = lookup_codes(operation);
    for code in &codes {
        if let Some(rule) = associations::for_rack(db, rack_id, *code).await? {
            return Ok((rule, RuleSource::Rack));
        }
    }
    for code in &codes {
        if let Some(rule) = store::default_for(db, *code).await? {
            return Ok((rule, RuleSource::Default));
        }
    }
    let rule = builtin::for_operation(operation)
        .ok_or_else(|| Error::Internal(format!("no built-in rule for operation {operation}")))?;
    Ok((rule.clone(), RuleSource::Builtin))
}

/// The codes whose rules `operation` may run, its own first.
fn lookup_codes(operation: OperationCode) -> Vec<OperationCode> {
    let mut codes = vec![operation];
    if operation.rule_code() != operation {
        codes.push(operation.rule_code());
    }
    codes
}
