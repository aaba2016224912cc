//! Firmware downgrade and rollback on simulated devices in a full Temporal run: a downgrade
//! installs a named older catalog version through the recipe path, a rollback returns each
//! tray to the version it ran before its last upgrade, and both are refused (naming the
//! components) where nothing is recorded or the catalog has no recipe of the version.

use std::time::Duration;

use flow::components::providers::SimConfig;
use flow::components::providers::redfish::Catalog;
use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::fixtures::gb200_rack;
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    downgrade_and_rollback_go_through_the_recipe_path_and_refuse_what_is_not_recorded: |b: OpsBuilder| b.sim(two_versions),
);

/// Two versions of a one-bundle recipe per tray type; shelves have none.
fn catalog() -> String {
    let mut text = String::new();
    for version in ["gb200-r1", "gb200-r2"] {
        for (kind, part) in [("compute", "FW_BMC_0"), ("nvswitch", "MGX_FW_BMC_0")] {
            text.push_str(&format!(
                "[[firmware]]\ntype = \"{kind}\"\nversion = \"{version}\"\n[[firmware.bundle]]\n\
                 image_uri = \"http://firmware.invalid/{kind}-{version}.fwpkg\"\n\
                 activate = \"none\"\n[firmware.bundle.expect]\n{part} = \"{version}\"\n\n"
            ));
        }
    }
    text
}

fn two_versions(s: &mut SimConfig) {
    let path = std::env::temp_dir().join(format!("flow-rollback-{}.toml", uuid::Uuid::new_v4()));
    std::fs::write(&path, catalog()).unwrap();
    s.catalog = Catalog::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    s.firmware_duration = Duration::from_millis(100);
}

fn trays_target() -> Value {
    json!({"racks": [{"name": "rack-0001", "component_types": ["compute", "nvswitch"]}]})
}

async fn run(ops: &Ops, operation: &str, body: Value) -> Value {
    let r = ops.operate(operation, &body).await;
    assert_eq!(r.status, 202, "{operation}: {}", r.text);
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{operation}: {task}");
    task
}

fn tray_ids(rack: &Value) -> Vec<uuid::Uuid> {
    rack["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "compute" || c["type"] == "nvswitch")
        .map(|c| c["id"].as_str().unwrap().parse().unwrap())
        .collect()
}

fn assert_all_run(ops: &Ops, rack: &Value, version: &str) {
    for id in tray_ids(rack) {
        assert_eq!(ops.sim.firmware_of(id).as_deref(), Some(version), "{id}");
    }
}

fn refused(r: &crate::support::TestResponse, status: u16, code: &str, field: &str) {
    assert_eq!(r.status, status, "{}", r.text);
    assert_eq!(r.body["code"], code, "{}", r.text);
    let fields: Vec<&str> = r.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&field), "{field} not in {fields:?}");
}

