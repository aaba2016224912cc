//! Temporal outages, on a dev server the test owns: the inventory keeps serving, readiness
//! says what is down, operations answer 503 and create nothing, and once Temporal is back an
//! operation runs — without restarting Flow. Also Flow started while Temporal is down, and a
//! process configured without Temporal.

use std::time::Duration;

use serde_json::{Value, json};

use super::support::{Answer, FlowProcess, Http, OwnTemporal, eventually, free_port};
use crate::on_both_backends;
use crate::support::fixtures::gb200_rack;
use crate::support::{Backend, TestApp, TestDb};

on_both_backends!(an_inventory_only_process_refuses_operations_at_once_and_creates_nothing);

fn power_on(rack: &str) -> Value {
    json!({"target_spec": {"racks": [{"name": rack}]}})
}

/// The variables of a `flow` process on the test's database and Temporal.
fn flow_env(db: &TestDb, temporal: &OwnTemporal, port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("FLOW_DATABASE_URL", db.url.clone()),
        ("FLOW_TEMPORAL_ADDRESS", temporal.address()),
        ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
        (
            "FLOW_TEMPORAL_TASK_QUEUE",
            format!("fault-{}", uuid::Uuid::new_v4().simple()),
        ),
    ]
}

async fn task_total(http: &Http) -> u64 {
    http.call("GET", "/v1/tasks?count=exact", None).await.body["total"]
        .as_u64()
        .unwrap_or_else(|| panic!("task list has a total"))
}

/// A refused submission: 503 `engine_unavailable` with `Retry-After`, within a few seconds.
fn assert_refused(answer: &Answer) {
    assert_eq!(answer.status, 503, "{answer:?}");
    assert_eq!(answer.body["code"], "engine_unavailable", "{answer:?}");
    assert!(answer.retry_after.is_some(), "Retry-After: {answer:?}");
    assert!(
        answer.took < Duration::from_secs(6),
        "answered in {:?}",
        answer.took
    );
}

/// `flow serve` on SQLite with a Temporal dev server of its own (so a test may stop it), up
/// and answering; the database and process live as long as the caller keeps them.
async fn serve_with_own_temporal() -> (TestDb, OwnTemporal, FlowProcess, Http) {
    let db = TestDb::new(Backend::Sqlite).await;
    let mut temporal = OwnTemporal::unstarted();
    temporal.start().await;
    let port = free_port();
    let flow = FlowProcess::spawn(&["serve"], &flow_env(&db, &temporal, port));
    let http = Http::new(port);
    http.wait_up(&flow).await;
    (db, temporal, flow, http)
}

