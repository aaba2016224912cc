//! Rack endpoints: create an expected rack, look up, list, patch, delete, purge.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::bmc_address;
use super::extract::{IfMatch, Json, Query, etag, uuid_param, with_location};
use super::openapi::RACKS;
use super::problem::{ApiResult, Problem};
use super::schema::common::{CountDoc, ListResponse, count_of};
use super::schema::rack::{CreateRackRequest, RackDoc, RackPatchInput, RackPatchResponse};
use crate::app::AppState;
use crate::db::page::PageRequest;
use crate::inventory::racks::{self, RackFilter};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_expected_rack))
        .routes(routes!(list_racks))
        .routes(routes!(get_rack_by_serial))
        .routes(routes!(get_rack, patch_rack, delete_rack))
        .routes(routes!(purge_rack))
}

/// Query of `GET /v1/racks`. Text filters match exactly, or as a case-insensitive glob when
/// they contain `*`; manufacturer always ignores case.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListRacksQuery {
    pub name: Option<String>,
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    /// NVL domain id or name.
    pub nvl_domain: Option<String>,
    pub region: Option<String>,
    pub datacenter: Option<String>,
    pub room: Option<String>,
    pub position: Option<String>,
    /// Embed each rack's components and their BMCs.
    #[serde(default)]
    pub include_components: bool,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<u64>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// `exact` or `estimate` to get `total` (and `total_is_estimate`) in the answer: `exact`
    /// counts every match (as costly as the whole list), `estimate` is PostgreSQL's planner
    /// estimate (SQLite counts exactly). Absent: no `total`, so every page costs the same.
    pub count: Option<CountDoc>,
}

/// Query of single-rack reads.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GetRackQuery {
    /// Embed the rack's components and their BMCs.
    #[serde(default)]
    pub include_components: bool,
}

/// Query of `GET /v1/racks/by-serial`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RackBySerialQuery {
    /// Matched without regard to case.
    pub manufacturer: String,
    pub serial_number: String,
    #[serde(default)]
    pub include_components: bool,
}

/// Fills in each rack's recorded drift counts (one query for the whole page).
async fn with_drift(state: &AppState, racks: &mut [RackDoc]) -> crate::error::Result<()> {
    let ids: Vec<uuid::Uuid> = racks.iter().map(|r| r.id).collect();
    let mut counts = crate::drift::store::rack_counts(state.db(), &ids).await?;
    for rack in racks.iter_mut() {
        rack.drift = Some(counts.remove(&rack.id).unwrap_or_default().into());
    }
    super::maintenance::mark_racks(state.db(), racks).await
}

fn with_etag(status: StatusCode, rack: RackDoc) -> impl IntoResponse {
    let mut headers = HeaderMap::new();
    headers.insert(header::ETAG, etag(rack.revision));
    (status, headers, axum::Json(rack))
}

