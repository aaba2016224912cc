//! The `queue` overlap policy across two `flow serve` replicas on one PostgreSQL schema: a
//! one-time schedule fires while a conflicting task runs on its rack, one replica is killed
//! (SIGKILL) while the fire waits in the queue, and the fire is still queued exactly once —
//! one run, one task, not lost and not doubled — and runs after the conflict ends.

use std::time::Duration;

use serde_json::{Value, json};

use super::replicas::{shared_url, tasks_of};
use super::support::{FlowProcess, Http, eventually, free_port};
use crate::support::fixtures::gb200_rack;
use crate::support::ops::temporal_address;
use crate::support::{Backend, TestDb};

/// The rack the conflicting task and the schedule share.
const RACK: u32 = 1;
/// How long the rack's first compute tray takes per call: the conflict lasts well past the fire
/// and the kill, even on a loaded machine.
const SLOW_MS: u64 = 15_000;

fn replica(url: &str, queue: &str, port: u16) -> FlowProcess {
    FlowProcess::spawn(
        &["serve"],
        &[
            ("FLOW_DATABASE_URL", url.to_string()),
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            ("FLOW_TEMPORAL_TASK_QUEUE", queue.to_string()),
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            ("FLOW_SIM_SLOW_SERIALS", format!("SN-{RACK:04}-compute-00")),
            ("FLOW_SIM_SLOW_MS", SLOW_MS.to_string()),
            ("FLOW_SCHEDULE_TICK_MS", "200".to_string()),
        ],
    )
}

/// The task `id` as it is now.
async fn task(http: &Http, id: &str) -> Value {
    http.call("GET", &format!("/v1/tasks/{id}"), None)
        .await
        .body
}

/// The schedule's runs fired by its timer.
async fn timer_runs(http: &Http, id: &str) -> Vec<Value> {
    let runs = http
        .call(
            "GET",
            &format!("/v1/task-schedules/{id}/runs?limit=100"),
            None,
        )
        .await;
    let items = runs.body["items"].as_array().cloned().unwrap_or_default();
    items
        .into_iter()
        .filter(|r| r["trigger"] == "schedule")
        .collect()
}

/// Waits up to `within` for task `id` to end; the task as it ended.
async fn ended(http: &Http, id: &str, within: Duration) -> Value {
    eventually(within, "the task ends", || {
        let (http, id) = (http.clone(), id.to_string());
        async move {
            let t = task(&http, &id).await;
            let over = matches!(
                t["status"].as_str(),
                Some("succeeded" | "failed" | "cancelled")
            );
            over.then_some(t)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_schedule_firing_into_a_conflict_with_a_replica_killed_is_queued_once_and_runs_after_it()
 {
    let db = TestDb::new(Backend::Postgres).await;
    let cleanup = db.cleanup();
    let url = shared_url(&db).await;
    tokio::time::timeout(Duration::from_secs(300), async {
        let queue = format!("replicas-queue-{}", uuid::Uuid::new_v4().simple());
        let ports = [free_port(), free_port()];
        let mut replicas = vec![
            replica(&url, &queue, ports[0]),
            replica(&url, &queue, ports[1]),
        ];
        let http = [Http::new(ports[0]), Http::new(ports[1])];
        for (h, r) in http.iter().zip(&replicas) {
            h.wait_up(r).await;
        }
        let created = http[0]
            .call("POST", "/v1/expected-racks", Some(&gb200_rack(RACK, 1)))
            .await;
        assert_eq!(created.status, 201, "{created:?}");
        let rack = json!({"racks": [{"name": format!("rack-{RACK:04}")}]});

        // The conflict: a task on the rack that runs (slowly) until well after the fire.
        let submit = json!({"target_spec": rack, "conflict_strategy": "reject"});
        let conflict = eventually(Duration::from_secs(30), "the conflict is accepted", || {
            let (http, body) = (http[1].clone(), submit.clone());
            async move {
                let a = http
                    .call("POST", "/v1/operations/power-on", Some(&body))
                    .await;
                (a.status == 202).then_some(a.body)
            }
        })
        .await;
        let conflict_id = conflict["task_ids"][0].as_str().unwrap().to_string();
        eventually(Duration::from_secs(60), "the conflict runs", || {
            let (http, id) = (http[0].clone(), conflict_id.clone());
            async move { (task(&http, &id).await["status"] == "running").then_some(()) }
        })
        .await;

        // A one-time schedule with the queue policy, due in a moment.
        let at = chrono::Utc::now() + chrono::Duration::seconds(4);
        let schedule = http[0]
            .call(
                "POST",
                "/v1/task-schedules",
                Some(&json!({
                    "name": "into the conflict",
                    "spec": {"type": "one_time", "spec": at.to_rfc3339()},
                    "operation": {"kind": "power_on"},
                    "target_spec": rack,
                    "overlap_policy": "queue",
                })),
            )
            .await;
        assert_eq!(schedule.status, 201, "{schedule:?}");
        let schedule_id = schedule.body["id"].as_str().unwrap().to_string();

        // It fires and its task waits behind the conflict.
        let fired = eventually(Duration::from_secs(60), "the schedule fires", || {
            let (http, id) = (http[1].clone(), schedule_id.clone());
            async move {
                let runs = timer_runs(&http, &id).await;
                let done = runs.first().filter(|r| r["status"] == "done").cloned();
                done.filter(|r| !r["task_ids"].as_array().unwrap().is_empty())
            }
        })
        .await;
        let queued_id = fired["task_ids"][0].as_str().unwrap().to_string();
        assert_eq!(fired["task_ids"].as_array().unwrap().len(), 1, "{fired}");
        let waiting = task(&http[0], &queued_id).await;
        assert_eq!(
            waiting["status"], "waiting",
            "queued behind the conflict: {waiting}"
        );
        assert_eq!(task(&http[0], &conflict_id).await["status"], "running");

        // One replica dies while the fire waits; the other carries both tasks through.
        let victim = 0;
        let survivor = &http[1];
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &replicas[victim].pid().to_string()])
            .status();
        replicas[victim]
            .wait(Duration::from_secs(10))
            .await
            .expect("killed");

        // Generous: the conflict's slow calls, plus the dead replica's activities timing out.
        let first = ended(survivor, &conflict_id, Duration::from_secs(180)).await;
        let second = ended(survivor, &queued_id, Duration::from_secs(180)).await;
        assert_eq!(first["status"], "succeeded", "{first}");
        assert_eq!(second["status"], "succeeded", "{second}");
        let conflict_end: chrono::DateTime<chrono::Utc> =
            first["finished_at"].as_str().unwrap().parse().unwrap();
        let queued_start: chrono::DateTime<chrono::Utc> =
            second["started_at"].as_str().unwrap().parse().unwrap();
        assert!(
            queued_start >= conflict_end,
            "the queued fire started {queued_start} before the conflict ended {conflict_end}"
        );

        // Exactly once: one timer run, and the rack has the conflict and that one task only.
        let runs = timer_runs(survivor, &schedule_id).await;
        assert_eq!(runs.len(), 1, "{runs:?}");
        let tasks = tasks_of(survivor, RACK).await;
        let mut ids: Vec<&str> = tasks.iter().map(|t| t["id"].as_str().unwrap()).collect();
        ids.sort_unstable();
        let mut want = vec![conflict_id.as_str(), queued_id.as_str()];
        want.sort_unstable();
        assert_eq!(ids, want, "{tasks:?}");
    })
    .await
    .expect("bounded in time");
    cleanup.run().await;
}
