//! The rack shortcuts of the operations: a whole rack's power, firmware and bring-up by its id,
//! each built into the same submission as the operation endpoints.

use super::*;

fn rack_target(id: uuid::Uuid) -> TargetSpecDoc {
    TargetSpecDoc {
        racks: Some(vec![RackTargetDoc {
            id: Some(id),
            name: None,
            component_types: Vec::new(),
        }]),
        components: None,
        nvl_domains: None,
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
    /// Proceed although the rack is held or not ready (`admin` only, else `403`; audited).
    #[serde(default)]
    pub override_readiness_check: bool,
}

/// Set a rack's power
///
/// Shortcut for the power operations on one whole rack: `on`, `off`, `cycle` (reset),
/// `forceoff`, `forcecycle`.
#[utoipa::path(patch, path = "/v1/racks/{id}/power", tag = OPERATIONS, security(("access" = ["runs"])), request_body = RackPowerRequest,
    params(DryRunQuery, ("id" = uuid::Uuid, Path, description = "Rack id"), ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn set_rack_power(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
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
    let mut spec = build_spec(
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
    spec.override_readiness_check = body.override_readiness_check;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}

/// Body of `POST /v1/racks/{id}/firmware`: the firmware-upgrade options without targets.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RackFirmwareRequest {
    pub target_version: Option<crate::api::schema::operation::TargetVersionDoc>,
    #[serde(default)]
    pub sub_targets: Vec<String>,
    pub start_time: Option<chrono::DateTime<chrono::Utc>>,
    pub end_time: Option<chrono::DateTime<chrono::Utc>>,
    pub description: Option<String>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub queue_timeout_seconds: Option<u64>,
    pub rule_id: Option<uuid::Uuid>,
    /// Upgrade this rack even though its NVLink domain has other racks (else `409`
    /// `domain_split`); audited.
    #[serde(default)]
    pub allow_split_domain: bool,
    /// Proceed although the rack is held or not ready (`admin` only, else `403`; audited).
    #[serde(default)]
    pub override_readiness_check: bool,
}

/// Upgrade a rack's firmware
///
/// Shortcut for a firmware upgrade of every device of one rack.
#[utoipa::path(post, path = "/v1/racks/{id}/firmware", tag = OPERATIONS, security(("access" = ["runs"])), request_body = RackFirmwareRequest,
    params(DryRunQuery, ("id" = uuid::Uuid, Path, description = "Rack id"), ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn upgrade_rack_firmware(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
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
        override_readiness_check: body.override_readiness_check,
        allow_split_domain: body.allow_split_domain,
    };
    let mut v = Violations::default();
    let firmware = full.firmware(&mut v);
    let op = Operation::FirmwareUpgrade {
        firmware,
        start_time: full.start_time,
        end_time: full.end_time,
        direction: Default::default(),
    };
    let mut spec = build_spec(op, full.common(), v)?;
    spec.allow_split_domain = full.allow_split_domain;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}

/// Body of `POST /v1/racks/{id}/bring-up`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RackBringUpRequest {
    pub description: Option<String>,
    pub rule_id: Option<uuid::Uuid>,
    /// Proceed although the rack is held or not ready (`admin` only, else `403`; audited).
    #[serde(default)]
    pub override_readiness_check: bool,
}

/// Bring up a rack
///
/// Shortcut for the bring-up of one whole rack.
#[utoipa::path(post, path = "/v1/racks/{id}/bring-up", tag = OPERATIONS, security(("access" = ["runs"])), request_body = RackBringUpRequest,
    params(DryRunQuery, ("id" = uuid::Uuid, Path, description = "Rack id"), ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn bring_up_rack(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<RackBringUpRequest>,
) -> ApiResult<Response> {
    let target = rack_target(uuid_param("id", &id)?);
    let mut spec = build_spec(
        Operation::BringUp,
        common(&target, &body.description, None, None, body.rule_id),
        Violations::default(),
    )?;
    spec.override_readiness_check = body.override_readiness_check;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}
