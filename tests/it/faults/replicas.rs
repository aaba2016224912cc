//! Two `flow serve` replicas (API and worker each) on one PostgreSQL schema and one Temporal:
//! the replica running the rollout workflow is killed (SIGKILL) mid-rollout, the rollout still
//! finishes, no rack runs twice and the other replica answers every request meanwhile; then 40
//! submissions for one rack, spread over both replicas, admit exactly one task; an interval
//! schedule fires once per due time across both all along.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};

use super::support::{FlowProcess, Http, eventually, free_port, temporal_bin};
use crate::support::fixtures::gb200_rack;
use crate::support::ops::temporal_address;
use crate::support::{Backend, TestDb};

/// Racks of the rollout (one wave each); their compute trays answer slowly, so the kill lands
/// while a wave runs.
const ROLLOUT_RACKS: u32 = 4;
/// The rack the concurrent submissions compete for.
const CONTESTED: u32 = 5;
/// The rack an interval schedule powers on all along, through the kill.
const SCHEDULED: u32 = 6;
/// That schedule's interval.
const EVERY_SECS: u64 = 2;

/// The test's PostgreSQL schema, as a URL another process opens.
pub(super) async fn shared_url(db: &TestDb) -> String {
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

fn replica(url: &str, queue: &str, port: u16) -> FlowProcess {
    // The contested rack is slow too, so its one task still runs when the last call arrives.
    let slow: Vec<String> = (1..=CONTESTED)
        .map(|n| format!("SN-{n:04}-compute-00"))
        .collect();
    FlowProcess::spawn(
        &["serve"],
        &[
            ("FLOW_DATABASE_URL", url.to_string()),
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            ("FLOW_TEMPORAL_TASK_QUEUE", queue.to_string()),
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            ("FLOW_SIM_SLOW_SERIALS", slow.join(",")),
            ("FLOW_SIM_SLOW_MS", "2500".to_string()),
            ("FLOW_SCHEDULE_TICK_MS", "200".to_string()),
        ],
    )
}

/// The identity (`flow-<pid>`) of the worker that completed the rollout workflow's last
/// workflow task: the replica that holds the run in its cache.
fn rollout_runner(rollout_id: &str) -> Option<String> {
    let address = temporal_address();
    let out = std::process::Command::new(temporal_bin())
        .args([
            "workflow",
            "show",
            "--namespace",
            "flow",
            "--output",
            "json",
        ])
        .args([
            "--workflow-id",
            &format!("rollout-{rollout_id}"),
            "--address",
        ])
        .arg(address.trim_start_matches("http://"))
        .output()
        .ok()?;
    let history: Value = serde_json::from_slice(&out.stdout).ok()?;
    history["events"]
        .as_array()?
        .iter()
        .rev()
        .find_map(|event| {
            event["workflowTaskCompletedEventAttributes"]["identity"]
                .as_str()
                .map(String::from)
        })
}

/// Polls `http` every 100 ms until `stop`: the worst answer time, and the calls that failed.
async fn keep_asking(http: Http, stop: Arc<AtomicBool>) -> (Duration, Vec<String>) {
    let mut worst = Duration::ZERO;
    let mut failed = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match http.try_call("GET", "/v1/racks", None).await {
            Some(a) if a.status == 200 => worst = worst.max(a.took),
            Some(a) => failed.push(format!("{} {}", a.status, a.body)),
            None => failed.push("no answer".into()),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (worst, failed)
}

pub(super) async fn tasks_of(http: &Http, rack: u32) -> Vec<Value> {
    let racks = http
        .call("GET", &format!("/v1/racks?name=rack-{rack:04}"), None)
        .await;
    let id = racks.body["items"][0]["id"].as_str().unwrap().to_string();
    let tasks = http
        .call("GET", &format!("/v1/tasks?rack_id={id}"), None)
        .await;
    tasks.body["items"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_lose_the_rollout_runner_and_finish_it_once_and_admit_one_task_per_rack() {
    let db = TestDb::new(Backend::Postgres).await;
    let cleanup = db.cleanup();
    let url = shared_url(&db).await;
    tokio::time::timeout(Duration::from_secs(240), async {
        let queue = format!("replicas-{}", uuid::Uuid::new_v4().simple());
        let ports = [free_port(), free_port()];
        let mut replicas = vec![
            replica(&url, &queue, ports[0]),
            replica(&url, &queue, ports[1]),
        ];
        let http = [Http::new(ports[0]), Http::new(ports[1])];
        for (h, r) in http.iter().zip(&replicas) {
            h.wait_up(r).await;
        }
        for n in 1..=SCHEDULED {
            let created = http[0]
                .call("POST", "/v1/expected-racks", Some(&gb200_rack(n, 1)))
                .await;
            assert_eq!(created.status, 201, "{created:?}");
        }
        let schedule = http[0]
            .call(
                "POST",
                "/v1/task-schedules",
                Some(&json!({
                    "name": "through the kill",
                    "spec": {"type": "interval", "spec": format!("{EVERY_SECS}s")},
                    "operation": {"kind": "power_on"},
                    "target_spec": {"racks": [{"name": format!("rack-{SCHEDULED:04}")}]},
                })),
            )
            .await;
        assert_eq!(schedule.status, 201, "{schedule:?}");
        let schedule_id = schedule.body["id"].as_str().unwrap().to_string();
        let scheduled_at = tokio::time::Instant::now();
        let names: Vec<Value> = (1..=ROLLOUT_RACKS)
            .map(|n| json!({"name": format!("rack-{n:04}")}))
            .collect();
        let body = json!({
            "name": "two replicas",
            "operation": {"kind": "power_on"},
            "target_spec": {"racks": names, "component_types": ["compute"]},
            "strategy": {"canary": 1, "batch_size": 1},
        });
        let created = eventually(Duration::from_secs(30), "the rollout is accepted", || {
            let (http, body) = (http[1].clone(), body.clone());
            async move {
                let a = http.call("POST", "/v1/rollouts", Some(&body)).await;
                (a.status == 201).then_some(a)
            }
        })
        .await;
        let id = created.body["id"].as_str().unwrap().to_string();

        // Kill the replica running the rollout workflow while wave 2 runs.
        let runner = eventually(Duration::from_secs(60), "wave 2 runs", || {
            let (http, id) = (http[0].clone(), id.clone());
            async move {
                let r = http.call("GET", &format!("/v1/rollouts/{id}"), None).await;
                if r.body["waves"][1]["racks"][0]["task_status"] != "running" {
                    return None;
                }
                rollout_runner(&id)
            }
        })
        .await;
        let victim = replicas
            .iter()
            .position(|r| runner == format!("flow-{}", r.pid()))
            .unwrap_or_else(|| panic!("the runner {runner} is one of the replicas"));
        let survivor = 1 - victim;
        let stop = Arc::new(AtomicBool::new(false));
        let asking = tokio::spawn(keep_asking(http[survivor].clone(), stop.clone()));
        let killed_at = tokio::time::Instant::now();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &replicas[victim].pid().to_string()])
            .status();
        replicas[victim]
            .wait(Duration::from_secs(10))
            .await
            .expect("killed");

        let done = eventually(Duration::from_secs(120), "the rollout ends", || {
            let (http, id) = (http[survivor].clone(), id.clone());
            async move {
                let r = http.call("GET", &format!("/v1/rollouts/{id}"), None).await;
                let ended = matches!(
                    r.body["status"].as_str(),
                    Some("succeeded" | "failed" | "halted" | "aborted")
                );
                ended.then_some(r.body)
            }
        })
        .await;
        let after_kill = killed_at.elapsed();
        stop.store(true, Ordering::SeqCst);
        let (worst, failed) = asking.await.unwrap();
        assert_eq!(done["status"], "succeeded", "{done}");
        for n in 1..=ROLLOUT_RACKS {
            let tasks = tasks_of(&http[survivor], n).await;
            assert_eq!(tasks.len(), 1, "rack {n} ran once: {tasks:?}");
        }
        assert!(failed.is_empty(), "the survivor failed: {failed:?}");
        // Bounds with room for a loaded CI machine: they catch a replica that stops answering or a
        // rollout left to the 120 s timeouts of old, not slowness.
        assert!(worst < Duration::from_secs(5), "worst answer {worst:?}");
        // Two waves of ~3 s were left; a step of the dead replica moves on within seconds.
        assert!(after_kill < Duration::from_secs(100), "{after_kill:?}");

        // Back to two replicas; 40 submissions for one rack, half to each, at once.
        replicas[victim] = replica(&url, &queue, ports[victim]);
        http[victim].wait_up(&replicas[victim]).await;
        let submit = json!({
            "target_spec": {"racks": [{"name": format!("rack-{CONTESTED:04}")}]},
            "conflict_strategy": "reject",
        });
        let calls = (0..40).map(|i| {
            let (http, body) = (http[i % 2].clone(), submit.clone());
            async move {
                http.call("POST", "/v1/operations/power-on", Some(&body))
                    .await
                    .status
            }
        });
        let statuses = futures::future::join_all(calls).await;
        let accepted = statuses.iter().filter(|s| **s == 202).count();
        assert_eq!(accepted, 1, "{statuses:?}");
        assert!(
            statuses.iter().all(|s| *s == 202 || *s == 409),
            "{statuses:?}"
        );
        assert_eq!(tasks_of(&http[0], CONTESTED).await.len(), 1);
        fired_once_per_due_time(&http[0], &schedule_id, scheduled_at.elapsed()).await;
    })
    .await
    .expect("bounded in time");
    cleanup.run().await;
}

/// The schedule kept firing through the kill, and no due time fired twice (two replicas
/// firing one due time would be two runs a moment apart).
async fn fired_once_per_due_time(http: &Http, id: &str, elapsed: Duration) {
    let runs = http
        .call(
            "GET",
            &format!("/v1/task-schedules/{id}/runs?limit=1000"),
            None,
        )
        .await;
    let mut fired: Vec<chrono::DateTime<chrono::Utc>> = runs.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["trigger"] == "schedule")
        .map(|r| r["fired_at"].as_str().unwrap().parse().unwrap())
        .collect();
    fired.sort();
    let due = elapsed.as_secs() / EVERY_SECS;
    let n = fired.len() as u64;
    assert!(
        // Never more than once per due time; through the kill a due time may pass unfired
        // while the dead replica's schedule lease runs out.
        2 * n + 4 >= due && n <= due + 1,
        "{n} fires in {elapsed:?}: {fired:?}"
    );
    for pair in fired.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= chrono::Duration::milliseconds(1000),
            "two fires {gap} apart: {fired:?}"
        );
    }
}
