//! Tasks: listing, idempotent submission, the live event stream, shortcuts, firmware and ingest
//! through PSM, reconciliation with Temporal, and the reconciler's lease.

use std::time::Duration;

use axum::http::Method;
use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::fixtures::{gb200_rack, mac};
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    an_idempotency_key_returns_the_same_tasks_and_refuses_a_different_body,
    the_event_stream_sends_every_change_until_the_task_ends,
    rack_shortcuts_and_task_filters_work_together,
    firmware_upgrade_and_ingest_reach_power_shelves_through_psm: |b: OpsBuilder| b.with_psm(),
    a_task_whose_workflow_was_terminated_is_reconciled_as_failed: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
    a_task_whose_workflow_was_cancelled_outside_flow_is_cancelled_with_a_temporal_audit_row: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
    a_cancel_through_flow_is_audited_once_under_its_caller_not_temporal: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
    the_reconciler_lease_is_held_by_one_process_at_a_time,
    a_bring_up_powers_the_rack_on_then_brings_firmware_to_the_desired_version: |b: OpsBuilder| b.sim(|s| {
        s.firmware_duration = Duration::from_millis(200);
    }),
    a_queued_task_expires_when_the_rack_stays_busy_and_a_waiting_one_cancels_at_once: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
    step_reports_that_race_keep_every_line_and_never_reopen_a_finished_step: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_serials.insert("SN-0001-compute-01".into());
        s.slow_latency = Duration::from_secs(60);
    }),
);

fn reconciler(ops: &Ops) -> std::sync::Arc<flow::tasks::TaskService> {
    reconciler_at(ops, std::sync::Arc::new(flow::clock::SystemClock))
}

/// Another process's task service on the test's database and task queue, reading `clock`.
fn reconciler_at(
    ops: &Ops,
    clock: std::sync::Arc<dyn flow::clock::Clock>,
) -> std::sync::Arc<flow::tasks::TaskService> {
    let engine = flow::workflows::TemporalEngine::new(ops.client.clone(), ops.task_queue.clone());
    let app = flow::app::App::builder(ops.app.db.db.clone(), flow::config::Config::default())
        .engines(std::sync::Arc::new(engine))
        .clock(clock)
        .build();
    app.state().task_service()
}

fn rack(name: &str) -> Value {
    json!({"target_spec": {"racks": [{"name": name}]}})
}

async fn an_idempotency_key_returns_the_same_tasks_and_refuses_a_different_body(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let headers = [("idempotency-key", "power-on-rack-1")];
    let first = ops
        .app
        .call(
            Method::POST,
            "/v1/operations/power-on",
            Some(&rack("rack-0001")),
            &headers,
        )
        .await;
    assert_eq!(first.status, 202, "{}", first.text);
    let again = ops
        .app
        .call(
            Method::POST,
            "/v1/operations/power-on",
            Some(&rack("rack-0001")),
            &headers,
        )
        .await;
    assert_eq!(again.status, 202, "{}", again.text);
    assert_eq!(
        again.body, first.body,
        "a retried request gets the first answer"
    );
    assert_eq!(ops.app.count_rows("tasks").await, 1);
    let mut other = rack("rack-0001");
    other["description"] = json!("something else");
    ops.app
        .call(
            Method::POST,
            "/v1/operations/power-on",
            Some(&other),
            &headers,
        )
        .await
        .assert_problem(422, "idempotency_key_reused");
    ops.wait_end(first.body["task_ids"][0].as_str().unwrap())
        .await;
    assert_eq!(
        ops.app.get("/readyz").await.status,
        200,
        "database and Temporal answer"
    );
}

async fn the_event_stream_sends_every_change_until_the_task_ends(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    let r = ops.operate("power-on", &rack("rack-0001")).await;
    let id = r.body["task_ids"][0].as_str().unwrap().to_string();
    // The stream ends by itself when the task does; reading it whole proves that.
    let response = tokio::time::timeout(
        Duration::from_secs(60),
        ops.app.get(&format!("/v1/tasks/{id}/events")),
    )
    .await
    .expect("the stream ends");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let events: Vec<Value> = response
        .text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).expect("event data is a task"))
        .collect();
    assert!(events.len() >= 2, "{}", response.text);
    assert!(response.text.contains("event: task"));
    assert_eq!(events.last().unwrap()["status"], "succeeded");
    assert!(events.iter().all(|e| e["id"] == id.as_str()));
    ops.app
        .get(&format!("/v1/tasks/{}/events", uuid::Uuid::new_v4()))
        .await
        .assert_problem(404, "not_found");
}

