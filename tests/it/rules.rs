//! Operation rules: validation, versions and defaults, rack associations, resolution order,
//! dry-run plans, and rules driving real runs (parallelism, order, every built-in rule).

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request};
use flow::domain::ComponentType;
use serde_json::{Value, json};

use crate::support::fixtures::gb200_rack;
use crate::support::ops::{Ops, OpsBuilder};
use crate::support::{TestApp, TestResponse};
use crate::{on_both_backends, ops_on_both_backends};

mod api {
    use super::*;
    on_both_backends!(
        a_bad_rule_is_refused_with_every_problem_named,
        rules_keep_every_version_and_one_default_per_operation,
        racks_get_their_own_rule_per_operation,
        dry_runs_resolve_request_then_rack_then_default_then_built_in_and_create_nothing,
    );
}

mod runs {
    use super::*;
    ops_on_both_backends!(
        max_parallel_two_never_has_more_than_two_components_in_flight: |b: OpsBuilder| b.sim(|s| {
            s.latency = Duration::from_millis(500);
        }),
        sleep_and_verify_actions_run_in_the_order_the_rule_lists_them,
        a_dry_run_plan_is_what_then_runs,
        a_stage_that_continues_on_failure_lets_later_stages_run: |b: OpsBuilder| b.sim(|s| {
            s.fail_serials.insert("SN-0001-compute-01".into());
        }),
        every_built_in_rule_runs_to_success_against_the_sim: |b: OpsBuilder| b.sim(|s| {
            s.firmware_duration = Duration::from_millis(200);
        }),
        a_plan_no_configured_manager_can_serve_is_refused_before_any_task: |b: OpsBuilder| b
            .unmanaged(ComponentType::Compute),
        a_power_operation_psm_cannot_send_is_refused_before_any_task: |b: OpsBuilder| b.with_psm(),
    );
}

fn power_on_rule(name: &str, stages: Value) -> Value {
    json!({"name": name, "operation": "power_on", "stages": stages})
}

fn compute_stage(max_parallel: u32) -> Value {
    json!({"component_types": ["compute"], "max_parallel": max_parallel, "timeout": "1m",
           "retry": {"max_attempts": 1},
           "actions": [{"action": "power_control"},
                       {"action": "verify_power", "expect": "on", "timeout": "30s", "poll_interval": "1s"}]})
}

async fn put(app: &TestApp, path: &str, body: &Value) -> TestResponse {
    app.call(Method::PUT, path, Some(body), &[]).await
}

