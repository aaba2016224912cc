//! A worker killed (SIGKILL) while the BMC's firmware task runs: the worker that takes the step
//! over follows the same task monitor instead of pushing the image again (issue 25 point 6).

use std::time::Duration;

use serde_json::{Value, json};

use super::firmware::bundle;
use super::racks::{push_or_fetch_catalog, rack, tray};
use super::tree::GB200;
use crate::faults::support::{FlowProcess, Http, eventually};
use crate::support::ops::temporal_address;
use crate::support::redfish::{PASSWORD, TempDir, USER, free_port};
use crate::support::{Backend, TestDb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_update_is_followed_by_one_that_polls_the_same_task_and_never_pushes_again()
 {
    tokio::time::timeout(Duration::from_secs(300), killed_mid_update())
        .await
        .expect("bounded in time");
}

/// A Flow API process and a first worker against one bmcweb stand-in serving the GB200 tree,
/// with one compute tray in rack `gbk` and the catalog `catalog` writes.
struct Harness {
    state: super::server::Shared,
    vars: Vec<(&'static str, String)>,
    http: Http,
    first: FlowProcess,
    _api: FlowProcess,
    _db: TestDb,
    _dir: TempDir,
    _bmc: super::Handle,
}

/// Each BMC task answers "running" for `polls` monitor reads: more than the first worker makes
/// before it is killed.
async fn start(polls: u32, catalog: impl FnOnce(&TempDir) -> std::path::PathBuf) -> Harness {
    let bmc_port = free_port();
    let compute = super::bmc(GB200, bmc_port, |b| b.tasks.running_polls = Some(polls)).await;
    let state = compute.bmc.clone();
    let dir = TempDir::new();
    let catalog = catalog(&dir);
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
    let first = FlowProcess::spawn(&["worker"], &vars);
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
    Harness {
        state,
        vars,
        http,
        first,
        _api: api,
        _db: db,
        _dir: dir,
        _bmc: compute,
    }
}

/// Submits the upgrade to `version` under a rule of `actions` whose attempts beyond the first
/// come only from the kill; returns the task id.
async fn upgrade(h: &Harness, version: &str, actions: serde_json::Value) -> String {
    let rule = json!({"name": "firmware after a kill", "operation": "upgrade", "stages": [
        {"component_types": ["compute"], "max_parallel": 1, "timeout": "4m",
         "retry": {"max_attempts": 3, "initial_interval": "1s", "backoff_coefficient": 1,
                   "max_interval": "1s"},
         "actions": actions}]});
    let r = h
        .http
        .call("POST", "/v1/operation-rules", Some(&rule))
        .await;
    assert_eq!(r.status, 201, "{r:?}");
    let body = json!({"target_spec": {"racks": [{"name": "gbk"}]},
        "target_version": {"compute": version}, "rule_id": r.body["id"]});
    let r = h
        .http
        .call("POST", "/v1/operations/firmware-upgrade", Some(&body))
        .await;
    assert_eq!(r.status, 202, "{r:?}");
    r.body["task_ids"][0].as_str().unwrap().to_string()
}

/// Kills the first worker (SIGKILL) once `pushes` images reached the BMC and Temporal holds a
/// heartbeat of task `task_id`'s step for which `beat` holds. Waiting on Temporal, not on time:
/// the SDK sends a beat at once only when none went in the last 8 s (0.8 of the 10 s heartbeat
/// timeout), so a step that beat "in progress" just before its push holds the handle back.
async fn kill_after(h: &mut Harness, pushes: usize, task_id: &str, beat: fn(&Value) -> bool) {
    let client =
        flow::workflows::worker::connect(&temporal_address(), "flow", Duration::from_secs(10))
            .await
            .expect("temporal");
    eventually(
        Duration::from_secs(120),
        "the push's handle is in a heartbeat Temporal holds",
        || {
            let state = h.state.clone();
            let client = client.clone();
            async move {
                let pushed = state.lock().unwrap().tasks.pushes.len();
                (pushed == pushes && last_beat(&client, task_id).await.is_some_and(|b| beat(&b)))
                    .then_some(())
            }
        },
    )
    .await;
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &h.first.pid().to_string()])
        .status();
    h.first.wait(Duration::from_secs(10)).await.expect("killed");
}

