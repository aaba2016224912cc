//! A worker process killed in the middle of a rollout: another one picks the rollout's run up
//! where it was, and no rack gets a second task.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use flow::app::App;
use flow::config::Config;
use flow::workflows::{TemporalEngine, worker};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::json;
use tokio::process::{Child, Command};
use uuid::Uuid;

use super::{make_racks, rollout, wait_rollout, wait_status};
use crate::support::ops::temporal_address;
use crate::support::{Backend, TestApp, TestDb};

/// A URL another process opens the test's database with (PostgreSQL: the test's schema).
async fn shared_url(db: &TestDb) -> String {
    if db.url.starts_with("sqlite:") {
        return db.url.clone();
    }
    let row = db
        .db
        .query_one_raw(Statement::from_string(
            db.db.get_database_backend(),
            "SELECT current_schema()",
        ))
        .await
        .unwrap()
        .unwrap();
    let schema: String = row.try_get_by_index(0).unwrap();
    let sep = if db.url.contains('?') { '&' } else { '?' };
    format!("{}{sep}options=-c%20search_path%3D{schema}", db.url)
}

/// `flow worker` as a separate process; rack-0002's compute tray answers slowly, so a kill
/// lands while wave 2 runs.
fn spawn_worker(database_url: &str, task_queue: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_flow"))
        .arg("worker")
        .env("FLOW_AUTH", "none")
        .env("FLOW_DATABASE_URL", database_url)
        .env("FLOW_MIGRATE_ON_START", "false")
        .env("FLOW_TEMPORAL_ADDRESS", temporal_address())
        .env("FLOW_TEMPORAL_TASK_QUEUE", task_queue)
        .env(
            "FLOW_COMPONENT_MANAGERS",
            "compute=sim,nvswitch=sim,powershelf=sim",
        )
        .env("FLOW_SIM_LATENCY_MS", "0")
        .env("FLOW_SIM_SLOW_SERIALS", "SN-0002-compute-00")
        .env("FLOW_SIM_SLOW_MS", "4000")
        .env("FLOW_DRIFT_SYNC_INTERVAL_SECS", "0")
        .env("FLOW_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn flow worker")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_resumes_after_its_worker_is_killed_and_runs_no_rack_twice_sqlite() {
    resumes_after_kill(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_resumes_after_its_worker_is_killed_and_runs_no_rack_twice_postgres() {
    resumes_after_kill(Backend::Postgres).await;
}

async fn resumes_after_kill(backend: Backend) {
    let db = TestDb::new(backend).await;
    let cleanup = db.cleanup();
    let url = shared_url(&db).await;
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
    make_racks(&app, 3).await;
    let mut first = spawn_worker(&url, &task_queue);
    let names = ["rack-0001", "rack-0002", "rack-0003"];
    let r = app
        .post(
            "/v1/rollouts",
            &rollout(&names, json!({"canary": 1, "batch_size": 1})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    wait_rollout(&app, &id, 60, |r| {
        r["waves"][1]["racks"][0]["task_status"] == "running"
    })
    .await;
    first.kill().await.expect("kill the first worker");

    let mut second = spawn_worker(&url, &task_queue);
    let done = wait_rollout(&app, &id, 120, |r| {
        matches!(
            r["status"].as_str(),
            Some("succeeded" | "failed" | "halted" | "aborted")
        )
    })
    .await;
    second.kill().await.ok();
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["counts"]["succeeded"], 3, "{done}");
    for name in names {
        let racks = app.get(&format!("/v1/racks?name={name}")).await.body;
        let rack = racks["items"][0]["id"].as_str().unwrap();
        let tasks = app
            .get(&format!("/v1/tasks?rack_id={rack}&count=exact"))
            .await;
        assert_eq!(tasks.body["total"], 1, "{name} ran once: {}", tasks.text);
    }
    // The rollout's waves still ran one after the other.
    let _ = wait_status(&app, &id, "succeeded").await;
    cleanup.run().await;
}