/// Submits until the engine accepts (it reconnects in the background), then waits for the task.
async fn operation_succeeds(http: &Http, rack: &str) {
    let accepted = eventually(
        Duration::from_secs(60),
        "an operation is accepted",
        || async {
            let a = http
                .call("POST", "/v1/operations/power-on", Some(&power_on(rack)))
                .await;
            match a.status {
                202 => Some(a),
                503 => None,
                _ => panic!("unexpected answer: {a:?}"),
            }
        },
    )
    .await;
    let id = accepted.body["task_ids"][0].as_str().unwrap().to_string();
    let task = http.wait_task_end(&id, Duration::from_secs(90)).await;
    assert_eq!(task["status"], "succeeded", "{task}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporal_outage_answers_503_creates_nothing_and_operations_resume_without_restart() {
    // Every step has its own bound; this one bounds their sum. Two dev-server starts and two
    // operations took longer than 240 s once in the full suite on two busy cores.
    tokio::time::timeout(Duration::from_secs(480), async {
        let (_db, mut temporal, _flow, http) = serve_with_own_temporal().await;
        let created = http
            .call("POST", "/v1/expected-racks", Some(&gb200_rack(1, 1)))
            .await;
        assert_eq!(created.status, 201, "{created:?}");
        operation_succeeds(&http, "rack-0001").await;

        temporal.stop().await;
        let ready = eventually(Duration::from_secs(15), "readyz says 503", || async {
            let a = http.call("GET", "/readyz", None).await;
            (a.status == 503).then_some(a)
        })
        .await;
        assert!(ready.took < Duration::from_secs(2), "{ready:?}");
        assert_eq!(ready.body["checks"]["temporal"]["status"], "down");
        assert_eq!(ready.body["checks"]["database"]["status"], "up");
        assert_eq!(http.call("GET", "/v1/racks", None).await.status, 200);
        let before = task_total(&http).await;
        for _ in 0..3 {
            let refused = http
                .call(
                    "POST",
                    "/v1/operations/power-on",
                    Some(&power_on("rack-0001")),
                )
                .await;
            assert_refused(&refused);
        }
        assert_eq!(task_total(&http).await, before, "nothing was created");

        temporal.start().await;
        operation_succeeds(&http, "rack-0001").await;
        let ready = eventually(Duration::from_secs(30), "readyz says 200", || async {
            let a = http.call("GET", "/readyz", None).await;
            (a.status == 200).then_some(a)
        })
        .await;
        assert_eq!(ready.body["checks"]["worker"]["status"], "up", "{ready:?}");
        temporal.stop().await;
    })
    .await
    .expect("bounded in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_starts_while_temporal_is_down_serves_the_inventory_and_runs_operations_once_it_is_up()
{
    tokio::time::timeout(Duration::from_secs(240), async {
        let db = TestDb::new(Backend::Sqlite).await;
        let mut temporal = OwnTemporal::unstarted();
        let port = free_port();
        let vars = flow_env(&db, &temporal, port);
        // Split roles, as a scaled deployment runs them: both must start without Temporal.
        let api = FlowProcess::spawn(&["serve", "--no-worker"], &vars);
        let worker = FlowProcess::spawn(&["worker"], &vars);
        // And the all-in-one `flow serve` (API + worker) beside them, on a port of its own.
        let both_port = free_port();
        let mut both_vars = vars.clone();
        both_vars.retain(|(k, _)| *k != "FLOW_LISTEN");
        both_vars.push(("FLOW_LISTEN", format!("127.0.0.1:{both_port}")));
        let both = FlowProcess::spawn(&["serve"], &both_vars);
        let both_http = Http::new(both_port);
        both_http.wait_up(&both).await;
        let ready = both_http.call("GET", "/readyz", None).await;
        assert_eq!(ready.status, 503, "{ready:?}");
        assert_eq!(
            ready.body["checks"]["worker"]["status"], "down",
            "{ready:?}"
        );
        assert_eq!(both_http.call("GET", "/v1/racks", None).await.status, 200);
        let http = Http::new(port);
        http.wait_up(&api).await;
        let ready = http.call("GET", "/readyz", None).await;
        assert_eq!(ready.status, 503, "{ready:?}");
        assert!(ready.took < Duration::from_secs(2), "{ready:?}");
        assert_eq!(ready.body["checks"]["temporal"]["status"], "down");
        let created = http
            .call("POST", "/v1/expected-racks", Some(&gb200_rack(1, 1)))
            .await;
        assert_eq!(created.status, 201, "{created:?}");
        let refused = http
            .call(
                "POST",
                "/v1/operations/power-on",
                Some(&power_on("rack-0001")),
            )
            .await;
        assert_refused(&refused);
        assert_eq!(task_total(&http).await, 0);

        temporal.start().await;
        operation_succeeds(&http, "rack-0001").await;
        let ready = eventually(
            Duration::from_secs(30),
            "the all-in-one is ready",
            || async {
                let a = both_http.call("GET", "/readyz", None).await;
                (a.status == 200).then_some(a)
            },
        )
        .await;
        assert_eq!(ready.body["checks"]["worker"]["status"], "up", "{ready:?}");
        let output = api.output();
        assert_eq!(
            output.matches("Temporal is unreachable").count(),
            1,
            "one line per change of state:\n{output}"
        );
        drop(worker);
        drop(both);
        temporal.stop().await;
    })
    .await
    .expect("bounded in time");
}

#[tokio::test]
async fn an_empty_temporal_address_is_a_start_up_error_naming_the_setting() {
    let mut flow = FlowProcess::spawn(
        &["serve"],
        &[
            ("FLOW_TEMPORAL_ADDRESS", String::new()),
            ("FLOW_LISTEN", format!("127.0.0.1:{}", free_port())),
            ("FLOW_DATABASE_URL", "sqlite::memory:".into()),
        ],
    );
    let status = flow
        .wait(Duration::from_secs(30))
        .await
        .expect("flow exits");
    assert!(!status.success());
    assert!(
        flow.output().contains("FLOW_TEMPORAL_ADDRESS is empty"),
        "{}",
        flow.output()
    );
}

async fn an_inventory_only_process_refuses_operations_at_once_and_creates_nothing(app: TestApp) {
    app.create_rack(&gb200_rack(1, 1)).await;
    let r = app
        .post("/v1/operations/power-on", &power_on("rack-0001"))
        .await;
    r.assert_problem(503, "engine_unavailable");
    assert!(r.header("retry-after").is_some());
    assert_eq!(app.count_rows("tasks").await, 0);
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    assert_eq!(ready.body["checks"]["temporal"]["status"], "disabled");
}

/// A rollout of two racks in waves of one, as `flow serve` is asked for it.
fn served_rollout() -> Value {
    json!({
        "name": "served",
        "operation": {"kind": "power_on"},
        "target_spec": {
            "racks": [{"name": "rack-0001"}, {"name": "rack-0002"}],
            "component_types": ["compute"],
        },
        "strategy": {"batch_size": 1},
    })
}

/// Rollouts go through `flow serve`'s Temporal link as tasks do: one runs to its end, and
/// while Temporal is down a new one is refused with 503 and nothing is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_through_flow_serve_runs_to_its_end_and_is_refused_while_temporal_is_down() {
    tokio::time::timeout(Duration::from_secs(240), async {
        let (_db, mut temporal, _flow, http) = serve_with_own_temporal().await;
        for i in 1..=2 {
            let created = http
                .call("POST", "/v1/expected-racks", Some(&gb200_rack(i, 1)))
                .await;
            assert_eq!(created.status, 201, "{created:?}");
        }
        let accepted = eventually(Duration::from_secs(60), "a rollout is accepted", || async {
            let a = http
                .call("POST", "/v1/rollouts", Some(&served_rollout()))
                .await;
            match a.status {
                201 => Some(a),
                503 => None,
                _ => panic!("unexpected answer: {a:?}"),
            }
        })
        .await;
        let path = format!("/v1/rollouts/{}", accepted.body["id"].as_str().unwrap());
        let ended = eventually(Duration::from_secs(120), "the rollout ends", || async {
            let a = http.call("GET", &path, None).await;
            let status = a.body["status"].as_str().unwrap_or_default().to_string();
            ["succeeded", "failed", "halted", "aborted"]
                .contains(&status.as_str())
                .then_some(a)
        })
        .await;
        assert_eq!(ended.body["status"], "succeeded", "{ended:?}");

        temporal.stop().await;
        eventually(Duration::from_secs(15), "readyz says 503", || async {
            let a = http.call("GET", "/readyz", None).await;
            (a.status == 503).then_some(a)
        })
        .await;
        let listed = http.call("GET", "/v1/rollouts", None).await;
        let before = listed.body["items"].as_array().map(Vec::len);
        let refused = http
            .call("POST", "/v1/rollouts", Some(&served_rollout()))
            .await;
        assert_refused(&refused);
        let listed = http.call("GET", "/v1/rollouts", None).await;
        assert_eq!(listed.body["items"].as_array().map(Vec::len), before);
    })
    .await
    .expect("bounded in time");
}
