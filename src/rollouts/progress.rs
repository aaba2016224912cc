//! How far a rollout is: each rack's outcome from its wave state and its task's live status,
//! and the counts the failure budget is checked against.

use std::collections::HashMap;

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde::{Deserialize, Serialize};

use super::model::{RackState, Rollout, WaveRack};
use crate::db::entities::tasks;
use crate::error::Result;
use crate::ids::TaskId;
use crate::tasks::TaskStatus;

/// One rack's outcome in a rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RackOutcome {
    Pending,
    Running,
    Succeeded,
    Failed,
    Skipped,
    NotRun,
}

/// Racks per outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub total: u32,
    pub pending: u32,
    pub running: u32,
    pub succeeded: u32,
    pub failed: u32,
    pub skipped: u32,
    pub not_run: u32,
}

impl Counts {
    pub fn of<'a>(
        racks: impl Iterator<Item = &'a WaveRack>,
        statuses: &HashMap<TaskId, TaskStatus>,
    ) -> Self {
        let mut c = Self::default();
        for rack in racks {
            c.total += 1;
            match outcome(rack, statuses) {
                RackOutcome::Pending => c.pending += 1,
                RackOutcome::Running => c.running += 1,
                RackOutcome::Succeeded => c.succeeded += 1,
                RackOutcome::Failed => c.failed += 1,
                RackOutcome::Skipped => c.skipped += 1,
                RackOutcome::NotRun => c.not_run += 1,
            }
        }
        c
    }
}

/// A rack's outcome; a submitted rack whose task is unknown counts as running.
pub fn outcome(rack: &WaveRack, statuses: &HashMap<TaskId, TaskStatus>) -> RackOutcome {
    match rack.state {
        RackState::Pending => RackOutcome::Pending,
        RackState::Skipped => RackOutcome::Skipped,
        RackState::Refused => RackOutcome::Failed,
        RackState::NotRun => RackOutcome::NotRun,
        RackState::Submitted => match rack.task_id.and_then(|id| statuses.get(&id)).copied() {
            Some(TaskStatus::Succeeded) if rack.verify_failed => RackOutcome::Failed,
            Some(TaskStatus::Succeeded) => RackOutcome::Succeeded,
            Some(TaskStatus::Failed | TaskStatus::Cancelled) => RackOutcome::Failed,
            _ => RackOutcome::Running,
        },
    }
}

/// The live status of the given tasks, in one query.
pub async fn task_statuses(
    db: &impl ConnectionTrait,
    ids: impl IntoIterator<Item = TaskId>,
) -> Result<HashMap<TaskId, TaskStatus>> {
    let ids: Vec<TaskId> = ids.into_iter().collect();
    let mut out = HashMap::new();
    // Bounded IN lists: SQLite caps bound parameters.
    for chunk in ids.chunks(500) {
        let rows: Vec<(TaskId, String)> = tasks::Entity::find()
            .select_only()
            .column(tasks::Column::Id)
            .column(tasks::Column::Status)
            .filter(tasks::Column::Id.is_in(chunk.to_vec()))
            .into_tuple()
            .all(db)
            .await?;
        out.extend(
            rows.into_iter()
                .filter_map(|(id, s)| TaskStatus::parse(&s).map(|s| (id, s))),
        );
    }
    Ok(out)
}

/// The live status of every task a rollout created.
pub async fn rollout_task_statuses(
    db: &impl ConnectionTrait,
    rollout: &Rollout,
) -> Result<HashMap<TaskId, TaskStatus>> {
    task_statuses(db, rollout.racks().filter_map(|r| r.task_id)).await
}