async fn rack_shortcuts_and_task_filters_work_together(ops: Ops) {
    let created = ops.app.create_rack(&gb200_rack(1, 1)).await;
    ops.app.create_rack(&gb200_rack(2, 1)).await;
    let rack_id = created["id"].as_str().unwrap();
    let on = ops
        .app
        .patch(
            &format!("/v1/racks/{rack_id}/power"),
            &json!({"state": "on"}),
        )
        .await;
    assert_eq!(on.status, 202, "{}", on.text);
    let on_id = on.body["task_ids"][0].as_str().unwrap().to_string();
    assert_eq!(ops.wait_end(&on_id).await["status"], "succeeded");
    let cycle = ops
        .app
        .patch(
            &format!("/v1/racks/{rack_id}/power"),
            &json!({"state": "cycle"}),
        )
        .await;
    let cycle_id = cycle.body["task_ids"][0].as_str().unwrap().to_string();
    let cycled = ops.wait_end(&cycle_id).await;
    assert_eq!(cycled["status"], "succeeded", "{cycled}");
    assert_eq!(cycled["operation"], "restart");
    assert_eq!(
        cycled["stages"].as_array().unwrap().len(),
        6,
        "off in three stages, on in three"
    );
    ops.app
        .patch(
            &format!("/v1/racks/{rack_id}/power"),
            &json!({"state": "sideways"}),
        )
        .await
        .assert_problem(400, "invalid_input");
    ops.app
        .patch(
            &format!("/v1/racks/{}/power", uuid::Uuid::new_v4()),
            &json!({"state": "on"}),
        )
        .await
        .assert_problem(400, "invalid_input");

    let other = ops.operate("power-off", &rack("rack-0002")).await;
    ops.wait_end(other.body["task_ids"][0].as_str().unwrap())
        .await;
    let listed = ops.app.get("/v1/tasks?limit=2&count=exact").await;
    assert_eq!(listed.body["total"], 3);
    let newest: Vec<&str> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["operation"].as_str().unwrap())
        .collect();
    assert_eq!(newest, vec!["power_off", "restart"], "newest first");
    // Tasks name their rack, in lists and when read one by one.
    let names: Vec<&str> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["rack_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["rack-0002", "rack-0001"]);
    assert_eq!(cycled["rack_name"], "rack-0001");
    let next = listed.body["next_cursor"].as_str().unwrap();
    let rest = ops
        .app
        .get(&format!("/v1/tasks?limit=2&cursor={next}"))
        .await;
    assert_eq!(rest.body["items"][0]["id"], on_id.as_str());
    assert_eq!(
        ops.app
            .get(&format!("/v1/racks/{rack_id}/tasks?count=exact"))
            .await
            .body["total"],
        2
    );
    assert_eq!(
        ops.app
            .get(&format!(
                "/v1/tasks?rack_id={rack_id}&status=succeeded&operation=power_on&count=exact"
            ))
            .await
            .body["total"],
        1
    );
    assert_eq!(
        ops.app
            .get("/v1/tasks?active_only=true&count=exact")
            .await
            .body["total"],
        0
    );
    let tray = created["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "compute")
        .unwrap();
    assert_eq!(
        ops.app
            .get(&format!(
                "/v1/tasks?component_id={}&count=exact",
                tray["id"].as_str().unwrap()
            ))
            .await
            .body["total"],
        2
    );
    assert_eq!(
        ops.app
            .get("/v1/tasks?status=sleeping")
            .await
            .error_fields(),
        vec!["status"]
    );
    ops.app
        .post_empty(&format!("/v1/tasks/{on_id}/cancel"))
        .await
        .assert_problem(409, "not_cancellable");
}

async fn firmware_upgrade_and_ingest_reach_power_shelves_through_psm(ops: Ops) {
    let psm = ops.psm.as_ref().unwrap();
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let shelf = mac(1, 4, 0);
    let ingest = ops.operate("ingest", &rack("rack-0001")).await;
    assert_eq!(
        ops.wait_end(ingest.body["task_ids"][0].as_str().unwrap())
            .await["status"],
        "succeeded"
    );
    assert!(
        psm.is_registered(&shelf),
        "ingest registered the shelf with PSM"
    );
    let registration = psm
        .registrations()
        .into_iter()
        .find(|r| r.pmc_mac_address == shelf)
        .expect("a registration per shelf");
    assert_eq!(
        registration.pmc_mac_address, shelf,
        "the payload is built from the inventory"
    );

    let body = json!({"target_spec": {"racks": [{"name": "rack-0001", "component_types": ["powershelf", "compute"]}]},
                      "target_version": {"powershelf": "1.4.2", "compute": "2.1.0"}, "sub_targets": ["pmc"]});
    let fw = ops.operate("firmware-upgrade", &body).await;
    assert_eq!(fw.status, 202, "{}", fw.text);
    let task = ops.wait_end(fw.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    // The AC-cycle stages are planned but skipped: no recipe bundle needs one.
    let kinds: Vec<&str> = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["name"].as_str().unwrap().starts_with("AC cycle"))
        .map(|s| s["component_types"][0].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["compute", "powershelf"]);
    let upgrade = psm
        .upgrades()
        .into_iter()
        .find(|u| u.pmc_mac_address == shelf)
        .expect("PSM got the upgrade");
    assert_eq!(
        upgrade.components[0]
            .upgrade_to
            .as_ref()
            .map(|v| v.version.as_str()),
        Some("1.4.2")
    );
    let tray = ops.app.get("/v1/components?type=compute").await.body["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        ops.sim.firmware_of(tray.parse().unwrap()).as_deref(),
        Some("2.1.0"),
        "each type got its own version"
    );
}

async fn a_task_whose_workflow_was_terminated_is_reconciled_as_failed(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let r = ops.operate("power-on", &rack("rack-0001")).await;
    let id = r.body["task_ids"][0].as_str().unwrap().to_string();
    ops.wait_task(&id, |t| t["status"] == "running").await;
    // From outside Flow, as an operator with the `temporal` CLI would.
    let bin = std::env::var("FLOW_TEST_TEMPORAL_BIN").unwrap_or_else(|_| "temporal".into());
    let address = crate::support::ops::temporal_address();
    let out = std::process::Command::new(bin)
        .args(["workflow", "terminate", "--namespace", "flow", "--reason"])
        .args(["operator kill", "--workflow-id", &id, "--address"])
        .arg(address.trim_start_matches("http://"))
        .output()
        .expect("run the temporal CLI");
    assert!(out.status.success(), "{out:?}");
    // Nothing in the run will ever write the row again; the reconciler notices.
    let service = reconciler(&ops);
    let fixed = service
        .reconcile("test-reconciler", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(fixed, 1);
    let task = ops.app.get(&format!("/v1/tasks/{id}")).await.body;
    assert_eq!(task["status"], "failed");
    assert!(
        task["message"].as_str().unwrap().contains("terminated"),
        "{task}"
    );
    // The audit log says who ended it and what the reconciler found.
    let audit = ops.app.get("/v1/audit?actor=temporal").await.body;
    let rows: Vec<&Value> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["resource_id"] == id.as_str())
        .collect();
    assert_eq!(rows.len(), 1, "{audit}");
    assert_eq!(rows[0]["resource_type"], "task");
    assert_eq!(rows[0]["before"]["status"], "running", "{audit}");
    assert_eq!(rows[0]["after"]["status"], "failed", "{audit}");
    assert_eq!(
        rows[0]["after"]["found"], "workflow run terminated",
        "{audit}"
    );
    assert_eq!(
        service
            .reconcile("test-reconciler", Duration::from_secs(60))
            .await
            .unwrap(),
        0,
        "a second pass has nothing to fix"
    );
}

/// Audit rows of `id` under the actor `temporal`.
async fn temporal_rows(ops: &Ops, id: &str) -> Vec<Value> {
    let audit = ops
        .app
        .get("/v1/audit?actor=temporal&limit=1000")
        .await
        .body;
    audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["resource_id"] == id)
        .cloned()
        .collect()
}