/// The heartbeat Temporal last recorded for task `task_id`'s running step, as the JSON it
/// carries.
async fn last_beat(client: &temporalio_client::Client, task_id: &str) -> Option<Value> {
    let handle = client
        .get_workflow_handle::<flow::workflows::rack::workflow::RackOperationWorkflow>(
            task_id.to_string(),
        );
    let described = handle.describe(Default::default()).await.ok()?;
    let activity = described.raw_description.pending_activities.first()?;
    let payload = activity.heartbeat_details.as_ref()?.payloads.first()?;
    let text: String = serde_json::from_slice(&payload.data).ok()?;
    serde_json::from_str(&text).ok()
}

async fn killed_mid_update() {
    let mut h = start(20, push_or_fetch_catalog).await;
    let actions = json!([{"action": "firmware_start"},
                         {"action": "firmware_wait", "timeout": "3m", "poll_interval": "1s"}]);
    let task_id = upgrade(&h, "25.06-2", actions).await;
    kill_after(&mut h, 1, &task_id, |b| b["update"]["handle"].is_string()).await;
    let polled_before = monitor_reads(&h.state, 1);
    let _second = FlowProcess::spawn(&["worker"], &h.vars);
    let (state, http) = (&h.state, &h.http);
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
        monitor_reads(state, 1) > polled_before,
        "the second worker followed task 1"
    );
    assert!(
        step.to_string()
            .contains("following the firmware update an earlier attempt started"),
        "{step}"
    );
}

/// Reads of task `task`'s monitor or its Task resource so far.
fn monitor_reads(state: &super::server::Shared, task: u32) -> usize {
    let task = format!("GET /redfish/v1/TaskService/Tasks/{task}");
    state
        .lock()
        .unwrap()
        .requests
        .iter()
        .filter(|r| **r == task || r.starts_with(&format!("{task}/")))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_in_a_recipes_second_bundle_is_followed_by_one_that_goes_on_from_there() {
    tokio::time::timeout(Duration::from_secs(300), killed_mid_recipe())
        .await
        .expect("bounded in time");
}

/// A two-bundle recipe (BMC, then CPLD; both live without activation) for compute trays.
fn two_bundles(dir: &TempDir) -> std::path::PathBuf {
    let bmc = dir.write("bmc.fwpkg", r#"{"install": {"FW_BMC_0": "25.06-2"}}"#);
    let cpld = dir.write("cpld.fwpkg", r#"{"install": {"FW_CPLD_0": "0.1C"}}"#);
    let text = format!(
        "[[firmware]]\ntype = \"compute\"\nversion = \"gb200-r1\"\n{}{}",
        bundle(&bmc, "none", "FW_BMC_0 = \"25.06-2\""),
        bundle(&cpld, "none", "FW_CPLD_0 = \"0.1C\""),
    );
    dir.write("recipe.toml", &text)
}

async fn killed_mid_recipe() {
    let mut h = start(20, two_bundles).await;
    let actions = json!([{"action": "firmware_recipe", "timeout": "3m", "poll_interval": "1s"}]);
    let task_id = upgrade(&h, "gb200-r1", actions).await;
    // Bundle 0 is done; bundle 1's push is on the BMC and running when the worker dies, and
    // Temporal has the heartbeat that says so.
    kill_after(&mut h, 2, &task_id, |b| {
        b["recipe"]["done"] == 1 && b["update"]["handle"].is_string()
    })
    .await;
    let polled_before = monitor_reads(&h.state, 2);
    let _second = FlowProcess::spawn(&["worker"], &h.vars);
    let task = h
        .http
        .wait_task_end(&task_id, Duration::from_secs(180))
        .await;
    assert_eq!(task["status"], "succeeded", "{task}");
    let step = &task["stages"][0]["components"][0];
    assert_eq!(
        step["attempts"], 2,
        "the killed attempt, then one more: {task}"
    );
    let b = h.state.lock().unwrap();
    let files: Vec<String> = b
        .tasks
        .pushes
        .iter()
        .map(|p| String::from_utf8_lossy(&p.file).into_owned())
        .collect();
    assert_eq!(files.len(), 2, "each bundle pushed once: {files:?}");
    assert!(
        files[0].contains("FW_BMC_0") && files[1].contains("FW_CPLD_0"),
        "{files:?}"
    );
    drop(b);
    assert!(
        monitor_reads(&h.state, 2) > polled_before,
        "the second worker followed bundle 1's task"
    );
    let said = step.to_string();
    assert!(
        said.contains("bundles before 1 done by an earlier attempt")
            && said.contains("bundle 1 (followed an earlier attempt's push)"),
        "{step}"
    );
}