async fn create_rule(app: &TestApp, body: &Value) -> Value {
    let r = app.post("/v1/operation-rules", body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

fn id(v: &Value) -> &str {
    v["id"].as_str().unwrap()
}

async fn a_bad_rule_is_refused_with_every_problem_named(app: TestApp) {
    let bad = json!({
        "name": "broken", "operation": "power_on",
        "stages": [
            {"component_types": ["compute", "gpu"], "max_parallel": 0, "timeout": "10 minutes",
             "actions": [{"action": "reboot"}, {"action": "sleep", "duration": "-5s"}]},
            {"component_types": [], "actions": [
                {"action": "verify_power", "expect": "maybe", "timeout": "1m", "poll_interval": "2m"}]},
            {"component_types": ["nvswitch"], "timeout": "30s", "retry": {"max_attempts": 0, "backoff_coefficient": 0.5},
             "actions": [{"action": "firmware_wait", "timeout": "5m", "poll_interval": "10s"}]},
        ]
    });
    let r = app.post("/v1/operation-rules", &bad).await;
    r.assert_problem(400, "invalid_input");
    let fields = r.error_fields();
    for expected in [
        "stages[0].component_types[1]",
        "stages[0].max_parallel",
        "stages[0].timeout",
        "stages[0].actions[0].action",
        "stages[0].actions[1].duration",
        "stages[1].component_types",
        "stages[1].actions[0].expect",
        "stages[1].actions[0].poll_interval",
        "stages[2].retry.max_attempts",
        "stages[2].retry.backoff_coefficient",
        "stages[2].actions[0]",
    ] {
        assert!(
            fields.contains(&expected.to_string()),
            "{expected} not in {fields:?}"
        );
    }
    for (body, field) in [
        (
            json!({"name": "x", "operation": "power_on", "stages": []}),
            "stages",
        ),
        (
            json!({"name": "x", "operation": "launch", "stages": [compute_stage(1)]}),
            "operation",
        ),
        (
            json!({"operation": "power_on", "stages": [compute_stage(1)]}),
            "name",
        ),
        (
            json!({"name": "x", "operation": "power_on", "version": "v2", "stages": [compute_stage(1)]}),
            "version",
        ),
        (
            json!({"name": "x", "operation": "power_on", "colour": "red", "stages": [compute_stage(1)]}),
            "colour",
        ),
        // A stage shorter than what its actions may wait.
        (
            power_on_rule(
                "x",
                json!([{"component_types": ["compute"], "timeout": "10s",
            "actions": [{"action": "sleep", "duration": "20s"}]}]),
            ),
            "stages[0].timeout",
        ),
        // A restart rule must say which power operation it sends.
        (
            json!({"name": "x", "operation": "restart", "stages": [compute_stage(1)]}),
            "stages[0].actions[0].operation",
        ),
    ] {
        let r = app.post("/v1/operation-rules", &body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
        assert!(
            r.error_fields().contains(&field.to_string()),
            "{field}: {}",
            r.text
        );
    }
    assert_eq!(app.count_rows("operation_rules").await, 0);
}

async fn rules_keep_every_version_and_one_default_per_operation(app: TestApp) {
    let yaml = "name: careful on\noperation: power_on\nis_default: true\nstages:\n  - component_types: [powershelf]\n    max_parallel: 2\n    timeout: 6m\n    actions:\n      - action: power_control\n      - {action: verify_power, expect: \"on\", timeout: 5m, poll_interval: 10s}\n";
    let r = app
        .send(
            Request::builder()
                .method(Method::POST)
                .uri("/v1/operation-rules")
                .header("content-type", "application/yaml")
                .body(Body::from(yaml))
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let first = r.body.clone();
    assert_eq!(first["version"], 1);
    assert_eq!(first["is_default"], true);
    assert_eq!(first["stages"][0]["actions"][1]["timeout"], "5m");
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/operation-rules/{}", id(&first)).as_str())
    );

    let mut changed = power_on_rule("careful on v2", json!([compute_stage(3)]));
    changed["is_default"] = json!(true);
    let r = put(
        &app,
        &format!("/v1/operation-rules/{}", id(&first)),
        &changed,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["version"], 2);
    let r = app
        .get(&format!("/v1/operation-rules/{}/versions", id(&first)))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let versions: Vec<i64> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, vec![2, 1]);
    assert_eq!(
        r.body["items"][1]["stages"][0]["component_types"],
        json!(["powershelf"])
    );
    assert_eq!(r.body["items"][0]["stages"][0]["max_parallel"], 3);

    // The operation of a rule never changes.
    let mut other_op = changed.clone();
    other_op["operation"] = json!("power_off");
    let r = put(
        &app,
        &format!("/v1/operation-rules/{}", id(&first)),
        &other_op,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);

    // One default per operation: a second is refused, switching is explicit.
    let mut second = power_on_rule("fast on", json!([compute_stage(9)]));
    second["is_default"] = json!(true);
    let r = app.post("/v1/operation-rules", &second).await;
    r.assert_problem(409, "default_exists");
    second["is_default"] = json!(false);
    let second = create_rule(&app, &second).await;
    let r = app
        .post_empty(&format!("/v1/operation-rules/{}/default", id(&second)))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["is_default"], true);
    let r = app
        .get(&format!("/v1/operation-rules/{}", id(&first)))
        .await;
    assert_eq!(r.body["is_default"], false);
    let r = app
        .get("/v1/operation-rules?operation=power_on&is_default=true")
        .await;
    assert_eq!(r.body["total"], 1, "{}", r.text);
    assert_eq!(r.body["items"][0]["id"], second["id"]);
    let r = app
        .delete(&format!("/v1/operation-rules/{}/default", id(&second)))
        .await;
    assert_eq!(r.body["is_default"], false);

    // Built-in rules: one per operation, including warm and cold reset.
    let r = app.get("/v1/operation-rules?builtin=true").await;
    assert_eq!(r.status, 200);
    let ops: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["operation"].as_str().unwrap())
        .collect();
    for op in [
        "power_on",
        "power_off",
        "force_power_off",
        "restart",
        "force_restart",
        "warm_reset",
        "cold_reset",
        "bmc_reset",
        "upgrade",
        "bring_up",
        "ingest",
    ] {
        assert!(ops.contains(&op), "{op} missing from {ops:?}");
    }
    assert!(
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["builtin"] == true && r["id"].is_null())
    );

    let r = app
        .delete(&format!("/v1/operation-rules/{}", id(&first)))
        .await;
    assert_eq!(r.status, 204);
    app.get(&format!("/v1/operation-rules/{}", id(&first)))
        .await
        .assert_problem(404, "not_found");
    app.delete(&format!("/v1/operation-rules/{}", id(&first)))
        .await
        .assert_problem(404, "not_found");
    assert_eq!(app.count_rows("operation_rule_versions").await, 1);
}

