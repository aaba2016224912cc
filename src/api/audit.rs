//! `GET /v1/audit` (admin): who changed what, newest first.

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::Query;
use super::openapi::AUTH;
use super::problem::{ApiResult, Problem};
use crate::app::AppState;
use crate::audit::query::{self, Entry, Filter};
use crate::error::Violations;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_audit))
}

const DEFAULT_LIMIT: u64 = 100;
const MAX_LIMIT: u64 = 1000;

/// Query of `GET /v1/audit`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Exactly this actor: `user:<sub>`, `token:<name>`, `schedule:<name>`, `anonymous`.
    pub actor: Option<String>,
    /// A resource type (`rack`, `component`, `nvl_domain`, `rule`, `schedule`, `task`, `token`),
    /// or one resource as `type:id`.
    pub resource: Option<String>,
    /// Entries at or after this time (RFC 3339).
    pub since: Option<DateTime<Utc>>,
    /// Entries before this time (RFC 3339).
    pub until: Option<DateTime<Utc>>,
    /// At most this many entries (default 100, at most 1000).
    pub limit: Option<u64>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// One recorded action.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"id": "0192f3a0-0000-7000-8000-0000000000d1", "at": "2026-12-01T08:00:00Z",
    "actor": "user:alice", "role": "editor", "method": "PATCH", "route": "/v1/racks/{id}",
    "resource_type": "rack", "resource_id": "0192f3a0-0000-7000-8000-000000000001", "status": 200,
    "request_id": "5b1d…", "client_addr": "10.20.0.15", "before": {"description": "old"},
    "after": {"description": "new"}}))]
pub struct AuditEntryDoc {
    pub id: Uuid,
    pub at: DateTime<Utc>,
    pub actor: String,
    /// The role the action was allowed (or refused) under.
    pub role: Option<String>,
    pub method: String,
    /// The route template, or `SCHEDULE` actions such as `fire`.
    pub route: String,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    /// The answer's HTTP status (absent for schedule actions).
    pub status: Option<u16>,
    pub request_id: Option<String>,
    /// Where the request came from: the connection's peer address, or the client a proxy in
    /// `FLOW_TRUSTED_PROXIES` named in `X-Forwarded-For` / `Forwarded` (absent for schedule
    /// and command-line actions).
    pub client_addr: Option<String>,
    /// The stored document before the change (inventory, rules, schedules, tokens).
    #[schema(value_type = Option<Object>)]
    pub before: Option<Value>,
    /// The stored document after the change.
    #[schema(value_type = Option<Object>)]
    pub after: Option<Value>,
}

impl From<Entry> for AuditEntryDoc {
    fn from(e: Entry) -> Self {
        Self {
            id: e.id,
            at: e.at,
            actor: e.actor,
            role: e.role,
            method: e.method,
            route: e.route,
            resource_type: e.resource_type,
            resource_id: e.resource_id,
            status: e.status,
            request_id: e.request_id,
            client_addr: e.client_addr,
            before: e.before,
            after: e.after,
        }
    }
}

/// A page of the audit log.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPageDoc {
    pub items: Vec<AuditEntryDoc>,
    /// Pass as `cursor` for older entries; absent on the last page.
    pub next_cursor: Option<String>,
}

/// List the audit log
///
/// Every change (inventory, rules, schedules, tokens), operation submission, cancel and schedule
/// fire, and every refused or failed mutating request, newest first.
#[utoipa::path(get, path = "/v1/audit", tag = AUTH, security(("access" = ["admin"])), params(AuditQuery),
    responses(
        (status = 200, description = "A page of entries", body = AuditPageDoc),
        (status = 400, description = "Invalid filter", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_audit(
    State(state): State<AppState>,
    Query(q): Query<AuditQuery>,
) -> ApiResult<axum::Json<AuditPageDoc>> {
    let mut v = Violations::default();
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        v.push("limit", format!("must be between 1 and {MAX_LIMIT}"));
    }
    let before_id = match q.cursor.as_deref().map(Uuid::parse_str) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(_)) => {
            v.push("cursor", "not a cursor this list returned");
            None
        }
    };
    let (resource_type, resource_id) = match q.resource.as_deref().map(str::trim) {
        None | Some("") => (None, None),
        Some(r) => match r.split_once(':') {
            Some((kind, id)) => (Some(kind.to_string()), Some(id.to_string())),
            None => (Some(r.to_string()), None),
        },
    };
    v.finish()?;
    let filter = Filter {
        actor: q.actor.filter(|a| !a.is_empty()),
        resource_type,
        resource_id,
        since: q.since,
        until: q.until,
        before_id,
    };
    let items = query::list(state.db(), &filter, limit).await?;
    let next_cursor = (items.len() as u64 == limit)
        .then(|| items.last().map(|e| e.id.to_string()))
        .flatten();
    Ok(axum::Json(AuditPageDoc {
        items: items.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}
