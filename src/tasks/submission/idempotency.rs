//! `Idempotency-Key` bookkeeping: a retried operation request returns the first answer.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use super::Submission;
use crate::db::entities::operation_requests;
use crate::error::{Code, Error, Result};
use crate::ids::OperationRequestId;

/// Claims `key` for this request. Returns the earlier answer when the same request was already
/// made; a different request under the same key, or one still being processed, is refused.
pub async fn claim(
    db: &impl ConnectionTrait,
    key: &str,
    fingerprint: &str,
    request_id: OperationRequestId,
    now: DateTime<Utc>,
) -> Result<Option<Submission>> {
    let row = operation_requests::ActiveModel {
        id: Set(request_id.into()),
        idempotency_key: Set(Some(key.to_string())),
        fingerprint: Set(fingerprint.to_string()),
        response: Set(serde_json::Value::Null),
        created_at: Set(now),
    };
    match operation_requests::Entity::insert(row)
        .exec_without_returning(db)
        .await
    {
        Ok(_) => return Ok(None),
        Err(e) if crate::db::is_unique_violation(&e) => {}
        Err(e) => return Err(e.into()),
    }
    let existing = operation_requests::Entity::find()
        .filter(operation_requests::Column::IdempotencyKey.eq(key))
        .one(db)
        .await?
        .ok_or_else(|| Error::Internal(format!("idempotency key {key} vanished")))?;
    if existing.fingerprint != fingerprint {
        return Err(Error::Unprocessable {
            code: Code::IdempotencyKeyReused,
            message: format!("Idempotency-Key {key:?} was used for a different request"),
            errors: Vec::new(),
        });
    }
    if existing.response.is_null() {
        return Err(Error::conflict(
            Code::RequestInProgress,
            format!("a request with Idempotency-Key {key:?} is still being processed"),
        ));
    }
    serde_json::from_value(existing.response)
        .map(Some)
        .map_err(|e| Error::Internal(e.to_string()))
}

/// Stores the answer for later retries.
pub async fn complete(db: &impl ConnectionTrait, key: &str, submission: &Submission) -> Result<()> {
    let json = serde_json::to_value(submission).map_err(|e| Error::Internal(e.to_string()))?;
    operation_requests::Entity::update_many()
        .col_expr(operation_requests::Column::Response, Expr::value(json))
        .filter(operation_requests::Column::IdempotencyKey.eq(key))
        .exec(db)
        .await?;
    Ok(())
}

/// Frees a key whose request failed before creating anything.
pub async fn forget(db: &impl ConnectionTrait, key: &str) -> Result<()> {
    operation_requests::Entity::delete_many()
        .filter(operation_requests::Column::IdempotencyKey.eq(key))
        .exec(db)
        .await?;
    Ok(())
}
