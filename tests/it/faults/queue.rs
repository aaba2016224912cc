//! A full queue is reported as what it is: `409 queue_full`, not `rack_busy`.

use std::time::Duration;

use serde_json::json;

use crate::ops_on_both_backends;
use crate::support::fixtures::gb200_rack;
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    a_request_refused_because_every_queue_is_full_answers_queue_full: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
);

async fn a_request_refused_because_every_queue_is_full_answers_queue_full(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let target = json!({"target_spec": {"racks": [{"name": "rack-0001"}]}});
    let busy = ops.operate("power-on", &target).await;
    let busy_id = busy.body["task_ids"][0].as_str().unwrap().to_string();
    ops.wait_task(&busy_id, |t| t["status"] == "running").await;
    let mut queued = target.clone();
    queued["conflict_strategy"] = json!("queue");
    for _ in 0..5 {
        let r = ops.app.post("/v1/operations/power-off", &queued).await;
        assert_eq!(r.status, 202, "{}", r.text);
    }
    let full = ops.app.post("/v1/operations/power-off", &queued).await;
    full.assert_problem(409, "queue_full");
    let rejected = ops.app.post("/v1/operations/power-off", &target).await;
    rejected.assert_problem(409, "rack_busy");
    // Cancelling the running task lets the queue drain; cancel the waiting ones too.
    let waiting = ops.app.get("/v1/tasks?status=waiting").await.body;
    for task in waiting["items"].as_array().unwrap() {
        let id = task["id"].as_str().unwrap();
        ops.app.post_empty(&format!("/v1/tasks/{id}/cancel")).await;
    }
    ops.app
        .post_empty(&format!("/v1/tasks/{busy_id}/cancel"))
        .await;
    assert_eq!(ops.wait_end(&busy_id).await["status"], "cancelled");
}