async fn a_task_whose_workflow_was_cancelled_outside_flow_is_cancelled_with_a_temporal_audit_row(
    ops: Ops,
) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let r = ops.operate("power-on", &rack("rack-0001")).await;
    let id = r.body["task_ids"][0].as_str().unwrap().to_string();
    ops.wait_task(&id, |t| t["status"] == "running").await;
    // From outside Flow, as an operator with the `temporal` CLI would.
    let bin = std::env::var("FLOW_TEST_TEMPORAL_BIN").unwrap_or_else(|_| "temporal".into());
    let address = crate::support::ops::temporal_address();
    let out = std::process::Command::new(bin)
        .args(["workflow", "cancel", "--namespace", "flow"])
        .args(["--workflow-id", &id, "--address"])
        .arg(address.trim_start_matches("http://"))
        .output()
        .expect("run the temporal CLI");
    assert!(out.status.success(), "{out:?}");
    // The run hears the cancel itself (its slow step stops) and records how it ended.
    let task = ops.wait_task(&id, |t| t["status"] == "cancelled").await;
    assert!(
        task["message"].as_str().unwrap().contains("outside Flow"),
        "{task}"
    );
    let rows = temporal_rows(&ops, &id).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["resource_type"], "task");
    assert_eq!(rows[0]["before"]["status"], "running", "{rows:?}");
    assert_eq!(rows[0]["after"]["status"], "cancelled", "{rows:?}");
    assert_eq!(
        rows[0]["after"]["found"], "workflow run cancelled",
        "{rows:?}"
    );
    let fixed = reconciler(&ops)
        .reconcile("test-reconciler", Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(fixed, 0, "nothing left for the reconciler");
    assert_eq!(temporal_rows(&ops, &id).await.len(), 1);
}

