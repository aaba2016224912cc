//! Health report endpoints: other systems (a health monitor, a burn-in checker) report alerts
//! on a component, one report per source; an alert classified `PreventOperations` makes the
//! component not ready, so operations on it are refused `409 not_ready`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Json, uuid_param};
use super::openapi::HOLDS;
use super::problem::{ApiResult, Problem};
use super::schema::readiness::{HealthReportDoc, HealthReportListDoc, PutHealthReportRequest};
use crate::app::AppState;
use crate::error::{Error, Violations};
use crate::inventory::health::{self, Alert};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_health_reports))
        .routes(routes!(put_health_report, delete_health_report))
}

/// Longest source name.
const MAX_SOURCE: usize = 128;

fn source_param(source: &str) -> Result<String, Error> {
    let s = source.trim();
    if s.is_empty() || s.chars().count() > MAX_SOURCE {
        return Err(Error::invalid(
            "source",
            format!("must be 1 to {MAX_SOURCE} characters"),
        ));
    }
    Ok(s.to_string())
}

fn alerts(body: PutHealthReportRequest) -> Result<Vec<Alert>, Error> {
    let mut v = Violations::default();
    for (i, a) in body.alerts.iter().enumerate() {
        if a.id.trim().is_empty() {
            v.push(format!("alerts[{i}].id"), "must not be empty");
        }
        if body.alerts[..i].iter().any(|b| b.id == a.id) {
            v.push(format!("alerts[{i}].id"), "is given twice");
        }
    }
    v.finish()?;
    Ok(body
        .alerts
        .into_iter()
        .map(|a| Alert {
            id: a.id.trim().to_string(),
            message: a.message,
            classifications: a.classifications,
        })
        .collect())
}

/// Replace a health report
///
/// Replaces everything `source` reported on the component with `alerts` (an empty list clears
/// it). An alert classified `PreventOperations` makes the component not ready: operations on
/// it are refused `409` `not_ready`. Other classifications are kept but block nothing.
#[utoipa::path(put, path = "/v1/components/{id}/health-reports/{source}", tag = HOLDS, security(("access" = ["operator"])),
    request_body = PutHealthReportRequest,
    params(("id" = uuid::Uuid, Path, description = "Component id"), ("source" = String, Path, description = "Who reports (e.g. `nvsm`, `dcgm`)")),
    responses(
        (status = 200, description = "Replaced", body = HealthReportDoc),
        (status = 201, description = "The source's first report on the component", body = HealthReportDoc),
        (status = 400, description = "Invalid input; `errors` names each field", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such component", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put_health_report(
    State(state): State<AppState>,
    Path((id, source)): Path<(String, String)>,
    Json(body): Json<PutHealthReportRequest>,
) -> ApiResult<(StatusCode, axum::Json<HealthReportDoc>)> {
    let id = uuid_param("id", &id)?;
    let source = source_param(&source)?;
    let alerts = alerts(body)?;
    let (report, created) =
        health::put(state.db(), id.into(), &source, &alerts, state.now()).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(report.into())))
}

/// List a component's health reports
#[utoipa::path(get, path = "/v1/components/{id}/health-reports", tag = HOLDS, security(("access" = ["viewer"])),
    params(("id" = uuid::Uuid, Path, description = "Component id")),
    responses(
        (status = 200, description = "Every source's report, by source", body = HealthReportListDoc),
        (status = 404, description = "No such component", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_health_reports(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<HealthReportListDoc>> {
    let id = uuid_param("id", &id)?;
    let items = health::list(state.db(), id.into()).await?;
    Ok(axum::Json(HealthReportListDoc {
        items: items.into_iter().map(Into::into).collect(),
    }))
}

/// Delete a health report
///
/// Removes what `source` reported on the component.
#[utoipa::path(delete, path = "/v1/components/{id}/health-reports/{source}", tag = HOLDS, security(("access" = ["operator"])),
    params(("id" = uuid::Uuid, Path, description = "Component id"), ("source" = String, Path, description = "Who reported")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such report", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_health_report(
    State(state): State<AppState>,
    Path((id, source)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let id = uuid_param("id", &id)?;
    let source = source_param(&source)?;
    health::delete(state.db(), id.into(), &source, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
