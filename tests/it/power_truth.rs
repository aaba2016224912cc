//! The console tells the truth: a task's successful power and firmware steps update the
//! components' recorded power state and firmware as they end, without waiting for the drift
//! sync to look.

use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    a_power_task_leaves_each_component_recorded_in_the_state_it_put_it_in: |b: OpsBuilder| b.sim(|s| {
        s.latency = std::time::Duration::from_millis(5);
    }),
    a_firmware_task_records_the_version_each_tray_reports_as_it_ends: |b: OpsBuilder| b.sim(|s| {
        s.firmware_duration = std::time::Duration::from_millis(200);
    }),
);

async fn run(ops: &Ops, operation: &str) -> Value {
    run_with(
        ops,
        operation,
        json!({"target_spec": {"racks": [{"name": "g10"}]}}),
    )
    .await
}

async fn run_with(ops: &Ops, operation: &str, body: Value) -> Value {
    let r = ops.operate(operation, &body).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = r.body["task_ids"][0].as_str().unwrap().to_string();
    let end = ops.wait_end(&task).await;
    assert_eq!(end["status"], "succeeded", "{end:#}");
    end
}

async fn power_states(ops: &Ops, task: &Value) -> Vec<String> {
    recorded(ops, task, "power_state").await
}

/// One recorded field of every component the task's steps touched.
async fn recorded(ops: &Ops, task: &Value, field: &str) -> Vec<String> {
    let mut states = Vec::new();
    for stage in task["stages"].as_array().unwrap() {
        for step in stage["components"].as_array().unwrap() {
            let id = step["component_id"].as_str().unwrap();
            let c = ops.app.get(&format!("/v1/components/{id}")).await;
            states.push(
                c.body["component"][field]
                    .as_str()
                    .unwrap_or("null")
                    .to_string(),
            );
        }
    }
    states
}

async fn a_power_task_leaves_each_component_recorded_in_the_state_it_put_it_in(ops: Ops) {
    let rack: Value = serde_json::from_str(include_str!("../../examples/rack-g10.json")).unwrap();
    ops.app.create_rack(&rack).await;
    let on = run(&ops, "power-on").await;
    let states = power_states(&ops, &on).await;
    assert_eq!(states.len(), 3, "{on:#}");
    assert!(states.iter().all(|s| s == "on"), "{states:?}");
    let off = run(&ops, "power-off").await;
    let states = power_states(&ops, &off).await;
    assert!(states.iter().all(|s| s == "off"), "{states:?}");
}

async fn a_firmware_task_records_the_version_each_tray_reports_as_it_ends(ops: Ops) {
    let rack: Value = serde_json::from_str(include_str!("../../examples/rack-g10.json")).unwrap();
    ops.app.create_rack(&rack).await;
    let body = json!({"target_spec": {"racks": [{"name": "g10", "component_types": ["compute"]}]},
                      "target_version": {"compute": "9.9.1"}});
    let fw = run_with(&ops, "firmware-upgrade", body).await;
    let versions = recorded(&ops, &fw, "observed_firmware_version").await;
    assert!(!versions.is_empty(), "{fw:#}");
    assert!(versions.iter().all(|v| v == "9.9.1"), "{versions:?}");
}
