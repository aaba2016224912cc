//! Operation endpoints: one request becomes one task per targeted rack, run as a workflow.

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
    PowerResetRequest, RackJobRequest, RackTargetDoc, SubmissionDoc, TargetSpecDoc, build_spec,
};
use super::schema::rule::{DryRunDoc, RackPlanDoc};
use crate::app::AppState;
use crate::error::{Error, Violations};
use crate::operations::model::{Operation, OperationSpec};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(power_on))
        .routes(routes!(power_off))
        .routes(routes!(power_reset))
        .routes(routes!(firmware_upgrade))
        .routes(routes!(bring_up))
        .routes(routes!(ingest))
        .routes(routes!(set_rack_power))
        .routes(routes!(upgrade_rack_firmware))
        .routes(routes!(bring_up_rack))
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
    /// Every targeted rack is busy with a conflicting task (`code`: `rack_busy`), or every
    /// rack's queue is full (`queue_full`).
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
    dry_run: bool,
    spec: OperationSpec,
) -> ApiResult<Response> {
    if dry_run {
        let racks = state
            .tasks()
            .preview(&spec)
            .await?
            .into_iter()
            .map(RackPlanDoc::from)
            .collect();
        return Ok(axum::Json(DryRunDoc {
            dry_run: true,
            racks,
        })
        .into_response());
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
    }
}

/// Power on
///
/// Powers on the targeted racks or components: power shelves first, then NVSwitch trays, then
/// compute trays, each device's power verified before the next stage starts. One task per rack.
#[utoipa::path(post, path = "/v1/operations/power-on", tag = OPERATIONS, request_body = PowerOnRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely: the same key returns the same tasks")),
    responses(Submitted))]
pub async fn power_on(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<PowerOnRequest>,
) -> ApiResult<Response> {
    let spec = build_spec(Operation::PowerOn, body.common(), Violations::default())?;
    submit(&state, &headers, q.dry_run, spec).await
}

/// Power off
///
/// Powers off the targeted racks or components: compute trays first, then NVSwitch trays, then
/// power shelves, each verified off. `forced` cuts power without a graceful shutdown.
#[utoipa::path(post, path = "/v1/operations/power-off", tag = OPERATIONS, request_body = PowerOffRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn power_off(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<PowerOffRequest>,
) -> ApiResult<Response> {
    let op = Operation::PowerOff {
        forced: body.forced,
    };
    let spec = build_spec(op, body.common(), Violations::default())?;
    submit(&state, &headers, q.dry_run, spec).await
}

/// Power reset
///
/// Resets the targeted racks or components. `mode: restart` (default) powers everything off in
/// safe order (compute, NVSwitch, power shelves) and on again in reverse; `warm` resets compute
/// and NVSwitch trays through their BMCs without removing power; `cold` is a full AC cycle with
/// a pause for power to drain.
#[utoipa::path(post, path = "/v1/operations/power-reset", tag = OPERATIONS, request_body = PowerResetRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn power_reset(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<PowerResetRequest>,
) -> ApiResult<Response> {
    let mut v = Violations::default();
    let op = body.operation(&mut v);
    let spec = build_spec(op, body.common(), v)?;
    submit(&state, &headers, q.dry_run, spec).await
}

/// Upgrade firmware
///
/// Starts a firmware update on each targeted device (compute, then NVSwitch, then power
/// shelves) and follows it until it completes or fails.
#[utoipa::path(post, path = "/v1/operations/firmware-upgrade", tag = OPERATIONS, request_body = FirmwareUpgradeRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn firmware_upgrade(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<FirmwareUpgradeRequest>,
) -> ApiResult<Response> {
    let mut v = Violations::default();
    let firmware = body.firmware(&mut v);
    let op = Operation::FirmwareUpgrade {
        firmware,
        start_time: body.start_time,
        end_time: body.end_time,
    };
    let spec = build_spec(op, body.common(), v)?;
    submit(&state, &headers, q.dry_run, spec).await
}

/// Bring up
///
/// Brings racks up: powers them on in safe order, then brings NVSwitch and compute firmware to
/// the site's desired versions. Refused while any other task runs on the rack.
#[utoipa::path(post, path = "/v1/operations/bring-up", tag = OPERATIONS, request_body = RackJobRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn bring_up(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<RackJobRequest>,
) -> ApiResult<Response> {
    let spec = build_spec(
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
    submit(&state, &headers, q.dry_run, spec).await
}

/// Ingest
///
/// Registers each targeted device with its manager (power shelves, NVSwitch trays, compute
/// trays), with a registration built from its inventory record.
#[utoipa::path(post, path = "/v1/operations/ingest", tag = OPERATIONS, request_body = RackJobRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn ingest(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<RackJobRequest>,
) -> ApiResult<Response> {
    let spec = build_spec(
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
    submit(&state, &headers, q.dry_run, spec).await
}

fn rack_target(id: uuid::Uuid) -> TargetSpecDoc {
    TargetSpecDoc {
        racks: Some(vec![RackTargetDoc {
            id: Some(id),
            name: None,
            component_types: Vec::new(),
        }]),
        components: None,
    }
}

/// Power state wanted for a whole rack.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RackPowerState {
    On,
    Off,
    Cycle,
    Forceoff,
    Forcecycle,
}