async fn a_cancel_through_flow_is_audited_once_under_its_caller_not_temporal(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let r = ops.operate("power-on", &rack("rack-0001")).await;
    let id = r.body["task_ids"][0].as_str().unwrap().to_string();
    ops.wait_task(&id, |t| t["status"] == "running").await;
    let cancelled = ops.app.post_empty(&format!("/v1/tasks/{id}/cancel")).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    let task = ops.wait_task(&id, |t| t["status"] == "cancelled").await;
    assert_eq!(task["message"], "cancelled by user", "{task}");
    // The run has ended (its own bookkeeping ran) and wrote nothing under `temporal`.
    use flow::tasks::WorkflowEngine as _;
    let engine = flow::workflows::TemporalEngine::new(ops.client.clone(), ops.task_queue.clone());
    let task_id: flow::ids::TaskId = id.parse::<uuid::Uuid>().unwrap().into();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while engine.state(task_id).await.unwrap() != Some(flow::tasks::engine::RunState::Cancelled) {
        assert!(tokio::time::Instant::now() < deadline, "the run ends");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(temporal_rows(&ops, &id).await.is_empty());
}

async fn the_reconciler_lease_is_held_by_one_process_at_a_time(ops: Ops) {
    use chrono::{Duration as Span, Utc};
    use flow::db::lease;
    let db = &ops.app.db.db;
    let now = Utc::now();
    let (a, b) = tokio::join!(
        lease::acquire(db, "job", "process-a", Span::seconds(30), now),
        lease::acquire(db, "job", "process-b", Span::seconds(30), now)
    );
    assert!(
        a.unwrap() ^ b.unwrap(),
        "exactly one of two racing processes gets the lease"
    );
    let holder = if lease::acquire(db, "job", "process-a", Span::seconds(30), now)
        .await
        .unwrap()
    {
        "process-a"
    } else {
        "process-b"
    };
    let other = if holder == "process-a" {
        "process-b"
    } else {
        "process-a"
    };
    assert!(
        !lease::acquire(db, "job", other, Span::seconds(30), now + Span::seconds(10))
            .await
            .unwrap()
    );
    assert!(
        lease::acquire(db, "job", other, Span::seconds(30), now + Span::seconds(31))
            .await
            .unwrap(),
        "an expired lease passes on"
    );
    lease::release(db, "job", other).await.unwrap();
    assert!(
        lease::acquire(
            db,
            "job",
            holder,
            Span::seconds(30),
            now + Span::seconds(32)
        )
        .await
        .unwrap(),
        "a released lease is free"
    );
}

async fn a_queued_task_expires_when_the_rack_stays_busy_and_a_waiting_one_cancels_at_once(
    ops: Ops,
) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let busy = ops.operate("power-on", &rack("rack-0001")).await;
    let busy_id = busy.body["task_ids"][0].as_str().unwrap().to_string();
    ops.wait_task(&busy_id, |t| t["status"] == "running").await;
    let mut queued = rack("rack-0001");
    queued["conflict_strategy"] = json!("queue");
    queued["queue_timeout_seconds"] = json!(1);
    let short = ops.operate("power-off", &queued).await;
    let short_id = short.body["task_ids"][0].as_str().unwrap().to_string();
    queued["queue_timeout_seconds"] = json!(3600);
    let long = ops.operate("power-off", &queued).await;
    let long_id = long.body["task_ids"][0].as_str().unwrap().to_string();
    // A reconciler whose clock is past the short queue timeout: no waiting for it to pass.
    let clock = std::sync::Arc::new(flow::clock::ManualClock::starting_now());
    clock.advance(chrono::Duration::milliseconds(1500));
    reconciler_at(&ops, clock)
        .reconcile("test-reconciler", Duration::from_secs(60))
        .await
        .unwrap();
    let expired = ops.app.get(&format!("/v1/tasks/{short_id}")).await.body;
    assert_eq!(expired["status"], "cancelled", "{expired}");
    assert!(
        expired["message"].as_str().unwrap().contains("expired"),
        "{expired}"
    );
    let cancelled = ops
        .app
        .post_empty(&format!("/v1/tasks/{long_id}/cancel"))
        .await;
    assert_eq!(
        cancelled.body["status"], "cancelled",
        "a waiting task is cancelled without a workflow"
    );
    assert!(cancelled.body.get("stages").is_none(), "it never ran");
    ops.app
        .post_empty(&format!("/v1/tasks/{busy_id}/cancel"))
        .await;
    assert_eq!(ops.wait_end(&busy_id).await["status"], "cancelled");
}

