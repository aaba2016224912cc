//! Steering a running rollout: pause and resume, abort cancelling the running tasks, abort
//! letting them finish, and following it all as Server-Sent Events.

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

use super::execution::tasks_of;
use super::{make_racks, rollout, wait_rollout, wait_status};
use crate::ops_on_both_backends;
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    a_paused_rollout_starts_no_rack_until_resumed: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(2);
    }),
    abort_with_cancel_running_cancels_the_running_task_and_starts_nothing_more: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
    abort_without_cancel_lets_the_running_task_finish_and_starts_nothing_more: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(3);
    }),
);

async fn start(ops: &Ops, names: &[&str]) -> String {
    let r = ops
        .app
        .post(
            "/v1/rollouts",
            &rollout(names, json!({"canary": 1, "batch_size": 1})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body["id"].as_str().unwrap().to_string()
}

/// Waits until the canary rack's task runs.
async fn canary_running(ops: &Ops, id: &str) {
    wait_rollout(&ops.app, id, 60, |r| {
        r["waves"][0]["racks"][0]["task_status"] == "running"
    })
    .await;
}

async fn a_paused_rollout_starts_no_rack_until_resumed(ops: Ops) {
    make_racks(&ops.app, 3).await;
    let id = start(&ops, &["rack-0001", "rack-0002", "rack-0003"]).await;
    canary_running(&ops, &id).await;
    let r = ops
        .app
        .post_empty(&format!("/v1/rollouts/{id}/pause"))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let paused = wait_status(&ops.app, &id, "paused").await;
    assert!(
        paused["message"].as_str().unwrap().contains("paused"),
        "{paused}"
    );
    // The canary finishes; wave 2 does not start while paused.
    wait_rollout(&ops.app, &id, 60, |r| {
        r["waves"][0]["counts"]["succeeded"] == 1
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let still = ops.app.get(&format!("/v1/rollouts/{id}")).await.body;
    assert_eq!(still["status"], "paused", "{still}");
    assert_eq!(tasks_of(&ops, "rack-0002").await, 0);
    let r = ops
        .app
        .post_empty(&format!("/v1/rollouts/{id}/resume"))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let done = wait_status(&ops.app, &id, "succeeded").await;
    assert_eq!(done["counts"]["succeeded"], 3, "{done}");
    // Each command is audited on the rollout, with the status before and the one it leads to.
    let log = ops
        .app
        .get(&format!("/v1/audit?resource=rollout:{id}"))
        .await;
    assert_eq!(log.status, 200, "{}", log.text);
    let steering: Vec<_> = log.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| {
            row["route"].as_str().unwrap().ends_with("/pause")
                || row["route"].as_str().unwrap().ends_with("/resume")
        })
        .map(|row| {
            (
                row["after"]["command"].as_str().unwrap().to_string(),
                row["before"]["status"].as_str().unwrap().to_string(),
                row["after"]["status"].as_str().unwrap().to_string(),
                row["status"].as_u64(),
            )
        })
        .collect();
    let pause = ("pause".into(), "running".into(), "paused".into(), Some(202));
    let resume = (
        "resume".into(),
        "paused".into(),
        "running".into(),
        Some(202),
    );
    assert!(steering.contains(&pause), "{steering:?}");
    assert!(steering.contains(&resume), "{steering:?}");
}

async fn abort_with_cancel_running_cancels_the_running_task_and_starts_nothing_more(ops: Ops) {
    make_racks(&ops.app, 3).await;
    let id = start(&ops, &["rack-0001", "rack-0002", "rack-0003"]).await;
    canary_running(&ops, &id).await;
    let r = ops
        .app
        .post(
            &format!("/v1/rollouts/{id}/abort"),
            &json!({"cancel_running": true}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let aborted = wait_status(&ops.app, &id, "aborted").await;
    assert_eq!(
        aborted["waves"][0]["racks"][0]["task_status"], "cancelled",
        "{aborted}"
    );
    assert_eq!(aborted["waves"][1]["status"], "not_run");
    assert_eq!(aborted["counts"]["not_run"], 2);
    assert!(
        aborted["message"].as_str().unwrap().contains("cancelled"),
        "{aborted}"
    );
    assert_eq!(tasks_of(&ops, "rack-0002").await, 0);
    ops.app
        .post(&format!("/v1/rollouts/{id}/abort"), &json!({}))
        .await
        .assert_problem(409, "rollout_finished");
}

async fn abort_without_cancel_lets_the_running_task_finish_and_starts_nothing_more(ops: Ops) {
    make_racks(&ops.app, 2).await;
    let id = start(&ops, &["rack-0001", "rack-0002"]).await;
    // Follow it as an operator's watcher would, from the start: the stream ends with the rollout.
    let router = ops.app.router.clone();
    let path = format!("/v1/rollouts/{id}/events");
    let events = tokio::spawn(async move {
        let request = Request::get(path).body(Body::empty()).unwrap();
        let response = router.oneshot(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8_lossy(&bytes).to_string()
    });
    canary_running(&ops, &id).await;
    let r = ops
        .app
        .post_empty(&format!("/v1/rollouts/{id}/abort"))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let aborted = wait_status(&ops.app, &id, "aborted").await;
    assert_eq!(
        aborted["waves"][0]["racks"][0]["task_status"], "succeeded",
        "{aborted}"
    );
    assert_eq!(aborted["waves"][1]["racks"][0]["outcome"], "not_run");
    assert!(
        aborted["message"].as_str().unwrap().contains("finished"),
        "{aborted}"
    );
    assert_eq!(tasks_of(&ops, "rack-0002").await, 0);
    let text = tokio::time::timeout(Duration::from_secs(30), events)
        .await
        .expect("the event stream closes when the rollout ends")
        .unwrap();
    let docs: Vec<serde_json::Value> = text
        .split("\n\n")
        .filter(|block| block.contains("event: rollout"))
        .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert!(docs.len() >= 2, "one event per change: {text}");
    assert_eq!(docs.last().unwrap()["status"], "aborted");
    assert!(docs.iter().any(|d| d["status"] == "running"), "{text}");
}
