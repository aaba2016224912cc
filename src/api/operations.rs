//! Operation endpoints: one request becomes one task per targeted rack, run as a workflow.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Json, Query, uuid_param};
use super::openapi::OPERATIONS;
use super::problem::{ApiResult, Problem};
use super::schema::operation::{
    Common, ConflictStrategyDoc, FirmwareUpgradeRequest, PowerOffRequest, PowerOnRequest,
    PowerResetRequest, RackJobRequest, SubmissionDoc, build_spec,
};
use super::schema::rule::{DryRunDoc, RackPlanDoc};
use super::schema::target::{RackTargetDoc, TargetSpecDoc};
use crate::app::AppState;
use crate::auth::{Identity, Role};
use crate::domain::operation::{Operation, OperationSpec};
use crate::error::{Code, Error, FieldError, Violations};

mod firmware_back;
mod rack;

pub use rack::{RackBringUpRequest, RackFirmwareRequest, RackPowerRequest, RackPowerState};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(power_on))
        .routes(routes!(power_off))
        .routes(routes!(power_reset))
        .routes(routes!(firmware_upgrade))
        .routes(routes!(firmware_back::firmware_downgrade))
        .routes(routes!(firmware_back::firmware_rollback))
        .routes(routes!(bring_up))
        .routes(routes!(ingest))
        .routes(routes!(rack::set_rack_power))
        .routes(routes!(rack::upgrade_rack_firmware))
        .routes(routes!(rack::bring_up_rack))
}

/// The answers every operation endpoint gives.
#[derive(utoipa::IntoResponses)]
// Never built: it exists for the OpenAPI document.
#[allow(dead_code)]
enum Submitted {
    /// `dry_run=true`: the exact plan per rack (resolved rule, stages, components, parallelism,
    /// duration bound, blocking tasks); nothing was created.
    #[response(status = 200)]
    DryRun(DryRunDoc),
    /// Tasks created, one per rack; `rejected` lists racks that got none.
    #[response(status = 202, headers(("Location" = String, description = "The first task")))]
    Accepted(SubmissionDoc),
    /// Invalid input or a target that names nothing; `errors` names each field.
    #[response(status = 400, content_type = "application/problem+json")]
    BadRequest(Problem),
    /// The caller lacks the role this route needs (`forbidden`), or the request touches more
    /// racks than the caller's role may at once (`blast_radius`: the detail names the cap and
    /// the count; a rollout applies the cap per wave).
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(Problem),
    /// A targeted NVLink domain does not exist (`not_found`, naming it).
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
    /// Every targeted rack is busy with a conflicting task (`code`: `rack_busy`), or every
    /// rack's queue is full (`queue_full`), or a target is held (`held`) or not ready
    /// (`not_ready`: a `PreventOperations` health alert, a BMC last seen unreachable for
    /// firmware, NVSwitch trays whose domain's compute trays are on); `errors` names every
    /// hold and alert. `override_readiness_check: true` (admin only) proceeds anyway. Or a
    /// firmware operation would cover only part of an NVLink domain (`domain_split`: `errors`
    /// names each domain, `field` `nvl_domains.<name>`, and the racks left out; the dry run
    /// answers the same) unless `allow_split_domain` is true.
    #[response(status = 409, content_type = "application/problem+json")]
    Busy(Problem),
    /// Nothing to operate on, or the idempotency key was used for another request.
    #[response(status = 422, content_type = "application/problem+json")]
    Unprocessable(Problem),
    /// The workflow engine is unreachable (`engine_unavailable`: no task was created) or the
    /// database is (`database_unavailable`); `Retry-After` says when to try again.
    #[response(status = 503, content_type = "application/problem+json", headers(("Retry-After" = u64, description = "Seconds to wait before retrying")))]
    Unavailable(Problem),
}

const IDEMPOTENCY_KEY: &str = "idempotency-key";

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, Problem> {
    match headers
        .get(IDEMPOTENCY_KEY)
        .map(|v| v.to_str().map(str::trim))
    {
        None => Ok(None),
        Some(Ok(key)) if !key.is_empty() && key.len() <= 255 => Ok(Some(key.to_string())),
        Some(_) => {
            Err(Error::invalid("Idempotency-Key", "must be 1 to 255 visible characters").into())
        }
    }
}

/// Query every operation endpoint takes.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DryRunQuery {
    /// Answer with the plan per rack instead of creating tasks.
    #[serde(default)]
    pub dry_run: bool,
}

/// Submits the spec and answers 202 with the tasks and a `Location` of the first one.
async fn submit(
    state: &AppState,
    headers: &HeaderMap,
    identity: Option<&Identity>,
    dry_run: bool,
    spec: OperationSpec,
) -> ApiResult<Response> {
    if dry_run {
        let racks: Vec<RackPlanDoc> = state
            .tasks()
            .preview(&spec)
            .await?
            .into_iter()
            .map(RackPlanDoc::from)
            .collect();
        let blast_radius = state.tasks().radius(racks.len()).into();
        let blockers = state.tasks().readiness_blockers(&spec).await?;
        return Ok(axum::Json(DryRunDoc {
            dry_run: true,
            racks,
            blast_radius,
            blockers: blockers.into_iter().map(Into::into).collect(),
        })
        .into_response());
    }
    if spec.override_readiness_check && identity.is_none_or(|i| i.role_for(Role::Admin).is_none()) {
        let who = identity.map_or("the caller", |i| i.actor.as_str());
        return Err(Problem::new(
            StatusCode::FORBIDDEN,
            Code::Forbidden,
            format!("override_readiness_check needs the admin role, which {who} does not have"),
        )
        .with_errors(vec![FieldError::new(
            "override_readiness_check",
            "needs the admin role",
        )]));
    }
    let key = idempotency_key(headers)?;
    let submission = state.tasks().submit(&spec, key.as_deref()).await?;
    let location = submission
        .task_ids
        .first()
        .map(|id| format!("/v1/tasks/{id}"));
    let mut response = (
        StatusCode::ACCEPTED,
        axum::Json(SubmissionDoc::from(submission)),
    )
        .into_response();
    if let Some(value) = location.and_then(|l| l.parse().ok()) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    Ok(response)
}

