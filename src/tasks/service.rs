//! The task service: what submissions (`submission`) and the one writer of task state
//! (`lifecycle`) share: the database, the workflow engine, the clock and the managers plans are
//! checked against.

use std::sync::Arc;

use sea_orm::DatabaseConnection;

use super::engine::{WorkflowEngine, engine_error};
use super::step_batch::StepReports;
use crate::clock::Clock;
use crate::components::registry::Registry;
use crate::config::RackLimits;
use crate::error::Result;

/// Submits tasks and owns every change to them (see `submission` and `lifecycle`).
pub struct TaskService {
    pub(in crate::tasks) db: DatabaseConnection,
    pub(in crate::tasks) engine: Arc<dyn WorkflowEngine>,
    pub(in crate::tasks) clock: Arc<dyn Clock>,
    /// The component managers plans are checked against before a task is created; `None` in
    /// a process configured with none (it cannot know what the workers offer).
    pub(in crate::tasks) managers: Option<Arc<Registry>>,
    /// `FLOW_LIMIT_RACKS_PER_REQUEST`: racks per request by role (see `submission::blast`).
    pub(in crate::tasks) limits: RackLimits,
    /// Where the runs' step reports are written (coalesced on PostgreSQL).
    pub(in crate::tasks) step_reports: StepReports,
}

impl std::fmt::Debug for TaskService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskService").finish_non_exhaustive()
    }
}

impl TaskService {
    pub fn new(
        db: DatabaseConnection,
        engine: Arc<dyn WorkflowEngine>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            step_reports: StepReports::new(db.clone()),
            db,
            engine,
            clock,
            managers: None,
            limits: RackLimits::default(),
        }
    }

    /// Caps the racks one request may touch, by the caller's role.
    pub fn with_rack_limits(mut self, limits: RackLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Checks plans against these managers before creating tasks (skipped when there are none).
    pub fn with_managers(mut self, managers: Arc<Registry>) -> Self {
        self.managers = (!managers.is_empty()).then_some(managers);
        self
    }

    /// "Now" from the service's clock, for the loops that run beside it.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// Whether the workflow engine answers: `Ok(false)` when this process has none.
    pub async fn engine_ready(&self) -> Result<bool> {
        self.engine.ping().await.map_err(engine_error)
    }
}
