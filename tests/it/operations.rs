//! Operations end to end: HTTP request -> tasks -> Temporal workflows -> component managers.

use std::time::Duration;

use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::fixtures::{gb200_rack, mac};
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    a_two_rack_power_on_makes_two_tasks_that_power_shelves_then_switches_then_compute: |b: OpsBuilder| b.with_psm(),
    one_failing_component_fails_its_task_names_it_and_keeps_the_others_results: |b: OpsBuilder| b.sim(|s| {
        s.fail_serials.insert("SN-0001-compute-01".into());
    }),
    a_running_task_is_cancelled_and_its_unfinished_steps_with_it: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
    a_queued_operation_waits_for_the_rack_then_runs_and_reject_answers_409: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-powershelf-00".into());
        s.slow_latency = Duration::from_secs(2);
    }),
    bad_operation_input_is_refused_and_creates_no_task,
);

fn racks(names: &[&str]) -> Value {
    json!({"target_spec": {"racks": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}})
}

fn task_ids(r: &crate::support::TestResponse) -> Vec<String> {
    r.body["task_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

async fn a_two_rack_power_on_makes_two_tasks_that_power_shelves_then_switches_then_compute(
    ops: Ops,
) {
    let psm = ops.psm.as_ref().unwrap();
    for n in [1, 2] {
        let rack = gb200_rack(n, 2);
        ops.app.create_rack(&rack).await;
        // The fixture's power shelves are its 5th and 6th components (after 2 compute, 2 switches).
        for idx in [5, 6] {
            psm.add_shelf(&mac(n, idx, 0));
        }
    }
    let r = ops
        .operate("power-on", &racks(&["rack-0001", "rack-0002"]))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let ids = task_ids(&r);
    assert_eq!(ids.len(), 2);
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/tasks/{}", ids[0]).as_str())
    );
    for id in &ids {
        let task = ops.wait_end(id).await;
        assert_eq!(task["status"], "succeeded", "{task}");
        let kinds: Vec<&str> = task["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["component_types"][0].as_str().unwrap())
            .collect();
        assert_eq!(kinds, vec!["powershelf", "nvswitch", "compute"]);
        for stage in task["stages"].as_array().unwrap() {
            assert_eq!(stage["status"], "succeeded", "{stage}");
            assert!(
                stage["components"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|c| c["status"] == "succeeded" && c["attempts"] == 1)
            );
        }
    }
    // The order as the devices saw it: every shelf was powered through PSM before any switch
    // was touched, and every switch before any compute tray.
    for n in [1, 2] {
        let shelves_on = psm
            .calls()
            .into_iter()
            .filter(|c| {
                c.rpc == "PowerOn"
                    && c.macs
                        .iter()
                        .any(|m| m.starts_with(&format!("02:00:{n:02x}")))
            })
            .map(|c| c.at)
            .max()
            .expect("shelves powered through PSM");
        let events = ops.sim.events();
        let of = |kind: &str| {
            events
                .iter()
                .filter(|e| {
                    e.serial.starts_with(&format!("SN-{n:04}-{kind}")) && e.op == "power_on"
                })
                .map(|e| e.at)
                .collect::<Vec<_>>()
        };
        let (switches, compute) = (of("nvswitch"), of("compute"));
        assert_eq!((switches.len(), compute.len()), (2, 2));
        assert!(
            switches.iter().all(|s| *s > shelves_on),
            "switches before shelves were on"
        );
        assert!(
            compute.iter().all(|c| switches.iter().all(|s| c > s)),
            "compute before switches were on"
        );
        assert_eq!(
            psm.shelf_power(&mac(n, 5, 0)),
            Some(flow::components::DevicePower::On)
        );
    }
}

async fn one_failing_component_fails_its_task_names_it_and_keeps_the_others_results(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    let r = ops.operate("power-on", &racks(&["rack-0001"])).await;
    let id = &task_ids(&r)[0];
    let task = ops.wait_end(id).await;
    assert_eq!(task["status"], "failed", "{task}");
    let message = task["message"].as_str().unwrap();
    assert!(
        message.contains("r0001-gpu01"),
        "the message names the component: {message}"
    );
    let compute = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["component_types"][0] == "compute")
        .unwrap();
    assert_eq!(compute["status"], "failed");
    let by_name = |name: &str| {
        compute["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    let bad = by_name("r0001-gpu01");
    assert_eq!(bad["status"], "failed");
    assert_eq!(bad["attempts"], 1, "a device that refuses is not retried");
    assert!(bad["error"].as_str().unwrap().contains("rejected"), "{bad}");
    assert_eq!(
        by_name("r0001-gpu00")["status"],
        "succeeded",
        "the other tray's result is kept"
    );
    let earlier: Vec<&Value> = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["component_types"][0] != "compute")
        .collect();
    assert!(earlier.iter().all(|s| s["status"] == "succeeded"));
}

async fn a_running_task_is_cancelled_and_its_unfinished_steps_with_it(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    let r = ops.operate("power-on", &racks(&["rack-0001"])).await;
    let id = task_ids(&r)[0].clone();
    // Wait until the slow tray is being driven, then cancel.
    ops.wait_task(&id, |t| {
        t["stages"].as_array().is_some_and(|stages| {
            stages.iter().any(|s| {
                s["component_types"][0] == "compute"
                    && s["components"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|c| c["status"] == "running")
            })
        })
    })
    .await;
    let cancelled = ops.app.post_empty(&format!("/v1/tasks/{id}/cancel")).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    assert_eq!(cancelled.body["status"], "cancelled");
    let task = ops.wait_end(&id).await;
    assert_eq!(task["status"], "cancelled");
    let compute = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["component_types"][0] == "compute")
        .unwrap();
    let slow = compute["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "r0001-gpu00")
        .unwrap();
    assert_eq!(slow["status"], "cancelled", "{slow}");
    // Cancelling again is a no-op; a finished task cannot be cancelled.
    assert_eq!(
        ops.app
            .post_empty(&format!("/v1/tasks/{id}/cancel"))
            .await
            .status,
        200
    );
    // The workflow itself ends cancelled on the Temporal side.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let handle = ops
            .client
            .get_workflow_handle::<flow::workflows::rack::workflow::RackOperationWorkflow>(
                id.clone(),
            );
        let d = handle.describe(Default::default()).await.unwrap();
        if d.status() == temporalio_client::WorkflowExecutionStatus::Canceled {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "workflow still {:?}",
            d.status()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn a_queued_operation_waits_for_the_rack_then_runs_and_reject_answers_409(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let first = ops.operate("power-on", &racks(&["rack-0001"])).await;
    let first_id = task_ids(&first)[0].clone();
    ops.wait_task(&first_id, |t| t["status"] == "running").await;

    let rejected = ops.operate("power-off", &racks(&["rack-0001"])).await;
    rejected.assert_problem(409, "rack_busy");
    assert!(
        rejected.body["detail"]
            .as_str()
            .unwrap()
            .contains(&first_id),
        "{}",
        rejected.text
    );

    let mut queued_body = racks(&["rack-0001"]);
    queued_body["conflict_strategy"] = json!("queue");
    let queued = ops.operate("power-off", &queued_body).await;
    assert_eq!(queued.status, 202, "{}", queued.text);
    let second_id = task_ids(&queued)[0].clone();
    let waiting = ops.app.get(&format!("/v1/tasks/{second_id}")).await;
    assert_eq!(waiting.body["status"], "waiting", "{}", waiting.text);
    assert!(waiting.body["queue_expires_at"].is_string());

    let first_task = ops.wait_end(&first_id).await;
    assert_eq!(first_task["status"], "succeeded");
    let second = ops.wait_end(&second_id).await;
    assert_eq!(second["status"], "succeeded", "{second}");
    assert!(
        second["started_at"].as_str().unwrap() >= first_task["finished_at"].as_str().unwrap(),
        "FIFO: it ran after the first"
    );
    let kinds: Vec<&str> = second["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["component_types"][0].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec!["compute", "nvswitch", "powershelf"],
        "power-off goes the other way"
    );
    let listed = ops
        .app
        .get("/v1/tasks?operation=power_off&count=exact")
        .await;
    assert_eq!(listed.body["total"], 1);
}

async fn bad_operation_input_is_refused_and_creates_no_task(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let cases = [
        (
            "power-on",
            json!({"target_spec": {"racks": [{"name": "no-such-rack"}]}}),
            400,
            "target_spec.racks[0]",
        ),
        (
            "power-on",
            json!({"target_spec": {"racks": []}}),
            400,
            "target_spec.racks",
        ),
        ("power-on", json!({"target_spec": {}}), 400, "target_spec"),
        (
            "power-on",
            json!({"target_spec": {"racks": [{"name": "rack-0001"}], "components": [{"id": uuid::Uuid::new_v4()}]}}),
            400,
            "target_spec",
        ),
        (
            "power-on",
            json!({"target_spec": {"racks": [{"name": "rack-0001", "component_types": ["gpu"]}]}}),
            400,
            "target_spec.racks[0].component_types[0]",
        ),
        (
            "power-on",
            json!({"target_spec": {"components": [{"id": uuid::Uuid::new_v4()}]}}),
            400,
            "target_spec.components[0]",
        ),
        (
            "firmware-upgrade",
            json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "start_time": "2026-12-02T00:00:00Z", "end_time": "2026-12-01T00:00:00Z"}),
            400,
            "end_time",
        ),
        (
            "firmware-upgrade",
            json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "start_time": "2026-12-02T00:00:00Z"}),
            400,
            "end_time",
        ),
        (
            "firmware-upgrade",
            json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "sub_targets": ["flux"]}),
            400,
            "sub_targets[0]",
        ),
        (
            "power-on",
            json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "conflict_strategy": "maybe"}),
            400,
            "conflict_strategy",
        ),
        (
            "power-on",
            json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "queue_timeout_seconds": 0}),
            400,
            "queue_timeout_seconds",
        ),
        (
            "bring-up",
            json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "conflict_strategy": "queue"}),
            400,
            "conflict_strategy",
        ),
        (
            "power-on",
            json!({"target_spec": {"racks": [{"name": "rack-0001", "component_types": ["torswitch"]}]}}),
            422,
            "racks.rack-0001",
        ),
    ];
    for (op, body, status, field) in cases {
        let r = ops.operate(op, &body).await;
        assert_eq!(r.status.as_u16(), status, "{op} {body}: {}", r.text);
        assert!(
            r.error_fields().iter().any(|f| f == field),
            "{op} {body}: expected {field}, got {:?} ({})",
            r.error_fields(),
            r.text
        );
    }
    assert_eq!(ops.app.count_rows("tasks").await, 0);
    ops.app
        .get(&format!("/v1/tasks/{}", uuid::Uuid::new_v4()))
        .await
        .assert_problem(404, "not_found");
}
