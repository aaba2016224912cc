//! The per-task report: the plan's stages with each component's step, and stage status derived
//! from the steps (so no writer ever has to keep a summary in sync).

use chrono::{DateTime, Utc};

use super::model::{StepRecord, StepStatus};
use crate::domain::ComponentType;
use crate::operations::plan::Plan;

/// Status of a stage, derived from its steps; it takes the same values a step does.
fn stage_status(steps: &[StepRecord]) -> StepStatus {
    let any = |s: StepStatus| steps.iter().any(|r| r.status == s);
    if any(StepStatus::Failed) {
        StepStatus::Failed
    } else if any(StepStatus::Running) {
        StepStatus::Running
    } else if steps.iter().all(|r| r.status == StepStatus::Succeeded) {
        StepStatus::Succeeded
    } else if any(StepStatus::Cancelled) {
        StepStatus::Cancelled
    } else if any(StepStatus::Succeeded) {
        StepStatus::Running
    } else {
        StepStatus::Pending
    }
}

/// One stage of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct StageReport {
    pub number: u32,
    pub name: String,
    pub component_types: Vec<ComponentType>,
    /// The action that characterises the stage, and all of them in order.
    pub action: String,
    pub actions: Vec<String>,
    pub max_parallel: u32,
    pub status: StepStatus,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub steps: Vec<StepRecord>,
}

/// Assembles the report; `None` for a task that was never planned (queued, or refused early).
pub fn build(plan: Option<&Plan>, mut steps: Vec<StepRecord>) -> Option<Vec<StageReport>> {
    let plan = plan?;
    Some(
        plan.stages
            .iter()
            .map(|stage| {
                let own: Vec<StepRecord> = {
                    let (mine, rest): (Vec<_>, Vec<_>) =
                        steps.drain(..).partition(|s| s.stage == stage.number);
                    steps = rest;
                    mine
                };
                let status = stage_status(&own);
                let started_at = own.iter().filter_map(|s| s.started_at).min();
                let finished_at = if matches!(status, StepStatus::Pending | StepStatus::Running) {
                    None
                } else {
                    own.iter().filter_map(|s| s.finished_at).max()
                };
                StageReport {
                    number: stage.number,
                    name: stage.name.clone(),
                    component_types: stage.component_types.clone(),
                    action: stage.summary(),
                    actions: stage.actions.iter().map(|a| a.label()).collect(),
                    max_parallel: stage.max_parallel,
                    status,
                    started_at,
                    finished_at,
                    steps: own,
                }
            })
            .collect(),
    )
}
