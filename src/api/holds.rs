//! Hold endpoints: a workload scheduler sets a hold on a rack, component or NVLink domain while
//! a job runs there and deletes it after; operations on held targets are refused `409 held`.
//! An `operator` creates holds and deletes its own; an `admin` deletes any.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Json, Query, uuid_param};
use super::openapi::HOLDS;
use super::problem::{ApiResult, Problem};
use super::schema::common::{CountDoc, ListResponse, count_of, required_text};
use super::schema::readiness::{CreateHoldRequest, HoldDoc, HoldTargetRequest};
use crate::app::AppState;
use crate::auth::{Identity, Role};
use crate::db::page::checked_limit;
use crate::error::{Code, Violations};
use crate::inventory::holds::{self, HoldFilter, HoldRef, NewHold};
use crate::inventory::racks;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_hold, list_holds))
        .routes(routes!(get_hold, delete_hold))
}

/// Query of `GET /v1/holds`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListHoldsQuery {
    /// Holds on this rack (id or name) or on one of its components.
    pub rack: Option<String>,
    /// Holds on this component.
    pub component: Option<uuid::Uuid>,
    pub owner: Option<String>,
    /// `true`: only holds that count now; `false`: only expired ones.
    pub active: Option<bool>,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    /// `exact` adds `total`, `estimate` PostgreSQL's planner estimate (SQLite counts exactly);
    /// absent: no `total`.
    pub count: Option<CountDoc>,
}

fn target(v: &mut Violations, t: &HoldTargetRequest) -> Option<HoldRef> {
    let by_id_or_name =
        |v: &mut Violations, field: &str, id: Option<uuid::Uuid>, name: &Option<String>| match (
            id,
            name.as_deref().map(str::trim).filter(|n| !n.is_empty()),
        ) {
            (Some(id), None) => Some(id.to_string()),
            (None, Some(name)) => Some(name.to_string()),
            _ => {
                v.push(field, "give exactly one of id or name");
                None
            }
        };
    match (&t.rack, &t.component, &t.nvl_domain) {
        (Some(r), None, None) => by_id_or_name(v, "target.rack", r.id, &r.name).map(HoldRef::Rack),
        (None, Some(c), None) => Some(HoldRef::Component(c.id)),
        (None, None, Some(d)) => {
            by_id_or_name(v, "target.nvl_domain", d.id, &d.name).map(HoldRef::NvlDomain)
        }
        _ => {
            v.push(
                "target",
                "give exactly one of rack, component or nvl_domain",
            );
            None
        }
    }
}

/// Create a hold
///
/// Holds a rack, a component or an NVLink domain: until it is deleted or `expires_at` passes,
/// operations whose targets include it are refused `409` `held` (unless an admin overrides).
/// A target that does not exist is a `404` naming it; `expires_at` in the past is a `400`.
#[utoipa::path(post, path = "/v1/holds", tag = HOLDS, security(("access" = ["operator"])), request_body = CreateHoldRequest,
    responses(
        (status = 201, description = "Created", body = HoldDoc, headers(("Location" = String))),
        (status = 400, description = "Invalid input; `errors` names each field", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The rack, component or domain does not exist", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_hold(
    State(state): State<AppState>,
    Json(body): Json<CreateHoldRequest>,
) -> ApiResult<impl IntoResponse> {
    let mut v = Violations::default();
    let target = target(&mut v, &body.target);
    let owner = required_text(&mut v, "owner", &body.owner);
    let reason = required_text(&mut v, "reason", &body.reason);
    if body.expires_at.is_some_and(|at| at <= state.now()) {
        v.push("expires_at", "must be in the future");
    }
    v.finish()?;
    let Some(target) = target else {
        return Err(Problem::new(
            StatusCode::BAD_REQUEST,
            Code::InvalidInput,
            "target",
        ));
    };
    let new = NewHold {
        target,
        owner,
        reason,
        expires_at: body.expires_at,
    };
    let hold = holds::create(state.db(), &new, state.now()).await?;
    let location = format!("/v1/holds/{}", hold.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        axum::Json(HoldDoc::new(hold, state.now())),
    ))
}

/// List holds
///
/// Holds in creation order, one page at a time, expired ones included unless `active=true`.
#[utoipa::path(get, path = "/v1/holds", tag = HOLDS, security(("access" = ["viewer"])), params(ListHoldsQuery),
    responses(
        (status = 200, description = "One page of holds", body = ListResponse<HoldDoc>),
        (status = 400, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The rack filter names no rack", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_holds(
    State(state): State<AppState>,
    Query(q): Query<ListHoldsQuery>,
) -> ApiResult<axum::Json<ListResponse<HoldDoc>>> {
    let limit = checked_limit(q.limit)?;
    let rack = match q.rack.as_deref() {
        Some(r) => Some(racks::resolve(state.db(), r).await?.id.into()),
        None => None,
    };
    let filter = HoldFilter {
        rack,
        component: q.component.map(Into::into),
        owner: q.owner,
        active: q.active,
    };
    let now = state.now();
    let page = holds::list(
        state.db(),
        &filter,
        limit,
        q.cursor.as_deref(),
        count_of(q.count).unwrap_or_default(),
        now,
    )
    .await?;
    let page = page.map(|h| HoldDoc::new(h, now));
    Ok(axum::Json(ListResponse::from_page(page)))
}

/// Get a hold
#[utoipa::path(get, path = "/v1/holds/{id}", tag = HOLDS, security(("access" = ["viewer"])),
    params(("id" = uuid::Uuid, Path, description = "Hold id")),
    responses(
        (status = 200, description = "The hold", body = HoldDoc),
        (status = 404, description = "No such hold", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_hold(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<HoldDoc>> {
    let id = uuid_param("id", &id)?;
    let hold = holds::get(state.db(), id.into()).await?;
    Ok(axum::Json(HoldDoc::new(hold, state.now())))
}

/// Delete a hold
///
/// Releases a hold (the job ended). An `operator` deletes only holds it created (`403`
/// otherwise); an `admin` any.
#[utoipa::path(delete, path = "/v1/holds/{id}", tag = HOLDS, security(("access" = ["operator"])),
    params(("id" = uuid::Uuid, Path, description = "Hold id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such hold", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_hold(
    State(state): State<AppState>,
    identity: Option<Extension<Identity>>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = uuid_param("id", &id)?;
    let identity = identity.as_deref();
    let admin = identity.is_some_and(|i| i.role_for(Role::Admin).is_some());
    let actor = identity.map_or("anonymous", |i| i.actor.as_str());
    let only_by = (!admin).then_some(actor);
    if holds::delete(state.db(), id.into(), only_by, state.now()).await? {
        return Ok(StatusCode::NO_CONTENT);
    }
    Err(Problem::new(
        StatusCode::FORBIDDEN,
        Code::Forbidden,
        format!(
            "hold {id} was created by someone else; only its creator or an admin may delete it"
        ),
    ))
}
