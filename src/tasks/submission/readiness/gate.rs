//! What a submission does with the obstacles: refuses with a `409` naming each ([`refusal`]),
//! or goes past them with an override, recorded in the audit log and beside the request
//! ([`record_override`]); and the same check again for each rack inside the transaction that
//! holds its lock ([`recheck`]).

use chrono::{DateTime, Utc};
use sea_orm::{ActiveValue::Set, ConnectionTrait, EntityTrait};

use super::{Obstacle, ReadinessCode, Scope, obstacles};
use crate::audit::{self, Change};
use crate::db::entities::readiness_overrides;
use crate::domain::operation::OperationSpec;
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::OperationRequestId;
use crate::inventory::targets::RackWork;
use crate::tasks::submission::{RefusalCode, Rejection};

/// The `409` for obstacles: `held` when any hold is in the way, else `not_ready`; `errors`
/// names each hold and alert.
pub fn refusal(obstacles: &[Obstacle]) -> Error {
    let any_hold = obstacles.iter().any(|o| o.code == ReadinessCode::Held);
    let code = if any_hold { Code::Held } else { Code::NotReady };
    let errors = obstacles
        .iter()
        .map(|o| {
            let field = match &o.component_name {
                Some(c) => format!("racks.{}.components.{c}", o.rack_name),
                None => format!("racks.{}", o.rack_name),
            };
            FieldError::new(field, o.message.clone())
        })
        .collect();
    let what = if any_hold { "held" } else { "not ready" };
    Error::Conflict {
        code,
        message: format!(
            "targets are {what}; no task was created (an admin may set override_readiness_check)"
        ),
        errors,
    }
}

/// Records that `request` went past `overridden`: one audit entry naming each hold and alert,
/// and the row a queued task of the request is checked against when it starts. Nothing when
/// nothing was overridden.
pub async fn record_override(
    db: &sea_orm::DatabaseConnection,
    request: OperationRequestId,
    overridden: &[Obstacle],
    now: DateTime<Utc>,
) -> Result<()> {
    if overridden.is_empty() {
        return Ok(());
    }
    let doc = serde_json::to_value(overridden).map_err(|e| Error::Internal(e.to_string()))?;
    let txn = crate::db::begin_write(db).await?;
    readiness_overrides::Entity::insert(readiness_overrides::ActiveModel {
        request_id: Set(request.uuid()),
        overridden: Set(doc.clone()),
        created_by: Set(audit::actor()),
        created_at: Set(now),
    })
    .exec_without_returning(&txn)
    .await?;
    let after = serde_json::json!({"override_readiness_check": true, "overridden": doc});
    let change = Change::new("readiness_override", request).after(Some(after));
    audit::record(&txn, change, now).await?;
    txn.commit().await?;
    Ok(())
}

/// The check again for one rack, inside the transaction that holds its lock (holds and health
/// reports are written under the same lock): a hold or alert committed since [`admit`] ran
/// refuses the rack instead of letting its task through. Nothing with an override.
pub async fn recheck(
    db: &impl ConnectionTrait,
    spec: &OperationSpec,
    rack: &RackWork,
    now: DateTime<Utc>,
) -> Result<Option<Rejection>> {
    if spec.override_readiness_check {
        return Ok(None);
    }
    let scope = Scope::of(std::slice::from_ref(rack));
    let found = obstacles(db, &spec.operation, &scope, now).await?;
    if found.is_empty() {
        return Ok(None);
    }
    let held = found.iter().any(|o| o.code == ReadinessCode::Held);
    let reasons: Vec<&str> = found.iter().map(|o| o.message.as_str()).collect();
    Ok(Some(Rejection {
        rack_id: rack.rack_id,
        rack_name: rack.rack_name.clone(),
        code: if held {
            RefusalCode::Held
        } else {
            RefusalCode::NotReady
        },
        reason: reasons.join("; "),
    }))
}

/// Whether `request` was submitted with an override.
pub async fn overridden(db: &impl ConnectionTrait, request: OperationRequestId) -> Result<bool> {
    Ok(readiness_overrides::Entity::find_by_id(request.uuid())
        .one(db)
        .await?
        .is_some())
}

/// The check a submission makes: the obstacles an override goes past (recorded by the caller),
/// or the `409` when there is no override.
pub async fn admit(
    db: &impl ConnectionTrait,
    spec: &OperationSpec,
    work: &[RackWork],
    now: DateTime<Utc>,
) -> Result<Vec<Obstacle>> {
    let found = obstacles(db, &spec.operation, &Scope::of(work), now).await?;
    if found.is_empty() || spec.override_readiness_check {
        return Ok(found);
    }
    Err(refusal(&found))
}
