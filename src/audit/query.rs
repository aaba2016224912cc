//! Reading the audit log: newest first, filtered by actor, resource and time, paged by id.

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::Value;
use uuid::Uuid;

use crate::db::entities::audit_log;
use crate::error::Result;

/// One recorded action.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: Uuid,
    pub at: DateTime<Utc>,
    pub actor: String,
    pub role: Option<String>,
    pub method: String,
    pub route: String,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub status: Option<u16>,
    pub request_id: Option<String>,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub client_addr: Option<String>,
}

/// Filters of the audit list; all given ones must match.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub actor: Option<String>,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Entries older than this one (the previous page's last id).
    pub before_id: Option<Uuid>,
}

/// Up to `limit` entries, newest first; the ids are UUIDv7, so id order is time order.
pub async fn list(db: &impl ConnectionTrait, filter: &Filter, limit: u64) -> Result<Vec<Entry>> {
    let mut query = audit_log::Entity::find();
    if let Some(actor) = &filter.actor {
        query = query.filter(audit_log::Column::Actor.eq(actor.as_str()));
    }
    if let Some(kind) = &filter.resource_type {
        query = query.filter(audit_log::Column::ResourceType.eq(kind.as_str()));
    }
    if let Some(id) = &filter.resource_id {
        query = query.filter(audit_log::Column::ResourceId.eq(id.as_str()));
    }
    if let Some(since) = filter.since {
        query = query.filter(audit_log::Column::At.gte(since));
    }
    if let Some(until) = filter.until {
        query = query.filter(audit_log::Column::At.lt(until));
    }
    if let Some(cursor) = filter.before_id {
        query = query.filter(audit_log::Column::Id.lt(cursor));
    }
    let rows = query
        .order_by_desc(audit_log::Column::Id)
        .limit(limit)
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| Entry {
            id: r.id,
            at: r.at,
            actor: r.actor,
            role: r.role,
            method: r.method,
            route: r.route,
            resource_type: r.resource_type,
            resource_id: r.resource_id,
            status: r.status.and_then(|s| u16::try_from(s).ok()),
            request_id: r.request_id,
            before: r.before,
            after: r.after,
            client_addr: r.client_addr,
        })
        .collect())
}
