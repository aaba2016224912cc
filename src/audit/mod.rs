//! The audit log: who changed what. A request (or a schedule firing) runs inside an audit
//! [`Context`]; the stores append a row with [`record`] in the very transaction of their change,
//! so a change that commits is audited and a failed audit write fails the change.

pub mod query;

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, PrimaryKeyTrait,
    QueryFilter,
};
use serde_json::Value;
use uuid::Uuid;

use crate::db::entities::audit_log;
use crate::domain::Role;
use crate::error::Result;

/// Who is acting and on which request, for every row recorded while it runs.
#[derive(Debug)]
pub struct Context {
    pub actor: String,
    /// The role the action was allowed under.
    pub role: Option<String>,
    /// Every role the caller holds: what the blast-radius cap is chosen from
    /// (`tasks::submission::blast`). Without credentials' roles, the one above.
    pub roles: Vec<Role>,
    pub method: String,
    pub route: String,
    pub request_id: Option<String>,
    /// Where the request came from (see `api::client`), when it came over HTTP.
    pub client: Option<String>,
    /// Ids of the rows recorded so far, with the status each was written with (the HTTP layer
    /// sets the final status on those written without it, or with another).
    recorded: Mutex<Vec<(Uuid, Option<u16>)>>,
}

impl Context {
    pub fn new(
        actor: &str,
        role: Option<&str>,
        method: &str,
        route: &str,
        request_id: Option<String>,
    ) -> Self {
        Self {
            actor: actor.to_string(),
            role: role.map(String::from),
            roles: role.and_then(Role::parse).into_iter().collect(),
            method: method.to_string(),
            route: route.to_string(),
            request_id,
            client: None,
            recorded: Mutex::new(Vec::new()),
        }
    }

    /// The same context, for a request from `client`.
    pub fn from_client(mut self, client: Option<String>) -> Self {
        self.client = client;
        self
    }

    /// The same context, for a caller holding `roles` (all of them, not only the one the route
    /// was allowed under).
    pub fn with_roles(mut self, roles: Vec<Role>) -> Self {
        if !roles.is_empty() {
            self.roles = roles;
        }
        self
    }

    /// A schedule acting on its own timer (`schedule:<name>`).
    pub fn schedule(name: &str, action: &str) -> Self {
        let actor = format!("schedule:{name}");
        Self::new(&actor, Some("operator"), "SCHEDULE", action, None)
    }

    /// Rows recorded in this context so far.
    pub fn recorded(&self) -> Vec<Uuid> {
        self.recorded
            .lock()
            .map(|v| v.iter().map(|(id, _)| *id).collect())
            .unwrap_or_default()
    }

    /// The recorded rows whose written status is not `status`: those the answer must update.
    pub fn unsettled(&self, status: u16) -> Vec<Uuid> {
        self.recorded
            .lock()
            .map(|v| {
                v.iter()
                    .filter(|(_, written)| *written != Some(status))
                    .map(|(id, _)| *id)
                    .collect()
            })
            .unwrap_or_default()
    }
}

tokio::task_local! {
    static CURRENT: Arc<Context>;
}

/// Runs `f` with `context` as the acting context of everything it records.
pub async fn scope<F: Future>(context: Arc<Context>, f: F) -> F::Output {
    CURRENT.scope(context, f).await
}

/// The actor of the running context (`created_by` of tasks), if any.
pub fn current_actor() -> Option<String> {
    CURRENT.try_with(|c| c.actor.clone()).ok()
}

/// The roles of the running request or schedule; `None` outside one (the system itself: a
/// rollout's run submitting a wave it was allowed at creation, a queued task's promotion).
pub fn current_roles() -> Option<Vec<Role>> {
    CURRENT.try_with(|c| c.roles.clone()).ok()
}

/// The actor of the running request or schedule, for `created_by` columns; `system` outside one.
pub fn actor() -> String {
    current_actor().unwrap_or_else(|| "system".into())
}

/// What changed: a resource and its documents before and after (absent when created / gone).
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub resource_type: &'static str,
    pub resource_id: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// The status the request answers once this change commits, when the store knows it (a
    /// create's `201`): written with the row, so the answer need not update it.
    pub status: Option<u16>,
}

impl Change {
    pub fn new(resource_type: &'static str, resource_id: impl ToString) -> Self {
        Self {
            resource_type,
            resource_id: resource_id.to_string(),
            before: None,
            after: None,
            status: None,
        }
    }