async fn racks_get_their_own_rule_per_operation(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(1, 2)).await;
    let rack_id = id(&rack).to_string();
    let rule = create_rule(&app, &power_on_rule("rack on", json!([compute_stage(2)]))).await;
    let path = format!("/v1/racks/{rack_id}/operation-rules/power_on");
    let r = put(&app, &path, &json!({"rule_id": rule["id"]})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = put(&app, &path, &json!({"rule_id": rule["id"]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // A rule is associated for its own operation only; unknown rules, racks, operations refused.
    let r = put(
        &app,
        &format!("/v1/racks/{rack_id}/operation-rules/power_off"),
        &json!({"rule_id": rule["id"]}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.error_fields(), vec!["rule_id".to_string()]);
    let r = put(&app, &path, &json!({"rule_id": uuid::Uuid::now_v7()})).await;
    r.assert_problem(422, "rule_not_found");
    let r = put(
        &app,
        &format!(
            "/v1/racks/{}/operation-rules/power_on",
            uuid::Uuid::now_v7()
        ),
        &json!({"rule_id": rule["id"]}),
    )
    .await;
    r.assert_problem(404, "not_found");
    let r = put(
        &app,
        &format!("/v1/racks/{rack_id}/operation-rules/launch"),
        &json!({"rule_id": rule["id"]}),
    )
    .await;
    assert_eq!(r.error_fields(), vec!["operation".to_string()]);

    let r = app
        .get(&format!("/v1/racks/{rack_id}/operation-rules"))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["items"][0]["rule_id"], rule["id"]);
    assert_eq!(app.delete(&path).await.status, 204);
    assert_eq!(app.delete(&path).await.status, 204);
    // Deleting a rule removes its associations.
    put(&app, &path, &json!({"rule_id": rule["id"]})).await;
    assert_eq!(
        app.delete(&format!("/v1/operation-rules/{}", id(&rule)))
            .await
            .status,
        204
    );
    let r = app
        .get(&format!("/v1/racks/{rack_id}/operation-rules"))
        .await;
    assert_eq!(r.body["items"], json!([]));
}

async fn dry_run_source(app: &TestApp, body: &Value) -> Value {
    let r = app.post("/v1/operations/power-on?dry_run=true", body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["dry_run"], true);
    r.body["racks"][0]["rule"].clone()
}

async fn dry_runs_resolve_request_then_rack_then_default_then_built_in_and_create_nothing(
    app: TestApp,
) {
    let rack = app.create_rack(&gb200_rack(1, 2)).await;
    let rack_id = id(&rack).to_string();
    let body = json!({"target_spec": {"racks": [{"name": "rack-0001"}]}});
    let rule = dry_run_source(&app, &body).await;
    assert_eq!(rule["source"], "builtin");
    assert_eq!(rule["name"], "built-in power on");

    let default = create_rule(
        &app,
        &json!({"name": "site default", "operation": "power_on", "is_default": true,
        "stages": [compute_stage(4)]}),
    )
    .await;
    let rule = dry_run_source(&app, &body).await;
    assert_eq!(
        (rule["source"].as_str(), &rule["id"]),
        (Some("default"), &default["id"])
    );

    let for_rack = create_rule(&app, &power_on_rule("rack rule", json!([compute_stage(1)]))).await;
    let r = put(
        &app,
        &format!("/v1/racks/{rack_id}/operation-rules/power_on"),
        &json!({"rule_id": for_rack["id"]}),
    )
    .await;
    assert_eq!(r.status, 201);
    let rule = dry_run_source(&app, &body).await;
    assert_eq!(
        (rule["source"].as_str(), &rule["id"]),
        (Some("rack"), &for_rack["id"])
    );

    let asked = create_rule(&app, &power_on_rule("asked for", json!([compute_stage(2)]))).await;
    let mut with_rule = body.clone();
    with_rule["rule_id"] = asked["id"].clone();
    let r = app
        .post("/v1/operations/power-on?dry_run=true", &with_rule)
        .await;
    let plan = &r.body["racks"][0];
    assert_eq!(plan["rule"]["source"], "request");
    assert_eq!(plan["rule"]["version"], 1);
    assert_eq!(plan["outcome"], "start");
    assert_eq!(plan["stages"].as_array().unwrap().len(), 1);
    assert_eq!(plan["stages"][0]["max_parallel"], 2);
    assert_eq!(plan["stages"][0]["components"].as_array().unwrap().len(), 2);
    assert!(
        plan["workflow_timeout_seconds"].as_f64().unwrap()
            > plan["max_duration_seconds"].as_f64().unwrap()
    );

    // A rule for another operation, or one that does not exist, is refused before anything runs.
    let off = create_rule(
        &app,
        &json!({"name": "off", "operation": "power_off", "stages": [
        {"component_types": ["compute"], "actions": [{"action": "power_control"}]}]}),
    )
    .await;
    with_rule["rule_id"] = off["id"].clone();
    let r = app
        .post("/v1/operations/power-on?dry_run=true", &with_rule)
        .await;
    assert_eq!(r.error_fields(), vec!["rule_id".to_string()], "{}", r.text);
    with_rule["rule_id"] = json!(uuid::Uuid::now_v7());
    app.post("/v1/operations/power-on", &with_rule)
        .await
        .assert_problem(422, "rule_not_found");
    assert_eq!(app.count_rows("tasks").await, 0);
}

/// The most calls of `op` in flight at one instant: at each call's start, the calls under way.
fn in_flight(events: &[flow::components::providers::sim::SimEvent], op: &str) -> usize {
    let calls: Vec<_> = events.iter().filter(|e| e.op == op).collect();
    calls
        .iter()
        .map(|c| {
            calls
                .iter()
                .filter(|o| o.started <= c.started && c.started < o.at)
                .count()
        })
        .max()
        .unwrap_or(0)
}

async fn max_parallel_two_never_has_more_than_two_components_in_flight(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 8)).await;
    let rule = create_rule(
        &ops.app,
        &power_on_rule(
            "two at a time",
            json!([
        {"component_types": ["compute"], "max_parallel": 2, "timeout": "1m",
         "actions": [{"action": "power_control"}]}]),
        ),
    )
    .await;
    let r = ops
        .operate(
            "power-on",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "rule_id": rule["id"]}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(task["rule"]["id"], rule["id"]);
    assert_eq!(task["rule"]["version"], 1);
    assert_eq!(task["rule"]["source"], "request");
    let events = ops.sim.events();
    assert_eq!(events.iter().filter(|e| e.op == "power_on").count(), 8);
    assert_eq!(in_flight(&events, "power_on"), 2, "{events:?}");
}

async fn sleep_and_verify_actions_run_in_the_order_the_rule_lists_them(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let rule = create_rule(&ops.app, &json!({"name": "slow restart", "operation": "restart", "stages": [
        {"component_types": ["compute"], "timeout": "2m", "actions": [
            {"action": "power_control", "operation": "power_off"},
            {"action": "sleep", "duration": "1500ms"},
            {"action": "verify_power", "expect": "off", "timeout": "30s", "poll_interval": "1s"},
            {"action": "power_control", "operation": "power_on"},
            {"action": "verify_power", "expect": "on", "timeout": "30s", "poll_interval": "1s"}]}]})).await;
    let r = ops
        .operate(
            "power-reset",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "rule_id": rule["id"]}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(
        task["stages"][0]["actions"],
        json!([
            "power_off",
            "sleep",
            "verify_power_off",
            "power_on",
            "verify_power_on"
        ])
    );
    let events = ops.sim.events();
    let ops_seen: Vec<&str> = events.iter().map(|e| e.op).collect();
    assert_eq!(
        ops_seen,
        vec!["power_off", "power_status", "power_on", "power_status"]
    );
    // The status check waited for the sleep after the power-off was answered.
    assert!(events[1].started.duration_since(events[0].at) >= Duration::from_millis(1500));
}

fn stage_shape(
    stages: &Value,
    components_key: &str,
    id_key: &str,
) -> Vec<(u64, String, Vec<String>)> {
    stages
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let mut ids: Vec<String> = s[components_key]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c[id_key].as_str().unwrap().to_string())
                .collect();
            ids.sort();
            (
                s["number"].as_u64().unwrap(),
                s["name"].as_str().unwrap().to_string(),
                ids,
            )
        })
        .collect()
}

