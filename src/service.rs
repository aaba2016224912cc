//! Assembles a running Flow process from its configuration: database, component managers,
//! Temporal client and worker, the HTTP API, the reconciliation loop, the drift sync and the
//! schedule dispatcher.

use std::sync::Arc;
use std::time::Duration;

use temporalio_sdk::Runtime;

use crate::app::{App, AppState, WorkerState};
use crate::components::registry::{Registry, sim_from_config};
use crate::config::Config;
use crate::drift::sync::{DriftSync, sync_loop};
use crate::error::{Error, Result};
use crate::schedules::dispatch_loop;
use crate::workflows::rack::activities::RackActivities;
use crate::workflows::{LinkedEngine, TemporalLink, worker};
use crate::{api, db, ui};

mod listen;

/// Which parts this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    pub api: bool,
    pub worker: bool,
}

/// How often stuck tasks are reconciled with their workflow runs.
const RECONCILE_INTERVAL: Duration = Duration::from_secs(30);
/// Wait before rebuilding a worker whose run ended with an error.
const WORKER_RESTART_DELAY: Duration = Duration::from_secs(2);

fn internal(e: impl std::fmt::Display) -> Error {
    Error::Internal(e.to_string())
}

/// Runs until `shutdown` resolves (then drains gracefully) or a part fails. Temporal need not
/// be reachable: the link connects in the background and operations answer 503 until it does.
pub async fn run(
    config: Config,
    roles: Roles,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    crate::auth::check_at_start(&config.auth)
        .map_err(|e| Error::invalid("FLOW_JWT_JWKS_FILE", e))?;
    let mut options = db::DbOptions::new(config.database.url.expose());
    options.acquire_timeout = config.database.acquire_timeout;
    let conn = db::connect(&options).await?;
    if config.database.migrate_on_start {
        db::migrate(&conn).await?;
    }
    // Built in every role: the API validates against the managers too. Nothing connects yet.
    let sim = sim_from_config(&config.sim, config.redfish.firmware_catalog.as_deref())
        .map_err(|e| Error::invalid("FLOW_FIRMWARE_CATALOG", e))?;
    let registry = Arc::new(
        Registry::from_config(&config.components, &config.redfish, &config.psm, sim)
            .map_err(|e| Error::invalid("FLOW_COMPONENT_MANAGERS", e))?,
    );
    watch_sighup(registry.clone());
    let holder = format!("{}-{}", hostname(), std::process::id());
    if config.temporal.address.trim() == "none" {
        if roles.worker {
            return Err(Error::invalid(
                "FLOW_TEMPORAL_ADDRESS",
                "a worker needs Temporal; `none` is for an API process (`flow serve --no-worker`)",
            ));
        }
        tracing::warn!(
            "FLOW_TEMPORAL_ADDRESS=none: serving the inventory only; operations answer 503"
        );
        // No engine: the builder's default refuses operations.
        let app = App::builder(conn, config.clone())
            .registry(registry)
            .build();
        let drift = start_drift_sync(&config, &app, &holder);
        let served = serve_api(config, app.into_state(), shutdown).await;
        stop_drift_sync(drift, &holder).await;
        return served;
    }
    // A malformed address is a configuration error now, not a reason to retry forever.
    temporalio_client::Url::parse(&config.temporal.address)
        .map_err(|e| Error::invalid("FLOW_TEMPORAL_ADDRESS", e.to_string()))?;
    let link = TemporalLink::with_settings(config.temporal.clone());
    let maintainer = tokio::spawn(link.clone().maintain());
    // Tasks and rollouts through the same link: each call finds the client connected at that
    // moment, so a process that started before Temporal was reachable still runs both.
    let engine = Arc::new(LinkedEngine::new(
        link.clone(),
        config.temporal.task_queue.clone(),
    ));
    let app = App::builder(conn, config.clone())
        .engines(engine)
        .registry(registry.clone())
        .build();
    let state = app.state().clone();

    if !roles.worker {
        let served = serve_api(config, state, shutdown).await;
        maintainer.abort();
        return served;
    }
    state.worker().set(WorkerState::Connecting);
    tracing::info!(managers = ?registry.describe(), task_queue = %config.temporal.task_queue, "starting the worker");
    let runtime = Runtime::from_current_tokio(Default::default()).map_err(internal)?;
    let reconciler = tokio::spawn(worker::reconcile_loop(
        state.task_service(),
        holder.clone(),
        RECONCILE_INTERVAL,
        config.audit.retention_days,
    ));
    let drift = start_drift_sync(&config, &app, &holder);
    // Every worker process dispatches schedules; the claim in the database makes each fire
    // happen once however many run.
    let schedules = app.schedules();
    let dispatcher = tokio::spawn(dispatch_loop(
        schedules.clone(),
        holder.clone(),
        config.schedules.tick,
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
    let activities = app.activities();
    // The worker's future is not Send: it runs here, on the main task, beside the API.
    let (api_result, worker_result) = tokio::join!(
        api_part,
        run_worker(
            &runtime,
            &link,
            &config,
            activities,
            &state,
            stop_rx.clone()
        )
    );
    state.worker().set(WorkerState::Stopped);
    maintainer.abort();
    reconciler.abort();
    dispatcher.abort();
    let _ = state.tasks().release(&holder).await;
    stop_drift_sync(drift, &holder).await;
    let _ = schedules.release(&holder).await;
    api_result?;
    worker_result
}

/// Builds the worker once Temporal is reachable and runs it until `stop`; a worker whose run
/// fails (Temporal gone for longer than the SDK retries) is rebuilt, so the process never needs
/// a restart to run operations again.
async fn run_worker(
    runtime: &Runtime,
    link: &TemporalLink,
    config: &Config,
    activities: RackActivities,
    state: &AppState,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    loop {
        let client = tokio::select! {
            client = link.wait_client() => client,
            _ = stop.wait_for(|s| *s) => return Ok(()),
        };
        let mut temporal_worker = worker::build_worker(
            runtime,
            client,
            &config.temporal.task_queue,
            activities.clone(),
        )?;
        let stop_worker = temporal_worker.shutdown_handle();
        state.worker().set(WorkerState::Polling);
        let result = {
            let run = temporal_worker.run();
            tokio::pin!(run);
            let mut rx = stop.clone();
            let ended = tokio::select! {
                result = &mut run => Some(result),
                _ = rx.wait_for(|s| *s) => None,
            };
            match ended {
                Some(result) => result,
                None => {
                    // Drains: running activities get the worker's graceful period.
                    stop_worker();
                    run.await
                }
            }
        };
        state.worker().set(WorkerState::Stopped);
        if *stop.borrow() {
            return result.map_err(internal);
        }
        match result {
            Ok(()) => tracing::warn!("the worker stopped on its own; starting it again"),
            Err(e) => tracing::warn!(error = %e, "the worker failed; starting it again"),
        }
        state.worker().set(WorkerState::Connecting);
        tokio::select! {
            () = tokio::time::sleep(WORKER_RESTART_DELAY) => {},
            _ = stop.wait_for(|s| *s) => return Ok(()),
        }
    }
}

/// Starts the periodic drift sync unless `FLOW_DRIFT_SYNC_INTERVAL_SECS` is 0. Every process
/// that runs it competes for one lease, so a cycle is recorded once however many run.
fn start_drift_sync(
    config: &Config,
    app: &App,
    holder: &str,
) -> Option<(Arc<DriftSync>, tokio::task::JoinHandle<()>)> {
    if config.drift.sync_interval.is_zero() {
        tracing::info!("drift sync is off (FLOW_DRIFT_SYNC_INTERVAL_SECS=0)");
        return None;
    }
    let interval = config.drift.sync_interval;
    let timeout = config.components.observe_timeout;
    // Outlives a missed tick and a slow cycle, so a live holder keeps it.
    let sync = Arc::new(app.drift_sync(interval * 2 + timeout));
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

/// The whole HTTP application of a process: the API and the operator console side by side,
/// behind one guard and middleware stack.
pub fn router(state: AppState) -> axum::Router {
    let shield = ui::shield::Shield::new(state.config());
    api::router_with(state.clone(), ui::routes(state), ui::face()).layer(
        axum::middleware::from_fn_with_state(shield, ui::shield::protect),
    )
}

async fn serve_api(
    config: Config,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .map_err(|e| internal(format!("binding {}: {e}", config.server.listen)))?;
    let addr = listener.local_addr().map_err(internal)?;
    let shown = if addr.ip().is_unspecified() {
        format!("localhost:{}", addr.port())
    } else {
        addr.to_string()
    };
    tracing::info!(%addr, "listening; Swagger UI at http://{shown}/swagger-ui/");
    let grace = config.server.shutdown_grace;
    let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<()>();
    let drain_state = state.clone();
    let limits = listen::Limits {
        max_connections: config.server.max_connections,
        header_read_timeout: config.server.header_read_timeout,
    };
    // The accept loop hands each request its peer address: logs, spans and the audit log name
    // the client.
    let server = listen::serve(listener, router(state), limits, async move {
        shutdown.await;
        // Stop accepting and end event streams with a final event, so open streams do not
        // hold the process until their tasks end.
        tracing::info!(
            grace_secs = grace.as_secs(),
            "shutting down: finishing in-flight requests"
        );
        drain_state.begin_drain();
        let _ = signalled_tx.send(());
    });
    let deadline = async move {
        if signalled_rx.await.is_ok() {
            tokio::time::sleep(grace).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = server => Ok(()),
        () = deadline => {
            tracing::warn!(grace_secs = grace.as_secs(), "shutdown grace period over; dropping the connections still open");
            Ok(())
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "flow".into())
}

/// Re-reads BMC/PMC credentials files on SIGHUP, so a rotated password needs no restart.
fn watch_sighup(registry: Arc<Registry>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP: credentials files are re-read on change only");
        return;
    };
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            let errors = registry.reload_credentials();
            if errors.is_empty() {
                tracing::info!("SIGHUP: credentials re-read");
            }
            for e in errors {
                tracing::warn!("SIGHUP: keeping the previous credentials: {e}");
            }
        }
    });
}
