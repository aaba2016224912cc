//! The `redfish` provider against trees captured from real GB200 BMCs (tests/mockups), served by
//! a stand-in that behaves like bmcweb: the host system among several, ids that stay unique,
//! actions checked against their ActionInfo, power as the original maps it, the BMC's reboot.

/// Declares each `name => body` test twice, on PostgreSQL and on SQLite.
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

mod activation;
mod firmware;
mod killed;
mod racks;
mod server;
mod tree;
mod update;

use flow::clients::redfish::{Bmc as Address, RedfishError};
use flow::components::{
    DeviceError, DevicePower, PowerControl, PowerOp, PowerStatus, Registration,
};
use flow::inventory::model::ComponentType;
use serde_json::json;
use server::{Handle, start};
use tree::{GB200, GBSWITCH};

use super::{Setup, tray};
use crate::support::redfish::{free_port, next_bmc_ip};

const SYSTEM: &str = "/redfish/v1/Systems/System_0";

async fn bmc(tree: &str, port: u16, configure: impl FnOnce(&mut server::Bmc)) -> Handle {
    start(tree, next_bmc_ip(), port, configure).await
}

fn device(kind: ComponentType, at: &Handle) -> flow::components::Device {
    tray(kind, Some(&at.ip), "SN-NOT-IN-THE-TREE")
}

/// Reads the system until its power settles, as the rule's verify step does.
async fn settled(power: &dyn PowerStatus, device: &flow::components::Device) -> Vec<DevicePower> {
    let mut seen = Vec::new();
    for _ in 0..6 {
        seen.push(power.power_status(device).await.unwrap());
    }
    seen
}

#[tokio::test]
async fn a_gb200_compute_tray_drives_its_host_system_never_the_gpu_baseboard() {
    let port = free_port();
    let at = bmc(GB200, port, |_| {}).await;
    let manager = Setup::http(port).manager();
    let compute = device(ComponentType::Compute, &at);
    assert_eq!(
        manager.register(&compute).await,
        Ok(Some("501f2928-84ea-8579-cf52-dc2dbd2e4656".into())),
        "System_0's UUID"
    );
    manager.set_power(&compute, PowerOp::Off).await.unwrap();
    let seen = settled(manager.as_ref(), &compute).await;
    assert_eq!(seen.first(), Some(&DevicePower::On), "still powering off");
    assert_eq!(seen.last(), Some(&DevicePower::Off), "{seen:?}");
    manager.set_power(&compute, PowerOp::On).await.unwrap();
    manager
        .set_power(&compute, PowerOp::ForceOff)
        .await
        .unwrap();
    manager.set_power(&compute, PowerOp::Restart).await.unwrap();
    manager
        .set_power(&compute, PowerOp::ForceRestart)
        .await
        .unwrap();
    let b = at.bmc.lock().unwrap();
    assert_eq!(
        b.actions,
        [
            "ComputerSystem.Reset:GracefulShutdown",
            "ComputerSystem.Reset:On",
            "ComputerSystem.Reset:ForceOff",
            "ComputerSystem.Reset:GracefulRestart",
            "ComputerSystem.Reset:ForceRestart"
        ]
    );
    let posts: Vec<&String> = b
        .requests
        .iter()
        .filter(|r| r.starts_with("POST"))
        .collect();
    assert!(
        posts
            .iter()
            .all(|p| !p.contains("HGX_Baseboard") && (p.contains(SYSTEM) || p.contains("Sessions"))),
        "{posts:?}"
    );
    // One walk of the tree and one read of the ActionInfo for the whole run.
    let count = |what: &str| b.requests.iter().filter(|r| *r == what).count();
    assert_eq!(count("GET /redfish/v1/Systems"), 1);
    assert_eq!(count("GET /redfish/v1/Systems/System_0/ResetActionInfo"), 1);
}

#[tokio::test]
async fn switch_trays_without_a_uuid_register_by_their_chassis_serial() {
    let port = free_port();
    let serial = |s: &'static str| {
        move |b: &mut server::Bmc| {
            b.tree
                .set("/redfish/v1/Chassis/BMC_eeprom", "/SerialNumber", json!(s))
        }
    };
    let first = bmc(GBSWITCH, port, serial("1321125053937")).await;
    let second = bmc(GBSWITCH, port, serial("1321125053999")).await;
    let manager = Setup::http(port).manager();
    let id = |at: &Handle| {
        let d = device(ComponentType::NvSwitch, at);
        let m = manager.clone();
        async move { m.register(&d).await }
    };
    assert_eq!(
        id(&first).await,
        Ok(Some("chassis-serial:1321125053937".into()))
    );
    assert_eq!(
        id(&second).await,
        Ok(Some("chassis-serial:1321125053999".into()))
    );
    // Without a chassis serial, the BMC's own MAC.
    let bare = bmc(GBSWITCH, port, |b| {
        b.tree.set(
            "/redfish/v1/Chassis/BMC_eeprom",
            "/SerialNumber",
            json!(null),
        )
    })
    .await;
    assert_eq!(
        id(&bare).await,
        Ok(Some("bmc-mac:64:33:aa:56:68:7e".into()))
    );
}

