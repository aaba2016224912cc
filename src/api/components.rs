//! Component endpoints: add, look up by id, serial or BMC MAC, list, patch, delete, purge.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answer::JsonAnswer;
use super::bmc_address::ensure_allowed;
use super::extract::{IfMatch, Json, Query, etag, uuid_param, with_location};
use super::openapi::COMPONENTS;
use super::problem::{ApiResult, Problem};
use super::schema::common::{CountDoc, ListResponse, count_of};
use super::schema::component::{
    ComponentDoc, ComponentInput, ComponentPatchInput, ComponentWithRackDoc,
};
use crate::app::AppState;
use crate::db::page::PageRequest;
use crate::error::{Error, Violations};
use crate::inventory::components::{self, ComponentFilter};
use crate::inventory::model::{Component, ComponentType, MacAddress};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(add_component, list_components))
        .routes(routes!(get_component_by_serial))
        .routes(routes!(get_component_by_mac))
        .routes(routes!(get_component, patch_component, delete_component))
        .routes(routes!(purge_component))
}

/// Query of `GET /v1/components`. Text filters match exactly, or as a case-insensitive glob
/// when they contain `*`; manufacturer always ignores case.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListComponentsQuery {
    pub rack_id: Option<uuid::Uuid>,
    pub rack_name: Option<String>,
    /// One type or a comma-separated list, e.g. `compute,nvswitch`.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub kind: Option<String>,
    pub name: Option<String>,
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    pub serial_number: Option<String>,
    /// The component's id in its device manager.
    pub external_id: Option<String>,
    /// Any of the component's BMC MACs, in any common notation.
    pub bmc_mac: Option<String>,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<u64>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// `exact` or `estimate` to get `total` (and `total_is_estimate`) in the answer: `exact`
    /// counts every match (as costly as the whole list), `estimate` is PostgreSQL's planner
    /// estimate (SQLite counts exactly). Absent: no `total`, so every page costs the same.
    pub count: Option<CountDoc>,
}

/// Query of single-component reads.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WithRackQuery {
    /// Also return the rack the component is in (without its components).
    #[serde(default)]
    pub with_rack: bool,
}

/// Query of `GET /v1/components/by-serial`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ComponentBySerialQuery {
    /// Matched without regard to case (`Wiwynn` finds `WiWynn`).
    pub manufacturer: String,
    pub serial_number: String,
    #[serde(default)]
    pub with_rack: bool,
}

fn with_etag(status: StatusCode, component: Component) -> impl IntoResponse {
    let mut headers = HeaderMap::new();
    headers.insert(header::ETAG, etag(component.revision));
    (status, headers, axum::Json(ComponentDoc::from(component)))
}

/// `rack_busy` is what the lookup read beside the component (`None` when it did not): on an
/// idle rack nothing is under maintenance, and the mark needs no query of its own.
async fn respond_with_rack(
    state: &AppState,
    component: Component,
    rack_busy: Option<bool>,
    with_rack: bool,
) -> ApiResult<(HeaderMap, JsonAnswer<ComponentWithRackDoc>)> {
    let revision = component.revision;
    let found = components::with_rack(state.db(), component, with_rack).await?;
    let mut headers = HeaderMap::new();
    headers.insert(header::ETAG, etag(revision));
    let mut doc = ComponentWithRackDoc::from(found);
    if rack_busy != Some(false) {
        super::maintenance::mark_components(state.db(), &mut [&mut doc.component]).await?;
    }
    if let Some(rack) = doc.rack.take() {
        let mut racks = [rack];
        super::maintenance::mark_racks(state.db(), &mut racks).await?;
        let [rack] = racks;
        doc.rack = Some(rack);
    }
    Ok((headers, JsonAnswer(doc)))
}