async fn downgrade_and_rollback_go_through_the_recipe_path_and_refuse_what_is_not_recorded(
    ops: Ops,
) {
    let rack = ops.app.create_rack(&gb200_rack(1, 1)).await;
    let up = |v: &str| json!({"target_spec": trays_target(), "target_version": v});
    run(&ops, "firmware-upgrade", up("gb200-r1")).await;
    // The first version the trays were seen running: nothing before it to go back to.
    let rollback = json!({"target_spec": trays_target()});
    let r = ops.operate("firmware-rollback", &rollback).await;
    refused(&r, 409, "no_firmware_history", "components.r0001-gpu00");
    run(&ops, "firmware-upgrade", up("gb200-r2")).await;
    assert_all_run(&ops, &rack, "gb200-r2");

    let r = ops
        .operate(
            "firmware-downgrade",
            &json!({"target_spec": trays_target()}),
        )
        .await;
    refused(&r, 400, "invalid_input", "target_version");
    let r = ops.operate("firmware-downgrade", &up("gb200-r0")).await;
    refused(&r, 409, "no_catalog_entry", "components.r0001-gpu00");
    // The whole rack: its shelves have no recipe in the catalog.
    let whole =
        json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "target_version": "gb200-r1"});
    let r = ops.operate("firmware-downgrade", &whole).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["code"], "no_catalog_entry");
    assert!(r.text.contains("powershelf"), "{}", r.text);

    let dry = ops
        .app
        .post(
            "/v1/operations/firmware-downgrade?dry_run=true",
            &up("gb200-r1"),
        )
        .await;
    assert_eq!(dry.status, 200, "{}", dry.text);
    let plan = &dry.body["racks"][0]["firmware"]["components"];
    assert!(
        plan.as_array()
            .unwrap()
            .iter()
            .all(|c| c["recipe"] == "gb200-r1" && c["status"] == "recipe"),
        "{plan}"
    );
    let task = run(&ops, "firmware-downgrade", up("gb200-r1")).await;
    assert_eq!(task["operation"], "downgrade", "its own code: {task}");
    assert_all_run(&ops, &rack, "gb200-r1");

    // The downgrade was the last upgrade of the trays: a rollback returns them to r2.
    let dry = ops
        .app
        .post("/v1/operations/firmware-rollback?dry_run=true", &rollback)
        .await;
    assert_eq!(dry.status, 200, "{}", dry.text);
    let plan = &dry.body["racks"][0]["firmware"]["components"];
    assert!(
        plan.as_array()
            .unwrap()
            .iter()
            .all(|c| c["recipe"] == "gb200-r2"),
        "{plan}"
    );
    let task = run(&ops, "firmware-rollback", rollback.clone()).await;
    assert_eq!(
        task["operation"], "rollback",
        "its own code, run by the upgrade's rule: {task}"
    );
    assert_all_run(&ops, &rack, "gb200-r2");
    let listed = ops.app.get("/v1/tasks?operation=rollback").await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let ids: Vec<_> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(
        ids,
        [&task["id"]],
        "the rollback is found by its code: {}",
        listed.text
    );
    let gpu = tray_ids(&rack)[0];
    let c = ops.app.get(&format!("/v1/components/{gpu}")).await.body;
    assert_eq!(
        c["component"]["observed_firmware_version"], "gb200-r2",
        "{c}"
    );
    let r = ops
        .operate(
            "firmware-rollback",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}}),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(
        r.body["code"], "no_firmware_history",
        "shelves were never upgraded"
    );
    a_racks_upgrade_rule_runs_its_downgrades(&ops, &rack).await;
}

/// With no rule for `downgrade`, the rule associated with the rack for `upgrade` runs it (the
/// order is: a rule of the code itself, then the rack's or the default `upgrade` rule, then
/// the built-in one).
async fn a_racks_upgrade_rule_runs_its_downgrades(ops: &Ops, rack: &Value) {
    let rules = ops
        .app
        .get("/v1/operation-rules?builtin=true&operation=upgrade")
        .await;
    let builtin = rules.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["operation"] == "upgrade" && r["builtin"] == true)
        .unwrap_or_else(|| panic!("no built-in upgrade rule: {}", rules.text))
        .clone();
    let stored =
        json!({"name": "rack firmware", "operation": "upgrade", "stages": builtin["stages"]});
    let r = ops.app.post("/v1/operation-rules", &stored).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let rule_id = r.body["id"].clone();
    let rack_id = rack["id"].as_str().unwrap();
    let path = format!("/v1/racks/{rack_id}/operation-rules/upgrade");
    let r = ops
        .app
        .call(
            axum::http::Method::PUT,
            &path,
            Some(&json!({"rule_id": rule_id})),
            &[],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let up = json!({"target_spec": trays_target(), "target_version": "gb200-r1"});
    let task = run(ops, "firmware-downgrade", up).await;
    assert_eq!(task["operation"], "downgrade", "{task}");
    assert_eq!(task["rule"]["source"], "rack", "{task}");
    assert_eq!(task["rule"]["id"], rule_id, "{task}");
    assert_all_run(ops, rack, "gb200-r1");
}