async fn a_dry_run_plan_is_what_then_runs(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 3)).await;
    let body = json!({"target_spec": {"racks": [{"name": "rack-0001", "component_types": ["compute", "nvswitch"]}]}});
    let r = ops
        .app
        .post("/v1/operations/power-off?dry_run=true", &body)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let planned = r.body["racks"][0].clone();
    assert_eq!(ops.app.count_rows("tasks").await, 0);
    let r = ops.operate("power-off", &body).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(
        stage_shape(&planned["stages"], "components", "id"),
        stage_shape(&task["stages"], "components", "component_id")
    );
    assert_eq!(task["rule"], planned["rule"]);
    let actions: Vec<Value> = planned["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["actions"].clone())
        .collect();
    assert_eq!(
        actions[0][0],
        json!({"action": "power_control", "operation": "power_off"})
    );
}

async fn a_stage_that_continues_on_failure_lets_later_stages_run(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    let rule = create_rule(&ops.app, &power_on_rule("keep going", json!([
        {"component_types": ["compute"], "max_parallel": 2, "on_failure": "continue", "retry": {"max_attempts": 1},
         "actions": [{"action": "power_control"}]},
        {"component_types": ["nvswitch"], "max_parallel": 2, "actions": [{"action": "power_control"}]}]))).await;
    let r = ops
        .operate(
            "power-on",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "rule_id": rule["id"]}),
        )
        .await;
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "failed", "{task}");
    assert!(
        task["message"]
            .as_str()
            .unwrap()
            .contains("every stage ran"),
        "{task}"
    );
    assert!(
        task["message"].as_str().unwrap().contains("r0001-gpu01"),
        "{task}"
    );
    assert_eq!(task["stages"][1]["status"], "succeeded", "{task}");
}