fn common<'a>(
    target_spec: &'a TargetSpecDoc,
    description: &'a Option<String>,
    strategy: Option<ConflictStrategyDoc>,
    timeout: Option<u64>,
    rule_id: Option<uuid::Uuid>,
) -> Common<'a> {
    Common {
        target_spec,
        description,
        conflict_strategy: strategy,
        queue_timeout_seconds: timeout,
        rule_id,
        override_readiness_check: false,
    }
}

/// Power on
///
/// Powers on the targeted racks or components: power shelves first, then NVSwitch trays, then
/// compute trays, each device's power verified before the next stage starts. One task per rack.
#[utoipa::path(post, path = "/v1/operations/power-on", tag = OPERATIONS, security(("access" = ["runs"])), request_body = PowerOnRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely: the same key returns the same tasks")),
    responses(Submitted))]
pub async fn power_on(
    State(state): State<AppState>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<PowerOnRequest>,
) -> ApiResult<Response> {
    let spec = build_spec(Operation::PowerOn, body.common(), Violations::default())?;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}

/// Power off
///
/// Powers off the targeted racks or components: compute trays first, then NVSwitch trays, then
/// power shelves, each verified off. `forced` cuts power without a graceful shutdown.
#[utoipa::path(post, path = "/v1/operations/power-off", tag = OPERATIONS, security(("access" = ["runs"])), request_body = PowerOffRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn power_off(
    State(state): State<AppState>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<PowerOffRequest>,
) -> ApiResult<Response> {
    let op = Operation::PowerOff {
        forced: body.forced,
    };
    let spec = build_spec(op, body.common(), Violations::default())?;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}

/// Power reset
///
/// Resets the targeted racks or components. `mode: restart` (default) powers everything off in
/// safe order (compute, NVSwitch, power shelves) and on again in reverse; `warm` resets compute
/// and NVSwitch trays through their BMCs without removing power; `cold` is a full AC cycle with
/// a pause for power to drain; `bmc` restarts the compute and NVSwitch trays' BMCs themselves
/// (`Manager.Reset`), each tray done once its BMC has gone away and answers again.
#[utoipa::path(post, path = "/v1/operations/power-reset", tag = OPERATIONS, security(("access" = ["runs"])), request_body = PowerResetRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn power_reset(
    State(state): State<AppState>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<PowerResetRequest>,
) -> ApiResult<Response> {
    let mut v = Violations::default();
    let op = body.operation(&mut v);
    let spec = build_spec(op, body.common(), v)?;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}

/// Upgrade firmware
///
/// Starts a firmware update on each targeted device (compute, then NVSwitch, then power
/// shelves) and follows it until it completes or fails. Racks covering only part of an NVLink
/// domain are refused (`409` `domain_split`) unless `allow_split_domain` is true.
#[utoipa::path(post, path = "/v1/operations/firmware-upgrade", tag = OPERATIONS, security(("access" = ["runs"])), request_body = FirmwareUpgradeRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn firmware_upgrade(
    State(state): State<AppState>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<FirmwareUpgradeRequest>,
) -> ApiResult<Response> {
    let mut v = Violations::default();
    let firmware = body.firmware(&mut v);
    let op = Operation::FirmwareUpgrade {
        firmware,
        start_time: body.start_time,
        end_time: body.end_time,
        direction: Default::default(),
    };
    let mut spec = build_spec(op, body.common(), v)?;
    spec.allow_split_domain = body.allow_split_domain;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}

/// Bring up
///
/// Brings racks up: powers them on in safe order, then brings NVSwitch and compute firmware to
/// the site's desired versions. Refused while any other task runs on the rack.
#[utoipa::path(post, path = "/v1/operations/bring-up", tag = OPERATIONS, security(("access" = ["runs"])), request_body = RackJobRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn bring_up(
    State(state): State<AppState>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<RackJobRequest>,
) -> ApiResult<Response> {
    let mut spec = build_spec(
        Operation::BringUp,
        common(
            &body.target_spec,
            &body.description,
            None,
            None,
            body.rule_id,
        ),
        Violations::default(),
    )?;
    spec.override_readiness_check = body.override_readiness_check;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}

/// Ingest
///
/// Registers each targeted device with its manager (power shelves, NVSwitch trays, compute
/// trays), with a registration built from its inventory record.
#[utoipa::path(post, path = "/v1/operations/ingest", tag = OPERATIONS, security(("access" = ["runs"])), request_body = RackJobRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn ingest(
    State(state): State<AppState>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<RackJobRequest>,
) -> ApiResult<Response> {
    let mut spec = build_spec(
        Operation::Ingest,
        common(
            &body.target_spec,
            &body.description,
            None,
            None,
            body.rule_id,
        ),
        Violations::default(),
    )?;
    spec.override_readiness_check = body.override_readiness_check;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}
