//! Assembles a running Flow process from its configuration: database, component managers,
//! Temporal client and worker, the HTTP API, the reconciliation loop, the drift sync and the
//! schedule dispatcher.

use std::sync::Arc;
use std::time::Duration;

use temporalio_sdk::Runtime;

use crate::app::AppState;
use crate::components::registry::{Registry, sim_from_config};
use crate::config::Config;
use crate::drift::observe::Observer;
use crate::drift::sync::{DriftSync, sync_loop};
use crate::error::{Error, Result};
use crate::schedules::{ScheduleService, dispatch_loop};
use crate::tasks::engine::WorkflowEngine;
use crate::workflows::activities::RackActivities;
use crate::workflows::{TemporalEngine, worker};
use crate::{api, db};

/// Which parts this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    pub api: bool,
    pub worker: bool,
}

/// How long to wait for Temporal at start-up.
const TEMPORAL_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often stuck tasks are reconciled with their workflow runs.
const RECONCILE_INTERVAL: Duration = Duration::from_secs(30);

fn internal(e: impl std::fmt::Display) -> Error {
    Error::Internal(e.to_string())
}

/// Runs until `shutdown` resolves (then drains gracefully) or a part fails.
pub async fn run(
    config: Config,
    roles: Roles,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let conn = db::connect(&db::DbOptions::new(&config.database_url)).await?;
    if config.migrate_on_start {
        db::migrate(&conn).await?;
    }
    // Built in every role: the API validates against the managers too. Nothing connects yet.
    let registry = Arc::new(
        Registry::from_config(&config, sim_from_config(&config))
            .map_err(|e| Error::invalid("FLOW_COMPONENT_MANAGERS", e))?,
    );
    let holder = format!("{}-{}", hostname(), std::process::id());
    let temporal_off =
        config.temporal_address.trim().is_empty() || config.temporal_address == "none";
    if temporal_off {
        if roles.worker {
            return Err(Error::invalid(
                "FLOW_TEMPORAL_ADDRESS",
                "a worker needs Temporal",
            ));
        }
        tracing::warn!(
            "FLOW_TEMPORAL_ADDRESS is empty: serving the inventory only; operations answer 503"
        );
        let state = AppState::build(
            conn,
            config.clone(),
            Arc::new(crate::tasks::engine::DisabledEngine),
            registry.clone(),
        );
        let drift = start_drift_sync(&config, &state, registry, &holder);
        let served = serve_api(config, state, shutdown).await;
        stop_drift_sync(drift, &holder).await;
        return served;
    }
    let client = worker::connect(&config.temporal_address, &config.temporal_namespace, TEMPORAL_CONNECT_TIMEOUT).await.map_err(|e| {
        Error::Unavailable {
            service: "temporal",
            message: format!("{e}; start a Temporal server (the README's run command does) or set FLOW_TEMPORAL_ADDRESS"),
        }
    })?;
    worker::ensure_namespace(&client, &config.temporal_namespace).await?;
    let engine: Arc<dyn WorkflowEngine> = Arc::new(TemporalEngine::new(
        client.clone(),
        config.temporal_task_queue.clone(),
    ));
    let state = AppState::build(conn, config.clone(), engine, registry.clone());

    if !roles.worker {
        return serve_api(config, state, shutdown).await;
    }
    tracing::info!(managers = ?registry.describe(), task_queue = %config.temporal_task_queue, "starting the worker");
    let runtime = Runtime::from_current_tokio(Default::default()).map_err(internal)?;
    let activities = RackActivities {
        tasks: state.task_service(),
        registry: registry.clone(),
        clock: state.clock(),
    };
    let mut temporal_worker =
        worker::build_worker(&runtime, client, &config.temporal_task_queue, activities)?;
    let stop_worker = temporal_worker.shutdown_handle();
    let reconciler = tokio::spawn(worker::reconcile_loop(
        state.task_service(),
        holder.clone(),
        RECONCILE_INTERVAL,
        config.audit_retention_days,
    ));
    let drift = start_drift_sync(&config, &state, registry.clone(), &holder);
    // Every worker process dispatches schedules; the claim in the database makes each fire
    // happen once however many run.
    let schedules = Arc::new(ScheduleService::new(
        state.db().clone(),
        state.task_service(),
        state.clock(),
    ));
    let dispatcher = tokio::spawn(dispatch_loop(
        schedules.clone(),
        holder.clone(),
        Duration::from_millis(config.schedule_tick_ms),
    ));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let api_part = async {
        if roles.api {
            let mut rx = stop_rx.clone();
            serve_api(config.clone(), state.clone(), async move {
                let _ = rx.wait_for(|stop| *stop).await;
            })
            .await
        } else {
            Ok(())
        }
    };
    let stop_part = async {
        let mut rx = stop_rx.clone();
        let _ = rx.wait_for(|stop| *stop).await;
        stop_worker();
    };
    // The worker's future is not Send: it runs here, on the main task, beside the API.
    let (api_result, worker_result, ()) = tokio::join!(api_part, temporal_worker.run(), stop_part);
    reconciler.abort();
    dispatcher.abort();
    let _ = state.tasks().release(&holder).await;
    stop_drift_sync(drift, &holder).await;
    let _ = schedules.release(&holder).await;
    api_result?;
    worker_result.map_err(internal)
}

/// Starts the periodic drift sync unless `FLOW_DRIFT_SYNC_INTERVAL_SECS` is 0. Every process
/// that runs it competes for one lease, so a cycle is recorded once however many run.
fn start_drift_sync(
    config: &Config,
    state: &AppState,
    registry: Arc<Registry>,
    holder: &str,
) -> Option<(Arc<DriftSync>, tokio::task::JoinHandle<()>)> {
    if config.drift_sync_interval_secs == 0 {
        tracing::info!("drift sync is off (FLOW_DRIFT_SYNC_INTERVAL_SECS=0)");
        return None;
    }
    let interval = Duration::from_secs(config.drift_sync_interval_secs);
    let timeout = Duration::from_secs(config.observe_timeout_secs);
    let sync = Arc::new(DriftSync::new(
        state.db().clone(),
        Observer::new(registry, timeout),
        state.clock(),
        // Outlives a missed tick and a slow cycle, so a live holder keeps it.
        interval * 2 + timeout,
    ));
    let handle = tokio::spawn(sync_loop(sync.clone(), holder.to_string(), interval));
    Some((sync, handle))
}

async fn stop_drift_sync(
    drift: Option<(Arc<DriftSync>, tokio::task::JoinHandle<()>)>,
    holder: &str,
) {
    if let Some((sync, handle)) = drift {
        handle.abort();
        let _ = sync.release(holder).await;
    }
}

async fn serve_api(
    config: Config,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| internal(format!("binding {}: {e}", config.listen)))?;
    let addr = listener.local_addr().map_err(internal)?;
    let shown = if addr.ip().is_unspecified() {
        format!("localhost:{}", addr.port())
    } else {
        addr.to_string()
    };
    tracing::info!(%addr, "listening; Swagger UI at http://{shown}/swagger-ui/");
    axum::serve(listener, api::router(state))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(internal)
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "flow".into())
}
