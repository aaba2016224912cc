//! Connecting to Temporal, registering the rack and rollout workflows and their activities on a worker, and the
//! reconciliation loop every worker process runs (the database lease keeps it to one at a time).

use std::sync::Arc;
use std::time::Duration;

use temporalio_client::grpc::WorkflowService;
use temporalio_client::tonic::{Code, IntoRequest};
use temporalio_client::{Client, ClientOptions, Connection, RegisterNamespaceOptions};
use temporalio_common::protos::temporal::api::workflowservice::v1::{
    DescribeNamespaceRequest, RegisterNamespaceRequest,
};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use super::rack::activities::RackActivities;
use super::rack::workflow::RackOperationWorkflow;
use super::rollout::activities::RolloutActivities;
use super::rollout::workflow::RolloutWorkflow;
use crate::error::{Error, Result};
use crate::tasks::TaskService;

fn unavailable(message: impl std::fmt::Display) -> Error {
    Error::Unavailable {
        service: "temporal",
        message: message.to_string(),
    }
}

/// Connects to the Temporal frontend with no credentials (tests, the benchmark).
pub async fn connect(address: &str, namespace: &str, timeout: Duration) -> Result<Client> {
    connect_with(&plain(address, namespace), timeout).await
}

/// Settings for a frontend that takes no credentials.
pub fn plain(address: &str, namespace: &str) -> crate::config::Temporal {
    crate::config::Temporal {
        address: address.to_string(),
        namespace: namespace.to_string(),
        task_queue: String::new(),
        tls_ca_file: None,
        tls_cert_file: None,
        tls_key_file: None,
        tls_server_name: None,
        api_key: None,
    }
}

/// Connects to the Temporal frontend with the settings' TLS and API key. Bounded in time: a
/// frontend that accepts connections but never answers would otherwise hold start-up for the
/// SDK's own 30 s.
pub async fn connect_with(settings: &crate::config::Temporal, timeout: Duration) -> Result<Client> {
    let address = &settings.address;
    let options = super::credentials::connection_options(settings, timeout)?;
    let connection = tokio::time::timeout(timeout, Connection::connect(options))
        .await
        .map_err(|_| unavailable(format!("no answer from {address} within {timeout:?}")))?
        .map_err(|e| {
            unavailable(super::credentials::explain(
                settings,
                format!("{address}: {e}"),
            ))
        })?;
    // The OpenTelemetry plugin carries trace context through workflow starts, workflows and
    // activities (the worker takes the client's plugins); with no exporter it only propagates.
    Client::new(
        connection,
        ClientOptions::new(settings.namespace.clone())
            .plugin(crate::telemetry::trace::temporal_plugin())
            .build(),
    )
    .map_err(unavailable)
}

/// Registers the namespace when the server does not know it (a fresh dev server or cluster).
pub async fn ensure_namespace(client: &Client, namespace: &str) -> Result<()> {
    let mut service = client.clone();
    let describe = DescribeNamespaceRequest {
        namespace: namespace.to_string(),
        ..Default::default()
    };
    match WorkflowService::describe_namespace(&mut service, describe.into_request()).await {
        Ok(_) => return Ok(()),
        Err(status) if status.code() == Code::NotFound => {}
        Err(status) => return Err(unavailable(status.message())),
    }
    let register: RegisterNamespaceRequest = RegisterNamespaceOptions::builder()
        .namespace(namespace.to_string())
        .description("Flow rack operations".to_string())
        .workflow_execution_retention_period(Duration::from_secs(7 * 24 * 3600))
        .build()
        .into();
    match WorkflowService::register_namespace(&mut service, register.into_request()).await {
        Ok(_) => Ok(()),
        Err(status) if status.code() == Code::AlreadyExists => Ok(()),
        Err(status) => Err(unavailable(status.message())),
    }
}

/// A worker for the rack and rollout workflows on `task_queue`. Its `run()` future is not `Send`: drive it on
/// the main task beside the HTTP server.
pub fn build_worker(
    runtime: &Runtime,
    client: Client,
    task_queue: &str,
    activities: RackActivities,
) -> Result<Worker> {
    let rollouts = RolloutActivities::from_rack(&activities);
    let options = WorkerOptions::new(task_queue.to_string())
        .register_workflow::<RackOperationWorkflow>()
        .map_err(|e| Error::Internal(format!("registering the workflow: {e}")))?
        .register_workflow::<RolloutWorkflow>()
        .map_err(|e| Error::Internal(format!("registering the rollout workflow: {e}")))?
        .register_activities(activities)
        .register_activities(rollouts)
        .graceful_shutdown_period(Duration::from_secs(10))
        // A killed worker's tasks move to a live one after this, not after the default 10 s.
        .sticky_queue_schedule_to_start_timeout(Duration::from_secs(3))
        .build();
    Worker::new(runtime, client, options)
        .map_err(|e| Error::Internal(format!("creating the worker: {e}")))
}

/// Runs reconciliation every `interval` until the process ends. Errors are logged and retried
/// on the next tick: an unreachable Temporal must not stop the loop.
/// Each tick also prunes audit entries older than `audit_retention_days`, under its own lease.
pub async fn reconcile_loop(
    tasks: Arc<TaskService>,
    holder: String,
    interval: Duration,
    audit_retention_days: u64,
) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        match tasks.reconcile(&holder, interval * 2).await {
            Ok(0) => {}
            Ok(fixed) => tracing::info!(fixed, "reconciled tasks with their workflow runs"),
            Err(e) => tracing::warn!(error = %e, "task reconciliation failed; retrying next tick"),
        }
        let now = tasks.now();
        match crate::audit::prune_with_lease(tasks.db(), &holder, audit_retention_days, now).await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "pruned audit entries past retention"),
            Err(e) => {
                tracing::warn!(error = %e, "pruning the audit log failed; retrying next tick")
            }
        }
    }
}
