//! Operations harness: the HTTP app wired to the real Temporal dev server, with a worker on a
//! private task queue, simulated devices and, when asked, the fake PSM for power shelves.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use flow::app::{App, AppState};
use flow::components::providers::{PsmManager, PsmSettings, SimConfig, SimDevices};
use flow::components::registry::{Registry, psm_set, sim_set};
use flow::config::Config;
use flow::domain::ComponentType;
use flow::workflows::{TemporalEngine, worker};
use serde_json::Value;
use temporalio_client::Client;
use temporalio_sdk::Runtime;
use uuid::Uuid;

use super::psm::PsmServer;
use super::{Backend, TestApp, TestResponse};

/// The Temporal dev server the test command starts.
pub fn temporal_address() -> String {
    std::env::var("TEST_TEMPORAL_ADDRESS").unwrap_or_else(|_| "http://127.0.0.1:7233".into())
}

/// Everything an operations test drives and inspects.
pub struct Ops {
    pub app: TestApp,
    /// The state behind `app`, for tests that drive services directly (the schedule dispatcher).
    pub state: AppState,
    pub sim: Arc<SimDevices>,
    pub psm: Option<PsmServer>,
    pub client: Client,
    pub task_queue: String,
    /// The managers the worker and the API's validation use.
    pub registry: Arc<Registry>,
}

/// Builds an [`Ops`] and runs a test body beside its worker.
pub struct OpsBuilder {
    backend: Backend,
    sim: SimConfig,
    psm: bool,
    unmanaged: Vec<ComponentType>,
    managers: Vec<(ComponentType, flow::components::ManagerSet)>,
    temporal: Option<flow::config::Temporal>,
    config: Config,
}

impl OpsBuilder {
    pub fn new(backend: Backend) -> Self {
        Self {
            backend,
            sim: SimConfig::default(),
            psm: false,
            unmanaged: Vec::new(),
            managers: Vec::new(),
            temporal: None,
            config: Config::default(),
        }
    }

    /// Changes the application's configuration (a short sampling interval, a cap).
    pub fn config(mut self, change: impl FnOnce(&mut Config)) -> Self {
        change(&mut self.config);
        self
    }

    /// Reaches Temporal with these settings (TLS, an API key) instead of the plain dev server.
    pub fn temporal(mut self, settings: flow::config::Temporal) -> Self {
        self.temporal = Some(settings);
        self
    }

    /// Leaves a component type without any manager, as a site that configured none for it.
    pub fn unmanaged(mut self, kind: ComponentType) -> Self {
        self.unmanaged.push(kind);
        self
    }

    pub fn sim(mut self, configure: impl FnOnce(&mut SimConfig)) -> Self {
        configure(&mut self.sim);
        self
    }

    /// Drives a component type through these managers (Redfish against emulated BMCs, say).
    pub fn managers(mut self, kind: ComponentType, set: flow::components::ManagerSet) -> Self {
        self.managers.push((kind, set));
        self
    }

    /// Power shelves go through the fake PSM instead of the simulator.
    pub fn with_psm(mut self) -> Self {
        self.psm = true;
        self
    }