async fn a_bring_up_powers_the_rack_on_then_brings_firmware_to_the_desired_version(ops: Ops) {
    let rack = ops.app.create_rack(&gb200_rack(1, 1)).await;
    let r = ops
        .app
        .post(
            &format!("/v1/racks/{}/bring-up", rack["id"].as_str().unwrap()),
            &json!({"description": "new rack"}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    assert_eq!(task["operation"], "bring_up");
    assert_eq!(task["description"], "new rack");
    // The desired firmware is no recipe here: the AC-cycle stages are there, and skipped.
    let (ac, stages): (Vec<&Value>, Vec<&Value>) = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .partition(|s| s["name"].as_str().unwrap().starts_with("AC cycle:"));
    assert_eq!(ac.len(), 6, "{task}");
    assert!(
        task.to_string()
            .contains("skipped: no tray staged an image that needs the rack's AC cycle"),
        "{task}"
    );
    let stages: Vec<(String, String)> = stages
        .into_iter()
        .map(|s| {
            (
                s["action"].as_str().unwrap().to_string(),
                s["component_types"][0].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("power_on", "powershelf"),
        ("power_on", "nvswitch"),
        ("power_on", "compute"),
        ("firmware_recipe", "nvswitch"),
        ("firmware_recipe", "compute"),
    ];
    assert_eq!(
        stages,
        expected
            .map(|(a, k)| (a.to_string(), k.to_string()))
            .to_vec()
    );
    for c in rack["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "compute" || c["type"] == "nvswitch")
    {
        let id = c["id"].as_str().unwrap().parse().unwrap();
        assert_eq!(
            ops.sim.firmware_of(id).as_deref(),
            Some("2.0.0"),
            "the desired version is installed"
        );
        assert_eq!(
            ops.sim.power_of(id),
            Some(flow::components::DevicePower::On)
        );
    }
}

/// Every step of `task` with its stage number.
fn steps_of(task: &Value) -> impl Iterator<Item = (u32, &Value)> {
    task["stages"].as_array().unwrap().iter().flat_map(|stage| {
        let number = stage["number"].as_u64().unwrap() as u32;
        let steps = stage["components"].as_array().unwrap();
        steps.iter().map(move |step| (number, step))
    })
}

/// The first step of `task` in `status`: its stage number, component id and the step.
fn step_in(task: &Value, status: &str) -> Option<(u32, uuid::Uuid, Value)> {
    find_step(task, |step| step["status"] == status)
}

/// The step of the component named `name` in `status`.
fn step_named(task: &Value, name: &str, status: &str) -> Option<(u32, uuid::Uuid, Value)> {
    find_step(task, |step| {
        step["name"] == name && step["status"] == status
    })
}

fn find_step(task: &Value, pick: impl Fn(&Value) -> bool) -> Option<(u32, uuid::Uuid, Value)> {
    let (stage, step) = steps_of(task).find(|(_, step)| pick(step))?;
    let id = step["component_id"].as_str()?.parse().ok()?;
    Some((stage, id, step.clone()))
}

fn report(
    task: &str,
    (stage, component): (u32, uuid::Uuid),
    status: flow::tasks::model::StepStatus,
    event: String,
) -> flow::tasks::StepUpdate {
    flow::tasks::StepUpdate {
        task_id: task.parse::<uuid::Uuid>().unwrap().into(),
        stage,
        component_id: component.into(),
        status,
        attempts: 1,
        error: None,
        event,
        power_seen: None,
    }
}

/// Each step report is one compare-and-set that appends its line in SQL: ten reports racing
/// on each of two running steps (another process's task service, as a second replica's worker
/// would write) all keep their lines — on PostgreSQL coalesced, several steps to a statement;
/// a late report on a finished step changes nothing; a report for a step that does not exist
/// is refused.
async fn step_reports_that_race_keep_every_line_and_never_reopen_a_finished_step(ops: Ops) {
    use flow::tasks::model::StepStatus;
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    let r = ops.operate("power-on", &rack("rack-0001")).await;
    let id = r.body["task_ids"][0].as_str().unwrap().to_string();
    // The slow compute trays' steps, once they run: the fast steps before them (shelves,
    // switches) may still be running when the first one has succeeded, and would end mid-race.
    let slow_trays = ["r0001-gpu00", "r0001-gpu01"];
    let task = ops
        .wait_task(&id, |t| {
            slow_trays
                .iter()
                .all(|name| step_named(t, name, "running").is_some())
                && step_in(t, "succeeded").is_some()
        })
        .await;
    let service = reconciler(&ops);
    let before: Vec<_> = slow_trays
        .iter()
        .map(|name| step_named(&task, name, "running").unwrap())
        .collect();
    let batches = &flow::telemetry::metrics::METRICS.step_report_batch_size;
    let (sum, count) = (batches.get_sample_sum(), batches.get_sample_count());
    let task_id = id.as_str();
    let reports = (0..10).flat_map(|i| {
        before.iter().map(move |(stage, component, _)| {
            report(
                task_id,
                (*stage, *component),
                StepStatus::Running,
                format!("race {i}"),
            )
        })
    });
    let reports = reports.map(|update| {
        let service = service.clone();
        async move { service.record_step(&update).await }
    });
    for result in futures::future::join_all(reports).await {
        result.unwrap();
    }
    if ops.app.db.db.get_database_backend() == sea_orm::DbBackend::Postgres {
        // Some statement carried more than one report (its size counts more than once).
        let carried = batches.get_sample_sum() - sum;
        let statements = (batches.get_sample_count() - count) as f64;
        assert!(
            carried > statements,
            "{carried} reports in {statements} statements"
        );
    }
    let task = ops.app.get(&format!("/v1/tasks/{id}")).await.body;
    for (name, (_, _, before)) in slow_trays.iter().zip(&before) {
        let (_, _, after) = step_named(&task, name, "running").unwrap();
        let lines: Vec<&str> = after["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["message"].as_str().unwrap())
            .collect();
        let before_lines = before["events"].as_array().unwrap().len();
        assert_eq!(lines.len(), before_lines + 10, "{after}");
        for i in 0..10 {
            assert!(lines.contains(&format!("race {i}").as_str()), "{after}");
        }
        assert_eq!(after["started_at"], before["started_at"], "{after}");
    }
    let slow = before[0].1;
    // A finished step stays as it ended.
    let (stage, done, ended) = step_in(&task, "succeeded").unwrap();
    let late = report(&id, (stage, done), StepStatus::Running, "late".into());
    service.record_step(&late).await.unwrap();
    let task = ops.app.get(&format!("/v1/tasks/{id}")).await.body;
    let (_, again) = steps_of(&task)
        .find(|(_, c)| c["component_id"] == done.to_string() && c["status"] == "succeeded")
        .expect("the finished step is still succeeded");
    assert_eq!(again["events"], ended["events"], "{again}");
    assert_eq!(again["finished_at"], ended["finished_at"], "{again}");
    // No such step: refused, nothing written.
    let stray = report(&id, (99, slow), StepStatus::Running, "stray".into());
    let refused = service.record_step(&stray).await.unwrap_err();
    assert!(
        matches!(refused, flow::error::Error::NotFound { .. }),
        "{refused:?}"
    );
}
