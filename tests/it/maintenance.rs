//! Maintenance marking against simulated devices and the Temporal dev server: while a task
//! runs, its components answer `in_maintenance` with the task (component and rack reads, the
//! console), `/metrics` has their `flow_component_in_maintenance` series, and all of it is gone
//! once the task ends.

use std::time::Duration;

use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::fixtures::gb200_rack;
use crate::support::ops::{Ops, OpsBuilder};

/// The rack's number: its serials and names are this test's alone, so the process-wide metric
/// series of other tests' racks never look like ours.
const N: u32 = 7727;
const SLOW: &str = "SN-7727-compute-00";

ops_on_both_backends!(
    a_running_tasks_components_are_in_maintenance_in_reads_console_and_metrics_until_it_ends: |b: OpsBuilder| b
        .sim(|s| {
            s.slow_serials.insert(SLOW.into());
            s.slow_latency = Duration::from_secs(60);
        })
        .config(|c| c.metrics.sample_interval = Duration::from_secs(1)),
);

fn series(rack: &str) -> String {
    format!(
        "flow_component_in_maintenance{{component=\"r{N}-gpu00\",rack=\"{rack}\",serial=\"{SLOW}\",type=\"compute\"}} 1"
    )
}

/// Polls `/metrics` until the series is there (`present`) or gone, for at most 30 s.
async fn wait_metric(ops: &Ops, line: &str, present: bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = ops.app.get("/metrics").await.text;
        if text.lines().any(|l| l == line) == present {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{line} never {}:\n{}",
            if present { "appeared" } else { "went away" },
            text.lines()
                .filter(|l| l.starts_with("flow_component_in_maintenance"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Lookups by serial read the rack's running tasks in their own statement: one alone and sixteen
/// at once (on PostgreSQL those share batched statements) all carry the mark, or all lack it.
async fn lookups_by_serial_say_so(ops: &Ops, maker: &Value, serial: &str, task: Option<&str>) {
    let url = format!(
        "/v1/components/by-serial?manufacturer={}&serial_number={serial}",
        maker.as_str().unwrap()
    );
    let alone = ops.app.get(&url).await;
    let burst = futures::future::join_all((0..16).map(|_| ops.app.get(&url))).await;
    for read in std::iter::once(&alone).chain(&burst) {
        assert_eq!(read.status, 200, "{}", read.text);
        let c = &read.body["component"];
        assert_eq!(c["in_maintenance"], task.is_some(), "{}", read.text);
        assert_eq!(c["maintenance_task_id"], json!(task), "{}", read.text);
    }
}

fn component<'a>(rack: &'a Value, serial: &str) -> &'a Value {
    rack["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["serial_number"] == serial)
        .unwrap()
}

async fn a_running_tasks_components_are_in_maintenance_in_reads_console_and_metrics_until_it_ends(
    ops: Ops,
) {
    let mut body = gb200_rack(N, 2);
    let rack_name = format!("maint-{}", uuid::Uuid::new_v4().simple());
    body["name"] = json!(rack_name);
    let rack = ops.app.create_rack(&body).await;
    let rack_id = rack["id"].as_str().unwrap().to_string();
    let slow_id = component(&rack, SLOW)["id"].as_str().unwrap().to_string();
    let shelf_id = component(&rack, &format!("SN-{N}-powershelf-00"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(component(&rack, SLOW)["in_maintenance"], false);
    // Only the compute trays: the power shelves stay out of the task, and out of maintenance.
    let r = ops
        .operate(
            "power-on",
            &json!({"target_spec": {"racks": [{"name": rack_name, "component_types": ["compute"]}]}}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = r.body["task_ids"][0].as_str().unwrap().to_string();
    ops.wait_task(&task, |t| t["status"] == "running").await;

    let read = ops.app.get(&format!("/v1/components/{slow_id}")).await;
    assert_eq!(
        read.body["component"]["in_maintenance"], true,
        "{}",
        read.text
    );
    assert_eq!(read.body["component"]["maintenance_task_id"], task.as_str());
    let shelf = ops.app.get(&format!("/v1/components/{shelf_id}")).await;
    assert_eq!(
        shelf.body["component"]["in_maintenance"], false,
        "{}",
        shelf.text
    );
    assert_eq!(shelf.body["component"]["maintenance_task_id"], Value::Null);
    lookups_by_serial_say_so(
        &ops,
        &component(&rack, SLOW)["manufacturer"],
        SLOW,
        Some(&task),
    )
    .await;
    let shelf_serial = format!("SN-{N}-powershelf-00");
    let shelf_maker = &component(&rack, &shelf_serial)["manufacturer"];
    lookups_by_serial_say_so(&ops, shelf_maker, &shelf_serial, None).await;
    let listed = ops
        .app
        .get(&format!("/v1/components?rack_id={rack_id}&type=compute"))
        .await;
    assert!(
        listed.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["in_maintenance"] == true),
        "{}",
        listed.text
    );
    let rack_read = ops
        .app
        .get(&format!("/v1/racks/{rack_id}?include_components=true"))
        .await;
    assert_eq!(rack_read.body["in_maintenance"], true, "{}", rack_read.text);
    assert_eq!(rack_read.body["maintenance_task_ids"], json!([task]));
    assert_eq!(component(&rack_read.body, SLOW)["in_maintenance"], true);
    // The console: the rack's badge and the hatched tray, and the component's badge.
    let page = ops.app.get(&format!("/ui/racks/{rack_id}")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("in maintenance"), "{}", page.text);
    assert!(
        page.text.contains(&format!("data-component=\"{slow_id}\""))
            && page.text.contains("data-maintenance=\"true\""),
        "{}",
        page.text
    );
    let page = ops.app.get(&format!("/ui/components/{slow_id}")).await;
    assert!(page.text.contains("in maintenance"), "{}", page.text);
    wait_metric(&ops, &series(&rack_name), true).await;

    let cancelled = ops
        .app
        .post_empty(&format!("/v1/tasks/{task}/cancel"))
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    ops.wait_end(&task).await;
    let read = ops.app.get(&format!("/v1/components/{slow_id}")).await;
    assert_eq!(
        read.body["component"]["in_maintenance"], false,
        "{}",
        read.text
    );
    assert_eq!(read.body["component"]["maintenance_task_id"], Value::Null);
    let maker = &component(&rack, SLOW)["manufacturer"];
    lookups_by_serial_say_so(&ops, maker, SLOW, None).await;
    let rack_read = ops.app.get(&format!("/v1/racks/{rack_id}")).await;
    assert_eq!(
        rack_read.body["in_maintenance"], false,
        "{}",
        rack_read.text
    );
    assert_eq!(rack_read.body["maintenance_task_ids"], json!([]));
    wait_metric(&ops, &series(&rack_name), false).await;
    let page = ops.app.get(&format!("/ui/racks/{rack_id}")).await;
    assert!(
        !page.text.contains("data-maintenance=\"true\""),
        "{}",
        page.text
    );
}
