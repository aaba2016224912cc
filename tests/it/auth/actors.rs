//! Who acted, with Temporal running: submissions record `created_by` and an audit row; a
//! schedule's fire acts as `schedule:<name>` on its run and the tasks it creates.

use std::time::Duration;

use serde_json::json;

use crate::support::fixtures::gb200_rack;
use crate::support::ops::Ops;

/// With Temporal: submissions record `created_by` and an audit row; a schedule's fire acts as
/// `schedule:<name>` on its run and the tasks it creates.
async fn submissions_and_schedule_fires_name_who_acted(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    // The schedule's own rack: rack 1 is busy with the submission above.
    ops.app.create_rack(&gb200_rack(2, 1)).await;
    let submitted = ops
        .app
        .post(
            "/v1/operations/power-on",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}}),
        )
        .await;
    assert_eq!(submitted.status, 202, "{}", submitted.text);
    let task_id = submitted.body["task_ids"][0].as_str().unwrap().to_string();
    let task = ops.app.get(&format!("/v1/tasks/{task_id}")).await;
    assert_eq!(
        task.body["created_by"], "anonymous",
        "FLOW_AUTH unset in tests means none"
    );
    let log = ops
        .app
        .get(&format!("/v1/audit?resource=task:{task_id}"))
        .await;
    assert_eq!(log.body["items"][0]["actor"], "anonymous", "{}", log.text);
    assert_eq!(log.body["items"][0]["route"], "/v1/operations/power-on");

    let schedule = ops
        .app
        .post(
            "/v1/task-schedules",
            &json!({"name": "nightly-on", "spec": {"type": "interval", "spec": "1h"},
                "operation": {"kind": "power_on"}, "target_spec": {"racks": [{"name": "rack-0002"}]}}),
        )
        .await;
    assert_eq!(schedule.status, 201, "{}", schedule.text);
    let id = schedule.body["id"].as_str().unwrap().to_string();
    use sea_orm::EntityTrait;
    flow::db::entities::task_schedules::Entity::update_many()
        .col_expr(
            flow::db::entities::task_schedules::Column::NextRunAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - chrono::Duration::minutes(1)),
        )
        .exec(&ops.app.db.db)
        .await
        .unwrap();
    let service = flow::schedules::ScheduleService::new(
        ops.state.db().clone(),
        ops.state.task_service(),
        ops.state.clock(),
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let fired = loop {
        service.tick().await.unwrap();
        let log = ops.app.get("/v1/audit?actor=schedule:nightly-on").await;
        let items = log.body["items"].as_array().unwrap().clone();
        if items.iter().any(|e| e["resource_type"] == "task") {
            break items;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no fire: {}",
            log.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        fired
            .iter()
            .any(|e| e["resource_type"] == "schedule" && e["resource_id"] == id.as_str())
    );
    let task = fired.iter().find(|e| e["resource_type"] == "task").unwrap();
    let task = ops
        .app
        .get(&format!(
            "/v1/tasks/{}",
            task["resource_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(task.body["created_by"], "schedule:nightly-on");
}

crate::ops_on_both_backends!(submissions_and_schedule_fires_name_who_acted);