#[tokio::test]
async fn reset_types_come_from_action_info_and_an_unlisted_one_is_unsupported_unsent() {
    let port = free_port();
    let at = bmc(GB200, port, |b| {
        // A BMC whose host cannot shut down gracefully, and whose "On" is only "ForceOn".
        b.tree.set(
            "/redfish/v1/Systems/System_0/ResetActionInfo",
            "/Parameters/0/AllowableValues",
            json!(["ForceOff", "ForceOn", "ForceRestart"]),
        );
    })
    .await;
    let manager = Setup::http(port).manager();
    let compute = device(ComponentType::Compute, &at);
    let err = manager.set_power(&compute, PowerOp::Off).await.unwrap_err();
    assert!(
        matches!(&err, DeviceError::Unsupported(m)
            if m.contains("GracefulShutdown") && m.contains("ForceOff, ForceOn, ForceRestart")),
        "{err:?}"
    );
    manager.set_power(&compute, PowerOp::On).await.unwrap();
    let b = at.bmc.lock().unwrap();
    assert_eq!(b.actions, ["ComputerSystem.Reset:ForceOn"]);
    assert_eq!(
        b.requests
            .iter()
            .filter(|r| r.starts_with("POST") && r.contains("Actions"))
            .count(),
        1,
        "nothing was posted for the unsupported power off"
    );
}

#[tokio::test]
async fn the_stand_in_refuses_an_unlisted_reset_type_like_bmcweb_with_its_status() {
    let port = free_port();
    let at = bmc(GB200, port, |_| {}).await;
    let setup = Setup::http(port).redfish_setup();
    let client = flow::clients::redfish::RedfishClient::new(
        setup.client.clone(),
        setup.credentials().unwrap(),
    )
    .unwrap();
    let addr = Address {
        ip: &at.ip,
        mac: None,
        manufacturer: "NVIDIA",
    };
    let target = "/redfish/v1/Managers/BMC_0/Actions/Manager.Reset";
    for body in [json!({}), json!({"ResetType": "PowerCycle"})] {
        let err = client.post(addr, target, &body).await.unwrap_err();
        assert_eq!(err.status(), Some(400), "{err:?}");
        assert!(matches!(err, RedfishError::Refused { .. }), "{err:?}");
        assert!(err.message().contains("ResetType"), "{err}");
    }
    let err = client.get(addr, "/redfish/v1/Nothing").await.unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert_eq!(at.bmc.lock().unwrap().reboots, 0);
}

#[tokio::test]
async fn warm_reset_restarts_the_host_and_cold_reset_cycles_the_chassis() {
    let port = free_port();
    let compute = bmc(GB200, port, |_| {}).await;
    let switch = bmc(GBSWITCH, port, |b| {
        // A tray whose chassis cannot cycle power: the system's PowerCycle is used.
        b.tree.set(
            "/redfish/v1/Chassis/BMC_eeprom/ResetActionInfo",
            "/Parameters/0/AllowableValues",
            json!([]),
        );
    })
    .await;
    let manager = Setup::http(port).manager();
    for at in [&compute, &switch] {
        let d = device(ComponentType::Compute, at);
        manager.set_power(&d, PowerOp::WarmReset).await.unwrap();
        manager.set_power(&d, PowerOp::ColdReset).await.unwrap();
        let seen = settled(manager.as_ref(), &d).await;
        assert_eq!(seen.last(), Some(&DevicePower::On), "{seen:?}");
    }
    assert_eq!(
        compute.bmc.lock().unwrap().actions,
        [
            "ComputerSystem.Reset:GracefulRestart",
            "Chassis.Reset:PowerCycle"
        ]
    );
    assert_eq!(
        switch.bmc.lock().unwrap().actions,
        [
            "ComputerSystem.Reset:GracefulRestart",
            "ComputerSystem.Reset:PowerCycle"
        ]
    );
    assert_eq!(
        compute.bmc.lock().unwrap().reboots,
        0,
        "the BMC was not reset"
    );
}

