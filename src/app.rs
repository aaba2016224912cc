//! The application: [`App::builder`] wires the database, clock, workflow engine and component
//! managers into the services once, for the process (`service`) and the tests alike; the
//! [`AppState`] it holds is the state handed to every handler.

mod builder;
pub mod sampler;
pub mod streams;
mod watcher;

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use chrono::{DateTime, Utc};
use sea_orm::DatabaseConnection;
use tokio::sync::watch;

pub use builder::{App, AppBuilder};

use crate::auth::Authenticator;
use crate::clock::Clock;
use crate::config::Config;
use crate::drift::observe::Observer;
use crate::inventory::batch::SerialLookups;
use crate::rollouts::RolloutService;
use crate::schedules::ScheduleService;
use crate::tasks::TaskService;

/// What this process's Temporal worker is doing, for `/readyz`.
#[derive(Debug, Default)]
pub struct WorkerStatus(AtomicU8);

/// The states of [`WorkerStatus`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerState {
    /// This process runs no worker.
    Absent,
    /// Waiting for Temporal to be reachable before the worker can be built.
    Connecting,
    /// The worker polls its task queue.
    Polling,
    /// The worker stopped (draining at shutdown, or failed and about to be rebuilt).
    Stopped,
}

impl WorkerStatus {
    pub fn set(&self, state: WorkerState) {
        self.0.store(state as u8, Ordering::Release);
    }

    pub fn get(&self) -> WorkerState {
        match self.0.load(Ordering::Acquire) {
            1 => WorkerState::Connecting,
            2 => WorkerState::Polling,
            3 => WorkerState::Stopped,
            _ => WorkerState::Absent,
        }
    }
}

/// Cheap-to-clone handle on everything a request needs.
#[derive(Clone)]
pub struct AppState(Arc<AppInner>);

/// The state behind [`AppState`].
pub struct AppInner {
    pub db: DatabaseConnection,
    pub config: Config,
    pub clock: Arc<dyn Clock>,
    pub tasks: Arc<TaskService>,
    /// Schedule definitions, their scope and runs; the API, the console and the dispatcher share it.
    pub schedules: Arc<ScheduleService>,
    /// Fleet rollouts (their runs start on the task engine's Temporal, when it has one).
    pub rollouts: Arc<RolloutService>,
    /// Asks the component managers what they see (validation).
    pub observer: Observer,
    /// Lookups by serial, coalesced under load.
    pub lookups: SerialLookups,
    /// Turns `true` when the process begins shutting down: event streams end.
    pub draining: watch::Sender<bool>,
    /// This process's worker, if it runs one.
    pub worker: WorkerStatus,
    /// Checks bearer credentials per `FLOW_AUTH`.
    pub auth: Authenticator,
    /// The console's CSRF key, read from the database once (every replica shares it).
    pub session_key: tokio::sync::OnceCell<ring::hmac::Key>,
    /// Open event streams: their bound and their one shared change watcher.
    pub streams: streams::Streams,
    /// Refreshes the database-backed gauges `/metrics` shows.
    pub sampler: sampler::Sampler,
}

impl AppState {
    /// Asks the component managers what they see.
    pub fn observer(&self) -> &Observer {
        &self.0.observer
    }

    /// Checks bearer credentials.
    pub fn authenticator(&self) -> &Authenticator {
        &self.0.auth
    }

    /// Where the console's CSRF key is kept once read.
    pub fn session_key(&self) -> &tokio::sync::OnceCell<ring::hmac::Key> {
        &self.0.session_key
    }

    /// Lookups by serial (coalesced on PostgreSQL).
    pub fn lookups(&self) -> &SerialLookups {
        &self.0.lookups
    }

    pub fn tasks(&self) -> &TaskService {
        &self.0.tasks
    }

    pub fn rollouts(&self) -> &RolloutService {
        &self.0.rollouts
    }

    pub fn schedules(&self) -> &ScheduleService {
        &self.0.schedules
    }

    /// The shared schedule service, for the dispatcher.
    pub fn schedule_service(&self) -> Arc<ScheduleService> {
        self.0.schedules.clone()
    }

    /// The shared task service, for the worker's activities.
    pub fn task_service(&self) -> Arc<TaskService> {
        self.0.tasks.clone()
    }

    pub fn clock(&self) -> Arc<dyn Clock> {
        self.0.clock.clone()
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.0.db
    }

    pub fn config(&self) -> &Config {
        &self.0.config
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.0.clock.now()
    }

    /// Tells long-lived responses (event streams) that the process is shutting down.
    pub fn begin_drain(&self) {
        self.0.draining.send_replace(true);
    }

    /// Resolves once [`AppState::begin_drain`] was called.
    pub fn draining(&self) -> watch::Receiver<bool> {
        self.0.draining.subscribe()
    }

    /// What this process's worker is doing.
    pub fn worker(&self) -> &WorkerStatus {
        &self.0.worker
    }

    /// The process's event streams.
    pub fn streams(&self) -> &streams::Streams {
        &self.0.streams
    }

    /// The background sampler of database-backed gauges.
    pub fn sampler(&self) -> &sampler::Sampler {
        &self.0.sampler
    }
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.0.config)
            .finish_non_exhaustive()
    }
}
