//! Rollouts run by the real workflow: waves in order behind the canary, the approval gate,
//! the failure budget, verification and the window.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::{make_racks, rollout, wait_status, wave_names};
use crate::ops_on_both_backends;
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    waves_run_in_order_canary_first_each_after_the_previous_ended_as_the_dry_run_planned,
    the_waves_after_the_canary_wait_for_approval,
    a_failed_rack_in_wave_two_spends_the_budget_and_halts_before_wave_three: |b: OpsBuilder| b.sim(|s| {
        s.fail_serials.insert("SN-0002-compute-00".into());
    }),
    a_closed_window_holds_the_first_wave_until_it_opens,
    verification_fails_a_rack_whose_devices_do_not_validate_clean: |b: OpsBuilder| b.sim(|s| {
        // Only compute trays are operated on; the switch of rack 2 answers nobody, so the
        // rack's task succeeds and its validation does not.
        s.fail_serials.insert("SN-0002-nvswitch-00".into());
    }),
);

fn time(v: &Value) -> DateTime<Utc> {
    v.as_str().unwrap().parse().unwrap()
}

/// The tasks of each wave, as `GET /v1/tasks/{id}` answers them.
async fn wave_tasks(ops: &Ops, rollout: &Value) -> Vec<Vec<Value>> {
    let mut waves = Vec::new();
    for wave in rollout["waves"].as_array().unwrap() {
        let mut tasks = Vec::new();
        for rack in wave["racks"].as_array().unwrap() {
            if let Some(id) = rack["task_id"].as_str() {
                tasks.push(ops.app.get(&format!("/v1/tasks/{id}")).await.body);
            }
        }
        waves.push(tasks);
    }
    waves
}

/// How many tasks exist for the named rack.
pub async fn tasks_of(ops: &Ops, rack: &str) -> u64 {
    let racks = ops.app.get(&format!("/v1/racks?name={rack}")).await.body;
    let id = racks["items"][0]["id"].as_str().unwrap();
    let r = ops
        .app
        .get(&format!("/v1/tasks?rack_id={id}&count=exact"))
        .await;
    r.body["total"].as_u64().unwrap()
}

async fn create(ops: &Ops, body: &Value) -> String {
    let r = ops.app.post("/v1/rollouts", body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/rollouts/{id}").as_str())
    );
    // Recorded in the transaction that created it, with the rollout as created.
    let log = ops
        .app
        .get(&format!("/v1/audit?resource=rollout:{id}"))
        .await;
    assert_eq!(
        log.body["items"][0]["route"], "/v1/rollouts",
        "{}",
        log.text
    );
    assert_eq!(
        log.body["items"][0]["after"]["id"],
        id.as_str(),
        "{}",
        log.text
    );
    id
}

async fn waves_run_in_order_canary_first_each_after_the_previous_ended_as_the_dry_run_planned(
    ops: Ops,
) {
    make_racks(&ops.app, 5).await;
    let names = [
        "rack-0005",
        "rack-0003",
        "rack-0001",
        "rack-0004",
        "rack-0002",
    ];
    let body = rollout(
        &names,
        json!({"canary": 1, "batch_size": 2, "max_concurrent_racks": 1}),
    );
    let plan = ops.app.post("/v1/rollouts?dry_run=true", &body).await;
    assert_eq!(plan.status, 200, "{}", plan.text);
    let id = create(&ops, &body).await;
    let done = wait_status(&ops.app, &id, "succeeded").await;
    assert_eq!(
        wave_names(&done),
        wave_names(&plan.body),
        "the dry run planned the executed waves"
    );
    assert_eq!(
        wave_names(&done),
        [
            vec!["rack-0001"],
            vec!["rack-0002", "rack-0003"],
            vec!["rack-0004", "rack-0005"]
        ]
    );
    assert_eq!(done["counts"]["succeeded"], 5, "{done}");
    assert_eq!(done["waves"][0]["canary"], true);
    assert_eq!(done["failure_budget_used"]["failed_racks"], 0);
    let waves = wave_tasks(&ops, &done).await;
    for (i, tasks) in waves.iter().enumerate() {
        assert_eq!(
            tasks.len(),
            done["waves"][i]["racks"].as_array().unwrap().len()
        );
        for t in tasks {
            assert_eq!(t["status"], "succeeded", "{t}");
        }
        if i > 0 {
            let previous_end = waves[i - 1]
                .iter()
                .map(|t| time(&t["finished_at"]))
                .max()
                .unwrap();
            let start = tasks.iter().map(|t| time(&t["created_at"])).min().unwrap();
            assert!(
                start >= previous_end,
                "wave {i} started at {start}, before wave {} ended at {previous_end}",
                i - 1
            );
        }
    }
    // max_concurrent_racks 1: inside a wave, one rack after the other.
    let second = &waves[1];
    assert!(time(&second[1]["created_at"]) >= time(&second[0]["finished_at"]));
    let list = ops
        .app
        .get("/v1/rollouts?status=succeeded&count=exact")
        .await;
    assert_eq!(list.body["total"], 1, "{}", list.text);
    assert_eq!(list.body["items"][0]["id"], id.as_str());
    // An ended rollout takes no more commands.
    ops.app
        .post_empty(&format!("/v1/rollouts/{id}/pause"))
        .await
        .assert_problem(409, "rollout_finished");
}