#[tokio::test]
async fn a_bmc_reset_is_done_once_the_bmc_went_away_and_answers_again() {
    let port = free_port();
    let at = bmc(GBSWITCH, port, |_| {}).await;
    let manager = Setup::http(port).manager();
    let d = device(ComponentType::NvSwitch, &at);
    manager.set_power(&d, PowerOp::BmcReset).await.unwrap();
    {
        let b = at.bmc.lock().unwrap();
        assert_eq!(b.actions, ["Manager.Reset:GracefulRestart"]);
        assert_eq!(
            (b.reboots, b.back),
            (1, 1),
            "returned only after the BMC came back"
        );
    }
    // The session died with the reboot: the next call logs in again and works.
    assert_eq!(manager.power_status(&d).await, Ok(DevicePower::On));
    assert_eq!(at.bmc.lock().unwrap().logins, 2);
}

#[tokio::test]
async fn when_nothing_in_the_tree_decides_the_credentials_file_names_the_host() {
    let port = free_port();
    // No ManagerProvidingService and no Reset offered: neither rule can tell the systems apart.
    let undecided = |b: &mut server::Bmc| {
        b.tree.set("/redfish/v1", "/Links", json!({}));
        b.tree.set(SYSTEM, "/Actions", json!({}));
    };
    let at = bmc(GB200, port, undecided).await;
    let compute = device(ComponentType::Compute, &at);
    let err = Setup::http(port)
        .manager()
        .register(&compute)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeviceError::Rejected(m) if m.contains("system = ")),
        "{err:?}"
    );
    let dir = crate::support::redfish::TempDir::new();
    let mac = compute.bmc_mac.clone().unwrap();
    let file = dir.write(
        "credentials.toml",
        &format!(
            "[bmc.\"{mac}\"]\nusername = \"{}\"\npassword = \"{}\"\nsystem = \"System_0\"\n",
            crate::support::redfish::USER,
            crate::support::redfish::PASSWORD
        ),
    );
    let mut setup = Setup::http(port);
    setup.credentials_file = Some(file);
    assert_eq!(
        setup.manager().register(&compute).await,
        Ok(Some("501f2928-84ea-8579-cf52-dc2dbd2e4656".into()))
    );
}

#[tokio::test]
async fn observed_firmware_comes_from_the_firmware_inventory_and_a_version_nothing_runs_differs() {
    use flow::components::Inventory;
    let port = free_port();
    let at = bmc(GB200, port, |_| {}).await;
    let observe = |setup: Setup, version: Option<&str>| {
        let mut d = device(ComponentType::Compute, &at);
        d.firmware_version = version.map(String::from);
        async move {
            let report = setup
                .manager()
                .observe(ComponentType::Compute, std::slice::from_ref(&d), false)
                .await
                .unwrap();
            report.seen[&d.component_id].clone()
        }
    };
    // Nothing configured: the manager's FirmwareVersion; the serial is the tray chassis'.
    let seen = observe(Setup::http(port), Some("GB200Nvl-24.12-8")).await;
    assert_eq!(seen.firmware_version.as_deref(), Some("GB200Nvl-24.12-8"));
    assert_eq!(seen.serial_number.as_deref(), Some("1583124820080"));
    assert_eq!(seen.power, Some(DevicePower::On));
    assert!(
        seen.macs.contains(&"3c:6d:66:0e:db:dc".to_string()),
        "{seen:?}"
    );
    // A member configured per type.
    let mut setup = Setup::http(port);
    setup.firmware_members = Some("compute=HGX_FW_GPU_1,nvswitch=MGX_FW_BMC_0".into());
    let seen = observe(setup, None).await;
    assert_eq!(seen.firmware_version.as_deref(), Some("97.00.72.00.00"));
    // The inventory names a catalog version whose expect member runs something else.
    let dir = crate::support::redfish::TempDir::new();
    let mut setup = Setup::http(port);
    // The catalog's bundle must exist: start-up reads it (and checks a sha256 where given).
    let bundle = dir.write("bmc.fwpkg", "bundle");
    setup.catalog_file = Some(dir.write(
        "catalog.toml",
        &format!(
            "[[firmware]]\ntype = \"compute\"\nversion = \"25.06-2\"\nfile = {:?}\n\
             [firmware.expect]\nFW_BMC_0 = \"25.06-2\"\n",
            bundle.display().to_string()
        ),
    ));
    let seen = observe(setup, Some("25.06-2")).await;
    assert_eq!(
        seen.firmware_version.as_deref(),
        Some("FW_BMC_0 GB200Nvl-24.12-8")
    );
}
