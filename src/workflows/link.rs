//! The process's link to Temporal, kept up in the background: Flow starts (and serves the
//! inventory) while Temporal is unreachable, connects when it comes back, and notices when it
//! goes away again — so operations answer `503 engine_unavailable` at once instead of hanging.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use temporalio_client::Client;
use tokio::sync::watch;

use super::TemporalEngine;
use super::worker;
use crate::ids::{RolloutId, TaskId};
use crate::operations::plan::Plan;
use crate::tasks::{EngineError, RunState, WorkflowEngine};

/// Bound on one connection attempt (and on each health probe).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);
/// How often a connected link checks that Temporal still answers.
const PROBE_INTERVAL: Duration = Duration::from_secs(2);
/// First and longest wait between failed attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(10);

/// The shared state of the link: the client once one was made, and whether Temporal answers now.
pub struct TemporalLink {
    address: String,
    settings: crate::config::Temporal,
    client: watch::Sender<Option<Client>>,
    healthy: AtomicBool,
}

impl std::fmt::Debug for TemporalLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalLink")
            .field("address", &self.address)
            .field("healthy", &self.is_healthy())
            .finish_non_exhaustive()
    }
}

impl TemporalLink {
    /// A link that has not connected yet; [`TemporalLink::maintain`] does the connecting.
    pub fn new(address: impl Into<String>, namespace: impl Into<String>) -> Arc<Self> {
        Self::with_settings(worker::plain(&address.into(), &namespace.into()))
    }

    /// A link that connects with the settings' TLS and API key.
    pub fn with_settings(settings: crate::config::Temporal) -> Arc<Self> {
        Arc::new(Self {
            address: settings.address.clone(),
            settings,
            client: watch::channel(None).0,
            healthy: AtomicBool::new(false),
        })
    }

    /// Whether the last connection attempt or probe succeeded.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    /// The client, once the first connection succeeded.
    pub fn client(&self) -> Option<Client> {
        self.client.borrow().clone()
    }

    /// Waits for the first successful connection (the worker needs a client to be built).
    pub async fn wait_client(&self) -> Client {
        let mut rx = self.client.subscribe();
        loop {
            if let Some(client) = rx.borrow_and_update().clone() {
                return client;
            }
            if rx.changed().await.is_err() {
                // The sender lives in `self`, so this cannot happen while we hold `&self`.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Connects, then probes, forever: backoff while Temporal does not answer, one log line
    /// per change of state (not one per attempt).
    pub async fn maintain(self: Arc<Self>) {
        let mut backoff = BACKOFF_MIN;
        let mut logged: Option<bool> = None;
        loop {
            let outcome = match self.client() {
                None => self.connect().await,
                Some(client) => probe(&client).await,
            };
            let up = outcome.is_ok();
            self.healthy.store(up, Ordering::Release);
            if logged != Some(up) {
                match &outcome {
                    Ok(()) => tracing::info!(address = %self.address, "connected to Temporal"),
                    Err(e) => tracing::warn!(
                        address = %self.address,
                        error = %e,
                        "Temporal is unreachable: operations answer 503 until it is back; retrying in the background"
                    ),
                }
                logged = Some(up);
            }
            let wait = if up {
                backoff = BACKOFF_MIN;
                PROBE_INTERVAL
            } else {
                let wait = backoff;
                backoff = (backoff * 2).min(BACKOFF_MAX);
                wait
            };
            tokio::time::sleep(wait).await;
        }
    }

    async fn connect(&self) -> Result<(), String> {
        let client = worker::connect_with(&self.settings, ATTEMPT_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        tokio::time::timeout(
            ATTEMPT_TIMEOUT,
            worker::ensure_namespace(&client, &self.settings.namespace),
        )
        .await
        .map_err(|_| format!("no answer within {ATTEMPT_TIMEOUT:?}"))?
        .map_err(|e| e.to_string())?;
        self.client.send_replace(Some(client));
        Ok(())
    }
}

async fn probe(client: &Client) -> Result<(), String> {
    TemporalEngine::new(client.clone(), "")
        .ping()
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The workflow engine over a [`TemporalLink`]: refuses at once while the link is down.
#[derive(Debug, Clone)]
pub struct LinkedEngine {
    link: Arc<TemporalLink>,
    task_queue: String,
}

impl LinkedEngine {
    pub fn new(link: Arc<TemporalLink>, task_queue: impl Into<String>) -> Self {
        Self {
            link,
            task_queue: task_queue.into(),
        }
    }

    fn engine(&self) -> Result<TemporalEngine, EngineError> {
        match self.link.client() {
            Some(client) if self.link.is_healthy() => {
                Ok(TemporalEngine::new(client, self.task_queue.clone()))
            }
            _ => Err(EngineError::Unavailable(format!(
                "not connected to Temporal at {}",
                self.link.address
            ))),
        }
    }
}

#[async_trait]
impl crate::rollouts::RolloutEngine for LinkedEngine {
    async fn start(&self, rollout_id: RolloutId) -> Result<(), EngineError> {
        crate::rollouts::RolloutEngine::start(&self.engine()?, rollout_id).await
    }

    async fn signal(
        &self,
        rollout_id: RolloutId,
        command: crate::rollouts::Command,
    ) -> Result<(), EngineError> {
        crate::rollouts::RolloutEngine::signal(&self.engine()?, rollout_id, command).await
    }
}

#[async_trait]
impl WorkflowEngine for LinkedEngine {
    async fn start(
        &self,
        task_id: TaskId,
        plan: &Plan,
        timeout: Duration,
    ) -> Result<String, EngineError> {
        WorkflowEngine::start(&self.engine()?, task_id, plan, timeout).await
    }

    async fn cancel(&self, task_id: TaskId, reason: &str) -> Result<(), EngineError> {
        self.engine()?.cancel(task_id, reason).await
    }

    async fn state(&self, task_id: TaskId) -> Result<Option<RunState>, EngineError> {
        self.engine()?.state(task_id).await
    }

    /// Asks Temporal now (not the link's last probe), so readiness is current.
    async fn ping(&self) -> Result<bool, EngineError> {
        match self.link.client() {
            Some(client) => {
                TemporalEngine::new(client, self.task_queue.clone())
                    .ping()
                    .await
            }
            None => Err(EngineError::Unavailable(format!(
                "not connected to Temporal at {}",
                self.link.address
            ))),
        }
    }

    fn available(&self) -> bool {
        self.link.is_healthy()
    }
}
