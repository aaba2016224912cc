//! Temporal as the task layer's workflow engine: workflow id = task id.

use std::time::Duration;

use async_trait::async_trait;
use temporalio_client::NamespacedClient;
use temporalio_client::errors::{WorkflowInteractionError, WorkflowStartError};
use temporalio_client::grpc::WorkflowService;
use temporalio_client::tonic::IntoRequest;
use temporalio_client::{
    Client, WorkflowCancelOptions, WorkflowDescribeOptions, WorkflowExecutionStatus,
    WorkflowStartOptions,
};
use temporalio_common::protos::temporal::api::workflowservice::v1::DescribeNamespaceRequest;

use super::super::status;
use super::workflow::{RackOperationInput, RackOperationWorkflow};
use crate::ids::TaskId;
use crate::operations::plan::Plan;
use crate::tasks::{EngineError, RunState, WorkflowEngine};

/// Bound on one start, cancel or describe call.
const START_TIMEOUT: Duration = Duration::from_secs(4);
/// Bound on a readiness probe: `/readyz` answers within 2 s.
const PING_TIMEOUT: Duration = Duration::from_millis(1500);

/// Starts and steers rack workflows on one task queue.
#[derive(Clone)]
pub struct TemporalEngine {
    pub(in crate::workflows) client: Client,
    pub(in crate::workflows) task_queue: String,
    /// Bound on every call, so a hung frontend cannot hang an API request.
    pub(in crate::workflows) call_timeout: Duration,
}

impl std::fmt::Debug for TemporalEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalEngine")
            .field("task_queue", &self.task_queue)
            .finish_non_exhaustive()
    }
}

impl TemporalEngine {
    pub fn new(client: Client, task_queue: impl Into<String>) -> Self {
        Self {
            client,
            task_queue: task_queue.into(),
            // Short enough that an API request that starts a run answers within a few
            // seconds when Temporal stops answering (the client would otherwise retry on).
            call_timeout: START_TIMEOUT,
        }
    }
}

/// Counts a failed call to Temporal (an existing run is an answer, not a failure).
fn failed(call: &str, error: EngineError) -> EngineError {
    crate::telemetry::metrics::temporal_error(call);
    error
}

#[async_trait]
impl WorkflowEngine for TemporalEngine {
    async fn start(
        &self,
        task_id: TaskId,
        plan: &Plan,
        timeout: Duration,
    ) -> Result<String, EngineError> {
        let input = RackOperationInput {
            task_id: task_id.into(),
            plan: plan.clone(),
        };
        let options = WorkflowStartOptions::new(self.task_queue.clone(), task_id.to_string())
            .execution_timeout(timeout)
            .build();
        // The client plugin reads the OpenTelemetry context: hand it this span's trace, so the
        // workflow continues the request's trace.
        let start = self
            .client
            .start_workflow(RackOperationWorkflow::run, input, options);
        let span = tracing::Span::current();
        match tokio::time::timeout(
            self.call_timeout,
            crate::telemetry::trace::with_span_context(&span, start),
        )
        .await
        {
            Ok(Ok(handle)) => Ok(handle.run_id().unwrap_or_default().to_string()),
            Ok(Err(WorkflowStartError::AlreadyStarted { .. })) => Err(EngineError::AlreadyStarted),
            Ok(Err(e)) => Err(failed("start", status::from_start(&e))),
            Err(_) => Err(failed(
                "start",
                EngineError::Unavailable(format!(
                    "starting the workflow took longer than {:?}",
                    self.call_timeout
                )),
            )),
        }
    }

    async fn cancel(&self, task_id: TaskId, reason: &str) -> Result<(), EngineError> {
        let handle = self
            .client
            .get_workflow_handle::<RackOperationWorkflow>(task_id.to_string());
        let options = WorkflowCancelOptions::builder()
            .reason(reason.to_string())
            .build();
        match tokio::time::timeout(self.call_timeout, handle.cancel(options)).await {
            Ok(Ok(())) | Ok(Err(WorkflowInteractionError::NotFound(_))) => Ok(()),
            Ok(Err(e)) => Err(failed("cancel", status::from_interaction(&e))),
            Err(_) => Err(failed(
                "cancel",
                EngineError::Unavailable("cancel timed out".into()),
            )),
        }
    }

    async fn ping(&self) -> Result<bool, EngineError> {
        let mut service = self.client.clone();
        let request = DescribeNamespaceRequest {
            namespace: NamespacedClient::namespace(&self.client),
            ..Default::default()
        };
        // The raw call, without the client's retries: readiness must answer quickly.
        match tokio::time::timeout(
            PING_TIMEOUT,
            WorkflowService::describe_namespace(&mut service, request.into_request()),
        )
        .await
        {
            Ok(Ok(_)) => Ok(true),
            // Readiness: any refusal means "not ready", whatever its code.
            Ok(Err(status)) => Err(failed(
                "ping",
                EngineError::Unavailable(status.message().to_string()),
            )),
            Err(_) => Err(failed(
                "ping",
                EngineError::Unavailable(format!("no answer within {PING_TIMEOUT:?}")),
            )),
        }
    }

    async fn state(&self, task_id: TaskId) -> Result<Option<RunState>, EngineError> {
        let handle = self
            .client
            .get_workflow_handle::<RackOperationWorkflow>(task_id.to_string());
        let described = match tokio::time::timeout(
            self.call_timeout,
            handle.describe(WorkflowDescribeOptions::default()),
        )
        .await
        {
            Ok(Ok(d)) => d,
            Ok(Err(WorkflowInteractionError::NotFound(_))) => return Ok(None),
            Ok(Err(e)) => return Err(failed("state", status::from_interaction(&e))),
            Err(_) => {
                return Err(failed(
                    "state",
                    EngineError::Unavailable("describe timed out".into()),
                ));
            }
        };
        Ok(Some(match described.status() {
            WorkflowExecutionStatus::Running
            | WorkflowExecutionStatus::ContinuedAsNew
            | WorkflowExecutionStatus::Unspecified => RunState::Running,
            WorkflowExecutionStatus::Completed => RunState::Completed,
            WorkflowExecutionStatus::Failed => RunState::Failed,
            WorkflowExecutionStatus::Canceled => RunState::Cancelled,
            WorkflowExecutionStatus::Terminated => RunState::Terminated,
            WorkflowExecutionStatus::TimedOut => RunState::TimedOut,
            #[allow(unreachable_patterns)]
            _ => RunState::Running,
        }))
    }
}
