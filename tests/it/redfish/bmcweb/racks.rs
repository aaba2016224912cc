//! Racks whose trays are the captured GB200 BMCs, through the API and the Temporal worker on both
//! databases: ingest registers every tray with an id that stays unique, and a clash fails the
//! tray naming both components instead of leaking a database error.

use serde_json::{Value, json};

use super::server::Handle;
use super::tree::{GB200, GBSWITCH};
use crate::redfish::Setup;
use crate::support::Backend;
use crate::support::ops::{Ops, OpsBuilder};
use crate::support::redfish::{TempDir, USER, free_port, next_bmc_ip};
use flow::inventory::model::ComponentType;

pub(super) fn tray(kind: &str, name: &str, serial: &str, mac: &str, at: &Handle) -> Value {
    json!({"type": kind, "name": name, "manufacturer": "NVIDIA", "model": "GB200",
        "serial_number": serial,
        "bmcs": [{"type": "host", "mac_address": mac, "ip_address": at.ip}]})
}

pub(super) fn rack(name: &str, components: Vec<Value>) -> Value {
    json!({"name": name, "manufacturer": "NVIDIA", "serial_number": format!("RACK-{name}"),
        "components": components})
}

async fn switch(port: u16, chassis_serial: &'static str) -> Handle {
    super::bmc(GBSWITCH, port, move |b| {
        b.tree.set(
            "/redfish/v1/Chassis/BMC_eeprom",
            "/SerialNumber",
            json!(chassis_serial),
        )
    })
    .await
}

async fn ingest(ops: &Ops, rack: &str) -> Value {
    let body = json!({"target_spec": {"racks": [{"name": rack}]}});
    let r = ops.operate("ingest", &body).await;
    assert_eq!(r.status, 202, "{}", r.text);
    ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await
}

async fn external_ids(ops: &Ops, rack: &str) -> Vec<(String, Value)> {
    let r = ops
        .app
        .get(&format!("/v1/components?rack_name={rack}"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut ids: Vec<(String, Value)> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["external_id"].clone(),
            )
        })
        .collect();
    ids.sort_by(|a, b| a.0.cmp(&b.0));
    ids
}

async fn ingest_keeps_ids_unique(backend: Backend) {
    let port = free_port();
    let compute = super::bmc(GB200, port, |_| {}).await;
    let (one, two) = (switch(port, "SW-0001").await, switch(port, "SW-0002").await);
    let again = switch(port, "SW-0001").await;
    let set = Setup::http(port).managers();
    OpsBuilder::new(backend)
        .managers(ComponentType::Compute, set.clone())
        .managers(ComponentType::NvSwitch, set.clone())
        .run(|ops| async move {
            let first = rack(
                "gb1",
                vec![
                    tray(
                        "compute",
                        "gb1-c1",
                        "1583124820080",
                        "3c:6d:66:0e:db:dc",
                        &compute,
                    ),
                    tray("nvswitch", "gb1-s1", "SW-0001", "64:33:aa:56:68:01", &one),
                    tray("nvswitch", "gb1-s2", "SW-0002", "64:33:aa:56:68:02", &two),
                ],
            );
            ops.app.create_rack(&first).await;
            let task = ingest(&ops, "gb1").await;
            assert_eq!(task["status"], "succeeded", "{task}");
            assert_eq!(
                external_ids(&ops, "gb1").await,
                [
                    (
                        "gb1-c1".into(),
                        json!("501f2928-84ea-8579-cf52-dc2dbd2e4656")
                    ),
                    ("gb1-s1".into(), json!("chassis-serial:SW-0001")),
                    ("gb1-s2".into(), json!("chassis-serial:SW-0002")),
                ]
            );

            // A tray whose BMC reports the same identity as gb1-s1 (a moved or cloned board).
            let second = rack(
                "gb2",
                vec![tray(
                    "nvswitch",
                    "gb2-s1",
                    "SW-0003",
                    "64:33:aa:56:68:03",
                    &again,
                )],
            );
            ops.app.create_rack(&second).await;
            let task = ingest(&ops, "gb2").await;
            assert_eq!(task["status"], "failed", "{task}");
            let text = task.to_string();
            assert!(
                text.contains("409 conflict")
                    && text.contains("gb2-s1")
                    && text.contains("gb1-s1")
                    && text.contains("chassis-serial:SW-0001"),
                "{text}"
            );
            assert!(
                !text.to_lowercase().contains("unique") && !text.contains("duplicate key"),
                "{text}"
            );
        })
        .await;
}