async fn the_waves_after_the_canary_wait_for_approval(ops: Ops) {
    make_racks(&ops.app, 3).await;
    let names = ["rack-0001", "rack-0002", "rack-0003"];
    let id = create(
        &ops,
        &rollout(
            &names,
            json!({"canary": 1, "batch_size": 2, "approval_after_canary": true}),
        ),
    )
    .await;
    let waiting = wait_status(&ops.app, &id, "awaiting_approval").await;
    assert_eq!(waiting["waves"][0]["status"], "succeeded", "{waiting}");
    assert_eq!(waiting["waves"][1]["counts"]["pending"], 2, "{waiting}");
    assert_eq!(waiting["current_wave"], 1);
    assert_eq!(tasks_of(&ops, "rack-0002").await, 0);
    // Still waiting a while later: nothing moves without the approval.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = ops.app.get(&format!("/v1/rollouts/{id}")).await.body;
    assert_eq!(still["status"], "awaiting_approval");
    assert_eq!(tasks_of(&ops, "rack-0003").await, 0);
    let r = ops
        .app
        .post_empty(&format!("/v1/rollouts/{id}/approve"))
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let done = wait_status(&ops.app, &id, "succeeded").await;
    assert_eq!(done["approved"], true);
    assert_eq!(done["counts"]["succeeded"], 3);

    // A rollout without the gate refuses an approval.
    let other = create(&ops, &rollout(&["rack-0001"], json!({"canary": 0}))).await;
    ops.app
        .post_empty(&format!("/v1/rollouts/{other}/approve"))
        .await
        .assert_problem(409, "no_approval_gate");
    wait_status(&ops.app, &other, "succeeded").await;
}

async fn a_failed_rack_in_wave_two_spends_the_budget_and_halts_before_wave_three(ops: Ops) {
    make_racks(&ops.app, 4).await;
    let names = ["rack-0001", "rack-0002", "rack-0003", "rack-0004"];
    let body = rollout(
        &names,
        json!({"canary": 1, "batch_size": 1, "failure_budget": {"max_failed_racks": 0}}),
    );
    let id = create(&ops, &body).await;
    let halted = wait_status(&ops.app, &id, "halted").await;
    let statuses: Vec<&str> = halted["waves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["succeeded", "failed", "not_run", "not_run"],
        "{halted}"
    );
    assert_eq!(halted["waves"][1]["racks"][0]["outcome"], "failed");
    assert_eq!(halted["waves"][1]["racks"][0]["task_status"], "failed");
    assert_eq!(halted["waves"][2]["racks"][0]["outcome"], "not_run");
    assert_eq!(halted["counts"]["failed"], 1);
    assert_eq!(halted["counts"]["not_run"], 2);
    assert_eq!(halted["failure_budget_used"]["exceeded"], true);
    assert!(
        halted["message"]
            .as_str()
            .unwrap()
            .contains("failure budget"),
        "{halted}"
    );
    assert!(halted["finished_at"].is_string());
    assert_eq!(
        tasks_of(&ops, "rack-0003").await,
        0,
        "later waves never start"
    );
    assert_eq!(tasks_of(&ops, "rack-0004").await, 0);

    // With budget left, the same failure lets the rollout go on to the end.
    let body = rollout(
        &names,
        json!({"canary": 1, "batch_size": 3, "failure_budget": {"max_failed_racks": 1}}),
    );
    let mut body = body;
    body["name"] = json!("second");
    let id = create(&ops, &body).await;
    let done = wait_status(&ops.app, &id, "succeeded").await;
    assert_eq!(done["counts"]["failed"], 1, "{done}");
    assert_eq!(done["counts"]["succeeded"], 3, "{done}");
}

async fn a_closed_window_holds_the_first_wave_until_it_opens(ops: Ops) {
    make_racks(&ops.app, 2).await;
    let opens = Utc::now() + chrono::Duration::seconds(5);
    let mut body = rollout(&["rack-0001", "rack-0002"], json!({"canary": 1}));
    body["window"] = json!({"start": opens.to_rfc3339(), "end": (opens + chrono::Duration::hours(1)).to_rfc3339()});
    let id = create(&ops, &body).await;
    let waiting = wait_status(&ops.app, &id, "waiting_for_window").await;
    assert_eq!(waiting["counts"]["pending"], 2, "{waiting}");
    assert_eq!(tasks_of(&ops, "rack-0001").await, 0);
    let done = wait_status(&ops.app, &id, "succeeded").await;
    let tasks = wave_tasks(&ops, &done).await;
    let first = time(&tasks[0][0]["created_at"]);
    assert!(
        first >= opens - chrono::Duration::milliseconds(5),
        "the first task started at {first}, before the window opened at {opens}"
    );

    // A window that has ended fails the rollout before anything starts.
    let mut body = rollout(&["rack-0001"], json!({}));
    body["window"] = json!({"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T04:00:00Z"});
    let id = create(&ops, &body).await;
    let failed = wait_status(&ops.app, &id, "failed").await;
    assert!(
        failed["message"].as_str().unwrap().contains("window"),
        "{failed}"
    );
    assert_eq!(failed["counts"]["not_run"], 1);
}

async fn verification_fails_a_rack_whose_devices_do_not_validate_clean(ops: Ops) {
    make_racks(&ops.app, 3).await;
    let names = ["rack-0001", "rack-0002", "rack-0003"];
    let strategy = json!({"canary": 1, "batch_size": 1, "verify": "validation",
        "failure_budget": {"max_failed_racks": 0}});
    let id = create(&ops, &rollout(&names, strategy)).await;
    let halted = wait_status(&ops.app, &id, "halted").await;
    assert_eq!(halted["waves"][0]["status"], "succeeded", "{halted}");
    let rack = &halted["waves"][1]["racks"][0];
    assert_eq!(rack["task_status"], "succeeded", "{halted}");
    assert_eq!(rack["outcome"], "failed", "{halted}");
    assert!(
        rack["reason"].as_str().unwrap().contains("validation"),
        "{halted}"
    );
    assert_eq!(halted["waves"][2]["status"], "not_run");
    assert_eq!(tasks_of(&ops, "rack-0003").await, 0);
}
