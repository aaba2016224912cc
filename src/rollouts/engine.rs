//! The workflow engine as the rollout layer sees it: start a rollout's run and steer it.
//! Temporal implements it in `workflows`; this layer knows nothing of Temporal.

use async_trait::async_trait;

use super::model::Command;
use crate::ids::RolloutId;
use crate::tasks::EngineError;

/// Starts and signals the one durable run of each rollout.
#[async_trait]
pub trait RolloutEngine: Send + Sync {
    /// Starts the rollout's run; a run that already exists is not an error.
    async fn start(&self, rollout_id: RolloutId) -> Result<(), EngineError>;
    /// Delivers a command to the running rollout.
    async fn signal(&self, rollout_id: RolloutId, command: Command) -> Result<(), EngineError>;
}
