//! Blast-radius limits (`FLOW_LIMIT_RACKS_PER_REQUEST`): the setting's parsing, the `403
//! blast_radius` answer of an operation over the caller's cap (and its dry run), a rollout
//! whose wave exceeds it, and a schedule's scope at creation and at fire.

use axum::http::Method;
use flow::auth::Role;
use flow::config::Config;
use serde_json::{Value, json};

use crate::auth::{api_token, call_as};
use crate::on_both_secured;
use crate::support::fixtures::gb200_rack;
use crate::support::{Backend, TestApp, TestResponse};

on_both_secured!(
    an_operation_over_the_callers_cap_is_refused_403_naming_cap_count_and_rollouts,
    a_rollout_whose_wave_exceeds_the_submitters_cap_is_refused_at_creation,
    a_schedule_over_the_cap_is_refused_at_creation_and_a_fire_over_it_submits_nothing,
);

fn env(pairs: &[(&str, &str)]) -> std::collections::HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_limit_is_read_per_role_and_a_bad_value_is_a_start_up_error_naming_it() {
    let config = Config::load(&env(&[(
        "FLOW_LIMIT_RACKS_PER_REQUEST",
        "operator=8,admin=64",
    )]))
    .unwrap();
    let limits = config.rack_limits();
    assert_eq!(limits.cap(Role::Operator), Some(8));
    assert_eq!(limits.cap(Role::Admin), Some(64));
    assert_eq!(
        limits.cap(Role::Editor),
        None,
        "a role left out is unlimited"
    );
    assert!(Config::load(&env(&[])).unwrap().rack_limits().is_empty());
    let zero = Config::load(&env(&[("FLOW_LIMIT_RACKS_PER_REQUEST", "operator=0")])).unwrap();
    assert_eq!(
        zero.rack_limits().cap(Role::Operator),
        None,
        "0 is unlimited"
    );
    for bad in ["operator=many", "boss=3", "operator"] {
        let err = Config::load(&env(&[("FLOW_LIMIT_RACKS_PER_REQUEST", bad)])).unwrap_err();
        assert!(
            err.to_string().contains("FLOW_LIMIT_RACKS_PER_REQUEST"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn flow_config_check_reports_the_limit_and_refuses_a_bad_one() {
    let run = |value: &str| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_flow"));
        command.args(["config", "check"]);
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("FLOW_")) {
            command.env_remove(key);
        }
        command.env("FLOW_LIMIT_RACKS_PER_REQUEST", value);
        command.output().unwrap()
    };
    let good = run("operator=8,admin=64");
    let stdout = String::from_utf8_lossy(&good.stdout);
    assert!(good.status.success(), "{stdout}");
    assert!(
        stdout.contains("limit_racks_per_request = \"operator=8,admin=64\""),
        "{stdout}"
    );
    let bad = run("operator=lots");
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("FLOW_LIMIT_RACKS_PER_REQUEST"), "{stderr}");
}

/// An app accepting API tokens, with this cap.
async fn capped(backend: Backend, limits: &str) -> TestApp {
    let mut config = Config::default();
    config.auth.mode = "token".into();
    config.limits.racks_per_request = limits.into();
    TestApp::with_config(backend, config).await
}

fn racks(names: &[String]) -> Value {
    json!({"target_spec": {"racks": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}})
}

async fn make_racks(app: &TestApp, token: &str, n: u32) -> Vec<String> {
    let mut names = Vec::new();
    for i in 1..=n {
        let r = call_as(
            app,
            token,
            Method::POST,
            "/v1/expected-racks",
            Some(&gb200_rack(i, 1)),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.text);
        names.push(format!("rack-{i:04}"));
    }
    names
}

fn assert_blast(r: &TestResponse, cap: u32, count: usize) {
    let body = r.assert_problem(403, "blast_radius");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("{count} racks")), "{detail}");
    assert!(
        detail.contains(&format!("the {cap} one request")),
        "{detail}"
    );
    assert!(detail.contains("rollout"), "points to rollouts: {detail}");
}

async fn an_operation_over_the_callers_cap_is_refused_403_naming_cap_count_and_rollouts(
    backend: Backend,
) {
    let app = capped(backend, "operator=2,admin=3").await;
    let admin = api_token(&app, "boss", Role::Admin).await;
    let operator = api_token(&app, "noc", Role::Operator).await;
    let names = make_racks(&app, &admin, 3).await;
    let post = |token: String, path: &'static str, body: Value| {
        let app = &app;
        async move { call_as(app, &token, Method::POST, path, Some(&body)).await }
    };
    // Over the operator's cap: refused before anything is created (no engine is needed).
    let r = post(operator.clone(), "/v1/operations/power-on", racks(&names)).await;
    assert_blast(&r, 2, 3);
    assert_eq!(r.body["errors"][0]["field"], "target_spec");
    assert_eq!(app.count_rows("tasks").await, 0);
    // The dry run shows it.
    let dry = post(
        operator.clone(),
        "/v1/operations/power-on?dry_run=true",
        racks(&names),
    )
    .await;
    assert_eq!(dry.status, 200, "{}", dry.text);
    assert_eq!(
        dry.body["blast_radius"],
        json!({"role": "operator", "cap": 2, "count": 3, "within": false})
    );
    let fits = post(
        operator.clone(),
        "/v1/operations/power-on?dry_run=true",
        racks(&names[..2]),
    )
    .await;
    assert_eq!(fits.body["blast_radius"]["within"], true, "{}", fits.text);
    // The admin's cap is its own: 3 racks pass the check (and then meet the missing engine).
    let r = post(admin.clone(), "/v1/operations/power-on", racks(&names)).await;
    assert_ne!(r.body["code"], "blast_radius", "{}", r.text);
    let dry = post(admin, "/v1/operations/power-on?dry_run=true", racks(&names)).await;
    assert_eq!(
        dry.body["blast_radius"],
        json!({"role": "admin", "cap": 3, "count": 3, "within": true})
    );
}