async fn unsupported_before_anything_is_sent(backend: Backend) {
    let port = free_port();
    let compute = super::bmc(GB200, port, |b| {
        // This host cannot shut down gracefully.
        b.tree.set(
            "/redfish/v1/Systems/System_0/ResetActionInfo",
            "/Parameters/0/AllowableValues",
            json!(["On", "ForceOff"]),
        );
    })
    .await;
    let set = Setup::http(port).managers();
    let state = compute.bmc.clone();
    OpsBuilder::new(backend)
        .managers(ComponentType::Compute, set)
        .run(|ops| async move {
            let r = rack(
                "gb3",
                vec![tray(
                    "compute",
                    "gb3-c1",
                    "1583124820080",
                    "3c:6d:66:0e:db:dc",
                    &compute,
                )],
            );
            ops.app.create_rack(&r).await;
            let body = json!({"target_spec": {"racks": [{"name": "gb3"}]}, "forced": false});
            let plan = ops
                .app
                .post("/v1/operations/power-off?dry_run=true", &body)
                .await;
            assert_eq!(plan.status, 200, "{}", plan.text);
            let planned = plan.body["racks"][0].to_string();
            assert!(
                planned.contains("GracefulShutdown") && planned.contains("gb3-c1"),
                "{planned}"
            );
            let refused = ops.operate("power-off", &body).await;
            let problem = refused.assert_problem(422, "unsupported").to_string();
            assert!(problem.contains("GracefulShutdown"), "{problem}");
            // Forced, the tray can: ForceOff is listed.
            let forced = json!({"target_spec": {"racks": [{"name": "gb3"}]}, "forced": true});
            let r = ops.operate("power-off", &forced).await;
            assert_eq!(r.status, 202, "{}", r.text);
            let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
            assert_eq!(task["status"], "succeeded", "{task}");
            assert_eq!(
                state.lock().unwrap().actions,
                ["ComputerSystem.Reset:ForceOff"]
            );
        })
        .await;
}

async fn bmc_reset_through_an_operation(backend: Backend) {
    let port = free_port();
    let at = switch(port, "SW-0010").await;
    let set = Setup::http(port).managers();
    let state = at.bmc.clone();
    OpsBuilder::new(backend)
        .managers(ComponentType::NvSwitch, set)
        .run(|ops| async move {
            let s1 = tray("nvswitch", "gb5-s1", "SW-0010", "64:33:aa:56:68:10", &at);
            ops.app.create_rack(&rack("gb5", vec![s1])).await;
            let body = json!({"target_spec": {"racks": [{"name": "gb5"}]}, "mode": "bmc"});
            let plan = ops
                .app
                .post("/v1/operations/power-reset?dry_run=true", &body)
                .await;
            assert_eq!(plan.status, 200, "{}", plan.text);
            assert_eq!(plan.body["racks"][0]["outcome"], "start", "{}", plan.body);
            let r = ops.operate("power-reset", &body).await;
            assert_eq!(r.status, 202, "{}", r.text);
            let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
            assert_eq!(task["status"], "succeeded", "{task}");
            assert_eq!(task["operation"], "bmc_reset", "{task}");
            {
                let b = state.lock().unwrap();
                // Only the manager was reset: the host's power was never asked to change.
                assert_eq!(b.actions, ["Manager.Reset:GracefulRestart"]);
                assert_eq!(
                    (b.reboots, b.back),
                    (1, 1),
                    "the BMC went away and came back"
                );
            }
            let forced = json!({"target_spec": {"racks": [{"name": "gb5"}]}, "mode": "bmc",
                "forced": true});
            let refused = ops.operate("power-reset", &forced).await;
            assert_eq!(refused.error_fields(), vec!["forced".to_string()]);
        })
        .await;
}