/// Create an expected rack
///
/// Records a rack and everything it should contain (components with their positions and BMCs)
/// in one transaction: if any part is invalid or clashes with the inventory, nothing is stored.
/// Answers with the stored rack, its components included, and its `Location`.
#[utoipa::path(post, path = "/v1/expected-racks", tag = RACKS, security(("access" = ["editor"])), request_body = CreateRackRequest,
    responses(
        (status = 201, description = "Rack created", body = RackDoc,
            headers(("Location" = String, description = "URL of the new rack"), ("ETag" = String))),
        (status = 400, description = "Invalid input; `errors` names each field", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Name, serial number or a BMC MAC already registered", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body too large", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not JSON", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_expected_rack(
    State(state): State<AppState>,
    Json(body): Json<CreateRackRequest>,
) -> ApiResult<impl IntoResponse> {
    let new = body.into_domain()?;
    let networks = state.config().bmc_networks();
    bmc_address::ensure_allowed(&networks, bmc_address::of_components(&new.components))?;
    let rack = racks::create(state.db(), &new, state.now()).await?;
    let location = format!("/v1/racks/{}", rack.id);
    let mut doc = RackDoc::from(rack);
    // A new rack's components have no recorded drift yet; said here so a read answers alike.
    doc.drift = Some(Default::default());
    Ok(with_location(
        with_etag(StatusCode::CREATED, doc),
        &location,
    ))
}

/// List racks
///
/// Live racks in name order, filtered by the given query parameters (all must match), one page
/// at a time. Follow `next_cursor` for the next page; deep pages cost the same as the first.
#[utoipa::path(get, path = "/v1/racks", tag = RACKS, security(("access" = ["viewer"])), params(ListRacksQuery),
    responses(
        (status = 200, description = "One page of racks", body = ListResponse<RackDoc>),
        (status = 400, description = "Bad filter, limit or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_racks(
    State(state): State<AppState>,
    Query(q): Query<ListRacksQuery>,
) -> ApiResult<axum::Json<ListResponse<RackDoc>>> {
    let page = PageRequest::parse(q.limit, q.cursor.as_deref())?.counting(count_of(q.count));
    let filter = RackFilter {
        name: q.name,
        manufacturer: q.manufacturer,
        model: q.model,
        nvl_domain: q.nvl_domain,
        region: q.region,
        datacenter: q.datacenter,
        room: q.room,
        position: q.position,
    };
    let racks = racks::list(state.db(), &filter, &page, q.include_components).await?;
    let mut list: ListResponse<RackDoc> = ListResponse::from_page(racks);
    with_drift(&state, &mut list.items).await?;
    Ok(axum::Json(list))
}

/// Find a rack by serial number
///
/// The live rack with this manufacturer (any case) and serial number.
#[utoipa::path(get, path = "/v1/racks/by-serial", tag = RACKS, security(("access" = ["viewer"])), params(RackBySerialQuery),
    responses(
        (status = 200, description = "The rack", body = RackDoc, headers(("ETag" = String))),
        (status = 400, description = "Missing manufacturer or serial_number", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_rack_by_serial(
    State(state): State<AppState>,
    Query(q): Query<RackBySerialQuery>,
) -> ApiResult<impl IntoResponse> {
    if q.serial_number.trim().is_empty() {
        return Err(crate::error::Error::invalid("serial_number", "must not be empty").into());
    }
    let rack = racks::get_by_serial(
        state.db(),
        &q.manufacturer,
        q.serial_number.trim(),
        q.include_components,
    )
    .await?;
    let mut doc = [RackDoc::from(rack)];
    with_drift(&state, &mut doc).await?;
    let [doc] = doc;
    Ok(with_etag(StatusCode::OK, doc))
}

/// Get a rack
///
/// A live rack by id, with its components when `include_components=true`. The `ETag` header
/// carries the rack's revision for use in `If-Match`.
#[utoipa::path(get, path = "/v1/racks/{id}", tag = RACKS, security(("access" = ["viewer"])),
    params(("id" = uuid::Uuid, Path, description = "Rack id"), GetRackQuery),
    responses(
        (status = 200, description = "The rack", body = RackDoc, headers(("ETag" = String))),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_rack(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<GetRackQuery>,
) -> ApiResult<impl IntoResponse> {
    let id = uuid_param("id", &id)?;
    let rack = racks::get(state.db(), id.into(), q.include_components).await?;
    let mut doc = [RackDoc::from(rack)];
    with_drift(&state, &mut doc).await?;
    let [doc] = doc;
    Ok(with_etag(StatusCode::OK, doc))
}

/// Patch a rack
///
/// Merges the body into the rack: absent fields are kept, `null` clears an optional field,
/// location keys merge one by one. Listed components are matched by manufacturer and serial
/// number and updated, or added when new; nothing is removed. With `If-Match`, the patch
/// applies only to that revision. Answers with the rack and a report of what changed.
#[utoipa::path(patch, path = "/v1/racks/{id}", tag = RACKS, security(("access" = ["editor"])), request_body = RackPatchInput,
    params(("id" = uuid::Uuid, Path, description = "Rack id"),
        ("If-Match" = Option<String>, Header, description = "Apply only if the rack's ETag still matches")),
    responses(
        (status = 200, description = "Patched", body = RackPatchResponse, headers(("ETag" = String))),
        (status = 400, description = "Invalid input", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "New name, serial or MAC already used, or a listed component is in another rack", body = Problem, content_type = "application/problem+json"),
        (status = 412, description = "The rack changed since the given ETag", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn patch_rack(
    State(state): State<AppState>,
    Path(id): Path<String>,
    if_match: IfMatch,
    Json(body): Json<RackPatchInput>,
) -> ApiResult<impl IntoResponse> {
    let id = uuid_param("id", &id)?;
    let patch = body.into_domain()?;
    let networks = state.config().bmc_networks();
    bmc_address::ensure_allowed(&networks, bmc_address::of_components(&patch.components))?;
    let (rack, report) =
        racks::patch(state.db(), id.into(), &patch, if_match.0, state.now()).await?;
    let mut headers = HeaderMap::new();
    headers.insert(header::ETAG, etag(rack.revision));
    let mut doc = [RackDoc::from(rack)];
    with_drift(&state, &mut doc).await?;
    let [doc] = doc;
    Ok((
        headers,
        axum::Json(RackPatchResponse {
            rack: doc,
            report: report.into(),
        }),
    ))
}

/// Delete a rack
///
/// Soft-deletes the rack and its components: they disappear from every read, and their name,
/// serial numbers and MACs become free to register again. `purge` removes them for good.
#[utoipa::path(delete, path = "/v1/racks/{id}", tag = RACKS, security(("access" = ["editor"])),
    params(("id" = uuid::Uuid, Path, description = "Rack id"),
        ("If-Match" = Option<String>, Header, description = "Delete only if the rack's ETag still matches")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
        (status = 412, description = "The rack changed since the given ETag", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_rack(
    State(state): State<AppState>,
    Path(id): Path<String>,
    if_match: IfMatch,
) -> ApiResult<StatusCode> {
    let id = uuid_param("id", &id)?;
    racks::delete(state.db(), id.into(), if_match.0, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Purge a deleted rack
///
/// Removes a soft-deleted rack and every component that was in it, with their BMCs, for good.
#[utoipa::path(post, path = "/v1/racks/{id}/purge", tag = RACKS, security(("access" = ["admin"])),
    params(("id" = uuid::Uuid, Path, description = "Rack id")),
    responses(
        (status = 204, description = "Purged"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The rack is not deleted yet (`code`: `not_deleted`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn purge_rack(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = uuid_param("id", &id)?;
    racks::purge(state.db(), id.into(), state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
