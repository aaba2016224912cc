//! Expected vs actual: live validation against the component managers, and the drift the
//! periodic sync recorded.

use axum::extract::{Path, State};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{MaybeJson, Query, uuid_param};
use super::openapi::VALIDATION;
use super::problem::{ApiResult, Problem};
use super::schema::common::{ComponentTypeDoc, CountDoc, ListResponse, count_of};
use super::schema::drift::{DiffKindDoc, DriftDoc, ValidationDoc, ValidationRequest};
use crate::app::AppState;
use crate::db::page::PageRequest;
use crate::drift::store::{self, DriftFilter};
use crate::drift::{expected, validate};
use crate::error::Error;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(validate_components))
        .routes(routes!(validate_rack))
        .routes(routes!(list_drift))
}

/// Validate components against their managers
///
/// Asks every component manager, now, what it sees of the targeted components (one batched,
/// time-bounded call per manager and component type) and compares that with the inventory:
/// serial number, and firmware version where the inventory names one. Without a body (or
/// without `target_spec`) every component is validated and devices the managers have that Flow
/// does not expect are reported as `unexpected`. A manager that does not answer makes its
/// components `unreachable`, never `missing`. Nothing is written; see `GET /v1/drift` for what
/// the periodic sync recorded.
#[utoipa::path(post, path = "/v1/validation", tag = VALIDATION, security(("access" = ["operator"])), request_body(content = Option<ValidationRequest>,
        description = "Targets to validate; omit the body to validate everything"),
    responses(
        (status = 200, description = "Expected vs actual", body = ValidationDoc),
        (status = 400, description = "Bad target spec, or a target that names nothing; `errors` names each", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "A body that is not JSON", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn validate_components(
    State(state): State<AppState>,
    MaybeJson(body): MaybeJson<ValidationRequest>,
) -> ApiResult<axum::Json<ValidationDoc>> {
    let targets = body.unwrap_or_default().into_domain()?;
    let result = validate::validate(state.db(), state.observer(), targets.as_ref()).await?;
    Ok(axum::Json(result.into()))
}

/// Validate a rack against its managers
///
/// Live validation of one rack's components, as `POST /v1/validation` with that rack as the
/// target. Devices the managers have beyond the rack are not attributed to it, so this never
/// reports `unexpected`.
#[utoipa::path(get, path = "/v1/racks/{id}/validation", tag = VALIDATION, security(("access" = ["operator"])),
    params(("id" = uuid::Uuid, Path, description = "Rack id")),
    responses(
        (status = 200, description = "Expected vs actual for the rack", body = ValidationDoc),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn validate_rack(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ValidationDoc>> {
    let id = uuid_param("id", &id)?;
    let result = validate::validate_rack(state.db(), state.observer(), id.into()).await?;
    Ok(axum::Json(result.into()))
}

/// Query of `GET /v1/drift`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListDriftQuery {
    /// Rack id or name: drift of that rack's components.
    pub rack: Option<String>,
    /// Component type.
    #[serde(rename = "type")]
    #[param(rename = "type", value_type = Option<ComponentTypeDoc>)]
    pub kind: Option<ComponentTypeDoc>,
    /// Kind of difference.
    #[serde(rename = "kind")]
    #[param(rename = "kind", value_type = Option<DiffKindDoc>)]
    pub diff_kind: Option<DiffKindDoc>,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<u64>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// `exact` or `estimate` to get `total` (and `total_is_estimate`) in the answer: `exact`
    /// counts every match (as costly as the whole list), `estimate` is PostgreSQL's planner
    /// estimate (SQLite counts exactly). Absent: no `total`, so every page costs the same.
    pub count: Option<CountDoc>,
}

/// List recorded drift
///
/// Differences the periodic drift sync recorded (`FLOW_DRIFT_SYNC_INTERVAL_SECS`), ordered by
/// source. Each source (component type and manager) is replaced as a whole when it answers; a
/// source that did not answer the last sync keeps its previous rows with `stale: true`, next to
/// one `unreachable` row saying why.
#[utoipa::path(get, path = "/v1/drift", tag = VALIDATION, security(("access" = ["viewer"])), params(ListDriftQuery),
    responses(
        (status = 200, description = "One page of drift", body = ListResponse<DriftDoc>),
        (status = 400, description = "Bad filter, limit or cursor", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_drift(
    State(state): State<AppState>,
    Query(q): Query<ListDriftQuery>,
) -> ApiResult<axum::Json<ListResponse<DriftDoc>>> {
    let page = PageRequest::parse(q.limit, q.cursor.as_deref())?.counting(count_of(q.count));
    let rack_id = match q.rack.as_deref().map(str::trim) {
        None => None,
        Some("") => return Err(Error::invalid("rack", "must not be empty").into()),
        Some(rack) => Some(expected::rack_id(state.db(), rack).await?),
    };
    let filter = DriftFilter {
        rack_id,
        kind: q.kind.map(Into::into),
        diff_kind: q.diff_kind.map(Into::into),
    };
    let found = store::list(state.db(), &filter, &page).await?;
    Ok(axum::Json(ListResponse::from_page(found)))
}
