//! NVLink domains as operation targets (`target_spec.nvl_domains`), the domain rule of
//! firmware operations (`409` `domain_split`, `allow_split_domain` audited), on both backends;
//! and a full run on the Temporal dev server against simulated devices targeting a domain.

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::ops_on_both_backends;
use crate::support::TestApp;
use crate::support::fixtures::gb200_rack;
use crate::support::ops::Ops;

on_both_backends!(
    a_domain_target_resolves_to_every_live_rack_and_bad_ones_are_refused,
    a_firmware_upgrade_of_part_of_a_domain_is_refused_naming_the_racks_left_out,
    a_firmware_rollout_keeps_each_domain_in_one_wave,
);

mod run {
    use super::*;
    ops_on_both_backends!(
        a_firmware_upgrade_of_a_domain_runs_one_task_per_rack,
        an_allowed_split_upgrade_runs_and_its_audit_entry_records_the_override,
    );
}

/// Racks `rack-0001` … `rack-{n}` (one compute tray each); racks 1 and 2 in domain `nvl-a`,
/// 3 and 4 (when there) in `nvl-b`.
pub(crate) async fn domains(app: &TestApp, n: u32) {
    for i in 1..=n {
        app.create_rack(&gb200_rack(i, 1)).await;
    }
    for (domain, racks) in [("nvl-a", [1, 2]), ("nvl-b", [3, 4])] {
        if racks[1] > n {
            continue;
        }
        let r = app.post("/v1/nvl-domains", &json!({"name": domain})).await;
        assert_eq!(r.status, 201, "{}", r.text);
        let refs: Vec<Value> = racks
            .iter()
            .map(|i| json!({"name": format!("rack-{i:04}")}))
            .collect();
        let r = app
            .post(
                &format!("/v1/nvl-domains/{domain}/racks"),
                &json!({ "racks": refs }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
}

pub(crate) fn planned_racks(body: &Value) -> Vec<String> {
    let mut names: Vec<String> = body["racks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rack_name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

async fn a_domain_target_resolves_to_every_live_rack_and_bad_ones_are_refused(app: TestApp) {
    domains(&app, 3).await;
    let r = app
        .post(
            "/v1/operations/power-on?dry_run=true",
            &json!({"target_spec": {"nvl_domains": [{"name": "nvl-a"}]}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(planned_racks(&r.body), ["rack-0001", "rack-0002"]);
    // By id too; a deleted rack drops out.
    let id = app.get("/v1/nvl-domains/nvl-a").await.body["id"].clone();
    let r = app
        .post(
            "/v1/operations/power-off?dry_run=true",
            &json!({"target_spec": {"nvl_domains": [{"id": id}]}}),
        )
        .await;
    assert_eq!(planned_racks(&r.body), ["rack-0001", "rack-0002"]);

    let r = app
        .post(
            "/v1/operations/power-on",
            &json!({"target_spec": {"nvl_domains": [{"name": "nvl-zz"}]}}),
        )
        .await;
    r.assert_problem(404, "not_found");
    assert!(r.text.contains("nvl-zz"), "{}", r.text);
    for (body, field) in [
        (
            json!({"target_spec": {"nvl_domains": [{"name": "nvl-a"}], "racks": [{"name": "rack-0003"}]}}),
            "target_spec",
        ),
        (
            json!({"target_spec": {"nvl_domains": []}}),
            "target_spec.nvl_domains",
        ),
        (
            json!({"target_spec": {"nvl_domains": [{"name": "nvl-a", "id": id}]}}),
            "target_spec.nvl_domains[0]",
        ),
    ] {
        let r = app.post("/v1/operations/power-on", &body).await;
        r.assert_problem(400, "invalid_input");
        assert!(
            r.error_fields().contains(&field.to_string()),
            "{body}: {}",
            r.text
        );
    }
    assert_eq!(app.count_rows("tasks").await, 0);
}

async fn a_firmware_upgrade_of_part_of_a_domain_is_refused_naming_the_racks_left_out(app: TestApp) {
    domains(&app, 3).await;
    let part = json!({"target_spec": {"racks": [{"name": "rack-0001"}, {"name": "rack-0003"}]}, "target_version": "2.0.0"});
    for path in [
        "/v1/operations/firmware-upgrade",
        "/v1/operations/firmware-upgrade?dry_run=true",
    ] {
        let r = app.post(path, &part).await;
        r.assert_problem(409, "domain_split");
        assert_eq!(r.error_fields(), ["nvl_domains.nvl-a"], "{}", r.text);
        assert!(
            r.body["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("rack-0002")
        );
        assert!(
            r.body["detail"]
                .as_str()
                .unwrap()
                .contains("allow_split_domain")
        );
    }
    // A downgrade is a firmware operation too: the same refusal, before its catalog is asked.
    let down =
        json!({"target_spec": {"racks": [{"name": "rack-0002"}]}, "target_version": "1.0.0"});
    for path in [
        "/v1/operations/firmware-downgrade",
        "/v1/operations/firmware-downgrade?dry_run=true",
    ] {
        let r = app.post(path, &down).await;
        r.assert_problem(409, "domain_split");
        assert_eq!(r.error_fields(), ["nvl_domains.nvl-a"], "{}", r.text);
        assert!(r.text.contains("rack-0001"), "{}", r.text);
    }
    // The whole domain (and a rack in none) passes; so does the domain as a target.
    let whole = json!({"target_spec": {"racks": [{"name": "rack-0001"}, {"name": "rack-0002"}, {"name": "rack-0003"}]}});
    let r = app
        .post("/v1/operations/firmware-upgrade?dry_run=true", &whole)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app
        .post(
            "/v1/operations/firmware-upgrade?dry_run=true",
            &json!({"target_spec": {"nvl_domains": [{"name": "nvl-a"}]}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Told to: the dry run plans it.
    let mut allowed = part.clone();
    allowed["allow_split_domain"] = json!(true);
    let r = app
        .post("/v1/operations/firmware-upgrade?dry_run=true", &allowed)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Power operations are not bound by the rule; the rack shortcut is.
    let r = app
        .post(
            "/v1/operations/power-on?dry_run=true",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let found = app.get("/v1/racks?name=rack-0001").await;
    let rack = found.body["items"][0]["id"].as_str().unwrap().to_string();
    let r = app
        .post(
            &format!("/v1/racks/{rack}/firmware?dry_run=true"),
            &json!({}),
        )
        .await;
    r.assert_problem(409, "domain_split");
    assert_eq!(app.count_rows("tasks").await, 0);
}

async fn a_firmware_rollout_keeps_each_domain_in_one_wave(app: TestApp) {
    domains(&app, 5).await;
    let names: Vec<Value> = (1..=5)
        .map(|i| json!({"name": format!("rack-{i:04}")}))
        .collect();
    let body = |strategy: Value| {
        json!({"name": "fw", "operation": {"kind": "firmware_upgrade", "target_version": "2.0.0"},
            "target_spec": {"racks": names}, "strategy": strategy})
    };
    let r = app
        .post(
            "/v1/rollouts?dry_run=true",
            &body(json!({"canary": 1, "batch_size": 1})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        crate::rollouts::wave_names(&r.body),
        [
            vec!["rack-0001", "rack-0002"],
            vec!["rack-0003", "rack-0004"],
            vec!["rack-0005"]
        ]
    );
    // Told to split: one rack per wave, and the waves are planned (each allowed to split).
    let r = app
        .post(
            "/v1/rollouts?dry_run=true",
            &body(json!({"canary": 1, "batch_size": 1, "split_domains": true})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(crate::rollouts::wave_names(&r.body).len(), 5);
    // A rollout of part of a domain is refused up front.
    let r = app
        .post(
            "/v1/rollouts?dry_run=true",
            &json!({"name": "fw", "operation": {"kind": "firmware_upgrade"},
                "target_spec": {"racks": [{"name": "rack-0001"}]}}),
        )
        .await;
    r.assert_problem(409, "domain_split");
    // Domains as a rollout target.
    let r = app
        .post(
            "/v1/rollouts?dry_run=true",
            &json!({"name": "fw", "operation": {"kind": "firmware_upgrade"},
                "target_spec": {"nvl_domains": [{"name": "nvl-b"}]}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        crate::rollouts::wave_names(&r.body),
        [vec!["rack-0003", "rack-0004"]]
    );
    let r = app
        .post(
            "/v1/rollouts?dry_run=true",
            &json!({"name": "fw", "operation": {"kind": "power_on"},
                "target_spec": {"nvl_domains": [{"name": "nope"}]}}),
        )
        .await;
    r.assert_problem(404, "not_found");
}

async fn a_firmware_upgrade_of_a_domain_runs_one_task_per_rack(ops: Ops) {
    domains(&ops.app, 3).await;
    let r = ops
        .operate(
            "firmware-upgrade",
            &json!({"target_spec": {"nvl_domains": [{"name": "nvl-a"}]}, "target_version": "2.0.0"}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let tasks = r.body["task_ids"].as_array().unwrap().clone();
    assert_eq!(tasks.len(), 2, "{}", r.text);
    for id in tasks {
        let task = ops.wait_end(id.as_str().unwrap()).await;
        assert_eq!(task["status"], "succeeded", "{task}");
    }
}

async fn an_allowed_split_upgrade_runs_and_its_audit_entry_records_the_override(ops: Ops) {
    domains(&ops.app, 2).await;
    let r = ops
        .operate(
            "firmware-upgrade",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "target_version": "2.0.0", "allow_split_domain": true}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let request_id = r.body["request_id"].as_str().unwrap().to_string();
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    let audit = ops
        .app
        .get(&format!(
            "/v1/audit?resource=operation_request:{request_id}"
        ))
        .await;
    assert_eq!(audit.status, 200, "{}", audit.text);
    let items = audit.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{}", audit.text);
    assert_eq!(
        items[0]["after"],
        json!({"allow_split_domain": true, "split_domains": {"nvl-a": ["rack-0002"]}})
    );
}
