//! The dry run: the planner's decision for each targeted rack, without creating anything; the
//! same decisions a submission then acts on.

use sea_orm::ConnectionTrait;

use super::admission::ACTIVE;
use super::planner::{self, Decision};
use crate::components::registry::Registry;
use crate::domain::operation::OperationSpec;
use crate::error::Result;
use crate::inventory::targets as resolve;
use crate::tasks::store;

/// What a submission would do on one rack.
pub type RackPreview = Decision;

/// The checks every submission passes before looking at racks: a valid spec, and a requested
/// rule that exists and fits the operation.
pub async fn check(db: &impl ConnectionTrait, spec: &OperationSpec) -> Result<()> {
    spec.validate()?;
    if let Some(rule_id) = spec.rule_id {
        crate::rules::resolve::check_requested(db, rule_id, spec.operation.code()).await?;
    }
    Ok(())
}

/// What submitting `spec` now would do on each targeted rack; creates nothing. With
/// `managers`, a plan they cannot serve is refused as a submission would be.
pub async fn preview(
    db: &impl ConnectionTrait,
    spec: &OperationSpec,
    managers: Option<&Registry>,
) -> Result<Vec<RackPreview>> {
    check(db, spec).await?;
    let work = planner::narrow(spec, resolve::resolve(db, &spec.targets).await?, managers);
    // The dry run refuses a split domain exactly as the submission would.
    super::domain_split::check_work(db, spec, &work).await?;
    let mut out = Vec::new();
    for rack in work {
        let rule = planner::rule_for(db, spec, &rack).await?;
        let active = store::on_rack(db, rack.rack_id, &ACTIVE).await?;
        let asked = super::capability::power_gaps(spec, &rack, rule.as_ref(), managers).await;
        let mut decision = planner::decide(spec, &rack, rule.as_ref(), managers, &active, &asked);
        if let (Some(plan), Some(registry)) = (&decision.plan, managers) {
            decision.firmware = super::recipes::firmware_plan(plan, registry).await;
        }
        out.push(decision);
    }
    Ok(out)
}
