//! The fair queue: a task waiting for a rack is not overtaken by a later submission that would
//! conflict with it (that one queues behind it, or is refused with `reject`), one that
//! conflicts with nothing still starts, and waiting tasks start in arrival order.

use std::time::Duration;

use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::fixtures::{component_id, gb200_rack};
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    a_waiting_task_is_not_overtaken_by_a_later_conflicting_submission: |b: OpsBuilder| b.sim(|s| {
        // Tray 0 answers slowly: whatever touches it stays running until cancelled.
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
    a_hold_set_while_a_task_waits_refuses_it_when_it_would_start_and_an_override_is_audited: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
    a_submission_that_queues_starts_a_task_whose_blocker_ended_unseen: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
);

/// Writes a task's status straight to its row, as no Flow path does: an end that moved no
/// queue.
async fn write_status(ops: &Ops, id: &str, status: &str) {
    use flow::db::entities::tasks;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    let id: uuid::Uuid = id.parse().unwrap();
    tasks::Entity::update_many()
        .col_expr(
            tasks::Column::Status,
            sea_orm::sea_query::Expr::value(status),
        )
        .filter(tasks::Column::Id.eq(id))
        .exec(&ops.app.db.db)
        .await
        .unwrap();
}

/// A task's end reads whether anything waits on its rack without the rack's lock, so an end
/// that commits while a submission is queueing a task behind it can miss that task; the
/// submission then asks again once its own commit is done. Here the missed end is written
/// straight to the row (A ends, B stays waiting, nothing moves it): the next submission that
/// queues on the rack (C, behind B) starts B.
async fn a_submission_that_queues_starts_a_task_whose_blocker_ended_unseen(ops: Ops) {
    let rack = ops.app.create_rack(&gb200_rack(1, 2)).await;
    let t0 = component_id(&rack, "r0001-gpu00");
    let a = task_id(&ops.operate("power-on", &on(&[&t0], "reject")).await);
    ops.wait_task(&a, |t| t["status"] == "running").await;
    let b = task_id(&ops.operate("power-off", &on(&[&t0], "queue")).await);
    write_status(&ops, &a, "succeeded").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let still = ops.app.get(&format!("/v1/tasks/{b}")).await.body;
    assert_eq!(still["status"], "waiting", "nothing else moves B: {still}");

    let c = task_id(&ops.operate("power-off", &on(&[&t0], "queue")).await);
    let started = ops
        .wait_task_within(&b, Duration::from_secs(10), |t| t["status"] != "waiting")
        .await;
    assert!(
        matches!(started["status"].as_str(), Some("pending" | "running")),
        "{started}"
    );
    let queued = ops.app.get(&format!("/v1/tasks/{c}")).await.body;
    assert_eq!(queued["status"], "waiting", "C waits behind B: {queued}");

    // A's run still holds the slow tray: back to running, so its cancel stops the run.
    write_status(&ops, &a, "running").await;
    for id in [&c, &b, &a] {
        ops.app.post_empty(&format!("/v1/tasks/{id}/cancel")).await;
        ops.wait_end(id).await;
    }
}

/// Issue 27: a task queued before a hold appeared is refused when it would start; an admin's
/// override proceeds and its audit entry names every hold it went past.
async fn a_hold_set_while_a_task_waits_refuses_it_when_it_would_start_and_an_override_is_audited(
    ops: Ops,
) {
    let rack = ops.app.create_rack(&gb200_rack(1, 2)).await;
    let tray = |name: &str| component_id(&rack, name);
    let (t0, t1) = (tray("r0001-gpu00"), tray("r0001-gpu01"));
    let a = task_id(&ops.operate("power-on", &on(&[&t0], "reject")).await);
    ops.wait_task(&a, |t| t["status"] == "running").await;
    let b = task_id(&ops.operate("power-off", &on(&[&t0], "queue")).await);
    // The job starts on tray 0 while B waits.
    let hold = ops
        .app
        .post(
            "/v1/holds",
            &json!({"target": {"component": {"id": t0}}, "owner": "slurm", "reason": "job 4711"}),
        )
        .await;
    assert_eq!(hold.status, 201, "{}", hold.text);
    let hold_id = hold.body["id"].as_str().unwrap().to_string();
    let cancel = ops.app.post_empty(&format!("/v1/tasks/{a}/cancel")).await;
    assert_eq!(cancel.status, 200, "{}", cancel.text);
    let refused = ops.wait_end(&b).await;
    assert_eq!(refused["status"], "cancelled", "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains("held") && message.contains(&hold_id),
        "{refused}"
    );

    // An admin (FLOW_AUTH=none is admin) overrides: the task is created, the audit names the hold.
    let mut body = on(&[&t1, &t0], "reject");
    body["override_readiness_check"] = json!(true);
    let accepted = ops.operate("power-off", &body).await;
    let c = task_id(&accepted);
    let request = accepted.body["request_id"].as_str().unwrap().to_string();
    let log = ops
        .app
        .get(&format!("/v1/audit?resource=readiness_override:{request}"))
        .await;
    let entry = &log.body["items"][0];
    assert_eq!(
        entry["after"]["overridden"][0]["hold_id"],
        hold_id.as_str(),
        "{}",
        log.text
    );
    ops.app.post_empty(&format!("/v1/tasks/{c}/cancel")).await;
    ops.wait_end(&c).await;
}

/// A body targeting these components, queueing or not.
fn on(ids: &[&str], strategy: &str) -> Value {
    let components: Vec<Value> = ids.iter().map(|id| json!({"id": id})).collect();
    json!({"target_spec": {"components": components}, "conflict_strategy": strategy})
}

fn task_id(r: &crate::support::TestResponse) -> String {
    assert_eq!(r.status, 202, "{}", r.text);
    r.body["task_ids"][0].as_str().unwrap().to_string()
}

async fn a_waiting_task_is_not_overtaken_by_a_later_conflicting_submission(ops: Ops) {
    let rack = ops.app.create_rack(&gb200_rack(1, 3)).await;
    let tray = |name: &str| component_id(&rack, name);
    let (t0, t1, t2) = (
        tray("r0001-gpu00"),
        tray("r0001-gpu01"),
        tray("r0001-gpu02"),
    );

    // A runs on tray 0; B (trays 0 and 1) waits for it.
    let a = task_id(&ops.operate("power-on", &on(&[&t0], "reject")).await);
    ops.wait_task(&a, |t| t["status"] == "running").await;
    let b = task_id(&ops.operate("power-off", &on(&[&t0, &t1], "queue")).await);
    let waiting = ops.app.get(&format!("/v1/tasks/{b}")).await.body;
    assert_eq!(waiting["status"], "waiting", "{waiting}");

    // C (tray 1) conflicts with nothing running, only with the waiting B: the dry run and the
    // submission both queue it behind B instead of letting it overtake.
    let plan = ops
        .app
        .post(
            "/v1/operations/power-off?dry_run=true",
            &on(&[&t1], "queue"),
        )
        .await;
    assert_eq!(plan.status, 200, "{}", plan.text);
    let planned = &plan.body["racks"][0];
    assert_eq!(planned["outcome"], "queue", "{planned}");
    assert_eq!(planned["conflicts"][0]["task_id"], b.as_str(), "{planned}");
    assert_eq!(planned["conflicts"][0]["status"], "waiting", "{planned}");
    let c = task_id(&ops.operate("power-off", &on(&[&t1], "queue")).await);
    let queued = ops.app.get(&format!("/v1/tasks/{c}")).await.body;
    assert_eq!(queued["status"], "waiting", "{queued}");
    assert!(
        queued["message"].as_str().unwrap().contains(&b),
        "queued behind B: {queued}"
    );
    // With `reject`, the same request is refused as busy, naming B.
    let refused = ops.operate("power-off", &on(&[&t1], "reject")).await;
    refused.assert_problem(409, "rack_busy");
    assert!(refused.text.contains(&b), "{}", refused.text);

    // D (tray 2) conflicts with nothing: it starts at once and runs to the end.
    let d = task_id(&ops.operate("power-off", &on(&[&t2], "queue")).await);
    assert_eq!(ops.wait_end(&d).await["status"], "succeeded");

    // A ends: B starts (first come, first served); C still waits, behind B.
    ops.app.post_empty(&format!("/v1/tasks/{a}/cancel")).await;
    ops.wait_task(&b, |t| t["status"] != "waiting").await;
    let still = ops.app.get(&format!("/v1/tasks/{c}")).await.body;
    assert_eq!(still["status"], "waiting", "{still}");

    // B ends: now C starts and runs.
    ops.app.post_empty(&format!("/v1/tasks/{b}/cancel")).await;
    assert_eq!(ops.wait_end(&c).await["status"], "succeeded");
    assert_eq!(ops.wait_end(&a).await["status"], "cancelled");
    assert_eq!(ops.wait_end(&b).await["status"], "cancelled");
}
