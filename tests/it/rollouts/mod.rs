//! `/v1/rollouts`: input checks and dry-run plans (both backends, no workflow engine needed),
//! and in the submodules the rollout workflow end to end on the real Temporal dev server.

mod execution;
mod steering;
mod worker_killed;

use std::time::Duration;

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::TestApp;
use crate::support::fixtures::gb200_rack;

on_both_backends!(
    bad_rollout_input_is_refused_naming_the_field_and_creates_nothing,
    a_dry_run_answers_the_waves_with_each_racks_outcome_and_creates_nothing,
    spread_by_nvl_domain_keeps_two_racks_of_one_domain_out_of_one_wave,
);

/// Racks `rack-0001` … `rack-{n}`, each with one compute tray.
pub async fn make_racks(app: &TestApp, n: u32) {
    for i in 1..=n {
        app.create_rack(&gb200_rack(i, 1)).await;
    }
}

/// A power-on rollout of the named racks' compute trays with `strategy`.
pub fn rollout(names: &[&str], strategy: Value) -> Value {
    json!({
        "name": "test rollout",
        "operation": {"kind": "power_on"},
        "target_spec": {
            "racks": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>(),
            "component_types": ["compute"],
        },
        "strategy": strategy,
    })
}

/// Rack names per wave, from a dry run's or a rollout's waves.
pub fn wave_names(doc: &Value) -> Vec<Vec<String>> {
    doc["waves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            w["racks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["rack_name"].as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// Polls the rollout until `done` holds, or panics after `secs`.
pub async fn wait_rollout(
    app: &TestApp,
    id: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let r = app.get(&format!("/v1/rollouts/{id}")).await;
        assert_eq!(r.status, 200, "{}", r.text);
        if done(&r.body) {
            return r.body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "rollout {id} never got there: {}",
            r.text
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls until the rollout has the given status.
pub async fn wait_status(app: &TestApp, id: &str, status: &str) -> Value {
    wait_rollout(app, id, 90, |r| r["status"] == status).await
}

async fn bad_rollout_input_is_refused_naming_the_field_and_creates_nothing(app: TestApp) {
    make_racks(&app, 2).await;
    let both = ["rack-0001", "rack-0002"];
    let with = |patch: Value| {
        let mut body = rollout(&both, json!({}));
        for (k, v) in patch.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let cases = [
        (
            with(json!({"target_spec": {"selector": {"datacenter": "nowhere"}}})),
            "target_spec",
        ),
        (
            with(json!({"target_spec": {"racks": []}})),
            "target_spec.racks",
        ),
        (
            with(json!({"target_spec": {"selector": {}}})),
            "target_spec.selector",
        ),
        (
            with(json!({"strategy": {"batch_size": 0}})),
            "strategy.batch_size",
        ),
        (
            with(json!({"strategy": {"batch_size": "0%"}})),
            "strategy.batch_size",
        ),
        (
            with(json!({"strategy": {"batch_size": "lots"}})),
            "strategy.batch_size",
        ),
        (
            with(json!({"strategy": {"failure_budget": {"max_failed_racks": -1}}})),
            "strategy.failure_budget.max_failed_racks",
        ),
        (
            with(json!({"strategy": {"failure_budget": {"max_failed_fraction": -0.5}}})),
            "strategy.failure_budget.max_failed_fraction",
        ),
        (with(json!({"strategy": {"canary": -1}})), "strategy.canary"),
        (
            with(json!({"strategy": {"max_concurrent_racks": 0}})),
            "strategy.max_concurrent_racks",
        ),
        (
            with(json!({"strategy": {"pause_between": "soon"}})),
            "strategy.pause_between",
        ),
        (
            with(
                json!({"window": {"start": "2026-12-02T04:00:00Z", "end": "2026-12-01T22:00:00Z"}}),
            ),
            "window.end",
        ),
        (
            with(
                json!({"window": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-03T00:00:00Z", "recurring": "daily"}}),
            ),
            "window.end",
        ),
        (with(json!({"name": " "})), "name"),
        (
            with(json!({"target_spec": {"racks": [{"name": "rack-9999"}]}})),
            "target_spec.racks[0]",
        ),
        (
            with(json!({"operation": {"kind": "bring_up"}, "conflict_strategy": "queue"})),
            "conflict_strategy",
        ),
    ];
    for dry_run in [false, true] {
        let path = if dry_run {
            "/v1/rollouts?dry_run=true"
        } else {
            "/v1/rollouts"
        };
        for (body, field) in &cases {
            let r = app.post(path, body).await;
            r.assert_invalid_field(field, body);
        }
    }
    assert_eq!(app.count_rows("rollouts").await, 0);
    assert_eq!(app.count_rows("tasks").await, 0);
}

async fn a_dry_run_answers_the_waves_with_each_racks_outcome_and_creates_nothing(app: TestApp) {
    make_racks(&app, 5).await;
    let body = json!({
        "name": "hall firmware",
        "operation": {"kind": "firmware_upgrade", "target_version": "2.1.0"},
        "target_spec": {"selector": {"datacenter": "SJC01", "name": "rack-*"}},
        "strategy": {"canary": 1, "batch_size": "40%", "approval_after_canary": true},
    });
    let r = app.post("/v1/rollouts?dry_run=true", &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["dry_run"], true);
    assert_eq!(r.body["total_racks"], 5);
    assert_eq!(
        wave_names(&r.body),
        [
            vec!["rack-0001"],
            vec!["rack-0002", "rack-0003"],
            vec!["rack-0004", "rack-0005"]
        ]
    );
    assert_eq!(r.body["waves"][0]["canary"], true);
    assert_eq!(r.body["waves"][1]["canary"], false);
    for wave in r.body["waves"].as_array().unwrap() {
        for rack in wave["racks"].as_array().unwrap() {
            assert!(rack["rack_id"].is_string(), "{rack}");
            // No component manager is configured here, so every rack would start.
            assert_eq!(rack["outcome"], "start", "{rack}");
        }
    }
    assert_eq!(app.count_rows("rollouts").await, 0);
    assert_eq!(app.count_rows("tasks").await, 0);
    // Without a workflow engine the real thing is refused, and leaves nothing behind.
    let r = app.post("/v1/rollouts", &body).await;
    r.assert_problem(503, "engine_unavailable");
    assert_eq!(app.count_rows("rollouts").await, 0);
    let r = app.get("/v1/rollouts?count=exact").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["total"], 0);
    app.get("/v1/rollouts?status=bogus")
        .await
        .assert_problem(400, "invalid_input");
    app.get(&format!("/v1/rollouts/{}", uuid::Uuid::new_v4()))
        .await
        .assert_problem(404, "not_found");
}

async fn spread_by_nvl_domain_keeps_two_racks_of_one_domain_out_of_one_wave(app: TestApp) {
    make_racks(&app, 4).await;
    for (domain, racks) in [
        ("nvl-a", ["rack-0001", "rack-0002"]),
        ("nvl-b", ["rack-0003", "rack-0004"]),
    ] {
        let r = app.post("/v1/nvl-domains", &json!({"name": domain})).await;
        assert_eq!(r.status, 201, "{}", r.text);
        let r = app
            .post(
                &format!("/v1/nvl-domains/{domain}/racks"),
                &json!({"racks": racks.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let names = ["rack-0001", "rack-0002", "rack-0003", "rack-0004"];
    let plan = |spread: &str| {
        rollout(
            &names,
            json!({"canary": 0, "batch_size": 2, "spread_by": spread}),
        )
    };
    let r = app.post("/v1/rollouts?dry_run=true", &plan("none")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        wave_names(&r.body),
        [
            vec!["rack-0001", "rack-0002"],
            vec!["rack-0003", "rack-0004"]
        ]
    );
    // A domain's racks stay in one wave unless the strategy splits domains; then spreading by
    // domain puts one rack of each domain in a wave.
    let r = app
        .post("/v1/rollouts?dry_run=true", &plan("nvl_domain"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        wave_names(&r.body),
        [
            vec!["rack-0001", "rack-0002"],
            vec!["rack-0003", "rack-0004"]
        ]
    );
    let mut split = plan("nvl_domain");
    split["strategy"]["split_domains"] = json!(true);
    let r = app.post("/v1/rollouts?dry_run=true", &split).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        wave_names(&r.body),
        [
            vec!["rack-0001", "rack-0003"],
            vec!["rack-0002", "rack-0004"]
        ]
    );
    // The fixture puts odd racks in room-1 and even ones in room-0.
    let r = app.post("/v1/rollouts?dry_run=true", &plan("room")).await;
    assert_eq!(
        wave_names(&r.body),
        [
            vec!["rack-0001", "rack-0002"],
            vec!["rack-0003", "rack-0004"]
        ]
    );
    let r = app
        .post(
            "/v1/rollouts?dry_run=true",
            &json!({"name": "x", "operation": {"kind": "power_on"},
                "target_spec": {"selector": {"nvl_domain": "nvl-b"}}}),
        )
        .await;
    // The canary takes the whole domain rather than split it.
    assert_eq!(wave_names(&r.body), [vec!["rack-0003", "rack-0004"]]);
}
