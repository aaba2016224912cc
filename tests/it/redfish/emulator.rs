//! Racks whose trays are `sushy-emulator` systems, driven through the API and the Temporal
//! worker with the `redfish` provider, on PostgreSQL and on SQLite.

use flow::components::{DevicePower, ManagerSet};
use flow::domain::ComponentType;
use serde_json::{Value, json};

use super::{Setup, tray};
use crate::support::Backend;
use crate::support::ops::{Ops, OpsBuilder};
use crate::support::redfish::{PASSWORD, Sushy, System, TempDir, free_port, next_bmc_ip};

const COMPUTE_MAC: &str = "02:00:00:00:aa:01";
const SWITCH_MAC: &str = "02:00:00:00:bb:01";
/// What the emulator's chassis reports as serial number, whatever the system.
const EMULATED_SERIAL: &str = "437XR1138R2";

fn system(name: &str, power: &'static str, mac: &str) -> System {
    System {
        name: name.into(),
        power,
        mac: mac.into(),
        bios_version: "1.0.0".into(),
    }
}

/// A rack of one compute tray and one NVSwitch tray, each with its host BMC's address.
fn rack(name: &str, compute_ip: Option<&str>, switch_ip: Option<&str>) -> Value {
    let bmc = |mac: &str, ip: Option<&str>| match ip {
        Some(ip) => json!([{"type": "host", "mac_address": mac, "ip_address": ip}]),
        None => json!([{"type": "host", "mac_address": mac}]),
    };
    json!({
        "name": name,
        "manufacturer": "NVIDIA",
        "serial_number": format!("RACK-{name}"),
        "components": [
            {"type": "compute", "name": format!("{name}-compute-1"), "manufacturer": "NVIDIA",
             "model": "GB200", "serial_number": EMULATED_SERIAL, "firmware_version": "1.0.0",
             "bmcs": bmc(COMPUTE_MAC, compute_ip)},
            {"type": "nvswitch", "name": format!("{name}-switch-1"), "manufacturer": "NVIDIA",
             "serial_number": format!("{name}-SW-1"),
             "bmcs": bmc(SWITCH_MAC, switch_ip)}
        ]
    })
}

fn both(set: &ManagerSet, backend: Backend) -> OpsBuilder {
    OpsBuilder::new(backend)
        .managers(ComponentType::Compute, set.clone())
        .managers(ComponentType::NvSwitch, set.clone())
}

async fn submit(ops: &Ops, operation: &str, body: Value) -> String {
    let r = ops.operate(operation, &body).await;
    assert_eq!(r.status, 202, "{}", r.text);
    r.body["task_ids"][0].as_str().unwrap().to_string()
}

/// Every component step of a task, flattened.
fn steps(task: &Value) -> Vec<Value> {
    task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["components"].as_array().unwrap().clone())
        .collect()
}

async fn power_of(set: &ManagerSet, ip: &str) -> DevicePower {
    let status = set.status.clone().unwrap();
    status
        .power_status(&tray(ComponentType::Compute, Some(ip), "x"))
        .await
        .unwrap()
}

async fn power_on_and_off(backend: Backend) {
    let port = free_port();
    let (cip, sip) = (next_bmc_ip(), next_bmc_ip());
    let _compute = Sushy::start(&cip, port, &system("c1", "On", COMPUTE_MAC), None).await;
    let _switch = Sushy::start(&sip, port, &system("s1", "On", SWITCH_MAC), None).await;
    let set = Setup::http(port).managers();
    both(&set, backend)
        .run(|ops| async move {
            ops.app
                .create_rack(&rack("rf1", Some(&cip), Some(&sip)))
                .await;
            let target = json!({"target_spec": {"racks": [{"name": "rf1"}]}});

            let mut graceful = target.clone();
            graceful["forced"] = json!(false);
            let task = ops
                .wait_end(&submit(&ops, "power-off", graceful).await)
                .await;
            assert_eq!(task["status"], "succeeded", "{task}");
            assert_eq!(power_of(&set, &cip).await, DevicePower::Off);
            assert_eq!(power_of(&set, &sip).await, DevicePower::Off);

            let task = ops
                .wait_end(&submit(&ops, "power-on", target.clone()).await)
                .await;
            assert_eq!(task["status"], "succeeded", "{task}");
            assert_eq!(power_of(&set, &cip).await, DevicePower::On);
            assert_eq!(power_of(&set, &sip).await, DevicePower::On);

            let mut forced = target.clone();
            forced["forced"] = json!(true);
            let task = ops.wait_end(&submit(&ops, "power-off", forced).await).await;
            assert_eq!(task["status"], "succeeded", "{task}");
            assert_eq!(power_of(&set, &cip).await, DevicePower::Off);
            assert!(task.to_string().contains("force_power_off"), "{task}");
        })
        .await;
}