fn rollout(names: &[String], strategy: Value) -> Value {
    json!({
        "name": "capped rollout",
        "operation": {"kind": "power_on"},
        "target_spec": {"racks": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()},
        "strategy": strategy,
    })
}

async fn a_rollout_whose_wave_exceeds_the_submitters_cap_is_refused_at_creation(backend: Backend) {
    let app = capped(backend, "operator=2").await;
    let admin = api_token(&app, "boss", Role::Admin).await;
    let operator = api_token(&app, "noc", Role::Operator).await;
    let names = make_racks(&app, &admin, 4).await;
    let create = |token: &str, path: &'static str, strategy: Value| {
        let app = &app;
        let body = rollout(&names, strategy);
        let token = token.to_string();
        async move { call_as(app, &token, Method::POST, path, Some(&body)).await }
    };
    // Waves of 1 and 3: the second is over the operator's cap.
    let r = create(
        &operator,
        "/v1/rollouts",
        json!({"canary": 1, "batch_size": 3}),
    )
    .await;
    assert_blast(&r, 2, 3);
    assert!(
        r.body["detail"].as_str().unwrap().starts_with("wave 2 "),
        "{}",
        r.text
    );
    assert_eq!(r.body["errors"][0]["field"], "strategy.batch_size");
    let dry = create(
        &operator,
        "/v1/rollouts?dry_run=true",
        json!({"canary": 1, "batch_size": 3}),
    )
    .await;
    assert_blast(&dry, 2, 3);
    assert_eq!(app.count_rows("rollouts").await, 0);
    // Waves within the cap plan, though the rollout touches 4 racks in all.
    let ok = create(
        &operator,
        "/v1/rollouts?dry_run=true",
        json!({"canary": 1, "batch_size": 2}),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    // An admin, unlimited here, may run the wide waves.
    let wide = create(
        &admin,
        "/v1/rollouts?dry_run=true",
        json!({"canary": 1, "batch_size": 3}),
    )
    .await;
    assert_eq!(wide.status, 200, "{}", wide.text);
}

fn schedule(names: &[String]) -> Value {
    json!({
        "name": "nightly",
        "spec": {"type": "interval", "spec": "1h"},
        "operation": {"kind": "power_on"},
        "target_spec": {"racks": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()},
    })
}

async fn a_schedule_over_the_cap_is_refused_at_creation_and_a_fire_over_it_submits_nothing(
    backend: Backend,
) {
    let mut app = capped(backend, "operator=2").await;
    let admin = api_token(&app, "boss", Role::Admin).await;
    let names = make_racks(&app, &admin, 3).await;
    // A schedule fires as `operator`: an admin's schedule of 3 racks is over that cap.
    let create = Some(schedule(&names));
    let r = call_as(
        &app,
        &admin,
        Method::POST,
        "/v1/task-schedules",
        create.as_ref(),
    )
    .await;
    assert_blast(&r, 2, 3);
    assert_eq!(r.body["errors"][0]["field"], "target_spec.racks");
    assert_eq!(app.count_rows("task_schedules").await, 0);
    let create = Some(schedule(&names[..2]));
    let r = call_as(
        &app,
        &admin,
        Method::POST,
        "/v1/task-schedules",
        create.as_ref(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    // Growing the scope past the cap is refused, and nothing of it is kept.
    let more = json!({"target_spec": {"racks": [{"name": names[2]}]}});
    let scope_path = format!("/v1/task-schedules/{id}/scope");
    let r = call_as(&app, &admin, Method::POST, &scope_path, Some(&more)).await;
    assert_blast(&r, 2, 3);
    let scope = call_as(&app, &admin, Method::GET, &scope_path, None).await;
    assert_eq!(
        scope.body["items"].as_array().unwrap().len(),
        2,
        "{}",
        scope.text
    );
    // The cap shrinks (a restart with a new setting): the next fire submits none of its racks.
    let mut config = Config::default();
    config.auth.mode = "token".into();
    config.limits.racks_per_request = "operator=1".into();
    app.router = flow::service::router(
        flow::app::App::builder(app.db.db.clone(), config)
            .build()
            .into_state(),
    );
    let trigger = format!("/v1/task-schedules/{id}/trigger");
    let run = call_as(&app, &admin, Method::POST, &trigger, None).await;
    assert!(run.status.is_success(), "{}", run.text);
    let runs_path = format!("/v1/task-schedules/{id}/runs");
    let runs = call_as(&app, &admin, Method::GET, &runs_path, None).await;
    let results = runs.body["items"][0]["racks"].as_array().unwrap().clone();
    assert_eq!(results.len(), 2, "{}", runs.text);
    for result in &results {
        assert_eq!(result["outcome"], "failed", "{}", runs.text);
        assert!(
            result["reason"]
                .as_str()
                .unwrap()
                .starts_with("blast_radius: "),
            "{}",
            runs.text
        );
    }
    assert_eq!(app.count_rows("tasks").await, 0);
}
