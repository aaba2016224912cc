//! Task schedules: validation and scope over HTTP on both backends, and fires that really run
//! (Temporal, simulated devices), including two dispatchers racing on one database.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use flow::app::{App, AppState};
use flow::config::Config;
use flow::db::entities::{task_schedule_runs, task_schedules};
use flow::schedules::ScheduleService;
use flow::workflows::TemporalEngine;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::support::fixtures::gb200_rack;
use crate::support::ops::{Ops, OpsBuilder};
use crate::support::{TestApp, TestResponse};
use crate::{on_both_backends, ops_on_both_backends};

fn body(name: &str, spec: Value, operation: Value, racks: &[&str]) -> Value {
    json!({
        "name": name,
        "spec": spec,
        "operation": operation,
        "target_spec": {"racks": racks.iter().map(|r| json!({"name": r})).collect::<Vec<_>>()},
    })
}

fn interval(spec: &str) -> Value {
    json!({"type": "interval", "spec": spec})
}

async fn create(app: &TestApp, body: &Value) -> Value {
    let r = app.post("/v1/task-schedules", body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body
}

fn service(state: &AppState) -> ScheduleService {
    ScheduleService::new(state.db().clone(), state.task_service(), state.clock())
}

/// Makes the schedule due long ago, as if every Flow process had been down since.
async fn make_overdue(ops: &Ops, id: &str, by: chrono::Duration) {
    task_schedules::Entity::update_many()
        .col_expr(
            task_schedules::Column::NextRunAt,
            Expr::value(Utc::now() - by),
        )
        .filter(task_schedules::Column::Id.eq(uuid::Uuid::parse_str(id).unwrap()))
        .exec(&ops.app.db.db)
        .await
        .unwrap();
}

async fn runs(app: &TestApp, id: &str) -> Vec<Value> {
    let r = app.get(&format!("/v1/task-schedules/{id}/runs")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["items"].as_array().unwrap().clone()
}

/// Ticks the dispatcher until the schedule has `n` runs, or panics after 30 s.
async fn tick_until_runs(ops: &Ops, schedules: &ScheduleService, id: &str, n: usize) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        schedules.tick().await.unwrap();
        let list = runs(&ops.app, id).await;
        if list.len() >= n {
            return list;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} runs",
            list.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn ids(run: &Value) -> Vec<String> {
    run["task_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

ops_on_both_backends!(
    an_interval_schedule_fires_on_its_racks_and_pause_resume_and_trigger_control_it,
    skip_leaves_a_busy_rack_alone_and_queue_waits_behind_it: |b: OpsBuilder| b.sim(|s| {
        s.slow_serials.insert("SN-0001-compute-00".into());
        s.slow_latency = Duration::from_secs(60);
    }),
    two_dispatchers_on_one_database_fire_an_overdue_schedule_once,
    a_run_a_dead_process_left_half_submitted_is_finished_once,
);

/// Racks 1 and 2, and a power-on schedule on both: the schedule's body and id.
async fn power_on_schedule(ops: &Ops, name: &str, every: &str) -> (Value, String) {
    for n in [1, 2] {
        ops.app.create_rack(&gb200_rack(n, 1)).await;
    }
    let s = create(
        &ops.app,
        &body(
            name,
            interval(every),
            json!({"kind": "power_on"}),
            &["rack-0001", "rack-0002"],
        ),
    )
    .await;
    let id = s["id"].as_str().unwrap().to_string();
    (s, id)
}

async fn an_interval_schedule_fires_on_its_racks_and_pause_resume_and_trigger_control_it(ops: Ops) {
    let schedules = service(&ops.state);
    let (s, id) = power_on_schedule(&ops, "every-2s", "2s").await;
    assert_eq!(s["enabled"], true);
    let next: chrono::DateTime<Utc> = s["next_run_at"].as_str().unwrap().parse().unwrap();
    // On the grid of whole seconds: no fraction of the creation moment kept.
    assert_eq!(
        chrono::Timelike::nanosecond(&next),
        0,
        "{}",
        s["next_run_at"]
    );

    let first = tick_until_runs(&ops, &schedules, &id, 1).await.remove(0);
    assert_eq!(first["trigger"], "schedule");
    assert_eq!(first["status"], "done", "{first}");
    let tasks = ids(&first);
    assert_eq!(tasks.len(), 2, "one task per rack: {first}");
    for task in &tasks {
        let t = ops.wait_end(task).await;
        assert_eq!(t["status"], "succeeded", "{t}");
        assert!(
            t["description"]
                .as_str()
                .unwrap()
                .starts_with("every-2s — "),
            "{t}"
        );
    }
    let got = ops.app.get(&format!("/v1/task-schedules/{id}")).await;
    assert_eq!(got.body["last_run"]["id"], first["id"], "{}", got.text);
    assert!(got.body["last_run_at"].is_string());

    // Paused, it does not fire even when overdue.
    let paused = ops
        .app
        .post_empty(&format!("/v1/task-schedules/{id}/pause"))
        .await;
    assert_eq!(paused.status, 200, "{}", paused.text);
    assert_eq!(paused.body["enabled"], false);
    let before = runs(&ops.app, &id).await.len();
    make_overdue(&ops, &id, chrono::Duration::minutes(5)).await;
    assert_eq!(schedules.tick().await.unwrap(), 0);
    assert_eq!(runs(&ops.app, &id).await.len(), before);

    // Resumed, the next fire is computed from now (never at once), and it fires again.
    let resumed = ops
        .app
        .post_empty(&format!("/v1/task-schedules/{id}/resume"))
        .await;
    assert_eq!(resumed.status, 200, "{}", resumed.text);
    assert_eq!(resumed.body["enabled"], true);
    let next: chrono::DateTime<Utc> = resumed.body["next_run_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        next > Utc::now() - chrono::Duration::milliseconds(100),
        "{next}"
    );
    let after = tick_until_runs(&ops, &schedules, &id, before + 1).await;
    for task in ids(&after[0]) {
        ops.wait_end(&task).await;
    }

    // A manual trigger fires once now and leaves the timer alone.
    let schedule_now = ops.app.get(&format!("/v1/task-schedules/{id}")).await.body;
    let trig = ops
        .app
        .post_empty(&format!("/v1/task-schedules/{id}/trigger"))
        .await;
    assert_eq!(trig.status, 202, "{}", trig.text);
    assert_eq!(trig.body["trigger"], "manual");
    assert_eq!(ids(&trig.body).len(), 2, "{}", trig.text);
    let schedule_after = ops.app.get(&format!("/v1/task-schedules/{id}")).await.body;
    assert_eq!(schedule_after["next_run_at"], schedule_now["next_run_at"]);
    for task in ids(&trig.body) {
        assert_eq!(ops.wait_end(&task).await["status"], "succeeded");
    }
    let deleted = ops.app.delete(&format!("/v1/task-schedules/{id}")).await;
    assert_eq!(deleted.status, 204);
    assert_eq!(ops.app.count_rows("task_schedule_runs").await, 0);
}

async fn skip_leaves_a_busy_rack_alone_and_queue_waits_behind_it(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let schedules = service(&ops.state);
    let s = create(
        &ops.app,
        &body(
            "skipper",
            interval("2s"),
            json!({"kind": "power_on"}),
            &["rack-0001"],
        ),
    )
    .await;
    let id = s["id"].as_str().unwrap().to_string();
    let trig = ops
        .app
        .post_empty(&format!("/v1/task-schedules/{id}/trigger"))
        .await;
    assert_eq!(trig.status, 202, "{}", trig.text);
    let busy = ids(&trig.body).remove(0);
    ops.wait_task(&busy, |t| t["status"] == "running").await;

    // The timer fires while the first task still runs: the rack is skipped, no second task.
    let list = tick_until_runs(&ops, &schedules, &id, 2).await;
    let fired = &list[0];
    assert_eq!(fired["trigger"], "schedule");
    assert_eq!(fired["task_ids"], json!([]), "{fired}");
    assert_eq!(fired["racks"][0]["outcome"], "skipped", "{fired}");
    assert!(
        fired["racks"][0]["reason"]
            .as_str()
            .unwrap()
            .contains(&busy),
        "{fired}"
    );
    let active = ops.app.get("/v1/tasks?active_only=true&count=exact").await;
    assert_eq!(active.body["total"], 1, "{}", active.text);
    ops.app
        .post_empty(&format!("/v1/task-schedules/{id}/pause"))
        .await;

    // A `queue` schedule submits anyway; its task waits for the rack.
    let q = create(
        &ops.app,
        &json!({
            "name": "queuer", "spec": interval("1h"), "overlap_policy": "queue",
            "operation": {"kind": "power_off"},
            "target_spec": {"racks": [{"name": "rack-0001"}]},
        }),
    )
    .await;
    let qt = ops
        .app
        .post_empty(&format!(
            "/v1/task-schedules/{}/trigger",
            q["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(qt.status, 202, "{}", qt.text);
    let waiting = ids(&qt.body).remove(0);
    let t = ops.app.get(&format!("/v1/tasks/{waiting}")).await;
    assert_eq!(t.body["status"], "waiting", "{}", t.text);

    let cancelled = ops
        .app
        .post_empty(&format!("/v1/tasks/{busy}/cancel"))
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    let cancelled = ops
        .app
        .post_empty(&format!("/v1/tasks/{waiting}/cancel"))
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    ops.wait_end(&busy).await;
}

async fn two_dispatchers_on_one_database_fire_an_overdue_schedule_once(ops: Ops) {
    for n in [1, 2] {
        ops.app.create_rack(&gb200_rack(n, 1)).await;
    }
    let s = create(
        &ops.app,
        &json!({
            "name": "hourly", "spec": interval("1h"),
            "operation": {"kind": "power_on"},
            "target_spec": {"racks": [
                {"name": "rack-0001", "component_types": ["compute"]},
                {"name": "rack-0002", "component_types": ["compute"]},
            ]},
        }),
    )
    .await;
    let id = s["id"].as_str().unwrap().to_string();
    // Due a day ago: 24 fires were missed while everything was down.
    make_overdue(&ops, &id, chrono::Duration::days(1)).await;

    // A second Flow process: its own pool, task service and engine, on the same database.
    let engine = Arc::new(TemporalEngine::new(
        ops.client.clone(),
        ops.task_queue.clone(),
    ));
    let other = App::builder(ops.app.db.connect_again().await, Config::default())
        .engines(engine)
        .build()
        .into_state();
    let (a, b) = (service(&ops.state), service(&other));
    let mut fired = 0;
    for _ in 0..20 {
        let (x, y) = tokio::join!(a.tick(), b.tick());
        fired += x.unwrap() + y.unwrap();
    }
    assert_eq!(fired, 1, "exactly one process fired");
    let list = runs(&ops.app, &id).await;
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(ids(&list[0]).len(), 2);
    assert_eq!(ops.app.count_rows("tasks").await, 2, "one task per rack");
    let next: chrono::DateTime<Utc> =
        ops.app.get(&format!("/v1/task-schedules/{id}")).await.body["next_run_at"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
    assert!(
        next > Utc::now() + chrono::Duration::minutes(59),
        "counted from now: {next}"
    );
    for task in ids(&list[0]) {
        assert_eq!(ops.wait_end(&task).await["status"], "succeeded");
    }
    other.db().clone().close().await.ok();
}

/// The HTTP surface without a workflow engine.
mod http {
    use super::*;

    on_both_backends!(
        bad_schedules_are_refused_with_the_field_named,
        names_ids_and_patches_follow_the_rules,
        the_scope_grows_shrinks_and_keeps_one_rack,
        conflict_advice_lists_schedules_that_clash_on_a_shared_rack,
    );

    fn fields(r: &TestResponse) -> Vec<String> {
        r.assert_problem(400, "invalid_input");
        r.error_fields()
    }

    async fn bad_schedules_are_refused_with_the_field_named(app: TestApp) {
        app.create_rack(&gb200_rack(1, 1)).await;
        let on = json!({"kind": "power_on"});
        let cases = [
            (
                body(
                    "a",
                    json!({"type": "cron", "spec": "61 * * * *"}),
                    on.clone(),
                    &["rack-0001"],
                ),
                "spec.spec",
            ),
            (
                body(
                    "a",
                    json!({"type": "cron", "spec": "0 3 * * *", "timezone": "Mars/Base"}),
                    on.clone(),
                    &["rack-0001"],
                ),
                "spec.timezone",
            ),
            (
                body("a", interval("1s"), on.clone(), &["rack-0001"]),
                "spec.spec",
            ),
            (
                body("a", interval("often"), on.clone(), &["rack-0001"]),
                "spec.spec",
            ),
            (
                body(
                    "a",
                    json!({"type": "one_time", "spec": "2001-01-01T00:00:00Z"}),
                    on.clone(),
                    &["rack-0001"],
                ),
                "spec.spec",
            ),
            (
                body("a", interval("1m"), on.clone(), &[]),
                "target_spec.racks",
            ),
            (
                body("a", interval("1m"), on.clone(), &["nope"]),
                "target_spec.racks[0]",
            ),
            (
                body("a", interval("1m"), on.clone(), &["rack-0001", "rack-0001"]),
                "target_spec.racks[1]",
            ),
            (
                body(
                    "a",
                    interval("1m"),
                    json!({"kind": "power_on", "forced": true}),
                    &["rack-0001"],
                ),
                "operation.forced",
            ),
            (body("", interval("1m"), on.clone(), &["rack-0001"]), "name"),
            (
                body(
                    "a",
                    interval("1m"),
                    json!({"kind": "power_on", "queue_timeout_seconds": 0}),
                    &["rack-0001"],
                ),
                "operation.queue_timeout_seconds",
            ),
        ];
        for (request, field) in cases {
            let r = app.post("/v1/task-schedules", &request).await;
            assert!(
                fields(&r).contains(&field.to_string()),
                "{field}: {}",
                r.text
            );
        }
        let mut queue_bring_up = body(
            "a",
            interval("1m"),
            json!({"kind": "bring_up"}),
            &["rack-0001"],
        );
        queue_bring_up["overlap_policy"] = json!("queue");
        let r = app.post("/v1/task-schedules", &queue_bring_up).await;
        assert_eq!(fields(&r), ["overlap_policy"], "{}", r.text);
        let mut components = body("a", interval("1m"), on.clone(), &[]);
        components["target_spec"] = json!({"components": [{"id": uuid::Uuid::new_v4()}]});
        let r = app.post("/v1/task-schedules", &components).await;
        assert_eq!(fields(&r), ["target_spec.components"], "{}", r.text);
        let r = app.post("/v1/task-schedules", &json!({"name": "x"})).await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert_eq!(app.count_rows("task_schedules").await, 0);
    }

    async fn names_ids_and_patches_follow_the_rules(app: TestApp) {
        app.create_rack(&gb200_rack(1, 1)).await;
        let s = create(
            &app,
            &body(
                "nightly",
                json!({"type": "cron", "spec": "30 2 * * *", "timezone": "America/New_York"}),
                json!({"kind": "power_reset", "forced": true}),
                &["rack-0001"],
            ),
        )
        .await;
        assert_eq!(s["operation"]["code"], "force_restart", "{s}");
        assert_eq!(s["spec"]["timezone"], "America/New_York");
        let next: chrono::DateTime<Utc> = s["next_run_at"].as_str().unwrap().parse().unwrap();
        let local = next.with_timezone(&chrono_tz::America::New_York);
        assert_eq!(local.format("%H:%M").to_string(), "02:30", "{next}");

        let dup = app
            .post(
                "/v1/task-schedules",
                &body(
                    "nightly",
                    interval("1m"),
                    json!({"kind": "power_on"}),
                    &["rack-0001"],
                ),
            )
            .await;
        dup.assert_problem(409, "name_exists");
        app.get(&format!("/v1/task-schedules/{}", uuid::Uuid::new_v4()))
            .await
            .assert_problem(404, "not_found");
        app.get("/v1/task-schedules/nope")
            .await
            .assert_problem(400, "invalid_input");

        let id = s["id"].as_str().unwrap();
        let path = format!("/v1/task-schedules/{id}");
        assert_eq!(fields(&app.patch(&path, &json!({})).await), ["body"]);
        let r = app
            .patch(&path, &json!({"spec": {"type": "interval", "spec": "1s"}}))
            .await;
        assert_eq!(fields(&r), ["spec.spec"]);
        let r = app.patch(&path, &json!({"name": "weekly", "spec": {"type": "interval", "spec": "6h"}, "overlap_policy": "queue"})).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(
            (r.body["name"].as_str(), r.body["overlap_policy"].as_str()),
            (Some("weekly"), Some("queue"))
        );
        assert_eq!(
            r.body["spec"],
            json!({"type": "interval", "spec": "6h", "timezone": "UTC"})
        );

        let list = app.get("/v1/task-schedules?enabled=true&count=exact").await;
        assert_eq!(list.body["total"], 1, "{}", list.text);
        let list = app
            .get("/v1/task-schedules?enabled=false&count=exact")
            .await;
        assert_eq!(list.body["total"], 0, "{}", list.text);

        // A one-time schedule is used up by its fire: no pause, resume or new time after that.
        let once = create(
        &app,
        &body("once", json!({"type": "one_time", "spec": (Utc::now() + chrono::Duration::hours(1)).to_rfc3339()}), json!({"kind": "power_on"}), &["rack-0001"]),
    )
    .await;
        let once_path = format!("/v1/task-schedules/{}", once["id"].as_str().unwrap());
        // Without a workflow engine the task is created and fails at dispatch: still a fire.
        let fired = app.post_empty(&format!("{once_path}/trigger")).await;
        assert_eq!(fired.status, 202, "{}", fired.text);
        let after = app.get(&once_path).await;
        assert_eq!(
            (
                after.body["enabled"].as_bool(),
                after.body["next_run_at"].is_null()
            ),
            (Some(false), true),
            "{}",
            after.text
        );
        for action in ["pause", "resume", "trigger"] {
            app.post_empty(&format!("{once_path}/{action}"))
                .await
                .assert_problem(409, "one_time_consumed");
        }
        app.patch(
            &once_path,
            &json!({"spec": {"type": "interval", "spec": "1h"}}),
        )
        .await
        .assert_problem(409, "one_time_consumed");
        assert_eq!(app.delete(&once_path).await.status, 204);
        app.delete(&once_path)
            .await
            .assert_problem(404, "not_found");
    }

    async fn the_scope_grows_shrinks_and_keeps_one_rack(app: TestApp) {
        for n in [1, 2] {
            app.create_rack(&gb200_rack(n, 1)).await;
        }
        let s = create(
            &app,
            &json!({"name": "s", "spec": interval("1h"), "operation": {"kind": "power_on"},
                "target_spec": {"racks": [{"name": "rack-0001", "component_types": ["compute"]}]}}),
        )
        .await;
        let path = format!("/v1/task-schedules/{}/scope", s["id"].as_str().unwrap());
        let added = app
            .post(
                &path,
                &json!({"target_spec": {"racks": [
                    {"name": "rack-0001", "component_types": ["nvswitch"]},
                    {"name": "rack-0002"},
                ]}}),
            )
            .await;
        assert_eq!(added.status, 200, "{}", added.text);
        assert_eq!(added.body["items"].as_array().unwrap().len(), 2);
        let scope = app.get(&path).await;
        let items = scope.body["items"].as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(
            items[0]["component_types"],
            json!(["compute", "nvswitch"]),
            "{}",
            scope.text
        );
        assert_eq!(items[1]["component_types"], json!([]));
        let by_rack = app
            .get(&format!(
                "/v1/task-schedules?rack_id={}&count=exact",
                items[1]["rack_id"].as_str().unwrap()
            ))
            .await;
        assert_eq!(by_rack.body["total"], 1);

        assert_eq!(app.delete(&format!("{path}/rack-0002")).await.status, 204);
        app.delete(&format!("{path}/rack-0002"))
            .await
            .assert_problem(404, "not_found");
        app.delete(&format!("{path}/{}", items[0]["rack_id"].as_str().unwrap()))
            .await
            .assert_problem(409, "last_scope");
        let r = app
            .post(
                &path,
                &json!({"target_spec": {"racks": [{"name": "ghost"}]}}),
            )
            .await;
        assert_eq!(fields(&r), ["target_spec.racks[0]"]);
    }

    async fn conflict_advice_lists_schedules_that_clash_on_a_shared_rack(app: TestApp) {
        for n in [1, 2] {
            app.create_rack(&gb200_rack(n, 1)).await;
        }
        let fw = create(
        &app,
        &json!({"name": "fw-compute", "spec": interval("1h"), "operation": {"kind": "firmware_upgrade"},
                "target_spec": {"racks": [{"name": "rack-0001", "component_types": ["compute"]}]}}),
    )
    .await;
        create(
            &app,
            &json!({"name": "elsewhere", "spec": interval("1h"), "operation": {"kind": "bring_up"},
                "target_spec": {"racks": [{"name": "rack-0002"}]}}),
        )
        .await;
        let check = |operation: Value, racks: Value| json!({"operation": operation, "target_spec": {"racks": racks}});
        let r = app
            .post(
                "/v1/task-schedules/conflicts",
                &check(
                    json!({"kind": "power_on"}),
                    json!([{"name": "rack-0001", "component_types": ["compute"]}]),
                ),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        let conflicts = r.body["conflicts"].as_array().unwrap();
        assert_eq!(conflicts.len(), 1, "{}", r.text);
        assert_eq!(conflicts[0]["schedule"]["id"], fw["id"]);
        let r = app
            .post(
                "/v1/task-schedules/conflicts",
                &check(
                    json!({"kind": "power_on"}),
                    json!([{"name": "rack-0001", "component_types": ["nvswitch"]}]),
                ),
            )
            .await;
        assert_eq!(
            r.body["conflicts"],
            json!([]),
            "different trays do not clash: {}",
            r.text
        );
        let mut excluded = check(json!({"kind": "bring_up"}), json!([{"name": "rack-0001"}]));
        excluded["exclude_schedule_id"] = fw["id"].clone();
        let r = app.post("/v1/task-schedules/conflicts", &excluded).await;
        assert_eq!(r.body["conflicts"], json!([]), "{}", r.text);
        let r = app
            .post(
                "/v1/task-schedules/conflicts",
                &check(json!({"kind": "bring_up"}), json!([{"name": "nope"}])),
            )
            .await;
        assert_eq!(fields(&r), ["target_spec.racks[0]"]);
    }
}

/// `flow schedule …` as the real binary against the served API.
mod cli {
    use super::*;

    /// [`crate::cli::flow`], its stdout and stderr as one text.
    async fn flow(url: &str, args: &[&str]) -> (i32, String) {
        let run = crate::cli::flow(url, args).await;
        (run.code, format!("{}{}", run.stdout, run.stderr))
    }

    ops_on_both_backends!(the_schedule_commands_create_fire_pause_and_delete);

    async fn the_schedule_commands_create_fire_pause_and_delete(ops: Ops) {
        ops.app.create_rack(&gb200_rack(1, 1)).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let router = ops.app.router.clone();
        tokio::spawn(async move { axum::serve(listener, router).await });

        let (code, out) = flow(
            &url,
            &[
                "schedule",
                "create",
                "--name",
                "cli-nightly",
                "--cron",
                "30 2 * * *",
                "--timezone",
                "Europe/Berlin",
                "--operation",
                "power_on",
                "--rack",
                "rack-0001",
                "--types",
                "compute",
                "-o",
                "json",
            ],
        )
        .await;
        assert_eq!(code, 0, "{out}");
        let created: Value = serde_json::from_str(&out).unwrap();
        let id = created["id"].as_str().unwrap().to_string();
        assert_eq!(created["spec"]["timezone"], "Europe/Berlin");

        let (code, out) = flow(&url, &["schedule", "list"]).await;
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains("cli-nightly") && out.contains("cron 30 2 * * *"),
            "{out}"
        );
        let (code, out) = flow(&url, &["schedule", "trigger", &id]).await;
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("created"), "{out}");
        let (code, out) = flow(&url, &["schedule", "pause", &id, "-o", "json"]).await;
        assert_eq!(code, 0, "{out}");
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap()["enabled"],
            false
        );
        let (code, out) = flow(
            &url,
            &[
                "schedule",
                "create",
                "--name",
                "bad",
                "--every",
                "1s",
                "--operation",
                "power_on",
                "--rack",
                "rack-0001",
            ],
        )
        .await;
        assert_ne!(code, 0, "{out}");
        assert!(out.contains("spec.spec"), "{out}");
        // `--nvl-domain`: the domain's racks, followed at each fire (tests/it/schedule_domains.rs).
        ops.app
            .post("/v1/nvl-domains", &json!({"name": "nvl-cli"}))
            .await;
        ops.app
            .post(
                "/v1/nvl-domains/nvl-cli/racks",
                &json!({"racks": [{"name": "rack-0001"}]}),
            )
            .await;
        let (code, out) = flow(
            &url,
            &[
                "schedule",
                "create",
                "--name",
                "cli-domain",
                "--every",
                "6h",
                "--operation",
                "power_on",
                "--nvl-domain",
                "nvl-cli",
                "--paused",
                "-o",
                "json",
            ],
        )
        .await;
        assert_eq!(code, 0, "{out}");
        let domain_id = serde_json::from_str::<Value>(&out).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let scope = ops
            .app
            .get(&format!("/v1/task-schedules/{domain_id}/scope"))
            .await;
        assert_eq!(
            scope.body["items"].as_array().unwrap().len(),
            1,
            "{}",
            scope.text
        );
        assert!(
            !scope.body["items"][0]["nvl_domain_id"].is_null(),
            "{}",
            scope.text
        );
        let (code, out) = flow(&url, &["schedule", "delete", &id]).await;
        assert_eq!(code, 0, "{out}");
        let (code, _) = flow(&url, &["schedule", "get", &id]).await;
        assert_ne!(code, 0);
        for task in ops.app.get("/v1/tasks").await.body["items"]
            .as_array()
            .unwrap()
        {
            ops.wait_end(task["id"].as_str().unwrap()).await;
        }
    }
}

/// A process that claimed a fire, created one rack's task and died before recording it: the
/// run stays `submitting` with that rack pending. Recovery finishes the run without a second
/// task (the submission's idempotency key is derived from the run and the rack).
async fn a_run_a_dead_process_left_half_submitted_is_finished_once(ops: Ops) {
    let schedules = service(&ops.state);
    let (_, id) = power_on_schedule(&ops, "daily", "24h").await;
    let trig = ops
        .app
        .post_empty(&format!("/v1/task-schedules/{id}/trigger"))
        .await;
    assert_eq!(trig.status, 202, "{}", trig.text);
    let tasks = ids(&trig.body);
    assert_eq!(tasks.len(), 2);
    for task in &tasks {
        assert_eq!(ops.wait_end(task).await["status"], "succeeded");
    }

    // Rewind the run to what the dead process left behind.
    let run_id = uuid::Uuid::parse_str(trig.body["id"].as_str().unwrap()).unwrap();
    let row = task_schedule_runs::Entity::find_by_id(run_id)
        .one(&ops.app.db.db)
        .await
        .unwrap()
        .unwrap();
    let mut results = row.results.clone();
    let last = results.as_array_mut().unwrap().last_mut().unwrap();
    let orphan = last["task_id"].as_str().unwrap().to_string();
    *last = json!({"rack_id": last["rack_id"], "outcome": "pending"});
    task_schedule_runs::Entity::update_many()
        .col_expr(
            task_schedule_runs::Column::Status,
            Expr::value("submitting"),
        )
        .col_expr(task_schedule_runs::Column::Results, Expr::value(results))
        .col_expr(
            task_schedule_runs::Column::FinishedAt,
            Expr::value(Option::<chrono::DateTime<Utc>>::None),
        )
        .filter(task_schedule_runs::Column::Id.eq(run_id))
        .exec(&ops.app.db.db)
        .await
        .unwrap();
    let stuck = runs(&ops.app, &id).await.remove(0);
    assert_eq!(stuck["status"], "submitting", "{stuck}");
    assert_eq!(ids(&stuck).len(), 1);

    // Recovery takes runs stalled for a while: a survivor's clock five minutes on.
    assert_eq!(
        schedules.recover("survivor").await.unwrap(),
        0,
        "too recent"
    );
    let later = ScheduleService::new(
        ops.state.db().clone(),
        ops.state.task_service(),
        Arc::new(Later(chrono::Duration::minutes(5))),
    );
    assert_eq!(later.recover("survivor").await.unwrap(), 1);
    let done = runs(&ops.app, &id).await.remove(0);
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(
        ids(&done),
        tasks,
        "the orphaned task {orphan} is recorded, not doubled"
    );
    assert_eq!(ops.app.count_rows("tasks").await, 2);
    assert_eq!(
        later.recover("survivor").await.unwrap(),
        0,
        "nothing left to finish"
    );
}

/// The system clock, shifted.
struct Later(chrono::Duration);

impl flow::clock::Clock for Later {
    fn now(&self) -> chrono::DateTime<Utc> {
        Utc::now() + self.0
    }
}
