//! Firmware recipes on simulated devices in a full Temporal run: every tray's bundles in order
//! with their activations, the rack's AC cycle through its shelves once every tray staged its
//! images, the parts verified after it, a failing bundle reported per component, and the AC
//! cycle skipped when no bundle needs it; a bring-up runs the desired firmware's recipe the same way.

use std::time::Duration;

use flow::components::providers::SimConfig;
use flow::components::providers::redfish::Catalog;
use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::fixtures::gb200_rack;
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    an_upgrade_runs_each_trays_recipe_then_ac_cycles_the_rack_once_and_verifies: |b: OpsBuilder| b.sim(|s| recipes(s, true, None)),
    a_failing_bundle_fails_its_trays_naming_the_bundle: |b: OpsBuilder| b.sim(|s| recipes(s, true, Some(1))),
    without_an_ac_cycle_bundle_the_ac_cycle_stages_are_skipped: |b: OpsBuilder| b.sim(|s| recipes(s, false, None)),
    a_stored_rule_spells_the_recipe_out_bundle_by_bundle: |b: OpsBuilder| b.sim(|s| recipes(s, true, None)),
    a_bring_up_whose_desired_firmware_is_a_recipe_runs_it_and_ac_cycles_the_rack: |b: OpsBuilder| b.sim(|s| {
        recipes(s, true, None);
        s.desired_firmware = "gb200-r1".into();
    }),
);

const CATALOG: &str = r#"
[[firmware]]
type = "compute"
version = "gb200-r1"
[[firmware.bundle]]
image_uri = "http://firmware.invalid/bmc.fwpkg"
activate = "bmc_reset"
[firmware.bundle.expect]
FW_BMC_0 = "25.06-2"
[[firmware.bundle]]
image_uri = "http://firmware.invalid/cpld.fwpkg"
activate = "AC"
[firmware.bundle.expect]
FW_CPLD_0 = "0.1C"
[[firmware.bundle]]
image_uri = "http://firmware.invalid/bios.fwpkg"
activate = "power_cycle"
[firmware.bundle.expect]
UEFI = "2.1.0"

[[firmware]]
type = "nvswitch"
version = "gb200-r1"
[[firmware.bundle]]
image_uri = "http://firmware.invalid/switch-bmc.fwpkg"
activate = "bmc_reset"
[firmware.bundle.expect]
MGX_FW_BMC_0 = "25.06-3"
[[firmware.bundle]]
image_uri = "http://firmware.invalid/nvos.fwpkg"
activate = "power_cycle"
[firmware.bundle.expect]
MGX_FW_NVOS_0 = "25.02"
"#;

/// The simulator with the GB200-shaped recipes (the CPLD bundle on `ac_cycle`, or on `none`).
fn recipes(s: &mut SimConfig, ac_cycle: bool, fail_bundle: Option<u32>) {
    let path = std::env::temp_dir().join(format!("flow-recipes-{}.toml", uuid::Uuid::new_v4()));
    let activate = if ac_cycle { "ac_cycle" } else { "none" };
    std::fs::write(&path, CATALOG.replace("\"AC\"", &format!("\"{activate}\""))).unwrap();
    s.catalog = Catalog::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    s.firmware_duration = Duration::from_millis(100);
    s.fail_bundle = fail_bundle;
}

/// The firmware dry run of `body`: the rack's plan (asserted 200).
async fn firmware_plan(ops: &Ops, body: &Value) -> Value {
    let dry = ops
        .app
        .post("/v1/operations/firmware-upgrade?dry_run=true", body)
        .await;
    assert_eq!(dry.status, 200, "{}", dry.text);
    dry.body["racks"][0]["firmware"].clone()
}

/// The component of a firmware plan that `pick` chooses.
fn planned(plan: &Value, pick: impl Fn(&Value) -> bool) -> Value {
    plan["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| pick(c))
        .unwrap_or_else(|| panic!("not in the plan: {plan}"))
        .clone()
}

async fn upgrade(ops: &Ops) -> Value {
    let body =
        json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "target_version": "gb200-r1"});
    let r = ops.operate("firmware-upgrade", &body).await;
    assert_eq!(r.status, 202, "{}", r.text);
    ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await
}

