//! A worker killed (SIGKILL) while the BMC's firmware task runs: the worker that takes the step
//! over follows the same task monitor instead of pushing the image again (issue 25 point 6).

use std::time::Duration;

use serde_json::json;

use super::racks::{push_or_fetch_catalog, rack, tray};
use super::tree::GB200;
use crate::faults::support::{FlowProcess, Http, eventually};
use crate::support::ops::temporal_address;
use crate::support::redfish::{PASSWORD, TempDir, USER, free_port};
use crate::support::{Backend, TestDb};

const MONITOR: &str = "GET /redfish/v1/TaskService/Tasks/1/Monitor";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_update_is_followed_by_one_that_polls_the_same_task_and_never_pushes_again()
 {
    tokio::time::timeout(Duration::from_secs(300), killed_mid_update())
        .await
        .expect("bounded in time");
}

async fn killed_mid_update() {
    let bmc_port = free_port();
    // Running for more polls than the first worker makes before it is killed.
    let compute = super::bmc(GB200, bmc_port, |b| b.tasks.running_polls = Some(8)).await;
    let state = compute.bmc.clone();
    let dir = TempDir::new();
    let catalog = push_or_fetch_catalog(&dir);
    let db = TestDb::new(Backend::Sqlite).await;
    let port = free_port();
    let vars = vec![
        ("FLOW_DATABASE_URL", db.url.clone()),
        ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
        (
            "FLOW_TEMPORAL_TASK_QUEUE",
            format!("fault-{}", uuid::Uuid::new_v4().simple()),
        ),
        ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
        ("FLOW_COMPONENT_MANAGERS", "compute=redfish".to_string()),
        ("FLOW_BMC_ALLOWED_NETWORKS", "127.0.0.0/8".to_string()),
        ("FLOW_REDFISH_SCHEME", "http".to_string()),
        ("FLOW_REDFISH_PORT", bmc_port.to_string()),
        ("FLOW_REDFISH_USERNAME", USER.to_string()),
        ("FLOW_REDFISH_PASSWORD", PASSWORD.to_string()),
        ("FLOW_FIRMWARE_CATALOG", catalog.display().to_string()),
    ];
    let api = FlowProcess::spawn(&["serve", "--no-worker"], &vars);
    let mut first = FlowProcess::spawn(&["worker"], &vars);
    let http = Http::new(port);
    http.wait_up(&api).await;
    let c1 = tray(
        "compute",
        "gbk-c1",
        "1583124820080",
        "3c:6d:66:0e:db:dc",
        &compute,
    );
    let created = http
        .call("POST", "/v1/expected-racks", Some(&rack("gbk", vec![c1])))
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    // Attempts beyond the first come only from the kill; the wait outlasts both workers' polls.
    let rule = json!({"name": "firmware after a kill", "operation": "upgrade", "stages": [
        {"component_types": ["compute"], "max_parallel": 1, "timeout": "4m",
         "retry": {"max_attempts": 3, "initial_interval": "1s", "backoff_coefficient": 1,
                   "max_interval": "1s"},
         "actions": [{"action": "firmware_start"},
                     {"action": "firmware_wait", "timeout": "3m", "poll_interval": "1s"}]}]});
    let r = http.call("POST", "/v1/operation-rules", Some(&rule)).await;
    assert_eq!(r.status, 201, "{r:?}");
    let body = json!({"target_spec": {"racks": [{"name": "gbk"}]},
        "target_version": {"compute": "25.06-2"}, "rule_id": r.body["id"]});
    let r = http
        .call("POST", "/v1/operations/firmware-upgrade", Some(&body))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    let task_id = r.body["task_ids"][0].as_str().unwrap().to_string();

    // Kill once the image is on the BMC and its task monitor has answered "running".
    eventually(
        Duration::from_secs(90),
        "the push's task is followed",
        || {
            let state = state.clone();
            async move {
                let b = state.lock().unwrap();
                (b.tasks.pushes.len() == 1 && b.requests.iter().any(|r| r == MONITOR)).then_some(())
            }
        },
    )
    .await;
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &first.pid().to_string()])
        .status();
    first.wait(Duration::from_secs(10)).await.expect("killed");
    let polled_before = monitor_reads(&state);

    let _second = FlowProcess::spawn(&["worker"], &vars);
    let task = http.wait_task_end(&task_id, Duration::from_secs(180)).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    let step = &task["stages"][0]["components"][0];
    assert_eq!(
        step["attempts"], 2,
        "the killed attempt, then one more: {task}"
    );
    let b = state.lock().unwrap();
    assert_eq!(b.tasks.pushes.len(), 1, "pushed once: {:?}", b.requests);
    let pushes = b
        .requests
        .iter()
        .filter(|r| r.starts_with("POST") && r.contains("UpdateService"))
        .count();
    assert_eq!(pushes, 1, "{:?}", b.requests);
    drop(b);
    assert!(
        monitor_reads(&state) > polled_before,
        "the second worker followed task 1"
    );
    assert!(
        step.to_string()
            .contains("following the firmware update an earlier attempt started"),
        "{step}"
    );
}

/// Reads of task 1's monitor or its Task resource so far.
fn monitor_reads(state: &super::server::Shared) -> usize {
    state
        .lock()
        .unwrap()
        .requests
        .iter()
        .filter(|r| r.starts_with("GET /redfish/v1/TaskService/Tasks/1"))
        .count()
}
