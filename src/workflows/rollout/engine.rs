//! Temporal as the rollout layer's engine: workflow id `rollout-{id}`, commands as the
//! `control` signal.

use async_trait::async_trait;
use temporalio_client::errors::{WorkflowInteractionError, WorkflowStartError};
use temporalio_client::{WorkflowSignalOptions, WorkflowStartOptions};
use uuid::Uuid;

use super::workflow::{RolloutInput, RolloutWorkflow};
use crate::ids::RolloutId;
use crate::rollouts::RolloutEngine;
use crate::rollouts::model::Command;
use crate::tasks::EngineError;
use crate::workflows::TemporalEngine;

/// The rollout's workflow id: one run per rollout, so a repeated start is refused.
pub fn workflow_id(rollout_id: Uuid) -> String {
    format!("rollout-{rollout_id}")
}

#[async_trait]
impl RolloutEngine for TemporalEngine {
    async fn start(&self, rollout_id: RolloutId) -> Result<(), EngineError> {
        let input = RolloutInput {
            rollout_id: rollout_id.into(),
            wave: 0,
            wave_started: false,
            approved: false,
            paused: false,
        };
        // No execution timeout: a rollout waits for windows and approvals as long as it must.
        let options =
            WorkflowStartOptions::new(self.task_queue.clone(), workflow_id(rollout_id.into()))
                .build();
        match tokio::time::timeout(
            self.call_timeout,
            self.client
                .start_workflow(RolloutWorkflow::run, input, options),
        )
        .await
        {
            Ok(Ok(_)) | Ok(Err(WorkflowStartError::AlreadyStarted { .. })) => Ok(()),
            Ok(Err(e)) => Err(crate::workflows::status::from_start(&e)),
            Err(_) => Err(EngineError::Unavailable(format!(
                "starting the rollout took longer than {:?}",
                self.call_timeout
            ))),
        }
    }

    async fn signal(&self, rollout_id: RolloutId, command: Command) -> Result<(), EngineError> {
        let handle = self
            .client
            .get_workflow_handle::<RolloutWorkflow>(workflow_id(rollout_id.into()));
        match tokio::time::timeout(
            self.call_timeout,
            handle.signal(
                RolloutWorkflow::control,
                command,
                WorkflowSignalOptions::default(),
            ),
        )
        .await
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(WorkflowInteractionError::NotFound(_))) => Err(EngineError::Other(format!(
                "rollout {rollout_id} has no running workflow"
            ))),
            Ok(Err(e)) => Err(crate::workflows::status::from_interaction(&e)),
            Err(_) => Err(EngineError::Unavailable("signalling timed out".into())),
        }
    }
}
