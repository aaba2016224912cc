//! Operation-rule endpoints: rules (JSON or YAML, every version kept), the default rule per
//! operation, the built-in rules, and the rule a rack runs for an operation.

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Document, Json, Query, uuid_param};
use super::openapi::RULES;
use super::problem::{ApiResult, Problem};
use super::schema::rule::{
    AssociateRequest, AssociationDoc, AssociationListDoc, RuleDoc, RuleListDoc, RuleRequestDoc,
    RuleVersionDoc, RuleVersionListDoc,
};
use crate::app::AppState;
use crate::domain::code::{OperationCode, UnknownOperation};
use crate::error::Error;
use crate::rules::store::{self, RuleFilter};
use crate::rules::{associations, builtin, parse};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_rule, list_rules))
        .routes(routes!(get_rule, replace_rule, delete_rule))
        .routes(routes!(rule_versions))
        .routes(routes!(set_default, clear_default))
        .routes(routes!(rack_rules))
        .routes(routes!(associate, dissociate))
}

fn operation_param(raw: &str) -> Result<OperationCode, Problem> {
    raw.parse().map_err(|unknown: UnknownOperation| {
        Error::invalid("operation", unknown.to_string()).into()
    })
}

/// Query of `GET /v1/operation-rules`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListRulesQuery {
    /// Only rules for this operation (`power_on`, `upgrade`, ...).
    pub operation: Option<String>,
    /// Only default rules (`true`) or only the others (`false`).
    pub is_default: Option<bool>,
    /// `true`: list Flow's built-in rules instead of stored ones.
    #[serde(default)]
    pub builtin: bool,
}

/// Create an operation rule
///
/// Stores a rule for one operation: stages in order, each with component types, actions,
/// `max_parallel`, timeout, retry policy and failure handling. JSON or YAML
/// (`Content-Type: application/yaml`). Every problem is reported at once, by field path.
#[utoipa::path(post, path = "/v1/operation-rules", tag = RULES, security(("access" = ["admin"])),
    request_body(content(
        (RuleRequestDoc = "application/json"),
        (RuleRequestDoc = "application/yaml"),
    )),
    responses(
        (status = 201, description = "Created (version 1)", body = RuleDoc, headers(("Location" = String))),
        (status = 400, description = "Invalid rule; `errors` lists every field at fault", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`is_default` while another rule is the operation's default (`default_exists`)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Neither JSON nor YAML", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create_rule(
    State(state): State<AppState>,
    Document(body): Document,
) -> ApiResult<Response> {
    let input = parse::rule(&body)?;
    let rule = store::create(state.db(), &input, state.now()).await?;
    let location = format!("/v1/operation-rules/{}", rule.id.unwrap_or_default());
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        axum::Json(RuleDoc::from(rule)),
    )
        .into_response())
}