/// Add a component
///
/// Registers one component with its BMCs, in the rack given by `rack_id` or in no rack.
#[utoipa::path(post, path = "/v1/components", tag = COMPONENTS, security(("access" = ["editor"])), request_body = ComponentInput,
    responses(
        (status = 201, description = "Component added", body = ComponentDoc,
            headers(("Location" = String, description = "URL of the new component"), ("ETag" = String))),
        (status = 400, description = "Invalid input, or the rack does not exist", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The rack does not exist", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Serial number or a BMC MAC already registered", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn add_component(
    State(state): State<AppState>,
    Json(body): Json<ComponentInput>,
) -> ApiResult<impl IntoResponse> {
    let new = body.into_domain()?;
    let networks = state.config().bmc_networks();
    ensure_allowed(&networks, [("bmcs".to_string(), new.bmcs.as_slice())])?;
    let component = components::add(state.db(), &new, state.now()).await?;
    let location = format!("/v1/components/{}", component.id);
    Ok(with_location(
        with_etag(StatusCode::CREATED, component),
        &location,
    ))
}

/// List components
///
/// Live components in name order, filtered by the given query parameters (all must match),
/// one page at a time, each with its BMCs.
#[utoipa::path(get, path = "/v1/components", tag = COMPONENTS, security(("access" = ["viewer"])), params(ListComponentsQuery),
    responses(
        (status = 200, description = "One page of components", body = ListResponse<ComponentDoc>),
        (status = 400, description = "Bad filter, limit or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_components(
    State(state): State<AppState>,
    Query(q): Query<ListComponentsQuery>,
) -> ApiResult<axum::Json<ListResponse<ComponentDoc>>> {
    let mut v = Violations::default();
    let page =
        PageRequest::parse(q.limit, q.cursor.as_deref()).map(|p| p.counting(count_of(q.count)));
    let mut kinds = Vec::new();
    for raw in q
        .kind
        .iter()
        .flat_map(|k| k.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match ComponentType::parse(raw) {
            Some(kind) => kinds.push(kind),
            None => v.push("type", format!("unknown component type {raw:?}")),
        }
    }
    let bmc_mac = q.bmc_mac.as_deref().map(|raw| {
        MacAddress::parse(raw)
            .map(|m| m.to_string())
            .unwrap_or_else(|| {
                v.push("bmc_mac", format!("{raw:?} is not a MAC address"));
                String::new()
            })
    });
    v.finish()?;
    let filter = ComponentFilter {
        rack_id: q.rack_id.map(Into::into),
        rack_name: q.rack_name,
        kinds,
        name: q.name,
        manufacturer: q.manufacturer,
        model: q.model,
        serial_number: q.serial_number,
        external_id: q.external_id,
        bmc_mac,
    };
    let found = components::list(state.db(), &filter, &page?).await?;
    let mut list: ListResponse<ComponentDoc> = ListResponse::from_page(found);
    let mut items: Vec<&mut ComponentDoc> = list.items.iter_mut().collect();
    super::maintenance::mark_components(state.db(), &mut items).await?;
    Ok(axum::Json(list))
}

/// Find a component by serial number
///
/// The live component with this manufacturer (any case) and serial number, with its BMCs, and
/// its rack when `with_rack=true`.
#[utoipa::path(get, path = "/v1/components/by-serial", tag = COMPONENTS, security(("access" = ["viewer"])), params(ComponentBySerialQuery),
    responses(
        (status = 200, description = "The component", body = ComponentWithRackDoc, headers(("ETag" = String))),
        (status = 400, description = "Missing manufacturer or serial_number", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such component", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_component_by_serial(
    State(state): State<AppState>,
    Query(q): Query<ComponentBySerialQuery>,
) -> ApiResult<impl IntoResponse> {
    if q.serial_number.trim().is_empty() {
        return Err(Error::invalid("serial_number", "must not be empty").into());
    }
    let found =
        components::find_by_serial(state.lookups(), &q.manufacturer, q.serial_number.trim())
            .await?;
    respond_with_rack(&state, found.component, Some(found.rack_busy), q.with_rack).await
}

/// Find a component by BMC MAC
///
/// The live component one of whose BMCs (host or DPU) has this MAC, in any common notation.
#[utoipa::path(get, path = "/v1/components/by-mac/{mac}", tag = COMPONENTS, security(("access" = ["viewer"])),
    params(("mac" = String, Path, description = "BMC MAC address", example = "e0:9d:73:80:c0:59"), WithRackQuery),
    responses(
        (status = 200, description = "The component", body = ComponentWithRackDoc, headers(("ETag" = String))),
        (status = 400, description = "Not a MAC address", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No component has a BMC with this MAC", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_component_by_mac(
    State(state): State<AppState>,
    Path(mac): Path<String>,
    Query(q): Query<WithRackQuery>,
) -> ApiResult<impl IntoResponse> {
    let mac = MacAddress::parse(&mac)
        .ok_or_else(|| Error::invalid("mac", format!("{mac:?} is not a MAC address")))?;
    let component = components::get_by_mac(state.db(), mac.as_str()).await?;
    respond_with_rack(&state, component, None, q.with_rack).await
}

/// Get a component
///
/// A live component by id with its BMCs, and its rack when `with_rack=true`. While a task runs
/// on it, `in_maintenance` is `true` and `maintenance_task_id` names the task.
#[utoipa::path(get, path = "/v1/components/{id}", tag = COMPONENTS, security(("access" = ["viewer"])),
    params(("id" = uuid::Uuid, Path, description = "Component id"), WithRackQuery),
    responses(
        (status = 200, description = "The component", body = ComponentWithRackDoc, headers(("ETag" = String))),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such component", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_component(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<WithRackQuery>,
) -> ApiResult<impl IntoResponse> {
    let id = uuid_param("id", &id)?;
    let found = components::find(state.db(), id.into()).await?;
    respond_with_rack(&state, found.component, Some(found.rack_busy), q.with_rack).await
}

/// Patch a component
///
/// Merges the body into the component: absent fields are kept, `null` clears an optional field
/// (or, for `rack_id`, detaches it), position keys merge one by one, listed BMCs are added or
/// re-addressed. With `If-Match`, applies only to that revision.
#[utoipa::path(patch, path = "/v1/components/{id}", tag = COMPONENTS, security(("access" = ["editor"])), request_body = ComponentPatchInput,
    params(("id" = uuid::Uuid, Path, description = "Component id"),
        ("If-Match" = Option<String>, Header, description = "Apply only if the component's ETag still matches")),
    responses(
        (status = 200, description = "Patched", body = ComponentDoc, headers(("ETag" = String))),
        (status = 400, description = "Invalid input, or the target rack does not exist", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such component", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A BMC MAC already belongs to another component", body = Problem, content_type = "application/problem+json"),
        (status = 412, description = "The component changed since the given ETag", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn patch_component(
    State(state): State<AppState>,
    Path(id): Path<String>,
    if_match: IfMatch,
    Json(body): Json<ComponentPatchInput>,
) -> ApiResult<impl IntoResponse> {
    let id = uuid_param("id", &id)?;
    let patch = body.into_domain()?;
    let networks = state.config().bmc_networks();
    ensure_allowed(&networks, [("bmcs".to_string(), patch.bmcs.as_slice())])?;
    let component =
        components::patch(state.db(), id.into(), &patch, if_match.0, state.now()).await?;
    Ok(with_etag(StatusCode::OK, component))
}

/// Delete a component
///
/// Soft-deletes the component and its BMCs; its serial number and MACs become free to register
/// again. `purge` removes it for good.
#[utoipa::path(delete, path = "/v1/components/{id}", tag = COMPONENTS, security(("access" = ["editor"])),
    params(("id" = uuid::Uuid, Path, description = "Component id"),
        ("If-Match" = Option<String>, Header, description = "Delete only if the component's ETag still matches")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such component", body = Problem, content_type = "application/problem+json"),
        (status = 412, description = "The component changed since the given ETag", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_component(
    State(state): State<AppState>,
    Path(id): Path<String>,
    if_match: IfMatch,
) -> ApiResult<StatusCode> {
    let id = uuid_param("id", &id)?;
    components::delete(state.db(), id.into(), if_match.0, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Purge a deleted component
///
/// Removes a soft-deleted component and its BMCs for good.
#[utoipa::path(post, path = "/v1/components/{id}/purge", tag = COMPONENTS, security(("access" = ["admin"])),
    params(("id" = uuid::Uuid, Path, description = "Component id")),
    responses(
        (status = 204, description = "Purged"),
        (status = 404, description = "No such component", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The component is not deleted yet (`code`: `not_deleted`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn purge_component(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = uuid_param("id", &id)?;
    components::purge(state.db(), id.into(), state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
