//! The workflow engine as the task layer sees it: start, cancel, and ask about a task's run.
//! Temporal implements it in `workflows`; the task layer knows nothing of Temporal.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::Error;
use crate::ids::TaskId;
use crate::operations::plan::Plan;

/// The reason Flow gives Temporal when it cancels a task's run: the run tells a cancel of
/// Flow's own (already recorded and audited) from one sent from outside by it.
pub const FLOW_CANCEL_REASON: &str = "cancelled by user through Flow";

/// What the engine says about a task's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Running,
    Completed,
    Failed,
    Cancelled,
    Terminated,
    TimedOut,
}

/// A failure talking to the engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    #[error("workflow engine unavailable: {0}")]
    Unavailable(String),
    #[error("a run for this task already exists")]
    AlreadyStarted,
    #[error("workflow engine error: {0}")]
    Other(String),
}

/// The service error of an engine failure: unavailable is a 503 the caller may retry.
pub fn engine_error(e: EngineError) -> Error {
    match e {
        EngineError::Unavailable(message) => Error::Unavailable {
            service: "temporal",
            message,
        },
        other => Error::Internal(other.to_string()),
    }
}

/// Starts and steers the durable run of each task (workflow id = task id).
#[async_trait]
pub trait WorkflowEngine: Send + Sync {
    /// Starts the task's run; returns the run id.
    async fn start(
        &self,
        task_id: TaskId,
        plan: &Plan,
        timeout: Duration,
    ) -> Result<String, EngineError>;
    /// Asks the run to stop; a run that no longer exists is not an error.
    async fn cancel(&self, task_id: TaskId, reason: &str) -> Result<(), EngineError>;
    /// The run's state, or `None` when the engine has no run for the task.
    async fn state(&self, task_id: TaskId) -> Result<Option<RunState>, EngineError>;
    /// Whether the engine answers (for readiness); `Ok(false)` when none is configured.
    async fn ping(&self) -> Result<bool, EngineError>;
    /// Whether runs can be started right now, as far as the engine knows without asking:
    /// a submission checks it before writing anything, so it can refuse without a trace.
    fn available(&self) -> bool {
        true
    }
}

/// The engine of a process configured without Temporal: every operation is refused as
/// unavailable, so the inventory API still serves while operations answer 503.
#[derive(Debug, Default)]
pub struct DisabledEngine;

#[async_trait]
impl WorkflowEngine for DisabledEngine {
    async fn start(
        &self,
        _task_id: TaskId,
        _plan: &Plan,
        _timeout: Duration,
    ) -> Result<String, EngineError> {
        Err(EngineError::Unavailable(
            "no workflow engine is configured in this process".into(),
        ))
    }

    async fn cancel(&self, _task_id: TaskId, _reason: &str) -> Result<(), EngineError> {
        Err(EngineError::Unavailable(
            "no workflow engine is configured in this process".into(),
        ))
    }

    async fn state(&self, _task_id: TaskId) -> Result<Option<RunState>, EngineError> {
        Err(EngineError::Unavailable(
            "no workflow engine is configured in this process".into(),
        ))
    }

    async fn ping(&self) -> Result<bool, EngineError> {
        Ok(false)
    }

    fn available(&self) -> bool {
        false
    }
}