async fn refused_is_rejected_silent_is_unreachable(backend: Backend) {
    let port = free_port();
    let compute = super::bmc(GB200, port, |_| {}).await;
    // Nothing listens on this address: the BMC never answers.
    let silent = next_bmc_ip();
    let dir = TempDir::new();
    let mac = "3c:6d:66:0e:db:dc";
    let mut setup = Setup::http(port);
    setup.credentials_file = Some(dir.write(
        "credentials.toml",
        &format!("[bmc.\"{mac}\"]\nusername = \"{USER}\"\npassword = \"not-the-password\"\n"),
    ));
    let set = setup.managers();
    OpsBuilder::new(backend)
        .managers(ComponentType::Compute, set)
        .run(|ops| async move {
            let refused = tray("compute", "gb6-c1", "1583124820080", mac, &compute);
            let mut gone = tray(
                "compute",
                "gb6-c2",
                "SN-SILENT",
                "3c:6d:66:0e:db:dd",
                &compute,
            );
            gone["bmcs"][0]["ip_address"] = json!(silent);
            ops.app.create_rack(&rack("gb6", vec![refused, gone])).await;
            let r = ops.app.post_empty("/v1/validation").await;
            assert_eq!(r.status, 200, "{}", r.text);
            let summary = &r.body["summary"];
            assert_eq!(
                (
                    &summary["rejected"],
                    &summary["unreachable"],
                    &summary["missing"]
                ),
                (&json!(1), &json!(1), &json!(0)),
                "{}",
                r.text
            );
            let kinds: Vec<(String, String)> = r.body["diffs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| (d["kind"].to_string(), d["message"].to_string()))
                .collect();
            let of = |kind: &str| {
                kinds
                    .iter()
                    .find(|(k, _)| k.trim_matches('"') == kind)
                    .map(|(_, m)| m.clone())
                    .unwrap_or_else(|| panic!("no {kind} in {kinds:?}"))
            };
            assert!(of("rejected").contains("credentials"), "{kinds:?}");
            assert!(of("unreachable").contains(&silent), "{kinds:?}");
        })
        .await;
}

/// A retried firmware step follows the task its first attempt started: the first attempt's wait
/// runs out while the BMC's task still runs, the second resumes from the heartbeat's handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_firmware_step_follows_the_same_task_and_never_pushes_twice() {
    let port = free_port();
    // Five polls of running: more than the first attempt's 3 s wait can see.
    let compute = super::bmc(GB200, port, |b| b.tasks.running_polls = Some(5)).await;
    let dir = TempDir::new();
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(push_or_fetch_catalog(&dir));
    let set = setup.managers();
    let state = compute.bmc.clone();
    OpsBuilder::new(Backend::Postgres)
        .managers(ComponentType::Compute, set)
        .run(|ops| async move {
            let c1 = tray("compute", "gb7-c1", "1583124820080", "3c:6d:66:0e:db:dc", &compute);
            ops.app.create_rack(&rack("gb7", vec![c1])).await;
            let rule = json!({"name": "short firmware wait", "operation": "upgrade", "stages": [
                {"component_types": ["compute"], "max_parallel": 1, "timeout": "1m",
                 "retry": {"max_attempts": 2, "initial_interval": "1s", "backoff_coefficient": 1,
                           "max_interval": "1s"},
                 "actions": [{"action": "firmware_start"},
                             {"action": "firmware_wait", "timeout": "3s", "poll_interval": "1s"}]}]});
            let r = ops.app.post("/v1/operation-rules", &rule).await;
            assert_eq!(r.status, 201, "{}", r.text);
            let body = json!({"target_spec": {"racks": [{"name": "gb7"}]},
                "target_version": {"compute": "25.06-2"}, "rule_id": r.body["id"]});
            let r = ops.operate("firmware-upgrade", &body).await;
            assert_eq!(r.status, 202, "{}", r.text);
            let task = ops.wait_end(r.body["task_ids"][0].as_str().unwrap()).await;
            assert_eq!(task["status"], "succeeded", "{task}");
            let step = &task["stages"][0]["components"][0];
            assert_eq!(step["attempts"], 2, "the first attempt's wait ran out: {task}");
            let b = state.lock().unwrap();
            assert_eq!(b.tasks.pushes.len(), 1, "pushed once: {:?}", b.requests);
        })
        .await;
}