    /// Runs `body` while a worker serves the test's task queue; the worker stops after it.
    pub async fn run<F, Fut>(self, body: F)
    where
        F: FnOnce(Ops) -> Fut,
        Fut: Future<Output = ()>,
    {
        let settings = self
            .temporal
            .clone()
            .unwrap_or_else(|| worker::plain(&temporal_address(), "flow"));
        let client = worker::connect_with(&settings, Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "Temporal at {} is required (run the README's test command): {e}",
                    settings.address
                )
            });
        worker::ensure_namespace(&client, "flow")
            .await
            .expect("namespace");
        let task_queue = format!("test-{}", Uuid::new_v4().simple());
        let db = super::TestDb::new(self.backend).await;
        let cleanup = db.cleanup();
        let engine = Arc::new(TemporalEngine::new(client.clone(), task_queue.clone()));
        let sim = Arc::new(SimDevices::new(self.sim));
        let mut registry = Registry::new();
        for kind in [
            ComponentType::Compute,
            ComponentType::NvSwitch,
            ComponentType::PowerShelf,
        ] {
            if !self.unmanaged.contains(&kind) {
                registry = registry.with(kind, sim_set(sim.clone()));
            }
        }
        let psm = if self.psm {
            let server = PsmServer::start().await;
            let settings = PsmSettings {
                url: server.url.clone(),
                timeout: Duration::from_secs(5),
                pmc_credentials: None,
                allowed_networks: crate::support::bmc_networks(),
                ..Default::default()
            };
            registry = registry.with(
                ComponentType::PowerShelf,
                psm_set(PsmManager::new(&settings).expect("psm client")),
            );
            Some(server)
        } else {
            None
        };
        for (kind, set) in self.managers {
            registry = registry.with(kind, set);
        }
        let registry = Arc::new(registry);
        let built = App::builder(db.db.clone(), self.config)
            .engines(engine)
            .registry(registry.clone())
            .build();
        let state = built.state().clone();
        let router = flow::service::router(state.clone());
        let runtime = Runtime::from_current_tokio(Default::default()).expect("temporal runtime");
        let mut temporal_worker =
            worker::build_worker(&runtime, client.clone(), &task_queue, built.activities())
                .expect("worker");
        let stop = temporal_worker.shutdown_handle();
        let ops = Ops {
            app: TestApp { router, db },
            state: state.clone(),
            sim,
            psm,
            client,
            task_queue,
            registry,
        };
        let (worker_result, ()) = tokio::join!(temporal_worker.run(), async move {
            body(ops).await;
            stop();
        });
        worker_result.expect("worker ran");
        cleanup.run().await;
    }
}

impl Ops {
    /// Submits an operation and returns the response (202 or a problem).
    pub async fn operate(&self, operation: &str, body: &Value) -> TestResponse {
        self.app
            .post(&format!("/v1/operations/{operation}"), body)
            .await
    }

    /// Polls a task until `done` holds, or panics after 60 s.
    pub async fn wait_task(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        self.wait_task_within(id, Duration::from_secs(60), done)
            .await
    }

    /// [`Self::wait_task`] with its own bound, for procedures that take minutes.
    pub async fn wait_task_within(
        &self,
        id: &str,
        bound: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let r = self.app.get(&format!("/v1/tasks/{id}")).await;
            assert_eq!(r.status, 200, "{}", r.text);
            if done(&r.body) {
                return r.body;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "task {id} never got there: {}",
                r.text
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Polls until the task is succeeded, failed or cancelled.
    pub async fn wait_end(&self, id: &str) -> Value {
        self.wait_end_within(id, Duration::from_secs(60)).await
    }

    /// [`Self::wait_end`] with its own bound.
    pub async fn wait_end_within(&self, id: &str, bound: Duration) -> Value {
        self.wait_task_within(id, bound, |t| {
            matches!(
                t["status"].as_str(),
                Some("succeeded" | "failed" | "cancelled")
            )
        })
        .await
    }
}

/// Runs each listed body once on PostgreSQL and once on SQLite, each with its own worker.
#[macro_export]
macro_rules! ops_on_both_backends {
    ($($name:ident $(: $builder:expr)?),* $(,)?) => {
        mod postgres {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let builder = $crate::support::ops::OpsBuilder::new($crate::support::Backend::Postgres);
                    $(let builder = ($builder)(builder);)?
                    builder.run(super::$name).await
                }
            )*
        }
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let builder = $crate::support::ops::OpsBuilder::new($crate::support::Backend::Sqlite);
                    $(let builder = ($builder)(builder);)?
                    builder.run(super::$name).await
                }
            )*
        }
    };
}
