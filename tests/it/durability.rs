//! A worker process killed in the middle of a workflow: another one picks the run up and the
//! task still completes.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use flow::app::App;
use flow::config::Config;
use flow::workflows::{TemporalEngine, worker};
use serde_json::json;
use tokio::process::{Child, Command};
use uuid::Uuid;

use crate::support::fixtures::gb200_rack;
use crate::support::ops::temporal_address;
use crate::support::{Backend, TestApp, TestDb};

/// `flow worker` as a separate process on the test's database and task queue.
fn spawn_worker(database_url: &str, task_queue: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_flow"))
        .arg("worker")
        .env("FLOW_AUTH", "none")
        .env("FLOW_DATABASE_URL", database_url)
        .env("FLOW_TEMPORAL_ADDRESS", temporal_address())
        .env("FLOW_TEMPORAL_TASK_QUEUE", task_queue)
        .env(
            "FLOW_COMPONENT_MANAGERS",
            "compute=sim,nvswitch=sim,powershelf=sim",
        )
        .env("FLOW_SIM_LATENCY_MS", "0")
        // The compute tray answers slowly, so the kill lands while its step runs.
        .env("FLOW_SIM_SLOW_SERIALS", "SN-0001-compute-00")
        .env("FLOW_SIM_SLOW_MS", "4000")
        .env("FLOW_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn flow worker")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_completes_after_its_worker_is_killed_and_another_starts() {
    let db = TestDb::new(Backend::Sqlite).await;
    let url = db.url.clone();
    let client = worker::connect(&temporal_address(), "flow", Duration::from_secs(10))
        .await
        .expect("Temporal is required");
    let task_queue = format!("test-{}", Uuid::new_v4().simple());
    let engine = Arc::new(TemporalEngine::new(client, task_queue.clone()));
    let app = TestApp {
        router: flow::service::router(
            App::builder(db.db.clone(), Config::default())
                .engines(engine)
                .build()
                .into_state(),
        ),
        db,
    };

    let mut first = spawn_worker(&url, &task_queue);
    app.create_rack(&gb200_rack(1, 1)).await;
    let r = app
        .post(
            "/v1/operations/power-on",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let id = r.body["task_ids"][0].as_str().unwrap().to_string();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let task = app.get(&format!("/v1/tasks/{id}")).await.body;
        let compute_running = task["stages"].as_array().is_some_and(|stages| {
            stages.iter().any(|s| {
                s["component_types"][0] == "compute" && s["components"][0]["status"] == "running"
            })
        });
        if compute_running {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the compute stage never started: {task}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    first.kill().await.expect("kill the first worker");

    let mut second = spawn_worker(&url, &task_queue);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let task = loop {
        let task = app.get(&format!("/v1/tasks/{id}")).await.body;
        if matches!(
            task["status"].as_str(),
            Some("succeeded" | "failed" | "cancelled")
        ) {
            break task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task never ended after the restart: {task}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    second.kill().await.ok();
    assert_eq!(task["status"], "succeeded", "{task}");
    let compute = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["component_types"][0] == "compute")
        .unwrap();
    assert!(
        compute["components"][0]["attempts"].as_u64().unwrap() >= 2,
        "the step was retried on the new worker: {compute}"
    );
}