async fn firmware_through_simple_update(backend: Backend) {
    let port = free_port();
    let cip = next_bmc_ip();
    let _compute = Sushy::start(&cip, port, &system("c1", "On", COMPUTE_MAC), None).await;
    let dir = TempDir::new();
    // The emulator's SimpleUpdate bumps the BIOS minor version: 1.0.0 becomes 1.1.0.
    let catalog = dir.write(
        "catalog.toml",
        "[[firmware]]\ntype = \"compute\"\nmodel = \"GB200\"\nversion = \"1.1.0\"\n\
         image_uri = \"http://127.0.0.1:9/gb200-bios-1.1.0.bin\"\nchecksum = \"sha256:00\"\n",
    );
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(catalog);
    let set = setup.managers();
    both(&set, backend)
        .run(|ops| async move {
            ops.app
                .create_rack(&rack("rf2", Some(&cip), Some("127.0.0.1")))
                .await;
            let body = |version: &str| {
                json!({"target_spec": {"racks": [{"name": "rf2", "component_types": ["compute"]}]},
                       "target_version": version})
            };
            // A version the catalog has no image for is refused before any task exists.
            let r = ops.operate("firmware-upgrade", &body("9.9.9")).await;
            let problem = r.assert_problem(422, "unsupported");
            assert!(
                problem.to_string().contains("9.9.9")
                    && problem.to_string().contains("FLOW_FIRMWARE_CATALOG"),
                "{problem}"
            );

            let task = ops
                .wait_end(&submit(&ops, "firmware-upgrade", body("1.1.0")).await)
                .await;
            assert_eq!(task["status"], "succeeded", "{task}");
            assert!(
                task.to_string().contains("firmware updated to 1.1.0"),
                "{task}"
            );
            let seen = set
                .inventory
                .clone()
                .unwrap()
                .observe(
                    ComponentType::Compute,
                    &[tray(ComponentType::Compute, Some(&cip), "x")],
                    false,
                )
                .await
                .unwrap();
            let version = seen.seen.values().next().unwrap().firmware_version.clone();
            assert_eq!(version.as_deref(), Some("1.1.0"));
        })
        .await;
}

async fn wrong_password(backend: Backend) {
    let port = free_port();
    let (cip, sip) = (next_bmc_ip(), next_bmc_ip());
    let _compute = Sushy::start(&cip, port, &system("c1", "Off", COMPUTE_MAC), None).await;
    let _switch = Sushy::start(&sip, port, &system("s1", "Off", SWITCH_MAC), None).await;
    let dir = TempDir::new();
    // The NVSwitch tray's BMC gets a login of its own, and it is wrong.
    let creds = dir.write(
        "credentials.toml",
        &format!(
            "[bmc.\"{SWITCH_MAC}\"]\nusername = \"flow-admin\"\npassword = \"not-{PASSWORD}\"\n"
        ),
    );
    let mut setup = Setup::http(port);
    setup.credentials_file = Some(creds);
    let set = setup.managers();
    both(&set, backend)
        .run(|ops| async move {
            ops.app
                .create_rack(&rack("rf3", Some(&cip), Some(&sip)))
                .await;
            let id = submit(
                &ops,
                "power-on",
                json!({"target_spec": {"racks": [{"name": "rf3"}]}}),
            )
            .await;
            let task = ops.wait_end(&id).await;
            assert_eq!(task["status"], "failed", "{task}");
            let switch = steps(&task)
                .into_iter()
                .find(|c| c["name"] == "rf3-switch-1")
                .unwrap();
            let error = switch["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("rf3-switch-1")
                    && error.contains(&format!("credentials rejected by BMC {sip}")),
                "{switch}"
            );
            assert_eq!(switch["attempts"], 1, "never retried: {switch}");
            let listed = ops.app.get(&format!("/v1/tasks/{id}")).await;
            assert!(!listed.text.contains(PASSWORD), "{}", listed.text);
        })
        .await;
}

async fn stopped_emulator(backend: Backend) {
    let port = free_port();
    let cip = next_bmc_ip();
    let mut compute = Sushy::start(&cip, port, &system("c1", "Off", COMPUTE_MAC), None).await;
    let set = Setup::http(port).managers();
    compute.stop().await;
    both(&set, backend)
        .run(|ops| async move {
            ops.app.create_rack(&rack("rf4", Some(&cip), Some("127.0.0.1"))).await;
            let id = submit(
                &ops,
                "power-on",
                json!({"target_spec": {"racks": [{"name": "rf4", "component_types": ["compute"]}]}}),
            )
            .await;
            let task = ops.wait_end(&id).await;
            assert_eq!(task["status"], "failed", "{task}");
            let step = &steps(&task)[0];
            assert_eq!(step["attempts"], 3, "retried by the rule: {step}");
            let error = step["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("unreachable") && error.contains(&cip),
                "{step}"
            );
        })
        .await;
}