/// List operation rules
///
/// Stored rules, newest first, optionally for one operation or only defaults. With
/// `builtin=true`, Flow's built-in rules: what each operation runs when neither the request,
/// the rack nor a default rule names another.
#[utoipa::path(get, path = "/v1/operation-rules", tag = RULES, security(("access" = ["viewer"])), params(ListRulesQuery),
    responses(
        (status = 200, description = "Rules", body = RuleListDoc),
        (status = 400, description = "Bad filter", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_rules(
    State(state): State<AppState>,
    Query(q): Query<ListRulesQuery>,
) -> ApiResult<axum::Json<RuleListDoc>> {
    let operation = q.operation.as_deref().map(operation_param).transpose()?;
    let items: Vec<RuleDoc> = if q.builtin {
        builtin::all()
            .iter()
            .filter(|r| operation.is_none_or(|op| r.operation == op))
            .filter(|r| q.is_default.is_none_or(|d| r.is_default == d))
            .cloned()
            .map(Into::into)
            .collect()
    } else {
        let filter = RuleFilter {
            operation,
            is_default: q.is_default,
        };
        store::list(state.db(), &filter)
            .await?
            .into_iter()
            .map(Into::into)
            .collect()
    };
    Ok(axum::Json(RuleListDoc {
        total: items.len(),
        items,
    }))
}

/// Get an operation rule
///
/// The rule's current version.
#[utoipa::path(get, path = "/v1/operation-rules/{id}", tag = RULES, security(("access" = ["viewer"])),
    params(("id" = uuid::Uuid, Path, description = "Rule id")),
    responses(
        (status = 200, description = "The rule", body = RuleDoc),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_rule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<RuleDoc>> {
    let id = uuid_param("id", &id)?;
    Ok(axum::Json(store::get(state.db(), id.into()).await?.into()))
}

/// Replace an operation rule
///
/// Replaces name, description, stages and default flag; the version goes up by one and the
/// previous versions stay readable. The operation cannot change. Tasks already planned keep the
/// version they resolved.
#[utoipa::path(put, path = "/v1/operation-rules/{id}", tag = RULES, security(("access" = ["admin"])),
    params(("id" = uuid::Uuid, Path, description = "Rule id")),
    request_body(content(
        (RuleRequestDoc = "application/json"),
        (RuleRequestDoc = "application/yaml"),
    )),
    responses(
        (status = 200, description = "The new version", body = RuleDoc),
        (status = 400, description = "Invalid rule, or a different operation", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rule", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`is_default` while another rule is the default", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn replace_rule(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Document(body): Document,
) -> ApiResult<axum::Json<RuleDoc>> {
    let id = uuid_param("id", &id)?;
    let input = parse::rule(&body)?;
    Ok(axum::Json(
        store::replace(state.db(), id.into(), &input, state.now())
            .await?
            .into(),
    ))
}

/// Delete an operation rule
///
/// Deletes the rule, its versions and its rack associations; racks fall back to the default or
/// built-in rule. Tasks keep the rule's id and version in their record.
#[utoipa::path(delete, path = "/v1/operation-rules/{id}", tag = RULES, security(("access" = ["admin"])),
    params(("id" = uuid::Uuid, Path, description = "Rule id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete_rule(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = uuid_param("id", &id)?;
    store::delete(state.db(), id.into(), state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// List a rule's versions
///
/// Every version of the rule, newest first, each with the stages it had.
#[utoipa::path(get, path = "/v1/operation-rules/{id}/versions", tag = RULES, security(("access" = ["viewer"])),
    params(("id" = uuid::Uuid, Path, description = "Rule id")),
    responses(
        (status = 200, description = "Versions", body = RuleVersionListDoc),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn rule_versions(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<RuleVersionListDoc>> {
    let id = uuid_param("id", &id)?;
    let items = store::versions(state.db(), id.into())
        .await?
        .into_iter()
        .map(RuleVersionDoc::from)
        .collect();
    Ok(axum::Json(RuleVersionListDoc { items }))
}

/// Make a rule the default
///
/// Makes the rule its operation's default, in place of any other, in one step. Racks without an
/// associated rule then run it. Idempotent.
#[utoipa::path(post, path = "/v1/operation-rules/{id}/default", tag = RULES, security(("access" = ["admin"])),
    params(("id" = uuid::Uuid, Path, description = "Rule id")),
    responses(
        (status = 200, description = "The rule, now the default", body = RuleDoc),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn set_default(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<RuleDoc>> {
    let id = uuid_param("id", &id)?;
    Ok(axum::Json(
        store::set_default(state.db(), id.into(), true, state.now())
            .await?
            .into(),
    ))
}

/// Stop a rule being the default
///
/// The operation falls back to its built-in rule (for racks without an associated rule).
/// Idempotent.
#[utoipa::path(delete, path = "/v1/operation-rules/{id}/default", tag = RULES, security(("access" = ["admin"])),
    params(("id" = uuid::Uuid, Path, description = "Rule id")),
    responses(
        (status = 200, description = "The rule, no longer the default", body = RuleDoc),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn clear_default(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<RuleDoc>> {
    let id = uuid_param("id", &id)?;
    Ok(axum::Json(
        store::set_default(state.db(), id.into(), false, state.now())
            .await?
            .into(),
    ))
}

/// List a rack's rules
///
/// The rules associated with the rack, one per operation at most. Operations without one run
/// the default rule, else the built-in one.
#[utoipa::path(get, path = "/v1/racks/{id}/operation-rules", tag = RULES, security(("access" = ["viewer"])),
    params(("id" = uuid::Uuid, Path, description = "Rack id")),
    responses(
        (status = 200, description = "Associations", body = AssociationListDoc),
        (status = 400, description = "Malformed id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn rack_rules(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<AssociationListDoc>> {
    let id = uuid_param("id", &id)?;
    let items = associations::associations(state.db(), id.into())
        .await?
        .into_iter()
        .map(AssociationDoc::from)
        .collect();
    Ok(axum::Json(AssociationListDoc { items }))
}

/// Set a rack's rule for an operation
///
/// The rack's tasks for this operation run the rule (unless a request names another). The rule
/// must be written for the operation. Replaces an earlier association.
#[utoipa::path(put, path = "/v1/racks/{id}/operation-rules/{operation}", tag = RULES, security(("access" = ["admin"])),
    params(("id" = uuid::Uuid, Path, description = "Rack id"), ("operation" = String, Path, description = "Operation code, e.g. `power_on`")),
    request_body = AssociateRequest,
    responses(
        (status = 201, description = "Associated", body = AssociationDoc),
        (status = 200, description = "Replaced an earlier association", body = AssociationDoc),
        (status = 400, description = "Unknown operation, or a rule for another operation", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "No such rule (`rule_not_found`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn associate(
    State(state): State<AppState>,
    Path((id, operation)): Path<(String, String)>,
    Json(body): Json<AssociateRequest>,
) -> ApiResult<Response> {
    let id = uuid_param("id", &id)?;
    let operation = operation_param(&operation)?;
    let (link, created) = associations::associate(
        state.db(),
        id.into(),
        operation,
        body.rule_id.into(),
        state.now(),
    )
    .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(AssociationDoc::from(link))).into_response())
}

/// Remove a rack's rule for an operation
///
/// The rack goes back to the default or built-in rule for the operation. Removing an
/// association that does not exist is not an error.
#[utoipa::path(delete, path = "/v1/racks/{id}/operation-rules/{operation}", tag = RULES, security(("access" = ["admin"])),
    params(("id" = uuid::Uuid, Path, description = "Rack id"), ("operation" = String, Path, description = "Operation code")),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "Unknown operation", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such rack", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn dissociate(
    State(state): State<AppState>,
    Path((id, operation)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let id = uuid_param("id", &id)?;
    let operation = operation_param(&operation)?;
    associations::dissociate(state.db(), id.into(), operation, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
