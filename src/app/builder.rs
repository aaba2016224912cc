//! One place that assembles the services from their parts. `service` builds the running
//! process from it and the tests build their applications from it, so the two cannot drift
//! apart; what differs (a simulated registry, a test clock, a private task queue) is injected.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio::sync::watch;

use super::{AppInner, AppState, WorkerStatus};
use crate::auth::Authenticator;
use crate::clock::{Clock, SystemClock};
use crate::components::registry::Registry;
use crate::config::Config;
use crate::drift::observe::Observer;
use crate::drift::sync::DriftSync;
use crate::inventory::batch::SerialLookups;
use crate::rollouts::{RolloutEngine, RolloutService};
use crate::schedules::ScheduleService;
use crate::tasks::TaskService;
use crate::tasks::engine::{DisabledEngine, WorkflowEngine};
use crate::workflows::rack::activities::RackActivities;

/// The assembled application: the handlers' state and what the background parts (worker,
/// drift sync, schedule dispatcher) are built from.
#[derive(Clone)]
pub struct App {
    state: AppState,
    registry: Arc<Registry>,
}

/// Collects the parts of an [`App`]; anything not given has a default that runs no external
/// system: the wall clock, no workflow engine (operations answer 503), no component managers.
#[must_use]
pub struct AppBuilder {
    db: DatabaseConnection,
    config: Config,
    clock: Arc<dyn Clock>,
    engine: Arc<dyn WorkflowEngine>,
    rollout_engine: Option<Arc<dyn RolloutEngine>>,
    registry: Arc<Registry>,
}

impl App {
    /// Starts an application over an open (and migrated) database.
    pub fn builder(db: DatabaseConnection, config: Config) -> AppBuilder {
        AppBuilder {
            db,
            config,
            clock: Arc::new(SystemClock),
            engine: Arc::new(DisabledEngine),
            rollout_engine: None,
            registry: Arc::new(Registry::new()),
        }
    }

    /// The state handlers share.
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The state handlers share, without the rest.
    pub fn into_state(self) -> AppState {
        self.state
    }

    /// The component managers validation, the drift sync and the worker's activities ask.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }

    /// What the worker's activities share.
    pub fn activities(&self) -> RackActivities {
        RackActivities {
            tasks: self.state.task_service(),
            registry: self.registry.clone(),
            clock: self.state.clock(),
        }
    }

    /// The schedule service the dispatcher drives (the one in [`AppState`]).
    pub fn schedules(&self) -> Arc<ScheduleService> {
        self.state.schedule_service()
    }

    /// A drift-sync runner whose lease lasts `lease_ttl`, asking the managers within the
    /// configured observe timeout.
    pub fn drift_sync(&self, lease_ttl: Duration) -> DriftSync {
        DriftSync::new(
            self.state.db().clone(),
            Observer::new(self.registry.clone(), self.observe_timeout()),
            self.state.clock(),
            lease_ttl,
        )
    }

    fn observe_timeout(&self) -> Duration {
        self.state.config().components.observe_timeout
    }
}

impl AppBuilder {
    /// Where "now" comes from (tests inject a clock they can move).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The engine task runs start on.
    pub fn engine(mut self, engine: Arc<dyn WorkflowEngine>) -> Self {
        self.engine = engine;
        self
    }

    /// The engine rollout runs start on; without one, creating a rollout answers 503.
    pub fn rollout_engine(mut self, engine: Arc<dyn RolloutEngine>) -> Self {
        self.rollout_engine = Some(engine);
        self
    }

    /// One engine that runs both tasks and rollouts (Temporal's), injected as each.
    pub fn engines<E: WorkflowEngine + RolloutEngine + 'static>(self, engine: Arc<E>) -> Self {
        self.engine(engine.clone()).rollout_engine(engine)
    }

    /// The component managers.
    pub fn registry(mut self, registry: Arc<Registry>) -> Self {
        self.registry = registry;
        self
    }

    /// Wires the services. Nothing connects to anything yet.
    pub fn build(self) -> App {
        let Self {
            db,
            config,
            clock,
            engine,
            rollout_engine,
            registry,
        } = self;
        let tasks = Arc::new(
            TaskService::new(db.clone(), engine, clock.clone())
                .with_managers(registry.clone())
                .with_rack_limits(config.rack_limits()),
        );
        let rollouts = Arc::new(RolloutService::new(
            db.clone(),
            tasks.clone(),
            rollout_engine,
            clock.clone(),
        ));
        let schedules = Arc::new(ScheduleService::new(
            db.clone(),
            tasks.clone(),
            clock.clone(),
        ));
        let observer = Observer::new(registry.clone(), config.components.observe_timeout);
        let state = AppState(Arc::new(AppInner {
            auth: Authenticator::new(&config.auth, db.clone(), clock.clone()),
            lookups: SerialLookups::new(db.clone(), config.database.lookup_batching),
            streams: super::streams::Streams::new(db.clone(), config.server.max_event_streams),
            sampler: super::sampler::Sampler::new(db.clone(), config.metrics.sample_interval),
            db,
            config,
            clock,
            tasks,
            schedules,
            rollouts,
            observer,
            draining: watch::channel(false).0,
            worker: WorkerStatus::default(),
            session_key: tokio::sync::OnceCell::new(),
        }));
        App { state, registry }
    }
}