async fn validation_from_redfish(backend: Backend) {
    let port = free_port();
    let (cip, sip, gone) = (next_bmc_ip(), next_bmc_ip(), next_bmc_ip());
    let _compute = Sushy::start(&cip, port, &system("c1", "On", COMPUTE_MAC), None).await;
    let _switch = Sushy::start(&sip, port, &system("s1", "Off", SWITCH_MAC), None).await;
    let set = Setup::http(port).managers();
    both(&set, backend)
        .run(|ops| async move {
            ops.app
                .create_rack(&rack("rf5", Some(&cip), Some(&sip)))
                .await;
            let mut other = rack("rf6", Some(&gone), None);
            other["components"].as_array_mut().unwrap().truncate(1);
            other["components"][0]["serial_number"] = json!("SN-GONE");
            other["components"][0]["bmcs"][0]["mac_address"] = json!("02:00:00:00:cc:01");
            ops.app.create_rack(&other).await;

            let r = ops.app.post_empty("/v1/validation").await;
            assert_eq!(r.status, 200, "{}", r.text);
            let summary = &r.body["summary"];
            // The compute tray matches (serial, firmware 1.0.0, MAC); the switch's serial is the
            // emulator's; the tray whose BMC never answers is unreachable, not missing.
            assert_eq!(summary["match"], 1, "{}", r.text);
            assert_eq!(summary["mismatch"], 1, "{}", r.text);
            assert_eq!(summary["unreachable"], 1, "{}", r.text);
            assert_eq!(summary["missing"], 0, "{}", r.text);
            let text = r.text.clone();
            assert!(
                text.contains(EMULATED_SERIAL) && text.contains("serial_number"),
                "{text}"
            );
            let rack = ops
                .app
                .get("/v1/components?rack_name=rf5&type=compute")
                .await;
            assert_eq!(rack.status, 200, "{}", rack.text);
        })
        .await;
}

async fn no_bmc_address_is_refused(backend: Backend) {
    let set = Setup::http(free_port()).managers();
    both(&set, backend)
        .run(|ops| async move {
            ops.app.create_rack(&rack("rf7", None, None)).await;
            let r = ops
                .operate(
                    "power-on",
                    &json!({"target_spec": {"racks": [{"name": "rf7"}]}}),
                )
                .await;
            let problem = r.assert_problem(422, "unsupported").to_string();
            assert!(
                problem.contains("rf7-compute-1") && problem.contains("no BMC IP address"),
                "{problem}"
            );
        })
        .await;
}

async fn ingest_records_the_system_identity(backend: Backend) {
    let port = free_port();
    let (cip, sip) = (next_bmc_ip(), next_bmc_ip());
    let compute = Sushy::start(&cip, port, &system("c1", "Off", COMPUTE_MAC), None).await;
    let _switch = Sushy::start(&sip, port, &system("s1", "Off", SWITCH_MAC), None).await;
    let set = Setup::http(port).managers();
    let uuid = compute.uuid.clone();
    both(&set, backend)
        .run(|ops| async move {
            ops.app
                .create_rack(&rack("rf8", Some(&cip), Some(&sip)))
                .await;
            let id = submit(
                &ops,
                "ingest",
                json!({"target_spec": {"racks": [{"name": "rf8"}]}}),
            )
            .await;
            let task = ops.wait_end(&id).await;
            assert_eq!(task["status"], "succeeded", "{task}");
            let r = ops
                .app
                .get("/v1/components?rack_name=rf8&type=compute")
                .await;
            assert_eq!(r.body["items"][0]["external_id"], json!(uuid), "{}", r.text);
        })
        .await;
}

macro_rules! on_both {
    ($($name:ident => $body:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    tokio::time::timeout(std::time::Duration::from_secs(240), super::$body(super::Backend::Postgres))
                        .await
                        .expect("bounded");
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    tokio::time::timeout(std::time::Duration::from_secs(240), super::$body(super::Backend::Sqlite))
                        .await
                        .expect("bounded");
                }
            )*
        }
    };
}

on_both! {
    emulated_trays_power_off_gracefully_on_and_off_forced => power_on_and_off,
    firmware_goes_through_simple_update_and_the_new_version_is_read_back => firmware_through_simple_update,
    a_wrong_password_fails_the_tray_naming_the_credential_problem_without_retries => wrong_password,
    a_stopped_emulator_is_retried_then_failed_as_unreachable => stopped_emulator,
    validation_reports_serial_power_and_firmware_from_redfish => validation_from_redfish,
    a_tray_without_a_bmc_address_is_refused_at_submission => no_bmc_address_is_refused,
    ingest_records_the_bmc_system_identity_as_external_id => ingest_records_the_system_identity,
}