    /// The status the request answers once this change commits.
    pub fn answering(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub fn before(mut self, doc: Option<Value>) -> Self {
        self.before = doc;
        self
    }

    pub fn after(mut self, doc: Option<Value>) -> Self {
        self.after = doc;
        self
    }
}

/// A stored row as a JSON document (the before/after of a change), read on `db` so a
/// transaction sees its own writes.
pub async fn snapshot<E>(
    db: &impl ConnectionTrait,
    id: <E::PrimaryKey as PrimaryKeyTrait>::ValueType,
) -> Result<Option<Value>>
where
    E: EntityTrait,
{
    Ok(E::find_by_id(id).into_json().one(db).await?)
}

/// Appends `change` to the audit log on `db` (the change's transaction) under the running
/// context. Outside any context (internal housekeeping) nothing is recorded.
pub async fn record(db: &impl ConnectionTrait, change: Change, now: DateTime<Utc>) -> Result<()> {
    let Ok(context) = CURRENT.try_with(Arc::clone) else {
        return Ok(());
    };
    let id = Uuid::now_v7();
    audit_log::Entity::insert(audit_log::ActiveModel {
        id: Set(id),
        at: Set(now),
        actor: Set(context.actor.clone()),
        role: Set(context.role.clone()),
        method: Set(context.method.clone()),
        route: Set(context.route.clone()),
        resource_type: Set(Some(change.resource_type.to_string())),
        resource_id: Set(Some(change.resource_id)),
        status: Set(change.status.map(i32::from)),
        request_id: Set(context.request_id.clone()),
        before: Set(change.before),
        after: Set(change.after),
        client_addr: Set(context.client.clone()),
    })
    .exec_without_returning(db)
    .await?;
    if let Ok(mut ids) = context.recorded.lock() {
        ids.push((id, change.status));
    }
    Ok(())
}

/// A request that changed nothing the stores recorded (refused, failed, or a route without
/// a store-level record): one row with its outcome.
pub async fn record_request(
    db: &impl ConnectionTrait,
    context: &Context,
    status: u16,
    now: DateTime<Utc>,
) -> Result<()> {
    audit_log::Entity::insert(audit_log::ActiveModel {
        id: Set(Uuid::now_v7()),
        at: Set(now),
        actor: Set(context.actor.clone()),
        role: Set(context.role.clone()),
        method: Set(context.method.clone()),
        route: Set(context.route.clone()),
        resource_type: Set(None),
        resource_id: Set(None),
        status: Set(Some(i32::from(status))),
        request_id: Set(context.request_id.clone()),
        before: Set(None),
        after: Set(None),
        client_addr: Set(context.client.clone()),
    })
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// Sets the outcome status of the rows a request recorded, once its answer is known.
pub async fn set_status(db: &impl ConnectionTrait, ids: &[Uuid], status: u16) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    audit_log::Entity::update_many()
        .col_expr(
            audit_log::Column::Status,
            sea_orm::sea_query::Expr::value(i32::from(status)),
        )
        .filter(audit_log::Column::Id.is_in(ids.iter().copied()))
        .exec(db)
        .await?;
    Ok(())
}

/// Deletes rows older than `days` days; returns how many went.
pub async fn prune(db: &impl ConnectionTrait, days: u64, now: DateTime<Utc>) -> Result<u64> {
    let cutoff = i64::try_from(days)
        .ok()
        .and_then(Duration::try_days)
        .and_then(|d| now.checked_sub_signed(d));
    let Some(cutoff) = cutoff else {
        return Ok(0);
    };
    let deleted = audit_log::Entity::delete_many()
        .filter(audit_log::Column::At.lt(cutoff))
        .exec(db)
        .await?;
    Ok(deleted.rows_affected)
}

/// Records a change of one stored row: `before` as read earlier in the transaction, the after
/// document read now (absent when the row is gone).
pub async fn row_changed<E>(
    db: &impl ConnectionTrait,
    resource_type: &'static str,
    id: <E::PrimaryKey as PrimaryKeyTrait>::ValueType,
    before: Option<Value>,
    now: DateTime<Utc>,
) -> Result<()>
where
    E: EntityTrait,
    <E::PrimaryKey as PrimaryKeyTrait>::ValueType: Clone + std::fmt::Display,
{
    let after = snapshot::<E>(db, id.clone()).await?;
    let change = Change::new(resource_type, id).before(before).after(after);
    record(db, change, now).await
}

/// Records the creation of a row from what was written (`row`, every column set), so the
/// writer reads nothing back: the after document has the keys and values [`snapshot`] reads
/// on PostgreSQL (timestamps as RFC 3339, ids as strings). The row carries the request's
/// `201` already, so a created resource costs no status update after the answer.
pub async fn row_created<A>(
    db: &impl ConnectionTrait,
    resource_type: &'static str,
    id: impl ToString,
    row: &A,
    now: DateTime<Utc>,
) -> Result<()>
where
    A: ActiveModelTrait,
{
    let change = Change::new(resource_type, id)
        .after(Some(document_of(row)))
        .answering(201);
    record(db, change, now).await
}

/// A written row as the JSON document a read of it gives.
pub fn document_of<A: ActiveModelTrait>(row: &A) -> Value {
    use sea_orm::{IdenStatic, Iterable};
    let mut doc = serde_json::Map::new();
    for column in <A::Entity as EntityTrait>::Column::iter() {
        let value = match row.get(column).into_value() {
            Some(sea_orm::Value::ChronoDateTimeUtc(Some(at))) => serde_json::json!(at),
            Some(value) => sea_orm::sea_query::value::sea_value_to_json_value(&value),
            None => Value::Null,
        };
        doc.insert(column.as_str().to_string(), value);
    }
    Value::Object(doc)
}

/// The lease that makes one process at a time prune.
const RETENTION_LEASE: &str = "audit-retention";

/// Prunes entries older than `days` if this process holds (or takes) the retention lease.
pub async fn prune_with_lease(
    db: &impl ConnectionTrait,
    holder: &str,
    days: u64,
    now: DateTime<Utc>,
) -> Result<u64> {
    if !crate::db::lease::acquire(db, RETENTION_LEASE, holder, Duration::seconds(120), now).await? {
        return Ok(0);
    }
    prune(db, days, now).await
}