/// A catalog with a pushed bundle (`25.06-2`) and a fetched image (`by-uri`) for compute trays,
/// and a recipe for another model's trays only (`gb300-r1`).
pub(super) fn push_or_fetch_catalog(dir: &TempDir) -> std::path::PathBuf {
    let file = dir.write("gb200.fwpkg", r#"{"install": {"FW_BMC_0": "25.06-2"}}"#);
    dir.write(
        "catalog.toml",
        &format!(
            "[[firmware]]\ntype = \"compute\"\nversion = \"25.06-2\"\nfile = {:?}\n\
             [firmware.expect]\nFW_BMC_0 = \"25.06-2\"\n\n\
             [[firmware]]\ntype = \"compute\"\nversion = \"by-uri\"\n\
             image_uri = \"https://fw.example/gb200.fwpkg\"\n\n\
             [[firmware]]\ntype = \"compute\"\nmodel = \"GB300\"\nversion = \"gb300-r1\"\n\
             image_uri = \"https://fw.example/gb300.fwpkg\"\n",
            file.display().to_string()
        ),
    )
}

async fn no_update_path_is_unsupported_unsent(backend: Backend) {
    let port = free_port();
    let compute = super::bmc(GB200, port, |b| {
        // This BMC takes no pushed image (and, like the captured tree, offers no SimpleUpdate).
        for uri in ["/MultipartHttpPushUri", "/HttpPushUri"] {
            b.tree.set("/redfish/v1/UpdateService", uri, json!(null));
        }
    })
    .await;
    let dir = TempDir::new();
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(push_or_fetch_catalog(&dir));
    let set = setup.managers();
    let state = compute.bmc.clone();
    OpsBuilder::new(backend)
        .managers(ComponentType::Compute, set)
        .run(|ops| async move {
            let c1 = tray(
                "compute",
                "gb4-c1",
                "1583124820080",
                "3c:6d:66:0e:db:dc",
                &compute,
            );
            ops.app.create_rack(&rack("gb4", vec![c1])).await;
            for (version, why) in [
                ("25.06-2", "MultipartHttpPushUri"),
                ("by-uri", "SimpleUpdate"),
            ] {
                let body = json!({"target_spec": {"racks": [{"name": "gb4"}]},
                    "target_version": {"compute": version}});
                let plan = ops
                    .app
                    .post("/v1/operations/firmware-upgrade?dry_run=true", &body)
                    .await;
                assert_eq!(plan.status, 200, "{}", plan.text);
                let unsupported = plan.body["racks"][0]["unsupported"].to_string();
                assert!(
                    unsupported.contains(why) && unsupported.contains("gb4-c1"),
                    "{version}: {}",
                    plan.body
                );
                let refused = ops.operate("firmware-upgrade", &body).await;
                let problem = refused.assert_problem(422, "unsupported").to_string();
                assert!(problem.contains(why), "{problem}");
            }
            // A recipe the catalog holds for another model only: unsupported on this tray.
            let body = json!({"target_spec": {"racks": [{"name": "gb4"}]},
                "target_version": {"compute": "gb300-r1"}});
            let plan = ops
                .app
                .post("/v1/operations/firmware-upgrade?dry_run=true", &body)
                .await;
            assert_eq!(plan.status, 200, "{}", plan.text);
            let tray = &plan.body["racks"][0]["firmware"]["components"][0];
            assert_eq!(tray["name"], "gb4-c1", "{}", plan.body);
            assert_eq!(tray["status"], "unsupported", "{}", plan.body);
            assert!(
                tray["reason"].as_str().unwrap().contains("model GB200"),
                "{tray}"
            );
            assert_eq!(plan.body["racks"][0]["outcome"], "reject", "{}", plan.body);
            let b = state.lock().unwrap();
            assert!(b.tasks.pushes.is_empty());
            let posts: Vec<&String> = b
                .requests
                .iter()
                .filter(|r| r.starts_with("POST") && !r.contains("/Sessions"))
                .collect();
            assert!(posts.is_empty(), "{posts:?}");
        })
        .await;
}

on_both! {
    ingest_registers_every_gb200_tray_with_a_unique_id_and_a_clash_names_both => ingest_keeps_ids_unique,
    a_reset_type_the_bmc_does_not_list_is_unsupported_in_the_dry_run_and_at_submission => unsupported_before_anything_is_sent,
    a_bmc_reset_runs_as_an_operation_and_ends_once_the_bmc_is_back => bmc_reset_through_an_operation,
    a_bmc_that_refuses_is_rejected_and_one_that_never_answers_is_unreachable => refused_is_rejected_silent_is_unreachable,
    a_bmc_without_the_update_path_the_image_needs_is_unsupported_in_the_dry_run_and_at_submission => no_update_path_is_unsupported_unsent,
}
