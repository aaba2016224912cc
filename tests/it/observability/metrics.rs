//! `/metrics`: present, labelled by route template, and moving when an operation runs.

use serde_json::json;

use super::value;
use crate::ops_on_both_backends;
use crate::support::fixtures::{gb200_rack, mac};
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    metrics_count_requests_tasks_and_device_calls_of_a_power_on: |b: OpsBuilder| b.with_psm(),
);

async fn scrape(ops: &Ops) -> String {
    let r = ops.app.get("/metrics").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    r.text
}

async fn metrics_count_requests_tasks_and_device_calls_of_a_power_on(ops: Ops) {
    let psm = ops.psm.as_ref().unwrap();
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    for idx in [5, 6] {
        psm.add_shelf(&mac(1, idx, 0));
    }
    let before = scrape(&ops).await;
    let power_on = [("operation", "power_on"), ("status", "succeeded")];
    let r = ops
        .operate(
            "power-on",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = r.body["task_ids"][0].as_str().unwrap().to_string();
    // While it runs, the task is counted as active; the request under its route template.
    let during = scrape(&ops).await;
    assert!(
        during.contains("flow_tasks_active{status=\"running\"}"),
        "{during}"
    );
    let end = ops.wait_end(&task).await;
    assert_eq!(end["status"], "succeeded", "{end}");
    // A raw path (with an id) is never a label value: the matched template is.
    ops.app.get(&format!("/v1/tasks/{task}")).await;
    let after = scrape(&ops).await;

    let grew = |name: &str, labels: &[(&str, &str)]| {
        value(&after, name, labels) - value(&before, name, labels)
    };
    assert!(grew("flow_tasks_total", &power_on) >= 1.0, "{after}");
    assert!(
        grew(
            "flow_task_duration_seconds_count",
            &[("operation", "power_on")]
        ) >= 1.0
    );
    let request = [
        ("method", "POST"),
        ("route", "/v1/operations/power-on"),
        ("status", "202"),
    ];
    assert!(grew("flow_http_requests_total", &request) >= 1.0, "{after}");
    let read = [
        ("method", "GET"),
        ("route", "/v1/tasks/{id}"),
        ("status", "200"),
    ];
    assert!(grew("flow_http_requests_total", &read) >= 1.0, "{after}");
    assert!(
        grew(
            "flow_http_request_duration_seconds_count",
            &[("route", "/v1/operations/power-on")]
        ) >= 1.0
    );
    // Two shelves through PSM, two switches and two trays through the simulator.
    let sim = [
        ("manager", "sim"),
        ("action", "set_power"),
        ("outcome", "ok"),
    ];
    let psm_calls = [
        ("manager", "psm"),
        ("action", "set_power"),
        ("outcome", "ok"),
    ];
    assert!(grew("flow_device_calls_total", &sim) >= 4.0, "{after}");
    assert!(
        grew("flow_device_calls_total", &psm_calls) >= 2.0,
        "{after}"
    );
    assert!(
        grew(
            "flow_device_call_duration_seconds_count",
            &[("manager", "psm"), ("action", "set_power")]
        ) >= 2.0
    );
    for series in [
        "flow_tasks_active{status=\"waiting\"}",
        "flow_drift_components{kind=\"missing\"}",
        "flow_db_pool_connections{state=\"open\"}",
        "flow_db_pool_connections{state=\"max\"}",
    ] {
        assert!(after.contains(series), "{series} missing from {after}");
    }
    for line in after.lines().filter(|l| l.contains("route=\"")) {
        assert!(
            !line.contains(&task),
            "a raw path became a label value: {line}"
        );
    }
}