/// Body of `PATCH /v1/racks/{id}/power`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"state": "on"}))]
pub struct RackPowerRequest {
    pub state: RackPowerState,
    pub description: Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub queue_timeout_seconds: Option<u64>,
    pub rule_id: Option<uuid::Uuid>,
}

/// Set a rack's power
///
/// Shortcut for the power operations on one whole rack: `on`, `off`, `cycle` (reset),
/// `forceoff`, `forcecycle`.
#[utoipa::path(patch, path = "/v1/racks/{id}/power", tag = OPERATIONS, request_body = RackPowerRequest,
    params(DryRunQuery, ("id" = uuid::Uuid, Path, description = "Rack id"), ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn set_rack_power(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<RackPowerRequest>,
) -> ApiResult<Response> {
    let target = rack_target(uuid_param("id", &id)?);
    let op = match body.state {
        RackPowerState::On => Operation::PowerOn,
        RackPowerState::Off => Operation::PowerOff { forced: false },
        RackPowerState::Forceoff => Operation::PowerOff { forced: true },
        RackPowerState::Cycle => Operation::PowerReset { forced: false },
        RackPowerState::Forcecycle => Operation::PowerReset { forced: true },
    };
    let spec = build_spec(
        op,
        common(
            &target,
            &body.description,
            body.conflict_strategy,
            body.queue_timeout_seconds,
            body.rule_id,
        ),
        Violations::default(),
    )?;
    submit(&state, &headers, q.dry_run, spec).await
}

/// Body of `POST /v1/racks/{id}/firmware`: the firmware-upgrade options without targets.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RackFirmwareRequest {
    pub target_version: Option<super::schema::operation::TargetVersionDoc>,
    #[serde(default)]
    pub sub_targets: Vec<String>,
    pub start_time: Option<chrono::DateTime<chrono::Utc>>,
    pub end_time: Option<chrono::DateTime<chrono::Utc>>,
    pub description: Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub queue_timeout_seconds: Option<u64>,
    pub rule_id: Option<uuid::Uuid>,
}

/// Upgrade a rack's firmware
///
/// Shortcut for a firmware upgrade of every device of one rack.
#[utoipa::path(post, path = "/v1/racks/{id}/firmware", tag = OPERATIONS, request_body = RackFirmwareRequest,
    params(DryRunQuery, ("id" = uuid::Uuid, Path, description = "Rack id"), ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn upgrade_rack_firmware(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<RackFirmwareRequest>,
) -> ApiResult<Response> {
    let full = FirmwareUpgradeRequest {
        target_spec: rack_target(uuid_param("id", &id)?),
        target_version: body.target_version,
        sub_targets: body.sub_targets,
        start_time: body.start_time,
        end_time: body.end_time,
        description: body.description,
        conflict_strategy: body.conflict_strategy,
        queue_timeout_seconds: body.queue_timeout_seconds,
        rule_id: body.rule_id,
    };
    let mut v = Violations::default();
    let firmware = full.firmware(&mut v);
    let op = Operation::FirmwareUpgrade {
        firmware,
        start_time: full.start_time,
        end_time: full.end_time,
    };
    let spec = build_spec(op, full.common(), v)?;
    submit(&state, &headers, q.dry_run, spec).await
}

/// Body of `POST /v1/racks/{id}/bring-up`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RackBringUpRequest {
    pub description: Option<String>,
    pub rule_id: Option<uuid::Uuid>,
}

/// Bring up a rack
///
/// Shortcut for the bring-up of one whole rack.
#[utoipa::path(post, path = "/v1/racks/{id}/bring-up", tag = OPERATIONS, request_body = RackBringUpRequest,
    params(DryRunQuery, ("id" = uuid::Uuid, Path, description = "Rack id"), ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn bring_up_rack(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<RackBringUpRequest>,
) -> ApiResult<Response> {
    let target = rack_target(uuid_param("id", &id)?);
    let spec = build_spec(
        Operation::BringUp,
        common(&target, &body.description, None, None, body.rule_id),
        Violations::default(),
    )?;
    submit(&state, &headers, q.dry_run, spec).await
}
