//! NVL domain endpoints: create, list, get, and attach, detach or list a domain's racks.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Json, Query};
use super::openapi::NVL_DOMAINS;
use super::problem::{ApiResult, Problem};
use super::schema::common::{CountDoc, ListResponse, count_of, required_text};
use super::schema::nvl::{AttachRacksRequest, CreateNvlDomainRequest, NvlDomainDoc};
use super::schema::rack::RackDoc;
use crate::app::AppState;
use crate::db::page::PageRequest;
use crate::error::Violations;
use crate::inventory::nvl;
use crate::inventory::racks::{self, RackFilter};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_nvl_domain, list_nvl_domains))
        .routes(routes!(get_nvl_domain))
        .routes(routes!(attach_racks, list_domain_racks))
        .routes(routes!(detach_rack))
}

/// Query of `GET /v1/nvl-domains`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListNvlDomainsQuery {
    /// Exact name, or a case-insensitive glob with `*`.
    pub name: Option<String>,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    /// `exact` or `estimate` to get `total` (and `total_is_estimate`) in the answer: `exact`
    /// counts every match (as costly as the whole list), `estimate` is PostgreSQL's planner
    /// estimate (SQLite counts exactly). Absent: no `total`, so every page costs the same.
    pub count: Option<CountDoc>,
}

/// Query of `GET /v1/nvl-domains/{id_or_name}/racks`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DomainRacksQuery {
    #[serde(default)]
    pub include_components: bool,
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    /// `exact` or `estimate` to get `total` (and `total_is_estimate`) in the answer: `exact`
    /// counts every match (as costly as the whole list), `estimate` is PostgreSQL's planner
    /// estimate (SQLite counts exactly). Absent: no `total`, so every page costs the same.
    pub count: Option<CountDoc>,
}