fn trays(rack: &Value) -> Vec<(uuid::Uuid, String)> {
    rack["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "compute" || c["type"] == "nvswitch")
        .map(|c| {
            (
                c["id"].as_str().unwrap().parse().unwrap(),
                c["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

async fn an_upgrade_runs_each_trays_recipe_then_ac_cycles_the_rack_once_and_verifies(ops: Ops) {
    let rack = ops.app.create_rack(&gb200_rack(1, 2)).await;
    let body =
        json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "target_version": "gb200-r1"});
    let plan = firmware_plan(&ops, &body).await;
    assert_eq!(plan["ac_cycle"], true, "{plan}");
    let gpu = planned(&plan, |c| c["name"] == "r0001-gpu00");
    assert_eq!(gpu["status"], "recipe", "{gpu}");
    assert_eq!(gpu["recipe"], "gb200-r1");
    let activations: Vec<&str> = gpu["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["activate"].as_str().unwrap())
        .collect();
    assert_eq!(activations, ["bmc_reset", "ac_cycle", "power_cycle"]);
    assert_eq!(
        gpu["bundles"][0]["parts"][0],
        json!({"part": "FW_BMC_0", "expected": "25.06-2", "observed": null})
    );
    let shelf = planned(&plan, |c| c["type"] == "powershelf");
    assert_eq!(
        shelf["status"], "whole",
        "no recipe for shelves: one update"
    );
    let task = upgrade(&ops).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    let names: Vec<&str> = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"AC cycle: shelves off to drain"),
        "{names:?}"
    );
    let events = ops.sim.events();
    let at = |pred: &dyn Fn(&flow::components::providers::SimEvent) -> bool| {
        events.iter().position(pred)
    };
    use flow::domain::ComponentType::{Compute, NvSwitch, PowerShelf};
    let last_tray_push = events
        .iter()
        .rposition(|e| e.op == "firmware_start" && e.kind != PowerShelf)
        .unwrap();
    let shelf_off = at(&|e| e.kind == PowerShelf && e.op == "force_power_off").unwrap();
    assert!(
        last_tray_push < shelf_off,
        "the shelves go off only after every tray staged its images"
    );
    let shelf_offs = events
        .iter()
        .filter(|e| e.kind == PowerShelf && e.op == "force_power_off")
        .count();
    assert_eq!(shelf_offs, 2, "one AC cycle: each shelf off once");
    let shelf_on = at(&|e| e.kind == PowerShelf && e.op == "power_on").unwrap();
    let switch_on = events
        .iter()
        .rposition(|e| e.kind == NvSwitch && e.op == "power_on")
        .unwrap();
    let compute_on = events
        .iter()
        .rposition(|e| e.kind == Compute && e.op == "power_on")
        .unwrap();
    assert!(shelf_off < shelf_on && shelf_on < switch_on && switch_on < compute_on);
    assert!(
        events[shelf_on].started - events[shelf_off].at >= Duration::from_secs(10),
        "the shelves stay off 10 s for the power to drain"
    );
    assert!(
        at(&|e| e.kind == Compute && e.op == "bmc_reset").unwrap() < last_tray_push,
        "the BMC bundle is reset before the later bundles go"
    );
    for (id, kind) in trays(&rack) {
        assert_eq!(
            ops.sim.firmware_of(id).as_deref(),
            Some("gb200-r1"),
            "{kind}"
        );
        let c = ops.app.get(&format!("/v1/components/{id}")).await.body;
        assert_eq!(
            c["component"]["observed_firmware_version"], "gb200-r1",
            "{c}"
        );
    }
    // The dry run now reads the parts each bundle installed.
    let again = firmware_plan(&ops, &body).await;
    let gpu = planned(&again, |c| c["name"] == "r0001-gpu00");
    let parts: Vec<&Value> = gpu["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["parts"].as_array().unwrap())
        .collect();
    assert_eq!(
        parts,
        [
            &json!({"part": "FW_BMC_0", "expected": "25.06-2", "observed": "25.06-2"}),
            &json!({"part": "FW_CPLD_0", "expected": "0.1C", "observed": "0.1C"}),
            &json!({"part": "UEFI", "expected": "2.1.0", "observed": "2.1.0"}),
        ],
        "{gpu}"
    );
}

async fn a_failing_bundle_fails_its_trays_naming_the_bundle(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    let task = upgrade(&ops).await;
    assert_eq!(task["status"], "failed", "{task}");
    let message = task["message"].as_str().unwrap();
    assert!(
        message.contains("r0001-gpu00") && message.contains("r0001-gpu01"),
        "{message}"
    );
    assert!(message.contains("recipe gb200-r1 bundle 1"), "{message}");
    assert!(
        message.contains("simulated failure installing gb200-r1"),
        "{message}"
    );
    let staged = ops.sim.events().iter().any(|e| e.op == "force_power_off");
    assert!(!staged, "no AC cycle after a failed stage");
}

async fn without_an_ac_cycle_bundle_the_ac_cycle_stages_are_skipped(ops: Ops) {
    let rack = ops.app.create_rack(&gb200_rack(1, 1)).await;
    let task = upgrade(&ops).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    assert!(
        !ops.sim.events().iter().any(|e| e.op == "force_power_off"),
        "no AC cycle"
    );
    let text = task.to_string();
    assert!(
        text.contains("skipped: no tray staged an image that needs the rack's AC cycle"),
        "{text}"
    );
    for (id, kind) in trays(&rack) {
        assert_eq!(
            ops.sim.firmware_of(id).as_deref(),
            Some("gb200-r1"),
            "{kind} {id}: {:?}",
            ops.sim
                .events()
                .iter()
                .filter(|e| e.component_id == id)
                .map(|e| e.op)
                .collect::<Vec<_>>()
        );
    }
}

async fn a_bring_up_whose_desired_firmware_is_a_recipe_runs_it_and_ac_cycles_the_rack(ops: Ops) {
    let rack = ops.app.create_rack(&gb200_rack(1, 1)).await;
    let r = ops
        .app
        .post(
            &format!("/v1/racks/{}/bring-up", rack["id"].as_str().unwrap()),
            &json!({}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{task}");
    let names: Vec<&str> = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"AC cycle: shelves off to drain"),
        "{names:?}"
    );
    let events = ops.sim.events();
    let bundles = |kind| {
        events
            .iter()
            .filter(|e| e.kind == kind && e.op == "firmware_start")
            .count()
    };
    use flow::domain::ComponentType::{Compute, NvSwitch, PowerShelf};
    assert_eq!(bundles(Compute), 3, "three bundles on the one compute tray");
    assert_eq!(bundles(NvSwitch), 4, "two bundles on each NVSwitch tray");
    let shelf_offs = events
        .iter()
        .filter(|e| e.kind == PowerShelf && e.op == "force_power_off")
        .count();
    assert_eq!(shelf_offs, 2, "one AC cycle: each shelf off once");
    for (id, kind) in trays(&rack) {
        assert_eq!(
            ops.sim.firmware_of(id).as_deref(),
            Some("gb200-r1"),
            "{kind}"
        );
    }
}

/// A stored rule's stage: `actions` on trays of `kinds`.
fn stage(name: &str, kinds: &[&str], when: Option<&str>, actions: Value) -> Value {
    let mut stage = json!({"name": name, "component_types": kinds, "max_parallel": 18,
        "timeout": "30m", "actions": actions});
    if let Some(when) = when {
        stage["when"] = json!(when);
    }
    stage
}

/// Bundle `i` pushed, followed and activated.
fn bundle_steps(i: u32) -> [Value; 3] {
    [
        json!({"action": "firmware_start", "bundle": i}),
        json!({"action": "firmware_wait", "timeout": "2m", "poll_interval": "100ms"}),
        json!({"action": "firmware_activate", "bundle": i, "timeout": "2m", "poll_interval": "100ms"}),
    ]
}

async fn a_stored_rule_spells_the_recipe_out_bundle_by_bundle(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 2)).await;
    // A bundle that is no index and a `when` that is no condition are refused, each named.
    let bad = json!({"name": "bad", "operation": "upgrade", "stages": [
        stage("a", &["compute"], None, json!([{"action": "firmware_start", "bundle": -1}])),
        stage("b", &["compute"], Some("sometimes"), json!([{"action": "firmware_verify"}])),
    ]});
    let r = ops.app.post("/v1/operation-rules", &bad).await;
    r.assert_problem(400, "invalid_input");
    let fields = r.error_fields();
    for field in ["stages[0].actions[0].bundle", "stages[1].when"] {
        assert!(fields.contains(&field.to_string()), "{field}: {}", r.text);
    }

    let steps: Vec<Value> = (0..3).flat_map(bundle_steps).collect();
    let power = |op: &str, expect: &str| {
        json!([{"action": "power_control", "operation": op},
            {"action": "verify_power", "expect": expect, "timeout": "1m", "poll_interval": "100ms"}])
    };
    let verify = json!({"action": "firmware_verify", "timeout": "1m", "poll_interval": "100ms"});
    let mut back_on = power("power_on", "on").as_array().unwrap().clone();
    back_on.push(verify);
    let rule = json!({"name": "gb200 by bundle", "operation": "upgrade", "stages": [
        stage("compute bundles", &["compute"], None, Value::Array(steps)),
        stage("trays off", &["compute", "nvswitch"], Some("ac_cycle"), power("force_power_off", "off")),
        stage("shelves off", &["powershelf"], Some("ac_cycle"), power("force_power_off", "off")),
        stage("shelves on", &["powershelf"], Some("ac_cycle"), power("power_on", "on")),
        stage("compute on", &["compute"], Some("ac_cycle"), Value::Array(back_on)),
    ]});
    let r = ops.app.post("/v1/operation-rules", &rule).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let body = json!({"target_spec": {"racks": [{"name": "rack-0001"}]},
        "target_version": {"compute": "gb200-r1"}, "rule_id": r.body["id"]});
    let r = ops.operate("firmware-upgrade", &body).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
    assert_eq!(task["status"], "succeeded", "{task:#}");
    assert_eq!(task["rule"]["name"], "gb200 by bundle", "{task:#}");

    use flow::domain::ComponentType::{Compute, PowerShelf};
    let events = ops.sim.events();
    let gpu00: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == Compute && e.serial == "SN-0001-compute-00")
        .map(|e| e.op)
        .filter(|op| ["firmware_start", "bmc_reset", "cold_reset"].contains(op))
        .collect();
    assert_eq!(
        gpu00,
        [
            "firmware_start",
            "bmc_reset",
            "firmware_start",
            "firmware_start",
            "cold_reset"
        ],
        "bundle 0 then its BMC reset, bundle 1 staged for the AC cycle, bundle 2 then its power cycle"
    );
    let last_push = events
        .iter()
        .rposition(|e| e.op == "firmware_start")
        .unwrap();
    let shelf_off = events
        .iter()
        .position(|e| e.kind == PowerShelf && e.op == "force_power_off")
        .expect("the rack is AC-cycled");
    assert!(last_push < shelf_off, "after every tray staged its images");
    // Every part of the recipe is live: the dry run reads them back.
    let dry = firmware_plan(&ops, &body).await;
    let gpu = planned(&dry, |c| c["name"] == "r0001-gpu00");
    for bundle in gpu["bundles"].as_array().unwrap() {
        for part in bundle["parts"].as_array().unwrap() {
            assert_eq!(part["observed"], part["expected"], "{gpu}");
        }
    }
}
