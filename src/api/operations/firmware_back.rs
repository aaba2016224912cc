//! Firmware downgrade and rollback endpoints: the upgrade's submission with the version an
//! operator names (downgrade) or the one each component ran before its last upgrade
//! (rollback), refused where the catalog has no recipe of it. The task runs the upgrade's
//! workflow and, unless a rule is set for their own code, `upgrade`'s rule; the tasks are
//! stored under the codes `downgrade` and `rollback`.

use super::*;
use crate::api::schema::firmware_back::{FirmwareDowngradeRequest, FirmwareRollbackRequest};
use crate::domain::operation::FirmwareDirection;

/// Downgrade firmware
///
/// Installs the named older catalog version on each targeted device through the same recipe
/// path as an upgrade. `target_version` is required (`400` naming it); a component whose
/// manager has no recipe of it is refused with `409` `no_catalog_entry` naming it (the dry
/// run answers the same).
#[utoipa::path(post, path = "/v1/operations/firmware-downgrade", tag = OPERATIONS, security(("access" = ["runs"])), request_body = FirmwareDowngradeRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn firmware_downgrade(
    State(state): State<AppState>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<FirmwareDowngradeRequest>,
) -> ApiResult<Response> {
    let mut v = Violations::default();
    let as_upgrade = FirmwareUpgradeRequest {
        target_spec: body.target_spec.clone(),
        target_version: body.target_version.clone(),
        sub_targets: Vec::new(),
        start_time: None,
        end_time: None,
        description: None,
        conflict_strategy: None,
        queue_timeout_seconds: None,
        rule_id: None,
        override_readiness_check: false,
        allow_split_domain: false,
    };
    let firmware = as_upgrade.firmware(&mut v);
    if firmware.target_version.is_none() {
        v.push("target_version", "required: the older version to install");
    }
    let op = Operation::FirmwareUpgrade {
        firmware,
        start_time: None,
        end_time: None,
        direction: FirmwareDirection::Downgrade,
    };
    let mut spec = build_spec(op, body.common(), v)?;
    spec.allow_split_domain = body.allow_split_domain;
    state.tasks().require_recipes(&spec).await?;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}

/// Roll firmware back
///
/// Returns each targeted device to the version it ran before its last successful upgrade
/// (recorded as that upgrade's step ended), through the same recipe path. Refused with `409`
/// `no_firmware_history` naming each component with nothing recorded (or a type whose
/// components would go back to different versions), and `409` `no_catalog_entry` naming each
/// whose manager has no recipe of its version; the dry run answers the same.
#[utoipa::path(post, path = "/v1/operations/firmware-rollback", tag = OPERATIONS, security(("access" = ["runs"])), request_body = FirmwareRollbackRequest,
    params(DryRunQuery, ("Idempotency-Key" = Option<String>, Header, description = "Repeat a request safely")),
    responses(Submitted))]
pub async fn firmware_rollback(
    State(state): State<AppState>,
    headers: HeaderMap,
    identity: Option<Extension<Identity>>,
    Query(q): Query<DryRunQuery>,
    Json(body): Json<FirmwareRollbackRequest>,
) -> ApiResult<Response> {
    // Resolved with every type in play first; the versions found then narrow the operation.
    let any = Operation::FirmwareUpgrade {
        firmware: Default::default(),
        start_time: None,
        end_time: None,
        direction: FirmwareDirection::Rollback,
    };
    let mut spec = build_spec(any, body.common(), Violations::default())?;
    spec.allow_split_domain = body.allow_split_domain;
    let firmware = state.tasks().rollback_versions(&spec).await?;
    spec.operation = Operation::FirmwareUpgrade {
        firmware,
        start_time: None,
        end_time: None,
        direction: FirmwareDirection::Rollback,
    };
    state.tasks().require_recipes(&spec).await?;
    submit(&state, &headers, identity.as_deref(), q.dry_run, spec).await
}