/// Create an NVL domain
///
/// Creates a domain, or returns the existing one (`200`) when a domain with this name exists
/// already, so provisioning can be re-run. A name or id held by a different domain is a `409`.
#[utoipa::path(post, path = "/v1/nvl-domains", tag = NVL_DOMAINS, security(("access" = ["editor"])), request_body = CreateNvlDomainRequest,
    responses(
        (status = 201, description = "Created", body = NvlDomainDoc, headers(("Location" = String))),
        (status = 200, description = "A domain with this name already existed", body = NvlDomainDoc),
        (status = 400, description = "Invalid input", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The id belongs to another domain", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_nvl_domain(
    State(state): State<AppState>,
    Json(body): Json<CreateNvlDomainRequest>,
) -> ApiResult<impl IntoResponse> {
    let mut v = Violations::default();
    let name = required_text(&mut v, "name", &body.name);
    v.finish()?;
    let (domain, created) =
        nvl::create_audited(state.db(), body.id.map(Into::into), &name, state.now()).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let location = format!("/v1/nvl-domains/{}", domain.id);
    Ok((
        status,
        [(header::LOCATION, location)],
        axum::Json(NvlDomainDoc::from(domain)),
    ))
}

/// List NVL domains
///
/// Domains in name order, one page at a time.
#[utoipa::path(get, path = "/v1/nvl-domains", tag = NVL_DOMAINS, security(("access" = ["viewer"])), params(ListNvlDomainsQuery),
    responses(
        (status = 200, description = "One page of domains", body = ListResponse<NvlDomainDoc>),
        (status = 400, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_nvl_domains(
    State(state): State<AppState>,
    Query(q): Query<ListNvlDomainsQuery>,
) -> ApiResult<axum::Json<ListResponse<NvlDomainDoc>>> {
    let page = PageRequest::parse(q.limit, q.cursor.as_deref())?.counting(count_of(q.count));
    let domains = nvl::list(state.db(), q.name.as_deref(), &page).await?;
    Ok(axum::Json(ListResponse::from_page(domains)))
}

/// Get an NVL domain
///
/// A domain by id or by name, with `domain_mixed`: the tray types whose racks run different
/// firmware versions (as last observed by the drift sync), with the versions by rack.
#[utoipa::path(get, path = "/v1/nvl-domains/{id_or_name}", tag = NVL_DOMAINS, security(("access" = ["viewer"])),
    params(("id_or_name" = String, Path, description = "Domain id or name")),
    responses(
        (status = 200, description = "The domain", body = NvlDomainDoc),
        (status = 404, description = "No such domain", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_nvl_domain(
    State(state): State<AppState>,
    Path(id_or_name): Path<String>,
) -> ApiResult<axum::Json<NvlDomainDoc>> {
    let domain = nvl::get(state.db(), &id_or_name).await?;
    let id: uuid::Uuid = domain.id.into();
    let mixes = crate::drift::domains::mixed(state.db(), Some(&[id]), &Default::default()).await?;
    let mut doc = NvlDomainDoc::from(domain);
    doc.domain_mixed = Some(mixes.into_iter().map(Into::into).collect());
    Ok(axum::Json(doc))
}

/// Attach racks to an NVL domain
///
/// Attaches the listed racks (each by id or name), all or nothing. Racks already in this
/// domain are left as they are; a rack in another domain is a `409` naming it. Answers with
/// the domain's racks.
#[utoipa::path(post, path = "/v1/nvl-domains/{id_or_name}/racks", tag = NVL_DOMAINS, security(("access" = ["editor"])), request_body = AttachRacksRequest,
    params(("id_or_name" = String, Path, description = "Domain id or name")),
    responses(
        (status = 200, description = "The domain's racks after attaching", body = ListResponse<RackDoc>),
        (status = 400, description = "A rack reference is empty or names no rack", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such domain", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A rack is attached to another domain", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn attach_racks(
    State(state): State<AppState>,
    Path(id_or_name): Path<String>,
    Json(body): Json<AttachRacksRequest>,
) -> ApiResult<axum::Json<ListResponse<RackDoc>>> {
    let mut v = Violations::default();
    let wanted: Vec<String> = body
        .racks
        .iter()
        .enumerate()
        .map(|(i, r)| {
            match (
                r.id,
                r.name.as_deref().map(str::trim).filter(|n| !n.is_empty()),
            ) {
                (Some(id), None) => id.to_string(),
                (None, Some(name)) => name.to_string(),
                _ => {
                    v.push(format!("racks[{i}]"), "give exactly one of id or name");
                    String::new()
                }
            }
        })
        .collect();
    v.finish()?;
    let domain = nvl::attach(state.db(), &id_or_name, &wanted, state.now()).await?;
    domain_racks(
        &state,
        &domain.id.to_string(),
        false,
        PageRequest::default(),
    )
    .await
}

async fn domain_racks(
    state: &AppState,
    domain: &str,
    include_components: bool,
    page: PageRequest,
) -> ApiResult<axum::Json<ListResponse<RackDoc>>> {
    let filter = RackFilter {
        nvl_domain: Some(domain.to_string()),
        ..RackFilter::default()
    };
    let found = racks::list(state.db(), &filter, &page, include_components).await?;
    Ok(axum::Json(ListResponse::from_page(found)))
}

/// List an NVL domain's racks
///
/// The live racks attached to the domain, in name order.
#[utoipa::path(get, path = "/v1/nvl-domains/{id_or_name}/racks", tag = NVL_DOMAINS, security(("access" = ["viewer"])),
    params(("id_or_name" = String, Path, description = "Domain id or name"), DomainRacksQuery),
    responses(
        (status = 200, description = "The domain's racks", body = ListResponse<RackDoc>),
        (status = 404, description = "No such domain", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_domain_racks(
    State(state): State<AppState>,
    Path(id_or_name): Path<String>,
    Query(q): Query<DomainRacksQuery>,
) -> ApiResult<axum::Json<ListResponse<RackDoc>>> {
    let page = PageRequest::parse(q.limit, q.cursor.as_deref())?.counting(count_of(q.count));
    let domain = nvl::get(state.db(), &id_or_name).await?;
    domain_racks(&state, &domain.id.to_string(), q.include_components, page).await
}

/// Detach a rack from an NVL domain
///
/// Detaches the rack (by id or name). A rack in no domain is left as it is; a rack in another
/// domain is a `409`.
#[utoipa::path(delete, path = "/v1/nvl-domains/{id_or_name}/racks/{rack}", tag = NVL_DOMAINS, security(("access" = ["editor"])),
    params(("id_or_name" = String, Path, description = "Domain id or name"),
        ("rack" = String, Path, description = "Rack id or name")),
    responses(
        (status = 204, description = "Detached"),
        (status = 404, description = "No such domain or rack", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The rack is attached to another domain", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn detach_rack(
    State(state): State<AppState>,
    Path((id_or_name, rack)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    nvl::detach(state.db(), &id_or_name, &rack, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