async fn every_built_in_rule_runs_to_success_against_the_sim(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    let rack = json!({"racks": [{"name": "rack-0001"}]});
    for (endpoint, extra, operation) in [
        ("power-on", json!({}), "power_on"),
        ("power-off", json!({}), "power_off"),
        ("power-off", json!({"forced": true}), "force_power_off"),
        ("power-reset", json!({}), "restart"),
        ("power-reset", json!({"forced": true}), "force_restart"),
        ("power-reset", json!({"mode": "warm"}), "warm_reset"),
        ("power-reset", json!({"mode": "cold"}), "cold_reset"),
        ("power-reset", json!({"mode": "bmc"}), "bmc_reset"),
        (
            "firmware-upgrade",
            json!({"target_version": "9.9.9"}),
            "upgrade",
        ),
        ("bring-up", json!({}), "bring_up"),
        ("ingest", json!({}), "ingest"),
    ] {
        let mut body = extra.clone();
        body["target_spec"] = rack.clone();
        let r = ops.operate(endpoint, &body).await;
        assert_eq!(r.status, 202, "{endpoint}: {}", r.text);
        let task = ops
            .wait_task(r.body["task_ids"][0].as_str().unwrap(), |t| {
                matches!(
                    t["status"].as_str(),
                    Some("succeeded" | "failed" | "cancelled")
                )
            })
            .await;
        assert_eq!(task["status"], "succeeded", "{operation}: {task}");
        assert_eq!(task["operation"], operation);
        assert_eq!(task["rule"]["source"], "builtin", "{task}");
        assert!(!task["stages"].as_array().unwrap().is_empty());
    }
    let r = ops
        .operate(
            "power-reset",
            &json!({"target_spec": rack, "mode": "warm", "forced": true}),
        )
        .await;
    assert_eq!(r.error_fields(), vec!["forced".to_string()]);
}

