//! Racks whose trays are the captured GB200 BMCs, through the API and the Temporal worker on both
//! databases: ingest registers every tray with an id that stays unique, and a clash fails the
//! tray naming both components instead of leaking a database error.

use serde_json::{Value, json};

use super::server::Handle;
use super::tree::{GB200, GBSWITCH};
use crate::redfish::Setup;
use crate::support::Backend;
use crate::support::ops::{Ops, OpsBuilder};
use crate::support::redfish::free_port;
use flow::inventory::model::ComponentType;

fn tray(kind: &str, name: &str, serial: &str, mac: &str, at: &Handle) -> Value {
    json!({"type": kind, "name": name, "manufacturer": "NVIDIA", "model": "GB200",
        "serial_number": serial,
        "bmcs": [{"type": "host", "mac_address": mac, "ip_address": at.ip}]})
}

fn rack(name: &str, components: Vec<Value>) -> Value {
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

macro_rules! on_both {
    ($($name:ident => $body:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$body(super::Backend::Postgres).await
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$body(super::Backend::Sqlite).await
                }
            )*
        }
    };
}

on_both! {
    ingest_registers_every_gb200_tray_with_a_unique_id_and_a_clash_names_both => ingest_keeps_ids_unique,
    a_reset_type_the_bmc_does_not_list_is_unsupported_in_the_dry_run_and_at_submission => unsupported_before_anything_is_sent,
}