async fn a_plan_no_configured_manager_can_serve_is_refused_before_any_task(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    let whole = json!({"target_spec": {"racks": [{"name": "rack-0001"}]}});
    let r = ops
        .app
        .post("/v1/operations/power-on?dry_run=true", &whole)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let rack = &r.body["racks"][0];
    assert_eq!(rack["outcome"], "reject", "{rack}");
    assert_eq!(rack["reason"], "unsupported");
    let gaps: Vec<&str> = rack["unsupported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap())
        .collect();
    assert!(!gaps.is_empty());
    assert!(
        gaps.iter()
            .all(|g| g.contains("on compute") && g.contains("no manager is configured for compute")),
        "{gaps:?}"
    );

    let r = ops.operate("power-on", &whole).await;
    r.assert_problem(422, "unsupported");
    assert!(r.text.contains("rack-0001"), "{}", r.text);
    assert!(
        r.text.contains("power_on on compute needs power control"),
        "{}",
        r.text
    );
    assert_eq!(ops.app.count_rows("tasks").await, 0, "nothing was created");

    // Narrowed to what is managed, the same request runs.
    let managed = json!({"target_spec": {"racks": [{"name": "rack-0001", "component_types": ["powershelf", "nvswitch"]}]}});
    let r = ops.operate("power-on", &managed).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{task}");
}

async fn a_power_operation_psm_cannot_send_is_refused_before_any_task(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let rule = create_rule(
        &ops.app,
        &json!({"name": "reset shelves in place", "operation": "restart", "stages": [
            {"component_types": ["powershelf"], "actions": [{"action": "power_control", "operation": "restart"}]}]}),
    )
    .await;
    let body = json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "rule_id": rule["id"]});
    let r = ops.operate("power-reset", &body).await;
    r.assert_problem(422, "unsupported");
    assert!(
        r.text
            .contains("the powershelf manager (psm) does not offer it"),
        "{}",
        r.text
    );
    assert_eq!(ops.app.count_rows("tasks").await, 0);
    // The built-in restart turns shelves off and on, which PSM can do.
    let builtin = json!({"target_spec": {"racks": [{"name": "rack-0001"}]}});
    let r = ops
        .app
        .post("/v1/operations/power-reset?dry_run=true", &builtin)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["racks"][0]["outcome"], "start", "{}", r.text);
    assert!(r.body["racks"][0].get("unsupported").is_none());
}
